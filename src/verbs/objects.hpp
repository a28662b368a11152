// SPDX-License-Identifier: BSD-3-Clause
//
// The objects behind the kbv.h handles: one Impl per kind, each owning its
// verbs Object (request.hpp: handle, references, requests, IRP close) and
// the driver object (src/hca) it stands for.
//
// Life cycle of every object:
//   create call  -> Impl + Object registered (handle returned at once),
//                   state kCreating; the driver create command in flight.
//   its callback -> kReady (event KBV_SUCCESS) or, on failure / when the
//                   create request was cancelled, an internal close.
//   close call   -> fast-path entry erased, Object::close (requests
//                   cancelled, creator reference dropped); when the last
//                   reference goes, start_final() issues the firmware
//                   destroy; its callback frees the driver object, calls
//                   Object::finish_final() (close event) and drops the
//                   references held on parents.
// The device of every object holds one lock (DeviceImpl::mu, recursive) for
// every driver call: src/hca is single-threaded.
//
// Threading: the control path is thread-safe through DeviceImpl::mu and the
// registry lock; the fast-path members (queues, pollers) belong to the
// application thread that owns the QP/CQ/SRQ (kbv.h "Fast path").
#pragma once

#include <kbv/kbv.h>
#include <kbv/status.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "hca/dp/cq.hpp"
#include "hca/dp/rq.hpp"
#include "hca/dp/sq.hpp"
#include "hca/hca.hpp"
#include "hca/io/platform_io.hpp"
#include "hca/objects/ah.hpp"
#include "hca/objects/cq.hpp"
#include "hca/objects/mr.hpp"
#include "hca/objects/qp.hpp"
#include "hca/objects/srq.hpp"
#include "platform/device.hpp"
#include "verbs/event_queue.hpp"
#include "verbs/request.hpp"

namespace kbv::verbs {

enum class Kind : uint8_t { kDevice = 1, kPd, kMr, kCq, kQp, kSrq, kAh };

enum class State : uint8_t { kCreating, kReady, kDead };

class DeviceImpl;

// The fast-path gate (issue 15): one word per object that kbv_post_send /
// kbv_post_recv / kbv_poll_cq read instead of the object's kind and state,
// its device's failed flag, the QP state and whether its queues exist:
// kind << kKindShift | one bit per reason the straight-line fast path must
// not run. A call takes the straight line only when the word, masked with
// kKindMask and the bits it cares about, is exactly its kind; otherwise it
// takes the general path, which checks the real values in kbv.h's order,
// so every status (and *bad_index) is what it was. Each bit has one kind
// of writer and is set / cleared with an atomic or / and (no update lost
// between writers of different bits); a bit may be set while its reason is
// gone (the general path then runs and finds nothing wrong), never clear
// while its reason holds, except for the instants a racing call could have
// read the real value before the change anyway.
namespace gate {
inline constexpr uint32_t kNotReady = 1u << 0;    // state != kReady (set_state)
inline constexpr uint32_t kDevFailed = 1u << 1;   // QP: its device failed (DeviceImpl)
inline constexpr uint32_t kNoSend = 1u << 2;      // QP: qp_state RESET, INIT or RTR
inline constexpr uint32_t kNoRecv = 1u << 3;      // QP: qp_state RESET
inline constexpr uint32_t kNoSq = 1u << 4;        // QP: no send queue built
inline constexpr uint32_t kNoRq = 1u << 5;        // QP: no receive queue (SRQ, or not built)
inline constexpr uint32_t kCqResizing = 1u << 6;  // CQ: a resize in flight
inline constexpr uint32_t kCqOps = 1u << 7;       // CQ: attach/detach operations pushed
inline constexpr uint32_t kNoPoller = 1u << 8;    // CQ: no poller
inline constexpr uint32_t kKindShift = 24;
inline constexpr uint32_t kKindMask = 0xFFu << kKindShift;
// What each fast-path call needs clear.
inline constexpr uint32_t kSend = kNotReady | kDevFailed | kNoSend | kNoSq;
inline constexpr uint32_t kRecv = kNotReady | kDevFailed | kNoRecv | kNoRq;
inline constexpr uint32_t kPoll = kNotReady | kCqResizing | kCqOps | kNoPoller;
}  // namespace gate

struct Base : std::enable_shared_from_this<Base> {
  explicit Base(Kind k, uint32_t gate_bits = 0)
      : kind(k),
        gate(uint32_t{static_cast<uint8_t>(k)} << gate::kKindShift | gate::kNotReady | gate_bits) {}
  virtual ~Base() = default;
  Base(const Base&) = delete;
  Base& operator=(const Base&) = delete;

