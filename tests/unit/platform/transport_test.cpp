// SPDX-License-Identifier: BSD-3-Clause
// Device transports (src/platform/transport.hpp) as a program linking
// libkbv.so sees them: schemes are found by registration, "sim:" loads
// libkbv-sim.so beside libkbv.so, and a "sim:" open without that library is
// an error with its reason logged, not a crash.
//
// Run twice by meson: as built (libkbv-sim.so.0 beside libkbv.so.0), and by
// transport_missing.py with libkbv.so.0 copied alone into a directory first
// on LD_LIBRARY_PATH (KBV_TEST_NO_SIM_LIBRARY=1: nothing can be loaded).
#include <gtest/gtest.h>
#include <kbv/kbv.h>
#include <kbv/log.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace {

std::vector<std::string> g_errors;
void capture(void*, kbv_log_level_t level, const char* component, const char* message) {
  if (level == KBV_LOG_ERROR) g_errors.push_back(std::string(component) + ": " + message);
}

kbv_status_t open_sync(const char* uri, kbv_device_t* dev) {
  return kbv_device_open(uri, nullptr, KBV_EQ_NONE, 0, dev);
}

bool lists_sim(const char* names) {
  setenv("KBV_SIM_DEVICES", names, 1);
  kbv_device_desc_t d[8];
  uint32_t n = 0;
  EXPECT_EQ(kbv_get_device_list(d, 8, &n), KBV_SUCCESS);
  unsetenv("KBV_SIM_DEVICES");
  bool sim = false;
  for (uint32_t i = 0; i < n && i < 8; ++i) {
    if (std::string(d[i].uri).starts_with("sim:")) {
      EXPECT_EQ(d[i].is_sim, 1u);
      EXPECT_EQ(d[i].vendor_id, 0x15b3);
      sim = true;
    }
  }
  return sim;
}

void expect_sim_unavailable(const char* why) {
  SCOPED_TRACE(why);
  g_errors.clear();
  kbv_device_t dev = 7;
  EXPECT_EQ(open_sync("sim:tl", &dev), KBV_ERR_NOT_SUPPORTED);
  EXPECT_EQ(dev, KBV_HANDLE_NONE);
  ASSERT_FALSE(g_errors.empty());
  EXPECT_NE(g_errors.back().find("libkbv-sim.so.0"), std::string::npos) << g_errors.back();
  EXPECT_NE(g_errors.back().find("KBV_SIM_LIBRARY"), std::string::npos) << g_errors.back();
  // Listing is quiet and simply has no model devices.
  g_errors.clear();
  EXPECT_FALSE(lists_sim("a,b"));
  EXPECT_TRUE(g_errors.empty());
}

// One test: the library, once loaded, stays (the order of the steps matters).
TEST(DeviceTransports, SchemesAndTheModelLibrary) {
  kbv_log_set_handler(capture, nullptr);
  kbv_device_t dev = 7;
  // Unknown schemes and malformed addresses of known ones.
  for (const char* uri : {"foo:0", "nocolon", ":x", "vfio:zz:00.0", "VFIO:0000:00:00.0"}) {
    SCOPED_TRACE(uri);
    EXPECT_EQ(open_sync(uri, &dev), KBV_ERR_INVALID_ARGUMENT);
  }
  // A vfio function that does not exist: the vfio transport is built in.
  EXPECT_NE(open_sync("vfio:00ff:1f:1f.7", &dev), KBV_ERR_INVALID_ARGUMENT);

  if (std::getenv("KBV_TEST_NO_SIM_LIBRARY")) {
    expect_sim_unavailable("libkbv.so alone on the library path");
    kbv_log_set_handler(nullptr, nullptr);
    return;
  }
  // KBV_SIM_LIBRARY names the file; a missing one is an error.
  setenv("KBV_SIM_LIBRARY", "/nonexistent/libkbv-sim.so.0", 1);
  expect_sim_unavailable("KBV_SIM_LIBRARY names a missing file");
  unsetenv("KBV_SIM_LIBRARY");

  // Found beside libkbv.so: sim names are checked by the transport.
  for (const char* uri : {"sim:", "sim:a/b", "sim:a,b", "sim:0123456789012345678901234567890123"}) {
    SCOPED_TRACE(uri);
    EXPECT_EQ(open_sync(uri, &dev), KBV_ERR_INVALID_ARGUMENT);
  }
  EXPECT_TRUE(lists_sim("a,b"));
  ASSERT_EQ(open_sync("sim:tl", &dev), KBV_SUCCESS);
  kbv_device_attr_t attr;
  EXPECT_EQ(kbv_device_query(dev, &attr, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_device_close(dev, KBV_EQ_NONE, 0), KBV_SUCCESS);
  kbv_log_set_handler(nullptr, nullptr);
}

}  // namespace
