// SPDX-License-Identifier: BSD-3-Clause
// The lab bring-up calls of kbv/lab.h (access registers, capability blocks,
// health buffer, command observer, function-level reset) and kbv.h's
// kbv_device_read_clock. Registers and caps are firmware commands on the
// device's command queue (hca/cmd/boot.hpp access_reg, hca/cmd/caps.hpp);
// health and clock are MMIO reads of the init segment (hca/prm/init_seg.hpp,
// docs/PRM.md "Initialization segment").
#include <kbv/lab.h>

#include <array>
#include <chrono>
#include <cstring>

#include "common/log.hpp"
#include "hca/cmd/boot.hpp"
#include "hca/cmd/caps.hpp"
#include "hca/cmdq/cmd_trace.hpp"
#include "hca/prm/init_seg.hpp"
#include "verbs/objects.hpp"

namespace v = kbv::verbs;
namespace hca = kbv::hca;
namespace prm = kbv::prm;
using kbv::Result;
using kbv::Status;

namespace {

constexpr const char* kLog = "verbs/lab";
constexpr uint32_t kMaxRegBytes = 4096;

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

std::shared_ptr<v::DeviceImpl> device(kbv_device_t dev) {
  return v::lookup_as<v::DeviceImpl>(dev, v::Kind::kDevice);
}

// device.h struct health_buffer, dword by dword (the kernel's
// print_health_info reads the same: assert_var[0..4], assert_exit_ptr,
// assert_callra, time, fw_ver, hw_id, rfr/valid/severity,
// irisc_index/synd/ext_synd).
void decode_health(const hca::HealthSnapshot& s, kbv_health_t& out) {
  using prm::health_buffer;
  std::memset(&out, 0, sizeof out);
  std::array<std::byte, health_buffer::kBits / 8> hb{};
  for (uint32_t i = 0; i < s.buffer.size(); ++i) {
    const uint32_t be = __builtin_bswap32(s.buffer[i]);
    std::memcpy(hb.data() + 4 * i, &be, 4);
  }
  prm::CRef<health_buffer> h(hb.data());
  for (uint32_t i = 0; i < 5; ++i)
    out.assert_var[i] = static_cast<uint32_t>(h.get(health_buffer::assert_var, i));
  out.assert_exit_ptr = static_cast<uint32_t>(h.get(health_buffer::assert_existptr));
  out.assert_callra = static_cast<uint32_t>(h.get(health_buffer::assert_callra));
  out.time = static_cast<uint32_t>(h.get(health_buffer::time));
  out.fw_version = static_cast<uint32_t>(h.get(health_buffer::fw_version));
  out.hw_id = static_cast<uint32_t>(h.get(health_buffer::hw_id));
  out.rfr = static_cast<uint8_t>(h.get(health_buffer::rfr));
  out.valid = static_cast<uint8_t>(h.get(health_buffer::valid));
  out.severity = static_cast<uint8_t>(h.get(health_buffer::severity));
  out.irisc_index = static_cast<uint8_t>(h.get(health_buffer::irisc_index));
  out.synd = static_cast<uint8_t>(h.get(health_buffer::synd));
  out.ext_synd = static_cast<uint16_t>(h.get(health_buffer::ext_synd));
  out.health_counter = s.counter & prm::kHealthCounterMask;
  out.fw_rev = s.fw_rev;
}

}  // namespace

