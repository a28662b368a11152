// SPDX-License-Identifier: BSD-3-Clause
#include "hca/dp/cq.hpp"

#include <endian.h>

#include <cstddef>
#include <cstring>

#include "common/log.hpp"
#include "hca/objects/cq.hpp"
#include "platform/mmio.hpp"

namespace kbv::hca {

namespace {
constexpr const char* kLog = "hca.cq";

// mlx5dv.h layouts the decoder relies on (docs/PRM.md "Data path" CQE64 offsets).
static_assert(sizeof(mlx5_cqe64) == 64);
static_assert(offsetof(mlx5_cqe64, flags_rqpn) == 24);
static_assert(offsetof(mlx5_cqe64, srqn_uidx) == 32);
static_assert(offsetof(mlx5_cqe64, imm_inval_pkey) == 36);
static_assert(offsetof(mlx5_cqe64, byte_cnt) == 44);
static_assert(offsetof(mlx5_cqe64, timestamp) == 48);
static_assert(offsetof(mlx5_cqe64, sop_drop_qpn) == 56);
static_assert(offsetof(mlx5_cqe64, wqe_counter) == 60);
static_assert(offsetof(mlx5_cqe64, op_own) == 63);
static_assert(sizeof(mlx5_err_cqe) == 64);
static_assert(offsetof(mlx5_err_cqe, vendor_err_synd) == 54);
static_assert(offsetof(mlx5_err_cqe, syndrome) == 55);

// The requester opcode of a WQE (rdma-core cq.c handle_good_req).
WcOpcode req_opcode(uint8_t mlx5_op) {
  switch (mlx5_op) {
    case MLX5_OPCODE_RDMA_WRITE:
    case MLX5_OPCODE_RDMA_WRITE_IMM: return WcOpcode::kRdmaWrite;
    case MLX5_OPCODE_SEND:
    case MLX5_OPCODE_SEND_IMM: return WcOpcode::kSend;
    case MLX5_OPCODE_RDMA_READ: return WcOpcode::kRdmaRead;
    case MLX5_OPCODE_ATOMIC_CS: return WcOpcode::kAtomicCs;
    case MLX5_OPCODE_ATOMIC_FA: return WcOpcode::kAtomicFa;
    default: return WcOpcode::kUnknown;
  }
}
}  // namespace

Result<CqPoller> CqPoller::create(const CqRing& ring, uint32_t ci) {
  if (ring.buf == nullptr || ring.dbrec == nullptr || ring.ncqe < 2 || ring.ncqe > (1u << 23) ||
      (ring.ncqe & (ring.ncqe - 1)) != 0)
    return Status{KBV_ERR_INVALID_ARGUMENT};
  CqPoller p;
  p.ring_ = ring;
  p.ci_ = ci;
  return p;
}

Result<CqPoller> CqPoller::for_cq(Cq& cq) {
  if (!cq.alive()) return Status{KBV_ERR_INVALID_ARGUMENT};
  auto p = create(CqRing{cq.mem().buf(), cq.ncqe(), cq.mem().dbrec(), cq.cqn()}, cq.ci());
  if (p) p->cq_ = &cq;
  return p;
}

Status CqPoller::attach(uint32_t qpn, SendQueue* sq, RecvQueue* rq, SrqQueue* srq) {
  if ((rq && srq) || qpn > 0xFFFFFF) return Status{KBV_ERR_INVALID_ARGUMENT};
  if (!qps_.emplace(qpn, Queues{sq, rq, srq}).second) return Status{KBV_ERR_ALREADY_EXISTS};
  last_qpn_ = 0xFFFFFFFF;
  return Status::ok();
}

Status CqPoller::detach(uint32_t qpn) {
  last_qpn_ = 0xFFFFFFFF;
  return qps_.erase(qpn) ? Status::ok() : Status{KBV_ERR_NOT_FOUND};
}

namespace {
// Writes every member of wc once (kbv_wc_t's layout: no zero-fill first).
[[gnu::always_inline]] inline void fill(WorkCompletion& wc, uint64_t wr_id, kbv_status_t status,
                                        WcOpcode opcode, uint32_t byte_len, uint32_t imm,
                                        uint32_t flags, uint32_t qpn, uint32_t src_qp,
                                        uint8_t l3_type = 0, uint8_t syndrome = 0,
                                        uint8_t vendor_err = 0) {
  wc.wr_id = wr_id;
  wc.status = status;
  wc.opcode = opcode;
  wc.byte_len = byte_len;
  wc.imm = imm;
  wc.flags = flags;
  wc.qpn = qpn;
  wc.src_qp = src_qp;
  wc.slid = 0;
  wc.sl = 0;
  wc.syndrome = syndrome;
  wc.vendor_err = vendor_err;
  wc.l3_type = l3_type;
  std::memset(wc.reserved, 0, sizeof wc.reserved);
}

// A good requester (MLX5_CQE_REQ) or responder CQE whose work request is
// wr_id (rdma-core cq.c handle_good_req / handle_responder).
[[gnu::always_inline]] inline void decode_good(const mlx5_cqe64& cqe, uint8_t opcode,
                                               uint64_t wr_id, uint32_t qpn, WorkCompletion& wc) {
  if (opcode == MLX5_CQE_REQ) {
    const uint8_t wqe_op = static_cast<uint8_t>(be32toh(cqe.sop_drop_qpn) >> 24);
    const WcOpcode op = req_opcode(wqe_op);
    uint32_t len = 0;
    if (op == WcOpcode::kRdmaRead)
      len = be32toh(cqe.byte_cnt);
    else if (op == WcOpcode::kAtomicCs || op == WcOpcode::kAtomicFa)
      len = 8;
    // handle_good_req: SEND_IMM / RDMA_WRITE_IMM completions say WITH_IMM
    // (imm itself is the responder's; 0 here).
    const uint32_t flags = (wqe_op == MLX5_OPCODE_SEND_IMM || wqe_op == MLX5_OPCODE_RDMA_WRITE_IMM)
                               ? wc_flags::kImm
                               : 0;
    fill(wc, wr_id, KBV_SUCCESS, op, len, 0, flags, qpn, 0);
    return;
  }
  const uint32_t len = be32toh(cqe.byte_cnt);
  if (opcode == MLX5_CQE_RESP_SEND_INV) {
    fill(wc, wr_id, KBV_SUCCESS, WcOpcode::kRecv, len, be32toh(cqe.imm_inval_pkey), wc_flags::kInv,
         qpn, 0);
    return;
  }
  const bool imm = opcode == MLX5_CQE_RESP_SEND_IMM || opcode == MLX5_CQE_RESP_WR_IMM;
  const uint32_t fr = be32toh(cqe.flags_rqpn);
  const bool grh = ((fr >> 28) & 3) != 0;
  fill(wc, wr_id, KBV_SUCCESS,
       opcode == MLX5_CQE_RESP_WR_IMM ? WcOpcode::kRecvRdmaImm : WcOpcode::kRecv, len,
       imm ? be32toh(cqe.imm_inval_pkey) : 0,
       (imm ? wc_flags::kImm : 0) | (grh ? wc_flags::kGrh : 0), qpn, fr & 0xFFFFFF,
       grh ? static_cast<uint8_t>((fr >> 24) & 3) : 0);
}

bool is_responder(uint8_t opcode) {
  return opcode == MLX5_CQE_RESP_SEND || opcode == MLX5_CQE_RESP_SEND_IMM ||
         opcode == MLX5_CQE_RESP_WR_IMM || opcode == MLX5_CQE_RESP_SEND_INV;
}
}  // namespace

bool CqPoller::lookup(uint32_t qpn, uint8_t opcode, WorkCompletion& wc) {
  auto it = qps_.find(qpn);
  if (it == qps_.end()) {
    log::warn(kLog, "cq {:#x}: CQE opcode {} for qpn {:#x} not attached", ring_.cqn, opcode, qpn);
    fill(wc, 0, KBV_ERR_INVALID_HANDLE, WcOpcode::kUnknown, 0, 0, 0, qpn, 0);
    return false;
  }
  last_qpn_ = qpn;
  last_ = it->second;
  return true;
}

void CqPoller::decode_slow(const mlx5_cqe64& cqe, uint8_t opcode, WorkCompletion& wc) {
  const uint32_t sop = be32toh(cqe.sop_drop_qpn);
  const uint32_t qpn = sop & 0xFFFFFF;
  const Queues& q = last_;
  const uint16_t wqe_counter = be16toh(cqe.wqe_counter);
  const bool requester = opcode == MLX5_CQE_REQ || opcode == MLX5_CQE_REQ_ERR;
  const bool responder = is_responder(opcode) || opcode == MLX5_CQE_RESP_ERR;
  uint64_t wr_id = 0;
  WcOpcode wop = WcOpcode::kUnknown;
  if (requester) {
    wop = req_opcode(static_cast<uint8_t>(sop >> 24));
    if (q.sq == nullptr) [[unlikely]] {
      log::warn(kLog, "cq {:#x}: requester CQE for qpn {:#x} without a send queue", ring_.cqn, qpn);
      fill(wc, 0, KBV_ERR_INVALID_HANDLE, wop, 0, 0, 0, qpn, 0);
      return;
    }
    wr_id = q.sq->complete(wqe_counter);
  } else if (responder) {
    if (q.srq) {
      wr_id = q.srq->complete(wqe_counter);
    } else if (q.rq && q.rq->outstanding()) {
      wr_id = q.rq->complete();
    } else [[unlikely]] {
      log::warn(kLog, "cq {:#x}: responder CQE for qpn {:#x} without a posted receive", ring_.cqn,
                qpn);
      fill(wc, 0, KBV_ERR_INVALID_HANDLE, WcOpcode::kUnknown, 0, 0, 0, qpn, 0);
      return;
    }
    wop = opcode == MLX5_CQE_RESP_WR_IMM ? WcOpcode::kRecvRdmaImm : WcOpcode::kRecv;
  }
  if (opcode == MLX5_CQE_REQ_ERR || opcode == MLX5_CQE_RESP_ERR) {
    // mlx5_err_cqe overlays the same 64 bytes; read its bytes directly.
    const auto* raw = reinterpret_cast<const uint8_t*>(&cqe);
    const uint8_t syndrome = raw[offsetof(mlx5_err_cqe, syndrome)];
    const uint8_t vendor = raw[offsetof(mlx5_err_cqe, vendor_err_synd)];
    if (syndrome != MLX5_CQE_SYNDROME_WR_FLUSH_ERR)
      log::debug(kLog, "cq {:#x}: qpn {:#x} error CQE syndrome {:#x} vendor {:#x}", ring_.cqn, qpn,
                 syndrome, vendor);
    fill(wc, wr_id, kbv_status_from_cqe_syndrome(syndrome), wop, 0, 0, 0, qpn, 0, 0, syndrome,
         vendor);
    return;
  }
  if (requester || responder) {
    // A good CQE of a QP whose queues were checked above.
    decode_good(cqe, opcode, wr_id, qpn, wc);
    return;
  }
  log::warn(kLog, "cq {:#x}: unsupported CQE opcode {} (qpn {:#x})", ring_.cqn, opcode, qpn);
  fill(wc, 0, KBV_ERR_WC_UNKNOWN, WcOpcode::kUnknown, 0, 0, 0, qpn, 0);
}

template <bool Ts>
size_t CqPoller::poll_impl(WorkCompletion* out, size_t max, uint64_t* ts) {
  const uint32_t n = ring_.ncqe;
  uint32_t ci = ci_;
  size_t got = 0;
  while (got < max) {
    const std::byte* p = ring_.buf + size_t{ci & (n - 1)} * 64;
    const uint8_t op_own = platform::dma_load_owner(p + 63);
    const uint8_t opcode = op_own >> 4;
    if (opcode == MLX5_CQE_INVALID || (op_own & MLX5_CQE_OWNER_MASK) != ((ci & n) != 0)) break;
    ++ci;  // full 32 bits: the owner parity survives the 24-bit wrap
    // The body after the owner byte (rdma-core mlx5_get_next_cqe).
    platform::udma_from_device_barrier();
    const auto& cqe = *reinterpret_cast<const mlx5_cqe64*>(p);
    if constexpr (Ts) ts[got] = be64toh(cqe.timestamp);
    WorkCompletion& wc = out[got++];
    const uint32_t qpn = be32toh(cqe.sop_drop_qpn) & 0xFFFFFF;
    if (qpn != last_qpn_ && !lookup(qpn, opcode, wc)) [[unlikely]]
      continue;
    if (opcode == MLX5_CQE_REQ && last_.sq) [[likely]] {
      decode_good(cqe, opcode, last_.sq->complete(be16toh(cqe.wqe_counter)), qpn, wc);
    } else if (is_responder(opcode) && (last_.srq || (last_.rq && last_.rq->outstanding()))) {
      const uint64_t wr_id =
          last_.srq ? last_.srq->complete(be16toh(cqe.wqe_counter)) : last_.rq->complete();
      decode_good(cqe, opcode, wr_id, qpn, wc);
    } else {
      decode_slow(cqe, opcode, wc);
    }
  }
  if (got) {
    ci_ = ci;
    platform::compiler_barrier();
    platform::dbrec_store(&ring_.dbrec[0], htobe32(ci & 0xFFFFFF));
    if (cq_) cq_->set_ci(ci);
  }
  return got;
}

template size_t CqPoller::poll_impl<false>(WorkCompletion*, size_t, uint64_t*);
template size_t CqPoller::poll_impl<true>(WorkCompletion*, size_t, uint64_t*);

size_t CqPoller::flush(WorkCompletion* out, size_t max) {
  size_t n = 0;
  for (auto& entry : qps_) {
    const uint32_t qpn = entry.first;
    const Queues& q = entry.second;
    auto emit = [&](uint64_t wr_id, WcOpcode op) {
      WorkCompletion& wc = out[n++];
      wc = WorkCompletion{};
      wc.wr_id = wr_id;
      wc.status = KBV_ERR_WR_FLUSHED;
      wc.opcode = op;
      wc.qpn = qpn;
    };
    uint64_t id = 0;
    while (n < max && q.sq && q.sq->flush_one(&id)) emit(id, WcOpcode::kSend);
    while (n < max && q.rq && q.rq->flush_one(&id)) emit(id, WcOpcode::kRecv);
    if (n == max) break;
  }
  return n;
}

}  // namespace kbv::hca
