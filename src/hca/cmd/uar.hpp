// SPDX-License-Identifier: BSD-3-Clause
//
// ALLOC_UAR 0x802 / DEALLOC_UAR 0x803 (hca/prm/uar.hpp from mlx5_ifc.h
// alloc_uar_in/out, dealloc_uar_in). The result is the UAR page index; the
// page is at BAR0 + index * 4096 (prm::uar_page_offset).
//
// Threading: as CmdQueue.
#pragma once

#include "hca/cmd/exec.hpp"

namespace kbv::hca::cmd {

Status alloc_uar(CmdQueue& q, Done<uint32_t> done);
Status dealloc_uar(CmdQueue& q, uint32_t uar, DoneStatus done);

}  // namespace kbv::hca::cmd
