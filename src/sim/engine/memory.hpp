// SPDX-License-Identifier: BSD-3-Clause
//
// The model HCA's payload access: every byte the data path reads or writes
// goes through a memory key (fw::MkeyTable::translate: key, PD, rights,
// bounds, MTT) and then the IOMMU (dma_read / dma_write), as docs/DESIGN.md "The
// HCA model" requires.
//
//   * gather / scatter: local SGE lists (lkeys) <-> a byte span, starting
//     `offset` bytes into the list (so the transport can move one packet of a
//     message at a time). Rights: gather = local read, scatter = local write.
//   * remote_read / remote_write / remote_atomic: one rkey range (RDMA READ
//     responder, RDMA WRITE responder, atomics) with remote rights.
//
// Errors (AccessStatus.syndrome, rdma-core mlx5dv.h MLX5_CQE_SYNDROME_*):
//   local key fault (bad key, PD, rights, bounds, MTT) -> LOCAL_PROT_ERR;
//   remote key fault -> REMOTE_ACCESS_ERR (the responder NAKs with a remote
//   access error, IBTA 9.7.5.2.8 / docs/PRM.md AETH NAK code 2);
//   IOMMU fault -> LOCAL_PROT_ERR (local) / REMOTE_ACCESS_ERR (remote) with
//   iommu = true (the IOMMU has counted and logged it);
//   SGE list too short for scatter -> LOCAL_LENGTH_ERR.
// On a fault a partial transfer may have happened (as on silicon; the
// completion reports the error).
//
// No allocation: translations go through a fixed array on the stack; a
// range needing more IOVA pieces than fit is split and retried.
//
// Threading: as MkeyTable::translate (no MKEY command may run concurrently).
#pragma once

#include "sim/bus/iommu.hpp"
#include "sim/engine/wqe.hpp"
#include "sim/fw/objects/mkey_table.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace kbv::sim::engine {

struct AccessStatus {
  uint8_t syndrome = 0;  // 0 = ok, else MLX5_CQE_SYNDROME_*
  fw::MkeyFault mkey = fw::MkeyFault::kNone;
  bool iommu = false;
  uint64_t done = 0;  // bytes transferred
  bool ok() const { return syndrome == 0; }
};

// Copies dst.size() bytes from the SGE list, starting `offset` bytes into
// it. A list shorter than offset + dst.size() is LOCAL_LENGTH_ERR.
AccessStatus gather(Iommu& iommu, const fw::MkeyTable& keys, uint32_t pd, std::span<const Sge> sges,
                    uint64_t offset, std::span<std::byte> dst);
// Copies src into the SGE list starting `offset` bytes into it.
AccessStatus scatter(Iommu& iommu, const fw::MkeyTable& keys, uint32_t pd,
                     std::span<const Sge> sges, uint64_t offset, std::span<const std::byte> src);

// Remote accesses through rkey at va (responder side; pd = the responder
// QP's PD). `rights` for atomics is kRemoteAtomic (the 8 bytes are read and
// written).
AccessStatus remote_read(Iommu& iommu, const fw::MkeyTable& keys, uint32_t pd, uint32_t rkey,
                         uint64_t va, std::span<std::byte> dst);
AccessStatus remote_write(Iommu& iommu, const fw::MkeyTable& keys, uint32_t pd, uint32_t rkey,
                          uint64_t va, std::span<const std::byte> src);

// One key range: translate [va, va + len) with `rights` and read into / write
// from buf. local selects the syndrome family. Exposed for the transport.
AccessStatus key_read(Iommu& iommu, const fw::MkeyTable& keys, uint32_t pd, uint32_t key,
                      uint64_t va, uint32_t rights, bool local, std::span<std::byte> dst);
AccessStatus key_write(Iommu& iommu, const fw::MkeyTable& keys, uint32_t pd, uint32_t key,
                       uint64_t va, uint32_t rights, bool local, std::span<const std::byte> src);

}  // namespace kbv::sim::engine
