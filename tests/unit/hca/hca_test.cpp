// SPDX-License-Identifier: BSD-3-Clause
// Hca + Bringup/Teardown against a scripted firmware: the PRM order, event
// mode, page accounting through teardown, runtime events, device failure
// with commands in flight.
#include "hca/hca.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "fake_device.hpp"
#include "hca/bringup.hpp"
#include "hca/cmd/boot.hpp"
#include "scripted_fw.hpp"

namespace kbv::hca {
namespace {

using test::FakeDevice;
using test::FakeFw;
using test::ScriptedFw;

constexpr uint64_t kMs = 1'000'000;

class HcaTest : public ::testing::Test {
 protected:
  HcaTest() {
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

TEST_F(HcaTest, BringUpFollowsThePrmOrder) {
  bring_up();
  const std::vector<uint16_t> expected = {
      0x104,         // ENABLE_HCA
      0x10A, 0x10B,  // QUERY_ISSI, SET_ISSI
      0x107, 0x108,  // boot pages
      0x805,         // ACCESS_REG host endianness
      0x100, 0x100,  // QUERY_HCA_CAP cur, max
      0x109,         // SET_HCA_CAP
      0x100, 0x100,  // QUERY_HCA_CAP cur (in effect), RoCE
      0x107, 0x108,  // init pages
      0x102,         // INIT_HCA
      0x802,         // ALLOC_UAR
      0x301, 0x301,  // CREATE_EQ async, completion
  };
  EXPECT_EQ(sfw.opcodes(), expected);
  // op_mods that matter: boot then init pages; cap cur/max/roce.
  EXPECT_EQ(sfw.log[3].op_mod, 1u);
  EXPECT_EQ(sfw.log[11].op_mod, 2u);
  EXPECT_EQ(sfw.log[6].op_mod, 1u);   // general, cur
  EXPECT_EQ(sfw.log[7].op_mod, 0u);   // general, max
  EXPECT_EQ(sfw.log[10].op_mod, 9u);  // RoCE, cur
  // SET_HCA_CAP turned cmdif_checksum off (bits 15:14 of dword 0x40).
  ASSERT_EQ(sfw.set_caps_block.size(), 4096u);
  EXPECT_EQ(static_cast<unsigned>(sfw.set_caps_block[0x42]) & 0xC0, 0u);
  EXPECT_EQ(hca->caps().cmdif_checksum, 0u);
  EXPECT_EQ(hca->caps().log_max_qp, 0x11u);
  EXPECT_TRUE(hca->caps().roce);
  EXPECT_EQ(hca->caps().roce_version, 4u);
  EXPECT_EQ(hca->issi(), 1u);
  // Every page firmware asked for is held and accounted on both sides.
  EXPECT_EQ(hca->pages().pages_held(), 10u);
  EXPECT_EQ(sfw.pages.size(), 10u);
  for (uint64_t p : sfw.pages) EXPECT_TRUE(hca->pages().holds(p));
  // UAR and EQs.
  EXPECT_EQ(hca->uar().index(), 7u);
  ASSERT_NE(hca->async_eq(), nullptr);
  ASSERT_NE(hca->comp_eq(), nullptr);
  EXPECT_TRUE(hca->cmdq().event_mode());
  EXPECT_EQ(sfw.eqs.size(), 2u);
  const uint64_t arm = prm::uar_page_offset(7) + 0x40;
  auto arms = dev.writes_to(arm);
  ASSERT_GE(arms.size(), 2u);
  EXPECT_EQ(arms[0] >> 24, hca->async_eq()->eqn());
  EXPECT_TRUE(hca->ready());
  EXPECT_EQ(dev.enable_calls, 1);
  EXPECT_EQ(dev.enabled_vectors, 2u);  // async + completion EQ vectors
}

TEST_F(HcaTest, EthernetPortEnablesRoceAfterInitHca) {
  sfw.ethernet = true;
  bring_up();
  auto ops = sfw.opcodes();
  auto it = std::find(ops.begin(), ops.end(), 0x102);
  ASSERT_NE(it, ops.end());
  ASSERT_NE(it + 1, ops.end());
  EXPECT_EQ(*(it + 1), 0x755);  // MODIFY_NIC_VPORT_CONTEXT roce_en
  EXPECT_EQ(*(it + 2), 0x802);
  EXPECT_EQ(hca->caps().port_type, 1u);
}

TEST_F(HcaTest, CommandsAfterBringUpCompleteThroughTheEq) {
  bring_up();
  const uint64_t cmd_eqes = hca->stats().cmd_eqes;
  Status st{KBV_PENDING};
  ASSERT_EQ(cmd::nop(hca->cmdq(), [&](Status s) { st = s; }), KBV_PENDING);
  ASSERT_TRUE(drive([&] { return !st.is_pending(); }));
  EXPECT_TRUE(st.is_ok());
  EXPECT_GT(hca->stats().cmd_eqes, cmd_eqes);
}

TEST_F(HcaTest, TeardownReturnsEveryPageAndAllMemory) {
  bring_up();
  tear_down();
  EXPECT_TRUE(hca->teardown_status().is_ok()) << hca->teardown_status().to_string();
  auto ops = sfw.opcodes();
  const std::vector<uint16_t> tail = {0x302, 0x302, 0x803, 0x103, 0x108, 0x105};
  ASSERT_GE(ops.size(), tail.size());
  EXPECT_EQ(std::vector<uint16_t>(ops.end() - tail.size(), ops.end()), tail);
  EXPECT_EQ(sfw.log[sfw.log.size() - 2].op_mod, 2u);  // MANAGE_PAGES take
  EXPECT_EQ(hca->pages().pages_held(), 0u);
  EXPECT_TRUE(sfw.pages.empty());
  EXPECT_TRUE(sfw.eqs.empty());
  EXPECT_FALSE(hca->cmdq().event_mode());
  EXPECT_EQ(dev.disable_calls, 1);
  hca.reset();
  EXPECT_EQ(dev.live_dma(), 0u);
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

TEST_F(HcaTest, WaitsForInitializingWithABound) {
  dev.set_reg32(0x1fc, 0x80000000);
  ASSERT_EQ(hca->start(), KBV_PENDING);
  for (int i = 0; i < 10; ++i) {
    hca->poll();
    sfw.run();
    dev.now += kMs;
  }
  EXPECT_TRUE(sfw.log.empty());  // nothing sent while firmware initializes
  EXPECT_FALSE(hca->bringup_done());
  dev.set_reg32(0x1fc, 0);
  ASSERT_TRUE(drive([&] { return hca->bringup_done(); }));
  EXPECT_TRUE(hca->bringup_status().is_ok());
}

TEST_F(HcaTest, InitializingTimeoutIsDeviceNotReady) {
  dev.set_reg32(0x1fc, 0x80000000);
  ASSERT_EQ(hca->start(), KBV_PENDING);
  hca->poll();
  dev.now += cfg.init_timeout_ns;
  hca->poll();
  ASSERT_TRUE(hca->bringup_done());
  EXPECT_EQ(hca->bringup_status(), KBV_ERR_DEVICE_NOT_READY);
  EXPECT_TRUE(sfw.log.empty());
}

TEST_F(HcaTest, FirmwareErrorStopsBringUpAndTeardownUndoesWhatExists) {
  sfw.fail_opcode = 0x102;  // INIT_HCA
  ASSERT_EQ(hca->start(), KBV_PENDING);
  ASSERT_TRUE(drive([&] { return hca->bringup_done(); }));
  EXPECT_EQ(hca->bringup_status(), KBV_ERR_FW_BAD_PARAM);
  EXPECT_EQ(hca->bringup_status().syndrome(), 0x1234u);
  EXPECT_EQ(sfw.opcodes().back(), 0x102);
  sfw.fail_opcode = 0;
  tear_down();
  // No EQ, UAR or TEARDOWN_HCA: just the pages and DISABLE_HCA.
  auto ops = sfw.opcodes();
  const std::vector<uint16_t> tail = {0x102, 0x108, 0x105};
  EXPECT_EQ(std::vector<uint16_t>(ops.end() - 3, ops.end()), tail);
  EXPECT_EQ(hca->pages().pages_held(), 0u);
  EXPECT_TRUE(sfw.pages.empty());
}

TEST_F(HcaTest, OldFirmwareWithoutQueryIssiRunsIssi0) {
  sfw.has_query_issi = false;
  bring_up();
  EXPECT_EQ(hca->issi(), 0u);
  auto ops = sfw.opcodes();
  EXPECT_EQ(ops[2], 0x107);  // no SET_ISSI
}

TEST_F(HcaTest, NoUsableIssiIsNotSupported) {
  sfw.supported_issi = 0x4;  // only ISSI 2
  ASSERT_EQ(hca->start(), KBV_PENDING);
  ASSERT_TRUE(drive([&] { return hca->bringup_done(); }));
  EXPECT_EQ(hca->bringup_status(), KBV_ERR_NOT_SUPPORTED);
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

TEST_F(HcaTest, DeviceRemovedDuringBringUp) {
  sfw.hold = {0x107};  // stall at the boot pages query
  ASSERT_EQ(hca->start(), KBV_PENDING);
  drive([&] { return !sfw.log.empty() && sfw.log.back().opcode == 0x10B; }, 50);
  dev.set_reg32(0x0, 0xFFFFFFFF);
  dev.now += cfg.health.interval_ns;
  ASSERT_TRUE(drive([&] { return hca->bringup_done(); }, 5));
  EXPECT_EQ(hca->bringup_status(), KBV_ERR_DEVICE_REMOVED);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().status, KBV_ERR_DEVICE_REMOVED);
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

TEST_F(HcaTest, TeardownDuringBringUpWaitsForTheCommandInFlight) {
  sfw.hold = {0x102};  // INIT_HCA stays with firmware
  ASSERT_EQ(hca->start(), KBV_PENDING);
  drive(
      [&] {
        return !sfw.log.empty() && sfw.log.back().opcode == 0x107 && sfw.log.back().op_mod == 2;
      },
      100);
  drive([&] { return false; }, 5);
  ASSERT_EQ(hca->start_teardown(), KBV_PENDING);
  EXPECT_EQ(hca->bringup_status(), KBV_ERR_CANCELLED);
  const size_t sent = sfw.log.size();
  drive([&] { return false; }, 5);
  EXPECT_EQ(sfw.log.size(), sent);  // nothing new while INIT_HCA is outstanding
  sfw.hold.clear();
  ASSERT_TRUE(drive([&] { return hca->teardown_done(); }));
  // INIT_HCA did succeed, so teardown undoes it.
  auto ops = sfw.opcodes();
  const std::vector<uint16_t> tail = {0x102, 0x103, 0x108, 0x105};
  EXPECT_EQ(std::vector<uint16_t>(ops.end() - 4, ops.end()), tail);
  EXPECT_TRUE(sfw.pages.empty());
}

}  // namespace
}  // namespace kbv::hca
