// SPDX-License-Identifier: BSD-3-Clause
// CREATE_SRQ / DESTROY_SRQ / QUERY_SRQ / ARM_RQ (src/sim/fw/objects/srq_cmds.cpp).
#include "fw_obj_support.hpp"

namespace kbv::sim::fw::objtest {
namespace {

class SrqTest : public ObjFixture {
 protected:
  prm::Ref<prm::srqc> ctx_of(std::vector<std::byte>& in) {
    return prm::Ref<prm::create_srq_in>(in.data()).at(prm::create_srq_in::srq_context_entry);
  }
  void expect_fail(const std::vector<std::byte>& in, CmdStatus s, uint32_t synd) {
    Reply r = exec(in, 16);
    EXPECT_EQ(r.status(), st(s)) << std::hex << r.syndrome();
    EXPECT_EQ(r.syndrome(), synd);
  }
  Reply query(uint32_t srqn) {
    auto in = cmd<prm::query_srq_in>(Opcode::QUERY_SRQ);
    prm::Ref<prm::query_srq_in>(in.data()).set(prm::query_srq_in::srqn, srqn);
    return exec(in, prm::query_srq_out::kBits / 8 + 8);
  }
  Reply arm(uint32_t srqn, uint32_t lwm, uint16_t op_mod = prm::arm_rq_op_mod::kSrq) {
    auto in = cmd<prm::arm_rq_in>(Opcode::ARM_RQ, op_mod);
    prm::Ref<prm::arm_rq_in> a(in.data());
    a.set(prm::arm_rq_in::srq_number, srqn);
    a.set(prm::arm_rq_in::lwm, lwm);
    return exec(in, 16);
  }
  Reply destroy(uint32_t srqn) {
    auto in = cmd<prm::destroy_srq_in>(Opcode::DESTROY_SRQ);
    prm::Ref<prm::destroy_srq_in>(in.data()).set(prm::destroy_srq_in::srqn, srqn);
    return exec(in, 16);
  }
};

TEST_F(SrqTest, CreateQueryArmDestroy) {
  const uint32_t pd = alloc_pd();
  const uint32_t cqn = create_cq();
  auto in = srq_cmd(pd, 5, cqn);
  ctx_of(in).set(prm::srqc::lwm, 4);
  const uint64_t dbr = ctx_of(in).get(prm::srqc::dbr_addr);
  Reply r = exec(in, 16);
  ASSERT_EQ(r.status(), 0);
  const uint32_t srqn = field(r, prm::create_srq_out::srqn);

  Reply q = query(srqn);
  ASSERT_EQ(q.status(), 0);
  auto x = prm::CRef<prm::query_srq_out>(q.out.data()).at(prm::query_srq_out::srq_context_entry);
  EXPECT_EQ(x.get(prm::srqc::state), prm::srqc_state::kGood);
  EXPECT_EQ(x.get(prm::srqc::log_srq_size), 5u);
  EXPECT_EQ(x.get(prm::srqc::log_rq_stride), 2u);
  EXPECT_EQ(x.get(prm::srqc::pd), pd);
  EXPECT_EQ(x.get(prm::srqc::cqn), cqn);
  EXPECT_EQ(x.get(prm::srqc::lwm), 4u);
  EXPECT_EQ(x.get(prm::srqc::dbr_addr), dbr);
  EXPECT_EQ(tables().srq(srqn)->buf.pas.size(), 1u);  // 32 x 64 B = 2 KiB
  EXPECT_FALSE(tables().srq(srqn)->armed);

  ASSERT_EQ(arm(srqn, 8).status(), 0);
  EXPECT_TRUE(tables().srq(srqn)->armed);
  EXPECT_EQ(tables().srq(srqn)->lwm, 8u);
  Reply big = arm(srqn, 33);
  EXPECT_EQ(big.status(), st(CmdStatus::BAD_PARAM_ERR));
  EXPECT_EQ(big.syndrome(), synd::kArmRqLwm);
  EXPECT_EQ(arm(srqn + 50, 1).syndrome(), synd::kArmRqUnknown);
  EXPECT_EQ(arm(srqn, 1, prm::arm_rq_op_mod::kXrq).syndrome(), synd::kBadOpMod);

  EXPECT_EQ(dealloc_pd(pd).status(), st(CmdStatus::RES_BUSY));
  ASSERT_EQ(destroy(srqn).status(), 0);
  Reply again = destroy(srqn);
  EXPECT_EQ(again.status(), st(CmdStatus::BAD_RES_ERR));
  EXPECT_EQ(again.syndrome(), synd::kDestroySrqUnknown);
  EXPECT_EQ(query(srqn).syndrome(), synd::kQuerySrqUnknown);
  EXPECT_EQ(dealloc_pd(pd).status(), 0);
  EXPECT_EQ(destroy_cq(cqn).status(), 0);
}

TEST_F(SrqTest, BadFieldsAreRefused) {
  const uint32_t pd = alloc_pd();
  prm::Ref<prm::cmd_hca_cap>(fw_->context().caps().cur(0).data())
      .set(prm::cmd_hca_cap::log_max_srq_sz, 10);
  struct Case {
    const char* what;
    void (*edit)(prm::Ref<prm::srqc>);
    CmdStatus status;
    uint32_t synd;
  };
  const Case cases[] = {
      {"size", [](auto x) { x.set(prm::srqc::log_srq_size, 11); }, CmdStatus::LIM_ERR,
       synd::kSrqLogSize},
      {"stride", [](auto x) { x.set(prm::srqc::log_rq_stride, 6); }, CmdStatus::BAD_PARAM_ERR,
       synd::kSrqStride},
      {"xrcd", [](auto x) { x.set(prm::srqc::xrcd, 1); }, CmdStatus::BAD_PARAM_ERR,
       synd::kSrqUnsupported},
      {"lwm", [](auto x) { x.set(prm::srqc::lwm, 17); }, CmdStatus::BAD_PARAM_ERR, synd::kSrqLwm},
      {"pd", [](auto x) { x.set(prm::srqc::pd, 0x777); }, CmdStatus::BAD_RES_ERR,
       synd::kSrqPdUnknown},
      {"cq", [](auto x) { x.set(prm::srqc::cqn, 0x777); }, CmdStatus::BAD_RES_ERR,
       synd::kSrqCqUnknown},
      {"page size", [](auto x) { x.set(prm::srqc::log_page_size, 19); }, CmdStatus::BAD_PARAM_ERR,
       synd::kSrqLogPageSize},
      {"dbr", [](auto x) { x.set(prm::srqc::dbr_addr, 0x10000004); }, CmdStatus::BAD_PARAM_ERR,
       synd::kSrqDbrMisaligned},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    auto in = srq_cmd(pd, 4);
    k.edit(ctx_of(in));
    expect_fail(in, k.status, k.synd);
  }
  auto in = srq_cmd(pd, 7);  // 128 x 64 B = 8 KiB: 2 pages
  in.resize(in.size() - 8);
  expect_fail(in, CmdStatus::BAD_INP_LEN_ERR, synd::kSrqPasTooShort);
  auto mis = srq_cmd(pd, 4);
  prm::Ref<prm::create_srq_in>(mis.data()).set(prm::create_srq_in::pas, 0, 0x10000010);
  expect_fail(mis, CmdStatus::BAD_PARAM_ERR, synd::kSrqPasMisaligned);
  EXPECT_TRUE(tables().srqs.empty());
}

TEST_F(SrqTest, SrqUsedByQpIsBusy) {
  QpSpec s = spec();
  s.rq_type = prm::qpc_rq_type::kSrqRq;
  s.srqn = create_srq(s.pd);
  const uint32_t qpn = create_qp(s);
  Reply r = destroy(s.srqn);
  EXPECT_EQ(r.status(), st(CmdStatus::RES_BUSY));
  EXPECT_EQ(r.syndrome(), synd::kDestroySrqInUse);
  ASSERT_EQ(destroy_qp(qpn).status(), 0);
  EXPECT_EQ(destroy(s.srqn).status(), 0);
}

TEST_F(SrqTest, ExhaustionIsNoResources) {
  prm::Ref<prm::cmd_hca_cap>(fw_->context().caps().cur(0).data())
      .set(prm::cmd_hca_cap::log_max_srq, 0);
  const uint32_t pd = alloc_pd();
  create_srq(pd);
  expect_fail(srq_cmd(pd), CmdStatus::NO_RES_ERR, synd::kSrqExhausted);
}

}  // namespace
}  // namespace kbv::sim::fw::objtest
