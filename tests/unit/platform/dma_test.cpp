// SPDX-License-Identifier: BSD-3-Clause
// DmaContext, DmaBuffer, DmaRegistration and PagePool against a recording
// DmaMapper and real host memory (no hardware, no root; huge pages optional).
#include "platform/dma.hpp"

#include <gtest/gtest.h>
#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>

namespace kbv::platform {
namespace {

constexpr uint64_t k4K = 4096;
constexpr uint64_t k2M = 2ull << 20;

class RecordingMapper final : public DmaMapper {
 public:
  struct Map {
    void* va;
    uint64_t size;
    uint32_t access;
  };
  Status dma_map(void* va, uint64_t iova, uint64_t size, uint32_t access) override {
    ++map_calls;
    if (fail_map) return KBV_ERR_IOMMU_FAULT;
    if (iova == 0 || iova % k4K || size % k4K || reinterpret_cast<uintptr_t>(va) % k4K)
      return KBV_ERR_INVALID_ARGUMENT;
    bool inside = false;
    for (const IovaRange& r : ranges) inside |= iova >= r.start && iova + size - 1 <= r.end;
    if (!inside) return KBV_ERR_INVALID_ARGUMENT;
    auto next = maps.lower_bound(iova);
    if (next != maps.end() && next->first < iova + size) return KBV_ERR_ALREADY_EXISTS;
    if (next != maps.begin() && std::prev(next)->first + std::prev(next)->second.size > iova)
      return KBV_ERR_ALREADY_EXISTS;
    maps[iova] = {va, size, access};
    return Status::ok();
  }
  Status dma_unmap(uint64_t iova, uint64_t size) override {
    if (fail_unmap) return KBV_ERR_IO;
    auto it = maps.find(iova);
    if (it == maps.end() || it->second.size != size) return KBV_ERR_INVALID_ARGUMENT;
    maps.erase(it);
    return Status::ok();
  }
  std::vector<IovaRange> iova_ranges() const override { return ranges; }
  uint64_t iova_page_size() const override { return k4K; }

  std::vector<IovaRange> ranges = {{0, (1ull << 32) - 1}};
  std::map<uint64_t, Map> maps;
  bool fail_map = false;
  bool fail_unmap = false;
  int map_calls = 0;
};

// Wraps the real host memory; counts live bytes and can refuse huge pages.
class CountingHost final : public HostMemory {
 public:
  void* alloc(size_t size, size_t page_size, int numa_node) override {
    if (page_size == kPageSize2M && refuse_huge) {
      errno = ENOMEM;
      return nullptr;
    }
    if (fail_all) {
      errno = ENOMEM;
      return nullptr;
    }
    void* p = default_host_memory().alloc(size, page_size, numa_node);
    if (p) {
      live[p] = size;
      if (page_size == kPageSize2M) ++huge_allocs;
    }
    return p;
  }
  void free(void* p, size_t size) override {
    EXPECT_EQ(live.count(p), 1u);
    EXPECT_EQ(live[p], size);
    live.erase(p);
    default_host_memory().free(p, size);
  }
  std::map<void*, size_t> live;
  bool refuse_huge = false;
  bool fail_all = false;
  int huge_allocs = 0;
};

bool all_zero(const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i)
    if (b[i] != 0) return false;
  return true;
}

class Dma : public ::testing::Test {
 protected:
  void SetUp() override {
    DmaOptions o;
    o.host = &host;
    o.numa_node = 0;
    Result<std::unique_ptr<DmaContext>> c = DmaContext::create(mapper, o);
    ASSERT_TRUE(c);
    ctx = std::move(*c);
  }
  RecordingMapper mapper;
  CountingHost host;
  std::unique_ptr<DmaContext> ctx;
};

TEST_F(Dma, BufferIsZeroedMappedInsideRangesAndFreed) {
  const uint64_t free_before = ctx->iova_free_bytes();
  {
    Result<DmaBuffer> b = ctx->alloc(10000);
    ASSERT_TRUE(b) << b.status().to_string();
    EXPECT_EQ(b->size(), 3 * k4K);
    EXPECT_EQ(b->page_size(), k4K);
    EXPECT_NE(b->iova(), 0u);
    EXPECT_EQ(b->iova() % k4K, 0u);
    EXPECT_TRUE(all_zero(b->va(), b->size()));
    ASSERT_EQ(mapper.maps.count(b->iova()), 1u);
    EXPECT_EQ(mapper.maps[b->iova()].va, b->va());
    EXPECT_EQ(mapper.maps[b->iova()].size, b->size());
    EXPECT_EQ(mapper.maps[b->iova()].access, kDmaReadWrite);
    EXPECT_EQ(host.live.size(), 1u);
    EXPECT_EQ(ctx->live_buffers(), 1u);
    std::memset(b->va(), 0xab, b->size());  // dirty it; the next one must be clean
  }
  EXPECT_TRUE(mapper.maps.empty());
  EXPECT_TRUE(host.live.empty());
  EXPECT_EQ(ctx->live_buffers(), 0u);
  EXPECT_EQ(ctx->iova_free_bytes(), free_before);
  Result<DmaBuffer> again = ctx->alloc(10000);
  ASSERT_TRUE(again);
  EXPECT_TRUE(all_zero(again->va(), again->size()));
}

TEST_F(Dma, IovaAlignmentRequest) {
  Result<DmaBuffer> pad = ctx->alloc(k4K);
  ASSERT_TRUE(pad);
  Result<DmaBuffer> b = ctx->alloc(k4K, PagePolicy::kSmall, 1u << 16);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->iova() % (1u << 16), 0u);
  EXPECT_EQ(ctx->alloc(k4K, PagePolicy::kSmall, 3 * k4K).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ctx->alloc(0).status(), KBV_ERR_INVALID_ARGUMENT);
}

