// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf statistics against hand-computed perftest figures; data patterns.
#include "perf/stats.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "perf/pattern.hpp"

namespace kbv::perf {
namespace {

// Post stamps whose deltas are the given values (ns).
std::vector<uint64_t> stamps_from_deltas(const std::vector<uint64_t>& deltas) {
  std::vector<uint64_t> s{1000};
  for (uint64_t d : deltas) s.push_back(s.back() + d);
  return s;
}

TEST(PerfLatency, PerftestFiguresOnKnownDeltas) {
  // Deltas 1..10 us, shuffled; the two largest (9, 10) are the measure tail.
  auto st = stamps_from_deltas({5000, 1000, 10000, 3000, 7000, 2000, 9000, 4000, 6000, 8000});
  auto s = latency_stats(st, 1);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->iterations, 11u);
  // Kept samples 1..8: n = 8.
  EXPECT_DOUBLE_EQ(s->t_min_us, 1.0);
  EXPECT_DOUBLE_EQ(s->t_max_us, 9.0);      // delta[n]
  EXPECT_DOUBLE_EQ(s->t_typical_us, 4.5);  // even n: mean of delta[3], delta[4]
  EXPECT_DOUBLE_EQ(s->t_avg_us, 4.5);
  EXPECT_NEAR(s->t_stdev_us, 2.2913, 1e-4);  // population stdev of 1..8
  EXPECT_DOUBLE_EQ(s->p99_us, 9.0);          // delta[ceil(7.92)] = delta[8]
  EXPECT_DOUBLE_EQ(s->p999_us, 9.0);
}

TEST(PerfLatency, RoundTripFactorHalvesPingPong) {
  auto st = stamps_from_deltas({4000, 4000, 4000, 4000, 8000, 8000});
  auto one = latency_stats(st, 1);
  auto two = latency_stats(st, 2);
  ASSERT_TRUE(one && two);
  EXPECT_DOUBLE_EQ(one->t_typical_us, 4.0);
  EXPECT_DOUBLE_EQ(two->t_typical_us, 2.0);
  EXPECT_DOUBLE_EQ(two->t_avg_us, 2.0);
  EXPECT_DOUBLE_EQ(two->t_stdev_us, 0.0);
}

TEST(PerfLatency, OddCountMedianAndPercentilesOnLargeSample) {
  std::vector<uint64_t> d;
  for (uint64_t i = 1; i <= 1003; ++i) d.push_back(i * 1000);  // n = 1001 after the tail
  auto s = latency_stats(stamps_from_deltas(d), 1);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->t_typical_us, 501.0);  // delta[500]
  EXPECT_DOUBLE_EQ(s->p99_us, 992.0);        // delta[ceil(990.99)] = delta[991]
  EXPECT_DOUBLE_EQ(s->p999_us, 1001.0);      // delta[ceil(999.999)] = delta[1000]
  EXPECT_DOUBLE_EQ(s->t_max_us, 1002.0);     // delta[1001]
}

TEST(PerfLatency, RejectsTooFewOrBackwardStamps) {
  EXPECT_FALSE(latency_stats(std::vector<uint64_t>{1, 2, 3, 4}, 1));
  EXPECT_FALSE(latency_stats(std::vector<uint64_t>{1, 2, 3, 4, 5}, 0));
  EXPECT_FALSE(latency_stats(std::vector<uint64_t>{1, 2, 3, 2, 5}, 1));
  EXPECT_TRUE(latency_stats(std::vector<uint64_t>{1, 2, 3, 4, 5}, 1));
}

