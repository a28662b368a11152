// SPDX-License-Identifier: BSD-3-Clause
//
// Memory key commands: CREATE_MKEY 0x200, QUERY_MKEY 0x201, DESTROY_MKEY
// 0x202 (hca/prm/mkey.hpp from mlx5_ifc.h create_mkey_in/out, mkc, mtt,
// query_mkey_in/out, destroy_mkey_in).
//
// Shapes and units:
//   * a key (lkey = rkey for these keys) is mkey_index << 8 | mkey_7_0
//     (driver.h mlx5_idx_to_mkey): firmware picks the index, MkeyAttr the
//     low byte;
//   * MTT mode: `mtt` lists the IOVA of every translation page of
//     2^log_page_size bytes that [start_addr, start_addr + len) touches, in
//     order; each is sent as an mtt entry with rd_en/wr_en (the kernel's
//     MLX5_IB_MTT_PRESENT = read | write; the device refuses a page without
//     them). translations_octword_size = ceil(entries / 2) (two 8-byte MTTs
//     per 16-byte octword); an odd count is padded with a zero entry;
//   * PA mode: no translation (mtt must be empty).
// Errors before submission (no callback): KBV_ERR_INVALID_ARGUMENT (pd or
// log_page_size out of range, MTT entries with PA mode, a page address not
// aligned to the page size); otherwise firmware statuses in the callback
// (cmd/exec.hpp).
//
// Threading: as CmdQueue.
#pragma once

#include <cstdint>
#include <vector>

#include "hca/cmd/exec.hpp"
#include "hca/prm/mkey.hpp"

namespace kbv::hca::cmd {

struct MkeyAttr {
  uint32_t access_mode = prm::mkc_access_mode::kMtt;
  uint32_t pd = 0;
  uint64_t start_addr = 0;  // virtual address of byte 0 of the region
  uint64_t len = 0;         // bytes
  uint32_t log_page_size = 12;
  // Access rights (mkc lr/lw/rr/rw/a; IBTA 10.6.3.1: rw and a need lw).
  bool lr = true, lw = false, rr = false, rw = false, a = false;
  uint8_t mkey_7_0 = 0;
  std::vector<uint64_t> mtt;  // page IOVAs
  bool mtt_rd_en = true, mtt_wr_en = true;
};

// Result: the key (mkey_index << 8 | mkey_7_0).
Status create_mkey(CmdQueue& q, const MkeyAttr& a, Done<uint32_t> done);
Status destroy_mkey(CmdQueue& q, uint32_t mkey, DoneStatus done);

// QUERY_MKEY: the mkc as firmware holds it and up to 4 first MTT entries.
struct MkeyInfo {
  bool free = false;
  uint32_t access_mode = 0;
  uint32_t pd = 0;
  uint64_t start_addr = 0, len = 0;
  uint32_t log_page_size = 0;
  bool lr = false, lw = false, rr = false, rw = false, a = false;
  uint8_t mkey_7_0 = 0;
  uint32_t qpn = 0;
  uint32_t translations_octword_size = 0;
  std::vector<uint64_t> mtt;       // first entries as page IOVAs (flags cleared)
  std::vector<uint8_t> mtt_flags;  // bit 0 rd_en, bit 1 wr_en, per entry
};
Status query_mkey(CmdQueue& q, uint32_t mkey, Done<MkeyInfo> done);

}  // namespace kbv::hca::cmd
