// SPDX-License-Identifier: BSD-3-Clause
#include "hca/bringup.hpp"

#include "common/log.hpp"
#include "hca/cmd/boot.hpp"
#include "hca/cmd/caps.hpp"
#include "hca/cmd/eq.hpp"
#include "hca/cmd/uar.hpp"
#include "hca/cmd/vport.hpp"
#include "hca/hca.hpp"
#include "hca/io/reg.hpp"
#include "hca/prm/boot.hpp"
#include "hca/prm/hca_cap.hpp"
#include "hca/prm/init_seg.hpp"

namespace kbv::hca {

using prm::EventType;

namespace {
constexpr const char* kLog = "bringup";
// cmd_hca_cap.port_type (mlx5_ifc.h MLX5_CAP_PORT_TYPE_IB 0 / _ETH 1).
constexpr uint32_t kPortTypeEthernet = 1;

// Events of the async EQ: commands, pages, device and queue events (the
// kernel's async EQ mask, mlx5 eq.c gather_async_events_mask, minus the
// capability-dependent ones).
cmd::CreateEqAttr& async_events(cmd::CreateEqAttr& a) {
  for (EventType t :
       {EventType::CMD, EventType::PAGE_REQUEST, EventType::PORT_CHANGE, EventType::CQ_ERROR,
        EventType::INTERNAL_ERROR, EventType::PATH_MIG, EventType::COMM_EST, EventType::SQ_DRAINED,
        EventType::WQ_CATAS_ERROR, EventType::PATH_MIG_FAILED, EventType::WQ_INVAL_REQ_ERROR,
        EventType::WQ_ACCESS_ERROR, EventType::SRQ_CATAS_ERROR, EventType::SRQ_LAST_WQE,
        EventType::SRQ_RQ_LIMIT})
    a.event(t);
  return a;
}
}  // namespace

std::string_view Bringup::state_name(State s) {
  switch (s) {
    case State::kWaitInit: return "wait-init";
    case State::kEnableHca: return "ENABLE_HCA";
    case State::kQueryIssi: return "QUERY_ISSI";
    case State::kSetIssi: return "SET_ISSI";
    case State::kBootPages: return "boot pages";
    case State::kHostEndianness: return "host endianness";
    case State::kQueryCurCaps: return "QUERY_HCA_CAP cur";
    case State::kQueryMaxCaps: return "QUERY_HCA_CAP max";
    case State::kSetCaps: return "SET_HCA_CAP";
    case State::kQueryCaps: return "QUERY_HCA_CAP";
    case State::kQueryRoceCaps: return "QUERY_HCA_CAP roce";
    case State::kInitPages: return "init pages";
    case State::kInitHca: return "INIT_HCA";
    case State::kEnableRoce: return "MODIFY_NIC_VPORT_CONTEXT roce_en";
    case State::kAllocUar: return "ALLOC_UAR";
    case State::kCreateAsyncEq: return "CREATE_EQ async";
    case State::kCreateCompEq: return "CREATE_EQ comp";
    case State::kDone: return "done";
    case State::kFailed: return "failed";
  }
  return "?";
}

Bringup::Bringup(Hca& hca, uint64_t now_ns)
    : h_(hca), start_ns_(now_ns), init_deadline_ns_(now_ns + hca.cfg_.init_timeout_ns) {}

void Bringup::fail(Status s) {
  if (done()) return;
  if (!s.is_error()) s = Status{KBV_ERR_INTERNAL};
  log::error(kLog, "bring-up failed at {}: {}", state_name(state_), s.to_string());
  status_ = s;
  state_ = State::kFailed;
  // waiting_ stays set until the outstanding command's callback arrives, so
  // a teardown never overtakes a command bring-up still has in flight.
}

void Bringup::abort(Status s) { fail(s); }

void Bringup::log_ready() const {
  const platform::Bar& bar = h_.io_.bar0();
  const HcaCaps& c = h_.caps_;
  log::info(kLog,
            "HCA up: fw {}.{}.{}, ISSI {}, {} port(s) ({}), RoCE {} (versions {:#x}), "
            "log_max_qp {}, {} firmware pages, UAR {}, EQs {} / {}",
            read_reg(bar, 0, prm::init_seg::fw_rev_major),
            read_reg(bar, 0, prm::init_seg::fw_rev_minor),
            read_reg(bar, 0, prm::init_seg::fw_rev_subminor), h_.issi_, c.num_ports,
            c.port_type == kPortTypeEthernet ? "Ethernet" : "InfiniBand", c.roce ? "on" : "off",
            c.roce_version, c.log_max_qp, h_.pages_->pages_held(), h_.uar_.index(),
            h_.async_eq_ ? h_.async_eq_->eqn() : 0, h_.comp_eq_ ? h_.comp_eq_->eqn() : 0);
}

void Bringup::submitted(Status s) {
  if (s.is_pending())
    waiting_ = true;
  else
    fail(s);
}

void Bringup::completed(Status s, State next) {
  waiting_ = false;
  if (done()) return;  // aborted meanwhile
  if (s.is_error()) {
    fail(s);
    return;
  }
  log::debug(kLog, "{} done", state_name(state_));
  state_ = next;
}

void Bringup::step() {
  while (!waiting_ && !done()) {
    const State before = state_;
    run_state();
    if (state_ == before && !waiting_) break;  // nothing to do yet (wait-init)
  }
}

void Bringup::run_state() {
  CmdQueue& q = *h_.cmdq_;
  switch (state_) {
    case State::kWaitInit: {
      const platform::Bar& bar = h_.io_.bar0();
      if (bar.read32_be(prm::init_seg::kFwRevOff) == prm::kDeviceGone) {
        fail(Status{KBV_ERR_DEVICE_REMOVED});
        return;
      }
      if (read_reg(bar, 0, prm::init_seg::initializing) == 0) {
        const uint64_t now = h_.io_.now_ns();
        init_wait_ns_ = now - start_ns_;
        log::debug(kLog, "firmware initializing for {} us", init_wait_ns_ / 1000);
        h_.health_.start(now);
        state_ = State::kEnableHca;
      } else if (h_.io_.now_ns() >= init_deadline_ns_) {
        log::error(kLog, "firmware still initializing after {} ms",
                   h_.cfg_.init_timeout_ns / 1000000);
        fail(Status{KBV_ERR_DEVICE_NOT_READY});
      }
      return;
    }
    case State::kEnableHca:
      return submitted(cmd::enable_hca(q, cmd::FunctionAttr{.function_id = h_.cfg_.function_id},
                                       [this](Status s) {
                                         if (s.is_ok()) h_.enabled_ = true;
                                         completed(s, State::kQueryIssi);
                                       }));
    case State::kQueryIssi:
      return submitted(cmd::query_issi(q, [this](Result<cmd::IssiInfo> r) {
        if (!r && r.status() == KBV_ERR_FW_BAD_OPCODE) {
          // mlx5_vfio.c / kernel handle_issi: firmware without QUERY_ISSI is ISSI 0.
          h_.issi_ = 0;
          completed(Status::ok(), State::kBootPages);
          return;
        }
        if (!r) return completed(r.status(), State::kFailed);
        if (r->supports(prm::kIssi)) return completed(Status::ok(), State::kSetIssi);
        if (r->supports(0)) {
          h_.issi_ = 0;
          return completed(Status::ok(), State::kBootPages);
        }
        log::error(kLog, "firmware supports neither ISSI 0 nor 1 (mask {:#x})",
                   r->supported_issi_dw0);
        completed(Status{KBV_ERR_NOT_SUPPORTED}, State::kFailed);
      }));
    case State::kSetIssi:
      return submitted(cmd::set_issi(q, prm::kIssi, [this](Status s) {
        if (s.is_ok()) h_.issi_ = prm::kIssi;
        completed(s, State::kBootPages);
      }));
    case State::kBootPages:
      return submitted(
          h_.pages_->satisfy_startup(prm::QueryPagesOpMod::BOOT_PAGES,
                                     [this](Status s) { completed(s, State::kHostEndianness); }));
    case State::kHostEndianness:
      return submitted(
          cmd::set_host_endianness(q, [this](Status s) { completed(s, State::kQueryCurCaps); }));
    case State::kQueryCurCaps:
      return submitted(cmd::query_hca_cap(q, prm::CapType::GENERAL, prm::CapMode::CUR,
                                          [this](Result<std::vector<std::byte>> r) {
                                            if (r) h_.cur_caps_ = std::move(*r);
                                            completed(r.status(), State::kQueryMaxCaps);
                                          }));
    case State::kQueryMaxCaps:
      return submitted(cmd::query_hca_cap(q, prm::CapType::GENERAL, prm::CapMode::MAX,
                                          [this](Result<std::vector<std::byte>> r) {
                                            if (r) h_.max_caps_ = std::move(*r);
                                            completed(r.status(), State::kSetCaps);
                                          }));
    case State::kSetCaps: {
      std::vector<std::byte> set = h_.cur_caps_;
      prm::Ref<prm::cmd_hca_cap> c(set.data());
      c.set(prm::cmd_hca_cap::cmdif_checksum, 0);   // docs/PRM.md: drivers turn it off
      c.set(prm::cmd_hca_cap::log_uar_page_sz, 0);  // 4 KiB UAR pages
      return submitted(cmd::set_hca_cap(q, prm::CapType::GENERAL, set,
                                        [this](Status s) { completed(s, State::kQueryCaps); }));
    }
    case State::kQueryCaps:
      return submitted(cmd::query_hca_cap(
          q, prm::CapType::GENERAL, prm::CapMode::CUR, [this](Result<std::vector<std::byte>> r) {
            if (r) {
              h_.cur_caps_ = std::move(*r);
              h_.caps_.parse_general(h_.cur_caps_);
            }
            completed(r.status(), h_.caps_.roce ? State::kQueryRoceCaps : State::kInitPages);
          }));
    case State::kQueryRoceCaps:
      return submitted(cmd::query_hca_cap(q, prm::CapType::ROCE, prm::CapMode::CUR,
                                          [this](Result<std::vector<std::byte>> r) {
                                            if (r) h_.caps_.parse_roce(*r);
                                            completed(r.status(), State::kInitPages);
                                          }));
    case State::kInitPages:
      return submitted(h_.pages_->satisfy_startup(
          prm::QueryPagesOpMod::INIT_PAGES, [this](Status s) { completed(s, State::kInitHca); }));
    case State::kInitHca:
      return submitted(cmd::init_hca(q, [this](Status s) {
        if (s.is_ok()) h_.initialized_ = true;
        const bool eth_roce = h_.caps_.roce && h_.caps_.port_type == kPortTypeEthernet;
        completed(s, eth_roce ? State::kEnableRoce : State::kAllocUar);
      }));
    case State::kEnableRoce:
      return submitted(cmd::modify_nic_vport_roce_en(
          q, true, [this](Status s) { completed(s, State::kAllocUar); }));
    case State::kAllocUar:
      return submitted(cmd::alloc_uar(q, [this](Result<uint32_t> r) {
        if (!r) return completed(r.status(), State::kFailed);
        Result<Uar> u = Uar::at(h_.io_.bar0(), *r);
        if (u) {
          h_.uar_ = *u;
          h_.uar_allocated_ = true;  // recorded even when aborted: teardown frees it
        } else {
          log::error(kLog, "firmware allocated UAR {} outside BAR0; not usable", *r);
        }
        completed(u.status(), State::kCreateAsyncEq);
      }));
    case State::kCreateAsyncEq: {
      auto eq = EventQueue::alloc(h_.io_, h_.cfg_.async_eq_log_size, h_.cfg_.async_vector);
      if (!eq) return fail(eq.status());
      h_.async_eq_ = std::move(*eq);
      cmd::CreateEqAttr a = h_.async_eq_->create_attr(h_.uar_.index());
      return submitted(cmd::create_eq(q, async_events(a), [this](Result<uint32_t> r) {
        if (!r) return completed(r.status(), State::kFailed);
        h_.async_eq_->bind(*r, h_.uar_);  // recorded even when aborted
        h_.async_eq_->arm();
        // From now on command completions arrive as EQEs on this EQ.
        h_.cmdq_->set_event_mode(true);
        completed(Status::ok(), h_.cfg_.create_comp_eq ? State::kCreateCompEq : State::kDone);
        if (state_ == State::kDone) log_ready();
      }));
    }
    case State::kCreateCompEq: {
      auto eq = EventQueue::alloc(h_.io_, h_.cfg_.comp_eq_log_size, h_.cfg_.comp_vector);
      if (!eq) return fail(eq.status());
      h_.comp_eq_ = std::move(*eq);
      cmd::CreateEqAttr a = h_.comp_eq_->create_attr(h_.uar_.index());
      a.event(EventType::COMP);
      return submitted(cmd::create_eq(q, a, [this](Result<uint32_t> r) {
        if (!r) return completed(r.status(), State::kFailed);
        h_.comp_eq_->bind(*r, h_.uar_);
        h_.comp_eq_->arm();
        completed(Status::ok(), State::kDone);
        log_ready();
      }));
    }
    case State::kDone:
    case State::kFailed: return;
  }
}

// ---- Teardown -----------------------------------------------------------------

std::string_view Teardown::state_name(State s) {
  switch (s) {
    case State::kDestroyCompEq: return "DESTROY_EQ comp";
    case State::kDestroyAsyncEq: return "DESTROY_EQ async";
    case State::kDeallocUar: return "DEALLOC_UAR";
    case State::kTeardownHca: return "TEARDOWN_HCA";
    case State::kReclaimPages: return "reclaim pages";
    case State::kDisableHca: return "DISABLE_HCA";
    case State::kDone: return "done";
  }
  return "?";
}

void Teardown::completed(Status s, State next) {
  waiting_ = false;
  if (s.is_error()) {
    log::error("teardown", "{} failed: {}", state_name(state_), s.to_string());
    if (first_error_.is_ok()) first_error_ = s;
  }
  state_ = next;
}

void Teardown::submitted(Status s, State next) {
  if (s.is_pending()) {
    waiting_ = true;
    return;
  }
  completed(s, next);  // an error (or done at once): go on with the rest
}

void Teardown::step() {
  while (!waiting_ && state_ != State::kDone) run_state();
  if (state_ == State::kDone && !device_disabled_) {
    device_disabled_ = true;
    h_.io_.disable_device();
  }
}

void Teardown::run_state() {
  CmdQueue& q = *h_.cmdq_;
  // A dead device takes no commands: forget what it held and finish.
  if (q.failure().is_error()) {
    if (first_error_.is_ok()) first_error_ = q.failure();
    h_.comp_eq_.reset();
    h_.async_eq_.reset();
    state_ = State::kDone;
    return;
  }
  switch (state_) {
    case State::kDestroyCompEq:
      if (!h_.comp_eq_ || !h_.comp_eq_->bound()) {
        h_.comp_eq_.reset();
        state_ = State::kDestroyAsyncEq;
        return;
      }
      return submitted(cmd::destroy_eq(q, h_.comp_eq_->eqn(),
                                       [this](Status s) {
                                         // Freed only once firmware let go of it.
                                         if (s.is_ok())
                                           h_.retired_eqs_.push_back(std::move(h_.comp_eq_));
                                         completed(s, State::kDestroyAsyncEq);
                                       }),
                       State::kDestroyAsyncEq);
    case State::kDestroyAsyncEq:
      if (!h_.async_eq_ || !h_.async_eq_->bound()) {
        h_.async_eq_.reset();
        state_ = State::kDeallocUar;
        return;
      }
      // The command EQ goes away: complete commands by polling again.
      q.set_event_mode(false);
      return submitted(cmd::destroy_eq(q, h_.async_eq_->eqn(),
                                       [this](Status s) {
                                         if (s.is_ok())
                                           h_.retired_eqs_.push_back(std::move(h_.async_eq_));
                                         completed(s, State::kDeallocUar);
                                       }),
                       State::kDeallocUar);
    case State::kDeallocUar:
      if (!h_.uar_allocated_) {
        state_ = State::kTeardownHca;
        return;
      }
      return submitted(cmd::dealloc_uar(q, h_.uar_.index(),
                                        [this](Status s) {
                                          if (s.is_ok()) h_.uar_allocated_ = false;
                                          completed(s, State::kTeardownHca);
                                        }),
                       State::kTeardownHca);
    case State::kTeardownHca:
      if (!h_.initialized_) {
        state_ = State::kReclaimPages;
        return;
      }
      return submitted(cmd::teardown_hca(q, prm::TeardownProfile::GRACEFUL_CLOSE,
                                         [this](Status s) {
                                           if (s.is_ok()) h_.initialized_ = false;
                                           completed(s, State::kReclaimPages);
                                         }),
                       State::kReclaimPages);
    case State::kReclaimPages:
      return submitted(
          h_.pages_->reclaim_all([this](Status s) { completed(s, State::kDisableHca); }),
          State::kDisableHca);
    case State::kDisableHca:
      if (!h_.enabled_) {
        state_ = State::kDone;
        return;
      }
      return submitted(cmd::disable_hca(q, cmd::FunctionAttr{.function_id = h_.cfg_.function_id},
                                        [this](Status s) {
                                          if (s.is_ok()) h_.enabled_ = false;
                                          completed(s, State::kDone);
                                        }),
                       State::kDone);
    case State::kDone: return;
  }
}

}  // namespace kbv::hca
