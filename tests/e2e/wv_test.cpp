// SPDX-License-Identifier: BSD-3-Clause
//
// End to end: WinVerbs (kbv/compat/winverbs.h) between two model HCAs in
// this process — devices by GUID (QueryDeviceList, OpenDevice, a GUID the
// provider does not hold), an RC ping-pong with RDMA WRITE / READ and a
// linked WV_SEND_REQUEST list with a failed request handed back, a UD
// exchange through an address handle, OVERLAPPED requests (pending then
// completed, polled, cancelled, failed, hEvent refused), a CQ error request
// completed by a CQ overrun, two devices sharing one CA, port events on
// IWVDevice::Notify, the provider's pre/post hooks with ci_umv_buf_t, COM
// reference counting and the status table.
#include <arpa/inet.h>
#include <endian.h>
#include <gtest/gtest.h>
#include <kbv/compat/winverbs.h>
#include <kbv/kbv.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sim/model.hpp"

namespace kbv::wv_test {
namespace {

using namespace std::chrono_literals;

std::string unique_name(const char* tag) {
  static std::atomic<int> n{0};
  return std::string("wv") + tag + std::to_string(getpid() % 100000) + "_" +
         std::to_string(n.fetch_add(1));
}

// Waits (polling, bounded) for a request; cancels it through obj on timeout.
HRESULT wait_ov(IWVOverlapped* obj, OVERLAPPED* ov) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  HRESULT hr;
  while ((hr = obj->GetOverlappedResult(ov, nullptr, 0)) == WV_PENDING &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(50us);
  if (hr == WV_PENDING) {
    obj->CancelOverlappedRequests();
    ADD_FAILURE() << "request never completed";
  }
  return hr;
}

struct End {
  std::unique_ptr<sim::Model> model;
  NET64 guid = 0;
  IWVDevice* dev = nullptr;
  IWVProtectionDomain* pd = nullptr;
  IWVCompletionQueue* cq = nullptr;
  IWVConnectQueuePair* rc = nullptr;
  IWVDatagramQueuePair* ud = nullptr;
  IWVAddressHandle* ah = nullptr;
  ULONG_PTR ah_key = 0;
  WV_MEMORY_KEYS keys{};
  WV_GID gid{};
  uint32_t qpn = 0;
  int tag = 0;  // the QPs' Context points here
  std::vector<uint8_t> buf = std::vector<uint8_t>(16384);

  WV_SGE sge(size_t off, uint32_t len) { return WV_SGE{buf.data() + off, len, keys.Lkey}; }

  // Completions until `want` came (Poll; between polls a CQ Notify request
  // is waited for, so no completion is missed).
  std::vector<WV_COMPLETION> reap(size_t want) {
    std::vector<WV_COMPLETION> got;
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (got.size() < want && std::chrono::steady_clock::now() < until) {
      WV_COMPLETION c[4];
      SIZE_T n = cq->Poll(c, 4);
      got.insert(got.end(), c, c + n);
      if (n) continue;
      OVERLAPPED ov{};
      EXPECT_EQ(cq->Notify(WvCqNextCompletion, &ov), WV_IO_PENDING);
      n = cq->Poll(c, 4);  // one that came before the arm
      got.insert(got.end(), c, c + n);
      if (n) cq->CancelOverlappedRequests();
      const HRESULT hr = wait_ov(cq, &ov);
      EXPECT_TRUE(hr == WV_SUCCESS || (n && hr == WV_CANCELLED)) << kbv_wv_status_str(hr);
    }
    return got;
  }

  template <class T>
  static void drop(T*& p) {
    if (p) p->Release();
    p = nullptr;
  }
  void release() {
    drop(rc);
    drop(ud);
    drop(ah);
    drop(cq);
    if (pd && keys.Lkey) {
      EXPECT_EQ(pd->DeregisterMemory(keys.Lkey, nullptr), WV_SUCCESS);
    }
    drop(pd);
    drop(dev);
  }
};

class Wv : public ::testing::Test {
 protected:
  void SetUp() override {
    for (End* e : {&a_, &b_}) {
      auto m = sim::Model::create(unique_name(e == &a_ ? "a" : "b"));
      ASSERT_TRUE(m.has_value()) << m.status().to_string();
      e->model = std::move(*m);
    }
  }
  void TearDown() override {
    a_.release();
    b_.release();
    if (prov_) {
      EXPECT_EQ(prov_->Release(), 0u);
    }
  }

