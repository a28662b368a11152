// SPDX-License-Identifier: BSD-3-Clause
//
// The engine's firmware-thread half (engine.hpp explains the model): per-QP
// transport state (kept in fw::Qp::dp_state, so it dies with the QP and with
// 2RST), the requester (requester.cpp), the responder (responder.cpp), CQEs,
// errors and flushing (transport.cpp).
//
// Threading: everything runs on the firmware thread except record_*()
// (driver thread, under doorbell_mu_) and the atomic counters.
#pragma once

#include "sim/engine/cqe.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/memory.hpp"
#include "sim/engine/wqe.hpp"
#include "sim/fw/context.hpp"
#include "sim/fw/objects/tables.hpp"
#include "sim/wire/port.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <queue>
#include <vector>

namespace kbv::sim::engine {

using Clock = std::chrono::steady_clock;

// One executed send WQE until its completion is written (requester).
struct SendOp {
  ParsedWqe w;
  uint32_t psn = 0;    // first PSN (RC / UC)
  uint32_t npkts = 0;  // PSNs it occupies (READ: its response packets)
  uint32_t mtu = 0;
  uint32_t rcv_pkts = 0;  // READ: response packets received in order
  bool read_atomic = false;
  bool done = false;
  uint8_t syndrome = 0;  // nonzero: complete with this error
  uint8_t vendor = 0;
  uint32_t last_psn() const { return (psn + (npkts ? npkts - 1 : 0)) & 0xFFFFFF; }
};

// A receive WQE taken for the message being received.
struct RecvSlot {
  ParsedRecv r;
  uint16_t wqe_counter = 0;
  uint32_t srqn = 0;
};

// Responder atomic replay cache entry (IBTA 9.7.5.1.x: duplicate atomics
// return the saved original value, they are not executed again).
struct AtomicReplay {
  bool valid = false;
  uint32_t psn = 0;
  uint64_t orig = 0;
};

// The port's transmit credit (see Transport "Link-level flow control"):
// shared by the Transport and every QpDp, so a QP's charge is returned when
// its state dies (DESTROY_QP, 2RST, reset) whichever goes first.
struct TxCredit {
  uint32_t budget = 0;     // RC PSNs allowed unacknowledged, all QPs of the port
  uint32_t in_flight = 0;  // sum of the QPs' charges
};

struct QpDp {
  QpDp() = default;
  explicit QpDp(std::shared_ptr<TxCredit> c) : credit(std::move(c)) {}
  ~QpDp() {
    if (credit) credit->in_flight -= charged;
  }
  QpDp(const QpDp&) = delete;
  QpDp& operator=(const QpDp&) = delete;
  // ---- scheduling (transport.cpp) ----
  std::shared_ptr<TxCredit> credit;
  uint32_t charged = 0;      // PSNs of this QP counted in credit->in_flight
  bool credit_wait = false;  // queued in Transport::credit_wait_
  bool link_wait = false;    // queued in Transport::link_wait_ (UC/UD peer window full)
  Clock::time_point timer_at = Clock::time_point::max();  // earliest entry in timers_
  Clock::time_point err_poll = Clock::time_point::max();  // ERR: next RQ doorbell record read
  // ---- requester ----
  bool req_init = false;
  std::deque<SendOp> ops;  // executed, not yet completed; front = oldest
  uint32_t next_psn = 0;   // next PSN to assign
  uint32_t tx_psn = 0;     // next PSN to (re)transmit
  uint32_t una = 0;        // oldest unacknowledged PSN
  uint32_t max_sent = 0;   // one past the highest PSN ever sent
  bool stopped = false;    // a WQE failed locally: fetch nothing more
  Clock::time_point ack_deadline = Clock::time_point::max();
  Clock::time_point rnr_until = Clock::time_point::max();
  uint32_t retx_trigger = 0xFFFFFFFF;  // una of the last early go-back (once per una)
  // ---- responder ----
  bool resp_init = false;
  uint32_t epsn = 0;  // expected PSN
  uint32_t msn = 0;   // messages completed (24 bits, AETH)
  bool nak_seq_sent = false;
  bool in_send = false, in_write = false;  // inside a multi-packet message
  bool uc_drop = false;                    // UC: dropping the rest of a message
  RecvSlot recv;
  bool have_recv = false;  // `recv` was taken and not completed yet
  uint64_t offset = 0;     // bytes of the current message placed
  uint64_t write_va = 0;
  uint32_t write_rkey = 0, write_len = 0;
  uint32_t since_ack = 0;
  bool ack_due = false;
  std::array<AtomicReplay, 16> atomics{};
  uint32_t atomic_next = 0;
  // ---- errors ----
  bool flushed = false;
  bool sq_err = false;  // UD / UC: the send queue went to SQE
};

struct SrqDp {
  uint32_t head = 0;      // next WQE index (the free list starts at 0)
  uint32_t consumed = 0;  // WQEs taken (16-bit compare with dbrec[0])
};

struct Counters {
  std::atomic<uint64_t> sq_doorbells{0}, cq_doorbells{0}, wqes{0}, tx_packets{0}, rx_packets{0},
      retransmits{0}, timeouts{0}, acks_sent{0}, naks_sent{0}, naks_received{0}, rnr_naks_sent{0},
      rnr_naks_received{0}, duplicates{0}, out_of_sequence{0}, qkey_drops{0}, no_recv_drops{0},
      uc_error_drops{0}, unknown_qp_drops{0}, tx_unroutable{0}, cqes{0}, error_cqes{0},
      flush_cqes{0}, rx_bad_icrc{0}, rx_malformed{0}, fault_dropped{0}, fault_duplicated{0},
      fault_reordered{0}, fault_corrupted{0};
};

class Transport {
 public:
  static constexpr uint32_t kWindow = 128;   // RC/UC packets in flight per QP
  static constexpr uint32_t kAckEvery = 16;  // responder ACKs at least every N packets
  // Transmit credit (see "Link-level flow control" below): the kernel's
  // cost (skb truesize) of a 4096-MTU RoCEv2 datagram on loopback, and the
  // most PSNs a port keeps unacknowledged.
  static constexpr uint32_t kDatagramTruesize = 8704;
  static constexpr uint32_t kMaxInFlight = 256;
  static constexpr uint32_t kMinInFlight = 2 * kAckEvery;

