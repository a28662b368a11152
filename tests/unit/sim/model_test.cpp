// SPDX-License-Identifier: BSD-3-Clause
// sim::Model: a model HCA a driver opens through the emulated VFIO kernel
// with the production platform code (platform::DeviceHandle).
#include "sim/model.hpp"

#include "hca/prm/init_seg.hpp"
#include "platform/device.hpp"

#include <gtest/gtest.h>

#include <chrono>
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
  // `initializing` clears after the configured time (default 10 ms).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (((*h)->bar0().read32_be(0x1FC) >> 31) != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ((*h)->bar0().read32_be(0x1FC) >> 31, 0u);
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
