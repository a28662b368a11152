// SPDX-License-Identifier: BSD-3-Clause
// HealthMonitor: removal, syndrome, stuck counter (reported, not fatal), rate limiting.
#include "hca/health.hpp"

#include <gtest/gtest.h>

#include "fake_device.hpp"

namespace kbv::hca {
namespace {

using test::FakeDevice;

constexpr uint64_t kSec = 1'000'000'000;

TEST(Health, MovingCounterIsHealthyAndChecksAreRateLimited) {
  FakeDevice dev;
  HealthMonitor h(dev.bar0());
  h.start(0);
  for (uint32_t i = 1; i <= 10; ++i) {
    dev.set_reg32(0x1010, i);
    EXPECT_TRUE(h.check(i * 2 * kSec).is_ok());
  }
  EXPECT_EQ(h.checks(), 10u);
  // Within the interval nothing is read.
  EXPECT_TRUE(h.check(20 * kSec + 1).is_ok());
  EXPECT_EQ(h.checks(), 10u);
}

// health.c poll_health: MAX_MISSES samples of a stuck counter are reported
// (logged, devlink "fw" reporter), never a device failure; only the fatal
// sensors (syndrome, nic_interface, removal) fail the device.
TEST(Health, StuckCounterIsReportedOnceButNotFatal) {
  FakeDevice dev;
  dev.set_reg32(0x1010, 0x42);
  HealthMonitor h(dev.bar0());
  h.start(0);
  EXPECT_TRUE(h.check(2 * kSec).is_ok());
  EXPECT_TRUE(h.check(4 * kSec).is_ok());
  EXPECT_EQ(h.compromised_reports(), 0u);
  EXPECT_TRUE(h.check(6 * kSec).is_ok());  // third miss: reported
  EXPECT_EQ(h.compromised_reports(), 1u);
  EXPECT_TRUE(h.check(8 * kSec).is_ok());  // still stuck: not reported again
  EXPECT_TRUE(h.check(10 * kSec).is_ok());
  EXPECT_EQ(h.compromised_reports(), 1u);
  EXPECT_TRUE(h.failure().is_ok());
  // The counter moves again (a late firmware thread): misses start over.
  dev.set_reg32(0x1010, 0x43);
  EXPECT_TRUE(h.check(12 * kSec).is_ok());
  for (uint64_t t = 14; t <= 18; t += 2) EXPECT_TRUE(h.check(t * kSec).is_ok());
  EXPECT_EQ(h.compromised_reports(), 2u);
  // A syndrome on a stuck counter is what fails the device.
  dev.set_reg32(0x23c, 0x00070000);  // synd 0x7: iRISC hung
  EXPECT_EQ(h.check(20 * kSec), KBV_ERR_DEVICE_FATAL);
}

TEST(Health, EarlyChecksDoNotCountAsMisses) {
  FakeDevice dev;
  dev.set_reg32(0x1010, 0x42);
  HealthMonitor h(dev.bar0());
  h.start(0);
  // Many immediate checks (command timeouts) within one interval: no verdict.
  for (int i = 1; i < 20; ++i) EXPECT_TRUE(h.check_now(i * 1000).is_ok());
  dev.set_reg32(0x1010, 0x43);
  EXPECT_TRUE(h.check(2 * kSec).is_ok());
}

TEST(Health, CounterIgnoredBeforeStart) {
  FakeDevice dev;
  HealthMonitor h(dev.bar0());
  for (int i = 1; i < 10; ++i) EXPECT_TRUE(h.check(i * 2 * kSec).is_ok());
}

TEST(Health, SyndromeIsFatalAndReported) {
  FakeDevice dev;
  HealthMonitor h(dev.bar0());
  h.start(0);
  dev.set_reg32(0x1010, 1);
  // Health buffer dword at 0x23c: irisc_index 2, synd 0x7 (iRISC hung), ext_synd 0x1234.
  dev.set_reg32(0x23c, 0x02071234);
  dev.set_reg32(0x230, 0x0e0010);
  EXPECT_EQ(h.check_now(kSec), KBV_ERR_DEVICE_FATAL);
  EXPECT_EQ(h.last().synd, 0x7);
  EXPECT_EQ(h.last().ext_synd, 0x1234);
  EXPECT_EQ(h.last().irisc_index, 2);
  EXPECT_EQ(h.last().fw_ver, 0x0e0010u);
  EXPECT_EQ(h.failure(), KBV_ERR_DEVICE_FATAL);
}

TEST(Health, AllOnesFwRevMeansRemoved) {
  FakeDevice dev;
  HealthMonitor h(dev.bar0());
  dev.set_reg32(0x0, 0xFFFFFFFF);
  EXPECT_EQ(h.check(5 * kSec), KBV_ERR_DEVICE_REMOVED);
}

TEST(Health, NicInterfaceDisabledIsFatal) {
  FakeDevice dev;
  HealthMonitor h(dev.bar0());
  // cmdq_addr_l_sz: nic_interface (bits 10:8) = 1 (DISABLED), geometry kept.
  dev.set_reg32(0x14, 1u << 8 | 0x56);
  EXPECT_EQ(h.check_now(kSec), KBV_ERR_DEVICE_FATAL);
}

}  // namespace
}  // namespace kbv::hca
