// SPDX-License-Identifier: BSD-3-Clause
#include "sim/engine/transport.hpp"

#include "common/log.hpp"
#include "hca/prm/uar.hpp"
#include "sim/bus/pci_function.hpp"
#include "sim/fw/objects/events.hpp"

#include <infiniband/mlx5dv.h>

#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace kbv::sim::engine {

namespace {
constexpr const char* kLog = "sim.engine";
// How often the RQ doorbell record of a QP in error is read (see run()).
constexpr std::chrono::milliseconds kErrRqPoll{5};
namespace qs = prm::qp_state;
}  // namespace

// ---- Engine (driver-facing half) ----------------------------------------------

Result<std::unique_ptr<Engine>> Engine::create(fw::Firmware& fw, std::unique_ptr<wire::Port> port) {
  if (!port) return KBV_ERR_INVALID_ARGUMENT;
  port->set_tx_batching(true);  // Transport::run() flushes at the end of each pass
  std::unique_ptr<Engine> e(new Engine());
  e->fw_ = &fw;
  e->ip_ = port->ip();
  e->transport_ = std::make_unique<Transport>(fw.context(), std::move(port));
  e->tfd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (e->tfd_ < 0) return Status::from_errno(errno);
  if (Status s = fw.add_wait_fd(e->transport_->fd()); !s.is_ok()) return s;
  if (Status s = fw.add_wait_fd(e->transport_->ctl_fd()); !s.is_ok()) return s;
  if (Status s = fw.add_wait_fd(e->tfd_); !s.is_ok()) return s;
  Engine* self = e.get();
  fw.set_uar_write_listener(
      [self](uint64_t off, uint64_t v, unsigned w) { self->on_uar_write(off, v, w); });
  fw.set_loop_hook([self] {
    if (self->fw_->fd_ready(self->tfd_)) {
      uint64_t v;
      ssize_t r = ::read(self->tfd_, &v, sizeof v);
      (void)r;
      self->armed_ = Clock::time_point::max();
    }
    Transport& t = *self->transport_;
    self->arm(t.run(self->fw_->fd_ready(t.fd()), self->fw_->fd_ready(t.ctl_fd())));
    return Clock::time_point::max();  // the engine's own timerfd wakes the loop
  });
  Transport* t = e->transport_.get();
  fw.context().set_wire_counters([t] { return t->wire_counters(); });
  return e;
}

Engine::~Engine() {
  if (tfd_ >= 0) ::close(tfd_);
}

void Engine::arm(Clock::time_point due) {
  if (due == armed_) return;
  // A later (or no) deadline: an expiry armed more than kLazyRearm ahead
  // stays (it wakes one pass, which finds nothing due and re-arms), so the
  // ack timeout of a busy QP costs no system call per packet; one due
  // sooner is moved (a held ACK that left early must not wake the loop).
  constexpr auto kLazyRearm = std::chrono::milliseconds(1);
  if (due > armed_ && armed_ - Clock::now() > kLazyRearm) return;
  itimerspec its{};  // zero: disarmed
  if (due != Clock::time_point::max()) {
    const auto ns = std::max<int64_t>(
        1, std::chrono::duration_cast<std::chrono::nanoseconds>(due.time_since_epoch()).count());
    its.it_value.tv_sec = static_cast<time_t>(ns / 1000000000);
    its.it_value.tv_nsec = static_cast<long>(ns % 1000000000);
  }
  if (::timerfd_settime(tfd_, TFD_TIMER_ABSTIME, &its, nullptr) == 0) {
    armed_ = due;
  } else {
    log::error(kLog, "timerfd_settime: {}", std::strerror(errno));
    fw_->notify();  // the loop runs again: the deadline is polled, not lost
  }
}

bool Engine::doorbell_pass(void* self) {
  Engine* e = static_cast<Engine*>(self);
  if (!e->transport_->link_idle()) return false;  // a stream: batched by the loop
  e->arm(e->transport_->run_doorbells());
  return true;
}

