// SPDX-License-Identifier: BSD-3-Clause
//
// Request primitives built on EventQueue (event_queue.hpp), reproducing the
// IRP rules of the OpenIB kernel async verbs proposals (docs/NTSTATUS.md sources 000,
// 001; summarised in docs/NTSTATUS.md "IRP semantics to reproduce"):
//
//   Object            reference-counted verbs object with a generation-checked
//                     handle; requests about it are tracked so they can be
//                     cancelled together; close() "cannot fail": it cancels
//                     the object's requests (KBV_ERR_CANCELLED events first)
//                     and completes when the last reference is released.
//   AsyncRequestQueue several queued requests for one kind of async event
//                     (GetCaPortEvent, GetQpAsyncEvent, ...): one completes
//                     per event, FIFO.
//   NotifySlot        one completion-notification request at a time
//                     (GetCqCompEvent): arming again cancels the previous one.
//   run_sync          the "no event queue = synchronous" path: submit on a
//                     private queue and drive a progress function until the
//                     request's one event arrives.
//
// Threading: every member is thread-safe (one mutex per object/queue/slot;
// control path). Completions may come from a progress thread.
#pragma once

#include <kbv/eq.h>
#include <kbv/status.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "verbs/event_queue.hpp"

namespace kbv::verbs {

class Object : public std::enable_shared_from_this<Object> {
 public:
  // Runs once, on the thread that releases the last reference after close()
  // (e.g. the driver's destroy). Close never fails, so it returns nothing.
  using FinalFn = std::function<void()>;

  // A new object holding one reference (the creator's, dropped by close()).
  // The handle table keeps it alive until it is finalized, so every object
  // must be closed. nullptr when out of memory or the handle table is full.
  static std::shared_ptr<Object> create(FinalFn on_final = {});
  // Two-step finalization (objects whose destruction is asynchronous, e.g. a
  // firmware DESTROY command): when the last reference goes after close(),
  // start_final runs (it starts the work) and the object stays closing,
  // its handle still resolving, until finish_final() is called once: then
  // the handle stops resolving and the close request completes.
  static std::shared_ptr<Object> create_deferred(FinalFn start_final);
  void finish_final();
  // The object for a handle; nullptr once it was finalized (or never existed).
  static std::shared_ptr<Object> from_handle(uint64_t handle);

  uint64_t handle() const { return handle_; }
  bool closing() const;
  uint32_t refs() const;

  // Take a reference (a child object, an in-progress call). KBV_SUCCESS, or
  // KBV_ERR_INVALID_HANDLE once close() began.
  Status acquire();
  // Drop a reference; the last one after close() finalizes the object: the
  // final hook runs, the handle stops resolving and the close request
  // completes with KBV_SUCCESS.
  void release();

  // Begin a request about this object on eq (see EventQueue::begin). Refused
  // with KBV_ERR_INVALID_HANDLE while closing.
  Result<Ticket> begin(const std::shared_ptr<EventQueue>& eq, uint64_t user_data, uint32_t type,
                       CancelFn on_cancel = {});
  // Cancel every in-flight request about this object on every queue it used.
  uint32_t cancel_requests();

  // Close (IRP close semantics). Cancels the object's requests, then drops
  // the creator's reference. With eq: KBV_PENDING and one KBV_EVENT_REQUEST
  // event (status KBV_SUCCESS, object = handle) once the last reference is
  // gone. Without eq (nullptr): KBV_SUCCESS if the object was finalized
  // now, else KBV_PENDING with nothing to wait on (it finalizes when the
  // references drop). Errors (nothing happens): KBV_ERR_INVALID_HANDLE
  // (already closing), the errors of EventQueue::begin.
  Status close(const std::shared_ptr<EventQueue>& eq, uint64_t user_data);

 private:
  explicit Object(FinalFn fn) : on_final_(std::move(fn)) {}
  void finalize();
  bool release_ref();  // true when this finalized the object

