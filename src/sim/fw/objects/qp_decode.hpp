// SPDX-License-Identifier: BSD-3-Clause
//
// QP context image <-> decoded attributes, shared by the QP command files:
// qp_decode() refreshes the fields of Qp (tables.hpp) that the engine reads
// from the stored qpc image (mlx5_ifc.h qpc_bits / ads_bits; prm/qpc.hpp).
//
// Threading: firmware thread.
#pragma once

#include "hca/prm/qpc.hpp"
#include "sim/fw/objects/tables.hpp"

namespace kbv::sim::fw {

void qp_decode(Qp& q);

// Re-point the QP's receive CQ / SRQ references from `old_q` to `new_q`
// (the reference counts of the CQs and SRQs involved follow).
void qp_rebind(ObjectTables& t, const Qp& old_q, const Qp& new_q);

}  // namespace kbv::sim::fw
