// SPDX-License-Identifier: BSD-3-Clause
//
// DeviceIo: the narrow view of a PCI function that the mlx5 driver (src/hca)
// needs from the platform layer — BAR0, DMA memory with device addresses, an
// MSI-X eventfd per vector, and a monotonic clock. The production adapter
// wraps platform::VfioDevice + its DMA context; unit tests implement it with
// a memory-backed BAR and host memory that the test reads and writes as the
// "firmware" (tests/unit/hca/fake_device.hpp). The driver never includes
// src/sim.
//
// BAR0 layout (docs/PRM.md "Initialization segment"): the init segment at offset
// 0, UAR page n at n * 4096.
//
// DMA memory (linux/vfio.h VFIO_IOMMU_MAP_DMA semantics): `va` is the CPU
// address, `iova` the address the device uses; both are aligned to the
// requested alignment, the memory is zero-filled, cache-coherent, readable
// and writable by the device until dma_free().
//
// Threading: all driver objects built on one DeviceIo are used from one
// thread at a time (the control plane has no locks); the DeviceIo itself
// need not be thread-safe.
#pragma once

#include <kbv/status.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "platform/mmio.hpp"

namespace kbv::hca {

// A block of DMA memory. Plain value; ownership is by convention (whoever
// called dma_alloc calls dma_free).
struct DmaBlock {
  std::byte* va = nullptr;
  uint64_t iova = 0;
  size_t size = 0;
  bool valid() const { return va != nullptr; }
};

class DeviceIo;

// Doorbell records packed many to a DMA page, as rdma-core's mlx5 provider
// does (providers/mlx5/dbrec.c mlx5_alloc_dbrec: pages of the system page
// size cut into cache-line-sized records, a bitmap of free ones): 64
// records of 64 bytes (one cache line for the 8-byte record, so two queues'
// records never share a line) per 4 KiB page, instead of a page and an
// IOMMU mapping per record. The PRM's dbr_addr (QPC, CQC, WQ/SRQ context)
// is a 64-bit address with no page-alignment requirement; records are
// 64-byte aligned. A page is freed when its last record is.
// Threading: as DeviceIo (one thread at a time).
class DbrecPool {
 public:
  static constexpr size_t kPage = 4096;
  static constexpr size_t kRecord = 64;
  static constexpr uint32_t kPerPage = kPage / kRecord;  // 64: one bit each in `used`

  // A zeroed 64-byte record; the DeviceIo's dma_alloc error when a new
  // page cannot be had.
  Result<DmaBlock> alloc(DeviceIo& io);
  // Returns a record from alloc() (ignored when it is not one).
  void free(DeviceIo& io, const DmaBlock& rec);
  size_t pages() const { return pages_.size(); }
  size_t records() const;

 private:
  struct Page {
    DmaBlock block;
    uint64_t used = 0;  // bit i: record i handed out
  };
  std::vector<Page> pages_;
};

class DeviceIo {
 public:
  virtual ~DeviceIo() = default;

  // The doorbell-record pool on this DeviceIo's DMA memory (QueueMem).
  DbrecPool& dbrecs() { return dbrecs_; }

  // BAR0 (init segment + UAR pages). Valid for the lifetime of the DeviceIo.
  virtual const platform::Bar& bar0() const = 0;

  // `size` bytes (> 0) of zeroed DMA memory aligned to `align` (a power of
  // two >= 8) in both va and iova. KBV_ERR_NO_MEMORY / KBV_ERR_NO_RESOURCES
  // (IOVA space) / the platform's mapping error.
  virtual Result<DmaBlock> dma_alloc(size_t size, size_t align) = 0;
  // Unmaps and frees a block returned by dma_alloc (exactly that block).
  virtual void dma_free(const DmaBlock& block) = 0;

  // A non-blocking eventfd signalled by MSI-X vector `vector` (VFIO
  // VFIO_DEVICE_SET_IRQS with VFIO_IRQ_SET_DATA_EVENTFD). The DeviceIo owns
  // the fd. KBV_ERR_NOT_SUPPORTED when the backend has no interrupts (the
  // driver then only polls).
  virtual Result<int> msix_eventfd(uint32_t vector) {
    (void)vector;
    return Status{KBV_ERR_NOT_SUPPORTED};
  }

  // docs/PRM.md bring-up step 1: turn on memory decoding and bus mastering (PCI
  // command register) and up to `msix_vectors` MSI-X vectors. A backend
  // without interrupts still succeeds (the driver polls). Default: nothing
  // to do (a fake device).
  virtual Status enable_device(uint32_t msix_vectors) {
    (void)msix_vectors;
    return Status::ok();
  }
  // After DISABLE_HCA: interrupts off, bus mastering off. Never fails.
  virtual void disable_device() {}
  // Function-level reset (VFIO_DEVICE_RESET): the function's firmware state
  // is lost. KBV_ERR_NOT_SUPPORTED by default (a fake device).
  virtual Status reset_function() { return Status{KBV_ERR_NOT_SUPPORTED}; }

  // Monotonic time in nanoseconds (command timeouts, health checks). Tests
  // control it; production uses CLOCK_MONOTONIC (monotonic_ns()).
  virtual uint64_t now_ns() const = 0;

 private:
  DbrecPool dbrecs_;
};

// CLOCK_MONOTONIC in nanoseconds.
uint64_t monotonic_ns();

}  // namespace kbv::hca
