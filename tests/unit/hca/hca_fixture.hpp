// SPDX-License-Identifier: BSD-3-Clause
// Fixture for the Hca / Bringup tests: a fake device, a scripted firmware
// and an Hca, with helpers that poll and let the firmware answer.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "fake_device.hpp"
#include "hca/hca.hpp"
#include "scripted_fw.hpp"

namespace kbv::hca::test {

inline constexpr uint64_t kMs = 1'000'000;

class HcaFixture : public ::testing::Test {
 protected:
  HcaFixture() {
    cfg.async_eq_log_size = 8;
    cfg.comp_eq_log_size = 8;
    hca = std::make_unique<Hca>(dev, cfg);
    hca->set_event_handler([this](const HcaEvent& e) { events.push_back(e); });
  }
  // Polls and lets the firmware answer until `until` holds (bounded).
  template <class P>
  bool drive(P until, int rounds = 200) {
    for (int i = 0; i < rounds; ++i) {
      if (until()) return true;
      hca->poll();
      sfw.run();
      dev.now += kMs;
      dev.set_reg32(0x1010, static_cast<uint32_t>(i + 1));  // health counter ticks
    }
    return until();
  }
  void bring_up() {
    ASSERT_EQ(hca->start(), KBV_PENDING);
    ASSERT_TRUE(drive([&] { return hca->bringup_done(); }));
    ASSERT_TRUE(hca->bringup_status().is_ok()) << hca->bringup_status().to_string();
  }
  void tear_down() {
    ASSERT_EQ(hca->start_teardown(), KBV_PENDING);
    ASSERT_TRUE(drive([&] { return hca->teardown_done(); }));
  }

  FakeDevice dev;
  FakeFw fw{dev};
  ScriptedFw sfw{dev, fw};
  HcaConfig cfg;
  std::unique_ptr<Hca> hca;
  std::vector<HcaEvent> events;
};

}  // namespace kbv::hca::test