void Engine::on_uar_write(uint64_t offset, uint64_t value, unsigned width) {
  // UAR page registers (hca/prm/uar.hpp, docs/PRM.md "Data path").
  const uint32_t in_page = prm::uar_offset_in_page(offset);
  if (width != 8) return;
  if (in_page == prm::kUarCqDoorbellOff) {
    // be64toh of the stored bytes: high = arm word, low = cqn (engine/cqe.hpp).
    transport_->record_cq(static_cast<uint32_t>(value) & 0xFFFFFF,
                          static_cast<uint32_t>(value >> 32));
  } else if (in_page >= prm::kUarBlueflameOff &&
             (in_page - prm::kUarBlueflameOff) % prm::uar_bf_half_size(kLogBfRegSize) == 0) {
    // The first 8 bytes of a control segment: opmod_idx_opcode, qpn_ds.
    transport_->record_sq(static_cast<uint32_t>(value >> 8) & 0xFFFFFF);
  } else {
    return;
  }
  // Executed here when the firmware loop is idle; a busy loop takes it
  // (with whatever else was rung meanwhile) in its next pass.
  if (!fw_->run_if_idle(&Engine::doorbell_pass, this)) fw_->notify();
}

EngineStats Engine::stats() const {
  const Counters& c = transport_->counters();
  EngineStats s;
  s.sq_doorbells = c.sq_doorbells.load();
  s.cq_doorbells = c.cq_doorbells.load();
  s.wqes = c.wqes.load();
  s.tx_packets = c.tx_packets.load();
  s.rx_packets = c.rx_packets.load();
  s.retransmits = c.retransmits.load();
  s.timeouts = c.timeouts.load();
  s.acks_sent = c.acks_sent.load();
  s.naks_sent = c.naks_sent.load();
  s.naks_received = c.naks_received.load();
  s.rnr_naks_sent = c.rnr_naks_sent.load();
  s.rnr_naks_received = c.rnr_naks_received.load();
  s.duplicates = c.duplicates.load();
  s.out_of_sequence = c.out_of_sequence.load();
  s.qkey_drops = c.qkey_drops.load();
  s.no_recv_drops = c.no_recv_drops.load();
  s.uc_error_drops = c.uc_error_drops.load();
  s.unknown_qp_drops = c.unknown_qp_drops.load();
  s.cqes = c.cqes.load();
  s.error_cqes = c.error_cqes.load();
  s.flush_cqes = c.flush_cqes.load();
  s.tx_unroutable = c.tx_unroutable.load();
  s.rx_bad_icrc = c.rx_bad_icrc.load();
  s.rx_malformed = c.rx_malformed.load();
  s.fault_dropped = c.fault_dropped.load();
  s.fault_duplicated = c.fault_duplicated.load();
  s.fault_reordered = c.fault_reordered.load();
  s.fault_corrupted = c.fault_corrupted.load();
  return s;
}

// ---- Transport: doorbells and the loop ------------------------------------------

void Transport::record_sq(uint32_t qpn) {
  c_.sq_doorbells.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(doorbell_mu_);
  if (std::find(sq_db_.begin(), sq_db_.end(), qpn) == sq_db_.end()) sq_db_.push_back(qpn);
}

void Transport::record_cq(uint32_t cqn, uint32_t word) {
  c_.cq_doorbells.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(doorbell_mu_);
  cq_db_.emplace_back(cqn, word);
}

Transport::Transport(fw::FwContext& ctx, std::unique_ptr<wire::Port> port)
    : ctx_(ctx), port_(std::move(port)) {
  // See "Link-level flow control" in transport.hpp.
  const uint64_t rcvbuf = port_ ? port_->rcvbuf_bytes() : 0;
  credit_->budget = static_cast<uint32_t>(
      std::clamp<uint64_t>(rcvbuf / 2 / kDatagramTruesize, kMinInFlight, kMaxInFlight));
}

