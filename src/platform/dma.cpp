// SPDX-License-Identifier: BSD-3-Clause
// DMA memory, application-buffer registration and the firmware page pool
// (dma.hpp).
#include "platform/dma.hpp"

#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.hpp"

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)
#endif

namespace kbv::platform {
namespace {

constexpr const char* kComp = "dma";

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

class MmapHostMemory final : public HostMemory {
 public:
  void* alloc(size_t size, size_t page_size, int numa_node) override {
    if (size == 0 || size % page_size != 0) {
      errno = EINVAL;
      return nullptr;
    }
    int flags = MAP_PRIVATE | MAP_ANONYMOUS;
    if (page_size == kPageSize2M) flags |= MAP_HUGETLB | MAP_HUGE_2MB;
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    // Place the pages before they are first touched. MPOL_PREFERRED: fall
    // back to other nodes rather than fail when the node is full.
    if (numa_node >= 0 && numa_available() >= 0 && numa_node <= numa_max_node()) {
      unsigned long mask[16] = {};
      const unsigned bits = sizeof(mask) * 8;
      if (static_cast<unsigned>(numa_node) < bits) {
        mask[numa_node / (8 * sizeof(unsigned long))] |=
            1ul << (numa_node % (8 * sizeof(unsigned long)));
        if (::mbind(p, size, MPOL_PREFERRED, mask, bits, 0) != 0)
          log::debug(kComp, "mbind to node {} failed: {}", numa_node, std::strerror(errno));
      }
    }
    if (::madvise(p, size, MADV_DONTFORK) != 0)
      log::debug(kComp, "madvise(MADV_DONTFORK) failed: {}", std::strerror(errno));
    // Touching every page faults it in; a hugetlb page that cannot be
    // supplied at fault time would SIGBUS, so MAP_HUGETLB relies on the
    // reservation made by mmap (it fails with ENOMEM up front instead).
    std::memset(p, 0, size);
    return p;
  }
  void free(void* p, size_t size) override {
    if (p != nullptr && ::munmap(p, size) != 0)
      log::warn(kComp, "munmap({}, {:#x}) failed: {}", p, size, std::strerror(errno));
  }
};

class SysHostMemory final : public HostMemory {
 public:
  explicit SysHostMemory(Sys& sys) : sys_(sys) {}
  void* alloc(size_t size, size_t page_size, int /*numa_node*/) override {
    if (size == 0 || size % page_size != 0) {
      errno = EINVAL;
      return nullptr;
    }
    int flags = MAP_PRIVATE | MAP_ANONYMOUS;
    if (page_size == kPageSize2M) flags |= MAP_HUGETLB | MAP_HUGE_2MB;
    void* p = sys_.mmap(nullptr, size, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    std::memset(p, 0, size);  // faults the pages in (pagemap reports them present)
    return p;
  }
  void free(void* p, size_t size) override {
    if (p != nullptr && sys_.munmap(p, size) != 0)
      log::warn(kComp, "munmap({}, {:#x}) failed: {}", p, size, std::strerror(errno));
  }

 private:
  Sys& sys_;
};

}  // namespace

HostMemory& default_host_memory() {
  static MmapHostMemory m;
  return m;
}

std::unique_ptr<HostMemory> sys_host_memory(Sys& sys) {
  return std::make_unique<SysHostMemory>(sys);
}

// ---- handles ---------------------------------------------------------------------

DmaBuffer& DmaBuffer::operator=(DmaBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    ctx_ = std::exchange(o.ctx_, nullptr);
    va_ = std::exchange(o.va_, nullptr);
    iova_ = std::exchange(o.iova_, 0);
    size_ = std::exchange(o.size_, 0);
    page_size_ = std::exchange(o.page_size_, 0);
    in_slab_ = std::exchange(o.in_slab_, false);
  }
  return *this;
}

void DmaBuffer::reset() {
  if (ctx_ != nullptr) ctx_->release(*this);
  ctx_ = nullptr;
  va_ = nullptr;
  iova_ = 0;
  size_ = 0;
  page_size_ = 0;
  in_slab_ = false;
}

DmaRegistration& DmaRegistration::operator=(DmaRegistration&& o) noexcept {
  if (this != &o) {
    reset();
    ctx_ = std::exchange(o.ctx_, nullptr);
    addr_ = std::exchange(o.addr_, nullptr);
    length_ = std::exchange(o.length_, 0);
    iova_base_ = std::exchange(o.iova_base_, 0);
    offset_ = std::exchange(o.offset_, 0);
    mapped_size_ = std::exchange(o.mapped_size_, 0);
    pages_ = std::exchange(o.pages_, {});
  }
  return *this;
}

void DmaRegistration::reset() {
  if (ctx_ != nullptr) ctx_->release(*this);
  ctx_ = nullptr;
  addr_ = nullptr;
  length_ = 0;
  iova_base_ = 0;
  offset_ = 0;
  mapped_size_ = 0;
  pages_.clear();
}

// ---- DmaContext ----------------------------------------------------------------------

DmaContext::DmaContext(DmaMapper& mapper, DmaOptions opts)
    : mapper_(mapper),
      opts_(opts),
      host_(opts.host ? opts.host : &default_host_memory()),
      iova_(mapper.iova_page_size()) {}

Result<std::unique_ptr<DmaContext>> DmaContext::create(DmaMapper& mapper, DmaOptions opts) {
  std::unique_ptr<DmaContext> ctx(new DmaContext(mapper, opts));
  if (mapper.addresses_are_physical()) {
    // No IOMMU: physically contiguous memory comes from huge pages only.
    ctx->physical_ = true;
    std::lock_guard<std::mutex> lock(ctx->mu_);
    if (!opts.allow_huge_pages) {
      log::error(kComp, "DMA without an IOMMU needs 2 MiB huge pages, and they are not allowed");
      return KBV_ERR_NO_MEMORY;
    }
    if (Status s = ctx->add_slab(); !s) return s;
    return ctx;
  }
  for (const IovaRange& r : mapper.iova_ranges()) {
    if (Status s = ctx->iova_.add_range(r); !s) {
      log::error(kComp, "IOVA range [{:#x}, {:#x}] rejected: {}", r.start, r.end, s.to_string());
      return s;
    }
  }
  if (ctx->iova_.free_bytes() == 0) {
    log::error(kComp, "no usable IOVA space");
    return KBV_ERR_NO_RESOURCES;
  }
  return ctx;
}

DmaContext::~DmaContext() {
  if (live_buffers_ != 0 || live_regs_ != 0)
    log::error(kComp, "DmaContext destroyed with {} buffers and {} registrations alive",
               live_buffers_, live_regs_);
  for (auto& [va, slab] : slabs_) {
    if (Status s = mapper_.dma_unmap(slab.pa, kPageSize2M); !s)
      log::error(kComp, "unpin of slab {} failed ({}); leaking it", slab.va, s.to_string());
    else
      host_->free(slab.va, kPageSize2M);
  }
}

// ---- no IOMMU: physically contiguous memory from huge pages ------------------------

Result<uint64_t> DmaContext::contiguous_address(void* va, size_t bytes) {
  std::vector<uint64_t> pages;
  if (Status s = mapper_.physical_pages(va, bytes, pages); !s) return s;
  for (size_t i = 1; i < pages.size(); ++i)
    if (pages[i] != pages[0] + i * kPageSize4K) return KBV_ERR_NO_MEMORY;
  return pages.empty() ? Result<uint64_t>(KBV_ERR_INVALID_ARGUMENT) : Result<uint64_t>(pages[0]);
}

Status DmaContext::add_slab() {
  void* va = host_->alloc(kPageSize2M, kPageSize2M, opts_.numa_node);
  if (va == nullptr) {
    log::error(kComp,
               "no 2 MiB huge page for DMA memory ({}): a device without an IOMMU needs "
               "physically contiguous memory (reserve some: echo N > "
               "/proc/sys/vm/nr_hugepages)",
               std::strerror(errno));
    return KBV_ERR_NO_MEMORY;
  }
  Result<uint64_t> pa = contiguous_address(va, kPageSize2M);
  if (!pa) {
    log::error(kComp, "huge page at {}: no physical address ({})", va, pa.status().to_string());
    host_->free(va, kPageSize2M);
    return pa.status() == KBV_ERR_NO_MEMORY ? Status(KBV_ERR_IO) : pa.status();
  }
  if (Status s = mapper_.dma_map(va, *pa, kPageSize2M, kDmaReadWrite); !s) {
    host_->free(va, kPageSize2M);
    return s;
  }
  const auto start = reinterpret_cast<uintptr_t>(va);
  if (Status s = slab_space_.add_range({start, start + kPageSize2M - 1}); !s) {
    (void)mapper_.dma_unmap(*pa, kPageSize2M);
    host_->free(va, kPageSize2M);
    return s;
  }
  slabs_.emplace(start, Slab{va, *pa});
  log::debug(kComp, "DMA slab va {} pa {:#x}", va, *pa);
  return Status::ok();
}

Result<DmaBuffer> DmaContext::alloc_physical(size_t size, uint64_t iova_align) {
  DmaBuffer b;
  const size_t bytes = round_up(size, kPageSize4K);
  if (bytes <= kPageSize2M && iova_align <= kPageSize2M) {
    Result<uint64_t> at = slab_space_.alloc(bytes, iova_align);
    if (!at) {
      if (Status s = add_slab(); !s) return s;
      at = slab_space_.alloc(bytes, iova_align);
      if (!at) return at.status();
    }
    auto it = std::prev(slabs_.upper_bound(static_cast<uintptr_t>(*at)));
    b.va_ = reinterpret_cast<void*>(*at);
    b.iova_ = it->second.pa + (*at - it->first);
    b.size_ = bytes;
    b.in_slab_ = true;
    std::memset(b.va_, 0, bytes);
  } else {
    const size_t hbytes = round_up(size, kPageSize2M);
    void* va = host_->alloc(hbytes, kPageSize2M, opts_.numa_node);
    if (va == nullptr) {
      log::error(kComp, "no {:#x} bytes of huge pages for DMA memory: {}", hbytes,
                 std::strerror(errno));
      return KBV_ERR_NO_MEMORY;
    }
    Result<uint64_t> pa = contiguous_address(va, hbytes);
    if (pa && *pa % iova_align != 0) pa = Status(KBV_ERR_NO_MEMORY);
    if (!pa) {
      host_->free(va, hbytes);
      log::error(kComp,
                 "{:#x} bytes of DMA memory are not physically contiguous (a device without "
                 "an IOMMU needs them to be): {}",
                 hbytes, pa.status().to_string());
      return pa.status();
    }
    if (Status s = mapper_.dma_map(va, *pa, hbytes, kDmaReadWrite); !s) {
      host_->free(va, hbytes);
      return s;
    }
    b.va_ = va;
    b.iova_ = *pa;
    b.size_ = hbytes;
  }
  b.ctx_ = this;
  b.page_size_ = kPageSize2M;
  ++live_buffers_;
  return b;
}

Result<DmaBuffer> DmaContext::alloc(size_t size, PagePolicy policy, uint64_t iova_align) {
  if (size == 0 || iova_align < kPageSize4K || (iova_align & (iova_align - 1)) != 0)
    return KBV_ERR_INVALID_ARGUMENT;
  if (size > (size_t{1} << 46)) return KBV_ERR_NO_MEMORY;
  std::lock_guard<std::mutex> lock(mu_);
  if (physical_) return alloc_physical(size, iova_align);

  bool want_huge = false;
  if (opts_.allow_huge_pages && huge_ok_) {
    want_huge = policy == PagePolicy::kHuge || (policy == PagePolicy::kAuto && size >= kPageSize2M);
  }
  size_t page = kPageSize4K;
  size_t bytes = round_up(size, std::max<size_t>(kPageSize4K, mapper_.iova_page_size()));
  void* va = nullptr;
  if (want_huge) {
    const size_t hbytes = round_up(size, kPageSize2M);
    va = host_->alloc(hbytes, kPageSize2M, opts_.numa_node);
    if (va != nullptr) {
      page = kPageSize2M;
      bytes = hbytes;
    } else {
      huge_ok_ = false;
      log::info(kComp,
                "2 MiB huge pages unavailable ({}); falling back to 4 KiB pages "
                "(reserve some: echo N > /proc/sys/vm/nr_hugepages)",
                std::strerror(errno));
    }
  }
  if (va == nullptr) {
    va = host_->alloc(bytes, kPageSize4K, opts_.numa_node);
    if (va == nullptr) {
      log::error(kComp, "cannot allocate {:#x} bytes of DMA memory: {}", bytes,
                 std::strerror(errno));
      return KBV_ERR_NO_MEMORY;
    }
  }
  Result<uint64_t> iova = iova_.alloc(bytes, std::max<uint64_t>(iova_align, page));
  if (!iova) {
    host_->free(va, bytes);
    log::error(kComp, "no IOVA space for {:#x} bytes", bytes);
    return iova.status();
  }
  if (Status s = mapper_.dma_map(va, *iova, bytes, kDmaReadWrite); !s) {
    (void)iova_.free(*iova);
    host_->free(va, bytes);
    return s;
  }
  DmaBuffer b;
  b.ctx_ = this;
  b.va_ = va;
  b.iova_ = *iova;
  b.size_ = bytes;
  b.page_size_ = page;
  ++live_buffers_;
  log::trace(kComp, "DMA buffer va {} iova {:#x} size {:#x} page {:#x}", va, *iova, bytes, page);
  return b;
}

void DmaContext::release(DmaBuffer& b) {
  std::lock_guard<std::mutex> lock(mu_);
  if (b.in_slab_) {
    (void)slab_space_.free(reinterpret_cast<uintptr_t>(b.va_));
    --live_buffers_;
    return;
  }
  if (Status s = mapper_.dma_unmap(b.iova_, b.size_); !s) {
    // The device may still reach the pages: keep the memory (leak it) rather
    // than hand mapped pages back to the system.
    log::error(kComp, "unmap of iova {:#x} failed ({}); leaking its memory", b.iova_,
               s.to_string());
  } else {
    host_->free(b.va_, b.size_);
    (void)iova_.free(b.iova_);
  }
  --live_buffers_;
}

Result<DmaRegistration> DmaContext::register_memory(void* addr, size_t length, uint32_t access) {
  if (addr == nullptr || length == 0 || (access & kDmaReadWrite) == 0)
    return KBV_ERR_INVALID_ARGUMENT;
  const uint64_t page = std::max<uint64_t>(kPageSize4K, mapper_.iova_page_size());
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  if (length > UINTPTR_MAX - a - page) return KBV_ERR_INVALID_ARGUMENT;
  const uintptr_t start = a / page * page;
  const uintptr_t end = round_up(a + length, page);
  const size_t span = end - start;
  std::lock_guard<std::mutex> lock(mu_);
  DmaRegistration r;
  if (physical_) {
    // No IOMMU: the pages' own physical addresses (pinned by dma_map).
    if (Status s = mapper_.physical_pages(reinterpret_cast<void*>(start), span, r.pages_); !s) {
      log::error(kComp, "no physical addresses for {:#x} bytes at {:#x}: {}", span, start,
                 s.to_string());
      return s;
    }
    if (Status s = mapper_.dma_map(reinterpret_cast<void*>(start), r.pages_[0], span, access); !s)
      return s;
    r.ctx_ = this;
    r.addr_ = addr;
    r.length_ = length;
    r.iova_base_ = r.pages_[0];
    r.offset_ = a - start;
    r.mapped_size_ = span;
    ++live_regs_;
    return r;
  }
  Result<uint64_t> iova = iova_.alloc(span, page);
  if (!iova) {
    log::error(kComp, "no IOVA space to register {:#x} bytes", span);
    return iova.status();
  }
  if (Status s = mapper_.dma_map(reinterpret_cast<void*>(start), *iova, span, access); !s) {
    (void)iova_.free(*iova);
    return s;
  }
  r.ctx_ = this;
  r.addr_ = addr;
  r.length_ = length;
  r.iova_base_ = *iova;
  r.offset_ = a - start;
  r.mapped_size_ = span;
  ++live_regs_;
  return r;
}

void DmaContext::release(DmaRegistration& r) {
  std::lock_guard<std::mutex> lock(mu_);
  if (physical_) {
    if (Status s = mapper_.dma_unmap(r.iova_base_, r.mapped_size_); !s)
      log::error(kComp, "unpin of registration at {:#x} failed ({})", r.iova_base_, s.to_string());
    --live_regs_;
    return;
  }
  if (Status s = mapper_.dma_unmap(r.iova_base_, r.mapped_size_); !s) {
    log::error(kComp, "unmap of registration at iova {:#x} failed ({}); IOVA not reused",
               r.iova_base_, s.to_string());
  } else {
    (void)iova_.free(r.iova_base_);
  }
  --live_regs_;
}

size_t DmaContext::live_buffers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_buffers_;
}
size_t DmaContext::live_registrations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_regs_;
}
uint64_t DmaContext::iova_free_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return iova_.free_bytes();
}
bool DmaContext::huge_pages_working() const {
  std::lock_guard<std::mutex> lock(mu_);
  return huge_ok_;
}

