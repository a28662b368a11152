// SPDX-License-Identifier: BSD-3-Clause
//
// Shared fixture of the verbs e2e tests (tests/e2e/verbs_*_test.cpp): model
// HCAs created by the test (so it can pull the link, slow the firmware or
// inject a fatal error) and opened through the C API as "sim:<name>", plus
// helpers to wait for events on an event queue.
#pragma once

#include <gtest/gtest.h>
#include <kbv/kbv.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sim/model.hpp"
#include "verbs/objects.hpp"

namespace kbv::test {

using namespace std::chrono_literals;

struct SimDev {
  std::unique_ptr<sim::Model> model;
  std::string uri;
  kbv_device_t dev = 0;
  kbv_port_attr_t port{};
};

// A task posted to a model's firmware thread that blocks it until
// release(): commands submitted meanwhile stay in flight for as long as the
// test needs, whatever the machine's load (instead of a firmware latency).
struct FwHold {
  std::mutex mu;
  std::condition_variable cv;
  bool held = false, open = false;
  void release() {
    {
      std::lock_guard l(mu);
      open = true;
    }
    cv.notify_all();
  }
};

class VerbsE2e : public ::testing::Test {
 protected:
  // Blocks the model's firmware thread (returns once it is blocked).
  std::shared_ptr<FwHold> hold_firmware(sim::Model& m) {
    auto h = std::make_shared<FwHold>();
    m.firmware().post([h] {
      std::unique_lock l(h->mu);
      h->held = true;
      h->cv.notify_all();
      h->cv.wait(l, [&] { return h->open; });
    });
    std::unique_lock l(h->mu);
    h->cv.wait(l, [&] { return h->held; });
    holds_.push_back(h);
    return h;
  }

  void TearDown() override {
    for (auto& h : holds_) h->release();
    holds_.clear();
    for (auto& d : devs_) {
      if (!d->dev) continue;
      kbv_status_t st = kbv_device_close(d->dev, KBV_EQ_NONE, 0);
      // A test that failed with children still open leaves the device
      // closing: its model must outlive it.
      if (st == KBV_PENDING) (void)d->model.release();
    }
    devs_.clear();
    for (auto e : eqs_) (void)kbv_eq_destroy(e);
    eqs_.clear();
    verbs::set_hca_config({});
  }

  static std::string unique_name(const char* prefix) {
    static std::atomic<int> n{0};
    return std::string(prefix) + std::to_string(getpid() % 10000) + "-" + std::to_string(n++);
  }

  // A model HCA owned by the test, opened synchronously.
  SimDev& open_dev(sim::ModelConfig cfg = {}) {
    auto d = std::make_unique<SimDev>();
    std::string name = unique_name("vt");
    auto m = sim::Model::create(name, cfg);
    EXPECT_TRUE(m.has_value()) << m.status().to_string();
    if (m) d->model = std::move(*m);
    d->uri = "sim:" + name;
    kbv_status_t st = kbv_device_open(d->uri.c_str(), nullptr, KBV_EQ_NONE, 0, &d->dev);
    EXPECT_EQ(st, KBV_SUCCESS) << kbv_status_name(st);
    // The port goes ACTIVE a few ms after INIT_HCA (ModelConfig::link_up_delay).
    wait_port_active(*d);
    devs_.push_back(std::move(d));
    return *devs_.back();
  }

  void wait_port_active(SimDev& d) {
    const auto end = std::chrono::steady_clock::now() + 5s;
    while (std::chrono::steady_clock::now() < end) {
      kbv_status_t st = kbv_port_query(d.dev, 1, &d.port, KBV_EQ_NONE, 0);
      ASSERT_EQ(st, KBV_SUCCESS) << kbv_status_name(st);
      if (d.port.state == KBV_PORT_ACTIVE) return;
      std::this_thread::sleep_for(1ms);
    }
    FAIL() << "port never became active";
  }

  kbv_eq_t make_eq(uint32_t depth = 256) {
    kbv_eq_t e = 0;
    EXPECT_EQ(kbv_eq_create(depth, &e), KBV_SUCCESS);
    eqs_.push_back(e);
    return e;
  }