  uint64_t handle() const { return obj ? obj->handle() : 0; }
  bool ready() const { return state.load(std::memory_order_acquire) == State::kReady; }
  // Stores state and its gate bit; a QP becoming ready on a failed device
  // gets kDevFailed (registry.cpp). Every state change goes through here.
  void set_state(State s);
  // The fast path's check: kind k and none of `bits` set.
  [[gnu::always_inline]] bool gate_open(Kind k, uint32_t bits) const {
    return (gate.load(std::memory_order_acquire) & (gate::kKindMask | bits)) ==
           uint32_t{static_cast<uint8_t>(k)} << gate::kKindShift;
  }
  void gate_set(uint32_t bits) { gate.fetch_or(bits, std::memory_order_acq_rel); }
  void gate_clear(uint32_t bits) { gate.fetch_and(~bits, std::memory_order_acq_rel); }

  const Kind kind;
  std::shared_ptr<Object> obj;
  std::atomic<State> state{State::kCreating};
  std::atomic<uint32_t> gate;          // see namespace gate
  std::weak_ptr<EventQueue> event_eq;  // async events about this object
  std::shared_ptr<DeviceImpl> dev;     // null for the device itself
  // References this object holds on others (released after its destroy).
  std::vector<std::shared_ptr<Base>> parents;
  // The firmware destroy (set when the driver object exists); it must end
  // in finish_close(). Null: nothing to destroy. It returns
  // KBV_ERR_NO_MEMORY (or throws std::bad_alloc) when it could not start for
  // memory, KBV_ERR_BUSY when a command of the object is still in flight
  // (a CQ resize, a QP modify), having changed nothing: run_destroy then
  // queues the object on
  // its device's destroy_retry list and the device's next progress runs it
  // again (a close that has begun cannot report the failure to anyone; a
  // lost destroy left the object closing forever and its device unable to
  // close: found by verbs_oom). Any other status: it has started (or
  // finished) and ends in finish_close().
  std::function<Status()> destroy;
  bool final_taken = false;            // run_destroy ran (device lock)
  Base* destroy_retry_next = nullptr;  // DeviceImpl::destroy_retry link (device lock)
  // Children created on this object and not yet closed by the application
  // (a synchronous close waits only for children already closing).
  std::atomic<int32_t> open_children{0};
  std::atomic<bool> close_marked{false};
};

// ---- registry -------------------------------------------------------------------

// Registers impl: creates its Object (deferred final), records handle ->
// impl, and (fast kinds) the fast-path entry. nullptr on exhaustion.
std::shared_ptr<Object> register_object(const std::shared_ptr<Base>& impl);
// The live (not closing) object of `kind` for handle h, or nullptr with
// *err = KBV_ERR_INVALID_HANDLE.
std::shared_ptr<Base> lookup(uint64_t h, Kind kind);
template <class T>
std::shared_ptr<T> lookup_as(uint64_t h, Kind kind) {
  return std::static_pointer_cast<T>(lookup(h, kind));
}
// Fast-path lookup (lock-free); nullptr for an invalid/closed handle or
// another kind.
Base* fast_lookup(uint64_t h);
// Close an object (kbv_*_destroy): erase the fast entry, Object::close.
// Synchronous without eq (see kbv.h "Close").
Status close_object(const std::shared_ptr<Base>& impl, kbv_eq_t eq, uint64_t user_data);
// Close started by kbv itself (failed or cancelled create).
void close_internal(const std::shared_ptr<Base>& impl);
// Called by an impl's destroy completion: frees and finishes the close.
void finish_close(Base& impl);
// What a Base::destroy returns for the status of its command's submission:
// KBV_ERR_NO_MEMORY and KBV_ERR_BUSY as is (nothing was sent: run again
// later); another
// error finishes the close now (the device failed: nothing will complete);
// otherwise KBV_SUCCESS (the completion finishes it).
Status destroy_started(Base& impl, Status submit);
// With the device lock held: runs impl.destroy (or finish_close) once; a
// destroy that could not start for memory is queued on dev.destroy_retry.
void run_destroy(Base& impl);
// With the device lock held: runs the queued destroys again; returns how many.
uint32_t retry_destroys(DeviceImpl& dev);
// A create callback's success path (device lock held): the object becomes
// ready, then its create request completes (KBV_SUCCESS, info). If it was
// closed meanwhile it is destroyed; if the create request was cancelled
// (nothing to complete), kbv closes it.
void created(const std::shared_ptr<Base>& impl, const Ticket& t, uint64_t info);
// A create callback's failure path (device lock held): the request
// completes with st (if a ticket is given) and the object dies.
void create_failed(const std::shared_ptr<Base>& impl, const Ticket* t = nullptr, Status st = {});

// ---- control requests -------------------------------------------------------------

// start(ticket) runs with the device lock held; it submits the driver work
// and arranges exactly one EventQueue::complete(ticket, ...) later (or
// completes it at once). It returns KBV_PENDING / KBV_SUCCESS (the ticket
// was or will be completed) or an error (nothing submitted; no event).
using StartFn = std::function<Status(const Ticket&)>;
// Runs a control request about `about` (its requests are cancelled by
// cancel_object / close) on eq, or synchronously when eq is KBV_EQ_NONE.
// Returns KBV_PENDING (async), the request's status (sync), or the error of
// the submission.
Status submit_control(DeviceImpl& dev, Object* about, kbv_eq_t eq, uint64_t user_data,
                      const StartFn& start);
// Records a synchronous call's firmware status for kbv_last_fw_error.
void set_last_fw_error(Status st);

// Create plumbing shared by every kind: takes a reference on each parent,
// registers impl (*out = its handle), runs submit_control(start). On an
// error (submission or synchronous failure) the object is gone and *out 0.
Status create_object(const std::shared_ptr<Base>& impl,
                     const std::vector<std::shared_ptr<Base>>& parents, kbv_eq_t eq,
                     uint64_t user_data, uint64_t* out, const StartFn& start);

// The queue named by an attr's event_eq (or the request's eq when 0).
// KBV_ERR_INVALID_HANDLE for a bad non-zero handle.
Result<std::weak_ptr<EventQueue>> event_queue_for(kbv_eq_t event_eq, kbv_eq_t eq);
// Posts an unsolicited event (ignored when the queue is gone or full: the
// queue counts it as lost).
void post_async(const std::weak_ptr<EventQueue>& q, uint32_t type, Status st, uint64_t object,
                uint64_t info);

// ---- the objects ------------------------------------------------------------------

class CqImpl;
class QpImpl;
class SrqImpl;

class DeviceImpl : public Base {
 public:
  DeviceImpl() : Base(Kind::kDevice) {}
  ~DeviceImpl() override;

