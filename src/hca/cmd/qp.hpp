// SPDX-License-Identifier: BSD-3-Clause
//
// Queue pair commands: CREATE_QP 0x500, DESTROY_QP 0x501, QUERY_QP 0x50B and
// the state transitions RST2INIT 0x502, INIT2INIT 0x50E, INIT2RTR 0x503,
// RTR2RTS 0x504, RTS2RTS 0x505, SQERR2RTS 0x506, SQD_RTS 0x50C, 2ERR 0x507,
// 2RST 0x50A (hca/prm/qp_cmd.hpp, qpc.hpp from mlx5_ifc.h; PRM "QP State
// Transitions"; IBTA Vol 1 10.3.1 / Table 91 "QP state transition
// properties").
//
// What each transition carries (IBTA Table 91 "required" attributes; the
// model and silicon read them whether or not a mask bit is set):
//   RST2INIT   path.vhca_port_num, path.pkey_index; RC: rre, rwe, rae
//              (+ atomic_mode); UC: rwe; UD: q_key
//   INIT2RTR   mtu, log_msg_max; RC/UC: the primary path (grh, src_addr_index,
//              rgid_rip, rmac, udp_sport, hop_limit, tclass, flow_label, sl,
//              stat_rate), remote_qpn, next_rcv_psn; RC: log_rra_max,
//              min_rnr_nak
//   RTR2RTS    next_send_psn; RC: log_sra_max, retry_count, rnr_retry,
//              path.ack_timeout
//   INIT2INIT, RTS2RTS, SQERR2RTS, SQD_RTS: nothing required
//   2ERR, 2RST: only the qpn
// Optional attributes are applied when their prm::qp_optpar bit is in
// `opt_param_mask` (which the command carries as is; firmware refuses a bit
// the transition does not accept for the service type: the kernel's qp.c
// opt_mask table): kRre/kRwe/kRae (+atomic_mode), kPkeyIndex, kPriPort,
// kQKey, kRnrTimeout (min_rnr_nak), kPmState, kSraMax, kRraMax,
// kRetryCount, kRnrRetry, kAckTimeout, kSrqn (+ rq_type SRQ), kCqnRcv.
// kAltAddrPath is refused before submission (KBV_ERR_NOT_SUPPORTED: kbv has
// no alternate path / automatic path migration).
//
// Units: PSNs 24 bits (IBTA 9.7); mtu is the IB code (prm::qpc_mtu);
// ack_timeout 4.096 us << n; log_* are log2 of counts; q_key 32 bits.
// Errors before submission: KBV_ERR_INVALID_ARGUMENT (a value wider than its
// qpc field, empty pas); firmware statuses in the callback (an illegal
// transition is BAD_QP_STATE -> KBV_ERR_INVALID_QP_STATE; LIM_ERR ->
// KBV_ERR_LIMIT_EXCEEDED; DESTROY of an attached QP RES_BUSY -> KBV_ERR_BUSY).
//
// Threading: as CmdQueue.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "hca/cmd/exec.hpp"
#include "hca/prm/qpc.hpp"