TEST_F(Dma, MoveTransfersOwnership) {
  Result<DmaBuffer> r = ctx->alloc(k4K);
  ASSERT_TRUE(r);
  DmaBuffer a = std::move(*r);
  const uint64_t iova = a.iova();
  DmaBuffer b;
  b = std::move(a);
  EXPECT_FALSE(a.valid());
  EXPECT_EQ(b.iova(), iova);
  EXPECT_EQ(ctx->live_buffers(), 1u);
  b.reset();
  EXPECT_EQ(ctx->live_buffers(), 0u);
  EXPECT_TRUE(mapper.maps.empty());
}

TEST_F(Dma, MapFailureLeavesNothingBehind) {
  const uint64_t free_before = ctx->iova_free_bytes();
  mapper.fail_map = true;
  EXPECT_EQ(ctx->alloc(k4K).status(), KBV_ERR_IOMMU_FAULT);
  EXPECT_TRUE(host.live.empty());
  EXPECT_EQ(ctx->iova_free_bytes(), free_before);
  EXPECT_EQ(ctx->live_buffers(), 0u);
}

TEST_F(Dma, FailedUnmapKeepsMemoryAndIovaOutOfCirculation) {
  Result<DmaBuffer> b = ctx->alloc(k4K);
  ASSERT_TRUE(b);
  const uint64_t iova = b->iova();
  void* va = b->va();
  const uint64_t free_before = ctx->iova_free_bytes();
  mapper.fail_unmap = true;
  b->reset();
  EXPECT_EQ(ctx->live_buffers(), 0u);
  // The device may still reach those pages: neither memory nor IOVA is reused.
  EXPECT_EQ(host.live.count(va), 1u);
  EXPECT_EQ(ctx->iova_free_bytes(), free_before);
  mapper.fail_unmap = false;
  Result<DmaBuffer> c = ctx->alloc(k4K);
  ASSERT_TRUE(c);
  EXPECT_NE(c->iova(), iova);
  // Tidy up the deliberately leaked block for the counting host.
  mapper.maps.erase(iova);
  default_host_memory().free(va, k4K);
  host.live.erase(va);
}

TEST_F(Dma, HostMemoryExhaustion) {
  host.fail_all = true;
  EXPECT_EQ(ctx->alloc(k4K).status(), KBV_ERR_NO_MEMORY);
  EXPECT_EQ(mapper.map_calls, 0);
}

