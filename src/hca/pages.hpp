// SPDX-License-Identifier: BSD-3-Clause
//
// PageManager: the 4 KiB host pages the HCA borrows as its private memory
// (ICM), given and taken with MANAGE_PAGES (docs/PRM.md "Bring-up order" steps 5
// and 8, "Page requests at run time"; kernel
// drivers/net/ethernet/mellanox/mlx5/core/pagealloc.c for the protocol:
// QUERY_PAGES says how many, MANAGE_PAGES gives or takes them; a negative
// count in a page-request EQE means firmware returns pages).
//
// Every page is accounted: pages_held() is the number firmware holds now,
// each one mapped IOVA -> the DmaBlock that backs it; a page is recorded as
// held only after the MANAGE_PAGES that gave it succeeded, and freed only
// when a MANAGE_PAGES take listed its IOVA. reclaim_all() (teardown, after
// TEARDOWN_HCA) takes pages until firmware holds none.
//
// Run-time requests (on_page_request, from the page-request EQE type 0x0B)
// go through the command queue's reserved page-supply slot, so they never
// wait behind regular commands (which may themselves be waiting for pages).
// Startup requests (satisfy_startup) use regular slots.
//
// Allocation failure: when no page can be allocated the driver answers
// MANAGE_PAGES "cannot give" (op_mod 0) so firmware stops waiting, and the
// request's status is KBV_ERR_NO_MEMORY.
//
// Every operation returns KBV_PENDING (its callback runs once, later, from
// the command queue) or a final status (no callback).
//
// Threading: one thread (the one that drives the CmdQueue).
#pragma once

#include <kbv/status.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "hca/cmd/exec.hpp"
#include "hca/cmdq/cmdq.hpp"
#include "hca/io/device_io.hpp"

namespace kbv::hca {

struct PageStats {
  uint64_t given = 0;         // pages handed to firmware, total
  uint64_t returned = 0;      // pages taken back, total
  uint64_t requests = 0;      // page-request events served
  uint64_t failures = 0;      // MANAGE_PAGES / allocation failures
  uint64_t unknown_iova = 0;  // IOVAs firmware returned that it never got
};

class PageManager {
 public:
  // Pages per MANAGE_PAGES command (pas[] of 8 B each: 4 KiB of mailboxes).
  static constexpr uint32_t kMaxPagesPerCmd = 512;
  // Sanity bound on the pages firmware may hold (8 GiB of 4 KiB pages): a
  // request beyond it is answered "cannot give" with KBV_ERR_LIMIT_EXCEEDED
  // rather than allocating host memory on the word of a garbled count.
  static constexpr size_t kDefaultMaxPages = size_t{1} << 21;

  PageManager(DeviceIo& io, CmdQueue& q, uint16_t function_id = 0)
      : io_(io), q_(q), function_id_(function_id), alive_(std::make_shared<bool>(true)) {}
  // Frees every page still recorded as held. Only safe once the device can no
  // longer touch them (after DISABLE_HCA, or when it is gone); logs a warning
  // when pages were still held.
  ~PageManager();
  PageManager(const PageManager&) = delete;
  PageManager& operator=(const PageManager&) = delete;

  // QUERY_PAGES(which) and give/take what it asks. done(status) once.
  Status satisfy_startup(prm::QueryPagesOpMod which, cmd::DoneStatus done);
  // A page-request event: npages > 0 give, < 0 take back -npages.
  void on_page_request(uint16_t function_id, int32_t npages);
  // Gives n pages (batches of kMaxPagesPerCmd); done(status) once.
  Status give(uint32_t n, cmd::DoneStatus done, bool page_slot = false);
  // Takes up to n pages back; done(status) once.
  Status take(uint32_t n, cmd::DoneStatus done, bool page_slot = false);
  // Takes pages until firmware holds none. KBV_ERR_BUSY if firmware stops
  // returning pages while it still holds some (they stay recorded). Returns
  // KBV_SUCCESS at once (no callback) when firmware holds nothing.
  Status reclaim_all(cmd::DoneStatus done);

  void set_max_pages(size_t n) { max_pages_ = n; }
  size_t max_pages() const { return max_pages_; }
  size_t pages_held() const { return held_.size(); }
  bool holds(uint64_t iova) const { return held_.count(iova) != 0; }
  uint32_t in_progress() const { return in_progress_; }
  const PageStats& stats() const { return stats_; }

 private:
  struct Batch;
  Status take_step(std::shared_ptr<Batch> b);
  void finish(std::shared_ptr<Batch> b);

  DeviceIo& io_;
  CmdQueue& q_;
  uint16_t function_id_;
  // std::map: a give's pages are staged in nodes of their own before the
  // command is submitted and merged in (no allocation) when it completes,
  // so a completion never fails for memory with pages the firmware holds.
  std::map<uint64_t, DmaBlock> held_;
  // Pages of a MANAGE_PAGES give that timed out or met a dead device: the
  // firmware may or may not hold them. Never reused; freed when the firmware
  // returns one, and by the destructor (the device is disabled or gone by
  // then), as the kernel's pagealloc.c frees what a failed give handed over.
  std::map<uint64_t, DmaBlock> doubtful_;
  uint32_t in_progress_ = 0;  // give/take operations not yet finished
  size_t max_pages_ = kDefaultMaxPages;
  size_t pending_give_ = 0;  // pages in MANAGE_PAGES gives not yet answered
  PageStats stats_;
  // Callbacks outliving the manager (device failure during destruction) see
  // *alive_ == false and touch nothing.
  std::shared_ptr<bool> alive_;
};

}  // namespace kbv::hca