  // Drive the device: try-lock, Hca::poll, open/teardown steps. Returns work
  // done (0 when another thread holds the lock or nothing happened).
  uint32_t progress();
  // Blocking progress for synchronous calls: waits for the lock, drives the
  // device once and, when that did nothing, waits (poll(2)) on the async
  // EQ's interrupt eventfd (command completions) and on wake_fd (-1: none)
  // for at most kIdleWaitBoundMs; without an interrupt eventfd it yields.
  // While the firmware is initializing (Hca::waiting_for_init) it waits on
  // wake_fd for Hca::kInitPollMs (2 ms, the PRM drivers' poll period)
  // instead. Never errors (the driver bounds every command with a timeout).
  Status progress_wait(int wake_fd);
  static constexpr int kIdleWaitBoundMs = 1;
  uint32_t progress_locked();  // with mu held

  // Hca event / completion handlers (with mu held, from Hca::poll).
  void on_hca_event(const hca::HcaEvent& e);
  void on_comp(uint32_t cqn);

  Status check_usable() const;  // ready and not failed
  // The progress thread (kbv_device_start_progress_thread,
  // KBV_OPEN_PROGRESS_THREAD) polls every 50 us while it finds work and for
  // 2 ms after the last work or kick; then it backs off, doubling its pause up
  // to 1 ms (interrupt moderation, as a NIC coalesces events): an idle
  // device's thread no longer takes the CPU from busy-polling programs and
  // the model's threads on small machines (MPI over UCX, which arms its CQs
  // and polls them: 8 B latency 70 -> 35 us on 2 loaded cores).
  // kick_progress() brings the busy pace back at once: kbv_cq_arm and every
  // control request started on an event queue call it.
  Status start_progress_thread();
  Status stop_progress_thread();
  void kick_progress();

