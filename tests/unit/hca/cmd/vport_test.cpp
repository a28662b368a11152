// SPDX-License-Identifier: BSD-3-Clause
// Vport / RoCE address command encodings (hca/cmd/vport.hpp); byte offsets
// worked out from mlx5_ifc.h by hand.
#include "hca/cmd/vport.hpp"

#include "../cmd_harness.hpp"

namespace kbv::hca::cmd {
namespace {

using test::CmdHarness;
using VportCmdTest = CmdHarness;

TEST_F(VportCmdTest, QueryVportState) {
  Result<VportState> got{Status{KBV_PENDING}};
  ASSERT_EQ(query_vport_state(*cmdq, 2, VportAttr{.other_vport = true, .vport_number = 0x33},
                              [&](Result<VportState> r) { got = r; }),
            KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x750u);
  EXPECT_EQ(be16(in, 6), 2u);
  EXPECT_EQ(u8(in, 8), 0x80u);
  EXPECT_EQ(be16(in, 10), 0x33u);
  std::vector<std::byte> out(16);
  out[15] = std::byte{0x21};  // admin_state 2 (auto), state 1 (up)
  answer(out);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->state, 1u);
  EXPECT_EQ(got->admin_state, 2u);
}

TEST_F(VportCmdTest, QueryNicVportContext) {
  Result<NicVportContext> got{Status{KBV_PENDING}};
  ASSERT_EQ(query_nic_vport_context(*cmdq, {}, [&](Result<NicVportContext> r) { got = r; }),
            KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x754u);
  ASSERT_EQ(outlen(), 272u);
  std::vector<std::byte> out(272);
  const size_t c = 16;
  out[c + 3] = std::byte{0x01};  // roce_en
  put32(out, c + 0x24, 1024);    // mtu (low 16 bits of dword 9)
  put64(out, c + 0x30, 0x0002c90300a1b2c3ull);
  put32(out, c + 0xF4, 0x0000e41d);  // MAC 47:32
  put32(out, c + 0xF8, 0x2d0a0b0c);  // MAC 31:0
  answer(out);
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->roce_en);
  EXPECT_EQ(got->mtu, 1024u);
  EXPECT_EQ(got->port_guid, 0x0002c90300a1b2c3ull);
  EXPECT_EQ(got->permanent_mac, 0xe41d2d0a0b0cull);
}

TEST_F(VportCmdTest, ModifyRoceEn) {
  Status st{KBV_PENDING};
  ASSERT_EQ(modify_nic_vport_roce_en(*cmdq, true, [&](Status s) { st = s; }), KBV_PENDING);
  auto in = posted();
  ASSERT_EQ(in.size(), 512u);
  EXPECT_EQ(be16(in, 0), 0x755u);
  EXPECT_EQ(be32(in, 12), 0x2u);  // field_select.roce_en
  EXPECT_EQ(u8(in, 256 + 3), 0x1u);
  answer_ok();
  EXPECT_TRUE(st.is_ok());
}

TEST_F(VportCmdTest, QueryHcaVportContext) {
  Result<HcaVportContext> got{Status{KBV_PENDING}};
  ASSERT_EQ(query_hca_vport_context(*cmdq, 1, {}, [&](Result<HcaVportContext> r) { got = r; }),
            KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x762u);
  EXPECT_EQ(u8(in, 9) & 0xf, 1u);
  ASSERT_EQ(outlen(), 528u);
  std::vector<std::byte> out(528);
  out[16 + 0x23] = std::byte{0x44};   // port_state active, vport_state active
  put32(out, 16 + 0x60, 0x00070000);  // lid 7
  put64(out, 16 + 0x30, 0x1122334455667788ull);
  answer(out);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->port_state, 4u);
  EXPECT_EQ(got->vport_state, 4u);
  EXPECT_EQ(got->lid, 7u);
  EXPECT_EQ(got->port_guid, 0x1122334455667788ull);
  EXPECT_EQ(query_hca_vport_context(*cmdq, 16, {}, [](Result<HcaVportContext>) {}),
            KBV_ERR_INVALID_PORT);
}

TEST_F(VportCmdTest, QueryHcaVportGidWholeTable) {
  Result<std::vector<Gid>> got{Status{KBV_PENDING}};
  ASSERT_EQ(
      query_hca_vport_gid(*cmdq, 1, kAllGids, 3, [&](Result<std::vector<Gid>> r) { got = r; }),
      KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x764u);
  EXPECT_EQ(be16(in, 14), 0xFFFFu);
  ASSERT_EQ(outlen(), 16u + 48u);
  std::vector<std::byte> out(64);
  out[13] = std::byte{3};
  out[16 + 16 + 10] = std::byte{0xff};
  out[16 + 16 + 15] = std::byte{0x09};
  answer(out);
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[1][10], 0xff);
  EXPECT_EQ((*got)[1][15], 0x09);
  EXPECT_EQ((*got)[0][10], 0);
}

TEST_F(VportCmdTest, QueryAndSetRoceAddress) {
  Result<RoceAddress> got{Status{KBV_PENDING}};
  ASSERT_EQ(query_roce_address(*cmdq, 1, 5, [&](Result<RoceAddress> r) { got = r; }), KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x760u);
  EXPECT_EQ(be16(in, 8), 5u);
  EXPECT_EQ(u8(in, 11) & 0xf, 1u);
  std::vector<std::byte> out(48);
  out[16 + 10] = std::byte{0xff};
  out[16 + 11] = std::byte{0xff};
  out[16 + 12] = std::byte{127};
  out[16 + 15] = std::byte{2};
  put32(out, 16 + 16, 0x10000000 | 0x00640000 | 0x1122);  // vlan_valid, vlan 100, MAC 47:32
  put32(out, 16 + 20, 0x33445566);
  out[16 + 26] = std::byte{0x00};  // IPv4
  out[16 + 27] = std::byte{0x02};  // RoCE v2
  answer(out);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->gid[12], 127);
  EXPECT_EQ(got->gid[15], 2);
  EXPECT_TRUE(got->vlan_valid);
  EXPECT_EQ(got->vlan_id, 100u);
  EXPECT_EQ(got->source_mac, 0x112233445566ull);
  EXPECT_EQ(got->version, 2u);

  Status st{KBV_PENDING};
  ASSERT_EQ(set_roce_address(*cmdq, 1, 5, *got, [&](Status s) { st = s; }), KBV_PENDING);
  auto set = posted();
  ASSERT_EQ(set.size(), 48u);
  EXPECT_EQ(be16(set, 0), 0x761u);
  for (size_t i = 16; i < 48; ++i) EXPECT_EQ(set[i], out[i]) << "layout byte " << i - 16;
  answer_ok();
  EXPECT_TRUE(st.is_ok());
  RoceAddress bad = *got;
  bad.source_mac = 1ull << 48;
  EXPECT_EQ(set_roce_address(*cmdq, 1, 5, bad, [](Status) {}), KBV_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace kbv::hca::cmd
