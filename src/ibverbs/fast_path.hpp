// SPDX-License-Identifier: BSD-3-Clause
//
// Conversion rules between rdma-core's work requests / completions and
// kbv's (internal; the ops in fast_post.cpp / fast_cq.cpp / fast_qp_ex.cpp
// use them, tests/unit/ibverbs checks them). All inline: they are the data
// path.
//
// Send WRs (ibv_post_send(3), rdma-core 44 verbs.h):
//   opcode  IBV_WR_{SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM,
//           RDMA_READ, ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD} -> KBV_WR_*;
//           LOCAL_INV, BIND_MW, SEND_WITH_INV, TSO, DRIVER1, ATOMIC_WRITE
//           and unknown values: EINVAL (kbv has no such WQE).
//   flags   IBV_SEND_{FENCE, SIGNALED, SOLICITED, INLINE} -> KBV_SEND_*;
//           IBV_SEND_IP_CSUM (raw-packet / UD checksum offload) or unknown
//           bits: EINVAL.
//   imm     ibv's imm_data is big-endian (__be32); kbv's imm is CPU order.
//   sg_list ibv_sge and kbv_sge_t have one layout (asserted): kbv reads the
//           program's list in place.
//   UD      wr.ud.ah -> its kbv AH; remote_qkey with bit 31 set means the
//           QP's own Q_Key (IBTA 10.2.5, o10-7.1; rdma-core's mlx5
//           set_datagram_seg leaves it to the HCA, kbv's driver does not,
//           so the QP's qkey is substituted here).
// Errors (the return of ibv_post_send, as rdma-core's mlx5 gives them; see
// send_errno / post_errno): ENOMEM for a full queue (and, on the send side,
// too many SGEs, too much inline data, a QP not in RTS), EINVAL for a WR
// kbv refuses otherwise (bad opcode, flags, AH), EIO/ENODEV after a device
// failure.
//
// Completions (ibv_poll_cq(3); rdma-core providers/mlx5/cq.c
// handle_good_req / handle_responder / mlx5_handle_error_cqe, which decode
// the same CQE kbv decodes):
//   status   KBV_SUCCESS -> IBV_WC_SUCCESS, each kbv completion error ->
//            the IBV_WC_* of the same CQE syndrome, anything else ->
//            IBV_WC_GENERAL_ERR; vendor_err = the CQE's vendor syndrome.
//   opcode   KBV_WC_* -> IBV_WC_{SEND, RDMA_WRITE, RDMA_READ, COMP_SWAP,
//            FETCH_ADD, RECV, RECV_RDMA_WITH_IMM}.
//   imm      KBV_WC_WITH_IMM: imm_data = htobe32(imm), IBV_WC_WITH_IMM;
//            KBV_WC_WITH_INV: invalidated_rkey = imm (CPU order),
//            IBV_WC_WITH_INV.
//   GRH      KBV_WC_WITH_GRH -> IBV_WC_GRH.
//   RoCE fields, receives as mlx5's handle_responder fills them: slid =
//            the CQE's slid (0 on RoCE), dlid_path_bits = ml_path & 0x7f (0
//            on RoCE), sl = flags_rqpn bits 27:24, which on RoCE carry the
//            packet's l3 type (network_hdr_type) where the CQE says a GRH
//            came (0 otherwise), pkey_index = imm_inval_pkey & 0xffff (the
//            low half of the immediate / invalidated rkey when there is one,
//            else 0: RoCE has the one default P_Key at index 0). Send
//            completions: those fields 0.
#pragma once

#include <endian.h>
#include <errno.h>
#include <infiniband/verbs.h>

#include <kbv/kbv.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ibverbs/objects.hpp"

