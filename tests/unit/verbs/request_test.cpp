// SPDX-License-Identifier: BSD-3-Clause
// src/verbs/request.cpp: Object (IRP close semantics), AsyncRequestQueue,
// NotifySlot and run_sync.
#include "verbs/request.hpp"

#include <gtest/gtest.h>
#include <poll.h>

#include <vector>

namespace kbv::verbs {
namespace {

std::shared_ptr<EventQueue> make(uint32_t depth) {
  auto r = EventQueue::create(depth);
  EXPECT_TRUE(r.has_value());
  return r ? *r : nullptr;
}

std::vector<kbv_event_t> drain(EventQueue& eq) {
  std::vector<kbv_event_t> out;
  kbv_event_t buf[8];
  for (;;) {
    uint32_t n = eq.poll(buf, 8);
    out.insert(out.end(), buf, buf + n);
    if (n < 8) return out;
  }
}

TEST(Object, HandlesResolveUntilFinalized) {
  auto o = Object::create();
  ASSERT_TRUE(o);
  uint64_t h = o->handle();
  EXPECT_NE(h, 0u);
  EXPECT_EQ(Object::from_handle(h), o);
  EXPECT_EQ(Object::from_handle(0), nullptr);
  EXPECT_EQ(Object::from_handle(h + (1ull << 32)), nullptr) << "wrong generation";
  EXPECT_EQ(o->close(nullptr, 0), KBV_SUCCESS) << "no other reference: closed now";
  EXPECT_EQ(Object::from_handle(h), nullptr);
  EXPECT_EQ(o->close(nullptr, 0), KBV_ERR_INVALID_HANDLE) << "second close";
  EXPECT_EQ(o->acquire(), KBV_ERR_INVALID_HANDLE);
}

TEST(Object, CloseWithRequestsInFlightCancelsThemFirstAndWaitsForReferences) {
  auto eq = make(16);
  int finals = 0;
  int driver_cancels = 0;
  auto o = Object::create([&] { ++finals; });
  ASSERT_TRUE(o);
  uint64_t h = o->handle();
  auto r1 = o->begin(eq, 1, KBV_EVENT_REQUEST, [&] { ++driver_cancels; });
  auto r2 = o->begin(eq, 2, KBV_EVENT_QP_FATAL);
  ASSERT_TRUE(r1.has_value() && r2.has_value());
  ASSERT_EQ(o->acquire(), KBV_SUCCESS);  // e.g. a child object
  EXPECT_EQ(o->refs(), 2u);

  EXPECT_EQ(o->close(eq, 99), KBV_PENDING);
  EXPECT_TRUE(o->closing());
  EXPECT_EQ(driver_cancels, 1);
  EXPECT_EQ(o->begin(eq, 3, KBV_EVENT_REQUEST).status(), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(o->acquire(), KBV_ERR_INVALID_HANDLE);
  // The cancelled requests are out; the close is not done yet.
  auto ev = drain(*eq);
  ASSERT_EQ(ev.size(), 2u);
  for (auto& e : ev) {
    EXPECT_EQ(e.status, KBV_ERR_CANCELLED);
    EXPECT_EQ(e.object, h);
  }
  EXPECT_EQ(finals, 0);
  EXPECT_EQ(Object::from_handle(h), o);
  // A late driver completion of a cancelled request is dropped.
  EXPECT_EQ(EventQueue::complete(*r1, Status{}, 0, 0), KBV_ERR_NOT_FOUND);

  o->release();  // the last reference
  EXPECT_EQ(finals, 1);
  EXPECT_EQ(Object::from_handle(h), nullptr);
  ev = drain(*eq);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, KBV_EVENT_REQUEST);
  EXPECT_EQ(ev[0].user_data, 99u);
  EXPECT_EQ(ev[0].status, KBV_SUCCESS);
  EXPECT_EQ(ev[0].object, h);
  EXPECT_EQ(o->refs(), 0u);
  o->release();  // unbalanced: logged, no effect
  EXPECT_EQ(finals, 1);
}

TEST(Object, CloseWithoutEqFinalizesWhenReferencesDrop) {
  int finals = 0;
  auto o = Object::create([&] { ++finals; });
  ASSERT_EQ(o->acquire(), KBV_SUCCESS);
  EXPECT_EQ(o->close(nullptr, 0), KBV_PENDING);
  EXPECT_EQ(finals, 0);
  o->release();
  EXPECT_EQ(finals, 1);
}

TEST(Object, CloseFailsCleanlyWhenItsEqIsFull) {
  auto eq = make(1);
  auto o = Object::create();
  auto r = o->begin(eq, 1, KBV_EVENT_REQUEST);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(o->close(eq, 2), KBV_ERR_QUEUE_FULL);
  EXPECT_FALSE(o->closing()) << "a refused close changes nothing";
  EXPECT_TRUE(EventQueue::pending(*r));
  EXPECT_EQ(o->close(eq, 1), KBV_ERR_ALREADY_EXISTS);
  EXPECT_EQ(o->close(nullptr, 0), KBV_SUCCESS);
  auto ev = drain(*eq);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].status, KBV_ERR_CANCELLED);
}

