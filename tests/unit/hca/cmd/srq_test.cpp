// SPDX-License-Identifier: BSD-3-Clause
// SRQ command encodings (hca/cmd/srq.hpp); byte offsets worked out from
// mlx5_ifc.h create_srq_in / srqc / arm_rq_in by hand.
#include "hca/cmd/srq.hpp"

#include "../cmd_harness.hpp"

namespace kbv::hca::cmd {
namespace {

using test::CmdHarness;
using SrqCmdTest = CmdHarness;

TEST_F(SrqCmdTest, CreateArmDestroyQuery) {
  SrqAttr a;
  a.log_srq_size = 6;
  a.log_rq_stride = 2;
  a.pd = 0x55;
  a.cqn = 0x66;
  a.lwm = 4;
  a.dbr_addr = 0x8840;
  a.pas = {0x30000};
  Result<uint32_t> got{Status{KBV_PENDING}};
  ASSERT_EQ(create_srq(*cmdq, a, [&](Result<uint32_t> r) { got = r; }), KBV_PENDING);
  auto in = posted();
  ASSERT_EQ(in.size(), 272u + 8);
  EXPECT_EQ(be16(in, 0), 0x700u);
  const size_t c = 16;
  EXPECT_EQ(u8(in, c) & 0xF, 6u);
  EXPECT_EQ(be32(in, c + 4) >> 24 & 7, 2u);
  EXPECT_EQ(be32(in, c + 8) & 0xFFFFFF, 0x66u);
  EXPECT_EQ(be32(in, c + 24) & 0xFFFFFF, 0x55u);
  EXPECT_EQ(be16(in, c + 28), 4u);
  EXPECT_EQ(be64(in, c + 40), 0x8840u);
  EXPECT_EQ(be64(in, 272), 0x30000u);
  std::vector<std::byte> out(16);
  put32(out, 8, 0x21);
  answer(out);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, 0x21u);

  Status st{KBV_PENDING};
  ASSERT_EQ(arm_rq(*cmdq, 0x21, 9, [&](Status s) { st = s; }), KBV_PENDING);
  in = posted();
  EXPECT_EQ(be16(in, 0), 0x703u);
  EXPECT_EQ(be16(in, 6), 1u);  // op_mod SRQ
  EXPECT_EQ(be32(in, 8), 0x21u);
  EXPECT_EQ(be16(in, 14), 9u);
  answer_ok();
  EXPECT_TRUE(st.is_ok());

  ASSERT_EQ(destroy_srq(*cmdq, 0x21, [&](Status s) { st = s; }), KBV_PENDING);
  in = posted();
  EXPECT_EQ(be16(in, 0), 0x701u);
  EXPECT_EQ(be32(in, 8), 0x21u);
  answer_ok();

  Result<SrqInfo> info{Status{KBV_PENDING}};
  ASSERT_EQ(query_srq(*cmdq, 0x21, [&](Result<SrqInfo> r) { info = r; }), KBV_PENDING);
  in = posted();
  EXPECT_EQ(be16(in, 0), 0x702u);
  out.assign(272, std::byte{0});
  out[c] = std::byte{0x15};  // state error, log_srq_size 5
  put32(out, c + 28, 0x00070003);
  answer(out);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->state, 1u);
  EXPECT_EQ(info->log_srq_size, 5u);
  EXPECT_EQ(info->lwm, 7u);
  EXPECT_EQ(info->wqe_cnt, 3u);
}

TEST_F(SrqCmdTest, RefusesBadArguments) {
  SrqAttr a;
  EXPECT_EQ(create_srq(*cmdq, a, [](Result<uint32_t>) {}), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(arm_rq(*cmdq, 1, 1u << 16, [](Status) {}), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(fw.rung().empty());
}

}  // namespace
}  // namespace kbv::hca::cmd
