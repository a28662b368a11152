// SPDX-License-Identifier: BSD-3-Clause
#include "common/log.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct Captured {
  kbv_log_level_t level;
  std::string component;
  std::string msg;
};

void capture(void* ctx, kbv_log_level_t level, const char* component, const char* msg) {
  static_cast<std::vector<Captured>*>(ctx)->push_back({level, component, msg});
}

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override { kbv_log_set_handler(capture, &got_); }
  void TearDown() override {
    kbv_log_set_handler(nullptr, nullptr);
    unsetenv("KBV_LOG_LEVEL");
    kbv::log::reset_level_from_env();
  }
  std::vector<Captured> got_;
};

TEST_F(LogTest, DefaultLevelIsErrorOnly) {
  unsetenv("KBV_LOG_LEVEL");
  kbv::log::reset_level_from_env();
  EXPECT_EQ(kbv_log_get_level(), KBV_LOG_ERROR);
  kbv::log::warn("test", "hidden {}", 1);
  kbv::log::error("test", "shown {}", 2);
  ASSERT_EQ(got_.size(), 1u);
  EXPECT_EQ(got_[0].level, KBV_LOG_ERROR);
  EXPECT_EQ(got_[0].component, "test");
  EXPECT_EQ(got_[0].msg, "shown 2");
}

TEST_F(LogTest, LevelFromEnvironment) {
  setenv("KBV_LOG_LEVEL", "debug", 1);
  kbv::log::reset_level_from_env();
  EXPECT_EQ(kbv_log_get_level(), KBV_LOG_DEBUG);
  kbv::log::debug("cmdq", "slot {:#x}", 31);
  kbv::log::trace("cmdq", "too verbose");
  ASSERT_EQ(got_.size(), 1u);
  EXPECT_EQ(got_[0].msg, "slot 0x1f");

  setenv("KBV_LOG_LEVEL", "4", 1);
  kbv::log::reset_level_from_env();
  EXPECT_EQ(kbv_log_get_level(), KBV_LOG_TRACE);
}

TEST_F(LogTest, BadEnvironmentFallsBackToError) {
  setenv("KBV_LOG_LEVEL", "loud", 1);
  kbv::log::reset_level_from_env();
  EXPECT_EQ(kbv_log_get_level(), KBV_LOG_ERROR);
}

TEST_F(LogTest, SetLevelClampsAndParses) {
  kbv_log_set_level(static_cast<kbv_log_level_t>(99));
  EXPECT_EQ(kbv_log_get_level(), KBV_LOG_TRACE);
  kbv_log_level_t l;
  EXPECT_EQ(kbv_log_parse_level("WARN", &l), 0);
  EXPECT_EQ(l, KBV_LOG_WARN);
  EXPECT_EQ(kbv_log_parse_level("warning", &l), 0);
  EXPECT_EQ(kbv_log_parse_level("nope", &l), -1);
  EXPECT_EQ(kbv_log_parse_level(nullptr, &l), -1);
  EXPECT_STREQ(kbv_log_level_name(KBV_LOG_INFO), "info");
}

TEST_F(LogTest, RestoringDefaultHandlerStopsCapture) {
  kbv_log_set_handler(nullptr, nullptr);
  testing::internal::CaptureStderr();
  kbv::log::error("x", "to stderr");
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(got_.empty());
  EXPECT_NE(err.find("kbv error [x] to stderr"), std::string::npos) << err;
}

}  // namespace
