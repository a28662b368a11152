// SPDX-License-Identifier: BSD-3-Clause
//
// Hca: the control plane of one ConnectX function driven from user space —
// the command queue, firmware pages, the UAR, the async (command + page +
// device events) EQ and a completion EQ, health monitoring — and the
// progress engine that drives them: poll().
//
// Life cycle (all non-blocking; nothing here sleeps or starts a thread):
//   auto hca = std::make_unique<Hca>(io, cfg);
//   hca->start();                      // creates the command queue, begins bring-up
//   while (!hca->bringup_done()) hca->poll();
//   if (hca->bringup_status().is_ok()) { ... use cmdq(), caps(), uar() ... }
//   hca->start_teardown();             // also after a failed bring-up
//   while (!hca->teardown_done()) hca->poll();
// Destroying an Hca whose teardown did not finish disables the device
// (DeviceIo::disable_device: bus mastering off) before any memory is freed.
// Bring-up follows docs/PRM.md "Bring-up order" (see bringup.hpp); teardown
// destroys the EQs, deallocates the UAR, TEARDOWN_HCA, takes every firmware
// page back, DISABLE_HCA. On a dead device teardown skips the commands.
//
// poll() does, each call: a rate-limited health check; both EQs (command
// completions -> CmdQueue, page requests -> PageManager, other events -> the
// event handler, completion EQEs -> the completion handler); the command
// queue (ownership polling before the EQ exists, deadlines); one step of
// bring-up/teardown. It returns the amount of work done (0: idle).
//
// Device failure (health: removed / fatal syndrome / stuck counter, or an
// INTERNAL_ERROR event confirmed by the health registers): every outstanding
// command completes with KBV_ERR_DEVICE_REMOVED / KBV_ERR_DEVICE_FATAL, a
// HcaEvent of kind kFatal is delivered once, later commands fail at once.
// Nothing aborts and nothing waits for the device.
//
// Applications that sleep: async_eventfd() / comp_eventfd() are the MSI-X
// eventfds of the two EQs (when the platform has interrupts); after they
// fire, call poll().
//
// Threading: not thread-safe. One thread calls poll() and every other
// method; handlers run on it, from poll().
#pragma once

#include <kbv/status.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "hca/cmd/caps.hpp"
#include "hca/cmdq/cmdq.hpp"
#include "hca/eq.hpp"
#include "hca/health.hpp"
#include "hca/io/device_io.hpp"
#include "hca/pages.hpp"
#include "hca/uar.hpp"

namespace kbv::hca {

class Bringup;
class Teardown;

struct HcaConfig {
  CmdQueue::Config cmdq;
  HealthMonitor::Config health;
  // Bound on the wait for init_seg.initializing to clear (kernel main.c
  // FW_INIT_TIMEOUT_MILI: 2 minutes).
  uint64_t init_timeout_ns = 120ull * 1000 * 1000 * 1000;
  uint16_t function_id = 0;
  uint32_t async_eq_log_size = 10;  // 1024 EQEs
  uint32_t async_vector = 0;        // MSI-X vector of the async EQ
  bool create_comp_eq = true;
  uint32_t comp_eq_log_size = 10;
  uint32_t comp_vector = 1;
};

// A device event delivered to the event handler.
struct HcaEvent {
  enum class Kind : uint8_t {
    kAsync,  // an EQE other than command / page request / completion
    kFatal,  // the device failed (status says how); delivered once
  };
  Kind kind = Kind::kAsync;
  uint8_t type = 0;  // prm::EventType (kAsync)
  uint8_t sub_type = 0;
  Status status;                     // kFatal: KBV_ERR_DEVICE_REMOVED or KBV_ERR_DEVICE_FATAL
  uint32_t port = 0;                 // PORT_CHANGE: 1-based port
  uint32_t cqn = 0;                  // CQ_ERROR
  uint8_t cq_syndrome = 0;           // CQ_ERROR (prm::CqErrSyndrome)
  uint32_t qp_srq_n = 0;             // QP / SRQ events: the queue number
  uint8_t qp_srq_type = 0;           // prm::EventQueueType
  std::array<std::byte, 28> data{};  // raw event data (prm::eqe::data)
};

// The init segment's health registers as raw dwords (device.h health_buffer
// at 0x200, 16 dwords; fw_rev 0x000; health counter 0x1010), host order.
struct HealthSnapshot {
  std::array<uint32_t, 16> buffer{};
  uint32_t fw_rev = 0;
  uint32_t counter = 0;
};

struct HcaStats {
  uint64_t eqes = 0;  // EQEs consumed (both EQs)
  uint64_t cmd_eqes = 0;
  uint64_t page_requests = 0;
  uint64_t async_events = 0;  // delivered to the event handler
  uint64_t comp_events = 0;   // delivered to the completion handler
};

class Hca {
 public:
  Hca(DeviceIo& io, HcaConfig cfg = {});
  ~Hca();
  Hca(const Hca&) = delete;
  Hca& operator=(const Hca&) = delete;

  // Creates the command queue (synchronous register access) and begins
  // bring-up. KBV_PENDING, or the CmdQueue::create error; KBV_ERR_INVALID_STATE
  // when already started.
  Status start();
  uint32_t poll();