// ---- PagePool -------------------------------------------------------------------------

PagePool::~PagePool() {
  if (in_use_ != 0)
    log::warn(kComp, "page pool destroyed with {} pages still given to the device", in_use_);
}

Status PagePool::alloc_pages(size_t n, std::vector<uint64_t>& out) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t free_now = blocks_.size() * kPagesPerBlock - in_use_;
  // Grow first so the call is all-or-nothing.
  std::vector<std::unique_ptr<Block>> fresh;
  while (free_now < n) {
    Result<DmaBuffer> b = ctx_.alloc(kBlockSize, PagePolicy::kAuto, kBlockSize);
    if (!b) return b.status();  // `fresh` blocks are released on return
    auto blk = std::make_unique<Block>();
    blk->buf = std::move(*b);
    fresh.push_back(std::move(blk));
    free_now += kPagesPerBlock;
  }
  for (auto& blk : fresh) {
    const uint64_t iova = blk->buf.iova();
    blocks_.emplace(iova, std::move(blk));
  }
  const size_t first = out.size();
  out.reserve(first + n);
  for (auto& [iova, blk] : blocks_) {
    for (size_t i = 0; i < kPagesPerBlock && out.size() - first < n; ++i) {
      if (blk->used.test(i)) continue;
      blk->used.set(i);
      out.push_back(iova + i * kPageSize);
    }
    if (out.size() - first == n) break;
  }
  in_use_ += n;
  return Status::ok();
}

