// SPDX-License-Identifier: BSD-3-Clause
//
// End to end: HCA resolution by node GUID (kbv.h "Devices", "guid:0x<hex>";
// src/verbs/device_guid.cpp) on model HCAs listed by KBV_SIM_DEVICES.
#include <gtest/gtest.h>
#include <kbv/kbv.h>

#include <cstdio>
#include <cstdlib>

#include "verbs_fixture.hpp"

namespace kbv::test {
namespace {

std::string guid_uri(uint64_t g) {
  char b[32];
  std::snprintf(b, sizeof b, "guid:0x%llx", static_cast<unsigned long long>(g));
  return b;
}

uint64_t node_guid(kbv_device_t dev) {
  kbv_device_attr_t a{};
  EXPECT_EQ(kbv_device_query(dev, &a, KBV_EQ_NONE, 0), KBV_SUCCESS);
  return a.node_guid;
}

// Two models the test holds (so their ports and GUIDs stay), listed by
// KBV_SIM_DEVICES; their GUIDs read once through their URIs.
class GuidE2e : public VerbsE2e {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      names_[i] = unique_name("gd");
      auto m = sim::Model::create(names_[i]);
      ASSERT_TRUE(m.has_value()) << m.status().to_string();
      models_[i] = std::move(*m);
      kbv_device_t d = 0;
      ASSERT_EQ(kbv_device_open(("sim:" + names_[i]).c_str(), nullptr, KBV_EQ_NONE, 0, &d),
                KBV_SUCCESS);
      guids_[i] = node_guid(d);
      ASSERT_EQ(kbv_device_close(d, KBV_EQ_NONE, 0), KBV_SUCCESS);
    }
    ASSERT_NE(guids_[0], guids_[1]);
    ::setenv("KBV_SIM_DEVICES", (names_[0] + "," + names_[1]).c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("KBV_SIM_DEVICES");
    VerbsE2e::TearDown();
  }
  std::string names_[2];
  std::unique_ptr<sim::Model> models_[2];
  uint64_t guids_[2] = {};
};

TEST_F(GuidE2e, OpensTheDeviceWithThatNodeGuid) {
  for (int i : {1, 0}) {
    kbv_device_t d = 0;
    const std::string uri = guid_uri(guids_[i]);
    ASSERT_EQ(kbv_device_open(uri.c_str(), nullptr, KBV_EQ_NONE, 0, &d), KBV_SUCCESS) << uri;
    kbv_device_attr_t a{};
    ASSERT_EQ(kbv_device_query(d, &a, KBV_EQ_NONE, 0), KBV_SUCCESS);
    EXPECT_EQ(a.node_guid, guids_[i]);
    EXPECT_EQ(std::string(a.uri), "sim:" + names_[i]);  // its own URI, not the guid: one
    // Open now: a second open by GUID is refused as by URI.
    kbv_device_t again = 0;
    EXPECT_EQ(kbv_device_open(uri.c_str(), nullptr, KBV_EQ_NONE, 0, &again), KBV_ERR_BUSY);
    EXPECT_EQ(again, 0u);
    EXPECT_EQ(kbv_device_close(d, KBV_EQ_NONE, 0), KBV_SUCCESS);
  }
}

TEST_F(GuidE2e, OpensAsynchronouslyOnAnEventQueue) {
  kbv_eq_t eq = make_eq();
  kbv_device_t d = 0;
  const std::string uri = guid_uri(guids_[1]);
  ASSERT_EQ(kbv_device_open(uri.c_str(), nullptr, eq, 42, &d), KBV_PENDING);
  ASSERT_NE(d, 0u);
  kbv_event_t ev{};
  ASSERT_TRUE(wait_until(eq, [&] {
    kbv_event_t e[4];
    int k = kbv_eq_poll(eq, e, 4);
    for (int j = 0; j < k; ++j)
      if (e[j].type == KBV_EVENT_REQUEST) ev = e[j];
    return ev.type == KBV_EVENT_REQUEST;
  }));
  EXPECT_EQ(ev.user_data, 42u);
  EXPECT_EQ(ev.status, KBV_SUCCESS);
  EXPECT_EQ(ev.object, d);
  EXPECT_EQ(node_guid(d), guids_[1]);
  EXPECT_EQ(kbv_device_close(d, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST_F(GuidE2e, UnknownAndMalformedGuids) {
  kbv_device_t d = 0;
  uint64_t absent = guids_[0] ^ 0x8000000000000000ull;
  if (absent == guids_[1]) absent ^= 1;
  EXPECT_EQ(kbv_device_open(guid_uri(absent).c_str(), nullptr, KBV_EQ_NONE, 0, &d),
            KBV_ERR_NOT_FOUND);
  EXPECT_EQ(d, 0u);
  for (const char* bad : {"guid:", "guid:0x", "guid:0x0", "guid:1234", "guid:0xabcz",
                          "guid:0x11112222333344445", "guid:-0x1"})
    EXPECT_EQ(kbv_device_open(bad, nullptr, KBV_EQ_NONE, 0, &d), KBV_ERR_INVALID_ARGUMENT) << bad;
  // Upper-case digits and leading zeros name the same GUID.
  char up[40];
  std::snprintf(up, sizeof up, "guid:0X%016llX", static_cast<unsigned long long>(guids_[0]));
  ASSERT_EQ(kbv_device_open(up, nullptr, KBV_EQ_NONE, 0, &d), KBV_SUCCESS) << up;
  EXPECT_EQ(node_guid(d), guids_[0]);
  EXPECT_EQ(kbv_device_close(d, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

}  // namespace
}  // namespace kbv::test
