// SPDX-License-Identifier: BSD-3-Clause
// CREATE_QP / DESTROY_QP / QUERY_QP (src/sim/fw/objects/qp_cmds.cpp).
#include "fw_obj_support.hpp"

namespace kbv::sim::fw::objtest {
namespace {

class QpTest : public ObjFixture {
 protected:
  prm::Ref<prm::qpc> qpc_of(std::vector<std::byte>& in) {
    return prm::Ref<prm::create_qp_in>(in.data()).at(prm::create_qp_in::qpc);
  }
  void expect_fail(const std::vector<std::byte>& in, CmdStatus s, uint32_t synd) {
    Reply r = exec(in, 16);
    EXPECT_EQ(r.status(), st(s)) << std::hex << r.syndrome();
    EXPECT_EQ(r.syndrome(), synd);
  }
};

TEST_F(QpTest, CreateAndQuery) {
  QpSpec s = spec();
  s.log_sq = 6;  // 4 KiB of SQ after 1 KiB of RQ: 2 pages
  auto in = qp_cmd(s);
  qpc_of(in).set(prm::qpc::user_index, 0x4242);
  const uint64_t dbr = qpc_of(in).get(prm::qpc::dbr_addr);
  const uint64_t pas1 = prm::CRef<prm::create_qp_in>(in.data()).get(prm::create_qp_in::pas, 1);
  Reply r = exec(in, 16);
  ASSERT_EQ(r.status(), 0);
  const uint32_t qpn = field(r, prm::create_qp_out::qpn);
  EXPECT_GE(qpn, 2u);  // QP0 and QP1 are special

  Reply q = query_qp(qpn, 2);
  ASSERT_EQ(q.status(), 0);
  prm::CRef<prm::query_qp_out> o(q.out.data());
  auto x = o.at(prm::query_qp_out::qpc);
  EXPECT_EQ(x.get(prm::qpc::state), prm::qp_state::kRst);
  EXPECT_EQ(x.get(prm::qpc::st), prm::qpc_st::kRc);
  EXPECT_EQ(x.get(prm::qpc::pd), s.pd);
  EXPECT_EQ(x.get(prm::qpc::cqn_snd), s.scq);
  EXPECT_EQ(x.get(prm::qpc::cqn_rcv), s.rcq);
  EXPECT_EQ(x.get(prm::qpc::log_sq_size), 6u);
  EXPECT_EQ(x.get(prm::qpc::log_rq_size), 4u);
  EXPECT_EQ(x.get(prm::qpc::user_index), 0x4242u);
  EXPECT_EQ(x.get(prm::qpc::dbr_addr), dbr);
  EXPECT_EQ(o.get(prm::query_qp_out::pas, 1), pas1);

  const Qp* t = tables().qp(qpn);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->rq_bytes, 1024u);
  EXPECT_EQ(t->sq_offset, 1024u);
  EXPECT_EQ(t->sq_bytes, 4096u);
  EXPECT_EQ(t->buf.pas.size(), 2u);
  EXPECT_EQ(tables().cq(s.scq)->refs, 2u);  // send and receive
}

TEST_F(QpTest, BadFieldsAreRefused) {
  // log_sq_size / log_rq_size are 4-bit fields: lower the limit in force
  // (cap log_max_qp_sz) so that a representable size exceeds it.
  prm::Ref<prm::cmd_hca_cap>(fw_->context().caps().cur(0).data())
      .set(prm::cmd_hca_cap::log_max_qp_sz, 10);
  QpSpec s = spec();
  struct Case {
    const char* what;
    void (*edit)(prm::Ref<prm::qpc>, prm::Ref<prm::create_qp_in>);
    CmdStatus status;
    uint32_t synd;
  };
  const Case cases[] = {
      {"xrc", [](auto x, auto) { x.set(prm::qpc::st, prm::qpc_st::kXrc); },
       CmdStatus::BAD_PARAM_ERR, synd::kQpServiceType},
      {"pm_state reserved",
       [](auto x, auto) { x.set(prm::qpc::pm_state, prm::qpc_pm_state::kReserved); },
       CmdStatus::BAD_PARAM_ERR, synd::kQpPmState},
      {"ts_format real time",
       [](auto x, auto) { x.set(prm::qpc::ts_format, prm::qpc_ts_format::kRealTime); },
       CmdStatus::BAD_PARAM_ERR, synd::kQpTsFormat},
      {"log_msg_max", [](auto x, auto) { x.set(prm::qpc::log_msg_max, 31); }, CmdStatus::LIM_ERR,
       synd::kQpLogMsgMax},
      {"pd", [](auto x, auto) { x.set(prm::qpc::pd, 0xABCDE); }, CmdStatus::BAD_RES_ERR,
       synd::kQpPdUnknown},
      {"crq", [](auto x, auto) { x.set(prm::qpc::rq_type, prm::qpc_rq_type::kCrqRq); },
       CmdStatus::BAD_PARAM_ERR, synd::kQpRqType},
      {"log_rq_size", [](auto x, auto) { x.set(prm::qpc::log_rq_size, 11); }, CmdStatus::LIM_ERR,
       synd::kQpLogRqSize},
      {"rq stride", [](auto x, auto) { x.set(prm::qpc::log_rq_stride, 6); },
       CmdStatus::BAD_PARAM_ERR, synd::kQpRqStride},
      {"srq",
       [](auto x, auto) {
         x.set(prm::qpc::rq_type, prm::qpc_rq_type::kSrqRq);
         x.set(prm::qpc::srqn_rmpn_xrqn, 77);
       },
       CmdStatus::BAD_RES_ERR, synd::kQpSrqUnknown},
      {"log_sq_size", [](auto x, auto) { x.set(prm::qpc::log_sq_size, 11); }, CmdStatus::LIM_ERR,
       synd::kQpLogSqSize},
      {"no queues",
       [](auto x, auto) {
         x.set(prm::qpc::no_sq, 1);
         x.set(prm::qpc::rq_type, prm::qpc_rq_type::kZeroLenRq);
       },
       CmdStatus::BAD_PARAM_ERR, synd::kQpNoQueues},
      {"cqn_snd", [](auto x, auto) { x.set(prm::qpc::cqn_snd, 999); }, CmdStatus::BAD_RES_ERR,
       synd::kQpCqSndUnknown},
      {"cqn_rcv", [](auto x, auto) { x.set(prm::qpc::cqn_rcv, 999); }, CmdStatus::BAD_RES_ERR,
       synd::kQpCqRcvUnknown},
      {"uar", [](auto x, auto) { x.set(prm::qpc::uar_page, 100); }, CmdStatus::BAD_RES_ERR,
       synd::kQpUarUnknown},
      {"counter set", [](auto x, auto) { x.set(prm::qpc::counter_set_id, 3); },
       CmdStatus::BAD_RES_ERR, synd::kQpCounterSet},
      {"log_page_size", [](auto x, auto) { x.set(prm::qpc::log_page_size, 19); },
       CmdStatus::BAD_PARAM_ERR, synd::kQpLogPageSize},
      {"dbr", [](auto x, auto) { x.set(prm::qpc::dbr_addr, 0x10000002); }, CmdStatus::BAD_PARAM_ERR,
       synd::kQpDbrMisaligned},
      {"wq_signature", [](auto x, auto) { x.set(prm::qpc::wq_signature, 1); },
       CmdStatus::BAD_PARAM_ERR, synd::kQpUnsupported},
      {"umem", [](auto, auto c) { c.set(prm::create_qp_in::wq_umem_valid, 1); },
       CmdStatus::BAD_RES_ERR, synd::at(Opcode::CREATE_QP, synd::kUmemUnknown)},
      {"input_qpn", [](auto, auto c) { c.set(prm::create_qp_in::input_qpn, 100); },
       CmdStatus::BAD_PARAM_ERR, synd::kQpInputQpn},
      {"opt_param_mask", [](auto, auto c) { c.set(prm::create_qp_in::opt_param_mask, 1); },
       CmdStatus::BAD_PARAM_ERR, synd::kQpOptParam},
      {"pas misaligned", [](auto, auto c) { c.set(prm::create_qp_in::pas, 0, 0x10000040); },
       CmdStatus::BAD_PARAM_ERR, synd::kQpPasMisaligned},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    auto in = qp_cmd(s);
    k.edit(qpc_of(in), prm::Ref<prm::create_qp_in>(in.data()));
    expect_fail(in, k.status, k.synd);
  }
  {
    s.log_sq = 7;  // 1 KiB RQ + 8 KiB SQ = 3 pages; send 2
    auto in = qp_cmd(s);
    in.resize(in.size() - 8);
    expect_fail(in, CmdStatus::BAD_INP_LEN_ERR, synd::kQpPasTooShort);
  }
  EXPECT_TRUE(tables().qps.empty());
  EXPECT_EQ(tables().pd(s.pd)->refs, 0u);
  EXPECT_EQ(tables().cq(s.scq)->refs, 0u);
}

TEST_F(QpTest, RoceMustBeEnabled) {
  QpSpec s = spec();
  ASSERT_EQ(set_roce_en(false).status(), 0);
  expect_fail(qp_cmd(s), CmdStatus::BAD_SYS_STATE_ERR, synd::kQpRoceDisabled);
}

TEST_F(QpTest, SrqQpAndQueueLessVariants) {
  QpSpec s = spec(prm::qpc_st::kUd);
  s.rq_type = prm::qpc_rq_type::kSrqRq;
  s.srqn = create_srq(s.pd);
  const uint32_t a = create_qp(s);
  EXPECT_EQ(tables().qp(a)->srqn, s.srqn);
  EXPECT_EQ(tables().qp(a)->rq_bytes, 0u);
  EXPECT_EQ(tables().srq(s.srqn)->refs, 1u);

  QpSpec z = spec(prm::qpc_st::kUc);
  z.rq_type = prm::qpc_rq_type::kZeroLenRq;
  z.rcq = 0;  // no receive CQ needed
  const uint32_t b = create_qp(z);
  EXPECT_EQ(tables().qp(b)->cqn_rcv, 0u);
  EXPECT_EQ(tables().cq(z.scq)->refs, 1u);
}

TEST_F(QpTest, DestroyTwiceAndQueryUnknown) {
  const uint32_t qpn = create_qp(spec());
  ASSERT_EQ(destroy_qp(qpn).status(), 0);
  Reply r = destroy_qp(qpn);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_RES_ERR));
  EXPECT_EQ(r.syndrome(), synd::kDestroyQpUnknown);
  Reply q = query_qp(qpn);
  EXPECT_EQ(q.status(), st(CmdStatus::BAD_RES_ERR));
  EXPECT_EQ(q.syndrome(), synd::kQueryQpUnknown);
}

TEST_F(QpTest, ExhaustionIsNoResources) {
  prm::Ref<prm::cmd_hca_cap>(fw_->context().caps().cur(0).data())
      .set(prm::cmd_hca_cap::log_max_qp, 1);
  QpSpec s = spec();
  create_qp(s);
  create_qp(s);
  expect_fail(qp_cmd(s), CmdStatus::NO_RES_ERR, synd::kQpExhausted);
}

}  // namespace
}  // namespace kbv::sim::fw::objtest
