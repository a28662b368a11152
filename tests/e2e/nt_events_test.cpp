// SPDX-License-Identifier: BSD-3-Clause
// NT verbs interface on model HCAs: affiliated asynchronous events through
// GetQpAsyncEvent / GetCqAsyncEvent and the object callbacks (a remote
// access error at the responder, a CQ overrun), requests completed on a kbv
// event queue and cancelled there, and synchronous destroys of objects that
// are still referenced.
#include <kbv/eq.h>

#include <cstring>
#include <vector>

#include "nt_fixture.hpp"

namespace kbv::nt_test {
namespace {

struct QpSeen {
  std::atomic<int> n{0};
  std::atomic<int> last{0};
};
VOID on_qp_event(IB_QP*, VOID* ctx, IB_ASYNC_EVENT ev) {
  auto* s = static_cast<QpSeen*>(ctx);
  s->last = ev;
  ++s->n;
}

class NtEvents : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ha_.open("ea"));
    ASSERT_NO_FATAL_FAILURE(hb_.open("eb"));
  }
  void connect(ULONG cqes) {
    ASSERT_NO_FATAL_FAILURE(a_.create(ha_, 4096, cqes));
    ASSERT_NO_FATAL_FAILURE(b_.create(hb_, 4096, cqes));
    ASSERT_NO_FATAL_FAILURE(a_.connect(b_));
    ASSERT_NO_FATAL_FAILURE(b_.connect(a_));
  }
  void TearDown() override {
    a_.destroy();
    b_.destroy();
  }
  std::vector<uint8_t> send_wr(IB_SEND_WR** out, IB_OP_TYPE type, IB_SGE* sge, void* raddr,
                               ULONG rkey) {
    std::vector<uint8_t> mem(IB_SEND_WR_SIZE(1), 0);
    auto* w = reinterpret_cast<IB_SEND_WR*>(mem.data());
    w->Type = type;
    w->Flags = IB_WR_FLAG_SIGNALED;
    w->SgeCount = 1;
    w->Sge[0] = sge;
    w->u.Rdma.Address = raddr;
    w->u.Rdma.RKey = rkey;
    *out = w;
    return mem;
  }
  NtHca ha_, hb_;
  Endpoint a_, b_;
};

TEST_F(NtEvents, RemoteAccessErrorReachesTheResponderQpRequests) {
  ASSERT_NO_FATAL_FAILURE(connect(64));
  // b's QP: a queued async request on a kbv event queue, a second one by
  // callback (one event completes one request).
  kbv_eq_t eq = KBV_EQ_NONE;
  ASSERT_EQ(kbv_eq_create(8, &eq), KBV_SUCCESS);
  IB_REQUEST first;
  kbv_nt_init_request(&first, eq, 11, nullptr, nullptr);
  ASSERT_EQ(b_.ifc->GetQpAsyncEvent(b_.qp, &first), STATUS_PENDING);
  Req second;
  ASSERT_EQ(b_.ifc->GetQpAsyncEvent(b_.qp, second.p()), STATUS_PENDING);
  EXPECT_EQ(b_.ifc->GetQpAsyncEvent(b_.qp, nullptr), STATUS_INVALID_PARAMETER_2);

  // An RDMA READ from a with a key b never gave out.
  IB_SGE sge{a_.buf.data(), 32, a_.mr->LKey};
  IB_SEND_WR* w = nullptr;
  auto mem = send_wr(&w, IbRdmaRead, &sge, b_.buf.data(), b_.mr->RKey ^ 0x5500);
  IB_SEND_WR* failed = nullptr;
  ASSERT_EQ(a_.ifc->PostSend(a_.qp, w, &failed), STATUS_SUCCESS);
  auto wc = a_.poll(a_.scq, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].Status, IbWcRemAccessErr);
  EXPECT_NE(wc[0].VendorError, 0u);

  kbv_event_t ev{};
  auto until = std::chrono::steady_clock::now() + 5s;
  int n = 0;
  while ((n = kbv_eq_poll(eq, &ev, 1)) == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(n, 1);
  EXPECT_EQ(ev.user_data, 11u);
  EXPECT_EQ(ev.status, KBV_SUCCESS);
  EXPECT_EQ(ev.info, static_cast<uint64_t>(IbAeWqAccessError));
  EXPECT_EQ(first.IoStatus.Status, STATUS_SUCCESS);
  EXPECT_EQ(first.IoStatus.Information, static_cast<ULONG_PTR>(IbAeWqAccessError));
  // A synchronous round trip through the device: whatever was queued before
  // it has been delivered when it returns.
  (void)hb_.link();
  EXPECT_EQ(second.count(), 0);
  // Destroying the QP completes the other one with STATUS_CANCELLED.
  IB_REQUEST s = sync_req();
  ASSERT_EQ(b_.ifc->DestroyQp(b_.qp, nullptr, &s), STATUS_SUCCESS);
  b_.qp = nullptr;
  EXPECT_EQ(second.count(), 1);
  EXPECT_EQ(second.status(), STATUS_CANCELLED);
  EXPECT_EQ(kbv_eq_destroy(eq), KBV_SUCCESS);
}