TEST(Object, CancelRequestsCoversEveryQueue) {
  auto a = make(4), b = make(4);
  auto o = Object::create();
  ASSERT_TRUE(o->begin(a, 1, KBV_EVENT_REQUEST).has_value());
  ASSERT_TRUE(o->begin(b, 1, KBV_EVENT_REQUEST).has_value());
  ASSERT_TRUE(o->begin(b, 2, KBV_EVENT_REQUEST).has_value());
  EXPECT_EQ(o->begin(nullptr, 3, KBV_EVENT_REQUEST).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(o->cancel_requests(), 3u);
  EXPECT_EQ(o->cancel_requests(), 0u);
  EXPECT_EQ(drain(*a).size(), 1u);
  EXPECT_EQ(drain(*b).size(), 2u);
  EXPECT_EQ(o->close(nullptr, 0), KBV_SUCCESS);
}

TEST(AsyncRequestQueue, OneRequestCompletesPerEventInOrder) {
  auto eq = make(16);
  auto o = Object::create();
  AsyncRequestQueue port_events(KBV_EVENT_PORT_STATE);
  for (uint64_t ud = 1; ud <= 4; ++ud) EXPECT_EQ(port_events.add(*o, eq, ud), KBV_PENDING);
  EXPECT_EQ(port_events.add(*o, eq, 4), KBV_ERR_ALREADY_EXISTS);
  // Request 2 is cancelled on its own: the next event skips it.
  EXPECT_EQ(eq->cancel(2), KBV_SUCCESS);
  EXPECT_TRUE(port_events.fire(Status{}, 1));
  EXPECT_TRUE(port_events.fire(Status{}, 2));
  auto ev = drain(*eq);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].user_data, 2u);
  EXPECT_EQ(ev[0].status, KBV_ERR_CANCELLED);
  EXPECT_EQ(ev[1].user_data, 1u);
  EXPECT_EQ(ev[1].type, KBV_EVENT_PORT_STATE);
  EXPECT_EQ(ev[1].info, 1u);
  EXPECT_EQ(ev[1].object, o->handle());
  EXPECT_EQ(ev[2].user_data, 3u);
  EXPECT_EQ(ev[2].info, 2u);
  // Close cancels what still waits (request 4); later events find nobody.
  EXPECT_EQ(o->close(eq, 100), KBV_PENDING);
  EXPECT_FALSE(port_events.fire(Status{}, 3));
  ev = drain(*eq);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].user_data, 4u);
  EXPECT_EQ(ev[0].status, KBV_ERR_CANCELLED);
  EXPECT_EQ(ev[1].user_data, 100u);
  EXPECT_EQ(ev[1].status, KBV_SUCCESS);
}

