// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf phases: the Worker's completions, waits, checks and phase protocol
// (worker.hpp; the loops are in loops.cpp), run_client and run_server (session.hpp).
#include "kbv-perf/session.hpp"

#include <endian.h>
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>

#include "kbv-perf/worker.hpp"
#include "perf/pattern.hpp"
#include "perf/stats.hpp"

namespace kbv::perf {

Status Worker::enable_events() {
  auto eq = Eq::create(64);
  if (!eq) return eq.status();
  ev_eq_ = std::move(*eq);
  auto fd = ev_eq_.fd();
  if (!fd) return fd.status();
  ev_fd_ = *fd;
  if (Status s = ep_.device().start_progress_thread(); !s && s.code() != KBV_ERR_ALREADY_EXISTS) {
    return s;
  }
  events_ = true;
  return Status::ok();
}

std::optional<Failure> Worker::relax_cq(uint64_t spin, bool recv) {
  if (!events_) {
    relax(spin);
    return std::nullopt;
  }
  Cq& cq = recv ? ep_.recv_cq() : ep_.send_cq();
  if (!armed_[recv]) {
    Status s = kbv_cq_arm(cq.handle(), 0, ev_eq_.handle(), ++arm_seq_);
    if (s.is_error()) {
      return Failure{s, fmt::format("kbv_cq_arm: {}", kbv_status_name(s.code()))};
    }
    armed_[recv] = true;
    return std::nullopt;  // the caller polls once more before sleeping
  }
  pollfd pfd{ev_fd_, POLLIN, 0};
  (void)::poll(&pfd, 1, static_cast<int>(kWatchPeriod.count()));
  kbv_event_t ev[8];
  auto n = ev_eq_.poll(ev);
  if (!n) return Failure{n.status(), "kbv_eq_poll"};
  for (uint32_t i = 0; i < *n; ++i) {
    // One event per arm: the notification, or the arm cancelled/failed.
    for (int c = 0; c < 2; ++c) {
      Cq& which = c == 1 ? ep_.recv_cq() : ep_.send_cq();
      if (ev[i].object == which.handle()) armed_[c] = false;
    }
    if (ev[i].type == KBV_EVENT_COMP_NOTIFY) ++notifications_;
  }
  return std::nullopt;
}

Failure Worker::wc_failure(const kbv_wc_t& wc, bool recv) const {
  static constexpr const char* kOp[] = {"WRITE", "SEND", "READ", "ATOMIC"};
  const char* op = recv ? "RECV" : kOp[static_cast<int>(p_.test)];
  std::string what = fmt::format(
      "{} {} completion error {} on QP 0x{:x} (syndrome 0x{:x}, vendor 0x{:x})",
      to_string(p_.connection), op, short_status(wc.status), wc.qp_num, wc.syndrome, wc.vendor_err);
  if (ch_.peer_closed()) what += " (peer gone?)";
  return Failure{static_cast<kbv_status_t>(wc.status), what};
}

std::optional<Failure> Worker::watch_peer() {
  if ((watch_calls_++ & 63) != 0) return std::nullopt;
  const auto now = Clock::now();
  if (now < next_watch_) return std::nullopt;
  next_watch_ = now + kWatchPeriod;
  if (!ch_.peer_closed()) return std::nullopt;
  return peer_gone();
}

Failure Worker::peer_gone() {
  uint64_t pending = 0;
  for (uint32_t n : outstanding_) pending += n;
  if (pending == 0 && p_.connection == Connection::kRc) {
    // Nothing outstanding would report the peer's death: one signalled
    // 1-byte WRITE into the peer's receive buffer does (a live peer ignores
    // it: the run is over either way).
    kbv_sge_t sge{reinterpret_cast<uint64_t>(ep_.src(0)), 1, ep_.lkey()};
    kbv_send_wr_t wr{};
    wr.wr_id = wr_id(0, kProbeIndex);
    wr.opcode = KBV_WR_RDMA_WRITE;
    wr.flags = KBV_SEND_SIGNALED;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.remote_addr = ep_.peer_dst(0);
    wr.rkey = ep_.peer(0).rkey;
    if (ep_.qp(0).post_send({&wr, 1})) pending = 1;
  }
  const auto deadline = Clock::now() + kPeerGoneGrace;
  while (pending > 0 && Clock::now() < deadline) {
    kbv_wc_t wcs[16];
    auto n = ep_.send_cq().poll(wcs);
    if (!n) break;
    for (uint32_t i = 0; i < *n; ++i) {
      if (wcs[i].status != KBV_SUCCESS) return wc_failure(wcs[i], false);
    }
    if (*n == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return Failure{KBV_ERR_IO, "the peer closed the control connection (peer gone?)"};
}

std::optional<Failure> Worker::poll_end(bool block) {
  auto line =
      ch_.recv_line(block ? std::chrono::milliseconds(kCtrlTimeout) : std::chrono::milliseconds(0));
  if (!line) {
    if (!block && line.status().code() == KBV_ERR_TIMEOUT) return std::nullopt;
    return Failure{line.status(), "no END from the client"};
  }
  uint64_t n = 0;
  if (!line->starts_with("END ") || std::sscanf(line->c_str() + 4, "%" SCNu64, &n) != 1) {
    return Failure{KBV_ERR_INVALID_STATE, "unexpected message: " + escape_peer_text(*line)};
  }
  end_ = n;
  return std::nullopt;
}

std::optional<Failure> Worker::check_end() {
  if (p_.duration == 0 || client_) return std::nullopt;
  if (!end_) {
    if (auto f = poll_end(false)) return f;
  }
  if (ended()) return Failure{KBV_ERR_CANCELLED, "end"};
  return std::nullopt;
}

std::optional<Failure> Worker::wait_byte(const uint8_t* p, uint8_t v) {
  const auto deadline = Clock::now() + kDataTimeout;
  for (uint64_t spin = 0;; ++spin) {
    if (load_byte(p) == v) return std::nullopt;
    relax(spin);
    if ((spin & 1023) == 0) {
      if (auto f = poll_send(nullptr)) return f;
      if (auto f = check_end()) return f;
      if (auto f = watch_peer()) return f;
      if (Clock::now() > deadline) {
        return Failure{KBV_ERR_TIMEOUT, "timed out waiting for the peer's RDMA WRITE"};
      }
    }
  }
}

std::optional<Failure> Worker::prepare(uint64_t size) {
  for (uint32_t q = 0; q < ep_.num_qps(); ++q) {
    std::memset(ep_.dst(q), 0, p_.max_size() + kGrhBytes);
    fill_pattern({ep_.src(q), size}, src_seed(q));
    outstanding_[q] = 0;
    if (send_test()) {
      while (recv_posted_[q] < ep_.rq_depth()) {
        if (auto f = post_recv(q)) return f;
      }
    }
  }
  received_ = 0;
  atomic_be_.reset();
  return std::nullopt;
}

std::optional<Failure> Worker::post_recv(uint32_t q) {
  // Every receive takes the largest message (the size of each phase differs).
  kbv_sge_t sge{reinterpret_cast<uint64_t>(ep_.dst(q)),
                static_cast<uint32_t>(p_.max_size() + kGrhBytes), ep_.lkey()};
  kbv_recv_wr_t wr{wr_id(q, 0), &sge, 1, 0};
  Status s = ep_.qp(q).post_recv({&wr, 1});
  if (!s) return Failure{s, fmt::format("post_recv: {}", kbv_status_name(s.code()))};
  ++recv_posted_[q];
  return std::nullopt;
}

std::optional<Failure> Worker::post_one(uint32_t q, uint64_t k, uint64_t size, bool signaled,
                                        uint64_t iter) {
  kbv_sge_t sge{};
  kbv_send_wr_t wr{};
  wr.wr_id = wr_id(q, k);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.flags = signaled ? KBV_SEND_SIGNALED : 0;
  switch (p_.test) {
    case Test::kWrite:
      sge = {reinterpret_cast<uint64_t>(ep_.src(q)), static_cast<uint32_t>(size), ep_.lkey()};
      wr.opcode = KBV_WR_RDMA_WRITE;
      wr.remote_addr = ep_.peer_dst(q);
      wr.rkey = ep_.peer(q).rkey;
      break;
    case Test::kSend:
      sge = {reinterpret_cast<uint64_t>(ep_.src(q)), static_cast<uint32_t>(size), ep_.lkey()};
      wr.opcode = KBV_WR_SEND;
      if (p_.connection == Connection::kUd) {
        wr.ah = ep_.ah(q);
        wr.remote_qpn = ep_.peer(q).qpn;
        wr.remote_qkey = ep_.peer(q).qkey;
      }
      break;
    case Test::kRead:
      sge = {reinterpret_cast<uint64_t>(ep_.dst(q)), static_cast<uint32_t>(size), ep_.lkey()};
      wr.opcode = KBV_WR_RDMA_READ;
      wr.remote_addr = ep_.peer_src(q);
      wr.rkey = ep_.peer(q).rkey;
      break;
    case Test::kAtomic:
      sge = {reinterpret_cast<uint64_t>(ep_.dst(q) + kAtomicReplyOffset), 8, ep_.lkey()};
      wr.remote_addr = ep_.peer_dst(q);
      wr.rkey = ep_.peer(q).rkey;
      if (p_.atomic == AtomicType::kFetchAndAdd) {
        wr.opcode = KBV_WR_ATOMIC_FA;
        wr.compare_add = 1;
      } else {
        wr.opcode = KBV_WR_ATOMIC_CS;
        wr.compare_add = iter;  // the counter holds iter: swap in iter + 1
        wr.swap = iter + 1;
      }
      break;
  }
  if ((p_.test == Test::kWrite || p_.test == Test::kSend) && size <= p_.inline_size) {
    wr.flags |= KBV_SEND_INLINE;
  }
  Status s = ep_.qp(q).post_send({&wr, 1});
  if (!s) return Failure{s, fmt::format("post_send: {}", kbv_status_name(s.code()))};
  ++outstanding_[q];
  return std::nullopt;
}

std::optional<Failure> Worker::poll_send(std::vector<uint64_t>* completed_ns) {
  kbv_wc_t wcs[16];
  auto n = ep_.send_cq().poll(wcs);
  if (!n)
    return Failure{n.status(), fmt::format("poll_cq: {}", kbv_status_name(n.status().code()))};
  if (*n == 0) return std::nullopt;
  const uint64_t t = now_ns();
  for (uint32_t i = 0; i < *n; ++i) {
    const kbv_wc_t& wc = wcs[i];
    if (wc.status != KBV_SUCCESS) return wc_failure(wc, false);
    const uint32_t q = wr_qp(wc.wr_id);
    if (q >= ep_.num_qps()) return Failure{KBV_ERR_INTERNAL, "completion for an unknown QP"};
    if (completed_ns == nullptr) {
      // Latency: every WR is signalled.
      if (outstanding_[q] > 0) --outstanding_[q];
      continue;
    }
    // Bandwidth: a signalled WR retires every earlier WR of its QP.
    const uint64_t k = wr_index(wc.wr_id);
    for (uint64_t j = done_[q]; j <= k; ++j) (*completed_ns)[global_[q][j]] = t;
    outstanding_[q] -= static_cast<uint32_t>(k + 1 - done_[q]);
    done_[q] = k + 1;
  }
  return std::nullopt;
}

std::optional<Failure> Worker::drain_recv(uint64_t size) {
  kbv_wc_t wcs[16];
  auto n = ep_.recv_cq().poll(wcs);
  if (!n) return Failure{n.status(), "poll_cq (receive)"};
  for (uint32_t i = 0; i < *n; ++i) {
    const kbv_wc_t& wc = wcs[i];
    if (wc.status != KBV_SUCCESS) return wc_failure(wc, true);
    const uint32_t q = wr_qp(wc.wr_id);
    if (q >= ep_.num_qps()) return Failure{KBV_ERR_INTERNAL, "receive for an unknown QP"};
    --recv_posted_[q];
    if (wc.byte_len != size + grh()) {
      return Failure{KBV_ERR_INTERNAL,
                     fmt::format("received {} bytes, expected {}", wc.byte_len, size + grh())};
    }
    ++received_;
    if (auto f = post_recv(q)) return f;
  }
  return std::nullopt;
}

std::optional<Failure> Worker::wait_outstanding_below(uint32_t q, uint32_t limit) {
  const auto deadline = Clock::now() + kDataTimeout;
  for (uint64_t spin = 0; outstanding_[q] >= limit; ++spin) {
    if (auto f = poll_send(nullptr)) return f;
    if (auto f = watch_peer()) return f;
    if (auto f = relax_cq(spin, false)) return f;
    if (Clock::now() > deadline)
      return Failure{KBV_ERR_TIMEOUT, "timed out waiting for send completions"};
  }
  return std::nullopt;
}

std::optional<Failure> Worker::wait_recv(uint64_t size, uint64_t iter, uint32_t* q_out) {
  const auto deadline = Clock::now() + kDataTimeout;
  for (uint64_t spin = 0;; ++spin) {
    kbv_wc_t wc;
    auto n = ep_.recv_cq().poll({&wc, 1});
    if (!n) return Failure{n.status(), "poll_cq (receive)"};
    if (*n == 1) {
      if (wc.status != KBV_SUCCESS) return wc_failure(wc, true);
      const uint32_t q = wr_qp(wc.wr_id);
      if (q >= ep_.num_qps()) return Failure{KBV_ERR_INTERNAL, "receive for an unknown QP"};
      --recv_posted_[q];
      if (wc.byte_len != size + grh()) {
        return Failure{KBV_ERR_INTERNAL,
                       fmt::format("received {} bytes, expected {}", wc.byte_len, size + grh())};
      }
      // Ping-pong: the tag of this iteration ends the message.
      if (iter != UINT64_MAX && load_byte(ep_.dst(q) + grh() + size - 1) != iteration_tag(iter)) {
        return Failure{KBV_ERR_INTERNAL, fmt::format("message {} carries the wrong tag", iter)};
      }
      ++received_;
      *q_out = q;
      return post_recv(q);
    }
    if (auto f = relax_cq(spin, true)) return f;
    if ((spin & 255) == 0) {
      if (auto f = poll_send(nullptr)) return f;
      if (auto f = check_end()) return f;
      if (auto f = watch_peer()) return f;
      if (Clock::now() > deadline)
        return Failure{KBV_ERR_TIMEOUT, "timed out waiting for a receive"};
    }
  }
}
std::string Worker::check(bool lat, uint64_t size) {
  const bool ping_pong = lat && (p_.test == Test::kWrite || p_.test == Test::kSend);
  const uint64_t iters = iters_;
  std::optional<uint8_t> tag;
  if (ping_pong) tag = iteration_tag(iters - 1);
  const uint32_t nq = lat ? 1 : ep_.num_qps();
  std::string bad;
  for (uint32_t q = 0; q < nq && bad.empty(); ++q) {
    switch (p_.test) {
      case Test::kWrite:
      case Test::kSend: {
        // The receiver ends with the sender's last message.
        if (!ping_pong && client_ && !p_.bidir) break;
        if (p_.test == Test::kSend && !lat && p_.connection != Connection::kRc && received_ == 0) {
          bad = fmt::format("no {} message arrived", to_string(p_.connection));
          break;
        }
        auto off = check_pattern({ep_.dst(q) + grh(), size}, peer_seed(q), tag);
        if (off) bad = fmt::format("QP {}: byte {} of the last message differs", q, *off);
        break;
      }
      case Test::kRead: {
        if (!client_ && !p_.bidir) break;
        auto off = check_pattern({ep_.dst(q), size}, peer_seed(q));
        if (off) bad = fmt::format("QP {}: byte {} read differs", q, *off);
        break;
      }
      case Test::kAtomic: {
        if (client_ && !p_.bidir) break;
        // The counter the client updated once per iteration (FA +1; CS i -> i + 1).
        uint64_t raw;
        std::memcpy(&raw, ep_.dst(q), 8);
        if (raw != iters && be64toh(raw) != iters) {
          bad = fmt::format("atomic counter holds 0x{:x}, expected {}", raw, iters);
        }
        break;
      }
    }
  }
  if (send_test() && !lat && (!client_ || p_.bidir) && p_.connection == Connection::kRc &&
      received_ != iters_ * ep_.num_qps()) {
    bad = fmt::format("{} messages received, {} sent", received_, iters_ * ep_.num_qps());
  }
  return bad;
}

std::optional<Failure> Worker::phase(bool lat, uint64_t size, LatRow* lat_row, BwRow* bw_row) {
  const std::string tag = fmt::format("{}-{}-{}", lat ? "lat" : "bw", to_string(p_.test), size);
  if (p_.connection == Connection::kUd && size > ep_.mtu_bytes()) {
    return Failure{KBV_ERR_INVALID_ARGUMENT,
                   fmt::format("UD message size {} above the path MTU {}", size, ep_.mtu_bytes())};
  }
  iters_ = lat ? p_.lat_iters : p_.bw_iters;
  end_.reset();
  served_ = 0;
  if (auto f = prepare(size)) return f;
  if (Status s = ch_.sync(tag, kCtrlTimeout); !s) {
    return Failure{s, fmt::format("sync {}: {}", tag, kbv_status_name(s.code()))};
  }
  std::optional<Failure> run;
  std::vector<uint64_t> stamps, posted, completed;
  if (lat) {
    run = lat_loop(size, stamps);
  } else if (client_ || p_.bidir) {
    // -b: both sides send (and, SEND, receive) at once.
    run = bw_client(size, posted, completed);
    if (!run && p_.bidir) {
      // The peer's last WRITEs/SENDs have landed here once its loop is over.
      if (Status s = ch_.sync(tag + "-done", kCtrlTimeout); !s) run = Failure{s, "sync after -b"};
    }
    if (!run && p_.duration == 0 && send_test() && p_.connection != Connection::kRc) {
      if (Status s = ch_.send_line("SENT"); !s) run = Failure{s, "send SENT"};
    }
  } else {
    run = bw_server(size);
  }
  if (client_ && !run && p_.duration != 0) {
    // -D: how many iterations ran (also the end of a UC/UD SEND stream).
    if (Status s = ch_.send_line(fmt::format("END {}", iters_)); !s) run = Failure{s, "send END"};
  }
  if (!client_ && !run && p_.duration != 0) {
    // -D: the count the client ran (a passive server learns it only here).
    if (!end_) run = poll_end(true);
    if (!run) iters_ = *end_;
  }
  if (progress_ != nullptr) progress_->finish();
  // The client reports first, the server after reading it: the server's
  // memory is final only once the client's loop is over (one-sided tests).
  // A run that failed is what is reported, whatever the exchange below does;
  // with the peer gone there is no one to exchange with.
  if (run && ch_.peer_closed()) return run;
  std::optional<std::string> peer_line;
  if (!client_) {
    auto line = ch_.recv_line(kCtrlTimeout);
    if (!line) return run ? *run : Failure{line.status(), "no RESULT from the peer"};
    peer_line = *line;
  }
  std::string mine = run ? run->what : check(lat, size);
  ++checks_;
  std::string ok_detail = "-";
  if (mine.empty() && !client_ && p_.bidir) {
    // -b: this side's figures, for the client to add to its own.
    auto s = bandwidth_stats(posted, completed, size, p_.no_peak);
    if (!s) mine = "no bandwidth samples";
    if (s) {
      ok_detail = fmt::format("bw {:.6f} {:.6f} {:.9f} {}", s->bw_avg_mbs, s->bw_peak_mbs,
                              s->msg_rate_mpps, s->messages);
    }
  }
  if (Status s = ch_.send_line(fmt::format("RESULT {} {} {}", tag, mine.empty() ? "ok" : "fail",
                                           mine.empty() ? ok_detail : mine));
      !s) {
    return run ? *run : Failure{s, "send RESULT"};
  }
  if (client_) {
    auto line = ch_.recv_line(kCtrlTimeout);
    if (!line) return run ? *run : Failure{line.status(), "no RESULT from the peer"};
    peer_line = *line;
  }
  const std::string* peer = &*peer_line;
  const std::string ok_prefix = fmt::format("RESULT {} ok", tag);
  if (run) return run;
  if (!mine.empty()) return Failure{KBV_ERR_INTERNAL, mine};
  if (!peer->starts_with(ok_prefix)) {
    const std::string fail_prefix = fmt::format("RESULT {} fail ", tag);
    return Failure{KBV_ERR_INTERNAL,
                   "peer: " + escape_peer_text(peer->starts_with(fail_prefix)
                                                   ? peer->substr(fail_prefix.size())
                                                   : *peer)};
  }
  if (client_ && lat) {
    auto s = latency_stats(stamps, p_.rtt_factor());
    if (!s) return Failure{KBV_ERR_INTERNAL, "too few latency samples"};
    lat_row->bytes = size;
    lat_row->stats = *s;
    lat_row->samples_us = latency_samples(stamps, p_.rtt_factor());
    lat_row->elapsed_s = static_cast<double>(stamps.back() - stamps.front()) / 1e9;
  } else if (client_) {
    auto s = bandwidth_stats(posted, completed, size, p_.no_peak);
    if (!s) return Failure{KBV_ERR_INTERNAL, "no bandwidth samples"};
    bw_row->bytes = size;
    bw_row->iterations = iters_;
    bw_row->stats = *s;
    if (keep_samples_) {
      bw_row->posted_ns = std::move(posted);
      bw_row->completed_ns = std::move(completed);
    }
    if (p_.bidir) {
      // perftest -b: the sum of both directions (print_full_bw_report).
      double avg = 0, peak = 0, rate = 0;
      unsigned long long msgs = 0;
      if (std::sscanf(peer->c_str() + ok_prefix.size(), " bw %lf %lf %lf %llu", &avg, &peak, &rate,
                      &msgs) != 4) {
        return Failure{KBV_ERR_INVALID_STATE, "the server sent no -b figures"};
      }
      bw_row->stats.bw_avg_mbs += avg;
      bw_row->stats.bw_peak_mbs += peak;
      bw_row->stats.msg_rate_mpps += rate;
      bw_row->stats.messages += msgs;
    }
  }
  return std::nullopt;
}

namespace {

std::string stats_line(const DeviceStats& d) {
  return fmt::format("STATS {} {} {} {} {}", d.side, d.device, d.fw_cmds_in_flight,
                     d.fw_cmds_in_flight_max, d.fw_cmds_completed);
}

std::optional<DeviceStats> parse_stats(const std::string& line) {
  DeviceStats d;
  char side[16] = {};
  char uri[KBV_URI_MAX + 1] = {};
  unsigned long long completed = 0;
  if (std::sscanf(line.c_str(), "STATS %15s %64s %u %u %llu", side, uri, &d.fw_cmds_in_flight,
                  &d.fw_cmds_in_flight_max, &completed) != 5) {
    return std::nullopt;
  }
  d.side = escape_peer_text(side);
  d.device = escape_peer_text(uri);
  d.fw_cmds_completed = completed;
  return d;
}

// The sizes a side runs: all given, except on UD, where a datagram is one
// packet: a sweep stops at the path MTU and a single larger size becomes the
// MTU (perftest: "Max msg size in UD is MTU"). Both sides derive the same list.
std::vector<uint64_t> sizes_to_run(Endpoint& ep, bool lat) {
  const TestParams& p = ep.params();
  std::vector<uint64_t> sizes = lat ? p.lat_sizes : p.bw_sizes;
  if (p.connection != Connection::kUd) return sizes;
  const uint64_t mtu = ep.mtu_bytes();
  if (sizes.size() == 1) {
    if (sizes[0] > mtu) {
      if (ep.side() == 0) {
        fmt::print(stderr, "kbv-perf: UD message size {} above the path MTU: using {}\n", sizes[0],
                   mtu);
      }
      sizes[0] = mtu;
    }
  } else {
    std::erase_if(sizes, [&](uint64_t s) { return s > mtu; });
  }
  return sizes;
}

}  // namespace

DeviceStats device_stats(Endpoint& ep) {
  DeviceStats d;
  d.side = ep.side() == 0 ? "client" : "server";
  d.device = ep.uri();
  auto s = ep.device().stats();
  if (s) {
    d.fw_cmds_in_flight = s->cmds_in_flight;
    d.fw_cmds_in_flight_max = s->cmds_in_flight_max;
    d.fw_cmds_completed = s->cmds_completed;
  }
  return d;
}

Status run_client(Endpoint& ep, Channel& ch, const SessionHooks& hooks, SessionOutcome& out) {
  Worker w(ep, ch, true, hooks.progress);
  w.keep_samples(hooks.keep_bw_samples);
  if (hooks.events) {
    if (Status s = w.enable_events(); !s) {
      out.detail = fmt::format("event mode (-e): {}", kbv_status_name(s.code()));
      return s;
    }
  }
  const TestParams& p = ep.params();
  std::optional<Failure> fail;
  for (int kind = 0; kind < 2 && !fail; ++kind) {
    const bool lat = kind == 0;
    const std::vector<uint64_t> sizes = sizes_to_run(ep, lat);
    if (sizes.empty()) continue;
    if (hooks.on_table) hooks.on_table(lat);
    for (uint64_t size : sizes) {
      if (hooks.progress != nullptr) {
        // -D: the bar counts milliseconds.
        hooks.progress->start(fmt::format("{} {} B", lat ? "latency" : "bandwidth", size),
                              p.duration != 0 ? p.duration * 1000ull
                              : lat           ? p.lat_iters
                                              : p.bw_iters * p.num_qps);
      }
      LatRow lr;
      BwRow br;
      fail = w.phase(lat, size, &lr, &br);
      if (fail) break;
      if (lat) {
        out.lat.push_back(lr);
        if (hooks.on_lat) hooks.on_lat(lr);
      } else {
        out.bw.push_back(br);
        if (hooks.on_bw) hooks.on_bw(br);
      }
    }
  }
  out.devices.push_back(device_stats(ep));
  if (fail) {
    out.verified = false;
    out.detail = fail->what;
    return fail->status;
  }
  // The server's statistics, then the end.
  auto line = ch.recv_line(kCtrlTimeout);
  if (!line) return line.status();
  if (auto d = parse_stats(*line)) out.devices.push_back(*d);
  if (Status s = ch.sync("done", kCtrlTimeout); !s) return s;
  out.verified = true;
  out.detail = fmt::format("{} phase(s) checked on both sides: data byte for byte", w.checks());
  if (hooks.events) out.detail += fmt::format("; {} completion events", w.notifications());
  out.notifications = w.notifications();
  return Status::ok();
}

Status run_server(Endpoint& ep, Channel& ch, bool events, std::string& detail) {
  Worker w(ep, ch, false, nullptr);
  if (events) {
    if (Status s = w.enable_events(); !s) {
      detail = fmt::format("event mode (-e): {}", kbv_status_name(s.code()));
      return s;
    }
  }
  for (int kind = 0; kind < 2; ++kind) {
    const bool lat = kind == 0;
    for (uint64_t size : sizes_to_run(ep, lat)) {
      if (auto f = w.phase(lat, size, nullptr, nullptr)) {
        detail = f->what;
        return f->status;
      }
    }
  }
  if (Status s = ch.send_line(stats_line(device_stats(ep))); !s) return s;
  if (Status s = ch.sync("done", kCtrlTimeout); !s) return s;
  detail = fmt::format("{} phase(s) checked", w.checks());
  return Status::ok();
}

}  // namespace kbv::perf
