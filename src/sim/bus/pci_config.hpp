// SPDX-License-Identifier: BSD-3-Clause
//
// PciConfig: the configuration space of one model PCIe function, as a driver
// sees it through the vfio-pci config region (linux/vfio.h
// VFIO_PCI_CONFIG_REGION_INDEX).
//
// Layout (PCI Local Bus 3.0 type-0 header; PCIe Base 3.0 7.8; offsets as
// linux/pci_regs.h names them):
//   0x00 vendor, 0x02 device, 0x04 command, 0x06 status (capability list),
//   0x08 revision, 0x09 class code (prog-if, subclass, base class),
//   0x0E header type 0, 0x10/0x14 BAR0: 64-bit prefetchable memory,
//   0x2C subsystem vendor, 0x2E subsystem id, 0x34 capability pointer,
//   0x3D interrupt pin A.
//   Capabilities, at the offsets `lspci -vv` shows for ConnectX-4/5:
//   0x40 power management (v3) -> 0x60 PCI Express v2 endpoint (8 GT/s x16)
//   -> 0x9C MSI-X, table and PBA in BAR0 beyond the UAR pages: the table in
//   the next-to-last 4 KiB page of BAR0, the PBA in the last page (the init
//   segment occupies 0..0x2010, device.h mlx5_init_seg, and UAR pages follow
//   it, so the end of the BAR is the one place that collides with neither;
//   the firmware must not hand out those two pages as UARs).
//   0x100..0xFFF extended space: no extended capabilities (header 0).
//
// Writable by the driver (everything else is read-only, as vfio-pci
// virtualizes it): command bits memory space (1), bus master (2), I/O space,
// parity response, SERR, INTx disable (mask 0x0547); cache line size,
// latency timer, interrupt line; BAR0/BAR1 with the standard sizing
// behaviour (write all ones, read back ~(size-1) | flags); PCIe device and
// link control. MSI-X enable and function mask belong to the VFIO kernel
// (VFIO_DEVICE_SET_IRQS), as on vfio-pci: driver writes to them are dropped.
//
// Threading: not synchronised; PciDevice serialises access.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace kbv::sim {

struct PciIdentity {
  uint16_t vendor_id;
  uint16_t device_id;
  uint16_t subsystem_vendor_id;
  uint16_t subsystem_id;
  uint32_t class_code;  // base << 16 | subclass << 8 | prog-if
  uint8_t revision;
  uint64_t bar0_size;  // power of two, >= 16 KiB
  uint16_t msix_vectors;
};

class PciConfig {
 public:
  static constexpr std::size_t kSize = 4096;  // PCIe: 4 KiB (pdev->cfg_size)
  // Standard register offsets (linux/pci_regs.h).
  static constexpr uint32_t kVendor = 0x00, kDevice = 0x02, kCommand = 0x04, kStatus = 0x06,
                            kRevision = 0x08, kClass = 0x09, kCacheLine = 0x0C, kLatency = 0x0D,
                            kHeaderType = 0x0E, kBar0 = 0x10, kBar1 = 0x14, kSubsystemVendor = 0x2C,
                            kSubsystem = 0x2E, kCapPtr = 0x34, kIntLine = 0x3C, kIntPin = 0x3D;
  static constexpr uint16_t kCmdMemory = 1 << 1, kCmdBusMaster = 1 << 2;
  // Capability offsets of this model.
  static constexpr uint32_t kPmCap = 0x40, kPcieCap = 0x60, kMsixCap = 0x9C;
  // MSI-X table / PBA offsets in BAR0 for a BAR of bar0_size bytes.
  static constexpr uint64_t msix_table_offset(uint64_t bar0_size) { return bar0_size - 0x2000; }
  static constexpr uint64_t msix_pba_offset(uint64_t bar0_size) { return bar0_size - 0x1000; }
  static constexpr uint16_t kMsixCtlEnable = 1 << 15, kMsixCtlMask = 1 << 14;

  explicit PciConfig(const PciIdentity& id);

  // Power-on contents (BAR addresses 0, command 0, MSI-X disabled).
  void reset_to_defaults();

  void read(uint32_t off, std::span<std::byte> dst) const;
  // A driver write: only the writable bits change (see above).
  void write(uint32_t off, std::span<const std::byte> src);

  uint16_t command() const { return r16(kCommand); }
  bool msix_enabled() const { return r16(kMsixCap + 2) & kMsixCtlEnable; }
  // Used by the VFIO kernel when it enables/disables MSI-X (SET_IRQS).
  void set_msix_enabled(bool on);

  uint16_t r16(uint32_t off) const;
  uint32_t r32(uint32_t off) const;

 private:
  void w8(uint32_t off, uint8_t v) { bytes_[off] = v; }
  void w16(uint32_t off, uint16_t v);
  void w32(uint32_t off, uint32_t v);
  void write_byte(uint32_t off, uint8_t v);

  PciIdentity id_;
  std::array<uint8_t, kSize> bytes_{};
  std::array<uint8_t, kSize> wmask_{};  // bits the driver may change
};

}  // namespace kbv::sim
