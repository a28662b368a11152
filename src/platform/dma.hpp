// SPDX-License-Identifier: BSD-3-Clause
//
// DMA memory for the mlx5 driver and registration of application buffers.
//
//   DmaContext       per device: host-memory policy (NUMA node, huge pages),
//                    the IovaAllocator over the mapper's usable ranges, and
//                    the DmaMapper (VfioDevice) that programs the IOMMU.
//   DmaBuffer        RAII: driver-owned memory (command queue, mailboxes,
//                    EQ/CQ/WQ rings, doorbell records) — zeroed, NUMA-local,
//                    mapped at an allocated IOVA; unmapped and freed on
//                    destruction. {va, iova, size}.
//   DmaRegistration  RAII: an application buffer made reachable by the device
//                    (memory regions). The page-aligned span around it is
//                    mapped at its own IOVA; iova() is the IOVA of the first
//                    byte of the buffer itself.
//   PagePool         4 KiB firmware pages for MANAGE_PAGES (docs/PRM.md "Bring-up
//                    order" steps 5/8 and page-request EQEs): hands out page
//                    IOVAs, takes them back by IOVA.
//
// Host memory (default_host_memory()): anonymous mmap, 4 KiB pages or 2 MiB
// huge pages (MAP_HUGETLB | MAP_HUGE_2MB, needs reserved hugetlbfs pages:
// /proc/sys/vm/nr_hugepages), bound with mbind(MPOL_PREFERRED) to the device's
// NUMA node (sysfs numa_node; libnuma numaif.h) before the pages are first
// touched, then zeroed (which faults them in on that node), and marked
// MADV_DONTFORK so a fork() never turns DMA pages copy-on-write (the device
// would keep writing the parent's old pages). When huge pages cannot be had
// the allocation falls back to 4 KiB pages, logged at info (once per context).
//
// Pinning: VFIO_IOMMU_MAP_DMA pins the pages in the kernel for as long as
// they are mapped (Documentation/driver-api/vfio.rst), so neither DMA buffers
// nor registrations need mlock. Registering the same pages several times
// works: each registration is a separate mapping at its own IOVA (type1 pins
// a page once per mapping).
//
// Without an IOMMU (UIO: mapper.addresses_are_physical()) the device
// reaches memory at its physical address, so a buffer must be physically
// contiguous: DmaContext then carves every buffer of up to 2 MiB out of
// 2 MiB huge pages ("slabs", pinned while the context lives, device address
// = the slab's physical address + offset, from the mapper's pagemap
// answers), a larger buffer takes huge pages of its own and must come out
// physically contiguous (else KBV_ERR_NO_MEMORY), and a registration
// records the physical address of each of its pages (page_iova(i): memory
// keys take one address per page). create() fails with KBV_ERR_NO_MEMORY
// and a message when no 2 MiB huge page can be had (as DPDK's
// --iova-mode=pa needs hugepages). Slabs go back to the system with the
// context.
//
// Destruction order: every DmaBuffer / DmaRegistration / PagePool before its
// DmaContext, and the DmaContext before the VfioDevice (the container's
// mappings vanish with it).
//
// Errors: size 0 / bad alignment / null address -> KBV_ERR_INVALID_ARGUMENT;
// host memory exhausted -> KBV_ERR_NO_MEMORY; IOVA space exhausted ->
// KBV_ERR_NO_RESOURCES; IOMMU mapping failures as the mapper reports them.
// A failed call leaves nothing allocated or mapped.
//
// Threading: DmaContext and PagePool are thread-safe (an internal mutex;
// control path only). DmaBuffer/DmaRegistration are move-only handles; one
// owner at a time. None of this is used on the data fast path.
#pragma once

#include <kbv/status.hpp>

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "platform/dma_mapper.hpp"
#include "platform/iova.hpp"
#include "platform/sys.hpp"

