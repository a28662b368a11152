// SPDX-License-Identifier: BSD-3-Clause
// QP command encodings (hca/cmd/qp.hpp); byte offsets worked out from
// mlx5_ifc.h create_qp_in / rst2init_qp_in / qpc / ads by hand (qpc at byte
// 24, its primary address path at byte 48).
#include "hca/cmd/qp.hpp"

#include "../cmd_harness.hpp"

namespace kbv::hca::cmd {
namespace {

using test::CmdHarness;
using QpCmdTest = CmdHarness;
namespace op = prm::qp_optpar;

constexpr size_t kQpc = 24;
constexpr size_t kAds = 48;

TEST_F(QpCmdTest, CreateRc) {
  QpCreateAttr a;
  a.st = prm::qpc_st::kRc;
  a.pd = 0x31;
  a.uar_page = 0x9;
  a.cqn_snd = 0x101;
  a.cqn_rcv = 0x102;
  a.log_sq_size = 6;
  a.log_rq_size = 5;
  a.log_rq_stride = 2;
  a.dbr_addr = 0xdead00;
  a.pas = {0x40000, 0x41000, 0x42000};
  Result<uint32_t> got{Status{KBV_PENDING}};
  ASSERT_EQ(create_qp(*cmdq, a, [&](Result<uint32_t> r) { got = r; }), KBV_PENDING);
  auto in = posted();
  ASSERT_EQ(in.size(), 272u + 24);
  EXPECT_EQ(be16(in, 0), 0x500u);
  EXPECT_EQ(be32(in, 16), 0u);      // opt_param_mask
  EXPECT_EQ(u8(in, kQpc + 1), 0u);  // st RC
  EXPECT_EQ(be32(in, kQpc) >> 11 & 3, prm::qpc_pm_state::kMigrated);
  EXPECT_EQ(be32(in, kQpc + 4) & 0xFFFFFF, 0x31u);
  const uint32_t dw2 = be32(in, kQpc + 8);
  EXPECT_EQ(dw2 >> 19 & 0xF, 5u);  // log_rq_size
  EXPECT_EQ(dw2 >> 16 & 0x7, 2u);  // log_rq_stride
  EXPECT_EQ(dw2 >> 15 & 1, 0u);    // no_sq
  EXPECT_EQ(dw2 >> 11 & 0xF, 6u);  // log_sq_size
  EXPECT_EQ(be32(in, kQpc + 12) & 0xFFFFFF, 0x9u);
  EXPECT_EQ(be32(in, kQpc + 124) & 0xFFFFFF, 0x101u);
  EXPECT_EQ(be32(in, kQpc + 156) & 0xFFFFFF, 0x102u);
  EXPECT_EQ(be64(in, kQpc + 160), 0xdead00u);
  EXPECT_EQ(be64(in, 272 + 16), 0x42000u);
  std::vector<std::byte> out(16);
  put32(out, 8, 0x1234);
  answer(out);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, 0x1234u);
}

TEST_F(QpCmdTest, Rst2InitCarriesPortPkeyAndAccess) {
  QpAttr a;
  a.path.vhca_port_num = 1;
  a.path.pkey_index = 3;
  a.rre = true;
  a.rwe = true;
  a.rae = false;
  Status st{KBV_PENDING};
  ASSERT_EQ(rst2init_qp(*cmdq, 0x77, prm::qpc_st::kRc, a, 0, [&](Status s) { st = s; }),
            KBV_PENDING);
  auto in = posted();
  ASSERT_EQ(in.size(), 272u);
  EXPECT_EQ(be16(in, 0), 0x502u);
  EXPECT_EQ(be32(in, 8), 0x77u);
  EXPECT_EQ(be16(in, kAds + 2), 3u);     // pkey_index
  EXPECT_EQ(u8(in, kAds + 37), 1u);      // vhca_port_num
  EXPECT_EQ(u8(in, kQpc + 146), 0xC0u);  // rre | rwe
  answer_ok();
  EXPECT_TRUE(st.is_ok());

  // UD: the Q_Key instead of access rights.
  a.q_key = 0x11111111;
  ASSERT_EQ(rst2init_qp(*cmdq, 0x78, prm::qpc_st::kUd, a, 0, [&](Status s) { st = s; }),
            KBV_PENDING);
  in = posted();
  EXPECT_EQ(be32(in, kQpc + 168), 0x11111111u);
  EXPECT_EQ(u8(in, kQpc + 146), 0u);
  answer_ok();
}

TEST_F(QpCmdTest, Init2RtrCarriesTheRocePath) {
  QpAttr a;
  a.mtu = prm::qpc_mtu::k4kBytes;
  a.log_msg_max = 30;
  a.remote_qpn = 0xabcdef;
  a.next_rcv_psn = 0x123456;
  a.min_rnr_nak = 12;
  a.log_rra_max = 2;
  a.path.src_addr_index = 0;
  a.path.rgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 2};
  a.path.rmac = 0x026b62760002ull;
  a.path.udp_sport = 0xc001;
  a.path.hop_limit = 64;
  Status st{KBV_PENDING};
  ASSERT_EQ(
      init2rtr_qp(*cmdq, 0x77, prm::qpc_st::kRc, a, op::kPkeyIndex, [&](Status s) { st = s; }),
      KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x503u);
  EXPECT_EQ(be32(in, 16), op::kPkeyIndex);
  EXPECT_EQ(u8(in, kQpc + 8) >> 5, prm::qpc_mtu::k4kBytes);
  EXPECT_EQ(u8(in, kQpc + 8) & 0x1F, 30u);  // log_msg_max
  EXPECT_EQ(be32(in, kQpc + 20) & 0xFFFFFF, 0xabcdefu);
  EXPECT_EQ(be32(in, kQpc + 148) & 0xFFFFFF, 0x123456u);
  EXPECT_EQ(u8(in, kQpc + 148) & 0x1F, 12u);      // min_rnr_nak
  EXPECT_EQ(be32(in, kQpc + 144) >> 21 & 7, 2u);  // log_rra_max
  EXPECT_EQ(u8(in, kAds + 5) & 0x80, 0x80u);      // grh
  EXPECT_EQ(u8(in, kAds + 9), 0u);                // src_addr_index
  EXPECT_EQ(u8(in, kAds + 11), 64u);              // hop_limit
  EXPECT_EQ(u8(in, kAds + 16 + 10), 0xFFu);       // rgid_rip ::ffff:127.0.0.2
  EXPECT_EQ(u8(in, kAds + 16 + 15), 2u);
  EXPECT_EQ(be16(in, kAds + 34), 0xc001u);  // udp_sport
  EXPECT_EQ(u8(in, kAds + 37), 1u);         // vhca_port_num
  EXPECT_EQ(be16(in, kAds + 38), 0x026bu);  // rmac_47_32
  EXPECT_EQ(be32(in, kAds + 40), 0x62760002u);
  answer_ok();
  EXPECT_TRUE(st.is_ok());
}

