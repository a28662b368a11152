// SPDX-License-Identifier: BSD-3-Clause
//
// Shared setup of the verbs unit tests that need a device (device_test,
// objects_test, qp_test): a model HCA opened through the C API as
// "sim:<unique name>" (the sim transport is linked in: kbv_sim_transport_dep),
// synchronous calls (KBV_EQ_NONE) unless a test is about events.
#pragma once

#include <gtest/gtest.h>
#include <kbv/kbv.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>

namespace kbv::test {

inline std::string unique_sim_uri(const char* prefix) {
  static std::atomic<int> n{0};
  return "sim:" + std::string(prefix) + std::to_string(getpid() % 100000) + "-" +
         std::to_string(n++);
}

// Polls `eq` (which drives its devices) until one event arrives or `limit`.
inline bool next_event(kbv_eq_t eq, kbv_event_t& ev,
                       std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end)
    if (kbv_eq_poll(eq, &ev, 1) == 1) return true;
  return false;
}

class ModelDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    uri_ = unique_sim_uri("uv");
    ASSERT_EQ(kbv_device_open(uri_.c_str(), nullptr, KBV_EQ_NONE, 0, &dev_), KBV_SUCCESS);
    ASSERT_EQ(kbv_device_query(dev_, &attr_, KBV_EQ_NONE, 0), KBV_SUCCESS);
  }
  void TearDown() override {
    if (dev_) (void)kbv_device_close(dev_, KBV_EQ_NONE, 0);
  }

  // The port ACTIVE with its GID table filled (the model trains the link a
  // few ms after INIT_HCA); each synchronous query drives the device.
  void wait_port_active() {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < end) {
      ASSERT_EQ(kbv_port_query(dev_, 1, &port_, KBV_EQ_NONE, 0), KBV_SUCCESS);
      if (port_.state == KBV_PORT_ACTIVE && port_.gid_count > 0) return;
    }
    FAIL() << "port 1 never became active";
  }

  kbv_pd_t pd() {
    kbv_pd_t p = 0;
    EXPECT_EQ(kbv_pd_alloc(dev_, KBV_EQ_NONE, 0, &p), KBV_SUCCESS);
    return p;
  }
  kbv_cq_t cq(uint32_t cqe = 16) {
    kbv_cq_attr_t a{};
    a.cqe = cqe;
    kbv_cq_t c = 0;
    EXPECT_EQ(kbv_cq_create(dev_, &a, KBV_EQ_NONE, 0, &c), KBV_SUCCESS);
    return c;
  }
  static kbv_qp_init_attr_t qp_attr(uint32_t type, kbv_cq_t scq, kbv_cq_t rcq) {
    kbv_qp_init_attr_t a{};
    a.qp_type = type;
    a.send_cq = scq;
    a.recv_cq = rcq;
    a.cap.max_send_wr = 8;
    a.cap.max_recv_wr = 8;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    return a;
  }

  std::string uri_;
  kbv_device_t dev_ = 0;
  kbv_device_attr_t attr_{};
  kbv_port_attr_t port_{};
};

}  // namespace kbv::test
