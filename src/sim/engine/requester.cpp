// SPDX-License-Identifier: BSD-3-Clause
//
// The requester: send WQEs -> packets, RC reliability, requester CQEs.
//
//   * WQEs are fetched from hw_sq_wqebb_counter up to the doorbell record
//     dbrec[1] (only in RTS), parsed (wqe.hpp) and given PSNs: SEND / WRITE
//     ceil(len / path MTU) (at least 1), READ as many as its response
//     packets, atomics 1 (IBTA 9.7.1), NOP none. UD sends go out at once.
//   * Fence: a fenced WQE waits until every earlier READ / atomic completed;
//     READ / atomics in flight are limited to 1 << log_sra_max.
//   * RC/UC packets are sent from tx_psn up to next_psn (at most kWindow
//     PSNs beyond the oldest unacknowledged one); going back = moving
//     tx_psn back to una (go-back-N, IBTA 9.7.5.1.x; rxe_req.c does the
//     same by rewinding its send pointer). AckReq is set on the last packet
//     of each message; READ requests after a rewind ask for the remainder
//     (RETH va + done, length - done; IBTA 9.7.5.1.4).
//   * Responses (rxe_comp.c behaviour): an ACK with PSN p completes the
//     SENDs / WRITEs up to p; a READ / atomic still waiting before p means
//     its response was lost: go back to it (implicit NAK). READ responses
//     and atomic ACKs implicitly ACK earlier requests. RNR NAK: wait the
//     AETH timer (IBTA Table 45), then resend from its PSN, at most
//     rnr_retry times (7 = forever) -> RNR_RETRY_EXC_ERR. NAK PSN sequence
//     error: resend from its PSN. NAK invalid request / remote access /
//     remote operational: that WQE completes with REMOTE_INVAL_REQ /
//     REMOTE_ACCESS / REMOTE_OP and the QP goes to ERR.
//   * Ack timer: 4.096 us << path.ack_timeout after the last progress (0 =
//     no timer); on expiry resend from una, at most retry_count times ->
//     RETRY_EXC_ERR.
//   * Responses pass the P_Key check first (IBTA 10.9.3, as requests do in
//     responder.cpp): an ACK / READ response / atomic ACK whose BTH P_Key
//     does not match the QP's is dropped without effect and counted in the
//     port's pkey_violations (pkey.hpp).
//   * Completions in WQE order; a CQE for signalled WQEs (cqe_req) and for
//     every error. An error moves an RC QP to ERR, a UD / UC QP to SQE
//     (IBTA 10.3.1: only its send queue stops and flushes). READ CQEs carry byte_cnt = the message
//     length.
#include "common/log.hpp"
#include "sim/engine/pkey.hpp"
#include "sim/engine/transport.hpp"

#include <infiniband/mlx5dv.h>

#include <algorithm>
#include <cstring>

