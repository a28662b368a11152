// SPDX-License-Identifier: BSD-3-Clause
//
// The IB_REQUEST machinery of the NT verbs interface (kbv/compat/ib_verbs.h):
// the IRP rules of docs/NTSTATUS.md ("IRP semantics to reproduce", from
// docs/NTSTATUS.md sources 000/001) on kbv event queues and completion callbacks.
//
//   NtRequest      one request in flight: completes exactly once (complete
//                  or cancel, first wins), writing IoStatus before the
//                  completion callback runs or the event is posted; a
//                  request without a completion target is waited for.
//   NtEventQueue   several queued notification requests for one kind of
//                  event (GetCaFatalEvent, GetCaPortEvent, GetCqAsyncEvent,
//                  GetQpAsyncEvent): one completes per event, FIFO; an event
//                  that finds no request waits in a bounded backlog and the
//                  next request completes inline with it (the RFC's
//                  STATUS_SUCCESS "experienced an event" return); close
//                  cancels them all.
//   NtNotifySlot   one completion-notification request at a time
//                  (GetCqCompEvent): a new one cancels the previous one.
//
// Threading: every member is thread-safe. Completion callbacks run on the
// thread that completes the request, outside every lock of this file.
#pragma once

#include <kbv/compat/ib_verbs.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "verbs/event_queue.hpp"

namespace kbv::compat {

class NtRequest : public std::enable_shared_from_this<NtRequest> {
 public:
  // Begin a request passed as argument number `arg` (for
  // STATUS_INVALID_PARAMETER_n). allow_sync: a request without completion
  // target is run synchronously (else it is refused). A request with Eq set
  // reserves its event on that queue now. Errors (nothing begun):
  // STATUS_INVALID_PARAMETER_arg (NULL, already pending, no target where one
  // is needed, Eq not an event queue, UserData already in flight on Eq),
  // STATUS_INSUFFICIENT_RESOURCES (Eq has no room for the completion).
  static NTSTATUS begin(IB_REQUEST* req, unsigned arg, bool allow_sync,
                        std::shared_ptr<NtRequest>* out);

  // Complete once: IoStatus = {st, info}, then the callback runs, the event
  // is posted or the synchronous caller wakes. false when the request was
  // already completed (e.g. cancelled): nothing happens.
  bool complete(NTSTATUS st, ULONG_PTR info);

  // What the submitting call returns: STATUS_PENDING for a request with a
  // completion target; for a synchronous one, waits until it completed and
  // returns its status. pump (may be empty) is called in a loop instead of
  // sleeping, for callers on the thread that would complete it.
  NTSTATUS result(const std::function<void()>& pump);

  bool sync() const { return sync_; }
  bool done() const;

  // kbv_nt_cancel_request: complete a pending request with STATUS_CANCELLED.
  static NTSTATUS cancel(IB_REQUEST* req);

 private:
  explicit NtRequest(IB_REQUEST* req, bool sync) : req_(req), sync_(sync) {}
  void cancelled_by_eq();  // kbv_eq_cancel(Eq, UserData) reached the request

  IB_REQUEST* const req_;
  const bool sync_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::optional<verbs::Ticket> ticket_;
};

// Complete a request inline (the call returns st): IoStatus = {st, info};
// no callback, no event. req may be NULL. Returns st.
NTSTATUS complete_inline(IB_REQUEST* req, NTSTATUS st, ULONG_PTR info = 0);

class NtEventQueue {
 public:
  explicit NtEventQueue(size_t backlog_max = 16) : backlog_max_(backlog_max) {}

  // A notification request: when an event waits in the backlog, complete
  // req inline with (STATUS_SUCCESS, the event) and return STATUS_SUCCESS;
  // else begin it (NtRequest::begin, no synchronous form) and queue it:
  // STATUS_PENDING, or begin's error.
  NTSTATUS add(IB_REQUEST* req, unsigned arg);
  // An event: complete the oldest waiting request with (st, info); when none
  // waits, keep info in the backlog (the oldest is dropped when full).
  // Returns true when a request was completed.
  bool fire(NTSTATUS st, ULONG_PTR info);
  // Complete every waiting request with st (STATUS_CANCELLED at close,
  // STATUS_FILE_FORCED_CLOSED after a device fatal); drops the backlog.
  // Returns how many completed.
  uint32_t complete_all(NTSTATUS st);
  size_t waiting() const;
  size_t backlog() const;

 private:
  const size_t backlog_max_;
  mutable std::mutex mu_;
  std::deque<std::shared_ptr<NtRequest>> q_;
  std::deque<ULONG_PTR> backlog_;
};

class NtNotifySlot {
 public:
  // When a completion event was seen with no request armed, complete req
  // inline (STATUS_SUCCESS) and return STATUS_SUCCESS. Else begin req (no
  // synchronous form), make it the armed one, complete the previous one with
  // STATUS_CANCELLED and return STATUS_PENDING (or begin's error: then the
  // previous one stays armed).
  NTSTATUS arm(IB_REQUEST* req, unsigned arg);
  // A completion event: complete the armed request (STATUS_SUCCESS); with
  // none armed, remember the event. Returns true when a request completed.
  bool fire();
  // Complete the armed request with st; forget a remembered event.
  bool complete(NTSTATUS st);
  bool armed() const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<NtRequest> armed_;
  bool seen_ = false;
};

}  // namespace kbv::compat
