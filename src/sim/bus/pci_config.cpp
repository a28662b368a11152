// SPDX-License-Identifier: BSD-3-Clause
// PciConfig: the model function's configuration space (see pci_config.hpp).
#include "sim/bus/pci_config.hpp"

#include <cstring>

namespace kbv::sim {

PciConfig::PciConfig(const PciIdentity& id) : id_(id) { reset_to_defaults(); }

uint16_t PciConfig::r16(uint32_t off) const {
  return static_cast<uint16_t>(bytes_[off] | bytes_[off + 1] << 8);  // PCI is little-endian
}
uint32_t PciConfig::r32(uint32_t off) const {
  return static_cast<uint32_t>(r16(off)) | static_cast<uint32_t>(r16(off + 2)) << 16;
}
void PciConfig::w16(uint32_t off, uint16_t v) {
  bytes_[off] = v & 0xFF;
  bytes_[off + 1] = v >> 8;
}
void PciConfig::w32(uint32_t off, uint32_t v) {
  w16(off, v & 0xFFFF);
  w16(off + 2, v >> 16);
}

void PciConfig::reset_to_defaults() {
  bytes_.fill(0);
  wmask_.fill(0);
  auto mask16 = [&](uint32_t off, uint16_t m) {
    wmask_[off] = m & 0xFF;
    wmask_[off + 1] = m >> 8;
  };
  auto mask32 = [&](uint32_t off, uint32_t m) {
    mask16(off, m & 0xFFFF);
    mask16(off + 2, m >> 16);
  };

  // Type-0 header (PCI Local Bus 3.0 6.1).
  w16(kVendor, id_.vendor_id);
  w16(kDevice, id_.device_id);
  mask16(kCommand, 0x0547);  // I/O, memory, bus master, parity, SERR, INTx disable
  w16(kStatus, 1 << 4);      // capabilities list present
  w8(kRevision, id_.revision);
  w8(kClass, id_.class_code & 0xFF);
  w8(kClass + 1, (id_.class_code >> 8) & 0xFF);
  w8(kClass + 2, (id_.class_code >> 16) & 0xFF);
  wmask_[kCacheLine] = 0xFF;
  wmask_[kLatency] = 0xFF;
  w8(kHeaderType, 0x00);
  // BAR0: memory, 64-bit (type 10b in bits 2:1), prefetchable (bit 3).
  w32(kBar0, 0x0000000C);
  mask32(kBar0, static_cast<uint32_t>(~(id_.bar0_size - 1)) & 0xFFFFFFF0u);
  w32(kBar1, 0);
  mask32(kBar1, static_cast<uint32_t>(~(id_.bar0_size - 1) >> 32));
  w16(kSubsystemVendor, id_.subsystem_vendor_id);
  w16(kSubsystem, id_.subsystem_id);
  w8(kCapPtr, kPmCap);
  wmask_[kIntLine] = 0xFF;
  w8(kIntPin, 1);  // INTA#

  // Power management capability (PCI PM 1.2): id 0x01, version 3, D0.
  w8(kPmCap, 0x01);
  w8(kPmCap + 1, kPcieCap);
  w16(kPmCap + 2, 0x0003);

  // PCI Express capability v2, endpoint (PCIe Base 3.0 7.8; pci_regs.h PCI_EXP_*).
  w8(kPcieCap, 0x10);
  w8(kPcieCap + 1, kMsixCap);
  w16(kPcieCap + 2, 0x0002);                 // version 2, device/port type 0 (endpoint)
  w32(kPcieCap + 4, 0x00000002 | 1u << 28);  // DevCap: max payload 512 B, FLR capable
  mask16(kPcieCap + 8, 0x7FFF);              // DevCtl
  w16(kPcieCap + 8, 0x2810);                 // max read request 512, relaxed ordering
  w32(kPcieCap + 0x0C, 0x3 | 16 << 4);       // LnkCap: 8 GT/s, x16
  mask16(kPcieCap + 0x10, 0x0FFB);           // LnkCtl
  w16(kPcieCap + 0x12, 0x3 | 16 << 4);       // LnkSta: 8 GT/s, x16

  // MSI-X (PCI Local Bus 3.0 6.8.2): table size N-1, table/PBA in BAR0 (BIR 0).
  w8(kMsixCap, 0x11);
  w8(kMsixCap + 1, 0x00);  // end of list
  w16(kMsixCap + 2, static_cast<uint16_t>((id_.msix_vectors - 1) & 0x7FF));
  w32(kMsixCap + 4, static_cast<uint32_t>(msix_table_offset(id_.bar0_size)) | 0);
  w32(kMsixCap + 8, static_cast<uint32_t>(msix_pba_offset(id_.bar0_size)) | 0);
}

void PciConfig::read(uint32_t off, std::span<std::byte> dst) const {
  for (std::size_t i = 0; i < dst.size(); ++i) {
    const std::size_t o = off + i;
    dst[i] = std::byte{o < kSize ? bytes_[o] : uint8_t{0xFF}};
  }
}

void PciConfig::write_byte(uint32_t off, uint8_t v) {
  const uint8_t m = wmask_[off];
  bytes_[off] = static_cast<uint8_t>((bytes_[off] & ~m) | (v & m));
}

void PciConfig::write(uint32_t off, std::span<const std::byte> src) {
  for (std::size_t i = 0; i < src.size(); ++i) {
    const std::size_t o = off + i;
    if (o >= kSize) break;
    write_byte(static_cast<uint32_t>(o), static_cast<uint8_t>(src[i]));
  }
}

void PciConfig::set_msix_enabled(bool on) {
  uint16_t ctl = r16(kMsixCap + 2);
  ctl = on ? (ctl | kMsixCtlEnable) : (ctl & ~kMsixCtlEnable);
  w16(kMsixCap + 2, ctl);
}

}  // namespace kbv::sim
