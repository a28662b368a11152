// SPDX-License-Identifier: BSD-3-Clause
//
// PlatformDeviceIo: hca::DeviceIo over the platform layer's DeviceHandle
// (platform/device.hpp: VfioDevice + DmaContext), the one production path on
// silicon and on the model (whose emulated VFIO kernel answers the same
// system calls).
//
//   * bar0(): the VfioDevice's BAR0 mapping;
//   * dma_alloc(): 4 KiB / 4 KiB-aligned requests (firmware pages, the
//     command queue page) come from a PagePool (2 MiB blocks, one IOMMU
//     mapping per block, so thousands of firmware pages do not exhaust the
//     type1 mapping limit); other sizes are DmaContext buffers (4 KiB
//     pages). Alignment above 4 KiB is not offered (KBV_ERR_NOT_SUPPORTED):
//     the driver never asks for it;
//   * enable_device(): bus master + MSI-X (vfio.hpp enable_bus_master /
//     enable_msix); an MSI-X failure is logged and the driver polls;
//   * now_ns(): CLOCK_MONOTONIC.
//
// Lifetime: the DeviceHandle outlives this object; every block must be freed
// before it is destroyed (leftovers are released with a warning).
//
// Threading: as DeviceIo (one thread).
#pragma once

#include <memory>
#include <unordered_map>

#include "hca/io/device_io.hpp"
#include "platform/device.hpp"

namespace kbv::hca {

class PlatformDeviceIo final : public DeviceIo {
 public:
  explicit PlatformDeviceIo(platform::DeviceHandle& dev) : dev_(dev), pool_(dev.dma()) {}
  ~PlatformDeviceIo() override;
  PlatformDeviceIo(const PlatformDeviceIo&) = delete;
  PlatformDeviceIo& operator=(const PlatformDeviceIo&) = delete;

  const platform::Bar& bar0() const override { return dev_.bar0(); }
  Result<DmaBlock> dma_alloc(size_t size, size_t align) override;
  void dma_free(const DmaBlock& block) override;
  Result<int> msix_eventfd(uint32_t vector) override;
  Status enable_device(uint32_t msix_vectors) override;
  void disable_device() override;
  Status reset_function() override { return dev_.backend().reset(); }
  uint64_t now_ns() const override { return monotonic_ns(); }

  size_t live_blocks() const { return bufs_.size() + pages_; }

 private:
  platform::DeviceHandle& dev_;
  platform::PagePool pool_;
  std::unordered_map<uint64_t, platform::DmaBuffer> bufs_;  // by IOVA
  size_t pages_ = 0;                                        // from pool_
};

}  // namespace kbv::hca