  // Polls eq until `n` events arrived (or the time limit); returns them.
  static std::vector<kbv_event_t> wait_events(kbv_eq_t eq, size_t n,
                                              std::chrono::milliseconds limit = 10000ms) {
    std::vector<kbv_event_t> got;
    const auto end = std::chrono::steady_clock::now() + limit;
    while (got.size() < n && std::chrono::steady_clock::now() < end) {
      kbv_event_t ev[16];
      int k = kbv_eq_poll(eq, ev, 16);
      EXPECT_GE(k, 0);
      if (k <= 0) {
        std::this_thread::sleep_for(20us);
        continue;
      }
      got.insert(got.end(), ev, ev + k);
    }
    return got;
  }
  static kbv_event_t wait_event(kbv_eq_t eq, std::chrono::milliseconds limit = 10000ms) {
    auto v = wait_events(eq, 1, limit);
    EXPECT_EQ(v.size(), 1u);
    return v.empty() ? kbv_event_t{} : v[0];
  }
  // Drives progress (through an EQ poll) until pred() or the limit.
  static bool wait_until(kbv_eq_t eq, const std::function<bool()>& pred,
                         std::chrono::milliseconds limit = 10000ms) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      if (pred()) return true;
      kbv_event_t ev;
      (void)kbv_eq_poll(eq, &ev, 0);
      std::this_thread::sleep_for(20us);
    }
    return pred();
  }

  kbv_pd_t alloc_pd(SimDev& d) {
    kbv_pd_t pd = 0;
    EXPECT_EQ(kbv_pd_alloc(d.dev, KBV_EQ_NONE, 0, &pd), KBV_SUCCESS);
    return pd;
  }
  kbv_cq_t make_cq(SimDev& d, uint32_t cqe = 64, kbv_eq_t event_eq = 0) {
    kbv_cq_attr_t a{};
    a.cqe = cqe;
    a.event_eq = event_eq;
    kbv_cq_t cq = 0;
    kbv_status_t st = kbv_cq_create(d.dev, &a, KBV_EQ_NONE, 0, &cq);
    EXPECT_EQ(st, KBV_SUCCESS) << kbv_status_name(st);
    return cq;
  }
  kbv_qp_t make_qp(kbv_pd_t pd, uint32_t type, kbv_cq_t scq, kbv_cq_t rcq, kbv_srq_t srq = 0,
                   kbv_eq_t event_eq = 0) {
    kbv_qp_init_attr_t a{};
    a.qp_type = type;
    a.send_cq = scq;
    a.recv_cq = rcq;
    a.srq = srq;
    a.cap.max_send_wr = 32;
    a.cap.max_recv_wr = 32;
    a.cap.max_send_sge = 2;
    a.cap.max_recv_sge = 2;
    a.cap.max_inline_data = 64;
    a.event_eq = event_eq;
    kbv_qp_t qp = 0;
    kbv_status_t st = kbv_qp_create(pd, &a, KBV_EQ_NONE, 0, &qp);
    EXPECT_EQ(st, KBV_SUCCESS) << kbv_status_name(st);
    return qp;
  }

  // RESET -> INIT -> RTR -> RTS toward (peer, peer_qpn).
  static kbv_status_t connect(kbv_qp_t qp, uint32_t type, const SimDev& peer, uint32_t peer_qpn,
                              uint32_t sq_psn = 100, uint32_t rq_psn = 200,
                              uint16_t pkey_index = 0) {
    kbv_qp_attr_t a{};
    a.qp_state = KBV_QPS_INIT;
    a.port_num = 1;
    a.pkey_index = pkey_index;
    a.qp_access_flags = KBV_ACCESS_REMOTE_READ | KBV_ACCESS_REMOTE_WRITE |
                        (type == KBV_QPT_RC ? KBV_ACCESS_REMOTE_ATOMIC : 0);
    a.qkey = 0x11111111;
    uint32_t m = KBV_QP_STATE | KBV_QP_PORT | KBV_QP_PKEY_INDEX |
                 (type == KBV_QPT_UD ? KBV_QP_QKEY : KBV_QP_ACCESS_FLAGS);
    kbv_status_t st = kbv_qp_modify(qp, &a, m, KBV_EQ_NONE, 0);
    if (st != KBV_SUCCESS) return st;
    a.qp_state = KBV_QPS_RTR;
    a.path_mtu = KBV_MTU_1024;
    a.dest_qp_num = peer_qpn;
    a.rq_psn = rq_psn;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 12;
    std::memcpy(a.ah_attr.dgid, peer.port.gids[0].gid, 16);
    a.ah_attr.dmac = peer.port.gids[0].mac;
    a.ah_attr.hop_limit = 64;
    m = KBV_QP_STATE;
    if (type != KBV_QPT_UD) m |= KBV_QP_AV | KBV_QP_PATH_MTU | KBV_QP_DEST_QPN | KBV_QP_RQ_PSN;
    if (type == KBV_QPT_RC) m |= KBV_QP_MAX_DEST_RD_ATOMIC | KBV_QP_MIN_RNR_TIMER;
    st = kbv_qp_modify(qp, &a, m, KBV_EQ_NONE, 0);
    if (st != KBV_SUCCESS) return st;
    a.qp_state = KBV_QPS_RTS;
    a.sq_psn = sq_psn;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 4;
    m = KBV_QP_STATE | KBV_QP_SQ_PSN;
    if (type == KBV_QPT_RC)
      m |= KBV_QP_TIMEOUT | KBV_QP_RETRY_CNT | KBV_QP_RNR_RETRY | KBV_QP_MAX_QP_RD_ATOMIC;
    return kbv_qp_modify(qp, &a, m, KBV_EQ_NONE, 0);
  }

  std::vector<std::unique_ptr<SimDev>> devs_;
  std::vector<kbv_eq_t> eqs_;
  std::vector<std::shared_ptr<FwHold>> holds_;
};

}  // namespace kbv::test