  // The provider over both models (hooks: the pre/post table or NULL), each
  // device opened by its GUID with a PD, a CQ and a registered buffer.
  void open(const kbv_wv_verbs_t* hooks = nullptr) {
    const std::string ua = "sim:" + a_.model->name(), ub = "sim:" + b_.model->name();
    const char* uris[] = {ua.c_str(), ub.c_str()};
    ASSERT_EQ(kbv_wv_open_provider(uris, 2, hooks, &prov_), WV_SUCCESS);
    SIZE_T size = 0;
    ASSERT_EQ(prov_->QueryDeviceList(nullptr, &size), WV_BUFFER_OVERFLOW);
    ASSERT_EQ(size, 2 * sizeof(NET64));
    NET64 guids[2];
    ASSERT_EQ(prov_->QueryDeviceList(guids, &size), WV_SUCCESS);
    a_.guid = guids[0];
    b_.guid = guids[1];
    for (End* e : {&a_, &b_}) {
      ASSERT_EQ(prov_->OpenDevice(e->guid, &e->dev), WV_SUCCESS);
      WV_PORT_ATTRIBUTES pa{};
      const auto until = std::chrono::steady_clock::now() + 5s;
      do {
        ASSERT_EQ(e->dev->QueryPort(1, &pa), WV_SUCCESS);
        if (pa.State != WvPortActive) std::this_thread::sleep_for(1ms);
      } while (pa.State != WvPortActive && std::chrono::steady_clock::now() < until);
      ASSERT_EQ(pa.State, WvPortActive);
      ASSERT_EQ(e->dev->QueryGid(1, 0, &e->gid), WV_SUCCESS);
      if (hooks) continue;
      ASSERT_EQ(e->dev->AllocateProtectionDomain(&e->pd), WV_SUCCESS);
      SIZE_T entries = 60;
      ASSERT_EQ(e->dev->CreateCompletionQueue(&entries, &e->cq), WV_SUCCESS);
      EXPECT_EQ(entries, 64u);  // rounded up to 2^n
      OVERLAPPED ov{};
      ASSERT_EQ(e->pd->RegisterMemory(
                    e->buf.data(), e->buf.size(),
                    WV_ACCESS_LOCAL_WRITE | WV_ACCESS_REMOTE_WRITE | WV_ACCESS_REMOTE_READ, &ov,
                    &e->keys),
                WV_SUCCESS);
      EXPECT_EQ(e->pd->GetOverlappedResult(&ov, nullptr, 0), WV_SUCCESS);  // completed inline
    }
  }

  WV_QP_CREATE qp_create(End& e, WV_QP_TYPE type) {
    WV_QP_CREATE c{};
    c.pSendCq = e.cq;
    c.pReceiveCq = e.cq;
    c.Context = &e.tag;
    c.SendDepth = 16;
    c.SendSge = 2;
    c.ReceiveDepth = 16;
    c.ReceiveSge = 2;
    c.InitiatorDepth = 1;
    c.ResponderResources = 1;
    c.QpType = type;
    c.QpFlags = WV_QP_SIGNAL_SENDS;
    return c;
  }

  // RESET -> INIT -> RTR -> RTS towards peer (the RTR with an OVERLAPPED).
  void connect(End& e, IWVQueuePair* qp, const End& peer, bool rc) {
    WV_QP_ATTRIBUTES a{};
    a.QpState = WvQpStateInit;
    a.AddressVector.PortNumber = 1;
    a.Qkey = htonl(0x11111111);
    a.AccessFlags = WV_ACCESS_REMOTE_WRITE | WV_ACCESS_REMOTE_READ | WV_ACCESS_LOCAL_WRITE;
    ASSERT_EQ(qp->Modify(&a, WV_QP_ATTR_STATE, nullptr), WV_SUCCESS);
    a = WV_QP_ATTRIBUTES{};
    a.QpState = WvQpStateRtr;
    if (rc) {
      a.ReceivePsn = htonl(100);
      a.DestinationQpn = htonl(peer.qpn);
      a.AddressVector.Route.Valid = 1;
      a.AddressVector.Route.HopLimit = 64;
      a.AddressVector.Route.DGid = peer.gid;
      a.AddressVector.PortNumber = 1;
      a.PathMtu = 1024;
      a.ResponderResources = 1;
      a.RnrNakTimeout = 12;
    }
    OVERLAPPED ov{};
    ASSERT_EQ(qp->Modify(&a, WV_QP_ATTR_STATE, &ov), WV_SUCCESS);
    EXPECT_EQ(qp->GetOverlappedResult(&ov, nullptr, 1), WV_SUCCESS);
    a = WV_QP_ATTRIBUTES{};
    a.QpState = WvQpStateRts;
    a.SendPsn = htonl(100);
    a.SequenceErrorRetryCount = 7;
    a.RnrRetryCount = 7;
    a.LocalAckTimeout = 14;
    a.InitiatorDepth = 1;
    ASSERT_EQ(qp->Modify(&a, WV_QP_ATTR_STATE, nullptr), WV_SUCCESS);
    WV_QP_ATTRIBUTES q{};
    ASSERT_EQ(qp->Query(&q), WV_SUCCESS);
    EXPECT_EQ(q.QpState, WvQpStateRts);
    EXPECT_EQ(ntohl(q.Qpn), e.qpn);
    EXPECT_EQ(q.pReceiveCq, e.cq);
    if (rc) {
      EXPECT_EQ(ntohl(q.DestinationQpn), peer.qpn);
      EXPECT_EQ(q.PathMtu, 1024u);
    }
  }

  void make_rc(End& e) {
    WV_QP_CREATE c = qp_create(e, WvQpTypeRc);
    ASSERT_EQ(e.pd->CreateConnectQueuePair(&c, &e.rc), WV_SUCCESS);
    WV_QP_ATTRIBUTES q{};
    ASSERT_EQ(e.rc->Query(&q), WV_SUCCESS);
    EXPECT_EQ(q.QpState, WvQpStateReset);
    e.qpn = ntohl(q.Qpn);
  }

