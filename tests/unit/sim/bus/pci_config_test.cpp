// SPDX-License-Identifier: BSD-3-Clause
// PciConfig (src/sim/bus/pci_config.cpp): header contents, capability chain,
// writable and read-only fields, BAR sizing.
#include "sim/bus/pci_config.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstring>

namespace kbv::sim {
namespace {

PciIdentity cx5() { return {0x15b3, 0x1017, 0x15b3, 0x0007, 0x020000, 0x00, 32ull << 20, 64}; }

void put32(PciConfig& c, uint32_t off, uint32_t v) {
  std::array<std::byte, 4> b;
  std::memcpy(b.data(), &v, 4);  // little-endian host = PCI order
  c.write(off, b);
}
void put16(PciConfig& c, uint32_t off, uint16_t v) {
  std::array<std::byte, 2> b;
  std::memcpy(b.data(), &v, 2);
  c.write(off, b);
}

TEST(SimPciConfig, HeaderIdentity) {
  PciConfig c(cx5());
  EXPECT_EQ(c.r16(PciConfig::kVendor), 0x15b3);
  EXPECT_EQ(c.r16(PciConfig::kDevice), 0x1017);
  EXPECT_EQ(c.r32(0x08) >> 8, 0x020000u);  // class code
  EXPECT_EQ(c.r16(PciConfig::kSubsystemVendor), 0x15b3);
  EXPECT_EQ(c.r16(PciConfig::kSubsystem), 0x0007);
  EXPECT_EQ(c.r16(PciConfig::kCommand), 0);
  EXPECT_TRUE(c.r16(PciConfig::kStatus) & (1 << 4));
  EXPECT_EQ(c.r32(PciConfig::kBar0) & 0xF, 0xCu);  // 64-bit prefetchable memory
  EXPECT_EQ(c.r32(0x3C) >> 8 & 0xFF, 1u);          // INTA#
}

TEST(SimPciConfig, CapabilityChainPmPcieMsix) {
  PciConfig c(cx5());
  uint32_t pos = c.r32(PciConfig::kCapPtr) & 0xFF;
  std::vector<uint8_t> ids;
  std::vector<uint32_t> at;
  for (int guard = 0; pos != 0 && guard < 48; ++guard) {
    ids.push_back(c.r16(pos) & 0xFF);
    at.push_back(pos);
    pos = c.r16(pos) >> 8;
  }
  ASSERT_EQ(ids, (std::vector<uint8_t>{0x01, 0x10, 0x11}));
  const uint32_t pcie = at[1], msix = at[2];
  EXPECT_EQ(c.r16(pcie + 2) & 0xF, 2);               // PCIe cap version 2
  EXPECT_EQ(c.r16(pcie + 2) >> 4 & 0xF, 0);          // endpoint
  EXPECT_EQ(c.r16(msix + 2) & 0x7FF, 63);            // table size N-1
  EXPECT_EQ(c.r32(msix + 4), (32u << 20) - 0x2000);  // table in BAR0 (BIR 0)
  EXPECT_EQ(c.r32(msix + 8), (32u << 20) - 0x1000);  // PBA in BAR0
}

TEST(SimPciConfig, ReadOnlyFieldsIgnoreWrites) {
  PciConfig c(cx5());
  put32(c, PciConfig::kVendor, 0xdeadbeef);
  put32(c, 0x08, 0xffffffff);
  put16(c, PciConfig::kSubsystem, 0x1234);
  put16(c, PciConfig::kCapPtr, 0x00);
  put16(c, PciConfig::kMsixCap + 2, 0xC000);  // enable + mask: VFIO owns them
  EXPECT_EQ(c.r16(PciConfig::kVendor), 0x15b3);
  EXPECT_EQ(c.r16(PciConfig::kDevice), 0x1017);
  EXPECT_EQ(c.r32(0x08) >> 8, 0x020000u);
  EXPECT_EQ(c.r16(PciConfig::kSubsystem), 0x0007);
  EXPECT_EQ(c.r16(PciConfig::kCapPtr) & 0xFF, PciConfig::kPmCap);
  EXPECT_FALSE(c.msix_enabled());
}

TEST(SimPciConfig, CommandRegisterWritableBits) {
  PciConfig c(cx5());
  put16(c, PciConfig::kCommand, 0xFFFF);
  EXPECT_EQ(c.command(), 0x0547);
  put16(c, PciConfig::kCommand, PciConfig::kCmdMemory | PciConfig::kCmdBusMaster);
  EXPECT_EQ(c.command(), 0x0006);
}

TEST(SimPciConfig, Bar0SizingReadsBackSize) {
  PciConfig c(cx5());
  put32(c, PciConfig::kBar0, 0xFFFFFFFF);
  put32(c, PciConfig::kBar1, 0xFFFFFFFF);
  const uint64_t v = uint64_t{c.r32(PciConfig::kBar1)} << 32 | c.r32(PciConfig::kBar0);
  EXPECT_EQ(v & 0xF, 0xCu);
  EXPECT_EQ(~(v & ~0xFull) + 1, 32ull << 20);
  put32(c, PciConfig::kBar0, 0xF0000000);
  put32(c, PciConfig::kBar1, 0x00000001);
  EXPECT_EQ(c.r32(PciConfig::kBar0), 0xF000000Cu);
  EXPECT_EQ(c.r32(PciConfig::kBar1), 1u);
}

TEST(SimPciConfig, OutOfRangeReadsAllOnes) {
  PciConfig c(cx5());
  std::array<std::byte, 4> b{};
  c.read(PciConfig::kSize - 2, b);
  EXPECT_EQ(b[2], std::byte{0xFF});
  EXPECT_EQ(b[3], std::byte{0xFF});
  EXPECT_EQ(c.r32(0x100), 0u);  // no extended capabilities
}

TEST(SimPciConfig, MsixEnableByKernel) {
  PciConfig c(cx5());
  c.set_msix_enabled(true);
  EXPECT_TRUE(c.msix_enabled());
  EXPECT_EQ(c.r16(PciConfig::kMsixCap + 2) & 0x7FF, 63);
  c.set_msix_enabled(false);
  EXPECT_FALSE(c.msix_enabled());
}

}  // namespace
}  // namespace kbv::sim
