// SPDX-License-Identifier: BSD-3-Clause
// The IB_REQUEST machinery (src/compat/nt_request.hpp): IRP completion
// through a callback, an event queue or synchronously; cancellation; queued
// notification requests (one per event, FIFO, cancelled at close); the
// one-at-a-time completion notification slot. No device needed.
#include "compat/nt_request.hpp"

#include <gtest/gtest.h>
#include <kbv/compat/ib_verbs.h>
#include <kbv/eq.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace kbv::compat {
namespace {

struct Seen {
  std::vector<IB_REQUEST*> reqs;
  std::vector<NTSTATUS> status;
  std::vector<ULONG_PTR> info;
};

VOID record(IB_REQUEST* r, VOID* ctx) {
  auto* s = static_cast<Seen*>(ctx);
  s->reqs.push_back(r);
  s->status.push_back(r->IoStatus.Status);
  s->info.push_back(r->IoStatus.Information);
}

class NtRequestTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(kbv_eq_create(8, &eq_), KBV_SUCCESS); }
  void TearDown() override { (void)kbv_eq_destroy(eq_); }
  void callback_req(IB_REQUEST* r) { kbv_nt_init_request(r, KBV_EQ_NONE, 0, record, &seen_); }
  std::vector<kbv_event_t> drain() {
    kbv_event_t evs[8];
    int n = kbv_eq_poll(eq_, evs, 8);
    EXPECT_GE(n, 0);
    return {evs, evs + (n < 0 ? 0 : n)};
  }
  kbv_eq_t eq_ = KBV_EQ_NONE;
  Seen seen_;
};

TEST_F(NtRequestTest, InitRequestSetsPendingAndTarget) {
  IB_REQUEST r;
  std::memset(&r, 0xab, sizeof(r));
  kbv_nt_init_request(&r, eq_, 77, nullptr, nullptr);
  EXPECT_EQ(r.IoStatus.Status, STATUS_PENDING);
  EXPECT_EQ(r.IoStatus.Information, 0u);
  EXPECT_EQ(r.Eq, eq_);
  EXPECT_EQ(r.UserData, 77u);
  EXPECT_EQ(r.CompletionRoutine, nullptr);
}

TEST_F(NtRequestTest, BeginRefusesNullAndNumbersTheArgument) {
  std::shared_ptr<NtRequest> out;
  EXPECT_EQ(NtRequest::begin(nullptr, 3, true, &out), STATUS_INVALID_PARAMETER_3);
  EXPECT_EQ(NtRequest::begin(nullptr, 7, true, &out), STATUS_INVALID_PARAMETER_7);
  EXPECT_EQ(out, nullptr);
}

TEST_F(NtRequestTest, CallbackRunsOnceWithIoStatusAfterPending) {
  IB_REQUEST r;
  callback_req(&r);
  std::shared_ptr<NtRequest> nr;
  ASSERT_EQ(NtRequest::begin(&r, 2, true, &nr), STATUS_SUCCESS);
  EXPECT_EQ(nr->result({}), STATUS_PENDING);
  EXPECT_TRUE(seen_.reqs.empty());
  EXPECT_TRUE(nr->complete(STATUS_SUCCESS, 0x1234));
  ASSERT_EQ(seen_.reqs.size(), 1u);
  EXPECT_EQ(seen_.reqs[0], &r);
  EXPECT_EQ(seen_.status[0], STATUS_SUCCESS);
  EXPECT_EQ(seen_.info[0], 0x1234u);
  // Exactly once: a late completion (e.g. after a cancel) does nothing.
  EXPECT_FALSE(nr->complete(STATUS_UNSUCCESSFUL, 0));
  EXPECT_EQ(seen_.reqs.size(), 1u);
  EXPECT_EQ(r.IoStatus.Status, STATUS_SUCCESS);
}

