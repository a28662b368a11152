// SPDX-License-Identifier: BSD-3-Clause
// Golden encodings of QUERY_PAGES / MANAGE_PAGES (hca/cmd/pages.hpp).
#include "hca/cmd/pages.hpp"

#include "../cmd_harness.hpp"

namespace kbv::hca::cmd {
namespace {

using test::CmdHarness;
using PagesCmdTest = CmdHarness;

TEST_F(PagesCmdTest, QueryPagesSignedCount) {
  Result<PagesQuery> got{Status{KBV_PENDING}};
  ASSERT_EQ(
      query_pages(*cmdq, prm::QueryPagesOpMod::INIT_PAGES, [&](Result<PagesQuery> r) { got = r; }),
      KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x107u);
  EXPECT_EQ(be16(in, 6), 2u);
  std::vector<std::byte> out(16);
  put32(out, 8, 0x7);           // function_id
  put32(out, 12, 0xFFFFFFFEu);  // -2
  answer(out);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->function_id, 7u);
  EXPECT_EQ(got->num_pages, -2);
}

TEST_F(PagesCmdTest, ManagePagesGiveListsPages) {
  Status st{KBV_PENDING};
  std::vector<uint64_t> pas{0x100000000ull, 0x2000, 0xfffff000};
  ASSERT_EQ(manage_pages_give(*cmdq, 0, pas, [&](Status s) { st = s; }), KBV_PENDING);
  auto in = posted();
  ASSERT_EQ(in.size(), 16u + 24u);
  EXPECT_EQ(be16(in, 0), 0x108u);
  EXPECT_EQ(be16(in, 6), 1u);  // ALLOCATION_SUCCESS
  EXPECT_EQ(be32(in, 12), 3u);
  EXPECT_EQ(be64(in, 16), 0x100000000ull);
  EXPECT_EQ(be64(in, 24), 0x2000u);
  EXPECT_EQ(be64(in, 32), 0xfffff000u);
  answer_ok();
  EXPECT_TRUE(st.is_ok());
  EXPECT_EQ(manage_pages_give(*cmdq, 0, {0x1001}, [](Status) {}), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(manage_pages_give(*cmdq, 0, {}, [](Status) {}), KBV_ERR_INVALID_ARGUMENT);
}

TEST_F(PagesCmdTest, ManagePagesTakeReturnsListedPages) {
  Result<std::vector<uint64_t>> got{Status{KBV_PENDING}};
  ASSERT_EQ(manage_pages_take(*cmdq, 0, 4, [&](Result<std::vector<uint64_t>> r) { got = r; }),
            KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 6), 2u);  // HCA_RETURN_PAGES
  EXPECT_EQ(be32(in, 12), 4u);
  ASSERT_EQ(outlen(), 16u + 32u);
  std::vector<std::byte> out(48);
  put32(out, 8, 2);
  put64(out, 16, 0x5000);
  put64(out, 24, 0x9000);
  answer(out);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, (std::vector<uint64_t>{0x5000, 0x9000}));
}

TEST_F(PagesCmdTest, ManagePagesTakeRejectsTooManyEntries) {
  Result<std::vector<uint64_t>> got{Status{KBV_PENDING}};
  ASSERT_EQ(manage_pages_take(*cmdq, 0, 1, [&](Result<std::vector<uint64_t>> r) { got = r; }),
            KBV_PENDING);
  posted();
  std::vector<std::byte> out(24);
  put32(out, 8, 5);
  answer(out);
  EXPECT_EQ(got.status(), KBV_ERR_INTERNAL);
}

TEST_F(PagesCmdTest, CannotGive) {
  Status st{KBV_PENDING};
  ASSERT_EQ(manage_pages_cannot_give(*cmdq, 0, 9, [&](Status s) { st = s; }), KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 6), 0u);
  EXPECT_EQ(be32(in, 12), 9u);
  answer_ok();
  EXPECT_TRUE(st.is_ok());
}

}  // namespace
}  // namespace kbv::hca::cmd