namespace kbv::sim::engine {

namespace {
namespace qs = prm::qp_state;
using wire::Operation;
using wire::Position;

bool is_read_atomic(uint8_t op) {
  return op == MLX5_OPCODE_RDMA_READ || op == MLX5_OPCODE_ATOMIC_CS || op == MLX5_OPCODE_ATOMIC_FA;
}
// True when an op before `op` is still waiting for its response.
bool pending_before(const QpDp& d, const SendOp& op) {
  for (const SendOp& o : d.ops) {
    if (&o == &op) return false;
    if (!o.done && o.npkts != 0) return true;
  }
  return false;
}
std::chrono::nanoseconds ack_timeout(uint32_t code) {
  return std::chrono::nanoseconds(uint64_t{4096} << std::min<uint32_t>(code, 31));
}
}  // namespace

void Transport::pump(fw::Qp& q) {
  if (q.no_sq || q.sq_bytes == 0) return;
  QpDp& d = dp(q);
  if (q.state == qs::kErr) {
    flush(q, d);
    return;
  }
  if (q.state == qs::kSqer) {
    flush_sq(q, d);  // WQEs posted in SQE complete with flush errors
    return;
  }
  if (d.sq_err && q.state == qs::kRts) {
    d.sq_err = false;  // SQERR2RTS: the send queue runs again
    d.stopped = false;
  }
  if (q.state != qs::kRts && q.state != qs::kSqd) return;
  if (!d.req_init) {
    d.req_init = true;
    d.next_psn = d.tx_psn = d.una = d.max_sent = q.next_send_psn & wire::kPsnMask;
  }
  transmit(q, d);
  while (q.state == qs::kRts && !d.stopped && fetch(q, d)) transmit(q, d);
  complete_front(q, d);
  if (q.state != qs::kErr) arm_ack_timer(q, d);
  recharge(q, d);
  schedule(q, d);
}

bool Transport::fetch(fw::Qp& q, QpDp& d) {
  if (d.rnr_until != Clock::time_point::max()) return false;
  uint32_t rec = 0;
  if (!read_dbrec(q.dbr_addr + 4, &rec)) {
    qp_error(q, prm::EventType::WQ_CATAS_ERROR);
    return false;
  }
  const uint16_t sw = static_cast<uint16_t>(rec & 0xFFFF);
  q.counters.sw_sq_wqebb_counter = sw;
  const uint16_t hw = static_cast<uint16_t>(q.counters.hw_sq_wqebb_counter);
  if (hw == sw) return false;
  const bool connected = q.st != prm::qpc_st::kUd;
  if (connected && wire::psn_diff(d.next_psn, d.una) >= static_cast<int32_t>(kWindow)) return false;

  SendOp op;
  const WqeStatus ws = parse_send_wqe(iommu(), q, hw, &op.w);
  if (!ws.ok()) {
    op.w.wqe_index = hw;
    op.done = true;
    op.syndrome = ws.syndrome;
    op.vendor = static_cast<uint8_t>(ws.vendor);
    d.stopped = true;
    q.counters.hw_sq_wqebb_counter = (hw + std::max<uint32_t>(1, op.w.wqebbs)) & 0xFFFF;
    d.ops.push_back(std::move(op));
    return false;
  }
  op.read_atomic = is_read_atomic(op.w.opcode);
  if (op.w.fence || op.read_atomic) {
    uint32_t ra = 0;
    for (const SendOp& o : d.ops)
      if (o.read_atomic && !o.done) ++ra;
    if (op.w.fence && ra > 0) return false;
    if (op.read_atomic && ra >= (1u << std::min<uint32_t>(q.log_sra_max, 8))) return false;
  }
  // UD: the WQE waits in the send queue while its peer's link window is
  // full (wire/link_flow.hpp); it is parsed again when the QP resumes.
  if (!connected && !link_open(q, d, ud_dest_ip(op.w))) return false;
  op.mtu = qp_mtu(q);
  c_.wqes.fetch_add(1, std::memory_order_relaxed);
  q.counters.hw_sq_wqebb_counter = (hw + op.w.wqebbs) & 0xFFFF;
  if (op.w.opcode == MLX5_OPCODE_NOP) {
    op.done = true;
    d.ops.push_back(std::move(op));
    return true;
  }
  if (!connected) {
    // UD: one packet, now.
    op.npkts = 1;
    d.ops.push_back(std::move(op));
    SendOp& o = d.ops.back();
    if (o.w.length > o.mtu) {
      o.done = true;
      o.syndrome = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
      d.stopped = true;
      return false;
    }
    o.psn = d.next_psn;
    d.next_psn = wire::psn_add(d.next_psn, 1);
    return send_at(q, d, o, o.psn);
  }
  op.npkts = (op.w.opcode == MLX5_OPCODE_ATOMIC_CS || op.w.opcode == MLX5_OPCODE_ATOMIC_FA)
                 ? 1
                 : wire::packet_count(op.w.length, op.mtu);
  op.psn = d.next_psn;
  d.next_psn = wire::psn_add(d.next_psn, static_cast<int32_t>(op.npkts));
  d.ops.push_back(std::move(op));
  return true;
}

void Transport::transmit(fw::Qp& q, QpDp& d) {
  if (q.st == prm::qpc_st::kUd || d.rnr_until != Clock::time_point::max()) return;
  const bool rc = q.st == prm::qpc_st::kRc;
  while (d.tx_psn != d.next_psn && q.state != qs::kErr) {
    // RC: at most kWindow PSNs beyond the oldest unacknowledged one (ACKs
    // come at least every kAckEvery packets, so a long message flows on).
    if (rc && wire::psn_diff(d.tx_psn, d.una) >= static_cast<int32_t>(kWindow)) break;
    SendOp* op = nullptr;
    for (SendOp& o : d.ops)
      if (o.npkts != 0 && wire::psn_le(o.psn, d.tx_psn) && wire::psn_le(d.tx_psn, o.last_psn())) {
        op = &o;
        break;
      }
    if (op == nullptr) {
      // Acknowledged meanwhile: continue at the next op still held.
      uint32_t next = d.next_psn;
      for (SendOp& o : d.ops)
        if (o.npkts != 0 && wire::psn_gt(o.psn, d.tx_psn)) {
          next = o.psn;
          break;
        }
      d.tx_psn = next;
      continue;
    }
    if (op->syndrome != 0) break;
    if (rc && !wire::psn_lt(d.tx_psn, d.max_sent)) {
      // A new PSN needs transmit credit (transport.hpp); a READ asks for
      // all its remaining responses at once.
      const uint32_t k = static_cast<uint32_t>(wire::psn_diff(d.tx_psn, op->psn));
      const uint32_t pkts = op->w.opcode == MLX5_OPCODE_RDMA_READ ? op->npkts - k : 1;
      if (!credit_for(q, d, pkts)) break;
    }
    // UC: each packet waits for its peer's link window (wire/link_flow.hpp).
    if (!rc && !link_open(q, d, dest_ip(q))) break;
    if (!send_at(q, d, *op, d.tx_psn)) break;
    if (rc) recharge(q, d);
  }
}

bool Transport::send_at(fw::Qp& q, QpDp& d, SendOp& op, uint32_t psn) {
  const ParsedWqe& w = op.w;
  const bool ud = q.st == prm::qpc_st::kUd;
  const auto tr = ud ? wire::Transport::kUd
                     : (q.st == prm::qpc_st::kUc ? wire::Transport::kUc : wire::Transport::kRc);
  const uint32_t k = static_cast<uint32_t>(wire::psn_diff(psn, op.psn));
  wire::PacketHeaders h;
  h.bth.dest_qp = ud ? w.av.dqpn & wire::kQpnMask : q.remote_qpn;
  h.bth.psn = psn;
  h.bth.pkey = qp_pkey(tables().port, q);  // IBTA 10.9.2 (pkey.hpp)
  std::span<const uint8_t> payload;
  uint32_t next_tx = wire::psn_add(psn, 1);
  switch (w.opcode) {
    case MLX5_OPCODE_SEND:
    case MLX5_OPCODE_SEND_IMM:
    case MLX5_OPCODE_RDMA_WRITE:
    case MLX5_OPCODE_RDMA_WRITE_IMM: {
      const bool send = w.opcode == MLX5_OPCODE_SEND || w.opcode == MLX5_OPCODE_SEND_IMM;
      const bool imm = w.opcode == MLX5_OPCODE_SEND_IMM || w.opcode == MLX5_OPCODE_RDMA_WRITE_IMM;
      const uint64_t off = uint64_t{k} * op.mtu;
      const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(op.mtu, w.length - off));
      const Position pos = wire::position_of(k, op.npkts);
      const bool last = pos == Position::kLast || pos == Position::kOnly;
      Result<uint8_t> opc =
          wire::make_opcode(tr, send ? Operation::kSend : Operation::kWrite, pos, imm && last);
      if (!opc) {
        op.done = true;
        op.syndrome = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
        d.stopped = true;
        return false;
      }
      h.bth.opcode = *opc;
      // IBTA 9.2.4 / rxe_req.c: SE on the last (only) packet of a SEND or
      // of an RDMA WRITE with immediate; a plain WRITE completes nothing.
      h.bth.se = (send || imm) && last && w.solicited;
      h.bth.ack_req = last && tr == wire::Transport::kRc;
      if (!send && (pos == Position::kFirst || pos == Position::kOnly))
        h.reth = wire::Reth{w.raddr, w.rkey, static_cast<uint32_t>(w.length)};
      if (imm && last) h.immdt = wire::ImmDt{w.imm};
      if (ud) {
        // IBTA 10.2.5: a Q_Key with the high bit set means the QP's own.
        const uint32_t qkey = (w.av.qkey & 0x80000000u) ? q.q_key : w.av.qkey;
        h.deth = wire::Deth{qkey, q.qpn};
      }
      if (w.is_inline) {
        std::memcpy(buf_.data(), w.inline_data.data() + off, n);
      } else if (n > 0) {
        AccessStatus a = gather(iommu(), tables().mkeys, q.pd, std::span(w.sge.data(), w.num_sge),
                                off, std::as_writable_bytes(std::span(buf_.data(), n)));
        if (!a.ok()) {
          op.done = true;
          op.syndrome = a.syndrome;
          d.stopped = true;
          return false;
        }
      }
      payload = std::span<const uint8_t>(buf_.data(), n);
      break;
    }
    case MLX5_OPCODE_RDMA_READ: {
      const uint64_t off = uint64_t{k} * op.mtu;
      h.bth.opcode = *wire::make_opcode(tr, Operation::kReadRequest, Position::kOnly, false);
      h.bth.ack_req = true;
      h.reth = wire::Reth{w.raddr + off, w.rkey, static_cast<uint32_t>(w.length - off)};
      next_tx = wire::psn_add(op.psn, static_cast<int32_t>(op.npkts));
      break;
    }
    case MLX5_OPCODE_ATOMIC_CS:
    case MLX5_OPCODE_ATOMIC_FA:
      h.bth.opcode =
          w.opcode == MLX5_OPCODE_ATOMIC_CS ? wire::opcode::kCompareSwap : wire::opcode::kFetchAdd;
      h.bth.ack_req = true;
      h.atomic_eth = wire::AtomicEth{w.raddr, w.rkey, w.swap_add, w.compare};
      break;
    default:
      op.done = true;
      op.syndrome = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
      d.stopped = true;
      return false;
  }
  if (ud) {
    (void)send_to(ud_dest_ip(w), wire::entropy_src_port(q.qpn, h.bth.dest_qp), h, payload);
    op.done = true;
    return true;
  }
  if (wire::psn_lt(psn, d.max_sent)) c_.retransmits.fetch_add(1, std::memory_order_relaxed);
  send(q, h, payload);
  d.tx_psn = next_tx;
  if (wire::psn_gt(next_tx, d.max_sent)) d.max_sent = next_tx;
  // UC: nothing comes back; the WQE is complete once its last packet left.
  if (tr == wire::Transport::kUc &&
      next_tx == wire::psn_add(op.psn, static_cast<int32_t>(op.npkts))) {
    op.done = true;
    d.una = next_tx;
  }
  return true;
}

