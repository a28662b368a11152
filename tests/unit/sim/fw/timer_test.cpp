// SPDX-License-Identifier: BSD-3-Clause
// Device-side timers of the model firmware (Firmware::post / post_after,
// FwContext::schedule) and the INIT_HCA life-cycle hook sim::Model uses to
// bring the port up after a link-training delay.
#include "fw_test_support.hpp"
#include "hca/prm/opcodes.hpp"
#include "sim/fw/firmware.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace kbv::sim::fw {
namespace {

using namespace std::chrono_literals;
using prm::Opcode;

bool wait_for(const std::function<bool()>& cond, std::chrono::milliseconds limit = 2000ms) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(FwTimers, PostAndPostAfterRunOnTheFirmwareThread) {
  test::TestPci pci;
  Firmware fw(pci, test::test_config());
  ASSERT_TRUE(fw.start().is_ok());
  std::atomic<int> order{0};
  std::atomic<int> now_at{-1}, later_at{-1};
  std::thread::id fw_thread, caller = std::this_thread::get_id();
  // An immediate task does not wait behind a delayed one that is pending
  // (an hour away: no machine load can make it due during the test).
  std::atomic<bool> far_ran{false};
  fw.post_after(1h, [&] { far_ran = true; });
  fw.post([&] {
    now_at = order++;
    fw_thread = std::this_thread::get_id();
  });
  ASSERT_TRUE(wait_for([&] { return now_at.load() >= 0; }));
  EXPECT_FALSE(far_ran.load());
  // A delayed task runs on the firmware thread, never early.
  std::atomic<std::chrono::steady_clock::time_point> later_ran{};
  const auto t0 = std::chrono::steady_clock::now();
  fw.post_after(20ms, [&] {
    later_ran = std::chrono::steady_clock::now();
    later_at = order++;
  });
  ASSERT_TRUE(wait_for([&] { return later_at.load() >= 0; }));
  EXPECT_GE(later_ran.load() - t0, 20ms);
  EXPECT_EQ(now_at.load(), 0);
  EXPECT_EQ(later_at.load(), 1);
  EXPECT_NE(fw_thread, caller);
  fw.stop();  // drops the task still pending
  EXPECT_FALSE(far_ran.load());
}

class FwInitHook : public ::testing::Test {
 protected:
  void SetUp() override {
    FwConfig cfg = test::test_config();
    cfg.boot_pages = 1;
    cfg.init_pages = 1;
    cfg.on_init_hca.push_back([this](FwContext& ctx) {
      hook_ran_ = true;
      ctx.schedule(delay_, [this] { fired_ = true; });
    });
    fw_ = std::make_unique<Firmware>(pci_, cfg);
    ASSERT_TRUE(fw_->start().is_ok());
    host_ = std::make_unique<test::TestHost>(pci_);
  }
  uint8_t exec(Opcode op, uint16_t op_mod, std::size_t inlen, uint32_t outlen) {
    return host_->exec(test::make_cmd(op, op_mod, inlen), outlen).status();
  }
  void init() {
    ASSERT_EQ(exec(Opcode::ENABLE_HCA, 0, 16, 12), 0);
    // One boot page and one init page (the config above).
    for (int i = 0; i < 2; ++i) {
      auto in = test::make_cmd(Opcode::MANAGE_PAGES,
                               test::u16(prm::ManagePagesOpMod::ALLOCATION_SUCCESS), 16 + 8);
      prm::Ref<prm::manage_pages_in> m(in.data());
      m.set(prm::manage_pages_in::input_num_entries, 1);
      m.set(prm::manage_pages_in::pas, 0, host_->dma().alloc(4096));
      ASSERT_EQ(host_->exec(in, 16).status(), 0);
    }
    ASSERT_EQ(exec(Opcode::INIT_HCA, 0, 16, 16), 0);
  }

  test::TestPci pci_;
  std::unique_ptr<Firmware> fw_;
  std::unique_ptr<test::TestHost> host_;
  std::chrono::milliseconds delay_{10};
  std::atomic<bool> hook_ran_{false}, fired_{false};
};

TEST_F(FwInitHook, ScheduledTaskFiresAfterInitHca) {
  init();
  EXPECT_TRUE(hook_ran_.load());
  EXPECT_TRUE(wait_for([&] { return fired_.load(); }));
}

TEST_F(FwInitHook, TeardownBeforeTheTimerDropsIt) {
  delay_ = 150ms;
  init();
  ASSERT_TRUE(hook_ran_.load());
  ASSERT_EQ(exec(Opcode::TEARDOWN_HCA, 0, 16, 16), 0);
  // Past the deadline: the task was scheduled under the old epoch and must
  // not run after TEARDOWN_HCA.
  std::atomic<bool> marker{false};
  fw_->post_after(300ms, [&] { marker = true; });
  ASSERT_TRUE(wait_for([&] { return marker.load(); }));
  EXPECT_FALSE(fired_.load());
}

TEST_F(FwInitHook, NoHookWithoutInitHca) {
  ASSERT_EQ(exec(Opcode::ENABLE_HCA, 0, 16, 12), 0);
  // INIT_HCA refused (no pages): the hook must not run.
  EXPECT_NE(exec(Opcode::INIT_HCA, 0, 16, 16), 0);
  EXPECT_FALSE(hook_ran_.load());
}

}  // namespace
}  // namespace kbv::sim::fw
