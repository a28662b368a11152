// SPDX-License-Identifier: BSD-3-Clause
//
// Shared receive queue commands: CREATE_SRQ 0x700, DESTROY_SRQ 0x701,
// QUERY_SRQ 0x702 and ARM_RQ 0x703 (op_mod 1 = SRQ) (hca/prm/srq.hpp from
// mlx5_ifc.h create_srq_in/out, srqc, query_srq_out, arm_rq_in; PRM "SRQ
// Context", "ARM_RQ").
//
// Shapes and units: log_srq_size = log2(receive WQEs); log_rq_stride =
// log2(WQE bytes / 16); the buffer is pas[] of 4 KiB << log_page_size pages;
// dbr_addr the doorbell record (8-byte aligned); lwm the limit watermark in
// WQEs (0: no limit event; ARM_RQ sets it and arms the SRQ limit event,
// EQE 0x14, which fires once).
// Errors before submission: KBV_ERR_INVALID_ARGUMENT (field ranges, empty
// pas); firmware statuses in the callback.
//
// Threading: as CmdQueue.
#pragma once

#include <cstdint>
#include <vector>

#include "hca/cmd/exec.hpp"

namespace kbv::hca::cmd {

struct SrqAttr {
  uint32_t log_srq_size = 0;
  uint32_t log_rq_stride = 0;
  uint32_t pd = 0;
  uint32_t cqn = 0;  // 0: none
  uint64_t dbr_addr = 0;
  uint32_t lwm = 0;
  uint32_t log_page_size = 0;
  uint32_t page_offset = 0;
  std::vector<uint64_t> pas;
};
// Result: the 24-bit srqn.
Status create_srq(CmdQueue& q, const SrqAttr& a, Done<uint32_t> done);
Status destroy_srq(CmdQueue& q, uint32_t srqn, DoneStatus done);

struct SrqInfo {
  uint32_t state = 0;  // prm::srqc_state
  uint32_t log_srq_size = 0, log_rq_stride = 0, pd = 0, cqn = 0;
  uint32_t lwm = 0, wqe_cnt = 0;
  uint32_t log_page_size = 0, page_offset = 0;
  uint64_t dbr_addr = 0;
};
Status query_srq(CmdQueue& q, uint32_t srqn, Done<SrqInfo> done);

// ARM_RQ for an SRQ: sets the limit watermark and arms the limit event.
Status arm_rq(CmdQueue& q, uint32_t srqn, uint32_t lwm, DoneStatus done);

}  // namespace kbv::hca::cmd