  IWVProvider* prov_ = nullptr;
  End a_, b_;
};

TEST_F(Wv, DevicesByGuidAndTheirTables) {
  ASSERT_NO_FATAL_FAILURE(open());
  EXPECT_NE(a_.guid, b_.guid);
  WV_DEVICE_ATTRIBUTES da{};
  ASSERT_EQ(a_.dev->Query(&da), WV_SUCCESS);
  EXPECT_EQ(da.NodeGuid, a_.guid);
  EXPECT_EQ(da.VendorId, 0x15b3u);
  EXPECT_EQ(da.PhysPortCount, 1);
  EXPECT_GE(da.MaxPkeys, 1u);
  ASSERT_EQ(prov_->QueryDevice(b_.guid, &da), WV_SUCCESS);
  EXPECT_EQ(da.NodeGuid, b_.guid);

  // A GID and a P_Key table entry, found back by value.
  DWORD gi = 99;
  ASSERT_EQ(a_.dev->FindGid(1, &a_.gid, &gi), WV_SUCCESS);
  EXPECT_EQ(gi, 0u);
  ASSERT_EQ(a_.model->set_pkey(3, 0x8123), KBV_SUCCESS);
  NET16 pk = 0;
  ASSERT_EQ(a_.dev->QueryPkey(1, 0, &pk), WV_SUCCESS);
  EXPECT_EQ(ntohs(pk), 0xffff);
  ASSERT_EQ(a_.dev->QueryPkey(1, 3, &pk), WV_SUCCESS);
  EXPECT_EQ(ntohs(pk), 0x8123);
  UINT16 pi = 0;
  ASSERT_EQ(a_.dev->FindPkey(1, htons(0x8123), &pi), WV_SUCCESS);
  EXPECT_EQ(pi, 3);
  EXPECT_EQ(a_.dev->QueryPort(2, nullptr), WV_INVALID_PARAMETER);
  WV_PORT_ATTRIBUTES pa{};
  EXPECT_EQ(a_.dev->QueryPort(2, &pa), WV_INVALID_PARAMETER);

  // The device whose GID holds an IPv4 address (RoCEv2: ::ffff:a.b.c.d).
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  std::memcpy(&sin.sin_addr, &b_.gid.Raw[12], 4);
  WV_DEVICE_ADDRESS addr{};
  ASSERT_EQ(prov_->TranslateAddress(reinterpret_cast<sockaddr*>(&sin), &addr), WV_SUCCESS);
  EXPECT_EQ(addr.DeviceGuid, b_.guid);
  EXPECT_EQ(addr.PortNumber, 1);

  // COM: the interfaces an object implements, reference counts.
  IWVOverlapped* ovl = nullptr;
  ASSERT_EQ(a_.dev->QueryInterface(IID_IWVOverlapped, reinterpret_cast<LPVOID*>(&ovl)), WV_SUCCESS);
  EXPECT_EQ(static_cast<void*>(ovl), static_cast<void*>(a_.dev));
  const ULONG refs = ovl->Release();  // the test's, the PD's and the CQ's
  EXPECT_EQ(refs, 3u);
  void* none = &pi;
  EXPECT_EQ(a_.dev->QueryInterface(IID_IWVProvider, &none), E_NOINTERFACE);
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(a_.dev->AddRef(), refs + 1);
  EXPECT_EQ(a_.dev->Release(), refs);

  // A second device on the same HCA shares its CA (ib_ci.h: one per HCA).
  IWVDevice* again = nullptr;
  ASSERT_EQ(prov_->OpenDevice(a_.guid, &again), WV_SUCCESS);
  ASSERT_NE(again, a_.dev);
  ASSERT_EQ(again->Query(&da), WV_SUCCESS);
  EXPECT_EQ(da.NodeGuid, a_.guid);
  IWVProtectionDomain* pd2 = nullptr;
  ASSERT_EQ(again->AllocateProtectionDomain(&pd2), WV_SUCCESS);
  EXPECT_EQ(pd2->Release(), 0u);
  EXPECT_EQ(again->Release(), 0u);
  ASSERT_EQ(a_.dev->Query(&da), WV_SUCCESS);  // the CA is still open for a_

  // Unknown GUID; what kbv has no counterpart for.
  ::setenv("KBV_SIM_DEVICES", "", 1);  // nothing else to probe
  IWVDevice* d = nullptr;
  EXPECT_EQ(prov_->OpenDevice(htobe64(0x1234), &d), WV_INVALID_ADDRESS);
  EXPECT_EQ(d, nullptr);
  ::unsetenv("KBV_SIM_DEVICES");
  IWVConnectEndpoint* ep = nullptr;
  EXPECT_EQ(prov_->CreateConnectEndpoint(&ep), WV_NOT_SUPPORTED);
  IWVMemoryWindow* mw = nullptr;
  EXPECT_EQ(a_.pd->AllocateMemoryWindow(&mw), WV_NOT_SUPPORTED);
  EXPECT_EQ(mw, nullptr);
}

TEST_F(Wv, OpenDeviceResolvesAGuidTheProviderDoesNotHold) {
  ASSERT_NO_FATAL_FAILURE(open());
  auto m = sim::Model::create(unique_name("c"));
  ASSERT_TRUE(m.has_value());
  const std::string uri = "sim:" + (*m)->name();
  kbv_device_t kd = 0;
  ASSERT_EQ(kbv_device_open(uri.c_str(), nullptr, KBV_EQ_NONE, 0, &kd), KBV_SUCCESS);
  kbv_device_attr_t ka{};
  ASSERT_EQ(kbv_device_query(kd, &ka, KBV_EQ_NONE, 0), KBV_SUCCESS);
  ASSERT_EQ(kbv_device_close(kd, KBV_EQ_NONE, 0), KBV_SUCCESS);
  ::setenv("KBV_SIM_DEVICES", (*m)->name().c_str(), 1);
  IWVDevice* d = nullptr;
  const HRESULT hr = prov_->OpenDevice(htobe64(ka.node_guid), &d);
  ::unsetenv("KBV_SIM_DEVICES");
  ASSERT_EQ(hr, WV_SUCCESS) << kbv_wv_status_str(hr);
  WV_DEVICE_ATTRIBUTES da{};
  ASSERT_EQ(d->Query(&da), WV_SUCCESS);
  EXPECT_EQ(be64toh(da.NodeGuid), ka.node_guid);
  SIZE_T size = 0;
  EXPECT_EQ(prov_->QueryDeviceList(nullptr, &size), WV_BUFFER_OVERFLOW);
  EXPECT_EQ(size, 3 * sizeof(NET64));  // held from now on
  EXPECT_EQ(d->Release(), 0u);
  prov_->Release();  // drops the third HCA before its model goes
  prov_ = nullptr;
}

TEST_F(Wv, WvGetObjectGivesAProviderOverTheListedDevices) {
  ::setenv("KBV_SIM_DEVICES", (a_.model->name() + "," + b_.model->name()).c_str(), 1);
  void* p = nullptr;
  const HRESULT hr = WvGetObject(IID_IWVProvider, &p);
  ::unsetenv("KBV_SIM_DEVICES");
  ASSERT_EQ(hr, WV_SUCCESS);
  prov_ = static_cast<IWVProvider*>(p);
  NET64 guids[3] = {};
  SIZE_T size = sizeof guids;
  ASSERT_EQ(prov_->QueryDeviceList(guids, &size), WV_SUCCESS);
  ASSERT_EQ(size, 2 * sizeof(NET64));
  EXPECT_EQ(prov_->GetFileHandle(), nullptr);
  WV_DEVICE_ATTRIBUTES da{};
  ASSERT_EQ(prov_->QueryDevice(guids[1], &da), WV_SUCCESS);
  EXPECT_EQ(da.NodeGuid, guids[1]);
}

TEST_F(Wv, RcPingPongRdmaAndAFailedRequestOfAList) {
  ASSERT_NO_FATAL_FAILURE(open());
  ASSERT_NO_FATAL_FAILURE(make_rc(a_));
  ASSERT_NO_FATAL_FAILURE(make_rc(b_));
  ASSERT_NO_FATAL_FAILURE(connect(a_, a_.rc, b_, true));
  ASSERT_NO_FATAL_FAILURE(connect(b_, b_.rc, a_, true));

  constexpr int kIters = 8;
  constexpr uint32_t kLen = 64;
  for (int i = 0; i < kIters; ++i) {
    End& from = i % 2 ? b_ : a_;
    End& to = i % 2 ? a_ : b_;
    WV_SGE r = to.sge(1024, 1024);
    ASSERT_EQ(to.rc->PostReceive(700 + i, &r, 1), WV_SUCCESS);
    std::memset(from.buf.data(), 0x30 + i, kLen);
    WV_SGE s = from.sge(0, kLen);
    ASSERT_EQ(
        from.rc->Send(100 + i, &s, 1, WV_SEND_SIGNALED | WV_SEND_IMMEDIATE, htonl(0xc0de0 + i)),
        WV_SUCCESS);
    auto rc = to.reap(1);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].Status, WV_SUCCESS) << kbv_wv_status_str(rc[0].Status);
    EXPECT_EQ(rc[0].Opcode, WvReceive);
    EXPECT_EQ(rc[0].WrId, 700u + i);
    EXPECT_EQ(rc[0].Length, kLen);
    EXPECT_EQ(rc[0].QpContext, &to.tag);
    EXPECT_TRUE(rc[0].Flags & WV_WC_IMMEDIATE);
    EXPECT_EQ(ntohl(rc[0].ImmediateData), 0xc0de0u + i);
    EXPECT_EQ(to.buf[1024], 0x30 + i);
    EXPECT_EQ(to.buf[1024 + kLen - 1], 0x30 + i);
    auto sc = from.reap(1);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].Opcode, WvSend);
    EXPECT_EQ(sc[0].WrId, 100u + i);
    EXPECT_EQ(sc[0].QpContext, &from.tag);
  }

  // RDMA WRITE into b (address in network order), READ it back into a.
  for (int i = 0; i < 256; ++i) a_.buf[4096 + i] = static_cast<uint8_t>(i * 7);
  WV_SGE w = a_.sge(4096, 256);
  ASSERT_EQ(a_.rc->Write(1, &w, 1, WV_SEND_SIGNALED, 0,
                         htobe64(reinterpret_cast<uintptr_t>(b_.buf.data() + 8192)), b_.keys.Rkey),
            WV_SUCCESS);
  auto c = a_.reap(1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].Status, WV_SUCCESS);
  EXPECT_EQ(c[0].Opcode, WvRdmaWrite);
  EXPECT_EQ(std::memcmp(b_.buf.data() + 8192, a_.buf.data() + 4096, 256), 0);
  WV_SGE rd = a_.sge(12288, 256);
  ASSERT_EQ(a_.rc->Read(2, &rd, 1, WV_SEND_SIGNALED,
                        htobe64(reinterpret_cast<uintptr_t>(b_.buf.data() + 8192)), b_.keys.Rkey),
            WV_SUCCESS);
  c = a_.reap(1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].Status, WV_SUCCESS);
  EXPECT_EQ(c[0].Opcode, WvRdmaRead);
  EXPECT_EQ(std::memcmp(a_.buf.data() + 12288, a_.buf.data() + 4096, 256), 0);

  // A list of three whose second request has no ci WR (WvBindWindow): the
  // first is posted, the second handed back, the third not posted.
  WV_SGE r = b_.sge(1024, 1024);
  ASSERT_EQ(b_.rc->PostReceive(900, &r, 1), WV_SUCCESS);
  WV_SGE s = a_.sge(0, 16);
  WV_SEND_REQUEST req[3]{};
  for (int i = 0; i < 3; ++i) {
    req[i].WrId = 50 + i;
    req[i].pNext = i < 2 ? &req[i + 1] : nullptr;
    req[i].pSgl = &s;
    req[i].nSge = 1;
    req[i].Opcode = i == 1 ? WvBindWindow : WvSend;
    req[i].Flags = WV_SEND_SIGNALED;
  }
  WV_SEND_REQUEST* failed = nullptr;
  EXPECT_EQ(a_.rc->PostSend(req, &failed), WV_NOT_SUPPORTED);
  EXPECT_EQ(failed, &req[1]);
  c = a_.reap(1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].WrId, 50u);
  WV_COMPLETION extra[2];
  EXPECT_EQ(a_.cq->Poll(extra, 2), 0u);
  EXPECT_EQ(b_.reap(1).size(), 1u);
  // A receive SGE with a key that is not registered: a local protection error.
  WV_SGE bad = b_.sge(0, 64);
  bad.Lkey ^= 0x100;
  ASSERT_EQ(b_.rc->PostReceive(901, &bad, 1), WV_SUCCESS);
  ASSERT_EQ(a_.rc->Send(51, &s, 1, WV_SEND_SIGNALED, 0), WV_SUCCESS);
  c = b_.reap(1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].WrId, 901u);
  EXPECT_TRUE(FAILED(c[0].Status)) << kbv_wv_status_str(c[0].Status);
  EXPECT_NE(c[0].VendorCode, 0u);
}

