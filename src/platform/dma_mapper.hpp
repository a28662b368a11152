// SPDX-License-Identifier: BSD-3-Clause
//
// DmaMapper: what DMA memory management (dma.hpp) needs from a platform
// backend — program the IOMMU so the device can reach host memory at an
// IOVA, and say which IOVAs are usable. VfioDevice implements it with
// VFIO_IOMMU_MAP_DMA / VFIO_IOMMU_UNMAP_DMA (linux/vfio.h, type1 IOMMU) or
// IOMMU_IOAS_MAP / UNMAP (iommufd). UioDevice has no IOMMU: the device
// reaches memory at its physical address (addresses_are_physical()), which
// the mapper reports page by page (physical_pages(), from
// /proc/self/pagemap); dma_map then only pins (mlock) what the device uses,
// at iova = the physical address of va.
//
// Units: bytes; va, iova and size are multiples of iova_page_size().
// Errors: the backend's, as kbv::Status (e.g. an IOVA outside the usable
// ranges -> KBV_ERR_INVALID_ARGUMENT, an overlapping mapping ->
// KBV_ERR_ALREADY_EXISTS, unmapped host memory -> KBV_ERR_IOMMU_FAULT).
//
// Threading: map/unmap may be called from any thread concurrently (the
// kernel serializes); the ranges are fixed once the backend is open.
#pragma once

#include <kbv/status.hpp>

#include <cstdint>
#include <vector>

#include "platform/iova.hpp"

namespace kbv::platform {

// Direction bits from the device's point of view (vfio_iommu_type1_dma_map
// flags VFIO_DMA_MAP_FLAG_READ / _WRITE have the same meaning).
enum DmaAccess : uint32_t {
  kDmaDeviceRead = 1u << 0,   // the device may read the memory
  kDmaDeviceWrite = 1u << 1,  // the device may write the memory
  kDmaReadWrite = kDmaDeviceRead | kDmaDeviceWrite,
};

class DmaMapper {
 public:
  virtual ~DmaMapper() = default;
  // Makes [va, va+size) reachable by the device at [iova, iova+size). On a
  // real IOMMU this also pins the pages until unmapped.
  virtual Status dma_map(void* va, uint64_t iova, uint64_t size, uint32_t access) = 0;
  // Removes the mapping created at `iova` with exactly this size.
  virtual Status dma_unmap(uint64_t iova, uint64_t size) = 0;
  // Usable IOVA ranges (inclusive), in address order.
  virtual std::vector<IovaRange> iova_ranges() const = 0;
  // Smallest IOMMU page size (bytes, power of two, >= 4096).
  virtual uint64_t iova_page_size() const = 0;

  // No IOMMU: device addresses are physical addresses, not IOVAs the caller
  // picks (DmaContext then asks physical_pages() instead of allocating).
  virtual bool addresses_are_physical() const { return false; }
  // Appends the device (physical) address of each 4 KiB page of
  // [va, va+size) (both 4 KiB aligned) to `out`. Pages must be resident.
  // KBV_ERR_NOT_SUPPORTED for an IOMMU backend.
  virtual Status physical_pages(const void* va, uint64_t size, std::vector<uint64_t>& out) {
    (void)va;
    (void)size;
    (void)out;
    return KBV_ERR_NOT_SUPPORTED;
  }
};

}  // namespace kbv::platform
