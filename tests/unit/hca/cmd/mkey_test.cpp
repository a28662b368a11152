// SPDX-License-Identifier: BSD-3-Clause
// Memory key command encodings (hca/cmd/mkey.hpp); byte offsets worked out
// from mlx5_ifc.h create_mkey_in / mkc / mtt by hand.
#include "hca/cmd/mkey.hpp"

#include "../cmd_harness.hpp"

namespace kbv::hca::cmd {
namespace {

using test::CmdHarness;
using MkeyCmdTest = CmdHarness;

TEST_F(MkeyCmdTest, CreateMttKey) {
  MkeyAttr a;
  a.pd = 0x12345;
  a.start_addr = 0x7f0000001234ull;
  a.len = 3 * 4096;
  a.lw = true;
  a.rr = true;
  a.mkey_7_0 = 0x5a;
  a.mtt = {0x100000, 0x101000, 0x102000, 0x103000, 0x200000};
  Result<uint32_t> got{Status{KBV_PENDING}};
  ASSERT_EQ(create_mkey(*cmdq, a, [&](Result<uint32_t> r) { got = r; }), KBV_PENDING);
  auto in = posted();
  ASSERT_EQ(in.size(), 272u + 3 * 16);  // 5 MTTs -> 3 octwords (one pad entry)
  EXPECT_EQ(be16(in, 0), 0x200u);
  const size_t k = 16;                                      // mkc
  EXPECT_EQ(u8(in, k + 2), 0x08u | 0x04u | 0x10u | 0x01u);  // lw, lr, rr, access_mode_1_0 = MTT
  EXPECT_EQ(u8(in, k + 0) & 0x07u, 0u);                     // access_mode_4_2
  EXPECT_EQ(be32(in, k + 4), 0xFFFFFF5Au);                  // qpn any, mkey_7_0
  EXPECT_EQ(be32(in, k + 12) & 0xFFFFFF, 0x12345u);
  EXPECT_EQ(be64(in, k + 16), 0x7f0000001234ull);
  EXPECT_EQ(be64(in, k + 24), 3u * 4096);
  EXPECT_EQ(be32(in, k + 52), 3u);        // translations_octword_size
  EXPECT_EQ(u8(in, k + 59) & 0x1F, 12u);  // log_page_size
  EXPECT_EQ(be32(in, 96), 3u);            // translations_octword_actual_size
  EXPECT_EQ(be64(in, 272), 0x100003ull);  // page | wr_en | rd_en
  EXPECT_EQ(be64(in, 272 + 32), 0x200003ull);
  EXPECT_EQ(be64(in, 272 + 40), 0u);  // pad
  std::vector<std::byte> out(16);
  put32(out, 8, 0x000abc);
  answer(out);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, 0xabc5Au);
}

TEST_F(MkeyCmdTest, CreateRefusesBadArguments) {
  MkeyAttr a;
  a.mtt = {0x1001};  // not page aligned
  EXPECT_EQ(create_mkey(*cmdq, a, [](Result<uint32_t>) {}), KBV_ERR_INVALID_ARGUMENT);
  a.mtt = {0x1000};
  a.access_mode = prm::mkc_access_mode::kPa;
  EXPECT_EQ(create_mkey(*cmdq, a, [](Result<uint32_t>) {}), KBV_ERR_INVALID_ARGUMENT);
  a = MkeyAttr{};
  a.pd = 1u << 24;
  EXPECT_EQ(create_mkey(*cmdq, a, [](Result<uint32_t>) {}), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(fw.rung().empty());
}

TEST_F(MkeyCmdTest, DestroyAndQuery) {
  Status st{KBV_PENDING};
  ASSERT_EQ(destroy_mkey(*cmdq, 0xabc5A, [&](Status s) { st = s; }), KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x202u);
  EXPECT_EQ(be32(in, 8), 0xabcu);  // mkey_index
  answer_ok();
  EXPECT_TRUE(st.is_ok());

  Result<MkeyInfo> got{Status{KBV_PENDING}};
  ASSERT_EQ(query_mkey(*cmdq, 0x1207, [&](Result<MkeyInfo> r) { got = r; }), KBV_PENDING);
  in = posted();
  EXPECT_EQ(be16(in, 0), 0x201u);
  EXPECT_EQ(be32(in, 8), 0x12u);
  ASSERT_EQ(outlen(), 304u);
  std::vector<std::byte> out(304);
  out[16 + 2] = std::byte{0x08 | 0x20 | 0x01};  // lw, rw, MTT
  put32(out, 16 + 4, 0xFFFFFF07);
  put32(out, 16 + 12, 0x42);
  put64(out, 16 + 16, 0x5000);
  put64(out, 16 + 24, 8192);
  put32(out, 16 + 52, 1);
  out[16 + 59] = std::byte{12};
  put64(out, 272, 0x900003);
  put64(out, 280, 0x901001);
  answer(out);
  ASSERT_TRUE(got.has_value()) << got.status().to_string();
  EXPECT_EQ(got->access_mode, prm::mkc_access_mode::kMtt);
  EXPECT_TRUE(got->lw);
  EXPECT_TRUE(got->rw);
  EXPECT_FALSE(got->lr);
  EXPECT_EQ(got->mkey_7_0, 7u);
  EXPECT_EQ(got->pd, 0x42u);
  EXPECT_EQ(got->start_addr, 0x5000u);
  EXPECT_EQ(got->len, 8192u);
  EXPECT_EQ(got->log_page_size, 12u);
  ASSERT_EQ(got->mtt.size(), 2u);
  EXPECT_EQ(got->mtt[0], 0x900000u);
  EXPECT_EQ(got->mtt_flags[0], 3u);
  EXPECT_EQ(got->mtt[1], 0x901000u);
  EXPECT_EQ(got->mtt_flags[1], 1u);
}

}  // namespace
}  // namespace kbv::hca::cmd
