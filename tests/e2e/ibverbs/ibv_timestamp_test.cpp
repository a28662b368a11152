// SPDX-License-Identifier: BSD-3-Clause
//
// Completion timestamps through kbv's libibverbs (issue 22 clause 1), as a
// program written for rdma-core's mlx5 uses them (rc_pingpong -t does the
// same): ibv_query_device_ex's completion_timestamp_mask / hca_core_clock,
// ibv_create_cq_ex with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP and
// ibv_wc_read_completion_ts, ibv_query_rt_values_ex's raw clock.
#include <errno.h>
#include <infiniband/verbs.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "ibv_fixture.hpp"

namespace kbv::ibvtest {
namespace {

uint64_t raw_clock(ibv_context* ctx) {
  ibv_values_ex v{};
  v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
  EXPECT_EQ(ibv_query_rt_values_ex(ctx, &v), 0);
  EXPECT_EQ(v.comp_mask, static_cast<uint32_t>(IBV_VALUES_MASK_RAW_CLOCK));
  EXPECT_EQ(v.raw_clock.tv_sec, 0);  // rdma-core's mlx5: the ticks in tv_nsec
  return static_cast<uint64_t>(v.raw_clock.tv_nsec);
}

TEST_F(IbvTest, RawClockQuery) {
  ibv_device_attr_ex x{};
  ASSERT_EQ(ibv_query_device_ex(ctx_, nullptr, &x), 0);
  EXPECT_NE(x.completion_timestamp_mask, 0u);
  EXPECT_NE(x.hca_core_clock, 0u);
  const uint64_t t0 = raw_clock(ctx_);
  // The clock moves (its register is refreshed every 50 ms on the model).
  uint64_t t1 = t0;
  const auto bound = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (t1 == t0 && std::chrono::steady_clock::now() < bound) t1 = raw_clock(ctx_);
  EXPECT_GT(t1, t0);
  ibv_values_ex v{};
  v.comp_mask = 1u << 5;  // not IBV_VALUES_MASK_RAW_CLOCK
  EXPECT_EQ(ibv_query_rt_values_ex(ctx_, &v), EINVAL);
}

// An RC pair whose four queues complete on one ibv_cq_ex with completion
// timestamps: every completion's timestamp is at least the raw clock read
// before posting, they never decrease in CQ order, and the raw clock then
// reaches the last one.
TEST_F(IbvTest, CompletionTimestampsThroughCqEx) {
  ibv_cq_init_attr_ex ca{};
  ca.cqe = 64;
  ca.wc_flags = uint64_t{IBV_WC_STANDARD_FLAGS} | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
  ibv_cq_ex* cx = ibv_create_cq_ex(ctx_, &ca);
  ASSERT_NE(cx, nullptr) << std::strerror(errno);
  ibv_cq* cq = ibv_cq_ex_to_cq(cx);
  cqs_.push_back(cq);  // destroyed by TearDown after the QPs
  std::vector<uint8_t> buf(8192);
  ibv_mr* mr = make_mr(buf);
  ibv_qp* a = make_qp(IBV_QPT_RC, cq, cq);
  ibv_qp* b = make_qp(IBV_QPT_RC, cq, cq);
  ASSERT_TRUE(mr && a && b);
  ASSERT_EQ(to_init(a), 0);
  ASSERT_EQ(to_init(b), 0);
  ASSERT_EQ(connect(a, b->qp_num), 0);
  ASSERT_EQ(connect(b, a->qp_num), 0);

  constexpr int kN = 8;
  const uint64_t before = raw_clock(ctx_);
  for (int i = 0; i < kN; ++i) {
    ibv_sge sg{reinterpret_cast<uintptr_t>(buf.data()) + 256 * i, 256, mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = static_cast<uint64_t>(100 + i);
    wr.sg_list = &sg;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_recv(b, &wr, &bad), 0);
  }
  for (int i = 0; i < kN; ++i) {
    ibv_sge sg{reinterpret_cast<uintptr_t>(buf.data()) + 4096 + 32 * i, 32, mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = static_cast<uint64_t>(i);
    wr.sg_list = &sg;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(a, &wr, &bad), 0);
  }
  std::vector<uint64_t> stamps;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  ibv_poll_cq_attr pa{};
  while (stamps.size() < 2 * kN && std::chrono::steady_clock::now() < give_up) {
    int e = ibv_start_poll(cx, &pa);
    if (e == ENOENT) continue;
    ASSERT_EQ(e, 0);
    while (e == 0) {
      EXPECT_EQ(cx->status, IBV_WC_SUCCESS);
      const ibv_wc_opcode op = ibv_wc_read_opcode(cx);
      EXPECT_TRUE(op == IBV_WC_SEND || op == IBV_WC_RECV) << op;
      stamps.push_back(ibv_wc_read_completion_ts(cx));
      e = ibv_next_poll(cx);
    }
    EXPECT_EQ(e, ENOENT);
    ibv_end_poll(cx);
  }
  ASSERT_EQ(stamps.size(), 2u * kN);
  EXPECT_GE(stamps.front(), before);
  EXPECT_GT(stamps.back(), before);  // stamped by the device, not zero
  for (size_t i = 1; i < stamps.size(); ++i) EXPECT_GE(stamps[i], stamps[i - 1]) << i;
  uint64_t now = raw_clock(ctx_);
  const auto bound = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (now < stamps.back() && std::chrono::steady_clock::now() < bound) now = raw_clock(ctx_);
  EXPECT_GE(now, stamps.back());
}

}  // namespace
}  // namespace kbv::ibvtest
