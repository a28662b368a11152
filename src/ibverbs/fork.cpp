// SPDX-License-Identifier: BSD-3-Clause
//
// Fork support and object import of kbv's libibverbs: ibv_fork_init,
// ibv_is_fork_initialized, ibv_dontfork_range / ibv_dofork_range,
// ibv_import_device / _pd / _mr / _dm and their unimport calls.
//
// Fork (ibv_fork_init(3)): after ibv_fork_init (or with RDMAV_FORK_SAFE /
// IBV_FORK_SAFE set in the environment) every registered region is marked
// madvise(MADV_DONTFORK), as rdma-core does, so a child's copy-on-write
// faults never move pages the HCA writes; ibv_dontfork_range /
// ibv_dofork_range apply the advice to a page-aligned range, counting
// overlapping ranges (and do nothing before fork support is on, as in
// rdma-core). kbv does not know whether
// the kernel's pinned-page copy on fork covers its VFIO mappings, so
// ibv_is_fork_initialized answers ENABLED or DISABLED, never UNNEEDED.
//
// Import: objects shared through a kernel uverbs file descriptor (cmd_fd)
// do not exist in kbv — every kbv object lives in the process that created
// it — so the imports fail with EOPNOTSUPP (ibv_import_device(3)).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <set>
#include <utility>

#include <infiniband/verbs.h>

namespace {

std::atomic<bool> g_fork_enabled{false};

bool env_fork_safe() { return std::getenv("RDMAV_FORK_SAFE") || std::getenv("IBV_FORK_SAFE"); }

// Page-aligned ranges marked DONTFORK, one entry per ibv_dontfork_range (MRs
// may overlap: a page goes back to DOFORK only when no range covers it any
// more, as rdma-core's range tree counts them).
std::mutex g_mu;
std::multiset<std::pair<uintptr_t, uintptr_t>> g_ranges;

std::pair<uintptr_t, uintptr_t> page_range(void* base, size_t size) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t start = reinterpret_cast<uintptr_t>(base) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(base) + size + page - 1) & ~(page - 1);
  return {start, end};
}

bool enabled() { return g_fork_enabled.load() || env_fork_safe(); }

int dontfork(void* base, size_t size) {
  if (!enabled() || size == 0) return 0;
  const auto r = page_range(base, size);
  std::lock_guard lk(g_mu);
  if (madvise(reinterpret_cast<void*>(r.first), r.second - r.first, MADV_DONTFORK) != 0)
    return errno;
  g_ranges.insert(r);
  return 0;
}

int dofork(void* base, size_t size) {
  if (!enabled() || size == 0) return 0;
  const auto r = page_range(base, size);
  std::lock_guard lk(g_mu);
  if (auto it = g_ranges.find(r); it != g_ranges.end()) g_ranges.erase(it);
  // The parts of r no other range covers go back to DOFORK.
  uintptr_t cur = r.first;
  for (const auto& [s, e] : g_ranges) {
    if (e <= cur) continue;
    if (s >= r.second) break;
    if (s > cur && madvise(reinterpret_cast<void*>(cur), s - cur, MADV_DOFORK) != 0) return errno;
    cur = std::max(cur, e);
    if (cur >= r.second) return 0;
  }
  if (cur < r.second && madvise(reinterpret_cast<void*>(cur), r.second - cur, MADV_DOFORK) != 0)
    return errno;
  return 0;
}

}  // namespace

extern "C" {

int ibv_fork_init(void) {
  g_fork_enabled.store(true);
  return 0;
}

ibv_fork_status ibv_is_fork_initialized(void) {
  return enabled() ? IBV_FORK_ENABLED : IBV_FORK_DISABLED;
}

int ibv_dontfork_range(void* base, size_t size) { return dontfork(base, size); }
int ibv_dofork_range(void* base, size_t size) { return dofork(base, size); }

ibv_context* ibv_import_device(int cmd_fd) {
  (void)cmd_fd;
  errno = EOPNOTSUPP;
  return nullptr;
}

ibv_pd* ibv_import_pd(ibv_context* context, uint32_t pd_handle) {
  (void)context;
  (void)pd_handle;
  errno = EOPNOTSUPP;
  return nullptr;
}

ibv_mr* ibv_import_mr(ibv_pd* pd, uint32_t mr_handle) {
  (void)pd;
  (void)mr_handle;
  errno = EOPNOTSUPP;
  return nullptr;
}

ibv_dm* ibv_import_dm(ibv_context* context, uint32_t dm_handle) {
  (void)context;
  (void)dm_handle;
  errno = EOPNOTSUPP;
  return nullptr;
}

// Nothing can have been imported, so there is nothing to release.
void ibv_unimport_pd(ibv_pd* pd) { (void)pd; }
void ibv_unimport_mr(ibv_mr* mr) { (void)mr; }
void ibv_unimport_dm(ibv_dm* dm) { (void)dm; }

}  // extern "C"
