// SPDX-License-Identifier: BSD-3-Clause
// PciBackend: the config-space helpers every backend shares (backend.hpp).
#include "platform/backend.hpp"

#include "common/log.hpp"

namespace kbv::platform {

const char* backend_name(BackendKind k) {
  switch (k) {
    case BackendKind::kAuto: return "auto";
    case BackendKind::kVfio: return "vfio";
    case BackendKind::kVfioType1: return "type1";
    case BackendKind::kIommufd: return "iommufd";
    case BackendKind::kUio: return "uio";
    case BackendKind::kDpdk: return "dpdk";
  }
  return "?";
}

Result<uint16_t> PciBackend::config_read16(uint32_t offset) {
  unsigned char b[2];
  if (Status s = config_read(offset, b, 2); !s) return s;
  return static_cast<uint16_t>(b[0] | (b[1] << 8));
}

Status PciBackend::config_write16(uint32_t offset, uint16_t value) {
  const unsigned char b[2] = {static_cast<unsigned char>(value & 0xff),
                              static_cast<unsigned char>(value >> 8)};
  return config_write(offset, b, 2);
}

Status PciBackend::set_command_bits(uint16_t bits, bool on) {
  Result<uint16_t> cmd = config_read16(kPciCommandOffset);
  if (!cmd) return cmd.status();
  const uint16_t v = on ? static_cast<uint16_t>(*cmd | bits) : static_cast<uint16_t>(*cmd & ~bits);
  if (Status s = config_write16(kPciCommandOffset, v); !s) return s;
  log::debug("platform", "{}: PCI command {:#06x} -> {:#06x}", bdf(), *cmd, v);
  return Status::ok();
}

Status PciBackend::enable_bus_master() {
  return set_command_bits(kPciCommandMemory | kPciCommandMaster, true);
}

Status PciBackend::disable_bus_master() { return set_command_bits(kPciCommandMaster, false); }

}  // namespace kbv::platform
