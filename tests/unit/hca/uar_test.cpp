// SPDX-License-Identifier: BSD-3-Clause
// Uar: placement inside BAR0 and the EQ doorbell encodings.
#include "hca/uar.hpp"

#include <gtest/gtest.h>

#include "fake_device.hpp"

namespace kbv::hca {
namespace {

using test::FakeDevice;

TEST(Uar, OutsideBarIsRejected) {
  FakeDevice dev;
  EXPECT_EQ(Uar::at(dev.bar0(), 1u << 20).status(), KBV_ERR_INVALID_ARGUMENT);
  auto u = Uar::at(dev.bar0(), 5);
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->bar_offset(), 5u * 4096);
}

TEST(Uar, EqDoorbellsAreBigEndianDwordsAt0x40And0x48) {
  FakeDevice dev;
  auto u = Uar::at(dev.bar0(), 9);
  ASSERT_TRUE(u.has_value());
  u->eq_doorbell(0x12, 0x345678, /*arm=*/true);
  u->eq_doorbell(0x12, 0x1000001, /*arm=*/false);  // ci wraps at 24 bits
  ASSERT_EQ(dev.writes.size(), 2u);
  EXPECT_EQ(dev.writes[0].offset, 9u * 4096 + 0x40);
  EXPECT_EQ(dev.writes[0].width, 4u);
  EXPECT_EQ(dev.writes[1].offset, 9u * 4096 + 0x48);
  const std::byte* arm = dev.bar_mem() + 9 * 4096 + 0x40;
  EXPECT_EQ(arm[0], std::byte{0x12});
  EXPECT_EQ(arm[1], std::byte{0x34});
  EXPECT_EQ(arm[3], std::byte{0x78});
  EXPECT_EQ(dev.reg32(9 * 4096 + 0x48), 0x12000001u);
}

}  // namespace
}  // namespace kbv::hca