TEST_F(Wv, UdExchangeThroughAnAddressHandle) {
  ASSERT_NO_FATAL_FAILURE(open());
  for (End* e : {&a_, &b_}) {
    WV_QP_CREATE c = qp_create(*e, WvQpTypeUd);
    IWVConnectQueuePair* wrong = nullptr;
    EXPECT_EQ(e->pd->CreateConnectQueuePair(&c, &wrong), WV_INVALID_PARAMETER);
    ASSERT_EQ(e->pd->CreateDatagramQueuePair(&c, &e->ud), WV_SUCCESS);
    WV_QP_ATTRIBUTES q{};
    ASSERT_EQ(e->ud->Query(&q), WV_SUCCESS);
    e->qpn = ntohl(q.Qpn);
  }
  ASSERT_NO_FATAL_FAILURE(connect(a_, a_.ud, b_, false));
  ASSERT_NO_FATAL_FAILURE(connect(b_, b_.ud, a_, false));
  WV_ADDRESS_VECTOR av{};
  av.Route.Valid = 1;
  av.Route.HopLimit = 64;
  av.Route.DGid = b_.gid;
  av.PortNumber = 1;
  ASSERT_EQ(a_.pd->CreateAddressHandle(&av, &a_.ah, &a_.ah_key), WV_SUCCESS);
  EXPECT_NE(a_.ah_key, 0u);

  for (int i = 0; i < 2; ++i) {
    WV_SGE r = b_.sge(2048 * i, 40 + 128);  // the GRH, then the data
    ASSERT_EQ(b_.ud->PostReceive(300 + i, &r, 1), WV_SUCCESS);
  }
  std::memset(a_.buf.data(), 0x5a, 128);
  WV_SGE s = a_.sge(0, 128);
  ASSERT_EQ(a_.ud->Send(1, a_.ah_key, &s, WV_SEND_SIGNALED, htonl(b_.qpn), htonl(0x11111111)),
            WV_SUCCESS);
  std::memset(a_.buf.data() + 512, 0xa5, 100);
  WV_SGE s2 = a_.sge(512, 100);
  WV_SEND_DATAGRAM dg{2,
                      a_.ah_key,
                      &s2,
                      1,
                      WV_SEND_SIGNALED | WV_SEND_IMMEDIATE,
                      htonl(77),
                      htonl(b_.qpn),
                      htonl(0x11111111)};
  ASSERT_EQ(a_.ud->SendMessage(&dg), WV_SUCCESS);
  EXPECT_EQ(a_.reap(2).size(), 2u);
  auto c = b_.reap(2);
  ASSERT_EQ(c.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(c[i].Status, WV_SUCCESS);
    EXPECT_EQ(c[i].WrId, 300u + i);
    EXPECT_EQ(c[i].Opcode, WvReceive);
    EXPECT_EQ(ntohl(c[i].SourceQpn), a_.qpn);
    EXPECT_TRUE(c[i].Flags & WV_WC_GRH_VALID);
    EXPECT_EQ(c[i].QpContext, &b_.tag);
  }
  EXPECT_EQ(c[0].Length, 40u + 128);
  EXPECT_EQ(c[1].Length, 40u + 100);
  EXPECT_EQ(ntohl(c[1].ImmediateData), 77u);
  EXPECT_EQ(b_.buf[40], 0x5a);
  EXPECT_EQ(b_.buf[2048 + 40 + 99], 0xa5);
}

