// SPDX-License-Identifier: BSD-3-Clause
// Golden tests of the initialization segment layout (device.h mlx5_init_seg,
// mlx5_ifc.h initial_seg / health_buffer).
#include "hca/prm/init_seg.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace kbv::prm {
namespace {

class PrmInitSeg : public ::testing::Test {
 protected:
  std::vector<std::byte> buf = std::vector<std::byte>(init_seg::kBits / 8);
  uint8_t at(std::size_t i) const { return static_cast<uint8_t>(buf[i]); }
  void put(std::size_t i, uint8_t v) { buf[i] = std::byte{v}; }
};

// Encode. Offsets worked out from device.h (byte offsets) and mlx5_ifc.h (bits):
//   fw_rev_minor bits 0x00..0x0f -> bytes 0-1, fw_rev_major 0x10..0x1f -> bytes 2-3;
//   cmd_interface_rev bits 0x20..0x2f -> bytes 4-5;
//   cmdq_addr_l_sz is the dword at byte 0x14: phy_addr_31_12 = bits 31:12,
//   nic_interface 10:8, log_cmdq_size 7:4, log_cmdq_stride 3:0;
//   initializing = bit 0xfe0 -> byte 0x1fc, MSB.
TEST_F(PrmInitSeg, EncodeGolden) {
  Ref<init_seg> r(buf.data());
  r.set(init_seg::fw_rev_minor, 0x001C);
  r.set(init_seg::fw_rev_major, 0x0010);
  r.set(init_seg::cmd_interface_rev, kCmdifRev);
  r.set(init_seg::fw_rev_subminor, 0x0457);
  EXPECT_EQ(at(0), 0x00);
  EXPECT_EQ(at(1), 0x1C);
  EXPECT_EQ(at(2), 0x00);
  EXPECT_EQ(at(3), 0x10);
  EXPECT_EQ(at(4), 0x00);
  EXPECT_EQ(at(5), 0x05);
  EXPECT_EQ(at(6), 0x04);
  EXPECT_EQ(at(7), 0x57);

  r.set(init_seg::cmdq_addr_h, 0x00000012);
  r.set(init_seg::cmdq_phy_addr_31_12, 0xABCDE);  // IOVA 0x12ABCDE000
  r.set(init_seg::nic_interface, static_cast<uint8_t>(NicInterface::SW_RESET));
  r.set(init_seg::log_cmdq_size, 5);
  r.set(init_seg::log_cmdq_stride, 6);
  EXPECT_EQ(at(0x13), 0x12);
  EXPECT_EQ(at(0x14), 0xAB);
  EXPECT_EQ(at(0x15), 0xCD);
  EXPECT_EQ(at(0x16), 0xE7);  // addr bits 15:12 = 0xE, then 0 (bit 11), nic_interface 7
  EXPECT_EQ(at(0x17), 0x56);
  EXPECT_EQ(r.get(init_seg::cmdq_addr_l_sz), 0xABCDE756u);

  r.set(init_seg::cmd_dbell, 1u << 31);
  EXPECT_EQ(at(0x18), 0x80);
  r.set(init_seg::initializing, 1);
  EXPECT_EQ(at(0x1fc), 0x80);
  EXPECT_EQ(r.get(init_seg::initializing), 1u);
  EXPECT_EQ(at(0x1fd), 0x00);
}

// Health buffer at byte 0x200 (device.h): fw_ver @0x230, hw_id @0x234, rfr bit 31
// of 0x238, irisc_index @0x23c, synd @0x23d, ext_synd @0x23e (docs/PRM.md agrees);
// health_counter = low 24 bits of the dword at 0x1010 (mlx5_ifc.h bit 0x8088).
TEST_F(PrmInitSeg, HealthEncodeGolden) {
  Ref<init_seg> r(buf.data());
  Ref<health_buffer> h = r.at(init_seg::health);
  h.set(health_buffer::fw_version, 0x11223344);
  h.set(health_buffer::rfr, 1);
  h.set(health_buffer::synd, static_cast<uint8_t>(HealthSyndrome::HIGH_TEMP_ERR));
  h.set(health_buffer::ext_synd, 0xBEEF);
  h.set(health_buffer::assert_var, 4, 0xCAFEF00D);  // assert_var[4] at byte 0x210
  EXPECT_EQ(at(0x230), 0x11);
  EXPECT_EQ(at(0x233), 0x44);
  EXPECT_EQ(at(0x238), 0x80);
  EXPECT_EQ(at(0x23d), 0x10);
  EXPECT_EQ(at(0x23e), 0xBE);
  EXPECT_EQ(at(0x23f), 0xEF);
  EXPECT_EQ(at(0x210), 0xCA);
  EXPECT_EQ(at(0x213), 0x0D);

  r.set(init_seg::health_counter, 0x123456);
  EXPECT_EQ(at(0x1010), 0x00);
  EXPECT_EQ(at(0x1011), 0x12);
  EXPECT_EQ(at(0x1013), 0x56);
  r.set(init_seg::internal_timer_l, 0xA0B0C0D0);
  EXPECT_EQ(at(0x1004), 0xA0);
  r.set(init_seg::ieee1588_clk, 0x0102030405060708ull);
  EXPECT_EQ(at(0x2000), 0x01);
  EXPECT_EQ(at(0x2007), 0x08);
}

// Decode: raw big-endian bytes as firmware (or the model) leaves them.
TEST_F(PrmInitSeg, DecodeGolden) {
  // fw_rev 16.28.1111: dword 0 = 0x001C0010, dword 1 = 0x00050457.
  put(0, 0x00), put(1, 0x1C), put(2, 0x00), put(3, 0x10);
  put(4, 0x00), put(5, 0x05), put(6, 0x04), put(7, 0x57);
  put(0x17, 0x5C);  // log_cmdq_size 5, log_cmdq_stride 12
  put(0x16, 0x01);  // nic_interface DISABLED
  put(0x1fc, 0x80);
  put(0x23d, 0x07);  // DEAD_IRISC
  put(0x238, 0x80);  // rfr
  put(0x1010, 0xFF), put(0x1011, 0x00), put(0x1012, 0x00), put(0x1013, 0x2A);
  CRef<init_seg> r(buf.data());
  EXPECT_EQ(r.get(init_seg::fw_rev_major), 16u);
  EXPECT_EQ(r.get(init_seg::fw_rev_minor), 28u);
  EXPECT_EQ(r.get(init_seg::fw_rev_subminor), 1111u);
  EXPECT_EQ(r.get(init_seg::cmd_interface_rev), kCmdifRev);
  EXPECT_EQ(r.get(init_seg::log_cmdq_size), 5u);
  EXPECT_EQ(r.get(init_seg::log_cmdq_stride), 12u);
  EXPECT_EQ(r.get(init_seg::nic_interface), static_cast<uint8_t>(NicInterface::DISABLED));
  EXPECT_EQ(r.get(init_seg::initializing), 1u);
  EXPECT_EQ(r.get(init_seg::health_syndrome), 0xFFu);
  EXPECT_EQ(r.get(init_seg::health_counter), 0x2Au);  // the syndrome byte is not counted
  CRef<health_buffer> h = r.at(init_seg::health);
  EXPECT_EQ(h.get(health_buffer::synd), 7u);
  EXPECT_EQ(h.get(health_buffer::rfr), 1u);
  EXPECT_EQ(health_syndrome_name(static_cast<uint8_t>(h.get(health_buffer::synd))),
            "iRISC not responding");
}

TEST(PrmInitSegConst, Constants) {
  EXPECT_EQ(kInitializingBit, 0x80000000u);
  EXPECT_EQ(kHealthRfrBit, 0x80000000u);
  EXPECT_EQ(kNicInterfaceShift, 8u);
  // docs/PRM.md: 1 << log_size <= 32 and log_size + log_stride <= 12.
  EXPECT_TRUE(cmdq_geometry_valid(5, 6));
  EXPECT_TRUE(cmdq_geometry_valid(0, 12));
  EXPECT_FALSE(cmdq_geometry_valid(6, 6));
  EXPECT_FALSE(cmdq_geometry_valid(5, 8));
  EXPECT_EQ(static_cast<uint8_t>(HealthSyndrome::FW_INTERNAL_ERR), 0x1);
  EXPECT_EQ(static_cast<uint8_t>(HealthSyndrome::ICM_PAGE_ERR), 0xB);
  EXPECT_EQ(static_cast<uint8_t>(HealthSyndrome::HIGH_TEMP_ERR), 0x10);
  EXPECT_EQ(health_syndrome_name(0), "no error");
  EXPECT_EQ(health_syndrome_name(0x11), "unrecognized error");
}

}  // namespace
}  // namespace kbv::prm
