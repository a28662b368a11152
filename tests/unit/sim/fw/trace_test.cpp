// SPDX-License-Identifier: BSD-3-Clause
// The command trace format (trace.hpp).
#include "sim/fw/trace.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kbv::sim::fw {
namespace {

using prm::CmdStatus;

TEST(FwTrace, HexdumpFoldsRepeatedRows) {
  std::vector<std::byte> b(64);
  b[0] = std::byte{0x01};
  b[1] = std::byte{0x04};
  auto lines = CmdTrace::hexdump("  in ", b);
  ASSERT_EQ(lines.size(), 4u);  // row 0, row 1, "*", last row
  EXPECT_EQ(lines[0], "  in  0000: 01 04 00 00 00 00 00 00 00 00 00 00 00 00 00 00");
  EXPECT_EQ(lines[2], "  in  *");
  EXPECT_EQ(lines[3].substr(0, 11), "  in  0030:");
}

TEST(FwTrace, RecordWritesHeaderAndBytesToSink) {
  CmdTrace t(true);
  std::vector<std::string> got;
  t.set_sink([&](std::string_view l) { got.emplace_back(l); });
  std::vector<std::byte> in(16), out(16);
  in[0] = std::byte{0x01};
  in[1] = std::byte{0x04};
  out[0] = std::byte{0x03};
  t.record(2, 0x104, 0, 0, Outcome{3, 0x1234}, in, out);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_NE(got[0].find("slot 2 ENABLE_HCA (0x104)"), std::string::npos);
  EXPECT_NE(got[0].find("BAD_PARAM_ERR (0x3) syndrome 0x1234"), std::string::npos);
  EXPECT_EQ(got[1].substr(0, 17), "  in  0000: 01 04");
  EXPECT_EQ(got[2].substr(0, 14), "  out 0000: 03");
  // A device label starts every line of the record.
  t.set_device("fffe:00:02.0 sim:b");
  t.record(2, 0x104, 0, 0, Outcome{}, in, out);
  ASSERT_EQ(got.size(), 6u);
  for (std::size_t i = 3; i < 6; ++i)
    EXPECT_EQ(got[i].rfind("[fffe:00:02.0 sim:b] ", 0), 0u) << got[i];
  EXPECT_NE(got[3].find("] slot 2 ENABLE_HCA (0x104)"), std::string::npos);
  got.resize(3);
  CmdTrace off(false);
  off.set_sink([&](std::string_view l) { got.emplace_back(l); });
  off.record(0, 0x80D, 0, 0, {}, in, out);
  EXPECT_EQ(got.size(), 3u);
}

}  // namespace
}  // namespace kbv::sim::fw