  Transport(fw::FwContext& ctx, std::unique_ptr<wire::Port> port);

  // Driver thread: record a doorbell (the caller wakes the loop).
  void record_sq(uint32_t qpn);
  void record_cq(uint32_t cqn, uint32_t word);

  // Firmware thread: one loop pass; returns the next deadline. rx_ready:
  // epoll reported the port's socket readable; ctl_ready: its link-control
  // socket (wire/link_flow.hpp).
  Clock::time_point run(bool rx_ready = true, bool ctl_ready = true);
  // The doorbells recorded so far only (CQ arms, SQ pumps), then the
  // transmit flush; returns the next deadline. Under the same exclusion as
  // run() (Firmware::run_if_idle, on the thread that rang the doorbell).
  Clock::time_point run_doorbells();
  // Firmware thread: hands received packets (parsed by Port::poll or
  // Port::accept) to their QPs' requester or responder, then sends the
  // coalesced ACKs due and resumes QPs waiting for credit: run()'s receive
  // step for one batch. Unknown QPNs are counted (unknown_qp_drops) and
  // dropped. Harnesses call it directly to feed datagrams without a socket
  // (then run_doorbells() flushes what it queued for transmission).
  void receive(std::span<const wire::RxPacket> pkts);
  // No RC PSN of any QP of the port unacknowledged (same exclusion).
  bool link_idle() const { return credit_->in_flight == 0; }

  // ---- scheduling (transport.cpp) ----
  // Link-level flow control: the model's wire is a UDP socket that drops
  // datagrams when its receive buffer is full or when its engine falls
  // behind, where RoCE runs on a lossless (PFC) fabric and IB on
  // credit-based link flow control (IBTA 7.9): a busy receiver pauses the
  // sender instead, and a real HCA drains its queue at line rate. On a
  // loaded host the model's engine threads may get a fraction of a core, so
  // the port keeps at most TxCredit::budget RC PSNs of all its QPs
  // unacknowledged (READ: the responses asked for): min(kMaxInFlight, half
  // the receive buffer in 4096-MTU datagrams), at least kMinInFlight. A
  // receiver then holds a bounded backlog that drains in a few ms, well
  // inside the ack timeout, instead of thousands of packets that outlast it.
  // A QP that finds no credit waits in a FIFO and resumes when ACKs return
  // credit; retransmissions need none (their PSNs are already counted).
  // Nothing changes on the wire or in the transport's semantics: packets
  // are only delayed, as behind a paused link.
  bool credit_for(fw::Qp& q, QpDp& d, uint32_t psns);
  void recharge(fw::Qp& q, QpDp& d);
  // Timers: a min-heap of (deadline, qpn); each QP keeps at most one live
  // entry (QpDp::timer_at), stale ones are skipped when popped.
  void schedule(fw::Qp& q, QpDp& d);

  int fd() const { return port_->fd(); }
  int ctl_fd() const { return port_->ctl_fd(); }
  uint32_t ip() const { return port_->ip(); }
  Counters& counters() { return c_; }
  const Counters& counters() const { return c_; }
  // The port's counters for PPCNT (firmware thread: the port is read directly).
  fw::WireCounters wire_counters() const;

