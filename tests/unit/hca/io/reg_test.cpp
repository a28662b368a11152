// SPDX-License-Identifier: BSD-3-Clause
// reg.hpp: sub-dword register fields through the PRM tables.
#include "hca/io/reg.hpp"

#include <gtest/gtest.h>

#include "../fake_device.hpp"
#include "hca/prm/init_seg.hpp"

namespace kbv::hca {
namespace {

using prm::init_seg;

TEST(Reg, FieldsOfTheCmdqGeometryDword) {
  // cmdq_addr_l_sz read: nic_interface 10:8, log_cmdq_size 7:4, log_cmdq_stride 3:0.
  const uint32_t dw = 2u << 8 | 5u << 4 | 6u;
  EXPECT_EQ(reg_dword_off(init_seg::log_cmdq_size), 0x14u);
  EXPECT_EQ(field_from_dword(dw, init_seg::log_cmdq_size), 5u);
  EXPECT_EQ(field_from_dword(dw, init_seg::log_cmdq_stride), 6u);
  EXPECT_EQ(field_from_dword(dw, init_seg::nic_interface), 2u);
  EXPECT_EQ(
      field_to_dword(init_seg::log_cmdq_size, 5) | field_to_dword(init_seg::log_cmdq_stride, 6),
      0x56u);
  EXPECT_EQ(field_to_dword(init_seg::initializing, 1), 0x80000000u);
}

TEST(Reg, ReadRegReadsTheBarDword) {
  test::FakeDevice dev;
  dev.set_reg32(0x1fc, 0x80000000);
  EXPECT_EQ(read_reg(dev.bar0(), 0, init_seg::initializing), 1u);
  dev.set_reg32(0x1010, 0xAB123456);
  EXPECT_EQ(read_reg(dev.bar0(), 0, init_seg::health_counter), 0x123456u);
  EXPECT_EQ(read_reg(dev.bar0(), 0, init_seg::health_syndrome), 0xABu);
  EXPECT_EQ(read_reg(dev.bar0(), 0, init_seg::cmd_interface_rev), prm::kCmdifRev);
}

}  // namespace
}  // namespace kbv::hca