extern "C" {

kbv_status_t kbv_device_access_reg(kbv_device_t dev, uint16_t register_id, uint32_t op,
                                   uint32_t argument, void* data, uint32_t len, kbv_eq_t eq,
                                   uint64_t user_data) {
  auto d = device(dev);
  if (!d) return KBV_ERR_INVALID_HANDLE;
  if (!data || len == 0 || len % 4 != 0 || len > kMaxRegBytes) return KBV_ERR_INVALID_ARGUMENT;
  if (op != KBV_REG_READ && op != KBV_REG_WRITE) return KBV_ERR_INVALID_ARGUMENT;
  Status st = d->check_usable();
  if (!st.is_ok()) return st.code();
  hca::cmd::AccessRegAttr a;
  a.register_id = static_cast<prm::RegId>(register_id);
  a.op = op == KBV_REG_READ ? prm::AccessRegOpMod::READ : prm::AccessRegOpMod::WRITE;
  a.argument = argument;
  const auto* p = static_cast<const std::byte*>(data);
  a.data.assign(p, p + len);
  return v::submit_control(
             *d, d->obj.get(), eq, user_data,
             [d, a = std::move(a), data, len, register_id](const v::Ticket& t) -> Status {
               return hca::cmd::access_reg(
                   d->hca->cmdq(), a,
                   [d, t, data, len, register_id](Result<std::vector<std::byte>> r) {
                     if (r && v::EventQueue::pending(t))
                       std::memcpy(data, r->data(), std::min<size_t>(len, r->size()));
                     (void)v::EventQueue::complete(t, r.status(), d->handle(), register_id);
                   });
             })
      .code();
}

kbv_status_t kbv_device_query_hca_cap(kbv_device_t dev, uint16_t cap_type, uint32_t mode, void* out,
                                      uint32_t len, kbv_eq_t eq, uint64_t user_data) {
  auto d = device(dev);
  if (!d) return KBV_ERR_INVALID_HANDLE;
  if (!out || len < KBV_HCA_CAP_BYTES || (mode != KBV_CAP_MAX && mode != KBV_CAP_CUR))
    return KBV_ERR_INVALID_ARGUMENT;
  Status st = d->check_usable();
  if (!st.is_ok()) return st.code();
  return v::submit_control(
             *d, d->obj.get(), eq, user_data,
             [d, cap_type, mode, out](const v::Ticket& t) -> Status {
               return hca::cmd::query_hca_cap(
                   d->hca->cmdq(), static_cast<prm::CapType>(cap_type),
                   mode == KBV_CAP_CUR ? prm::CapMode::CUR : prm::CapMode::MAX,
                   [d, t, out, cap_type](Result<std::vector<std::byte>> r) {
                     if (r && v::EventQueue::pending(t))
                       std::memcpy(out, r->data(), std::min<size_t>(KBV_HCA_CAP_BYTES, r->size()));
                     (void)v::EventQueue::complete(t, r.status(), d->handle(), cap_type);
                   });
             })
      .code();
}

kbv_status_t kbv_device_read_health(kbv_device_t dev, kbv_health_t* out) {
  auto d = device(dev);
  if (!d) return KBV_ERR_INVALID_HANDLE;
  if (!out) return KBV_ERR_INVALID_ARGUMENT;
  std::lock_guard lk(d->mu);
  if (!d->pdev) return KBV_ERR_DEVICE_NOT_READY;
  const kbv::platform::Bar& bar = d->pdev->bar0();
  hca::HealthSnapshot snap;
  for (uint32_t i = 0; i < snap.buffer.size(); ++i)
    snap.buffer[i] = bar.read32_be(prm::init_seg::kHealthOff + 4 * i);
  snap.fw_rev = bar.read32_be(prm::init_seg::kFwRevOff);
  snap.counter = bar.read32_be(prm::init_seg::kHealthCounterOff);
  decode_health(snap, *out);
  out->nic_interface = (bar.read32_be(prm::init_seg::kCmdqAddrLSzOff) >> 8) & 7;
  return KBV_SUCCESS;
}

kbv_status_t kbv_device_prior_health(kbv_device_t dev, kbv_health_t* out) {
  auto d = device(dev);
  if (!d) return KBV_ERR_INVALID_HANDLE;
  if (!out) return KBV_ERR_INVALID_ARGUMENT;
  std::lock_guard lk(d->mu);
  if (!d->hca) return KBV_ERR_DEVICE_NOT_READY;
  if (!d->hca->prior_health()) return KBV_ERR_NOT_FOUND;
  decode_health(*d->hca->prior_health(), *out);
  return KBV_SUCCESS;
}

kbv_status_t kbv_device_read_clock(kbv_device_t dev, uint64_t* ticks, uint32_t* frequency_khz) {
  auto d = device(dev);
  if (!d) return KBV_ERR_INVALID_HANDLE;
  std::lock_guard lk(d->mu);
  if (!d->pdev || !d->hca || !d->ready()) return KBV_ERR_DEVICE_NOT_READY;
  const uint32_t khz = d->hca->caps().device_frequency_khz;
  if (khz == 0) return KBV_ERR_NOT_SUPPORTED;
  const kbv::platform::Bar& bar = d->pdev->bar0();
  using prm::init_seg;
  // The kernel's mlx5_read_internal_timer: high, low, high; a moved high
  // word means the low word wrapped in between: read it again.
  uint32_t hi = bar.read32_be(init_seg::kInternalTimerHOff);
  uint32_t lo = bar.read32_be(init_seg::kInternalTimerLOff);
  const uint32_t hi2 = bar.read32_be(init_seg::kInternalTimerHOff);
  if (hi2 != hi) {
    hi = hi2;
    lo = bar.read32_be(init_seg::kInternalTimerLOff);
  }
  if (bar.read32_be(init_seg::kFwRevOff) == 0xFFFFFFFFu) return KBV_ERR_DEVICE_REMOVED;
  if (ticks) *ticks = uint64_t{hi} << 32 | lo;
  if (frequency_khz) *frequency_khz = khz;
  return KBV_SUCCESS;
}

kbv_status_t kbv_set_cmd_observer(kbv_cmd_observer_t fn, void* ctx) {
  if (!fn) {
    hca::set_cmd_observer(nullptr);
    return KBV_SUCCESS;
  }
  hca::set_cmd_observer([fn, ctx](const hca::CmdCompletion& c) {
    kbv_cmd_record_t r{};
    r.opcode = c.opcode;
    r.op_mod = c.op_mod;
    r.delivery_status = c.delivery_status;
    r.fw_status = c.status.fw_status();
    r.syndrome = c.status.syndrome();
    r.status = c.status.code();
    r.latency_ns = c.latency_ns;
    fn(&r, ctx);
  });
  return KBV_SUCCESS;
}

kbv_status_t kbv_device_reset(kbv_device_t dev, kbv_reset_info_t* info) {
  auto d = device(dev);
  if (!d) return KBV_ERR_INVALID_HANDLE;
  if (info) std::memset(info, 0, sizeof *info);
  std::lock_guard lk(d->mu);
  if (!d->pdev || !d->hca || d->finished || d->teardown_requested || d->open_ticket)
    return KBV_ERR_INVALID_STATE;
  const bool children = d->open_children.load() != 0;
  const uint64_t t0 = now_ns();
  Status st = d->pdev->backend().reset();
  const uint64_t t1 = now_ns();
  if (info) info->flr_ns = t1 - t0;
  if (st.is_error()) {
    kbv::log::error(kLog, "{}: function reset: {}", d->uri, st.to_string());
    return st.code();
  }
  kbv::log::info(kLog, "{}: function reset in {} us", d->uri, (t1 - t0) / 1000);
  // The firmware forgot every object, page and queue: the driver's state is
  // void. Fail it (requests in flight and later calls fail; one
  // KBV_EVENT_DEVICE_FATAL) unless it is already failed.
  if (!d->failed.load()) d->hca->fail(Status{KBV_ERR_DEVICE_FATAL});
  if (children) return KBV_SUCCESS;
  // No children: bring the function up again under the same handle. The old
  // Hca goes first (bus mastering off, then its DMA pages and mappings).
  d->hca.reset();
  hca::HcaConfig cfg = v::hca_config();
  d->hca = std::make_unique<hca::Hca>(*d->io, cfg);
  v::DeviceImpl* raw = d.get();
  d->hca->set_event_handler([raw](const hca::HcaEvent& e) { raw->on_hca_event(e); });
  d->hca->set_comp_handler([raw](uint32_t cqn) { raw->on_comp(cqn); });
  st = d->hca->open_sync(cfg.init_timeout_ns);
  const uint64_t t2 = now_ns();
  if (info) {
    info->bringup_ns = t2 - t1;
    info->init_wait_ns = d->hca->init_wait_ns();
  }
  if (st.is_error()) {
    kbv::log::error(kLog, "{}: bring-up after reset: {}", d->uri, st.to_string());
    if (!d->hca->failure().is_error()) d->hca->fail(st);
    return st.code();
  }
  d->failure.store(KBV_SUCCESS, std::memory_order_relaxed);
  d->set_failed(false);
  if (info) info->brought_up = 1;
  kbv::log::info(kLog, "{}: brought up again in {} us (firmware initializing {} us)", d->uri,
                 (t2 - t1) / 1000, d->hca->init_wait_ns() / 1000);
  return KBV_SUCCESS;
}

}  // extern "C"
