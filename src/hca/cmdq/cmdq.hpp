// SPDX-License-Identifier: BSD-3-Clause
//
// CmdQueue: the mlx5 firmware command interface used asynchronously.
//
// The queue is one 4 KiB DMA page of 1 << log_cmdq_size entries, each
// 1 << log_cmdq_stride bytes apart (read from the init segment; docs/PRM.md
// "Initialization segment", prm::init_seg). Entries are prm::cmd_layout;
// inputs/outputs longer than 16 bytes continue in mailbox chains
// (MailboxPool). Up to 32 slots exist (prm::kMaxCommands); the last one is
// reserved for page supply (MANAGE_PAGES answering firmware page requests,
// submitted with SubmitOptions::page_supply) so that commands waiting for
// pages can never starve the command that provides them. The others carry
// regular commands: up to (1 << log_cmdq_size) - 1 in flight (31 on
// ConnectX), further submissions wait in a software FIFO and are posted as
// slots free up.
//
// Posting (docs/PRM.md "Posting"): fill the entry and mailboxes, set the
// ownership bit, udma_to_device_barrier(), write 1 << slot to cmd_dbell.
//
// Completion: before the command EQ exists the queue polls every busy slot's
// ownership bit from poll(). Once set_event_mode(true) is called, completions
// come from the command-completion EQE (on_cmd_eqe(vector), fed by the EQ
// dispatcher); a slot is only completed when its ownership bit really is
// software's, so a stale or spurious EQE bit is harmless. A command whose
// deadline passes is checked once more (a lost EQE is recovered) and
// otherwise completes with KBV_ERR_TIMEOUT; its slot is then quarantined
// (neither it nor its mailboxes are reused) until the device hands it back.
//
// Results (CmdCompletion): delivery status != 0 -> KBV_ERR_CMD_DELIVERY with
// delivery_status set; otherwise the output's status byte and syndrome ->
// Status::from_fw (mlx5_ifc.h mbox_out). `out` holds the whole output
// (out_len bytes) when the command reached the firmware.
//
// Device failure: fail_all(status) (called by the health monitor with
// KBV_ERR_DEVICE_REMOVED / KBV_ERR_DEVICE_FATAL) completes every posted and
// queued command with that status; later submissions fail synchronously.
//
// Cancellation: cancel(id) completes a command with KBV_ERR_CANCELLED at
// once; a queued command is never sent, a posted one keeps its slot until
// firmware returns it (its result is dropped).
//
// Signatures: firmware checks them only while the cmdif_checksum capability
// is on, and bring-up turns it off (docs/PRM.md), so by default they are left
// zero (as the kernel's cmd.c does). With Config::checksum they are filled
// in as cmd.c set_signature/calc_block_sig do: each mailbox block's
// ctrl_sig = ~XOR(bytes 0x200..0x23D), sig = ~XOR(bytes 0..0x23E); the
// entry's sig = ~XOR(all 64 bytes, ownership set, sig 0) — so every signed
// region XORs to 0xFF.
//
// Callbacks run from poll(), on_cmd_eqe(), cancel() or fail_all(), on the caller's
// thread, after the slot was released; they may submit new commands (those
// keep FIFO order behind already-queued ones). They must not call poll() or
// destroy the queue.
//
// Tracing (log component "cmd"): each completion at debug level with opcode
// name, op_mod, status, syndrome and latency; raw input/output at trace.
//
// Sources: docs/PRM.md "Command queue entry", "Posting"/"Completion"; kernel
// drivers/net/ethernet/mellanox/mlx5/core/cmd.c (tokens 1..255, 60 s default
// timeout, doorbell after the barrier); rdma-core providers/mlx5/mlx5_vfio.c
// (cmdq address written high dword then low dword).
//
// Threading: not thread-safe; one thread drives a CmdQueue (submit, poll and
// the EQ dispatch that calls on_cmd_eqe).
#pragma once

#include <kbv/status.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "hca/cmdq/mailbox.hpp"
#include "hca/io/device_io.hpp"

namespace kbv::hca {

struct CmdCompletion {
  Status status;                // see above
  uint8_t delivery_status = 0;  // status_own bits 7:1 (prm::DeliveryStatus)
  uint16_t opcode = 0;          // from the input (prm::Opcode)
  uint16_t op_mod = 0;
  std::span<const std::byte> out;  // valid during the callback only; empty on
                                   // timeout / delivery error / device failure
  uint64_t latency_ns = 0;         // post to completion
};

using CmdCallback = std::function<void(const CmdCompletion&)>;

// A completion object for callers that prefer to look rather than be called.
struct CmdResult {
  bool done = false;
  Status status;
  uint8_t delivery_status = 0;
  std::vector<std::byte> out;
  // A callback that fills *this (which must outlive the command).
  CmdCallback callback();
};

struct SubmitOptions {
  uint64_t timeout_ns = 0;   // 0: CmdQueue::Config::default_timeout_ns
  bool page_supply = false;  // use the reserved page-supply slot
};

struct CmdqStats {
  uint32_t in_flight = 0;      // posted to the device now (page slot included)
  uint32_t max_in_flight = 0;  // high-water mark of in_flight
  uint32_t queued = 0;         // waiting in software for a slot
  uint32_t quarantined = 0;    // timed-out slots the device still owns
  uint64_t submitted = 0;      // accepted by submit()
  uint64_t completed = 0;      // callbacks run, any status
  uint64_t failed = 0;         // completed with an error status (timeouts included)
  uint64_t timed_out = 0;
  uint64_t cancelled = 0;  // cancel() calls that found their command
};

class CmdQueue {
 public:
  struct Config {
    uint64_t default_timeout_ns = 60ull * 1000 * 1000 * 1000;  // cmd.c: 60 s
    bool checksum = false;  // fill entry and mailbox signatures (see above)
  };

