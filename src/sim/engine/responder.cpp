// SPDX-License-Identifier: BSD-3-Clause
//
// The responder: request packets -> memory, receive WQEs, responder CQEs,
// ACK / NAK / READ responses / atomic ACKs (IBTA 9.7.x; behaviour after
// Linux rxe rxe_resp.c, facts only).
//
//   * RC PSN check against the expected PSN (epsn): equal -> execute;
//     behind -> duplicate: SEND / WRITE are ACKed again (coalesced), a READ
//     request is executed again from its own RETH (memory is re-read, as
//     IBTA 9.7.5.1.4 allows), an atomic's saved original value is returned
//     from a 16-entry replay cache without executing it again; ahead -> one
//     NAK PSN sequence error until the expected PSN arrives.
//   * Opcode sequence: a SEND / WRITE middle or last outside a message, or
//     a first / only inside one, is an invalid request (NAK); so are READ /
//     WRITE / atomics the QP does not allow (rre / rwe / rae), a misaligned
//     atomic, a first / middle packet shorter than the path MTU, and a WRITE
//     longer or shorter than its RETH DMA length. rkey faults are remote
//     access errors. Each of these NAKs moves the responder QP to ERR with
//     WQ invalid request (0x10) / WQ access error (0x11) events; a receive
//     WQE taken completes with the error (LOCAL_LENGTH when the message
//     does not fit, LOCAL_PROT for a bad receive lkey).
//   * No receive WQE for a SEND (first / only) or WRITE with immediate
//     (last / only) -> RNR NAK with the QP's min_rnr_nak timer code, the
//     request is not executed.
//   * ACKs: on AckReq (the requester sets it on the last packet of each
//     message) and at least every kAckEvery packets, coalesced per received
//     batch; AETH = ACK with credit code "invalid" and the MSN.
//   * UC: no ACKs; a PSN gap drops the rest of the message in progress, the
//     next first / only packet resynchronises. An RDMA WRITE the responder
//     refuses (no remote write right, R_Key violation, length other than
//     the RETH's) is dropped whole and silently — no NAK, no CQE, the QP
//     stays as it is, a WRITE with immediate's receive WQE is not consumed
//     (IBTA responder error classes D / E for UC; rxe_resp.c check_op_valid
//     and RESPST_ERR_RKEY_VIOLATION / RESPST_ERR_LENGTH for UC without SRQ).
//   * UD: Q_Key checked (mismatch: dropped, counted, IBTA 10.2.5); the
//     receive buffer gets the 40-byte GRH area first. For RoCEv2 over IPv4
//     the IPv4 header goes in its last 20 bytes and the first 20 are zero
//     (Linux include/rdma/ib_verbs.h union rdma_network_hdr { ib_grh;
//     { reserved[20]; iphdr roce4grh; } }, filled by rxe_resp.c); the CQE's
//     flags_rqpn carries the source QPN (23:0), the RoCE packet type IPv4
//     in bits 25:24 (kernel include/linux/mlx5/device.h
//     MLX5_CQE_ROCE_L3_HEADER_TYPE_IPV4 = 2, read by mlx5_ib cq.c
//     handle_responder as network_hdr_type; 0 would mean a RoCE v1 / IB GRH)
//     and "GRH scattered to the receive buffer" = 1 in bits 29:28 (the
//     value rdma-core / mlx5_ib test for IBV_WC_GRH; 3 would mean a GRH in a
//     128-byte CQE); byte_cnt includes the 40 bytes. The IPv4 header is the one the kernel built
//     (wire/icrc.hpp build_ipv4_udp_header: TTL 64, TOS 0, DF, id 0).
#include "common/log.hpp"
#include "sim/engine/pkey.hpp"
#include "sim/engine/transport.hpp"
#include "sim/fw/objects/events.hpp"
#include "sim/wire/icrc.hpp"

#include <infiniband/mlx5dv.h>

#include <algorithm>
#include <cstring>