bool Transport::take_doorbells() {
  {
    std::lock_guard lock(doorbell_mu_);
    sq_work_.swap(sq_db_);
    cq_work_.swap(cq_db_);
  }
  if (ctx_.hca().initialized) return true;
  sq_work_.clear();
  cq_work_.clear();
  return false;
}

void Transport::execute_doorbells() {
  fw::ObjectTables& t = tables();
  EqCqEvents sink(ctx_.eqs());
  for (auto [cqn, word] : cq_work_) {
    fw::Cq* cq = t.cq(cqn);
    if (cq == nullptr) continue;
    (void)arm_cq(*cq, cq_notify(*cq), word, sink);
  }
  cq_work_.clear();
  for (uint32_t qpn : sq_work_)
    if (fw::Qp* q = t.qp(qpn)) pump(*q);
  sq_work_.clear();
}

Clock::time_point Transport::finish_pass() {
  (void)port_->flush_faults();
  (void)port_->flush_tx();
  publish_port_counters();
  const Clock::time_point link = port_->link_deadline();
  return timers_.empty() ? link : std::min(link, timers_.top().at);
}

bool Transport::link_open(fw::Qp& q, QpDp& d, uint32_t ip) {
  if (port_->may_send(ip)) return true;
  if (!d.link_wait) {
    d.link_wait = true;
    link_wait_.push_back(q.qpn);
  }
  return false;
}

void Transport::resume_link_waiting() {
  link_resume_.clear();
  link_resume_.swap(link_wait_);
  fw::ObjectTables& t = tables();
  for (uint32_t qpn : link_resume_) {
    fw::Qp* q = t.qp(qpn);
    if (q == nullptr || !q->dp_state) continue;
    QpDp& d = dp(*q);
    if (!d.link_wait) continue;
    d.link_wait = false;
    pump(*q);  // may wait again (another peer, or the window refilled)
  }
}

Clock::time_point Transport::run_doorbells() {
  if (!take_doorbells()) return Clock::time_point::max();
  execute_doorbells();
  return finish_pass();
}

Clock::time_point Transport::run(bool rx_ready, bool ctl_ready) {
  if (!take_doorbells()) {
    // Drain the sockets: nothing can receive before INIT_HCA.
    if (rx_ready) (void)port_->poll(rx_);
    if (ctl_ready) (void)port_->poll_ctl();
    return Clock::time_point::max();
  }
  // Credits first: a QP they release sends in this pass.
  if (ctl_ready && port_->poll_ctl()) resume_link_waiting();
  fw::ObjectTables& t = tables();
  const Clock::time_point start = Clock::now();
  // QPs a 2ERR_QP command moved to ERR: flush what they hold now.
  if (!t.qps_to_err.empty()) {
    std::vector<uint32_t> err;
    err.swap(t.qps_to_err);
    for (uint32_t qpn : err)
      if (fw::Qp* q = t.qp(qpn); q != nullptr && q->state == qs::kErr)
        on_error_state(*q, dp(*q), start);
  }
  execute_doorbells();

  // Received packets, in bounded batches (the socket stays readable for the
  // next pass when more are waiting); only when epoll said the socket is
  // readable (a pass woken by a doorbell alone makes no recvmmsg that would
  // find nothing).
  for (int batch = 0; rx_ready && batch < 8; ++batch) {
    Result<size_t> n = port_->poll(rx_);
    if (!n || *n == 0) break;
    receive(std::span<const wire::RxPacket>(rx_.data(), *n));
    if (*n < wire::Port::kRxBatch) break;
  }

  // Timers due (ack timeout, RNR wait, the RQ record of a QP in error).
  const Clock::time_point now = Clock::now();
  while (!timers_.empty() && timers_.top().at <= now) {
    const Timer e = timers_.top();
    timers_.pop();
    fw::Qp* q = t.qp(e.qpn);
    if (q == nullptr || !q->dp_state) continue;
    QpDp& d = dp(*q);
    if (d.timer_at != e.at) continue;  // superseded by an earlier entry
    d.timer_at = Clock::time_point::max();
    if (q->state == qs::kErr) {
      on_error_state(*q, d, now);
      continue;
    }
    d.err_poll = Clock::time_point::max();
    if (d.req_init) on_timer(*q, d, now);
    schedule(*q, d);
  }
  if (port_->link_tick(now)) resume_link_waiting();
  resume_waiting();
  return finish_pass();
}