namespace kbv::platform {

inline constexpr size_t kPageSize4K = 4096;
inline constexpr size_t kPageSize2M = 2u << 20;

// Anonymous host memory for DMA. alloc(): page-aligned, zero-filled memory of
// `size` bytes (a multiple of page_size, 4 KiB or 2 MiB), preferring
// `numa_node` (-1: no preference); nullptr with errno on failure (2 MiB pages
// unavailable: ENOMEM). free() takes exactly what alloc() returned.
class HostMemory {
 public:
  virtual ~HostMemory() = default;
  virtual void* alloc(size_t size, size_t page_size, int numa_node) = 0;
  virtual void free(void* p, size_t size) = 0;
};
// mmap/mbind/madvise implementation; lives for the whole process.
HostMemory& default_host_memory();
// The same through a Sys (sys.hpp: mmap/munmap with MAP_HUGETLB), no NUMA
// binding: where the huge pages of a UIO device come from, so that the
// model's kernel answers them from its own pool. Lives as long as `sys`.
std::unique_ptr<HostMemory> sys_host_memory(Sys& sys);

enum class PagePolicy {
  kAuto,   // 2 MiB pages when size >= 2 MiB and huge pages are available
  kSmall,  // always 4 KiB pages
  kHuge,   // 2 MiB pages (size rounded up to 2 MiB) when available
};

struct DmaOptions {
  int numa_node = -1;            // from PciDeviceInfo::numa_node
  bool allow_huge_pages = true;  // false: every policy behaves as kSmall
  HostMemory* host = nullptr;    // nullptr: default_host_memory()
};

class DmaContext;

class DmaBuffer {
 public:
  DmaBuffer() = default;
  ~DmaBuffer() { reset(); }
  DmaBuffer(DmaBuffer&& o) noexcept { *this = std::move(o); }
  DmaBuffer& operator=(DmaBuffer&& o) noexcept;
  DmaBuffer(const DmaBuffer&) = delete;
  DmaBuffer& operator=(const DmaBuffer&) = delete;

  void* va() const { return va_; }
  uint64_t iova() const { return iova_; }
  size_t size() const { return size_; }            // usable bytes (>= requested)
  size_t page_size() const { return page_size_; }  // 4096 or 2 MiB backing
  bool valid() const { return va_ != nullptr; }
  template <class T>
  T* as() const {
    return static_cast<T*>(va_);
  }
  // Unmaps, frees the IOVA and the memory; leaves the handle empty.
  void reset();

 private:
  friend class DmaContext;
  DmaContext* ctx_ = nullptr;
  void* va_ = nullptr;
  uint64_t iova_ = 0;
  size_t size_ = 0;
  size_t page_size_ = 0;
  bool in_slab_ = false;  // carved from a huge-page slab (no IOMMU)
};

class DmaRegistration {
 public:
  DmaRegistration() = default;
  ~DmaRegistration() { reset(); }
  DmaRegistration(DmaRegistration&& o) noexcept { *this = std::move(o); }
  DmaRegistration& operator=(DmaRegistration&& o) noexcept;
  DmaRegistration(const DmaRegistration&) = delete;
  DmaRegistration& operator=(const DmaRegistration&) = delete;

  void* addr() const { return addr_; }                    // the registered buffer
  size_t length() const { return length_; }               // its length in bytes
  uint64_t iova() const { return iova_base_ + offset_; }  // IOVA of addr()
  uint64_t mapped_iova() const { return iova_base_; }     // page-aligned span
  size_t mapped_size() const { return mapped_size_; }
  // Device address of 4 KiB page i of the span: mapped_iova() + i * 4096
  // behind an IOMMU, the page's own physical address without one.
  uint64_t page_iova(size_t i) const { return pages_.empty() ? iova_base_ + i * 4096 : pages_[i]; }
  bool valid() const { return ctx_ != nullptr; }
  void reset();

 private:
  friend class DmaContext;
  DmaContext* ctx_ = nullptr;
  void* addr_ = nullptr;
  size_t length_ = 0;
  uint64_t iova_base_ = 0;
  size_t offset_ = 0;
  size_t mapped_size_ = 0;
  std::vector<uint64_t> pages_;  // physical page addresses (no IOMMU)
};

class DmaContext {
 public:
  // KBV_ERR_NO_RESOURCES when the mapper reports no usable IOVA range.
  static Result<std::unique_ptr<DmaContext>> create(DmaMapper& mapper, DmaOptions opts = {});
  ~DmaContext();
  DmaContext(const DmaContext&) = delete;
  DmaContext& operator=(const DmaContext&) = delete;

