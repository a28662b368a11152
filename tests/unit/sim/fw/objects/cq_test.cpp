// SPDX-License-Identifier: BSD-3-Clause
// CREATE_CQ / DESTROY_CQ / QUERY_CQ / MODIFY_CQ (src/sim/fw/objects/cq_cmds.cpp).
#include "fw_obj_support.hpp"

namespace kbv::sim::fw::objtest {
namespace {

class CqTest : public ObjFixture {
 protected:
  prm::Ref<prm::cqc> ctx_of(std::vector<std::byte>& in) {
    return prm::Ref<prm::create_cq_in>(in.data()).at(prm::create_cq_in::cq_context);
  }
  void expect_fail(const std::vector<std::byte>& in, CmdStatus s, uint32_t synd) {
    Reply r = exec(in, 16);
    EXPECT_EQ(r.status(), st(s));
    EXPECT_EQ(r.syndrome(), synd);
  }
  Reply query(uint32_t cqn, uint32_t npas = 2) {
    auto in = cmd<prm::query_cq_in>(Opcode::QUERY_CQ);
    prm::Ref<prm::query_cq_in>(in.data()).set(prm::query_cq_in::cqn, cqn);
    return exec(in, prm::query_cq_out::kBits / 8 + 8 * npas);
  }
  std::vector<std::byte> modify_cmd(uint32_t cqn, uint16_t op_mod, uint32_t select,
                                    uint32_t npas = 0) {
    auto in = cmd<prm::modify_cq_in>(Opcode::MODIFY_CQ, op_mod, 8 * npas);
    prm::Ref<prm::modify_cq_in> m(in.data());
    m.set(prm::modify_cq_in::cqn, cqn);
    m.set(prm::modify_cq_in::modify_field_select, select);
    return in;
  }
};

TEST_F(CqTest, CreateAndQueryReturnTheContext) {
  auto in = cq_cmd(7);  // 128 CQEs = 8 KiB = 2 pages
  auto x = ctx_of(in);
  x.set(prm::cqc::cq_period, 16);
  x.set(prm::cqc::cq_max_count, 32);
  x.set(prm::cqc::oi, 1);
  const uint64_t dbr = x.get(prm::cqc::dbr_addr);
  const uint64_t pas1 = prm::CRef<prm::create_cq_in>(in.data()).get(prm::create_cq_in::pas, 1);
  Reply r = exec(in, 16);
  ASSERT_EQ(r.status(), 0);
  const uint32_t cqn = field(r, prm::create_cq_out::cqn);

  Reply q = query(cqn);
  ASSERT_EQ(q.status(), 0);
  prm::CRef<prm::query_cq_out> o(q.out.data());
  auto c = o.at(prm::query_cq_out::cq_context);
  EXPECT_EQ(c.get(prm::cqc::log_cq_size), 7u);
  EXPECT_EQ(c.get(prm::cqc::uar_page), uar_);
  EXPECT_EQ(c.get(prm::cqc::c_eqn), eqn_);
  EXPECT_EQ(c.get(prm::cqc::dbr_addr), dbr);
  EXPECT_EQ(c.get(prm::cqc::cq_period), 16u);
  EXPECT_EQ(c.get(prm::cqc::cq_max_count), 32u);
  EXPECT_EQ(c.get(prm::cqc::oi), 1u);
  EXPECT_EQ(c.get(prm::cqc::status), prm::cqc_status::kOk);
  EXPECT_EQ(c.get(prm::cqc::producer_counter), 0u);
  EXPECT_EQ(o.get(prm::query_cq_out::pas, 1), pas1);
  const Cq* t = tables().cq(cqn);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->buf.pas.size(), 2u);
  EXPECT_EQ(t->dbr_addr, dbr);
}

TEST_F(CqTest, BadFieldsAreRefused) {
  {
    auto in = cq_cmd(4);
    ctx_of(in).set(prm::cqc::log_cq_size, 23);  // cap log_max_cq_sz is 22
    expect_fail(in, CmdStatus::LIM_ERR, synd::kCqLogSize);
  }
  {
    auto in = cq_cmd(4);
    ctx_of(in).set(prm::cqc::cqe_sz, prm::cqc_cqe_sz::k128Bytes);
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, synd::kCqCqeSize);
  }
  {
    auto in = cq_cmd(4);
    ctx_of(in).set(prm::cqc::cqe_comp_en, 1);
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, synd::kCqUnsupported);
  }
  {
    auto in = cq_cmd(4);
    ctx_of(in).set(prm::cqc::cq_period_mode, 2);
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, synd::kCqPeriodMode);
  }
  {
    auto in = cq_cmd(4);
    ctx_of(in).set(prm::cqc::uar_page, uar_ + 1);  // not allocated
    expect_fail(in, CmdStatus::BAD_RES_ERR, synd::kCqUarUnknown);
  }
  {
    auto in = cq_cmd(4);
    ctx_of(in).set(prm::cqc::c_eqn, eqn_ + 1);
    expect_fail(in, CmdStatus::BAD_RES_ERR, synd::kCqEqnUnknown);
  }
  {
    auto in = cq_cmd(4);
    ctx_of(in).set(prm::cqc::log_page_size, 19);
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, synd::kCqLogPageSize);
  }
  {
    auto in = cq_cmd(4);
    ctx_of(in).set(prm::cqc::dbr_addr, 0x10000004);
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, synd::kCqDbrMisaligned);
  }
  {
    auto in = cq_cmd(7);  // needs 2 pages
    in.resize(in.size() - 8);
    expect_fail(in, CmdStatus::BAD_INP_LEN_ERR, synd::kCqPasTooShort);
  }
  {
    auto in = cq_cmd(4);
    // page_offset 32/64 of a page: 1 KiB of CQEs from byte 2048 still fits one page.
    ctx_of(in).set(prm::cqc::page_offset, 32);
    EXPECT_EQ(exec(in, 16).status(), 0);
    auto in2 = cq_cmd(6);  // 4 KiB from byte 2048 needs a second page
    ctx_of(in2).set(prm::cqc::page_offset, 32);
    expect_fail(in2, CmdStatus::BAD_INP_LEN_ERR, synd::kCqPasTooShort);
  }
  {
    auto in = cq_cmd(4);
    prm::Ref<prm::create_cq_in>(in.data()).set(prm::create_cq_in::pas, 0, 0x10000100);
    expect_fail(in, CmdStatus::BAD_PARAM_ERR, synd::kCqPasMisaligned);
  }
}

