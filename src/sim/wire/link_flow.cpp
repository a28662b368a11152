// SPDX-License-Identifier: BSD-3-Clause
//
// Link-level flow control state machine: see link_flow.hpp.
#include "sim/wire/link_flow.hpp"

#include "sim/wire/headers.hpp"

#include <algorithm>

namespace kbv::sim::wire {

void LinkMsg::encode(uint8_t out[kBytes]) const {
  be::store32(out, kMagic);
  out[4] = static_cast<uint8_t>(type);
  out[5] = out[6] = out[7] = 0;
  be::store64(out + 8, count);
}

std::optional<LinkMsg> LinkMsg::decode(const uint8_t* p, size_t n) {
  if (n != kBytes || be::load32(p) != kMagic) return std::nullopt;
  if (p[4] != static_cast<uint8_t>(Type::kCredit) && p[4] != static_cast<uint8_t>(Type::kProbe))
    return std::nullopt;
  LinkMsg m;
  m.type = static_cast<Type>(p[4]);
  m.count = be::load64(p + 8);
  return m;
}

// ---- sender ----

bool LinkFlow::may_send(uint32_t dst, Clock::time_point now) {
  Tx& t = tx_[dst];
  if (t.absent || t.sent - t.acked < kWindow) return true;
  if (t.blocked_since == Clock::time_point::max()) {
    t.blocked_since = now;
    t.probe_at = now + kProbeAfter;
    ++blocked_;
    ++stats_.blocked;
  }
  return false;
}

void LinkFlow::on_sent(uint32_t dst) { ++tx_[dst].sent; }

void LinkFlow::unblock(Tx& t) {
  if (t.blocked_since == Clock::time_point::max()) return;
  t.blocked_since = t.probe_at = Clock::time_point::max();
  --blocked_;
}

void LinkFlow::probe(uint32_t dst, Tx& t, Clock::time_point now) {
  out_.push_back(Out{dst, LinkMsg{LinkMsg::Type::kProbe, t.sent}});
  ++stats_.probes_sent;
  if (t.blocked_since != Clock::time_point::max()) t.probe_at = now + kProbeAfter;
}

bool LinkFlow::on_credit(uint32_t src, uint64_t count, Clock::time_point now) {
  Tx& t = tx_[src];
  t.absent = false;
  if (count > t.sent) {
    // The receiver counts datagrams of an earlier sender at this address
    // (this process replaced it): give it our count.
    probe(src, t, now);
  } else if (count >= t.acked) {
    t.acked = count;  // older (smaller) counts are stale: ignored
  }
  if (t.blocked_since == Clock::time_point::max()) {
    // Not waiting (a peer back from absent with many datagrams
    // unacknowledged blocks at its next may_send() and probes).
    return false;
  }
  if (t.sent - t.acked < kWindow) {
    unblock(t);
    return true;
  }
  // Still full, but the peer is alive: its timeout starts again.
  t.blocked_since = now;
  return false;
}

bool LinkFlow::tick(Clock::time_point now) {
  if (blocked_ == 0) return false;
  bool opened = false;
  for (auto& [ip, t] : tx_) {
    if (t.blocked_since == Clock::time_point::max()) continue;
    if (now - t.blocked_since >= kPeerTimeout) {
      t.absent = true;
      unblock(t);
      ++stats_.peers_absent;
      opened = true;
    } else if (now >= t.probe_at) {
      probe(ip, t, now);
    }
  }
  return opened;
}

LinkFlow::Clock::time_point LinkFlow::deadline() const {
  Clock::time_point d = Clock::time_point::max();
  if (blocked_ == 0) return d;
  for (const auto& [ip, t] : tx_)
    if (t.blocked_since != Clock::time_point::max())
      d = std::min({d, t.probe_at, t.blocked_since + kPeerTimeout});
  return d;
}

// ---- receiver ----

void LinkFlow::on_received(uint32_t src) { ++rx_[src].count; }

void LinkFlow::on_probe(uint32_t src, uint64_t sent) {
  Rx& r = rx_[src];
  if (!r.probe_pending) ++probes_pending_;
  r.probe_pending = true;
  r.probe_count = sent;
}

void LinkFlow::after_rx(bool empty) {
  for (auto& [ip, r] : rx_) {
    if (empty && r.probe_pending) {
      // Everything the peer sent before its probe has been read or was lost:
      // take its count (IBTA 7.9.4: the receiver resynchronises on FCTBS).
      if (r.count != r.probe_count) ++stats_.resyncs;
      r.count = r.probe_count;
      r.probe_pending = false;
      --probes_pending_;
    } else if (r.count - r.reported < kReportEvery) {
      continue;
    }
    r.reported = r.count;
    out_.push_back(Out{ip, LinkMsg{LinkMsg::Type::kCredit, r.count}});
    ++stats_.credits_sent;
  }
}

}  // namespace kbv::sim::wire
