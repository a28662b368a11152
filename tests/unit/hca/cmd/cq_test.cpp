// SPDX-License-Identifier: BSD-3-Clause
// CQ command encodings (hca/cmd/cq.hpp); byte offsets worked out from
// mlx5_ifc.h create_cq_in / cqc / modify_cq_in by hand.
#include "hca/cmd/cq.hpp"

#include "../cmd_harness.hpp"
#include "hca/prm/cq.hpp"

namespace kbv::hca::cmd {
namespace {

using test::CmdHarness;
using CqCmdTest = CmdHarness;

TEST_F(CqCmdTest, Create) {
  CqAttr a;
  a.log_cq_size = 7;
  a.uar_page = 0x21;
  a.c_eqn = 0x105;
  a.dbr_addr = 0xabc0;
  a.pas = {0x10000, 0x11000};
  a.cq_period = 16;
  a.cq_max_count = 32;
  a.oi = true;
  Result<uint32_t> got{Status{KBV_PENDING}};
  ASSERT_EQ(create_cq(*cmdq, a, [&](Result<uint32_t> r) { got = r; }), KBV_PENDING);
  auto in = posted();
  ASSERT_EQ(in.size(), 272u + 16);
  EXPECT_EQ(be16(in, 0), 0x400u);
  const size_t c = 16;
  EXPECT_EQ(be32(in, c) >> 17 & 1, 1u);  // oi
  EXPECT_EQ(be32(in, c) >> 21 & 7, 0u);  // cqe_sz 64
  EXPECT_EQ(u8(in, c + 12) & 0x1F, 7u);  // log_cq_size
  EXPECT_EQ(be32(in, c + 12) & 0xFFFFFF, 0x21u);
  EXPECT_EQ(be32(in, c + 16), (16u << 16) | 32u);
  EXPECT_EQ(be32(in, c + 20), 0x105u);
  EXPECT_EQ(be64(in, c + 56), 0xabc0u);
  EXPECT_EQ(be64(in, 272), 0x10000u);
  EXPECT_EQ(be64(in, 280), 0x11000u);
  std::vector<std::byte> out(16);
  put32(out, 8, 0x77);
  answer(out);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, 0x77u);
}

TEST_F(CqCmdTest, CreateRefusesBadArguments) {
  CqAttr a;
  EXPECT_EQ(create_cq(*cmdq, a, [](Result<uint32_t>) {}), KBV_ERR_INVALID_ARGUMENT);  // no pas
  a.pas = {0x1000};
  a.log_cq_size = 32;
  EXPECT_EQ(create_cq(*cmdq, a, [](Result<uint32_t>) {}), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(fw.rung().empty());
}

TEST_F(CqCmdTest, ModifyResizeDestroyQuery) {
  Status st{KBV_PENDING};
  CqModeration m;
  m.select = prm::modify_cq_field_select::kCqPeriod | prm::modify_cq_field_select::kCqMaxCount;
  m.cq_period = 3;
  m.cq_max_count = 9;
  ASSERT_EQ(modify_cq(*cmdq, 0x44, m, [&](Status s) { st = s; }), KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x403u);
  EXPECT_EQ(be16(in, 6), 0u);
  EXPECT_EQ(be32(in, 8), 0x44u);
  EXPECT_EQ(be32(in, 12), 3u);
  EXPECT_EQ(be32(in, 16 + 16), (3u << 16) | 9u);
  answer_ok();
  EXPECT_TRUE(st.is_ok());

  CqResize r;
  r.log_cq_size = 9;
  r.pas = {0x20000, 0x21000, 0x22000, 0x23000, 0x24000, 0x25000, 0x26000, 0x27000};
  st = Status{KBV_PENDING};
  ASSERT_EQ(resize_cq(*cmdq, 0x44, r, [&](Status s) { st = s; }), KBV_PENDING);
  in = posted();
  ASSERT_EQ(in.size(), 272u + 64);
  EXPECT_EQ(be16(in, 6), 1u);  // op_mod resize
  EXPECT_EQ(be32(in, 12), 7u);
  EXPECT_EQ(u8(in, 16 + 12) & 0x1F, 9u);
  EXPECT_EQ(be64(in, 272 + 56), 0x27000u);
  std::vector<std::byte> out(16);
  out[0] = std::byte{0x40};  // bad size: outstanding CQEs
  answer(out);
  EXPECT_EQ(st, KBV_ERR_FW_BAD_SIZE);

  st = Status{KBV_PENDING};
  ASSERT_EQ(destroy_cq(*cmdq, 0x44, [&](Status s) { st = s; }), KBV_PENDING);
  in = posted();
  EXPECT_EQ(be16(in, 0), 0x401u);
  EXPECT_EQ(be32(in, 8), 0x44u);
  out.assign(16, std::byte{0});
  out[0] = std::byte{0x06};  // resource busy
  answer(out);
  EXPECT_EQ(st, KBV_ERR_BUSY);

  Result<CqInfo> got{Status{KBV_PENDING}};
  ASSERT_EQ(query_cq(*cmdq, 0x44, 2, [&](Result<CqInfo> x) { got = x; }), KBV_PENDING);
  in = posted();
  EXPECT_EQ(be16(in, 0), 0x402u);
  ASSERT_EQ(outlen(), 272u + 16);
  out.assign(288, std::byte{0});
  put32(out, 16, 0x00000900);  // st = 9 (armed)
  out[16 + 12] = std::byte{5};
  put32(out, 16 + 20, 3);
  put32(out, 16 + 40, 17);  // consumer_counter
  put32(out, 16 + 44, 20);  // producer_counter
  put64(out, 272 + 8, 0x31000);
  answer(out);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->st, prm::cqc_st::kNotificationRequestArmed);
  EXPECT_EQ(got->log_cq_size, 5u);
  EXPECT_EQ(got->c_eqn, 3u);
  EXPECT_EQ(got->consumer_counter, 17u);
  EXPECT_EQ(got->producer_counter, 20u);
  ASSERT_EQ(got->pas.size(), 2u);
  EXPECT_EQ(got->pas[1], 0x31000u);
}

}  // namespace
}  // namespace kbv::hca::cmd
