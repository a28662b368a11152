// SPDX-License-Identifier: BSD-3-Clause
//
// src/sim/engine/memory.hpp: gather/scatter through lkeys and remote access
// through rkeys, with every memory key violation (bounds, rights, PD, MTT)
// and unmapped IOVAs reported as CQE syndromes, never a crash.
#include "sim/engine/memory.hpp"
#include "engine_support.hpp"
#include "hca/prm/mkey.hpp"

#include <array>
#include <numeric>
#include <vector>

namespace kbv::sim::engine {
namespace {

using test::HostMem;
namespace acc = fw::mkey_access;
constexpr uint32_t kPd = 1;
constexpr uint64_t kVa = 0x7f0000000000;  // the application's virtual address

class MemoryTest : public ::testing::Test {
 protected:
  // A PA key over [start, start + len) (va == iova).
  uint32_t pa_key(uint64_t start, uint64_t len, uint32_t rights, uint32_t pd = kPd) {
    fw::Mkey m;
    m.variant = 0x5a;
    m.access_mode = prm::mkc_access_mode::kPa;
    m.rights = rights;
    m.pd = pd;
    m.start_addr = start;
    m.len = len;
    auto idx = keys_.insert(m, 100);
    EXPECT_TRUE(idx.has_value());
    return *idx << 8 | 0x5a;
  }
  // An MTT key at kVa over `pages` 4 KiB pages of host memory, in reverse
  // order (page i of the key is host page pages - 1 - i): every page is its
  // own IOVA range.
  uint32_t mtt_key(uint32_t pages, uint32_t rights) {
    fw::Mkey m;
    m.variant = 0x11;
    m.access_mode = prm::mkc_access_mode::kMtt;
    m.rights = rights;
    m.pd = kPd;
    m.start_addr = kVa;
    m.len = uint64_t{pages} * 4096;
    m.log_page_size = 12;
    for (uint32_t i = 0; i < pages; ++i)
      m.mtt.push_back({HostMem::kIova + uint64_t{pages - 1 - i} * 4096, true, true});
    auto idx = keys_.insert(m, 100);
    EXPECT_TRUE(idx.has_value());
    return *idx << 8 | 0x11;
  }
  void fill(uint64_t iova, std::size_t n, uint8_t seed) {
    for (std::size_t i = 0; i < n; ++i) *mem_.at(iova + i) = std::byte(uint8_t(seed + i));
  }

