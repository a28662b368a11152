// SPDX-License-Identifier: BSD-3-Clause
// DmaContext without an IOMMU (dma.hpp, the UIO backend's view): buffers
// carved from pinned 2 MiB pages at their physical addresses, refusal of
// memory that is not physically contiguous, per-page addresses of
// registrations, no huge pages at create, and every slab returned — against
// a mapper that answers physical addresses like /proc/self/pagemap (2 MiB
// virtual chunks physically contiguous, scattered downwards).
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "platform/dma.hpp"

namespace kbv::platform {
namespace {

constexpr uint64_t k4K = 4096;
constexpr uint64_t k2M = 2ull << 20;

class PhysMapper final : public DmaMapper {
 public:
  Status dma_map(void* va, uint64_t iova, uint64_t size, uint32_t) override {
    std::vector<uint64_t> pa;
    if (Status s = physical_pages(va, size, pa); !s) return s;
    if (pa[0] != iova) return KBV_ERR_INVALID_ARGUMENT;  // pins what it was told
    pinned[iova] += 1;
    return Status::ok();
  }
  Status dma_unmap(uint64_t iova, uint64_t) override {
    auto it = pinned.find(iova);
    if (it == pinned.end()) return KBV_ERR_INVALID_ARGUMENT;
    if (--it->second == 0) pinned.erase(it);
    return Status::ok();
  }
  std::vector<IovaRange> iova_ranges() const override { return {{k4K, (1ull << 52) - 1}}; }
  uint64_t iova_page_size() const override { return k4K; }
  bool addresses_are_physical() const override { return true; }
  Status physical_pages(const void* va, uint64_t size, std::vector<uint64_t>& out) override {
    const auto start = reinterpret_cast<uintptr_t>(va);
    if ((start | size) % k4K) return KBV_ERR_INVALID_ARGUMENT;
    for (uintptr_t p = start; p < start + size; p += k4K) {
      const uintptr_t chunk = p & ~(k2M - 1);
      auto [it, fresh] = chunks.try_emplace(chunk, 0);
      if (fresh) it->second = (next_top -= k2M);
      out.push_back(it->second + (p - chunk));
    }
    return Status::ok();
  }
  std::map<uintptr_t, uint64_t> chunks;
  uint64_t next_top = 1ull << 40;
  std::map<uint64_t, int> pinned;
};

// 2 MiB-aligned "huge pages" from ordinary memory; counts what is live.
class FakeHugeHost final : public HostMemory {
 public:
  void* alloc(size_t size, size_t page_size, int) override {
    if (page_size != k2M || huge_left == 0) {
      errno = ENOMEM;
      return nullptr;
    }
    --huge_left;
    void* raw =
        ::mmap(nullptr, size + k2M, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    const auto r = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t a = (r + k2M - 1) & ~(k2M - 1);
    if (a > r) ::munmap(raw, a - r);
    ::munmap(reinterpret_cast<void*>(a + size), r + k2M - a);
    std::memset(reinterpret_cast<void*>(a), 0, size);
    live[reinterpret_cast<void*>(a)] = size;
    return reinterpret_cast<void*>(a);
  }
  void free(void* p, size_t size) override {
    live.erase(p);
    ::munmap(p, size);
    ++huge_left;
  }
  size_t huge_left = 16;
  std::map<void*, size_t> live;
};

TEST(DmaPhysical, BuffersComeFromPinnedHugePagesAtPhysicalAddresses) {
  PhysMapper mapper;
  FakeHugeHost host;
  {
    auto ctx =
        DmaContext::create(mapper, {.numa_node = -1, .allow_huge_pages = true, .host = &host});
    ASSERT_TRUE(ctx.has_value()) << ctx.status().to_string();
    EXPECT_EQ(host.live.size(), 1u);  // the first slab
    EXPECT_EQ(mapper.pinned.size(), 1u);
    auto a = (*ctx)->alloc(5000);
    auto b = (*ctx)->alloc(64 * 1024, PagePolicy::kAuto, 64 * 1024);
    ASSERT_TRUE(a.has_value() && b.has_value());
    EXPECT_EQ(a->size(), 8192u);
    for (const DmaBuffer* x : {&*a, &*b}) {
      std::vector<uint64_t> pa;
      ASSERT_EQ(mapper.physical_pages(x->va(), x->size(), pa), KBV_SUCCESS);
      EXPECT_EQ(x->iova(), pa[0]);  // the device address is the physical one
      for (size_t i = 1; i < pa.size(); ++i) EXPECT_EQ(pa[i], pa[0] + i * k4K);
    }
    EXPECT_EQ(b->iova() % (64 * 1024), 0u);
    EXPECT_EQ(host.live.size(), 1u);  // both carved from the one slab
    // A whole 2 MiB block (PagePool's) takes a second slab.
    auto c = (*ctx)->alloc(k2M, PagePolicy::kAuto, k2M);
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(host.live.size(), 2u);
    // 4 MiB: two huge pages the mapper scatters, not contiguous.
    EXPECT_EQ((*ctx)->alloc(2 * k2M).status(), KBV_ERR_NO_MEMORY);
    EXPECT_EQ(host.live.size(), 2u);  // the failed attempt gave its pages back
    // Freed space is reused (zeroed again).
    std::memset(a->va(), 0xab, a->size());
    const uint64_t old = a->iova();
    a->reset();
    auto d = (*ctx)->alloc(8192);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->iova(), old);
    EXPECT_EQ(static_cast<unsigned char*>(d->va())[100], 0);
  }
  EXPECT_TRUE(host.live.empty());  // every slab went back
  EXPECT_TRUE(mapper.pinned.empty());
}

TEST(DmaPhysical, RegistrationListsEachPagesPhysicalAddress) {
  PhysMapper mapper;
  FakeHugeHost host;
  auto ctx = DmaContext::create(mapper, {.numa_node = -1, .allow_huge_pages = true, .host = &host});
  ASSERT_TRUE(ctx.has_value());
  // A buffer across a 2 MiB boundary: its pages are not contiguous there.
  void* raw = ::mmap(nullptr, 2 * k2M, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(raw, MAP_FAILED);
  const uintptr_t boundary = (reinterpret_cast<uintptr_t>(raw) + k2M) & ~(k2M - 1);
  auto* buf = reinterpret_cast<unsigned char*>(boundary - 2 * k4K + 100);
  {
    auto r = (*ctx)->register_memory(buf, 3 * k4K);
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->mapped_size(), 4 * k4K);
    std::vector<uint64_t> pa;
    ASSERT_EQ(mapper.physical_pages(reinterpret_cast<void*>(boundary - 2 * k4K), 4 * k4K, pa),
              KBV_SUCCESS);
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(r->page_iova(i), pa[i]) << i;
    EXPECT_NE(r->page_iova(2), r->page_iova(1) + k4K);  // across the chunk boundary
    EXPECT_EQ(r->iova(), pa[0] + 100);
    EXPECT_EQ(mapper.pinned.count(pa[0]), 1u);
  }
  EXPECT_EQ(mapper.pinned.size(), 1u);  // only the slab is still pinned
  ::munmap(raw, 2 * k2M);
}

TEST(DmaPhysical, NoHugePagesIsAClearErrorWithNothingLeft) {
  PhysMapper mapper;
  FakeHugeHost host;
  host.huge_left = 0;
  EXPECT_EQ(DmaContext::create(mapper, {.numa_node = -1, .allow_huge_pages = true, .host = &host})
                .status(),
            KBV_ERR_NO_MEMORY);
  host.huge_left = 4;
  EXPECT_EQ(DmaContext::create(mapper, {.numa_node = -1, .allow_huge_pages = false, .host = &host})
                .status(),
            KBV_ERR_NO_MEMORY);
  EXPECT_TRUE(host.live.empty());
  EXPECT_TRUE(mapper.pinned.empty());
}

}  // namespace
}  // namespace kbv::platform
