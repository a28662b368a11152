// SPDX-License-Identifier: BSD-3-Clause
// src/verbs/fast_table.hpp: lock-free handle lookup of the fast path.
#include "verbs/fast_table.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

namespace kbv::verbs {
namespace {

constexpr uint64_t handle(uint32_t gen, uint32_t slot) { return uint64_t{gen} << 32 | (slot + 1); }

TEST(FastTable, ResolvesOnlyTheExactHandle) {
  auto tp = std::make_unique<FastTable<int>>();  // 1 MiB: not on the stack
  FastTable<int>& t = *tp;
  int a = 1, b = 2;
  constexpr uint32_t kFlat = FastTable<int>::kFlat;
  EXPECT_EQ(t.get(handle(1, 0)), nullptr);          // nothing put
  EXPECT_EQ(t.get(handle(1, kFlat + 5)), nullptr);  // nothing put: no chunk
  ASSERT_TRUE(t.put(handle(1, 0), &a));
  ASSERT_TRUE(t.put(handle(3, 5000), &b));
  EXPECT_EQ(t.get(handle(1, 0)), &a);
  EXPECT_EQ(t.get(handle(3, 5000)), &b);
  EXPECT_EQ(t.get_flat(handle(1, 0)), &a);
  EXPECT_EQ(t.get_flat(handle(3, 5000)), &b);
  EXPECT_EQ(t.get_flat(handle(2, 0)), nullptr) << "wrong generation";
  EXPECT_EQ(t.get_flat(0), nullptr);
  EXPECT_EQ(t.get_flat(uint64_t{9} << 32), nullptr) << "slot index 0 means none";
  // The last flat slot and the first slots of the first and second chunks.
  ASSERT_TRUE(t.put(handle(4, kFlat - 1), &a));
  ASSERT_TRUE(t.put(handle(5, kFlat), &b));
  ASSERT_TRUE(t.put(handle(6, kFlat + 4096), &a));
  EXPECT_EQ(t.get_flat(handle(4, kFlat - 1)), &a);
  EXPECT_EQ(t.get(handle(4, kFlat - 1)), &a);
  EXPECT_EQ(t.get(handle(5, kFlat)), &b);
  EXPECT_EQ(t.get_flat(handle(5, kFlat)), nullptr) << "beyond the flat array: the general path";
  EXPECT_EQ(t.get(handle(6, kFlat + 4096)), &a);
  EXPECT_EQ(t.get(handle(6, kFlat + 4095)), nullptr) << "empty slot of a chunk";
  t.erase(handle(5, kFlat));
  EXPECT_EQ(t.get(handle(5, kFlat)), nullptr);
  ASSERT_TRUE(t.put(handle(1, (1u << 24) - 1), &b));  // the last slot
  EXPECT_EQ(t.get(handle(1, (1u << 24) - 1)), &b);
  EXPECT_EQ(t.get(handle(2, 0)), nullptr) << "wrong generation";
  EXPECT_EQ(t.get(handle(1, 1)), nullptr) << "empty slot";
  EXPECT_EQ(t.get(0), nullptr);
  EXPECT_EQ(t.get(uint64_t{1} << 32), nullptr) << "slot index 0 means none";
  EXPECT_EQ(t.get(handle(1, 1u << 24)), nullptr) << "beyond the table";
  EXPECT_FALSE(t.put(handle(1, 1u << 24), &a));
  t.erase(handle(2, 0));  // another generation: no effect
  EXPECT_EQ(t.get(handle(1, 0)), &a);
  t.erase(handle(1, 0));
  EXPECT_EQ(t.get(handle(1, 0)), nullptr);
  ASSERT_TRUE(t.put(handle(2, 0), &b));  // slot reused by a new generation
  EXPECT_EQ(t.get(handle(1, 0)), nullptr);
  EXPECT_EQ(t.get(handle(2, 0)), &b);
}

TEST(FastTable, ReadersNeverSeeAnotherGenerationsPointer) {
  auto tp = std::make_unique<FastTable<int>>();
  FastTable<int>& t = *tp;
  int objs[2] = {0, 1};
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::thread reader([&] {
    while (!stop.load()) {
      int* p = t.get(handle(7, 3));
      if (p && p != &objs[1]) ++bad;
      p = t.get_flat(handle(7, 3));
      if (p && p != &objs[1]) ++bad;
    }
  });
  for (int i = 0; i < 20000; ++i) {
    const uint32_t gen = (i % 2) ? 7 : 8;
    ASSERT_TRUE(t.put(handle(gen, 3), &objs[gen == 7 ? 1 : 0]));
    t.erase(handle(gen, 3));
  }
  stop = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace kbv::verbs
