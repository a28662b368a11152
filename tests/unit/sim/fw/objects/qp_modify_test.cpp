// SPDX-License-Identifier: BSD-3-Clause
// The QP state transitions (src/sim/fw/objects/qp_modify.cpp): the IBTA state
// machine tabulated for every command from every state, the required and
// optional attributes, and their refusals.
#include "fw_obj_support.hpp"

namespace kbv::sim::fw::objtest {
namespace {

namespace qs = prm::qp_state;
namespace op = prm::qp_optpar;

class QpModifyTest : public ObjFixture {
 protected:
  // A new RC QP moved to `state`. SQER and SQD are entered by the data path
  // (send error, SQ drain), so the test plays the engine and sets them in the
  // QP table after reaching RTS.
  uint32_t qp_in(uint32_t state) {
    if (spec_.pd == 0) spec_ = spec();
    const uint32_t qpn = create_qp(spec_);
    switch (state) {
      case qs::kRst: break;
      case qs::kInit: EXPECT_EQ(modify(Opcode::RST2INIT_QP, qpn).status(), 0); break;
      case qs::kRtr:
        EXPECT_EQ(modify(Opcode::RST2INIT_QP, qpn).status(), 0);
        EXPECT_EQ(modify(Opcode::INIT2RTR_QP, qpn).status(), 0);
        break;
      case qs::kRts: to_rts(qpn); break;
      case qs::kSqer:
      case qs::kSqd:
        to_rts(qpn);
        tables().qp(qpn)->state = state;
        break;
      case qs::kErr: EXPECT_EQ(modify(Opcode::TO_ERR_QP, qpn).status(), 0); break;
    }
    EXPECT_EQ(qp_state(qpn), state);
    return qpn;
  }
  prm::Ref<prm::qpc> qpc_of(std::vector<std::byte>& in) {
    return prm::Ref<prm::rst2init_qp_in>(in.data()).at(prm::rst2init_qp_in::qpc);
  }
  prm::Ref<prm::ads> path_of(std::vector<std::byte>& in) {
    return qpc_of(in).at(prm::qpc::primary_address_path);
  }
  void expect_fail(const std::vector<std::byte>& in, CmdStatus s, Opcode o, uint16_t check) {
    Reply r = exec(in, 16);
    EXPECT_EQ(r.status(), st(s)) << std::hex << r.syndrome();
    EXPECT_EQ(r.syndrome(), synd::qp_synd(o, check));
  }
  prm::CRef<prm::qpc> queried(uint32_t qpn) {
    last_ = query_qp(qpn);
    EXPECT_EQ(last_.status(), 0);
    return prm::CRef<prm::query_qp_out>(last_.out.data()).at(prm::query_qp_out::qpc);
  }
  QpSpec spec_;
  Reply last_;
};

// IBTA Vol 1 10.3.1 (Figure 124, Table 91) as mlx5 commands: for each
// command, the state it is legal from (any = every state) and the result.
TEST_F(QpModifyTest, EveryCommandFromEveryState) {
  struct Cmd {
    Opcode op;
    int from;  // -1 = any state
    uint32_t to;
  };
  const Cmd cmds[] = {
      {Opcode::RST2INIT_QP, qs::kRst, qs::kInit}, {Opcode::INIT2INIT_QP, qs::kInit, qs::kInit},
      {Opcode::INIT2RTR_QP, qs::kInit, qs::kRtr}, {Opcode::RTR2RTS_QP, qs::kRtr, qs::kRts},
      {Opcode::RTS2RTS_QP, qs::kRts, qs::kRts},   {Opcode::SQERR2RTS_QP, qs::kSqer, qs::kRts},
      {Opcode::SQD_RTS_QP, qs::kSqd, qs::kRts},   {Opcode::TO_ERR_QP, -1, qs::kErr},
      {Opcode::TO_RST_QP, -1, qs::kRst},
  };
  const uint32_t states[] = {qs::kRst,  qs::kInit, qs::kRtr, qs::kRts,
                             qs::kSqer, qs::kSqd,  qs::kErr};
  int legal = 0, illegal = 0;
  for (const Cmd& c : cmds) {
    for (uint32_t from : states) {
      SCOPED_TRACE(testing::Message() << prm::opcode_name(c.op) << " from state " << from);
      const uint32_t qpn = qp_in(from);
      Reply r = modify(c.op, qpn);
      if (c.from < 0 || static_cast<uint32_t>(c.from) == from) {
        ++legal;
        EXPECT_EQ(r.status(), 0) << std::hex << r.syndrome();
        EXPECT_EQ(qp_state(qpn), c.to);
      } else {
        ++illegal;
        EXPECT_EQ(r.status(), st(CmdStatus::BAD_QP_STATE_ERR));
        EXPECT_EQ(r.syndrome(), synd::qp_synd(c.op, synd::kQpBadState));
        EXPECT_EQ(qp_state(qpn), from);  // unchanged
      }
      ASSERT_EQ(destroy_qp(qpn).status(), 0);  // any state
    }
  }
  EXPECT_EQ(legal, 7 + 2 * 7);
  EXPECT_EQ(illegal, 7 * 6);
}

TEST_F(QpModifyTest, RcWalkAppliesTheRequiredAttributes) {
  const uint32_t qpn = create_qp(spec());
  auto init = modify_cmd(Opcode::RST2INIT_QP, qpn);
  qpc_of(init).set(prm::qpc::rre, 1);
  qpc_of(init).set(prm::qpc::rwe, 1);
  path_of(init).set(prm::ads::pkey_index, 0);
  ASSERT_EQ(exec(init, 16).status(), 0);
  auto x = queried(qpn);
  EXPECT_EQ(x.get(prm::qpc::state), qs::kInit);
  EXPECT_EQ(x.get(prm::qpc::rre), 1u);
  EXPECT_EQ(x.get(prm::qpc::rwe), 1u);
  EXPECT_EQ(x.get(prm::qpc::rae), 0u);
  EXPECT_EQ(x.get(prm::qpc::remote_qpn), 0u);  // not an RST2INIT attribute
  EXPECT_EQ(x.at(prm::qpc::primary_address_path).get(prm::ads::vhca_port_num), 1u);

  ASSERT_EQ(modify(Opcode::INIT2RTR_QP, qpn).status(), 0);
  x = queried(qpn);
  EXPECT_EQ(x.get(prm::qpc::state), qs::kRtr);
  EXPECT_EQ(x.get(prm::qpc::mtu), prm::qpc_mtu::k1kBytes);
  EXPECT_EQ(x.get(prm::qpc::remote_qpn), 0x123u);
  EXPECT_EQ(x.get(prm::qpc::next_rcv_psn), 0x111u);
  EXPECT_EQ(x.get(prm::qpc::min_rnr_nak), 12u);
  EXPECT_EQ(x.get(prm::qpc::log_rra_max), 2u);
  EXPECT_EQ(x.get(prm::qpc::next_send_psn), 0u);  // an RTR2RTS attribute

  ASSERT_EQ(modify(Opcode::RTR2RTS_QP, qpn).status(), 0);
  x = queried(qpn);
  EXPECT_EQ(x.get(prm::qpc::state), qs::kRts);
  EXPECT_EQ(x.get(prm::qpc::next_send_psn), 0x222u);
  EXPECT_EQ(x.get(prm::qpc::retry_count), 7u);
  EXPECT_EQ(x.get(prm::qpc::rnr_retry), 7u);
  EXPECT_EQ(x.get(prm::qpc::log_sra_max), 2u);

  // The decoded view the data-path engine reads.
  const Qp* q = tables().qp(qpn);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->state, qs::kRts);
  EXPECT_EQ(q->path.rgid, ipv4_mapped_gid(127, 0, 0, 2));
  EXPECT_EQ(q->path.rmac, (std::array<uint8_t, 6>{0x02, 0x6b, 0x62, 0x76, 0x00, 0x02}));
  EXPECT_EQ(q->path.udp_sport, 0xC123u);
  EXPECT_EQ(q->path.hop_limit, 64u);
  EXPECT_EQ(q->path.tclass, 0x68u);
  EXPECT_EQ(q->path.ack_timeout, 14u);
  EXPECT_TRUE(q->path.grh);
  EXPECT_EQ(q->mtu, prm::qpc_mtu::k1kBytes);
  EXPECT_TRUE(q->rre);
}

TEST_F(QpModifyTest, ResetRestoresCreationAttributes) {
  const uint32_t qpn = qp_in(qs::kRts);
  // The engine's progress shows in QUERY_QP until the reset.
  QpCounters& n = tables().qp(qpn)->counters;
  n.sw_sq_wqebb_counter = 9;
  n.hw_sq_wqebb_counter = 7;
  n.last_acked_psn = 0x221;
  n.sw_rq_counter = 5;
  auto before = queried(qpn);
  EXPECT_EQ(before.get(prm::qpc::sw_sq_wqebb_counter), 9u);
  EXPECT_EQ(before.get(prm::qpc::hw_sq_wqebb_counter), 7u);
  EXPECT_EQ(before.get(prm::qpc::last_acked_psn), 0x221u);
  EXPECT_EQ(before.get(prm::qpc::sw_rq_counter), 5u);
  ASSERT_EQ(modify(Opcode::TO_RST_QP, qpn).status(), 0);
  auto x = queried(qpn);
  EXPECT_EQ(x.get(prm::qpc::state), qs::kRst);
  EXPECT_EQ(x.get(prm::qpc::remote_qpn), 0u);
  EXPECT_EQ(x.get(prm::qpc::next_send_psn), 0u);
  EXPECT_EQ(x.get(prm::qpc::pd), spec_.pd);  // creation attributes stay
  EXPECT_EQ(x.get(prm::qpc::sw_sq_wqebb_counter), 0u);
  EXPECT_EQ(x.get(prm::qpc::last_acked_psn), 0u);
  to_rts(qpn);  // and the QP can be used again
}

TEST_F(QpModifyTest, OptionalParametersFollowTheMask) {
  const uint32_t qpn = qp_in(qs::kRts);
  auto in = modify_cmd(Opcode::RTS2RTS_QP, qpn);
  qpc_of(in).set(prm::qpc::min_rnr_nak, 3);
  ASSERT_EQ(exec(in, 16).status(), 0);
  EXPECT_EQ(tables().qp(qpn)->min_rnr_nak, 12u);  // bit clear: unchanged
  prm::Ref<prm::rst2init_qp_in>(in.data()).set(prm::rst2init_qp_in::opt_param_mask,
                                               op::kRnrTimeout | op::kRae);
  qpc_of(in).set(prm::qpc::rae, 1);
  ASSERT_EQ(exec(in, 16).status(), 0);
  EXPECT_EQ(tables().qp(qpn)->min_rnr_nak, 3u);
  EXPECT_TRUE(tables().qp(qpn)->rae);
}

TEST_F(QpModifyTest, MaskBitsOutsideTheTransitionAreRefused) {
  const uint32_t rst = qp_in(qs::kRst);
  expect_fail(modify_cmd(Opcode::RST2INIT_QP, rst, op::kQKey), CmdStatus::BAD_PARAM_ERR,
              Opcode::RST2INIT_QP, synd::kQpOptMask);
  const uint32_t init = qp_in(qs::kInit);
  expect_fail(modify_cmd(Opcode::INIT2RTR_QP, init, op::kAltAddrPath), CmdStatus::BAD_PARAM_ERR,
              Opcode::INIT2RTR_QP, synd::kQpAltPath);
  expect_fail(modify_cmd(Opcode::INIT2RTR_QP, init, op::kSraMax), CmdStatus::BAD_PARAM_ERR,
              Opcode::INIT2RTR_QP, synd::kQpOptMask);
  const uint32_t rtr = qp_in(qs::kRtr);
  expect_fail(modify_cmd(Opcode::RTR2RTS_QP, rtr, op::kQKey), CmdStatus::BAD_PARAM_ERR,
              Opcode::RTR2RTS_QP, synd::kQpOptMask);  // Q_Key is UD-only
  EXPECT_EQ(qp_state(rtr), qs::kRtr);
}

TEST_F(QpModifyTest, Rst2InitRefusals) {
  const uint32_t qpn = qp_in(qs::kRst);
  {
    auto in = modify_cmd(Opcode::RST2INIT_QP, qpn);
    path_of(in).set(prm::ads::vhca_port_num, 2);
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, Opcode::RST2INIT_QP, synd::kQpPort);
  }
  {
    auto in = modify_cmd(Opcode::RST2INIT_QP, qpn);
    path_of(in).set(prm::ads::vhca_port_num, 0);
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, Opcode::RST2INIT_QP, synd::kQpPort);
  }
  {
    auto in = modify_cmd(Opcode::RST2INIT_QP, qpn);
    path_of(in).set(prm::ads::pkey_index, 128);
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, Opcode::RST2INIT_QP, synd::kQpPkeyIndex);
  }
  {
    auto in = modify_cmd(Opcode::RST2INIT_QP, qpn);
    qpc_of(in).set(prm::qpc::counter_set_id, 1);
    expect_fail(in, CmdStatus::BAD_RES_ERR, Opcode::RST2INIT_QP, synd::kQpCounterSetParam);
  }
  {
    auto in = modify_cmd(Opcode::RST2INIT_QP, qpn);
    qpc_of(in).set(prm::qpc::dbr_addr, 0x10000001);
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, Opcode::RST2INIT_QP, synd::kQpDbr);
  }
  expect_fail(modify_cmd(Opcode::RST2INIT_QP, 0xFFFFF0), CmdStatus::BAD_RES_ERR,
              Opcode::RST2INIT_QP, synd::kQpUnknown);
  EXPECT_EQ(qp_state(qpn), qs::kRst);

  // UC has no RDMA read / atomics, UD no RDMA rights at all.
  const uint32_t uc = create_qp(spec(prm::qpc_st::kUc));
  auto in = modify_cmd(Opcode::RST2INIT_QP, uc);
  qpc_of(in).set(prm::qpc::rre, 1);
  expect_fail(in, CmdStatus::BAD_PARAM_ERR, Opcode::RST2INIT_QP, synd::kQpAccessFlags);
  const uint32_t ud = create_qp(spec(prm::qpc_st::kUd));
  auto in2 = modify_cmd(Opcode::RST2INIT_QP, ud);
  qpc_of(in2).set(prm::qpc::rwe, 1);
  expect_fail(in2, CmdStatus::BAD_PARAM_ERR, Opcode::RST2INIT_QP, synd::kQpAccessFlags);
}