void Transport::complete_front(fw::Qp& q, QpDp& d) {
  while (!d.ops.empty() && d.ops.front().done) {
    SendOp& op = d.ops.front();
    CqeFields f;
    f.qpn = q.qpn;
    f.wqe_opcode = op.w.opcode;
    f.wqe_counter = op.w.wqe_index;
    if (op.syndrome != 0) {
      f.opcode = MLX5_CQE_REQ_ERR;
      f.syndrome = op.syndrome;
      f.vendor_syndrome = op.vendor;
      const bool fetch_fault = op.vendor == static_cast<uint8_t>(WqeVendor::kFetchFault);
      log::debug("sim.engine", "qpn {:#x}: WQE {} completes with syndrome {:#x}", q.qpn,
                 op.w.wqe_index, op.syndrome);
      cqe(q.cqn_snd, f);
      d.ops.pop_front();
      if (!fetch_fault && q.st != prm::qpc_st::kRc) {
        // IBTA 10.3.1: a UD / UC send completion error moves the QP to SQE;
        // the receive side keeps working, SQERR2RTS resumes the sends.
        q.state = qs::kSqer;
        d.sq_err = true;
        flush_sq(q, d);
        return;
      }
      qp_error(q, fetch_fault ? prm::EventType::WQ_CATAS_ERROR : prm::EventType::COMP);
      return;
    }
    if (op.w.cqe_req) {
      f.opcode = MLX5_CQE_REQ;
      f.byte_cnt = (op.w.opcode == MLX5_OPCODE_ATOMIC_CS || op.w.opcode == MLX5_OPCODE_ATOMIC_FA)
                       ? 8
                       : static_cast<uint32_t>(op.w.length);
      cqe(q.cqn_snd, f);
    }
    ++q.counters.ssn;
    d.ops.pop_front();
  }
}

