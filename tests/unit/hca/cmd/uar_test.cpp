// SPDX-License-Identifier: BSD-3-Clause
// ALLOC_UAR / DEALLOC_UAR and the PD / transport domain commands.
#include "hca/cmd/uar.hpp"

#include "../cmd_harness.hpp"
#include "hca/cmd/pd.hpp"

namespace kbv::hca::cmd {
namespace {

using test::CmdHarness;
using ObjCmdTest = CmdHarness;

TEST_F(ObjCmdTest, AllocAndDeallocUar) {
  Result<uint32_t> uar{Status{KBV_PENDING}};
  ASSERT_EQ(alloc_uar(*cmdq, [&](Result<uint32_t> r) { uar = r; }), KBV_PENDING);
  EXPECT_EQ(be16(posted(), 0), 0x802u);
  std::vector<std::byte> out(16);
  put32(out, 8, 0x000005);
  answer(out);
  ASSERT_TRUE(uar.has_value());
  EXPECT_EQ(*uar, 5u);
  Status st{KBV_PENDING};
  ASSERT_EQ(dealloc_uar(*cmdq, 5, [&](Status s) { st = s; }), KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x803u);
  EXPECT_EQ(be32(in, 8), 5u);
  answer_ok();
  EXPECT_TRUE(st.is_ok());
}

TEST_F(ObjCmdTest, PdAndTransportDomain) {
  Result<uint32_t> pd{Status{KBV_PENDING}}, td{Status{KBV_PENDING}};
  ASSERT_EQ(alloc_pd(*cmdq, [&](Result<uint32_t> r) { pd = r; }), KBV_PENDING);
  EXPECT_EQ(be16(posted(), 0), 0x800u);
  std::vector<std::byte> out(16);
  put32(out, 8, 0xff000042);  // the top byte is reserved: only 24 bits are the pd
  answer(out);
  ASSERT_TRUE(pd.has_value());
  EXPECT_EQ(*pd, 0x42u);
  ASSERT_EQ(alloc_transport_domain(*cmdq, [&](Result<uint32_t> r) { td = r; }), KBV_PENDING);
  EXPECT_EQ(be16(posted(), 0), 0x816u);
  std::vector<std::byte> err(16);
  err[0] = std::byte{0xF};  // no resources
  put32(err, 4, 0x77);
  answer(err);
  EXPECT_EQ(td.status(), KBV_ERR_NO_RESOURCES);
  EXPECT_EQ(td.status().syndrome(), 0x77u);
  Status st{KBV_PENDING};
  ASSERT_EQ(dealloc_pd(*cmdq, 0x42, [&](Status s) { st = s; }), KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x801u);
  EXPECT_EQ(be32(in, 8), 0x42u);
  answer_ok();
  EXPECT_TRUE(st.is_ok());
  EXPECT_EQ(dealloc_pd(*cmdq, 1u << 24, [](Status) {}), KBV_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(dealloc_transport_domain(*cmdq, 3, [&](Status s) { st = s; }), KBV_PENDING);
  in = posted();
  EXPECT_EQ(be16(in, 0), 0x817u);
  EXPECT_EQ(be32(in, 8), 3u);
}

}  // namespace
}  // namespace kbv::hca::cmd
