// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf's latency and bandwidth loops (worker.hpp).
#include <endian.h>

#include <algorithm>
#include <cstring>

#include "kbv-perf/worker.hpp"
#include "perf/pattern.hpp"

namespace kbv::perf {

std::optional<Failure> Worker::lat_loop(uint64_t size, std::vector<uint64_t>& stamps) {
  // -D: the client runs until the time is up and says how far it got (END);
  // the server answers until it has answered that many.
  const bool timed = p_.duration != 0;
  const uint64_t iters = timed ? UINT64_MAX : p_.lat_iters;
  const auto start = Clock::now();
  const auto t_end = start + std::chrono::seconds(p_.duration);
  const uint32_t sq_limit = std::max<uint32_t>(p_.tx_depth, 16);
  const bool one_sided = p_.test == Test::kRead || p_.test == Test::kAtomic;
  if (one_sided && !client_) return std::nullopt;  // the server's memory only is used
  stamps.clear();
  if (client_ && !timed) stamps.reserve(iters);
  uint8_t* tag_byte = ep_.src(0) + size - 1;
  uint64_t i = 0;
  for (; i < iters; ++i) {
    if (client_ && (i & 63) == 0) {
      const auto now = Clock::now();
      if (timed && now >= t_end) break;
      if (progress_ != nullptr) {
        progress_->update(
            timed ? static_cast<uint64_t>(
                        std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count())
                  : i);
      }
    }
    if (!client_) {
      // Ping-pong: the server answers iteration i once it has arrived.
      served_ = i;
      std::optional<Failure> f;
      if (p_.test == Test::kWrite) {
        f = wait_byte(ep_.dst(0) + size - 1, iteration_tag(i));
      } else {
        uint32_t q = 0;
        f = wait_recv(size, i, &q);
      }
      if (f && timed && ended()) break;  // the client ran i iterations
      if (f) return f;
    }
    if (client_) stamps.push_back(now_ns());
    if (auto f = wait_outstanding_below(0, sq_limit)) return f;
    if (!one_sided) *tag_byte = iteration_tag(i);
    if (auto f = post_one(0, i, size, true, i)) return f;
    if (one_sided) {
      if (auto f = wait_outstanding_below(0, 1)) return f;
      if (p_.test == Test::kAtomic) {
        uint64_t raw;
        std::memcpy(&raw, ep_.dst(0) + kAtomicReplyOffset, 8);
        if (i == 1 && !atomic_be_) atomic_be_ = raw != 1 && be64toh(raw) == 1;
        const uint64_t old = atomic_be_.value_or(false) ? be64toh(raw) : raw;
        if (old != i) {
          return Failure{KBV_ERR_INTERNAL,
                         fmt::format("atomic {} returned {} (expected {})", i, old, i)};
        }
      }
    } else if (client_) {
      if (p_.test == Test::kWrite) {
        if (auto f = wait_byte(ep_.dst(0) + size - 1, iteration_tag(i))) return f;
      } else {
        uint32_t q = 0;
        if (auto f = wait_recv(size, i, &q)) return f;
      }
    }
  }
  iters_ = i;
  if (client_ && stamps.size() < kMinIters) {
    return Failure{KBV_ERR_INTERNAL, fmt::format("only {} iterations in the time given", i)};
  }
  return wait_outstanding_below(0, 1);
}

std::optional<Failure> Worker::bw_client(uint64_t size, std::vector<uint64_t>& posted,
                                         std::vector<uint64_t>& completed) {
  const uint32_t nq = ep_.num_qps();
  // -D: every QP posts until the time is up, then up to one more than the
  // furthest QP (the last WR of each signalled), so all QPs end with the
  // same count.
  const bool timed = p_.duration != 0;
  uint64_t iters = timed ? UINT64_MAX : p_.bw_iters;
  const auto start = Clock::now();
  const auto t_end = start + std::chrono::seconds(p_.duration);
  const uint32_t depth = std::max<uint32_t>(p_.tx_depth, 1);
  const uint32_t cq_mod = std::min(p_.cq_mod, depth);  // perftest: cq_mod <= tx_depth
  sent_.assign(nq, 0);
  done_.assign(nq, 0);
  global_.assign(nq, {});
  posted.clear();
  completed.clear();
  if (!timed) {
    for (auto& g : global_) g.reserve(iters);
    posted.reserve(iters * nq);
    completed.reserve(iters * nq);
  }
  uint64_t next = 0;
  auto deadline = Clock::now() + kDataTimeout;
  uint64_t total_done = 0, last_done = 0, idle = 0, last_received = 0;
  // -b SEND: this side also receives the peer's messages (RC: all of them).
  const bool recv_too = p_.bidir && send_test();
  while (iters == UINT64_MAX || total_done < iters * nq || (recv_too && received_ < iters * nq)) {
    if (iters == UINT64_MAX && Clock::now() >= t_end) {
      iters = *std::max_element(sent_.begin(), sent_.end()) + 1;
    }
    for (uint32_t q = 0; q < nq; ++q) {
      while (sent_[q] < iters && outstanding_[q] < depth) {
        const uint64_t k = sent_[q];
        const bool signaled = (k + 1) % cq_mod == 0 || k + 1 == iters;
        global_[q].push_back(next);
        posted.push_back(now_ns());
        completed.push_back(0);
        if (auto f = post_one(q, k, size, signaled, k)) return f;
        ++next;
        ++sent_[q];
      }
    }
    if (auto f = poll_send(&completed)) return f;
    if (recv_too) {
      if (auto f = drain_recv(size)) return f;
    }
    if (auto f = watch_peer()) return f;
    total_done = 0;
    for (uint32_t q = 0; q < nq; ++q) total_done += done_[q];
    if (total_done != last_done || received_ != last_received) {
      last_done = total_done;
      last_received = received_;
      deadline = Clock::now() + kDataTimeout;
      if (progress_ != nullptr) {
        progress_->update(
            timed ? static_cast<uint64_t>(
                        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start)
                            .count())
                  : total_done);
      }
      idle = 0;
    } else if (auto f = relax_cq(idle++, false)) {
      return f;
    } else if (Clock::now() > deadline) {
      return Failure{KBV_ERR_TIMEOUT, "timed out waiting for send completions"};
    }
  }
  iters_ = iters;
  return std::nullopt;
}

