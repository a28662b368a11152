// SPDX-License-Identifier: BSD-3-Clause
// IovaAllocator: first-fit, coalescing allocator over the IOMMU's usable
// IOVA ranges (see iova.hpp).
#include "platform/iova.hpp"

#include <limits>

#include "common/log.hpp"

namespace kbv::platform {
namespace {

constexpr bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

IovaAllocator::IovaAllocator(uint64_t granule)
    : granule_(is_pow2(granule) && granule >= kGranule ? granule : kGranule) {
  if (granule_ != granule)
    log::warn("iova", "granule {:#x} is not a power of two >= 4 KiB; using 4 KiB", granule);
}

Status IovaAllocator::add_range(IovaRange r) {
  if (r.end < r.start) return KBV_ERR_INVALID_ARGUMENT;
  // Round inward to whole granules; never hand out the first granule (IOVA 0).
  uint64_t start = r.start < granule_ ? granule_ : r.start;
  if (start % granule_ != 0) {
    const uint64_t up = start + (granule_ - start % granule_);
    if (up < start) return Status::ok();  // wrapped: nothing usable
    start = up;
  }
  if (start > r.end) return Status::ok();
  // Length of whole granules in [start, r.end]; r.end + 1 may be 2^64.
  uint64_t len;
  if (r.end == std::numeric_limits<uint64_t>::max()) {
    len = 0 - start;  // 2^64 - start, a multiple of the granule
  } else {
    const uint64_t end_excl = (r.end + 1) / granule_ * granule_;
    if (end_excl <= start) return Status::ok();
    len = end_excl - start;
  }

  // Overlap check against existing ranges.
  auto next = ranges_.lower_bound(start);
  if (next != ranges_.end() && next->first - start < len) return KBV_ERR_ALREADY_EXISTS;
  if (next != ranges_.begin()) {
    auto prev = std::prev(next);
    if (start - prev->first < prev->second) return KBV_ERR_ALREADY_EXISTS;
  }
  ranges_.emplace(start, len);
  insert_free(start, len);
  log::debug("iova", "usable IOVA range [{:#x}, {:#x}]", start, start + (len - 1));
  return Status::ok();
}

void IovaAllocator::insert_free(uint64_t start, uint64_t len) {
  coalesce(free_.emplace(start, len).first);
}

void IovaAllocator::coalesce(std::map<uint64_t, uint64_t>::iterator it) {
  // Coalesce with the following extent.
  auto next = std::next(it);
  if (next != free_.end() && it->first + it->second == next->first) {
    it->second += next->second;
    free_.erase(next);
  }
  // Coalesce with the preceding extent.
  if (it != free_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      free_.erase(it);
    }
  }
}

Result<uint64_t> IovaAllocator::alloc(uint64_t size, uint64_t align) {
  if (size == 0 || !is_pow2(align)) return KBV_ERR_INVALID_ARGUMENT;
  if (align < granule_) align = granule_;  // every block is granule-aligned anyway
  if (size > std::numeric_limits<uint64_t>::max() - granule_) return KBV_ERR_NO_RESOURCES;
  size = (size + granule_ - 1) / granule_ * granule_;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const uint64_t s = it->first;
    const uint64_t len = it->second;
    const uint64_t pad = (align - s % align) % align;
    if (pad >= len || len - pad < size) continue;
    const uint64_t a = s + pad;
    free_.erase(it);
    if (pad != 0) free_.emplace(s, pad);
    const uint64_t tail = len - pad - size;
    if (tail != 0) free_.emplace(a + size, tail);
    used_.emplace(a, size);
    return a;
  }
  log::debug("iova", "no free IOVA block of {:#x} bytes aligned to {:#x}", size, align);
  return KBV_ERR_NO_RESOURCES;
}

Status IovaAllocator::free(uint64_t iova) {
  auto it = used_.find(iova);
  if (it == used_.end()) {
    log::error("iova", "free of IOVA {:#x} that is not allocated", iova);
    return KBV_ERR_INVALID_ARGUMENT;
  }
  // The allocation's node moves to the free list: freeing allocates nothing
  // (a free inside a destroy's completion that threw std::bad_alloc lost
  // the completion and left the object closing forever: found by verbs_oom).
  coalesce(free_.insert(used_.extract(it)).position);
  return Status::ok();
}

uint64_t IovaAllocator::allocated_size(uint64_t iova) const {
  auto it = used_.find(iova);
  return it == used_.end() ? 0 : it->second;
}

uint64_t IovaAllocator::free_bytes() const {
  uint64_t n = 0;
  for (const auto& [s, l] : free_) n += l;
  return n;
}

std::vector<IovaRange> IovaAllocator::ranges() const {
  std::vector<IovaRange> out;
  out.reserve(ranges_.size());
  for (const auto& [s, l] : ranges_) out.push_back({s, s + (l - 1)});
  return out;
}

}  // namespace kbv::platform
