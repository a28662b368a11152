// SPDX-License-Identifier: BSD-3-Clause
//
// The HCA life-cycle commands of the model firmware (PRM "HCA initialization
// flow"; layouts prm/boot.hpp from mlx5_ifc.h):
//   ENABLE_HCA     any time; function_id / embedded_cpu_function must be 0
//                  (the model is one PF); twice -> BAD_SYS_STATE.
//   DISABLE_HCA    enabled and not initialized (TEARDOWN_HCA first); drops
//                  every firmware resource (caps back to defaults, pages
//                  forgotten, UARs, EQs, objects).
//   QUERY_ISSI     current ISSI and the supported mask (ISSI 0 and 1).
//   SET_ISSI       0 or 1 (else BAD_PARAM), before INIT_HCA.
//   ACCESS_REG     HOST_ENDIANNESS (0x7004) read/write; other registers BAD_PARAM
//                  (the object commands replace the handler with one that also
//                  answers the port registers: fw/objects/access_reg_cmds.cpp).
//   INIT_HCA       BAD_SYS_STATE until the boot and init pages were given.
//   TEARDOWN_HCA   graceful profile only (fast/force teardown are not
//                  advertised); destroys EQs, UARs and objects.
//   QUERY_ADAPTER  Mellanox vendor ids and a PSID.
//   NOP            any time, any op_mod.
//
// Threading: registration only; handlers run on the firmware thread.
#pragma once

#include "sim/fw/registry.hpp"

namespace kbv::sim::fw {

void register_hca_commands(CommandRegistry& r);

// The ACCESS_REG handler registered here (HOST_ENDIANNESS only), for a
// handler that answers more registers and delegates this one.
Outcome access_reg_host_endianness(FwContext& ctx, const Command& c, std::span<std::byte> out);

}  // namespace kbv::sim::fw