std::optional<Failure> Worker::bw_server(uint64_t size) {
  if (!send_test()) return std::nullopt;  // WRITE/READ: the server's memory only is used
  // -D: the count is known once the client's END arrives.
  const bool timed = p_.duration != 0;
  uint64_t want = timed ? UINT64_MAX : p_.bw_iters * ep_.num_qps();
  const bool ud = p_.connection != Connection::kRc;
  // RC delivers every message; UC and UD may drop when no receive is posted, so the
  // server also stops after the client says it is done and the wire is quiet.
  auto deadline = Clock::now() + kDataTimeout;
  bool client_done = false;
  for (uint64_t idle = 0; received_ < want;) {
    if (auto f = relax_cq(idle++, true)) return f;
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
      ++received_;
      if (auto f = post_recv(q)) return f;
      deadline = Clock::now() + (client_done ? std::chrono::milliseconds(200) : kDataTimeout);
      continue;
    }
    if (auto f = watch_peer(); f && !(ud && client_done)) return f;
    if (timed && !client_done) {
      if (auto f = poll_end(false)) return f;
      if (end_) {
        want = *end_ * ep_.num_qps();
        client_done = true;
        deadline = Clock::now() + (ud ? std::chrono::milliseconds(200) : kDataTimeout);
      }
    } else if (ud && !client_done) {
      auto line = ch_.recv_line(std::chrono::milliseconds(0));
      if (line) {
        if (*line != "SENT")
          return Failure{KBV_ERR_INVALID_STATE, "unexpected message: " + escape_peer_text(*line)};
        client_done = true;
        deadline = Clock::now() + std::chrono::milliseconds(200);
      }
    }
    if (Clock::now() > deadline) {
      if (ud && client_done) return std::nullopt;
      return Failure{KBV_ERR_TIMEOUT,
                     fmt::format("timed out with {} of {} messages received", received_, want)};
    }
  }
  if (ud && !client_done && !timed) {
    auto line = ch_.recv_line(kCtrlTimeout);
    if (!line || *line != "SENT") return Failure{KBV_ERR_INVALID_STATE, "no SENT from the client"};
  }
  return std::nullopt;
}

}  // namespace kbv::perf
