// SPDX-License-Identifier: BSD-3-Clause
// src/verbs/event_queue.cpp: the event ring, its eventfd, overflow reports,
// the request registry (one event per request, cancel) and the kbv_eq_* C API.
#include "verbs/event_queue.hpp"

#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <kbv/eq.hpp>
#include <set>
#include <thread>
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

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  int r = ::poll(&p, 1, 0);
  EXPECT_GE(r, 0);
  return r == 1 && (p.revents & POLLIN);
}

kbv_event_t async_event(uint32_t type, uint64_t object) {
  kbv_event_t ev{};
  ev.type = type;
  ev.status = KBV_SUCCESS;
  ev.object = object;
  return ev;
}

TEST(EventQueue, CreateRejectsBadDepth) {
  EXPECT_EQ(EventQueue::create(0).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(EventQueue::create(KBV_EQ_MAX_DEPTH + 1).status(), KBV_ERR_INVALID_ARGUMENT);
  auto eq = EventQueue::create(KBV_EQ_MAX_DEPTH);
  ASSERT_TRUE(eq.has_value());
  EXPECT_EQ((*eq)->depth(), KBV_EQ_MAX_DEPTH);
  EXPECT_GE((*eq)->fd(), 0);
}

TEST(EventQueue, ExactlyOneEventPerRequest) {
  auto eq = make(16);
  std::vector<Ticket> t;
  for (uint64_t ud = 100; ud < 105; ++ud) {
    auto r = eq->begin(ud, KBV_EVENT_REQUEST, 7);
    ASSERT_TRUE(r.has_value());
    t.push_back(*r);
  }
  EXPECT_EQ(eq->in_flight(), 5u);
  EXPECT_EQ(eq->queued(), 0u);
  // Complete in reverse order; the third with a firmware error.
  for (int i = 4; i >= 0; --i) {
    Status st = i == 2 ? Status{KBV_ERR_FW_BAD_PARAM, 0x3, 0x1b2c} : Status{};
    EXPECT_EQ(EventQueue::complete(t[i], st, 0, 1000 + i), KBV_SUCCESS);
    // A second completion (late driver callback) is dropped.
    EXPECT_EQ(EventQueue::complete(t[i], Status{}, 0, 0), KBV_ERR_NOT_FOUND);
  }
  EXPECT_EQ(eq->in_flight(), 0u);
  auto ev = drain(*eq);
  ASSERT_EQ(ev.size(), 5u);
  for (size_t k = 0; k < 5; ++k) {
    int i = 4 - static_cast<int>(k);
    EXPECT_EQ(ev[k].type, KBV_EVENT_REQUEST);
    EXPECT_EQ(ev[k].user_data, 100u + i);
    EXPECT_EQ(ev[k].object, 7u);  // 0 passed: the object it was begun about
    EXPECT_EQ(ev[k].info, 1000u + i);
    if (i == 2) {
      EXPECT_EQ(ev[k].status, KBV_ERR_FW_BAD_PARAM);
      EXPECT_EQ(ev[k].fw_status, 0x3);
      EXPECT_EQ(ev[k].syndrome, 0x1b2cu);
    } else {
      EXPECT_EQ(ev[k].status, KBV_SUCCESS);
      EXPECT_EQ(ev[k].fw_status, 0);
    }
  }
  EXPECT_TRUE(drain(*eq).empty());
}

TEST(EventQueue, UserDataReusableOnlyAfterItsEventIsPolled) {
  auto eq = make(4);
  auto t = eq->begin(9, KBV_EVENT_REQUEST, 0);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(eq->begin(9, KBV_EVENT_REQUEST, 0).status(), KBV_ERR_ALREADY_EXISTS);
  ASSERT_EQ(EventQueue::complete(*t, Status{}, 5, 0), KBV_SUCCESS);
  EXPECT_EQ(eq->begin(9, KBV_EVENT_REQUEST, 0).status(), KBV_ERR_ALREADY_EXISTS);
  ASSERT_EQ(drain(*eq).size(), 1u);
  auto t2 = eq->begin(9, KBV_EVENT_REQUEST, 0);
  ASSERT_TRUE(t2.has_value());
  // The old ticket does not complete the new request.
  EXPECT_EQ(EventQueue::complete(*t, Status{}, 0, 0), KBV_ERR_NOT_FOUND);
  EXPECT_TRUE(EventQueue::pending(*t2));
  EXPECT_FALSE(EventQueue::pending(*t));
}

TEST(EventQueue, BeginRejectsNonRequestTypes) {
  auto eq = make(4);
  EXPECT_EQ(eq->begin(1, KBV_EVENT_NONE, 0).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(eq->begin(1, KBV_EVENT_OVERFLOW, 0).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(eq->begin(1, 1234, 0).status(), KBV_ERR_INVALID_ARGUMENT);
}

TEST(EventQueue, RequestsReserveRoomForTheirCompletion) {
  auto eq = make(2);
  auto a = eq->begin(1, KBV_EVENT_REQUEST, 0);
  auto b = eq->begin(2, KBV_EVENT_REQUEST, 0);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(eq->begin(3, KBV_EVENT_REQUEST, 0).status(), KBV_ERR_QUEUE_FULL);
  // The reserved room is not available to unsolicited events...
  EXPECT_EQ(eq->post(async_event(KBV_EVENT_CQ_ERROR, 1)), KBV_ERR_OVERFLOW);
  // ...so both completions still fit.
  EXPECT_EQ(EventQueue::complete(*a, Status{}, 0, 0), KBV_SUCCESS);
  EXPECT_EQ(EventQueue::complete(*b, Status{}, 0, 0), KBV_SUCCESS);
  auto ev = drain(*eq);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].user_data, 1u);
  EXPECT_EQ(ev[1].user_data, 2u);
  EXPECT_EQ(ev[2].type, KBV_EVENT_OVERFLOW);
  EXPECT_EQ(ev[2].info, 1u);
}

TEST(EventQueue, CancelByUserData) {
  auto eq = make(8);
  int hook_calls = 0;
  auto t = eq->begin(42, KBV_EVENT_REQUEST, 3, [&] { ++hook_calls; });
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(eq->cancel(43), KBV_ERR_NOT_FOUND);
  EXPECT_EQ(eq->cancel(42), KBV_SUCCESS);
  EXPECT_EQ(hook_calls, 1);
  // Already done (event waiting): a second cancel and the late completion.
  EXPECT_EQ(eq->cancel(42), KBV_ERR_INVALID_STATE);
  EXPECT_EQ(EventQueue::complete(*t, Status{}, 0, 0), KBV_ERR_NOT_FOUND);
  auto ev = drain(*eq);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].status, KBV_ERR_CANCELLED);
  EXPECT_EQ(ev[0].user_data, 42u);
  EXPECT_EQ(ev[0].object, 3u);
  EXPECT_EQ(eq->cancel(42), KBV_ERR_NOT_FOUND);
  EXPECT_EQ(hook_calls, 1);

  // Completed before the cancel: already done, the hook is not called.
  auto t2 = eq->begin(50, KBV_EVENT_REQUEST, 0, [&] { ++hook_calls; });
  ASSERT_TRUE(t2.has_value());
  ASSERT_EQ(EventQueue::complete(*t2, Status{}, 0, 0), KBV_SUCCESS);
  EXPECT_EQ(eq->cancel(50), KBV_ERR_INVALID_STATE);
  EXPECT_EQ(EventQueue::cancel(*t2), KBV_ERR_INVALID_STATE);
  EXPECT_EQ(hook_calls, 1);
  ev = drain(*eq);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].status, KBV_SUCCESS);
}

