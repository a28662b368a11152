// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf command line: roles, defaults, sweeps and refused combinations.
#include "perf/options.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace kbv::perf {
namespace {

ParseResult parse(std::vector<const char*> args) {
  args.insert(args.begin(), "kbv-perf");
  return parse_options(static_cast<int>(args.size()), args.data());
}

TEST(PerfOptions, ClientDefaultsArePerftests) {
  auto r = parse({"10.0.0.1"});
  ASSERT_TRUE(r.opts) << r.message;
  const Options& o = *r.opts;
  EXPECT_EQ(o.role, Role::kClient);
  EXPECT_EQ(o.host, "10.0.0.1");
  EXPECT_EQ(o.port, 18515);
  const TestParams& p = o.params;
  EXPECT_EQ(p.test, perf::Test::kWrite);
  EXPECT_EQ(p.connection, Connection::kRc);
  EXPECT_TRUE(p.lat && p.bw);
  EXPECT_EQ(p.lat_sizes, std::vector<uint64_t>{2});
  EXPECT_EQ(p.bw_sizes, std::vector<uint64_t>{65536});
  EXPECT_EQ(p.lat_iters, 1000u);
  EXPECT_EQ(p.bw_iters, 5000u);
  EXPECT_EQ(p.tx_depth, 128u);
  EXPECT_EQ(p.cq_mod, 100u);
  EXPECT_EQ(p.num_qps, 1u);
  EXPECT_EQ(p.rtt_factor(), 2u);
}

TEST(PerfOptions, EveryOptionIsTaken) {
  auto r =
      parse({"--loopback", "-T", "send",   "-c", "UD",   "--mode", "lat",   "-s",         "512",
             "-n",         "77", "-t",     "64", "-I",   "128",    "-Q",    "8",          "-q",
             "3",          "-N", "--json", "-p", "4000", "-d",     "sim:a", "--peer-dev", "sim:b"});
  ASSERT_TRUE(r.opts) << r.message;
  const Options& o = *r.opts;
  EXPECT_EQ(o.role, Role::kLoopback);
  EXPECT_EQ(o.port, 4000);
  EXPECT_EQ(o.device, "sim:a");
  EXPECT_EQ(o.peer_device, "sim:b");
  EXPECT_TRUE(o.json);
  EXPECT_FALSE(o.progress);  // --json turns the bar off
  const TestParams& p = o.params;
  EXPECT_EQ(p.test, perf::Test::kSend);
  EXPECT_EQ(p.connection, Connection::kUd);
  EXPECT_TRUE(p.lat);
  EXPECT_FALSE(p.bw);
  EXPECT_EQ(p.lat_sizes, std::vector<uint64_t>{512});
  EXPECT_TRUE(p.bw_sizes.empty());
  EXPECT_EQ(p.lat_iters, 77u);
  EXPECT_EQ(p.tx_depth, 64u);
  EXPECT_EQ(p.inline_size, 128u);
  EXPECT_EQ(p.cq_mod, 8u);
  EXPECT_EQ(p.num_qps, 3u);
  EXPECT_TRUE(p.no_peak);
}

TEST(PerfOptions, SweepUpToMaxSize) {
  auto r = parse({"--loopback", "-a", "--max-size", "1024", "--mode", "bw"});
  ASSERT_TRUE(r.opts) << r.message;
  EXPECT_EQ(r.opts->params.bw_sizes,
            (std::vector<uint64_t>{2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}));
  auto full = parse({"--loopback", "-a"});
  ASSERT_TRUE(full.opts);
  EXPECT_EQ(full.opts->params.lat_sizes.back(), 1u << 23);
}

TEST(PerfOptions, AtomicsAreEightBytesAndOneWay) {
  auto r = parse({"--loopback", "-T", "atomic", "-A", "CMP_AND_SWAP", "--mode", "lat"});
  ASSERT_TRUE(r.opts) << r.message;
  EXPECT_EQ(r.opts->params.atomic, AtomicType::kCompareAndSwap);
  EXPECT_EQ(r.opts->params.lat_sizes, std::vector<uint64_t>{8});
  EXPECT_EQ(r.opts->params.rtt_factor(), 1u);
  EXPECT_FALSE(parse({"--loopback", "-T", "atomic", "-s", "16"}).opts);
  EXPECT_FALSE(parse({"--loopback", "-T", "atomic", "-a"}).opts);
}

TEST(PerfOptions, RefusedCombinations) {
  struct Case {
    std::vector<const char*> args;
  };
  const std::vector<Case> bad{
      {{}},                                        // no role
      {{"--server", "host"}},                      // server with a host
      {{"--server", "--loopback"}},                // two roles
      {{"--loopback", "-c", "UD"}},                // UD write
      {{"--loopback", "-T", "read", "-c", "UD"}},  // UD read
      {{"--loopback", "-n", "4"}},                 // below MIN_ITER
      {{"--loopback", "-s", "0"}},                 // empty message
      {{"--loopback", "-s", "8", "-a"}},           // size and sweep
      {{"--loopback", "-a", "--max-size", "1"}},   // empty sweep
      {{"--loopback", "-Q", "0"}},                 // no moderation
      {{"--loopback", "-q", "0"}},                 // no QPs
      {{"--loopback", "-T", "read", "-I", "64"}},  // inline read
      {{"--loopback", "-T", "bogus"}},             // unknown test
      {{"--loopback", "--mode", "both2"}},         // unknown mode
      {{"--loopback", "--nope"}},                  // unknown option
  };
  for (const auto& c : bad) {
    auto r = parse(c.args);
    EXPECT_FALSE(r.opts) << (c.args.empty() ? "(none)" : c.args.back());
    EXPECT_NE(r.exit_code, 0);
    EXPECT_FALSE(r.message.empty());
  }
}

TEST(PerfOptions, HelpExitsZeroWithText) {
  auto r = parse({"--help"});
  EXPECT_FALSE(r.opts);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.message.find("--loopback"), std::string::npos);
}

}  // namespace
}  // namespace kbv::perf
