// SPDX-License-Identifier: BSD-3-Clause
#include "hca/io/platform_io.hpp"

#include "common/log.hpp"

namespace kbv::hca {

namespace {
constexpr const char* kLog = "hca-io";
constexpr size_t kPage = platform::PagePool::kPageSize;
}  // namespace

PlatformDeviceIo::~PlatformDeviceIo() {
  if (!bufs_.empty() || pages_)
    log::warn(kLog, "{} DMA buffers and {} pages still allocated at close", bufs_.size(), pages_);
  bufs_.clear();  // DmaBuffer destructors unmap and free; the pool frees its blocks
}

Result<DmaBlock> PlatformDeviceIo::dma_alloc(size_t size, size_t align) {
  if (size == 0 || align == 0 || (align & (align - 1)) != 0)
    return Status{KBV_ERR_INVALID_ARGUMENT};
  if (align > kPage) return Status{KBV_ERR_NOT_SUPPORTED};
  if (size == kPage) {
    std::vector<uint64_t> iova;
    Status s = pool_.alloc_pages(1, iova);
    if (!s) return s;
    ++pages_;
    return DmaBlock{static_cast<std::byte*>(pool_.page_va(iova[0])), iova[0], kPage};
  }
  Result<platform::DmaBuffer> b = dev_.dma().alloc(size, platform::PagePolicy::kSmall, kPage);
  if (!b) return b.status();
  DmaBlock blk{static_cast<std::byte*>(b->va()), b->iova(), size};
  bufs_.emplace(blk.iova, std::move(*b));
  return blk;
}

void PlatformDeviceIo::dma_free(const DmaBlock& block) {
  auto it = bufs_.find(block.iova);
  if (it != bufs_.end()) {
    bufs_.erase(it);
    return;
  }
  if (pool_.page_va(block.iova) != nullptr) {
    const uint64_t iova = block.iova;
    (void)pool_.free_pages(std::span<const uint64_t>(&iova, 1));
    --pages_;
    return;
  }
  log::error(kLog, "dma_free of unknown block at iova {:#x}", block.iova);
}

Result<int> PlatformDeviceIo::msix_eventfd(uint32_t vector) {
  const int fd = dev_.backend().msix_eventfd(vector);
  if (fd < 0) return Status{KBV_ERR_NOT_SUPPORTED};
  return fd;
}

Status PlatformDeviceIo::enable_device(uint32_t msix_vectors) {
  Status s = dev_.backend().enable_bus_master();
  if (!s) {
    log::error(kLog, "cannot enable bus mastering: {}", s.to_string());
    return s;
  }
  const uint32_t avail = dev_.backend().msix_vector_count();
  const uint32_t n = std::min(msix_vectors, avail);
  if (n == 0) {
    log::info(kLog, "no MSI-X vectors; the driver polls");
    return Status::ok();
  }
  Status m = dev_.backend().enable_msix(n);
  if (!m) log::warn(kLog, "MSI-X not enabled ({}); the driver polls", m.to_string());
  return Status::ok();
}

void PlatformDeviceIo::disable_device() {
  Status m = dev_.backend().disable_msix();
  if (!m) log::warn(kLog, "disable MSI-X: {}", m.to_string());
  Status b = dev_.backend().disable_bus_master();
  if (!b) log::warn(kLog, "disable bus master: {}", b.to_string());
}

}  // namespace kbv::hca
