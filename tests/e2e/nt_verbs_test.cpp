// SPDX-License-Identifier: BSD-3-Clause
// NT verbs interface on model HCAs: PD/CQ/QP/MR/AH verbs, pending versus
// inline completion, close when references drop, the one-at-a-time CQ
// completion request, RearmNCq rules, PollCq into IB_WC arrays, and RC
// send/receive with linked work request lists between two model HCAs.
#include <arpa/inet.h>

#include <cstring>
#include <vector>

#include "nt_fixture.hpp"

namespace kbv::nt_test {
namespace {

class NtVerbs : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(hca_.open("v"));
    ifc_ = &hca_.ifc;
    ca_ = hca_.open_ca();
    ASSERT_NE(ca_, nullptr);
    IB_REQUEST r = sync_req();
    ASSERT_EQ(ifc_->CreatePd(ca_, nullptr, &r), STATUS_SUCCESS);
    pd_ = reinterpret_cast<IB_PD*>(r.IoStatus.Information);
  }
  void TearDown() override {
    IB_REQUEST r = sync_req();
    if (pd_ != nullptr) {
      EXPECT_EQ(ifc_->DestroyPd(pd_, nullptr, &r), STATUS_SUCCESS);
    }
    if (ca_ != nullptr) {
      EXPECT_EQ(ifc_->CloseCa(ca_, nullptr, &r), STATUS_SUCCESS);
    }
  }
  IB_CQ* make_cq(ULONG n) {
    IB_REQUEST r = sync_req();
    EXPECT_EQ(ifc_->CreateCq(ca_, n, nullptr, nullptr, nullptr, nullptr, &r), STATUS_SUCCESS);
    return reinterpret_cast<IB_CQ*>(r.IoStatus.Information);
  }
  void destroy_cq(IB_CQ* cq) {
    IB_REQUEST r = sync_req();
    EXPECT_EQ(ifc_->DestroyCq(cq, nullptr, &r), STATUS_SUCCESS);
  }
  NtHca hca_;
  IB_VERBS_INTERFACE_STANDARD* ifc_ = nullptr;
  IB_CA* ca_ = nullptr;
  IB_PD* pd_ = nullptr;
};