namespace kbv::ibverbs {

static_assert(sizeof(ibv_sge) == sizeof(kbv_sge_t));
static_assert(offsetof(ibv_sge, addr) == offsetof(kbv_sge_t, addr));
static_assert(offsetof(ibv_sge, length) == offsetof(kbv_sge_t, length));
static_assert(offsetof(ibv_sge, lkey) == offsetof(kbv_sge_t, lkey));

inline const kbv_sge_t* kbv_sges(const ibv_sge* s) { return reinterpret_cast<const kbv_sge_t*>(s); }

// errno of a kbv receive-post refusal, as rdma-core's mlx5 mlx5_post_recv /
// mlx5_post_srq_recv return them: ENOMEM for a full queue, EINVAL for a WR
// refused (too many SGEs, QP in RESET, ...); device failures as kbv.h maps
// them.
inline int post_errno(kbv_status_t st) {
  switch (st) {
    case KBV_ERR_QUEUE_FULL: return ENOMEM;
    case KBV_ERR_INVALID_ARGUMENT:
    case KBV_ERR_INVALID_HANDLE:
    case KBV_ERR_INVALID_STATE:
    case KBV_ERR_INVALID_QP_STATE:
    case KBV_ERR_INVALID_WR_TYPE:
    case KBV_ERR_TOO_MANY_SGE:
    case KBV_ERR_INLINE_TOO_LARGE: return EINVAL;
    default: return kbv_status_to_errno(st);
  }
}

// errno of a kbv send-post refusal, as mlx5's _mlx5_post_send returns them:
// ENOMEM also for more SGEs than max_send_sge, inline data above
// max_inline_data and a QP not yet in RTS (mlx5 checks num_sge against
// qp_state_max_gs, -1 before RTS); the rest as post_errno.
inline int send_errno(kbv_status_t st) {
  switch (st) {
    case KBV_ERR_TOO_MANY_SGE:
    case KBV_ERR_INLINE_TOO_LARGE:
    case KBV_ERR_INVALID_QP_STATE: return ENOMEM;
    default: return post_errno(st);
  }
}

inline constexpr unsigned kIbvSendFlags =
    IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE;

// IBV_SEND_{FENCE, SIGNALED, SOLICITED, INLINE} (bits 0..3) -> KBV_SEND_*.
inline constexpr uint8_t kSendFlags[16] = {
#define KBV_SF_(i)                                                         \
  static_cast<uint8_t>(((i)&IBV_SEND_FENCE ? KBV_SEND_FENCE : 0) |         \
                       ((i)&IBV_SEND_SIGNALED ? KBV_SEND_SIGNALED : 0) |   \
                       ((i)&IBV_SEND_SOLICITED ? KBV_SEND_SOLICITED : 0) | \
                       ((i)&IBV_SEND_INLINE ? KBV_SEND_INLINE : 0))
    KBV_SF_(0),  KBV_SF_(1),  KBV_SF_(2),  KBV_SF_(3),  KBV_SF_(4),  KBV_SF_(5),
    KBV_SF_(6),  KBV_SF_(7),  KBV_SF_(8),  KBV_SF_(9),  KBV_SF_(10), KBV_SF_(11),
    KBV_SF_(12), KBV_SF_(13), KBV_SF_(14), KBV_SF_(15),
#undef KBV_SF_
};
static_assert(IBV_SEND_FENCE == 1 && IBV_SEND_SIGNALED == 2 && IBV_SEND_SOLICITED == 4 &&
              IBV_SEND_INLINE == 8);

// IBV_SEND_* -> KBV_SEND_*; -1 for a flag kbv lacks.
inline int64_t send_flags(unsigned f) {
  if (f & ~kIbvSendFlags) [[unlikely]]
    return -1;
  return kSendFlags[f];
}

// IBV_WR_* (0..6) -> KBV_WR_*.
inline constexpr uint8_t kWrOpcode[7] = {
    KBV_WR_RDMA_WRITE, KBV_WR_RDMA_WRITE_IMM, KBV_WR_SEND,      KBV_WR_SEND_IMM,
    KBV_WR_RDMA_READ,  KBV_WR_ATOMIC_CS,      KBV_WR_ATOMIC_FA,
};
static_assert(IBV_WR_RDMA_WRITE == 0 && IBV_WR_RDMA_WRITE_WITH_IMM == 1 && IBV_WR_SEND == 2 &&
              IBV_WR_SEND_WITH_IMM == 3 && IBV_WR_RDMA_READ == 4 &&
              IBV_WR_ATOMIC_CMP_AND_SWP == 5 && IBV_WR_ATOMIC_FETCH_AND_ADD == 6);

// The effective Q_Key of a UD send.
inline uint32_t ud_qkey(const Qp& qp, uint32_t remote_qkey) {
  return (remote_qkey & 0x80000000u) ? qp.qkey : remote_qkey;
}

// The opcode as the integer a C program stored (any value): loading an enum
// object whose value is outside the enum's range is undefined in C++.
static_assert(sizeof(ibv_wr_opcode) == sizeof(unsigned));
inline unsigned raw_opcode(const ibv_send_wr& w) {
  unsigned v;
  std::memcpy(&v, &w.opcode, sizeof v);
  return v;
}

// One ibv_send_wr -> kbv_send_wr_t. Returns 0 or EINVAL.
inline int to_kbv_send_wr(const Qp& qp, const ibv_send_wr& w, kbv_send_wr_t& k) {
  const unsigned op = raw_opcode(w);
  if (op > IBV_WR_ATOMIC_FETCH_AND_ADD || (w.send_flags & ~kIbvSendFlags) || w.num_sge < 0 ||
      (w.num_sge > 0 && w.sg_list == nullptr)) [[unlikely]]
    return EINVAL;
  k.wr_id = w.wr_id;
  k.opcode = kWrOpcode[op];
  k.flags = kSendFlags[w.send_flags];
  k.sg_list = kbv_sges(w.sg_list);
  k.num_sge = static_cast<uint32_t>(w.num_sge);
  // imm_data is read by kbv only for the *_IMM opcodes.
  k.imm = be32toh(w.imm_data);
  k.reserved = 0;
  if (op >= IBV_WR_ATOMIC_CMP_AND_SWP) {
    k.remote_addr = w.wr.atomic.remote_addr;
    k.rkey = w.wr.atomic.rkey;
    k.compare_add = w.wr.atomic.compare_add;
    k.swap = w.wr.atomic.swap;
  } else {
    k.remote_addr = w.wr.rdma.remote_addr;
    k.rkey = w.wr.rdma.rkey;
    k.compare_add = 0;
    k.swap = 0;
  }
  if (qp.qpx.qp_base.qp_type == IBV_QPT_UD) {
    if (w.wr.ud.ah == nullptr) [[unlikely]]
      return EINVAL;
    k.ah = to_ah(w.wr.ud.ah)->handle;
    k.remote_qpn = w.wr.ud.remote_qpn;
    k.remote_qkey = ud_qkey(qp, w.wr.ud.remote_qkey);
    // wr.ud overlays wr.rdma: no remote address on UD.
    k.remote_addr = 0;
    k.rkey = 0;
  } else {
    k.ah = KBV_HANDLE_NONE;
    k.remote_qpn = 0;
    k.remote_qkey = 0;
  }
  return 0;
}

inline int to_kbv_recv_wr(const ibv_recv_wr& w, kbv_recv_wr_t& k) {
  if (w.num_sge < 0 || (w.num_sge > 0 && w.sg_list == nullptr)) return EINVAL;
  k.wr_id = w.wr_id;
  k.sg_list = kbv_sges(w.sg_list);
  k.num_sge = static_cast<uint32_t>(w.num_sge);
  k.reserved = 0;
  return 0;
}

inline ibv_wc_status wc_status(int32_t st) {
  switch (st) {
    case KBV_SUCCESS: return IBV_WC_SUCCESS;
    case KBV_ERR_LOCAL_LENGTH: return IBV_WC_LOC_LEN_ERR;
    case KBV_ERR_LOCAL_QP_OPERATION: return IBV_WC_LOC_QP_OP_ERR;
    case KBV_ERR_LOCAL_PROTECTION: return IBV_WC_LOC_PROT_ERR;
    case KBV_ERR_WR_FLUSHED: return IBV_WC_WR_FLUSH_ERR;
    case KBV_ERR_MW_BIND: return IBV_WC_MW_BIND_ERR;
    case KBV_ERR_BAD_RESPONSE: return IBV_WC_BAD_RESP_ERR;
    case KBV_ERR_LOCAL_ACCESS: return IBV_WC_LOC_ACCESS_ERR;
    case KBV_ERR_REMOTE_INVALID_REQUEST: return IBV_WC_REM_INV_REQ_ERR;
    case KBV_ERR_REMOTE_ACCESS: return IBV_WC_REM_ACCESS_ERR;
    case KBV_ERR_REMOTE_OPERATION: return IBV_WC_REM_OP_ERR;
    case KBV_ERR_RETRY_EXCEEDED: return IBV_WC_RETRY_EXC_ERR;
    case KBV_ERR_RNR_RETRY_EXCEEDED: return IBV_WC_RNR_RETRY_EXC_ERR;
    case KBV_ERR_REMOTE_ABORTED: return IBV_WC_REM_ABORT_ERR;
    default: return IBV_WC_GENERAL_ERR;
  }
}

// KBV_WC_* -> IBV_WC_* (KBV_WC_UNKNOWN comes with an error status; its
// opcode is not defined, as ibv_poll_cq(3) says for errors).
inline constexpr ibv_wc_opcode kWcOpcode[8] = {
    IBV_WC_SEND,      IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,          IBV_WC_COMP_SWAP,
    IBV_WC_FETCH_ADD, IBV_WC_RECV,       IBV_WC_RECV_RDMA_WITH_IMM, IBV_WC_SEND,
};
static_assert(KBV_WC_RECV_RDMA_WITH_IMM == 6 && KBV_WC_UNKNOWN == 7);
inline ibv_wc_opcode wc_opcode(uint32_t op) { return op < 8 ? kWcOpcode[op] : IBV_WC_SEND; }

// KBV_WC_WITH_{IMM, GRH, INV} (bits 0..2) -> IBV_WC_{WITH_IMM, GRH, WITH_INV}.
inline constexpr uint8_t kWcFlags[8] = {
    0,
    IBV_WC_WITH_IMM,
    IBV_WC_GRH,
    IBV_WC_WITH_IMM | IBV_WC_GRH,
    IBV_WC_WITH_INV,
    IBV_WC_WITH_INV | IBV_WC_WITH_IMM,
    IBV_WC_WITH_INV | IBV_WC_GRH,
    IBV_WC_WITH_INV | IBV_WC_WITH_IMM | IBV_WC_GRH,
};
static_assert(KBV_WC_WITH_IMM == 1 && KBV_WC_WITH_GRH == 2 && KBV_WC_WITH_INV == 4);
inline unsigned wc_flags(uint32_t f) { return kWcFlags[f & 7]; }

inline bool is_recv(uint32_t op) { return op == KBV_WC_RECV || op == KBV_WC_RECV_RDMA_WITH_IMM; }

// mlx5's sl for a RoCE receive: flags_rqpn bits 27:24 (see the header).
inline uint8_t wc_sl(const kbv_wc_t& k) {
  return (k.flags & KBV_WC_WITH_GRH) ? static_cast<uint8_t>(k.network_hdr_type & 0xf) : k.sl;
}
// mlx5's pkey_index: imm_inval_pkey & 0xffff.
inline uint16_t wc_pkey_index(const kbv_wc_t& k) {
  return (k.flags & (KBV_WC_WITH_IMM | KBV_WC_WITH_INV)) ? static_cast<uint16_t>(k.imm & 0xffff)
                                                         : 0;
}

inline void to_ibv_wc(const kbv_wc_t& k, ibv_wc& w) {
  w.wr_id = k.wr_id;
  w.status = k.status == KBV_SUCCESS ? IBV_WC_SUCCESS : wc_status(k.status);
  w.opcode = wc_opcode(k.opcode);
  w.vendor_err = k.vendor_err;
  w.byte_len = k.byte_len;
  w.qp_num = k.qp_num;
  w.wc_flags = wc_flags(k.flags);
  if (k.flags & KBV_WC_WITH_INV)
    w.invalidated_rkey = k.imm;
  else
    w.imm_data = htobe32(k.imm);
  if (is_recv(k.opcode)) {
    w.src_qp = k.src_qp;
    w.pkey_index = wc_pkey_index(k);
    w.slid = k.slid;
    w.sl = wc_sl(k);
    w.dlid_path_bits = 0;
  } else {
    w.src_qp = 0;
    w.pkey_index = 0;
    w.slid = 0;
    w.sl = 0;
    w.dlid_path_bits = 0;
  }
}

}  // namespace kbv::ibverbs
