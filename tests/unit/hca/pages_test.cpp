// SPDX-License-Identifier: BSD-3-Clause
// PageManager: every page given is accounted, run-time requests use the page
// slot, teardown takes every page back.
#include "hca/pages.hpp"

#include <set>

#include "cmd_harness.hpp"
#include "hca/prm/boot.hpp"

namespace kbv::hca {
namespace {

using test::CmdHarness;

class PagesTest : public CmdHarness {
 protected:
  void SetUp() override {
    CmdHarness::SetUp();
    pages = std::make_unique<PageManager>(dev, *cmdq);
    // Let the mailbox pool allocate its first chunk now, so that live_dma()
    // differences below count pages only.
    CmdResult r;
    auto in = test::make_input(0x80D, 0, 600);
    ASSERT_EQ(cmdq->submit(in, 16, r.callback()), KBV_PENDING);
    posted();
    answer_ok();
    ASSERT_TRUE(r.done);
    baseline_dma = dev.live_dma();
  }
  void TearDown() override {
    pages.reset();
    cmdq.reset();
  }
  // Firmware side: the pages listed by the MANAGE_PAGES give in `in`.
  static std::vector<uint64_t> given(const std::vector<std::byte>& in) {
    std::vector<uint64_t> v;
    const uint32_t n = be32(in, 12);
    for (uint32_t i = 0; i < n; ++i) v.push_back(be64(in, 16 + 8 * i));
    return v;
  }
  // Answers a MANAGE_PAGES take on `s` by returning `pas`.
  void return_pages(uint32_t s, const std::vector<uint64_t>& pas) {
    std::vector<std::byte> out(fw.outlen(s));
    put32(out, 8, static_cast<uint32_t>(pas.size()));
    for (size_t i = 0; i < pas.size(); ++i) put64(out, 16 + 8 * i, pas[i]);
    fw.complete(s, out);
    cmdq->poll();
  }
  // Gives n pages through the manager and lets firmware accept them all;
  // returns the IOVAs firmware saw.
  std::vector<uint64_t> give_all(uint32_t n) {
    Status st{KBV_PENDING};
    EXPECT_EQ(pages->give(n, [&](Status s) { st = s; }), KBV_PENDING);
    std::vector<uint64_t> all;
    for (uint32_t s : fw.rung()) {
      auto g = given(fw.input(s));
      all.insert(all.end(), g.begin(), g.end());
      fw.ok(s);
    }
    cmdq->poll();
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    return all;
  }