TEST(EventQueue, CancelByObject) {
  auto eq = make(16);
  std::vector<Ticket> t;
  for (uint64_t ud = 1; ud <= 4; ++ud) {
    auto r = eq->begin(ud, KBV_EVENT_REQUEST, ud == 3 ? 0xB : 0xA);
    ASSERT_TRUE(r.has_value());
    t.push_back(*r);
  }
  ASSERT_EQ(EventQueue::complete(t[0], Status{}, 0, 0), KBV_SUCCESS);  // done already
  EXPECT_EQ(eq->cancel_object(0xA), 2u);
  EXPECT_EQ(eq->cancel_object(0xA), 0u);
  EXPECT_EQ(eq->in_flight(), 1u);
  auto ev = drain(*eq);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].status, KBV_SUCCESS);
  std::set<uint64_t> cancelled;
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(ev[i].status, KBV_ERR_CANCELLED);
    EXPECT_EQ(ev[i].object, 0xAu);
    cancelled.insert(ev[i].user_data);
  }
  EXPECT_EQ(cancelled, (std::set<uint64_t>{2, 4}));
  EXPECT_TRUE(EventQueue::pending(t[2]));
}

TEST(EventQueue, FdReadableWhileEventsWaitAndRearmedAfterDrain) {
  auto eq = make(8);
  int fd = eq->fd();
  EXPECT_FALSE(readable(fd));
  ASSERT_EQ(eq->post(async_event(KBV_EVENT_PORT_STATE, 1)), KBV_SUCCESS);
  ASSERT_EQ(eq->post(async_event(KBV_EVENT_PORT_STATE, 1)), KBV_SUCCESS);
  EXPECT_TRUE(readable(fd));
  kbv_event_t ev;
  ASSERT_EQ(eq->poll(&ev, 1), 1u);
  EXPECT_TRUE(readable(fd)) << "one event still waits";
  ASSERT_EQ(eq->poll(&ev, 1), 1u);
  EXPECT_FALSE(readable(fd)) << "drained";
  EXPECT_EQ(eq->poll(&ev, 1), 0u);
  EXPECT_FALSE(readable(fd));
  // Re-armed: a new event makes it readable again, also from a request.
  auto t = eq->begin(1, KBV_EVENT_REQUEST, 0);
  ASSERT_TRUE(t.has_value());
  EXPECT_FALSE(readable(fd)) << "a begun request alone is not an event";
  ASSERT_EQ(EventQueue::complete(*t, Status{}, 0, 0), KBV_SUCCESS);
  EXPECT_TRUE(readable(fd));
  EXPECT_EQ(drain(*eq).size(), 1u);
  EXPECT_FALSE(readable(fd));
}

