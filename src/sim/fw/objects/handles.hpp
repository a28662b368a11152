// SPDX-License-Identifier: BSD-3-Clause
//
// Object-number allocation for the model firmware's object tables (pd,
// transport_domain, mkey_index, cqn, qpn, srqn): numbers are handed out from
// `first` upwards, freed numbers are reused lowest first, and at most `max`
// numbers are live at once (the 2^log_max_<object> of cmd_hca_cap; mlx5_ifc.h
// names the object numbers 24-bit fields, so every number is < 2^24).
//
// Threading: the firmware thread only (bring-up / control path; allocates).
#pragma once

#include <cstdint>
#include <iterator>
#include <optional>
#include <set>

namespace kbv::sim::fw {

class IndexAllocator {
 public:
  static constexpr uint32_t kNumberSpace = 1u << 24;  // 24-bit object numbers

  explicit IndexAllocator(uint32_t first) : first_(first), next_(first) {}

  // The lowest free number, or nullopt when `max` numbers are live or the
  // 24-bit space is used up.
  std::optional<uint32_t> alloc(uint64_t max) {
    if (live_ >= max) return std::nullopt;
    uint32_t n;
    if (!freed_.empty()) {
      n = *freed_.begin();
      freed_.erase(freed_.begin());
    } else {
      if (next_ >= kNumberSpace) return std::nullopt;
      n = next_++;
    }
    ++live_;
    return n;
  }
  // Caller guarantees n is live (the tables check membership first).
  void release(uint32_t n) {
    if (n + 1 == next_) {
      --next_;
      // Fold trailing freed numbers back so the range stays compact.
      while (!freed_.empty() && *freed_.rbegin() + 1 == next_) {
        --next_;
        freed_.erase(std::prev(freed_.end()));
      }
    } else {
      freed_.insert(n);
    }
    --live_;
  }
  uint64_t live() const { return live_; }
  void clear() {
    freed_.clear();
    next_ = first_;
    live_ = 0;
  }

 private:
  uint32_t first_;
  uint32_t next_;
  uint64_t live_ = 0;
  std::set<uint32_t> freed_;
};

}  // namespace kbv::sim::fw
