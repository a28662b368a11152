// SPDX-License-Identifier: BSD-3-Clause
// PlatformDeviceIo over the platform layer's fake VFIO kernel
// (tests/unit/platform/fake_sys.hpp): DMA through the container, firmware
// pages from one pooled mapping, bus master + MSI-X, and a command queue
// programmed through the real Bar (with the model-style write trap).
#include "hca/io/platform_io.hpp"

#include <gtest/gtest.h>

#include "../../platform/fake_sys.hpp"
#include "hca/cmdq/cmdq.hpp"
#include "hca/prm/init_seg.hpp"

namespace kbv::hca {
namespace {

using platform::test::FakeSys;

class PlatformIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto h = platform::DeviceHandle::open(sys, FakeSys::kBdf);
    ASSERT_TRUE(h) << h.status().to_string();
    dev = std::move(*h);
    io = std::make_unique<PlatformDeviceIo>(*dev);
  }
  void TearDown() override {
    io.reset();
    dev.reset();
    EXPECT_TRUE(sys.dma.empty());
    EXPECT_EQ(sys.open_fds(), 0);
  }
  FakeSys sys;
  std::unique_ptr<platform::DeviceHandle> dev;
  std::unique_ptr<PlatformDeviceIo> io;
};

TEST_F(PlatformIoTest, FirmwarePagesShareOnePooledMapping) {
  std::vector<DmaBlock> pages;
  for (int i = 0; i < 100; ++i) {
    auto p = io->dma_alloc(4096, 4096);
    ASSERT_TRUE(p) << p.status().to_string();
    EXPECT_EQ(p->iova % 4096, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p->va) % 4096, 0u);
    EXPECT_EQ(p->va[0], std::byte{0});
    pages.push_back(*p);
  }
  EXPECT_EQ(sys.dma.size(), 1u);  // one 2 MiB block
  auto big = io->dma_alloc(64 * 1024, 4096);
  ASSERT_TRUE(big);
  EXPECT_EQ(sys.dma.size(), 2u);
  EXPECT_EQ(sys.dma.count(big->iova), 1u);
  EXPECT_EQ(io->live_blocks(), 101u);
  for (const DmaBlock& p : pages) io->dma_free(p);
  io->dma_free(*big);
  EXPECT_EQ(io->live_blocks(), 0u);
  EXPECT_TRUE(sys.dma.empty());
}

TEST_F(PlatformIoTest, RejectsLargeAlignment) {
  EXPECT_EQ(io->dma_alloc(8192, 8192).status(), KBV_ERR_NOT_SUPPORTED);
  EXPECT_EQ(io->dma_alloc(0, 4096).status(), KBV_ERR_INVALID_ARGUMENT);
}

TEST_F(PlatformIoTest, EnableDeviceTurnsOnBusMasterAndMsix) {
  ASSERT_TRUE(io->enable_device(2).is_ok());
  EXPECT_EQ(sys.config.at(4) & 0x6, 0x6);  // memory space + bus master
  EXPECT_EQ(sys.msix_fds.size(), 2u);
  auto fd = io->msix_eventfd(1);
  ASSERT_TRUE(fd);
  EXPECT_GE(*fd, 0);
  EXPECT_EQ(io->msix_eventfd(5).status(), KBV_ERR_NOT_SUPPORTED);
  io->disable_device();
  EXPECT_EQ(sys.config.at(4) & 0x4, 0);  // bus master off
  EXPECT_EQ(io->msix_eventfd(1).status(), KBV_ERR_NOT_SUPPORTED);
}

TEST_F(PlatformIoTest, CommandQueueIsProgrammedThroughTheBar) {
  auto be32 = [&](uint64_t off, uint32_t v) { platform::mmio_write32_be(sys.bar0() + off, v); };
  be32(prm::init_seg::kCmdifRevFwSubOff, prm::kCmdifRev << 16);
  be32(prm::init_seg::kCmdqAddrLSzOff, 5u << 4 | 6u);
  {
    auto q = CmdQueue::create(*io);
    ASSERT_TRUE(q) << q.status().to_string();
    EXPECT_EQ((*q)->slots(), 32u);
    // Both address dwords went out as MMIO stores the model's trap sees.
    ASSERT_GE(sys.trap.writes.size(), 2u);
    EXPECT_EQ(sys.trap.writes[0].offset, prm::init_seg::kCmdqAddrHOff);
    EXPECT_EQ(sys.trap.writes[1].offset, prm::init_seg::kCmdqAddrLSzOff);
    const uint64_t iova = uint64_t{static_cast<uint32_t>(sys.trap.writes[0].value)} << 32 |
                          static_cast<uint32_t>(sys.trap.writes[1].value);
    EXPECT_EQ(iova, (*q)->queue_iova());
    EXPECT_EQ(sys.dma.size(), 1u);  // the queue page (pooled)
  }
  EXPECT_EQ(io->live_blocks(), 0u);
}

}  // namespace
}  // namespace kbv::hca
