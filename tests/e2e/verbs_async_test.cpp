// SPDX-License-Identifier: BSD-3-Clause
//
// End to end: the asynchronous side of include/kbv/kbv.h on model HCAs —
// many requests in flight, one event per request, cancellation by request
// and by object, cancelled creates, close with requests in flight, queue
// limits, port state and device fatal events, the progress thread and the
// event queue's fd.
#include <gtest/gtest.h>
#include <kbv/kbv.h>
#include <poll.h>

#include <map>
#include <set>

#include "verbs_fixture.hpp"

namespace kbv::test {
namespace {

TEST_F(VerbsE2e, ManyRequestsInFlightEachCompleteOnce) {
  SimDev& d = open_dev();
  kbv_eq_t eq = make_eq(512);
  d.model->firmware().set_latency(20ms);
  constexpr uint64_t kN = 40;
  std::map<uint64_t, kbv_pd_t> pds;
  for (uint64_t i = 1; i <= kN; ++i) {
    kbv_pd_t pd = 0;
    ASSERT_EQ(kbv_pd_alloc(d.dev, eq, i, &pd), KBV_PENDING);
    ASSERT_NE(pd, 0u);
    pds[i] = pd;
  }
  // A user_data still in flight cannot be reused.
  kbv_pd_t dup = 0;
  EXPECT_EQ(kbv_pd_alloc(d.dev, eq, 1, &dup), KBV_ERR_ALREADY_EXISTS);
  EXPECT_EQ(dup, 0u);
  auto evs = wait_events(eq, kN);
  ASSERT_EQ(evs.size(), kN);
  std::set<uint64_t> seen;
  for (const auto& e : evs) {
    EXPECT_EQ(e.type, static_cast<uint32_t>(KBV_EVENT_REQUEST));
    EXPECT_EQ(e.status, KBV_SUCCESS);
    EXPECT_TRUE(seen.insert(e.user_data).second) << "two events for " << e.user_data;
    EXPECT_EQ(e.object, pds[e.user_data]);
    EXPECT_NE(e.info, 0u);  // the PD number
  }
  kbv_device_stats_t s{};
  ASSERT_EQ(kbv_device_get_stats(d.dev, &s), KBV_SUCCESS);
  EXPECT_GT(s.cmds_in_flight_max, 8u);  // they really were outstanding together
  for (auto& [ud, pd] : pds) ASSERT_EQ(kbv_pd_dealloc(pd, eq, 100 + ud), KBV_PENDING);
  evs = wait_events(eq, kN);
  ASSERT_EQ(evs.size(), kN);
  for (const auto& e : evs) EXPECT_EQ(e.status, KBV_SUCCESS);
  kbv_event_t extra;
  EXPECT_EQ(kbv_eq_poll(eq, &extra, 1), 0);
  d.model->firmware().set_latency(0ms);
}

TEST_F(VerbsE2e, EventQueueLimits) {
  SimDev& d = open_dev();
  kbv_eq_t eq = make_eq(2);
  kbv_pd_t a = 0, b = 0, c = 0;
  ASSERT_EQ(kbv_pd_alloc(d.dev, eq, 1, &a), KBV_PENDING);
  ASSERT_EQ(kbv_pd_alloc(d.dev, eq, 2, &b), KBV_PENDING);
  // No room for a third completion: refused, nothing created.
  EXPECT_EQ(kbv_pd_alloc(d.dev, eq, 3, &c), KBV_ERR_QUEUE_FULL);
  EXPECT_EQ(c, 0u);
  auto evs = wait_events(eq, 2);
  ASSERT_EQ(evs.size(), 2u);
  EXPECT_EQ(kbv_pd_dealloc(a, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(b, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST_F(VerbsE2e, CancelByRequestGivesOneCancelledEvent) {
  SimDev& d = open_dev();
  kbv_eq_t eq = make_eq();
  auto hold = hold_firmware(*d.model);
  kbv_device_attr_t attr{};
  ASSERT_EQ(kbv_device_query(d.dev, &attr, eq, 5), KBV_PENDING);
  EXPECT_EQ(kbv_eq_cancel(eq, 5), KBV_SUCCESS);
  EXPECT_EQ(kbv_eq_cancel(eq, 5), KBV_ERR_INVALID_STATE);  // its event waits
  kbv_event_t ev = wait_event(eq);
  EXPECT_EQ(ev.user_data, 5u);
  EXPECT_EQ(ev.status, KBV_ERR_CANCELLED);
  EXPECT_EQ(ev.object, d.dev);
  EXPECT_EQ(kbv_eq_cancel(eq, 5), KBV_ERR_NOT_FOUND);
  EXPECT_EQ(kbv_eq_cancel(eq, 6), KBV_ERR_NOT_FOUND);
  // The firmware's late answer produces nothing more (and writes nothing).
  // It is executed before a later synchronous query (commands run in the
  // order they were rung; their completions are processed in order).
  attr.max_qp = 0xabcd;
  hold->release();
  kbv_device_attr_t later{};
  ASSERT_EQ(kbv_device_query(d.dev, &later, KBV_EQ_NONE, 0), KBV_SUCCESS);
  kbv_event_t more[1];
  EXPECT_EQ(kbv_eq_poll(eq, more, 1), 0);
  EXPECT_EQ(attr.max_qp, 0xabcdu);
}

TEST_F(VerbsE2e, CancelByObjectOnOneQueueAndOnAll) {
  SimDev& d = open_dev();
  kbv_eq_t eq = make_eq(), eq2 = make_eq();
  kbv_pd_t pd = alloc_pd(d);
  kbv_cq_t cq = make_cq(d);
  kbv_qp_t qp = make_qp(pd, KBV_QPT_UD, cq, cq);
  auto hold = hold_firmware(*d.model);
  kbv_qp_attr_t out[4];
  for (int i = 0; i < 3; ++i) ASSERT_EQ(kbv_qp_query(qp, &out[i], eq, 10 + i), KBV_PENDING);
  ASSERT_EQ(kbv_qp_query(qp, &out[3], eq2, 20), KBV_PENDING);
  // A request about another object is not touched.
  kbv_device_attr_t da{};
  ASSERT_EQ(kbv_device_query(d.dev, &da, eq, 30), KBV_PENDING);
  uint32_t n = 0;
  EXPECT_EQ(kbv_eq_cancel_object(eq, qp, &n), KBV_SUCCESS);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(kbv_cancel_object(qp, &n), KBV_SUCCESS);  // the one on eq2
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(kbv_cancel_object(qp, &n), KBV_ERR_NOT_FOUND);
  EXPECT_EQ(kbv_cancel_object(0x1234, &n), KBV_ERR_INVALID_HANDLE);
  hold->release();
  auto evs = wait_events(eq, 4);
  ASSERT_EQ(evs.size(), 4u);
  int cancelled = 0, ok = 0;
  for (const auto& e : evs) {
    if (e.status == KBV_ERR_CANCELLED) {
      ++cancelled;
      EXPECT_EQ(e.object, qp);
    } else {
      ++ok;
      EXPECT_EQ(e.user_data, 30u);
      EXPECT_EQ(e.status, KBV_SUCCESS);
    }
  }
  EXPECT_EQ(cancelled, 3);
  EXPECT_EQ(ok, 1);
  kbv_event_t ev = wait_event(eq2);
  EXPECT_EQ(ev.status, KBV_ERR_CANCELLED);
  EXPECT_EQ(kbv_qp_destroy(qp, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_cq_destroy(cq, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(pd, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST_F(VerbsE2e, CancelledCreateIsDestroyedByKbv) {
  SimDev& d = open_dev();
  kbv_eq_t eq = make_eq();
  auto hold = hold_firmware(*d.model);
  kbv_cq_t cq = 0;
  kbv_cq_attr_t a{};
  a.cqe = 16;
  ASSERT_EQ(kbv_cq_create(d.dev, &a, eq, 1, &cq), KBV_PENDING);
  ASSERT_EQ(kbv_eq_cancel(eq, 1), KBV_SUCCESS);
  kbv_event_t ev = wait_event(eq);
  EXPECT_EQ(ev.status, KBV_ERR_CANCELLED);
  EXPECT_EQ(ev.object, cq);
  hold->release();
  // Once firmware created it, kbv destroys it: the handle stops resolving
  // and the device closes with nothing left.
  EXPECT_TRUE(wait_until(eq, [&] {
    return kbv_cq_destroy(cq, KBV_EQ_NONE, 0) == KBV_ERR_INVALID_HANDLE &&
           !verbs::Object::from_handle(cq);
  }));
  EXPECT_EQ(kbv_device_close(d.dev, KBV_EQ_NONE, 0), KBV_SUCCESS);
  d.dev = 0;
}

TEST_F(VerbsE2e, CloseWithRequestsInFlightCancelsThemFirst) {
  SimDev& d = open_dev();
  kbv_eq_t eq = make_eq();
  kbv_pd_t pd = alloc_pd(d);
  kbv_cq_t cq = make_cq(d);
  kbv_qp_t qp = make_qp(pd, KBV_QPT_RC, cq, cq);
  auto hold = hold_firmware(*d.model);
  kbv_qp_attr_t out[3];
  for (int i = 0; i < 3; ++i) ASSERT_EQ(kbv_qp_query(qp, &out[i], eq, 1 + i), KBV_PENDING);
  ASSERT_EQ(kbv_cq_arm(cq, 0, eq, 9), KBV_PENDING);
  ASSERT_EQ(kbv_qp_destroy(qp, eq, 4), KBV_PENDING);
  ASSERT_EQ(kbv_cq_destroy(cq, eq, 5), KBV_PENDING);
  hold->release();
  auto evs = wait_events(eq, 6);
  ASSERT_EQ(evs.size(), 6u);
  // The QP's three queries and the CQ's armed notification come first,
  // cancelled; the closes complete last, the CQ after the QP.
  std::vector<uint64_t> order;
  for (const auto& e : evs) order.push_back(e.user_data);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(evs[i].status, KBV_ERR_CANCELLED) << i;
  EXPECT_EQ(evs[4].user_data, 4u);
  EXPECT_EQ(evs[4].status, KBV_SUCCESS);
  EXPECT_EQ(evs[5].user_data, 5u);
  EXPECT_EQ(evs[5].status, KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(pd, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST_F(VerbsE2e, DestroyingTheEventQueueWithRequestsInFlight) {
  SimDev& d = open_dev();
  kbv_eq_t eq = 0;
  ASSERT_EQ(kbv_eq_create(16, &eq), KBV_SUCCESS);
  auto hold = hold_firmware(*d.model);
  kbv_pd_t pd = 0;
  ASSERT_EQ(kbv_pd_alloc(d.dev, eq, 1, &pd), KBV_PENDING);
  ASSERT_EQ(kbv_eq_destroy(eq), KBV_SUCCESS);
  hold->release();
  // The create's completion has nowhere to go: kbv destroys the PD.
  kbv_eq_t other = make_eq();
  EXPECT_TRUE(wait_until(other, [&] { return !verbs::Object::from_handle(pd); }));
  EXPECT_EQ(kbv_device_close(d.dev, KBV_EQ_NONE, 0), KBV_SUCCESS);
  d.dev = 0;
}

// A link already up before the driver's async EQ existed raised no
// port-change EQE (here: link training of 0 ns, done at INIT_HCA; on a
// loaded host the model's 5 ms can pass before bring-up creates the EQ, as
// the stress run saw): the open still reports ACTIVE once, from the vport
// state queried after bring-up, and never twice.
TEST_F(VerbsE2e, PortAlreadyUpAtOpenIsReportedOnce) {
  kbv_eq_t events = make_eq();
  sim::ModelConfig cfg;
  cfg.link_up_delay = std::chrono::nanoseconds(0);
  auto m = sim::Model::create(unique_name("portup"), cfg);
  ASSERT_TRUE(m.has_value());
  auto model = std::move(*m);
  kbv_device_open_attr_t a{};
  a.event_eq = events;
  kbv_device_t dev = 0;
  const std::string uri = "sim:" + model->name();
  ASSERT_EQ(kbv_device_open(uri.c_str(), &a, KBV_EQ_NONE, 0, &dev), KBV_SUCCESS);
  kbv_event_t ev = wait_event(events);
  EXPECT_EQ(ev.type, static_cast<uint32_t>(KBV_EVENT_PORT_STATE));
  EXPECT_EQ(KBV_PORT_EVENT_PORT(ev.info), 1u);
  EXPECT_EQ(KBV_PORT_EVENT_STATE(ev.info), static_cast<uint32_t>(KBV_PORT_ACTIVE));
  kbv_port_attr_t p{};
  ASSERT_EQ(kbv_port_query(dev, 1, &p, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(p.state, static_cast<uint32_t>(KBV_PORT_ACTIVE));
  // The port query's commands ran after any EQE or query answer: nothing
  // more may be waiting.
  EXPECT_TRUE(wait_events(events, 1, 100ms).empty());
  // A change is still an event.
  model->set_link(false);
  ev = wait_event(events);
  EXPECT_EQ(KBV_PORT_EVENT_STATE(ev.info), static_cast<uint32_t>(KBV_PORT_DOWN));
  ASSERT_EQ(kbv_device_close(dev, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST_F(VerbsE2e, PortStateEventsGoToTheDeviceEventQueue) {
  kbv_eq_t events = make_eq();
  auto m = sim::Model::create(unique_name("port"));
  ASSERT_TRUE(m.has_value());
  auto model = std::move(*m);
  kbv_device_open_attr_t a{};
  a.event_eq = events;
  kbv_device_t dev = 0;
  const std::string uri = "sim:" + model->name();
  ASSERT_EQ(kbv_device_open(uri.c_str(), &a, KBV_EQ_NONE, 0, &dev), KBV_SUCCESS);
  // The link comes up after bring-up (link_up_delay): one ACTIVE event.
  kbv_event_t ev = wait_event(events);
  EXPECT_EQ(ev.type, static_cast<uint32_t>(KBV_EVENT_PORT_STATE));
  EXPECT_EQ(ev.object, dev);
  EXPECT_EQ(KBV_PORT_EVENT_PORT(ev.info), 1u);
  EXPECT_EQ(KBV_PORT_EVENT_STATE(ev.info), static_cast<uint32_t>(KBV_PORT_ACTIVE));
  model->set_link(false);
  ev = wait_event(events);
  EXPECT_EQ(ev.type, static_cast<uint32_t>(KBV_EVENT_PORT_STATE));
  EXPECT_EQ(KBV_PORT_EVENT_STATE(ev.info), static_cast<uint32_t>(KBV_PORT_DOWN));
  kbv_port_attr_t p{};
  ASSERT_EQ(kbv_port_query(dev, 1, &p, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(p.state, static_cast<uint32_t>(KBV_PORT_DOWN));
  model->set_link(true);
  ev = wait_event(events);
  EXPECT_EQ(KBV_PORT_EVENT_STATE(ev.info), static_cast<uint32_t>(KBV_PORT_ACTIVE));
  EXPECT_EQ(ev.user_data, 0u);
  ASSERT_EQ(kbv_device_close(dev, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST_F(VerbsE2e, DeviceFatalIsAnEventAndLaterCallsFail) {
  // 100 ms checks bound how soon the injected syndrome is seen; a late
  // health counter is reported, never fatal (src/hca/health.hpp).
  hca::HcaConfig cfg;
  cfg.health.interval_ns = 100'000'000;
  verbs::set_hca_config(cfg);
  kbv_eq_t events = make_eq();
  auto m = sim::Model::create(unique_name("fatal"), sim::ModelConfig{});
  ASSERT_TRUE(m.has_value());
  auto model = std::move(*m);
  kbv_device_open_attr_t a{};
  a.event_eq = events;
  kbv_device_t dev = 0;
  const std::string uri = "sim:" + model->name();
  ASSERT_EQ(kbv_device_open(uri.c_str(), &a, KBV_EQ_NONE, 0, &dev), KBV_SUCCESS);
  kbv_pd_t pd = 0;
  ASSERT_EQ(kbv_pd_alloc(dev, KBV_EQ_NONE, 0, &pd), KBV_SUCCESS);
  kbv_cq_attr_t ca{};
  ca.cqe = 16;
  kbv_cq_t cq = 0;
  ASSERT_EQ(kbv_cq_create(dev, &ca, KBV_EQ_NONE, 0, &cq), KBV_SUCCESS);
  kbv_qp_init_attr_t qa{};
  qa.qp_type = KBV_QPT_UD;
  qa.send_cq = qa.recv_cq = cq;
  qa.cap = {8, 8, 1, 1, 0};
  kbv_qp_t qp = 0;
  ASSERT_EQ(kbv_qp_create(pd, &qa, KBV_EQ_NONE, 0, &qp), KBV_SUCCESS);
  // A request in flight when the device dies completes with the failure
  // (the firmware is held: it cannot answer first).
  auto hold = hold_firmware(*model);
  kbv_eq_t req = make_eq();
  kbv_device_attr_t da{};
  ASSERT_EQ(kbv_device_query(dev, &da, req, 1), KBV_PENDING);
  model->device().inject_health_fatal(0x1, 0x42);
  bool fatal = false;
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (!fatal && std::chrono::steady_clock::now() < end) {
    kbv_event_t ev;
    if (kbv_eq_poll(events, &ev, 1) == 1 && ev.type == KBV_EVENT_DEVICE_FATAL) {
      fatal = true;
      EXPECT_EQ(ev.status, KBV_ERR_DEVICE_FATAL);
      EXPECT_EQ(ev.object, dev);
    }
  }
  ASSERT_TRUE(fatal);
  kbv_event_t ev = wait_event(req);
  EXPECT_EQ(ev.user_data, 1u);
  EXPECT_EQ(ev.status, KBV_ERR_DEVICE_FATAL);
  hold->release();
  // Later calls fail with the failure; closes still complete.
  kbv_send_wr_t wr{};
  uint32_t bad = 0;
  EXPECT_EQ(kbv_post_send(qp, &wr, 1, &bad), KBV_ERR_DEVICE_FATAL);
  kbv_pd_t pd2 = 0;
  EXPECT_EQ(kbv_pd_alloc(dev, KBV_EQ_NONE, 0, &pd2), KBV_ERR_DEVICE_FATAL);
  EXPECT_EQ(kbv_qp_destroy(qp, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_cq_destroy(cq, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(pd, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_device_close(dev, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST_F(VerbsE2e, ControlCallsFromManyThreadsAtOnce) {
  SimDev& d = open_dev();
  ASSERT_EQ(kbv_device_start_progress_thread(d.dev), KBV_SUCCESS);
  constexpr int kThreads = 4, kRounds = 15;
  std::atomic<int> failures{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      kbv_eq_t eq = 0;
      if (kbv_eq_create(8, &eq) != KBV_SUCCESS) {
        ++failures;
        return;
      }
      for (int r = 0; r < kRounds; ++r) {
        kbv_pd_t pd = 0;
        kbv_cq_t cq = 0;
        kbv_cq_attr_t ca{};
        ca.cqe = 8;
        // Half the threads wait synchronously, half through their queue.
        if (t % 2 == 0) {
          failures += kbv_pd_alloc(d.dev, KBV_EQ_NONE, 0, &pd) != KBV_SUCCESS;
          failures += kbv_cq_create(d.dev, &ca, KBV_EQ_NONE, 0, &cq) != KBV_SUCCESS;
        } else {
          failures += kbv_pd_alloc(d.dev, eq, 1, &pd) != KBV_PENDING;
          failures += kbv_cq_create(d.dev, &ca, eq, 2, &cq) != KBV_PENDING;
          auto evs = wait_events(eq, 2);
          failures += evs.size() != 2;
          for (const auto& e : evs) failures += e.status != KBV_SUCCESS;
        }
        failures += kbv_cq_destroy(cq, KBV_EQ_NONE, 0) != KBV_SUCCESS;
        failures += kbv_pd_dealloc(pd, KBV_EQ_NONE, 0) != KBV_SUCCESS;
      }
      (void)kbv_eq_destroy(eq);
    });
  }
  for (auto& th : ts) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(kbv_device_stop_progress_thread(d.dev), KBV_SUCCESS);
}

TEST_F(VerbsE2e, ProgressThreadAndEventQueueFd) {
  kbv_eq_t eq = make_eq();
  const std::string uri = "sim:" + unique_name("thr");
  kbv_device_open_attr_t a{};
  a.flags = KBV_OPEN_PROGRESS_THREAD;
  a.event_eq = make_eq();  // port events apart from the requests
  kbv_device_t dev = 0;
  ASSERT_EQ(kbv_device_open(uri.c_str(), &a, eq, 1, &dev), KBV_PENDING);
  int fd = -1;
  ASSERT_EQ(kbv_eq_get_fd(eq, &fd), KBV_SUCCESS);
  // Nobody polls the queue: the thread drives the device, the fd wakes us.
  auto wait_fd = [&] {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 10000) == 1 && (p.revents & POLLIN);
  };
  ASSERT_TRUE(wait_fd());
  kbv_event_t ev;
  ASSERT_EQ(kbv_eq_poll(eq, &ev, 1), 1);
  EXPECT_EQ(ev.user_data, 1u);
  EXPECT_EQ(ev.status, KBV_SUCCESS);
  pollfd p{fd, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0);  // drained: not readable
  EXPECT_EQ(kbv_device_start_progress_thread(dev), KBV_ERR_ALREADY_EXISTS);
  // The device's own interrupt fd (async EQ MSI-X), when the platform has one.
  int dfd = -1;
  kbv_status_t st = kbv_device_get_fd(dev, &dfd);
  EXPECT_TRUE(st == KBV_SUCCESS || st == KBV_ERR_NOT_SUPPORTED) << kbv_status_name(st);
  if (st == KBV_SUCCESS) {
    EXPECT_GE(dfd, 0);
  }
  EXPECT_EQ(kbv_device_get_fd(dev, nullptr), KBV_ERR_INVALID_ARGUMENT);
  kbv_pd_t pd = 0;
  ASSERT_EQ(kbv_pd_alloc(dev, eq, 2, &pd), KBV_PENDING);
  ASSERT_TRUE(wait_fd());
  ASSERT_EQ(kbv_eq_poll(eq, &ev, 1), 1);
  EXPECT_EQ(ev.user_data, 2u);
  EXPECT_EQ(kbv_device_stop_progress_thread(dev), KBV_SUCCESS);
  EXPECT_EQ(kbv_device_stop_progress_thread(dev), KBV_ERR_NOT_FOUND);
  EXPECT_EQ(kbv_pd_dealloc(pd, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_device_close(dev, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

}  // namespace
}  // namespace kbv::test