TEST_F(Wv, OverlappedRequestsPendingCancelledAndFailed) {
  ASSERT_NO_FATAL_FAILURE(open());
  // Pending, polled, cancelled: a CQ notification nothing will complete.
  OVERLAPPED ov{};
  ASSERT_EQ(a_.cq->Notify(WvCqNextCompletion, &ov), WV_IO_PENDING);
  OVERLAPPED ov2{};
  ASSERT_EQ(a_.cq->Notify(WvCqError, &ov2), WV_IO_PENDING);
  DWORD bytes = 99;
  EXPECT_EQ(a_.cq->GetOverlappedResult(&ov, &bytes, 0), WV_PENDING);
  EXPECT_EQ(a_.cq->CancelOverlappedRequests(), WV_SUCCESS);
  EXPECT_EQ(a_.cq->GetOverlappedResult(&ov, &bytes, 1), WV_CANCELLED);
  EXPECT_EQ(bytes, 0u);
  EXPECT_EQ(a_.cq->GetOverlappedResult(&ov2, nullptr, 1), WV_CANCELLED);
  // An SRQ's limit notification, cancelled by the SRQ's last Release.
  IWVSharedReceiveQueue* srq = nullptr;
  ASSERT_EQ(a_.pd->CreateSharedReceiveQueue(16, 1, 0, &srq), WV_SUCCESS);
  SIZE_T mw = 0, ms = 0, lim = 9;
  ASSERT_EQ(srq->Query(&mw, &ms, &lim), WV_SUCCESS);
  EXPECT_GE(mw, 16u);
  EXPECT_EQ(srq->Modify(mw + 1, 2), WV_NOT_SUPPORTED);  // no SRQ resize
  OVERLAPPED ov3{};
  ASSERT_EQ(srq->Notify(&ov3), WV_IO_PENDING);
  EXPECT_EQ(srq->Release(), 0u);
  EXPECT_EQ(a_.pd->GetOverlappedResult(&ov3, nullptr, 0), WV_CANCELLED);

  // Failed: BatchNotify (no completion count in kbv_cq_arm) ...
  OVERLAPPED ov4{};
  EXPECT_EQ(a_.cq->BatchNotify(4, &ov4), WV_NOT_SUPPORTED);
  EXPECT_EQ(a_.cq->GetOverlappedResult(&ov4, nullptr, 1), WV_NOT_SUPPORTED);
  // ... a QP modify RESET -> RTS, with its request ...
  ASSERT_NO_FATAL_FAILURE(make_rc(a_));
  WV_QP_ATTRIBUTES qa{};
  qa.QpState = WvQpStateRts;
  OVERLAPPED ov5{};
  const HRESULT bad = a_.rc->Modify(&qa, WV_QP_ATTR_STATE, &ov5);
  EXPECT_TRUE(FAILED(bad)) << kbv_wv_status_str(bad);
  EXPECT_EQ(a_.rc->GetOverlappedResult(&ov5, nullptr, 1), bad);
  qa.QpState = WvQpStateSqd;
  EXPECT_EQ(a_.rc->Modify(&qa, WV_QP_ATTR_STATE, nullptr), WV_NOT_SUPPORTED);
  // ... a deregistration of a key never registered, a registration of nothing.
  OVERLAPPED ov6{};
  EXPECT_EQ(a_.pd->DeregisterMemory(a_.keys.Lkey + 0x100, &ov6), WV_INVALID_HANDLE);
  EXPECT_EQ(a_.pd->GetOverlappedResult(&ov6, nullptr, 0), WV_INVALID_HANDLE);
  WV_MEMORY_KEYS k{};
  OVERLAPPED ov7{};
  EXPECT_EQ(a_.pd->RegisterMemory(nullptr, 64, WV_ACCESS_LOCAL_WRITE, &ov7, &k),
            WV_INVALID_PARAMETER);
  EXPECT_EQ(a_.pd->GetOverlappedResult(&ov7, nullptr, 1), WV_INVALID_PARAMETER);
  // A Win32 event has no counterpart: refused, the request untouched.
  OVERLAPPED ov8{};
  ov8.hEvent = &k;
  ov8.Internal = 42;
  EXPECT_EQ(a_.cq->Notify(WvCqNextCompletion, &ov8), WV_NOT_SUPPORTED);
  EXPECT_EQ(ov8.Internal, 42u);
  EXPECT_EQ(a_.cq->GetOverlappedResult(nullptr, nullptr, 0), WV_INVALID_PARAMETER);
}

