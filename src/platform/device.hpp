// SPDX-License-Identifier: BSD-3-Clause
//
// DeviceHandle: the platform facade the mlx5 driver (src/hca) opens a
// function with — its PciBackend (backend.hpp: BAR0, config space, MSI-X,
// reset, DMA mapping) plus a DmaContext on the device's NUMA node — in the
// order they must be torn down (DMA memory before the backend that maps it).
//
// open(sys, bdf, opts): bdf is "DDDD:BB:DD.F" or the device URI form
// "vfio:DDDD:BB:DD.F" / "iommufd:..." / "uio:..." (docs/DESIGN.md "Device
// addressing"; "sim:<name>" URIs are resolved to a BDF by the model's
// Kernel before they get here). The backend is opts.backend, or the URI's
// scheme when bdf carries one; kAuto follows the function's driver
// (vfio-pci -> kVfio: iommufd when /dev/iommu and its vfio-dev cdev exist,
// else type1; uio_pci_generic -> kUio). VfioDevice::open / UioDevice::open
// (see vfio.hpp and uio.hpp for every step and error), or
// opts.open_backend (DpdkDevice, dpdk.hpp), then
// DmaContext::create over the backend with numa_node from sysfs. Nothing is
// enabled on the device: the driver enables bus mastering and MSI-X when
// its bring-up reaches that step.
//
// Errors: those of the backend's open and of DmaContext::create (UIO
// without 2 MiB huge pages: KBV_ERR_NO_MEMORY); a failed open leaves
// nothing open, mapped or pinned.
//
// Threading: as the backend and DmaContext.
#pragma once

#include <kbv/status.hpp>

#include <memory>
#include <string_view>

#include "platform/backend.hpp"
#include "platform/dma.hpp"
#include "platform/sys.hpp"

namespace kbv::platform {

struct DeviceOptions {
  bool allow_huge_pages = true;
  HostMemory* host = nullptr;  // nullptr: default_host_memory() (UIO: sys_host_memory(sys))
  BackendKind backend = BackendKind::kAuto;
  // A transport's own backend (TransportTarget::open_backend, dpdk:): used
  // instead of a kernel interface; its host_memory(), when it has one,
  // supplies the DMA memory.
  BackendOpener open_backend = nullptr;
};

class DeviceHandle {
 public:
  static Result<std::unique_ptr<DeviceHandle>> open(Sys& sys, std::string_view bdf,
                                                    DeviceOptions opts = {});
  ~DeviceHandle();
  DeviceHandle(const DeviceHandle&) = delete;
  DeviceHandle& operator=(const DeviceHandle&) = delete;

  PciBackend& backend() const { return *backend_; }
  DmaContext& dma() const { return *dma_; }
  const Bar& bar0() const { return backend_->bar0(); }
  const PciDeviceInfo& pci() const { return backend_->pci(); }

 private:
  DeviceHandle() = default;
  // Declaration order is destruction order reversed: dma_ goes first, then
  // the host memory it allocated from.
  std::unique_ptr<PciBackend> backend_;
  std::unique_ptr<HostMemory> own_host_;
  std::unique_ptr<DmaContext> dma_;
};

}  // namespace kbv::platform
