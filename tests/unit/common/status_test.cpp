// SPDX-License-Identifier: BSD-3-Clause
#include <kbv/status.h>
#include <kbv/status.hpp>

#include <gtest/gtest.h>

#include <cerrno>
#include <set>
#include <string>

namespace {

constexpr int32_t kAll[] = {
#define KBV_STATUS_VALUE_(name, value, msg) value,
    KBV_STATUS_LIST(KBV_STATUS_VALUE_)
#undef KBV_STATUS_VALUE_
};

TEST(Status, EveryStatusHasDistinctValueNameAndMessage) {
  std::set<int32_t> values;
  std::set<std::string> names;
  for (int32_t v : kAll) {
    auto s = static_cast<kbv_status_t>(v);
    EXPECT_TRUE(values.insert(v).second) << "duplicate value " << v;
    std::string name = kbv_status_name(s);
    EXPECT_EQ(name.rfind("KBV_", 0), 0u) << name;
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
    EXPECT_GT(std::string(kbv_status_message(s)).size(), 3u) << name;
    EXPECT_TRUE(kbv_status_is_known(v));
    EXPECT_EQ(kbv_status_is_error(s) != 0, v < 0);
  }
  EXPECT_STREQ(kbv_status_name(static_cast<kbv_status_t>(-9999)), "KBV_STATUS_UNKNOWN");
  EXPECT_FALSE(kbv_status_is_known(-9999));
  EXPECT_STREQ(kbv_status_name(KBV_ERR_TIMEOUT), "KBV_ERR_TIMEOUT");
}

// mlx5 command status byte -> status (PRM command return status table).
TEST(Status, FromCmdStatus) {
  struct {
    uint8_t fw;
    kbv_status_t want;
  } const cases[] = {
      {0x00, KBV_SUCCESS},
      {0x01, KBV_ERR_FW_INTERNAL},
      {0x02, KBV_ERR_FW_BAD_OPCODE},
      {0x03, KBV_ERR_FW_BAD_PARAM},
      {0x04, KBV_ERR_FW_BAD_SYS_STATE},
      {0x05, KBV_ERR_FW_BAD_RESOURCE},
      {0x06, KBV_ERR_BUSY},
      {0x08, KBV_ERR_LIMIT_EXCEEDED},
      {0x09, KBV_ERR_FW_BAD_RESOURCE_STATE},
      {0x0A, KBV_ERR_FW_BAD_INDEX},
      {0x0F, KBV_ERR_NO_RESOURCES},
      {0x10, KBV_ERR_INVALID_QP_STATE},
      {0x30, KBV_ERR_FW_BAD_PACKET},
      {0x40, KBV_ERR_FW_BAD_SIZE},
      {0x50, KBV_ERR_FW_BAD_INPUT_LENGTH},
      {0x51, KBV_ERR_FW_BAD_OUTPUT_LENGTH},
      {0x07, KBV_ERR_FW_UNKNOWN},
      {0xFF, KBV_ERR_FW_UNKNOWN},
  };
  for (const auto& c : cases)
    EXPECT_EQ(kbv_status_from_cmd_status(c.fw), c.want) << "fw status " << int(c.fw);
}

TEST(Status, FromCmdDelivery) {
  EXPECT_EQ(kbv_status_from_cmd_delivery(0), KBV_SUCCESS);
  const uint8_t defined[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 0x10};
  for (uint8_t d : defined) {
    EXPECT_EQ(kbv_status_from_cmd_delivery(d), KBV_ERR_CMD_DELIVERY) << int(d);
    EXPECT_STRNE(kbv_cmd_delivery_name(d), "undefined delivery status") << int(d);
  }
  EXPECT_STREQ(kbv_cmd_delivery_name(2), "bad token");
  EXPECT_STREQ(kbv_cmd_delivery_name(0x10), "bad command type");
  EXPECT_STREQ(kbv_cmd_delivery_name(0x33), "undefined delivery status");
  EXPECT_EQ(kbv_status_from_cmd_delivery(0x33), KBV_ERR_CMD_DELIVERY);
}

// CQE syndrome byte -> work completion status (values from docs/PRM.md "Error CQE").
TEST(Status, FromCqeSyndrome) {
  struct {
    uint8_t syn;
    kbv_status_t want;
  } const cases[] = {
      {0x01, KBV_ERR_LOCAL_LENGTH},     {0x02, KBV_ERR_LOCAL_QP_OPERATION},
      {0x04, KBV_ERR_LOCAL_PROTECTION}, {0x05, KBV_ERR_WR_FLUSHED},
      {0x06, KBV_ERR_MW_BIND},          {0x10, KBV_ERR_BAD_RESPONSE},
      {0x11, KBV_ERR_LOCAL_ACCESS},     {0x12, KBV_ERR_REMOTE_INVALID_REQUEST},
      {0x13, KBV_ERR_REMOTE_ACCESS},    {0x14, KBV_ERR_REMOTE_OPERATION},
      {0x15, KBV_ERR_RETRY_EXCEEDED},   {0x16, KBV_ERR_RNR_RETRY_EXCEEDED},
      {0x22, KBV_ERR_REMOTE_ABORTED},   {0x00, KBV_ERR_WC_UNKNOWN},
      {0x99, KBV_ERR_WC_UNKNOWN},
  };
  for (const auto& c : cases)
    EXPECT_EQ(kbv_status_from_cqe_syndrome(c.syn), c.want) << "syndrome " << int(c.syn);
}

TEST(Status, ErrnoBothWays) {
  EXPECT_EQ(kbv_status_from_errno(0), KBV_SUCCESS);
  EXPECT_EQ(kbv_status_from_errno(EINVAL), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_status_from_errno(-ENOMEM), KBV_ERR_NO_MEMORY);
  EXPECT_EQ(kbv_status_from_errno(ETIMEDOUT), KBV_ERR_TIMEOUT);
  EXPECT_EQ(kbv_status_from_errno(ENODEV), KBV_ERR_DEVICE_REMOVED);
  EXPECT_EQ(kbv_status_from_errno(EACCES), KBV_ERR_ACCESS_DENIED);
  EXPECT_EQ(kbv_status_from_errno(EXDEV), KBV_ERR_IO);  // no closer meaning
  // Every status maps to an errno, and errors never map to 0.
  for (int32_t v : kAll) {
    auto s = static_cast<kbv_status_t>(v);
    int e = kbv_status_to_errno(s);
    if (v < 0) {
      EXPECT_GT(e, 0) << kbv_status_name(s);
    } else if (v == 0) {
      EXPECT_EQ(e, 0);
    }
  }
  EXPECT_EQ(kbv_status_to_errno(KBV_PENDING), EINPROGRESS);
  // Round trip for the statuses that own an errno.
  const kbv_status_t owners[] = {KBV_ERR_INVALID_ARGUMENT, KBV_ERR_INVALID_HANDLE,
                                 KBV_ERR_NO_MEMORY,        KBV_ERR_BUSY,
                                 KBV_ERR_NOT_FOUND,        KBV_ERR_ALREADY_EXISTS,
                                 KBV_ERR_NOT_SUPPORTED,    KBV_ERR_ACCESS_DENIED,
                                 KBV_ERR_CANCELLED,        KBV_ERR_TIMEOUT,
                                 KBV_ERR_OVERFLOW,         KBV_ERR_DEVICE_REMOVED,
                                 KBV_ERR_IOMMU_FAULT,      KBV_ERR_LIMIT_EXCEEDED,
                                 KBV_ERR_NO_RESOURCES,     KBV_PENDING};
  for (kbv_status_t s : owners)
    EXPECT_EQ(kbv_status_from_errno(kbv_status_to_errno(s)), s) << kbv_status_name(s);
}

TEST(Status, CxxStatusCarriesFirmwareDetail) {
  kbv::Status ok;
  EXPECT_TRUE(ok.is_ok());
  EXPECT_TRUE(static_cast<bool>(ok));
  auto s = kbv::Status::from_fw(0x03, 0x1b2c);
  EXPECT_TRUE(s.is_error());
  EXPECT_FALSE(static_cast<bool>(s));
  EXPECT_EQ(s.code(), KBV_ERR_FW_BAD_PARAM);
  EXPECT_EQ(s.fw_status(), 0x03);
  EXPECT_EQ(s.syndrome(), 0x1b2cu);
  EXPECT_EQ(s.to_string(),
            "KBV_ERR_FW_BAD_PARAM (firmware: bad parameter) [fw status 0x3 syndrome 0x1b2c]");
  kbv::Status p = KBV_PENDING;
  EXPECT_TRUE(p.is_pending());
  EXPECT_FALSE(p.is_error());
  EXPECT_EQ(static_cast<int>(kbv::Code::KBV_ERR_TIMEOUT), KBV_ERR_TIMEOUT);
}

TEST(Status, ResultHoldsValueOrStatus) {
  kbv::Result<int> good = 42;
  ASSERT_TRUE(good.has_value());
  EXPECT_EQ(*good, 42);
  EXPECT_TRUE(good.status().is_ok());
  kbv::Result<int> bad = KBV_ERR_NOT_FOUND;
  EXPECT_FALSE(bad.has_value());
  EXPECT_EQ(bad.status(), KBV_ERR_NOT_FOUND);
}

}  // namespace
