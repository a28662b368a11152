// SPDX-License-Identifier: BSD-3-Clause
// MailboxPool: chain linking, numbering, tokens, alignment, data copy, reuse
// and growth.
#include "hca/cmdq/mailbox.hpp"

#include <gtest/gtest.h>

#include <set>

#include "../fake_device.hpp"
#include "hca/prm/cmdq.hpp"

namespace kbv::hca {
namespace {

using prm::cmd_prot_block;
using test::FakeDevice;

TEST(Mailbox, ChainIsLinkedNumberedAndStamped) {
  FakeDevice dev;
  MailboxPool pool(dev);
  std::vector<MailboxBlock> chain;
  ASSERT_TRUE(pool.alloc_chain(3, 0xA7, chain).is_ok());
  ASSERT_EQ(chain.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    prm::CRef<cmd_prot_block> b(chain[i].va);
    EXPECT_EQ(chain[i].iova % 1024, 0u);
    EXPECT_EQ(dev.va(chain[i].iova), chain[i].va);
    EXPECT_EQ(b.get(cmd_prot_block::block_num), i);
    EXPECT_EQ(b.get(cmd_prot_block::token), 0xA7u);
    EXPECT_EQ(b.get(cmd_prot_block::next), i + 1 < 3 ? chain[i + 1].iova : 0u);
  }
  std::vector<MailboxBlock> empty;
  ASSERT_TRUE(pool.alloc_chain(0, 1, empty).is_ok());
  EXPECT_TRUE(empty.empty());
}

TEST(Mailbox, DataRoundTripsAcrossBlocks) {
  FakeDevice dev;
  MailboxPool pool(dev);
  std::vector<MailboxBlock> chain;
  ASSERT_TRUE(pool.alloc_chain(3, 1, chain).is_ok());
  std::vector<std::byte> src(1100);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 31 + 7);
  MailboxPool::write_data(chain, src);
  EXPECT_EQ(chain[1].va[0], src[512]);
  EXPECT_EQ(chain[2].va[1100 - 1024 - 1], src[1099]);
  std::vector<std::byte> dst(1100);
  MailboxPool::read_data(chain, dst);
  EXPECT_EQ(dst, src);
}

TEST(Mailbox, BlocksAreReusedZeroedAndThePoolGrows) {
  FakeDevice dev;
  MailboxPool pool(dev);
  std::vector<MailboxBlock> a;
  ASSERT_TRUE(pool.alloc_chain(2, 1, a).is_ok());
  a[0].va[5] = std::byte{0xEE};
  a[1].va[5] = std::byte{0xEE};
  const std::set<uint64_t> freed{a[0].iova, a[1].iova};
  pool.free_chain(a);
  EXPECT_TRUE(a.empty());
  std::vector<MailboxBlock> b;
  ASSERT_TRUE(pool.alloc_chain(1, 2, b).is_ok());
  std::set<uint64_t> seen{b[0].iova};
  EXPECT_EQ(freed.count(b[0].iova), 1u);  // a returned block is handed out again
  EXPECT_EQ(b[0].va[5], std::byte{0});    // zeroed on allocation
  EXPECT_EQ(pool.total_blocks(), 64u);
  std::vector<MailboxBlock> big;
  ASSERT_TRUE(pool.alloc_chain(100, 3, big).is_ok());
  EXPECT_EQ(pool.total_blocks(), 128u);  // grew by one 64 KiB chunk (63 + 64 free)
  for (const MailboxBlock& m : big) EXPECT_TRUE(seen.insert(m.iova).second);
  dev.fail_dma = true;
  std::vector<MailboxBlock> c;
  EXPECT_EQ(pool.alloc_chain(200, 4, c), KBV_ERR_NO_MEMORY);
  EXPECT_TRUE(c.empty());
}

}  // namespace
}  // namespace kbv::hca
