// SPDX-License-Identifier: BSD-3-Clause
#include "hca/dp_cq.hpp"

#include <endian.h>

#include <cstddef>

#include "common/log.hpp"
#include "hca/cq.hpp"
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

void CqPoller::decode(const mlx5_cqe64& cqe, uint8_t opcode, WorkCompletion& wc) {
  const uint32_t sop = be32toh(cqe.sop_drop_qpn);
  wc = WorkCompletion{};
  wc.qpn = sop & 0xFFFFFF;
  if (wc.qpn != last_qpn_) [[unlikely]] {
    auto it = qps_.find(wc.qpn);
    if (it == qps_.end()) {
      log::warn(kLog, "cq {:#x}: CQE opcode {} for qpn {:#x} not attached", ring_.cqn, opcode,
                wc.qpn);
      wc.status = KBV_ERR_INVALID_HANDLE;
      return;
    }
    last_qpn_ = wc.qpn;
    last_ = it->second;
  }
  const Queues& q = last_;
  const uint16_t wqe_counter = be16toh(cqe.wqe_counter);
  const bool requester = opcode == MLX5_CQE_REQ || opcode == MLX5_CQE_REQ_ERR;
  const bool responder = opcode == MLX5_CQE_RESP_SEND || opcode == MLX5_CQE_RESP_SEND_IMM ||
                         opcode == MLX5_CQE_RESP_WR_IMM || opcode == MLX5_CQE_RESP_SEND_INV ||
                         opcode == MLX5_CQE_RESP_ERR;
  if (requester) {
    wc.opcode = req_opcode(static_cast<uint8_t>(sop >> 24));
    if (q.sq == nullptr) [[unlikely]] {
      log::warn(kLog, "cq {:#x}: requester CQE for qpn {:#x} without a send queue", ring_.cqn,
                wc.qpn);
      wc.status = KBV_ERR_INVALID_HANDLE;
      return;
    }
    wc.wr_id = q.sq->complete(wqe_counter);
  } else if (responder) {
    if (q.srq) {
      wc.wr_id = q.srq->complete(wqe_counter);
    } else if (q.rq && q.rq->outstanding()) {
      wc.wr_id = q.rq->complete();
    } else [[unlikely]] {
      log::warn(kLog, "cq {:#x}: responder CQE for qpn {:#x} without a posted receive", ring_.cqn,
                wc.qpn);
      wc.status = KBV_ERR_INVALID_HANDLE;
      return;
    }
    wc.opcode = opcode == MLX5_CQE_RESP_WR_IMM ? WcOpcode::kRecvRdmaImm : WcOpcode::kRecv;
  }
  switch (opcode) {
    case MLX5_CQE_REQ:
      if (wc.opcode == WcOpcode::kRdmaRead)
        wc.byte_len = be32toh(cqe.byte_cnt);
      else if (wc.opcode == WcOpcode::kAtomicCs || wc.opcode == WcOpcode::kAtomicFa)
        wc.byte_len = 8;
      return;
    case MLX5_CQE_RESP_SEND_INV:
      wc.imm = be32toh(cqe.imm_inval_pkey);
      wc.flags |= wc_flags::kInv;
      wc.byte_len = be32toh(cqe.byte_cnt);
      return;
    case MLX5_CQE_RESP_SEND_IMM:
    case MLX5_CQE_RESP_WR_IMM:
      wc.imm = be32toh(cqe.imm_inval_pkey);
      wc.flags |= wc_flags::kImm;
      [[fallthrough]];
    case MLX5_CQE_RESP_SEND: {
      wc.byte_len = be32toh(cqe.byte_cnt);
      const uint32_t fr = be32toh(cqe.flags_rqpn);
      wc.src_qp = fr & 0xFFFFFF;
      if ((fr >> 28) & 3) {
        wc.flags |= wc_flags::kGrh;
        wc.l3_type = static_cast<uint8_t>((fr >> 24) & 3);
      }
      return;
    }
    case MLX5_CQE_REQ_ERR:
    case MLX5_CQE_RESP_ERR: {
      // mlx5_err_cqe overlays the same 64 bytes; read its bytes directly.
      const auto* raw = reinterpret_cast<const uint8_t*>(&cqe);
      wc.syndrome = raw[offsetof(mlx5_err_cqe, syndrome)];
      wc.vendor_err = raw[offsetof(mlx5_err_cqe, vendor_err_synd)];
      wc.status = kbv_status_from_cqe_syndrome(wc.syndrome);
      if (wc.syndrome != MLX5_CQE_SYNDROME_WR_FLUSH_ERR)
        log::debug(kLog, "cq {:#x}: qpn {:#x} error CQE syndrome {:#x} vendor {:#x}", ring_.cqn,
                   wc.qpn, wc.syndrome, wc.vendor_err);
      return;
    }
    default:
      log::warn(kLog, "cq {:#x}: unsupported CQE opcode {} (qpn {:#x})", ring_.cqn, opcode, wc.qpn);
      wc.opcode = WcOpcode::kUnknown;
      wc.status = KBV_ERR_WC_UNKNOWN;
      return;
  }
}

size_t CqPoller::poll(std::span<WorkCompletion> out) {
  const uint32_t n = ring_.ncqe;
  size_t got = 0;
  while (got < out.size()) {
    const std::byte* p = ring_.buf + size_t{ci_ & (n - 1)} * 64;
    const auto op_own = static_cast<uint8_t>(
        __atomic_load_n(reinterpret_cast<const volatile uint8_t*>(p + 63), __ATOMIC_RELAXED));
    const uint8_t opcode = op_own >> 4;
    if (opcode == MLX5_CQE_INVALID || (op_own & MLX5_CQE_OWNER_MASK) != ((ci_ & n) != 0)) break;
    platform::udma_from_device_barrier();  // the body after the owner byte
    decode(*reinterpret_cast<const mlx5_cqe64*>(p), opcode, out[got]);
    ++got;
    ++ci_;  // full 32 bits: the owner parity survives the 24-bit wrap
  }
  if (got) {
    // Our CQE reads complete before the device may overwrite the entries.
    platform::udma_from_device_barrier();
    ring_.dbrec[0] = htobe32(ci_ & 0xFFFFFF);
    if (cq_) cq_->set_ci(ci_);
  }
  return got;
}

}  // namespace kbv::hca