  std::unique_ptr<PageManager> pages;
  size_t baseline_dma = 0;
};

TEST_F(PagesTest, StartupQueryThenGiveAccountsEveryPage) {
  Status st{KBV_PENDING};
  ASSERT_EQ(pages->satisfy_startup(prm::QueryPagesOpMod::BOOT_PAGES, [&](Status s) { st = s; }),
            KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x107u);
  EXPECT_EQ(be16(in, 6), 1u);
  std::vector<std::byte> out(16);
  put32(out, 12, 3);
  answer(out);
  in = posted();
  EXPECT_EQ(be16(in, 0), 0x108u);
  EXPECT_EQ(be16(in, 6), 1u);
  auto pas = given(in);
  ASSERT_EQ(pas.size(), 3u);
  std::set<uint64_t> uniq(pas.begin(), pas.end());
  EXPECT_EQ(uniq.size(), 3u);
  for (uint64_t p : pas) {
    EXPECT_EQ(p % 4096, 0u);
    EXPECT_NE(dev.va(p), nullptr);
    EXPECT_FALSE(pages->holds(p));  // not until firmware accepted them
  }
  answer_ok();
  EXPECT_TRUE(st.is_ok());
  EXPECT_EQ(pages->pages_held(), 3u);
  for (uint64_t p : pas) EXPECT_TRUE(pages->holds(p));
  EXPECT_EQ(pages->stats().given, 3u);
  EXPECT_EQ(dev.live_dma(), baseline_dma + 3);
}

TEST_F(PagesTest, StartupWithNothingToGive) {
  Status st{KBV_PENDING};
  ASSERT_EQ(pages->satisfy_startup(prm::QueryPagesOpMod::INIT_PAGES, [&](Status s) { st = s; }),
            KBV_PENDING);
  posted();
  answer_ok();  // num_pages 0
  EXPECT_TRUE(st.is_ok());
  EXPECT_TRUE(fw.rung().empty());
  EXPECT_EQ(pages->pages_held(), 0u);
}

TEST_F(PagesTest, LargeGiveIsSplitIntoConcurrentCommands) {
  Status st{KBV_PENDING};
  ASSERT_EQ(pages->give(600, [&](Status s) { st = s; }), KBV_PENDING);
  auto slots = fw.rung();
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(given(fw.input(slots[0])).size(), 512u);
  EXPECT_EQ(given(fw.input(slots[1])).size(), 88u);
  fw.ok(slots[1]);
  cmdq->poll();
  EXPECT_EQ(st, KBV_PENDING);  // one batch left
  EXPECT_EQ(pages->pages_held(), 88u);
  fw.ok(slots[0]);
  cmdq->poll();
  EXPECT_TRUE(st.is_ok());
  EXPECT_EQ(pages->pages_held(), 600u);
  EXPECT_EQ(pages->in_progress(), 0u);
}

TEST_F(PagesTest, RejectedGiveFreesThePages) {
  Status st{KBV_PENDING};
  ASSERT_EQ(pages->give(4, [&](Status s) { st = s; }), KBV_PENDING);
  EXPECT_EQ(dev.live_dma(), baseline_dma + 4);
  posted();
  fw.fail(slot, 0x3, 0x99);
  cmdq->poll();
  EXPECT_EQ(st, KBV_ERR_FW_BAD_PARAM);
  EXPECT_EQ(pages->pages_held(), 0u);
  EXPECT_EQ(dev.live_dma(), baseline_dma);
  EXPECT_EQ(pages->stats().failures, 1u);
}

TEST_F(PagesTest, TimedOutGiveKeepsThePagesUntilTheDestructor) {
  // The firmware may hold the pages of a give that timed out: they are not
  // reused, but freed when the manager goes (the device is disabled or gone
  // by then), never leaked (found by tests/fuzz hca_device).
  Status st{KBV_PENDING};
  ASSERT_EQ(pages->give(4, [&](Status s) { st = s; }), KBV_PENDING);
  posted();
  dev.now += 61ull * 1000 * 1000 * 1000;  // past the 60 s command timeout
  cmdq->poll();
  EXPECT_EQ(st, KBV_ERR_TIMEOUT);
  EXPECT_EQ(pages->pages_held(), 0u);
  EXPECT_EQ(dev.live_dma(), baseline_dma + 4);
  pages.reset();
  EXPECT_EQ(dev.live_dma(), baseline_dma);
}

TEST_F(PagesTest, AllocationFailureTellsFirmwareCannotGive) {
  Status st{KBV_PENDING};
  dev.fail_dma = true;
  ASSERT_EQ(pages->give(7, [&](Status s) { st = s; }), KBV_PENDING);
  dev.fail_dma = false;
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x108u);
  EXPECT_EQ(be16(in, 6), 0u);  // ALLOCATION_FAIL
  EXPECT_EQ(be32(in, 12), 7u);
  answer_ok();
  EXPECT_EQ(st, KBV_ERR_NO_MEMORY);
  EXPECT_EQ(pages->pages_held(), 0u);
}

TEST_F(PagesTest, RequestsBeyondTheLimitAreRefused) {
  pages->set_max_pages(8);
  give_all(5);
  Status st{KBV_PENDING};
  EXPECT_EQ(pages->give(4, [&](Status s) { st = s; }), KBV_ERR_LIMIT_EXCEEDED);
  auto in = posted();
  EXPECT_EQ(be16(in, 6), 0u);  // cannot give
  EXPECT_EQ(be32(in, 12), 4u);
  answer_ok();
  EXPECT_EQ(st, KBV_PENDING);  // no callback for a refused call
  EXPECT_EQ(dev.live_dma(), baseline_dma + 5);
  // A run-time request for more than allowed is refused the same way.
  pages->on_page_request(0, 1000);
  ASSERT_EQ(fw.rung(), std::vector<uint32_t>{31});
  EXPECT_EQ(be16(fw.input(31), 6), 0u);
  EXPECT_EQ(pages->pages_held(), 5u);
}

TEST_F(PagesTest, RunTimeRequestsUseThePageSlot) {
  pages->on_page_request(0, 5);
  auto r = fw.rung();
  ASSERT_EQ(r, std::vector<uint32_t>{31});
  auto pas = given(fw.input(31));
  ASSERT_EQ(pas.size(), 5u);
  fw.ok(31);
  cmdq->poll();
  EXPECT_EQ(pages->pages_held(), 5u);

  pages->on_page_request(0, -2);
  ASSERT_EQ(fw.rung(), std::vector<uint32_t>{31});
  auto in = fw.input(31);
  EXPECT_EQ(be16(in, 6), 2u);  // HCA_RETURN_PAGES
  EXPECT_EQ(be32(in, 12), 2u);
  return_pages(31, {pas[1], pas[3]});
  EXPECT_EQ(pages->pages_held(), 3u);
  EXPECT_FALSE(pages->holds(pas[1]));
  EXPECT_FALSE(pages->holds(pas[3]));
  EXPECT_TRUE(pages->holds(pas[0]));
  EXPECT_EQ(pages->stats().requests, 2u);
  EXPECT_EQ(pages->stats().returned, 2u);
  EXPECT_EQ(dev.live_dma(), baseline_dma + 3);
}

TEST_F(PagesTest, UnknownReturnedIovaIsCountedNotFreed) {
  auto pas = give_all(2);
  Status st{KBV_PENDING};
  ASSERT_EQ(pages->take(2, [&](Status s) { st = s; }), KBV_PENDING);
  posted();
  return_pages(slot, {pas[0], 0xdead000});
  // Firmware answered with as many entries as asked: the take is over.
  EXPECT_TRUE(st.is_ok());
  EXPECT_TRUE(fw.rung().empty());
  EXPECT_EQ(pages->stats().unknown_iova, 1u);
  EXPECT_EQ(pages->pages_held(), 1u);
  EXPECT_TRUE(pages->holds(pas[1]));
}

TEST_F(PagesTest, ReclaimAllTakesEveryPageBack) {
  auto pas = give_all(600);
  ASSERT_EQ(pages->pages_held(), 600u);
  Status st{KBV_PENDING};
  ASSERT_EQ(pages->reclaim_all([&](Status s) { st = s; }), KBV_PENDING);
  std::vector<uint64_t> returned;
  for (int round = 0; round < 10 && st == KBV_PENDING; ++round) {
    auto in = posted();
    const uint32_t want = be32(in, 12);
    EXPECT_LE(want, PageManager::kMaxPagesPerCmd);
    std::vector<uint64_t> chunk;
    for (uint64_t p : pas) {
      if (chunk.size() == want) break;
      if (pages->holds(p)) chunk.push_back(p);
    }
    return_pages(slot, chunk);
  }
  EXPECT_TRUE(st.is_ok());
  EXPECT_EQ(pages->pages_held(), 0u);
  EXPECT_EQ(pages->stats().returned, 600u);
  EXPECT_EQ(dev.live_dma(), baseline_dma);
  // Nothing held: done at once.
  EXPECT_EQ(pages->reclaim_all([](Status) {}), KBV_SUCCESS);
}

TEST_F(PagesTest, ReclaimStopsWhenFirmwareKeepsPages) {
  give_all(3);
  Status st{KBV_PENDING};
  ASSERT_EQ(pages->reclaim_all([&](Status s) { st = s; }), KBV_PENDING);
  posted();
  return_pages(slot, {});
  EXPECT_EQ(st, KBV_ERR_BUSY);
  EXPECT_EQ(pages->pages_held(), 3u);
}

TEST_F(PagesTest, DestructorFreesPagesStillHeld) {
  give_all(4);
  EXPECT_EQ(dev.live_dma(), baseline_dma + 4);
  pages.reset();
  EXPECT_EQ(dev.live_dma(), baseline_dma);
}

}  // namespace
}  // namespace kbv::hca
