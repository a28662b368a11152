// SPDX-License-Identifier: BSD-3-Clause
//
// The model HCA's transport engine: executes send WQEs, receives RoCEv2
// packets on the model's port and writes CQEs — the data path of one model
// (docs/DESIGN.md "The HCA model"; issue 5 parts 2-5).
//
// Threading model (decided here): the engine runs ON the firmware thread.
// The firmware's epoll loop also sleeps on the port's UDP socket and on the
// engine's timerfd (its nearest deadline: ack timeout, RNR wait; armed
// lazily, see Engine::arm) through Firmware::add_wait_fd / set_loop_hook, so
// the object tables stay single-threaded: commands (modify / destroy QP) and
// packet execution are serialised as on silicon. Idle = asleep in epoll:
// nothing polls faster than the nearest retransmit / RNR timer.
//
// Doorbells on the ringing thread (issue 14): the UAR write listener,
// called on the driver's thread, records the doorbell (under a small
// mutex); then, if the firmware loop is idle (asleep in epoll_wait, its
// pass lock free: Firmware::run_if_idle) and the port has no RC packet
// unacknowledged (nothing in flight: a request / response exchange, not a
// stream), it executes the recorded doorbells itself, under that lock
// (Transport::run_doorbells: CQ arms, SQ WQEs, the transmit flush) — the
// packet leaves without waking the engine thread. Otherwise the loop is
// only notified (its eventfd is written only when it sleeps) and takes the
// doorbell, with all others rung meanwhile, in its next pass, so a stream's
// doorbells are still batched into one sendmmsg.
//
// Under load (issue 14; transport.hpp "Link-level flow control"): per pass
// the engine touches only the QPs with work — doorbells rung, packets
// received, QPs waiting for transmit credit, timers due from a deadline heap
// (ack timeout, RNR wait, the RQ record of a QP in error) and QPs a 2ERR_QP
// command moved to ERR — never a walk over all QPs. The port reads the
// socket only when epoll says it is readable and sends a pass's datagrams
// with sendmmsg(2). A port keeps at most TxCredit::budget RC PSNs of all
// its QPs unacknowledged, so a receiver's backlog stays within its socket
// buffer and drains well inside the ack timeout; the firmware thread runs
// at a higher priority (nice -10, when allowed) than the application's.
//
// Doorbells (docs/PRM.md "Data path"):
//   * SQ: an 8-byte write at UAR page offset 0x800 + k * 256 (a BlueFlame
//     half; a BlueFlame copy's first 8 bytes land there too) = the first 8
//     bytes of the control segment (opmod_idx_opcode, qpn_ds): the QPN says
//     which SQ; the engine reads the doorbell record dbrec[1] (big-endian,
//     16-bit counter of 64-B basic blocks) and executes WQEs from
//     hw_sq_wqebb_counter up to it (the ring copy is used, as the driver
//     also writes the ring; the BlueFlame bytes are not needed).
//   * RQ: no doorbell on mlx5: dbrec[0] is read when a receive WQE is needed.
//     SRQ: its dbrec[0] counter; WQEs are taken along the next_wqe_index list.
//   * CQ: the 64-bit write at UAR+0x20 (high = sn << 28 | cmd | ci, low = cqn)
//     arms the CQ; arm words written only to the CQ dbrec[1] are honoured
//     when a CQE is written (engine/cqe.hpp).
//
// Transport (IBTA Vol 1 ch. 9; behaviour after Linux rxe rxe_req.c /
// rxe_resp.c / rxe_comp.c, facts only): see requester.cpp (RC/UC/UD send,
// PSNs, go-back-N, RNR, NAK handling, completions) and responder.cpp (PSN
// check, duplicates, receive WQEs, RDMA WRITE / READ / atomics, UD Q_Key
// and GRH, ACK coalescing). Errors: an error CQE moves the QP to ERR (the
// state QUERY_QP reports) and every outstanding and later posted WQE
// completes with WR_FLUSH_ERR (0x05), send and receive side; a UD / UC send
// error moves it to SQE instead (send side only, IBTA 10.3.1); a UC RDMA
// WRITE the responder refuses is dropped silently (responder.cpp).
//
// Limits and what is not modelled: at most Transport::kWindow (128) RC PSNs
// in flight per QP; a 16-entry atomic replay cache per responder (enough
// for log_rra_max <= 4, the cap's log_max_ra_req_qp); log_rra_max is not
// enforced on the responder; READ responses go out as one burst; SQD does
// not raise SQ_DRAINED; the UD path MTU is the port's (4096).
//
// Atomics: the 8-byte operand in memory and the result written to the local
// SGE are in host byte order (what mlx5_core selects with
// atomic_req_8B_endianness_mode = host endianness, and what rxe does); on
// the wire they are big-endian (AtomicETH / AtomicAckETH).
//
// Errors: create() -> the errors of Firmware::add_wait_fd; nothing else is
// reported to callers: the data path reports through CQEs and EQEs.
#pragma once

