// SPDX-License-Identifier: BSD-3-Clause
//
// CqPoller: the completion half of the mlx5 data path — reads 64-byte CQEs
// (rdma-core mlx5dv.h struct mlx5_cqe64 / mlx5_err_cqe, included) from a
// CQ ring into an array of WorkCompletion, finds the work request each
// completes, and updates the consumer index.
//
// Validity (docs/PRM.md "Data path"; rdma-core cq.c get_sw_cqe): the CQE at
// ci & (ncqe - 1) is software's when its opcode (op_own >> 4) is not
// MLX5_CQE_INVALID (15) and its owner bit (op_own & 1) equals
// (ci & ncqe) != 0. After seeing one, udma_from_device_barrier() before
// reading the rest of it (rdma-core providers/mlx5/cq.c mlx5_get_next_cqe:
// the one barrier per CQE; util/udma_barrier.h: "lfence" on x86-64,
// "dmb oshld" on aarch64).
//
// Decoding (rdma-core cq.c mlx5_parse_cqe / handle_good_req /
// handle_responder; all fields big-endian):
//   qpn       = sop_drop_qpn & 0xFFFFFF (byte 56)
//   MLX5_CQE_REQ (0): opcode from sop_drop_qpn >> 24 (the WQE's MLX5_OPCODE);
//             byte_len = byte_cnt for READ, 8 for atomics, else 0; kImm
//             (imm 0) for SEND_IMM and RDMA_WRITE_IMM; wr_id =
//             the SQ slot of wqe_counter (byte 60), which also frees the
//             send ring up to the end of that WQE (SendQueue::complete).
//   MLX5_CQE_RESP_SEND (2), RESP_SEND_IMM (3), RESP_WR_IMM (1),
//             RESP_SEND_INV (4): kRecv / kRecv (+kImm) / kRecvRdmaImm (+kImm)
//             / kRecv (+kInv, imm = the invalidated rkey); byte_len = byte_cnt
//             (byte 44); imm = imm_inval_pkey (byte 36); src_qp =
//             flags_rqpn & 0xFFFFFF (byte 24, UD), kGrh when flags_rqpn
//             bits 29:28 are non-zero; wr_id from the QP's RQ (in order) or,
//             for a QP attached with an SRQ, the SRQ WQE wqe_counter.
//   MLX5_CQE_REQ_ERR (13) / RESP_ERR (14): status =
//             kbv_status_from_cqe_syndrome(syndrome, byte 55), vendor_err =
//             byte 54 kept; the work request found as for 0 / 2.
//   any other opcode (resize, no packet, signature error ...), or a QPN not
//             attached: a completion with KBV_ERR_WC_UNKNOWN /
//             KBV_ERR_INVALID_HANDLE, wr_id 0, logged — never dropped.
// After the batch, one consumer index update: dbrec[0] = ci & 0xFFFFFF
// (big-endian), and the Cq's software ci (Cq::set_ci, for arming) when the
// poller was built from a Cq. No barrier instruction before it, as rdma-core
// (mlx5_poll_cq / _mlx5_end_poll: update_cons_index right after the loop; a
// CQE is only rewritten after the device has wrapped the whole ring past
// it); a compiler barrier keeps the CQE loads above the store.
//
// Fast path: a successful requester or responder CQE of the QP seen last
// is decoded inline, every WorkCompletion member written once (no
// zero-fill first); errors, other opcodes and a QP change go out of line.
// WorkCompletion has kbv_wc_t's layout (kbv.h; static_asserts in
// src/verbs/fast_path.cpp), so kbv_poll_cq polls into the caller's array.
//
// The QPs whose completions arrive here are attached at setup (attach(),
// control path, may allocate); poll() looks them up without allocating.
// After Cq::resize the ring changed: build a new poller.
// Threading: one thread per CqPoller.
#pragma once

#include <infiniband/mlx5dv.h>

#include <kbv/status.h>
#include <kbv/status.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>

#include "hca/dp/rq.hpp"
#include "hca/dp/sq.hpp"

