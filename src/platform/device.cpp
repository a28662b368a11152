// SPDX-License-Identifier: BSD-3-Clause
// DeviceHandle: a PciBackend + DmaContext (device.hpp).
#include "platform/device.hpp"

#include "common/log.hpp"
#include "platform/uio.hpp"
#include "platform/vfio.hpp"

namespace kbv::platform {
namespace {

constexpr const char* kComp = "device";

// "<scheme>:" prefixes DeviceHandle accepts (docs/DESIGN.md "Device addressing").
struct Scheme {
  std::string_view prefix;
  BackendKind kind;
};
constexpr Scheme kSchemes[] = {
    {"vfio:", BackendKind::kVfio},
    {"iommufd:", BackendKind::kIommufd},
    {"uio:", BackendKind::kUio},
};

}  // namespace

Result<std::unique_ptr<DeviceHandle>> DeviceHandle::open(Sys& sys, std::string_view bdf,
                                                         DeviceOptions opts) {
  BackendKind kind = opts.backend;
  for (const Scheme& s : kSchemes) {
    if (bdf.substr(0, s.prefix.size()) != s.prefix) continue;
    bdf.remove_prefix(s.prefix.size());
    if (kind == BackendKind::kAuto) kind = s.kind;
  }
  if (kind == BackendKind::kAuto) {
    // By the driver the function is bound to.
    Result<PciAddress> addr = PciAddress::parse(bdf);
    if (!addr) {
      log::error(kComp, "'{}' is not a PCI address (expected DDDD:BB:DD.F)", bdf);
      return addr.status();
    }
    Result<PciDeviceInfo> info = read_pci_device(sys, *addr);
    kind = info && info->driver == "uio_pci_generic" ? BackendKind::kUio : BackendKind::kVfio;
  }
  std::unique_ptr<DeviceHandle> h(new DeviceHandle());
  if (opts.open_backend) {
    Result<std::unique_ptr<PciBackend>> b = opts.open_backend(bdf);
    if (!b) return b.status();
    h->backend_ = std::move(*b);
  } else if (kind == BackendKind::kUio) {
    Result<std::unique_ptr<UioDevice>> uio = UioDevice::open(sys, bdf);
    if (!uio) return uio.status();
    h->backend_ = std::move(*uio);
  } else {
    Result<std::unique_ptr<VfioDevice>> vfio = VfioDevice::open(sys, bdf, kind);
    if (!vfio) return vfio.status();
    h->backend_ = std::move(*vfio);
  }
  DmaOptions dopts;
  dopts.numa_node = h->backend_->pci().numa_node;
  dopts.allow_huge_pages = opts.allow_huge_pages;
  dopts.host = opts.host;
  if (!dopts.host) dopts.host = h->backend_->host_memory();
  if (!dopts.host && h->backend_->addresses_are_physical()) {
    // Huge pages through the seam: the model's kernel answers from its pool.
    h->own_host_ = sys_host_memory(sys);
    dopts.host = h->own_host_.get();
  }
  Result<std::unique_ptr<DmaContext>> dma = DmaContext::create(*h->backend_, dopts);
  if (!dma) return dma.status();
  h->dma_ = std::move(*dma);
  return h;
}

DeviceHandle::~DeviceHandle() {
  dma_.reset();
  own_host_.reset();
  backend_.reset();
}

}  // namespace kbv::platform