#include "sim/fw/firmware.hpp"
#include "sim/wire/port.hpp"

#include <kbv/status.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace kbv::sim::engine {

// Engine counters (monotonic; snapshot with Engine::stats(), any thread).
struct EngineStats {
  uint64_t sq_doorbells = 0;  // SQ doorbells / BlueFlame writes seen
  uint64_t cq_doorbells = 0;  // CQ arm doorbells seen
  uint64_t wqes = 0;          // send WQEs executed (NOPs included)
  uint64_t tx_packets = 0;    // datagrams handed to the port (incl. retransmissions)
  uint64_t rx_packets = 0;    // good datagrams received
  uint64_t retransmits = 0;   // packets sent again (go-back-N, RNR, NAK)
  uint64_t timeouts = 0;      // ack timer expiries
  uint64_t acks_sent = 0;     // ACK packets (coalesced)
  uint64_t naks_sent = 0;     // NAKs (PSN sequence, invalid request, access, operational)
  uint64_t naks_received = 0;
  uint64_t rnr_naks_sent = 0;
  uint64_t rnr_naks_received = 0;
  uint64_t duplicates = 0;        // duplicate requests seen by responders
  uint64_t out_of_sequence = 0;   // requests ahead of the expected PSN
  uint64_t qkey_drops = 0;        // UD datagrams dropped for a Q_Key mismatch
  uint64_t no_recv_drops = 0;     // UD / UC messages dropped: no receive WQE / PSN gap
  uint64_t uc_error_drops = 0;    // UC WRITEs dropped for a responder error (IBTA class D / E)
  uint64_t unknown_qp_drops = 0;  // packets for no QP or a QP in a state that drops them
  uint64_t tx_unroutable = 0;     // packets toward a destination outside 127.0.0.0/8 (lost)
  uint64_t cqes = 0;              // CQEs written (error CQEs included)
  uint64_t error_cqes = 0;        // error CQEs other than flush
  uint64_t flush_cqes = 0;
  // From the port (wire/port.hpp, wire/faults.hpp).
  uint64_t rx_bad_icrc = 0;
  uint64_t rx_malformed = 0;
  uint64_t fault_dropped = 0;
  uint64_t fault_duplicated = 0;
  uint64_t fault_reordered = 0;
  uint64_t fault_corrupted = 0;
};

struct Counters;  // engine.cpp: the atomics behind EngineStats
class Transport;  // the firmware-thread half (transport.hpp)

class Engine {
 public:
  // Takes the port; installs the UAR write listener, the port fd and the
  // loop hook on `fw`, which must not be running yet.
  static Result<std::unique_ptr<Engine>> create(fw::Firmware& fw, std::unique_ptr<wire::Port> port);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  EngineStats stats() const;
  uint32_t ip() const { return ip_; }

 private:
  Engine() = default;
  void on_uar_write(uint64_t offset, uint64_t value, unsigned width);
  static bool doorbell_pass(void* self);  // Firmware::run_if_idle callback
  // Arms tfd_ for `due` if earlier than what it holds (under the pass
  // exclusion: the loop hook or doorbell_pass).
  void arm(std::chrono::steady_clock::time_point due);

  fw::Firmware* fw_ = nullptr;
  int tfd_ = -1;  // timerfd (CLOCK_MONOTONIC, absolute): the engine's next deadline
  std::chrono::steady_clock::time_point armed_ = std::chrono::steady_clock::time_point::max();
  uint32_t ip_ = 0;
  std::unique_ptr<Transport> transport_;
};

}  // namespace kbv::sim::engine
