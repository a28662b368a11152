// SPDX-License-Identifier: BSD-3-Clause
// sim::Model: a model HCA a driver opens through the emulated VFIO kernel
// with the production platform code (platform::DeviceHandle).
#include "sim/model.hpp"

#include "hca/prm/init_seg.hpp"
#include "platform/device.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace kbv::sim {
namespace {

TEST(SimModel, OpensThroughTheEmulatedVfioKernel) {
  Result<std::unique_ptr<Model>> m = Model::create("model-test-a");
  ASSERT_TRUE(m.has_value()) << m.status().to_string();
  EXPECT_EQ((*m)->bdf().rfind("fffe:", 0), 0u) << (*m)->bdf();
  EXPECT_TRUE((*m)->firmware().running());
  EXPECT_GE((*m)->port_host(), 1);

  auto h = platform::DeviceHandle::open(Model::sys(), (*m)->bdf());
  ASSERT_TRUE(h.has_value()) << h.status().to_string();
  // The driver's BAR0 mapping is the model's memory: cmdif revision 5
  // (docs/PRM.md init segment 0x004 bits 31:16).
  const uint32_t rev = (*h)->bar0().read32_be(prm::init_seg::cmdif_rev_fw_sub.off / 8);
  EXPECT_EQ(rev >> 16, 5u);
  // `initializing` clears after the configured time (1 s by default;
  // KBV_SIM_INIT_MS=10 in the meson test setup).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (((*h)->bar0().read32_be(0x1FC) >> 31) != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ((*h)->bar0().read32_be(0x1FC) >> 31, 0u);
}

// KBV_SIM_INIT_MS replaces DeviceConfig::init_time (1 s, silicon's order);
// a malformed value is refused, by the model too; a model started with a
// value keeps `initializing` set that long after the reset of its open.
TEST(SimModel, InitTimeFromTheEnvironment) {
  using namespace std::chrono_literals;
  const char* was = std::getenv(kInitTimeEnv);
  const std::string saved = was ? was : "";
  DeviceConfig c;
  EXPECT_EQ(c.init_time, 1s);
  ::unsetenv(kInitTimeEnv);
  ASSERT_TRUE(init_time_from_env(c).is_ok());
  EXPECT_EQ(c.init_time, 1s);  // unset: unchanged
  ::setenv(kInitTimeEnv, "250", 1);
  ASSERT_TRUE(init_time_from_env(c).is_ok());
  EXPECT_EQ(c.init_time, 250ms);
  for (const char* bad : {"", "abc", "-1", "120001", "10ms"}) {
    ::setenv(kInitTimeEnv, bad, 1);
    std::string why;
    EXPECT_EQ(init_time_from_env(c, &why).code(), KBV_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_NE(why.find(kInitTimeEnv), std::string::npos) << why;
    EXPECT_EQ(c.init_time, 250ms) << bad;  // left as it was
  }
  ::setenv(kInitTimeEnv, "abc", 1);
  EXPECT_EQ(Model::create("model-test-env-bad").status().code(), KBV_ERR_INVALID_ARGUMENT);

  ::setenv(kInitTimeEnv, "300", 1);
  auto m = Model::create("model-test-env");
  ASSERT_TRUE(m.has_value()) << m.status().to_string();
  const auto t0 = std::chrono::steady_clock::now();
  auto h = platform::DeviceHandle::open(Model::sys(), (*m)->bdf());  // resets the function
  ASSERT_TRUE(h.has_value()) << h.status().to_string();
  const auto deadline = t0 + 10s;  // a bound, not the expectation
  while (((*h)->bar0().read32_be(0x1FC) >> 31) != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ((*h)->bar0().read32_be(0x1FC) >> 31, 0u);
  EXPECT_GE(waited, 300ms);
  if (was)
    ::setenv(kInitTimeEnv, saved.c_str(), 1);
  else
    ::unsetenv(kInitTimeEnv);
}

TEST(SimModel, NamesAreUniqueAndRemovedWithTheModel) {
  std::string bdf;
  {
    auto a = Model::create("model-test-b");
    ASSERT_TRUE(a.has_value()) << a.status().to_string();
    bdf = (*a)->bdf();
    auto dup = Model::create("model-test-b");
    EXPECT_EQ(dup.status(), KBV_ERR_ALREADY_EXISTS);
    EXPECT_NE(Kernel::instance().device("model-test-b"), nullptr);
  }
  EXPECT_EQ(Kernel::instance().device("model-test-b"), nullptr);
  // The name can be used again once the model is gone.
  auto again = Model::create("model-test-b");
  EXPECT_TRUE(again.has_value()) << again.status().to_string();
}

TEST(SimModel, PortHostsAreDistinct) {
  auto a = Model::create("model-test-c");
  auto b = Model::create("model-test-d");
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_NE((*a)->port_host(), (*b)->port_host());
  ModelConfig cfg;
  cfg.port_host = 150;
  auto c = Model::create("model-test-e", cfg);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ((*c)->port_host(), 150);
}

}  // namespace
}  // namespace kbv::sim
