// SPDX-License-Identifier: BSD-3-Clause
//
// Fixture for the NT verbs interface on model HCAs (kbv/compat/ib_verbs.h):
// a model created by the test (so it can take the link down or inject a
// health fatal), its interface from kbv_nt_query_interface("sim:<name>"),
// and request helpers (a completion-callback request that can be waited on).
#pragma once

#include <gtest/gtest.h>
#include <kbv/compat/ib_verbs.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sim/model.hpp"

namespace kbv::nt_test {

using namespace std::chrono_literals;

// A request completed through its completion routine; wait() for it.
struct Req {
  IB_REQUEST r{};
  std::mutex mu;
  std::condition_variable cv;
  int completions = 0;

  Req() { kbv_nt_init_request(&r, KBV_EQ_NONE, 0, &Req::done, this); }
  static VOID done(IB_REQUEST*, VOID* ctx) {
    auto* self = static_cast<Req*>(ctx);
    std::lock_guard lk(self->mu);
    ++self->completions;
    self->cv.notify_all();
  }
  // Waits for the completion; true when it came.
  bool wait(std::chrono::milliseconds t = 5000ms) {
    std::unique_lock lk(mu);
    return cv.wait_for(lk, t, [this] { return completions > 0; });
  }
  int count() {
    std::lock_guard lk(mu);
    return completions;
  }
  NTSTATUS status() const { return r.IoStatus.Status; }
  template <class T>
  T* object() const {
    return reinterpret_cast<T*>(r.IoStatus.Information);
  }
  IB_REQUEST* p() { return &r; }
};

// A request with no completion target: the call is synchronous.
inline IB_REQUEST sync_req() {
  IB_REQUEST r;
  kbv_nt_init_request(&r, KBV_EQ_NONE, 0, nullptr, nullptr);
  return r;
}

inline std::string unique_name(const char* tag) {
  static std::atomic<int> n{0};
  return std::string("nt") + tag + std::to_string(getpid() % 100000) + "_" +
         std::to_string(n.fetch_add(1));
}

// One model HCA and its NT interface.
struct NtHca {
  std::unique_ptr<sim::Model> model;
  IB_VERBS_INTERFACE_STANDARD ifc{};
  bool have_ifc = false;

  void open(const char* tag) {
    auto m = sim::Model::create(unique_name(tag));
    ASSERT_TRUE(m.has_value()) << m.status().to_string();
    model = std::move(*m);
    const std::string uri = "sim:" + model->name();
    ASSERT_EQ(kbv_nt_query_interface(uri.c_str(), &ifc, sizeof(ifc), IB_VERBS_INTERFACE_VERSION),
              STATUS_SUCCESS);
    have_ifc = true;
    wait_link(IB_LINK_ACTIVE);
    // The link-up port event of bring-up has passed (no CA to tell yet):
    // the model's firmware thread wrote its EQE before it answered the
    // QUERY_PORT that saw ACTIVE, and the driver polls the async EQ before
    // the command queue in every pass (hca.cpp Hca::poll), so the passes
    // waiting for one more QUERY_PORT, all after that answer, consumed it.
    ASSERT_EQ(link(), IB_LINK_ACTIVE);
  }

  IB_LINK_STATE link() {
    IB_PORT_ATTR a[16];
    IB_REQUEST r = sync_req();
    NTSTATUS st = ifc.QueryPort(ifc.Context, 1, sizeof(a), a, &r);
    if (st != STATUS_SUCCESS && st != STATUS_BUFFER_OVERFLOW) return IB_LINK_DOWN;
    return a[0].LinkState;
  }

  void wait_link(IB_LINK_STATE want) {
    auto until = std::chrono::steady_clock::now() + 5s;
    while (link() != want && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(2ms);
    }
    ASSERT_EQ(link(), want);
  }

  IB_CA* open_ca(PFN_IB_CA_ASYNC_EVENT cb = nullptr, void* ctx = nullptr) {
    Req r;
    EXPECT_EQ(ifc.OpenCa(ifc.Context, ctx, cb, nullptr, r.p()), STATUS_SUCCESS);
    return r.object<IB_CA>();
  }

  // The device closes when the last reference goes (before it returns).
  void close() {
    if (have_ifc) ifc.InterfaceDereference(ifc.Context);
    have_ifc = false;
    model.reset();
  }
  ~NtHca() { close(); }
};

// One side of an RC connection through the NT interface: CA, PD, send and
// receive CQs, a registered buffer and an RC QP (all synchronous).
struct Endpoint {
  IB_VERBS_INTERFACE_STANDARD* ifc = nullptr;
  IB_CA* ca = nullptr;
  IB_PD* pd = nullptr;
  IB_CQ* scq = nullptr;
  IB_CQ* rcq = nullptr;
  IB_QP* qp = nullptr;
  IB_MR* mr = nullptr;
  MDL mdl{};
  std::vector<uint8_t> buf;
  IB_GID gid{};

  template <class T>
  static T* info(const IB_REQUEST& r) {
    return reinterpret_cast<T*>(r.IoStatus.Information);
  }