namespace kbv::hca::cmd {

// The primary address path for RoCE (mlx5_ifc.h ads).
struct AddressPath {
  uint8_t vhca_port_num = 1;  // 1-based
  uint16_t pkey_index = 0;
  bool grh = true;                 // always on RoCE
  uint8_t src_addr_index = 0;      // SGID (RoCE address table) index
  std::array<uint8_t, 16> rgid{};  // destination GID / IP, network order
  uint64_t rmac = 0;               // next-hop MAC, 48 bits
  uint16_t udp_sport = 0;          // RoCEv2 source port; 0 = device picks
  uint8_t hop_limit = 64;
  uint8_t tclass = 0;
  uint32_t flow_label = 0;  // 20 bits
  uint8_t sl = 0;
  uint8_t stat_rate = 0;
  uint8_t ack_timeout = 0;  // 4.096 us << n, 0 = infinite
};

struct QpCreateAttr {
  uint32_t st = prm::qpc_st::kRc;
  uint32_t pd = 0;
  uint32_t uar_page = 0;
  uint32_t cqn_snd = 0;
  uint32_t cqn_rcv = 0;
  bool no_sq = false;
  uint32_t log_sq_size = 0;  // 64-byte basic blocks
  uint32_t rq_type = prm::qpc_rq_type::kNonZeroRq;
  uint32_t log_rq_size = 0;    // receive WQEs
  uint32_t log_rq_stride = 0;  // WQE = 16 << log_rq_stride bytes
  uint32_t srqn = 0;           // rq_type SRQ
  uint64_t dbr_addr = 0;
  uint32_t log_page_size = 0;
  uint32_t page_offset = 0;
  std::vector<uint64_t> pas;  // RQ first, then SQ
  uint32_t user_index = 0;
  uint32_t log_msg_max = 0;
  uint32_t pm_state = prm::qpc_pm_state::kMigrated;  // as the kernel's mlx5_ib
  // CQE timestamp format (prm::qpc_ts_format): the kernel's mlx5_ib
  // get_qp_ts_format asks for FREE_RUNNING when the device offers it, else
  // DEFAULT.
  uint32_t ts_format = prm::qpc_ts_format::kFreeRunning;
};
// Result: the 24-bit qpn. The QP starts in RESET.
Status create_qp(CmdQueue& q, const QpCreateAttr& a, Done<uint32_t> done);
Status destroy_qp(CmdQueue& q, uint32_t qpn, DoneStatus done);

// Attributes of the transitions (see the table above for what each reads).
struct QpAttr {
  AddressPath path;
  uint32_t q_key = 0;
  bool rre = false, rwe = false, rae = false;
  uint32_t atomic_mode = 0;  // prm::qpc_atomic_mode, with rae
  uint32_t mtu = prm::qpc_mtu::k1kBytes;
  uint32_t log_msg_max = 0;
  uint32_t remote_qpn = 0;
  uint32_t next_rcv_psn = 0;
  uint32_t next_send_psn = 0;
  uint32_t min_rnr_nak = 0;
  uint32_t log_rra_max = 0, log_sra_max = 0;
  uint32_t retry_count = 0, rnr_retry = 0;
  uint32_t pm_state = prm::qpc_pm_state::kMigrated;
  uint32_t srqn = 0;     // with kSrqn
  uint32_t cqn_rcv = 0;  // with kCqnRcv
};

enum class QpTransition : uint8_t {
  kRst2Init,
  kInit2Init,
  kInit2Rtr,
  kRtr2Rts,
  kRts2Rts,
  kSqErr2Rts,
  kSqd2Rts,
  kToErr,
  kToRst,
};
prm::Opcode transition_opcode(QpTransition t);

// The transition command for a QP of service type `st` (prm::qpc_st).
Status modify_qp(CmdQueue& q, QpTransition t, uint32_t qpn, uint32_t st, const QpAttr& a,
                 uint32_t opt_param_mask, DoneStatus done);
// One function per command (the same encoder).
Status rst2init_qp(CmdQueue& q, uint32_t qpn, uint32_t st, const QpAttr& a, uint32_t opt,
                   DoneStatus done);
Status init2init_qp(CmdQueue& q, uint32_t qpn, uint32_t st, const QpAttr& a, uint32_t opt,
                    DoneStatus done);
Status init2rtr_qp(CmdQueue& q, uint32_t qpn, uint32_t st, const QpAttr& a, uint32_t opt,
                   DoneStatus done);
Status rtr2rts_qp(CmdQueue& q, uint32_t qpn, uint32_t st, const QpAttr& a, uint32_t opt,
                  DoneStatus done);
Status rts2rts_qp(CmdQueue& q, uint32_t qpn, uint32_t st, const QpAttr& a, uint32_t opt,
                  DoneStatus done);
Status sqerr2rts_qp(CmdQueue& q, uint32_t qpn, uint32_t st, const QpAttr& a, uint32_t opt,
                    DoneStatus done);
Status sqd2rts_qp(CmdQueue& q, uint32_t qpn, uint32_t st, const QpAttr& a, uint32_t opt,
                  DoneStatus done);
Status qp_2err(CmdQueue& q, uint32_t qpn, DoneStatus done);
Status qp_2rst(CmdQueue& q, uint32_t qpn, DoneStatus done);

// QUERY_QP, parsed.
struct QpInfo {
  uint32_t state = 0;  // prm::qp_state
  uint32_t st = 0;
  uint32_t pd = 0;
  uint32_t mtu = 0, log_msg_max = 0;
  uint32_t remote_qpn = 0;
  uint32_t next_send_psn = 0, next_rcv_psn = 0, last_acked_psn = 0;
  uint32_t q_key = 0;
  bool rre = false, rwe = false, rae = false;
  uint32_t min_rnr_nak = 0, retry_count = 0, rnr_retry = 0;
  uint32_t log_sra_max = 0, log_rra_max = 0;
  uint32_t cqn_snd = 0, cqn_rcv = 0;
  uint32_t rq_type = 0, srqn = 0;
  uint32_t log_sq_size = 0, log_rq_size = 0, log_rq_stride = 0;
  bool no_sq = false;
  uint32_t uar_page = 0, user_index = 0, pm_state = 0;
  uint64_t dbr_addr = 0;
  AddressPath path;
};
Status query_qp(CmdQueue& q, uint32_t qpn, Done<QpInfo> done);

}  // namespace kbv::hca::cmd