namespace kbv::sim::engine {

namespace {
namespace qs = prm::qp_state;
using wire::NakCode;
using wire::Operation;
using wire::Position;

bool first_or_only(Position p) { return p == Position::kFirst || p == Position::kOnly; }
bool last_or_only(Position p) { return p == Position::kLast || p == Position::kOnly; }

// UD responder CQE flags_rqpn (see the header comment).
constexpr uint32_t kCqeGrhInBuffer = 1u << 28;
constexpr uint32_t kCqeRoceL3Ipv4 = 2u << 24;  // MLX5_CQE_ROCE_L3_HEADER_TYPE_IPV4
}  // namespace

void Transport::on_request(fw::Qp& q, const wire::RxPacket& p) {
  if (q.state != qs::kRtr && q.state != qs::kRts && q.state != qs::kSqd && q.state != qs::kSqer) {
    c_.unknown_qp_drops.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const wire::Transport t = wire::transport_of(p.headers.bth.opcode);
  const bool match = (t == wire::Transport::kRc && q.st == prm::qpc_st::kRc) ||
                     (t == wire::Transport::kUc && q.st == prm::qpc_st::kUc) ||
                     (t == wire::Transport::kUd && q.st == prm::qpc_st::kUd);
  if (!match) {
    c_.unknown_qp_drops.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // IBTA 10.9.3: a request whose P_Key does not match the QP's is dropped
  // silently (no NAK) and counted (pkey.hpp).
  fw::PortState& port = tables().port;
  if (!pkey_match(p.headers.bth.pkey, qp_pkey(port, q))) {
    port.pkey_violations.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (q.st == prm::qpc_st::kUd) {
    ud_request(q, p);
    return;
  }
  QpDp& d = dp(q);
  if (!d.resp_init) {
    d.resp_init = true;
    d.epsn = q.next_rcv_psn & wire::kPsnMask;
  }
  if (q.st == prm::qpc_st::kRc)
    rc_request(q, d, p);
  else
    uc_request(q, d, p);
  q.counters.rmsn = d.msn;  // QUERY_QP qpc.rmsn
}

Transport::Take Transport::take_recv(fw::Qp& q, QpDp& d) {
  if (d.have_recv) return Take::kOk;
  uint32_t rec = 0;
  if (q.rq_type == prm::qpc_rq_type::kSrqRq) {
    fw::Srq* srq = tables().srq(q.srqn);
    if (srq == nullptr || !read_dbrec(srq->dbr_addr, &rec)) return Take::kError;
    SrqDp& s = srq_dp(*srq);
    const uint32_t avail = (rec - s.consumed) & 0xFFFF;
    if (avail == 0) return Take::kNone;
    if (!parse_srq_wqe(iommu(), *srq, s.head, &d.recv.r).ok()) return Take::kError;
    d.recv.wqe_counter = static_cast<uint16_t>(s.head);
    d.recv.srqn = srq->srqn;
    s.head = d.recv.r.next_wqe_index & ((1u << srq->log_srq_size) - 1);
    ++s.consumed;
    if (srq->armed && avail - 1 < srq->lwm) {
      // PRM "ARM_RQ": the limit event fires once per arm.
      srq->armed = false;
      (void)fw::post_queue_event(ctx_.eqs(), prm::EventType::SRQ_RQ_LIMIT, srq->srqn);
    }
  } else if (q.rq_type == prm::qpc_rq_type::kNonZeroRq && q.rq_bytes != 0) {
    if (!read_dbrec(q.dbr_addr, &rec)) return Take::kError;
    q.counters.sw_rq_counter = rec & 0xFFFF;
    const uint16_t hw = static_cast<uint16_t>(q.counters.hw_rq_counter);
    if (static_cast<uint16_t>(rec) == hw) return Take::kNone;
    if (!parse_recv_wqe(iommu(), q, hw, &d.recv.r).ok()) return Take::kError;
    d.recv.wqe_counter = hw;
    d.recv.srqn = 0;
    ++q.counters.hw_rq_counter;
  } else {
    return Take::kNone;
  }
  d.have_recv = true;
  return Take::kOk;
}

void Transport::nak(fw::Qp& q, QpDp& d, uint8_t syndrome, uint32_t psn) {
  wire::PacketHeaders h;
  h.bth.opcode = wire::opcode::kAcknowledge;
  h.bth.dest_qp = q.remote_qpn;
  h.bth.pkey = qp_pkey(tables().port, q);
  h.bth.psn = psn;
  h.aeth = wire::Aeth{syndrome, d.msn & 0xFFFFFF};
  if (wire::aeth_type(syndrome) == wire::AethType::kRnrNak)
    c_.rnr_naks_sent.fetch_add(1, std::memory_order_relaxed);
  else
    c_.naks_sent.fetch_add(1, std::memory_order_relaxed);
  send(q, h, {});
}

void Transport::send_ack_now(fw::Qp& q, QpDp& d) {
  wire::PacketHeaders h;
  h.bth.opcode = wire::opcode::kAcknowledge;
  h.bth.dest_qp = q.remote_qpn;
  h.bth.pkey = qp_pkey(tables().port, q);
  h.bth.psn = wire::psn_add(d.epsn, -1);
  h.aeth = wire::Aeth{wire::aeth_ack(wire::kCreditInvalid), d.msn & 0xFFFFFF};
  c_.acks_sent.fetch_add(1, std::memory_order_relaxed);
  d.ack_due = false;
  d.since_ack = 0;
  send(q, h, {});
}

void Transport::resp_error(fw::Qp& q, QpDp& d, uint8_t cqe_syndrome, NakCode code,
                           prm::EventType ev) {
  log::debug("sim.engine", "qpn {:#x}: responder error (NAK {}, CQE syndrome {:#x}) at psn {:#x}",
             q.qpn, static_cast<int>(code), cqe_syndrome, d.epsn);
  if (d.have_recv && cqe_syndrome != 0) {
    CqeFields f;
    f.opcode = MLX5_CQE_RESP_ERR;
    f.qpn = q.qpn;
    f.wqe_counter = d.recv.wqe_counter;
    f.srqn_uidx = d.recv.srqn;
    f.syndrome = cqe_syndrome;
    cqe(q.cqn_rcv, f);
    d.have_recv = false;
  }
  if (q.st == prm::qpc_st::kRc) nak(q, d, wire::aeth_nak(code), d.epsn);
  qp_error(q, ev);
}

void Transport::recv_cqe(fw::Qp& q, QpDp& d, uint8_t opcode, uint32_t byte_cnt, uint32_t imm,
                         bool se, uint32_t flags_rqpn) {
  CqeFields f;
  f.opcode = opcode;
  f.qpn = q.qpn;
  f.wqe_counter = d.recv.wqe_counter;
  f.byte_cnt = byte_cnt;
  f.imm = imm;
  f.srqn_uidx = d.recv.srqn != 0 ? d.recv.srqn : q.user_index;
  f.flags_rqpn = flags_rqpn;
  f.solicited = se;
  d.have_recv = false;
  cqe(q.cqn_rcv, f);
}

// Places one SEND packet; false when the packet was not accepted (RNR,
// error: the caller must not advance the PSN).
bool Transport::place_send(fw::Qp& q, QpDp& d, const wire::RxPacket& p, bool reliable) {
  const Position pos = p.info->position;
  if (first_or_only(pos)) {
    const Take t = take_recv(q, d);
    if (t == Take::kNone) {
      if (reliable)
        nak(q, d, wire::aeth_rnr_nak(static_cast<uint8_t>(q.min_rnr_nak)), d.epsn);
      else
        c_.no_recv_drops.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (t == Take::kError) {
      resp_error(q, d, 0, NakCode::kRemoteOperationalError, prm::EventType::WQ_CATAS_ERROR);
      return false;
    }
    d.offset = 0;
    d.in_send = !last_or_only(pos);
  }
  const auto bytes = std::as_bytes(p.payload);
  AccessStatus a = scatter(iommu(), tables().mkeys, q.pd,
                           std::span(d.recv.r.sge.data(), d.recv.r.num_sge), d.offset, bytes);
  if (!a.ok()) {
    log::debug("sim.engine", "qpn {:#x}: receive WQE {} ({} SGEs, {} B) refused {} B at {}", q.qpn,
               d.recv.wqe_counter, d.recv.r.num_sge, d.recv.r.length, bytes.size(), d.offset);
    const bool length = a.syndrome == MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
    resp_error(q, d, a.syndrome,
               length ? NakCode::kInvalidRequest : NakCode::kRemoteOperationalError,
               length ? prm::EventType::WQ_INVAL_REQ_ERROR : prm::EventType::WQ_ACCESS_ERROR);
    return false;
  }
  d.offset += bytes.size();
  if (last_or_only(pos)) {
    d.in_send = false;
    d.msn = (d.msn + 1) & 0xFFFFFF;
    const bool imm = p.headers.immdt.has_value();
    recv_cqe(q, d, imm ? MLX5_CQE_RESP_SEND_IMM : MLX5_CQE_RESP_SEND,
             static_cast<uint32_t>(d.offset), imm ? p.headers.immdt->imm : 0, p.headers.bth.se, 0);
  }
  return true;
}

bool Transport::place_write(fw::Qp& q, QpDp& d, const wire::RxPacket& p, bool reliable) {
  const Position pos = p.info->position;
  const bool imm = p.headers.immdt.has_value();
  // UC: the message is dropped, the rest of its packets with it.
  auto uc_drop = [&] {
    d.in_write = false;
    c_.uc_error_drops.fetch_add(1, std::memory_order_relaxed);
    return false;
  };
  if (first_or_only(pos)) {
    if (!q.rwe || !p.headers.reth) {
      if (!reliable) return uc_drop();
      resp_error(q, d, 0, NakCode::kInvalidRequest, prm::EventType::WQ_INVAL_REQ_ERROR);
      return false;
    }
    d.write_va = p.headers.reth->va;
    d.write_rkey = p.headers.reth->rkey;
    d.write_len = p.headers.reth->dma_len;
    d.offset = 0;
  }
  if (imm && last_or_only(pos)) {
    // WRITE with immediate consumes a receive WQE (IBTA 9.4.3).
    const Take t = take_recv(q, d);
    if (t == Take::kNone) {
      if (reliable)
        nak(q, d, wire::aeth_rnr_nak(static_cast<uint8_t>(q.min_rnr_nak)), d.epsn);
      else
        c_.no_recv_drops.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (t == Take::kError) {
      resp_error(q, d, 0, NakCode::kRemoteOperationalError, prm::EventType::WQ_CATAS_ERROR);
      return false;
    }
  }
  const auto bytes = std::as_bytes(p.payload);
  if (d.offset + bytes.size() > d.write_len ||
      (last_or_only(pos) && d.offset + bytes.size() != d.write_len)) {
    if (!reliable) return uc_drop();
    resp_error(q, d, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, NakCode::kInvalidRequest,
               prm::EventType::WQ_INVAL_REQ_ERROR);
    return false;
  }
  if (!bytes.empty()) {
    AccessStatus a =
        remote_write(iommu(), tables().mkeys, q.pd, d.write_rkey, d.write_va + d.offset, bytes);
    if (!a.ok()) {
      if (!reliable) return uc_drop();
      resp_error(q, d, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, NakCode::kRemoteAccessError,
                 prm::EventType::WQ_ACCESS_ERROR);
      return false;
    }
  }
  d.offset += bytes.size();
  d.in_write = !last_or_only(pos);
  if (last_or_only(pos)) {
    d.msn = (d.msn + 1) & 0xFFFFFF;
    if (imm)
      recv_cqe(q, d, MLX5_CQE_RESP_WR_IMM, d.write_len, p.headers.immdt->imm, p.headers.bth.se, 0);
  }
  return true;
}

void Transport::read_responses(fw::Qp& q, QpDp& d, uint32_t psn, const wire::Reth& r) {
  const uint32_t mtu = qp_mtu(q);
  const uint32_t n = wire::packet_count(r.dma_len, mtu);
  for (uint32_t k = 0; k < n; ++k) {
    const uint64_t off = uint64_t{k} * mtu;
    const uint32_t cnt = static_cast<uint32_t>(std::min<uint64_t>(mtu, r.dma_len - off));
    if (cnt > 0) {
      AccessStatus a = remote_read(iommu(), tables().mkeys, q.pd, r.rkey, r.va + off,
                                   std::as_writable_bytes(std::span(buf_.data(), cnt)));
      if (!a.ok()) {
        d.epsn = wire::psn_add(psn, static_cast<int32_t>(k));
        resp_error(q, d, 0, NakCode::kRemoteAccessError, prm::EventType::WQ_ACCESS_ERROR);
        return;
      }
    }
    const Position pos = wire::position_of(k, n);
    wire::PacketHeaders h;
    h.bth.opcode = *wire::make_opcode(wire::Transport::kRc, Operation::kReadResponse, pos, false);
    h.bth.dest_qp = q.remote_qpn;
    h.bth.pkey = qp_pkey(tables().port, q);
    h.bth.psn = wire::psn_add(psn, static_cast<int32_t>(k));
    if (pos != Position::kMiddle)
      h.aeth = wire::Aeth{wire::aeth_ack(wire::kCreditInvalid), d.msn & 0xFFFFFF};
    send(q, h, std::span<const uint8_t>(buf_.data(), cnt));
  }
}

void Transport::atomic(fw::Qp& q, QpDp& d, const wire::RxPacket& p) {
  const wire::AtomicEth& ae = *p.headers.atomic_eth;
  if (!q.rae || (ae.va & 7) != 0) {
    resp_error(q, d, 0, NakCode::kInvalidRequest, prm::EventType::WQ_INVAL_REQ_ERROR);
    return;
  }
  uint64_t v = 0;
  AccessStatus a =
      key_read(iommu(), tables().mkeys, q.pd, ae.rkey, ae.va, fw::mkey_access::kRemoteAtomic, false,
               std::as_writable_bytes(std::span(&v, 1)));
  if (a.ok()) {
    const uint64_t nv = p.headers.bth.opcode == wire::opcode::kCompareSwap
                            ? (v == ae.compare ? ae.swap_add : v)
                            : v + ae.swap_add;
    a = key_write(iommu(), tables().mkeys, q.pd, ae.rkey, ae.va, fw::mkey_access::kRemoteAtomic,
                  false, std::as_bytes(std::span(&nv, 1)));
  }
  if (!a.ok()) {
    resp_error(q, d, 0, NakCode::kRemoteAccessError, prm::EventType::WQ_ACCESS_ERROR);
    return;
  }
  d.atomics[d.atomic_next++ % d.atomics.size()] = AtomicReplay{true, p.headers.bth.psn, v};
  d.msn = (d.msn + 1) & 0xFFFFFF;
  wire::PacketHeaders h;
  h.bth.opcode = wire::opcode::kAtomicAcknowledge;
  h.bth.dest_qp = q.remote_qpn;
  h.bth.pkey = qp_pkey(tables().port, q);
  h.bth.psn = p.headers.bth.psn;
  h.aeth = wire::Aeth{wire::aeth_ack(wire::kCreditInvalid), d.msn};
  h.atomic_ack_eth = wire::AtomicAckEth{v};
  send(q, h, {});
  d.epsn = wire::psn_add(d.epsn, 1);
}

void Transport::rc_request(fw::Qp& q, QpDp& d, const wire::RxPacket& p) {
  const uint32_t psn = p.headers.bth.psn;
  const Operation opn = p.info->operation;
  const int32_t diff = wire::psn_diff(psn, d.epsn);
  log::trace("sim.engine", "qpn {:#x}: req op {:#x} psn {:#x} epsn {:#x} in_send {} in_write {}",
             q.qpn, p.headers.bth.opcode, psn, d.epsn, d.in_send, d.in_write);
  if (diff < 0) {
    c_.duplicates.fetch_add(1, std::memory_order_relaxed);
    if (opn == Operation::kReadRequest && p.headers.reth) {
      read_responses(q, d, psn, *p.headers.reth);
    } else if (opn == Operation::kCompareSwap || opn == Operation::kFetchAdd) {
      for (const AtomicReplay& r : d.atomics)
        if (r.valid && r.psn == psn) {
          wire::PacketHeaders h;
          h.bth.opcode = wire::opcode::kAtomicAcknowledge;
          h.bth.dest_qp = q.remote_qpn;
          h.bth.psn = psn;
          h.aeth = wire::Aeth{wire::aeth_ack(wire::kCreditInvalid), d.msn};
          h.atomic_ack_eth = wire::AtomicAckEth{r.orig};
          send(q, h, {});
          break;
        }
    } else if (!d.ack_due) {
      d.ack_due = true;
      ack_qpns_.push_back(q.qpn);
    }
    return;
  }
  if (diff > 0) {
    c_.out_of_sequence.fetch_add(1, std::memory_order_relaxed);
    if (!d.nak_seq_sent) {
      d.nak_seq_sent = true;
      nak(q, d, wire::aeth_nak(NakCode::kPsnSequenceError), d.epsn);
    }
    return;
  }
  d.nak_seq_sent = false;
  const Position pos = p.info->position;
  const uint32_t mtu = qp_mtu(q);
  // Opcode sequence and packet length checks (IBTA 9.7.5.2).
  bool bad = false;
  if (opn == Operation::kSend)
    bad = first_or_only(pos) ? (d.in_send || d.in_write) : !d.in_send;
  else if (opn == Operation::kWrite)
    bad = first_or_only(pos) ? (d.in_send || d.in_write) : !d.in_write;
  else
    bad = d.in_send || d.in_write;
  if (!bad && (pos == Position::kFirst || pos == Position::kMiddle) && p.payload.size() != mtu)
    bad = true;
  if (bad) {
    resp_error(q, d, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, NakCode::kInvalidRequest,
               prm::EventType::WQ_INVAL_REQ_ERROR);
    return;
  }
  switch (opn) {
    case Operation::kSend:
      if (!place_send(q, d, p, true)) return;
      break;
    case Operation::kWrite:
      if (!place_write(q, d, p, true)) return;
      break;
    case Operation::kReadRequest: {
      if (!q.rre || !p.headers.reth) {
        resp_error(q, d, 0, NakCode::kInvalidRequest, prm::EventType::WQ_INVAL_REQ_ERROR);
        return;
      }
      const wire::Reth r = *p.headers.reth;
      d.msn = (d.msn + 1) & 0xFFFFFF;
      read_responses(q, d, psn, r);
      if (q.state == qs::kErr) return;
      d.epsn = wire::psn_add(psn, static_cast<int32_t>(wire::packet_count(r.dma_len, mtu)));
      return;
    }
    case Operation::kCompareSwap:
    case Operation::kFetchAdd: atomic(q, d, p); return;
    default:
      resp_error(q, d, 0, NakCode::kInvalidRequest, prm::EventType::WQ_INVAL_REQ_ERROR);
      return;
  }
  d.epsn = wire::psn_add(d.epsn, 1);
  ++d.since_ack;
  if ((p.headers.bth.ack_req || d.since_ack >= kAckEvery) && !d.ack_due) {
    d.ack_due = true;
    ack_qpns_.push_back(q.qpn);
  }
}

void Transport::uc_request(fw::Qp& q, QpDp& d, const wire::RxPacket& p) {
  const uint32_t psn = p.headers.bth.psn;
  const Position pos = p.info->position;
  const Operation opn = p.info->operation;
  if (psn != d.epsn) {
    // A gap: the message in progress is lost; resynchronise on first / only.
    c_.out_of_sequence.fetch_add(1, std::memory_order_relaxed);
    d.in_send = d.in_write = false;
    d.epsn = wire::psn_add(psn, 1);
    if (!first_or_only(pos)) {
      c_.no_recv_drops.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    d.epsn = psn;
  }
  d.epsn = wire::psn_add(psn, 1);
  const bool inside = opn == Operation::kSend ? d.in_send : d.in_write;
  if (!first_or_only(pos) && !inside) {
    c_.no_recv_drops.fetch_add(1, std::memory_order_relaxed);  // rest of a dropped message
    return;
  }
  if (first_or_only(pos) && (d.in_send || d.in_write)) d.in_send = d.in_write = false;
  if (opn == Operation::kSend)
    (void)place_send(q, d, p, false);
  else if (opn == Operation::kWrite)
    (void)place_write(q, d, p, false);
}

void Transport::ud_request(fw::Qp& q, const wire::RxPacket& p) {
  if (!p.headers.deth || p.headers.deth->qkey != q.q_key) {
    c_.qkey_drops.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  QpDp& d = dp(q);
  const Take t = take_recv(q, d);
  if (t == Take::kNone) {
    c_.no_recv_drops.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (t == Take::kError) {
    qp_error(q, prm::EventType::WQ_CATAS_ERROR);
    return;
  }
  std::array<std::byte, 40> grh{};
  std::array<uint8_t, wire::kIpv4HeaderBytes + wire::kUdpHeaderBytes> iphdr{};
  wire::Ipv4Flow flow{p.src_ip, ip(), p.src_port, wire::kRoceV2UdpPort};
  wire::build_ipv4_udp_header(flow, p.datagram_bytes, 0, 64, iphdr);
  std::memcpy(grh.data() + 20, iphdr.data(), wire::kIpv4HeaderBytes);
  const auto sges = std::span(d.recv.r.sge.data(), d.recv.r.num_sge);
  AccessStatus a = scatter(iommu(), tables().mkeys, q.pd, sges, 0, grh);
  if (a.ok())
    a = scatter(iommu(), tables().mkeys, q.pd, sges, grh.size(), std::as_bytes(p.payload));
  if (!a.ok()) {
    resp_error(q, d, a.syndrome, NakCode::kRemoteOperationalError, prm::EventType::COMP);
    return;
  }
  const bool imm = p.headers.immdt.has_value();
  recv_cqe(q, d, imm ? MLX5_CQE_RESP_SEND_IMM : MLX5_CQE_RESP_SEND,
           static_cast<uint32_t>(grh.size() + p.payload.size()), imm ? p.headers.immdt->imm : 0,
           p.headers.bth.se,
           (p.headers.deth->src_qp & 0xFFFFFF) | kCqeGrhInBuffer | kCqeRoceL3Ipv4);
}

}  // namespace kbv::sim::engine
