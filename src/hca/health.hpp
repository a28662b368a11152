// SPDX-License-Identifier: BSD-3-Clause
//
// HealthMonitor: watches the init segment for a device that died or left
// (docs/PRM.md "Initialization segment"; prm::init_seg / prm::health_buffer;
// checks as in the kernel's drivers/net/ethernet/mellanox/mlx5/core/health.c
// poll_health / mlx5_health_check_fatal_sensors):
//   * fw_rev reads 0xFFFFFFFF: the function fell off the bus ->
//     KBV_ERR_DEVICE_REMOVED;
//   * health buffer syndrome != 0 (prm::HealthSyndrome), or nic_interface
//     reads DISABLED -> KBV_ERR_DEVICE_FATAL;
//   * health_counter (low 24 bits of 0x1010) unchanged for max_misses
//     consecutive checks -> reported, NOT fatal: an error is logged once and
//     compromised_reports() counts it, as health.c poll_health does when
//     miss_counter reaches MAX_MISSES 3 (it logs "health compromised - reached
//     miss count" and queues the devlink "fw" reporter, which has no recover
//     and never moves the device to internal error). Only the sensors above
//     (health.c check_fatal_sensors) fail the device, so a healthy firmware
//     whose counter was merely late (a loaded host, a descheduled model
//     thread) can never be declared dead. A counter that moves again resets
//     the misses; one that stays stuck is reported once per episode.
// check(now) reads the registers at most once per interval (health.c polls
// every 2 s), so calling it from every poll() is cheap. A failure is sticky:
// the owner (Hca) fails every outstanding command with it and raises a
// fatal event; nothing aborts.
//
// The counter is only meaningful once firmware runs its health loop; call
// start() when bring-up begins (before that, check_now() still detects a
// removed device or a syndrome).
//
// Threading: one thread (the poller).
#pragma once

#include <kbv/status.hpp>

#include <cstdint>

#include "platform/mmio.hpp"

namespace kbv::hca {

struct HealthInfo {
  uint32_t fw_rev = 0;
  uint32_t counter = 0;  // health_counter, 24 bits
  uint8_t synd = 0;      // health buffer syndrome (prm::HealthSyndrome)
  uint16_t ext_synd = 0;
  uint8_t irisc_index = 0;
  uint32_t fw_ver = 0;  // health buffer fw_version
  uint32_t hw_id = 0;
  bool rfr = false;  // "reset firmware required"
  uint32_t nic_interface = 0;
};

class HealthMonitor {
 public:
  struct Config {
    uint64_t interval_ns = 2'000'000'000;  // health.c MLX5_HEALTH_POLL_INTERVAL
    uint32_t max_misses = 3;               // health.c MAX_MISSES
  };

  explicit HealthMonitor(const platform::Bar& bar) : HealthMonitor(bar, Config{}) {}
  HealthMonitor(const platform::Bar& bar, Config cfg) : bar_(bar), cfg_(cfg) {}

  // Begins counter tracking from now.
  void start(uint64_t now_ns);
  // Rate-limited check (see above). Returns ok or the sticky failure.
  Status check(uint64_t now_ns);
  // Reads the registers now (removal, syndrome). The counter is sampled only
  // when a full interval passed since its last sample (so an early check,
  // e.g. after a command timeout, never counts as a miss).
  Status check_now(uint64_t now_ns);

  Status failure() const { return failure_; }
  const HealthInfo& last() const { return last_; }
  uint64_t checks() const { return checks_; }
  // Times the counter was seen stuck for max_misses consecutive samples.
  uint64_t compromised_reports() const { return compromised_reports_; }

 private:
  const platform::Bar& bar_;
  Config cfg_;
  bool started_ = false;
  uint64_t next_check_ns_ = 0;
  uint32_t prev_counter_ = 0;
  uint64_t counter_sampled_ns_ = 0;
  uint32_t misses_ = 0;
  uint64_t checks_ = 0;
  uint64_t compromised_reports_ = 0;
  HealthInfo last_;
  Status failure_;
};

}  // namespace kbv::hca
