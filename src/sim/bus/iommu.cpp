// SPDX-License-Identifier: BSD-3-Clause
// IommuMap: the model's IOMMU (see iommu_map.hpp for the VFIO type1 rules).
#include "common/log.hpp"
#include "sim/bus/iommu_map.hpp"

#include <cstdint>
#include <cstring>
#include <mutex>

namespace kbv::sim {
namespace {

constexpr const char* kLog = "sim.iommu";

const char* dir_name(DmaDir d) { return d == DmaDir::kRead ? "read" : "write"; }

}  // namespace

std::vector<IovaRange> IommuMap::default_ranges() {
  // x86 VT-d: 48-bit aperture minus the MSI window (kernel
  // drivers/iommu/intel/iommu.c reserves IOAPIC_RANGE_START..END,
  // 0xfee00000..0xfeefffff, as IOMMU_RESV_MSI; type1 removes reserved
  // regions from the ranges it reports).
  return {{0, 0xFEDFFFFFull}, {0xFEF00000ull, (1ull << 48) - 1}};
}

IommuMap::IommuMap() : IommuMap(default_ranges()) {}

IommuMap::IommuMap(std::vector<IovaRange> ranges, uint32_t max_mappings)
    : ranges_(std::move(ranges)), max_mappings_(max_mappings) {}

Status IommuMap::map(uint64_t iova, void* vaddr, uint64_t size, uint32_t perm) {
  const auto va = reinterpret_cast<uintptr_t>(vaddr);
  constexpr uint64_t mask = kPageSize - 1;
  if (size == 0 || (iova & mask) || (va & mask) || (size & mask)) return KBV_ERR_INVALID_ARGUMENT;
  if (perm == 0 || (perm & ~(kRead | kWrite))) return KBV_ERR_INVALID_ARGUMENT;
  const uint64_t last = iova + size - 1;
  if (last < iova || va + size - 1 < va) return KBV_ERR_INVALID_ARGUMENT;  // wraps
  bool inside = false;
  for (const IovaRange& r : ranges_) inside |= iova >= r.start && last <= r.end;
  if (!inside) return KBV_ERR_INVALID_ARGUMENT;

  std::unique_lock lk(mu_);
  // Overlap: the mapping at or after iova starts inside, or the one before ends inside.
  auto next = maps_.lower_bound(iova);
  if (next != maps_.end() && next->first <= last) return KBV_ERR_ALREADY_EXISTS;
  if (next != maps_.begin()) {
    const DmaMapping& p = std::prev(next)->second;
    if (p.iova + p.size > iova) return KBV_ERR_ALREADY_EXISTS;
  }
  if (maps_.size() >= max_mappings_) return KBV_ERR_NO_RESOURCES;
  maps_.emplace(iova, DmaMapping{iova, static_cast<std::byte*>(vaddr), size, perm});
  log::debug(kLog, "map iova {:#x} size {:#x} perm {}", iova, size, perm);
  return Status::ok();
}

Status IommuMap::unmap(uint64_t iova, uint64_t size, uint64_t* unmapped) {
  if (unmapped) *unmapped = 0;
  constexpr uint64_t mask = kPageSize - 1;
  if (size == 0 || (iova & mask) || (size & mask)) return KBV_ERR_INVALID_ARGUMENT;
  const uint64_t last = iova + size - 1;
  if (last < iova) return KBV_ERR_INVALID_ARGUMENT;

  std::unique_lock lk(mu_);
  // v2 refuses to bisect a mapping at either end (vfio_dma_do_unmap).
  auto it = maps_.upper_bound(iova);
  if (it != maps_.begin()) {
    const DmaMapping& p = std::prev(it)->second;
    if (p.iova < iova && p.iova + p.size > iova) return KBV_ERR_INVALID_ARGUMENT;
  }
  auto tail = maps_.upper_bound(last);
  if (tail != maps_.begin()) {
    const DmaMapping& p = std::prev(tail)->second;
    if (p.iova <= last && p.iova + p.size - 1 > last) return KBV_ERR_INVALID_ARGUMENT;
  }
  uint64_t total = 0;
  for (auto i = maps_.lower_bound(iova); i != maps_.end() && i->first <= last;) {
    total += i->second.size;
    i = maps_.erase(i);
  }
  if (unmapped) *unmapped = total;
  log::debug(kLog, "unmap iova {:#x} size {:#x}: {:#x} bytes", iova, size, total);
  return Status::ok();
}

Status IommuMap::unmap_v1(uint64_t iova, uint64_t size, uint64_t* unmapped,
                          std::vector<DmaMapping>* removed) {
  if (unmapped) *unmapped = 0;
  constexpr uint64_t mask = kPageSize - 1;
  if (size == 0 || (iova & mask) || (size & mask)) return KBV_ERR_INVALID_ARGUMENT;
  const uint64_t last = iova + size - 1;
  if (last < iova) return KBV_ERR_INVALID_ARGUMENT;
  std::unique_lock lk(mu_);
  // vfio_dma_do_unmap, !iommu->v2: whole mappings from their first IOVA; a
  // mapping that begins before `iova` is not touched.
  uint64_t total = 0;
  for (auto i = maps_.lower_bound(iova); i != maps_.end() && i->first <= last;) {
    total += i->second.size;
    if (removed) removed->push_back(i->second);
    i = maps_.erase(i);
  }
  if (unmapped) *unmapped = total;
  log::debug(kLog, "unmap (v1) iova {:#x} size {:#x}: {:#x} bytes", iova, size, total);
  return Status::ok();
}

template <class Fn>
bool IommuMap::walk(uint64_t iova, uint64_t len, uint32_t perm, Fn&& fn) const {
  if (len == 0) return true;
  const uint64_t last = iova + len - 1;
  if (last < iova) return false;
  // First pass: check that every byte is mapped with perm.
  auto it = maps_.upper_bound(iova);
  if (it == maps_.begin()) return false;
  --it;
  auto first = it;
  uint64_t pos = iova;
  for (;;) {
    if (it == maps_.end()) return false;
    const DmaMapping& m = it->second;
    if (pos < m.iova || pos - m.iova >= m.size || (m.perm & perm) != perm) return false;
    const uint64_t mend = m.iova + m.size - 1;
    if (mend >= last) break;
    pos = mend + 1;
    ++it;
  }
  // Second pass: hand out the pieces.
  pos = iova;
  for (it = first;; ++it) {
    const DmaMapping& m = it->second;
    const uint64_t off = pos - m.iova;
    const uint64_t n = std::min<uint64_t>(m.size - off, last - pos + 1);
    fn(m.vaddr + off, n);
    pos += n;
    if (pos - 1 == last) break;
  }
  return true;
}

Status IommuMap::dma_read(uint64_t iova, std::span<std::byte> dst) {
  std::shared_lock lk(mu_);
  std::byte* out = dst.data();
  const bool ok = walk(iova, dst.size(), kRead, [&](std::byte* p, uint64_t n) {
    dma_copy_from_host(out, p, n);
    out += n;
  });
  if (ok) return Status::ok();
  lk.unlock();
  return fault(iova, dst.size(), DmaDir::kRead, "unmapped or not readable");
}

Status IommuMap::dma_write(uint64_t iova, std::span<const std::byte> src) {
  std::shared_lock lk(mu_);
  const std::byte* in = src.data();
  const bool ok = walk(iova, src.size(), kWrite, [&](std::byte* p, uint64_t n) {
    dma_copy_to_host(p, in, n);
    in += n;
  });
  if (ok) return Status::ok();
  lk.unlock();
  return fault(iova, src.size(), DmaDir::kWrite, "unmapped or not writable");
}

std::byte* IommuMap::translate(uint64_t iova, uint64_t len, uint32_t perm) {
  {
    std::shared_lock lk(mu_);
    auto it = maps_.upper_bound(iova);
    if (it != maps_.begin() && len > 0) {
      const DmaMapping& m = std::prev(it)->second;
      const uint64_t off = iova - m.iova;
      if (off < m.size && len <= m.size - off && (m.perm & perm) == perm && perm != 0)
        return m.vaddr + off;
    }
  }
  (void)fault(iova, len, (perm & kWrite) ? DmaDir::kWrite : DmaDir::kRead,
              "translate: not inside one mapping with the permission");
  return nullptr;
}

Status IommuMap::fault(uint64_t iova, uint64_t len, DmaDir dir, const char* why) {
  faults_.fetch_add(1, std::memory_order_relaxed);
  last_iova_.store(iova, std::memory_order_relaxed);
  last_len_.store(len, std::memory_order_relaxed);
  last_dir_.store(static_cast<int>(dir), std::memory_order_relaxed);
  log::warn(kLog, "DMA fault: {} iova {:#x} length {:#x}: {}", dir_name(dir), iova, len, why);
  return KBV_ERR_IOMMU_FAULT;
}

IommuMap::FaultInfo IommuMap::last_fault() const {
  return {last_iova_.load(std::memory_order_relaxed), last_len_.load(std::memory_order_relaxed),
          static_cast<DmaDir>(last_dir_.load(std::memory_order_relaxed))};
}

void IommuMap::clear() {
  std::unique_lock lk(mu_);
  maps_.clear();
}

std::vector<DmaMapping> IommuMap::mappings() const {
  std::shared_lock lk(mu_);
  std::vector<DmaMapping> v;
  v.reserve(maps_.size());
  for (const auto& [k, m] : maps_) v.push_back(m);
  return v;
}

uint32_t IommuMap::available() const {
  std::shared_lock lk(mu_);
  return max_mappings_ - static_cast<uint32_t>(maps_.size());
}

}  // namespace kbv::sim