TEST_F(NtRequestTest, PendingRequestCannotBeSubmittedTwice) {
  IB_REQUEST r;
  callback_req(&r);
  std::shared_ptr<NtRequest> a, b;
  ASSERT_EQ(NtRequest::begin(&r, 4, true, &a), STATUS_SUCCESS);
  EXPECT_EQ(NtRequest::begin(&r, 4, true, &b), STATUS_INVALID_PARAMETER_4);
  EXPECT_TRUE(a->complete(STATUS_SUCCESS, 0));
  // Completed: the request object is the client's again and may be reused.
  EXPECT_EQ(NtRequest::begin(&r, 4, true, &b), STATUS_SUCCESS);
  EXPECT_TRUE(b->complete(STATUS_SUCCESS, 0));
}

TEST_F(NtRequestTest, EventQueueCompletionCarriesRequestAndInformation) {
  IB_REQUEST r;
  kbv_nt_init_request(&r, eq_, 42, nullptr, nullptr);
  std::shared_ptr<NtRequest> nr;
  ASSERT_EQ(NtRequest::begin(&r, 1, true, &nr), STATUS_SUCCESS);
  EXPECT_EQ(nr->result({}), STATUS_PENDING);
  EXPECT_TRUE(drain().empty());
  EXPECT_TRUE(nr->complete(STATUS_BUFFER_OVERFLOW, 96));
  auto evs = drain();
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].type, KBV_EVENT_REQUEST);
  EXPECT_EQ(evs[0].user_data, 42u);
  EXPECT_EQ(evs[0].object, reinterpret_cast<uintptr_t>(&r));
  EXPECT_EQ(evs[0].info, 96u);
  EXPECT_EQ(evs[0].status, kbv_status_from_ntstatus(STATUS_BUFFER_OVERFLOW));
  EXPECT_EQ(r.IoStatus.Status, STATUS_BUFFER_OVERFLOW);
  EXPECT_EQ(r.IoStatus.Information, 96u);
}

TEST_F(NtRequestTest, EventQueueCancelCompletesWithCancelled) {
  IB_REQUEST r;
  kbv_nt_init_request(&r, eq_, 5, nullptr, nullptr);
  std::shared_ptr<NtRequest> nr;
  ASSERT_EQ(NtRequest::begin(&r, 1, false, &nr), STATUS_SUCCESS);
  EXPECT_EQ(kbv_eq_cancel(eq_, 5), KBV_SUCCESS);
  auto evs = drain();
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].status, KBV_ERR_CANCELLED);
  EXPECT_EQ(r.IoStatus.Status, STATUS_CANCELLED);
  EXPECT_FALSE(nr->complete(STATUS_SUCCESS, 0));
  EXPECT_TRUE(drain().empty());
  EXPECT_EQ(kbv_nt_cancel_request(&r), STATUS_NOT_FOUND);
}

TEST_F(NtRequestTest, BadEventQueueAndFullQueue) {
  IB_REQUEST r;
  kbv_nt_init_request(&r, eq_ + 0x100000000ull, 1, nullptr, nullptr);  // stale generation
  std::shared_ptr<NtRequest> nr;
  EXPECT_EQ(NtRequest::begin(&r, 2, true, &nr), STATUS_INVALID_PARAMETER_2);
  kbv_eq_t small = KBV_EQ_NONE;
  ASSERT_EQ(kbv_eq_create(1, &small), KBV_SUCCESS);
  IB_REQUEST a, b;
  kbv_nt_init_request(&a, small, 1, nullptr, nullptr);
  kbv_nt_init_request(&b, small, 2, nullptr, nullptr);
  std::shared_ptr<NtRequest> ra, rb;
  ASSERT_EQ(NtRequest::begin(&a, 1, true, &ra), STATUS_SUCCESS);
  EXPECT_EQ(NtRequest::begin(&b, 1, true, &rb), STATUS_INSUFFICIENT_RESOURCES);
  // The same UserData twice in flight on one queue is refused too.
  IB_REQUEST c;
  kbv_nt_init_request(&c, small, 1, nullptr, nullptr);
  EXPECT_EQ(NtRequest::begin(&c, 3, true, &rb), STATUS_INVALID_PARAMETER_3);
  EXPECT_TRUE(ra->complete(STATUS_SUCCESS, 0));
  (void)kbv_eq_destroy(small);
}

