// SPDX-License-Identifier: BSD-3-Clause
// Mr (hca/objects/mr.hpp) on the fake device with a recording DMA mapper: the
// application buffer is mapped with the access its rights need, unmapped
// when the key is not created and when the region is destroyed.
#include "hca/objects/mr.hpp"

#include <map>

#include "obj_fixture.hpp"

namespace kbv::hca::test {
namespace {

class RecordingMapper : public platform::DmaMapper {
 public:
  Status dma_map(void*, uint64_t iova, uint64_t size, uint32_t access) override {
    maps[iova] = {size, access};
    return Status::ok();
  }
  Status dma_unmap(uint64_t iova, uint64_t) override {
    maps.erase(iova);
    return Status::ok();
  }
  std::vector<platform::IovaRange> iova_ranges() const override {
    return {{0x100000000ull, 0x1FFFFFFFFull}};
  }
  uint64_t iova_page_size() const override { return 4096; }
  std::map<uint64_t, std::pair<uint64_t, uint32_t>> maps;  // iova -> size, access
};

class MrTest : public ObjFixture {
 protected:
  void SetUp() override {
    ObjFixture::SetUp();
    auto c = platform::DmaContext::create(mapper);
    ASSERT_TRUE(c.has_value());
    ctx = std::move(*c);
  }
  RecordingMapper mapper;
  std::unique_ptr<platform::DmaContext> ctx;
  std::vector<std::byte> buf = std::vector<std::byte>(5 * 4096);
};

TEST_F(MrTest, RegistersMapsAndUnmaps) {
  void* addr = buf.data() + 4096 + 17;
  using namespace mr_access;
  auto mr = run<std::unique_ptr<Mr>>([&](auto cb) {
    return Mr::create(*hca, *ctx, 3, addr, 2 * 4096, kLocalWrite | kRemoteWrite, cb);
  });
  ASSERT_TRUE(mr.has_value()) << mr.status().to_string();
  EXPECT_EQ(sfw.opcodes().back(), 0x200u);
  ASSERT_EQ(mapper.maps.size(), 1u);
  EXPECT_EQ(mapper.maps.begin()->second.second, platform::kDmaReadWrite);
  EXPECT_EQ((*mr)->iova() % 4096, reinterpret_cast<uintptr_t>(addr) % 4096);
  EXPECT_EQ((*mr)->length(), 2u * 4096);
  EXPECT_EQ((*mr)->lkey(), (*mr)->rkey());
  ASSERT_TRUE(run_status([&](auto cb) { return (*mr)->destroy(cb); }).is_ok());
  EXPECT_EQ(sfw.opcodes().back(), 0x202u);
  EXPECT_TRUE(mapper.maps.empty());
  EXPECT_EQ((*mr)->destroy([](Status) {}), KBV_ERR_INVALID_HANDLE);
}

TEST_F(MrTest, ReadOnlyRegionIsMappedForDeviceReadsOnly) {
  auto mr = run<std::unique_ptr<Mr>>([&](auto cb) {
    return Mr::create(*hca, *ctx, 3, buf.data(), 100, mr_access::kRemoteRead, cb);
  });
  ASSERT_TRUE(mr.has_value());
  ASSERT_EQ(mapper.maps.size(), 1u);
  EXPECT_EQ(mapper.maps.begin()->second.second, platform::kDmaDeviceRead);
  ASSERT_TRUE(run_status([&](auto cb) { return (*mr)->destroy(cb); }).is_ok());
}

// The key's low byte (mkc.mkey_7_0) rotates per registration, as mlx5_ib's
// assign_mkey_variant (1, 2, 3 ... on a new device), so a region registered
// after another with the same firmware index still gets a different key.
TEST_F(MrTest, KeyVariantRotatesPerRegistration) {
  std::vector<uint32_t> keys;
  for (int i = 0; i < 3; ++i) {
    auto mr = run<std::unique_ptr<Mr>>([&](auto cb) {
      return Mr::create(*hca, *ctx, 3, buf.data(), 100, mr_access::kLocalWrite, cb);
    });
    ASSERT_TRUE(mr.has_value());
    keys.push_back((*mr)->lkey());
    ASSERT_TRUE(run_status([&](auto cb) { return (*mr)->destroy(cb); }).is_ok());
  }
  // The scripted firmware answers mkey_index 0 every time: the keys differ
  // only by the variant the driver chose.
  EXPECT_EQ(keys, (std::vector<uint32_t>{1, 2, 3}));
  for (int i = 3; i < 255; ++i) (void)hca->next_mkey_variant();  // ... 255
  EXPECT_EQ(hca->next_mkey_variant(), 0u);                       // u8 wrap, as the kernel's counter
  EXPECT_EQ(hca->next_mkey_variant(), 1u);
}

TEST_F(MrTest, FailuresLeaveNothingMapped) {
  using namespace mr_access;
  EXPECT_EQ(
      Mr::create(*hca, *ctx, 3, buf.data(), 100, kRemoteAtomic, [](Result<std::unique_ptr<Mr>>) {}),
      KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Mr::create(*hca, *ctx, 3, nullptr, 100, 0, [](Result<std::unique_ptr<Mr>>) {}),
            KBV_ERR_INVALID_ARGUMENT);
  sfw.fail_opcode = 0x200;
  sfw.fail_status = 0x5;
  auto mr = run<std::unique_ptr<Mr>>(
      [&](auto cb) { return Mr::create(*hca, *ctx, 3, buf.data(), 100, kLocalWrite, cb); });
  EXPECT_EQ(mr.status(), KBV_ERR_FW_BAD_RESOURCE);
  EXPECT_TRUE(mapper.maps.empty());
  EXPECT_EQ(ctx->live_registrations(), 0u);
}

}  // namespace
}  // namespace kbv::hca::test