namespace kbv::hca {

class Cq;

enum class WcOpcode : uint32_t {
  kSend,
  kRdmaWrite,
  kRdmaRead,
  kAtomicCs,
  kAtomicFa,
  kRecv,
  kRecvRdmaImm,
  kUnknown,
};

namespace wc_flags {
inline constexpr uint32_t kImm = 1u << 0;  // imm is valid
inline constexpr uint32_t kGrh = 1u << 1;  // a GRH came with the message (UD)
inline constexpr uint32_t kInv = 1u << 2;  // SEND with invalidate: imm = the invalidated rkey
}  // namespace wc_flags

// Member for member the layout of kbv_wc_t (kbv.h; 48 bytes).
struct WorkCompletion {
  uint64_t wr_id = 0;
  kbv_status_t status = KBV_SUCCESS;
  WcOpcode opcode = WcOpcode::kUnknown;
  uint32_t byte_len = 0;
  uint32_t imm = 0;    // CPU order
  uint32_t flags = 0;  // wc_flags
  uint32_t qpn = 0;
  uint32_t src_qp = 0;
  uint16_t slid = 0;  // 0 on RoCE
  uint8_t sl = 0;
  uint8_t syndrome = 0;
  uint8_t vendor_err = 0;
  // Responder CQEs with kGrh: what the 40-byte GRH area holds — the CQE's
  // RoCE packet type, flags_rqpn bits 25:24 (kernel mlx5_ib cq.c
  // handle_responder: 0 = IB GRH (RoCE v1), 1 = IPv6, 2 = IPv4 header in
  // the area's last 20 bytes; RoCE v2).
  uint8_t l3_type = 0;
  uint8_t reserved[6] = {};
};
static_assert(sizeof(WorkCompletion) == 48);

// WorkCompletion::l3_type values (mlx5 CQE roce packet type).
namespace wc_l3 {
inline constexpr uint8_t kGrh = 0;
inline constexpr uint8_t kIpv6 = 1;
inline constexpr uint8_t kIpv4 = 2;
}  // namespace wc_l3

struct CqRing {
  std::byte* buf = nullptr;  // ncqe 64-byte CQEs
  uint32_t ncqe = 0;         // power of two >= 2
  volatile uint32_t* dbrec = nullptr;
  uint32_t cqn = 0;
};

class CqPoller {
 public:
  // KBV_ERR_INVALID_ARGUMENT for a missing ring/record or ncqe not a power
  // of two >= 2 (or above 2^23).
  static Result<CqPoller> create(const CqRing& ring, uint32_t ci = 0);
  // The ring of `cq` from its current consumer index; poll() keeps cq.ci().
  static Result<CqPoller> for_cq(Cq& cq);

  CqPoller(CqPoller&&) noexcept = default;
  CqPoller& operator=(CqPoller&&) noexcept = default;

  // Completions of `qpn` come to this CQ: its send queue (may be null when
  // only its receives complete here) and either its receive queue or its SRQ.
  // KBV_ERR_ALREADY_EXISTS when qpn is attached; KBV_ERR_INVALID_ARGUMENT
  // for both rq and srq.
  Status attach(uint32_t qpn, SendQueue* sq, RecvQueue* rq, SrqQueue* srq);
  Status detach(uint32_t qpn);

  // Fills up to out.size() completions; returns how many.
  size_t poll(std::span<WorkCompletion> out) { return poll(out.data(), out.size()); }
  size_t poll(WorkCompletion* out, size_t max) { return poll_impl<false>(out, max, nullptr); }
  // As poll(), and ts[i] = completion i's CQE timestamp: mlx5_cqe64
  // timestamp (byte 48, big-endian 64 bits; rdma-core cq.c
  // mlx5_cq_read_wc_completion_ts), the device's clock when it wrote the CQE
  // in the format the QP's qpc.ts_format chose (free-running: the
  // internal_timer of the init segment, device_frequency_khz ticks). The
  // plain poll() is compiled without this (a separate instantiation).
  size_t poll(WorkCompletion* out, uint64_t* ts, size_t max) {
    return poll_impl<true>(out, max, ts);
  }

  // After the device failed (it writes no more CQEs): up to `max`
  // completions with status KBV_ERR_WR_FLUSHED for the work requests still
  // outstanding on the attached QPs' send and receive queues (not SRQs),
  // oldest first per queue — every request completes, as the kernel's
  // mlx5_ib_poll_sw_comp does for a device in internal error. Returns how
  // many; 0 when nothing is left.
  size_t flush(WorkCompletion* out, size_t max);

  uint32_t ci() const { return ci_ & 0xFFFFFF; }
  uint32_t cqn() const { return ring_.cqn; }

 private:
  struct Queues {
    SendQueue* sq;
    RecvQueue* rq;
    SrqQueue* srq;
  };
  CqPoller() = default;
  template <bool Ts>
  size_t poll_impl(WorkCompletion* out, size_t max, uint64_t* ts);
  // The CQE's QP becomes last_ (false: not attached, wc filled as an error).
  bool lookup(uint32_t qpn, uint8_t opcode, WorkCompletion& wc);
  // Everything but a good requester / responder CQE of an attached QP.
  void decode_slow(const mlx5_cqe64& cqe, uint8_t opcode, WorkCompletion& wc);

  CqRing ring_;
  Cq* cq_ = nullptr;
  uint32_t ci_ = 0;
  std::unordered_map<uint32_t, Queues> qps_;
  uint32_t last_qpn_ = 0xFFFFFFFF;  // one-entry lookup cache
  Queues last_{};
};

}  // namespace kbv::hca
