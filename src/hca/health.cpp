// SPDX-License-Identifier: BSD-3-Clause
#include "hca/health.hpp"

#include "common/log.hpp"
#include "hca/io/reg.hpp"
#include "hca/prm/init_seg.hpp"

namespace kbv::hca {

using prm::health_buffer;
using prm::init_seg;

namespace {
constexpr const char* kLog = "health";
}

void HealthMonitor::start(uint64_t now_ns) {
  started_ = true;
  misses_ = 0;
  prev_counter_ = read_reg(bar_, 0, init_seg::health_counter);
  counter_sampled_ns_ = now_ns;
  next_check_ns_ = now_ns + cfg_.interval_ns;
}

Status HealthMonitor::check(uint64_t now_ns) {
  if (failure_.is_error()) return failure_;
  if (now_ns < next_check_ns_) return Status::ok();
  return check_now(now_ns);
}

Status HealthMonitor::check_now(uint64_t now_ns) {
  if (failure_.is_error()) return failure_;
  next_check_ns_ = now_ns + cfg_.interval_ns;
  ++checks_;
  HealthInfo h;
  h.fw_rev = bar_.read32_be(init_seg::kFwRevOff);
  if (h.fw_rev == prm::kDeviceGone) {
    last_ = h;
    log::error(kLog, "fw_rev reads 0xffffffff: the device is gone");
    failure_ = Status{KBV_ERR_DEVICE_REMOVED};
    return failure_;
  }
  h.counter = read_reg(bar_, 0, init_seg::health_counter);
  h.nic_interface = read_reg(bar_, 0, init_seg::nic_interface);
  const uint64_t hb = init_seg::kHealthOff;
  const uint32_t dw = bar_.read32_be(hb + reg_dword_off(health_buffer::synd));
  h.irisc_index = static_cast<uint8_t>(field_from_dword(dw, health_buffer::irisc_index));
  h.synd = static_cast<uint8_t>(field_from_dword(dw, health_buffer::synd));
  h.ext_synd = static_cast<uint16_t>(field_from_dword(dw, health_buffer::ext_synd));
  h.fw_ver = read_reg(bar_, hb, health_buffer::fw_version);
  h.hw_id = read_reg(bar_, hb, health_buffer::hw_id);
  h.rfr = read_reg(bar_, hb, health_buffer::rfr) != 0;
  last_ = h;

  if (h.synd != 0) {
    log::error(kLog,
               "health syndrome {:#x} ({}), ext_synd {:#x}, irisc {}, fw_ver {:#x}, hw_id {:#x}{}",
               h.synd, prm::health_syndrome_name(h.synd), h.ext_synd, h.irisc_index, h.fw_ver,
               h.hw_id, h.rfr ? ", reset firmware required" : "");
    failure_ = Status{KBV_ERR_DEVICE_FATAL};
    return failure_;
  }
  if (h.nic_interface == static_cast<uint32_t>(prm::NicInterface::DISABLED)) {
    log::error(kLog, "nic_interface reads DISABLED");
    failure_ = Status{KBV_ERR_DEVICE_FATAL};
    return failure_;
  }
  if (started_ && now_ns - counter_sampled_ns_ >= cfg_.interval_ns) {
    counter_sampled_ns_ = now_ns;
    if (h.counter == prev_counter_) {
      // health.c poll_health: report when miss_counter reaches MAX_MISSES
      // (exactly, so once per stuck episode); the device stays usable.
      if (++misses_ == cfg_.max_misses) {
        ++compromised_reports_;
        log::error(kLog,
                   "device's health compromised: health counter stuck at {:#x} for {} checks "
                   "(reported, not fatal; syndrome {:#x}, fw_ver {:#x})",
                   h.counter, misses_, h.synd, h.fw_ver);
      }
    } else {
      misses_ = 0;
    }
    prev_counter_ = h.counter;
  }
  return Status::ok();
}

}  // namespace kbv::hca
