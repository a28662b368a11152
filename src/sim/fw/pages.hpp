// SPDX-License-Identifier: BSD-3-Clause
//
// Firmware page accounting: the 4 KiB pages of host memory the driver hands
// to the HCA (MANAGE_PAGES give) for its internal use, and the firmware's
// demand for them (QUERY_PAGES, page-request EQEs).
//
// PRM "Pages management" / kernel pagealloc.c: before INIT_HCA firmware asks
// for its boot pages (QUERY_PAGES op_mod 1) and then its init pages (op_mod
// 2); INIT_HCA is refused until both were given. After INIT_HCA it may ask for
// more or offer pages back at run time with a page-request EQE (type 0x0B,
// signed num_pages; QUERY_PAGES op_mod 3 answers the current demand). At
// teardown the driver takes every page back (MANAGE_PAGES op_mod 2).
//
// The model's demand is a target count: boot -> boot_pages, init ->
// boot_pages + init_pages, regular -> that plus the run-time requests. The
// answer to QUERY_PAGES is target - held (boot/init never below 0). Pages
// are given back (take) only above what the firmware needs: all of them when
// the HCA is not initialized, else those above the regular target.
//
// Threading: used on the firmware thread only.
#pragma once

#include "hca/prm/opcodes.hpp"
#include "sim/bus/iommu.hpp"
#include "sim/fw/registry.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_set>
#include <vector>

namespace kbv::sim::fw {

inline constexpr uint64_t kFwPageSize = 4096;  // PRM: firmware pages are 4 KiB

class PagePool {
 public:
  PagePool(uint32_t boot_pages, uint32_t init_pages, uint32_t max_pages)
      : boot_(boot_pages), init_(init_pages), max_(max_pages) {}

  // QUERY_PAGES answer for `stage` (pages wanted; negative: pages offered back).
  int32_t demand(prm::QueryPagesOpMod stage) const;

  // MANAGE_PAGES give: every IOVA 4 KiB aligned, mapped read/write in the
  // IOMMU, not already held and not repeated; all or nothing.
  Outcome give(std::span<const uint64_t> iovas, Iommu& iommu);
  // MANAGE_PAGES take: up to `max` pages the firmware can spare.
  std::vector<uint64_t> take(uint32_t max, bool initialized);
  // MANAGE_PAGES cannot-give: the driver refuses the outstanding demand.
  void refuse();
  // Run-time page request: the regular target moves by npages.
  void request(int32_t npages);

  std::size_t held() const { return pages_.size(); }
  bool has_boot_pages() const { return held() >= boot_; }
  bool has_init_pages() const { return held() >= static_cast<std::size_t>(boot_) + init_; }
  bool holds(uint64_t iova) const { return index_.contains(iova); }
  std::span<const uint64_t> pages() const { return pages_; }
  // Reset: forget every page and run-time request (the driver's memory is
  // no longer the device's after a function reset).
  void clear();

 private:
  int64_t regular_target() const;

  uint32_t boot_;
  uint32_t init_;
  uint32_t max_;
  int64_t extra_ = 0;  // run-time requests (signed sum)
  std::vector<uint64_t> pages_;
  std::unordered_set<uint64_t> index_;
};

// QUERY_PAGES and MANAGE_PAGES (pages.cpp).
void register_page_commands(CommandRegistry& r);

}  // namespace kbv::sim::fw
