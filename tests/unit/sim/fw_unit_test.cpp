// SPDX-License-Identifier: BSD-3-Clause
// Unit tests of the firmware's pieces without the engine: the command
// registry's generic checks, page accounting, the trace format.
#include "fw_test_support.hpp"
#include "sim/fw/pages.hpp"
#include "sim/fw/registry.hpp"
#include "sim/fw/syndromes.hpp"
#include "sim/fw/trace.hpp"

#include <gtest/gtest.h>

namespace kbv::sim::fw {
namespace {

using prm::CmdStatus;

Outcome ok_fn(FwContext&, const Command&, std::span<std::byte>) { return Outcome::ok(); }

TEST(FwRegistry, AddRejectsDuplicatesAndBadHandlers) {
  CommandRegistry r;
  EXPECT_TRUE(r.add(0x900, Handler::make(16, 16, Requires::kNothing, ok_fn)).is_ok());
  EXPECT_EQ(r.add(0x900, Handler::make(16, 16, Requires::kNothing, ok_fn)).code(),
            KBV_ERR_ALREADY_EXISTS);
  EXPECT_EQ(r.add(0x901, Handler::make(16, 16, Requires::kNothing, nullptr)).code(),
            KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(r.add(0x902, Handler::make(4, 16, Requires::kNothing, ok_fn)).code(),
            KBV_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(r.replace(0x900, Handler::make(32, 16, Requires::kNothing, ok_fn)).is_ok());
  ASSERT_NE(r.find(0x900), nullptr);
  EXPECT_EQ(r.find(0x900)->min_inlen, 32u);
  EXPECT_EQ(r.find(0x903), nullptr);
}

TEST(FwRegistry, GenericChecksInOrder) {
  const Handler h = Handler::make(32, 24, Requires::kInitialized, ok_fn, {1, 2});
  std::vector<std::byte> in(32);
  Command c{0x900, 1, 0, in};
  auto check = [&](std::size_t outlen, bool en, bool init) {
    return CommandRegistry::check(&h, c, outlen, en, init);
  };
  EXPECT_EQ(CommandRegistry::check(nullptr, c, 24, true, true),
            Outcome::fail(CmdStatus::BAD_OP_ERR, synd::kUnknownOpcode));
  EXPECT_EQ(check(16, true, true),
            Outcome::fail(CmdStatus::BAD_OUTP_LEN_ERR, synd::kOutputTooShort));
  c.in = std::span(in).first(16);
  EXPECT_EQ(check(24, true, true), Outcome::fail(CmdStatus::BAD_INP_LEN_ERR, synd::kInputTooShort));
  c.in = in;
  c.op_mod = 3;
  EXPECT_EQ(check(24, true, true), Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kBadOpMod));
  c.op_mod = 2;
  c.uid = 7;
  EXPECT_EQ(check(24, true, true), Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kBadUid));
  c.uid = 0;
  EXPECT_EQ(check(24, false, false),
            Outcome::fail(CmdStatus::BAD_SYS_STATE_ERR, synd::kNotEnabled));
  EXPECT_EQ(check(24, true, false),
            Outcome::fail(CmdStatus::BAD_SYS_STATE_ERR, synd::kNotInitialized));
  EXPECT_EQ(check(24, true, true), Outcome::ok());
}

TEST(FwPages, DemandTakeRefuseRequest) {
  test::TestIommu mmu;
  std::vector<std::byte> mem(16 * 4096);
  ASSERT_TRUE(mmu.map(0x100000, mem.data(), mem.size(), Iommu::kRead | Iommu::kWrite).is_ok());
  PagePool pool(2, 3, 100);
  EXPECT_EQ(pool.demand(prm::QueryPagesOpMod::BOOT_PAGES), 2);
  EXPECT_EQ(pool.demand(prm::QueryPagesOpMod::INIT_PAGES), 5);
  const std::vector<uint64_t> five = {0x100000, 0x101000, 0x102000, 0x103000, 0x104000};
  ASSERT_TRUE(pool.give(std::span(five).first(2), mmu).is_ok());
  EXPECT_TRUE(pool.has_boot_pages());
  EXPECT_FALSE(pool.has_init_pages());
  EXPECT_EQ(pool.demand(prm::QueryPagesOpMod::BOOT_PAGES), 0);
  EXPECT_EQ(pool.demand(prm::QueryPagesOpMod::INIT_PAGES), 3);
  ASSERT_TRUE(pool.give(std::span(five).subspan(2), mmu).is_ok());
  EXPECT_TRUE(pool.has_init_pages());
  // Initialized: nothing spare; run-time request for 2 more, then refused.
  EXPECT_TRUE(pool.take(10, true).empty());
  pool.request(2);
  EXPECT_EQ(pool.demand(prm::QueryPagesOpMod::REGULAR_PAGES), 2);
  pool.refuse();
  EXPECT_EQ(pool.demand(prm::QueryPagesOpMod::REGULAR_PAGES), 0);
  pool.request(-2);
  EXPECT_EQ(pool.demand(prm::QueryPagesOpMod::REGULAR_PAGES), -2);
  EXPECT_EQ(pool.take(10, true).size(), 2u);
  // Not initialized: every page can be taken, at most `max` per call.
  EXPECT_EQ(pool.take(2, false).size(), 2u);
  EXPECT_EQ(pool.take(10, false).size(), 1u);
  EXPECT_EQ(pool.held(), 0u);
}

TEST(FwPages, LimitIsEnforced) {
  test::TestIommu mmu;
  std::vector<std::byte> mem(4 * 4096);
  ASSERT_TRUE(mmu.map(0x100000, mem.data(), mem.size(), Iommu::kRead | Iommu::kWrite).is_ok());
  PagePool pool(1, 1, 2);
  const std::vector<uint64_t> three = {0x100000, 0x101000, 0x102000};
  EXPECT_EQ(pool.give(three, mmu), Outcome::fail(CmdStatus::LIM_ERR, synd::kPagesLimit));
  EXPECT_EQ(pool.held(), 0u);
}

TEST(FwTrace, HexdumpFoldsRepeatedRows) {
  std::vector<std::byte> b(64);
  b[0] = std::byte{0x01};
  b[1] = std::byte{0x04};
  auto lines = CmdTrace::hexdump("  in ", b);
  ASSERT_EQ(lines.size(), 4u);  // row 0, row 1, "*", last row
  EXPECT_EQ(lines[0], "  in  0000: 01 04 00 00 00 00 00 00 00 00 00 00 00 00 00 00");
  EXPECT_EQ(lines[2], "  in  *");
  EXPECT_EQ(lines[3].substr(0, 11), "  in  0030:");
}

TEST(FwTrace, RecordWritesHeaderAndBytesToSink) {
  CmdTrace t(true);
  std::vector<std::string> got;
  t.set_sink([&](std::string_view l) { got.emplace_back(l); });
  std::vector<std::byte> in(16), out(16);
  in[0] = std::byte{0x01};
  in[1] = std::byte{0x04};
  out[0] = std::byte{0x03};
  t.record(2, 0x104, 0, 0, Outcome{3, 0x1234}, in, out);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_NE(got[0].find("slot 2 ENABLE_HCA (0x104)"), std::string::npos);
  EXPECT_NE(got[0].find("BAD_PARAM_ERR (0x3) syndrome 0x1234"), std::string::npos);
  EXPECT_EQ(got[1].substr(0, 17), "  in  0000: 01 04");
  EXPECT_EQ(got[2].substr(0, 14), "  out 0000: 03");
  CmdTrace off(false);
  off.set_sink([&](std::string_view l) { got.emplace_back(l); });
  off.record(0, 0x80D, 0, 0, {}, in, out);
  EXPECT_EQ(got.size(), 3u);
}

}  // namespace
}  // namespace kbv::sim::fw
