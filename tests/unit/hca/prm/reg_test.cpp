// SPDX-License-Identifier: BSD-3-Clause
// Golden tests of the port access registers (mlx5_ifc.h paos_reg, ptys_reg,
// pmtu_reg, ppcnt_reg with the 802.3 / 2863 / per-priority counter sets,
// pplm_reg and pddr_reg headers) and the register ids (driver.h MLX5_REG_*).
#include "hca/prm/reg.hpp"
#include "golden.hpp"

#include <gtest/gtest.h>

#include "hca/prm/opcodes.hpp"

namespace kbv::prm {
namespace {

using Buf = golden::Bytes;
using golden::expect_only;

TEST(PrmReg, RegisterIds) {
  EXPECT_EQ(static_cast<uint16_t>(RegId::PMTU), 0x5003);
  EXPECT_EQ(static_cast<uint16_t>(RegId::PTYS), 0x5004);
  EXPECT_EQ(static_cast<uint16_t>(RegId::PAOS), 0x5006);
  EXPECT_EQ(static_cast<uint16_t>(RegId::PPCNT), 0x5008);
  EXPECT_EQ(static_cast<uint16_t>(RegId::PPLM), 0x5023);
  EXPECT_EQ(static_cast<uint16_t>(RegId::PDDR), 0x5031);
  EXPECT_EQ(static_cast<uint16_t>(RegId::MCIA), 0x9014);
}

// paos_reg: local_port byte 1; admin_status bits 0x14..0x17 = low nibble of
// byte 2; oper_status bits 0x1c..0x1f = low nibble of byte 3; ase = MSB of
// byte 4; e bits 0x3e..0x3f = low two bits of byte 7.
TEST(PrmReg, PaosGolden) {
  Buf b(paos_reg::kBits / 8);
  Ref<paos_reg> r(b.data());
  r.set(paos_reg::local_port, 1);
  r.set(paos_reg::admin_status, static_cast<uint8_t>(PortStatus::DOWN));
  r.set(paos_reg::oper_status, static_cast<uint8_t>(PortStatus::DOWN_FAIL));
  r.set(paos_reg::ase, 1);
  r.set(paos_reg::e, 3);
  expect_only(b, {{1, 0x01}, {2, 0x02}, {3, 0x04}, {4, 0x80}, {7, 0x03}});
}

// ptys_reg: proto_mask bits 0x1d..0x1f = low 3 bits of byte 3;
// eth_proto_capability dword at byte 12, eth_proto_admin at 24,
// eth_proto_oper at 36; connector_type low nibble of byte 47.
TEST(PrmReg, PtysGolden) {
  Buf b(ptys_reg::kBits / 8);
  Ref<ptys_reg> r(b.data());
  r.set(ptys_reg::local_port, 1);
  r.set(ptys_reg::proto_mask, kPtysEn);
  r.set(ptys_reg::an_disable_admin, 1);
  r.set(ptys_reg::eth_proto_capability, kEthProto100GBaseCr4);
  r.set(ptys_reg::eth_proto_admin, kEthProto100GBaseCr4);
  r.set(ptys_reg::eth_proto_oper, kEthProto100GBaseCr4);
  r.set(ptys_reg::connector_type, 0xA);
  expect_only(b, {{0, 0x40}, {1, 0x01}, {3, 0x04}, {13, 0x10}, {25, 0x10}, {37, 0x10}, {47, 0x0A}});
}

// pmtu_reg: max_mtu bytes 4-5, admin_mtu 8-9, oper_mtu 12-13.
TEST(PrmReg, PmtuGolden) {
  Buf b(pmtu_reg::kBits / 8);
  Ref<pmtu_reg> r(b.data());
  r.set(pmtu_reg::local_port, 1);
  r.set(pmtu_reg::max_mtu, 9216);
  r.set(pmtu_reg::admin_mtu, 4096);
  r.set(pmtu_reg::oper_mtu, 1500);
  expect_only(b, {{1, 0x01}, {4, 0x24}, {5, 0x00}, {8, 0x10}, {12, 0x05}, {13, 0xDC}});
}

// ppcnt_reg: grp bits 0x1a..0x1f = low 6 bits of byte 3; clr MSB of byte 4;
// prio_tc low bits of byte 7; the counter set at byte 8, each counter a
// big-endian u64 (_high dword then _low dword).
TEST(PrmReg, PpcntHeaderAndCounterSetsGolden) {
  Buf b(ppcnt_reg::kBits / 8);
  Ref<ppcnt_reg> r(b.data());
  r.set(ppcnt_reg::local_port, 1);
  r.set(ppcnt_reg::grp, static_cast<uint8_t>(PpcntGroup::PER_PRIORITY));
  r.set(ppcnt_reg::clr, 1);
  r.set(ppcnt_reg::prio_tc, 5);
  expect_only(b, {{1, 0x01}, {3, 0x10}, {4, 0x80}, {7, 0x05}});

  Buf c(ppcnt_reg::kBits / 8);
  auto g = Ref<ppcnt_reg>(c.data()).at(ppcnt_reg::eth_802_3);
  g.set(eth_802_3_cntrs::a_frames_transmitted_ok, 0x0102030405060708ull);
  g.set(eth_802_3_cntrs::a_frame_check_sequence_errors, 0x11);  // counter 2: byte 8 + 16
  g.set(eth_802_3_cntrs::a_octets_received_ok, 0x22);           // counter 5: byte 8 + 40
  expect_only(c, {{8, 0x01},
                  {9, 0x02},
                  {10, 0x03},
                  {11, 0x04},
                  {12, 0x05},
                  {13, 0x06},
                  {14, 0x07},
                  {15, 0x08},
                  {31, 0x11},
                  {55, 0x22}});

  Buf d(ppcnt_reg::kBits / 8);
  auto i = Ref<ppcnt_reg>(d.data()).at(ppcnt_reg::eth_2863);
  i.set(eth_2863_cntrs::if_in_discards, 0x33);   // counter 2
  i.set(eth_2863_cntrs::if_out_discards, 0x44);  // counter 7: byte 8 + 56
  expect_only(d, {{31, 0x33}, {71, 0x44}});

  Buf e(ppcnt_reg::kBits / 8);
  auto p = Ref<ppcnt_reg>(e.data()).at(ppcnt_reg::eth_per_prio);
  p.set(eth_per_prio_cntrs::rx_frames, 0x55);    // bit 0x100: byte 8 + 32
  p.set(eth_per_prio_cntrs::tx_frames, 0x66);    // bit 0x240: byte 8 + 72
  p.set(eth_per_prio_cntrs::rx_discards, 0x77);  // bit 0x3c0: byte 8 + 120
  expect_only(e, {{47, 0x55}, {87, 0x66}, {135, 0x77}});
}

// pddr_reg: page_select is the last byte of dword 1 (the vpp mlx5 plugin
// writes it there); pplm_reg: 120 bytes.
TEST(PrmReg, PddrPplmHeaders) {
  Buf b(pddr_reg::kBits / 8);
  Ref<pddr_reg> r(b.data());
  r.set(pddr_reg::local_port, 1);
  r.set(pddr_reg::page_select, 3);
  expect_only(b, {{1, 0x01}, {7, 0x03}});
  EXPECT_EQ(pplm_reg::kBits / 8, 120u);
}

}  // namespace
}  // namespace kbv::prm
