// SPDX-License-Identifier: BSD-3-Clause
//
// ALLOC_PD 0x800 / DEALLOC_PD 0x801 and ALLOC_TRANSPORT_DOMAIN 0x816 /
// DEALLOC_TRANSPORT_DOMAIN 0x817 (hca/prm/pd.hpp from mlx5_ifc.h). Results
// are the 24-bit pd / transport_domain numbers.
//
// Threading: as CmdQueue.
#pragma once

#include "hca/cmd/exec.hpp"

namespace kbv::hca::cmd {

Status alloc_pd(CmdQueue& q, Done<uint32_t> done);
Status dealloc_pd(CmdQueue& q, uint32_t pd, DoneStatus done);
Status alloc_transport_domain(CmdQueue& q, Done<uint32_t> done);
Status dealloc_transport_domain(CmdQueue& q, uint32_t td, DoneStatus done);

}  // namespace kbv::hca::cmd