void Transport::receive(std::span<const wire::RxPacket> pkts) {
  c_.rx_packets.fetch_add(pkts.size(), std::memory_order_relaxed);
  fw::ObjectTables& t = tables();
  for (const wire::RxPacket& p : pkts) {
    fw::Qp* q = t.qp(p.headers.bth.dest_qp);
    if (q == nullptr) {
      c_.unknown_qp_drops.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    const wire::Operation op = p.info->operation;
    if (op == wire::Operation::kAcknowledge || op == wire::Operation::kAtomicAcknowledge ||
        op == wire::Operation::kReadResponse)
      on_response(*q, p);
    else
      on_request(*q, p);
  }
  for (uint32_t qpn : ack_qpns_)
    if (fw::Qp* q = t.qp(qpn); q != nullptr && q->dp_state) {
      QpDp& d = dp(*q);
      if (d.ack_due) send_ack_now(*q, d);
    }
  ack_qpns_.clear();
  resume_waiting();
}

void Transport::on_error_state(fw::Qp& q, QpDp& d, Clock::time_point now) {
  flush(q, d);
  // mlx5 has no receive doorbell, yet receives posted to a QP in error
  // complete with flush errors: mlx5_ib_drain_rq (kernel
  // drivers/infiniband/hw/mlx5/qp.c) moves the QP to ERR, posts one
  // receive (doorbell record only) and waits for its CQE. So the device
  // keeps reading the RQ doorbell record of a QP in error: here every
  // kErrRqPoll while the QP stays in ERR (idle otherwise).
  d.err_poll = (q.rq_type == prm::qpc_rq_type::kNonZeroRq && q.rq_bytes != 0)
                   ? now + kErrRqPoll
                   : Clock::time_point::max();
  schedule(q, d);
}

void Transport::schedule(fw::Qp& q, QpDp& d) {
  const Clock::time_point at = std::min({d.ack_deadline, d.rnr_until, d.err_poll});
  if (at >= d.timer_at) return;  // an entry at least as early is queued
  d.timer_at = at;
  timers_.push(Timer{at, q.qpn});
}

bool Transport::credit_for(fw::Qp& q, QpDp& d, uint32_t psns) {
  TxCredit& c = *credit_;
  // FIFO: while others wait, a QP not being resumed queues behind them;
  // with nothing in flight anywhere, anything may go (a READ asking for
  // more than the whole budget still makes progress).
  const bool fits = c.in_flight == 0 || (c.in_flight + psns <= c.budget &&
                                         (credit_wait_.empty() || resuming_ == q.qpn));
  if (fits) return true;
  if (!d.credit_wait) {
    d.credit_wait = true;
    credit_wait_.push_back(q.qpn);
  }
  return false;
}

void Transport::recharge(fw::Qp& q, QpDp& d) {
  uint32_t psns = 0;
  if (q.st == prm::qpc_st::kRc && d.req_init && q.state != qs::kErr) {
    const int32_t n = wire::psn_diff(d.max_sent, d.una);
    if (n > 0) psns = static_cast<uint32_t>(n);
  }
  if (!d.credit) d.credit = credit_;
  credit_->in_flight = credit_->in_flight - d.charged + psns;
  d.charged = psns;
}

void Transport::resume_waiting() {
  fw::ObjectTables& t = tables();
  // Each waiting QP gets one turn per call: one that still finds no credit
  // goes to the back of the queue again.
  for (size_t turns = credit_wait_.size(); turns > 0 && !credit_wait_.empty(); --turns) {
    if (credit_->in_flight != 0 && credit_->in_flight >= credit_->budget) break;
    const uint32_t qpn = credit_wait_.front();
    credit_wait_.pop_front();
    fw::Qp* q = t.qp(qpn);
    if (q == nullptr || !q->dp_state) continue;
    QpDp& d = dp(*q);
    if (!d.credit_wait) continue;
    d.credit_wait = false;
    resuming_ = qpn;
    pump(*q);
    resuming_ = 0xFFFFFFFF;
  }
}

void Transport::publish_port_counters() {
  const wire::PortCounters& p = port_->counters();
  const wire::FaultCounters& f = port_->fault_counters();
  c_.rx_bad_icrc.store(p.rx_bad_icrc, std::memory_order_relaxed);
  c_.rx_malformed.store(p.rx_malformed, std::memory_order_relaxed);
  c_.fault_dropped.store(f.dropped, std::memory_order_relaxed);
  c_.fault_duplicated.store(f.duplicated, std::memory_order_relaxed);
  c_.fault_reordered.store(f.reordered, std::memory_order_relaxed);
  c_.fault_corrupted.store(f.corrupted, std::memory_order_relaxed);
}

fw::WireCounters Transport::wire_counters() const {
  const wire::PortCounters& p = port_->counters();
  const wire::FaultCounters& f = port_->fault_counters();
  fw::WireCounters w;
  w.tx_packets = p.tx_packets;
  w.tx_bytes = p.tx_bytes;
  w.tx_errors = p.tx_errors;
  w.rx_packets = p.rx_packets;
  w.rx_bytes = p.rx_bytes;
  w.rx_bad_icrc = p.rx_bad_icrc;
  w.rx_malformed = p.rx_malformed + p.rx_truncated;
  w.rx_discards = c_.unknown_qp_drops.load(std::memory_order_relaxed) +
                  c_.qkey_drops.load(std::memory_order_relaxed) +
                  c_.no_recv_drops.load(std::memory_order_relaxed) +
                  c_.uc_error_drops.load(std::memory_order_relaxed);
  w.tx_fault_dropped = f.dropped;
  w.tx_fault_corrupted = f.corrupted;
  w.tx_fault_duplicated = f.duplicated;
  return w;
}

// ---- state ----------------------------------------------------------------------

QpDp& Transport::dp(fw::Qp& q) {
  if (!q.dp_state) q.dp_state = std::make_shared<QpDp>(credit_);
  return *static_cast<QpDp*>(q.dp_state.get());
}

SrqDp& Transport::srq_dp(fw::Srq& s) {
  if (!s.dp_state) s.dp_state = std::make_shared<SrqDp>();
  return *static_cast<SrqDp*>(s.dp_state.get());
}

CqNotify& Transport::cq_notify(fw::Cq& c) {
  if (!c.dp_state) c.dp_state = std::make_shared<CqNotify>();
  return *static_cast<CqNotify*>(c.dp_state.get());
}

bool Transport::read_dbrec(uint64_t iova, uint32_t* value) {
  std::array<std::byte, 4> b{};
  if (!iommu().dma_read(iova, b).is_ok()) return false;
  *value = uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | uint32_t(b[3]);
  return true;
}

uint32_t Transport::dest_ip(const fw::Qp& q) {
  const auto& g = q.path.rgid;
  return uint32_t{g[12]} << 24 | uint32_t{g[13]} << 16 | uint32_t{g[14]} << 8 | g[15];
}

uint32_t Transport::ud_dest_ip(const ParsedWqe& w) {
  const auto& g = w.av.rgid;
  return uint32_t{g[12]} << 24 | uint32_t{g[13]} << 16 | uint32_t{g[14]} << 8 | g[15];
}

uint32_t Transport::qp_mtu(const fw::Qp& q) {
  // UD: the port's MTU (IBTA 10.2.x: a UD message is at most the path MTU;
  // the model's port carries 9216-byte frames, so the largest IB MTU, 4096).
  if (q.st == prm::qpc_st::kUd) return 4096;
  const uint32_t m = prm::mtu_bytes(q.mtu);
  return m == 0 ? 4096 : m;
}

// ---- CQEs, errors, flush ----------------------------------------------------------

void Transport::cqe(uint32_t cqn, const CqeFields& f) {
  fw::Cq* cq = tables().cq(cqn);
  if (cq == nullptr) return;
  EqCqEvents sink(ctx_.eqs());
  CqNotify& n = cq_notify(*cq);
  // Arm words written only to the doorbell record (a driver that skips the
  // UAR write) count as well; a repeated word is stale and ignored. A zero
  // word is what a new CQ's record holds: not an arm request (the first
  // real arm, sn 0 / any / ci 0, also comes through the UAR doorbell).
  uint32_t arm = 0;
  if (read_dbrec(cq->dbr_addr + 4, &arm) && arm != 0) (void)arm_cq(*cq, n, arm, sink);
  // Stamped as it is written (the CQE's completion time).
  CqeFields stamped = f;
  stamped.timestamp = ctx_.pci().internal_timer();
  if (write_cqe(iommu(), *cq, n, stamped, sink).is_ok()) {
    c_.cqes.fetch_add(1, std::memory_order_relaxed);
    if (f.opcode == MLX5_CQE_REQ_ERR || f.opcode == MLX5_CQE_RESP_ERR) {
      if (f.syndrome == MLX5_CQE_SYNDROME_WR_FLUSH_ERR)
        c_.flush_cqes.fetch_add(1, std::memory_order_relaxed);
      else
        c_.error_cqes.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

void Transport::qp_error(fw::Qp& q, prm::EventType ev) {
  if (q.state == qs::kErr) return;
  log::debug(kLog, "qpn {:#x}: to ERR", q.qpn);
  q.state = qs::kErr;
  if (ev != prm::EventType::COMP) (void)fw::post_queue_event(ctx_.eqs(), ev, q.qpn);
  on_error_state(q, dp(q), Clock::now());
}

void Transport::flush(fw::Qp& q, QpDp& d) {
  flush_sq(q, d);
  flush_rq(q, d);
}

void Transport::flush_sq(fw::Qp& q, QpDp& d) {
  // Every executed WQE not yet completed, then every posted one.
  for (SendOp& op : d.ops) {
    CqeFields f;
    f.opcode = MLX5_CQE_REQ_ERR;
    f.qpn = q.qpn;
    f.wqe_opcode = op.w.opcode;
    f.wqe_counter = op.w.wqe_index;
    f.syndrome = MLX5_CQE_SYNDROME_WR_FLUSH_ERR;
    cqe(q.cqn_snd, f);
  }
  d.ops.clear();
  d.ack_deadline = d.rnr_until = Clock::time_point::max();
  recharge(q, d);
  if (!q.no_sq && q.sq_bytes != 0) {
    uint32_t rec = 0;
    if (read_dbrec(q.dbr_addr + 4, &rec)) {
      const uint16_t sw = static_cast<uint16_t>(rec & 0xFFFF);
      q.counters.sw_sq_wqebb_counter = sw;
      uint32_t guard = 0;
      while (static_cast<uint16_t>(q.counters.hw_sq_wqebb_counter) != sw && guard++ < 65536) {
        const uint16_t idx = static_cast<uint16_t>(q.counters.hw_sq_wqebb_counter);
        // The control segment's ds says how many blocks to skip.
        std::array<std::byte, 8> ctrl{};
        const uint64_t ring = uint64_t{64} << q.log_sq_size;
        const uint64_t pos = (idx & ((1u << q.log_sq_size) - 1)) * uint64_t{64};
        uint32_t blocks = 1;
        uint8_t opcode = 0;
        if (ring_read(iommu(), q.buf, q.sq_offset, ring, pos, ctrl).is_ok()) {
          opcode = static_cast<uint8_t>(ctrl[3]);
          const uint32_t ds = static_cast<uint32_t>(ctrl[7]) & 0x3F;
          blocks = std::max<uint32_t>(1, (ds + 3) / 4);
        }
        CqeFields f;
        f.opcode = MLX5_CQE_REQ_ERR;
        f.qpn = q.qpn;
        f.wqe_opcode = opcode;
        f.wqe_counter = idx;
        f.syndrome = MLX5_CQE_SYNDROME_WR_FLUSH_ERR;
        cqe(q.cqn_snd, f);
        q.counters.hw_sq_wqebb_counter = (q.counters.hw_sq_wqebb_counter + blocks) & 0xFFFF;
      }
    }
  }
}

void Transport::flush_rq(fw::Qp& q, QpDp& d) {
  // A receive WQE taken for a message in progress (its own RQ
  // or the SRQ's), then the QP's own RQ (an SRQ's WQEs stay for other QPs).
  if (d.have_recv) {
    CqeFields f;
    f.opcode = MLX5_CQE_RESP_ERR;
    f.qpn = q.qpn;
    f.wqe_counter = d.recv.wqe_counter;
    f.srqn_uidx = d.recv.srqn;
    f.syndrome = MLX5_CQE_SYNDROME_WR_FLUSH_ERR;
    cqe(q.cqn_rcv, f);
    d.have_recv = false;
  }
  d.in_send = d.in_write = false;
  if (q.rq_type == prm::qpc_rq_type::kNonZeroRq && q.rq_bytes != 0) {
    uint32_t rec = 0;
    if (read_dbrec(q.dbr_addr, &rec)) {
      const uint16_t sw = static_cast<uint16_t>(rec & 0xFFFF);
      q.counters.sw_rq_counter = sw;
      while (static_cast<uint16_t>(q.counters.hw_rq_counter) != sw) {
        CqeFields f;
        f.opcode = MLX5_CQE_RESP_ERR;
        f.qpn = q.qpn;
        f.wqe_counter = static_cast<uint16_t>(q.counters.hw_rq_counter);
        f.syndrome = MLX5_CQE_SYNDROME_WR_FLUSH_ERR;
        cqe(q.cqn_rcv, f);
        ++q.counters.hw_rq_counter;
      }
    }
  }
  // IBTA 11.6.3 "Last WQE Reached": a QP receiving from an SRQ reports,
  // once, that it will take no more WQEs from it (mlx5 EQE type 0x13).
  if (!d.flushed && q.rq_type == prm::qpc_rq_type::kSrqRq)
    (void)fw::post_queue_event(ctx_.eqs(), prm::EventType::SRQ_LAST_WQE, q.qpn);
  d.flushed = true;
}

void Transport::send(fw::Qp& q, const wire::PacketHeaders& h, std::span<const uint8_t> payload) {
  const uint16_t sport = q.path.udp_sport != 0 ? static_cast<uint16_t>(q.path.udp_sport)
                                               : wire::entropy_src_port(q.qpn, q.remote_qpn);
  (void)send_to(dest_ip(q), sport, h, payload);
}

Status Transport::send_to(uint32_t ip, uint16_t sport, const wire::PacketHeaders& h,
                          std::span<const uint8_t> payload) {
  // The model's wire is loopback only (docs/DESIGN.md "Wire"): a destination
  // outside 127.0.0.0/8 (a GID that is not ::ffff:127.x.y.z) is unreachable
  // and the packet is lost, as on a network without that host.
  if ((ip >> 24) != 127) {
    c_.tx_unroutable.fetch_add(1, std::memory_order_relaxed);
    return KBV_ERR_INVALID_ARGUMENT;
  }
  Status s = port_->send(ip, sport, h, payload);
  if (s.is_ok()) c_.tx_packets.fetch_add(1, std::memory_order_relaxed);
  return s;
}

}  // namespace kbv::sim::engine