TEST_F(Wv, CqErrorNotifyCompletesOnAnOverrun) {
  ASSERT_NO_FATAL_FAILURE(open());
  // a's send CQ has two entries; four signalled WRITEs overrun it.
  IWVCompletionQueue* small = nullptr;
  SIZE_T two = 2;
  ASSERT_EQ(a_.dev->CreateCompletionQueue(&two, &small), WV_SUCCESS);
  ASSERT_EQ(two, 2u);
  WV_QP_CREATE c = qp_create(a_, WvQpTypeRc);
  c.pSendCq = small;
  ASSERT_EQ(a_.pd->CreateConnectQueuePair(&c, &a_.rc), WV_SUCCESS);
  WV_QP_ATTRIBUTES q{};
  ASSERT_EQ(a_.rc->Query(&q), WV_SUCCESS);
  a_.qpn = ntohl(q.Qpn);
  ASSERT_NO_FATAL_FAILURE(make_rc(b_));
  ASSERT_NO_FATAL_FAILURE(connect(a_, a_.rc, b_, true));
  ASSERT_NO_FATAL_FAILURE(connect(b_, b_.rc, a_, true));
  OVERLAPPED err{};
  ASSERT_EQ(small->Notify(WvCqError, &err), WV_IO_PENDING);
  WV_SGE s = a_.sge(0, 8);
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(a_.rc->Write(i, &s, 1, WV_SEND_SIGNALED, 0,
                           htobe64(reinterpret_cast<uintptr_t>(b_.buf.data())), b_.keys.Rkey),
              WV_SUCCESS);
  EXPECT_EQ(wait_ov(small, &err), WV_SUCCESS);
  a_.rc->Release();  // before its CQ
  a_.rc = nullptr;
  EXPECT_EQ(small->Release(), 0u);
}

