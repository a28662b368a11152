// SPDX-License-Identifier: BSD-3-Clause
// Handle registry, close protocol and control-request plumbing (objects.hpp).
#include <kbv/kbv.h>

#include <mutex>
#include <unordered_map>

#include "common/abi_guard.hpp"
#include "common/log.hpp"
#include "verbs/fast_table.hpp"
#include "verbs/objects.hpp"

namespace kbv::verbs {

constinit Immortal<FastTable<Base>> g_fast_handles;

namespace {
constexpr const char* kLog = "verbs";

struct Registry {
  std::mutex mu;
  std::unordered_map<uint64_t, std::shared_ptr<Base>> by_handle;
  std::mutex dev_mu;
  std::vector<std::shared_ptr<DeviceImpl>> devices;
  std::mutex cfg_mu;
  hca::HcaConfig cfg;
};

Registry& reg() {
  static Registry* r = new Registry();  // never destroyed: used until exit
  return *r;
}

bool is_fast_kind(Kind k) {
  return k == Kind::kCq || k == Kind::kQp || k == Kind::kSrq || k == Kind::kAh;
}

// Last reference gone after close: destroy what the driver holds, then
// finish. Runs on the releasing thread.
void start_final(Base* impl) {
  std::shared_ptr<DeviceImpl> dev =
      impl->kind == Kind::kDevice ? nullptr : impl->dev;  // keep the device alive
  if (impl->kind == Kind::kDevice) {
    auto* d = static_cast<DeviceImpl*>(impl);
    std::lock_guard lk(d->mu);
    d->teardown_requested = true;  // progress_locked() tears down outside Hca::poll
    return;
  }
  std::lock_guard lk(dev->mu);
  // Still being created: the create callback sees it closing and destroys it.
  if (impl->state.load() == State::kCreating) return;
  run_destroy(*impl);
}

// The object's close began: it no longer counts as an open child.
void mark_closing(Base& b) {
  if (b.close_marked.exchange(true)) return;
  for (auto& p : b.parents) p->open_children.fetch_sub(1, std::memory_order_acq_rel);
}

void global_progress() {
  std::vector<std::shared_ptr<DeviceImpl>> devs;
  try {
    devs = devices_snapshot();
  } catch (...) {
    return;  // no memory for the list: the next poll drives the devices
  }
  for (auto& d : devs) (void)d->progress();
}

}  // namespace

std::shared_ptr<Object> register_object(const std::shared_ptr<Base>& impl) {
  EventQueue::set_global_progress(&global_progress);
  Base* raw = impl.get();
  auto obj = Object::create_deferred([raw] { start_final(raw); });
  if (!obj) return nullptr;
  Registry& r = reg();
  try {
    std::lock_guard lk(r.mu);
    r.by_handle[obj->handle()] = impl;
  } catch (...) {
    obj->finish_final();  // the handle goes again; nothing else refers to it
    throw;
  }
  impl->obj = obj;
  if (is_fast_kind(impl->kind) && !fast_handles().put(obj->handle(), raw)) {
    log::error(kLog, "fast handle table: no room for {:#x}", obj->handle());
  }
  return obj;
}

std::shared_ptr<Base> lookup(uint64_t h, Kind kind) {
  Registry& r = reg();
  std::shared_ptr<Base> b;
  {
    std::lock_guard lk(r.mu);
    auto it = r.by_handle.find(h);
    if (it == r.by_handle.end()) return nullptr;
    b = it->second;
  }
  if (b->kind != kind || !b->obj || b->obj->closing()) return nullptr;
  return b;
}

Base* fast_lookup(uint64_t h) { return fast_handles().get(h); }

void Base::set_state(State s) {
  state.store(s, std::memory_order_release);
  if (s != State::kReady) {
    gate_set(gate::kNotReady);
    return;
  }
  // A QP becomes ready in its create callback, with the device lock held,
  // as DeviceImpl::set_failed runs: it cannot miss the device's failure.
  if (kind == Kind::kQp && dev && dev->failed.load(std::memory_order_acquire))
    gate_set(gate::kDevFailed);
  gate_clear(gate::kNotReady);
}

Status close_object(const std::shared_ptr<Base>& impl, kbv_eq_t eq, uint64_t user_data) {
  DeviceImpl* dev =
      impl->kind == Kind::kDevice ? static_cast<DeviceImpl*>(impl.get()) : impl->dev.get();
  if (eq != KBV_EQ_NONE) {
    auto q = eq_from_handle(eq);
    if (!q) return KBV_ERR_INVALID_HANDLE;
    fast_handles().erase(impl->handle());
    if (impl->obj->closing()) return KBV_ERR_INVALID_HANDLE;
    mark_closing(*impl);  // before close(): a final close frees the parents list
    return impl->obj->close(q, user_data);
  }
  fast_handles().erase(impl->handle());
  if (impl->open_children.load(std::memory_order_acquire) > 0) {
    // Children still hold it: finishes (with no event) when they close.
    if (impl->obj->closing()) return KBV_ERR_INVALID_HANDLE;
    mark_closing(*impl);
    Status s = impl->obj->close(nullptr, 0);
    return s.is_error() ? s : Status{KBV_PENDING};
  }
  // Children already closing finish by themselves: wait for them too.
  auto ev = run_sync(
      [&](const std::shared_ptr<EventQueue>& q, uint64_t ud) -> Status {
        if (impl->obj->closing()) return KBV_ERR_INVALID_HANDLE;
        mark_closing(*impl);
        return impl->obj->close(q, ud);
      },
      [dev](int wake_fd) { return dev->progress_wait(wake_fd); }, /*must_finish=*/true);
  if (!ev) return ev.status();
  return Status{static_cast<kbv_status_t>(ev->status)};
}

void close_internal(const std::shared_ptr<Base>& impl) {
  fast_handles().erase(impl->handle());
  mark_closing(*impl);
  (void)impl->obj->close(nullptr, 0);
}

void finish_close(Base& impl) {
  Registry& r = reg();
  std::shared_ptr<Base> keep;
  {
    std::lock_guard lk(r.mu);
    auto it = r.by_handle.find(impl.handle());
    if (it != r.by_handle.end()) {
      keep = std::move(it->second);
      r.by_handle.erase(it);
    }
  }
  impl.set_state(State::kDead);
  impl.obj->finish_final();
  auto parents = std::move(impl.parents);
  impl.parents.clear();
  for (auto& p : parents) p->obj->release();
}

void run_destroy(Base& impl) {
  if (impl.final_taken) return;
  impl.final_taken = true;
  if (!impl.destroy) {
    finish_close(impl);
    return;
  }
  // Moved out: a destroy that finishes at once frees impl (finish_close).
  auto fn = std::move(impl.destroy);
  impl.destroy = nullptr;
  Status s;
  try {
    s = fn();
  } catch (const std::bad_alloc&) {
    s = KBV_ERR_NO_MEMORY;
  }
  if ((s != KBV_ERR_NO_MEMORY && s != KBV_ERR_BUSY) || !impl.dev) return;
  // Nothing was done: again at the device's next progress (no allocation).
  impl.destroy = std::move(fn);
  impl.final_taken = false;
  impl.destroy_retry_next = impl.dev->destroy_retry;
  impl.dev->destroy_retry = &impl;
}

uint32_t retry_destroys(DeviceImpl& dev) {
  Base* b = std::exchange(dev.destroy_retry, nullptr);
  uint32_t n = 0;
  while (b) {
    Base* next = std::exchange(b->destroy_retry_next, nullptr);
    run_destroy(*b);  // may queue it again
    b = next;
    ++n;
  }
  return n;
}

void created(const std::shared_ptr<Base>& impl, const Ticket& t, uint64_t info) {
  impl->set_state(State::kReady);
  Status done = EventQueue::complete(t, KBV_SUCCESS, impl->handle(), info);
  if (impl->obj->closing()) {
    if (impl->obj->refs() == 0) run_destroy(*impl);
    return;
  }
  if (!done.is_ok()) {
    // The create request was cancelled (or its queue destroyed): the object
    // is not the application's; destroy it (kbv.h "Cancellation").
    close_internal(impl);
  }
}

void create_failed(const std::shared_ptr<Base>& impl, const Ticket* t, Status st) {
  impl->set_state(State::kDead);
  impl->destroy = nullptr;
  if (t) (void)EventQueue::complete(*t, st, impl->handle(), 0);
  if (impl->obj->closing()) {
    if (impl->obj->refs() == 0) run_destroy(*impl);
    return;
  }
  close_internal(impl);
}

Status create_object(const std::shared_ptr<Base>& impl,
                     const std::vector<std::shared_ptr<Base>>& parents, kbv_eq_t eq,
                     uint64_t user_data, uint64_t* out, const StartFn& start) {
  *out = 0;
  if (eq != KBV_EQ_NONE && !eq_from_handle(eq)) return KBV_ERR_INVALID_HANDLE;
  for (size_t i = 0; i < parents.size(); ++i) {
    if (!parents[i]->obj->acquire().is_ok()) {
      for (size_t j = 0; j < i; ++j) parents[j]->obj->release();
      return KBV_ERR_INVALID_HANDLE;
    }
  }
  std::shared_ptr<Object> obj;
  kbv_status_t fail = KBV_ERR_NO_RESOURCES;
  try {
    impl->parents = parents;
    obj = register_object(impl);
  } catch (...) {  // allocation failure: nothing registered (abi_guard.hpp)
    fail = abi_exception_status();
    obj.reset();
  }
  if (!obj) {
    for (auto& p : parents) p->obj->release();
    impl->parents.clear();
    return fail;
  }
  for (auto& p : parents) p->open_children.fetch_add(1, std::memory_order_acq_rel);
  *out = obj->handle();
  Status st;
  try {
    st = submit_control(*impl->dev, obj.get(), eq, user_data, start);
  } catch (...) {
    // Only what precedes a submission throws out of submit_control (its
    // start and its wait catch their own): the create was never submitted.
    st = abi_exception_status();
  }
  if (st.is_error()) {
    std::lock_guard lk(impl->dev->mu);
    // Submission failed (no callback will come) or the synchronous create
    // failed (the callback already closed it).
    if (impl->state.load() == State::kCreating) create_failed(impl);
    *out = 0;
  }
  return st;
}

namespace {
// kbv_last_fw_error: the last synchronous control call of this thread.
thread_local uint8_t t_fw_status = 0;
thread_local uint32_t t_syndrome = 0;
}  // namespace

void set_last_fw_error(Status st) {
  t_fw_status = st.fw_status();
  t_syndrome = st.syndrome();
}

Status submit_control(DeviceImpl& dev, Object* about, kbv_eq_t eq, uint64_t user_data,
                      const StartFn& start) {
  auto run = [&](const std::shared_ptr<EventQueue>& q, uint64_t ud) -> Status {
    Result<Ticket> t = [&]() -> Result<Ticket> {
      try {
        return about ? about->begin(q, ud, KBV_EVENT_REQUEST) : q->begin(ud, KBV_EVENT_REQUEST, 0);
      } catch (...) {  // nothing begun (abi_guard.hpp)
        return Status{abi_exception_status()};
      }
    }();
    if (!t) return t.status();
    Status s;
    {
      std::lock_guard lk(dev.mu);
      // An exception from start() (allocation failure while building the
      // command) means nothing was submitted: no callback will come, the
      // request is abandoned like any other submission error.
      try {
        s = start(*t);
      } catch (...) {
        s = abi_exception_status();
      }
    }
    if (s.is_error()) {
      (void)EventQueue::abandon(*t);
      return s;
    }
    return KBV_PENDING;
  };
  if (eq != KBV_EQ_NONE) {
    auto q = eq_from_handle(eq);
    if (!q) return KBV_ERR_INVALID_HANDLE;
    const Status s = run(q, user_data);
    dev.kick_progress();  // the progress thread (if any) completes it: no back-off
    return s;
  }
  set_last_fw_error({});
  auto ev = run_sync(run, [&dev](int wake_fd) { return dev.progress_wait(wake_fd); });
  if (!ev) {
    set_last_fw_error(ev.status());
    return ev.status();
  }
  Status st{static_cast<kbv_status_t>(ev->status), ev->fw_status, ev->syndrome};
  set_last_fw_error(st);
  return st;
}

Result<std::weak_ptr<EventQueue>> event_queue_for(kbv_eq_t event_eq, kbv_eq_t eq) {
  kbv_eq_t h = event_eq != KBV_EQ_NONE ? event_eq : eq;
  if (h == KBV_EQ_NONE) return std::weak_ptr<EventQueue>{};
  auto q = eq_from_handle(h);
  if (!q) return KBV_ERR_INVALID_HANDLE;
  return std::weak_ptr<EventQueue>(q);
}

void post_async(const std::weak_ptr<EventQueue>& q, uint32_t type, Status st, uint64_t object,
                uint64_t info) {
  auto eq = q.lock();
  if (!eq) {
    log::debug(kLog, "async event {} for {:#x} dropped: no event queue", type, object);
    return;
  }
  kbv_event_t ev{};
  ev.type = type;
  ev.status = st.code();
  ev.object = object;
  ev.info = info;
  ev.fw_status = st.fw_status();
  ev.syndrome = st.syndrome();
  (void)eq->post(ev);
}

void devices_add(const std::shared_ptr<DeviceImpl>& d) {
  Registry& r = reg();
  std::lock_guard lk(r.dev_mu);
  r.devices.push_back(d);
}

void devices_remove(const DeviceImpl* d) {
  Registry& r = reg();
  std::lock_guard lk(r.dev_mu);
  std::erase_if(r.devices, [d](const auto& x) { return x.get() == d; });
}

std::vector<std::shared_ptr<DeviceImpl>> devices_snapshot() {
  Registry& r = reg();
  std::lock_guard lk(r.dev_mu);
  return r.devices;
}

void set_hca_config(const hca::HcaConfig& cfg) {
  Registry& r = reg();
  std::lock_guard lk(r.cfg_mu);
  r.cfg = cfg;
}

hca::HcaConfig hca_config() {
  Registry& r = reg();
  std::lock_guard lk(r.cfg_mu);
  return r.cfg;
}

}  // namespace kbv::verbs

extern "C" {

uint32_t kbv_api_version(void) { return KBV_API_VERSION; }

void kbv_last_fw_error(uint8_t* fw_status, uint32_t* syndrome) {
  if (fw_status) *fw_status = kbv::verbs::t_fw_status;
  if (syndrome) *syndrome = kbv::verbs::t_syndrome;
}

kbv_status_t kbv_cancel_object(uint64_t object, uint32_t* cancelled) try {
  auto o = kbv::verbs::Object::from_handle(object);
  if (!o) return KBV_ERR_INVALID_HANDLE;
  uint32_t n = o->cancel_requests();
  if (cancelled) *cancelled = n;
  return n ? KBV_SUCCESS : KBV_ERR_NOT_FOUND;
} catch (...) {
  return kbv::abi_exception_status();
}

}  // extern "C"
