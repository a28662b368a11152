// SPDX-License-Identifier: BSD-3-Clause
// sim::Kernel: the no-IOMMU machine a uio_pci_generic function lives in —
// /proc/self/pagemap answers, the physical address space the function's DMA
// sees, and the hugetlbfs pool. Linux facts modelled:
//   * pagemap (Documentation/admin-guide/mm/pagemap.rst): 8 bytes per
//     virtual page at offset (va / 4096) * 8; bit 63 present (the page is
//     resident: mincore), bits 0-54 the PFN; a read not a multiple of 8 or
//     at an unaligned offset is EINVAL (pagemap_read).
//   * Physical memory: a 2 MiB-aligned virtual chunk is physically
//     contiguous (a huge page is), and chunks are scattered: each new chunk
//     gets the next lower 2 MiB of physical space, so two neighbouring
//     virtual chunks are never physically adjacent in ascending order — a
//     driver that assumes contiguity across them DMAs to the wrong memory.
//     Every page the process has seen the PFN of is reachable by every
//     uio_pci_generic function at that physical address (no IOMMU: the
//     device can reach all memory); reads and writes go through each
//     function's address map (PciDevice::dma_map) like IOMMU mappings.
//   * uio_pci_generic's probe enables the function (memory decoding on,
//     pcim_enable_device) and leaves bus mastering off.
//   * hugetlbfs: MAP_HUGETLB anonymous mmap takes 2 MiB pages from the pool
//     (ENOMEM when short: hugetlb_reserve_pages), munmap returns them.
// Simplification: a page's physical address stays reachable by the
// functions until its huge-pool mapping is unmapped; ordinary pages (an
// application buffer an MR covered) stay in the map after the process frees
// them, as a stale physical address would on silicon — a driver that DMAs
// there after deregistering is wrong either way.
#include <fcntl.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "common/log.hpp"
#include "platform/linux_uapi.hpp"
#include "sim/bus/vfio_kernel.hpp"
#include "sim/bus/vfio_state.hpp"

namespace kbv::sim {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kChunk = 2ull << 20;
constexpr uint64_t kPhysTop = 0x80'0000'0000ull;  // 512 GiB: below 2^48, clear of the MSI window

void command_bits(PciDevice& d, uint16_t set, uint16_t clear) {
  std::byte b[2];
  d.config_read(PciConfig::kCommand, b);
  uint16_t cmd =
      static_cast<uint16_t>(static_cast<uint16_t>(b[0]) | static_cast<uint16_t>(b[1]) << 8);
  cmd = static_cast<uint16_t>((cmd | set) & ~clear);
  b[0] = std::byte(cmd & 0xFF);
  b[1] = std::byte(cmd >> 8);
  d.config_write(PciConfig::kCommand, b);
}

}  // namespace

bool Kernel::any_uio() const {
  for (auto& [n, m] : models_)
    if (m->driver == "uio_pci_generic") return true;
  return false;
}

void Kernel::uio_attach(Model& m, bool on) {
  m.dev->dma_map().clear();
  if (!on) {
    command_bits(*m.dev, 0, PciConfig::kCmdMemory | PciConfig::kCmdBusMaster);
    return;
  }
  command_bits(*m.dev, PciConfig::kCmdMemory, 0);
  // Every physical page reported so far, in runs.
  auto it = phys_pages_.begin();
  while (it != phys_pages_.end()) {
    uint64_t va = it->first, pa = it->second, len = kPage;
    auto next = std::next(it);
    while (next != phys_pages_.end() && next->first == va + len && next->second == pa + len) {
      len += kPage;
      ++next;
    }
    (void)m.dev->dma_map().map(pa, reinterpret_cast<void*>(va), len, Iommu::kRead | Iommu::kWrite);
    it = next;
  }
}

