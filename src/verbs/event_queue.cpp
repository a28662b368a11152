// SPDX-License-Identifier: BSD-3-Clause
// kbv::verbs::EventQueue and the kbv_eq_* C API (include/kbv/eq.h).
#include "verbs/event_queue.hpp"
#include "common/abi_guard.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <new>

#include "common/log.hpp"

namespace kbv::verbs {

namespace {
constexpr const char* kLog = "verbs/eq";

std::atomic<void (*)()> g_global_progress{nullptr};

bool is_request_type(uint32_t type) {
  return type >= KBV_EVENT_REQUEST && type <= KBV_EVENT_DEVICE_FATAL;
}
}  // namespace

Result<std::shared_ptr<EventQueue>> EventQueue::create(uint32_t depth) {
  if (depth == 0 || depth > KBV_EQ_MAX_DEPTH) return KBV_ERR_INVALID_ARGUMENT;
  // eventfd(2): non-blocking so draining it never sleeps.
  int efd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (efd < 0) {
    int err = errno;
    log::error(kLog, "eventfd failed: errno {}", err);
    return Status::from_errno(err);
  }
  std::shared_ptr<EventQueue> eq(new (std::nothrow) EventQueue(depth, efd));
  if (!eq) {
    ::close(efd);
    return KBV_ERR_NO_MEMORY;
  }
  return eq;
}

EventQueue::EventQueue(uint32_t depth, int efd) : depth_(depth), efd_(efd), ring_(depth) {}

EventQueue::~EventQueue() {
  shutdown();
  ::close(efd_);
}

void EventQueue::signal_locked() {
  if (signaled_) return;
  uint64_t one = 1;
  // A non-blocking eventfd write fails only when the counter would overflow,
  // which cannot happen: we write at most once per drain.
  if (::write(efd_, &one, sizeof one) == sizeof one) signaled_ = true;
}

void EventQueue::push_locked(const kbv_event_t& ev, uint64_t seq) {
  uint32_t n = count_.load(std::memory_order_relaxed);
  Slot& s = ring_[(head_ + n) % depth_];
  s.ev = ev;
  s.seq = seq;
  count_.store(n + 1, std::memory_order_release);
  signal_locked();
}

Status EventQueue::post(const kbv_event_t& ev) {
  std::lock_guard lk(mu_);
  if (dead_) return KBV_ERR_INVALID_HANDLE;
  if (count_.load(std::memory_order_relaxed) + reserved_ >= depth_) {
    ++lost_pending_;
    lost_total_.fetch_add(1, std::memory_order_relaxed);
    signal_locked();
    return KBV_ERR_OVERFLOW;
  }
  push_locked(ev, 0);
  return KBV_SUCCESS;
}

Result<Ticket> EventQueue::begin(uint64_t user_data, uint32_t type, uint64_t object,
                                 CancelFn on_cancel) {
  if (!is_request_type(type)) return KBV_ERR_INVALID_ARGUMENT;
  std::lock_guard lk(mu_);
  if (dead_) return KBV_ERR_INVALID_HANDLE;
  if (requests_.count(user_data)) return KBV_ERR_ALREADY_EXISTS;
  if (count_.load(std::memory_order_relaxed) + reserved_ >= depth_) return KBV_ERR_QUEUE_FULL;
  uint64_t seq = next_seq_++;
  requests_.emplace(user_data, Entry{seq, object, type, ReqState::kPending, std::move(on_cancel)});
  ++reserved_;
  return Ticket{weak_from_this(), user_data, seq};
}

Status EventQueue::complete(const Ticket& t, Status st, uint64_t object, uint64_t info) {
  auto eq = t.eq.lock();
  if (!eq) return KBV_ERR_NOT_FOUND;
  std::lock_guard lk(eq->mu_);
  auto it = eq->requests_.find(t.user_data);
  if (it == eq->requests_.end() || it->second.seq != t.seq ||
      it->second.state != ReqState::kPending) {
    return KBV_ERR_NOT_FOUND;
  }
  kbv_event_t ev{};
  ev.type = it->second.type;
  ev.status = st.code();
  ev.user_data = t.user_data;
  ev.object = object ? object : it->second.object;
  ev.info = info;
  ev.fw_status = st.fw_status();
  ev.syndrome = st.syndrome();
  it->second.state = ReqState::kDone;
  it->second.on_cancel = nullptr;
  --eq->reserved_;  // the reserved room becomes the event
  eq->push_locked(ev, t.seq);
  return KBV_SUCCESS;
}

kbv_event_t EventQueue::cancelled_event(uint64_t user_data, const Entry& e) const {
  kbv_event_t ev{};
  ev.type = e.type;
  ev.status = KBV_ERR_CANCELLED;
  ev.user_data = user_data;
  ev.object = e.object;
  return ev;
}

Status EventQueue::cancel_match(uint64_t user_data, uint64_t seq) {
  CancelFn hook;
  {
    std::lock_guard lk(mu_);
    auto it = requests_.find(user_data);
    if (it == requests_.end() || (seq != 0 && it->second.seq != seq)) return KBV_ERR_NOT_FOUND;
    if (it->second.state == ReqState::kDone) return KBV_ERR_INVALID_STATE;
    it->second.state = ReqState::kDone;
    hook = std::move(it->second.on_cancel);
    --reserved_;
    push_locked(cancelled_event(user_data, it->second), it->second.seq);
  }
  if (hook) hook();
  return KBV_SUCCESS;
}

Status EventQueue::cancel(uint64_t user_data) { return cancel_match(user_data, 0); }

Status EventQueue::cancel(const Ticket& t) {
  auto eq = t.eq.lock();
  if (!eq) return KBV_ERR_NOT_FOUND;
  return eq->cancel_match(t.user_data, t.seq);
}

bool EventQueue::pending(const Ticket& t) {
  auto eq = t.eq.lock();
  if (!eq) return false;
  std::lock_guard lk(eq->mu_);
  auto it = eq->requests_.find(t.user_data);
  return it != eq->requests_.end() && it->second.seq == t.seq &&
         it->second.state == ReqState::kPending;
}

Status EventQueue::abandon(const Ticket& t) {
  auto eq = t.eq.lock();
  if (!eq) return KBV_ERR_NOT_FOUND;
  std::lock_guard lk(eq->mu_);
  auto it = eq->requests_.find(t.user_data);
  if (it == eq->requests_.end() || it->second.seq != t.seq ||
      it->second.state != ReqState::kPending) {
    return KBV_ERR_NOT_FOUND;
  }
  eq->requests_.erase(it);
  --eq->reserved_;
  return KBV_SUCCESS;
}

void EventQueue::set_global_progress(void (*fn)()) {
  g_global_progress.store(fn, std::memory_order_release);
}

uint32_t EventQueue::cancel_object(uint64_t object) {
  std::vector<CancelFn> hooks;
  uint32_t n = 0;
  {
    std::lock_guard lk(mu_);
    for (auto& [ud, e] : requests_) {
      if (e.object != object || e.state != ReqState::kPending) continue;
      e.state = ReqState::kDone;
      if (e.on_cancel) hooks.push_back(std::move(e.on_cancel));
      --reserved_;
      push_locked(cancelled_event(ud, e), e.seq);
      ++n;
    }
  }
  for (auto& h : hooks) h();
  return n;
}

uint32_t EventQueue::in_flight() const {
  std::lock_guard lk(mu_);
  uint32_t n = 0;
  for (const auto& [ud, e] : requests_) n += e.state == ReqState::kPending;
  return n;
}

uint32_t EventQueue::poll(kbv_event_t* out, uint32_t n) {
  if (auto g = g_global_progress.load(std::memory_order_acquire)) g();
  if (progress_) progress_();
  if (n == 0) return 0;
  std::lock_guard lk(mu_);
  if (dead_) return 0;
  uint32_t got = 0;
  while (got < n && count_.load(std::memory_order_relaxed) > 0) {
    const Slot& s = ring_[head_];
    out[got++] = s.ev;
    if (s.seq != 0) {
      // The request's event is out: its user_data may be reused.
      auto it = requests_.find(s.ev.user_data);
      if (it != requests_.end() && it->second.seq == s.seq) requests_.erase(it);
    }
    head_ = (head_ + 1) % depth_;
    count_.fetch_sub(1, std::memory_order_release);
  }
  if (got < n && lost_pending_ > 0) {
    kbv_event_t ev{};
    ev.type = KBV_EVENT_OVERFLOW;
    ev.status = KBV_ERR_OVERFLOW;
    ev.info = lost_pending_;
    out[got++] = ev;
    lost_pending_ = 0;
  }
  if (count_.load(std::memory_order_relaxed) == 0 && lost_pending_ == 0 && signaled_) {
    // Empty: make the fd unreadable. Producers hold mu_ to post, so nothing
    // can slip in between this drain and clearing the flag.
    uint64_t v;
    if (::read(efd_, &v, sizeof v) == sizeof v || errno == EAGAIN) signaled_ = false;
  }
  return got;
}

void EventQueue::shutdown() {
  std::vector<CancelFn> hooks;
  {
    std::lock_guard lk(mu_);
    if (dead_) return;
    dead_ = true;
    for (auto& [ud, e] : requests_) {
      if (e.state == ReqState::kPending && e.on_cancel) hooks.push_back(std::move(e.on_cancel));
    }
    requests_.clear();
    reserved_ = 0;
    count_.store(0, std::memory_order_release);
    lost_pending_ = 0;
  }
  for (auto& h : hooks) h();
}

// ---- C API --------------------------------------------------------------------

namespace {
HandleTable<EventQueue>& eq_table() {
  static HandleTable<EventQueue> t(1u << 20);
  return t;
}
}  // namespace

std::shared_ptr<EventQueue> eq_from_handle(kbv_eq_t h) { return eq_table().get(h); }
kbv_eq_t eq_register(std::shared_ptr<EventQueue> eq) { return eq_table().insert(std::move(eq)); }

}  // namespace kbv::verbs