TEST(PerfBandwidth, AverageRateAndPeak) {
  // 4 messages of 1 MiB; posted at 0, completed at 1,2,3,4 ms; the first
  // message alone (1 ms) is the fastest window.
  std::vector<uint64_t> posted{0, 0, 0, 0};
  std::vector<uint64_t> done{1000000, 2000000, 3000000, 4000000};
  auto s = bandwidth_stats(posted, done, 1 << 20, false);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->messages, 4u);
  EXPECT_NEAR(s->bw_avg_mbs, 1000.0, 1e-9);  // 4 MiB in 4 ms
  EXPECT_NEAR(s->msg_rate_mpps, 0.001, 1e-12);
  EXPECT_TRUE(s->peak_computed);
  EXPECT_NEAR(s->bw_peak_mbs, 1000.0, 1e-9);
}

TEST(PerfBandwidth, PeakFindsTheFastestWindow) {
  // Messages 1..2 complete 0.5 ms apart after being posted late: window
  // (i=2, j=3) gives 2 messages in 0.5 ms.
  std::vector<uint64_t> posted{0, 0, 3000000, 3000000};
  std::vector<uint64_t> done{2000000, 3000000, 3250000, 3500000};
  auto s = bandwidth_stats(posted, done, 1 << 20, false);
  ASSERT_TRUE(s);
  EXPECT_NEAR(s->bw_avg_mbs, 4.0 / 0.0035, 1e-6);
  EXPECT_NEAR(s->bw_peak_mbs, 1.0 / 0.00025, 1e-6);
  auto np = bandwidth_stats(posted, done, 1 << 20, true);
  ASSERT_TRUE(np);
  EXPECT_FALSE(np->peak_computed);
  EXPECT_DOUBLE_EQ(np->bw_peak_mbs, np->bw_avg_mbs);
}

TEST(PerfBandwidth, RejectsBadInput) {
  std::vector<uint64_t> a{0, 1}, b{5};
  EXPECT_FALSE(bandwidth_stats(a, b, 8, false));
  EXPECT_FALSE(bandwidth_stats(std::vector<uint64_t>{}, std::vector<uint64_t>{}, 8, false));
  EXPECT_FALSE(bandwidth_stats(std::vector<uint64_t>{10}, std::vector<uint64_t>{5}, 8, false));
  EXPECT_FALSE(bandwidth_stats(std::vector<uint64_t>{10}, std::vector<uint64_t>{10}, 8, false));
}

TEST(PerfSweep, PowersOfTwoUpToMax) {
  EXPECT_EQ(sweep_sizes(1), std::vector<uint64_t>{});
  EXPECT_EQ(sweep_sizes(2), std::vector<uint64_t>{2});
  EXPECT_EQ(sweep_sizes(100), (std::vector<uint64_t>{2, 4, 8, 16, 32, 64}));
  EXPECT_EQ(sweep_sizes(1u << 23).size(), 23u);
  EXPECT_EQ(sweep_sizes(1u << 23).back(), 1u << 23);
}

}  // namespace
}  // namespace kbv::perf

namespace kbv::perf {
namespace {

TEST(PerfPattern, FillCheckAndTags) {
  std::vector<uint8_t> buf(1000);
  fill_pattern(buf, pattern_seed(0, 0));
  EXPECT_FALSE(check_pattern(buf, pattern_seed(0, 0)));
  // Another side's or QP's pattern differs.
  EXPECT_TRUE(check_pattern(buf, pattern_seed(1, 0)));
  EXPECT_TRUE(check_pattern(buf, pattern_seed(0, 1)));
  buf[517] ^= 1;
  EXPECT_EQ(check_pattern(buf, pattern_seed(0, 0)), 517u);
  buf[517] ^= 1;
  buf.back() = iteration_tag(41);
  EXPECT_FALSE(check_pattern(buf, pattern_seed(0, 0), iteration_tag(41)));
  EXPECT_EQ(check_pattern(buf, pattern_seed(0, 0), iteration_tag(42)), 999u);
  for (uint64_t i = 0; i < 1000; ++i) EXPECT_NE(iteration_tag(i), 0);
  EXPECT_NE(iteration_tag(0), iteration_tag(1));
}

}  // namespace
}  // namespace kbv::perf
