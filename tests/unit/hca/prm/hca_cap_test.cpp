// SPDX-License-Identifier: BSD-3-Clause
// Golden tests of QUERY_HCA_CAP / SET_HCA_CAP and the capability layouts
// (mlx5_ifc.h cmd_hca_cap, roce_cap, atomic_caps, hca_cap_union,
// query_hca_cap_in/out, set_hca_cap_in/out).
#include "hca/prm/hca_cap.hpp"
#include "golden.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "hca/prm/opcodes.hpp"

namespace kbv::prm {
namespace {

using Buf = golden::Bytes;

// query_hca_cap_in: opcode bytes 0-1, op_mod bytes 6-7 (bit 0x30), function_id
// bits 0x50..0x5f = bytes 10-11, other_function = MSB of byte 8.
TEST(PrmHcaCap, QueryInGolden) {
  Buf b(query_hca_cap_in::kBits / 8);
  Ref<query_hca_cap_in> in(b.data());
  in.set(query_hca_cap_in::opcode, to_u16(Opcode::QUERY_HCA_CAP));
  in.set(query_hca_cap_in::op_mod, hca_cap_op_mod(CapType::ROCE, CapMode::CUR));
  in.set(query_hca_cap_in::other_function, 1);
  in.set(query_hca_cap_in::function_id, 0x0203);
  const uint8_t want[16] = {0x01, 0x00, 0, 0, 0, 0, 0x00, 0x09, 0x80, 0, 0x02, 0x03, 0, 0, 0, 0};
  for (std::size_t i = 0; i < 16; ++i) EXPECT_EQ(b[i], want[i]) << "byte " << i;
}

// query_hca_cap_out: capability union at bit 0x80 = byte 16. Inside cmd_hca_cap
// (offsets summed from mlx5_ifc.h, cross-checked with reserved_at_ names):
//   log_max_qp_sz bits 0x88..0x8f       -> cap byte 0x11
//   log_max_qp    bits 0x9b..0x9f       -> cap byte 0x13, bits 4:0
//   port_type     bits 0x1b6..0x1b7     -> cap byte 0x36, bits 1:0
//   num_ports     bits 0x1b8..0x1bf     -> cap byte 0x37
//   cmdif_checksum bits 0x210..0x211    -> cap byte 0x42, bits 7:6
//   roce 0x21d / atomic 0x21e           -> cap byte 0x43, bits 2 / 1
//   rc 0x23f                            -> cap byte 0x47, bit 0
//   uar_sz bits 0x24a..0x24f            -> cap byte 0x49, bits 5:0
//   log_pg_sz bits 0x258..0x25f         -> cap byte 0x4b
//   log_bf_reg_size bits 0x26b..0x26f   -> cap byte 0x4d, bits 4:0
//   max_wqe_sz_sq bits 0x290..0x29f     -> cap bytes 0x52-0x53
//   general_obj_types bits 0x400..0x43f -> cap bytes 0x80-0x87 (be64)
//   log_uar_page_sz bits 0x490..0x49f   -> cap bytes 0x92-0x93
TEST(PrmHcaCap, GeneralCapsEncodeGolden) {
  Buf b(query_hca_cap_out::kBits / 8);
  Ref<cmd_hca_cap> cap = Ref<query_hca_cap_out>(b.data())
                             .at(query_hca_cap_out::capability)
                             .at(hca_cap_union::cmd_hca_cap);
  cap.set(cmd_hca_cap::log_max_qp_sz, 15);
  cap.set(cmd_hca_cap::log_max_qp, 18);
  cap.set(cmd_hca_cap::port_type, 1);
  cap.set(cmd_hca_cap::num_ports, 2);
  cap.set(cmd_hca_cap::cmdif_checksum, 3);
  cap.set(cmd_hca_cap::roce, 1);
  cap.set(cmd_hca_cap::atomic, 1);
  cap.set(cmd_hca_cap::rc, 1);
  cap.set(cmd_hca_cap::uar_sz, 0x3F);
  cap.set(cmd_hca_cap::log_pg_sz, 12);
  cap.set(cmd_hca_cap::log_bf_reg_size, 9);
  cap.set(cmd_hca_cap::max_wqe_sz_sq, 0x400);
  cap.set(cmd_hca_cap::general_obj_types, 0x0000000000000102ull);
  cap.set(cmd_hca_cap::log_uar_page_sz, 0x0001);
  const std::size_t c = 16;
  EXPECT_EQ(b[c + 0x11], 15);
  EXPECT_EQ(b[c + 0x13], 18);
  EXPECT_EQ(b[c + 0x36], 0x01);
  EXPECT_EQ(b[c + 0x37], 0x02);
  EXPECT_EQ(b[c + 0x42], 0xC0);
  EXPECT_EQ(b[c + 0x43], 0x06);
  EXPECT_EQ(b[c + 0x47], 0x01);
  EXPECT_EQ(b[c + 0x49], 0x3F);
  EXPECT_EQ(b[c + 0x4b], 12);
  EXPECT_EQ(b[c + 0x4d], 9);
  EXPECT_EQ(b[c + 0x52], 0x04);
  EXPECT_EQ(b[c + 0x53], 0x00);
  EXPECT_EQ(b[c + 0x86], 0x01);
  EXPECT_EQ(b[c + 0x87], 0x02);
  EXPECT_EQ(b[c + 0x93], 0x01);
  int nonzero = 0;
  for (std::size_t i = 0; i < b.b.size(); ++i) nonzero += b[i] != 0;
  EXPECT_EQ(nonzero, 14);  // the 14 nonzero bytes above; nothing else touched
}

// Decode raw bytes: log_max_cq_sz bits 0xc8..0xcf -> cap byte 0x19;
// cqe_version bits 0x1fc..0x1ff -> cap byte 0x3f bits 3:0; log_max_msg
// bits 0x1c3..0x1c7 -> cap byte 0x38 bits 4:0; max_tc bits 0x1cc..0x1cf ->
// cap byte 0x39 bits 3:0; log_max_pd bits 0x32b..0x32f -> cap byte 0x65 bits 4:0.
TEST(PrmHcaCap, GeneralCapsDecodeGolden) {
  Buf b(query_hca_cap_out::kBits / 8);
  const std::size_t c = 16;
  b.put(c + 0x19, 22);
  b.put(c + 0x3f, 0xF1);  // upper nibble belongs to wqe_based_flow_table_update_cap etc.
  b.put(c + 0x38, 0xFE);  // reserved/pps bits above log_max_msg set: must not leak in
  b.put(c + 0x39, 0x08);
  b.put(c + 0x65, 0x18);
  CRef<cmd_hca_cap> cap = CRef<query_hca_cap_out>(b.data())
                              .at(query_hca_cap_out::capability)
                              .at(hca_cap_union::cmd_hca_cap);
  EXPECT_EQ(cap.get(cmd_hca_cap::log_max_cq_sz), 22u);
  EXPECT_EQ(cap.get(cmd_hca_cap::cqe_version), 1u);
  EXPECT_EQ(cap.get(cmd_hca_cap::log_max_msg), 30u);
  EXPECT_EQ(cap.get(cmd_hca_cap::max_tc), 8u);
  EXPECT_EQ(cap.get(cmd_hca_cap::log_max_pd), 24u);
}

// roce_cap (same union position): roce_version bits 0x98..0x9f -> byte 19;
// l3_type bits 0x8c..0x8f -> byte 17 bits 3:0; r_roce_dest_udp_port bits
// 0xb0..0xbf -> bytes 22-23; roce_address_table_size bits 0xf0..0xff -> bytes 30-31.
// atomic_caps: atomic_operations bits 0x90..0x9f -> bytes 18-19; atomic_size_qp
// bits 0xb0..0xbf -> bytes 22-23.
TEST(PrmHcaCap, RoceAndAtomicCapsGolden) {
  Buf b(query_hca_cap_out::kBits / 8);
  const std::size_t c = 16;
  b.put(c + 19, kRoceVersion2Cap);
  b.put(c + 17, kRoceL3TypeIpv4Cap | kRoceL3TypeIpv6Cap);
  b.put(c + 22, 0x12);
  b.put(c + 23, 0xB7);
  b.put(c + 31, 0x80);
  CRef<hca_cap_union> u = CRef<query_hca_cap_out>(b.data()).at(query_hca_cap_out::capability);
  CRef<roce_cap> roce = u.at(hca_cap_union::roce_cap);
  EXPECT_EQ(roce.get(roce_cap::roce_version), 0x4u);
  EXPECT_EQ(roce.get(roce_cap::l3_type), 0x6u);
  EXPECT_EQ(roce.get(roce_cap::r_roce_dest_udp_port), 4791u);
  EXPECT_EQ(roce.get(roce_cap::roce_address_table_size), 0x80u);

  Buf a(atomic_caps::kBits / 8);
  Ref<atomic_caps> at(a.data());
  at.set(atomic_caps::atomic_operations, kAtomicOpCmpSwap | kAtomicOpFetchAdd);
  at.set(atomic_caps::atomic_size_qp, kAtomicSizeQp8Bytes);
  EXPECT_EQ(a[18], 0x00);
  EXPECT_EQ(a[19], 0x03);
  EXPECT_EQ(a[23], 0x08);
}

// set_hca_cap_in: op_mod bytes 6-7 = cap_type << 1; capability at byte 16.
// Clearing cmdif_checksum (cap byte 0x42 bits 7:6) keeps its neighbours.
TEST(PrmHcaCap, SetInGolden) {
  Buf b(set_hca_cap_in::kBits / 8, 0xFF);
  Ref<set_hca_cap_in> in(b.data());
  in.set(set_hca_cap_in::opcode, to_u16(Opcode::SET_HCA_CAP));
  in.set(set_hca_cap_in::op_mod, set_hca_cap_op_mod(CapType::GENERAL));
  in.at(set_hca_cap_in::capability)
      .at(hca_cap_union::cmd_hca_cap)
      .set(cmd_hca_cap::cmdif_checksum, 0);
  EXPECT_EQ(b[0], 0x01);
  EXPECT_EQ(b[1], 0x09);
  EXPECT_EQ(b[6], 0x00);
  EXPECT_EQ(b[7], 0x00);
  EXPECT_EQ(b[16 + 0x42], 0x3F);
  EXPECT_EQ(b[16 + 0x41], 0xFF);
  EXPECT_EQ(set_hca_cap_in::kBits / 8, 4112u);
}

}  // namespace
}  // namespace kbv::prm
