// SPDX-License-Identifier: BSD-3-Clause
#include "hca/hca.hpp"

#include <new>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "common/log.hpp"
#include "hca/bringup.hpp"
#include "hca/prm/eqe.hpp"
#include "hca/prm/init_seg.hpp"

namespace kbv::hca {

using prm::eqe;
using prm::EventType;

namespace {
constexpr const char* kLog = "hca";
}

Hca::Hca(DeviceIo& io, HcaConfig cfg) : io_(io), cfg_(cfg), health_(io.bar0(), cfg.health) {}

Hca::~Hca() {
  if (cmdq_ && !teardown_done()) {
    if (failure_.is_ok() && (enabled_ || initialized_))
      log::warn(kLog, "destroyed without a finished teardown; disabling the device first");
    // Bus mastering off before the queue, EQ and page memory is freed, so
    // the device can no longer write into it.
    io_.disable_device();
  }
  // Callbacks still queued in the command queue refer to the state machines:
  // drop them first (they are never run from destructors).
  bringup_.reset();
  teardown_.reset();
}

Status Hca::start() {
  if (cmdq_) return Status{KBV_ERR_INVALID_STATE};
  // A function whose firmware died in an earlier life (health syndrome set,
  // rfr "reset firmware required": health.c) is reset before bring-up, as
  // the kernel recovers a device after a fatal error: the reopen after a
  // KBV_EVENT_DEVICE_FATAL is then a fresh bring-up.
  if (Status h = HealthMonitor(io_.bar0(), cfg_.health).check_now(io_.now_ns());
      h.code() == KBV_ERR_DEVICE_FATAL) {
    log::warn(kLog, "firmware reports a fatal error from before ({}): function reset",
              h.to_string());
    // Keep the evidence (kbv_device_prior_health): the reset clears it.
    HealthSnapshot snap;
    for (uint32_t i = 0; i < snap.buffer.size(); ++i)
      snap.buffer[i] = io_.bar0().read32_be(prm::init_seg::kHealthOff + 4 * i);
    snap.fw_rev = io_.bar0().read32_be(prm::init_seg::kFwRevOff);
    snap.counter = io_.bar0().read32_be(prm::init_seg::kHealthCounterOff);
    prior_health_ = snap;
    if (Status r = io_.reset_function(); !r.is_ok()) return h;
  }
  // docs/PRM.md step 1: memory space + bus master (and the MSI-X vectors the EQs use).
  const uint32_t vectors =
      std::max(cfg_.async_vector, cfg_.create_comp_eq ? cfg_.comp_vector : 0u) + 1;
  Status en = io_.enable_device(vectors);
  if (!en) return en;
  auto q = CmdQueue::create(io_, cfg_.cmdq);
  if (!q) return q.status();
  cmdq_ = std::move(*q);
  pages_ = std::make_unique<PageManager>(io_, *cmdq_, cfg_.function_id);
  bringup_ = std::make_unique<Bringup>(*this, io_.now_ns());
  bringup_->step();
  return Status{KBV_PENDING};
}

bool Hca::bringup_done() const { return bringup_ && bringup_->done(); }

bool Hca::waiting_for_init() const {
  return bringup_ && bringup_->state() == Bringup::State::kWaitInit;
}

uint64_t Hca::init_wait_ns() const { return bringup_ ? bringup_->init_wait_ns() : 0; }

Status Hca::bringup_status() const {
  if (!bringup_) return Status{KBV_ERR_INVALID_STATE};
  return bringup_->status();
}

template <class Machine>
void Hca::step_machine(Machine& m) {
  // A step that fails for memory (building its command) submitted nothing
  // and left its state as it was: the next poll takes it again. Thrown out
  // of poll() it reached the caller of whatever drove the device — a
  // device close then reported KBV_ERR_NO_MEMORY with its teardown begun
  // and no one left to finish it (found by verbs_oom).
  try {
    m.step();
  } catch (const std::bad_alloc&) {
    log::debug(kLog, "no memory for a bring-up/teardown step; retried at the next poll");
  }
}

Status Hca::start_teardown() {
  if (!cmdq_) return Status{KBV_ERR_INVALID_STATE};
  if (teardown_) return Status{KBV_PENDING};
  if (bringup_ && !bringup_->done()) bringup_->abort(Status{KBV_ERR_CANCELLED});
  teardown_ = std::make_unique<Teardown>(*this);
  if (!bringup_ || !bringup_->waiting()) step_machine(*teardown_);
  return Status{KBV_PENDING};
}

bool Hca::teardown_done() const { return teardown_ && teardown_->done(); }

Status Hca::teardown_status() const {
  if (!teardown_) return Status{KBV_ERR_INVALID_STATE};
  if (!teardown_->done()) return Status{KBV_PENDING};
  return teardown_->status();
}

Status Hca::poll_until(const std::function<bool()>& done, uint64_t timeout_ns) {
  if (!done) return Status{KBV_ERR_INVALID_ARGUMENT};
  const uint64_t deadline = io_.now_ns() + timeout_ns;
  for (;;) {
    if (done()) return Status::ok();
    if (failure_.is_error()) return failure_;
    if (io_.now_ns() >= deadline) return Status{KBV_ERR_TIMEOUT};
    poll();
    if (waiting_for_init()) std::this_thread::sleep_for(std::chrono::milliseconds(kInitPollMs));
  }
}

Status Hca::open_sync(uint64_t timeout_ns) {
  Status s = start();
  if (!s.is_pending()) return s;
  s = poll_until([this] { return bringup_done(); }, timeout_ns);
  if (!bringup_done()) return s;
  return bringup_status();
}

Status Hca::close_sync(uint64_t timeout_ns) {
  Status s = start_teardown();
  if (!s.is_pending()) return s;
  // A dead device still finishes its teardown (without commands).
  const uint64_t deadline = io_.now_ns() + timeout_ns;
  while (!teardown_done()) {
    if (io_.now_ns() >= deadline) return Status{KBV_ERR_TIMEOUT};
    poll();
  }
  return teardown_status();
}

Result<int> Hca::async_eventfd() const {
  if (!async_eq_) return Status{KBV_ERR_INVALID_STATE};
  return async_eq_->eventfd();
}

Result<int> Hca::comp_eventfd() const {
  if (!comp_eq_) return Status{KBV_ERR_INVALID_STATE};
  return comp_eq_->eventfd();
}

void Hca::on_device_failure(Status s) {
  if (failure_.is_error()) return;
  failure_ = s;
  log::error(kLog, "device failure: {}", s.to_string());
  if (cmdq_) cmdq_->fail_all(s);
  if (bringup_ && !bringup_->done()) bringup_->abort(s);
  HcaEvent ev;
  ev.kind = HcaEvent::Kind::kFatal;
  ev.type = prm::to_u8(EventType::INTERNAL_ERROR);
  ev.status = s;
  if (on_event_) on_event_(ev);
}

void Hca::dispatch_async(prm::CRef<eqe> e) {
  const uint8_t type = static_cast<uint8_t>(e.get(eqe::type));
  switch (prm::event_data(type)) {
    case prm::EventData::kCmd:
      ++stats_.cmd_eqes;
      if (cmdq_) cmdq_->on_cmd_eqe(static_cast<uint32_t>(e.at(eqe::cmd).get(prm::eqe_cmd::vector)));
      return;
    case prm::EventData::kPageRequest: {
      ++stats_.page_requests;
      auto r = e.at(eqe::req_pages);
      const int32_t n =
          static_cast<int32_t>(static_cast<uint32_t>(r.get(prm::eqe_page_req::num_pages)));
      if (pages_)
        pages_->on_page_request(static_cast<uint16_t>(r.get(prm::eqe_page_req::function_id)), n);
      return;
    }
    case prm::EventData::kComp: dispatch_comp(e); return;
    default: break;
  }
  HcaEvent ev;
  ev.type = type;
  ev.sub_type = static_cast<uint8_t>(e.get(eqe::sub_type));
  std::span<const std::byte> d = e.bytes(eqe::data);
  std::memcpy(ev.data.data(), d.data(), ev.data.size());
  switch (prm::event_data(type)) {
    case prm::EventData::kPortState:
      ev.port = static_cast<uint32_t>(e.at(eqe::port).get(prm::eqe_port_state::port_num));
      log::info(kLog, "port {} change, sub type {}", ev.port, ev.sub_type);
      break;
    case prm::EventData::kCqError:
      ev.cqn = static_cast<uint32_t>(e.at(eqe::cq_err).get(prm::eqe_cq_err::cqn));
      ev.cq_syndrome = static_cast<uint8_t>(e.at(eqe::cq_err).get(prm::eqe_cq_err::syndrome));
      log::warn(kLog, "CQ {:#x} error, syndrome {:#x}", ev.cqn, ev.cq_syndrome);
      break;
    case prm::EventData::kQpSrq:
      ev.qp_srq_n = static_cast<uint32_t>(e.at(eqe::qp_srq).get(prm::eqe_qp_srq::qp_srq_n));
      ev.qp_srq_type = static_cast<uint8_t>(e.at(eqe::qp_srq).get(prm::eqe_qp_srq::type));
      break;
    default:
      if (static_cast<EventType>(type) == EventType::INTERNAL_ERROR)
        log::error(kLog, "internal error event; checking device health");
      else
        log::debug(kLog, "event type {:#x} sub type {:#x}", type, ev.sub_type);
      break;
  }
  ++stats_.async_events;
  if (on_event_) on_event_(ev);
  if (static_cast<EventType>(type) == EventType::INTERNAL_ERROR) {
    Status h = health_.check_now(io_.now_ns());
    if (h.is_error()) on_device_failure(h);
  }
}

void Hca::dispatch_comp(prm::CRef<eqe> e) {
  const uint8_t type = static_cast<uint8_t>(e.get(eqe::type));
  if (type != prm::to_u8(EventType::COMP)) {
    // The completion EQ only subscribes to completions; anything else is
    // handled like an async event.
    dispatch_async(e);
    return;
  }
  ++stats_.comp_events;
  if (on_comp_) on_comp_(static_cast<uint32_t>(e.at(eqe::comp).get(prm::eqe_comp::cqn)));
}

uint32_t Hca::poll() {
  if (!cmdq_) return 0;
  retired_eqs_.clear();  // outside any EQ's poll loop
  uint32_t work = 0;
  const uint64_t now = io_.now_ns();
  if (failure_.is_ok()) {
    Status h = health_.check(now);
    if (h.is_error()) {
      on_device_failure(h);
      ++work;
    }
  }
  if (async_eq_ && async_eq_->bound()) {
    const uint32_t n = async_eq_->poll([this](prm::CRef<eqe> e) { dispatch_async(e); });
    stats_.eqes += n;
    work += n;
  }
  if (comp_eq_ && comp_eq_->bound()) {
    const uint32_t n = comp_eq_->poll([this](prm::CRef<eqe> e) { dispatch_comp(e); });
    stats_.eqes += n;
    work += n;
  }
  work += cmdq_->poll();
  // A command timed out: the device may be gone; look now rather than at
  // the next health interval.
  const uint64_t to = cmdq_->timed_out();
  if (to != timeouts_seen_) {
    timeouts_seen_ = to;
    if (failure_.is_ok()) {
      Status h = health_.check_now(now);
      if (h.is_error()) on_device_failure(h);
    }
  }
  if (teardown_ && !teardown_->done()) {
    // Never overtake a command the abandoned bring-up still has in flight.
    if (!bringup_ || !bringup_->waiting()) step_machine(*teardown_);
    ++work;
  } else if (bringup_ && !bringup_->done()) {
    step_machine(*bringup_);
    ++work;
  }
  return work;
}

}  // namespace kbv::hca