  std::recursive_mutex mu;
  std::string uri;
  // What backs the function (a model HCA for "sim:"; platform/transport.hpp
  // TransportTarget), held until the teardown finished.
  std::shared_ptr<void> backing;
  std::unique_ptr<platform::DeviceHandle> pdev;
  std::unique_ptr<hca::PlatformDeviceIo> io;
  std::unique_ptr<hca::Hca> hca;
  std::optional<Ticket> open_ticket;
  // Port 1's state as last reported by KBV_EVENT_PORT_STATE (under mu):
  // events report changes from it; it starts DOWN (device.cpp
  // report_port_state).
  uint32_t port_reported = KBV_PORT_DOWN;
  void report_port_state(uint8_t port, uint32_t state);
  void query_initial_port_state();  // once bring-up is done
  bool teardown_requested = false;
  bool teardown_started = false;
  std::atomic<bool> finished{false};
  // Set with set_failed() (mu held), which also sets every QP's
  // gate::kDevFailed.
  std::atomic<bool> failed{false};
  std::atomic<int32_t> failure{KBV_SUCCESS};
  void set_failed(bool f);
  std::unordered_map<uint32_t, std::weak_ptr<CqImpl>> cqs;
  std::unordered_map<uint32_t, std::weak_ptr<QpImpl>> qps;
  std::unordered_map<uint32_t, std::weak_ptr<SrqImpl>> srqs;
  // Objects whose destroy could not start for memory (Base::destroy), run
  // again by progress_locked(); intrusive (Base::destroy_retry_next) so that
  // queueing one allocates nothing. The registry keeps each alive until its
  // finish_close(). Under mu.
  Base* destroy_retry = nullptr;

  std::thread progress_thread;
  std::atomic<bool> stop_thread{false};

 private:
  void finish_teardown();
  // Waits up to `d` or until kick_progress() / stop; true when woken early.
  bool pace_wait(std::chrono::microseconds d);
  std::mutex pace_mu;
  std::condition_variable pace_cv;
  bool pace_kick = false;  // guarded by pace_mu
};

class PdImpl : public Base {
 public:
  PdImpl() : Base(Kind::kPd) {}
  uint32_t pdn = 0;
};

class MrImpl : public Base {
 public:
  MrImpl() : Base(Kind::kMr) {}
  ~MrImpl() override;
  std::unique_ptr<hca::Mr> mr;
};

class AhImpl : public Base {
 public:
  AhImpl() : Base(Kind::kAh) {}
  hca::Ah ah;
};

// A request to the CQ's poller thread: attach or detach a QP. Pushed by the
// control path, applied by kbv_poll_cq (lock-free stack, reversed on use).
struct AttachOp {
  std::shared_ptr<QpImpl> qp;
  bool attach = true;
  bool send = false;  // attach its send queue
  bool recv = false;  // attach its receive queue / SRQ
  AttachOp* next = nullptr;
};

class CqImpl : public Base {
 public:
  CqImpl() : Base(Kind::kCq, gate::kNoPoller) {}
  ~CqImpl() override;

  // Pushes op and sets gate::kCqOps (after the push).
  void push_op(AttachOp* op);
  // Applies pending attach/detach operations (poller thread); clears
  // gate::kCqOps before taking them.
  void apply_ops();
  // A resize starts (false: one is already in flight) / ends; with
  // gate::kCqResizing.
  bool begin_resize();
  void end_resize();
  // Rebuilds the poller after create/resize and re-attaches the QPs.
  Status rebuild_poller();

