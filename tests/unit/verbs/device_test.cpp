// SPDX-License-Identifier: BSD-3-Clause
// src/verbs/device.cpp: URI parsing and the open's argument checks, one
// function open once at a time, the asynchronous open's event, the progress
// thread's start/stop states, the device list, and the handle after close.
#include <gtest/gtest.h>
#include <kbv/kbv.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "model_fixture.hpp"

namespace kbv::test {
namespace {

kbv_status_t open_sync(const std::string& uri, kbv_device_t* out) {
  return kbv_device_open(uri.c_str(), nullptr, KBV_EQ_NONE, 0, out);
}

TEST(VerbsDevice, UriAndArgumentsAreChecked) {
  kbv_device_t d = 7;
  EXPECT_EQ(kbv_device_open(nullptr, nullptr, KBV_EQ_NONE, 0, &d), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_device_open("sim:x", nullptr, KBV_EQ_NONE, 0, nullptr), KBV_ERR_INVALID_ARGUMENT);
  // KBV_URI_MAX includes the NUL: 63 characters fit, 64 do not.
  const std::string long_name = "sim:" + std::string(KBV_URI_MAX - 4, 'a');
  EXPECT_EQ(open_sync(long_name, &d), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(d, KBV_HANDLE_NONE);
  for (const char* u : {"", "sim", "xyz:0", "vfio:", "vfio:0000:3b:00", "vfio:0000:3b:00.8",
                        "sim:", "sim:has/slash", "sim:has,comma"}) {
    SCOPED_TRACE(u);
    EXPECT_EQ(open_sync(u, &d), KBV_ERR_INVALID_ARGUMENT);
  }
  kbv_device_open_attr_t a{};
  a.flags = 1u << 7;  // unknown flag
  EXPECT_EQ(kbv_device_open("sim:x", &a, KBV_EQ_NONE, 0, &d), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_device_open("sim:x", nullptr, /*eq=*/0x12345, 0, &d), KBV_ERR_INVALID_HANDLE);
}

TEST(VerbsDevice, OneOpenPerFunctionAndReopenAfterClose) {
  const std::string uri = unique_sim_uri("dv");
  kbv_device_t a = 0, b = 0;
  ASSERT_EQ(open_sync(uri, &a), KBV_SUCCESS);
  EXPECT_NE(a, KBV_HANDLE_NONE);
  // The function is owned by the first open (VFIO: one open of a device).
  EXPECT_EQ(open_sync(uri, &b), KBV_ERR_BUSY);
  EXPECT_EQ(b, KBV_HANDLE_NONE);
  ASSERT_EQ(kbv_device_close(a, KBV_EQ_NONE, 0), KBV_SUCCESS);
  // The handle stops resolving at close.
  EXPECT_EQ(kbv_device_progress(a), KBV_ERR_INVALID_HANDLE);
  kbv_device_attr_t attr;
  EXPECT_EQ(kbv_device_query(a, &attr, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
  // Closed: the name opens again (a new model) with a new handle.
  ASSERT_EQ(open_sync(uri, &b), KBV_SUCCESS);
  EXPECT_NE(b, a);
  EXPECT_EQ(kbv_device_close(b, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST(VerbsDevice, AsyncOpenCompletesAsOneEvent) {
  kbv_eq_t eq = 0, events = 0;
  ASSERT_EQ(kbv_eq_create(16, &eq), KBV_SUCCESS);
  // The device's unsolicited events (the port going ACTIVE) on their own
  // queue: eq sees the requests' completions only.
  ASSERT_EQ(kbv_eq_create(16, &events), KBV_SUCCESS);
  kbv_device_open_attr_t attr{};
  attr.event_eq = events;
  kbv_device_t d = 0;
  const std::string uri = unique_sim_uri("da");
  ASSERT_EQ(kbv_device_open(uri.c_str(), &attr, eq, 0xfeed, &d), KBV_PENDING);
  ASSERT_NE(d, KBV_HANDLE_NONE);
  kbv_event_t ev{};
  ASSERT_TRUE(next_event(eq, ev));
  EXPECT_EQ(ev.type, KBV_EVENT_REQUEST);
  EXPECT_EQ(ev.user_data, 0xfeedu);
  EXPECT_EQ(ev.status, KBV_SUCCESS);
  EXPECT_EQ(ev.object, d);
  int fd = -1;
  EXPECT_EQ(kbv_device_get_fd(d, &fd), KBV_SUCCESS);
  EXPECT_GE(fd, 0);
  kbv_device_stats_t st{};
  ASSERT_EQ(kbv_device_get_stats(d, &st), KBV_SUCCESS);
  EXPECT_GT(st.cmds_completed, 0u);  // the bring-up's commands
  EXPECT_EQ(st.cmds_failed, 0u);
  ASSERT_EQ(kbv_device_close(d, eq, 0xc105e), KBV_PENDING);
  ASSERT_TRUE(next_event(eq, ev));
  EXPECT_EQ(ev.user_data, 0xc105eu);
  EXPECT_EQ(ev.status, KBV_SUCCESS);
  EXPECT_EQ(kbv_eq_poll(eq, &ev, 1), 0);  // exactly one event per request
  EXPECT_EQ(kbv_eq_destroy(eq), KBV_SUCCESS);
  EXPECT_EQ(kbv_eq_destroy(events), KBV_SUCCESS);
}

TEST(VerbsDevice, ListsTheModelDevicesNamedInTheEnvironment) {
  ASSERT_EQ(setenv("KBV_SIM_DEVICES", "la,bad/name,lb", 1), 0);
  uint32_t n = 0;
  EXPECT_EQ(kbv_get_device_list(nullptr, 0, &n), KBV_SUCCESS);  // count only
  kbv_device_desc_t list[16];
  uint32_t n2 = 0;
  ASSERT_EQ(kbv_get_device_list(list, 16, &n2), KBV_SUCCESS);
  unsetenv("KBV_SIM_DEVICES");
  EXPECT_EQ(n, n2);
  std::vector<std::string> sims;
  for (uint32_t i = 0; i < n2 && i < 16; ++i)
    if (list[i].is_sim) sims.emplace_back(list[i].uri);
  EXPECT_EQ(sims, (std::vector<std::string>{"sim:la", "sim:lb"}));
  EXPECT_EQ(kbv_get_device_list(list, 1, nullptr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_get_device_list(nullptr, 1, &n), KBV_ERR_INVALID_ARGUMENT);
}

using VerbsDeviceOpen = ModelDevice;

TEST_F(VerbsDeviceOpen, ProgressThreadStates) {
  EXPECT_EQ(kbv_device_stop_progress_thread(dev_), KBV_ERR_NOT_FOUND);
  ASSERT_EQ(kbv_device_start_progress_thread(dev_), KBV_SUCCESS);
  EXPECT_EQ(kbv_device_start_progress_thread(dev_), KBV_ERR_ALREADY_EXISTS);
  // Synchronous calls still work with the thread driving the device.
  kbv_pd_t p = pd();
  EXPECT_EQ(kbv_pd_dealloc(p, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_device_stop_progress_thread(dev_), KBV_SUCCESS);
  EXPECT_EQ(kbv_device_stop_progress_thread(dev_), KBV_ERR_NOT_FOUND);
  EXPECT_EQ(kbv_device_start_progress_thread(dev_), KBV_SUCCESS);  // close stops it
}

TEST_F(VerbsDeviceOpen, AttributesComeFromTheDevice) {
  EXPECT_EQ(attr_.vendor_id, 0x15b3u);
  EXPECT_GT(attr_.max_qp, 0u);
  EXPECT_GT(attr_.max_cqe, 0u);
  EXPECT_GE(attr_.phys_port_cnt, 1u);
  kbv_port_attr_t p;
  EXPECT_EQ(kbv_port_query(dev_, 0, &p, KBV_EQ_NONE, 0), KBV_ERR_INVALID_PORT);
  EXPECT_EQ(kbv_port_query(dev_, attr_.phys_port_cnt + 1, &p, KBV_EQ_NONE, 0),
            KBV_ERR_INVALID_PORT);
  EXPECT_EQ(kbv_device_get_fd(dev_, nullptr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_device_get_stats(dev_, nullptr), KBV_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace kbv::test