  void create(NtHca& h, size_t bytes = 4096, ULONG cqes = 64) {
    ifc = &h.ifc;
    ca = h.open_ca();
    ASSERT_NE(ca, nullptr);
    IB_REQUEST r = sync_req();
    ASSERT_EQ(ifc->CreatePd(ca, nullptr, &r), STATUS_SUCCESS);
    pd = info<IB_PD>(r);
    ASSERT_EQ(ifc->CreateCq(ca, cqes, this, nullptr, nullptr, nullptr, &r), STATUS_SUCCESS);
    scq = info<IB_CQ>(r);
    ASSERT_EQ(ifc->CreateCq(ca, cqes, this, nullptr, nullptr, nullptr, &r), STATUS_SUCCESS);
    rcq = info<IB_CQ>(r);
    buf.assign(bytes, 0);
    mdl = MDL{nullptr, buf.data(), 0, static_cast<ULONG>(bytes)};
    ASSERT_EQ(ifc->RegMdl(pd, &mdl, IB_AC_LOCAL_WRITE | IB_AC_RDMA_WRITE | IB_AC_RDMA_READ, &r),
              STATUS_SUCCESS);
    mr = info<IB_MR>(r);
    IB_QP_CREATE c{};
    c.Type = IbQpTypeReliableConn;
    c.SqDepth = 32;
    c.RqDepth = 32;
    c.SqSge = 2;
    c.RqSge = 2;
    c.SqMaxInline = 64;
    c.pSendCq = scq;
    c.pRecvCq = rcq;
    c.SqSignaled = FALSE;
    ASSERT_EQ(ifc->CreateQp(pd, &c, this, nullptr, nullptr, &r), STATUS_SUCCESS);
    qp = info<IB_QP>(r);
    IB_PORT_ATTR pa[16];
    ASSERT_EQ(ifc->QueryPort(ifc->Context, 1, sizeof(pa), pa, &r), STATUS_SUCCESS);
    std::memcpy(&gid, reinterpret_cast<const uint8_t*>(pa) + pa[0].GidTblOffset, sizeof(gid));
  }

  // RESET -> INIT -> RTR -> RTS towards the peer.
  void connect(const Endpoint& peer) {
    IB_REQUEST r = sync_req();
    IB_QP_MODIFY m{};
    m.ReqState = IbQpsInit;
    m.state.Init.PrimaryPort = 1;
    m.state.Init.AccessMask = IB_AC_RDMA_WRITE | IB_AC_RDMA_READ;
    ASSERT_EQ(ifc->ModifyQp(qp, &m, nullptr, &r), STATUS_SUCCESS);
    m = IB_QP_MODIFY{};
    m.ReqState = IbQpsRtr;
    m.state.rtr.RqPsn = 0x100;
    m.state.rtr.DestQp = peer.qp->Qpn;
    m.state.rtr.PrimaryAh.PortNumber = 1;
    m.state.rtr.PrimaryAh.Flags = IB_AH_FLAG_GRH;
    m.state.rtr.PrimaryAh.Grh.HopLimit = 64;
    m.state.rtr.PrimaryAh.Grh.DGid = peer.gid;
    m.state.rtr.RespRes = 1;
    m.state.rtr.RnrNakTimeout = 12;
    ASSERT_EQ(ifc->ModifyQp(qp, &m, nullptr, &r), STATUS_SUCCESS);
    m = IB_QP_MODIFY{};
    m.ReqState = IbQpsRts;
    m.state.rts.SqPsn = 0x100;
    m.state.rts.RetryCnt = 7;
    m.state.rts.RnrRetryCnt = 7;
    m.state.rts.LocalAckTimeout = 14;
    m.state.rts.InitDepth = 1;
    ASSERT_EQ(ifc->ModifyQp(qp, &m, nullptr, &r), STATUS_SUCCESS);
  }

  // Poll cq until n completions arrived (or 5 s passed).
  std::vector<IB_WC> poll(IB_CQ* cq, size_t n) {
    std::vector<IB_WC> out;
    auto until = std::chrono::steady_clock::now() + 5s;
    while (out.size() < n && std::chrono::steady_clock::now() < until) {
      IB_WC wc[8];
      LONG k = 8;
      NTSTATUS st = ifc->PollCq(cq, &k, wc);
      if (st == STATUS_NO_MORE_ENTRIES) {
        std::this_thread::sleep_for(100us);
        continue;
      }
      EXPECT_EQ(st, STATUS_SUCCESS);
      if (st != STATUS_SUCCESS) break;
      out.insert(out.end(), wc, wc + k);
    }
    return out;
  }

  void destroy() {
    IB_REQUEST r = sync_req();
    if (qp != nullptr) {
      EXPECT_EQ(ifc->DestroyQp(qp, nullptr, &r), STATUS_SUCCESS);
    }
    if (mr != nullptr) {
      EXPECT_EQ(ifc->DeregMr(mr, &r), STATUS_SUCCESS);
    }
    if (scq != nullptr) {
      EXPECT_EQ(ifc->DestroyCq(scq, nullptr, &r), STATUS_SUCCESS);
    }
    if (rcq != nullptr) {
      EXPECT_EQ(ifc->DestroyCq(rcq, nullptr, &r), STATUS_SUCCESS);
    }
    if (pd != nullptr) {
      EXPECT_EQ(ifc->DestroyPd(pd, nullptr, &r), STATUS_SUCCESS);
    }
    if (ca != nullptr) {
      EXPECT_EQ(ifc->CloseCa(ca, nullptr, &r), STATUS_SUCCESS);
    }
    qp = nullptr;
    mr = nullptr;
    scq = rcq = nullptr;
    pd = nullptr;
    ca = nullptr;
  }
};

}  // namespace kbv::nt_test
