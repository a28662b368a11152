// SPDX-License-Identifier: BSD-3-Clause
// ALLOC_PD / DEALLOC_PD / ALLOC_ / DEALLOC_TRANSPORT_DOMAIN on the model
// firmware (src/sim/fw/objects/pd_cmds.cpp), driven through the command queue.
#include "fw_obj_support.hpp"

namespace kbv::sim::fw::objtest {
namespace {

using PdTest = ObjFixture;

TEST_F(PdTest, AllocGivesDistinctNumbersAndReusesFreedOnes) {
  const uint32_t a = alloc_pd();
  const uint32_t b = alloc_pd();
  EXPECT_NE(a, b);
  EXPECT_LT(a, 1u << 24);
  ASSERT_EQ(dealloc_pd(a).status(), 0);
  EXPECT_EQ(alloc_pd(), a);  // lowest free number first
  EXPECT_EQ(tables().pds.size(), 2u);
}

TEST_F(PdTest, DoubleDeallocAndUnknownPdAreBadResource) {
  const uint32_t a = alloc_pd();
  ASSERT_EQ(dealloc_pd(a).status(), 0);
  Reply r = dealloc_pd(a);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_RES_ERR));
  EXPECT_EQ(r.syndrome(), synd::kPdUnknown);
  EXPECT_EQ(dealloc_pd(0x123456).status(), st(CmdStatus::BAD_RES_ERR));
}

TEST_F(PdTest, DeallocOfPdInUseIsResourceBusy) {
  QpSpec s = spec();
  const uint32_t qpn = create_qp(s);
  Reply r = dealloc_pd(s.pd);
  EXPECT_EQ(r.status(), st(CmdStatus::RES_BUSY));
  EXPECT_EQ(r.syndrome(), synd::kPdInUse);
  ASSERT_EQ(destroy_qp(qpn).status(), 0);
  EXPECT_EQ(dealloc_pd(s.pd).status(), 0);
}

TEST_F(PdTest, AllocBeyondLogMaxPdIsNoResources) {
  // Lower the limit in force to 2 PDs (the caps are the firmware's own state).
  prm::Ref<prm::cmd_hca_cap>(fw_->context().caps().cur(0).data())
      .set(prm::cmd_hca_cap::log_max_pd, 1);
  alloc_pd();
  alloc_pd();
  Reply r = run(Opcode::ALLOC_PD, 0, 16, 16);
  EXPECT_EQ(r.status(), st(CmdStatus::NO_RES_ERR));
  EXPECT_EQ(r.syndrome(), synd::kPdExhausted);
}

TEST_F(PdTest, TransportDomainAllocAndDoubleFree) {
  Reply a = run(Opcode::ALLOC_TRANSPORT_DOMAIN, 0, 16, 16);
  ASSERT_EQ(a.status(), 0);
  const uint32_t td = field(a, prm::alloc_transport_domain_out::transport_domain);
  Reply b = run(Opcode::ALLOC_TRANSPORT_DOMAIN, 0, 16, 16);
  ASSERT_EQ(b.status(), 0);
  EXPECT_NE(field(b, prm::alloc_transport_domain_out::transport_domain), td);
  auto in = cmd<prm::dealloc_transport_domain_in>(Opcode::DEALLOC_TRANSPORT_DOMAIN);
  prm::Ref<prm::dealloc_transport_domain_in>(in.data()).set(
      prm::dealloc_transport_domain_in::transport_domain, td);
  EXPECT_EQ(exec(in, 16).status(), 0);
  Reply again = exec(in, 16);
  EXPECT_EQ(again.status(), st(CmdStatus::BAD_RES_ERR));
  EXPECT_EQ(again.syndrome(), synd::kTdUnknown);
}

TEST_F(PdTest, ObjectsNeedAnInitializedHca) {
  ASSERT_EQ(run(Opcode::TEARDOWN_HCA, 0, 16, 16).status(), 0);
  Reply r = run(Opcode::ALLOC_PD, 0, 16, 16);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_SYS_STATE_ERR));
  EXPECT_EQ(r.syndrome(), synd::kNotInitialized);
}

}  // namespace
}  // namespace kbv::sim::fw::objtest
