// SPDX-License-Identifier: BSD-3-Clause
// EventQueue: buffer initialisation, owner-bit rule across wraparound,
// doorbell values and update cadence.
#include "hca/eq.hpp"

#include <gtest/gtest.h>

#include "fake_device.hpp"

namespace kbv::hca {
namespace {

using test::FakeDevice;

constexpr uint32_t kUarIndex = 3;
constexpr uint32_t kEqn = 0x17;

class EqTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto e = EventQueue::alloc(dev, 8, 0);
    ASSERT_TRUE(e.has_value());
    eq = std::move(*e);
    attr = eq->create_attr(kUarIndex);
    auto u = Uar::at(dev.bar0(), kUarIndex);
    ASSERT_TRUE(u.has_value());
    eq->bind(kEqn, *u);
    dev.writes.clear();
  }
  // The device writes the EQE for producer index p.
  void produce(uint32_t p, uint8_t type, uint32_t data0 = 0) {
    const uint32_t nent = eq->nent();
    std::byte* e = dev.va(attr.pas[0]) + size_t{p & (nent - 1)} * 64;
    std::memset(e, 0, 63);
    e[1] = std::byte{type};
    prm::Ref<prm::eqe>(e).at(prm::eqe::cmd).set(prm::eqe_cmd::vector, data0);
    e[63] = std::byte{static_cast<uint8_t>((p & nent) ? 1 : 0)};
  }
  uint64_t doorbell(bool arm) const {
    return prm::uar_page_offset(kUarIndex) + (arm ? 0x40 : 0x48);
  }

  FakeDevice dev;
  std::unique_ptr<EventQueue> eq;
  cmd::CreateEqAttr attr;
};

TEST_F(EqTest, BufferOwnerBytesStartAtOneAndPagesAreListed) {
  EXPECT_EQ(eq->nent(), 256u);
  ASSERT_EQ(attr.pas.size(), 4u);  // 256 * 64 B = 16 KiB
  for (size_t i = 1; i < attr.pas.size(); ++i) EXPECT_EQ(attr.pas[i], attr.pas[0] + 4096 * i);
  EXPECT_EQ(attr.log_eq_size, 8u);
  EXPECT_EQ(attr.uar, kUarIndex);
  const std::byte* buf = dev.va(attr.pas[0]);
  for (uint32_t i = 0; i < 256; ++i) EXPECT_EQ(buf[i * 64 + 63], std::byte{1}) << i;
  uint32_t calls = 0;
  EXPECT_EQ(eq->poll([&](prm::CRef<prm::eqe>) { ++calls; }), 0u);
  EXPECT_EQ(calls, 0u);
  EXPECT_TRUE(dev.writes.empty());  // nothing consumed, no doorbell
}

TEST_F(EqTest, ConsumesInOrderAndArmsWithEqnAndCi) {
  produce(0, 0x0a, 1);
  produce(1, 0x0b);
  produce(2, 0x09);
  std::vector<uint32_t> types;
  EXPECT_EQ(eq->poll([&](prm::CRef<prm::eqe> e) {
    types.push_back(static_cast<uint32_t>(e.get(prm::eqe::type)));
  }),
            3u);
  EXPECT_EQ(types, (std::vector<uint32_t>{0x0a, 0x0b, 0x09}));
  EXPECT_EQ(eq->ci(), 3u);
  ASSERT_EQ(dev.writes.size(), 1u);
  EXPECT_EQ(dev.writes[0].offset, doorbell(true));
  EXPECT_EQ(dev.writes[0].value, kEqn << 24 | 3u);
  EXPECT_EQ(dev.writes[0].width, 4u);
  // The doorbell register holds the value big-endian.
  EXPECT_EQ(dev.reg32(doorbell(true)), kEqn << 24 | 3u);
}

TEST_F(EqTest, OwnerBitRuleAcrossWraparoundAndUpdateEvery0x80) {
  for (uint32_t p = 0; p < 256; ++p) produce(p, 0x0a);
  EXPECT_EQ(eq->poll([](prm::CRef<prm::eqe>) {}), 256u);
  auto upd = dev.writes_to(doorbell(false));
  EXPECT_EQ(upd, (std::vector<uint64_t>{kEqn << 24 | 0x80u, kEqn << 24 | 0x100u}));
  EXPECT_EQ(dev.writes_to(doorbell(true)), std::vector<uint64_t>{kEqn << 24 | 0x100u});
  // Second pass: the old entries (owner 0) are not software's any more.
  EXPECT_EQ(eq->poll([](prm::CRef<prm::eqe>) {}), 0u);
  for (uint32_t p = 256; p < 260; ++p) produce(p, 0x0b);
  uint32_t n = 0;
  EXPECT_EQ(eq->poll([&](prm::CRef<prm::eqe> e) {
    EXPECT_EQ(e.get(prm::eqe::type), 0x0bu);
    ++n;
  }),
            4u);
  EXPECT_EQ(n, 4u);
  EXPECT_EQ(eq->ci(), 260u);
  EXPECT_EQ(dev.writes_to(doorbell(true)).back(), kEqn << 24 | 260u);
  // Third pass over index 0 needs owner 0 again.
  for (uint32_t p = 260; p < 512; ++p) produce(p, 0x0a);
  produce(512, 0x04);
  EXPECT_EQ(eq->poll([](prm::CRef<prm::eqe>) {}), 253u);
  EXPECT_EQ(eq->ci(), 513u);
}

TEST_F(EqTest, ConsumerIndexWrapsAt24BitsInTheDoorbell) {
  // Drive ci beyond 2^24 cheaply: only the doorbell value masks it.
  EXPECT_EQ(prm::eq_doorbell_value(0x1000005, kEqn), kEqn << 24 | 5u);
}

TEST_F(EqTest, BudgetLimitsOnePoll) {
  for (uint32_t p = 0; p < 10; ++p) produce(p, 0x0a);
  EXPECT_EQ(eq->poll([](prm::CRef<prm::eqe>) {}, 4), 4u);
  EXPECT_EQ(eq->poll([](prm::CRef<prm::eqe>) {}), 6u);
  EXPECT_EQ(eq->events(), 10u);
}

TEST_F(EqTest, ArmWritesCurrentIndex) {
  eq->arm();
  ASSERT_EQ(dev.writes.size(), 1u);
  EXPECT_EQ(dev.writes[0].offset, doorbell(true));
  EXPECT_EQ(dev.writes[0].value, kEqn << 24);
}

TEST(EqAlloc, RejectsBadSizesAndFreesBuffer) {
  FakeDevice dev;
  EXPECT_EQ(EventQueue::alloc(dev, 0, 0).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(EventQueue::alloc(dev, 40, 0).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(EventQueue::alloc(dev, 7, 1u << 12).status(), KBV_ERR_INVALID_ARGUMENT);
  {
    auto e = EventQueue::alloc(dev, 7, 1);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(dev.live_dma(), 1u);
    EXPECT_EQ((*e)->eventfd().status(), KBV_ERR_NOT_SUPPORTED);
    dev.set_eventfd(1, 42);
    EXPECT_EQ(*(*e)->eventfd(), 42);
  }
  EXPECT_EQ(dev.live_dma(), 0u);
}

}  // namespace
}  // namespace kbv::hca
