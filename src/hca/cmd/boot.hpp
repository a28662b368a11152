// SPDX-License-Identifier: BSD-3-Clause
//
// Bring-up and teardown commands (docs/PRM.md "Bring-up order"; layouts
// hca/prm/boot.hpp from mlx5_ifc.h): ENABLE_HCA 0x104, DISABLE_HCA 0x105,
// QUERY_ISSI 0x10A, SET_ISSI 0x10B, INIT_HCA 0x102, TEARDOWN_HCA 0x103,
// ACCESS_REG 0x805 (generic, and the HOST_ENDIANNESS register 0x7004),
// QUERY_ADAPTER 0x101, SET_DRIVER_VERSION 0x10D, NOP 0x80D.
//
// Every function returns KBV_PENDING (the callback runs once, later) or an
// error (no callback); see exec.hpp.
//
// Threading: as CmdQueue.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hca/cmd/exec.hpp"

namespace kbv::hca::cmd {

// function_id 0 / embedded_cpu_function 0: the function itself (a PF or VF
// driving its own HCA; mlx5_vfio.c never names another function).
struct FunctionAttr {
  uint16_t function_id = 0;
  bool embedded_cpu_function = false;
};

Status enable_hca(CmdQueue& q, const FunctionAttr& a, DoneStatus done);
Status disable_hca(CmdQueue& q, const FunctionAttr& a, DoneStatus done);

struct IssiInfo {
  uint16_t current_issi = 0;
  uint32_t supported_issi_dw0 = 0;  // bit n: ISSI n supported (n < 32)
  bool supports(uint16_t issi) const { return issi < 32 && (supported_issi_dw0 >> issi) & 1; }
};
Status query_issi(CmdQueue& q, Done<IssiInfo> done);
Status set_issi(CmdQueue& q, uint16_t issi, DoneStatus done);

// INIT_HCA; sw_owner_id stays zero (no steering ownership).
Status init_hca(CmdQueue& q, DoneStatus done);
// TEARDOWN_HCA with a profile (prm::TeardownProfile). GRACEFUL_CLOSE normally.
Status teardown_hca(CmdQueue& q, prm::TeardownProfile profile, DoneStatus done);

struct AccessRegAttr {
  prm::RegId register_id{};
  prm::AccessRegOpMod op = prm::AccessRegOpMod::READ;
  uint32_t argument = 0;
  std::vector<std::byte> data;  // register image (big-endian, as the PRM lays it out)
};
// Returns the register image written back by firmware (data.size() bytes).
Status access_reg(CmdQueue& q, const AccessRegAttr& a, Done<std::vector<std::byte>> done);
// ACCESS_REG write of HOST_ENDIANNESS: he = 1 on big-endian hosts, 0 on
// little-endian ones (device.h MLX5_SET_HOST_ENDIANNESS; mlx5_vfio.c
// set_hca_ctrl).
Status set_host_endianness(CmdQueue& q, DoneStatus done);

struct AdapterInfo {
  uint32_t ieee_vendor_id = 0;
  uint16_t vsd_vendor_id = 0;
  std::string psid;  // board id, trailing NULs/spaces removed
};
Status query_adapter(CmdQueue& q, Done<AdapterInfo> done);

// SET_DRIVER_VERSION: up to 64 ASCII bytes (longer strings are truncated).
Status set_driver_version(CmdQueue& q, std::string_view version, DoneStatus done);

Status nop(CmdQueue& q, DoneStatus done);

}  // namespace kbv::hca::cmd