  // Checks the command interface revision (5) and queue geometry, allocates
  // the queue page and writes its IOVA to cmdq_addr_h / cmdq_addr_l_sz.
  // KBV_ERR_DEVICE_REMOVED (fw_rev reads all-ones), KBV_ERR_NOT_SUPPORTED
  // (other cmdif revision, invalid geometry), allocation errors.
  static Result<std::unique_ptr<CmdQueue>> create(DeviceIo& io, Config cfg);
  static Result<std::unique_ptr<CmdQueue>> create(DeviceIo& io) { return create(io, Config{}); }
  ~CmdQueue();
  CmdQueue(const CmdQueue&) = delete;
  CmdQueue& operator=(const CmdQueue&) = delete;

  // Submits a command: `in` is the whole input (>= 16 bytes: opcode, op_mod
  // and the command's fields, prm::mbox_in first), `out_len` the output size
  // the firmware writes (>= 16, prm::mbox_out first). Returns KBV_PENDING;
  // `cb` runs exactly once later. Errors (returned, no callback):
  // KBV_ERR_INVALID_ARGUMENT (sizes, empty callback), the fail_all status,
  // mailbox allocation errors.
  // `id` (optional) receives the command's id for cancel().
  Status submit(std::span<const std::byte> in, uint32_t out_len, CmdCallback cb,
                SubmitOptions opts = {}, uint64_t* id = nullptr);

  // Cancels command `id`: its callback runs now with KBV_ERR_CANCELLED. A
  // command still in the software queue is never sent; one already posted
  // cannot be taken back from firmware, so its slot stays busy until the
  // device hands it back and the result is then dropped. KBV_ERR_NOT_FOUND
  // when the command already completed (or never existed).
  Status cancel(uint64_t id);

  // Drives completions: ownership polling (polling mode), deadlines, the
  // software queue. Returns the number of commands completed.
  uint32_t poll();

  // A command-completion EQE (prm::eqe_cmd.vector: bit n = slot n done).
  uint32_t on_cmd_eqe(uint32_t vector);

  // Completion by command EQE (true) or by ownership polling (false, the
  // initial mode).
  void set_event_mode(bool on) { event_mode_ = on; }
  bool event_mode() const { return event_mode_; }

  // Completes everything outstanding with `s` (an error) and refuses new
  // commands with it. Posted slots stay quarantined.
  void fail_all(Status s);
  Status failure() const { return failed_; }

  CmdqStats stats() const;
  uint64_t timed_out() const { return stats_.timed_out; }  // cheap: no slot scan
  uint32_t slots() const { return nslots_; }
  uint32_t regular_slots() const { return nregular_; }
  uint32_t page_slot() const { return page_slot_; }
  uint32_t log_stride() const { return log_stride_; }
  uint64_t queue_iova() const { return page_.iova; }
  bool idle() const;  // nothing posted or queued
  DeviceIo& io() { return io_; }

 private:
  enum class SlotState : uint8_t { kFree, kBusy, kQuarantined };
  struct Slot {
    SlotState state = SlotState::kFree;
    uint64_t id = 0;
    uint8_t token = 0;
    uint16_t opcode = 0;
    uint16_t op_mod = 0;
    uint32_t out_len = 0;
    uint64_t post_ns = 0;
    uint64_t deadline_ns = 0;
    std::vector<MailboxBlock> in_chain, out_chain;
    CmdCallback cb;
    // Its completion EQE came but complete() found no memory for the
    // output (nothing changed): poll() completes it.
    bool complete_later = false;
  };
  struct Queued {
    uint64_t id;
    std::vector<std::byte> in;
    uint32_t out_len;
    CmdCallback cb;
    uint64_t timeout_ns;
  };

  CmdQueue(DeviceIo& io, Config cfg, DmaBlock page, uint32_t log_size, uint32_t log_stride);
  std::byte* entry(uint32_t slot) const { return page_.va + (size_t{slot} << log_stride_); }
  bool sw_owned(uint32_t slot) const;
  int free_regular_slot() const;
  Status post(uint32_t slot, uint64_t id, std::span<const std::byte> in, uint32_t out_len,
              CmdCallback& cb, uint64_t timeout_ns);
  void complete(uint32_t slot);
  void release_quarantined(uint32_t slot);
  void finish(CmdCallback& cb, const CmdCompletion& c);
  void pump();
  uint8_t next_token();

  DeviceIo& io_;
  Config cfg_;
  DmaBlock page_;
  uint32_t log_stride_;
  uint32_t nslots_;
  uint32_t nregular_;
  uint32_t page_slot_;
  MailboxPool mailboxes_;
  Slot slots_[32];
  std::deque<Queued> queued_, queued_page_;
  bool event_mode_ = false;
  bool pumping_ = false;
  uint8_t token_ = 0;
  uint64_t next_id_ = 1;
  Status failed_;
  CmdqStats stats_;
};

}  // namespace kbv::hca