TEST(DmaIova, ExhaustionIsNoResources) {
  RecordingMapper mapper;
  mapper.ranges = {{0x10000, 0x10000 + 4 * k4K - 1}};
  CountingHost host;
  DmaOptions o;
  o.host = &host;
  Result<std::unique_ptr<DmaContext>> c = DmaContext::create(mapper, o);
  ASSERT_TRUE(c);
  Result<DmaBuffer> a = (*c)->alloc(3 * k4K);
  ASSERT_TRUE(a);
  EXPECT_EQ((*c)->alloc(2 * k4K).status(), KBV_ERR_NO_RESOURCES);
  EXPECT_EQ(host.live.size(), 1u);  // the failed one's memory was freed
  Result<DmaBuffer> b = (*c)->alloc(k4K);
  ASSERT_TRUE(b);
}

TEST(DmaIova, NoRangesIsNoResources) {
  RecordingMapper mapper;
  mapper.ranges = {{0, k4K - 1}};  // only the withheld page 0
  EXPECT_EQ(DmaContext::create(mapper).status(), KBV_ERR_NO_RESOURCES);
}

TEST_F(Dma, HugePageFallbackTo4K) {
  host.refuse_huge = true;
  Result<DmaBuffer> b = ctx->alloc(k2M + k4K, PagePolicy::kAuto);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->page_size(), k4K);
  EXPECT_EQ(b->size(), k2M + k4K);
  EXPECT_TRUE(all_zero(b->va(), b->size()));
  EXPECT_FALSE(ctx->huge_pages_working());
  EXPECT_EQ(host.huge_allocs, 0);
  // kHuge also falls back rather than fail.
  Result<DmaBuffer> h = ctx->alloc(k4K, PagePolicy::kHuge);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->page_size(), k4K);
}

TEST_F(Dma, SmallAllocationsNeverAskForHugePages) {
  Result<DmaBuffer> b = ctx->alloc(64 * 1024);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->page_size(), k4K);
  EXPECT_EQ(host.huge_allocs, 0);
  EXPECT_TRUE(ctx->huge_pages_working());
}

// Reserves `want` free 2 MiB huge pages for a test when fewer are free and
// the process may (root writes the pool size,
// /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages, as
// /proc/sys/vm/nr_hugepages does), and gives them back afterwards. ok()
// false: why not (printed by the skip).
class HugePageReservation {
 public:
  explicit HugePageReservation(long want) {
    reserve(want);
    // qemu-user (make test-aarch64) refuses huge-page mappings with EINVAL
    // whatever the pool holds: nothing to test there.
    if (ok()) {
      void* p = ::mmap(nullptr, kHuge, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
      if (p != MAP_FAILED)
        ::munmap(p, kHuge);
      else if (errno == EINVAL)
        reason_ = "mmap(MAP_HUGETLB) is refused here (EINVAL; qemu-user does not emulate it)";
    }
  }
  ~HugePageReservation() {
    if (changed_) (void)write("nr_hugepages", before_);
  }
  bool ok() const { return reason_.empty(); }
  const std::string& reason() const { return reason_; }

 private:
  static constexpr size_t kHuge = size_t{2} << 20;
  void reserve(long want) {
    const long free_now = read("free_hugepages");
    before_ = read("nr_hugepages");
    if (free_now < 0 || before_ < 0) {
      reason_ = "no 2 MiB huge page pool in " + std::string(kDir);
      return;
    }
    if (free_now >= want) return;
    if (::geteuid() != 0) {
      reason_ = "vm.nr_hugepages has no free 2 MiB page and the test is not root";
      return;
    }
    if (!write("nr_hugepages", before_ + (want - free_now))) {
      reason_ = "writing " + std::string(kDir) + "nr_hugepages failed: " + std::strerror(errno);
      return;
    }
    changed_ = true;
    const long got = read("free_hugepages");
    if (got < want)
      reason_ = "the kernel granted " + std::to_string(got) + " free 2 MiB pages of " +
                std::to_string(want) + " (memory fragmented?)";
  }
  static constexpr const char* kDir = "/sys/kernel/mm/hugepages/hugepages-2048kB/";
  static long read(const char* f) {
    std::ifstream in(std::string(kDir) + f);
    long v = -1;
    if (!(in >> v)) return -1;
    return v;
  }
  static bool write(const char* f, long v) {
    std::ofstream out(std::string(kDir) + f);
    out << v;
    out.flush();
    return static_cast<bool>(out);
  }
  long before_ = -1;
  bool changed_ = false;
  std::string reason_;
};

TEST(DmaHuge, RealHugePagesWhenReserved) {
  HugePageReservation r(1);
  if (!r.ok()) GTEST_SKIP() << "2 MiB huge pages not available: " << r.reason();
  RecordingMapper mapper;
  Result<std::unique_ptr<DmaContext>> c = DmaContext::create(mapper);
  ASSERT_TRUE(c);
  Result<DmaBuffer> b = (*c)->alloc(k2M, PagePolicy::kHuge);
  ASSERT_TRUE(b);
  // A page is free: the huge policy must get it (no fallback to 4 KiB).
  ASSERT_EQ(b->page_size(), k2M);
  EXPECT_EQ(b->size(), k2M);
  EXPECT_EQ(b->iova() % k2M, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->va()) % k2M, 0u);
  EXPECT_TRUE(all_zero(b->va(), b->size()));
}