TEST(AsyncRequestQueue, CancelAllAndPruning) {
  auto eq = make(16);
  auto o = Object::create();
  AsyncRequestQueue q(KBV_EVENT_CQ_ERROR);
  EXPECT_FALSE(q.fire(Status{}, 0));
  EXPECT_EQ(q.add(*o, eq, 1), KBV_PENDING);
  EXPECT_EQ(q.add(*o, eq, 2), KBV_PENDING);
  EXPECT_EQ(eq->cancel(1), KBV_SUCCESS);
  EXPECT_EQ(q.add(*o, eq, 3), KBV_PENDING);
  EXPECT_EQ(q.queued(), 2u) << "the cancelled request was pruned";
  EXPECT_EQ(q.cancel_all(), 2u);
  EXPECT_EQ(q.queued(), 0u);
  EXPECT_EQ(drain(*eq).size(), 3u);
  EXPECT_EQ(o->close(nullptr, 0), KBV_SUCCESS);
}

TEST(NotifySlot, ANewArmCancelsTheOld) {
  auto eq = make(8);
  auto cq = Object::create();
  NotifySlot slot;
  EXPECT_FALSE(slot.fire(0));
  EXPECT_FALSE(slot.armed());
  EXPECT_EQ(slot.arm(*cq, eq, 10), KBV_PENDING);
  EXPECT_EQ(slot.arm(*cq, eq, 11), KBV_PENDING);
  EXPECT_TRUE(slot.armed());
  auto ev = drain(*eq);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].user_data, 10u);
  EXPECT_EQ(ev[0].status, KBV_ERR_CANCELLED);
  EXPECT_EQ(ev[0].type, KBV_EVENT_COMP_NOTIFY);
  EXPECT_TRUE(slot.fire(7));
  EXPECT_FALSE(slot.fire(8)) << "one event per arm";
  ev = drain(*eq);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].user_data, 11u);
  EXPECT_EQ(ev[0].status, KBV_SUCCESS);
  EXPECT_EQ(ev[0].type, KBV_EVENT_COMP_NOTIFY);
  EXPECT_EQ(ev[0].object, cq->handle());
  EXPECT_EQ(ev[0].info, 7u);
  // A failed arm (duplicate user_data) keeps the armed request.
  EXPECT_EQ(slot.arm(*cq, eq, 12), KBV_PENDING);
  EXPECT_EQ(slot.arm(*cq, eq, 12), KBV_ERR_ALREADY_EXISTS);
  EXPECT_TRUE(slot.armed());
  EXPECT_TRUE(slot.cancel());
  EXPECT_FALSE(slot.cancel());
  ev = drain(*eq);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].user_data, 12u);
  EXPECT_EQ(ev[0].status, KBV_ERR_CANCELLED);
  EXPECT_EQ(cq->close(nullptr, 0), KBV_SUCCESS);
}

TEST(Completer, DriverResultBecomesTheEvent) {
  auto eq = make(4);
  auto a = eq->begin(1, KBV_EVENT_REQUEST, 0);
  auto b = eq->begin(2, KBV_EVENT_REQUEST, 0);
  ASSERT_TRUE(a.has_value() && b.has_value());
  auto pdn = [](const uint32_t& pd) { return uint64_t{pd} + 0x1000; };
  auto info = [](const uint32_t& pd) { return uint64_t{pd}; };
  auto done_a = completer<uint32_t>(*a, pdn, info);
  auto done_b = completer<uint32_t>(*b, pdn, info);
  done_a(Result<uint32_t>(7u));
  done_b(Result<uint32_t>(Status{KBV_ERR_NO_RESOURCES, 0xf, 0xabcd}));
  done_a(Result<uint32_t>(8u));  // a duplicate completion is dropped
  auto ev = drain(*eq);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].user_data, 1u);
  EXPECT_EQ(ev[0].status, KBV_SUCCESS);
  EXPECT_EQ(ev[0].object, 0x1007u);
  EXPECT_EQ(ev[0].info, 7u);
  EXPECT_EQ(ev[1].user_data, 2u);
  EXPECT_EQ(ev[1].status, KBV_ERR_NO_RESOURCES);
  EXPECT_EQ(ev[1].fw_status, 0xf);
  EXPECT_EQ(ev[1].syndrome, 0xabcdu);
}