  mutable std::mutex mu_;
  uint64_t handle_ = 0;
  uint32_t refs_ = 1;
  bool closing_ = false;
  FinalFn on_final_;
  bool deferred_ = false;
  std::vector<std::weak_ptr<EventQueue>> eqs_;  // queues it has had requests on
  std::optional<Ticket> close_ticket_;
};

// Queued requests waiting for one kind of async event on one object.
class AsyncRequestQueue {
 public:
  // type: the event type the requests complete with (KBV_EVENT_PORT_STATE,
  // KBV_EVENT_CQ_ERROR, ...).
  explicit AsyncRequestQueue(uint32_t type) : type_(type) {}

  // Queue a request: KBV_PENDING, or the errors of Object::begin.
  Status add(Object& obj, const std::shared_ptr<EventQueue>& eq, uint64_t user_data);
  // An event happened: complete the oldest request still in flight with
  // (st, info). Returns false when no request was waiting (the event is then
  // the caller's to drop or post unsolicited).
  bool fire(Status st, uint64_t info);
  // Cancel all queued requests (close); returns how many were cancelled.
  uint32_t cancel_all();
  size_t queued() const;

 private:
  const uint32_t type_;
  mutable std::mutex mu_;
  std::deque<Ticket> q_;
};

// One completion-notification request at a time.
class NotifySlot {
 public:
  // Arm: the previous request (if still in flight) completes with
  // KBV_ERR_CANCELLED first. KBV_PENDING, or the errors of Object::begin
  // (then the previous request stays armed).
  Status arm(Object& obj, const std::shared_ptr<EventQueue>& eq, uint64_t user_data);
  // The CQ produced a completion: complete the armed request with
  // (KBV_SUCCESS, info) as a KBV_EVENT_COMP_NOTIFY event. false if none.
  bool fire(uint64_t info);
  // Cancel the armed request; false if none.
  bool cancel();
  bool armed() const;

 private:
  mutable std::mutex mu_;
  std::optional<Ticket> t_;
};

// Adapts a driver completion callback (hca::cmd::Done<T>: one Result<T>) to
// the ticket's one event: status (with firmware status and syndrome) from the
// result; object = object_of(value) and info = info_of(value) on success.
// A completion after a cancel is dropped (EventQueue::complete).
template <class T, class ObjectOf, class InfoOf>
std::function<void(Result<T>)> completer(Ticket t, ObjectOf object_of, InfoOf info_of) {
  return [t = std::move(t), object_of, info_of](Result<T> r) {
    if (!r.has_value()) {
      (void)EventQueue::complete(t, r.status(), 0, 0);
      return;
    }
    (void)EventQueue::complete(t, Status{}, object_of(*r), info_of(*r));
  };
}

// submit(eq, user_data) starts the request on the private queue eq and
// returns KBV_PENDING (or KBV_SUCCESS when it finished inline, or an error).
// progress() drives the device; an error from it (e.g. KBV_ERR_TIMEOUT,
// KBV_ERR_DEVICE_REMOVED) cancels the request and is returned. Returns the
// request's event (its status may itself be an error), or the error.
// progress must eventually return an error if the request can never finish.
// An allocation failure while driving the device (progress or the queue's
// poll throwing std::bad_alloc) cancels the request and returns
// KBV_ERR_NO_MEMORY — unless must_finish (a close: it has begun and cannot
// be taken back, kbv.h "Close"), then the wait goes on (what failed is
// retried at the next progress: Hca::step_machine, CmdQueue completions,
// run_destroy).
using SubmitFn = std::function<Status(const std::shared_ptr<EventQueue>& eq, uint64_t user_data)>;
// progress(wake_fd): drive the work once and, when idle, wait until
// something happens or wake_fd (the private queue's eventfd, readable once
// the request's event is in it) becomes readable.
using ProgressFn = std::function<Status(int wake_fd)>;
Result<kbv_event_t> run_sync(const SubmitFn& submit, const ProgressFn& progress,
                             bool must_finish = false);

}  // namespace kbv::verbs
