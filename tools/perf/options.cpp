// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf command line (options.hpp).
#include "perf/options.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <map>

#include "perf/stats.hpp"

namespace kbv::perf {

namespace {

constexpr uint64_t kMaxMsgSize = 1ull << 31;   // IBTA 9.4: messages up to 2^31 bytes
constexpr uint64_t kAtomicSize = 8;            // IBTA 9.4.5: 64-bit atomic operand
constexpr uint64_t kDefSizeLat = 2;            // perftest DEF_SIZE_LAT
constexpr uint64_t kDefSizeBw = 65536;         // perftest DEF_SIZE_BW
constexpr uint64_t kDefSweepMax = 1ull << 23;  // perftest -a: 2 till 2^23

}  // namespace

std::string_view to_string(Test t) {
  switch (t) {
    case Test::kWrite: return "write";
    case Test::kSend: return "send";
    case Test::kRead: return "read";
    case Test::kAtomic: return "atomic";
  }
  return "?";
}

std::string_view to_string(Connection c) { return c == Connection::kRc ? "RC" : "UD"; }

std::string_view to_string(AtomicType a) {
  return a == AtomicType::kFetchAndAdd ? "FETCH_AND_ADD" : "CMP_AND_SWAP";
}

uint64_t TestParams::max_size() const {
  uint64_t m = 0;
  for (uint64_t s : lat_sizes) m = std::max(m, s);
  for (uint64_t s : bw_sizes) m = std::max(m, s);
  return m;
}

std::optional<std::string> validate(const TestParams& p) {
  if (!p.lat && !p.bw) return "nothing to run: neither latency nor bandwidth";
  if (p.connection == Connection::kUd && p.test != Test::kSend) {
    return fmt::format("{} is not available on UD (only send)", to_string(p.test));
  }
  if (p.lat && p.lat_sizes.empty()) return "no latency message size";
  if (p.bw && p.bw_sizes.empty()) return "no bandwidth message size";
  for (const auto* sizes : {&p.lat_sizes, &p.bw_sizes}) {
    for (uint64_t s : *sizes) {
      if (s == 0 || s > kMaxMsgSize) {
        return fmt::format("message size {} out of range 1..{}", s, kMaxMsgSize);
      }
      if (p.test == Test::kAtomic && s != kAtomicSize) {
        return fmt::format("atomics are {} bytes (size {} given)", kAtomicSize, s);
      }
    }
  }
  if (p.lat && p.lat_iters < kMinIters) {
    return fmt::format("latency iterations must be at least {}", kMinIters);
  }
  if (p.bw && p.bw_iters < 1) return "bandwidth iterations must be at least 1";
  if (p.tx_depth < 1 || p.tx_depth > 32768) return "tx depth out of range 1..32768";
  if (p.cq_mod < 1) return "cq moderation must be at least 1";
  if (p.num_qps < 1 || p.num_qps > 1024) return "number of QPs out of range 1..1024";
  if ((p.test == Test::kRead || p.test == Test::kAtomic) && p.inline_size != 0) {
    return "inline data does not apply to read or atomic";
  }
  return std::nullopt;
}

ParseResult parse_options(int argc, const char* const* argv) {
  CLI::App app{
      "kbv-perf: perftest-style RDMA latency and bandwidth on kbv.\n"
      "  kbv-perf --server [-p PORT] [--bind ADDR]  wait for a client (takes the client's test\n"
      "                                   parameters)\n"
      "  kbv-perf [options] <host>        run against the server at <host>\n"
      "  kbv-perf [options] --loopback    both sides in this process on two model HCAs",
      "kbv-perf"};
  Options o;
  TestParams& p = o.params;
  bool server = false;
  bool loopback = false;
  bool all = false;
  bool no_progress = false;
  uint64_t size = 0;
  uint64_t max_size = kDefSweepMax;
  uint64_t iters = 0;
  std::string mode = "both";

  app.add_flag("--server", server, "Wait for a client (server side)");
  app.add_flag("--loopback", loopback, "Both sides in this process, on two model HCAs");
  app.add_option("host", o.host, "Server to connect to (client side)");
  app.add_option("-p,--port", o.port, "TCP port of the QP information exchange (default 18515)");
  app.add_option("--bind", o.bind,
                 "Server: the IPv4 address to listen on (default: all addresses, 0.0.0.0)");
  app.add_option("-d,--ib-dev", o.device, "Device URI (default: the first device listed)");
  app.add_option("--peer-dev", o.peer_device,
                 "Loopback: the second device (default: the second device listed)");
  std::string test = "write", conn = "RC", atomic = "FETCH_AND_ADD";
  app.add_option("-T,--test", test, "write | send | read | atomic (default write)")
      ->check(CLI::IsMember({"write", "send", "read", "atomic"}));
  app.add_option("--mode", mode, "lat | bw | both (default both)")
      ->check(CLI::IsMember({"lat", "bw", "both"}));
  app.add_option("-c,--connection", conn, "RC | UD (UD: send only; default RC)")
      ->check(CLI::IsMember({"RC", "UD"}));
  app.add_option("-A,--atomic_type", atomic, "FETCH_AND_ADD | CMP_AND_SWAP (default FETCH_AND_ADD)")
      ->check(CLI::IsMember({"FETCH_AND_ADD", "CMP_AND_SWAP"}));
  auto* size_opt = app.add_option("-s,--size", size,
                                  "Message size in bytes (default 2 latency, 65536 bandwidth)");
  app.add_flag("-a,--all", all, "Sweep sizes 2, 4, ... up to --max-size (default 2^23)");
  app.add_option("--max-size", max_size, "Largest size of the -a sweep");
  app.add_option("-n,--iters", iters, "Iterations (default 1000 latency, 5000 bandwidth)");
  app.add_option("-t,--tx-depth", p.tx_depth, "Send queue depth for bandwidth (default 128)");
  app.add_option("-I,--inline_size", p.inline_size, "Largest message sent inline (default 0)");
  app.add_option("-Q,--cq-mod", p.cq_mod, "Signal one work request in every N (default 100)");
  app.add_option("-q,--qp", p.num_qps, "Number of QPs (default 1)");
  app.add_flag("-N,--noPeak", p.no_peak, "Do not compute the peak bandwidth");
  app.add_flag("--json", o.json, "Print the results as JSON (with device statistics)");
  app.add_flag("--no-progress", no_progress, "No progress bar");

  ParseResult r;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    r.exit_code = e.get_exit_code();
    r.message = e.get_exit_code() == 0 ? app.help() : std::string(e.what());
    return r;
  }
  const bool size_given = size_opt->count() > 0;
  const auto fail = [&](std::string msg) {
    r.exit_code = 2;
    r.message = std::move(msg);
    return r;
  };
  if (server + loopback > 1) return fail("--server and --loopback exclude each other");
  if (!o.bind.empty() && !server) return fail("--bind is a server option");
  if (server || loopback) {
    if (!o.host.empty()) return fail("a host is given only on the client side");
    o.role = server ? Role::kServer : Role::kLoopback;
  } else {
    if (o.host.empty()) return fail("give a server host, --server or --loopback");
    o.role = Role::kClient;
  }
  const std::map<std::string, Test> tests{{"write", Test::kWrite},
                                          {"send", Test::kSend},
                                          {"read", Test::kRead},
                                          {"atomic", Test::kAtomic}};
  p.test = tests.at(test);
  p.connection = conn == "RC" ? Connection::kRc : Connection::kUd;
  p.atomic = atomic == "FETCH_AND_ADD" ? AtomicType::kFetchAndAdd : AtomicType::kCompareAndSwap;
  p.lat = mode != "bw";
  p.bw = mode != "lat";
  if (p.test == Test::kAtomic) {
    if (all) return fail("atomics have one size (8 bytes); -a does not apply");
    if (size_given && size != kAtomicSize) return fail("atomics are 8 bytes");
    size = kAtomicSize;
  }
  if (all) {
    if (size_given) return fail("-s and -a exclude each other");
    p.lat_sizes = sweep_sizes(max_size);
    p.bw_sizes = p.lat_sizes;
    if (p.lat_sizes.empty()) return fail("--max-size must be at least 2");
  } else {
    p.lat_sizes = {size_given || p.test == Test::kAtomic ? size : kDefSizeLat};
    p.bw_sizes = {size_given || p.test == Test::kAtomic ? size : kDefSizeBw};
  }
  if (iters != 0) {
    p.lat_iters = iters;
    p.bw_iters = iters;
  }
  if (!p.lat) p.lat_sizes.clear();
  if (!p.bw) p.bw_sizes.clear();
  o.progress = !no_progress && !o.json;
  if (auto err = validate(p)) return fail(*err);
  r.opts = std::move(o);
  return r;
}

}  // namespace kbv::perf
