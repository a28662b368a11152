// SPDX-License-Identifier: BSD-3-Clause
//
// The model HCA's firmware: one thread per model that runs the command queue
// (PRM "Command Interface"; docs/PRM.md "Command queue entry") with PRM semantics.
//
// Command queue engine:
//   * The queue address is latched from BAR0 cmdq_addr_h/l (0x10/0x14) when
//     the driver writes them; the low register then reads back the written
//     address bits with log_cmdq_size 7:4 / log_cmdq_stride 3:0 (the geometry
//     the PCI function put there at reset, read by start() and each reset).
//   * cmd_dbell (0x18) writes arrive through the BAR0 write handler, which
//     records the slot bits and wakes the firmware thread (an eventfd); the
//     thread sleeps in epoll when idle. On each doorbell the thread also
//     picks up idle slots whose ownership bit is set (robust to a doorbell
//     value reported in the register's raw byte order). As a fallback for untrapped drivers
//     the thread also reads every entry each scan_interval and picks up slots
//     whose ownership bit is set. A rung slot whose ownership bit is clear is
//     ignored (logged).
//   * Nothing is picked up while the init segment's `initializing` bit is
//     set (the PCI function clears it after its init time).
//   * Each slot: fetch and validate the entry and mailboxes (cmdq.hpp), then
//     execute after cmd_latency (+ any injected delay), at most
//     max_concurrent at once; completions may therefore be out of order.
//     Dispatch applies the registry's generic checks (registry.hpp), then the
//     handler; the output is scattered back, then status_own (delivery status,
//     ownership cleared). Every slot, 31 included, is served alike.
//   * Event mode: when an EQ subscribed to the command event (type 0x0A)
//     exists when a command executes, its completion is also reported by a
//     command EQE whose data is the bitmask of the slots completed together
//     (device.h mlx5_eqe_cmd.vector); the EQ raises its MSI-X vector if armed.
//
// UAR doorbells: 32-bit writes to UAR page n offsets 0x40/0x48 are EQ
// doorbells (eq.hpp); every other UAR write goes to the uar write listener
// (the data-path engine: CQ doorbells at 0x20, BlueFlame from 0x800).
//
// Reset: the PCI function's reset handler drops all firmware state (in-flight
// commands are abandoned, HCA disabled, pages/UARs/EQs/extensions forgotten).
//
// Threading: start/stop from one owner thread; the hooks and stats from any
// thread; registry() and set_uar_write_listener() only before start().
#pragma once

#include "sim/bus/pci_function.hpp"
#include "sim/fw/config.hpp"
#include "sim/fw/context.hpp"
#include "sim/fw/registry.hpp"
#include "sim/fw/trace.hpp"

#include <kbv/status.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace kbv::sim::fw {

struct FwStats {
  uint64_t commands = 0;           // executed (delivery OK), whatever their status
  uint64_t failed = 0;             // executed with a nonzero status
  uint64_t delivery_errors = 0;    // refused by the transport
  uint64_t entry_faults = 0;       // queue entry unreadable / completion unwritable
  uint64_t cmd_eqes = 0;           // command completion EQEs written
  uint64_t ignored_doorbells = 0;  // rung slots not owned by firmware
  uint64_t max_inflight = 0;       // most commands executing at once so far
  uint64_t loop_passes = 0;        // times the firmware thread woke (each epoll_wait return)
  uint64_t scans = 0;              // periodic command-queue scans (FwConfig::scan_interval)
};

class Firmware {
 public:
  // The bring-up commands are registered here, then cfg.registrars run.
  Firmware(PciFunction& pci, FwConfig cfg = {});
  ~Firmware();
  Firmware(const Firmware&) = delete;
  Firmware& operator=(const Firmware&) = delete;

  CommandRegistry& registry() { return registry_; }
  // Device state; handlers get it as their first argument. Other model
  // threads may use ctx.eqs() (thread-safe); everything else belongs to the
  // firmware thread.
  FwContext& context() { return ctx_; }
  CmdTrace& trace() { return trace_; }