TEST_F(QpModifyTest, Init2RtrRefusals) {
  const uint32_t qpn = qp_in(qs::kInit);
  struct Case {
    const char* what;
    void (*edit)(prm::Ref<prm::qpc>);
    CmdStatus status;
    uint16_t check;
  };
  const Case cases[] = {
      {"mtu 0", [](auto x) { x.set(prm::qpc::mtu, 0); }, CmdStatus::BAD_PARAM_ERR, synd::kQpMtu},
      {"mtu 6", [](auto x) { x.set(prm::qpc::mtu, 6); }, CmdStatus::BAD_PARAM_ERR, synd::kQpMtu},
      {"no grh", [](auto x) { x.at(prm::qpc::primary_address_path).set(prm::ads::grh, 0); },
       CmdStatus::BAD_PARAM_ERR, synd::kQpGrh},
      {"unset sgid",
       [](auto x) { x.at(prm::qpc::primary_address_path).set(prm::ads::src_addr_index, 5); },
       CmdStatus::BAD_PARAM_ERR, synd::kQpSgidIndex},
      {"zero rgid",
       [](auto x) {
         std::array<std::byte, 16> z{};
         x.at(prm::qpc::primary_address_path).set_bytes(prm::ads::rgid_rip, z);
       },
       CmdStatus::BAD_PARAM_ERR, synd::kQpRgid},
      {"port 3",
       [](auto x) { x.at(prm::qpc::primary_address_path).set(prm::ads::vhca_port_num, 3); },
       CmdStatus::BAD_PARAM_ERR, synd::kQpPort},
      {"udp_sport",
       [](auto x) { x.at(prm::qpc::primary_address_path).set(prm::ads::udp_sport, 0x1234); },
       CmdStatus::BAD_PARAM_ERR, synd::kQpUdpSport},
      {"log_rra_max", [](auto x) { x.set(prm::qpc::log_rra_max, 5); }, CmdStatus::LIM_ERR,
       synd::kQpRraMax},
      {"log_msg_max", [](auto x) { x.set(prm::qpc::log_msg_max, 31); }, CmdStatus::LIM_ERR,
       synd::kQpMsgMax},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    auto in = modify_cmd(Opcode::INIT2RTR_QP, qpn);
    k.edit(qpc_of(in));
    expect_fail(in, k.status, Opcode::INIT2RTR_QP, k.check);
  }
  EXPECT_EQ(qp_state(qpn), qs::kInit);
  // A GID set with SET_ROCE_ADDRESS may be used as the source.
  tables().roce[5] = tables().roce[0];
  auto in = modify_cmd(Opcode::INIT2RTR_QP, qpn);
  path_of(in).set(prm::ads::src_addr_index, 5);
  EXPECT_EQ(exec(in, 16).status(), 0);
  EXPECT_EQ(tables().qp(qpn)->path.src_addr_index, 5u);
}