TEST_F(QpCmdTest, Rtr2RtsAndTheShortForms) {
  QpAttr a;
  a.next_send_psn = 0x654321;
  a.retry_count = 7;
  a.rnr_retry = 6;
  a.log_sra_max = 3;
  a.path.ack_timeout = 14;
  Status st{KBV_PENDING};
  ASSERT_EQ(rtr2rts_qp(*cmdq, 5, prm::qpc_st::kRc, a, 0, [&](Status s) { st = s; }), KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x504u);
  EXPECT_EQ(be32(in, kQpc + 120) & 0xFFFFFF, 0x654321u);
  const uint32_t dw28 = be32(in, kQpc + 112);
  EXPECT_EQ(dw28 >> 21 & 7, 3u);          // log_sra_max
  EXPECT_EQ(dw28 >> 16 & 7, 7u);          // retry_count
  EXPECT_EQ(dw28 >> 13 & 7, 6u);          // rnr_retry
  EXPECT_EQ(u8(in, kAds + 8) >> 3, 14u);  // ack_timeout
  // A bad state answer maps to KBV_ERR_INVALID_QP_STATE.
  std::vector<std::byte> out(16);
  out[0] = std::byte{0x10};
  answer(out);
  EXPECT_EQ(st, KBV_ERR_INVALID_QP_STATE);

  ASSERT_EQ(qp_2err(*cmdq, 5, [&](Status s) { st = s; }), KBV_PENDING);
  in = posted();
  ASSERT_EQ(in.size(), 16u);
  EXPECT_EQ(be16(in, 0), 0x507u);
  EXPECT_EQ(be32(in, 8), 5u);
  answer_ok();
  ASSERT_EQ(qp_2rst(*cmdq, 5, [&](Status s) { st = s; }), KBV_PENDING);
  in = posted();
  EXPECT_EQ(be16(in, 0), 0x50Au);
  answer_ok();
  ASSERT_EQ(init2init_qp(*cmdq, 5, prm::qpc_st::kRc, a, 0, [&](Status s) { st = s; }), KBV_PENDING);
  EXPECT_EQ(be16(posted(), 0), 0x50Eu);
  answer_ok();
  ASSERT_EQ(rts2rts_qp(*cmdq, 5, prm::qpc_st::kRc, a, 0, [&](Status s) { st = s; }), KBV_PENDING);
  EXPECT_EQ(be16(posted(), 0), 0x505u);
  answer_ok();
  ASSERT_EQ(sqerr2rts_qp(*cmdq, 5, prm::qpc_st::kRc, a, 0, [&](Status s) { st = s; }), KBV_PENDING);
  EXPECT_EQ(be16(posted(), 0), 0x506u);
  answer_ok();
  ASSERT_EQ(sqd2rts_qp(*cmdq, 5, prm::qpc_st::kRc, a, 0, [&](Status s) { st = s; }), KBV_PENDING);
  EXPECT_EQ(be16(posted(), 0), 0x50Cu);
  answer_ok();
}

