// SPDX-License-Identifier: BSD-3-Clause
// Cq / QueueMem (hca/objects/cq.hpp) on the fake device: ring initialisation, the
// CREATE_CQ it sends, arm doorbells, resize, limits, and memory returned on
// failure and destroy.
#include "hca/objects/cq.hpp"

#include "obj_fixture.hpp"

namespace kbv::hca::test {
namespace {

using CqTest = ObjFixture;

TEST_F(CqTest, CreateArmResizeDestroy) {
  auto cq =
      run<std::unique_ptr<Cq>>([&](auto cb) { return Cq::create(*hca, CqConfig{.cqe = 65}, cb); });
  ASSERT_TRUE(cq.has_value()) << cq.status().to_string();
  Cq& c = **cq;
  EXPECT_EQ(c.ncqe(), 128u);
  EXPECT_EQ(c.mem().size(), 128u * 64);
  EXPECT_EQ(c.c_eqn(), hca->comp_eq()->eqn());
  EXPECT_EQ(dev.live_dma(), baseline + 2);  // ring + doorbell record
  for (uint32_t i = 0; i < c.ncqe(); ++i) EXPECT_EQ(c.mem().buf()[i * 64 + 63], std::byte{0xF0});
  EXPECT_EQ(sfw.opcodes().back(), 0x400u);

  // Arm (docs/PRM.md "Data path"): record word then the 64-bit doorbell at uar + 0x20.
  c.set_ci(0x123456);
  c.on_event();
  c.on_event();
  c.arm(false);
  const uint32_t word = 2u << 28 | 0x123456;
  EXPECT_EQ(be32toh(c.mem().dbrec()[1]), word);
  const uint64_t db = prm::uar_page_offset(hca->uar().index()) + 0x20;
  EXPECT_EQ(dev.reg32(db), word);
  EXPECT_EQ(dev.reg32(db + 4), c.cqn());
  c.arm(true);
  EXPECT_EQ(dev.reg32(db), word | 1u << 24);

  // Resize: a new ring, the doorbell record and the consumer index kept.
  const uint64_t dbr = c.mem().dbrec_iova();
  c.set_ci(5);
  ASSERT_TRUE(run_status([&](auto cb) { return c.resize(300, cb); }).is_ok());
  EXPECT_EQ(c.ncqe(), 512u);
  EXPECT_EQ(c.ci(), 5u);
  EXPECT_EQ(c.mem().dbrec_iova(), dbr);
  EXPECT_EQ(c.mem().size(), 512u * 64);
  EXPECT_EQ(dev.live_dma(), baseline + 2);
  // Above log_max_cq_sz (12): refused before any command.
  EXPECT_EQ(c.resize(8193, [](Status) {}), KBV_ERR_LIMIT_EXCEEDED);
  // A failed resize keeps the old ring and frees the new one.
  sfw.fail_opcode = 0x403;
  sfw.fail_status = 0x40;
  EXPECT_EQ(run_status([&](auto cb) { return c.resize(64, cb); }), KBV_ERR_FW_BAD_SIZE);
  EXPECT_EQ(c.ncqe(), 512u);
  EXPECT_EQ(dev.live_dma(), baseline + 2);
  sfw.fail_opcode = 0;

  ASSERT_TRUE(run_status([&](auto cb) { return c.destroy(cb); }).is_ok());
  EXPECT_FALSE(c.alive());
  EXPECT_EQ(dev.live_dma(), baseline);
  EXPECT_EQ(c.destroy([](Status) {}), KBV_ERR_INVALID_HANDLE);
}

TEST_F(CqTest, FailedCreateReturnsItsMemory) {
  sfw.fail_opcode = 0x400;
  sfw.fail_status = 0x8;  // exceeds limits
  auto cq = run<std::unique_ptr<Cq>>([&](auto cb) { return Cq::create(*hca, CqConfig{}, cb); });
  EXPECT_EQ(cq.status(), KBV_ERR_LIMIT_EXCEEDED);
  EXPECT_EQ(dev.live_dma(), baseline);
  EXPECT_EQ(Cq::create(*hca, CqConfig{.cqe = 1u << 13}, [](Result<std::unique_ptr<Cq>>) {}),
            KBV_ERR_LIMIT_EXCEEDED);
  EXPECT_EQ(dev.live_dma(), baseline);
}

}  // namespace
}  // namespace kbv::hca::test
