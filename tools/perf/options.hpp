// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf command line (CLI11). The options follow perftest's names where
// perftest has one (-s size, -a sweep, -n iters, -t tx depth, -I inline size,
// -Q cq moderation, -q QPs, -c connection, -A atomic type, -p port, -d device,
// -N no peak); what perftest spreads over ib_{write,send,read,atomic}_{lat,bw}
// is --test and --mode here.
//
//   kbv-perf --server [-p PORT] [-d DEV]     wait for a client; the client's
//                                            test parameters are used
//   kbv-perf [options] <server-host>          run against a server
//   kbv-perf [options] --loopback             both sides in this process, on
//                                            two model HCAs
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kbv::perf {

enum class Test : uint8_t { kWrite, kSend, kRead, kAtomic };
enum class Connection : uint8_t { kRc, kUd };
enum class AtomicType : uint8_t { kFetchAndAdd, kCompareAndSwap };
enum class Role : uint8_t { kServer, kClient, kLoopback };

std::string_view to_string(Test t);        // "write", "send", "read", "atomic"
std::string_view to_string(Connection c);  // "RC", "UD"
std::string_view to_string(AtomicType a);  // "FETCH_AND_ADD", "CMP_AND_SWAP"

// What one run measures; the client sends it to the server (exchange.hpp).
struct TestParams {
  Test test = Test::kWrite;
  Connection connection = Connection::kRc;
  AtomicType atomic = AtomicType::kFetchAndAdd;
  bool lat = true;                  // run the latency test
  bool bw = true;                   // run the bandwidth test
  std::vector<uint64_t> lat_sizes;  // message sizes in bytes, one row each
  std::vector<uint64_t> bw_sizes;
  uint64_t lat_iters = 1000;  // perftest DEF_ITERS
  uint64_t bw_iters = 5000;   // perftest DEF_ITERS_WB
  uint32_t tx_depth = 128;    // send queue depth for bandwidth (perftest DEF_TX_BW)
  uint32_t inline_size = 0;   // bytes sent inline at most (0: none)
  uint32_t cq_mod = 100;      // one signalled WR every cq_mod (perftest DEF_CQ_MOD)
  uint32_t num_qps = 1;
  bool no_peak = false;

  // Round-trip factor of the latency figures (stats.hpp): 2 for ping-pong.
  unsigned rtt_factor() const { return (test == Test::kRead || test == Test::kAtomic) ? 1 : 2; }
  uint64_t max_size() const;
};

struct Options {
  Role role = Role::kLoopback;
  std::string host;         // client: the server's address
  uint16_t port = 18515;    // TCP port of the QP-info exchange (perftest DEF_PORT)
  std::string bind;         // server: the IPv4 address to listen on; empty: all (0.0.0.0)
  std::string device;       // device URI; empty: the first device listed
  std::string peer_device;  // loopback: the second device; empty: the second listed
  bool json = false;
  bool progress = true;  // a progress bar, only when stdout is a terminal
  TestParams params;
};

// Parse outcome: opts when the program should run; otherwise exit_code and the
// text to print (help, or the error).
struct ParseResult {
  std::optional<Options> opts;
  int exit_code = 0;
  std::string message;
};

// argv[0] is the program name. Validates ranges and combinations (UD only with
// SEND; sizes within 1..2^31 and atomics fixed at 8 bytes; iters >= kMinIters;
// cq_mod and num_qps >= 1; a server takes no host; a client needs one).
ParseResult parse_options(int argc, const char* const* argv);

// Checks a TestParams received from a peer with the same rules.
std::optional<std::string> validate(const TestParams& p);

}  // namespace kbv::perf
