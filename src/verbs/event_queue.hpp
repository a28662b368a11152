// SPDX-License-Identifier: BSD-3-Clause
//
// kbv::verbs::EventQueue — the object behind kbv_eq_t (include/kbv/eq.h):
// a bounded ring of kbv_event_t with an eventfd, an overflow counter for
// unsolicited events, and the registry of in-flight requests keyed by
// (this queue, user_data) that guarantees one event per request.
//
// Request life cycle (docs/DESIGN.md "The async control path"; the IRP rules of
// docs/NTSTATUS.md):
//   begin(user_data)   reserves a ring slot for the completion -> Ticket
//   complete(ticket)   posts the one event (first of complete/cancel wins)
//   cancel(user_data)  posts the one event with KBV_ERR_CANCELLED and calls
//                      the request's cancel hook (e.g. CmdQueue::cancel)
//   poll()             hands the event out; only then may the same user_data
//                      be used again on this queue
//
// Threading: every member may be called from any thread except poll(), which
// has one consumer at a time. One mutex per queue guards the ring and the
// registry (control path). Events are stored in a ring allocated at create(): posting an event
// never allocates; begin() allocates its registry entry (control path).
#pragma once

#include <kbv/eq.h>
#include <kbv/status.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace kbv::verbs {

class EventQueue;

// Names one begun request; copies are cheap. Holds the queue weakly, so a
// driver callback that outlives the queue completes into nothing.
struct Ticket {
  std::weak_ptr<EventQueue> eq;
  uint64_t user_data = 0;
  uint64_t seq = 0;  // distinguishes reuses of the same user_data
};

// Called (outside the queue's lock, at most once) when a request is cancelled
// or its queue destroyed while it is in flight: tells the producer to stop.
// It runs on the cancelling thread; a producer that is single-threaded (the
// hca driver: Hca/CmdQueue are driven by one thread) must only record the
// cancel there and act on it from its own progress thread.
using CancelFn = std::function<void()>;

class EventQueue : public std::enable_shared_from_this<EventQueue> {
 public:
  // depth: 1..KBV_EQ_MAX_DEPTH events. Errors: KBV_ERR_INVALID_ARGUMENT,
  // KBV_ERR_NO_MEMORY, an errno status from eventfd(2).
  static Result<std::shared_ptr<EventQueue>> create(uint32_t depth);
  ~EventQueue();
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  uint32_t depth() const { return depth_; }
  // The eventfd (EFD_NONBLOCK): readable while events or an overflow report
  // wait; drained by poll() when it empties the queue.
  int fd() const { return efd_; }

  // ---- producers --------------------------------------------------------
  // An unsolicited event (async event, completion notification without a
  // request). KBV_SUCCESS, or KBV_ERR_OVERFLOW when the ring (counting the
  // room reserved for requests) is full: the event is counted as lost and
  // reported by poll(). KBV_ERR_INVALID_HANDLE after shutdown().
  Status post(const kbv_event_t& ev);

  // Start a request: reserve room for its event. type is the kind of event
  // it will complete with (KBV_EVENT_REQUEST, KBV_EVENT_COMP_NOTIFY, an async
  // event type for queued async-event requests); object the object it is
  // about (for cancel_object and the CANCELLED event). Errors:
  // KBV_ERR_ALREADY_EXISTS (user_data in flight or its event not yet
  // polled), KBV_ERR_QUEUE_FULL (no room for the completion),
  // KBV_ERR_INVALID_ARGUMENT (type not a request type),
  // KBV_ERR_INVALID_HANDLE (queue shut down).
  Result<Ticket> begin(uint64_t user_data, uint32_t type, uint64_t object, CancelFn on_cancel = {});

  // Complete a begun request with status st (its fw_status/syndrome travel
  // along), the object (0: the object it was begun about) and info. KBV_SUCCESS when this posted
  // the event; KBV_ERR_NOT_FOUND when the request was already completed or cancelled (or the queue
  // is gone): nothing is posted, so a late driver completion after a cancel is dropped.
  static Status complete(const Ticket& t, Status st, uint64_t object, uint64_t info);

  // Cancel by user_data: KBV_SUCCESS (a KBV_ERR_CANCELLED event was posted),
  // KBV_ERR_INVALID_STATE (already completed, event not yet polled),
  // KBV_ERR_NOT_FOUND.
  Status cancel(uint64_t user_data);
  // Cancel every in-flight request about object; returns how many.
  uint32_t cancel_object(uint64_t object);
  // Cancel one request if the ticket still names it (used by Object/NotifySlot);
  // answers as cancel(user_data).
  static Status cancel(const Ticket& t);
  // True while the ticket's request is begun and neither completed nor cancelled.
  static bool pending(const Ticket& t);
  // Withdraw a begun request that could not be started (its submission
  // failed synchronously, so the caller returns the error instead): the
  // reservation is released, no event is posted, its cancel hook is dropped.
  // KBV_ERR_NOT_FOUND when it was already completed or cancelled.
  static Status abandon(const Ticket& t);