TEST_F(Wv, DeviceNotifyCompletesOnAPortStateChange) {
  ASSERT_NO_FATAL_FAILURE(open());
  DWORD flags = 0;
  OVERLAPPED ov{};
  // Events from bring-up may be latched: each completes a request at once.
  HRESULT hr = WV_SUCCESS;
  for (int i = 0; i < 8 && (hr = a_.dev->Notify(1, &ov, &flags)) == WV_SUCCESS; ++i)
    EXPECT_EQ(flags, static_cast<DWORD>(WV_EVENT_STATE));
  ASSERT_EQ(hr, WV_IO_PENDING);
  OVERLAPPED other{};
  EXPECT_EQ(a_.dev->Notify(2, &other, &flags), WV_INVALID_PARAMETER);
  a_.model->set_link(false);
  EXPECT_EQ(wait_ov(a_.dev, &ov), WV_SUCCESS);
  EXPECT_EQ(flags, static_cast<DWORD>(WV_EVENT_STATE));
  WV_PORT_ATTRIBUTES pa{};
  const auto until = std::chrono::steady_clock::now() + 5s;
  do {
    ASSERT_EQ(a_.dev->QueryPort(1, &pa), WV_SUCCESS);
    if (pa.State == WvPortActive) std::this_thread::sleep_for(1ms);
  } while (pa.State == WvPortActive && std::chrono::steady_clock::now() < until);
  EXPECT_EQ(pa.State, WvPortDown);
  a_.model->set_link(true);
  // A pending port notification cancelled.
  OVERLAPPED ov2{};
  DWORD f2 = 0;
  for (int i = 0; i < 8 && (hr = b_.dev->Notify(1, &ov2, &f2)) == WV_SUCCESS; ++i) {
  }
  ASSERT_EQ(hr, WV_IO_PENDING);
  EXPECT_EQ(b_.dev->CancelOverlappedRequests(), WV_SUCCESS);
  EXPECT_EQ(b_.dev->GetOverlappedResult(&ov2, nullptr, 1), WV_CANCELLED);
}

// ---- the provider's pre/post hooks ----------------------------------------------------

struct Hooks {
  uint8_t out[16];
  uint8_t in[4] = {1, 2, 3, 4};
  int cq_pre = 0, cq_post = 0, pd_post = 0, qp_post = 0;
  ib_api_status_t cq_status = IB_ERROR, pd_status = IB_ERROR;
  ci_umv_buf_t cq_seen{}, pd_seen{};
  uint32_t cq_size = 0;
};
Hooks g_hooks;

