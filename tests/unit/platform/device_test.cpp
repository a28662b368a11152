// SPDX-License-Identifier: BSD-3-Clause
// DeviceHandle: VfioDevice + DmaContext over the fake VFIO kernel.
#include "platform/device.hpp"

#include <gtest/gtest.h>

#include "fake_sys.hpp"

namespace kbv::platform {
namespace {

using test::FakeSys;

TEST(DeviceHandle, DmaGoesThroughTheContainerAndTearsDownInOrder) {
  FakeSys sys;
  {
    Result<std::unique_ptr<DeviceHandle>> h = DeviceHandle::open(sys, FakeSys::kBdf);
    ASSERT_TRUE(h) << h.status().to_string();
    DeviceHandle& dev = **h;
    EXPECT_EQ(dev.pci().address.to_string(), FakeSys::kBdf);
    EXPECT_EQ(dev.dma().numa_node(), 0);
    EXPECT_TRUE(dev.bar0().mapped());

    Result<DmaBuffer> b = dev.dma().alloc(8192);
    ASSERT_TRUE(b);
    ASSERT_EQ(sys.dma.count(b->iova()), 1u);
    EXPECT_EQ(sys.dma[b->iova()].vaddr, reinterpret_cast<uintptr_t>(b->va()));
    EXPECT_NE(b->iova(), 0u);
    bool inside = false;
    for (const IovaRange& r : sys.ranges)
      inside |= b->iova() >= r.start && b->iova() + b->size() - 1 <= r.end;
    EXPECT_TRUE(inside);

    PagePool pool(dev.dma());
    std::vector<uint64_t> pages;
    ASSERT_TRUE(pool.alloc_pages(4, pages));
    EXPECT_EQ(sys.dma.size(), 2u);
    EXPECT_TRUE(pool.free_pages(pages));
    EXPECT_EQ(sys.dma.size(), 1u);
  }
  EXPECT_TRUE(sys.dma.empty());
  EXPECT_EQ(sys.open_fds(), 0);
  EXPECT_FALSE(sys.bar0_mapped);
}

TEST(DeviceHandle, AcceptsTheVfioUri) {
  FakeSys sys;
  Result<std::unique_ptr<DeviceHandle>> h =
      DeviceHandle::open(sys, std::string("vfio:") + FakeSys::kBdf);
  ASSERT_TRUE(h) << h.status().to_string();
  EXPECT_EQ((*h)->pci().address.to_string(), FakeSys::kBdf);
  EXPECT_EQ(DeviceHandle::open(sys, "sim:a").status(), KBV_ERR_INVALID_ARGUMENT);
}

TEST(DeviceHandle, OpenFailurePropagates) {
  FakeSys sys;
  sys.viable = false;
  EXPECT_EQ(DeviceHandle::open(sys, FakeSys::kBdf).status(), KBV_ERR_INVALID_STATE);
  EXPECT_EQ(sys.open_fds(), 0);
}

}  // namespace
}  // namespace kbv::platform