  // Installs the BAR0 write and reset handlers and starts the firmware thread.
  // KBV_ERR_INVALID_STATE when running; KBV_ERR_IO when eventfd/epoll fail.
  Status start();
  // Stops the thread (in-flight commands are abandoned). Idempotent.
  void stop();
  bool running() const { return thread_.joinable(); }

  // Writes to UAR pages the firmware does not consume (before start()).
  void set_uar_write_listener(PciFunction::WriteHandler h) { uar_listener_ = std::move(h); }

  // ---- data-path engine seam (before start()) ----
  // The firmware loop also sleeps on `fd` (EPOLLIN, level-triggered; the loop
  // never reads it: the loop hook drains it), e.g. the port's UDP socket.
  // KBV_ERR_INVALID_STATE when running, KBV_ERR_IO when epoll refuses it.
  Status add_wait_fd(int fd);
  // Runs on the firmware thread on every loop pass (after posted tasks, on
  // every wake-up: a doorbell, a datagram, a timer); returns the time it
  // next needs to run by (time_point::max(): only when woken).
  using LoopHook = std::function<std::chrono::steady_clock::time_point()>;
  void set_loop_hook(LoopHook h) { loop_hook_ = std::move(h); }
  // Firmware thread, inside the loop hook: whether epoll reported `fd` (a
  // wait fd) readable for this pass. Level-triggered: a fd not drained
  // completely is reported again on the next pass.
  bool fd_ready(int fd) const;
  // Wakes the firmware loop (any thread; the UAR write listener calls it
  // after recording a doorbell). Only a sleeping loop is woken through the
  // eventfd; an awake one sees the wake-up count moved and runs another pass
  // before it sleeps.
  void notify() { wake(); }
  // Runs fn(arg) on the calling thread, excluded from the firmware loop's
  // passes, if the loop is idle (asleep in epoll_wait, or between passes)
  // and running; returns what fn returned (true: the work was done), or
  // false without calling it when the loop is busy (it will see work
  // recorded before the caller's notify()). The engine executes a doorbell
  // on the thread that rang it this way (engine.hpp "Doorbells on the
  // ringing thread"). fn must not block and must not call back into this
  // firmware.
  bool run_if_idle(bool (*fn)(void*), void* arg);

  // ---- timing and fault hooks (any thread; apply to commands picked up later) ----
  void set_latency(std::chrono::nanoseconds t);
  void set_max_concurrent(unsigned n);
  // Fail the next `times` commands with `opcode` (0 = forever... use kForever)
  // with status/syndrome, without running their handler.
  static constexpr uint32_t kForever = ~0u;
  void fail_opcode(uint16_t opcode, uint8_t status, uint32_t syndrome, uint32_t times = kForever);
  // Add `extra` execution time to every command with `opcode`.
  void delay_opcode(uint16_t opcode, std::chrono::nanoseconds extra);
  void clear_faults();

  // Run-time page request (PRM: page request EQE, type 0x0B): the firmware
  // wants npages more (negative: offers -npages back). Runs on the firmware
  // thread; the EQE goes to the EQ subscribed to page requests (none: only
  // QUERY_PAGES op_mod 3 shows it).
  void request_pages(int32_t npages);

  // Run `task` on the firmware thread, soon (post) or after `delay`
  // (post_after; millisecond timer resolution). Any thread. Tasks are how
  // test hooks and device-side timers touch firmware state safely.
  void post(std::function<void()> task);
  void post_after(std::chrono::nanoseconds delay, std::function<void()> task);

  FwStats stats() const;

 private:
  struct Inflight;
  struct Fault {
    uint8_t status = 0;
    uint32_t syndrome = 0;
    uint32_t times = 0;
    std::chrono::nanoseconds delay{0};
  };

