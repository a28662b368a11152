// SPDX-License-Identifier: BSD-3-Clause
// Bringup / Teardown state machines against a scripted firmware: the PRM
// order, the bounded wait for firmware init, failures at a step, ISSI
// negotiation, removal during bring-up, teardown of whatever exists.
#include "hca/bringup.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "hca/bringup.hpp"
#include "hca/cmd/boot.hpp"
#include "hca_fixture.hpp"

namespace kbv::hca {
namespace {

using test::kMs;
using BringupTest = test::HcaFixture;

TEST_F(BringupTest, BringUpFollowsThePrmOrder) {
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

TEST_F(BringupTest, EthernetPortEnablesRoceAfterInitHca) {
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

TEST_F(BringupTest, TeardownReturnsEveryPageAndAllMemory) {
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

TEST_F(BringupTest, WaitsForInitializingWithABound) {
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

TEST_F(BringupTest, InitializingTimeoutIsDeviceNotReady) {
  dev.set_reg32(0x1fc, 0x80000000);
  ASSERT_EQ(hca->start(), KBV_PENDING);
  hca->poll();
  dev.now += cfg.init_timeout_ns;
  hca->poll();
  ASSERT_TRUE(hca->bringup_done());
  EXPECT_EQ(hca->bringup_status(), KBV_ERR_DEVICE_NOT_READY);
  EXPECT_TRUE(sfw.log.empty());
}

TEST_F(BringupTest, FirmwareErrorStopsBringUpAndTeardownUndoesWhatExists) {
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

TEST_F(BringupTest, OldFirmwareWithoutQueryIssiRunsIssi0) {
  sfw.has_query_issi = false;
  bring_up();
  EXPECT_EQ(hca->issi(), 0u);
  auto ops = sfw.opcodes();
  EXPECT_EQ(ops[2], 0x107);  // no SET_ISSI
}

TEST_F(BringupTest, NoUsableIssiIsNotSupported) {
  sfw.supported_issi = 0x4;  // only ISSI 2
  ASSERT_EQ(hca->start(), KBV_PENDING);
  ASSERT_TRUE(drive([&] { return hca->bringup_done(); }));
  EXPECT_EQ(hca->bringup_status(), KBV_ERR_NOT_SUPPORTED);
}

TEST_F(BringupTest, DeviceRemovedDuringBringUp) {
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

TEST_F(BringupTest, TeardownDuringBringUpWaitsForTheCommandInFlight) {
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
