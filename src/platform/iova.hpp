// SPDX-License-Identifier: BSD-3-Clause
//
// IovaAllocator: hands out I/O virtual address ranges for VFIO DMA mappings
// from the ranges the IOMMU reports as usable (VFIO_IOMMU_GET_INFO capability
// VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE, linux/vfio.h struct vfio_iova_range:
// inclusive [start, end]). Any VFIO_IOMMU_MAP_DMA outside those ranges fails
// in the kernel, so every IOVA kbv maps comes from here.
//
// Shapes and units: bytes. Everything is in units of the granule (4 KiB, the
// mlx5 adapter page and the smallest IOMMU page on x86-64/aarch64 with 4 KiB
// kernels): range bounds are rounded inward to the granule, sizes up to it.
// Alignments are powers of two (below the granule they are met trivially);
// 4 KiB and 2 MiB are the ones kbv uses (firmware pages, queues;
// huge-page-backed buffers).
//
// IOVA 0 is never handed out: the first granule of the space is withheld, so
// a zero IOVA in a device structure is always a bug, never a valid address.
//
// Allocation is first-fit in address order over a free list kept coalesced;
// free() takes the IOVA alloc() returned (the allocator remembers the size)
// and allocates nothing (the allocation's map node moves to the free list).
// This is control-path code (object creation, MR registration): it allocates
// from the heap and is O(number of free extents).
//
// Errors: size 0, a non-power-of-two alignment, or freeing an
// IOVA that is not allocated -> KBV_ERR_INVALID_ARGUMENT; no free extent
// large enough -> KBV_ERR_NO_RESOURCES.
//
// Threading: not thread-safe; the owner (DmaContext) serializes.
#pragma once

#include <kbv/status.hpp>

#include <cstdint>
#include <map>
#include <vector>

namespace kbv::platform {

// One usable IOVA range, inclusive bounds as in linux/vfio.h vfio_iova_range.
struct IovaRange {
  uint64_t start = 0;
  uint64_t end = 0;  // inclusive
};

class IovaAllocator {
 public:
  static constexpr uint64_t kGranule = 4096;
  static constexpr uint64_t kHugeAlign = 2ull << 20;

  IovaAllocator() = default;
  // `granule`: power of two >= 4096 (the IOMMU's smallest page if larger).
  explicit IovaAllocator(uint64_t granule);

  // Adds a usable range (rounded inward to the granule; the first granule of
  // the address space is dropped). A range overlapping one already added is
  // KBV_ERR_ALREADY_EXISTS; a range with no whole granule left is ignored.
  Status add_range(IovaRange r);

  // A block of `size` bytes (rounded up to the granule) whose start is a
  // multiple of `align`.
  Result<uint64_t> alloc(uint64_t size, uint64_t align = kGranule);
  // Returns the block that alloc() returned at `iova`; coalesces neighbours.
  Status free(uint64_t iova);

  // Size of the allocated block at `iova`, 0 if none starts there.
  uint64_t allocated_size(uint64_t iova) const;
  uint64_t granule() const { return granule_; }
  uint64_t free_bytes() const;
  size_t free_extent_count() const { return free_.size(); }
  size_t allocation_count() const { return used_.size(); }
  // The usable ranges as added (after rounding), in address order.
  std::vector<IovaRange> ranges() const;

 private:
  void insert_free(uint64_t start, uint64_t len);
  void coalesce(std::map<uint64_t, uint64_t>::iterator it);  // with its neighbours in free_

  uint64_t granule_ = kGranule;
  std::map<uint64_t, uint64_t> ranges_;  // start -> length (usable space)
  std::map<uint64_t, uint64_t> free_;    // start -> length, coalesced
  std::map<uint64_t, uint64_t> used_;    // start -> length
};

}  // namespace kbv::platform
