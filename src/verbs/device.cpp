// SPDX-License-Identifier: BSD-3-Clause
// Devices: URI parsing, open (platform + driver bring-up), progress, async
// event dispatch, teardown; kbv_get_device_list / kbv_device_open / close /
// progress / progress thread / fd (kbv.h "Devices", "Progress").
#include <kbv/kbv.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <thread>

#include "common/abi_guard.hpp"
#include "common/log.hpp"
#include "hca/cmd/vport.hpp"
#include "hca/prm/eqe.hpp"
#include "hca/prm/vport.hpp"
#include "platform/pci.hpp"
#include "platform/sys.hpp"
#include "platform/transport.hpp"
#include "verbs/objects.hpp"

namespace kbv::verbs {

namespace {
constexpr const char* kLog = "verbs/dev";
uint32_t port_state_of(uint8_t sub_type) {
  switch (static_cast<prm::PortChangeSubtype>(sub_type)) {
    case prm::PortChangeSubtype::DOWN: return KBV_PORT_DOWN;
    case prm::PortChangeSubtype::ACTIVE: return KBV_PORT_ACTIVE;
    case prm::PortChangeSubtype::INITIALIZED: return KBV_PORT_INIT;
    default: return KBV_PORT_NOP;
  }
}
}  // namespace

DeviceImpl::~DeviceImpl() {
  if (progress_thread.joinable()) {
    stop_thread = true;
    kick_progress();
    if (progress_thread.get_id() == std::this_thread::get_id())
      progress_thread.detach();
    else
      progress_thread.join();
  }
  // Normally finish_teardown() released everything; a device never brought
  // up (or abandoned at exit) goes down in member order here.
  hca.reset();
  io.reset();
  pdev.reset();
}

Status DeviceImpl::check_usable() const {
  if (failed.load(std::memory_order_acquire))
    return Status{static_cast<kbv_status_t>(failure.load(std::memory_order_relaxed))};
  if (!ready()) return KBV_ERR_DEVICE_NOT_READY;
  return KBV_SUCCESS;
}

uint32_t DeviceImpl::progress() {
  std::unique_lock lk(mu, std::try_to_lock);
  if (!lk.owns_lock()) return 0;
  return progress_locked();
}

Status DeviceImpl::progress_wait(int wake_fd) {
  int irq = -1;
  uint32_t work;
  bool init_wait = false;
  {
    std::lock_guard lk(mu);
    if (hca && !finished) {
      // The async EQ's MSI-X eventfd (command completions, page requests,
      // events). Consumed before driving the device: an interrupt raised
      // after this read (the EQ is re-armed whenever it is drained, hca/eq.hpp)
      // keeps it readable for the wait below.
      if (auto r = hca->async_eventfd(); r && *r >= 0) {
        irq = *r;
        uint64_t count;
        (void)::read(irq, &count, sizeof count);
      }
    }
    work = progress_locked();
    init_wait = hca && !finished && hca->waiting_for_init();
  }
  if (work != 0) return KBV_SUCCESS;
  if (init_wait) {
    // The firmware is still initializing (init segment `initializing`;
    // up to about a second after a function reset, which vfio-pci does at
    // every open): look again in 2 ms, as rdma-core's mlx5_vfio
    // wait_fw_init (FW_INIT_WAIT_MS) and the kernel's (FW_PRE_INIT_WAIT)
    // do, instead of spinning for all of it.
    pollfd fd{wake_fd, POLLIN, 0};
    (void)::poll(&fd, wake_fd >= 0 ? 1 : 0, hca::Hca::kInitPollMs);
    return KBV_SUCCESS;
  }
  if (irq < 0) {
    // Before the async EQ exists (bring-up: commands complete by ownership
    // polling) or without interrupts: give the CPU away, do not sleep.
    std::this_thread::yield();
    return KBV_SUCCESS;
  }
  // Idle: wait for the device's interrupt or the caller's wake-up (another
  // thread may have driven the device and completed the request). The
  // bound only lets command deadlines and the health check run when
  // nothing at all happens.
  pollfd fds[2] = {{irq, POLLIN, 0}, {wake_fd, POLLIN, 0}};
  (void)::poll(fds, wake_fd >= 0 ? 2 : 1, kIdleWaitBoundMs);
  return KBV_SUCCESS;
}

uint32_t DeviceImpl::progress_locked() {
  if (finished || !hca) return 0;
  uint32_t work = hca->poll();
  if (destroy_retry) work += retry_destroys(*this);
  if (open_ticket && hca->bringup_done()) {
    Ticket t = std::move(*open_ticket);
    open_ticket.reset();
    Status st = hca->bringup_status();
    ++work;
    if (st.is_ok()) {
      created(shared_from_this(), t, 0);
      query_initial_port_state();
    } else {
      log::warn(kLog, "{}: bring-up failed: {}", uri, st.to_string());
      create_failed(shared_from_this(), &t, st);
    }
  }
  if (teardown_requested && !teardown_started) {
    open_ticket.reset();
    (void)hca->start_teardown();  // a throw before its Teardown exists: again next pass
    teardown_started = true;
    ++work;
  }
  if (teardown_started && hca->teardown_done()) {
    finish_teardown();
    ++work;
  }
  return work;
}

void DeviceImpl::finish_teardown() {
  if (!hca->teardown_status().is_ok())
    log::warn(kLog, "{}: teardown: {}", uri, hca->teardown_status().to_string());
  finished = true;
  if (progress_thread.joinable()) {
    stop_thread = true;
    kick_progress();
    // The thread only try-locks mu, so joining with mu held is safe.
    if (progress_thread.get_id() == std::this_thread::get_id())
      progress_thread.detach();
    else
      progress_thread.join();
  }
  hca.reset();
  io.reset();
  pdev.reset();
  backing.reset();
  auto self = std::static_pointer_cast<DeviceImpl>(
      shared_from_this());  // alive through the registry removal
  devices_remove(this);
  finish_close(*this);
}

// Port state events report changes from the state last reported, which
// starts DOWN at open. A link that came up before the driver's async EQ
// existed raised no port-change EQE (the model's link training is 5 ms
// after INIT_HCA, and bring-up on a loaded host can take longer; a lab's
// link is often up before the driver loads): the vport state queried once
// bring-up is done reports it. An EQE and the query that see the same
// change report it once. Port 1: an mlx5 function has one port.
void DeviceImpl::report_port_state(uint8_t port, uint32_t state) {
  if (state == KBV_PORT_NOP || state == port_reported) return;
  port_reported = state;
  post_async(event_eq, KBV_EVENT_PORT_STATE, KBV_SUCCESS, handle(),
             uint64_t{port} | uint64_t{state} << 32);
}

void DeviceImpl::query_initial_port_state() {
  std::weak_ptr<DeviceImpl> w = std::static_pointer_cast<DeviceImpl>(shared_from_this());
  const Status s = hca::cmd::query_vport_state(
      hca->cmdq(), prm::vport_state_op_mod::kVnicVport, {}, [w](Result<hca::cmd::VportState> r) {
        auto d = w.lock();
        if (!d || !r) return;  // closing, or the query failed: the EQEs still report
        if (r->state == prm::vport_state::kUp) d->report_port_state(1, KBV_PORT_ACTIVE);
      });
  if (s.is_error()) log::warn(kLog, "{}: port state query: {}", uri, s.to_string());
}

void DeviceImpl::on_hca_event(const hca::HcaEvent& e) {
  using prm::EventType;
  if (e.kind == hca::HcaEvent::Kind::kFatal) {
    failure.store(e.status.code(), std::memory_order_relaxed);
    set_failed(true);
    log::error(kLog, "{}: device failed: {}", uri, e.status.to_string());
    post_async(event_eq, KBV_EVENT_DEVICE_FATAL, e.status, handle(), 0);
    return;
  }
  switch (static_cast<EventType>(e.type)) {
    case EventType::PORT_CHANGE:
      report_port_state(static_cast<uint8_t>(e.port & 0xff), port_state_of(e.sub_type));
      return;
    case EventType::CQ_ERROR: {
      auto it = cqs.find(e.cqn);
      auto cq = it == cqs.end() ? nullptr : it->second.lock();
      if (!cq) break;
      kbv_status_t code = e.cq_syndrome == static_cast<uint8_t>(prm::CqErrSyndrome::CQ_OVERRUN)
                              ? KBV_ERR_OVERFLOW
                              : KBV_ERR_LOCAL_ACCESS;
      post_async(cq->event_eq, KBV_EVENT_CQ_ERROR, Status{code, 0, e.cq_syndrome}, cq->handle(),
                 e.cqn);
      return;
    }
    case EventType::WQ_CATAS_ERROR:
    case EventType::WQ_INVAL_REQ_ERROR:
    case EventType::WQ_ACCESS_ERROR: {
      auto it = qps.find(e.qp_srq_n);
      auto qp = it == qps.end() ? nullptr : it->second.lock();
      if (!qp) break;
      const bool access = static_cast<EventType>(e.type) == EventType::WQ_ACCESS_ERROR;
      post_async(qp->event_eq, access ? KBV_EVENT_QP_ACCESS_ERROR : KBV_EVENT_QP_FATAL,
                 access ? KBV_ERR_LOCAL_ACCESS : KBV_ERR_LOCAL_QP_OPERATION, qp->handle(),
                 e.qp_srq_n);
      qp->set_qp_state(KBV_QPS_ERR);
      return;
    }
    case EventType::SRQ_RQ_LIMIT: {
      auto it = srqs.find(e.qp_srq_n);
      auto srq = it == srqs.end() ? nullptr : it->second.lock();
      if (!srq) break;
      post_async(srq->event_eq, KBV_EVENT_SRQ_LIMIT, KBV_SUCCESS, srq->handle(), e.qp_srq_n);
      return;
    }
    default: break;
  }
  log::debug(kLog, "{}: event type {:#x} (queue {:#x}) not delivered", uri, e.type,
             e.qp_srq_n ? e.qp_srq_n : e.cqn);
}

void DeviceImpl::set_failed(bool f) {
  failed.store(f, std::memory_order_release);
  // Every QP's fast-path gate (objects.hpp gate): a QP not in the map yet
  // checks the flag itself when it becomes ready (Base::set_state, also
  // under mu).
  for (auto& [qpn, w] : qps) {
    if (auto qp = w.lock()) {
      if (f)
        qp->gate_set(gate::kDevFailed);
      else
        qp->gate_clear(gate::kDevFailed);
    }
  }
}

void DeviceImpl::on_comp(uint32_t cqn) {
  auto it = cqs.find(cqn);
  auto cq = it == cqs.end() ? nullptr : it->second.lock();
  if (!cq || !cq->cq) return;
  cq->cq->on_event();
  (void)cq->notify.fire(cqn);
}

Status DeviceImpl::start_progress_thread() {
  std::lock_guard lk(mu);
  if (progress_thread.joinable()) return KBV_ERR_ALREADY_EXISTS;
  if (finished) return KBV_ERR_INVALID_HANDLE;
  stop_thread = false;
  // The thread holds the device: a teardown it finishes itself (it then
  // detaches) must not free the device under its feet.
  auto self = std::static_pointer_cast<DeviceImpl>(shared_from_this());
  progress_thread = std::thread([self] {
    // Busy pace for kBusyWindow after the last work or kick, then back off.
    constexpr std::chrono::microseconds kBusy{50}, kIdleMax{1000}, kBusyWindow{2000};
    std::chrono::microseconds idle = kBusy, quiet{0};
    while (!self->stop_thread.load(std::memory_order_acquire)) {
      if (self->progress() != 0) {
        idle = kBusy;
        quiet = {};
        continue;
      }
      const std::chrono::microseconds wait = quiet < kBusyWindow ? kBusy : idle;
      if (self->pace_wait(wait)) {
        idle = kBusy;
        quiet = {};
        continue;
      }
      quiet += wait;
      if (quiet >= kBusyWindow) idle = std::min(idle * 2, kIdleMax);
    }
  });
  return KBV_SUCCESS;
}

bool DeviceImpl::pace_wait(std::chrono::microseconds d) {
  std::unique_lock lk(pace_mu);
  const bool woken = pace_cv.wait_for(
      lk, d, [this] { return pace_kick || stop_thread.load(std::memory_order_acquire); });
  pace_kick = false;
  return woken;
}

void DeviceImpl::kick_progress() {
  {
    std::lock_guard lk(pace_mu);
    pace_kick = true;
  }
  pace_cv.notify_one();
}

Status DeviceImpl::stop_progress_thread() {
  std::thread t;
  {
    std::lock_guard lk(mu);
    if (!progress_thread.joinable()) return KBV_ERR_NOT_FOUND;
    if (progress_thread.get_id() == std::this_thread::get_id()) return KBV_ERR_INVALID_STATE;
    stop_thread = true;
    t = std::move(progress_thread);
  }
  kick_progress();
  t.join();
  return KBV_SUCCESS;
}

}  // namespace kbv::verbs

