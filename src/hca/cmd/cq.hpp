// SPDX-License-Identifier: BSD-3-Clause
//
// Completion queue commands: CREATE_CQ 0x400, DESTROY_CQ 0x401, QUERY_CQ
// 0x402, MODIFY_CQ 0x403 (moderation: op_mod 0; resize: op_mod 1)
// (hca/prm/cq.hpp from mlx5_ifc.h create_cq_in/out, cqc, query_cq_out,
// modify_cq_in; PRM "Completion Queue Context", "MODIFY_CQ").
//
// Shapes and units: log_cq_size = log2(CQEs, 64 bytes each); the buffer is
// pas[] (page IOVAs) of 4 KiB << log_page_size pages, page_offset in 64ths of
// a page; dbr_addr the 8-byte doorbell record (8-byte aligned); uar_page the
// UAR index whose +0x20 doorbell arms the CQ; c_eqn the EQ for completion
// events; cq_period in microseconds, cq_max_count in CQEs.
// Errors before submission (no callback): KBV_ERR_INVALID_ARGUMENT (a field
// wider than its cqc field, empty pas); firmware statuses in the callback
// (LIM_ERR -> KBV_ERR_LIMIT_EXCEEDED, RES_BUSY -> KBV_ERR_BUSY, a resize
// below the outstanding CQEs -> KBV_ERR_FW_BAD_SIZE).
//
// Threading: as CmdQueue.
#pragma once

#include <cstdint>
#include <vector>

#include "hca/cmd/exec.hpp"

namespace kbv::hca::cmd {

struct CqAttr {
  uint32_t log_cq_size = 0;
  uint32_t uar_page = 0;
  uint32_t c_eqn = 0;
  uint64_t dbr_addr = 0;
  uint32_t log_page_size = 0;  // 4 KiB << log_page_size pages
  uint32_t page_offset = 0;
  std::vector<uint64_t> pas;
  uint32_t cq_period = 0;       // us
  uint32_t cq_max_count = 0;    // CQEs
  uint32_t cq_period_mode = 0;  // prm::cq_period_mode
  bool oi = false;              // overrun ignore
};
// Result: the 24-bit cqn.
Status create_cq(CmdQueue& q, const CqAttr& a, Done<uint32_t> done);
Status destroy_cq(CmdQueue& q, uint32_t cqn, DoneStatus done);

struct CqInfo {
  uint32_t status = 0;  // prm::cqc_status
  uint32_t st = 0;      // prm::cqc_st (arm state)
  uint32_t log_cq_size = 0, uar_page = 0, c_eqn = 0;
  uint32_t log_page_size = 0, page_offset = 0;
  uint32_t cq_period = 0, cq_max_count = 0, cq_period_mode = 0;
  bool oi = false;
  uint64_t dbr_addr = 0;
  uint32_t producer_counter = 0, consumer_counter = 0;
  std::vector<uint64_t> pas;  // the first `max_pas` page addresses
};
// QUERY_CQ; asks for room for `max_pas` page addresses after the context.
Status query_cq(CmdQueue& q, uint32_t cqn, uint32_t max_pas, Done<CqInfo> done);

// MODIFY_CQ op_mod 0: `select` is prm::modify_cq_field_select bits naming the
// fields applied.
struct CqModeration {
  uint32_t select = 0;
  uint32_t cq_period = 0, cq_max_count = 0;
  bool oi = false;
  uint32_t c_eqn = 0;
};
Status modify_cq(CmdQueue& q, uint32_t cqn, const CqModeration& m, DoneStatus done);

// MODIFY_CQ op_mod 1 (resize): the new size and buffer (resize_field_select
// log_cq_size | page_offset | log_page_size).
struct CqResize {
  uint32_t log_cq_size = 0;
  uint32_t log_page_size = 0;
  uint32_t page_offset = 0;
  std::vector<uint64_t> pas;
};
Status resize_cq(CmdQueue& q, uint32_t cqn, const CqResize& r, DoneStatus done);

}  // namespace kbv::hca::cmd
