// SPDX-License-Identifier: BSD-3-Clause
// Housekeeper (src/sim/bus/housekeeper.cpp): one thread serves several devices;
// a removed device is no longer touched.
#include "sim/bus/housekeeper.hpp"

#include "hca/prm/init_seg.hpp"
#include "sim/bus/pci_device.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace kbv::sim {
namespace {

using namespace std::chrono_literals;

DeviceConfig fast() {
  DeviceConfig c;
  c.init_time = 0ns;
  c.health_period = 2ms;
  return c;
}

bool wait_for(auto pred) {
  for (int i = 0; i < 500; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return pred();
}

TEST(SimHousekeeper, ServesSeveralDevices) {
  auto a = PciDevice::create(fast());
  auto b = PciDevice::create(fast());
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(wait_for([&] { return (*a)->health_counter() > 2 && (*b)->health_counter() > 2; }));
}

TEST(SimHousekeeper, WakeAfterRemovedDeviceIsHarmless) {
  auto a = PciDevice::create(fast());
  auto b = PciDevice::create(fast());
  ASSERT_TRUE(a && b);
  // remove() takes the lock the housekeeper ticks under: no tick of `a` can
  // land after it returns.
  Housekeeper::instance().remove(a->get());
  const uint32_t c0 = (*a)->health_counter();
  Housekeeper::instance().wake();
  // Proof that the housekeeper made passes since: b (still served) ticked
  // twice more.
  const uint32_t b0 = (*b)->health_counter();
  ASSERT_TRUE(wait_for([&] { return (*b)->health_counter() >= b0 + 2; }));
  EXPECT_EQ((*a)->health_counter(), c0);  // no longer ticked
}

}  // namespace
}  // namespace kbv::sim
