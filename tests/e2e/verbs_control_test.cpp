// SPDX-License-Identifier: BSD-3-Clause
//
// End to end: the C control API (include/kbv/kbv.h) on model HCAs — device
// list / open / query / port query / stats / close, PD, MR, CQ, SRQ, AH, QP
// life cycles, synchronous and through event queues.
#include <gtest/gtest.h>
#include <kbv/kbv.h>

#include <cstdlib>
#include <set>

#include "verbs_fixture.hpp"

namespace kbv::test {
namespace {

TEST_F(VerbsE2e, DeviceListNamesSimDevicesFromTheEnvironment) {
  ::setenv("KBV_SIM_DEVICES", "alpha,beta", 1);
  uint32_t n = 0;
  ASSERT_EQ(kbv_get_device_list(nullptr, 0, &n), KBV_SUCCESS);
  std::vector<kbv_device_desc_t> v(n);
  ASSERT_EQ(kbv_get_device_list(v.data(), n, &n), KBV_SUCCESS);
  std::set<std::string> sims;
  for (const auto& d : v)
    if (d.is_sim) sims.insert(d.uri);
  EXPECT_EQ(sims, (std::set<std::string>{"sim:alpha", "sim:beta"}));
  for (const auto& d : v) EXPECT_EQ(d.vendor_id, 0x15b3);
  ::unsetenv("KBV_SIM_DEVICES");
  ASSERT_EQ(kbv_get_device_list(nullptr, 0, &n), KBV_SUCCESS);
  v.resize(n);
  ASSERT_EQ(kbv_get_device_list(v.data(), n, &n), KBV_SUCCESS);
  bool has_vfio = false, has_sim0 = false;
  for (const auto& d : v) {
    has_vfio |= !d.is_sim;
    has_sim0 |= std::string(d.uri) == "sim:0";
  }
  EXPECT_EQ(has_sim0, !has_vfio);  // "sim:0" when there is no hardware
  EXPECT_EQ(kbv_get_device_list(nullptr, 1, &n), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_get_device_list(v.data(), 1, nullptr), KBV_ERR_INVALID_ARGUMENT);
}

TEST_F(VerbsE2e, OpenQueryAndCloseASimDevice) {
  SimDev& d = open_dev();
  kbv_device_attr_t a{};
  ASSERT_EQ(kbv_device_query(d.dev, &a, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(std::string(a.uri), d.uri);
  sim::DeviceConfig def;
  EXPECT_EQ(std::string(a.fw_version), std::to_string(def.fw_rev_major) + "." +
                                           std::to_string(def.fw_rev_minor) + "." +
                                           std::to_string(def.fw_rev_subminor));
  EXPECT_EQ(a.vendor_id, 0x15b3);
  EXPECT_EQ(a.device_id, def.device_id);
  EXPECT_NE(a.node_guid, 0u);
  EXPECT_EQ(a.phys_port_cnt, 1u);
  EXPECT_TRUE(a.cap_flags & KBV_DEVICE_CAP_RC);
  EXPECT_TRUE(a.cap_flags & KBV_DEVICE_CAP_UD);
  EXPECT_TRUE(a.cap_flags & KBV_DEVICE_CAP_ROCE_V2);
  EXPECT_GT(a.max_qp, 1u);
  EXPECT_GT(a.max_cqe, 1u);
  EXPECT_GE(a.max_send_sge, 1u);
  EXPECT_GT(a.max_inline_data, 0u);

  // Port: active, Ethernet (RoCEv2), GID 0 = ::ffff:127.0.0.N with a MAC.
  const kbv_port_attr_t& p = d.port;
  EXPECT_EQ(p.port_num, 1u);
  EXPECT_EQ(p.state, static_cast<uint32_t>(KBV_PORT_ACTIVE));
  EXPECT_EQ(p.phys_state, 5u);
  EXPECT_EQ(p.link_layer, static_cast<uint32_t>(KBV_LINK_LAYER_ETHERNET));
  EXPECT_GE(p.active_mtu, static_cast<uint32_t>(KBV_MTU_256));
  EXPECT_LE(p.active_mtu, p.max_mtu);
  ASSERT_GE(p.gid_count, 1u);
  const uint8_t want[16] = {0, 0, 0,    0,    0,   0, 0, 0,
                            0, 0, 0xff, 0xff, 127, 0, 0, d.model->port_host()};
  EXPECT_EQ(std::memcmp(p.gids[0].gid, want, 16), 0);
  EXPECT_EQ(p.gids[0].type, static_cast<uint32_t>(KBV_GID_TYPE_ROCE_V2));
  EXPECT_NE(p.gids[0].mac, 0u);
  kbv_port_attr_t bad{};
  EXPECT_EQ(kbv_port_query(d.dev, 2, &bad, KBV_EQ_NONE, 0), KBV_ERR_INVALID_PORT);
  EXPECT_EQ(kbv_port_query(d.dev, 0, &bad, KBV_EQ_NONE, 0), KBV_ERR_INVALID_PORT);
  EXPECT_EQ(kbv_port_query(d.dev, 1, nullptr, KBV_EQ_NONE, 0), KBV_ERR_INVALID_ARGUMENT);

  kbv_device_stats_t s{};
  ASSERT_EQ(kbv_device_get_stats(d.dev, &s), KBV_SUCCESS);
  EXPECT_GT(s.cmds_completed, 10u);  // bring-up alone runs more
  EXPECT_GE(s.cmds_in_flight_max, 1u);
  EXPECT_EQ(s.cmds_in_flight, 0u);

  ASSERT_EQ(kbv_device_close(d.dev, KBV_EQ_NONE, 0), KBV_SUCCESS);
  // Use after close: errors, never crashes.
  EXPECT_EQ(kbv_device_query(d.dev, &a, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_device_close(d.dev, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_device_get_stats(d.dev, &s), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_device_progress(d.dev), KBV_ERR_INVALID_HANDLE);
  d.dev = 0;
}

TEST_F(VerbsE2e, ADeviceOpensOnceAtATime) {
  SimDev& d = open_dev();
  kbv_device_t again = 0;
  kbv_status_t st = kbv_device_open(d.uri.c_str(), nullptr, KBV_EQ_NONE, 0, &again);
  EXPECT_EQ(st, KBV_ERR_BUSY) << kbv_status_name(st);
  EXPECT_EQ(again, 0u);
  // The first open is untouched.
  kbv_pd_t pd = alloc_pd(d);
  EXPECT_NE(pd, 0u);
  EXPECT_EQ(kbv_pd_dealloc(pd, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST_F(VerbsE2e, OpenByUriErrors) {
  kbv_device_t h = 0;
  EXPECT_EQ(kbv_device_open(nullptr, nullptr, KBV_EQ_NONE, 0, &h), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_device_open("sim:x", nullptr, KBV_EQ_NONE, 0, nullptr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_device_open("pci:0000:00:00.0", nullptr, KBV_EQ_NONE, 0, &h),
            KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_device_open("sim:", nullptr, KBV_EQ_NONE, 0, &h), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_device_open("sim:a/b", nullptr, KBV_EQ_NONE, 0, &h), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_device_open("vfio:zz", nullptr, KBV_EQ_NONE, 0, &h), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_NE(kbv_device_open("vfio:0000:ff:1f.7", nullptr, KBV_EQ_NONE, 0, &h), KBV_SUCCESS);
  kbv_device_open_attr_t a{};
  a.flags = 0x80;
  EXPECT_EQ(kbv_device_open("sim:x", &a, KBV_EQ_NONE, 0, &h), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_device_open("sim:x", nullptr, 0xdead0001, 0, &h), KBV_ERR_INVALID_HANDLE);
}

TEST_F(VerbsE2e, LibraryCreatedSimDeviceOpensAsync) {
  kbv_eq_t eq = make_eq(), events = make_eq();
  const std::string uri = "sim:" + unique_name("lib");
  kbv_device_t h = 0;
  // Port events go to their own queue (by default they would share eq).
  kbv_device_open_attr_t attr{};
  attr.event_eq = events;
  ASSERT_EQ(kbv_device_open(uri.c_str(), &attr, eq, 77, &h), KBV_PENDING);
  ASSERT_NE(h, 0u);
  // Usable only after its event.
  kbv_pd_t pd = 0;
  EXPECT_EQ(kbv_pd_alloc(h, KBV_EQ_NONE, 0, &pd), KBV_ERR_DEVICE_NOT_READY);
  kbv_event_t ev = wait_event(eq);
  EXPECT_EQ(ev.type, static_cast<uint32_t>(KBV_EVENT_REQUEST));
  EXPECT_EQ(ev.user_data, 77u);
  EXPECT_EQ(ev.status, KBV_SUCCESS);
  EXPECT_EQ(ev.object, h);
  ASSERT_EQ(kbv_pd_alloc(h, KBV_EQ_NONE, 0, &pd), KBV_SUCCESS);
  ASSERT_EQ(kbv_pd_dealloc(pd, KBV_EQ_NONE, 0), KBV_SUCCESS);
  ASSERT_EQ(kbv_device_close(h, eq, 78), KBV_PENDING);
  ev = wait_event(eq);
  EXPECT_EQ(ev.user_data, 78u);
  EXPECT_EQ(ev.status, KBV_SUCCESS);
  EXPECT_EQ(ev.object, h);
  // The model went with it: the name can be opened (created) again.
  ASSERT_EQ(kbv_device_open(uri.c_str(), nullptr, KBV_EQ_NONE, 0, &h), KBV_SUCCESS);
  EXPECT_EQ(kbv_device_close(h, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

}  // namespace
}  // namespace kbv::test