TEST_F(Dma, MemoryIsOnTheRequestedNode) {
  if (numa_available() < 0) GTEST_SKIP() << "libnuma reports no NUMA support";
  Result<DmaBuffer> b = ctx->alloc(4 * k4K);
  ASSERT_TRUE(b);
  int node = -1;
  ASSERT_EQ(get_mempolicy(&node, nullptr, 0, b->va(), MPOL_F_NODE | MPOL_F_ADDR), 0);
  EXPECT_EQ(node, 0);
}

TEST_F(Dma, RegistrationMapsThePageSpanAtItsOwnIova) {
  void* raw = ::mmap(nullptr, 4 * k4K, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(raw, MAP_FAILED);
  auto* buf = static_cast<unsigned char*>(raw);
  {
    // 100 bytes straddling a page boundary: two pages mapped.
    Result<DmaRegistration> r = ctx->register_memory(buf + k4K - 50, 100, kDmaDeviceRead);
    ASSERT_TRUE(r) << r.status().to_string();
    EXPECT_EQ(r->mapped_size(), 2 * k4K);
    EXPECT_EQ(r->iova() - r->mapped_iova(), k4K - 50);
    ASSERT_EQ(mapper.maps.count(r->mapped_iova()), 1u);
    EXPECT_EQ(mapper.maps[r->mapped_iova()].va, buf);
    EXPECT_EQ(mapper.maps[r->mapped_iova()].access, kDmaDeviceRead);

    // Overlapping registration of the same pages: its own IOVA.
    Result<DmaRegistration> r2 = ctx->register_memory(buf, 4 * k4K);
    ASSERT_TRUE(r2);
    EXPECT_NE(r2->mapped_iova(), r->mapped_iova());
    EXPECT_EQ(r2->iova(), r2->mapped_iova());
    EXPECT_EQ(mapper.maps.size(), 2u);
    EXPECT_EQ(ctx->live_registrations(), 2u);
    r->reset();
    EXPECT_EQ(mapper.maps.size(), 1u);
    EXPECT_EQ(mapper.maps.count(r2->mapped_iova()), 1u);
  }
  EXPECT_TRUE(mapper.maps.empty());
  EXPECT_EQ(ctx->live_registrations(), 0u);
  EXPECT_EQ(ctx->register_memory(nullptr, 8).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ctx->register_memory(buf, 0).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ctx->register_memory(buf, 8, 0).status(), KBV_ERR_INVALID_ARGUMENT);
  mapper.fail_map = true;
  const uint64_t free_before = ctx->iova_free_bytes();
  EXPECT_EQ(ctx->register_memory(buf, 8).status(), KBV_ERR_IOMMU_FAULT);
  EXPECT_EQ(ctx->iova_free_bytes(), free_before);
  ::munmap(raw, 4 * k4K);
}

TEST_F(Dma, PagePoolHandsOutDistinctZeroedPages) {
  PagePool pool(*ctx);
  std::vector<uint64_t> pages;
  ASSERT_TRUE(pool.alloc_pages(600, pages));  // more than one 2 MiB block
  ASSERT_EQ(pages.size(), 600u);
  EXPECT_EQ(pool.pages_in_use(), 600u);
  EXPECT_EQ(pool.block_count(), 2u);
  std::set<uint64_t> uniq(pages.begin(), pages.end());
  EXPECT_EQ(uniq.size(), 600u);
  for (uint64_t iova : pages) {
    ASSERT_NE(iova, 0u);
    ASSERT_EQ(iova % k4K, 0u);
    void* va = pool.page_va(iova);
    ASSERT_NE(va, nullptr);
    ASSERT_TRUE(all_zero(va, k4K));
  }
  // Every page lies inside a mapping the IOMMU knows.
  for (uint64_t iova : pages) {
    auto it = mapper.maps.upper_bound(iova);
    ASSERT_NE(it, mapper.maps.begin());
    --it;
    EXPECT_LT(iova - it->first, it->second.size);
  }
  // Dirty one page, give it back, get a page again: zeroed.
  std::memset(pool.page_va(pages[5]), 0x5a, k4K);
  const uint64_t back[] = {pages[5]};
  ASSERT_TRUE(pool.free_pages(back));
  EXPECT_EQ(pool.page_va(pages[5]), nullptr);
  std::vector<uint64_t> one;
  ASSERT_TRUE(pool.alloc_pages(1, one));
  EXPECT_TRUE(all_zero(pool.page_va(one[0]), k4K));

  // Return everything: blocks are unmapped and freed.
  ASSERT_TRUE(pool.free_pages(one));
  std::vector<uint64_t> rest;
  for (size_t i = 0; i < pages.size(); ++i)
    if (i != 5) rest.push_back(pages[i]);
  ASSERT_TRUE(pool.free_pages(rest));
  EXPECT_EQ(pool.pages_in_use(), 0u);
  EXPECT_EQ(pool.block_count(), 0u);
  EXPECT_TRUE(mapper.maps.empty());
  EXPECT_TRUE(host.live.empty());
}

TEST_F(Dma, PagePoolRejectsForeignAndDoubleFreedPages) {
  PagePool pool(*ctx);
  std::vector<uint64_t> pages;
  ASSERT_TRUE(pool.alloc_pages(2, pages));
  const uint64_t bad[] = {pages[0], pages[0], pages[1] + 8, 0xdead0000ull};
  EXPECT_EQ(pool.free_pages(bad), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(pool.pages_in_use(), 1u);  // the one valid IOVA was taken back
  EXPECT_NE(pool.page_va(pages[1]), nullptr);
  const uint64_t last[] = {pages[1]};
  EXPECT_TRUE(pool.free_pages(last));
  EXPECT_EQ(pool.block_count(), 0u);
}

TEST_F(Dma, PagePoolIsAllOrNothing) {
  RecordingMapper small;
  small.ranges = {{k2M, 2 * k2M - 1}};  // room for exactly one block
  Result<std::unique_ptr<DmaContext>> c = DmaContext::create(small);
  ASSERT_TRUE(c);
  PagePool pool(**c);
  std::vector<uint64_t> pages;
  EXPECT_EQ(pool.alloc_pages(PagePool::kPagesPerBlock + 1, pages), KBV_ERR_NO_RESOURCES);
  EXPECT_TRUE(pages.empty());
  EXPECT_EQ(pool.block_count(), 0u);
  EXPECT_TRUE(small.maps.empty());
  ASSERT_TRUE(pool.alloc_pages(PagePool::kPagesPerBlock, pages));
  EXPECT_TRUE(pool.free_pages(pages));
}

}  // namespace
}  // namespace kbv::platform