using kbv::verbs::EventQueue;

extern "C" {

kbv_status_t kbv_eq_create(uint32_t depth, kbv_eq_t* out) try {
  if (!out) return KBV_ERR_INVALID_ARGUMENT;
  auto eq = EventQueue::create(depth);
  if (!eq) return eq.status().code();
  kbv_eq_t h = kbv::verbs::eq_register(std::move(*eq));
  if (h == 0) return KBV_ERR_NO_RESOURCES;
  *out = h;
  return KBV_SUCCESS;
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_eq_destroy(kbv_eq_t h) try {
  auto eq = kbv::verbs::eq_table().remove(h);
  if (!eq) return KBV_ERR_INVALID_HANDLE;
  eq->shutdown();
  return KBV_SUCCESS;
} catch (...) {
  return kbv::abi_exception_status();
}

int kbv_eq_poll(kbv_eq_t h, kbv_event_t* events, uint32_t n) try {
  if (!events && n > 0) {
    return kbv::verbs::eq_from_handle(h) ? KBV_ERR_INVALID_ARGUMENT : KBV_ERR_INVALID_HANDLE;
  }
  auto eq = kbv::verbs::eq_from_handle(h);
  if (!eq) return KBV_ERR_INVALID_HANDLE;
  if (n > KBV_EQ_MAX_DEPTH + 1) n = KBV_EQ_MAX_DEPTH + 1;  // keeps the count in int range
  return static_cast<int>(eq->poll(events, n));
} catch (...) {
  return kbv::abi_exception_status();  // negative, as the other errors
}

kbv_status_t kbv_eq_get_fd(kbv_eq_t h, int* fd) try {
  auto eq = kbv::verbs::eq_from_handle(h);
  if (!eq) return KBV_ERR_INVALID_HANDLE;
  if (!fd) return KBV_ERR_INVALID_ARGUMENT;
  *fd = eq->fd();
  return KBV_SUCCESS;
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_eq_cancel(kbv_eq_t h, uint64_t user_data) try {
  auto eq = kbv::verbs::eq_from_handle(h);
  if (!eq) return KBV_ERR_INVALID_HANDLE;
  return eq->cancel(user_data).code();
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_eq_cancel_object(kbv_eq_t h, uint64_t object, uint32_t* cancelled) try {
  auto eq = kbv::verbs::eq_from_handle(h);
  if (!eq) return KBV_ERR_INVALID_HANDLE;
  uint32_t n = eq->cancel_object(object);
  if (cancelled) *cancelled = n;
  return n ? KBV_SUCCESS : KBV_ERR_NOT_FOUND;
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_eq_get_lost(kbv_eq_t h, uint64_t* out) try {
  auto eq = kbv::verbs::eq_from_handle(h);
  if (!eq) return KBV_ERR_INVALID_HANDLE;
  if (!out) return KBV_ERR_INVALID_ARGUMENT;
  *out = eq->lost_total();
  return KBV_SUCCESS;
} catch (...) {
  return kbv::abi_exception_status();
}

}  // extern "C"