  void on_bar0_write(uint64_t offset, uint64_t value, unsigned width);
  void on_reset();
  void wake();
  void run();
  void latch_cmdq();
  void read_geometry();
  void set_geometry(uint32_t cmdq_addr_l_sz);
  uint32_t scan_owned();
  void admit(std::chrono::steady_clock::time_point now);
  bool complete_due(std::chrono::steady_clock::time_point now);
  void execute(Inflight& f, uint32_t& eqe_mask);
  void do_reset();
  void arm_timer(std::chrono::steady_clock::time_point now);
  // Runs the due timed tasks; returns the time until the next one (ms,
  // -1 = none).
  int run_timed(std::chrono::steady_clock::time_point now);
  uint64_t slot_iova(unsigned slot) const;

  PciFunction& pci_;
  const FwConfig cfg_;
  CommandRegistry registry_;
  FwContext ctx_;
  CmdTrace trace_;
  PciFunction::WriteHandler uar_listener_;
  LoopHook loop_hook_;
  std::vector<int> wait_fds_;
  std::chrono::steady_clock::time_point hook_due_ = std::chrono::steady_clock::time_point::max();

  // Hook state (any thread).
  mutable std::mutex hook_mu_;
  std::chrono::nanoseconds latency_;
  unsigned max_concurrent_;
  std::unordered_map<uint16_t, Fault> faults_;
  std::vector<std::function<void()>> tasks_;
  struct Timed {
    std::chrono::steady_clock::time_point due;
    std::function<void()> fn;
  };
  std::vector<Timed> timed_;  // post_after / FwContext::schedule

  // Writer-thread -> firmware-thread signals.
  std::atomic<uint32_t> rung_{0};
  std::atomic<bool> cmdq_dirty_{false};
  std::atomic<bool> dbell_scan_{false};
  std::atomic<bool> reset_req_{false};
  std::atomic<uint32_t> reset_geometry_{0};
  std::atomic<bool> stop_{false};
  // wake(): wake_seq_ counts wake-ups; the eventfd is written only while
  // sleeping_ (the loop is in, or about to enter, epoll_wait).
  std::atomic<uint64_t> wake_seq_{0};
  std::atomic<bool> sleeping_{false};
  // Held by the firmware thread for each loop pass (everything but
  // epoll_wait); run_if_idle() takes it with try_lock. loop_alive_ (under
  // pass_mu_): run() is between its start and its exit.
  std::mutex pass_mu_;
  bool loop_alive_ = false;
  std::array<int, 8> ready_fds_{};  // fds epoll reported this pass (firmware thread)
  int n_ready_ = 0;
  int efd_ = -1;                           // eventfd: wake
  static constexpr int kThreadNice = -10;  // see run()
  int tfd_ = -1;                           // timerfd: next command deadline
  // The deadline tfd_ is armed for (max: disarmed); timerfd_settime only
  // when it changes.
  std::chrono::steady_clock::time_point tfd_at_ = std::chrono::steady_clock::time_point::max();
  int epfd_ = -1;
  std::thread thread_;

  // Firmware-thread state.
  uint64_t cmdq_iova_ = 0;
  bool cmdq_valid_ = false;
  uint32_t log_size_ = 5;
  uint32_t log_stride_ = 6;
  uint32_t pending_mask_ = 0;
  std::vector<unsigned> pending_;  // FIFO of rung slots
  std::vector<std::unique_ptr<Inflight>> inflight_;
  uint32_t inflight_mask_ = 0;
  uint64_t admitted_ = 0;
  bool init_wait_ = false;  // `initializing` was set: look again in 1 ms
  std::chrono::steady_clock::time_point next_scan_{};

  // Stats.
  std::atomic<uint64_t> st_commands_{0}, st_failed_{0}, st_delivery_{0}, st_faults_{0}, st_eqes_{0},
      st_ignored_{0}, st_max_inflight_{0}, st_passes_{0}, st_scans_{0};
};

}  // namespace kbv::sim::fw
