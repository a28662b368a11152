// SPDX-License-Identifier: BSD-3-Clause
// Firmware page accounting (pages.hpp PagePool).
#include "sim/fw/pages.hpp"
#include "fw_test_support.hpp"
#include "sim/fw/syndromes.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kbv::sim::fw {
namespace {

using prm::CmdStatus;

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

}  // namespace
}  // namespace kbv::sim::fw
