// SPDX-License-Identifier: BSD-3-Clause
//
// A kbv-perf session: what the client and the server do once their QPs are
// connected (endpoint.hpp), phase by phase, over the TCP channel
// (exchange.hpp). The client measures and reports; the server takes part as
// perftest's server does (answers ping-pongs, receives sends, owns the memory
// the client writes, reads and updates atomically).
//
// Every phase (one test kind at one message size):
//   1. both sides prepare their buffers (zeroed destination, patterned
//      source) and keep receives posted (send tests);
//   2. SYNC <phase>;
//   3. the loop: latency (ping-pong for WRITE/SEND, one-sided for READ and
//      atomics; QP 0) or bandwidth (every QP, up to tx_depth outstanding, one
//      signalled work request in cq_mod);
//   4. each side checks the data it ended with (pattern.hpp) and reports
//      RESULT <phase> ok|fail <detail>: the client first, the server once it
//      has read the client's (its memory is final only then); the phase
//      passes when both are ok.
// A work completion error, a wait without progress for kDataTimeout, or a
// failed check fails the phase; the session stops at the first failure.
//
// Threading: a side runs on one thread (its Endpoint's QPs and CQs, its
// Channel); --loopback runs the server side on a second thread with its own
// Endpoint and Channel.
#pragma once

#include <kbv/status.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "kbv-perf/endpoint.hpp"
#include "perf/exchange.hpp"
#include "perf/progress.hpp"
#include "perf/report.hpp"

namespace kbv::perf {

inline constexpr std::chrono::seconds kDataTimeout{20};
inline constexpr std::chrono::seconds kCtrlTimeout{60};

struct SessionOutcome {
  std::vector<LatRow> lat;
  std::vector<BwRow> bw;
  bool verified = false;
  std::string detail;                // what was checked, or the first failure
  std::vector<DeviceStats> devices;  // this side's, then the peer's
  uint64_t notifications = 0;        // -e: completion events taken
};

struct SessionHooks {
  std::function<void(bool lat)> on_table;  // before the first row of a table
  std::function<void(const LatRow&)> on_lat;
  std::function<void(const BwRow&)> on_bw;
  Progress* progress = nullptr;
  bool events = false;           // -e: sleep on CQ events instead of busy polling
  bool keep_bw_samples = false;  // --raw: BwRow keeps every WR's stamps
};

// Client side: runs every phase of ep.params(); fills out. An error status
// when the session could not run to its end (out.detail says why).
Status run_client(Endpoint& ep, Channel& ch, const SessionHooks& hooks, SessionOutcome& out);
// Server side: follows the client's phases (events: -e on this side).
Status run_server(Endpoint& ep, Channel& ch, bool events, std::string& detail);

DeviceStats device_stats(Endpoint& ep);

}  // namespace kbv::perf
