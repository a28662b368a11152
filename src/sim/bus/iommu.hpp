// SPDX-License-Identifier: BSD-3-Clause
//
// The model's IOMMU: the only way the HCA model reaches host memory.
//
// The emulated VFIO kernel fills it from VFIO_IOMMU_MAP_DMA / UNMAP_DMA
// (linux/vfio.h struct vfio_iommu_type1_dma_map/unmap): each mapping is an
// IOVA range -> host virtual address with read/write permission. Every DMA
// the model does (command queue entries, mailboxes, EQ/CQ/WQ buffers,
// doorbell records, payload) is translated here; an IOVA that is not mapped,
// or mapped without the needed permission, is an IOMMU fault: the access
// returns KBV_ERR_IOMMU_FAULT, the fault is counted and logged, and the model
// reports it as a device error (never a crash).
//
// Threading: map/unmap and DMA may run concurrently from any thread (the VFIO
// ioctl thread and the model's firmware/engine threads).
#pragma once

#include <kbv/status.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace kbv::sim {

class Iommu {
 public:
  virtual ~Iommu() = default;

  enum Perm : uint32_t { kRead = 1, kWrite = 2 };

  // VFIO_IOMMU_MAP_DMA: vaddr/iova/size page aligned (4 KiB), no overlap with
  // an existing mapping (else KBV_ERR_ALREADY_EXISTS), iova inside the
  // advertised IOVA ranges (else KBV_ERR_INVALID_ARGUMENT).
  virtual Status map(uint64_t iova, void* vaddr, uint64_t size, uint32_t perm) = 0;
  // VFIO_IOMMU_UNMAP_DMA: removes whole mappings inside [iova, iova+size);
  // returns the number of bytes unmapped in *unmapped.
  virtual Status unmap(uint64_t iova, uint64_t size, uint64_t* unmapped) = 0;

  // Device reads/writes of host memory. The range may span several mappings.
  // On a fault nothing is written and KBV_ERR_IOMMU_FAULT is returned.
  virtual Status dma_read(uint64_t iova, std::span<std::byte> dst) = 0;
  virtual Status dma_write(uint64_t iova, std::span<const std::byte> src) = 0;

  // Host pointer for [iova, iova+len) when it lies inside ONE mapping with
  // the needed permission (for rings the model polls in place), else nullptr
  // (and the fault is counted). Valid until that mapping is unmapped.
  virtual std::byte* translate(uint64_t iova, uint64_t len, uint32_t perm) = 0;

  // Faults seen since creation (diagnostics and tests).
  virtual uint64_t fault_count() const = 0;
};

}  // namespace kbv::sim
