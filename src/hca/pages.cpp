// SPDX-License-Identifier: BSD-3-Clause
#include "hca/pages.hpp"

#include <algorithm>
#include <new>

#include "common/log.hpp"
#include "hca/cmd/pages.hpp"
#include "hca/prm/boot.hpp"

namespace kbv::hca {

namespace {
constexpr const char* kLog = "pages";
}

// One give/take/reclaim operation: possibly several MANAGE_PAGES commands.
struct PageManager::Batch {
  enum class Kind { kGive, kTake, kReclaim } kind;
  uint32_t wanted = 0;    // take: pages still to ask back
  uint32_t commands = 0;  // give: MANAGE_PAGES still outstanding
  bool page_slot = false;
  Status status;  // first error
  cmd::DoneStatus done;
};

PageManager::~PageManager() {
  *alive_ = false;
  if (!held_.empty())
    log::warn(kLog, "freeing {} pages firmware still holds (device disabled or gone)",
              held_.size());
  for (auto& [iova, b] : held_) io_.dma_free(b);
  for (auto& [iova, b] : doubtful_) io_.dma_free(b);
}

void PageManager::finish(std::shared_ptr<Batch> b) {
  --in_progress_;
  if (b->status.is_error()) ++stats_.failures;
  cmd::DoneStatus done = std::move(b->done);
  if (done) done(b->status);
}

Status PageManager::give(uint32_t n, cmd::DoneStatus done, bool page_slot) {
  if (n == 0) return Status{KBV_ERR_INVALID_ARGUMENT};
  const SubmitOptions opts{.timeout_ns = 0, .page_supply = page_slot};
  if (held_.size() + pending_give_ + n > max_pages_) {
    log::error(kLog, "firmware asks for {} pages on top of {} (limit {}); refusing", n,
               held_.size() + pending_give_, max_pages_);
    ++stats_.failures;
    Status s = cmd::manage_pages_cannot_give(
        q_, function_id_, n, [](Status) {}, opts);
    if (!s.is_pending()) log::error(kLog, "MANAGE_PAGES cannot-give: {}", s.to_string());
    return Status{KBV_ERR_LIMIT_EXCEEDED};
  }
  auto b = std::make_shared<Batch>();
  b->kind = Batch::Kind::kGive;
  b->page_slot = page_slot;
  b->done = std::move(done);
  ++in_progress_;
  std::weak_ptr<bool> alive = alive_;
  uint32_t left = n;
  Status first_error;
  while (left > 0) {
    const uint32_t k = std::min(left, kMaxPagesPerCmd);
    std::vector<DmaBlock> pages;
    try {
      pages.reserve(k);
    } catch (const std::bad_alloc&) {
      // From here on the batch owns `done`: report through it (below).
    }
    for (uint32_t i = 0; i < k && pages.capacity() == k; ++i) {
      Result<DmaBlock> p = io_.dma_alloc(prm::kAdapterPageSize, prm::kAdapterPageSize);
      if (!p) break;
      pages.push_back(*p);
    }
    if (pages.size() < k) {
      log::error(kLog, "cannot allocate pages for firmware ({} of {} in this batch)", pages.size(),
                 k);
      for (const DmaBlock& p : pages) io_.dma_free(p);
      first_error = Status{KBV_ERR_NO_MEMORY};
      // Tell firmware it will not get them (pagealloc.c: MLX5_PAGES_CANT_GIVE).
      ++b->commands;
      Status s = cmd::manage_pages_cannot_give(
          q_, function_id_, left,
          [this, b, alive](Status) {
            if (alive.expired() || !*alive.lock()) return;
            if (--b->commands == 0) finish(b);
          },
          opts);
      if (!s.is_pending()) --b->commands;
      break;
    }
    std::vector<uint64_t> pas;
    Status s;
    ++b->commands;
    try {
      pas.reserve(k);
      for (const DmaBlock& p : pages) pas.push_back(p.iova);
      // The pages' map nodes, made now: the completion only moves them.
      auto staged = std::make_shared<std::map<uint64_t, DmaBlock>>();
      for (const DmaBlock& p : pages) staged->emplace(p.iova, p);
      s = cmd::manage_pages_give(
          q_, function_id_, pas,
          [this, b, alive, staged](Status st) {
            if (alive.expired() || !*alive.lock()) return;  // the device's pages leak with it
            const size_t n = staged->size();
            pending_give_ -= n;
            if (st.is_ok()) {
              held_.merge(*staged);
              stats_.given += n;
            } else {
              log::error(kLog, "MANAGE_PAGES give of {} pages failed: {}", n, st.name());
              // A command that failed in firmware or in delivery did not take the
              // pages; a timeout or a dead device might have: keep those out of
              // the pool rather than risk reuse.
              const bool maybe_taken = st == KBV_ERR_TIMEOUT || st == KBV_ERR_DEVICE_FATAL ||
                                       st == KBV_ERR_DEVICE_REMOVED;
              if (maybe_taken) {
                doubtful_.merge(*staged);
              } else {
                for (const auto& [iova, p] : *staged) io_.dma_free(p);
              }
              if (b->status.is_ok()) b->status = st;
            }
            if (--b->commands == 0) finish(b);
          },
          opts);
    } catch (const std::bad_alloc&) {  // nothing submitted
      s = Status{KBV_ERR_NO_MEMORY};
    }
    if (!s.is_pending()) {
      --b->commands;
      for (const DmaBlock& p : pages) io_.dma_free(p);
      first_error = s;
      break;
    }
    pending_give_ += k;
    left -= k;
  }
  if (first_error.is_error() && b->status.is_ok()) b->status = first_error;
  if (b->commands == 0) {
    // Nothing was submitted: report synchronously, no callback.
    --in_progress_;
    b->done = nullptr;
    if (first_error.is_error()) ++stats_.failures;
    return first_error.is_error() ? first_error : Status{KBV_ERR_INTERNAL};
  }
  return Status{KBV_PENDING};
}

Status PageManager::take_step(std::shared_ptr<Batch> b) {
  const bool reclaim = b->kind == Batch::Kind::kReclaim;
  const uint32_t k = reclaim
                         ? static_cast<uint32_t>(std::min<size_t>(held_.size(), kMaxPagesPerCmd))
                         : std::min(b->wanted, kMaxPagesPerCmd);
  if (k == 0) return Status::ok();
  std::weak_ptr<bool> alive = alive_;
  Status s = cmd::manage_pages_take(
      q_, function_id_, k,
      [this, b, alive, k, reclaim](Result<std::vector<uint64_t>> r) {
        if (alive.expired() || !*alive.lock()) return;
        if (!r) {
          log::error(kLog, "MANAGE_PAGES take of {} pages failed: {}", k, r.status().to_string());
          b->status = r.status();
          finish(b);
          return;
        }
        for (uint64_t iova : *r) {
          auto it = held_.find(iova);
          if (it == held_.end()) {
            // A page of a give that timed out: the firmware had it after all.
            if (auto d = doubtful_.find(iova); d != doubtful_.end()) {
              io_.dma_free(d->second);
              doubtful_.erase(d);
              ++stats_.returned;
              continue;
            }
            ++stats_.unknown_iova;
            log::error(kLog, "firmware returned page {:#x} it was never given", iova);
            continue;
          }
          io_.dma_free(it->second);
          held_.erase(it);
          ++stats_.returned;
        }
        if (r->empty()) {
          if (reclaim && !held_.empty()) {
            log::error(kLog, "firmware returns no more pages but holds {}", held_.size());
            b->status = Status{KBV_ERR_BUSY};
          }
          finish(b);
          return;
        }
        if (!reclaim) b->wanted -= std::min<uint32_t>(b->wanted, static_cast<uint32_t>(r->size()));
        Status next = take_step(b);
        if (!next.is_pending()) {
          if (next.is_error()) b->status = next;
          finish(b);
        }
      },
      SubmitOptions{.timeout_ns = 0, .page_supply = b->page_slot});
  return s;
}

Status PageManager::take(uint32_t n, cmd::DoneStatus done, bool page_slot) {
  if (n == 0 || !done) return Status{KBV_ERR_INVALID_ARGUMENT};
  if (!q_.failure().is_ok()) return q_.failure();
  auto b = std::make_shared<Batch>();
  b->kind = Batch::Kind::kTake;
  b->wanted = n;
  b->page_slot = page_slot;
  b->done = std::move(done);
  Status s = take_step(b);
  if (s.is_pending()) ++in_progress_;
  return s;
}

Status PageManager::reclaim_all(cmd::DoneStatus done) {
  if (!done) return Status{KBV_ERR_INVALID_ARGUMENT};
  if (!q_.failure().is_ok()) return q_.failure();
  auto b = std::make_shared<Batch>();
  b->kind = Batch::Kind::kReclaim;
  b->done = std::move(done);
  log::debug(kLog, "reclaiming {} pages", held_.size());
  Status s = take_step(b);  // KBV_SUCCESS at once when nothing is held
  if (s.is_pending()) ++in_progress_;
  return s;
}

Status PageManager::satisfy_startup(prm::QueryPagesOpMod which, cmd::DoneStatus done) {
  if (!done) return Status{KBV_ERR_INVALID_ARGUMENT};
  std::weak_ptr<bool> alive = alive_;
  return cmd::query_pages(
      q_, which, [this, alive, which, done = std::move(done)](Result<cmd::PagesQuery> r) mutable {
        if (alive.expired() || !*alive.lock()) return;
        if (!r) {
          done(r.status());
          return;
        }
        log::debug(kLog, "QUERY_PAGES op_mod {}: {} pages", static_cast<int>(which), r->num_pages);
        if (r->num_pages == 0) {
          done(Status::ok());
          return;
        }
        // An allocation failure here (inside a command completion) must
        // still answer `done`, or bring-up waits for it forever (found by
        // verbs_oom). give() and take() throw only before they took `done`.
        Status s;
        try {
          s = r->num_pages > 0
                  ? give(static_cast<uint32_t>(r->num_pages), done)
                  : take(static_cast<uint32_t>(-static_cast<int64_t>(r->num_pages)), done);
        } catch (const std::bad_alloc&) {
          s = Status{KBV_ERR_NO_MEMORY};
        }
        if (!s.is_pending()) done(s);
      });
}

void PageManager::on_page_request(uint16_t function_id, int32_t npages) {
  ++stats_.requests;
  if (function_id != function_id_)
    log::warn(kLog, "page request for function {} (this driver is function {})", function_id,
              function_id_);
  log::debug(kLog, "page request: {} pages", npages);
  if (npages == 0) return;
  auto report = [npages](Status s) {
    if (s.is_error()) log::error(kLog, "page request of {} pages: {}", npages, s.to_string());
  };
  Status s = npages > 0 ? give(static_cast<uint32_t>(npages), report, /*page_slot=*/true)
                        : take(static_cast<uint32_t>(-static_cast<int64_t>(npages)), report,
                               /*page_slot=*/true);
  if (!s.is_pending()) report(s);
}

}  // namespace kbv::hca