TEST_F(CqTest, DestroyTwiceAndInUse) {
  QpSpec s = spec();
  const uint32_t qpn = create_qp(s);
  Reply busy = destroy_cq(s.scq);
  EXPECT_EQ(busy.status(), st(CmdStatus::RES_BUSY));
  EXPECT_EQ(busy.syndrome(), synd::kDestroyCqInUse);
  ASSERT_EQ(destroy_qp(qpn).status(), 0);
  ASSERT_EQ(destroy_cq(s.scq).status(), 0);
  Reply again = destroy_cq(s.scq);
  EXPECT_EQ(again.status(), st(CmdStatus::BAD_RES_ERR));
  EXPECT_EQ(again.syndrome(), synd::kDestroyCqUnknown);
  EXPECT_EQ(query(s.scq).syndrome(), synd::kQueryCqUnknown);
}

TEST_F(CqTest, CqOfAnSrqIsBusy) {
  const uint32_t pd = alloc_pd();
  const uint32_t cqn = create_cq();
  create_srq(pd, 4, cqn);
  EXPECT_EQ(destroy_cq(cqn).status(), st(CmdStatus::RES_BUSY));
}

TEST_F(CqTest, ModifyModeration) {
  const uint32_t cqn = create_cq();
  namespace fs = prm::modify_cq_field_select;
  auto in = modify_cmd(cqn, prm::modify_cq_op_mod::kModifyCq, fs::kCqPeriod | fs::kCqMaxCount);
  auto x = prm::Ref<prm::modify_cq_in>(in.data()).at(prm::modify_cq_in::cq_context);
  x.set(prm::cqc::cq_period, 100);
  x.set(prm::cqc::cq_max_count, 64);
  x.set(prm::cqc::oi, 1);  // not selected: ignored
  ASSERT_EQ(exec(in, 16).status(), 0);
  Reply q = query(cqn);
  auto c = prm::CRef<prm::query_cq_out>(q.out.data()).at(prm::query_cq_out::cq_context);
  EXPECT_EQ(c.get(prm::cqc::cq_period), 100u);
  EXPECT_EQ(c.get(prm::cqc::cq_max_count), 64u);
  EXPECT_EQ(c.get(prm::cqc::oi), 0u);

  auto eq = modify_cmd(cqn, 0, fs::kCEqn);
  prm::Ref<prm::modify_cq_in>(eq.data())
      .at(prm::modify_cq_in::cq_context)
      .set(prm::cqc::c_eqn, eqn_ + 5);
  Reply r = exec(eq, 16);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_RES_ERR));
  EXPECT_EQ(r.syndrome(), synd::kModifyCqEqnUnknown);
  EXPECT_EQ(exec(modify_cmd(cqn, 0, 0x100), 16).syndrome(), synd::kModifyCqSelect);
  EXPECT_EQ(exec(modify_cmd(cqn + 9, 0, fs::kCqPeriod), 16).syndrome(), synd::kModifyCqUnknown);
  EXPECT_EQ(exec(modify_cmd(cqn, 2, fs::kCqPeriod), 16).syndrome(), synd::kBadOpMod);
}

