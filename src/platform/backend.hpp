// SPDX-License-Identifier: BSD-3-Clause
//
// PciBackend: one PCI function as the mlx5 driver needs it, whatever kernel
// interface reaches it — BAR0, PCI configuration space, bus mastering,
// MSI-X, function reset — plus the DmaMapper (dma_mapper.hpp) that makes
// host memory reachable by the device. DeviceHandle (device.hpp) opens one
// backend per device URI:
//
//   backend            class        kernel interface                       URI
//   VFIO type1         VfioDevice   /dev/vfio/vfio container + group       vfio: (auto)
//   VFIO iommufd       VfioDevice   /dev/iommu + /dev/vfio/devices/vfioN   iommufd:, vfio: (auto)
//   UIO (no IOMMU)     UioDevice    sysfs config/resource0 + pagemap       uio:
//   DPDK environment   DpdkDevice   DPDK's PCI bus, memzones, VFIO cont.   dpdk:
//
// (vfio.hpp, vfio_iommufd.cpp, uio.hpp, dpdk.hpp (libkbv-dpdk.so); the
// README table says what each needs from the machine.)
//
// Config space helpers are shared: config_read16/config_write16 are
// little-endian (PCI config space is LE) over the backend's config_read /
// config_write; enable_bus_master sets memory space + bus master in the
// command register (PCI Local Bus 3.0 section 6.2.2, offset 0x04, bits 1
// and 2), read-modify-write; disable_bus_master clears bus master.
//
// Errors: as each backend documents; an operation the backend cannot offer
// (reset on UIO without a reset attribute, MSI-X without interrupts) is
// KBV_ERR_NOT_SUPPORTED, never a silent success.
//
// Threading: control-path calls (config, MSI-X, reset) one thread at a
// time; dma_map/dma_unmap from any thread; bar0() immutable after open.
#pragma once

#include <kbv/status.hpp>

#include <cstdint>
#include <string>

#include "platform/dma_mapper.hpp"
#include "platform/mmio.hpp"
#include "platform/pci.hpp"
#include "platform/transport.hpp"

namespace kbv::platform {

class HostMemory;  // dma.hpp

// BackendKind (transport.hpp): which kernel interface a URI asks for.
// "type1", "iommufd", "uio", "dpdk", "vfio" (kVfio), "auto" (kAuto).
const char* backend_name(BackendKind k);

class PciBackend : public DmaMapper {
 public:
  static constexpr uint32_t kPciCommandOffset = 0x04;
  static constexpr uint16_t kPciCommandMemory = 1u << 1;
  static constexpr uint16_t kPciCommandMaster = 1u << 2;

  ~PciBackend() override = default;

  virtual BackendKind kind() const = 0;
  virtual const PciDeviceInfo& pci() const = 0;
  std::string bdf() const { return pci().address.to_string(); }
  // BAR0 (init segment at 0, UAR pages at n * 4096), mapped for the life of
  // the backend.
  virtual const Bar& bar0() const = 0;

  // [offset, offset+len) inside config space, else KBV_ERR_INVALID_ARGUMENT;
  // a short transfer is KBV_ERR_IO.
  virtual Status config_read(uint32_t offset, void* buf, size_t len) = 0;
  virtual Status config_write(uint32_t offset, const void* buf, size_t len) = 0;
  Result<uint16_t> config_read16(uint32_t offset);
  Status config_write16(uint32_t offset, uint16_t value);
  Status enable_bus_master();
  Status disable_bus_master();

  // MSI-X: vectors offered (0: the driver polls), enable n eventfds, disable.
  virtual uint32_t msix_vector_count() const = 0;
  virtual Status enable_msix(uint32_t n) = 0;
  virtual Status disable_msix() = 0;
  virtual uint32_t msix_enabled_count() const = 0;
  virtual int msix_eventfd(uint32_t v) const = 0;  // -1 when none

  // Function-level reset.
  virtual Status reset() = 0;

  // Where DMA memory must come from when the backend decides it (DPDK: its
  // memzones); nullptr: DeviceHandle's choice (device.hpp). Lives as long
  // as the backend.
  virtual HostMemory* host_memory() { return nullptr; }

 private:
  Status set_command_bits(uint16_t bits, bool on);
};

}  // namespace kbv::platform
