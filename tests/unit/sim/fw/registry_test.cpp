// SPDX-License-Identifier: BSD-3-Clause
// The command registry and its generic checks (registry.hpp).
#include "sim/fw/registry.hpp"
#include "sim/fw/syndromes.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kbv::sim::fw {
namespace {

using prm::CmdStatus;

Outcome ok_fn(FwContext&, const Command&, std::span<std::byte>) { return Outcome::ok(); }

TEST(FwRegistry, AddRejectsDuplicatesAndBadHandlers) {
  CommandRegistry r;
  EXPECT_TRUE(r.add(0x900, Handler::make(16, 16, Requires::kNothing, ok_fn)).is_ok());
  EXPECT_EQ(r.add(0x900, Handler::make(16, 16, Requires::kNothing, ok_fn)).code(),
            KBV_ERR_ALREADY_EXISTS);
  EXPECT_EQ(r.add(0x901, Handler::make(16, 16, Requires::kNothing, nullptr)).code(),
            KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(r.add(0x902, Handler::make(4, 16, Requires::kNothing, ok_fn)).code(),
            KBV_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(r.replace(0x900, Handler::make(32, 16, Requires::kNothing, ok_fn)).is_ok());
  ASSERT_NE(r.find(0x900), nullptr);
  EXPECT_EQ(r.find(0x900)->min_inlen, 32u);
  EXPECT_EQ(r.find(0x903), nullptr);
}

TEST(FwRegistry, GenericChecksInOrder) {
  const Handler h = Handler::make(32, 24, Requires::kInitialized, ok_fn, {1, 2});
  std::vector<std::byte> in(32);
  Command c{0x900, 1, 0, in};
  auto check = [&](std::size_t outlen, bool en, bool init) {
    return CommandRegistry::check(&h, c, outlen, en, init);
  };
  EXPECT_EQ(CommandRegistry::check(nullptr, c, 24, true, true),
            Outcome::fail(CmdStatus::BAD_OP_ERR, synd::kUnknownOpcode));
  EXPECT_EQ(check(16, true, true),
            Outcome::fail(CmdStatus::BAD_OUTP_LEN_ERR, synd::kOutputTooShort));
  c.in = std::span(in).first(16);
  EXPECT_EQ(check(24, true, true), Outcome::fail(CmdStatus::BAD_INP_LEN_ERR, synd::kInputTooShort));
  c.in = in;
  c.op_mod = 3;
  EXPECT_EQ(check(24, true, true), Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kBadOpMod));
  c.op_mod = 2;
  c.uid = 7;
  EXPECT_EQ(check(24, true, true), Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kBadUid));
  c.uid = 0;
  EXPECT_EQ(check(24, false, false),
            Outcome::fail(CmdStatus::BAD_SYS_STATE_ERR, synd::kNotEnabled));
  EXPECT_EQ(check(24, true, false),
            Outcome::fail(CmdStatus::BAD_SYS_STATE_ERR, synd::kNotInitialized));
  EXPECT_EQ(check(24, true, true), Outcome::ok());
}

}  // namespace
}  // namespace kbv::sim::fw
