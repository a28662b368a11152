// SPDX-License-Identifier: BSD-3-Clause
//
// PCI addressing and discovery of ConnectX functions through sysfs.
//
// A function is named by its PCI address "DDDD:BB:DD.F" (domain, bus,
// device, function; lower-case hex, as in /sys/bus/pci/devices and
// linux/vfio.h VFIO_GROUP_GET_DEVICE_FD, which takes that exact string).
//
// Discovery reads, for each entry of /sys/bus/pci/devices (sysfs ABI,
// Documentation/ABI/testing/sysfs-bus-pci):
//   vendor, device   "0x15b3\n", "0x101b\n"
//   class            "0x020000\n" (base class 0x02: network controller;
//                    0x0200 Ethernet, 0x0207 InfiniBand)
//   numa_node        "-1\n" when the platform does not say
//   driver           symlink to .../drivers/<name>; absent when unbound
//   iommu_group      symlink to .../kernel/iommu_groups/<n>; absent when the
//                    IOMMU is off (then VFIO cannot be used)
// Only Mellanox/NVIDIA (vendor 0x15b3) network-class functions are reported;
// bridges and other functions of the same vendor (BlueField) are skipped.
// All file and link access goes through the given Sys, so the model's Sys
// lists model devices with the same code.
//
// Errors: parse failures -> KBV_ERR_INVALID_ARGUMENT; the devices directory
// unreadable -> the errno's status (ENOENT -> KBV_ERR_NOT_FOUND); a single
// device whose files cannot be read is logged at warn and skipped.
//
// Threading: free functions, no shared state; safe from any thread.
#pragma once

#include <kbv/status.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "platform/sys.hpp"

namespace kbv::platform {

inline constexpr uint16_t kPciVendorMellanox = 0x15b3;
inline constexpr const char* kSysfsPciDevices = "/sys/bus/pci/devices";

struct PciAddress {
  uint32_t domain = 0;  // 16 bits on most systems; up to 32 (VMD) accepted
  uint8_t bus = 0;
  uint8_t device = 0;    // 5 bits
  uint8_t function = 0;  // 3 bits

  // "0000:3b:00.0"; also accepts "3b:00.0" (domain 0) and upper-case hex.
  static Result<PciAddress> parse(std::string_view s);
  // Canonical sysfs form: domain as at least 4 hex digits, lower case.
  std::string to_string() const;

  friend bool operator==(const PciAddress&, const PciAddress&) = default;
};

struct PciDeviceInfo {
  PciAddress address;
  uint16_t vendor = 0;
  uint16_t device = 0;
  uint32_t class_code = 0;  // 24 bits: base class, subclass, prog-if
  int numa_node = -1;       // -1: unknown / no NUMA
  std::string driver;       // bound driver's name; empty when unbound
  int iommu_group = -1;     // -1: no IOMMU group

  // Bound to vfio-pci and in an IOMMU group: VfioDevice::open can use it.
  bool usable_with_vfio() const { return driver == "vfio-pci" && iommu_group >= 0; }
};

// Reads the sysfs attributes of one function. KBV_ERR_NOT_FOUND when the
// device directory does not exist; KBV_ERR_IO when vendor/device/class are
// unreadable or malformed.
Result<PciDeviceInfo> read_pci_device(Sys& sys, const PciAddress& addr);

// All 0x15b3 network-class functions, sorted by address. With
// only_vfio_usable, only those usable_with_vfio(); otherwise bound/unbound
// alike (the caller can tell the user to bind vfio-pci).
Result<std::vector<PciDeviceInfo>> discover_mlx5_devices(Sys& sys, bool only_vfio_usable = true);

}  // namespace kbv::platform