Status PagePool::free_pages(std::span<const uint64_t> iovas) {
  std::lock_guard<std::mutex> lock(mu_);
  Status st = Status::ok();
  for (const uint64_t iova : iovas) {
    auto it = blocks_.upper_bound(iova);
    Block* blk = nullptr;
    if (it != blocks_.begin()) {
      --it;
      if (iova - it->first < kBlockSize) blk = it->second.get();
    }
    const size_t idx = blk ? (iova - it->first) / kPageSize : 0;
    if (blk == nullptr || iova % kPageSize != 0 || !blk->used.test(idx)) {
      log::error(kComp, "page {:#x} returned to the pool is not an allocated pool page", iova);
      st = KBV_ERR_INVALID_ARGUMENT;
      continue;
    }
    std::memset(static_cast<unsigned char*>(blk->buf.va()) + idx * kPageSize, 0, kPageSize);
    blk->used.reset(idx);
    --in_use_;
    if (blk->used.none()) blocks_.erase(it);
  }
  return st;
}

void* PagePool::page_va(uint64_t iova) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = blocks_.upper_bound(iova);
  if (it == blocks_.begin()) return nullptr;
  --it;
  if (iova - it->first >= kBlockSize || iova % kPageSize != 0) return nullptr;
  const size_t idx = (iova - it->first) / kPageSize;
  if (!it->second->used.test(idx)) return nullptr;
  return static_cast<unsigned char*>(it->second->buf.va()) + idx * kPageSize;
}

size_t PagePool::pages_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

size_t PagePool::block_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return blocks_.size();
}

}  // namespace kbv::platform
