// SPDX-License-Identifier: BSD-3-Clause
// Request primitives: Object (IRP close semantics), AsyncRequestQueue,
// NotifySlot, run_sync. See request.hpp.
#include "verbs/request.hpp"

#include <new>
#include <thread>

#include "common/abi_guard.hpp"
#include "common/log.hpp"

namespace kbv::verbs {

namespace {
constexpr const char* kLog = "verbs/req";

HandleTable<Object>& object_table() {
  static HandleTable<Object> t(1u << 24);
  return t;
}
}  // namespace

// ---- Object -------------------------------------------------------------------

std::shared_ptr<Object> Object::create(FinalFn on_final) {
  std::shared_ptr<Object> o(new (std::nothrow) Object(std::move(on_final)));
  if (!o) return nullptr;
  uint64_t h = object_table().insert(o);
  if (h == 0) {
    log::warn(kLog, "object handle table full");
    return nullptr;
  }
  o->handle_ = h;
  return o;
}

std::shared_ptr<Object> Object::create_deferred(FinalFn start_final) {
  auto o = create(std::move(start_final));
  if (o) o->deferred_ = true;
  return o;
}

std::shared_ptr<Object> Object::from_handle(uint64_t handle) { return object_table().get(handle); }

bool Object::closing() const {
  std::lock_guard lk(mu_);
  return closing_;
}

uint32_t Object::refs() const {
  std::lock_guard lk(mu_);
  return refs_;
}

Status Object::acquire() {
  std::lock_guard lk(mu_);
  if (closing_) return KBV_ERR_INVALID_HANDLE;
  ++refs_;
  return KBV_SUCCESS;
}

void Object::release() { (void)release_ref(); }

bool Object::release_ref() {
  bool last = false;
  {
    std::lock_guard lk(mu_);
    if (refs_ == 0) {
      log::error(kLog, "object {:#x}: release without a reference", handle_);
      return false;
    }
    last = --refs_ == 0 && closing_;
  }
  if (last) finalize();
  return last;
}

void Object::finalize() {
  if (deferred_) {
    // The handle table keeps the object alive until finish_final().
    if (on_final_) on_final_();
    return;
  }
  if (on_final_) on_final_();
  finish_final();
}

void Object::finish_final() {
  // Keep this object alive while the handle goes away.
  auto self = shared_from_this();
  object_table().remove(handle_);
  std::optional<Ticket> t;
  {
    std::lock_guard lk(mu_);
    t.swap(close_ticket_);
  }
  if (t) (void)EventQueue::complete(*t, KBV_SUCCESS, handle_, 0);
}

Result<Ticket> Object::begin(const std::shared_ptr<EventQueue>& eq, uint64_t user_data,
                             uint32_t type, CancelFn on_cancel) {
  if (!eq) return KBV_ERR_INVALID_ARGUMENT;
  std::lock_guard lk(mu_);
  if (closing_) return KBV_ERR_INVALID_HANDLE;
  auto t = eq->begin(user_data, type, handle_, std::move(on_cancel));
  if (!t) return t;
  bool known = false;
  for (auto it = eqs_.begin(); it != eqs_.end();) {
    auto q = it->lock();
    if (!q) {
      it = eqs_.erase(it);
      continue;
    }
    known |= q == eq;
    ++it;
  }
  if (!known) eqs_.push_back(eq);
  return t;
}

uint32_t Object::cancel_requests() {
  std::vector<std::weak_ptr<EventQueue>> eqs;
  {
    std::lock_guard lk(mu_);
    eqs = eqs_;
  }
  uint32_t n = 0;
  for (auto& w : eqs) {
    if (auto q = w.lock()) n += q->cancel_object(handle_);
  }
  return n;
}

Status Object::close(const std::shared_ptr<EventQueue>& eq, uint64_t user_data) {
  {
    std::lock_guard lk(mu_);
    if (closing_) return KBV_ERR_INVALID_HANDLE;
    if (eq) {
      // object 0: the close request is not one of "the object's requests",
      // so cancel_object() never cancels it; its event names the object.
      auto t = eq->begin(user_data, KBV_EVENT_REQUEST, 0);
      if (!t) return t.status();
      close_ticket_ = *t;
    }
    closing_ = true;
  }
  // docs/NTSTATUS.md: pending notification requests complete CANCELLED
  // first. Best effort under allocation failure: the close has begun and
  // must reach release_ref() (an exception here left the object closing
  // forever and its device unable to close: found by verbs_oom).
  try {
    cancel_requests();
  } catch (...) {
  }
  bool done = release_ref();  // the creator's reference
  if (eq) return KBV_PENDING;
  return done ? KBV_SUCCESS : KBV_PENDING;
}

// ---- AsyncRequestQueue ----------------------------------------------------------

Status AsyncRequestQueue::add(Object& obj, const std::shared_ptr<EventQueue>& eq,
                              uint64_t user_data) {
  std::lock_guard lk(mu_);
  auto t = obj.begin(eq, user_data, type_);
  if (!t) return t.status();
  // Drop tickets cancelled meanwhile so the deque does not grow without bound.
  std::erase_if(q_, [](const Ticket& x) { return !EventQueue::pending(x); });
  q_.push_back(std::move(*t));
  return KBV_PENDING;
}

bool AsyncRequestQueue::fire(Status st, uint64_t info) {
  std::lock_guard lk(mu_);
  while (!q_.empty()) {
    Ticket t = std::move(q_.front());
    q_.pop_front();
    // NOT_FOUND: that request was cancelled on its own; try the next.
    if (EventQueue::complete(t, st, 0, info).is_ok()) return true;
  }
  return false;
}

uint32_t AsyncRequestQueue::cancel_all() {
  std::deque<Ticket> q;
  {
    std::lock_guard lk(mu_);
    q.swap(q_);
  }
  uint32_t n = 0;
  for (auto& t : q) n += EventQueue::cancel(t).is_ok();
  return n;
}

size_t AsyncRequestQueue::queued() const {
  std::lock_guard lk(mu_);
  return q_.size();
}

// ---- NotifySlot -------------------------------------------------------------------

Status NotifySlot::arm(Object& obj, const std::shared_ptr<EventQueue>& eq, uint64_t user_data) {
  std::optional<Ticket> old;
  {
    std::lock_guard lk(mu_);
    auto t = obj.begin(eq, user_data, KBV_EVENT_COMP_NOTIFY);
    if (!t) return t.status();
    old.swap(t_);
    t_ = std::move(*t);
  }
  if (old) (void)EventQueue::cancel(*old);
  return KBV_PENDING;
}

bool NotifySlot::fire(uint64_t info) {
  std::optional<Ticket> t;
  {
    std::lock_guard lk(mu_);
    t.swap(t_);
  }
  return t && EventQueue::complete(*t, KBV_SUCCESS, 0, info).is_ok();
}

bool NotifySlot::cancel() {
  std::optional<Ticket> t;
  {
    std::lock_guard lk(mu_);
    t.swap(t_);
  }
  return t && EventQueue::cancel(*t).is_ok();
}

bool NotifySlot::armed() const {
  std::lock_guard lk(mu_);
  return t_.has_value();
}

// ---- run_sync ---------------------------------------------------------------------

Result<kbv_event_t> run_sync(const SubmitFn& submit, const ProgressFn& progress, bool must_finish) {
  if (!submit || !progress) return KBV_ERR_INVALID_ARGUMENT;
  // One queue per thread, reused: a queue per call cost an eventfd(2), a
  // close(2) and allocations on every synchronous call. A nested call (a
  // synchronous call made while this thread waits in one) gets its own.
  thread_local std::shared_ptr<EventQueue> t_eq;
  thread_local bool t_busy = false;
  std::shared_ptr<EventQueue> eq;
  const bool reuse = !t_busy;
  if (reuse && t_eq) {
    eq = t_eq;
  } else {
    auto r = EventQueue::create(1);
    if (!r) return r.status();
    eq = std::move(*r);
  }
  if (reuse) {
    t_busy = true;
    t_eq = eq;
  }
  // On the way out the queue must be empty with nothing in flight to be
  // reused; otherwise (a cancelled request's late event) it is dropped.
  struct Done {
    bool reuse;
    std::shared_ptr<EventQueue>& eq;
    ~Done() {
      if (!reuse) return;
      t_busy = false;
      kbv_event_t stale;
      try {  // a destructor: nothing may leave it (polling drives devices)
        if (eq->in_flight() != 0 || eq->poll(&stale, 1) != 0) t_eq.reset();
      } catch (...) {
        t_eq.reset();
      }
    }
  } done{reuse, eq};
  constexpr uint64_t kUserData = 1;
  Status st = submit(eq, kUserData);
  if (st.is_ok()) {
    kbv_event_t ev{};
    ev.type = KBV_EVENT_REQUEST;
    ev.user_data = kUserData;
    return ev;
  }
  if (!st.is_pending()) return st.is_error() ? st : Status{KBV_ERR_INTERNAL};
  for (;;) {
    kbv_event_t ev;
    Status p;
    try {
      if (eq->poll(&ev, 1) == 1) return ev;
      p = progress(eq->fd());
    } catch (...) {
      // Allocation failure while driving the device: the request is
      // cancelled like one whose wait failed (its late completion then
      // undoes what it created, kbv.h "Cancellation") — except a close,
      // which has begun: keep driving it (a cancelled close returned
      // KBV_ERR_NO_MEMORY for an object already gone; the retry then met
      // KBV_ERR_INVALID_HANDLE: found by verbs_oom).
      p = abi_exception_status();
      if (must_finish && p == KBV_ERR_NO_MEMORY) {
        std::this_thread::yield();
        continue;
      }
    }
    if (p.is_error()) {
      (void)eq->cancel(kUserData);
      return p;
    }
  }
}

}  // namespace kbv::verbs
