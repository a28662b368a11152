// SPDX-License-Identifier: BSD-3-Clause
// DeviceHandle: VfioDevice + DmaContext (device.hpp).
#include "platform/device.hpp"

#include "common/log.hpp"

namespace kbv::platform {

Result<std::unique_ptr<DeviceHandle>> DeviceHandle::open(Sys& sys, std::string_view bdf,
                                                         DeviceOptions opts) {
  constexpr std::string_view kScheme = "vfio:";  // docs/DESIGN.md "Device addressing"
  if (bdf.substr(0, kScheme.size()) == kScheme) bdf.remove_prefix(kScheme.size());
  Result<std::unique_ptr<VfioDevice>> vfio = VfioDevice::open(sys, bdf);
  if (!vfio) return vfio.status();
  std::unique_ptr<DeviceHandle> h(new DeviceHandle());
  h->vfio_ = std::move(*vfio);
  DmaOptions dopts;
  dopts.numa_node = h->vfio_->pci().numa_node;
  dopts.allow_huge_pages = opts.allow_huge_pages;
  dopts.host = opts.host;
  Result<std::unique_ptr<DmaContext>> dma = DmaContext::create(*h->vfio_, dopts);
  if (!dma) return dma.status();
  h->dma_ = std::move(*dma);
  return h;
}

DeviceHandle::~DeviceHandle() {
  dma_.reset();
  vfio_.reset();
}

}  // namespace kbv::platform
