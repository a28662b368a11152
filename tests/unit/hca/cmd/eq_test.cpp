// SPDX-License-Identifier: BSD-3-Clause
// CREATE_EQ / DESTROY_EQ / QUERY_EQ encodings (hca/cmd/eq.hpp).
#include "hca/cmd/eq.hpp"

#include "../cmd_harness.hpp"

namespace kbv::hca::cmd {
namespace {

using test::CmdHarness;
using EqCmdTest = CmdHarness;

TEST_F(EqCmdTest, CreateEqEncodesContextBitmaskAndPas) {
  CreateEqAttr a;
  a.log_eq_size = 7;
  a.uar = 0x123;
  a.intr = 2;
  a.pas = {0x40000, 0x41000};
  a.event(prm::EventType::CMD)
      .event(prm::EventType::PAGE_REQUEST)
      .event(prm::EventType::GENERAL_EVENT);
  Result<uint32_t> eqn{Status{KBV_PENDING}};
  ASSERT_EQ(create_eq(*cmdq, a, [&](Result<uint32_t> r) { eqn = r; }), KBV_PENDING);
  auto in = posted();
  ASSERT_EQ(in.size(), 272u + 16u);
  EXPECT_EQ(be16(in, 0), 0x301u);
  // eqc at byte 16 (mlx5_ifc.h eqc_bits): log_eq_size low 5 bits of byte 12,
  // uar_page bytes 13..15, intr low 12 bits of dword 5 (byte 20).
  EXPECT_EQ(u8(in, 16 + 12) & 0x1f, 7u);
  EXPECT_EQ(be32(in, 16 + 12) & 0xffffff, 0x123u);
  EXPECT_EQ(be32(in, 16 + 20) & 0xfff, 2u);
  // event bitmask at byte 88: word 0 holds types 0..63.
  EXPECT_EQ(be64(in, 88), (1ull << 0x0a) | (1ull << 0x0b) | (1ull << 0x22));
  EXPECT_EQ(be64(in, 96), 0u);
  EXPECT_EQ(be64(in, 272), 0x40000u);
  EXPECT_EQ(be64(in, 280), 0x41000u);
  std::vector<std::byte> out(16);
  out[11] = std::byte{0x0b};
  answer(out);
  ASSERT_TRUE(eqn.has_value());
  EXPECT_EQ(*eqn, 0x0bu);
}

TEST_F(EqCmdTest, CreateEqRejectsBadAttributes) {
  CreateEqAttr a;
  a.log_eq_size = 7;
  EXPECT_EQ(create_eq(*cmdq, a, [](Result<uint32_t>) {}), KBV_ERR_INVALID_ARGUMENT);  // no pas
  a.pas = {0x1000};
  a.log_eq_size = 40;
  EXPECT_EQ(create_eq(*cmdq, a, [](Result<uint32_t>) {}), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(fw.rung().empty());
}

TEST_F(EqCmdTest, DestroyAndQueryEq) {
  Status st{KBV_PENDING};
  ASSERT_EQ(destroy_eq(*cmdq, 9, [&](Status s) { st = s; }), KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x302u);
  EXPECT_EQ(u8(in, 11), 9u);
  answer_ok();
  EXPECT_TRUE(st.is_ok());

  Result<EqInfo> info{Status{KBV_PENDING}};
  ASSERT_EQ(query_eq(*cmdq, 9, [&](Result<EqInfo> r) { info = r; }), KBV_PENDING);
  in = posted();
  EXPECT_EQ(be16(in, 0), 0x303u);
  EXPECT_EQ(u8(in, 11), 9u);
  std::vector<std::byte> out(272);
  out[16 + 2] = std::byte{0x09};    // st = ARMED (bits 11:8 of dword 0)
  put32(out, 16 + 0x28, 0x000005);  // consumer_counter
  put32(out, 16 + 0x2c, 0x000007);  // producer_counter
  put64(out, 88, 1ull << 0x0a);
  answer(out);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->st, 0x9u);
  EXPECT_EQ(info->consumer_counter, 5u);
  EXPECT_EQ(info->producer_counter, 7u);
  EXPECT_EQ(info->event_bitmask, 1ull << 0x0a);
}

}  // namespace
}  // namespace kbv::hca::cmd
