// SPDX-License-Identifier: BSD-3-Clause
//
// Uar: a UAR page allocated by ALLOC_UAR (cmd/uar.hpp), located in BAR0 at
// index * 4096 (docs/PRM.md "Initialization segment": UAR page n is at BAR0 +
// n*4096; prm::uar_page_offset), and the doorbells the control plane rings
// in it: the EQ consumer-index doorbells (docs/PRM.md "Event queues": 32-bit
// big-endian (ci & 0xFFFFFF) | eqn << 24 at UAR+0x40 to update and re-arm,
// at UAR+0x48 to update only; prm::eq_doorbell_value, prm::kUarEqDoorbell*).
// The data path (CQ arm at +0x20, BlueFlame at +0x800) is the verbs layer's.
//
// Threading: a value; doorbell writes to one EQ come from that EQ's poller.
#pragma once

#include <kbv/status.hpp>

#include <cstdint>

#include "platform/mmio.hpp"

namespace kbv::hca {

class Uar {
 public:
  Uar() = default;
  // KBV_ERR_INVALID_ARGUMENT when the page does not lie inside the BAR (a
  // firmware answer the driver must not trust blindly).
  static Result<Uar> at(const platform::Bar& bar, uint32_t index);

  uint32_t index() const { return index_; }
  uint64_t bar_offset() const { return offset_; }
  bool valid() const { return bar_ != nullptr; }

  // EQ doorbell: update the consumer index, and re-arm when `arm`.
  void eq_doorbell(uint32_t eqn, uint32_t ci, bool arm) const;

 private:
  const platform::Bar* bar_ = nullptr;
  uint32_t index_ = 0;
  uint64_t offset_ = 0;
};

}  // namespace kbv::hca
