// SPDX-License-Identifier: BSD-3-Clause
// Golden tests for hca/prm/vport.hpp. Expected bytes are worked out by hand
// from Linux 6.1 include/linux/mlx5/mlx5_ifc.h (query_vport_state_*,
// nic_vport_context, modify_nic_vport_*, hca_vport_context,
// query_hca_vport_{gid,pkey}_*, roce_addr_layout, set/query_roce_address_*):
// bit offsets count from the MSB of byte 0 and every dword is big endian.
#include "hca/prm/vport.hpp"
#include "golden.hpp"

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <vector>

namespace kbv::prm {
namespace {

using golden::expect_only;
using golden::u8;
using Buf = std::vector<std::byte>;

// query_vport_state_in: op_mod bytes 6-7, other_vport bit 0x40 (MSB of byte
// 8), vport_number bits 0x50-0x5f (bytes 10-11). query_vport_state_out:
// admin_state bits 0x78-0x7b (high nibble of byte 15), state 0x7c-0x7f (low).
TEST(PrmVport, QueryVportState) {
  Buf in_b(16);
  Ref<query_vport_state_in> in(in_b.data());
  in.set(query_vport_state_in::opcode, 0x750);
  in.set(query_vport_state_in::op_mod, vport_state_op_mod::kUplink);
  in.set(query_vport_state_in::other_vport, 1);
  in.set(query_vport_state_in::vport_number, 0x0102);
  expect_only(in_b, {{0, 0x07}, {1, 0x50}, {7, 0x02}, {8, 0x80}, {10, 0x01}, {11, 0x02}});

  Buf out_b(16);
  out_b[15] = std::byte{0x21};
  CRef<query_vport_state_out> out(out_b.data());
  EXPECT_EQ(out.get(query_vport_state_out::admin_state), vport_state::kAdminAuto);
  EXPECT_EQ(out.get(query_vport_state_out::state), vport_state::kUp);
}

// modify_nic_vport_context_in (512 bytes): field_select at bit 0x60 (bytes
// 12-15), roce_en is its bit 0x1e -> byte 15 value 0x02; nic_vport_context at
// bit 0x800 = byte 256: roce_en bit 0x1f (LSB of context byte 3 -> 259), mtu
// bits 0x130-0x13f (context bytes 38-39 -> 294-295).
TEST(PrmVport, ModifyNicVportRoceEnGolden) {
  Buf b(modify_nic_vport_context_in::kBits / 8);
  ASSERT_EQ(b.size(), 512u);
  Ref<modify_nic_vport_context_in> in(b.data());
  in.set(modify_nic_vport_context_in::opcode, 0x755);  // MODIFY_NIC_VPORT_CONTEXT
  Ref<modify_nic_vport_field_select> fs = in.at(modify_nic_vport_context_in::field_select);
  fs.set(modify_nic_vport_field_select::roce_en, 1);
  fs.set(modify_nic_vport_field_select::mtu, 1);  // bit 0x19 -> 1 << 6
  Ref<nic_vport_context> c = in.at(modify_nic_vport_context_in::nic_vport_context);
  ASSERT_EQ(c.data(), b.data() + 256);
  c.set(nic_vport_context::roce_en, 1);
  c.set(nic_vport_context::mtu, 1500);
  expect_only(b, {{0, 0x07}, {1, 0x55}, {15, 0x42}, {259, 0x01}, {294, 0x05}, {295, 0xDC}});
}

// query_nic_vport_context_out: nic_vport_context at byte 16. Inside it:
// roce_en LSB of byte 3, system_image_guid bytes 40-47, port_guid 48-55,
// node_guid 56-63, permanent_address (mac_address_layout) at bit 0x7a0 =
// byte 244, whose mac_addr_47_32 is bytes 246-247 and mac_addr_31_0 248-251.
TEST(PrmVport, QueryNicVportContextDecode) {
  Buf b(query_nic_vport_context_out::kBits / 8);
  ASSERT_EQ(b.size(), 272u);
  b[16 + 3] = std::byte{0x01};
  for (int i = 0; i < 8; ++i) {
    b[16 + 40 + i] = std::byte(0x10 + i);
    b[16 + 48 + i] = std::byte(0x20 + i);
    b[16 + 56 + i] = std::byte(0x30 + i);
  }
  const uint8_t mac[6] = {0x02, 0x00, 0x7F, 0x00, 0x00, 0x02};
  for (int i = 0; i < 6; ++i) b[16 + 246 + i] = std::byte{mac[i]};
  CRef<query_nic_vport_context_out> out(b.data());
  CRef<nic_vport_context> c = out.at(query_nic_vport_context_out::nic_vport_context);
  EXPECT_EQ(c.get(nic_vport_context::roce_en), 1u);
  EXPECT_EQ(c.get(nic_vport_context::system_image_guid), 0x1011121314151617ull);
  EXPECT_EQ(c.get(nic_vport_context::port_guid), 0x2021222324252627ull);
  EXPECT_EQ(c.get(nic_vport_context::node_guid), 0x3031323334353637ull);
  CRef<mac_address_layout> m = c.at(nic_vport_context::permanent_address);
  EXPECT_EQ(m.get(mac_address_layout::mac_addr_47_32), 0x0200u);
  EXPECT_EQ(m.get(mac_address_layout::mac_addr_31_0), 0x7F000002u);
  EXPECT_EQ(c.get(nic_vport_context::mtu), 0u);
}

// hca_vport_context (at byte 16 of query_hca_vport_context_out):
// sm_virt_aware bit 0x100 / has_smi 0x101 (byte 32 bits 7, 6);
// port_physical_state 0x110 and vport_state_policy 0x114 (byte 34 nibbles);
// port_state 0x118 and vport_state 0x11c (byte 35 nibbles); port_guid bytes
// 48-55; lid bytes 96-97; qkey_violation_counter 104-105;
// pkey_violation_counter 106-107. query_hca_vport_context_in: port_num bits
// 0x4c-0x4f (low nibble of byte 9).
TEST(PrmVport, HcaVportContext) {
  Buf in_b(16);
  Ref<query_hca_vport_context_in> in(in_b.data());
  in.set(query_hca_vport_context_in::opcode, 0x762);
  in.set(query_hca_vport_context_in::port_num, 1);
  expect_only(in_b, {{0, 0x07}, {1, 0x62}, {9, 0x01}});

  Buf b(query_hca_vport_context_out::kBits / 8);
  ASSERT_EQ(b.size(), 528u);
  b[16 + 32] = std::byte{0x40};  // has_smi
  b[16 + 34] = std::byte{0x50};  // port_physical_state 5 (LinkUp)
  b[16 + 35] = std::byte{0x44};  // port_state / vport_state ACTIVE
  b[16 + 55] = std::byte{0x99};
  b[16 + 97] = std::byte{0x07};
  b[16 + 105] = std::byte{0x03};
  b[16 + 107] = std::byte{0x04};
  CRef<hca_vport_context> c = CRef<query_hca_vport_context_out>(b.data()).at(
      query_hca_vport_context_out::hca_vport_context);
  EXPECT_EQ(c.get(hca_vport_context::sm_virt_aware), 0u);
  EXPECT_EQ(c.get(hca_vport_context::has_smi), 1u);
  EXPECT_EQ(c.get(hca_vport_context::port_physical_state), 5u);
  EXPECT_EQ(c.get(hca_vport_context::vport_state_policy), 0u);
  EXPECT_EQ(c.get(hca_vport_context::port_state), ib_port_state::kActive);
  EXPECT_EQ(c.get(hca_vport_context::vport_state), ib_port_state::kActive);
  EXPECT_EQ(c.get(hca_vport_context::port_guid), 0x99u);
  EXPECT_EQ(c.get(hca_vport_context::lid), 7u);
  EXPECT_EQ(c.get(hca_vport_context::qkey_violation_counter), 3u);
  EXPECT_EQ(c.get(hca_vport_context::pkey_violation_counter), 4u);
}

// query_hca_vport_gid_in: gid_index bits 0x70-0x7f (bytes 14-15).
// query_hca_vport_gid_out: gids_num bits 0x60-0x6f (bytes 12-13), gid[i] at
// byte 16 + 16 i. query_hca_vport_pkey_out: pkey[i] at byte 16 + 4 i, the
// P_Key in its low 16 bits (struct pkey: reserved 16 bits, pkey 16 bits).
TEST(PrmVport, GidAndPkeyTables) {
  Buf gi(16);
  Ref<query_hca_vport_gid_in> gin(gi.data());
  gin.set(query_hca_vport_gid_in::opcode, 0x764);
  gin.set(query_hca_vport_gid_in::gid_index, 0x0003);
  expect_only(gi, {{0, 0x07}, {1, 0x64}, {15, 0x03}});

  Buf b(16 + 2 * 16);
  b[13] = std::byte{2};
  b[32 + 10] = std::byte{0xFF};
  b[32 + 15] = std::byte{0x02};
  CRef<query_hca_vport_gid_out> out(b.data());
  EXPECT_EQ(out.get(query_hca_vport_gid_out::gids_num), 2u);
  const auto g1 =
      out.elem<array128_auto>(query_hca_vport_gid_out::gid, 1).bytes(array128_auto::value);
  ASSERT_EQ(g1.data(), b.data() + 32);
  EXPECT_EQ(std::to_integer<uint8_t>(g1[10]), 0xFF);
  EXPECT_EQ(std::to_integer<uint8_t>(g1[15]), 0x02);

  Buf p(16 + 3 * 4);
  p[16 + 2] = std::byte{0xFF};
  p[16 + 3] = std::byte{0xFF};
  p[16 + 8 + 3] = std::byte{0x01};
  CRef<query_hca_vport_pkey_out> pout(p.data());
  EXPECT_EQ(pout.elem<pkey>(query_hca_vport_pkey_out::pkey, 0).get(pkey::value), 0xFFFFu);
  EXPECT_EQ(pout.elem<pkey>(query_hca_vport_pkey_out::pkey, 2).get(pkey::value), 0x0001u);
  EXPECT_EQ(pout.get(query_hca_vport_pkey_out::pkey, 1), 0u);
}

// set_roce_address_in (48 bytes): roce_address_index bits 0x40-0x4f (bytes
// 8-9), vhca_port_num bits 0x5c-0x5f (low nibble of byte 11), roce_address
// (roce_addr_layout) at bit 0x80 = byte 16. Inside roce_addr_layout:
// source_l3_address bytes 0-15; vlan_valid bit 0x83 (byte 16 bit 4); vlan_id
// bits 0x84-0x8f (low nibble of byte 16 + byte 17); source_mac_47_32 bytes
// 18-19, source_mac_31_0 20-23; roce_l3_type bits 0xd4-0xd7 (low nibble of
// byte 26); roce_version byte 27.
TEST(PrmVport, SetRoceAddressGolden) {
  Buf b(set_roce_address_in::kBits / 8);
  ASSERT_EQ(b.size(), 48u);
  Ref<set_roce_address_in> in(b.data());
  in.set(set_roce_address_in::opcode, 0x761);  // SET_ROCE_ADDRESS
  in.set(set_roce_address_in::roce_address_index, 0x0001);
  in.set(set_roce_address_in::vhca_port_num, 1);
  Ref<roce_addr_layout> a = in.at(set_roce_address_in::roce_address);
  std::array<std::byte, 16> gid{};
  gid[10] = gid[11] = std::byte{0xFF};
  gid[12] = std::byte{127};
  gid[15] = std::byte{1};  // ::ffff:127.0.0.1
  a.set_bytes(roce_addr_layout::source_l3_address, gid);
  a.set(roce_addr_layout::vlan_valid, 1);
  a.set(roce_addr_layout::vlan_id, 0x123);
  a.set(roce_addr_layout::source_mac_47_32, 0x0200);
  a.set(roce_addr_layout::source_mac_31_0, 0x7F000001);
  a.set(roce_addr_layout::roce_l3_type, roce_l3_type::kIpv4);
  a.set(roce_addr_layout::roce_version, roce_version::kV2);
  expect_only(b, {{0, 0x07},
                  {1, 0x61},
                  {9, 0x01},
                  {11, 0x01},
                  {26, 0xFF},
                  {27, 0xFF},
                  {28, 0x7F},
                  {31, 0x01},
                  {32, 0x11},
                  {33, 0x23},
                  {34, 0x02},
                  {36, 0x7F},
                  {39, 0x01},
                  {43, 0x02}});
  a.set(roce_addr_layout::roce_l3_type, roce_l3_type::kIpv6);
  EXPECT_EQ(u8(b, 42), 0x01);

  // query_roce_address_out carries the same layout at byte 16.
  Buf q(query_roce_address_out::kBits / 8);
  ASSERT_EQ(q.size(), 48u);
  std::copy(b.begin() + 16, b.end(), q.begin() + 16);
  CRef<roce_addr_layout> r =
      CRef<query_roce_address_out>(q.data()).at(query_roce_address_out::roce_address);
  EXPECT_EQ(r.get(roce_addr_layout::vlan_id), 0x123u);
  EXPECT_EQ(r.get(roce_addr_layout::roce_version), roce_version::kV2);
  EXPECT_EQ(r.get(roce_addr_layout::source_mac_31_0), 0x7F000001u);
}

}  // namespace
}  // namespace kbv::prm
