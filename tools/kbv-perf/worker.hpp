// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf's Worker (internal to tools/kbv-perf): one side's part of a
// session (session.hpp) — posting, polling, waiting, the peer watch and the
// data checks (session.cpp), and the latency and bandwidth loops
// (loops.cpp). One thread at a time (its Endpoint's QPs and CQs, its Channel).
#pragma once

#include <fmt/format.h>
#include <sched.h>
#include <time.h>
#include <kbv/kbv.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbv-perf/endpoint.hpp"
#include "kbv-perf/session.hpp"
#include "perf/pattern.hpp"

namespace kbv::perf {

using Clock = std::chrono::steady_clock;

inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint8_t load_byte(const uint8_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

// Busy-polling as perftest does, but giving the CPU away every 64 empty
// polls: on the HCA model the "hardware" is threads of this machine, which a
// spinning benchmark on few cores would otherwise starve.
inline void relax(uint64_t spin) {
  if ((spin & 63) == 63) sched_yield();
}

inline uint64_t wr_id(uint32_t q, uint64_t k) { return (static_cast<uint64_t>(q) << 40) | k; }
inline uint32_t wr_qp(uint64_t id) { return static_cast<uint32_t>(id >> 40); }
inline uint64_t wr_index(uint64_t id) { return id & ((1ull << 40) - 1); }

// "RETRY_EXCEEDED" for KBV_ERR_RETRY_EXCEEDED: the completion status as
// perftest's messages name it.
inline std::string_view short_status(int32_t st) {
  std::string_view n = kbv_status_name(static_cast<kbv_status_t>(st));
  if (n.starts_with("KBV_ERR_")) n.remove_prefix(8);
  return n;
}

// How long a side waits, once the peer's control connection closed, for the
// completion error that says why (an RC requester gives up after
// retry_cnt + 1 ack timeouts: 8 x 67 ms, endpoint.cpp).
inline constexpr std::chrono::milliseconds kPeerGoneGrace{1500};
// How often the wait loops look at the control connection.
inline constexpr std::chrono::milliseconds kWatchPeriod{2};
// wr_id of the probe posted when the peer's connection closed with nothing
// outstanding (an index no phase reaches).
inline constexpr uint64_t kProbeIndex = (1ull << 40) - 1;

// A failed phase: the status and what happened.
struct Failure {
  Status status;
  std::string what;
};

class Worker {
 public:
  Worker(Endpoint& ep, Channel& ch, bool client, Progress* progress)
      : ep_(ep), ch_(ch), client_(client), progress_(progress), p_(ep.params()) {
    outstanding_.assign(ep.num_qps(), 0);
    recv_posted_.assign(ep.num_qps(), 0);
  }

  // -e: wait for completions on CQ events (kbv_cq_arm, the eq's fd) instead
  // of spinning. Starts the device's progress thread, which turns the
  // firmware's completion EQEs into events while this thread sleeps.
  Status enable_events();
  uint64_t notifications() const { return notifications_; }
  // Keep every WR's stamps in the bandwidth rows (--raw).
  void keep_samples(bool on) { keep_samples_ = on; }

  // One phase; lat_row/bw_row filled on the client. nullopt when both sides
  // passed, else the failure.
  std::optional<Failure> phase(bool lat, uint64_t size, LatRow* lat_row, BwRow* bw_row);
  uint64_t checks() const { return checks_; }

 private:
  uint32_t grh() const { return p_.connection == Connection::kUd ? kGrhBytes : 0; }
  uint32_t src_seed(uint32_t q) const { return pattern_seed(ep_.side(), q); }
  uint32_t peer_seed(uint32_t q) const { return pattern_seed(1 - ep_.side(), q); }
  bool send_test() const { return p_.test == Test::kSend; }

  std::optional<Failure> prepare(uint64_t size);
  std::optional<Failure> post_recv(uint32_t q);
  std::optional<Failure> post_one(uint32_t q, uint64_t k, uint64_t size, bool signaled,
                                  uint64_t iter);
  // Polls the send CQ once; retires completions (bw: stamps them).
  std::optional<Failure> poll_send(std::vector<uint64_t>* completed_ns);
  // -b SEND: takes the receive completions there are (up to 16), checks
  // them and posts their receives again.
  std::optional<Failure> drain_recv(uint64_t size);
  // Waits for the next receive completion (any QP); returns its QP.
  std::optional<Failure> wait_recv(uint64_t size, uint64_t iter, uint32_t* q_out);
  std::optional<Failure> wait_outstanding_below(uint32_t q, uint32_t limit);
  std::optional<Failure> wait_byte(const uint8_t* p, uint8_t v);
  // A completion error as "RC WRITE completion error RETRY_EXCEEDED ...",
  // with "(peer gone?)" when the control connection has closed.
  Failure wc_failure(const kbv_wc_t& wc, bool recv) const;
  // Every kWatchPeriod: the control connection closed -> peer_gone().
  std::optional<Failure> watch_peer();
  // The peer's connection closed: waits up to kPeerGoneGrace for the
  // completion error that ends the run (posting a probe WRITE on RC when
  // nothing is outstanding), else reports the closed connection.
  Failure peer_gone();

  // After a CQ poll found nothing: busy mode relaxes (relax()); event mode
  // arms the CQ (send or receive) on the first empty poll and, once armed,
  // sleeps on the eq's fd until a notification or kWatchPeriod (the loop
  // polls the CQ between the two, so a completion that came before the arm
  // is not waited for).
  std::optional<Failure> relax_cq(uint64_t spin, bool recv);

  // -D, server: reads the client's END <n> (block: wait for it; else only
  // when a line is there). A line other than END is a failure.
  std::optional<Failure> poll_end(bool block);
  // -D, ping-pong server: the client ended and every iteration was answered.
  bool ended() const { return end_.has_value() && served_ >= *end_; }
  // The waits' check, every so often, of the above (KBV_ERR_CANCELLED "end").
  std::optional<Failure> check_end();

  std::optional<Failure> lat_loop(uint64_t size, std::vector<uint64_t>& stamps);
  std::optional<Failure> bw_client(uint64_t size, std::vector<uint64_t>& posted,
                                   std::vector<uint64_t>& completed);
  std::optional<Failure> bw_server(uint64_t size);
  // This side's data check after the loop: "" when fine, else what differs.
  std::string check(bool lat, uint64_t size);

  Endpoint& ep_;
  Channel& ch_;
  bool client_;
  Progress* progress_;
  const TestParams& p_;
  std::vector<uint32_t> outstanding_;  // send WRs posted, not yet retired, per QP
  std::vector<uint32_t> recv_posted_;  // receives posted per QP
  std::vector<uint64_t> sent_;         // bw: WRs posted per QP
  std::vector<uint64_t> done_;         // bw: WRs retired per QP
  std::vector<std::vector<uint64_t>> global_;
  uint64_t received_ = 0;          // receive completions in the current phase
  uint64_t iters_ = 0;             // iterations per QP of the current phase (-D: as run)
  std::optional<uint64_t> end_;    // -D, server: the client's END <n>
  uint64_t served_ = 0;            // -D, ping-pong server: iterations answered
  std::optional<bool> atomic_be_;  // atomic replies big-endian (decided on the first reply)
  uint64_t checks_ = 0;
  uint64_t watch_calls_ = 0;
  Clock::time_point next_watch_{};
  bool events_ = false;
  Eq ev_eq_;
  int ev_fd_ = -1;
  std::array<bool, 2> armed_{};  // send CQ, receive CQ
  uint64_t arm_seq_ = 0;
  uint64_t notifications_ = 0;
  bool keep_samples_ = false;
};

}  // namespace kbv::perf