void Transport::arm_ack_timer(fw::Qp& q, QpDp& d) {
  if (q.st != prm::qpc_st::kRc || q.path.ack_timeout == 0 ||
      d.rnr_until != Clock::time_point::max()) {
    d.ack_deadline = Clock::time_point::max();
    return;
  }
  if (!wire::psn_lt(d.una, d.max_sent)) {
    d.ack_deadline = Clock::time_point::max();
    return;
  }
  if (d.ack_deadline == Clock::time_point::max())
    d.ack_deadline = Clock::now() + ack_timeout(q.path.ack_timeout);
}

void Transport::ack_through(fw::Qp& q, QpDp& d, uint32_t psn) {
  const uint32_t old_una = d.una;
  for (SendOp& op : d.ops) {
    if (op.done) continue;
    if (op.npkts == 0) {
      op.done = true;
      continue;
    }
    if (wire::psn_gt(op.psn, psn)) break;
    if (op.read_atomic) {
      // Its response should have come before this ACK: lost. Go back.
      const uint32_t from = wire::psn_add(op.psn, static_cast<int32_t>(op.rcv_pkts));
      if (wire::psn_gt(from, d.una)) d.una = from;
      if (wire::psn_lt(from, d.tx_psn) && d.retx_trigger != from) {
        d.retx_trigger = from;
        d.tx_psn = from;
      }
      break;
    }
    if (wire::psn_gt(op.last_psn(), psn)) {
      // Partly acknowledged multi-packet message.
      if (wire::psn_gt(wire::psn_add(psn, 1), d.una)) d.una = wire::psn_add(psn, 1);
      break;
    }
    op.done = true;
    if (wire::psn_gt(wire::psn_add(op.last_psn(), 1), d.una))
      d.una = wire::psn_add(op.last_psn(), 1);
  }
  if (d.una != old_una) {
    q.counters.last_acked_psn = wire::psn_add(d.una, -1);
    q.counters.cur_retry_count = 0;
    q.counters.cur_rnr_retry = 0;
    d.ack_deadline = Clock::time_point::max();  // re-armed from now
  }
  if (wire::psn_lt(d.tx_psn, d.una)) d.tx_psn = d.una;
}