  // ---- consumer ---------------------------------------------------------
  // Copy up to n events out (see kbv_eq_poll). Runs the progress hook first.
  uint32_t poll(kbv_event_t* out, uint32_t n);
  // Driver progress run at the start of each poll (DESIGN: polling an EQ
  // also drives the device). Set before the queue is shared.
  void set_progress(std::function<void()> fn) { progress_ = std::move(fn); }
  // Process-wide progress run by every poll() before the queue's own hook
  // (the verbs layer drives every open device: kbv.h "Progress"). A plain
  // function pointer, set once at library start-up; nullptr: none.
  static void set_global_progress(void (*fn)());

  // ---- state ------------------------------------------------------------
  uint64_t lost_total() const { return lost_total_.load(std::memory_order_relaxed); }
  uint32_t in_flight() const;  // begun and not yet completed/cancelled
  uint32_t queued() const { return count_.load(std::memory_order_acquire); }

  // Destroy-time: cancel hooks of in-flight requests run, no more events are
  // accepted, queued events are dropped. Idempotent.
  void shutdown();

 private:
  explicit EventQueue(uint32_t depth, int efd);

  enum class ReqState : uint8_t { kPending, kDone };
  struct Entry {
    uint64_t seq;
    uint64_t object;
    uint32_t type;
    ReqState state;
    CancelFn on_cancel;
  };
  struct Slot {
    kbv_event_t ev;
    uint64_t seq;  // 0: unsolicited; else the request's seq
  };

  // All with mu_ held.
  void push_locked(const kbv_event_t& ev, uint64_t seq);
  void signal_locked();
  kbv_event_t cancelled_event(uint64_t user_data, const Entry& e) const;
  // Cancel user_data if in flight (and its seq matches when seq != 0).
  Status cancel_match(uint64_t user_data, uint64_t seq);

  const uint32_t depth_;
  const int efd_;
  mutable std::mutex mu_;
  std::vector<Slot> ring_;  // depth_ slots, allocated once
  uint32_t head_ = 0;       // next to poll
  std::atomic<uint32_t> count_{0};
  uint32_t reserved_ = 0;  // ring room promised to in-flight requests
  uint64_t lost_pending_ = 0;
  std::atomic<uint64_t> lost_total_{0};
  bool signaled_ = false;  // eventfd holds a count
  bool dead_ = false;
  uint64_t next_seq_ = 1;
  std::unordered_map<uint64_t, Entry> requests_;
  std::function<void()> progress_;
};

// ---- generation-checked handles ---------------------------------------------
// Handle = generation (high 32 bits) | slot index + 1 (low 32 bits). A freed
// slot's generation is bumped, so old handles stop resolving. Lookup returns a
// shared_ptr: an object destroyed while a call is using it lives until that
// call returns. Thread-safe (one mutex; control path).
template <class T>
class HandleTable {
 public:
  explicit HandleTable(uint32_t max_slots) : max_(max_slots) {}

  // 0 when the table is full.
  uint64_t insert(std::shared_ptr<T> obj) {
    std::lock_guard lk(mu_);
    uint32_t idx;
    if (!free_.empty()) {
      idx = free_.back();
      free_.pop_back();
    } else {
      if (slots_.size() >= max_) return 0;
      idx = static_cast<uint32_t>(slots_.size());
      slots_.push_back({1, nullptr});
    }
    slots_[idx].obj = std::move(obj);
    return (uint64_t{slots_[idx].gen} << 32) | (uint64_t{idx} + 1);
  }
  std::shared_ptr<T> get(uint64_t h) const {
    std::lock_guard lk(mu_);
    Slot const* s = find_locked(h);
    return s ? s->obj : nullptr;
  }
  // Removes and returns the object; nullptr for a stale/invalid handle.
  std::shared_ptr<T> remove(uint64_t h) {
    std::lock_guard lk(mu_);
    Slot* s = const_cast<Slot*>(find_locked(h));
    if (!s) return nullptr;
    auto obj = std::move(s->obj);
    s->obj = nullptr;
    if (++s->gen == 0) s->gen = 1;
    free_.push_back(static_cast<uint32_t>((h & 0xffffffffu) - 1));
    return obj;
  }

 private:
  struct Slot {
    uint32_t gen;
    std::shared_ptr<T> obj;
  };
  const Slot* find_locked(uint64_t h) const {
    uint64_t low = h & 0xffffffffu;
    if (low == 0 || low > slots_.size()) return nullptr;
    const Slot& s = slots_[low - 1];
    if (!s.obj || s.gen != static_cast<uint32_t>(h >> 32)) return nullptr;
    return &s;
  }
  const uint32_t max_;
  mutable std::mutex mu_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
};

// The handle table behind kbv_eq_t (kbv_eq_create/destroy).
std::shared_ptr<EventQueue> eq_from_handle(kbv_eq_t h);
// Registers an existing queue (C++ users handing a queue to C code). 0 when full.
kbv_eq_t eq_register(std::shared_ptr<EventQueue> eq);

}  // namespace kbv::verbs