TEST_F(QpCmdTest, RefusesAltPathAndWideValues) {
  QpAttr a;
  EXPECT_EQ(rts2rts_qp(*cmdq, 5, prm::qpc_st::kRc, a, op::kAltAddrPath, [](Status) {}),
            KBV_ERR_NOT_SUPPORTED);
  a.next_send_psn = 1u << 24;
  EXPECT_EQ(rtr2rts_qp(*cmdq, 5, prm::qpc_st::kRc, a, 0, [](Status) {}), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qp_2err(*cmdq, 1u << 24, [](Status) {}), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(fw.rung().empty());
}

TEST_F(QpCmdTest, QueryParsesStateAndPath) {
  Result<QpInfo> got{Status{KBV_PENDING}};
  ASSERT_EQ(query_qp(*cmdq, 0x99, [&](Result<QpInfo> r) { got = r; }), KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x50Bu);
  EXPECT_EQ(be32(in, 8), 0x99u);
  ASSERT_EQ(outlen(), 272u);
  std::vector<std::byte> out(272);
  put32(out, kQpc, 0x30020000);  // state RTS, st UD
  put32(out, kQpc + 20, 0x000042);
  put32(out, kQpc + 120, 0x000100);
  put32(out, kQpc + 168, 0x80000000);
  out[kAds + 37] = std::byte{1};
  put32(out, kAds + 40, 0x11223344);
  answer(out);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->state, prm::qp_state::kRts);
  EXPECT_EQ(got->st, prm::qpc_st::kUd);
  EXPECT_EQ(got->remote_qpn, 0x42u);
  EXPECT_EQ(got->next_send_psn, 0x100u);
  EXPECT_EQ(got->q_key, 0x80000000u);
  EXPECT_EQ(got->path.vhca_port_num, 1u);
  EXPECT_EQ(got->path.rmac, 0x11223344u);
}

}  // namespace
}  // namespace kbv::hca::cmd
