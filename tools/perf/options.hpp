// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf command line: perftest's (linux-rdma/perftest 4.5,
// src/perftest_parameters.c usage() and parser) flags and meanings, one entry
// point per perftest program (README.md "Tools"):
//
//   kbv_write_lat  kbv_write_bw  kbv_send_lat    kbv_send_bw
//   kbv_read_lat   kbv_read_bw   kbv_atomic_lat  kbv_atomic_bw
//
// kbv-perf is one multi-call binary: it takes the test from the name it was
// run as (argv[0]: the symlinks above, installed beside it), or, run as
// kbv-perf, from its first argument (`kbv-perf write_lat ...`).
//
//   kbv_write_lat [options]            server: wait for a client (as perftest
//                                      without a host; --server says it too);
//                                      the client's test parameters are used
//   kbv_write_lat [options] <host>     client: run against the server at <host>
//   kbv_write_lat [options] --loopback both sides in this process, on two
//                                      model HCAs (kbv extension)
//
// perftest flags: -d -i -x -s (K/M suffixes) -a -n -D -c RC|UC|UD -q -t -I -Q
// -F -b -e -m -H -N -A -p -T (ToS: the GRH traffic class) --report_gbits
// --out_json --out_json_file=FILE --use_old_post_send (accepted: kbv posts
// with kbv_post_send, the "old" flow). kbv extensions: --server --loopback
// --bind --peer-dev --max-size --json --raw FILE --plot FILE --no-progress.
// Every number is range-checked with a message naming the flag. -D runs the
// one size for that many seconds (the whole run is measured: perftest's -f
// margin is not applied). -b runs the bandwidth test in both directions at
// once and reports the sum, as perftest; not with -D nor UC/UD SEND.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kbv::perf {

enum class Test : uint8_t { kWrite, kSend, kRead, kAtomic };
enum class Connection : uint8_t { kRc, kUc, kUd };
enum class AtomicType : uint8_t { kFetchAndAdd, kCompareAndSwap };
enum class Role : uint8_t { kServer, kClient, kLoopback };

std::string_view to_string(Test t);        // "write", "send", "read", "atomic"
std::string_view to_string(Connection c);  // "RC", "UC", "UD"
std::string_view to_string(AtomicType a);  // "FETCH_AND_ADD", "CMP_AND_SWAP"
// perftest's name of the verb (testsStr): "Send", "RDMA_Write", "RDMA_Read", "Atomic".
std::string_view perftest_name(Test t);

// One entry point: a test and latency or bandwidth.
struct Entry {
  Test test = Test::kWrite;
  bool lat = true;           // false: bandwidth
  std::string name() const;  // "kbv_write_lat"
};
// The entry point named by a program name or first argument: "kbv_write_lat",
// "write_lat" (a path before it is ignored). nullopt for anything else.
std::optional<Entry> entry_from_name(std::string_view name);
// Every entry point's name, as installed.
std::vector<std::string> entry_names();

inline constexpr uint32_t kTosOff = 256;    // no -T given: traffic class 0, not printed
inline constexpr uint32_t kMaxQps = 16384;  // perftest MAX_QP_NUM

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
  uint32_t mtu = 0;        // path MTU in bytes (256..4096, a power of two); 0: the ports'
  uint32_t tos = kTosOff;  // GRH traffic class 0..255 (-T); kTosOff: not set
  bool bidir = false;      // -b: both sides send at once (bandwidth); figures are the sum
  uint32_t duration = 0;   // -D: seconds to run the one size instead of iterations; 0: iterations

  // Round-trip factor of the latency figures (stats.hpp): 2 for ping-pong.
  unsigned rtt_factor() const { return (test == Test::kRead || test == Test::kAtomic) ? 1 : 2; }
  uint64_t max_size() const;
};

struct Options {
  Entry entry;
  Role role = Role::kServer;
  std::string host;           // client: the server's address
  uint16_t port = 18515;      // TCP port of the QP-info exchange (perftest DEF_PORT)
  std::string bind;           // server: the IPv4 address to listen on; empty: all (0.0.0.0)
  std::string device;         // device URI (-d); empty: the first device listed
  std::string peer_device;    // loopback: the second device; empty: the second listed
  uint32_t ib_port = 1;       // -i: the device port
  int gid_index = -1;         // -x: GID table index; -1: the first RoCEv2 GID
  bool events = false;        // -e: wait for completions with CQ events, not busy polling
  bool histogram = false;     // -H: print every latency sample (perftest "#, usec" list)
  bool report_gbits = false;  // --report_gbits: Gb/sec instead of MB/sec
  bool json = false;          // --json: the report as JSON on stdout instead of tables
  std::string json_file;      // --out_json[_file]: the report as JSON in this file too
  std::string raw_file;       // --raw: every sample, one per line
  std::string plot_file;      // --plot: a picture (.svg or .png)
  bool progress = true;       // a progress bar, only when stdout is a terminal
  TestParams params;
};

// Parse outcome: opts when the program should run; otherwise exit_code and the
// text to print (help, or the error).
struct ParseResult {
  std::optional<Options> opts;
  int exit_code = 0;
  std::string message;
};

// argv[0] is the program name (an entry point, or kbv-perf with the entry
// point as argv[1]). Validates every number's range and the combinations
// (UC: write/send; UD: send; atomics 8 bytes; -q on bandwidth tests only; -e
// not on WRITE, as perftest; a client needs a host).
ParseResult parse_options(int argc, const char* const* argv);

// Checks a TestParams received from a peer with the same rules.
std::optional<std::string> validate(const TestParams& p);

}  // namespace kbv::perf