  HostMem mem_;
  fw::MkeyTable keys_;
};

TEST_F(MemoryTest, GatherAcrossSgesWithOffset) {
  const uint32_t k = pa_key(HostMem::kIova, HostMem::kBytes, acc::kLocalRead | acc::kLocalWrite);
  fill(HostMem::kIova + 0x100, 16, 0x10);
  fill(HostMem::kIova + 0x900, 16, 0x40);
  const std::array<Sge, 2> sges{{{16, k, HostMem::kIova + 0x100}, {16, k, HostMem::kIova + 0x900}}};
  std::array<std::byte, 20> dst{};
  AccessStatus s = gather(mem_.iommu, keys_, kPd, sges, 6, dst);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.done, 20u);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(dst[i], std::byte(0x10 + 6 + i));
  for (std::size_t i = 10; i < 20; ++i) EXPECT_EQ(dst[i], std::byte(0x40 + i - 10));
  // Beyond the list: local length error.
  std::array<std::byte, 40> big{};
  EXPECT_EQ(gather(mem_.iommu, keys_, kPd, sges, 0, big).syndrome,
            MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
}

TEST_F(MemoryTest, ScatterThroughAnMttKeyWithManyRanges) {
  const uint32_t pages = 20;  // more IOVA ranges than one translate call holds
  const uint32_t k = mtt_key(pages, acc::kLocalRead | acc::kLocalWrite);
  std::vector<std::byte> src(pages * 4096 - 100);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = std::byte(uint8_t(i * 7 + 3));
  const std::array<Sge, 1> sge{{{uint32_t(pages * 4096), k, kVa}}};
  AccessStatus s = scatter(mem_.iommu, keys_, kPd, sge, 50, src);
  ASSERT_TRUE(s.ok()) << int(s.mkey);
  EXPECT_EQ(s.done, src.size());
  // Byte j of the key is at host page pages-1-(j/4096), offset j%4096.
  for (std::size_t i = 0; i < src.size(); i += 997) {
    const uint64_t j = 50 + i;
    const uint64_t iova = HostMem::kIova + (pages - 1 - j / 4096) * 4096 + j % 4096;
    EXPECT_EQ(*mem_.at(iova), src[i]) << i;
  }
  // And it reads back the same through gather.
  std::vector<std::byte> back(src.size());
  ASSERT_TRUE(gather(mem_.iommu, keys_, kPd, sge, 50, back).ok());
  EXPECT_EQ(back, src);
}

TEST_F(MemoryTest, KeyViolationsAreLocalProtectionErrors) {
  const uint32_t ro = pa_key(HostMem::kIova, 4096, acc::kLocalRead);
  const uint32_t other_pd = pa_key(HostMem::kIova, 4096, acc::kLocalRead, kPd + 1);
  std::array<std::byte, 64> buf{};
  struct Case {
    const char* name;
    Sge sge;
    bool write;
    fw::MkeyFault fault;
  };
  const Case cases[] = {
      {"beyond the end", {64, ro, HostMem::kIova + 4096 - 32}, false, fw::MkeyFault::kOutOfBounds},
      {"before the start", {64, ro, HostMem::kIova - 16}, false, fw::MkeyFault::kOutOfBounds},
      {"write without lw", {64, ro, HostMem::kIova}, true, fw::MkeyFault::kAccess},
      {"other PD", {64, other_pd, HostMem::kIova}, false, fw::MkeyFault::kPdMismatch},
      {"unknown key", {64, 0x999900, HostMem::kIova}, false, fw::MkeyFault::kInvalidKey},
      {"wrong variant",
       {64, (ro & ~0xffu) | 0x01, HostMem::kIova},
       false,
       fw::MkeyFault::kInvalidKey},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::array<Sge, 1> sges{c.sge};
    AccessStatus s = c.write ? scatter(mem_.iommu, keys_, kPd, sges, 0, buf)
                             : gather(mem_.iommu, keys_, kPd, sges, 0, buf);
    EXPECT_EQ(s.syndrome, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
    EXPECT_EQ(s.mkey, c.fault);
    EXPECT_FALSE(s.iommu);
  }
}

TEST_F(MemoryTest, UnmappedIovaIsAnIommuFault) {
  // A PA key the driver created over memory it never mapped for DMA.
  const uint32_t k = pa_key(0x40000000, 8192, acc::kLocalRead | acc::kLocalWrite);
  const uint64_t faults = mem_.iommu.fault_count();
  std::array<std::byte, 128> buf{};
  const std::array<Sge, 1> sges{{{128, k, 0x40000000}}};
  AccessStatus s = scatter(mem_.iommu, keys_, kPd, sges, 0, buf);
  EXPECT_EQ(s.syndrome, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  EXPECT_TRUE(s.iommu);
  EXPECT_EQ(s.done, 0u);
  EXPECT_GT(mem_.iommu.fault_count(), faults);
  // Remote side: a remote access error.
  const uint32_t rk = pa_key(0x40000000, 8192, acc::kLocalWrite | acc::kRemoteWrite);
  AccessStatus r = remote_write(mem_.iommu, keys_, kPd, rk, 0x40000000, buf);
  EXPECT_EQ(r.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
  EXPECT_TRUE(r.iommu);
}

TEST_F(MemoryTest, RemoteAccessNeedsRemoteRights) {
  const uint32_t local_only = pa_key(HostMem::kIova, 4096, acc::kLocalRead | acc::kLocalWrite);
  const uint32_t rw =
      pa_key(HostMem::kIova, 4096,
             acc::kLocalRead | acc::kLocalWrite | acc::kRemoteRead | acc::kRemoteWrite);
  std::array<std::byte, 32> src;
  std::iota(reinterpret_cast<uint8_t*>(src.data()), reinterpret_cast<uint8_t*>(src.data()) + 32,
            uint8_t{1});
  AccessStatus bad = remote_write(mem_.iommu, keys_, kPd, local_only, HostMem::kIova, src);
  EXPECT_EQ(bad.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
  EXPECT_EQ(bad.mkey, fw::MkeyFault::kAccess);
  EXPECT_EQ(*mem_.at(HostMem::kIova), std::byte{0});  // nothing written

  ASSERT_TRUE(remote_write(mem_.iommu, keys_, kPd, rw, HostMem::kIova + 100, src).ok());
  std::array<std::byte, 32> dst{};
  ASSERT_TRUE(remote_read(mem_.iommu, keys_, kPd, rw, HostMem::kIova + 100, dst).ok());
  EXPECT_EQ(dst, src);
  EXPECT_EQ(remote_read(mem_.iommu, keys_, kPd + 1, rw, HostMem::kIova, dst).mkey,
            fw::MkeyFault::kPdMismatch);
  EXPECT_EQ(remote_read(mem_.iommu, keys_, kPd, rw, HostMem::kIova + 4090, dst).mkey,
            fw::MkeyFault::kOutOfBounds);
}

}  // namespace
}  // namespace kbv::sim::engine
