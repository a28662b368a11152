// SPDX-License-Identifier: BSD-3-Clause
// NT verbs interface on a model HCA: the interface, CA open/close, query
// size negotiation, port and fatal event requests, close semantics and
// STATUS_FILE_FORCED_CLOSED after a device fatal (docs/NTSTATUS.md "IRP
// semantics to reproduce").
#include <arpa/inet.h>
#include <kbv/eq.h>

#include <cstring>
#include <vector>

#include "nt_fixture.hpp"

namespace kbv::nt_test {
namespace {

class NtCa : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(hca_.open("ca"));
    ifc_ = &hca_.ifc;
  }
  // GetCaPortEvent until it pends (events kept from before complete inline).
  NTSTATUS drain_port_events(IB_CA* ca, IB_REQUEST* r) {
    NTSTATUS st;
    int inline_events = 0;
    while ((st = ifc_->GetCaPortEvent(ca, 1, r)) == STATUS_SUCCESS && ++inline_events < 16) {
    }
    return st;
  }
  NtHca hca_;
  IB_VERBS_INTERFACE_STANDARD* ifc_ = nullptr;
};

TEST_F(NtCa, QueryInterfaceArgumentsAndTable) {
  IB_VERBS_INTERFACE_STANDARD i;
  const USHORT sz = sizeof(i);
  EXPECT_EQ(kbv_nt_query_interface(nullptr, &i, sz, 1), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(kbv_nt_query_interface("sim:x", nullptr, sz, 1), STATUS_INVALID_PARAMETER_2);
  EXPECT_EQ(kbv_nt_query_interface("sim:x", &i, sz - 1, 1), STATUS_INVALID_PARAMETER_3);
  EXPECT_EQ(kbv_nt_query_interface("sim:x", &i, sz, 2), STATUS_INVALID_PARAMETER_4);
  EXPECT_EQ(kbv_nt_query_interface("nope:0", &i, sz, 1), STATUS_INVALID_PARAMETER);

  EXPECT_EQ(ifc_->Size, sizeof(IB_VERBS_INTERFACE_STANDARD));
  EXPECT_EQ(ifc_->Version, IB_VERBS_INTERFACE_VERSION);
  EXPECT_EQ(ifc_->VendorId, 0x15b3u);
  EXPECT_NE(ifc_->NodeGuid, 0u);
  EXPECT_NE(ifc_->Context, nullptr);
  // Every verb of the RFC's table is there.
  const auto* fns = reinterpret_cast<void* const*>(&ifc_->OpenCa);
  const auto* end = reinterpret_cast<void* const*>(&ifc_->BindMw) + 1;
  for (const auto* f = fns; f != end; ++f) EXPECT_NE(*f, nullptr) << "entry " << (f - fns);
}

TEST_F(NtCa, OpenCaCompletesInlineWithTheCaInInformation) {
  Req r;
  int ctx = 0;
  ASSERT_EQ(ifc_->OpenCa(ifc_->Context, &ctx, nullptr, nullptr, r.p()), STATUS_SUCCESS);
  EXPECT_EQ(r.status(), STATUS_SUCCESS);
  EXPECT_EQ(r.count(), 0);  // inline: the completion routine does not run
  IB_CA* ca = r.object<IB_CA>();
  ASSERT_NE(ca, nullptr);
  EXPECT_EQ(ca->Context, &ctx);
  EXPECT_EQ(ca->nRef, 1);
  // INVALID_PARAMETER_n: the n-th argument, the request counted.
  EXPECT_EQ(ifc_->OpenCa(nullptr, nullptr, nullptr, nullptr, r.p()), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(ifc_->OpenCa(ifc_->Context, nullptr, nullptr, nullptr, nullptr),
            STATUS_INVALID_PARAMETER_5);
  int junk = 0;
  EXPECT_EQ(ifc_->OpenCa(&junk, nullptr, nullptr, nullptr, r.p()), STATUS_INVALID_HANDLE);
  Req c;
  EXPECT_EQ(ifc_->CloseCa(ca, nullptr, c.p()), STATUS_SUCCESS);  // no children: inline
  EXPECT_EQ(c.count(), 0);
  // Closed: the pointer is no longer an object.
  EXPECT_EQ(ifc_->CloseCa(ca, nullptr, c.p()), STATUS_INVALID_HANDLE);
  EXPECT_EQ(ifc_->CloseCa(nullptr, nullptr, c.p()), STATUS_INVALID_PARAMETER_1);
}

TEST_F(NtCa, QueryCaNegotiatesTheSize) {
  IB_REQUEST r = sync_req();
  IB_CA_ATTR small;
  // Not even the 4-byte size fits: STATUS_BUFFER_TOO_SMALL.
  EXPECT_EQ(ifc_->QueryCa(ifc_->Context, 3, &small, &r), STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(r.IoStatus.Status, STATUS_BUFFER_TOO_SMALL);
  // Room for the size only: STATUS_BUFFER_OVERFLOW and the size needed.
  ULONG size_only = 0;
  EXPECT_EQ(
      ifc_->QueryCa(ifc_->Context, sizeof(ULONG), reinterpret_cast<IB_CA_ATTR*>(&size_only), &r),
      STATUS_BUFFER_OVERFLOW);
  EXPECT_EQ(r.IoStatus.Information, sizeof(ULONG));
  const ULONG need = size_only;
  ASSERT_GT(need, sizeof(IB_CA_ATTR));  // the port records follow
  // The fixed part but not the ports: truncated, Size still the whole.
  EXPECT_EQ(ifc_->QueryCa(ifc_->Context, sizeof(small), &small, &r), STATUS_BUFFER_OVERFLOW);
  EXPECT_EQ(small.Size, need);
  EXPECT_EQ(r.IoStatus.Information, sizeof(small));
  EXPECT_EQ(small.VendorId, 0x15b3u);
  EXPECT_EQ(small.NumPorts, 1u);
  // The whole: STATUS_SUCCESS, and the port record with its GID table.
  std::vector<uint64_t> buf((need + 7) / 8);
  auto* a = reinterpret_cast<IB_CA_ATTR*>(buf.data());
  ASSERT_EQ(ifc_->QueryCa(ifc_->Context, need, a, &r), STATUS_SUCCESS);
  EXPECT_EQ(r.IoStatus.Information, need);
  EXPECT_EQ(a->CaGuid, ifc_->NodeGuid);
  EXPECT_GT(a->MaxQp, 0u);
  EXPECT_GT(a->MaxCqe, 0u);
  EXPECT_EQ(a->CapabilitiesFlags & IB_CA_CAP_N_NOTIFY_CQ, 0u);
  const auto* p = reinterpret_cast<const IB_PORT_ATTR*>(reinterpret_cast<const uint8_t*>(a) +
                                                        a->PortAttrOffset);
  EXPECT_EQ(p->PortNum, 1u);
  EXPECT_EQ(p->LinkState, IB_LINK_ACTIVE);
  EXPECT_EQ(p->NextPortAttrOffset, 0u);
  ASSERT_GE(p->NumGids, 1u);
  const auto* gid =
      reinterpret_cast<const IB_GID*>(reinterpret_cast<const uint8_t*>(p) + p->GidTblOffset);
  const uint8_t v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  EXPECT_EQ(std::memcmp(gid[0].Raw, v4, 12), 0);
  EXPECT_EQ(gid[0].Raw[12], 127);
  EXPECT_EQ(gid[0].Raw[15], hca_.model->port_host());
  // Argument numbering.
  EXPECT_EQ(ifc_->QueryCa(nullptr, need, a, &r), STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(ifc_->QueryCa(ifc_->Context, need, nullptr, &r), STATUS_INVALID_PARAMETER_3);
  EXPECT_EQ(ifc_->QueryCa(ifc_->Context, need, a, nullptr), STATUS_INVALID_PARAMETER_4);
}

TEST_F(NtCa, QueryPortPendsThenNegotiatesTheSize) {
  // With a completion routine the query is pending, then completes.
  Req r;
  IB_PORT_ATTR a{};
  ASSERT_EQ(ifc_->QueryPort(ifc_->Context, 1, sizeof(a), &a, r.p()), STATUS_PENDING);
  ASSERT_TRUE(r.wait());
  EXPECT_EQ(r.status(), STATUS_BUFFER_OVERFLOW);  // the GID and P_Key tables did not fit
  EXPECT_EQ(r.r.IoStatus.Information, sizeof(a));
  const ULONG need = a.Size;
  EXPECT_GT(need, sizeof(a));
  EXPECT_EQ(a.PortNum, 1u);
  EXPECT_EQ(a.NumPkeys, 128u);  // the model port's P_Key table
  ASSERT_EQ(hca_.model->set_pkey(3, 0x8005), KBV_SUCCESS);
  std::vector<uint64_t> buf((need + 7) / 8);
  IB_REQUEST s = sync_req();
  ASSERT_EQ(
      ifc_->QueryPort(ifc_->Context, 1, need, reinterpret_cast<IB_PORT_ATTR*>(buf.data()), &s),
      STATUS_SUCCESS);
  const auto* p = reinterpret_cast<const IB_PORT_ATTR*>(buf.data());
  USHORT pkey;
  std::memcpy(&pkey, reinterpret_cast<const uint8_t*>(p) + p->PkeyTblOffset, sizeof(pkey));
  EXPECT_EQ(ntohs(pkey), 0xffff);
  std::memcpy(&pkey, reinterpret_cast<const uint8_t*>(p) + p->PkeyTblOffset + 3 * sizeof(pkey),
              sizeof(pkey));
  EXPECT_EQ(ntohs(pkey), 0x8005);
  EXPECT_EQ(ifc_->QueryPort(ifc_->Context, 1, 2, &a, &s), STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(ifc_->QueryPort(ifc_->Context, 2, sizeof(a), &a, &s), STATUS_IB_INVALID_PORT);
  EXPECT_EQ(ifc_->QueryPort(ifc_->Context, 1, sizeof(a), nullptr, &s), STATUS_INVALID_PARAMETER_4);
  EXPECT_EQ(ifc_->QueryPort(ifc_->Context, 1, sizeof(a), &a, nullptr), STATUS_INVALID_PARAMETER_5);
}

TEST_F(NtCa, QueriesCompleteOnAKbvEventQueue) {
  kbv_eq_t eq = KBV_EQ_NONE;
  ASSERT_EQ(kbv_eq_create(4, &eq), KBV_SUCCESS);
  IB_REQUEST r;
  kbv_nt_init_request(&r, eq, 0xfeed, nullptr, nullptr);
  IB_PORT_ATTR a{};
  ASSERT_EQ(ifc_->QueryPort(ifc_->Context, 1, sizeof(a), &a, &r), STATUS_PENDING);
  kbv_event_t ev{};
  auto until = std::chrono::steady_clock::now() + 5s;
  int n = 0;
  while ((n = kbv_eq_poll(eq, &ev, 1)) == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(n, 1);
  EXPECT_EQ(ev.type, KBV_EVENT_REQUEST);
  EXPECT_EQ(ev.user_data, 0xfeedu);
  EXPECT_EQ(ev.object, reinterpret_cast<uintptr_t>(&r));
  EXPECT_EQ(ev.info, sizeof(a));
  EXPECT_EQ(r.IoStatus.Status, STATUS_BUFFER_OVERFLOW);
  EXPECT_EQ(kbv_eq_destroy(eq), KBV_SUCCESS);
}

TEST_F(NtCa, ClosePendsUntilItsChildrenAreGone) {
  IB_CA* ca = hca_.open_ca();
  ASSERT_NE(ca, nullptr);
  IB_REQUEST s = sync_req();
  ASSERT_EQ(ifc_->CreatePd(ca, nullptr, &s), STATUS_SUCCESS);  // synchronous: inline
  IB_PD* pd = reinterpret_cast<IB_PD*>(s.IoStatus.Information);
  ASSERT_NE(pd, nullptr);
  EXPECT_EQ(pd->pCa, ca);
  EXPECT_EQ(ca->nRef, 2);
  Req close;
  ASSERT_EQ(ifc_->CloseCa(ca, nullptr, close.p()), STATUS_PENDING);  // cannot fail; waits
  // A synchronous round trip through the device: whatever was queued before
  // it has been delivered when it returns.
  (void)hca_.link();
  EXPECT_EQ(close.count(), 0);
  // Closing: the CA takes no new children.
  IB_REQUEST s2 = sync_req();
  EXPECT_EQ(ifc_->CreatePd(ca, nullptr, &s2), STATUS_INVALID_HANDLE);
  Req dpd;
  ASSERT_EQ(ifc_->DestroyPd(pd, nullptr, dpd.p()), STATUS_PENDING);
  ASSERT_TRUE(dpd.wait());
  EXPECT_EQ(dpd.status(), STATUS_SUCCESS);
  ASSERT_TRUE(close.wait());  // the last reference went: the close completes
  EXPECT_EQ(close.status(), STATUS_SUCCESS);
}

struct PortSeen {
  std::mutex mu;
  std::vector<std::pair<UCHAR, IB_ASYNC_EVENT>> events;
};
VOID on_ca_event(IB_CA* const, VOID* ctx, const UCHAR port, IB_ASYNC_EVENT ev) {
  auto* s = static_cast<PortSeen*>(ctx);
  std::lock_guard lk(s->mu);
  s->events.emplace_back(port, ev);
}

TEST_F(NtCa, PortRequestsOnePerEventTheRestCancelledAtClose) {
  PortSeen seen;
  IB_CA* ca = hca_.open_ca(on_ca_event, &seen);
  ASSERT_NE(ca, nullptr);
  Req p1, p2, p3;
  // (A late link-up event of bring-up, kept for the next request, is
  // answered inline: drain it.)
  ASSERT_EQ(drain_port_events(ca, p1.p()), STATUS_PENDING);
  ASSERT_EQ(ifc_->GetCaPortEvent(ca, 1, p2.p()), STATUS_PENDING);
  ASSERT_EQ(ifc_->GetCaPortEvent(ca, 1, p3.p()), STATUS_PENDING);
  EXPECT_EQ(ifc_->GetCaPortEvent(ca, 2, p3.p()), STATUS_IB_INVALID_PORT);
  EXPECT_EQ(ifc_->GetCaPortEvent(ca, 1, nullptr), STATUS_INVALID_PARAMETER_3);
  // A notification request cannot be synchronous.
  IB_REQUEST s = sync_req();
  EXPECT_EQ(ifc_->GetCaPortEvent(ca, 1, &s), STATUS_INVALID_PARAMETER_3);

  hca_.model->set_link(false);
  ASSERT_TRUE(p1.wait());
  EXPECT_EQ(p1.status(), STATUS_SUCCESS);
  EXPECT_EQ(p1.r.IoStatus.Information, static_cast<ULONG_PTR>(IbAePortDown));
  // A synchronous round trip through the device: whatever was queued before
  // it has been delivered when it returns.
  (void)hca_.link();
  EXPECT_EQ(p2.count(), 0);  // one event, one request
  hca_.model->set_link(true);
  ASSERT_TRUE(p2.wait());
  EXPECT_EQ(p2.r.IoStatus.Information, static_cast<ULONG_PTR>(IbAePortActive));
  EXPECT_EQ(p3.count(), 0);
  {
    std::lock_guard lk(seen.mu);
    ASSERT_GE(seen.events.size(), 2u);  // the callback saw both
    const size_t n = seen.events.size();
    EXPECT_EQ(seen.events[n - 2], std::make_pair(UCHAR{1}, IbAePortDown));
    EXPECT_EQ(seen.events[n - 1], std::make_pair(UCHAR{1}, IbAePortActive));
  }
  // Close: the waiting requests (port and fatal) complete with
  // STATUS_CANCELLED before CloseCa returns.
  Req f1, f2;
  ASSERT_EQ(ifc_->GetCaFatalEvent(ca, f1.p()), STATUS_PENDING);
  ASSERT_EQ(ifc_->GetCaFatalEvent(ca, f2.p()), STATUS_PENDING);
  Req c;
  ASSERT_EQ(ifc_->CloseCa(ca, nullptr, c.p()), STATUS_SUCCESS);
  EXPECT_EQ(p3.count(), 1);
  EXPECT_EQ(p3.status(), STATUS_CANCELLED);
  EXPECT_EQ(f1.count(), 1);
  EXPECT_EQ(f1.status(), STATUS_CANCELLED);
  EXPECT_EQ(f2.count(), 1);
  EXPECT_EQ(f2.status(), STATUS_CANCELLED);
}

TEST_F(NtCa, PortRequestCanBeCancelled) {
  IB_CA* ca = hca_.open_ca();
  Req p;
  ASSERT_EQ(drain_port_events(ca, p.p()), STATUS_PENDING);
  EXPECT_EQ(kbv_nt_cancel_request(p.p()), STATUS_SUCCESS);
  EXPECT_EQ(p.count(), 1);
  EXPECT_EQ(p.status(), STATUS_CANCELLED);
  EXPECT_EQ(kbv_nt_cancel_request(p.p()), STATUS_NOT_FOUND);
  // The event goes to the next request, not the cancelled one.
  Req q;
  ASSERT_EQ(ifc_->GetCaPortEvent(ca, 1, q.p()), STATUS_PENDING);
  hca_.model->set_link(false);
  ASSERT_TRUE(q.wait());
  EXPECT_EQ(q.r.IoStatus.Information, static_cast<ULONG_PTR>(IbAePortDown));
  EXPECT_EQ(p.count(), 1);
  Req c;
  EXPECT_EQ(ifc_->CloseCa(ca, nullptr, c.p()), STATUS_SUCCESS);
}

TEST_F(NtCa, ModifyPortCapabilitiesConflictBetweenCas) {
  IB_CA* a = hca_.open_ca();
  IB_CA* b = hca_.open_ca();
  IB_MODIFY_PORT m{};
  m.SetCapabilites = IB_PORT_CAP_CM_SUP;
  IB_REQUEST s = sync_req();
  EXPECT_EQ(ifc_->ModifyPort(a, 1, 0, &m, &s), STATUS_SUCCESS);
  EXPECT_EQ(ifc_->ModifyPort(b, 1, 0, &m, &s), STATUS_FILE_LOCK_CONFLICT);
  IB_PORT_ATTR pa[16];
  ASSERT_EQ(ifc_->QueryPort(ifc_->Context, 1, sizeof(pa), pa, &s), STATUS_SUCCESS);
  EXPECT_NE(pa[0].CapabilitiesFlags & IB_PORT_CAP_CM_SUP, 0u);
  EXPECT_EQ(ifc_->ModifyPort(a, 1, IB_MOD_PORT_SHUTDOWN, &m, &s), STATUS_NOT_SUPPORTED);
  EXPECT_EQ(ifc_->ModifyPort(a, 1, 0x80, &m, &s), STATUS_INVALID_PARAMETER_3);
  EXPECT_EQ(ifc_->ModifyPort(a, 1, 0, nullptr, &s), STATUS_INVALID_PARAMETER_4);
  EXPECT_EQ(ifc_->ModifyPort(a, 9, 0, &m, &s), STATUS_IB_INVALID_PORT);
  // Closing a releases its bits: b may take them.
  Req c;
  ASSERT_EQ(ifc_->CloseCa(a, nullptr, c.p()), STATUS_SUCCESS);
  EXPECT_EQ(ifc_->ModifyPort(b, 1, 0, &m, &s), STATUS_SUCCESS);
  IB_MODIFY_CA mc{};
  EXPECT_EQ(ifc_->ModifyCa(b, IB_MODIFY_CA_NODE_DESC, &mc, &s), STATUS_NOT_SUPPORTED);
  EXPECT_EQ(ifc_->ModifyCa(b, 0x100, &mc, &s), STATUS_INVALID_PARAMETER_2);
  EXPECT_EQ(ifc_->ModifyCa(b, 0, nullptr, &s), STATUS_SUCCESS);
  ASSERT_EQ(ifc_->CloseCa(b, nullptr, c.p()), STATUS_SUCCESS);
}

TEST_F(NtCa, DeviceFatalCompletesFatalRequestsThenForcedClosed) {
  PortSeen seen;
  IB_CA* ca = hca_.open_ca(on_ca_event, &seen);
  ASSERT_NE(ca, nullptr);
  IB_REQUEST s = sync_req();
  ASSERT_EQ(ifc_->CreatePd(ca, nullptr, &s), STATUS_SUCCESS);
  IB_PD* pd = reinterpret_cast<IB_PD*>(s.IoStatus.Information);
  Req f1, f2, port;
  ASSERT_EQ(ifc_->GetCaFatalEvent(ca, f1.p()), STATUS_PENDING);
  ASSERT_EQ(ifc_->GetCaFatalEvent(ca, f2.p()), STATUS_PENDING);
  ASSERT_EQ(ifc_->GetCaPortEvent(ca, 1, port.p()), STATUS_PENDING);

  hca_.model->device().inject_health_fatal(0x1, 0x42);
  ASSERT_TRUE(f1.wait(10s));
  EXPECT_EQ(f1.status(), STATUS_SUCCESS);  // "the CA experienced a fatal error"
  ASSERT_TRUE(f2.wait());
  EXPECT_EQ(f2.status(), STATUS_FILE_FORCED_CLOSED);
  ASSERT_TRUE(port.wait());
  EXPECT_EQ(port.status(), STATUS_FILE_FORCED_CLOSED);
  {
    std::lock_guard lk(seen.mu);
    ASSERT_FALSE(seen.events.empty());
    EXPECT_EQ(seen.events.back().second, IbAeLocalFatal);
  }
  // A dead CA: calls complete with STATUS_FILE_FORCED_CLOSED.
  IB_REQUEST s2 = sync_req();
  EXPECT_EQ(ifc_->CreatePd(ca, nullptr, &s2), STATUS_FILE_FORCED_CLOSED);
  EXPECT_EQ(s2.IoStatus.Status, STATUS_FILE_FORCED_CLOSED);
  EXPECT_EQ(ifc_->CreateCq(ca, 16, nullptr, nullptr, nullptr, nullptr, &s2),
            STATUS_FILE_FORCED_CLOSED);
  IB_CA_ATTR a;
  EXPECT_EQ(ifc_->QueryCa(ifc_->Context, sizeof(a), &a, &s2), STATUS_FILE_FORCED_CLOSED);
  Req f3;
  EXPECT_EQ(ifc_->GetCaFatalEvent(ca, f3.p()), STATUS_SUCCESS);  // already happened
  // Release everything and close: that never fails.
  Req dpd, c;
  EXPECT_NE(ifc_->DestroyPd(pd, nullptr, dpd.p()), STATUS_FILE_FORCED_CLOSED);
  ASSERT_TRUE(dpd.wait());
  EXPECT_EQ(dpd.status(), STATUS_SUCCESS);
  EXPECT_EQ(ifc_->CloseCa(ca, nullptr, c.p()), STATUS_SUCCESS);
}

}  // namespace
}  // namespace kbv::nt_test

namespace kbv::nt_test {
namespace {

// HCA resolution by CA GUID (kbv_nt_query_interface_by_guid; kbv_device_open
// "guid:0x<hex>" underneath): the model is found by its NodeGuid among the
// devices KBV_SIM_DEVICES lists.
TEST_F(NtCa, QueryInterfaceByNodeGuid) {
  const UINT64 guid = ifc_->NodeGuid;  // network byte order
  ASSERT_NE(guid, 0u);
  IB_VERBS_INTERFACE_STANDARD i;
  const USHORT sz = sizeof(i);
  // Open through the fixture's interface: busy, as by URI.
  EXPECT_EQ(kbv_nt_query_interface_by_guid(guid, &i, sz, IB_VERBS_INTERFACE_VERSION),
            STATUS_DEVICE_BUSY);
  ifc_->InterfaceDereference(ifc_->Context);  // closes the device; the model stays
  hca_.have_ifc = false;
  ::setenv("KBV_SIM_DEVICES", hca_.model->name().c_str(), 1);
  EXPECT_EQ(kbv_nt_query_interface_by_guid(0, &i, sz, IB_VERBS_INTERFACE_VERSION),
            STATUS_INVALID_PARAMETER_1);
  EXPECT_EQ(kbv_nt_query_interface_by_guid(guid, nullptr, sz, IB_VERBS_INTERFACE_VERSION),
            STATUS_INVALID_PARAMETER_2);
  EXPECT_EQ(kbv_nt_query_interface_by_guid(guid ^ 0x80u, &i, sz, IB_VERBS_INTERFACE_VERSION),
            STATUS_NOT_FOUND);
  ASSERT_EQ(kbv_nt_query_interface_by_guid(guid, &i, sz, IB_VERBS_INTERFACE_VERSION),
            STATUS_SUCCESS);
  ::unsetenv("KBV_SIM_DEVICES");
  EXPECT_EQ(i.NodeGuid, guid);
  // A working CA.
  Req r;
  ASSERT_EQ(i.OpenCa(i.Context, nullptr, nullptr, nullptr, r.p()), STATUS_SUCCESS);
  IB_REQUEST c = sync_req();
  EXPECT_EQ(i.CloseCa(r.object<IB_CA>(), nullptr, &c), STATUS_SUCCESS);
  i.InterfaceDereference(i.Context);
}

}  // namespace
}  // namespace kbv::nt_test