void Transport::fail_op(fw::Qp& q, QpDp& d, uint32_t psn, uint8_t syndrome) {
  (void)q;
  for (SendOp& op : d.ops) {
    if (op.done || op.npkts == 0) continue;
    if (wire::psn_le(op.psn, psn) || &op == &d.ops.front()) {
      op.done = true;
      op.syndrome = syndrome;
      d.stopped = true;
      return;
    }
  }
}

void Transport::on_response(fw::Qp& q, const wire::RxPacket& p) {
  if (q.st != prm::qpc_st::kRc || !q.dp_state ||
      (q.state != qs::kRts && q.state != qs::kSqd && q.state != qs::kSqer)) {
    c_.unknown_qp_drops.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // IBTA 10.9.3: P_Key checking applies to every packet a QP receives, the
  // responses too; a mismatch is dropped and counted (pkey.hpp).
  fw::PortState& port = tables().port;
  if (!pkey_match(p.headers.bth.pkey, qp_pkey(port, q))) {
    port.pkey_violations.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  QpDp& d = dp(q);
  if (!d.req_init) return;
  const uint32_t psn = p.headers.bth.psn;
  if (!wire::psn_lt(psn, d.next_psn)) return;  // nothing we sent
  const wire::Operation opn = p.info->operation;
  log::trace("sim.engine", "qpn {:#x}: resp op {:#x} psn {:#x} syn {:#x} una {:#x} tx {:#x}", q.qpn,
             p.headers.bth.opcode, psn, p.headers.aeth ? p.headers.aeth->syndrome : 0, d.una,
             d.tx_psn);
  if (opn == Operation::kAcknowledge && p.headers.aeth) {
    const uint8_t syn = p.headers.aeth->syndrome;
    // A NAK for a PSN already acknowledged is stale (a duplicate on the
    // wire): acting on it would resend acknowledged packets and count an
    // RNR retry that did not happen.
    if (wire::aeth_type(syn) != wire::AethType::kAck && wire::psn_lt(psn, d.una)) return;
    switch (wire::aeth_type(syn)) {
      case wire::AethType::kAck: ack_through(q, d, psn); break;
      case wire::AethType::kRnrNak: {
        c_.rnr_naks_received.fetch_add(1, std::memory_order_relaxed);
        if (d.rnr_until != Clock::time_point::max() && psn == d.una) break;  // a duplicate
        ack_through(q, d, wire::psn_add(psn, -1));
        if (q.rnr_retry != 7 && q.counters.cur_rnr_retry >= q.rnr_retry) {
          fail_op(q, d, psn, MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
          break;
        }
        ++q.counters.cur_rnr_retry;
        d.rnr_until =
            Clock::now() + std::chrono::microseconds(wire::rnr_timer_usec(wire::aeth_value(syn)));
        d.ack_deadline = Clock::time_point::max();
        d.una = d.tx_psn = psn;
        break;
      }
      case wire::AethType::kNak: {
        c_.naks_received.fetch_add(1, std::memory_order_relaxed);
        ack_through(q, d, wire::psn_add(psn, -1));
        const auto code = static_cast<wire::NakCode>(wire::aeth_value(syn));
        if (code == wire::NakCode::kPsnSequenceError) {
          if (wire::psn_lt(psn, d.tx_psn)) d.tx_psn = psn;
          break;
        }
        const uint8_t s = code == wire::NakCode::kRemoteAccessError
                              ? MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR
                          : code == wire::NakCode::kRemoteOperationalError
                              ? MLX5_CQE_SYNDROME_REMOTE_OP_ERR
                              : MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
        fail_op(q, d, psn, s);
        break;
      }
      default: break;
    }
  } else if (opn == Operation::kReadResponse) {
    SendOp* op = nullptr;
    for (SendOp& o : d.ops)
      if (!o.done && o.w.opcode == MLX5_OPCODE_RDMA_READ && wire::psn_le(o.psn, psn) &&
          wire::psn_le(psn, o.last_psn())) {
        op = &o;
        break;
      }
    if (op == nullptr) return;  // duplicate of a completed READ
    const uint32_t expected = wire::psn_add(op->psn, static_cast<int32_t>(op->rcv_pkts));
    if (psn != expected) {
      if (wire::psn_gt(psn, expected) && d.retx_trigger != expected) {
        d.retx_trigger = expected;  // a response was lost: ask again once
        if (wire::psn_lt(expected, d.tx_psn)) d.tx_psn = expected;
      }
    } else if (ack_through(q, d, wire::psn_add(op->psn, -1)); pending_before(d, *op)) {
      // An earlier READ / atomic still waits: its response was lost and it
      // is being asked again; go-back-N accepts responses in order only.
    } else {
      const uint64_t off = uint64_t{op->rcv_pkts} * op->mtu;
      const auto bytes = std::as_bytes(p.payload);
      if (off + bytes.size() > op->w.length) {
        op->done = true;
        op->syndrome = MLX5_CQE_SYNDROME_BAD_RESP_ERR;
        d.stopped = true;
      } else {
        AccessStatus a = scatter(iommu(), tables().mkeys, q.pd,
                                 std::span(op->w.sge.data(), op->w.num_sge), off, bytes);
        if (!a.ok()) {
          op->done = true;
          op->syndrome = a.syndrome;
          d.stopped = true;
        } else {
          ++op->rcv_pkts;
          d.una = wire::psn_add(psn, 1);
          q.counters.last_acked_psn = psn;
          q.counters.cur_retry_count = 0;
          d.ack_deadline = Clock::time_point::max();
          if (op->rcv_pkts == op->npkts) op->done = true;
        }
      }
    }
  } else if (opn == Operation::kAtomicAcknowledge && p.headers.atomic_ack_eth) {
    SendOp* op = nullptr;
    for (SendOp& o : d.ops)
      if (!o.done && o.read_atomic && o.w.opcode != MLX5_OPCODE_RDMA_READ && o.psn == psn) {
        op = &o;
        break;
      }
    if (op == nullptr) return;
    ack_through(q, d, wire::psn_add(psn, -1));
    if (pending_before(d, *op)) {
      pump(q);
      return;
    }
    const uint64_t orig = p.headers.atomic_ack_eth->orig;  // host order in memory
    AccessStatus a =
        scatter(iommu(), tables().mkeys, q.pd, std::span(op->w.sge.data(), op->w.num_sge), 0,
                std::as_bytes(std::span(&orig, 1)));
    op->done = true;
    if (!a.ok()) {
      op->syndrome = a.syndrome;
      d.stopped = true;
    } else {
      d.una = wire::psn_add(psn, 1);
      q.counters.last_acked_psn = psn;
      q.counters.cur_retry_count = 0;
      d.ack_deadline = Clock::time_point::max();
    }
  }
  pump(q);
}

void Transport::on_timer(fw::Qp& q, QpDp& d, Clock::time_point now) {
  if (d.rnr_until != Clock::time_point::max() && now >= d.rnr_until) {
    d.rnr_until = Clock::time_point::max();
    c_.retransmits.fetch_add(0, std::memory_order_relaxed);
    pump(q);
  }
  if (q.state == qs::kErr || d.ack_deadline == Clock::time_point::max() || now < d.ack_deadline)
    return;
  d.ack_deadline = Clock::time_point::max();
  if (!wire::psn_lt(d.una, d.max_sent)) return;
  c_.timeouts.fetch_add(1, std::memory_order_relaxed);
  log::debug("sim.engine", "qpn {:#x}: ack timeout {} (una {:#x} tx {:#x} next {:#x} ops {})",
             q.qpn, q.counters.cur_retry_count, d.una, d.tx_psn, d.next_psn, d.ops.size());
  if (q.counters.cur_retry_count >= q.retry_count) {
    fail_op(q, d, d.una, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
    complete_front(q, d);
    return;
  }
  ++q.counters.cur_retry_count;
  d.tx_psn = d.una;
  d.retx_trigger = 0xFFFFFFFF;
  pump(q);
}

}  // namespace kbv::sim::engine