  std::unique_ptr<hca::Cq> cq;
  std::optional<hca::CqPoller> poller;
  NotifySlot notify;
  std::atomic<AttachOp*> ops{nullptr};
  // Attached QPs (kept alive while their completions may arrive); poller
  // thread only.
  struct Attached {
    std::shared_ptr<QpImpl> qp;
    bool send, recv;
  };
  std::vector<Attached> attached;
  std::atomic<bool> resizing{false};
  // Created with KBV_CQ_FLAG_COMPLETION_TIMESTAMP (kbv_poll_cq_ts may read it).
  bool timestamps = false;
  // Empty kbv_poll_cq calls (poller thread): every 1024th drives the device
  // once, so that a program that only polls still has its device's health
  // checked (a failed device's requests are then flushed, kbv_poll_cq).
  uint32_t empty_polls = 0;
};

// The device can stamp completions (KBV_DEVICE_CAP_COMPLETION_TIMESTAMP):
// a clock, and its free-running format offered for CQE timestamps.
inline bool completion_timestamps(const hca::HcaCaps& c) {
  return c.device_frequency_khz != 0 && c.ts_free_running();
}

class SrqImpl : public Base {
 public:
  SrqImpl() : Base(Kind::kSrq) {}
  ~SrqImpl() override;
  std::unique_ptr<hca::Srq> srq;
  std::optional<hca::SrqQueue> q;
  hca::SrqConfig cfg;
};

class QpImpl : public Base {
 public:
  QpImpl() : Base(Kind::kQp, gate::kNoSend | gate::kNoRecv | gate::kNoSq | gate::kNoRq) {}
  ~QpImpl() override;
  // (Re)builds the send/receive queues over the QP's rings (create, and
  // after a transition to RESET, when firmware restarts its counters);
  // clears gate::kNoSq / kNoRq for the queues built.
  Status build_queues();
  // Stores qp_state and its gate bits (kNoSend, kNoRecv).
  void set_qp_state(uint32_t s);

  std::unique_ptr<hca::Qp> qp;
  hca::QpConfig cfg;
  uint32_t type = 0;  // kbv_qp_type_t
  kbv_qp_cap_t cap{};
  bool sig_all = false;
  std::optional<hca::SendQueue> sq;
  std::optional<hca::RecvQueue> rq;
  std::shared_ptr<CqImpl> send_cq, recv_cq;
  std::shared_ptr<SrqImpl> srq;
  std::atomic<uint32_t> qp_state{KBV_QPS_RESET};  // kbv_qp_state_t, fast-path view
  std::atomic<bool> modifying{false};
  hca::cmd::QpAttr acc;  // attributes accumulated over the modifies (device lock)
  // The detach requests (send CQ, receive CQ) its destroy pushes, allocated
  // at create so that the destroy allocates nothing here (qp.cpp push_detach).
  std::unique_ptr<AttachOp> detach_ops[2];
};

// The process's devices still being driven (open, or closing and not yet
// torn down): every kbv_eq_poll drives them.
void devices_add(const std::shared_ptr<DeviceImpl>& d);
void devices_remove(const DeviceImpl* d);
std::vector<std::shared_ptr<DeviceImpl>> devices_snapshot();

// "guid:0x<hex>" URIs (device_guid.cpp; kbv.h "Devices"): the URI of the
// device whose node GUID it names. *hold (may be null) keeps that device's
// transport target (a model HCA) alive until the caller opened it.
// KBV_ERR_INVALID_ARGUMENT (malformed or zero GUID), KBV_ERR_BUSY (the
// device is open in this process), KBV_ERR_NOT_FOUND (no device has it).
bool is_guid_uri(std::string_view uri);
Result<std::string> resolve_guid_uri(std::string_view uri, uint64_t timeout_ns,
                                     std::shared_ptr<void>* hold);

// Test hook: the driver configuration used by later kbv_device_open calls
// (health interval etc.). Not part of the C API.
void set_hca_config(const hca::HcaConfig& cfg);
hca::HcaConfig hca_config();

}  // namespace kbv::verbs