TEST_F(QpModifyTest, Rtr2RtsRefusesTooManyReads) {
  const uint32_t qpn = qp_in(qs::kRtr);
  auto in = modify_cmd(Opcode::RTR2RTS_QP, qpn);
  qpc_of(in).set(prm::qpc::log_sra_max, 5);  // cap log_max_ra_req_qp is 4
  expect_fail(in, CmdStatus::LIM_ERR, Opcode::RTR2RTS_QP, synd::kQpSraMax);
  EXPECT_EQ(qp_state(qpn), qs::kRtr);
}

TEST_F(QpModifyTest, UdWalkAndReceiveRebinding) {
  QpSpec s = spec(prm::qpc_st::kUd);
  const uint32_t qpn = create_qp(s);
  auto init = modify_cmd(Opcode::RST2INIT_QP, qpn);
  qpc_of(init).set(prm::qpc::q_key, 0x80010000);
  ASSERT_EQ(exec(init, 16).status(), 0);
  EXPECT_EQ(tables().qp(qpn)->q_key, 0x80010000u);
  // UD INIT2RTR has no path: no GID / GRH checks apply.
  auto rtr = modify_cmd(Opcode::INIT2RTR_QP, qpn);
  path_of(rtr).set(prm::ads::grh, 0);
  qpc_of(rtr).set(prm::qpc::mtu, prm::qpc_mtu::k4kBytes);
  ASSERT_EQ(exec(rtr, 16).status(), 0);
  ASSERT_EQ(modify(Opcode::RTR2RTS_QP, qpn).status(), 0);
  EXPECT_EQ(tables().qp(qpn)->next_send_psn, 0x222u);

  // RTS2RTS with CQN_RCV moves the receive CQ; the old one can then go.
  const uint32_t other = create_cq();
  auto mv = modify_cmd(Opcode::RTS2RTS_QP, qpn, op::kCqnRcv | op::kQKey);
  qpc_of(mv).set(prm::qpc::cqn_rcv, other);
  ASSERT_EQ(exec(mv, 16).status(), 0);
  EXPECT_EQ(tables().qp(qpn)->cqn_rcv, other);
  EXPECT_EQ(tables().qp(qpn)->q_key, 0x11111111u);
  EXPECT_EQ(tables().cq(s.rcq)->refs, 1u);  // still the send CQ
  EXPECT_EQ(tables().cq(other)->refs, 1u);
  auto bad = modify_cmd(Opcode::RTS2RTS_QP, qpn, op::kCqnRcv);
  qpc_of(bad).set(prm::qpc::cqn_rcv, 999);
  expect_fail(bad, CmdStatus::BAD_RES_ERR, Opcode::RTS2RTS_QP, synd::kQpCqnRcv);
  auto bad_srq = modify_cmd(Opcode::RTS2RTS_QP, qpn, op::kSrqn);
  qpc_of(bad_srq).set(prm::qpc::srqn_rmpn_xrqn, 999);
  expect_fail(bad_srq, CmdStatus::BAD_RES_ERR, Opcode::RTS2RTS_QP, synd::kQpSrqn);
  // 2RST returns to the creation CQ.
  ASSERT_EQ(modify(Opcode::TO_RST_QP, qpn).status(), 0);
  EXPECT_EQ(tables().qp(qpn)->cqn_rcv, s.rcq);
  EXPECT_EQ(tables().cq(other)->refs, 0u);
  EXPECT_EQ(destroy_cq(other).status(), 0);
}

}  // namespace
}  // namespace kbv::sim::fw::objtest