TEST(EventQueue, OverflowIsReportedNeverSilent) {
  auto eq = make(4);
  int fd = eq->fd();
  for (int i = 0; i < 6; ++i) {
    Status st = eq->post(async_event(KBV_EVENT_CQ_ERROR, static_cast<uint64_t>(i)));
    EXPECT_EQ(st, i < 4 ? KBV_SUCCESS : KBV_ERR_OVERFLOW) << i;
  }
  EXPECT_EQ(eq->lost_total(), 2u);
  // Room for exactly the queued events: the report comes on the next poll.
  kbv_event_t buf[8];
  ASSERT_EQ(eq->poll(buf, 4), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(buf[i].object, static_cast<uint64_t>(i));
  EXPECT_TRUE(readable(fd)) << "the overflow report still waits";
  ASSERT_EQ(eq->poll(buf, 8), 1u);
  EXPECT_EQ(buf[0].type, KBV_EVENT_OVERFLOW);
  EXPECT_EQ(buf[0].status, KBV_ERR_OVERFLOW);
  EXPECT_EQ(buf[0].info, 2u);
  EXPECT_FALSE(readable(fd));
  EXPECT_EQ(eq->poll(buf, 8), 0u);
  // A later loss is reported with its own count; the total keeps growing.
  for (int i = 0; i < 5; ++i) (void)eq->post(async_event(KBV_EVENT_SRQ_LIMIT, 9));
  auto ev = drain(*eq);
  ASSERT_EQ(ev.size(), 5u);
  EXPECT_EQ(ev[4].type, KBV_EVENT_OVERFLOW);
  EXPECT_EQ(ev[4].info, 1u);
  EXPECT_EQ(eq->lost_total(), 3u);
}

TEST(EventQueue, ConcurrentProducersOneConsumerLoseNothing) {
  constexpr int kThreads = 4;
  constexpr int kRequests = 2000;  // per thread
  constexpr int kAsync = 500;      // unsolicited per thread
  auto eq = make(64);
  std::atomic<int> async_ok{0}, async_lost{0}, producers_done{0};
  std::vector<std::thread> th;
  for (int p = 0; p < kThreads; ++p) {
    th.emplace_back([&, p] {
      // ASSERTs return from the inner body only, so the consumer still stops.
      [&] {
        for (int i = 0; i < kRequests; ++i) {
          uint64_t ud = (uint64_t(p) << 32) | uint64_t(i);
          Result<Ticket> t = KBV_ERR_QUEUE_FULL;
          while (!(t = eq->begin(ud, KBV_EVENT_REQUEST, p + 1)).has_value()) {
            ASSERT_EQ(t.status(), KBV_ERR_QUEUE_FULL);
            std::this_thread::yield();
          }
          ASSERT_EQ(EventQueue::complete(*t, Status{}, 0, ud), KBV_SUCCESS);
          if (i % (kRequests / kAsync) == 0) {
            if (eq->post(async_event(KBV_EVENT_QP_FATAL, 0)).is_ok()) {
              ++async_ok;
            } else {
              ++async_lost;
            }
          }
        }
      }();
      ++producers_done;
    });
  }
  std::set<uint64_t> seen;
  uint64_t async_seen = 0, overflow_reported = 0;
  kbv_event_t buf[16];
  for (;;) {
    bool done = producers_done.load() == kThreads;
    uint32_t n = eq->poll(buf, 16);
    for (uint32_t i = 0; i < n; ++i) {
      if (buf[i].type == KBV_EVENT_REQUEST) {
        EXPECT_EQ(buf[i].info, buf[i].user_data);
        EXPECT_TRUE(seen.insert(buf[i].user_data).second) << "duplicate event";
      } else if (buf[i].type == KBV_EVENT_OVERFLOW) {
        overflow_reported += buf[i].info;
      } else {
        ++async_seen;
      }
    }
    if (done && n == 0) break;
    if (n == 0) std::this_thread::yield();
  }
  for (auto& t : th) t.join();
  EXPECT_EQ(seen.size(), size_t{kThreads} * kRequests);
  EXPECT_EQ(async_seen, uint64_t(async_ok.load()));
  EXPECT_EQ(overflow_reported, uint64_t(async_lost.load()));
  EXPECT_EQ(eq->lost_total(), uint64_t(async_lost.load()));
  EXPECT_EQ(async_ok.load() + async_lost.load(), kThreads * kAsync);
  EXPECT_FALSE(readable(eq->fd()));
}

TEST(EventQueue, CompletionRacingCancelYieldsExactlyOneEvent) {
  constexpr uint64_t kN = 3000;
  auto eq = make(kN);
  std::vector<Ticket> t;
  std::atomic<int> hooks{0};
  for (uint64_t ud = 0; ud < kN; ++ud) {
    auto r = eq->begin(ud, KBV_EVENT_REQUEST, 1, [&] { ++hooks; });
    ASSERT_TRUE(r.has_value());
    t.push_back(*r);
  }
  int completed = 0, cancelled = 0;
  // The driver (a progress thread) completes everything while the
  // application cancels everything: each request wins exactly one way.
  std::thread driver([&] {
    for (auto& x : t) completed += EventQueue::complete(x, Status{}, 0, 0).is_ok();
  });
  for (uint64_t ud = 0; ud < kN; ++ud) {
    Status st = eq->cancel(ud);
    EXPECT_TRUE(st.is_ok() || st == KBV_ERR_INVALID_STATE) << st.to_string();
    cancelled += st.is_ok();
  }
  driver.join();
  EXPECT_EQ(completed + cancelled, static_cast<int>(kN));
  EXPECT_EQ(hooks.load(), cancelled);
  auto ev = drain(*eq);
  ASSERT_EQ(ev.size(), kN);
  std::set<uint64_t> seen;
  int cancelled_events = 0;
  for (auto& e : ev) {
    EXPECT_TRUE(seen.insert(e.user_data).second);
    cancelled_events += e.status == KBV_ERR_CANCELLED;
  }
  EXPECT_EQ(cancelled_events, cancelled);
  EXPECT_EQ(eq->in_flight(), 0u);
}

TEST(EventQueue, PollRunsTheProgressHook) {
  auto eq = make(4);
  auto t = eq->begin(1, KBV_EVENT_REQUEST, 0);
  ASSERT_TRUE(t.has_value());
  int calls = 0;
  Ticket tk = *t;
  // The "device" completes the request the third time it is driven.
  eq->set_progress([&] {
    if (++calls == 3) (void)EventQueue::complete(tk, Status{}, 0, 0);
  });
  kbv_event_t ev;
  EXPECT_EQ(eq->poll(&ev, 1), 0u);
  EXPECT_EQ(eq->poll(&ev, 1), 0u);
  EXPECT_EQ(eq->poll(&ev, 1), 1u);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(ev.user_data, 1u);
}

TEST(EventQueue, ShutdownCancelsDriverSideAndDropsLateCompletions) {
  auto eq = make(4);
  int hooks = 0;
  auto t = eq->begin(1, KBV_EVENT_REQUEST, 0, [&] { ++hooks; });
  ASSERT_TRUE(t.has_value());
  eq->shutdown();
  EXPECT_EQ(hooks, 1);
  EXPECT_EQ(EventQueue::complete(*t, Status{}, 0, 0), KBV_ERR_NOT_FOUND);
  EXPECT_EQ(eq->begin(2, KBV_EVENT_REQUEST, 0).status(), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(eq->post(async_event(KBV_EVENT_CQ_ERROR, 0)), KBV_ERR_INVALID_HANDLE);
  eq->shutdown();
  EXPECT_EQ(hooks, 1);
  // The queue itself gone: tickets complete into nothing.
  Ticket tk = *t;
  eq.reset();
  EXPECT_EQ(EventQueue::complete(tk, Status{}, 0, 0), KBV_ERR_NOT_FOUND);
}

// ---- C API ------------------------------------------------------------------

TEST(EqCApi, ArgumentErrors) {
  kbv_eq_t h = 0;
  EXPECT_EQ(kbv_eq_create(8, nullptr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_eq_create(0, &h), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_eq_create(KBV_EQ_MAX_DEPTH + 1, &h), KBV_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(kbv_eq_create(8, &h), KBV_SUCCESS);
  EXPECT_NE(h, KBV_EQ_NONE);
  EXPECT_EQ(kbv_eq_poll(h, nullptr, 1), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_eq_poll(h, nullptr, 0), 0);
  EXPECT_EQ(kbv_eq_get_fd(h, nullptr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_eq_get_lost(h, nullptr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_eq_cancel(h, 5), KBV_ERR_NOT_FOUND);
  uint32_t n = 99;
  EXPECT_EQ(kbv_eq_cancel_object(h, 5, &n), KBV_ERR_NOT_FOUND);
  EXPECT_EQ(n, 0u);
  uint64_t lost = 99;
  EXPECT_EQ(kbv_eq_get_lost(h, &lost), KBV_SUCCESS);
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(kbv_eq_destroy(h), KBV_SUCCESS);
}

TEST(EqCApi, InvalidAndStaleHandles) {
  kbv_event_t ev;
  int fd;
  for (kbv_eq_t bad : {kbv_eq_t{0}, kbv_eq_t{0xdeadbeef00000001ull}, kbv_eq_t{~0ull}}) {
    EXPECT_EQ(kbv_eq_poll(bad, &ev, 1), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_eq_poll(bad, nullptr, 1), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_eq_get_fd(bad, &fd), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_eq_cancel(bad, 1), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_eq_cancel_object(bad, 1, nullptr), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_eq_destroy(bad), KBV_ERR_INVALID_HANDLE);
  }
  kbv_eq_t a = 0, b = 0;
  ASSERT_EQ(kbv_eq_create(4, &a), KBV_SUCCESS);
  ASSERT_EQ(kbv_eq_destroy(a), KBV_SUCCESS);
  // The freed slot is reused with a new generation: the old handle stays dead.
  ASSERT_EQ(kbv_eq_create(4, &b), KBV_SUCCESS);
  EXPECT_EQ(a & 0xffffffffu, b & 0xffffffffu) << "slot reused";
  EXPECT_NE(a, b);
  EXPECT_EQ(kbv_eq_poll(a, &ev, 1), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_eq_get_fd(a, &fd), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_eq_cancel(a, 1), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_eq_destroy(a), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_eq_poll(b, &ev, 1), 0);
  EXPECT_EQ(kbv_eq_destroy(b), KBV_SUCCESS);
  EXPECT_EQ(kbv_eq_destroy(b), KBV_ERR_INVALID_HANDLE);
}

TEST(EqCApi, EventsAndCancelThroughTheHandle) {
  kbv_eq_t h = 0;
  ASSERT_EQ(kbv_eq_create(8, &h), KBV_SUCCESS);
  auto eq = eq_from_handle(h);
  ASSERT_TRUE(eq);
  int fd = -1;
  ASSERT_EQ(kbv_eq_get_fd(h, &fd), KBV_SUCCESS);
  EXPECT_EQ(fd, eq->fd());
  ASSERT_TRUE(eq->begin(1, KBV_EVENT_REQUEST, 0x55).has_value());
  ASSERT_TRUE(eq->begin(2, KBV_EVENT_REQUEST, 0x55).has_value());
  ASSERT_TRUE(eq->begin(3, KBV_EVENT_REQUEST, 0x66).has_value());
  EXPECT_EQ(kbv_eq_cancel(h, 3), KBV_SUCCESS);
  uint32_t n = 0;
  EXPECT_EQ(kbv_eq_cancel_object(h, 0x55, &n), KBV_SUCCESS);
  EXPECT_EQ(n, 2u);
  EXPECT_TRUE(readable(fd));
  kbv_event_t ev[8];
  ASSERT_EQ(kbv_eq_poll(h, ev, 8), 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(ev[i].status, KBV_ERR_CANCELLED);
  EXPECT_FALSE(readable(fd));
  EXPECT_EQ(kbv_eq_destroy(h), KBV_SUCCESS);
  // A destroyed queue still referenced internally accepts nothing.
  EXPECT_EQ(eq->begin(4, KBV_EVENT_REQUEST, 0).status(), KBV_ERR_INVALID_HANDLE);
}

TEST(EqCxx, RaiiOwnsTheHandle) {
  kbv_eq_t raw;
  {
    auto eq = kbv::Eq::create(4);
    ASSERT_TRUE(eq.has_value());
    raw = eq->handle();
    auto fd = eq->fd();
    ASSERT_TRUE(fd.has_value());
    EXPECT_GE(*fd, 0);
    kbv_event_t ev[2];
    auto n = eq->poll(ev);
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(*n, 0u);
    EXPECT_EQ(eq->cancel(1), KBV_ERR_NOT_FOUND);
    kbv::Eq moved = std::move(*eq);
    EXPECT_FALSE(*eq);
    EXPECT_EQ(moved.handle(), raw);
  }
  kbv_event_t ev;
  EXPECT_EQ(kbv_eq_poll(raw, &ev, 1), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv::Eq::create(0).status(), KBV_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace kbv::verbs
