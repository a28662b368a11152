// SPDX-License-Identifier: BSD-3-Clause
// Multicast attach/detach encodings (hca/cmd/mcg.hpp; mlx5_ifc.h
// attach_to_mcg_in: qpn at byte 8, the GID at byte 16).
#include "hca/cmd/mcg.hpp"

#include "../cmd_harness.hpp"

namespace kbv::hca::cmd {
namespace {

using test::CmdHarness;
using McgCmdTest = CmdHarness;

TEST_F(McgCmdTest, AttachAndDetach) {
  const std::array<uint8_t, 16> gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 2, 3};
  Status st{KBV_PENDING};
  ASSERT_EQ(attach_to_mcg(*cmdq, 0x4567, gid, [&](Status s) { st = s; }), KBV_PENDING);
  auto in = posted();
  ASSERT_EQ(in.size(), 32u);
  EXPECT_EQ(be16(in, 0), 0x806u);
  EXPECT_EQ(be32(in, 8), 0x4567u);
  EXPECT_EQ(be32(in, 24), 0x0000ffffu);
  EXPECT_EQ(be32(in, 28), 0xef010203u);
  answer_ok();
  EXPECT_TRUE(st.is_ok());
  ASSERT_EQ(detach_from_mcg(*cmdq, 0x4567, gid, [&](Status s) { st = s; }), KBV_PENDING);
  in = posted();
  EXPECT_EQ(be16(in, 0), 0x807u);
  EXPECT_EQ(be32(in, 28), 0xef010203u);
  std::vector<std::byte> out(16);
  out[0] = std::byte{0x05};  // bad resource
  answer(out);
  EXPECT_EQ(st, KBV_ERR_FW_BAD_RESOURCE);
  EXPECT_EQ(attach_to_mcg(*cmdq, 1u << 24, gid, [](Status) {}), KBV_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace kbv::hca::cmd