TEST_F(NtRequestTest, SynchronousRequestWaitsForItsCompletion) {
  IB_REQUEST r;
  kbv_nt_init_request(&r, KBV_EQ_NONE, 0, nullptr, nullptr);
  std::shared_ptr<NtRequest> nr;
  ASSERT_EQ(NtRequest::begin(&r, 1, true, &nr), STATUS_SUCCESS);
  EXPECT_TRUE(nr->sync());
  std::thread t([nr] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    (void)nr->complete(STATUS_IO_TIMEOUT, 9);
  });
  EXPECT_EQ(nr->result({}), STATUS_IO_TIMEOUT);
  t.join();
  EXPECT_EQ(r.IoStatus.Information, 9u);
  // A synchronous request is not "pending" for cancel.
  EXPECT_EQ(kbv_nt_cancel_request(&r), STATUS_NOT_FOUND);
}

TEST_F(NtRequestTest, SynchronousWaitPumpsWhenGiven) {
  IB_REQUEST r;
  kbv_nt_init_request(&r, KBV_EQ_NONE, 0, nullptr, nullptr);
  std::shared_ptr<NtRequest> nr;
  ASSERT_EQ(NtRequest::begin(&r, 1, true, &nr), STATUS_SUCCESS);
  int pumps = 0;
  EXPECT_EQ(nr->result([&] {
    if (++pumps == 3) (void)nr->complete(STATUS_SUCCESS, 0);
  }),
            STATUS_SUCCESS);
  EXPECT_EQ(pumps, 3);
}

TEST_F(NtRequestTest, NotificationRequestsHaveNoSynchronousForm) {
  IB_REQUEST r;
  kbv_nt_init_request(&r, KBV_EQ_NONE, 0, nullptr, nullptr);
  std::shared_ptr<NtRequest> nr;
  EXPECT_EQ(NtRequest::begin(&r, 2, false, &nr), STATUS_INVALID_PARAMETER_2);
  NtEventQueue q;
  EXPECT_EQ(q.add(&r, 3), STATUS_INVALID_PARAMETER_3);
  NtNotifySlot s;
  EXPECT_EQ(s.arm(&r, 2), STATUS_INVALID_PARAMETER_2);
}

TEST_F(NtRequestTest, CancelRequestCompletesWithCancelled) {
  IB_REQUEST r;
  callback_req(&r);
  std::shared_ptr<NtRequest> nr;
  ASSERT_EQ(NtRequest::begin(&r, 1, true, &nr), STATUS_SUCCESS);
  EXPECT_EQ(kbv_nt_cancel_request(&r), STATUS_SUCCESS);
  ASSERT_EQ(seen_.status.size(), 1u);
  EXPECT_EQ(seen_.status[0], STATUS_CANCELLED);
  EXPECT_EQ(kbv_nt_cancel_request(&r), STATUS_NOT_FOUND);
  EXPECT_EQ(kbv_nt_cancel_request(nullptr), STATUS_INVALID_PARAMETER_1);
  EXPECT_FALSE(nr->complete(STATUS_SUCCESS, 0));
}

TEST_F(NtRequestTest, EventQueueCompletesOnePerEventInOrder) {
  NtEventQueue q;
  IB_REQUEST r[3];
  for (auto& x : r) {
    callback_req(&x);
    EXPECT_EQ(q.add(&x, 2), STATUS_PENDING);
  }
  EXPECT_EQ(q.waiting(), 3u);
  EXPECT_TRUE(q.fire(STATUS_SUCCESS, IbAePortActive));
  ASSERT_EQ(seen_.reqs.size(), 1u);
  EXPECT_EQ(seen_.reqs[0], &r[0]);
  EXPECT_EQ(seen_.info[0], static_cast<ULONG_PTR>(IbAePortActive));
  EXPECT_TRUE(q.fire(STATUS_SUCCESS, IbAePortDown));
  ASSERT_EQ(seen_.reqs.size(), 2u);
  EXPECT_EQ(seen_.reqs[1], &r[1]);
  EXPECT_EQ(seen_.info[1], static_cast<ULONG_PTR>(IbAePortDown));
  // Close: the rest complete with STATUS_CANCELLED.
  EXPECT_EQ(q.complete_all(STATUS_CANCELLED), 1u);
  ASSERT_EQ(seen_.reqs.size(), 3u);
  EXPECT_EQ(seen_.reqs[2], &r[2]);
  EXPECT_EQ(seen_.status[2], STATUS_CANCELLED);
  EXPECT_EQ(q.waiting(), 0u);
}

