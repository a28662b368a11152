// SPDX-License-Identifier: BSD-3-Clause
// Srq (hca/objects/srq.hpp) on the fake device: geometry, limits, ARM_RQ, memory.
#include "hca/objects/srq.hpp"

#include "obj_fixture.hpp"

namespace kbv::hca::test {
namespace {

using SrqTest = ObjFixture;

TEST_F(SrqTest, CreateArmDestroy) {
  SrqConfig c;
  c.max_wr = 33;
  c.max_sge = 2;  // 16 + 32 -> stride 64
  auto srq = run<std::unique_ptr<Srq>>([&](auto cb) { return Srq::create(*hca, c, cb); });
  ASSERT_TRUE(srq.has_value()) << srq.status().to_string();
  Srq& s = **srq;
  EXPECT_EQ(s.nwqe(), 64u);
  EXPECT_EQ(s.stride(), 64u);
  EXPECT_EQ(s.log_stride(), 2u);
  EXPECT_EQ(dev.live_dma(), baseline + 2);
  ASSERT_TRUE(run_status([&](auto cb) { return s.arm(5, cb); }).is_ok());
  EXPECT_EQ(sfw.opcodes().back(), 0x703u);
  ASSERT_TRUE(run_status([&](auto cb) { return s.destroy(cb); }).is_ok());
  EXPECT_EQ(dev.live_dma(), baseline);
  EXPECT_EQ(s.arm(5, [](Status) {}), KBV_ERR_INVALID_HANDLE);
}

TEST_F(SrqTest, Limits) {
  SrqConfig c;
  c.max_wr = 2048;  // > 2^log_max_srq_sz (10)
  EXPECT_EQ(Srq::create(*hca, c, [](Result<std::unique_ptr<Srq>>) {}), KBV_ERR_LIMIT_EXCEEDED);
  c.max_wr = 8;
  c.max_sge = 16;  // 16 + 256 -> 512 > max_wqe_sz_rq 256
  EXPECT_EQ(Srq::create(*hca, c, [](Result<std::unique_ptr<Srq>>) {}), KBV_ERR_LIMIT_EXCEEDED);
  c.max_wr = 0;
  EXPECT_EQ(Srq::create(*hca, c, [](Result<std::unique_ptr<Srq>>) {}), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(dev.live_dma(), baseline);
}

}  // namespace
}  // namespace kbv::hca::test
