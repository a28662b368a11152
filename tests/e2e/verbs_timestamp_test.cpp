// SPDX-License-Identifier: BSD-3-Clause
//
// Completion timestamps (issue 22 clause 1) on a model HCA: a CQ created
// with KBV_CQ_FLAG_COMPLETION_TIMESTAMP returns, through kbv_poll_cq_ts,
// the CQE's timestamp (mlx5_cqe64 timestamp) that the model writes from its
// free-running clock, the one kbv_device_read_clock reads.
#include <gtest/gtest.h>

#include <kbv/kbv.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "verbs_fixture.hpp"

namespace kbv::test {
namespace {

class VerbsTimestamp : public VerbsE2e {};

uint64_t read_clock(kbv_device_t dev) {
  uint64_t t = 0;
  EXPECT_EQ(kbv_device_read_clock(dev, &t, nullptr), KBV_SUCCESS);
  return t;
}

TEST(ClockTicks, ToNanoseconds) {
  EXPECT_EQ(kbv_clock_ticks_to_ns(1500, 1000000), 1500u);            // 1 GHz: ticks = ns
  EXPECT_EQ(kbv_clock_ticks_to_ns(3, 2000), 1500u);                  // 2 MHz: 500 ns a tick
  EXPECT_EQ(kbv_clock_ticks_to_ns(156250000, 156250), 1000000000u);  // 156.25 MHz, 1 s
  EXPECT_EQ(kbv_clock_ticks_to_ns(~uint64_t{0} / 2, 1000000), ~uint64_t{0} / 2);  // no overflow
  EXPECT_EQ(kbv_clock_ticks_to_ns(12345, 0), 0u);                                 // no clock
}

// Every completion of a timestamped CQ (requester and responder CQEs of
// two QPs, 2 x kN) carries a timestamp: not before the clock read before
// posting, never decreasing in CQ order (the model writes one CQ's CQEs in
// order), and reached by the device clock afterwards.
TEST_F(VerbsTimestamp, CompletionsCarryTheDeviceClock) {
  SimDev& d = open_dev();
  kbv_device_attr_t attr{};
  ASSERT_EQ(kbv_device_query(d.dev, &attr, KBV_EQ_NONE, 0), KBV_SUCCESS);
  ASSERT_NE(attr.cap_flags & KBV_DEVICE_CAP_COMPLETION_TIMESTAMP, 0u);
  uint32_t khz = 0;
  ASSERT_EQ(kbv_device_read_clock(d.dev, nullptr, &khz), KBV_SUCCESS);
  EXPECT_EQ(attr.core_clock_khz, khz);
  EXPECT_EQ(khz, 1000000u);  // the model's clock: 1 GHz

  kbv_pd_t pd = alloc_pd(d);
  std::vector<uint8_t> buf(8192, 0x5A);
  kbv_mr_t mr = 0;
  ASSERT_EQ(kbv_mr_reg(pd, buf.data(), buf.size(), KBV_ACCESS_LOCAL_WRITE, KBV_EQ_NONE, 0, &mr),
            KBV_SUCCESS);
  uint32_t lkey = 0, rkey = 0;
  ASSERT_EQ(kbv_mr_get_keys(mr, &lkey, &rkey), KBV_SUCCESS);

  kbv_cq_attr_t ca{};
  ca.cqe = 64;
  ca.flags = 0x80;  // not a KBV_CQ_FLAG_*
  kbv_cq_t bad = 0;
  EXPECT_EQ(kbv_cq_create(d.dev, &ca, KBV_EQ_NONE, 0, &bad), KBV_ERR_INVALID_ARGUMENT);
  ca.flags = KBV_CQ_FLAG_COMPLETION_TIMESTAMP;
  kbv_cq_t cq = 0;
  ASSERT_EQ(kbv_cq_create(d.dev, &ca, KBV_EQ_NONE, 0, &cq), KBV_SUCCESS);
  kbv_cq_t plain = make_cq(d);

  kbv_qp_t a = make_qp(pd, KBV_QPT_RC, cq, cq);
  kbv_qp_t b = make_qp(pd, KBV_QPT_RC, cq, cq);
  uint32_t qa = 0, qb = 0;
  ASSERT_EQ(kbv_qp_get_num(a, &qa), KBV_SUCCESS);
  ASSERT_EQ(kbv_qp_get_num(b, &qb), KBV_SUCCESS);
  ASSERT_EQ(connect(a, KBV_QPT_RC, d, qb), KBV_SUCCESS);
  ASSERT_EQ(connect(b, KBV_QPT_RC, d, qa, 200, 100), KBV_SUCCESS);

  // Wrong uses: a CQ without timestamps, no timestamp array.
  kbv_wc_t wc[8];
  uint64_t ts[8];
  EXPECT_EQ(kbv_poll_cq_ts(plain, wc, ts, 8), KBV_ERR_INVALID_STATE);
  EXPECT_EQ(kbv_poll_cq_ts(cq, wc, nullptr, 8), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_poll_cq(cq, wc, 8), 0);  // the plain poll works on it too

  constexpr int kN = 16;
  const uint64_t before = read_clock(d.dev);
  for (int i = 0; i < kN; ++i) {
    kbv_sge_t s{reinterpret_cast<uintptr_t>(buf.data()) + 256 * i, 256, lkey};
    kbv_recv_wr_t r{};
    r.wr_id = 1000 + i;
    r.sg_list = &s;
    r.num_sge = 1;
    ASSERT_EQ(kbv_post_recv(b, &r, 1, nullptr), KBV_SUCCESS);
  }
  for (int i = 0; i < kN; ++i) {
    kbv_sge_t s{reinterpret_cast<uintptr_t>(buf.data()) + 4096 + 64 * i, 64, lkey};
    kbv_send_wr_t w{};
    w.wr_id = i;
    w.opcode = KBV_WR_SEND;
    w.flags = KBV_SEND_SIGNALED;
    w.sg_list = &s;
    w.num_sge = 1;
    ASSERT_EQ(kbv_post_send(a, &w, 1, nullptr), KBV_SUCCESS);
  }
  std::vector<uint64_t> stamps;
  int sends = 0, recvs = 0;
  const auto give_up = std::chrono::steady_clock::now() + 30s;  // a lost completion fails
  while (stamps.size() < 2 * kN && std::chrono::steady_clock::now() < give_up) {
    const int n = kbv_poll_cq_ts(cq, wc, ts, 8);
    ASSERT_GE(n, 0) << kbv_status_name(static_cast<kbv_status_t>(n));
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(wc[i].status, KBV_SUCCESS);
      if (wc[i].opcode == KBV_WC_SEND) ++sends;
      if (wc[i].opcode == KBV_WC_RECV) ++recvs;
      stamps.push_back(ts[i]);
    }
  }
  ASSERT_EQ(stamps.size(), 2u * kN);
  EXPECT_EQ(sends, kN);
  EXPECT_EQ(recvs, kN);
  EXPECT_GE(stamps.front(), before);
  EXPECT_GT(stamps.back(), before);  // the device's time moved on: stamped, not zero
  for (size_t i = 1; i < stamps.size(); ++i) EXPECT_GE(stamps[i], stamps[i - 1]) << i;
  // The clock register is refreshed by the model's housekeeping (50 ms):
  // it reaches the last completion's time soon after, and the whole run
  // took a plausible time on that clock (less than the 30 s bound above).
  const uint64_t last = stamps.back();
  uint64_t now = read_clock(d.dev);
  const auto clock_bound = std::chrono::steady_clock::now() + 10s;
  while (now < last && std::chrono::steady_clock::now() < clock_bound) now = read_clock(d.dev);
  EXPECT_GE(now, last);
  EXPECT_LT(kbv_clock_ticks_to_ns(last - before, khz), 30ull * 1000 * 1000 * 1000);

  EXPECT_EQ(kbv_qp_destroy(a, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_qp_destroy(b, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_cq_destroy(cq, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_cq_destroy(plain, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_mr_dereg(mr, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(pd, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

}  // namespace
}  // namespace kbv::test