TEST_F(NtRequestTest, EventQueueSkipsCancelledRequests) {
  NtEventQueue q;
  IB_REQUEST a, b;
  callback_req(&a);
  callback_req(&b);
  ASSERT_EQ(q.add(&a, 2), STATUS_PENDING);
  ASSERT_EQ(q.add(&b, 2), STATUS_PENDING);
  ASSERT_EQ(kbv_nt_cancel_request(&a), STATUS_SUCCESS);
  EXPECT_TRUE(q.fire(STATUS_SUCCESS, 7));
  ASSERT_EQ(seen_.reqs.size(), 2u);
  EXPECT_EQ(seen_.reqs[1], &b);
  EXPECT_EQ(seen_.status[1], STATUS_SUCCESS);
}

TEST_F(NtRequestTest, EventWithoutRequestWaitsInBacklogAndCompletesInline) {
  NtEventQueue q(2);
  EXPECT_FALSE(q.fire(STATUS_SUCCESS, 1));
  EXPECT_FALSE(q.fire(STATUS_SUCCESS, 2));
  EXPECT_FALSE(q.fire(STATUS_SUCCESS, 3));  // the oldest (1) is dropped
  EXPECT_EQ(q.backlog(), 2u);
  IB_REQUEST r;
  callback_req(&r);
  EXPECT_EQ(q.add(&r, 2), STATUS_SUCCESS);  // inline: no callback
  EXPECT_EQ(r.IoStatus.Status, STATUS_SUCCESS);
  EXPECT_EQ(r.IoStatus.Information, 2u);
  EXPECT_TRUE(seen_.reqs.empty());
  EXPECT_EQ(q.add(&r, 2), STATUS_SUCCESS);
  EXPECT_EQ(r.IoStatus.Information, 3u);
  EXPECT_EQ(q.add(&r, 2), STATUS_PENDING);
  EXPECT_EQ(q.complete_all(STATUS_CANCELLED), 1u);
}

TEST_F(NtRequestTest, NotifySlotHoldsOneRequestANewOneCancelsTheOld) {
  NtNotifySlot s;
  IB_REQUEST a, b;
  callback_req(&a);
  callback_req(&b);
  ASSERT_EQ(s.arm(&a, 2), STATUS_PENDING);
  ASSERT_EQ(s.arm(&b, 2), STATUS_PENDING);
  ASSERT_EQ(seen_.reqs.size(), 1u);
  EXPECT_EQ(seen_.reqs[0], &a);
  EXPECT_EQ(seen_.status[0], STATUS_CANCELLED);
  EXPECT_TRUE(s.armed());
  EXPECT_TRUE(s.fire());
  ASSERT_EQ(seen_.reqs.size(), 2u);
  EXPECT_EQ(seen_.reqs[1], &b);
  EXPECT_EQ(seen_.status[1], STATUS_SUCCESS);
  EXPECT_FALSE(s.armed());
}

TEST_F(NtRequestTest, NotifySlotRemembersAnUnrequestedEvent) {
  NtNotifySlot s;
  EXPECT_FALSE(s.fire());
  IB_REQUEST a;
  callback_req(&a);
  EXPECT_EQ(s.arm(&a, 2), STATUS_SUCCESS);  // "the CQ experienced a completion event"
  EXPECT_EQ(a.IoStatus.Status, STATUS_SUCCESS);
  EXPECT_TRUE(seen_.reqs.empty());
  EXPECT_EQ(s.arm(&a, 2), STATUS_PENDING);  // consumed: the next one waits
  EXPECT_TRUE(s.complete(STATUS_CANCELLED));
  ASSERT_EQ(seen_.status.size(), 1u);
  EXPECT_EQ(seen_.status[0], STATUS_CANCELLED);
}

}  // namespace
}  // namespace kbv::compat
