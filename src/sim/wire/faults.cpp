// SPDX-License-Identifier: BSD-3-Clause
// Transmit-side fault injection. Semantics: faults.hpp.
#include "sim/wire/faults.hpp"

#include <cstring>

namespace kbv::sim::wire {

namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

constexpr size_t kBthVariantByte = 4;  // masked by the ICRC: flipping it is invisible

}  // namespace

Prng::Prng(uint64_t seed) {
  for (uint64_t& w : s_) w = splitmix64(seed);
}

uint64_t Prng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

bool Prng::chance(double p) {
  const uint64_t r = next();  // always consume one draw
  if (p <= 0) return false;
  if (p >= 1) return true;
  // 53 random bits -> [0, 1)
  return static_cast<double>(r >> 11) * 0x1.0p-53 < p;
}

uint64_t Prng::below(uint64_t n) { return n == 0 ? 0 : next() % n; }

Status FaultInjector::validate(const FaultConfig& c) {
  for (double p : {c.drop, c.duplicate, c.reorder, c.corrupt}) {
    if (!(p >= 0 && p <= 1)) return KBV_ERR_INVALID_ARGUMENT;  // also rejects NaN
  }
  if (c.reorder_depth == 0) return KBV_ERR_INVALID_ARGUMENT;
  return {};
}

FaultInjector::FaultInjector(const FaultConfig& c) : cfg_(c), prng_(c.seed) {
  if (cfg_.reorder_depth == 0) cfg_.reorder_depth = 1;
}

FaultInjector::Plan FaultInjector::submit(const Outgoing& pkt) {
  Plan plan;
  ++counters_.seen;
  const bool drop = prng_.chance(cfg_.drop);
  const bool corrupt = prng_.chance(cfg_.corrupt);
  const bool dup = prng_.chance(cfg_.duplicate);
  const bool reorder = prng_.chance(cfg_.reorder);
  const uint64_t where = prng_.next();  // drawn every time, used when corrupt fires
  const size_t n = pkt.bytes.size();
  size_t pos = 0;
  if (corrupt && n > 0) {
    if (n > kBthVariantByte + 1) {
      pos = where % (n - 1);  // any byte but BTH byte 4
      if (pos >= kBthVariantByte) ++pos;
    } else {
      pos = where % n;
    }
  }

  const bool was_holding = held_len_ != 0;
  if (drop) {
    ++counters_.dropped;
  } else {
    Outgoing cur = pkt;
    if (corrupt && n > 0 && n <= corrupt_buf_.size()) {
      std::memcpy(corrupt_buf_.data(), pkt.bytes.data(), n);
      corrupt_buf_[pos] ^= 0xFF;
      cur.bytes = {corrupt_buf_.data(), n};
      ++counters_.corrupted;
    }
    if (reorder && !was_holding && n > 0 && n <= held_.size()) {
      std::memcpy(held_.data(), cur.bytes.data(), n);
      held_len_ = n;
      held_meta_ = cur;
      held_meta_.bytes = {held_.data(), n};
      held_countdown_ = cfg_.reorder_depth;
      ++counters_.reordered;
    } else {
      plan.out[plan.n++] = cur;
      if (dup) {
        plan.out[plan.n++] = cur;
        ++counters_.duplicated;
      }
    }
  }
  // A datagram held before this one moves one step closer to release.
  if (was_holding && --held_countdown_ == 0) {
    plan.out[plan.n++] = held_meta_;
    held_len_ = 0;
  }
  return plan;
}

FaultInjector::Plan FaultInjector::flush() {
  Plan plan;
  if (held_len_ != 0) {
    plan.out[plan.n++] = held_meta_;
    held_len_ = 0;
  }
  return plan;
}

}  // namespace kbv::sim::wire
