// SPDX-License-Identifier: BSD-3-Clause
// Hca: the progress engine after bring-up — commands through the EQ, event
// dispatch, run-time page requests, health failure with commands in flight,
// synchronous driving.
#include "hca/hca.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "hca/bringup.hpp"
#include "hca/cmd/boot.hpp"
#include "hca_fixture.hpp"

namespace kbv::hca {
namespace {

using test::kMs;
using HcaTest = test::HcaFixture;

TEST_F(HcaTest, CommandsAfterBringUpCompleteThroughTheEq) {
  bring_up();
  const uint64_t cmd_eqes = hca->stats().cmd_eqes;
  Status st{KBV_PENDING};
  ASSERT_EQ(cmd::nop(hca->cmdq(), [&](Status s) { st = s; }), KBV_PENDING);
  ASSERT_TRUE(drive([&] { return !st.is_pending(); }));
  EXPECT_TRUE(st.is_ok());
  EXPECT_GT(hca->stats().cmd_eqes, cmd_eqes);
}

TEST_F(HcaTest, PollUntilDrivesToCompletionOrTimesOut) {
  // The predicate plays firmware and advances the fake clock each round.
  ASSERT_EQ(hca->start(), KBV_PENDING);
  EXPECT_TRUE(hca->poll_until(
                     [&] {
                       sfw.run();
                       dev.now += kMs;
                       return hca->bringup_done();
                     },
                     1000 * kMs)
                  .is_ok());
  EXPECT_TRUE(hca->ready());
  sfw.hold = {0x80D};
  Status st{KBV_PENDING};
  ASSERT_EQ(cmd::nop(hca->cmdq(), [&](Status s) { st = s; }), KBV_PENDING);
  EXPECT_EQ(hca->poll_until(
                [&] {
                  sfw.run();
                  dev.now += kMs;
                  return !st.is_pending();
                },
                20 * kMs),
            KBV_ERR_TIMEOUT);
  EXPECT_EQ(st, KBV_PENDING);
  EXPECT_EQ(hca->poll_until({}, 1), KBV_ERR_INVALID_ARGUMENT);
}

TEST_F(HcaTest, OpenSyncReportsTheBringUpStatus) {
  sfw.fail_opcode = 0x109;  // SET_HCA_CAP
  // The fake firmware only answers from sfw.run(), which open_sync does not
  // call: the first command never completes and open_sync times out on the
  // (self-advancing) fake clock.
  dev.auto_tick = kMs;
  EXPECT_EQ(hca->open_sync(5 * kMs), KBV_ERR_TIMEOUT);
  EXPECT_FALSE(hca->bringup_done());
  dev.auto_tick = 0;
  ASSERT_TRUE(drive([&] { return hca->bringup_done(); }));
  EXPECT_EQ(hca->bringup_status(), KBV_ERR_FW_BAD_PARAM);
}

TEST_F(HcaTest, DestroyWithoutTeardownDisablesTheDeviceFirst) {
  bring_up();
  EXPECT_EQ(dev.disable_calls, 0);
  hca.reset();
  EXPECT_EQ(dev.disable_calls, 1);
  EXPECT_EQ(dev.live_dma(), 0u);
}

TEST_F(HcaTest, RunTimePageRequestsAreServedWhileCommandsAreOutstanding) {
  bring_up();
  sfw.hold = {0x80D};  // NOPs stay with firmware
  std::vector<Status> nops(31, Status{KBV_PENDING});
  for (auto& st : nops) ASSERT_EQ(cmd::nop(hca->cmdq(), [&](Status s) { st = s; }), KBV_PENDING);
  sfw.run();
  EXPECT_EQ(hca->cmdq().stats().in_flight, 31u);
  // Firmware asks for 3 more pages, then gives 2 back.
  ASSERT_TRUE(sfw.post_eqe(0x0b, [](std::byte* e) { e[32 + 7] = std::byte{3}; }));
  ASSERT_TRUE(drive([&] { return hca->pages().pages_held() == 13; }));
  EXPECT_EQ(sfw.log.back().opcode, 0x108);
  EXPECT_EQ(sfw.log.back().slot, 31u);
  ASSERT_TRUE(sfw.post_eqe(0x0b, [](std::byte* e) {
    for (int k = 0; k < 4; ++k) e[32 + 4 + k] = std::byte{0xff};
    e[32 + 7] = std::byte{0xfe};  // -2
  }));
  ASSERT_TRUE(drive([&] { return hca->pages().pages_held() == 11; }));
  EXPECT_EQ(sfw.pages.size(), 11u);
  EXPECT_EQ(hca->stats().page_requests, 2u);
  for (auto& st : nops) EXPECT_EQ(st, KBV_PENDING);
  sfw.hold.clear();
  ASSERT_TRUE(drive([&] { return hca->cmdq().idle(); }));
  for (auto& st : nops) EXPECT_TRUE(st.is_ok());
}

TEST_F(HcaTest, PortChangeAndCqErrorReachTheHandler) {
  bring_up();
  ASSERT_TRUE(sfw.post_eqe(0x09, [](std::byte* e) {
    e[3] = std::byte{4};          // ACTIVE
    e[32 + 8] = std::byte{0x10};  // port 1 in the upper nibble
  }));
  ASSERT_TRUE(sfw.post_eqe(0x04, [](std::byte* e) {
    e[32 + 3] = std::byte{0x21};  // cqn 0x21
    e[32 + 11] = std::byte{0x1};  // overrun
  }));
  hca->poll();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, HcaEvent::Kind::kAsync);
  EXPECT_EQ(events[0].type, 0x09);
  EXPECT_EQ(events[0].sub_type, 4);
  EXPECT_EQ(events[0].port, 1u);
  EXPECT_EQ(events[1].type, 0x04);
  EXPECT_EQ(events[1].cqn, 0x21u);
  EXPECT_EQ(events[1].cq_syndrome, 1);
}

TEST_F(HcaTest, CompletionEventsGoToTheCompletionHandler) {
  bring_up();
  std::vector<uint32_t> cqns;
  hca->set_comp_handler([&](uint32_t cqn) { cqns.push_back(cqn); });
  ASSERT_TRUE(sfw.post_eqe(0x00, [](std::byte* e) { e[32 + 27] = std::byte{0x33}; }));
  hca->poll();
  EXPECT_EQ(cqns, std::vector<uint32_t>{0x33});
}

TEST_F(HcaTest, HealthFailureCompletesCommandsInFlightAndRaisesFatal) {
  bring_up();
  sfw.hold = {0x80D};
  std::vector<Status> nops(40, Status{KBV_PENDING});
  for (auto& st : nops) ASSERT_EQ(cmd::nop(hca->cmdq(), [&](Status s) { st = s; }), KBV_PENDING);
  sfw.run();
  EXPECT_EQ(hca->cmdq().stats().in_flight, 31u);
  EXPECT_EQ(hca->cmdq().stats().queued, 9u);
  dev.set_reg32(0x23c, 0x00070000);  // health syndrome: iRISC hung
  dev.now += cfg.health.interval_ns;
  hca->poll();
  for (auto& st : nops) EXPECT_EQ(st, KBV_ERR_DEVICE_FATAL);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, HcaEvent::Kind::kFatal);
  EXPECT_EQ(events[0].status, KBV_ERR_DEVICE_FATAL);
  EXPECT_EQ(hca->failure(), KBV_ERR_DEVICE_FATAL);
  Status late{KBV_PENDING};
  EXPECT_EQ(cmd::nop(hca->cmdq(), [&](Status s) { late = s; }), KBV_ERR_DEVICE_FATAL);
  // Teardown of a dead device finishes without sending anything.
  const size_t sent = sfw.log.size();
  EXPECT_EQ(hca->close_sync(10 * kMs), KBV_ERR_DEVICE_FATAL);
  EXPECT_TRUE(hca->teardown_done());
  EXPECT_EQ(dev.disable_calls, 1);
  EXPECT_EQ(sfw.log.size(), sent);
  hca->poll();
  EXPECT_EQ(events.size(), 1u);  // fatal raised once
}

TEST_F(HcaTest, StuckCommandTimesOutAndHealthyDeviceKeepsGoing) {
  cfg.cmdq.default_timeout_ns = 50 * kMs;
  hca = std::make_unique<Hca>(dev, cfg);
  bring_up();
  sfw.hold = {0x80D};
  Status st{KBV_PENDING};
  ASSERT_EQ(cmd::nop(hca->cmdq(), [&](Status s) { st = s; }), KBV_PENDING);
  ASSERT_TRUE(drive([&] { return !st.is_pending(); }, 100));
  EXPECT_EQ(st, KBV_ERR_TIMEOUT);
  EXPECT_TRUE(hca->failure().is_ok());  // the device itself is fine
  EXPECT_EQ(hca->cmdq().stats().quarantined, 1u);
  sfw.hold.clear();
  ASSERT_TRUE(drive([&] { return hca->cmdq().stats().quarantined == 0; }, 10));
}

}  // namespace
}  // namespace kbv::hca
