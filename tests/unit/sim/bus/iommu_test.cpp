// SPDX-License-Identifier: BSD-3-Clause
// IommuMap (src/sim/bus/iommu.cpp): VFIO type1 v2 map/unmap rules, DMA through
// the map, faults counted and returned (never a crash).
#include "sim/bus/iommu_map.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace kbv::sim {
namespace {

constexpr uint64_t kPage = 4096;

struct Pages {
  explicit Pages(std::size_t n) : size(n * kPage) {
    p = static_cast<std::byte*>(std::aligned_alloc(kPage, size));
    std::memset(p, 0, size);
  }
  ~Pages() { std::free(p); }
  std::byte* p;
  std::size_t size;
};

TEST(SimIommu, MapRejectsMisalignedEmptyAndNoPermission) {
  IommuMap m;
  Pages buf(2);
  EXPECT_EQ(m.map(0x1000, buf.p, 0, Iommu::kRead), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(m.map(0x1001, buf.p, kPage, Iommu::kRead), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(m.map(0x1000, buf.p + 8, kPage, Iommu::kRead), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(m.map(0x1000, buf.p, 100, Iommu::kRead), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(m.map(0x1000, buf.p, kPage, 0), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(m.map(0x1000, buf.p, kPage, 8), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(m.mappings().empty());
}

TEST(SimIommu, MapRejectsIovaOutsideRangesAndMsiWindow) {
  IommuMap m;
  Pages buf(1);
  EXPECT_EQ(m.map(0xFEE00000ull, buf.p, kPage, Iommu::kRead), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(m.map(1ull << 48, buf.p, kPage, Iommu::kRead), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(m.map(0xFFFFFFFFFFFFF000ull, buf.p, 2 * kPage, Iommu::kRead),
            KBV_ERR_INVALID_ARGUMENT);  // wraps
  EXPECT_TRUE(m.map(0xFEF00000ull, buf.p, kPage, Iommu::kRead).is_ok());
}

TEST(SimIommu, OverlappingMapRejected) {
  IommuMap m;
  Pages buf(4);
  ASSERT_TRUE(m.map(0x10000, buf.p, 2 * kPage, Iommu::kRead | Iommu::kWrite).is_ok());
  EXPECT_EQ(m.map(0x10000, buf.p, kPage, Iommu::kRead), KBV_ERR_ALREADY_EXISTS);
  EXPECT_EQ(m.map(0x11000, buf.p, kPage, Iommu::kRead), KBV_ERR_ALREADY_EXISTS);
  EXPECT_EQ(m.map(0xF000, buf.p, 2 * kPage, Iommu::kRead), KBV_ERR_ALREADY_EXISTS);
  EXPECT_EQ(m.map(0x8000, buf.p, 0x10 * kPage, Iommu::kRead), KBV_ERR_ALREADY_EXISTS);
  EXPECT_TRUE(m.map(0x12000, buf.p + 2 * kPage, kPage, Iommu::kRead).is_ok());
  EXPECT_TRUE(m.map(0xF000, buf.p + 3 * kPage, kPage, Iommu::kRead).is_ok());
  EXPECT_EQ(m.mappings().size(), 3u);
}

TEST(SimIommu, MappingLimitIsEnforced) {
  IommuMap m(IommuMap::default_ranges(), 2);
  Pages buf(3);
  EXPECT_EQ(m.available(), 2u);
  ASSERT_TRUE(m.map(0x1000, buf.p, kPage, Iommu::kRead).is_ok());
  ASSERT_TRUE(m.map(0x2000, buf.p + kPage, kPage, Iommu::kRead).is_ok());
  EXPECT_EQ(m.available(), 0u);
  EXPECT_EQ(m.map(0x3000, buf.p + 2 * kPage, kPage, Iommu::kRead), KBV_ERR_NO_RESOURCES);
}

TEST(SimIommu, UnmapRemovesWholeMappingsAndRefusesToSplit) {
  IommuMap m;
  Pages buf(4);
  ASSERT_TRUE(m.map(0x10000, buf.p, 2 * kPage, Iommu::kRead).is_ok());
  ASSERT_TRUE(m.map(0x20000, buf.p + 2 * kPage, 2 * kPage, Iommu::kRead).is_ok());
  uint64_t n = 99;
  EXPECT_EQ(m.unmap(0x11000, kPage, &n), KBV_ERR_INVALID_ARGUMENT);  // tail of a mapping
  EXPECT_EQ(m.unmap(0x10000, kPage, &n), KBV_ERR_INVALID_ARGUMENT);  // head of a mapping
  EXPECT_EQ(m.unmap(0x10000, 0, &n), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(m.unmap(0x10001, kPage, &n), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(m.mappings().size(), 2u);
  ASSERT_TRUE(m.unmap(0x30000, kPage, &n).is_ok());  // nothing there
  EXPECT_EQ(n, 0u);
  ASSERT_TRUE(m.unmap(0x0, 0x100000, &n).is_ok());  // covers both
  EXPECT_EQ(n, 4 * kPage);
  EXPECT_TRUE(m.mappings().empty());
}

TEST(SimIommu, DmaAcrossAdjacentMappings) {
  IommuMap m;
  Pages a(1), b(1);
  ASSERT_TRUE(m.map(0x40000, a.p, kPage, Iommu::kRead | Iommu::kWrite).is_ok());
  ASSERT_TRUE(m.map(0x41000, b.p, kPage, Iommu::kRead | Iommu::kWrite).is_ok());
  std::vector<std::byte> src(64);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = std::byte(i + 1);
  ASSERT_TRUE(m.dma_write(0x41000 - 32, src).is_ok());
  EXPECT_EQ(std::memcmp(a.p + kPage - 32, src.data(), 32), 0);
  EXPECT_EQ(std::memcmp(b.p, src.data() + 32, 32), 0);
  std::vector<std::byte> dst(64);
  ASSERT_TRUE(m.dma_read(0x41000 - 32, dst).is_ok());
  EXPECT_EQ(dst, src);
  EXPECT_EQ(m.fault_count(), 0u);
}

TEST(SimIommu, StraddlingUnmappedEndFaultsAndWritesNothing) {
  IommuMap m;
  Pages a(1);
  ASSERT_TRUE(m.map(0x40000, a.p, kPage, Iommu::kRead | Iommu::kWrite).is_ok());
  std::vector<std::byte> src(64, std::byte{0xAB});
  EXPECT_EQ(m.dma_write(0x41000 - 32, src), KBV_ERR_IOMMU_FAULT);
  for (std::size_t i = 0; i < kPage; ++i) ASSERT_EQ(a.p[i], std::byte{0}) << i;
  EXPECT_EQ(m.fault_count(), 1u);
  EXPECT_EQ(m.last_fault().iova, 0x41000u - 32);
  EXPECT_EQ(m.last_fault().len, 64u);
  EXPECT_EQ(m.last_fault().dir, DmaDir::kWrite);
  std::vector<std::byte> dst(8);
  EXPECT_EQ(m.dma_read(0x3F000, dst), KBV_ERR_IOMMU_FAULT);  // before any mapping
  EXPECT_EQ(m.fault_count(), 2u);
  EXPECT_EQ(m.last_fault().dir, DmaDir::kRead);
}

TEST(SimIommu, MissingWritePermissionFaults) {
  IommuMap m;
  Pages a(1);
  ASSERT_TRUE(m.map(0x50000, a.p, kPage, Iommu::kRead).is_ok());
  std::vector<std::byte> src(8, std::byte{1});
  EXPECT_EQ(m.dma_write(0x50000, src), KBV_ERR_IOMMU_FAULT);
  EXPECT_EQ(a.p[0], std::byte{0});
  EXPECT_EQ(m.translate(0x50000, 8, Iommu::kWrite), nullptr);
  EXPECT_EQ(m.translate(0x50000, 8, Iommu::kRead), a.p);
  EXPECT_EQ(m.fault_count(), 2u);
  Pages w(1);
  ASSERT_TRUE(m.map(0x60000, w.p, kPage, Iommu::kWrite).is_ok());
  std::vector<std::byte> dst(8);
  EXPECT_EQ(m.dma_read(0x60000, dst), KBV_ERR_IOMMU_FAULT);  // write-only
  EXPECT_EQ(m.fault_count(), 3u);
}

TEST(SimIommu, TranslateNeedsOneMapping) {
  IommuMap m;
  Pages a(1), b(1);
  ASSERT_TRUE(m.map(0x40000, a.p, kPage, Iommu::kRead).is_ok());
  ASSERT_TRUE(m.map(0x41000, b.p, kPage, Iommu::kRead).is_ok());
  EXPECT_EQ(m.translate(0x40010, 16, Iommu::kRead), a.p + 16);
  EXPECT_EQ(m.translate(0x41000 - 8, 16, Iommu::kRead), nullptr);  // spans two
  EXPECT_EQ(m.translate(0x90000, 16, Iommu::kRead), nullptr);
  EXPECT_EQ(m.fault_count(), 2u);
  uint64_t n = 0;
  ASSERT_TRUE(m.unmap(0x40000, kPage, &n).is_ok());
  EXPECT_EQ(m.translate(0x40010, 16, Iommu::kRead), nullptr);
  EXPECT_EQ(m.fault_count(), 3u);
}

TEST(SimIommu, ClearDropsEverything) {
  IommuMap m;
  Pages a(1);
  ASSERT_TRUE(m.map(0x40000, a.p, kPage, Iommu::kRead).is_ok());
  m.clear();
  std::vector<std::byte> dst(4);
  EXPECT_EQ(m.dma_read(0x40000, dst), KBV_ERR_IOMMU_FAULT);
}

// dma_copy_*: every size and alignment copies exactly its bytes, whether it
// takes the single-word path (aligned 1/2/4/8) or memcpy, in both directions,
// and touches nothing around the range.
TEST(SimIommu, DmaCopyEverySizeAndAlignment) {
  alignas(8) std::byte host[32];
  std::byte dev[16];
  for (std::size_t off = 0; off < 8; ++off) {
    for (std::size_t n = 1; n <= 16; ++n) {
      for (std::size_t i = 0; i < sizeof host; ++i) host[i] = std::byte(0xEE);
      for (std::size_t i = 0; i < n; ++i) dev[i] = std::byte(i * 7 + off + 1);
      dma_copy_to_host(host + off, dev, n);
      for (std::size_t i = 0; i < sizeof host; ++i) {
        const bool in = i >= off && i < off + n;
        EXPECT_EQ(host[i], in ? std::byte((i - off) * 7 + off + 1) : std::byte(0xEE))
            << "write off " << off << " n " << n << " byte " << i;
      }
      std::byte back[16];
      std::memset(back, 0x55, sizeof back);
      dma_copy_from_host(back, host + off, n);
      EXPECT_EQ(std::memcmp(back, dev, n), 0) << "read off " << off << " n " << n;
      if (n < sizeof back) {
        EXPECT_EQ(back[n], std::byte(0x55));
      }
    }
  }
}

}  // namespace
}  // namespace kbv::sim
