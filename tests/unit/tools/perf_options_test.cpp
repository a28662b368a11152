// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf command line: perftest's flags and meanings, the entry points
// (argv[0] or the first argument), range checks with clear messages, refused
// combinations.
#include "perf/options.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kbv::perf {
namespace {

// Runs the parser as program prog (an entry point name or "kbv-perf").
ParseResult parse_as(const char* prog, std::vector<const char*> args) {
  args.insert(args.begin(), prog);
  return parse_options(static_cast<int>(args.size()), args.data());
}

ParseResult parse(std::vector<const char*> args) { return parse_as("kbv_write_lat", args); }

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(PerfOptions, ClientDefaultsArePerftests) {
  auto r = parse({"10.0.0.1"});
  ASSERT_TRUE(r.opts) << r.message;
  const Options& o = *r.opts;
  EXPECT_EQ(o.role, Role::kClient);
  EXPECT_EQ(o.host, "10.0.0.1");
  EXPECT_EQ(o.port, 18515);
  EXPECT_EQ(o.ib_port, 1u);
  EXPECT_EQ(o.gid_index, -1);
  const TestParams& p = o.params;
  EXPECT_EQ(p.test, perf::Test::kWrite);
  EXPECT_EQ(p.connection, Connection::kRc);
  EXPECT_TRUE(p.lat);
  EXPECT_FALSE(p.bw);
  EXPECT_EQ(p.lat_sizes, std::vector<uint64_t>{2});
  EXPECT_EQ(p.lat_iters, 1000u);
  EXPECT_EQ(p.mtu, 0u);
  EXPECT_EQ(p.tos, kTosOff);
  EXPECT_EQ(p.rtt_factor(), 2u);
  auto bw = parse_as("kbv_write_bw", {"10.0.0.1"});
  ASSERT_TRUE(bw.opts) << bw.message;
  EXPECT_FALSE(bw.opts->params.lat);
  EXPECT_EQ(bw.opts->params.bw_sizes, std::vector<uint64_t>{65536});
  EXPECT_EQ(bw.opts->params.bw_iters, 5000u);
  EXPECT_EQ(bw.opts->params.tx_depth, 128u);
  EXPECT_EQ(bw.opts->params.cq_mod, 100u);
}

TEST(PerfOptions, NoHostIsTheServerAsPerftest) {
  auto r = parse({"-p", "0"});
  ASSERT_TRUE(r.opts) << r.message;
  EXPECT_EQ(r.opts->role, Role::kServer);
  EXPECT_EQ(r.opts->port, 0);
  auto s = parse({"--server", "--bind", "127.0.0.2"});
  ASSERT_TRUE(s.opts) << s.message;
  EXPECT_EQ(s.opts->role, Role::kServer);
}

TEST(PerfOptions, EveryEntryPointByNameAndByArgument) {
  const std::vector<std::string> names = entry_names();
  ASSERT_EQ(names.size(), 8u);
  for (const std::string& n : names) {
    auto e = entry_from_name("/usr/bin/" + n);
    ASSERT_TRUE(e) << n;
    EXPECT_EQ(e->name(), n);
    auto by_name = parse_as(("/some/dir/" + n).c_str(), {"--loopback"});
    ASSERT_TRUE(by_name.opts) << n << ": " << by_name.message;
    auto by_arg = parse_as("kbv-perf", {n.c_str() + 4, "--loopback"});  // "write_lat"
    ASSERT_TRUE(by_arg.opts) << n << ": " << by_arg.message;
    EXPECT_EQ(by_arg.opts->entry.name(), n);
    EXPECT_EQ(by_name.opts->params.test, by_arg.opts->params.test);
    EXPECT_EQ(by_name.opts->params.lat, n.ends_with("_lat"));
  }
  EXPECT_EQ(parse_as("kbv_read_bw", {"--loopback"}).opts->params.test, perf::Test::kRead);
  EXPECT_EQ(parse_as("kbv_atomic_lat", {"--loopback"}).opts->params.test, perf::Test::kAtomic);
  EXPECT_FALSE(entry_from_name("kbv_write"));
  EXPECT_FALSE(entry_from_name("ib_write_lat"));
  auto none = parse_as("kbv-perf", {"--loopback"});
  EXPECT_FALSE(none.opts);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_TRUE(has(none.message, "kbv_write_lat")) << none.message;
}

TEST(PerfOptions, EveryPerftestFlagIsTaken) {
  auto r = parse_as("kbv_send_bw", {"--loopback", "-c",
                                    "UD",         "-s",
                                    "512",        "-n",
                                    "77",         "-t",
                                    "64",         "-I",
                                    "128",        "-Q",
                                    "8",          "-q",
                                    "3",          "-N",
                                    "--json",     "-p",
                                    "4000",       "-d",
                                    "sim:a",      "--peer-dev",
                                    "sim:b",      "-i",
                                    "1",          "-x",
                                    "2",          "-m",
                                    "1024",       "-T",
                                    "96",         "-F",
                                    "-e",         "--report_gbits",
                                    "--out_json", "--use_old_post_send",
                                    "-H"});
  ASSERT_TRUE(r.opts) << r.message;
  const Options& o = *r.opts;
  EXPECT_EQ(o.role, Role::kLoopback);
  EXPECT_EQ(o.port, 4000);
  EXPECT_EQ(o.device, "sim:a");
  EXPECT_EQ(o.peer_device, "sim:b");
  EXPECT_EQ(o.ib_port, 1u);
  EXPECT_EQ(o.gid_index, 2);
  EXPECT_TRUE(o.events);
  EXPECT_TRUE(o.report_gbits);
  EXPECT_TRUE(o.histogram);
  EXPECT_EQ(o.json_file, "perftest_out.json");  // perftest's default name
  EXPECT_TRUE(o.json);
  EXPECT_FALSE(o.progress);  // --json turns the bar off
  const TestParams& p = o.params;
  EXPECT_EQ(p.test, perf::Test::kSend);
  EXPECT_EQ(p.connection, Connection::kUd);
  EXPECT_FALSE(p.lat);
  EXPECT_TRUE(p.bw);
  EXPECT_EQ(p.bw_sizes, std::vector<uint64_t>{512});
  EXPECT_EQ(p.bw_iters, 77u);
  EXPECT_EQ(p.tx_depth, 64u);
  EXPECT_EQ(p.inline_size, 128u);
  EXPECT_EQ(p.cq_mod, 8u);
  EXPECT_EQ(p.num_qps, 3u);
  EXPECT_TRUE(p.no_peak);
  EXPECT_EQ(p.mtu, 1024u);
  EXPECT_EQ(p.tos, 96u);
  // --out_json FILE.json names the file; another word after it is the host.
  auto named = parse({"--out_json", "out.json", "10.0.0.1"});
  ASSERT_TRUE(named.opts) << named.message;
  EXPECT_EQ(named.opts->json_file, "out.json");
  EXPECT_EQ(named.opts->host, "10.0.0.1");
  auto host = parse({"--out_json", "10.0.0.1"});
  ASSERT_TRUE(host.opts) << host.message;
  EXPECT_EQ(host.opts->json_file, "perftest_out.json");
  EXPECT_EQ(host.opts->host, "10.0.0.1");
  auto f = parse({"--loopback", "--out_json_file", "x.json", "-c", "UC"});
  ASSERT_TRUE(f.opts) << f.message;
  EXPECT_EQ(f.opts->json_file, "x.json");
  EXPECT_EQ(f.opts->params.connection, Connection::kUc);
}

TEST(PerfOptions, DurationRunsOneSizeForSeconds) {
  auto r = parse_as("kbv_send_bw", {"--loopback", "-D", "3", "-s", "64"});
  ASSERT_TRUE(r.opts) << r.message;
  EXPECT_EQ(r.opts->params.duration, 3u);
  EXPECT_FALSE(parse({"--loopback", "-D", "3", "-n", "100"}).opts);  // -D or -n
  EXPECT_FALSE(parse({"--loopback", "-D", "3", "-a"}).opts);         // one size
  TestParams p;
  p.duration = 1;
  p.lat_sizes = {2, 4};
  EXPECT_TRUE(validate(p).has_value());  // a peer's sweep with -D is refused too
}

TEST(PerfOptions, BidirectionalOnBandwidthTests) {
  auto r = parse_as("kbv_write_bw", {"--loopback", "-b"});
  ASSERT_TRUE(r.opts) << r.message;
  EXPECT_TRUE(r.opts->params.bidir);
  EXPECT_TRUE(parse_as("kbv_send_bw", {"--loopback", "-b"}).opts);  // RC SEND
  EXPECT_TRUE(has(parse({"--loopback", "-b"}).message, "only available in BW test"));
}

TEST(PerfOptions, SizesWithSuffixesAndSweeps) {
  auto k = parse({"--loopback", "-s", "4K"});
  ASSERT_TRUE(k.opts) << k.message;
  EXPECT_EQ(k.opts->params.lat_sizes, std::vector<uint64_t>{4096});
  auto m = parse({"--loopback", "-s", "0x10"});
  ASSERT_TRUE(m.opts) << m.message;
  EXPECT_EQ(m.opts->params.lat_sizes, std::vector<uint64_t>{16});
  auto r = parse_as("kbv_write_bw", {"--loopback", "-a", "--max-size", "1024"});
  ASSERT_TRUE(r.opts) << r.message;
  EXPECT_EQ(r.opts->params.bw_sizes,
            (std::vector<uint64_t>{2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}));
  auto full = parse({"--loopback", "-a"});
  ASSERT_TRUE(full.opts);
  EXPECT_EQ(full.opts->params.lat_sizes.back(), 1u << 23);
}

TEST(PerfOptions, AtomicsAreEightBytesAndOneWay) {
  auto r = parse_as("kbv_atomic_lat", {"--loopback", "-A", "CMP_AND_SWAP"});
  ASSERT_TRUE(r.opts) << r.message;
  EXPECT_EQ(r.opts->params.atomic, AtomicType::kCompareAndSwap);
  EXPECT_EQ(r.opts->params.lat_sizes, std::vector<uint64_t>{8});
  EXPECT_EQ(r.opts->params.rtt_factor(), 1u);
  EXPECT_FALSE(parse_as("kbv_atomic_lat", {"--loopback", "-s", "16"}).opts);
  EXPECT_FALSE(parse_as("kbv_atomic_bw", {"--loopback", "-a"}).opts);
}

// Every numeric flag: out of range (or not a number) is refused with a
// message naming the flag and the value, never wrapped or defaulted.
TEST(PerfOptions, EveryNumberIsRangeChecked) {
  struct Case {
    const char* prog;
    std::vector<const char*> args;
    const char* expect;  // in the message
  };
  const std::vector<Case> bad{
      {"kbv_write_lat", {"--loopback", "-s", "-5"}, "-s (message size): -5 is out of range"},
      {"kbv_write_lat", {"--loopback", "-s", "0"}, "-s (message size): 0 is out of range 1.."},
      {"kbv_write_lat", {"--loopback", "-s", "3G"}, "-s (message size): '3G' is not a number"},
      {"kbv_write_lat", {"--loopback", "-s", "4294967296"}, "out of range 1..2147483648"},
      {"kbv_write_lat",
       {"--loopback", "-n", "0"},
       "-n (iterations): 0 is out of range 5..100000000"},
      {"kbv_write_lat", {"--loopback", "-n", "4"}, "-n (iterations): 4 is out of range"},
      {"kbv_write_lat", {"--loopback", "-n", "-1"}, "-n (iterations): -1 is out of range"},
      {"kbv_write_lat", {"--loopback", "-n", "1e3"}, "'1e3' is not a number"},
      {"kbv_write_bw", {"--loopback", "-t", "0"}, "-t (tx depth): 0 is out of range 1..15000"},
      {"kbv_write_bw", {"--loopback", "-t", "15001"}, "-t (tx depth)"},
      {"kbv_write_bw", {"--loopback", "-Q", "0"}, "-Q (CQ moderation): 0 is out of range 1..1024"},
      {"kbv_write_bw", {"--loopback", "-q", "0"}, "-q (number of QPs): 0 is out of range 1..16384"},
      {"kbv_write_bw", {"--loopback", "-q", "16385"}, "-q (number of QPs)"},
      {"kbv_write_lat", {"--loopback", "-I", "913"}, "-I (max inline): 913 is out of range 0..912"},
      {"kbv_send_lat", {"--loopback", "-c", "UD", "-I", "885"}, "0..884"},
      {"kbv_write_lat", {"--loopback", "-m", "128"}, "-m (MTU): 128 is out of range 256..4096"},
      {"kbv_write_lat", {"--loopback", "-m", "1000"}, "-m (MTU): 1000 is not one of 256"},
      {"kbv_write_lat", {"--loopback", "-T", "256"}, "-T (ToS): 256 is out of range 0..255"},
      {"kbv_write_lat", {"--loopback", "-x", "65"}, "-x (GID index): 65 is out of range 0..64"},
      {"kbv_write_lat", {"--loopback", "-i", "0"}, "-i (IB port): 0 is out of range 1..255"},
      {"kbv_write_lat", {"-p", "65536"}, "-p (TCP port): 65536 is out of range 0..65535"},
      {"kbv_write_lat", {"--loopback", "-D", "0"}, "-D (duration in seconds): 0 is out of range"},
      {"kbv_write_lat", {"--loopback", "-a", "--max-size", "1"}, "--max-size"},
  };
  for (const auto& c : bad) {
    auto r = parse_as(c.prog, c.args);
    EXPECT_FALSE(r.opts) << c.args.back();
    EXPECT_EQ(r.exit_code, 2) << c.args.back();
    EXPECT_TRUE(has(r.message, c.expect)) << "'" << r.message << "' lacks '" << c.expect << "'";
  }
}

TEST(PerfOptions, RefusedCombinations) {
  struct Case {
    const char* prog;
    std::vector<const char*> args;
  };
  const std::vector<Case> bad{
      {"kbv_write_lat", {"--server", "host"}},                  // server with a host
      {"kbv_write_lat", {"--server", "--loopback"}},            // two roles
      {"kbv_write_lat", {"--loopback", "-c", "UD"}},            // UD write
      {"kbv_read_lat", {"--loopback", "-c", "UD"}},             // UD read
      {"kbv_read_lat", {"--loopback", "-c", "UC"}},             // UC read
      {"kbv_atomic_bw", {"--loopback", "-c", "UC"}},            // UC atomics
      {"kbv_write_lat", {"--loopback", "-c", "XRC"}},           // not kbv's
      {"kbv_write_lat", {"--loopback", "-s", "8", "-a"}},       // size and sweep
      {"kbv_write_lat", {"--loopback", "-q", "2"}},             // -q on a latency test
      {"kbv_read_lat", {"--loopback", "-I", "64"}},             // inline read
      {"kbv_write_bw", {"--loopback", "-e"}},                   // events on WRITE
      {"kbv_write_lat", {"--loopback", "-A", "CMP_AND_SWAP"}},  // atomic type, not atomic
      {"kbv_write_lat", {"--loopback", "-b"}},                  // bidirectional latency
      {"kbv_send_bw", {"--loopback", "-b", "-c", "UD"}},        // bidirectional UD SEND
      {"kbv_write_bw", {"--loopback", "-b", "-D", "1"}},        // bidirectional duration
      {"kbv_write_lat", {"--loopback", "--nope"}},              // unknown option
      {"kbv_write_lat", {"--loopback", "-T", "write"}},         // the old -T (test type)
      {"kbv_write_lat", {"--loopback", "--mode", "lat"}},       // the old --mode
      {"kbv_write_lat", {"--peer-dev", "sim:1"}},               // loopback option on a server
  };
  for (const auto& c : bad) {
    auto r = parse_as(c.prog, c.args);
    EXPECT_FALSE(r.opts) << c.prog << " " << c.args.back();
    EXPECT_NE(r.exit_code, 0);
    EXPECT_FALSE(r.message.empty());
  }
}

TEST(PerfOptions, HelpExitsZeroWithText) {
  auto r = parse({"--help"});
  EXPECT_FALSE(r.opts);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(has(r.message, "--loopback"));
  EXPECT_TRUE(has(r.message, "--report_gbits"));
  EXPECT_TRUE(has(r.message, "kbv_atomic_bw"));
  auto multi = parse_as("kbv-perf", {"--help"});
  EXPECT_EQ(multi.exit_code, 0);
  EXPECT_TRUE(has(multi.message, "kbv_write_lat"));
}

}  // namespace
}  // namespace kbv::perf