TEST(RunSync, DrivesProgressUntilTheEventArrives) {
  Ticket t;
  int calls = 0;
  auto r = run_sync(
      [&](const std::shared_ptr<EventQueue>& eq, uint64_t ud) -> Status {
        auto b = eq->begin(ud, KBV_EVENT_REQUEST, 0);
        if (!b) return b.status();
        t = *b;
        return KBV_PENDING;
      },
      [&](int wake_fd) -> Status {
        EXPECT_GE(wake_fd, 0);
        if (++calls == 3) {
          (void)EventQueue::complete(t, Status{KBV_ERR_FW_BAD_RESOURCE, 0x5, 0x77}, 0x1234, 9);
          // The wake-up fd is readable once the request's event is in.
          pollfd p{wake_fd, POLLIN, 0};
          EXPECT_EQ(::poll(&p, 1, 0), 1);
        }
        return KBV_SUCCESS;
      });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(r->status, KBV_ERR_FW_BAD_RESOURCE);
  EXPECT_EQ(r->fw_status, 0x5);
  EXPECT_EQ(r->syndrome, 0x77u);
  EXPECT_EQ(r->object, 0x1234u);
  EXPECT_EQ(r->info, 9u);
}

TEST(RunSync, ProgressErrorCancelsTheRequest) {
  int cancels = 0;
  auto r = run_sync(
      [&](const std::shared_ptr<EventQueue>& eq, uint64_t ud) -> Status {
        auto b = eq->begin(ud, KBV_EVENT_REQUEST, 0, [&] { ++cancels; });
        return b ? Status{KBV_PENDING} : b.status();
      },
      [](int) { return Status{KBV_ERR_TIMEOUT}; });
  EXPECT_EQ(r.status(), KBV_ERR_TIMEOUT);
  EXPECT_EQ(cancels, 1);
}

TEST(RunSync, ReusesTheThreadsQueueAndNestsWithAnother) {
  Ticket t;
  int outer_fd = -1, inner_fd = -1, again_fd = -1;
  auto pending = [&](const std::shared_ptr<EventQueue>& eq, uint64_t ud) -> Status {
    auto b = eq->begin(ud, KBV_EVENT_REQUEST, 0);
    if (!b) return b.status();
    t = *b;
    return KBV_PENDING;
  };
  auto r = run_sync(pending, [&](int fd) -> Status {
    outer_fd = fd;
    // A synchronous call from inside a wait gets a queue of its own.
    Ticket outer = t;
    auto in = run_sync(pending, [&](int fd2) -> Status {
      inner_fd = fd2;
      (void)EventQueue::complete(t, Status{}, 0, 1);
      return KBV_SUCCESS;
    });
    EXPECT_TRUE(in.has_value());
    (void)EventQueue::complete(outer, Status{}, 0, 2);
    return KBV_SUCCESS;
  });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->info, 2u);
  EXPECT_NE(inner_fd, outer_fd);
  // The next call on this thread reuses the first queue (no eventfd per call).
  auto r2 = run_sync(pending, [&](int fd) -> Status {
    again_fd = fd;
    (void)EventQueue::complete(t, Status{}, 0, 3);
    return KBV_SUCCESS;
  });
  ASSERT_TRUE(r2.has_value());
  EXPECT_EQ(r2->info, 3u);
  EXPECT_EQ(again_fd, outer_fd);
}

TEST(RunSync, InlineResultsAndSubmitErrors) {
  auto progress = [](int) { return Status{}; };
  auto ok =
      run_sync([](const std::shared_ptr<EventQueue>&, uint64_t) { return Status{}; }, progress);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->status, KBV_SUCCESS);
  auto err = run_sync(
      [](const std::shared_ptr<EventQueue>&, uint64_t) { return Status{KBV_ERR_NO_RESOURCES}; },
      progress);
  EXPECT_EQ(err.status(), KBV_ERR_NO_RESOURCES);
  EXPECT_EQ(run_sync(nullptr, progress).status(), KBV_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace kbv::verbs