  // ---- shared helpers (transport.cpp) ----
  fw::ObjectTables& tables() { return fw::objects(ctx_); }
  Iommu& iommu() { return ctx_.iommu(); }
  QpDp& dp(fw::Qp& q);
  SrqDp& srq_dp(fw::Srq& s);
  CqNotify& cq_notify(fw::Cq& c);
  bool read_dbrec(uint64_t iova, uint32_t* be_value);  // big-endian 32-bit word -> host
  void cqe(uint32_t cqn, const CqeFields& f);
  // The QP goes to ERR (optionally with an async event) and flushes.
  void qp_error(fw::Qp& q, prm::EventType ev = prm::EventType::COMP);
  void flush(fw::Qp& q, QpDp& d);
  void flush_sq(fw::Qp& q, QpDp& d);  // send side only (SQE, IBTA 10.3.1)
  void flush_rq(fw::Qp& q, QpDp& d);
  void send(fw::Qp& q, const wire::PacketHeaders& h, std::span<const uint8_t> payload);
  Status send_to(uint32_t ip, uint16_t sport, const wire::PacketHeaders& h,
                 std::span<const uint8_t> payload);
  static uint32_t dest_ip(const fw::Qp& q);
  static uint32_t ud_dest_ip(const ParsedWqe& w);
  static uint32_t qp_mtu(const fw::Qp& q);

  // ---- requester (requester.cpp) ----
  void pump(fw::Qp& q);
  void on_response(fw::Qp& q, const wire::RxPacket& p);
  void on_timer(fw::Qp& q, QpDp& d, Clock::time_point now);

  // ---- responder (responder.cpp) ----
  void on_request(fw::Qp& q, const wire::RxPacket& p);
  void send_ack_now(fw::Qp& q, QpDp& d);

 private:
  // requester internals
  void transmit(fw::Qp& q, QpDp& d);
  bool send_at(fw::Qp& q, QpDp& d, SendOp& op, uint32_t psn);
  bool fetch(fw::Qp& q, QpDp& d);
  void complete_front(fw::Qp& q, QpDp& d);
  void ack_through(fw::Qp& q, QpDp& d, uint32_t psn);
  void fail_op(fw::Qp& q, QpDp& d, uint32_t psn, uint8_t syndrome);
  void arm_ack_timer(fw::Qp& q, QpDp& d);
  // responder internals
  enum class Take { kOk, kNone, kError };
  Take take_recv(fw::Qp& q, QpDp& d);
  void nak(fw::Qp& q, QpDp& d, uint8_t syndrome, uint32_t psn);
  void resp_error(fw::Qp& q, QpDp& d, uint8_t cqe_syndrome, wire::NakCode code, prm::EventType ev);
  void rc_request(fw::Qp& q, QpDp& d, const wire::RxPacket& p);
  void uc_request(fw::Qp& q, QpDp& d, const wire::RxPacket& p);
  void ud_request(fw::Qp& q, const wire::RxPacket& p);
  bool place_send(fw::Qp& q, QpDp& d, const wire::RxPacket& p, bool reliable);
  bool place_write(fw::Qp& q, QpDp& d, const wire::RxPacket& p, bool reliable);
  void read_responses(fw::Qp& q, QpDp& d, uint32_t psn, const wire::Reth& r);
  void atomic(fw::Qp& q, QpDp& d, const wire::RxPacket& p);
  void recv_cqe(fw::Qp& q, QpDp& d, uint8_t opcode, uint32_t byte_cnt, uint32_t imm, bool se,
                uint32_t flags_rqpn);

  void publish_port_counters();
  // run() / run_doorbells() pieces: take the recorded doorbells (false:
  // HCA not initialised, dropped), execute them, flush and return the next
  // deadline.
  bool take_doorbells();
  void execute_doorbells();
  Clock::time_point finish_pass();

  fw::FwContext& ctx_;
  std::unique_ptr<wire::Port> port_;
  Counters c_;
  std::mutex doorbell_mu_;
  std::vector<uint32_t> sq_db_;
  std::vector<std::pair<uint32_t, uint32_t>> cq_db_;
  std::vector<uint32_t> sq_work_;  // firmware-thread copies
  std::vector<std::pair<uint32_t, uint32_t>> cq_work_;
  std::vector<uint32_t> ack_qpns_;  // responders with a coalesced ACK due
  std::shared_ptr<TxCredit> credit_ = std::make_shared<TxCredit>();
  std::deque<uint32_t> credit_wait_;  // QPs waiting for transmit credit, FIFO
  uint32_t resuming_ = 0xFFFFFFFF;    // the QP resume_waiting() is pumping
  struct Timer {
    Clock::time_point at;
    uint32_t qpn;
    bool operator>(const Timer& o) const { return at > o.at; }
  };
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  void resume_waiting();
  // UC/UD: the peer's link window (wire/link_flow.hpp) is full. The QP
  // waits in link_wait_ (its WQEs stay in the send queue) until a window
  // opens, then resume_link_waiting() pumps it again.
  bool link_open(fw::Qp& q, QpDp& d, uint32_t ip);
  void resume_link_waiting();
  std::vector<uint32_t> link_wait_;
  std::vector<uint32_t> link_resume_;  // resume_link_waiting()'s copy
  void on_error_state(fw::Qp& q, QpDp& d, Clock::time_point now);
  std::array<wire::RxPacket, wire::Port::kRxBatch> rx_{};
  std::array<uint8_t, wire::kMaxPayload> buf_{};
};

}  // namespace kbv::sim::engine