  bool bringup_done() const;
  // KBV_PENDING while bring-up runs; then success or the failing step's status.
  Status bringup_status() const;
  // The bring-up is waiting for the init segment's `initializing` to clear
  // (a synchronous wait then sleeps 2 ms between polls, as rdma-core's
  // mlx5_vfio wait_fw_init and the kernel's do: FW_INIT_WAIT_MS /
  // FW_PRE_INIT_WAIT); how long it waited once it cleared (0 before).
  bool waiting_for_init() const;
  static constexpr int kInitPollMs = 2;  // rdma-core mlx5_vfio.h FW_INIT_WAIT_MS
  uint64_t init_wait_ns() const;
  bool ready() const { return bringup_done() && bringup_status().is_ok() && !teardown_; }

  // Begins orderly teardown (valid after start(), also after a failed
  // bring-up; an unfinished bring-up is abandoned first).
  Status start_teardown();
  bool teardown_done() const;
  // First error met during teardown (teardown still runs to the end).
  Status teardown_status() const;

  // Synchronous driving for callers without an event loop (tools, the
  // verbs layer's "no EQ" calls): polls until done() is true. Returns
  // success, KBV_ERR_TIMEOUT when `timeout_ns` passed first (DeviceIo clock),
  // or the device failure. Busy-polls: control path only.
  Status poll_until(const std::function<bool()>& done, uint64_t timeout_ns);
  // start() + poll_until(bring-up done); the bring-up status. Timeout =
  // KBV_ERR_TIMEOUT (bring-up keeps running; poll() on or tear down).
  Status open_sync(uint64_t timeout_ns);
  // start_teardown() + poll_until(teardown done); the teardown status.
  Status close_sync(uint64_t timeout_ns);

  void set_event_handler(std::function<void(const HcaEvent&)> h) { on_event_ = std::move(h); }
  // Completion EQEs (type 0x00): the CQN (prm::eqe_comp).
  void set_comp_handler(std::function<void(uint32_t cqn)> h) { on_comp_ = std::move(h); }

  // Valid after start() succeeded.
  CmdQueue& cmdq() { return *cmdq_; }
  PageManager& pages() { return *pages_; }
  HealthMonitor& health() { return health_; }
  const HcaCaps& caps() const { return caps_; }
  const Uar& uar() const { return uar_; }
  EventQueue* async_eq() { return async_eq_.get(); }
  EventQueue* comp_eq() { return comp_eq_.get(); }
  uint16_t issi() const { return issi_; }
  Status failure() const { return failure_; }
  // Declares the device failed with `s` (an error) as a health failure does:
  // outstanding commands complete with it, one kFatal event. For a function
  // reset the driver itself did (kbv_device_reset): the firmware forgot
  // everything, so nothing may be sent to it any more.
  void fail(Status s) { on_device_failure(s); }
  // start() found the function's firmware failed from an earlier life (a
  // health syndrome) and reset it first: the health registers it found.
  const std::optional<HealthSnapshot>& prior_health() const { return prior_health_; }
  const HcaStats& stats() const { return stats_; }
  const HcaConfig& config() const { return cfg_; }
  DeviceIo& io() { return io_; }
  Result<int> async_eventfd() const;
  Result<int> comp_eventfd() const;
  // The variant byte (mkc.mkey_7_0) for the next memory key: a per-device
  // counter incremented before each use (1, 2, ... 255, 0, 1, ...), as the
  // kernel's mlx5_ib does (mr.c assign_mkey_variant: atomic_inc_return of
  // dev->mkey_var, truncated to u8). With the firmware's index reuse this
  // keeps a deregistered key from naming a later region (docs/PRM.md
  // "Memory keys").
  uint8_t next_mkey_variant() { return ++mkey_var_; }

 private:
  // m.step(), retried at the next poll when it fails for memory (hca.cpp).
  template <class Machine>
  void step_machine(Machine& m);
  friend class Bringup;
  friend class Teardown;

  void dispatch_async(prm::CRef<prm::eqe> e);
  void dispatch_comp(prm::CRef<prm::eqe> e);
  void on_device_failure(Status s);

  DeviceIo& io_;
  HcaConfig cfg_;
  HealthMonitor health_;
  std::unique_ptr<CmdQueue> cmdq_;
  std::unique_ptr<PageManager> pages_;
  std::unique_ptr<EventQueue> async_eq_;
  std::unique_ptr<EventQueue> comp_eq_;
  // EQs destroyed by a command completion, which may run inside that EQ's
  // own poll (a command EQE): freed at the start of the next poll(), never
  // under the loop that reads them (tests/fuzz hca_device).
  std::vector<std::unique_ptr<EventQueue>> retired_eqs_;
  Uar uar_;
  HcaCaps caps_;
  std::vector<std::byte> cur_caps_;  // general caps, "current", as queried
  std::vector<std::byte> max_caps_;  // general caps, "max"
  uint16_t issi_ = 0;
  // What exists on the device (teardown undoes exactly this).
  bool enabled_ = false;
  bool initialized_ = false;
  bool uar_allocated_ = false;
  std::unique_ptr<Bringup> bringup_;
  std::unique_ptr<Teardown> teardown_;
  std::function<void(const HcaEvent&)> on_event_;
  std::function<void(uint32_t)> on_comp_;
  Status failure_;
  std::optional<HealthSnapshot> prior_health_;
  uint64_t timeouts_seen_ = 0;
  uint8_t mkey_var_ = 0;
  HcaStats stats_;
};

}  // namespace kbv::hca