  // Zeroed DMA memory of at least `size` bytes, mapped read+write for the
  // device. The IOVA is aligned to max(iova_align, page size); iova_align is
  // a power of two >= 4096.
  Result<DmaBuffer> alloc(size_t size, PagePolicy policy = PagePolicy::kAuto,
                          uint64_t iova_align = kPageSize4K);

  // Makes the application buffer [addr, addr+length) reachable by the device
  // with `access` (DmaAccess bits). The pages must be mapped in this process
  // (the kernel pins them; unmapped or read-only memory mapped for device
  // writes fails with the kernel's errno, e.g. KBV_ERR_IOMMU_FAULT).
  Result<DmaRegistration> register_memory(void* addr, size_t length,
                                          uint32_t access = kDmaReadWrite);

  int numa_node() const { return opts_.numa_node; }
  DmaMapper& mapper() const { return mapper_; }
  // Counters (diagnostics and tests).
  size_t live_buffers() const;
  size_t live_registrations() const;
  uint64_t iova_free_bytes() const;
  // False once a huge-page allocation failed and fell back to 4 KiB pages.
  bool huge_pages_working() const;

 private:
  friend class DmaBuffer;
  friend class DmaRegistration;
  DmaContext(DmaMapper& mapper, DmaOptions opts);
  void release(DmaBuffer& b);
  void release(DmaRegistration& r);
  // No IOMMU (see above); mu_ held.
  Status add_slab();
  Result<DmaBuffer> alloc_physical(size_t size, uint64_t iova_align);
  Result<uint64_t> contiguous_address(void* va, size_t bytes);
  struct Slab {
    void* va;
    uint64_t pa;
  };

  DmaMapper& mapper_;
  DmaOptions opts_;
  HostMemory* host_;
  mutable std::mutex mu_;
  IovaAllocator iova_;
  size_t live_buffers_ = 0;
  size_t live_regs_ = 0;
  bool huge_ok_ = true;
  bool physical_ = false;
  IovaAllocator slab_space_;         // free VA inside the slabs
  std::map<uintptr_t, Slab> slabs_;  // by VA
};

// 4 KiB device pages carved from 2 MiB DMA blocks (huge-page backed where
// available). Pages handed out are zeroed; pages taken back are zeroed again.
// A block is unmapped and freed as soon as all its pages are back.
class PagePool {
 public:
  static constexpr size_t kPageSize = kPageSize4K;  // mlx5 adapter page (PRM MANAGE_PAGES)
  static constexpr size_t kBlockSize = kPageSize2M;
  static constexpr size_t kPagesPerBlock = kBlockSize / kPageSize;

  explicit PagePool(DmaContext& ctx) : ctx_(ctx) {}
  ~PagePool();
  PagePool(const PagePool&) = delete;
  PagePool& operator=(const PagePool&) = delete;

  // Appends the IOVAs of `n` pages to `out` (all or nothing).
  Status alloc_pages(size_t n, std::vector<uint64_t>& out);
  // Takes pages back by IOVA. An IOVA that is not a page of this pool or is
  // already free is logged and skipped, and the call returns
  // KBV_ERR_INVALID_ARGUMENT; every valid IOVA is still taken back.
  Status free_pages(std::span<const uint64_t> iovas);
  // Host address of an allocated page (nullptr if not allocated here).
  void* page_va(uint64_t iova) const;

  size_t pages_in_use() const;
  size_t block_count() const;

 private:
  struct Block {
    DmaBuffer buf;
    std::bitset<kPagesPerBlock> used;
  };
  mutable std::mutex mu_;
  DmaContext& ctx_;
  std::map<uint64_t, std::unique_ptr<Block>> blocks_;  // by block IOVA
  size_t in_use_ = 0;
};

}  // namespace kbv::platform
