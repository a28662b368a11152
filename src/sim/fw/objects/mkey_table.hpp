// SPDX-License-Identifier: BSD-3-Clause
//
// The model HCA's memory keys: what CREATE_MKEY established, and the
// translation the data-path engine uses for every local (lkey) and remote
// (rkey) access (docs/DESIGN.md "The HCA model": the device reaches host memory
// only through memory keys, as on silicon).
//
// A key is mkey_index << 8 | variant (driver.h mlx5_idx_to_mkey; mkc.mkey_7_0
// is the variant byte). translate() checks, in this order:
//   * the index names a live key and the low byte matches its variant
//     (else kInvalidKey); a key created with mkc.free = 1 is not usable
//     (kInvalidKey as well: PRM "MKC" free = the key is not valid);
//   * the key's PD equals the PD of the QP doing the access (IBTA 10.6.3.2:
//     an access through a key of another PD is a protection error);
//   * the requested rights are all granted by mkc lr/lw/rr/rw/a;
//   * [va, va + len) lies inside [start_addr, start_addr + len) (length64:
//     up to 2^64);
//   * MTT mode: each page of the range has a translation entry with rd_en
//     (device reads: local read, remote read, atomics) / wr_en (device
//     writes: local write, remote write, atomics) set (mlx5_ifc.h mtt_bits;
//     the kernel marks usable entries MLX5_IB_MTT_PRESENT = read | write).
// The result is the list of host IOVA ranges (consecutive pages whose IOVAs
// are contiguous merged into one range); the engine then accesses them
// through the IOMMU, which faults separately (IOVA not mapped). PA mode keys
// translate va -> va (no translation).
//
// Index allocation (mkey_index): round robin — each CREATE_MKEY takes the
// first free index after the one handed out last, wrapping after
// 2 + 2^log_max_mkey (indexes 0 and 1 are never used), so a destroyed key's index is reused only
// after the whole index space has been cycled, not by the next CREATE_MKEY (as the lowest-
// free-first allocation of the other object numbers would). Together with
// the driver's rotating variant byte (mlx5_ib assign_mkey_variant) a stale
// lkey/rkey does not name a newer region; the variant is checked on every
// translation.
//
// Threading: the table is written by the firmware thread (CREATE/DESTROY_MKEY,
// function reset). translate() and find() are const and allocation-free; a
// data-path thread may call them only while no MKEY command executes (the
// engine must serialise against the firmware thread, e.g. by running key
// updates through it).
#pragma once

#include "sim/fw/objects/handles.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace kbv::sim::fw {

// Rights an access needs (mkc a / rw / rr / lw / lr).
namespace mkey_access {
inline constexpr uint32_t kLocalRead = 1u << 0;
inline constexpr uint32_t kLocalWrite = 1u << 1;
inline constexpr uint32_t kRemoteRead = 1u << 2;
inline constexpr uint32_t kRemoteWrite = 1u << 3;
inline constexpr uint32_t kRemoteAtomic = 1u << 4;
}  // namespace mkey_access

// One MTT entry (mlx5_ifc.h mtt_bits): page IOVA and its enables.
struct MttEntry {
  uint64_t iova = 0;  // page address (ptag), page-size aligned
  bool rd_en = false;
  bool wr_en = false;
};

// Everything CREATE_MKEY established (mlx5_ifc.h mkc_bits).
struct Mkey {
  uint32_t index = 0;        // mkey_index (24 bits)
  uint8_t variant = 0;       // mkey_7_0
  bool free = false;         // mkc.free: created but not valid
  uint32_t access_mode = 0;  // prm::mkc_access_mode (kPa or kMtt)
  uint32_t rights = 0;       // mkey_access bits
  uint32_t pd = 0;
  uint64_t start_addr = 0;
  uint64_t len = 0;  // bytes; ignored when length64
  bool length64 = false;
  uint32_t log_page_size = 12;  // MTT page: 2^log_page_size bytes
  uint32_t translations_octword_size = 0;
  std::vector<MttEntry> mtt;        // the entries CREATE_MKEY carried (2 per octword)
  std::array<std::byte, 64> mkc{};  // the context as given (QUERY_MKEY)

  uint32_t key() const { return index << 8 | variant; }
};

// What translate() found wrong (the engine maps these to CQE syndromes:
// local protection 0x04 / remote access 0x13).
enum class MkeyFault : uint8_t {
  kNone = 0,
  kInvalidKey,     // no such key, variant mismatch or free key
  kPdMismatch,     // key of another protection domain
  kAccess,         // a right the key does not grant
  kOutOfBounds,    // outside [start_addr, start_addr + len)
  kMttNotPresent,  // page without translation or without rd_en / wr_en
  kTooManyRanges,  // the caller's output span is too small
};

struct TranslateResult {
  MkeyFault fault = MkeyFault::kNone;
  uint32_t ranges = 0;  // entries written to the output span
  bool ok() const { return fault == MkeyFault::kNone; }
};

struct IovaRange {
  uint64_t iova = 0;
  uint64_t len = 0;
};

class MkeyTable {
 public:
  // Index 0 is never handed out (a zero lkey is a programming error to catch),
  // nor index 1: with key byte 0 it is 0x100, MLX5_INVALID_LKEY (rdma-core
  // mlx5dv.h), which ends a receive WQE's scatter list.
  MkeyTable() = default;

  // Inserts `m`, assigning m.index (round robin over [2, min(2 + max,
  // 2^24)), see the file comment); nullopt when `max` keys are live.
  std::optional<uint32_t> insert(Mkey m, uint64_t max);
  const Mkey* find(uint32_t index) const;
  bool erase(uint32_t index);
  std::size_t size() const { return keys_.size(); }
  // Keys of protection domain pd (DEALLOC_PD in-use check).
  uint32_t count_pd(uint32_t pd) const;
  void clear();

  // See the file comment. `pd` is the PD of the accessing QP; `rights` a
  // combination of mkey_access bits. len 0 succeeds with no range after the
  // key, PD and rights checks.
  TranslateResult translate(uint32_t key, uint64_t va, uint64_t len, uint32_t rights, uint32_t pd,
                            std::span<IovaRange> out) const;

 private:
  static constexpr uint32_t kFirstIndex = 2;
  std::unordered_map<uint32_t, Mkey> keys_;
  uint32_t next_ = kFirstIndex;  // where the round-robin search starts
};

}  // namespace kbv::sim::fw