TEST_F(NtVerbs, CreateCqPendsAndReturnsTheCqInInformation) {
  Req r;
  int ctx = 0;
  ASSERT_EQ(ifc_->CreateCq(ca_, 100, &ctx, nullptr, nullptr, nullptr, r.p()), STATUS_PENDING);
  ASSERT_TRUE(r.wait());
  ASSERT_EQ(r.status(), STATUS_SUCCESS);
  IB_CQ* cq = r.object<IB_CQ>();
  ASSERT_NE(cq, nullptr);
  EXPECT_EQ(cq->pCa, ca_);
  EXPECT_GE(cq->NumCqes, 100u);
  EXPECT_EQ(cq->Context, &ctx);
  EXPECT_EQ(ca_->nRef, 3);  // the creator's, the PD's, the CQ's
  // Argument rules.
  IB_REQUEST s = sync_req();
  EXPECT_EQ(ifc_->CreateCq(nullptr, 8, nullptr, nullptr, nullptr, nullptr, &s),
            STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(ifc_->CreateCq(ca_, 0, nullptr, nullptr, nullptr, nullptr, &s),
            STATUS_INVALID_PARAMETER_2);
  EXPECT_EQ(ifc_->CreateCq(ca_, 8, nullptr, nullptr, nullptr, nullptr, nullptr),
            STATUS_INVALID_PARAMETER_7);
  EXPECT_EQ(
      ifc_->CreateCq(reinterpret_cast<IB_CA*>(pd_), 8, nullptr, nullptr, nullptr, nullptr, &s),
      STATUS_INVALID_HANDLE);  // a PD is not a CA
  // An error return means nothing will complete: the completion routine of
  // a refused request never runs (docs/NTSTATUS.md, IRP semantics).
  Req refused;
  EXPECT_EQ(ifc_->CreateCq(ca_, 0, nullptr, nullptr, nullptr, nullptr, refused.p()),
            STATUS_INVALID_PARAMETER_2);
  Req port;
  EXPECT_EQ(ifc_->GetCaPortEvent(ca_, 9, port.p()), STATUS_IB_INVALID_PORT);
  // A refusal found later (kbv_cq_resize checks the size on the dispatch
  // thread): STATUS_PENDING, then exactly one completion carrying it.
  Req big;
  ASSERT_EQ(ifc_->ResizeCq(cq, 1u << 30, nullptr, big.p()), STATUS_PENDING);
  ASSERT_TRUE(big.wait());
  EXPECT_EQ(big.status(), kbv_status_to_ntstatus(KBV_ERR_LIMIT_EXCEEDED));
  // A synchronous round trip through the device: whatever was queued before
  // it has been delivered when it returns.
  (void)hca_.link();
  EXPECT_EQ(refused.count(), 0);
  EXPECT_EQ(port.count(), 0);
  EXPECT_EQ(big.count(), 1);
  // The same request object may not be submitted twice while pending.
  Req d;
  ASSERT_EQ(ifc_->DestroyCq(cq, nullptr, d.p()), STATUS_PENDING);
  ASSERT_TRUE(d.wait());
  EXPECT_EQ(d.status(), STATUS_SUCCESS);
  EXPECT_EQ(ca_->nRef, 2);
  EXPECT_EQ(ifc_->DestroyCq(cq, nullptr, d.p()), STATUS_INVALID_HANDLE);
}

TEST_F(NtVerbs, CancelledCreateIsTakenBack) {
  // Every request is cancellable: a create cancelled while the device works
  // on it completes with STATUS_CANCELLED, and what the device made anyway
  // is destroyed (the CA's reference goes back).
  const LONG refs = ca_->nRef;
  Req r;
  ASSERT_EQ(ifc_->CreateCq(ca_, 64, nullptr, nullptr, nullptr, nullptr, r.p()), STATUS_PENDING);
  const NTSTATUS c = kbv_nt_cancel_request(r.p());
  RecordProperty("cancel_won", c == STATUS_SUCCESS ? 1 : 0);
  ASSERT_TRUE(r.wait());
  if (c == STATUS_SUCCESS) {
    EXPECT_EQ(r.status(), STATUS_CANCELLED);
    auto until = std::chrono::steady_clock::now() + 5s;
    while (ca_->nRef != refs && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(1ms);
    }
    EXPECT_EQ(ca_->nRef, refs);
  } else {
    // The device was faster: the CQ exists and is the client's.
    EXPECT_EQ(c, STATUS_NOT_FOUND);
    ASSERT_EQ(r.status(), STATUS_SUCCESS);
    destroy_cq(r.object<IB_CQ>());
  }
  EXPECT_EQ(r.count(), 1);
}

TEST_F(NtVerbs, PollEmptyCqAndRearmNRules) {
  IB_CQ* cq = make_cq(16);
  ASSERT_NE(cq, nullptr);
  IB_WC wc[4];
  LONG n = 4;
  EXPECT_EQ(ifc_->PollCq(cq, &n, wc), STATUS_NO_MORE_ENTRIES);
  EXPECT_EQ(n, 0);
  n = 0;
  EXPECT_EQ(ifc_->PollCq(cq, &n, wc), STATUS_INVALID_PARAMETER_2);
  n = 4;
  EXPECT_EQ(ifc_->PollCq(cq, nullptr, wc), STATUS_INVALID_PARAMETER_2);
  EXPECT_EQ(ifc_->PollCq(cq, &n, nullptr), STATUS_INVALID_PARAMETER_3);
  EXPECT_EQ(ifc_->PollCq(nullptr, &n, wc), STATUS_INVALID_PARAMETER_1);
  LONG peek = -1;
  EXPECT_EQ(ifc_->PeekCq(cq, &peek), STATUS_SUCCESS);
  EXPECT_EQ(peek, 0);
  // RearmNCq: 1 <= N <= the CQ's size, else STATUS_INVALID_PARAMETER; mlx5
  // has no N-notify: STATUS_NOT_SUPPORTED.
  EXPECT_EQ(ifc_->RearmNCq(cq, 0), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(ifc_->RearmNCq(cq, cq->NumCqes + 1), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(ifc_->RearmNCq(cq, 1), STATUS_NOT_SUPPORTED);
  EXPECT_EQ(ifc_->RearmNCq(cq, cq->NumCqes), STATUS_NOT_SUPPORTED);
  EXPECT_EQ(ifc_->RearmCq(cq, FALSE), STATUS_SUCCESS);
  EXPECT_EQ(ifc_->RearmCq(cq, TRUE), STATUS_SUCCESS);
  destroy_cq(cq);
}

TEST_F(NtVerbs, ResizeCqPendsAndUpdatesTheCq) {
  IB_CQ* cq = make_cq(16);
  ASSERT_NE(cq, nullptr);
  Req r;
  ASSERT_EQ(ifc_->ResizeCq(cq, 200, nullptr, r.p()), STATUS_PENDING);
  ASSERT_TRUE(r.wait());
  ASSERT_EQ(r.status(), STATUS_SUCCESS);
  EXPECT_GE(cq->NumCqes, 200u);
  EXPECT_EQ(r.r.IoStatus.Information, cq->NumCqes);
  // RearmNCq's bound follows the new size.
  EXPECT_EQ(ifc_->RearmNCq(cq, 200), STATUS_NOT_SUPPORTED);
  IB_REQUEST s = sync_req();
  EXPECT_EQ(ifc_->ResizeCq(cq, 0, nullptr, &s), STATUS_INVALID_PARAMETER_2);
  EXPECT_EQ(ifc_->ResizeCq(cq, 8, nullptr, nullptr), STATUS_INVALID_PARAMETER_4);
  EXPECT_EQ(ifc_->ResizeCq(cq, 1u << 30, nullptr, &s),
            kbv_status_to_ntstatus(KBV_ERR_LIMIT_EXCEEDED));
  destroy_cq(cq);
}

TEST_F(NtVerbs, ModifyQpFollowsTheStateMachine) {
  IB_CQ* cq = make_cq(16);
  IB_QP_CREATE c{};
  c.Type = IbQpTypeReliableConn;
  c.SqDepth = c.RqDepth = 8;
  c.SqSge = c.RqSge = 1;
  c.pSendCq = c.pRecvCq = cq;
  IB_REQUEST s = sync_req();
  ASSERT_EQ(ifc_->CreateQp(pd_, &c, nullptr, nullptr, nullptr, &s), STATUS_SUCCESS);
  IB_QP* qp = reinterpret_cast<IB_QP*>(s.IoStatus.Information);
  IB_QP_MODIFY m{};
  m.ReqState = IbQpsRts;  // RESET -> RTS: not a transition IBTA allows
  m.state.rts.SqPsn = 1;
  EXPECT_EQ(ifc_->ModifyQp(qp, &m, nullptr, &s), STATUS_IB_INVALID_STATE);
  m = IB_QP_MODIFY{};
  m.ReqState = IbQpsInit;
  m.state.Init.PrimaryPort = 7;
  EXPECT_EQ(ifc_->ModifyQp(qp, &m, nullptr, &s), STATUS_IB_INVALID_PORT);
  m.state.Init.PrimaryPort = 1;
  m.state.Init.AccessMask = IB_AC_MW_BIND;  // kbv has no memory windows
  EXPECT_EQ(ifc_->ModifyQp(qp, &m, nullptr, &s), STATUS_INVALID_PARAMETER_2);
  m.state.Init.AccessMask = IB_AC_RDMA_READ;
  Req r;
  ASSERT_EQ(ifc_->ModifyQp(qp, &m, nullptr, r.p()), STATUS_PENDING);
  ASSERT_TRUE(r.wait());
  EXPECT_EQ(r.status(), STATUS_SUCCESS);
  IB_QP_ATTR a{};
  ASSERT_EQ(ifc_->QueryQp(qp, &a, nullptr, &s), STATUS_SUCCESS);
  EXPECT_EQ(a.State, IbQpsInit);
  EXPECT_EQ(a.AccessMask, static_cast<ULONG>(IB_AC_RDMA_READ));
  EXPECT_EQ(a.primary_port, 1u);
  m = IB_QP_MODIFY{};
  m.ReqState = IbQpsSqdDrained;  // a state the QP enters, not a target
  EXPECT_EQ(ifc_->ModifyQp(qp, &m, nullptr, &s), STATUS_INVALID_PARAMETER_2);
  m.ReqState = IbQpsError;
  ASSERT_EQ(ifc_->ModifyQp(qp, &m, nullptr, &s), STATUS_SUCCESS);
  ASSERT_EQ(ifc_->QueryQp(qp, &a, nullptr, &s), STATUS_SUCCESS);
  EXPECT_EQ(a.State, IbQpsError);
  EXPECT_EQ(ifc_->ModifyQp(qp, nullptr, nullptr, &s), STATUS_INVALID_PARAMETER_2);
  EXPECT_EQ(ifc_->QueryQp(qp, nullptr, nullptr, &s), STATUS_INVALID_PARAMETER_2);
  ASSERT_EQ(ifc_->DestroyQp(qp, nullptr, &s), STATUS_SUCCESS);
  destroy_cq(cq);
}

TEST_F(NtVerbs, OneCompletionRequestAtATime) {
  IB_CQ* cq = make_cq(16);
  Req a, b;
  ASSERT_EQ(ifc_->GetCqCompEvent(cq, a.p()), STATUS_PENDING);
  ASSERT_EQ(ifc_->GetCqCompEvent(cq, b.p()), STATUS_PENDING);
  // Queueing another completes the previous one with STATUS_CANCELLED.
  EXPECT_EQ(a.count(), 1);
  EXPECT_EQ(a.status(), STATUS_CANCELLED);
  EXPECT_EQ(b.count(), 0);
  Req async;
  ASSERT_EQ(ifc_->GetCqAsyncEvent(cq, async.p()), STATUS_PENDING);
  // Destroy: the waiting requests complete with STATUS_CANCELLED first.
  Req d;
  ASSERT_EQ(ifc_->DestroyCq(cq, nullptr, d.p()), STATUS_PENDING);
  EXPECT_EQ(b.count(), 1);
  EXPECT_EQ(b.status(), STATUS_CANCELLED);
  EXPECT_EQ(async.status(), STATUS_CANCELLED);
  ASSERT_TRUE(d.wait());
}

TEST_F(NtVerbs, DestroyCqCompletesWhenItsQpIsGone) {
  IB_CQ* cq = make_cq(16);
  IB_QP_CREATE c{};
  c.Type = IbQpTypeReliableConn;
  c.SqDepth = c.RqDepth = 8;
  c.SqSge = c.RqSge = 1;
  c.pSendCq = c.pRecvCq = cq;
  IB_REQUEST s = sync_req();
  ASSERT_EQ(ifc_->CreateQp(pd_, &c, nullptr, nullptr, nullptr, &s), STATUS_SUCCESS);
  IB_QP* qp = reinterpret_cast<IB_QP*>(s.IoStatus.Information);
  ASSERT_NE(qp, nullptr);
  EXPECT_NE(qp->Qpn, 0u);
  EXPECT_EQ(qp->pPd, pd_);
  EXPECT_EQ(qp->pSendCq, cq);
  EXPECT_EQ(qp->SqDepth, 8u);
  EXPECT_EQ(qp->Type, IbQpTypeReliableConn);
  EXPECT_EQ(cq->nRef, 3);  // its creator and the QP's two uses
  Req dcq;
  ASSERT_EQ(ifc_->DestroyCq(cq, nullptr, dcq.p()), STATUS_PENDING);
  // A synchronous round trip through the device: whatever was queued before
  // it has been delivered when it returns.
  (void)hca_.link();
  EXPECT_EQ(dcq.count(), 0);  // the QP still uses it
  Req dqp;
  ASSERT_EQ(ifc_->DestroyQp(qp, nullptr, dqp.p()), STATUS_PENDING);
  ASSERT_TRUE(dqp.wait());
  EXPECT_EQ(dqp.status(), STATUS_SUCCESS);
  ASSERT_TRUE(dcq.wait());
  EXPECT_EQ(dcq.status(), STATUS_SUCCESS);
}

TEST_F(NtVerbs, CreateQpArguments) {
  IB_CQ* cq = make_cq(16);
  IB_QP_CREATE c{};
  c.Type = IbQpTypeReliableConn;
  c.SqDepth = c.RqDepth = 8;
  c.SqSge = c.RqSge = 1;
  c.pSendCq = c.pRecvCq = cq;
  IB_REQUEST s = sync_req();
  EXPECT_EQ(ifc_->CreateQp(nullptr, &c, nullptr, nullptr, nullptr, &s), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(ifc_->CreateQp(pd_, nullptr, nullptr, nullptr, nullptr, &s),
            STATUS_INVALID_PARAMETER_2);
  EXPECT_EQ(ifc_->CreateQp(pd_, &c, nullptr, nullptr, nullptr, nullptr),
            STATUS_INVALID_PARAMETER_6);
  IB_QP_CREATE bad = c;
  bad.pSendCq = nullptr;
  EXPECT_EQ(ifc_->CreateQp(pd_, &bad, nullptr, nullptr, nullptr, &s), STATUS_INVALID_PARAMETER_2);
  bad = c;
  bad.Type = IbQpTypeQp1;
  EXPECT_EQ(ifc_->CreateQp(pd_, &bad, nullptr, nullptr, nullptr, &s), STATUS_NOT_SUPPORTED);
  bad = c;
  bad.Type = static_cast<IB_QP_TYPE>(2);  // the RFC skips RD
  EXPECT_EQ(ifc_->CreateQp(pd_, &bad, nullptr, nullptr, nullptr, &s), STATUS_INVALID_PARAMETER_2);
  bad = c;
  bad.SqDepth = 1u << 30;  // above the device's limit: the kbv error, mapped
  EXPECT_EQ(ifc_->CreateQp(pd_, &bad, nullptr, nullptr, nullptr, &s),
            kbv_status_to_ntstatus(KBV_ERR_LIMIT_EXCEEDED));
  EXPECT_EQ(ifc_->CreateSpecialQp(pd_, 1, &c, nullptr, nullptr, &s), STATUS_NOT_SUPPORTED);
  destroy_cq(cq);
}

TEST_F(NtVerbs, MemoryRegistrationFromMdls) {
  std::vector<uint8_t> buf(8192);
  MDL second{nullptr, buf.data(), 4096, 4096};
  MDL first{&second, buf.data(), 0, 4096};
  Req r;
  ASSERT_EQ(ifc_->RegMdl(pd_, &first, IB_AC_LOCAL_WRITE | IB_AC_RDMA_WRITE, r.p()), STATUS_PENDING);
  ASSERT_TRUE(r.wait());
  ASSERT_EQ(r.status(), STATUS_SUCCESS);
  IB_MR* mr = r.object<IB_MR>();
  EXPECT_EQ(mr->pPd, pd_);
  EXPECT_EQ(mr->pLocalStart, buf.data());
  EXPECT_EQ(mr->pLocalEnd, buf.data() + buf.size());
  EXPECT_NE(mr->LKey, 0u);
  EXPECT_EQ(mr->u.pMdlList, &first);
  EXPECT_EQ(pd_->nRef, 2);
  IB_REQUEST s = sync_req();
  MDL gap{nullptr, buf.data(), 4100, 10};
  MDL head{&gap, buf.data(), 0, 4096};
  EXPECT_EQ(ifc_->RegMdl(pd_, &head, IB_AC_LOCAL_WRITE, &s), STATUS_INVALID_PARAMETER_2);
  EXPECT_EQ(ifc_->RegMdl(pd_, nullptr, IB_AC_LOCAL_WRITE, &s), STATUS_INVALID_PARAMETER_2);
  EXPECT_EQ(ifc_->RegMdl(pd_, &first, 0x100, &s), STATUS_INVALID_PARAMETER_3);
  EXPECT_EQ(ifc_->RegMdl(pd_, &first, IB_AC_LOCAL_WRITE, nullptr), STATUS_INVALID_PARAMETER_4);
  // Remote write without local write: kbv refuses (IBTA 10.6.3.1).
  EXPECT_EQ(ifc_->RegMdl(pd_, &first, IB_AC_RDMA_WRITE, &s), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(ifc_->GetDmaMr(pd_, IB_AC_LOCAL_WRITE, &s), STATUS_NOT_SUPPORTED);
  EXPECT_EQ(ifc_->CreateMw(pd_, nullptr, &s), STATUS_NOT_SUPPORTED);
  // Deregistration cannot fail and returns the MDL list.
  Req d;
  ASSERT_EQ(ifc_->DeregMr(mr, d.p()), STATUS_PENDING);
  ASSERT_TRUE(d.wait());
  EXPECT_EQ(d.status(), STATUS_SUCCESS);
  EXPECT_EQ(d.r.IoStatus.Information, reinterpret_cast<ULONG_PTR>(&first));
  EXPECT_EQ(pd_->nRef, 1);
}

TEST_F(NtVerbs, AddressHandles) {
  IB_PORT_ATTR pa[16];
  IB_REQUEST s = sync_req();
  ASSERT_EQ(ifc_->QueryPort(ifc_->Context, 1, sizeof(pa), pa, &s), STATUS_SUCCESS);
  IB_AH_ATTR av{};
  av.PortNumber = 1;
  av.Flags = IB_AH_FLAG_GRH;
  av.Grh.HopLimit = 64;
  std::memcpy(&av.Grh.DGid, reinterpret_cast<uint8_t*>(pa) + pa[0].GidTblOffset, 16);
  IB_AH* ah = nullptr;
  ASSERT_EQ(ifc_->CreateAh(pd_, &av, &ah), STATUS_SUCCESS);
  ASSERT_NE(ah, nullptr);
  EXPECT_EQ(ah->pPd, pd_);
  IB_AH_ATTR q{};
  ASSERT_EQ(ifc_->QueryAh(ah, &q), STATUS_SUCCESS);
  EXPECT_EQ(std::memcmp(&q.Grh.DGid, &av.Grh.DGid, 16), 0);
  IB_AH_ATTR m = av;
  m.SvcLvl = 3;
  ASSERT_EQ(ifc_->ModifyAh(ah, &m), STATUS_SUCCESS);
  ASSERT_EQ(ifc_->QueryAh(ah, &q), STATUS_SUCCESS);
  EXPECT_EQ(q.SvcLvl, 3);
  // The RFC's codes: _1 an invalid port, _2 an invalid source GID.
  IB_AH_ATTR bad = av;
  bad.PortNumber = 2;
  IB_AH* other = nullptr;
  EXPECT_EQ(ifc_->CreateAh(pd_, &bad, &other), STATUS_INVALID_PARAMETER_1);
  bad = av;
  std::memset(&bad.Grh.SGid, 0x5a, 16);
  EXPECT_EQ(ifc_->CreateAh(pd_, &bad, &other), STATUS_INVALID_PARAMETER_2);
  EXPECT_EQ(ifc_->ModifyAh(ah, &bad), STATUS_INVALID_PARAMETER_2);
  EXPECT_EQ(ifc_->CreateAh(pd_, &av, nullptr), STATUS_INVALID_PARAMETER_3);
  EXPECT_EQ(ifc_->DestroyAh(ah), STATUS_SUCCESS);
  EXPECT_EQ(ifc_->DestroyAh(ah), STATUS_INVALID_HANDLE);
  EXPECT_EQ(ifc_->QueryAh(ah, &q), STATUS_INVALID_HANDLE);
}

// ---- two model HCAs, RC -------------------------------------------------------------

struct CompSeen {
  std::atomic<int> n{0};
};
VOID on_comp(IB_CQ*, VOID* ctx) { ++static_cast<CompSeen*>(ctx)->n; }

class NtRc : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ha_.open("ra"));
    ASSERT_NO_FATAL_FAILURE(hb_.open("rb"));
    ASSERT_NO_FATAL_FAILURE(a_.create(ha_));
    ASSERT_NO_FATAL_FAILURE(b_.create(hb_));
    ASSERT_NO_FATAL_FAILURE(a_.connect(b_));
    ASSERT_NO_FATAL_FAILURE(b_.connect(a_));
  }
  void TearDown() override {
    a_.destroy();
    b_.destroy();
  }
  NtHca ha_, hb_;
  Endpoint a_, b_;
};

TEST_F(NtRc, SendReceiveLinkedListsAndWcArrays) {
  IB_REQUEST s = sync_req();
  IB_QP_ATTR qa{};
  ASSERT_EQ(a_.ifc->QueryQp(a_.qp, &qa, nullptr, &s), STATUS_SUCCESS);
  EXPECT_EQ(qa.State, IbQpsRts);
  EXPECT_EQ(qa.DestQpNum, b_.qp->Qpn);

  // Three receives on b, linked.
  constexpr int kMsgs = 3;
  constexpr ULONG kLen = 256;
  IB_SGE rsge[kMsgs];
  std::vector<std::vector<uint8_t>> rmem(kMsgs);
  std::vector<IB_RECV_WR*> rwr(kMsgs);
  for (int i = 0; i < kMsgs; ++i) {
    rsge[i] = {b_.buf.data() + i * kLen, kLen, b_.mr->LKey};
    rmem[i].resize(IB_RECV_WR_SIZE(1));
    rwr[i] = reinterpret_cast<IB_RECV_WR*>(rmem[i].data());
    rwr[i]->WrId = 100 + i;
    rwr[i]->SgeCount = 1;
    rwr[i]->Sge[0] = &rsge[i];
    rwr[i]->pNext = i + 1 < kMsgs ? nullptr : nullptr;
  }
  for (int i = 0; i + 1 < kMsgs; ++i) rwr[i]->pNext = rwr[i + 1];
  IB_RECV_WR* failed_r = nullptr;
  ASSERT_EQ(b_.ifc->PostRecv(b_.qp, rwr[0], &failed_r), STATUS_SUCCESS);

  // Arm b's receive CQ: a completion notification request and a callback.
  Req comp;
  ASSERT_EQ(b_.ifc->GetCqCompEvent(b_.rcq, comp.p()), STATUS_PENDING);
  ASSERT_EQ(b_.ifc->RearmCq(b_.rcq, FALSE), STATUS_SUCCESS);

  // Three sends from a, linked; the last one with immediate data.
  IB_SGE ssge[kMsgs];
  std::vector<std::vector<uint8_t>> smem(kMsgs);
  std::vector<IB_SEND_WR*> swr(kMsgs);
  for (int i = 0; i < kMsgs; ++i) {
    uint8_t* p = a_.buf.data() + i * kLen;
    for (ULONG k = 0; k < kLen; ++k) p[k] = static_cast<uint8_t>(i * 31 + k);
    ssge[i] = {p, kLen, a_.mr->LKey};
    smem[i].assign(IB_SEND_WR_SIZE(1), 0);
    swr[i] = reinterpret_cast<IB_SEND_WR*>(smem[i].data());
    swr[i]->WrId = 200 + i;
    swr[i]->Type = IbSend;
    swr[i]->Flags = IB_WR_FLAG_SIGNALED;
    swr[i]->SgeCount = 1;
    swr[i]->Sge[0] = &ssge[i];
  }
  swr[2]->Flags |= IB_WR_FLAG_IMMEDIATE;
  swr[2]->ImmediateData = htonl(0xabcd0123);
  for (int i = 0; i + 1 < kMsgs; ++i) swr[i]->pNext = swr[i + 1];
  IB_SEND_WR* failed = nullptr;
  ASSERT_EQ(a_.ifc->PostSend(a_.qp, swr[0], &failed), STATUS_SUCCESS);

  auto sent = a_.poll(a_.scq, kMsgs);
  ASSERT_EQ(sent.size(), static_cast<size_t>(kMsgs));
  for (int i = 0; i < kMsgs; ++i) {
    EXPECT_EQ(sent[i].Status, IbWcSuccess);
    EXPECT_EQ(sent[i].WrId, 200u + i);
    EXPECT_EQ(sent[i].Type, IbSend);
    EXPECT_EQ(sent[i].hQp, a_.qp);
  }
  ASSERT_TRUE(comp.wait());
  EXPECT_EQ(comp.status(), STATUS_SUCCESS);
  LONG avail = 0;
  auto until = std::chrono::steady_clock::now() + 5s;
  while (avail < kMsgs && std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(b_.ifc->PeekCq(b_.rcq, &avail), STATUS_SUCCESS);
  }
  EXPECT_EQ(avail, kMsgs);
  auto got = b_.poll(b_.rcq, kMsgs);
  ASSERT_EQ(got.size(), static_cast<size_t>(kMsgs));
  for (int i = 0; i < kMsgs; ++i) {
    EXPECT_EQ(got[i].Status, IbWcSuccess);
    EXPECT_EQ(got[i].WrId, 100u + i);
    EXPECT_NE(got[i].Type & IbRecv, 0);
    EXPECT_EQ(got[i].Length, kLen);
    EXPECT_EQ(got[i].hQp, b_.qp);
    EXPECT_EQ(std::memcmp(b_.buf.data() + i * kLen, a_.buf.data() + i * kLen, kLen), 0);
  }
  EXPECT_EQ(got[2].Flags & IB_WC_FLAG_IMMEDIATE, static_cast<ULONG>(IB_WC_FLAG_IMMEDIATE));
  EXPECT_EQ(ntohl(got[2].ImmediateData), 0xabcd0123u);
  IB_WC wc[2];
  LONG n = 2;
  EXPECT_EQ(b_.ifc->PollCq(b_.rcq, &n, wc), STATUS_NO_MORE_ENTRIES);
  EXPECT_EQ(n, 0);
}

TEST_F(NtRc, PostSendReturnsTheFailedWorkRequest) {
  IB_SGE sge{a_.buf.data(), 16, a_.mr->LKey};
  std::vector<std::vector<uint8_t>> mem(3, std::vector<uint8_t>(IB_SEND_WR_SIZE(1), 0));
  IB_SEND_WR* w[3];
  for (int i = 0; i < 3; ++i) {
    w[i] = reinterpret_cast<IB_SEND_WR*>(mem[i].data());
    w[i]->WrId = i;
    w[i]->Type = IbRdmaWrite;
    w[i]->Flags = IB_WR_FLAG_SIGNALED;
    w[i]->SgeCount = 1;
    w[i]->Sge[0] = &sge;
    w[i]->u.Rdma.Address = b_.buf.data() + 1024;
    w[i]->u.Rdma.RKey = b_.mr->RKey;
  }
  w[0]->pNext = w[1];
  w[1]->pNext = w[2];
  w[1]->Type = IbBindMw;  // not a send work request type
  IB_SEND_WR* failed = nullptr;
  EXPECT_EQ(a_.ifc->PostSend(a_.qp, w[0], &failed), STATUS_IB_INVALID_WR_TYPE);
  EXPECT_EQ(failed, w[1]);
  // The ones before it were posted: one write completes.
  auto done = a_.poll(a_.scq, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].WrId, 0u);
  EXPECT_EQ(done[0].Type, IbRdmaWrite);
  EXPECT_EQ(done[0].Status, IbWcSuccess);
  EXPECT_EQ(std::memcmp(b_.buf.data() + 1024, a_.buf.data(), 16), 0);
  // A list without ppFailedSend, and no list at all.
  EXPECT_EQ(a_.ifc->PostSend(a_.qp, w[0], nullptr), STATUS_INVALID_PARAMETER_3);
  EXPECT_EQ(a_.ifc->PostSend(a_.qp, nullptr, &failed), STATUS_INVALID_PARAMETER);
}

// PostRecv walks its list like PostSend: a WR with a missing SGE stops it,
// comes back in ppFailedRecv, and the WR before it was posted (a SEND lands
// in it).
TEST_F(NtRc, PostRecvReturnsTheFailedWorkRequest) {
  IB_SGE rsge{b_.buf.data() + 2048, 64, b_.mr->LKey};
  std::vector<std::vector<uint8_t>> mem(3, std::vector<uint8_t>(IB_RECV_WR_SIZE(1), 0));
  IB_RECV_WR* w[3];
  for (int i = 0; i < 3; ++i) {
    w[i] = reinterpret_cast<IB_RECV_WR*>(mem[i].data());
    w[i]->WrId = 300 + i;
    w[i]->SgeCount = 1;
    w[i]->Sge[0] = &rsge;
  }
  w[0]->pNext = w[1];
  w[1]->pNext = w[2];
  w[1]->Sge[0] = nullptr;
  IB_RECV_WR* failed = nullptr;
  EXPECT_EQ(b_.ifc->PostRecv(b_.qp, w[0], &failed), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(failed, w[1]);
  EXPECT_EQ(b_.ifc->PostRecv(b_.qp, w[0], nullptr), STATUS_INVALID_PARAMETER_3);
  // One SEND from a: it takes the one receive that was posted.
  for (int k = 0; k < 32; ++k) a_.buf[k] = static_cast<uint8_t>(0xA0 + k);
  IB_SGE ssge{a_.buf.data(), 32, a_.mr->LKey};
  std::vector<uint8_t> sm(IB_SEND_WR_SIZE(1), 0);
  auto* sw = reinterpret_cast<IB_SEND_WR*>(sm.data());
  sw->WrId = 9;
  sw->Type = IbSend;
  sw->Flags = IB_WR_FLAG_SIGNALED;
  sw->SgeCount = 1;
  sw->Sge[0] = &ssge;
  IB_SEND_WR* sfailed = nullptr;
  ASSERT_EQ(a_.ifc->PostSend(a_.qp, sw, &sfailed), STATUS_SUCCESS);
  auto got = b_.poll(b_.rcq, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].Status, IbWcSuccess);
  EXPECT_EQ(got[0].WrId, 300u);
  EXPECT_EQ(got[0].Length, 32u);
  EXPECT_EQ(std::memcmp(b_.buf.data() + 2048, a_.buf.data(), 32), 0);
}

TEST_F(NtRc, CompletionCallbackAndInlineSuccessAfterAnEvent) {
  CompSeen seen;
  IB_REQUEST s = sync_req();
  ASSERT_EQ(b_.ifc->CreateCq(b_.ca, 16, &seen, on_comp, nullptr, nullptr, &s), STATUS_SUCCESS);
  IB_CQ* cq = reinterpret_cast<IB_CQ*>(s.IoStatus.Information);
  // Replace b's QP by one whose receives complete on cq.
  IB_QP_CREATE c{};
  c.Type = IbQpTypeReliableConn;
  c.SqDepth = c.RqDepth = 8;
  c.SqSge = c.RqSge = 1;
  c.pSendCq = b_.scq;
  c.pRecvCq = cq;
  ASSERT_EQ(b_.ifc->DestroyQp(b_.qp, nullptr, &s), STATUS_SUCCESS);
  ASSERT_EQ(b_.ifc->CreateQp(b_.pd, &c, nullptr, nullptr, nullptr, &s), STATUS_SUCCESS);
  b_.qp = reinterpret_cast<IB_QP*>(s.IoStatus.Information);
  // a's QP is connected to the old QPN: reconnect both from RESET.
  IB_QP_MODIFY reset{};
  reset.ReqState = IbQpsReset;
  ASSERT_EQ(a_.ifc->ModifyQp(a_.qp, &reset, nullptr, &s), STATUS_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(a_.connect(b_));
  ASSERT_NO_FATAL_FAILURE(b_.connect(a_));

  IB_SGE rs{b_.buf.data(), 64, b_.mr->LKey};
  std::vector<uint8_t> rm(IB_RECV_WR_SIZE(1), 0);
  auto* rw = reinterpret_cast<IB_RECV_WR*>(rm.data());
  rw->SgeCount = 1;
  rw->Sge[0] = &rs;
  ASSERT_EQ(b_.ifc->PostRecv(b_.qp, rw, nullptr), STATUS_SUCCESS);
  ASSERT_EQ(b_.ifc->RearmCq(cq, FALSE), STATUS_SUCCESS);
  IB_SGE ss{a_.buf.data(), 64, a_.mr->LKey};
  std::vector<uint8_t> sm(IB_SEND_WR_SIZE(1), 0);
  auto* sw = reinterpret_cast<IB_SEND_WR*>(sm.data());
  sw->Type = IbSend;
  sw->SgeCount = 1;
  sw->Sge[0] = &ss;
  ASSERT_EQ(a_.ifc->PostSend(a_.qp, sw, nullptr), STATUS_SUCCESS);
  auto until = std::chrono::steady_clock::now() + 5s;
  while (seen.n.load() == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(seen.n.load(), 1);  // the CQ's completion callback ran
  // No request was waiting when it fired: the next one completes inline.
  Req r;
  EXPECT_EQ(b_.ifc->GetCqCompEvent(cq, r.p()), STATUS_SUCCESS);
  EXPECT_EQ(r.count(), 0);
  auto got = b_.poll(cq, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].Status, IbWcSuccess);
  ASSERT_EQ(b_.ifc->DestroyQp(b_.qp, nullptr, &s), STATUS_SUCCESS);
  b_.qp = nullptr;
  ASSERT_EQ(b_.ifc->DestroyCq(cq, nullptr, &s), STATUS_SUCCESS);
}

// ---- two model HCAs, UD ------------------------------------------------------------

TEST(NtUd, DatagramThroughAnAddressHandle) {
  NtHca ha, hb;
  ASSERT_NO_FATAL_FAILURE(ha.open("ua"));
  ASSERT_NO_FATAL_FAILURE(hb.open("ub"));
  Endpoint a, b;
  ASSERT_NO_FATAL_FAILURE(a.create(ha));
  ASSERT_NO_FATAL_FAILURE(b.create(hb));
  IB_REQUEST s = sync_req();
  // Replace the RC QPs by UD QPs.
  IB_QP_CREATE c{};
  c.Type = IbQpTypeUnreliableDgrm;
  c.SqDepth = c.RqDepth = 8;
  c.SqSge = c.RqSge = 1;
  c.SqSignaled = TRUE;
  for (Endpoint* e : {&a, &b}) {
    ASSERT_EQ(e->ifc->DestroyQp(e->qp, nullptr, &s), STATUS_SUCCESS);
    c.pSendCq = e->scq;
    c.pRecvCq = e->rcq;
    ASSERT_EQ(e->ifc->CreateQp(e->pd, &c, nullptr, nullptr, nullptr, &s), STATUS_SUCCESS);
    e->qp = reinterpret_cast<IB_QP*>(s.IoStatus.Information);
    IB_QP_MODIFY m{};
    m.ReqState = IbQpsInit;
    m.state.Init.PrimaryPort = 1;
    m.state.Init.Qkey = 0x11111111;
    ASSERT_EQ(e->ifc->ModifyQp(e->qp, &m, nullptr, &s), STATUS_SUCCESS);
    m = IB_QP_MODIFY{};
    m.ReqState = IbQpsRtr;
    ASSERT_EQ(e->ifc->ModifyQp(e->qp, &m, nullptr, &s), STATUS_SUCCESS);
    m = IB_QP_MODIFY{};
    m.ReqState = IbQpsRts;
    m.state.rts.SqPsn = 7;
    ASSERT_EQ(e->ifc->ModifyQp(e->qp, &m, nullptr, &s), STATUS_SUCCESS);
  }
  // b receives into a buffer with room for the 40-byte GRH.
  constexpr ULONG kLen = 100;
  IB_SGE rs{b.buf.data(), 40 + kLen, b.mr->LKey};
  std::vector<uint8_t> rm(IB_RECV_WR_SIZE(1), 0);
  auto* rw = reinterpret_cast<IB_RECV_WR*>(rm.data());
  rw->WrId = 9;
  rw->SgeCount = 1;
  rw->Sge[0] = &rs;
  ASSERT_EQ(b.ifc->PostRecv(b.qp, rw, nullptr), STATUS_SUCCESS);
  // a addresses b by its GID.
  IB_AH_ATTR av{};
  av.PortNumber = 1;
  av.Flags = IB_AH_FLAG_GRH;
  av.Grh.HopLimit = 64;
  av.Grh.DGid = b.gid;
  IB_AH* ah = nullptr;
  ASSERT_EQ(a.ifc->CreateAh(a.pd, &av, &ah), STATUS_SUCCESS);
  for (ULONG k = 0; k < kLen; ++k) a.buf[k] = static_cast<uint8_t>(0xc0 ^ k);
  IB_SGE ss{a.buf.data(), kLen, a.mr->LKey};
  std::vector<uint8_t> sm(IB_SEND_WR_SIZE(1), 0);
  auto* sw = reinterpret_cast<IB_SEND_WR*>(sm.data());
  sw->WrId = 8;
  sw->Type = IbSend;
  sw->SgeCount = 1;
  sw->Sge[0] = &ss;
  sw->u.Ud.pAh = ah;
  sw->u.Ud.RemoteQpn = b.qp->Qpn;
  sw->u.Ud.RemoteQkey = 0x11111111;
  ASSERT_EQ(a.ifc->PostSend(a.qp, sw, nullptr), STATUS_SUCCESS);
  auto sent = a.poll(a.scq, 1);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].Status, IbWcSuccess);
  auto got = b.poll(b.rcq, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].Status, IbWcSuccess);
  EXPECT_EQ(got[0].WrId, 9u);
  EXPECT_EQ(got[0].Length, 40 + kLen);
  EXPECT_NE(got[0].Flags & IB_WC_FLAG_GRH, 0u);
  EXPECT_EQ(got[0].Ud.RemoteQp, a.qp->Qpn);
  EXPECT_EQ(std::memcmp(b.buf.data() + 40, a.buf.data(), kLen), 0);
  // A destroyed AH is not an address any more.
  ASSERT_EQ(a.ifc->DestroyAh(ah), STATUS_SUCCESS);
  IB_SEND_WR* failed = nullptr;
  EXPECT_EQ(a.ifc->PostSend(a.qp, sw, &failed), STATUS_INVALID_HANDLE);
  EXPECT_EQ(failed, sw);
  a.destroy();
  b.destroy();
}

}  // namespace
}  // namespace kbv::nt_test
