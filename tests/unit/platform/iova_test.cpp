// SPDX-License-Identifier: BSD-3-Clause
// IovaAllocator: alignment, exhaustion, coalescing, never IOVA 0.
#include "platform/iova.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <set>

namespace kbv::platform {
namespace {

constexpr uint64_t k4K = 4096;
constexpr uint64_t k2M = 2ull << 20;

TEST(Iova, NeverHandsOutZero) {
  IovaAllocator a;
  ASSERT_TRUE(a.add_range({0, 16 * k4K - 1}));
  // 15 granules usable: the first is withheld.
  EXPECT_EQ(a.free_bytes(), 15 * k4K);
  std::set<uint64_t> seen;
  for (int i = 0; i < 15; ++i) {
    Result<uint64_t> r = a.alloc(k4K);
    ASSERT_TRUE(r) << i;
    EXPECT_NE(*r, 0u);
    EXPECT_TRUE(seen.insert(*r).second);
  }
  EXPECT_EQ(a.alloc(k4K).status(), KBV_ERR_NO_RESOURCES);
}

TEST(Iova, RoundsRangesInwardAndSizesUp) {
  IovaAllocator a;
  ASSERT_TRUE(a.add_range({0x10001, 0x13ffe}));  // whole granules: 0x11000..0x12fff
  ASSERT_EQ(a.ranges().size(), 1u);
  EXPECT_EQ(a.ranges()[0].start, 0x11000u);
  EXPECT_EQ(a.ranges()[0].end, 0x12fffu);
  Result<uint64_t> r = a.alloc(1);
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, 0x11000u);
  EXPECT_EQ(a.allocated_size(*r), k4K);
  // A range with no whole granule is ignored.
  ASSERT_TRUE(a.add_range({0x20001, 0x20fff}));
  EXPECT_EQ(a.ranges().size(), 1u);
}

TEST(Iova, HonoursAlignment) {
  IovaAllocator a;
  ASSERT_TRUE(a.add_range({0x1000, (1ull << 32) - 1}));
  Result<uint64_t> small = a.alloc(k4K);
  ASSERT_TRUE(small);
  EXPECT_EQ(*small % k4K, 0u);
  Result<uint64_t> big = a.alloc(3 * k2M, k2M);
  ASSERT_TRUE(big);
  EXPECT_EQ(*big % k2M, 0u);
  EXPECT_NE(*big, 0u);
  Result<uint64_t> odd = a.alloc(k4K, 64 * 1024);
  ASSERT_TRUE(odd);
  EXPECT_EQ(*odd % (64 * 1024), 0u);
  // The padding skipped for alignment stays usable.
  Result<uint64_t> fill = a.alloc(k4K);
  ASSERT_TRUE(fill);
  EXPECT_LT(*fill, *big);
}

TEST(Iova, RejectsBadArguments) {
  IovaAllocator a;
  ASSERT_TRUE(a.add_range({0x1000, 0xfffff}));
  EXPECT_EQ(a.alloc(0).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(a.alloc(k4K, 3 * k4K).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(a.free(0x5000), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(a.add_range({0x5000, 0x4000}), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(a.add_range({0x80000, 0x1fffff}), KBV_ERR_ALREADY_EXISTS);
  EXPECT_EQ(a.alloc(std::numeric_limits<uint64_t>::max()).status(), KBV_ERR_NO_RESOURCES);
}

TEST(Iova, ExhaustionThenFreeMakesRoom) {
  IovaAllocator a;
  ASSERT_TRUE(a.add_range({0x100000, 0x100000 + 4 * k4K - 1}));
  Result<uint64_t> all = a.alloc(4 * k4K);
  ASSERT_TRUE(all);
  EXPECT_EQ(a.alloc(k4K).status(), KBV_ERR_NO_RESOURCES);
  ASSERT_TRUE(a.free(*all));
  EXPECT_EQ(a.free(*all), KBV_ERR_INVALID_ARGUMENT);  // double free
  EXPECT_TRUE(a.alloc(4 * k4K));
}

TEST(Iova, FreeCoalescesNeighbours) {
  IovaAllocator a;
  const uint64_t base = 0x200000;
  ASSERT_TRUE(a.add_range({base, base + 8 * k4K - 1}));
  uint64_t blk[4];
  for (auto& b : blk) {
    Result<uint64_t> r = a.alloc(2 * k4K);
    ASSERT_TRUE(r);
    b = *r;
  }
  EXPECT_EQ(a.free_extent_count(), 0u);
  ASSERT_TRUE(a.free(blk[0]));
  ASSERT_TRUE(a.free(blk[2]));
  EXPECT_EQ(a.free_extent_count(), 2u);
  // No 6-granule hole yet.
  EXPECT_EQ(a.alloc(6 * k4K).status(), KBV_ERR_NO_RESOURCES);
  ASSERT_TRUE(a.free(blk[1]));  // joins both neighbours
  EXPECT_EQ(a.free_extent_count(), 1u);
  Result<uint64_t> r = a.alloc(6 * k4K);
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, base);
  ASSERT_TRUE(a.free(blk[3]));
  ASSERT_TRUE(a.free(*r));
  EXPECT_EQ(a.free_extent_count(), 1u);
  EXPECT_EQ(a.free_bytes(), 8 * k4K);
  EXPECT_EQ(a.allocation_count(), 0u);
}

TEST(Iova, SeveralRangesAreUsedInOrder) {
  IovaAllocator a;
  ASSERT_TRUE(a.add_range({0x100000000ull, 0x100000000ull + k2M - 1}));
  ASSERT_TRUE(a.add_range({0x10000, 0x10000 + k4K - 1}));
  Result<uint64_t> first = a.alloc(k4K);
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, 0x10000u);
  Result<uint64_t> second = a.alloc(k4K);
  ASSERT_TRUE(second);
  EXPECT_EQ(*second, 0x100000000ull);
  // Ranges never merge across a gap, even after frees.
  ASSERT_TRUE(a.free(*first));
  ASSERT_TRUE(a.free(*second));
  EXPECT_EQ(a.free_extent_count(), 2u);
  EXPECT_EQ(a.alloc(k2M + k4K).status(), KBV_ERR_NO_RESOURCES);
}

TEST(Iova, RangeToTopOfAddressSpace) {
  IovaAllocator a;
  ASSERT_TRUE(a.add_range({0, std::numeric_limits<uint64_t>::max()}));
  EXPECT_EQ(a.free_bytes(), 0 - k4K);
  Result<uint64_t> r = a.alloc(k2M, k2M);
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, k2M);  // 0 withheld, so the first 2 MiB-aligned block is at 2 MiB
  ASSERT_TRUE(a.free(*r));
  EXPECT_EQ(a.free_extent_count(), 1u);
}

TEST(Iova, LargerGranuleFromIommu) {
  IovaAllocator a(64 * 1024);
  ASSERT_TRUE(a.add_range({0, (1ull << 24) - 1}));
  Result<uint64_t> r = a.alloc(1);
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, 64u * 1024);
  EXPECT_EQ(a.allocated_size(*r), 64u * 1024);
  // An alignment below the granule is met by the granule's own alignment.
  Result<uint64_t> r2 = a.alloc(k4K, k4K);
  ASSERT_TRUE(r2);
  EXPECT_EQ(*r2 % (64 * 1024), 0u);
  EXPECT_EQ(*r2, 2u * 64 * 1024);
}

}  // namespace
}  // namespace kbv::platform