ssize_t Kernel::pagemap_read(void* buf, size_t count, off_t offset) {
  if (!buf) return -EFAULT;
  if (count % 8 != 0 || offset % 8 != 0 || offset < 0) return -EINVAL;
  const uint64_t first = static_cast<uint64_t>(offset) / 8 * kPage;
  const size_t pages = count / 8;
  std::vector<uint64_t> out(pages, 0);
  std::vector<unsigned char> vec(1);
  uint64_t run_va = 0, run_pa = 0, run_len = 0;
  auto flush = [&] {
    if (run_len == 0) return;
    for (auto& [n, m] : models_)
      if (m->driver == "uio_pci_generic")
        (void)m->dev->dma_map().map(run_pa, reinterpret_cast<void*>(run_va), run_len,
                                    Iommu::kRead | Iommu::kWrite);
    run_len = 0;
  };
  for (size_t i = 0; i < pages; ++i) {
    const uint64_t va = first + i * kPage;
    if (::mincore(reinterpret_cast<void*>(va), kPage, vec.data()) != 0 || !(vec[0] & 1)) {
      flush();
      continue;  // not mapped or not resident: not present
    }
    const uint64_t chunk = va & ~(kChunk - 1);
    auto [c, fresh] = phys_chunks_.try_emplace(chunk, 0);
    if (fresh) {
      if (next_phys_top_ == 0) next_phys_top_ = kPhysTop;
      next_phys_top_ -= kChunk;
      c->second = next_phys_top_;
    }
    const uint64_t pa = c->second + (va - chunk);
    out[i] = platform::uapi::kPagemapPresent | (pa / kPage);
    auto [pg, added] = phys_pages_.try_emplace(va, pa);
    if (!added) {
      flush();  // already reachable
      continue;
    }
    if (run_len != 0 && run_va + run_len == va && run_pa + run_len == pa) {
      run_len += kPage;
    } else {
      flush();
      run_va = va;
      run_pa = pa;
      run_len = kPage;
    }
    if ((va + kPage) % kChunk == 0) flush();
  }
  flush();
  std::memcpy(buf, out.data(), count);
  return static_cast<ssize_t>(count);
}

size_t Kernel::descriptors() const {
  std::lock_guard lk(mu_);
  return fds_.size();
}

void Kernel::set_huge_pages(size_t n) {
  std::lock_guard lk(mu_);
  huge_total_ = n;
}

size_t Kernel::huge_pages_free() const {
  std::lock_guard lk(mu_);
  return huge_total_ > huge_used_ ? huge_total_ - huge_used_ : 0;
}

void* Kernel::huge_mmap(size_t length) {
  const size_t n = (length + kChunk - 1) / kChunk;
  if (length == 0 || huge_used_ + n > huge_total_) {
    errno = ENOMEM;
    return MAP_FAILED;
  }
  // 2 MiB aligned, as a hugetlb mapping is: over-map, trim both ends.
  const size_t len = n * kChunk;
  void* raw =
      ::mmap(nullptr, len + kChunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return MAP_FAILED;
  const auto r = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t start = (r + kChunk - 1) & ~(kChunk - 1);
  if (start > r) ::munmap(raw, start - r);
  if (start + len < r + len + kChunk)
    ::munmap(reinterpret_cast<void*>(start + len), r + kChunk - start);
  huge_used_ += n;
  huge_maps_[start] = len;
  return reinterpret_cast<void*>(start);
}

bool Kernel::huge_munmap(void* addr, size_t length) {
  auto it = huge_maps_.find(reinterpret_cast<uintptr_t>(addr));
  if (it == huge_maps_.end()) return false;
  (void)length;  // hugetlb unmaps whole pages: the mapping goes
  ::munmap(addr, it->second);
  // The pages' physical addresses are no longer the process's.
  const uint64_t s = it->first, e = it->first + it->second;
  for (auto p = phys_pages_.lower_bound(s); p != phys_pages_.end() && p->first < e;)
    p = phys_pages_.erase(p);
  for (auto& [n, m] : models_)
    if (m->driver == "uio_pci_generic") {
      for (const DmaMapping& d : m->dev->dma_map().mappings()) {
        const auto va = reinterpret_cast<uintptr_t>(d.vaddr);
        if (va >= s && va < e) {
          uint64_t ignored = 0;
          (void)m->dev->dma_map().unmap(d.iova, d.size, &ignored);
        }
      }
    }
  huge_used_ -= it->second / kChunk;
  huge_maps_.erase(it);
  return true;
}

}  // namespace kbv::sim
