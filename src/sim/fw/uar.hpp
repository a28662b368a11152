// SPDX-License-Identifier: BSD-3-Clause
//
// UAR pages: ALLOC_UAR hands out an index n, and the driver rings doorbells
// in BAR0 page n (docs/PRM.md "UAR page n is at BAR0 + n*4096"; mlx5_ifc.h
// alloc_uar_out.uar, dealloc_uar_in.uar). The model hands out
// [first, first + count); pages 0 and 1 hold the init segment.
//
// Threading: allocation on the firmware thread; is_allocated() may be read
// from any thread (doorbell routing).
#pragma once

#include "sim/fw/registry.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

namespace kbv::sim::fw {

class UarTable {
 public:
  UarTable(uint32_t first, uint32_t count);

  std::optional<uint32_t> alloc();
  // BAD_INDEX outside the range, BAD_RESOURCE when not allocated.
  Outcome free(uint32_t index);
  bool in_range(uint32_t index) const { return index >= first_ && index - first_ < count_; }
  bool is_allocated(uint32_t index) const;
  uint32_t allocated() const { return used_; }
  uint32_t first() const { return first_; }
  uint32_t count() const { return count_; }
  void clear();

 private:
  uint32_t first_;
  uint32_t count_;
  uint32_t used_ = 0;
  std::unique_ptr<std::atomic<bool>[]> map_;
};

// ALLOC_UAR and DEALLOC_UAR (uar.cpp).
void register_uar_commands(CommandRegistry& r);

}  // namespace kbv::sim::fw
