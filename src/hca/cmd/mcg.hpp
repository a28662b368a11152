// SPDX-License-Identifier: BSD-3-Clause
//
// Multicast membership: ATTACH_TO_MCG 0x806 / DETACH_FROM_MCG 0x807
// (hca/prm/mcg.hpp from mlx5_ifc.h attach_to_mcg_in, detach_from_mcg_in).
// Only UD QPs join groups (IBTA 10.5). The GID is 16 bytes in network order
// (RoCE: ff00::/8 or IPv4-mapped ::ffff:224.0.0.0/4).
// Errors before submission: KBV_ERR_INVALID_ARGUMENT (qpn wider than 24
// bits); firmware statuses in the callback.
//
// Threading: as CmdQueue.
#pragma once

#include <array>
#include <cstdint>

#include "hca/cmd/exec.hpp"

namespace kbv::hca::cmd {

Status attach_to_mcg(CmdQueue& q, uint32_t qpn, const std::array<uint8_t, 16>& gid,
                     DoneStatus done);
Status detach_from_mcg(CmdQueue& q, uint32_t qpn, const std::array<uint8_t, 16>& gid,
                       DoneStatus done);

}  // namespace kbv::hca::cmd
