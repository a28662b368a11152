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
#include <cstring>
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

// The copy every Iommu implementation does between host memory and the
// device's buffer (dma_copy_from_host: a device read, dma_copy_to_host: a
// device write), n bytes. A naturally aligned access of 1, 2, 4 or 8 bytes is
// one single-copy-atomic access, as one aligned PCIe MemRd/MemWr of that size
// reaches host memory whole; such loads are acquire and stores release, larger
// copies plain memcpy. The device's small accesses are exactly its handover
// words: the owner byte it writes last into a CQE / EQE / command entry (after
// the body, docs/PRM.md), the doorbell records and command status_own it reads
// before the WQEs / entry behind them. The driver's side of the same words
// (platform/mmio.hpp dma_load_owner / dma_store_owner / dbrec_store) pairs
// with them, so the PRM's ownership protocol is a release/acquire pair in the
// C++ memory model and ThreadSanitizer checks everything around it (on x86-64
// both are plain MOVs). Threading: the caller owns the range's ordering.
namespace detail {
template <class T>
bool dma_word(const std::byte* host, std::size_t n) {
  return n == sizeof(T) && reinterpret_cast<uintptr_t>(host) % sizeof(T) == 0;
}
template <class T>
void dma_load_word(std::byte* dst, const std::byte* host) {
  const T v = __atomic_load_n(reinterpret_cast<const T*>(host), __ATOMIC_ACQUIRE);
  std::memcpy(dst, &v, sizeof(T));
}
template <class T>
void dma_store_word(std::byte* host, const std::byte* src) {
  T v;
  std::memcpy(&v, src, sizeof(T));
  __atomic_store_n(reinterpret_cast<T*>(host), v, __ATOMIC_RELEASE);
}
}  // namespace detail

inline void dma_copy_from_host(std::byte* dst, const std::byte* host, std::size_t n) {
  if (detail::dma_word<uint8_t>(host, n)) return detail::dma_load_word<uint8_t>(dst, host);
  if (detail::dma_word<uint16_t>(host, n)) return detail::dma_load_word<uint16_t>(dst, host);
  if (detail::dma_word<uint32_t>(host, n)) return detail::dma_load_word<uint32_t>(dst, host);
  if (detail::dma_word<uint64_t>(host, n)) return detail::dma_load_word<uint64_t>(dst, host);
  std::memcpy(dst, host, n);
}

inline void dma_copy_to_host(std::byte* host, const std::byte* src, std::size_t n) {
  if (detail::dma_word<uint8_t>(host, n)) return detail::dma_store_word<uint8_t>(host, src);
  if (detail::dma_word<uint16_t>(host, n)) return detail::dma_store_word<uint16_t>(host, src);
  if (detail::dma_word<uint32_t>(host, n)) return detail::dma_store_word<uint32_t>(host, src);
  if (detail::dma_word<uint64_t>(host, n)) return detail::dma_store_word<uint64_t>(host, src);
  std::memcpy(host, src, n);
}

}  // namespace kbv::sim
