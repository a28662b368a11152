// SPDX-License-Identifier: BSD-3-Clause
// Command tracing: the hex dump format used for raw inputs/outputs.
#include "hca/cmdq/cmd_trace.hpp"

#include <gtest/gtest.h>

namespace kbv::hca {
namespace {

TEST(CmdTrace, HexDumpIsSixteenBytesALineWithOffsets) {
  std::vector<std::byte> b(18);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::byte>(i == 0 ? 0x01 : 0xA0 + i);
  const std::string d = hex_dump(b);
  EXPECT_EQ(d.substr(0, 12), "0000: 01 a1 ");
  const size_t nl = d.find('\n');
  ASSERT_NE(nl, std::string::npos);
  EXPECT_EQ(d.substr(nl + 1), "0010: b0 b1");
  EXPECT_EQ(hex_dump({}), "");
}

}  // namespace
}  // namespace kbv::hca