TEST_F(Wv, ProviderHooksPassPrivateDataThroughUnchanged) {
  g_hooks = Hooks{};
  kbv_wv_verbs_t v{};
  v.context = &g_hooks;
  // The CQ: a command and an output buffer, no input (what kbv's channel
  // interface takes): the driver's answer comes back, the buffer untouched.
  v.pre_create_cq = [](void* ctx, uint32_t* p_size, ci_umv_buf_t* u) {
    auto* h = static_cast<Hooks*>(ctx);
    ++h->cq_pre;
    *p_size = 100;  // the provider may change the size asked
    std::memset(h->out, 0xab, sizeof h->out);
    *u = ci_umv_buf_t{0x1234, 77, 0, sizeof h->out, h->out};
    return IB_SUCCESS;
  };
  v.post_create_cq = [](void* ctx, ib_api_status_t st, uint32_t size, ci_umv_buf_t* u) {
    auto* h = static_cast<Hooks*>(ctx);
    ++h->cq_post;
    h->cq_status = st;
    h->cq_size = size;
    h->cq_seen = *u;
  };
  // The PD: private input the first time, which the channel interface
  // refuses; none the second time.
  v.pre_allocate_pd = [](void* ctx, ci_umv_buf_t* u) {
    auto* h = static_cast<Hooks*>(ctx);
    if (h->pd_post == 0) *u = ci_umv_buf_t{0x55, 0, sizeof h->in, 0, h->in};
    return IB_SUCCESS;
  };
  v.post_allocate_pd = [](void* ctx, ib_api_status_t st, ci_umv_buf_t* u) {
    auto* h = static_cast<Hooks*>(ctx);
    ++h->pd_post;
    h->pd_status = st;
    h->pd_seen = *u;
  };
  // The QP: the provider fails first; the call and post_* do not happen.
  v.pre_create_qp = [](void*, ib_qp_create_t*, ci_umv_buf_t*) { return IB_INSUFFICIENT_RESOURCES; };
  v.post_create_qp = [](void* ctx, ib_api_status_t, ci_umv_buf_t*) {
    ++static_cast<Hooks*>(ctx)->qp_post;
  };
  ASSERT_NO_FATAL_FAILURE(open(&v));

  SIZE_T n = 8;
  ASSERT_EQ(a_.dev->CreateCompletionQueue(&n, &a_.cq), WV_SUCCESS);
  EXPECT_EQ(n, 128u);  // the size pre_create_cq asked, rounded up
  EXPECT_EQ(g_hooks.cq_pre, 1);
  EXPECT_EQ(g_hooks.cq_post, 1);
  EXPECT_EQ(g_hooks.cq_status, IB_SUCCESS);
  EXPECT_EQ(g_hooks.cq_size, 128u);
  EXPECT_EQ(g_hooks.cq_seen.command, 0x1234u);
  EXPECT_EQ(g_hooks.cq_seen.status, static_cast<uint32_t>(IB_SUCCESS));  // the driver's
  EXPECT_EQ(g_hooks.cq_seen.output_size, 0u);  // the driver wrote no output
  EXPECT_EQ(g_hooks.cq_seen.p_inout_buf, g_hooks.out);
  for (uint8_t x : g_hooks.out) EXPECT_EQ(x, 0xab);

  EXPECT_EQ(a_.dev->AllocateProtectionDomain(&a_.pd), WV_NOT_SUPPORTED);
  EXPECT_EQ(a_.pd, nullptr);
  EXPECT_EQ(g_hooks.pd_post, 1);
  EXPECT_EQ(g_hooks.pd_status, IB_UNSUPPORTED);
  EXPECT_EQ(g_hooks.pd_seen.command, 0x55u);
  EXPECT_EQ(g_hooks.pd_seen.p_inout_buf, g_hooks.in);
  EXPECT_EQ(g_hooks.in[0], 1);
  EXPECT_EQ(g_hooks.in[3], 4);

  ASSERT_EQ(a_.dev->AllocateProtectionDomain(&a_.pd), WV_SUCCESS);
  EXPECT_EQ(g_hooks.pd_post, 2);
  EXPECT_EQ(g_hooks.pd_status, IB_SUCCESS);
  EXPECT_EQ(g_hooks.pd_seen.input_size, 0u);

  WV_QP_CREATE c = qp_create(a_, WvQpTypeRc);
  EXPECT_EQ(a_.pd->CreateConnectQueuePair(&c, &a_.rc), WV_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(a_.rc, nullptr);
  EXPECT_EQ(g_hooks.qp_post, 0);
}

TEST(WvStatus, ConvertIbStatusIsWinVerbsTable) {
  EXPECT_EQ(WvConvertIbStatus(IB_SUCCESS), WV_SUCCESS);
  EXPECT_EQ(WvConvertIbStatus(IB_INSUFFICIENT_MEMORY), WV_NO_MEMORY);
  EXPECT_EQ(WvConvertIbStatus(IB_NOT_FOUND), WV_INVALID_ADDRESS);
  EXPECT_EQ(WvConvertIbStatus(IB_CANCELED), WV_CANCELLED);
  EXPECT_EQ(WvConvertIbStatus(IB_UNSUPPORTED), WV_NOT_SUPPORTED);
  EXPECT_EQ(WvConvertIbStatus(IB_RESOURCE_BUSY), WV_DEVICE_BUSY);
  EXPECT_EQ(WvConvertIbStatus(IB_INVALID_QP_STATE), WV_INVALID_PARAMETER);
  EXPECT_EQ(WvConvertIbStatus(IB_REMOTE_ERROR), WV_REMOTE_OP_ERROR);
  EXPECT_EQ(WvConvertIbStatus(IB_PENDING), WV_PENDING);
  EXPECT_EQ(WvConvertIbStatus(IB_UNKNOWN_ERROR), WV_UNKNOWN_ERROR);
  EXPECT_EQ(WvConvertIbStatus(static_cast<ib_api_status_t>(999)), WV_UNKNOWN_ERROR);
  EXPECT_STREQ(kbv_wv_status_str(WV_CANCELLED), "WV_CANCELLED");
  EXPECT_STREQ(kbv_wv_status_str(0x1234), "WV_UNKNOWN_STATUS");
  void* p = &p;
  EXPECT_EQ(WvGetObject(IID_IWVDevice, &p), E_NOINTERFACE);
  EXPECT_EQ(p, nullptr);
}

}  // namespace
}  // namespace kbv::wv_test
