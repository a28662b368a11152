// SPDX-License-Identifier: BSD-3-Clause
// kbv_status_t <-> NTSTATUS (src/compat/ntstatus.cpp). Values: docs/NTSTATUS.md.
#include <kbv/compat/ntstatus.h>

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace {

constexpr int32_t kAll[] = {
#define KBV_STATUS_VALUE_(name, value, msg) value,
    KBV_STATUS_LIST(KBV_STATUS_VALUE_)
#undef KBV_STATUS_VALUE_
};

TEST(NtStatus, EveryNativeStatusRoundTrips) {
  std::set<KBV_NTSTATUS> seen;
  for (int32_t v : kAll) {
    auto s = static_cast<kbv_status_t>(v);
    KBV_NTSTATUS nt = kbv_status_to_ntstatus(s);
    EXPECT_TRUE(seen.insert(nt).second) << kbv_status_name(s) << " shares an NTSTATUS";
    EXPECT_EQ(kbv_status_from_ntstatus(nt), s) << kbv_status_name(s);
    EXPECT_STRNE(kbv_ntstatus_name(nt), "STATUS_UNKNOWN") << kbv_status_name(s);
    // Severity agrees: native errors fail NT_SUCCESS (errors, or the warning
    // STATUS_DEVICE_BUSY), success and pending pass it.
    if (v < 0) {
      EXPECT_FALSE(NT_SUCCESS(nt)) << kbv_status_name(s);
    } else {
      EXPECT_TRUE(NT_SUCCESS(nt)) << kbv_status_name(s);
    }
    // Every customer code has a system-code fallback of the same severity.
    KBV_NTSTATUS sys = kbv_ntstatus_to_system(nt);
    EXPECT_FALSE(kbv_nt_customer(sys)) << kbv_status_name(s);
    EXPECT_EQ(NT_SUCCESS(sys), NT_SUCCESS(nt)) << kbv_status_name(s);
    if (!kbv_nt_customer(nt)) {
      EXPECT_EQ(sys, nt);
    } else {
      EXPECT_EQ(kbv_nt_facility(nt), 0x3Bu);
    }
  }
}

TEST(NtStatus, ChosenSystemCodes) {
  EXPECT_EQ(kbv_status_to_ntstatus(KBV_SUCCESS), 0);
  EXPECT_EQ(kbv_status_to_ntstatus(KBV_PENDING), 0x103);
  EXPECT_EQ(static_cast<uint32_t>(kbv_status_to_ntstatus(KBV_ERR_CANCELLED)), 0xC0000120u);
  // An operation timeout is STATUS_IO_TIMEOUT (error), never STATUS_TIMEOUT.
  EXPECT_EQ(static_cast<uint32_t>(kbv_status_to_ntstatus(KBV_ERR_TIMEOUT)), 0xC00000B5u);
  EXPECT_EQ(static_cast<uint32_t>(kbv_status_to_ntstatus(KBV_ERR_DEVICE_FATAL)), 0xC00000B6u);
  EXPECT_EQ(static_cast<uint32_t>(kbv_status_to_ntstatus(KBV_ERR_INVALID_ARGUMENT)), 0xC000000Du);
  EXPECT_EQ(static_cast<uint32_t>(kbv_status_to_ntstatus(KBV_ERR_NO_RESOURCES)), 0xC000009Au);
  EXPECT_EQ(static_cast<uint32_t>(kbv_status_to_ntstatus(KBV_ERR_DEVICE_REMOVED)), 0xC00002B6u);
  EXPECT_EQ(static_cast<uint32_t>(kbv_status_to_ntstatus(KBV_ERR_BUFFER_TOO_SMALL)), 0xC0000023u);
  EXPECT_EQ(kbv_status_to_ntstatus(static_cast<kbv_status_t>(-12345)), KBV_STATUS_INTERNAL_ERROR);
}

// The RFC's IB customer codes (seed 000, ib_status.h) for the IB-specific cases.
TEST(NtStatus, RfcIbCodes) {
  struct {
    kbv_status_t s;
    uint32_t nt;
    uint32_t fallback;
  } const cases[] = {
      {KBV_ERR_QUEUE_FULL, 0xE03B0001u, 0xC000009Au},        // INSUFFICIENT_WR
      {KBV_ERR_TOO_MANY_SGE, 0xE03B0002u, 0xC000000Du},      // INSUFFICIENT_SGE
      {KBV_ERR_INVALID_WR_TYPE, 0xE03B0003u, 0xC000000Du},   // INVALID_WR_TYPE
      {KBV_ERR_INVALID_QP_STATE, 0xE03B0004u, 0xC000023Au},  // INVALID_STATE
      {KBV_ERR_INVALID_PORT, 0xE03B0005u, 0xC000000Du},      // INVALID_PORT
  };
  for (const auto& c : cases) {
    KBV_NTSTATUS nt = kbv_status_to_ntstatus(c.s);
    EXPECT_EQ(static_cast<uint32_t>(nt), c.nt) << kbv_status_name(c.s);
    EXPECT_EQ(static_cast<uint32_t>(kbv_ntstatus_to_system(nt)), c.fallback);
    EXPECT_TRUE(kbv_nt_customer(nt));
    EXPECT_EQ(kbv_nt_facility(nt), static_cast<uint32_t>(KBV_FACILITY_INFINIBAND));
  }
  EXPECT_STREQ(kbv_ntstatus_name(KBV_STATUS_IB_INSUFFICIENT_WR), "STATUS_IB_INSUFFICIENT_WR");
}

TEST(NtStatus, OtherSystemCodesMapToClosestMeaning) {
  EXPECT_EQ(kbv_status_from_ntstatus(KBV_STATUS_TIMEOUT), KBV_ERR_TIMEOUT);
  EXPECT_EQ(kbv_status_from_ntstatus(KBV_STATUS_CONNECTION_INVALID), KBV_ERR_INVALID_QP_STATE);
  EXPECT_EQ(kbv_status_from_ntstatus(KBV_STATUS_BUFFER_OVERFLOW), KBV_ERR_BUFFER_TOO_SMALL);
  for (unsigned n = 1; n <= 12; ++n)
    EXPECT_EQ(kbv_status_from_ntstatus(kbv_nt_invalid_parameter_n(n)), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_status_from_ntstatus(0x00001234), KBV_SUCCESS);  // unknown success
  EXPECT_EQ(kbv_status_from_ntstatus(static_cast<KBV_NTSTATUS>(0xC0FF0001u)), KBV_ERR_IO);
  EXPECT_STREQ(kbv_ntstatus_name(static_cast<KBV_NTSTATUS>(0xC0FF0001u)), "STATUS_UNKNOWN");
}

TEST(NtStatus, SeverityAndHresultHelpers) {
  EXPECT_TRUE(NT_SUCCESS(KBV_STATUS_PENDING));
  EXPECT_TRUE(NT_SUCCESS(KBV_STATUS_TIMEOUT));  // a wait that timed out is success
  EXPECT_TRUE(NT_INFORMATION(KBV_STATUS_EVENT_DONE));
  EXPECT_TRUE(NT_SUCCESS(KBV_STATUS_EVENT_DONE));
  EXPECT_TRUE(NT_WARNING(KBV_STATUS_BUFFER_OVERFLOW));
  EXPECT_FALSE(NT_SUCCESS(KBV_STATUS_BUFFER_OVERFLOW));
  EXPECT_FALSE(NT_ERROR(KBV_STATUS_NO_MORE_ENTRIES));
  EXPECT_TRUE(NT_ERROR(KBV_STATUS_CANCELLED));
  EXPECT_TRUE(NT_ERROR(KBV_STATUS_IB_INVALID_PORT));
  EXPECT_EQ(kbv_nt_code(KBV_STATUS_IB_INVALID_PORT), 5u);
  EXPECT_EQ(static_cast<uint32_t>(HRESULT_FROM_NT(KBV_STATUS_CANCELLED)), 0xD0000120u);
  EXPECT_EQ(static_cast<uint32_t>(HRESULT_FROM_NT(KBV_STATUS_SUCCESS)), 0x10000000u);
}

TEST(NtStatus, InvalidParameterNumbering) {
  EXPECT_EQ(static_cast<uint32_t>(kbv_nt_invalid_parameter_n(1)), 0xC00000EFu);
  EXPECT_EQ(static_cast<uint32_t>(kbv_nt_invalid_parameter_n(3)), 0xC00000F1u);
  EXPECT_EQ(static_cast<uint32_t>(kbv_nt_invalid_parameter_n(12)), 0xC00000FAu);
  EXPECT_EQ(kbv_nt_invalid_parameter_n(0), KBV_STATUS_INVALID_PARAMETER);
  EXPECT_EQ(kbv_nt_invalid_parameter_n(13), KBV_STATUS_INVALID_PARAMETER);
  EXPECT_STREQ(kbv_ntstatus_name(kbv_nt_invalid_parameter_n(12)), "STATUS_INVALID_PARAMETER_12");
}

// The OpenIB access layer's ib_api_status_t -> NTSTATUS table, by name
// (docs/NTSTATUS.md).
TEST(NtStatus, IbApiStatusByName) {
  struct {
    const char* name;
    uint32_t nt;
  } const cases[] = {
      {"IB_SUCCESS", 0x0},
      {"IB_INSUFFICIENT_RESOURCES", 0xC000009Au},
      {"IB_INSUFFICIENT_MEMORY", 0xC0000017u},
      {"IB_INVALID_PARAMETER", 0xC000000Du},
      {"IB_INVALID_SETTING", 0xC000000Du},
      {"IB_NOT_FOUND", 0xC0000225u},
      {"IB_TIMEOUT", 0xC00000B5u},  // not STATUS_TIMEOUT (a success code)
      {"IB_CANCELED", 0xC0000120u},
      {"IB_INVALID_PERMISSION", 0xC0000022u},
      {"IB_UNSUPPORTED", 0xC0000010u},
      {"IB_OVERFLOW", 0x80000005u},
      {"IB_INVALID_QP_STATE", 0xC000023Au},
      {"IB_INVALID_STATE", 0xC0000184u},
      {"IB_RESOURCE_BUSY", 0x80000011u},
      {"IB_INVALID_CA_HANDLE", 0xC0000008u},
      {"IB_INVALID_QP_HANDLE", 0xC0000008u},
      {"IB_INVALID_CQ_HANDLE", 0xC0000008u},
      {"IB_PENDING", 0x103u},
      {"IB_ERROR", 0xC0000001u},
      {"IB_REMOTE_ERROR", 0xC0000001u},
      {"IB_UNKNOWN_ERROR", 0xC0000001u},
  };
  for (const auto& c : cases) {
    KBV_NTSTATUS nt = 0x7777;
    ASSERT_EQ(kbv_ntstatus_from_ib_api_status(c.name, &nt), 0) << c.name;
    EXPECT_EQ(static_cast<uint32_t>(nt), c.nt) << c.name;
  }
  KBV_NTSTATUS nt = 0;
  EXPECT_EQ(kbv_ntstatus_from_ib_api_status("IB_NO_SUCH_THING", &nt), -1);
  EXPECT_EQ(kbv_ntstatus_from_ib_api_status(nullptr, &nt), -1);
  // Native -> ib_api_status_t name, and that name's NTSTATUS keeps the severity.
  for (int32_t v : kAll) {
    auto s = static_cast<kbv_status_t>(v);
    const char* name = kbv_status_to_ib_api_status(s);
    KBV_NTSTATUS via = 0;
    ASSERT_EQ(kbv_ntstatus_from_ib_api_status(name, &via), 0) << kbv_status_name(s) << " " << name;
    if (v < 0) {
      EXPECT_FALSE(NT_SUCCESS(via)) << kbv_status_name(s) << " -> " << name;
    }
  }
  EXPECT_STREQ(kbv_status_to_ib_api_status(KBV_ERR_INVALID_QP_STATE), "IB_INVALID_QP_STATE");
  EXPECT_STREQ(kbv_status_to_ib_api_status(KBV_ERR_NO_MEMORY), "IB_INSUFFICIENT_MEMORY");
}

}  // namespace