TEST_F(CqTest, ResizeChecksSizeAndOutstandingCqes) {
  const uint32_t cqn = create_cq(4);
  namespace rs = prm::resize_cq_field_select;
  auto grow = [&](uint32_t log_size, uint32_t npas, uint32_t select) {
    auto in = modify_cmd(cqn, prm::modify_cq_op_mod::kResizeCq, select, npas);
    prm::Ref<prm::modify_cq_in> m(in.data());
    m.at(prm::modify_cq_in::cq_context).set(prm::cqc::log_cq_size, log_size);
    const uint64_t buf = host_->dma().alloc(4096 * (npas ? npas : 1));
    for (uint32_t i = 0; i < npas; ++i) m.set(prm::modify_cq_in::pas, i, buf + 4096 * i);
    return exec(in, 16);
  };
  ASSERT_EQ(grow(8, 4, rs::kLogCqSize).status(), 0);  // 256 CQEs = 16 KiB
  EXPECT_EQ(tables().cq(cqn)->log_cq_size, 8u);
  EXPECT_EQ(tables().cq(cqn)->buf.pas.size(), 4u);
  EXPECT_EQ(grow(8, 2, rs::kLogCqSize).syndrome(), synd::kResizeCqPasTooShort);
  EXPECT_EQ(grow(23, 1, rs::kLogCqSize).status(), st(CmdStatus::LIM_ERR));
  EXPECT_EQ(grow(4, 1, 0).syndrome(), synd::kResizeCqNoSize);
  // The engine wrote 40 CQEs the driver has not consumed: 32 entries are too few.
  tables().cq(cqn)->producer_counter = 40;
  Reply r = grow(5, 1, rs::kLogCqSize);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_SIZE_OUTS_CQES_ERR));
  EXPECT_EQ(r.syndrome(), synd::kResizeCqOutstanding);
  EXPECT_EQ(grow(6, 1, rs::kLogCqSize).status(), 0);
  Reply q = query(cqn);
  EXPECT_EQ(prm::CRef<prm::query_cq_out>(q.out.data())
                .at(prm::query_cq_out::cq_context)
                .get(prm::cqc::log_cq_size),
            6u);
}

TEST_F(CqTest, ExhaustionIsNoResources) {
  prm::Ref<prm::cmd_hca_cap>(fw_->context().caps().cur(0).data())
      .set(prm::cmd_hca_cap::log_max_cq, 1);
  create_cq();
  create_cq();
  expect_fail(cq_cmd(4), CmdStatus::NO_RES_ERR, synd::kCqExhausted);
}

}  // namespace
}  // namespace kbv::sim::fw::objtest