TEST_F(NtEvents, QpCallbackSeesTheEventAndEqCancelWorks) {
  ASSERT_NO_FATAL_FAILURE(connect(64));
  // Recreate b's QP with an async event callback.
  QpSeen seen;
  IB_REQUEST s = sync_req();
  ASSERT_EQ(b_.ifc->DestroyQp(b_.qp, nullptr, &s), STATUS_SUCCESS);
  IB_QP_CREATE c{};
  c.Type = IbQpTypeReliableConn;
  c.SqDepth = c.RqDepth = 8;
  c.SqSge = c.RqSge = 1;
  c.pSendCq = b_.scq;
  c.pRecvCq = b_.rcq;
  ASSERT_EQ(b_.ifc->CreateQp(b_.pd, &c, &seen, on_qp_event, nullptr, &s), STATUS_SUCCESS);
  b_.qp = reinterpret_cast<IB_QP*>(s.IoStatus.Information);
  IB_QP_MODIFY reset{};
  reset.ReqState = IbQpsReset;
  ASSERT_EQ(a_.ifc->ModifyQp(a_.qp, &reset, nullptr, &s), STATUS_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(a_.connect(b_));
  ASSERT_NO_FATAL_FAILURE(b_.connect(a_));

  // A request on a kbv event queue, cancelled there.
  kbv_eq_t eq = KBV_EQ_NONE;
  ASSERT_EQ(kbv_eq_create(8, &eq), KBV_SUCCESS);
  IB_REQUEST r;
  kbv_nt_init_request(&r, eq, 3, nullptr, nullptr);
  ASSERT_EQ(b_.ifc->GetQpAsyncEvent(b_.qp, &r), STATUS_PENDING);
  ASSERT_EQ(kbv_eq_cancel(eq, 3), KBV_SUCCESS);
  kbv_event_t ev{};
  ASSERT_EQ(kbv_eq_poll(eq, &ev, 1), 1);
  EXPECT_EQ(ev.status, KBV_ERR_CANCELLED);
  EXPECT_EQ(r.IoStatus.Status, STATUS_CANCELLED);

  IB_SGE sge{a_.buf.data(), 32, a_.mr->LKey};
  IB_SEND_WR* w = nullptr;
  auto mem = send_wr(&w, IbRdmaWrite, &sge, b_.buf.data(), b_.mr->RKey ^ 0x5500);
  ASSERT_EQ(a_.ifc->PostSend(a_.qp, w, nullptr), STATUS_SUCCESS);
  auto wc = a_.poll(a_.scq, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].Status, IbWcRemAccessErr);
  auto until = std::chrono::steady_clock::now() + 5s;
  while (seen.n.load() == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(seen.n.load(), 1);
  EXPECT_EQ(seen.last.load(), IbAeWqAccessError);
  // The cancelled request saw nothing more; with none queued, the event
  // waits for the next request, which completes inline.
  EXPECT_EQ(kbv_eq_poll(eq, &ev, 1), 0);
  Req next;
  EXPECT_EQ(b_.ifc->GetQpAsyncEvent(b_.qp, next.p()), STATUS_SUCCESS);
  EXPECT_EQ(next.r.IoStatus.Information, static_cast<ULONG_PTR>(IbAeWqAccessError));
  EXPECT_EQ(kbv_eq_destroy(eq), KBV_SUCCESS);
}

TEST_F(NtEvents, CqOverrunCompletesTheCqAsyncRequest) {
  ASSERT_NO_FATAL_FAILURE(connect(4));
  // Three queued requests (docs/NTSTATUS.md: several may be queued, one completes
  // per event, each is cancellable, the rest are cancelled when the CQ goes).
  Req async, cancelled, later;
  ASSERT_EQ(a_.ifc->GetCqAsyncEvent(a_.scq, cancelled.p()), STATUS_PENDING);
  ASSERT_EQ(a_.ifc->GetCqAsyncEvent(a_.scq, async.p()), STATUS_PENDING);
  ASSERT_EQ(a_.ifc->GetCqAsyncEvent(a_.scq, later.p()), STATUS_PENDING);
  EXPECT_EQ(kbv_nt_cancel_request(cancelled.p()), STATUS_SUCCESS);
  EXPECT_EQ(cancelled.count(), 1);
  EXPECT_EQ(cancelled.status(), STATUS_CANCELLED);
  // More signalled completions than the send CQ holds, never polled.
  const ULONG cap = a_.scq->NumCqes;
  IB_SGE sge{a_.buf.data(), 8, a_.mr->LKey};
  std::vector<std::vector<uint8_t>> mem;
  std::vector<IB_SEND_WR*> w(cap + 2);
  for (auto& x : w) mem.push_back(send_wr(&x, IbRdmaWrite, &sge, b_.buf.data(), b_.mr->RKey));
  for (size_t i = 0; i + 1 < w.size(); ++i) w[i]->pNext = w[i + 1];
  IB_SEND_WR* failed = nullptr;
  ASSERT_EQ(a_.ifc->PostSend(a_.qp, w[0], &failed), STATUS_SUCCESS);
  ASSERT_TRUE(async.wait());
  EXPECT_EQ(async.status(), STATUS_SUCCESS);
  EXPECT_EQ(async.r.IoStatus.Information, static_cast<ULONG_PTR>(IbAeCqError));
  // One event, one request: the next one still waits.
  // A synchronous round trip through the device: whatever was queued before
  // it has been delivered when it returns.
  (void)ha_.link();
  EXPECT_EQ(later.count(), 0);
  EXPECT_EQ(cancelled.count(), 1);
  // Destroying the CQ (after its QP) completes it with STATUS_CANCELLED
  // before the destroy completes.
  IB_REQUEST s = sync_req();
  ASSERT_EQ(a_.ifc->DestroyQp(a_.qp, nullptr, &s), STATUS_SUCCESS);
  a_.qp = nullptr;
  Req d;
  const NTSTATUS st = a_.ifc->DestroyCq(a_.scq, nullptr, d.p());
  a_.scq = nullptr;
  ASSERT_TRUE(st == STATUS_SUCCESS || st == STATUS_PENDING) << std::hex << st;
  EXPECT_EQ(later.count(), 1);
  EXPECT_EQ(later.status(), STATUS_CANCELLED);
  if (st == STATUS_PENDING) {
    ASSERT_TRUE(d.wait());
  }
  EXPECT_EQ(d.r.IoStatus.Status, STATUS_SUCCESS);
  EXPECT_EQ(async.count(), 1);
}

TEST_F(NtEvents, SynchronousDestroyOfAReferencedObjectIsPending) {
  ASSERT_NO_FATAL_FAILURE(connect(16));
  // The CQ is used by the QP: a synchronous destroy cannot finish now and
  // has nothing to wait on; it reports STATUS_PENDING and completes when
  // the QP is destroyed (nothing is written to the request then).
  IB_REQUEST s = sync_req();
  EXPECT_EQ(a_.ifc->DestroyCq(a_.rcq, nullptr, &s), STATUS_PENDING);
  EXPECT_EQ(s.IoStatus.Status, STATUS_PENDING);
  EXPECT_EQ(a_.ifc->DestroyCq(a_.rcq, nullptr, &s), STATUS_INVALID_HANDLE);  // already closing
  a_.rcq = nullptr;
  IB_REQUEST q = sync_req();
  EXPECT_EQ(a_.ifc->DestroyQp(a_.qp, nullptr, &q), STATUS_SUCCESS);
  a_.qp = nullptr;
  // The CA's close pends while its PD and CQ exist, and completes as they go.
  Req close;
  ASSERT_EQ(a_.ifc->CloseCa(a_.ca, nullptr, close.p()), STATUS_PENDING);
  a_.ca = nullptr;
  IB_REQUEST d = sync_req();
  EXPECT_EQ(a_.ifc->DeregMr(a_.mr, &d), STATUS_SUCCESS);
  a_.mr = nullptr;
  EXPECT_EQ(a_.ifc->DestroyCq(a_.scq, nullptr, &d), STATUS_SUCCESS);
  a_.scq = nullptr;
  EXPECT_EQ(close.count(), 0);
  EXPECT_EQ(a_.ifc->DestroyPd(a_.pd, nullptr, &d), STATUS_SUCCESS);
  a_.pd = nullptr;
  ASSERT_TRUE(close.wait());
  EXPECT_EQ(close.status(), STATUS_SUCCESS);
}

}  // namespace
}  // namespace kbv::nt_test
