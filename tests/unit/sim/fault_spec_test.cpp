// SPDX-License-Identifier: BSD-3-Clause
// KBV_SIM_FAULTS (src/sim/fault_spec.hpp): the strict parser, and
// sim::Model::create applying it (or refusing a malformed one).
#include "sim/fault_spec.hpp"

#include "sim/model.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace kbv::sim {
namespace {

FaultSpec ok(std::string_view s) {
  std::string why;
  auto r = parse_fault_spec(s, &why);
  EXPECT_TRUE(r.has_value()) << s << ": " << why;
  return r ? *r : FaultSpec{};
}

std::string bad(std::string_view s) {
  std::string why;
  auto r = parse_fault_spec(s, &why);
  EXPECT_FALSE(r.has_value()) << s;
  EXPECT_EQ(r.status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_FALSE(why.empty()) << s;
  return why;
}

TEST(FaultSpec, EmptyMeansNoFaults) {
  FaultSpec f = ok("");
  EXPECT_FALSE(f.any());
  EXPECT_FALSE(f.wire.enabled());
}

TEST(FaultSpec, TheIssueExample) {
  FaultSpec f = ok("drop=0.05,reorder=0.05,dup=0.01,corrupt=0.001,seed=7");
  EXPECT_DOUBLE_EQ(f.wire.drop, 0.05);
  EXPECT_DOUBLE_EQ(f.wire.reorder, 0.05);
  EXPECT_DOUBLE_EQ(f.wire.duplicate, 0.01);
  EXPECT_DOUBLE_EQ(f.wire.corrupt, 0.001);
  EXPECT_EQ(f.wire.seed, 7u);
  EXPECT_EQ(f.wire.reorder_depth, 1u);
  EXPECT_TRUE(f.any());
  EXPECT_TRUE(f.cmd_fail.empty());
  EXPECT_EQ(f.fatal_after.count(), 0);
}

TEST(FaultSpec, FirmwareAndHealthKeys) {
  FaultSpec f =
      ok("cmd_delay_us=250,cmd_fail=0x800,cmd_fail=0x200:0x5:3,fatal_after_ms=1500,"
         "duplicate=1,reorder_depth=4,seed=0xfeed");
  EXPECT_EQ(f.cmd_delay.count(), 250);
  ASSERT_EQ(f.cmd_fail.size(), 2u);
  EXPECT_EQ(f.cmd_fail[0].opcode, 0x800);
  EXPECT_EQ(f.cmd_fail[0].status, 0x3);
  EXPECT_EQ(f.cmd_fail[0].times, ~0u);
  EXPECT_EQ(f.cmd_fail[1].opcode, 0x200);
  EXPECT_EQ(f.cmd_fail[1].status, 0x5);
  EXPECT_EQ(f.cmd_fail[1].times, 3u);
  EXPECT_EQ(f.fatal_after.count(), 1500);
  EXPECT_DOUBLE_EQ(f.wire.duplicate, 1.0);
  EXPECT_EQ(f.wire.reorder_depth, 4u);
  EXPECT_EQ(f.wire.seed, 0xfeedu);
  EXPECT_FALSE(f.wire.drop > 0);
}

TEST(FaultSpec, MalformedSpecsAreRefusedWithTheItemNamed) {
  EXPECT_NE(bad("drop=0.05,lose=0.1").find("lose"), std::string::npos);
  EXPECT_NE(bad("drop=1.5").find("drop=1.5"), std::string::npos);
  EXPECT_NE(bad("drop=-0.1").find("drop=-0.1"), std::string::npos);
  EXPECT_NE(bad("drop=0.05x").find("drop=0.05x"), std::string::npos);
  EXPECT_NE(bad("drop=nan").find("drop=nan"), std::string::npos);
  EXPECT_NE(bad("drop=").find("drop="), std::string::npos);
  EXPECT_NE(bad("drop").find("'drop'"), std::string::npos);
  EXPECT_NE(bad("=0.1").find("'=0.1'"), std::string::npos);
  EXPECT_NE(bad("drop=0.1,drop=0.2").find("twice"), std::string::npos);
  EXPECT_NE(bad("dup=0.1,duplicate=0.2").find("twice"), std::string::npos);
  EXPECT_NE(bad("drop=0.1,,dup=0.1").find("empty"), std::string::npos);
  EXPECT_NE(bad("drop=0.1,").find("empty"), std::string::npos);
  bad("seed=-1");
  bad("seed=0x");
  bad("seed=18446744073709551616");  // 2^64
  bad("reorder_depth=0");
  bad("reorder_depth=65");
  bad("cmd_delay_us=10000001");
  bad("cmd_delay_us=1.5");
  bad("cmd_fail=");
  bad("cmd_fail=0x10000");
  bad("cmd_fail=0x800:0");
  bad("cmd_fail=0x800:0x100");
  bad("cmd_fail=0x800:3:0");
  bad("cmd_fail=0x800:3:1:1");
  bad("cmd_fail=0x800::1");
  bad("fatal_after_ms=0");
  bad("fatal_after_ms=86400001");
  bad("DROP=0.1");
  bad(" drop=0.1");
  EXPECT_NE(bad("cmd_fail=1,cmd_fail=2,cmd_fail=3,cmd_fail=4,cmd_fail=5,cmd_fail=6,cmd_fail=7,"
                "cmd_fail=8,cmd_fail=9")
                .find("more than 8"),
            std::string::npos);
}

TEST(FaultSpec, EachModelMixesItsNameIntoTheSeed) {
  EXPECT_NE(seed_for_model(7, "a"), seed_for_model(7, "b"));
  EXPECT_EQ(seed_for_model(7, "a"), seed_for_model(7, "a"));
  EXPECT_NE(seed_for_model(7, "a"), seed_for_model(8, "a"));
}

// Sets KBV_SIM_FAULTS for one test (the unit test binary is single-threaded
// at this point: no model of another test is being created).
class FaultsEnv {
 public:
  explicit FaultsEnv(const char* v) { setenv(kFaultsEnv, v, 1); }
  ~FaultsEnv() { unsetenv(kFaultsEnv); }
};

TEST(FaultSpec, ModelCreateAppliesTheEnvironment) {
  FaultsEnv env("drop=0.25,corrupt=0.5,seed=9");
  auto m = Model::create("fault-spec-a");
  ASSERT_TRUE(m.has_value()) << m.status().to_string();
  EXPECT_DOUBLE_EQ((*m)->fault_config().drop, 0.25);
  EXPECT_DOUBLE_EQ((*m)->fault_config().corrupt, 0.5);
  EXPECT_EQ((*m)->fault_config().seed, seed_for_model(9, "fault-spec-a"));
  // A model that opts out keeps its own configuration.
  ModelConfig own;
  own.faults_from_env = false;
  own.faults.duplicate = 0.125;
  auto n = Model::create("fault-spec-b", own);
  ASSERT_TRUE(n.has_value()) << n.status().to_string();
  EXPECT_DOUBLE_EQ((*n)->fault_config().duplicate, 0.125);
  EXPECT_FALSE((*n)->fault_config().drop > 0);
}

TEST(FaultSpec, ModelCreateRefusesAMalformedEnvironmentAndLeavesNothing) {
  FaultsEnv env("drop=0.05,reorder=lots");
  auto m = Model::create("fault-spec-c");
  EXPECT_EQ(m.status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Kernel::instance().device("fault-spec-c"), nullptr);
  std::string why;
  EXPECT_FALSE(fault_spec_from_env(&why).has_value());
  EXPECT_NE(why.find("KBV_SIM_FAULTS"), std::string::npos) << why;
  EXPECT_NE(why.find("reorder=lots"), std::string::npos) << why;
}

}  // namespace
}  // namespace kbv::sim
