// SPDX-License-Identifier: BSD-3-Clause
// IB_REQUEST completion, queued notification requests, the one-at-a-time
// completion notification slot. See nt_request.hpp.
#include "compat/nt_request.hpp"
#include "common/abi_guard.hpp"

#include <chrono>
#include <new>
#include <thread>
#include <unordered_map>
#include <utility>

namespace kbv::compat {

namespace {

// Requests with a completion target that are pending, by address: a request
// is pending at most once, and kbv_nt_cancel_request finds it here.
struct Registry {
  std::mutex mu;
  std::unordered_map<IB_REQUEST*, std::shared_ptr<NtRequest>> pending;
};
Registry& registry() {
  static Registry r;
  return r;
}

void unregister(IB_REQUEST* req) {
  auto& r = registry();
  std::lock_guard lk(r.mu);
  r.pending.erase(req);
}

}  // namespace

NTSTATUS complete_inline(IB_REQUEST* req, NTSTATUS st, ULONG_PTR info) {
  if (req != nullptr) {
    req->IoStatus.Status = st;
    req->IoStatus.Information = info;
  }
  return st;
}

NTSTATUS NtRequest::begin(IB_REQUEST* req, unsigned arg, bool allow_sync,
                          std::shared_ptr<NtRequest>* out) {
  const NTSTATUS bad = kbv_nt_invalid_parameter_n(arg);
  if (req == nullptr || out == nullptr) return bad;
  const bool sync = req->CompletionRoutine == nullptr && req->Eq == KBV_EQ_NONE;
  if (sync && !allow_sync) return bad;
  std::shared_ptr<NtRequest> r(new (std::nothrow) NtRequest(req, sync));
  if (!r) return STATUS_NO_MEMORY;
  if (sync) {
    req->IoStatus = {STATUS_PENDING, 0};
    *out = std::move(r);
    return STATUS_SUCCESS;
  }
  auto& reg = registry();
  std::lock_guard lk(reg.mu);
  if (reg.pending.count(req) != 0) return bad;
  if (req->CompletionRoutine == nullptr) {
    auto q = verbs::eq_from_handle(req->Eq);
    if (!q) return bad;
    std::weak_ptr<NtRequest> w = r;
    auto t = q->begin(req->UserData, KBV_EVENT_REQUEST, reinterpret_cast<uintptr_t>(req), [w] {
      if (auto s = w.lock()) s->cancelled_by_eq();
    });
    if (!t) {
      return t.status() == KBV_ERR_QUEUE_FULL ? STATUS_INSUFFICIENT_RESOURCES : bad;
    }
    r->ticket_ = *t;
  }
  req->IoStatus = {STATUS_PENDING, 0};
  reg.pending.emplace(req, r);
  *out = std::move(r);
  return STATUS_SUCCESS;
}

bool NtRequest::done() const {
  std::lock_guard lk(mu_);
  return done_;
}

bool NtRequest::complete(NTSTATUS st, ULONG_PTR info) {
  std::optional<verbs::Ticket> t;
  {
    std::lock_guard lk(mu_);
    if (done_) return false;
    done_ = true;
    req_->IoStatus.Status = st;
    req_->IoStatus.Information = info;
    t.swap(ticket_);
    if (sync_) {
      cv_.notify_all();
      return true;
    }
  }
  // From here on the request memory is the client's again: read what the
  // notification needs first.
  PIB_REQUEST_COMPLETION routine = req_->CompletionRoutine;
  VOID* ctx = req_->CompletionContext;
  unregister(req_);
  if (routine != nullptr) {
    routine(req_, ctx);
  } else if (t) {
    (void)verbs::EventQueue::complete(*t, Status{kbv_status_from_ntstatus(st)},
                                      reinterpret_cast<uintptr_t>(req_), info);
  }
  return true;
}

void NtRequest::cancelled_by_eq() {
  {
    std::lock_guard lk(mu_);
    if (done_) return;
    done_ = true;
    ticket_.reset();  // the queue posted the KBV_ERR_CANCELLED event itself
    req_->IoStatus.Status = STATUS_CANCELLED;
    req_->IoStatus.Information = 0;
  }
  unregister(req_);
}

NTSTATUS NtRequest::result(const std::function<void()>& pump) {
  if (!sync_) return STATUS_PENDING;
  if (pump) {
    while (!done()) {
      pump();
      if (!done()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  } else {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [this] { return done_; });
  }
  return req_->IoStatus.Status;
}

NTSTATUS NtRequest::cancel(IB_REQUEST* req) {
  if (req == nullptr) return STATUS_INVALID_PARAMETER_1;
  std::shared_ptr<NtRequest> r;
  {
    auto& reg = registry();
    std::lock_guard lk(reg.mu);
    auto it = reg.pending.find(req);
    if (it == reg.pending.end()) return STATUS_NOT_FOUND;
    r = it->second;
  }
  return r->complete(STATUS_CANCELLED, 0) ? STATUS_SUCCESS : STATUS_NOT_FOUND;
}

// ---- NtEventQueue ---------------------------------------------------------------

NTSTATUS NtEventQueue::add(IB_REQUEST* req, unsigned arg) {
  std::unique_lock lk(mu_);
  if (!backlog_.empty()) {
    if (req == nullptr) return kbv_nt_invalid_parameter_n(arg);
    ULONG_PTR info = backlog_.front();
    backlog_.pop_front();
    lk.unlock();
    return complete_inline(req, STATUS_SUCCESS, info);
  }
  std::shared_ptr<NtRequest> r;
  NTSTATUS st = NtRequest::begin(req, arg, false, &r);
  if (st != STATUS_SUCCESS) return st;
  q_.push_back(std::move(r));
  return STATUS_PENDING;
}

bool NtEventQueue::fire(NTSTATUS st, ULONG_PTR info) {
  for (;;) {
    std::shared_ptr<NtRequest> r;
    {
      std::lock_guard lk(mu_);
      if (q_.empty()) {
        if (backlog_max_ == 0) return false;
        if (backlog_.size() >= backlog_max_) backlog_.pop_front();
        backlog_.push_back(info);
        return false;
      }
      r = std::move(q_.front());
      q_.pop_front();
    }
    // A request cancelled while queued is skipped: one event, one request.
    if (r->complete(st, info)) return true;
  }
}

uint32_t NtEventQueue::complete_all(NTSTATUS st) {
  std::deque<std::shared_ptr<NtRequest>> q;
  {
    std::lock_guard lk(mu_);
    q.swap(q_);
    backlog_.clear();
  }
  uint32_t n = 0;
  for (auto& r : q) n += r->complete(st, 0) ? 1 : 0;
  return n;
}

size_t NtEventQueue::waiting() const {
  std::lock_guard lk(mu_);
  size_t n = 0;
  for (auto& r : q_) n += r->done() ? 0 : 1;
  return n;
}

size_t NtEventQueue::backlog() const {
  std::lock_guard lk(mu_);
  return backlog_.size();
}

// ---- NtNotifySlot -----------------------------------------------------------------

NTSTATUS NtNotifySlot::arm(IB_REQUEST* req, unsigned arg) {
  std::shared_ptr<NtRequest> old;
  {
    std::unique_lock lk(mu_);
    if (seen_) {
      if (req == nullptr) return kbv_nt_invalid_parameter_n(arg);
      seen_ = false;
      lk.unlock();
      return complete_inline(req, STATUS_SUCCESS, 0);
    }
    std::shared_ptr<NtRequest> r;
    NTSTATUS st = NtRequest::begin(req, arg, false, &r);
    if (st != STATUS_SUCCESS) return st;
    old = std::exchange(armed_, std::move(r));
  }
  if (old) (void)old->complete(STATUS_CANCELLED, 0);
  return STATUS_PENDING;
}

bool NtNotifySlot::fire() {
  std::shared_ptr<NtRequest> r;
  {
    std::lock_guard lk(mu_);
    r = std::move(armed_);
    armed_.reset();
    if (!r || r->done()) {
      seen_ = true;
      return false;
    }
  }
  if (r->complete(STATUS_SUCCESS, 0)) return true;
  std::lock_guard lk(mu_);
  seen_ = true;
  return false;
}

bool NtNotifySlot::complete(NTSTATUS st) {
  std::shared_ptr<NtRequest> r;
  {
    std::lock_guard lk(mu_);
    seen_ = false;
    r = std::move(armed_);
    armed_.reset();
  }
  return r && r->complete(st, 0);
}

bool NtNotifySlot::armed() const {
  std::lock_guard lk(mu_);
  return armed_ && !armed_->done();
}

}  // namespace kbv::compat

extern "C" {

VOID kbv_nt_init_request(IB_REQUEST* pRequest, kbv_eq_t Eq, UINT64 UserData,
                         PIB_REQUEST_COMPLETION CompletionRoutine, VOID* CompletionContext) {
  if (pRequest == nullptr) return;
  *pRequest = IB_REQUEST{};
  pRequest->IoStatus.Status = STATUS_PENDING;
  pRequest->Eq = Eq;
  pRequest->UserData = UserData;
  pRequest->CompletionRoutine = CompletionRoutine;
  pRequest->CompletionContext = CompletionContext;
}

NTSTATUS kbv_nt_cancel_request(IB_REQUEST* pRequest) try {
  return kbv::compat::NtRequest::cancel(pRequest);
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

}  // extern "C"
