// SPDX-License-Identifier: BSD-3-Clause
//
// DEVX umem placement (umem_cmds.cpp): CQs and QPs created with
// cq_umem_valid / wq_umem_valid / dbr_umem_valid name a umem and a byte
// offset into it instead of pas[] pages / a doorbell-record IOVA
// (rdma-core providers/mlx5/mlx5_ifc.h create_cq_in.cq_umem_*,
// create_qp_in.wq_umem_*, qpc.dbr_umem_id; DPDK mlx5_prm.h cqc.dbr_umem_id).
// Failures carry `op`'s syndrome with the kUmem* check numbers
// (sim/fw/syndromes.hpp): unknown umem_id BAD_RES, a range outside the umem,
// a misaligned doorbell record or a device-written area without wr_en
// BAD_PARAM.
//
// Threading: the firmware thread (command handlers) only.
#pragma once

#include "hca/prm/opcodes.hpp"
#include "sim/fw/objects/tables.hpp"
#include "sim/fw/registry.hpp"

#include <cstdint>

namespace kbv::sim::fw {

// Fills `buf` (pages, page size, byte offset) for `bytes` at `offset` into
// umem `id`; `device_writes`: the device writes the buffer (a CQ).
Outcome umem_place_buffer(ObjectTables& t, prm::Opcode op, uint32_t id, uint64_t offset,
                          uint64_t bytes, bool device_writes, WqBuffer& buf);
// The IOVA of the 8-byte doorbell record at `offset` into umem `id`.
Outcome umem_place_dbr(ObjectTables& t, prm::Opcode op, uint32_t id, uint64_t offset,
                       uint64_t* iova);
// Counts a CQ / QP using umem `id` (delta +1) or no longer using it (-1);
// id 0 (no umem) is ignored.
void umem_ref(ObjectTables& t, uint32_t id, int delta);

void register_umem_commands(CommandRegistry& r);

}  // namespace kbv::sim::fw