using kbv::Status;
using kbv::verbs::DeviceImpl;
using kbv::verbs::Kind;

namespace {

std::shared_ptr<DeviceImpl> device_of(kbv_device_t h) {
  return kbv::verbs::lookup_as<DeviceImpl>(h, Kind::kDevice);
}

void fill_desc(kbv_device_desc_t& d, std::string_view uri, uint16_t vendor, uint16_t device,
               bool sim, int numa) {
  std::memset(&d, 0, sizeof d);
  std::memcpy(d.uri, uri.data(), std::min(uri.size(), sizeof d.uri - 1));
  d.vendor_id = vendor;
  d.device_id = device;
  d.is_sim = sim ? 1 : 0;
  d.numa_node = numa;
}

}  // namespace

extern "C" {

kbv_status_t kbv_get_device_list(kbv_device_desc_t* list, uint32_t max, uint32_t* count) try {
  if (!count || (!list && max > 0)) return KBV_ERR_INVALID_ARGUMENT;
  // Every transport's devices, hardware first (platform/transport.hpp).
  std::vector<kbv_device_desc_t> all;
  std::vector<kbv::platform::TransportDevice> found;
  for (const kbv::platform::Transport* t : kbv::platform::all_transports()) {
    const size_t before = found.size();
    t->list(found, !found.empty());
    for (size_t i = before; i < found.size(); ++i) {
      const auto& f = found[i];
      fill_desc(all.emplace_back(), f.uri, f.vendor_id, f.device_id, t->is_model, f.numa_node);
    }
  }
  *count = static_cast<uint32_t>(all.size());
  for (uint32_t i = 0; i < max && i < all.size(); ++i) list[i] = all[i];
  return KBV_SUCCESS;
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_device_open(const char* uri, const kbv_device_open_attr_t* attr, kbv_eq_t eq,
                             uint64_t user_data, kbv_device_t* out) try {
  if (!uri || !out) return KBV_ERR_INVALID_ARGUMENT;
  *out = 0;
  kbv_device_open_attr_t a{};
  if (attr) a = *attr;
  if (a.flags & ~KBV_OPEN_PROGRESS_THREAD) return KBV_ERR_INVALID_ARGUMENT;
  std::string_view u(uri);
  if (u.size() >= KBV_URI_MAX) return KBV_ERR_INVALID_ARGUMENT;
  auto evq = kbv::verbs::event_queue_for(a.event_eq, eq);
  if (!evq) return evq.status().code();
  if (eq != KBV_EQ_NONE && !kbv::verbs::eq_from_handle(eq)) return KBV_ERR_INVALID_HANDLE;
  if (kbv::verbs::is_guid_uri(u)) {
    // Resolved to the device's own URI, then opened by it (device_guid.cpp).
    std::shared_ptr<void> hold;
    auto r = kbv::verbs::resolve_guid_uri(u, a.timeout_ns, &hold);
    if (!r) return r.status().code();
    return kbv_device_open(r->c_str(), &a, eq, user_data, out);
  }

  auto d = std::make_shared<DeviceImpl>();
  d->uri = std::string(u);
  d->event_eq = *evq;
  // "<scheme>:<address>": the scheme's transport reaches the function.
  const size_t colon = u.find(':');
  if (colon == std::string_view::npos) return KBV_ERR_INVALID_ARGUMENT;
  auto transport = kbv::platform::find_transport(u.substr(0, colon));
  if (!transport) return transport.status().code();
  auto target = (*transport)->open(u.substr(colon + 1));
  if (!target) return target.status().code();
  d->backing = std::move(target->backing);
  kbv::platform::DeviceOptions dopts;
  dopts.backend = target->backend;            // the scheme's kernel interface (iommufd:, uio:)
  dopts.open_backend = target->open_backend;  // dpdk: brings its own
  auto h = kbv::platform::DeviceHandle::open(*target->sys, target->bdf, dopts);
  if (!h) return h.status().code();
  d->pdev = std::move(*h);
  d->io = std::make_unique<kbv::hca::PlatformDeviceIo>(*d->pdev);
  kbv::hca::HcaConfig cfg = kbv::verbs::hca_config();
  if (a.timeout_ns) cfg.init_timeout_ns = a.timeout_ns;
  d->hca = std::make_unique<kbv::hca::Hca>(*d->io, cfg);
  DeviceImpl* raw = d.get();
  d->hca->set_event_handler([raw](const kbv::hca::HcaEvent& e) { raw->on_hca_event(e); });
  d->hca->set_comp_handler([raw](uint32_t cqn) { raw->on_comp(cqn); });
  Status st = d->hca->start();
  if (st.is_error()) return st.code();
  auto obj = kbv::verbs::register_object(d);
  if (!obj) return KBV_ERR_NO_RESOURCES;
  try {
    kbv::verbs::devices_add(d);
  } catch (...) {  // allocation failure: undone below like a failed open
    st = kbv::abi_exception_status();
  }
  if (!st.is_error()) {
    *out = obj->handle();
    try {
      st = kbv::verbs::submit_control(*d, obj.get(), eq, user_data,
                                      [&](const kbv::verbs::Ticket& t) {
                                        d->open_ticket = t;
                                        return Status{KBV_PENDING};
                                      });
    } catch (...) {
      // Only what precedes the submission throws out of submit_control
      // (registry.cpp): the open was never submitted; undone below (before,
      // the handle stayed in *out and the device open: found by verbs_oom).
      st = kbv::abi_exception_status();
    }
  }
  if (st.is_error()) {
    // Synchronous failure (the event, if any, already says so): the
    // device is closed internally.
    {
      std::lock_guard lk(d->mu);
      if (d->state.load() == kbv::verbs::State::kCreating) kbv::verbs::create_failed(d);
    }
    // Drive the teardown of the failed device to its end (bounded by the
    // driver's command timeouts).
    while (!d->finished) (void)d->progress_wait(-1);
    *out = KBV_HANDLE_NONE;
    return st.code();
  }
  if (a.flags & KBV_OPEN_PROGRESS_THREAD) (void)d->start_progress_thread();
  return st.code();
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_device_close(kbv_device_t dev, kbv_eq_t eq, uint64_t user_data) try {
  auto d = device_of(dev);
  if (!d) return KBV_ERR_INVALID_HANDLE;
  return kbv::verbs::close_object(d, eq, user_data).code();
} catch (...) {
  return kbv::abi_exception_status();
}

int kbv_device_progress(kbv_device_t dev) try {
  auto d = device_of(dev);
  if (!d) return KBV_ERR_INVALID_HANDLE;
  return static_cast<int>(d->progress());
} catch (...) {
  return kbv::abi_exception_status();  // negative, as the other errors
}

kbv_status_t kbv_device_start_progress_thread(kbv_device_t dev) try {
  auto d = device_of(dev);
  if (!d) return KBV_ERR_INVALID_HANDLE;
  return d->start_progress_thread().code();
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_device_stop_progress_thread(kbv_device_t dev) try {
  auto d = device_of(dev);
  if (!d) return KBV_ERR_INVALID_HANDLE;
  return d->stop_progress_thread().code();
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_device_get_fd(kbv_device_t dev, int* fd) try {
  auto d = device_of(dev);
  if (!d) return KBV_ERR_INVALID_HANDLE;
  if (!fd) return KBV_ERR_INVALID_ARGUMENT;
  std::lock_guard lk(d->mu);
  if (!d->ready() || !d->hca) return KBV_ERR_DEVICE_NOT_READY;
  auto r = d->hca->async_eventfd();
  if (!r) return r.status().code();
  if (*r < 0) return KBV_ERR_NOT_SUPPORTED;
  *fd = *r;
  return KBV_SUCCESS;
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_device_get_stats(kbv_device_t dev, kbv_device_stats_t* out) try {
  auto d = device_of(dev);
  if (!d) return KBV_ERR_INVALID_HANDLE;
  if (!out) return KBV_ERR_INVALID_ARGUMENT;
  std::memset(out, 0, sizeof *out);
  std::lock_guard lk(d->mu);
  if (!d->hca || d->finished) return KBV_ERR_DEVICE_NOT_READY;
  if (d->hca->bringup_done() || d->ready()) {
    auto c = d->hca->cmdq().stats();
    out->cmds_in_flight = c.in_flight;
    out->cmds_in_flight_max = c.max_in_flight;
    out->cmds_queued = c.queued;
    out->cmds_submitted = c.submitted;
    out->cmds_completed = c.completed;
    out->cmds_failed = c.failed;
    out->cmds_timed_out = c.timed_out;
  }
  const auto& s = d->hca->stats();
  out->eqes = s.eqes;
  out->async_events = s.async_events;
  out->comp_events = s.comp_events;
  out->page_requests = s.page_requests;
  return KBV_SUCCESS;
} catch (...) {
  return kbv::abi_exception_status();
}

}  // extern "C"
