// SPDX-License-Identifier: BSD-3-Clause
//
// DeviceHandle: the platform facade the mlx5 driver (src/hca) opens a
// function with — the VfioDevice (BAR0, config space, MSI-X, reset, IOMMU)
// plus a DmaContext on the device's NUMA node — in the order they must be
// torn down (DMA memory before the container that maps it).
//
// open(sys, bdf): bdf is "DDDD:BB:DD.F" or the device URI form
// "vfio:DDDD:BB:DD.F" (docs/DESIGN.md "Device addressing"; "sim:<name>" URIs are
// resolved to a BDF by the model's Kernel before they get here).
// VfioDevice::open (see vfio.hpp for every step and error),
// then DmaContext::create over its IOVA ranges with numa_node from sysfs.
// Nothing is enabled on the device: the driver enables bus mastering and
// MSI-X when its bring-up reaches that step.
//
// Threading: as VfioDevice and DmaContext.
#pragma once

#include <kbv/status.hpp>

#include <memory>
#include <string_view>

#include "platform/dma.hpp"
#include "platform/sys.hpp"
#include "platform/vfio.hpp"

namespace kbv::platform {

struct DeviceOptions {
  bool allow_huge_pages = true;
  HostMemory* host = nullptr;  // nullptr: default_host_memory()
};

class DeviceHandle {
 public:
  static Result<std::unique_ptr<DeviceHandle>> open(Sys& sys, std::string_view bdf,
                                                    DeviceOptions opts = {});
  ~DeviceHandle();
  DeviceHandle(const DeviceHandle&) = delete;
  DeviceHandle& operator=(const DeviceHandle&) = delete;

  VfioDevice& vfio() const { return *vfio_; }
  DmaContext& dma() const { return *dma_; }
  const Bar& bar0() const { return vfio_->bar0(); }
  const PciDeviceInfo& pci() const { return vfio_->pci(); }

 private:
  DeviceHandle() = default;
  // Declaration order is destruction order reversed: dma_ goes first.
  std::unique_ptr<VfioDevice> vfio_;
  std::unique_ptr<DmaContext> dma_;
};

}  // namespace kbv::platform
