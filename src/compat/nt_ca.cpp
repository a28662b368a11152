// SPDX-License-Identifier: BSD-3-Clause
// NT verbs: the interface, CA open/close, fatal and port event requests,
// query/modify CA and port (docs/NTSTATUS.md source 000 POPEN_CA .. PMODIFY_PORT;
// docs/NTSTATUS.md).
#include <endian.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "common/abi_guard.hpp"
#include "compat/nt_objects.hpp"
#include "compat/nt_verbs.hpp"

namespace kbv::compat {

// ---- NtCa events ---------------------------------------------------------------------

void NtCa::on_event(const kbv_event_t& ev) {
  if (ev.type != KBV_EVENT_PORT_STATE) return;
  const uint32_t port = KBV_PORT_EVENT_PORT(ev.info);
  const IB_ASYNC_EVENT ae =
      KBV_PORT_EVENT_STATE(ev.info) == KBV_PORT_ACTIVE ? IbAePortActive : IbAePortDown;
  {
    std::lock_guard lk(mu);
    if (closing) return;
  }
  if (async_cb != nullptr) async_cb(&pub, pub.Context, static_cast<UCHAR>(port), ae);
  if (port >= 1 && port <= port_q.size()) (void)port_q[port - 1]->fire(STATUS_SUCCESS, ae);
}

void NtCa::on_fatal() {
  {
    std::lock_guard lk(mu);
    if (closing) return;
  }
  // One event, one request (STATUS_SUCCESS: "the CA experienced a fatal
  // error and should be closed"); every other notification request can no
  // longer be satisfied: STATUS_FILE_FORCED_CLOSED.
  if (async_cb != nullptr) async_cb(&pub, pub.Context, 0, IbAeLocalFatal);
  (void)fatal_q.fire(STATUS_SUCCESS, IbAeLocalFatal);
  (void)fatal_q.complete_all(STATUS_FILE_FORCED_CLOSED);
  for (auto& q : port_q) (void)q->complete_all(STATUS_FILE_FORCED_CLOSED);
}

void NtCa::child_added() {
  std::lock_guard lk(mu);
  ++children;
  add_ref_count(&pub.nRef, 1);
}

void NtCa::child_gone() {
  std::shared_ptr<NtRequest> done;
  bool finalize = false;
  {
    std::lock_guard lk(mu);
    if (children > 0) --children;
    add_ref_count(&pub.nRef, -1);
    if (closing && children == 0) {
      finalize = true;
      done = std::move(close_req);
    }
  }
  if (!finalize) return;
  auto keep = shared_from_this();
  dev->remove_ca(this);
  if (done) (void)done->complete(STATUS_SUCCESS, 0);
}

namespace nt {

namespace {

std::shared_ptr<NtDevice> device_of(const void* ctx) {
  return lookup<NtDevice>(ctx, Kind::kDevice);
}

std::shared_ptr<NtCa> ca_of(const IB_CA* ca) {
  auto c = lookup<NtCa>(ca, Kind::kCa);
  if (!c) return nullptr;
  std::lock_guard lk(c->mu);
  return c->closing ? nullptr : c;
}

IB_LINK_STATE link_state(uint32_t s) {
  switch (s) {
    case KBV_PORT_DOWN: return IB_LINK_DOWN;
    case KBV_PORT_INIT: return IB_LINK_INIT;
    case KBV_PORT_ARMED: return IB_LINK_ARMED;
    case KBV_PORT_ACTIVE: return IB_LINK_ACTIVE;
    default: return IB_LINK_DOWN;
  }
}

size_t align8(size_t n) { return (n + 7) & ~size_t{7}; }

// One port record: IB_PORT_ATTR, the GID table, the port's P_Key table
// (kbv_port_query_pkey_table: QUERY_HCA_VPORT_PKEY; entry 0 the default
// 0xFFFF, unset entries 0), each 8-byte aligned; offsets from its start.
std::vector<uint8_t> port_record(NtDevice& d, const kbv_port_attr_t& pa) {
  const size_t gid_off = align8(sizeof(IB_PORT_ATTR));
  const size_t ngid = pa.gid_count;
  const size_t pkey_off = align8(gid_off + ngid * sizeof(IB_GID));
  std::vector<uint16_t> pkeys(d.attr().max_pkeys);
  if (pkeys.empty() ||
      kbv_port_query_pkey_table(d.handle(), pa.port_num, pkeys.data(),
                                static_cast<uint32_t>(pkeys.size()), KBV_EQ_NONE, 0) != KBV_SUCCESS)
    pkeys.assign(1, 0xffff);  // the default P_Key, as before the table was read
  const size_t total = align8(pkey_off + pkeys.size() * sizeof(USHORT));
  std::vector<uint8_t> rec(total, 0);
  IB_PORT_ATTR a{};
  a.Size = static_cast<ULONG>(total);
  a.CapabilitiesFlags = d.port_caps(static_cast<uint8_t>(pa.port_num));
  a.PortGuid = htobe64(pa.port_guid);
  a.LinkState = link_state(pa.state);
  // RoCE ports report no InfiniBand width/speed: 0 ("not reported").
  a.LinkWidth = static_cast<IB_LINK_WIDTH>(0);
  a.LinkSpeed = static_cast<IB_LINK_SPEED>(0);
  a.Mtu = static_cast<IB_MTU>(pa.active_mtu);
  a.MaxMsgSize = d.attr().max_msg_size;
  a.NumGids = static_cast<USHORT>(ngid);
  a.NumPkeys = static_cast<USHORT>(pkeys.size());
  a.GidTblOffset = static_cast<ULONG>(gid_off);
  a.PkeyTblOffset = static_cast<ULONG>(pkey_off);
  a.PortNum = static_cast<UCHAR>(pa.port_num);
  a.MaxVls = 1;
  std::memcpy(rec.data(), &a, sizeof(a));
  for (size_t i = 0; i < ngid; ++i) {
    std::memcpy(rec.data() + gid_off + i * sizeof(IB_GID), pa.gids[i].gid, 16);
  }
  for (size_t i = 0; i < pkeys.size(); ++i) {
    const USHORT pkey = htobe16(pkeys[i]);
    std::memcpy(rec.data() + pkey_off + i * sizeof(USHORT), &pkey, sizeof(pkey));
  }
  return rec;
}

UINT64 fw_version(const char* s, int shift_major, int shift_minor, int shift_sub) {
  unsigned a = 0, b = 0, c = 0;
  if (std::sscanf(s, "%u.%u.%u", &a, &b, &c) < 1) return 0;
  UINT64 v = (UINT64{a} << shift_major) | (UINT64{b} << shift_minor);
  if (shift_sub >= 0) v |= UINT64{c} << shift_sub;
  return v;
}

std::vector<uint8_t> ca_blob(NtDevice& d, const std::vector<kbv_port_attr_t>& ports) {
  const kbv_device_attr_t& da = d.attr();
  IB_CA_ATTR a{};
  a.VendorId = da.vendor_id;
  a.DeviceId = da.device_id;
  a.DeviceRev = static_cast<UINT16>(da.hw_ver);
  a.DriverVersion = kbv_api_version();
  a.FwVersion = fw_version(da.fw_version, 32, 16, 0);
  a.CaGuid = htobe64(da.node_guid);
  a.SystemImageGuid = htobe64(da.sys_image_guid);
  a.NumPorts = static_cast<UINT8>(ports.size());
  a.MaxQpReadAtomic = static_cast<UINT8>(std::min<uint32_t>(da.max_qp_rd_atom, 255));
  a.MaxReadAtomic = a.MaxQpReadAtomic;
  a.MaxQpInitReadAtomic = static_cast<UINT8>(std::min<uint32_t>(da.max_qp_init_rd_atom, 255));
  // RFC: 1-based bit p means 2^p bytes; kbv: bit n means 2^n.
  a.PageSizeSupport = UINT64{da.page_size_cap} >> 1;
  a.CapabilitiesFlags = IB_CA_CAP_PORT_ACTIVE_EVENT | IB_CA_CAP_RC_RNR_NAK_GEN;
  a.AtomicCap = (da.cap_flags & KBV_DEVICE_CAP_ATOMIC) != 0 ? IbAtomicLocal : IbAtomicNone;
  a.MaxQp = da.max_qp;
  a.MaxQpWr = da.max_qp_wr;
  a.MaxQpSge = da.max_send_sge;
  a.MaxCq = da.max_cq;
  a.MaxCqe = da.max_cqe;
  a.MaxPd = da.max_pd;
  a.MaxAh = 0xffffffffu;  // kbv address handles are host memory only
  a.MaxMr = da.max_mr;
  a.MaxMrSize = da.max_mr_size;
  a.MaxMw = 0;  // no memory windows (CreateMw: STATUS_NOT_SUPPORTED)
  a.MaxMcastGrp = da.max_mcast_grp;
  a.MaxMcastQp = da.max_mcast_qp_attach;
  a.MaxMcastQpPerGrp = da.max_mcast_qp_attach;
  a.MaxSrq = 0;  // the RFC has no SRQ verbs yet
  a.MaxPKeys = static_cast<UINT16>(d.attr().max_pkeys);
  a.LocalAckDelay = static_cast<UINT8>(da.local_ca_ack_delay);
  const size_t port_off = align8(sizeof(IB_CA_ATTR));
  a.PortAttrOffset = static_cast<ULONG>(port_off);
  std::vector<uint8_t> blob(port_off, 0);
  for (size_t i = 0; i < ports.size(); ++i) {
    auto rec = port_record(d, ports[i]);
    if (i + 1 < ports.size()) {
      ULONG next = static_cast<ULONG>(rec.size());
      std::memcpy(rec.data() + offsetof(IB_PORT_ATTR, NextPortAttrOffset), &next, sizeof(next));
    }
    blob.insert(blob.end(), rec.begin(), rec.end());
  }
  a.Size = static_cast<ULONG>(blob.size());
  std::memcpy(blob.data(), &a, sizeof(a));
  return blob;
}

// Copy the result with size negotiation (docs/NTSTATUS.md; seed 000 PQUERY_CA):
// the whole result: STATUS_SUCCESS; truncated: STATUS_BUFFER_OVERFLOW with
// Size (the first 4 bytes) = the size needed. Information = bytes written.
void deliver(const std::shared_ptr<NtRequest>& r, const std::vector<uint8_t>& blob, void* out,
             SIZE_T size) {
  const size_t n = std::min(static_cast<size_t>(size), blob.size());
  std::memcpy(out, blob.data(), n);
  (void)r->complete(n < blob.size() ? STATUS_BUFFER_OVERFLOW : STATUS_SUCCESS, n);
}

// Query ports first..last one after the other, then done(status).
void query_ports(std::shared_ptr<NtDevice> d, std::shared_ptr<std::vector<kbv_port_attr_t>> out,
                 uint32_t next, uint32_t last, std::function<void(int32_t)> done) {
  if (next > last) {
    done(KBV_SUCCESS);
    return;
  }
  kbv_port_attr_t* slot = &(*out)[next - (last + 1 - out->size())];
  NtDevice* raw = d.get();
  raw->submit(
      [raw, next, slot](kbv_eq_t eq, uint64_t ud) {
        return kbv_port_query(raw->handle(), next, slot, eq, ud);
      },
      [d = std::move(d), out, next, last, done = std::move(done)](const kbv_event_t& ev) mutable {
        if (ev.status != KBV_SUCCESS) {
          done(ev.status);
          return;
        }
        d->note_port((*out)[next - (last + 1 - out->size())]);
        query_ports(std::move(d), out, next + 1, last, std::move(done));
      });
}

}  // namespace

NTSTATUS OpenCa(VOID* const IfcContext, VOID* const Context, PFN_IB_CA_ASYNC_EVENT CaAsyncEvent,
                CI_UDATA* const pUserData, IB_REQUEST* const pRequest) try {
  if (IfcContext == nullptr) return STATUS_INVALID_PARAMETER_1;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_5;
  auto d = device_of(IfcContext);
  if (!d) return STATUS_INVALID_HANDLE;
  if (d->dead()) return complete_inline(pRequest, STATUS_FILE_FORCED_CLOSED);
  no_udata(pUserData);
  std::shared_ptr<NtCa> ca(new (std::nothrow) NtCa());
  if (!ca) return STATUS_NO_MEMORY;
  ca->dev = d;
  ca->async_cb = CaAsyncEvent;
  ca->pub.Context = Context;
  ca->pub.nRef = 1;
  for (uint32_t p = 0; p < d->num_ports(); ++p) {
    ca->port_q.push_back(std::make_unique<NtEventQueue>());
  }
  d->add_ca(ca);
  publish(&ca->pub, ca);
  // Nothing to ask the device: the CA instance is ready now.
  return complete_inline(pRequest, STATUS_SUCCESS, reinterpret_cast<ULONG_PTR>(&ca->pub));
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS CloseCa(IB_CA* const pCa, CI_UDATA* const pUserData, IB_REQUEST* const pRequest) try {
  if (pCa == nullptr) return STATUS_INVALID_PARAMETER_1;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_3;
  auto ca = ca_of(pCa);
  if (!ca) return STATUS_INVALID_HANDLE;
  no_udata(pUserData);
  std::shared_ptr<NtRequest> r;
  const bool sync = pRequest->CompletionRoutine == nullptr && pRequest->Eq == KBV_EQ_NONE;
  bool now;
  {
    std::lock_guard lk(ca->mu);
    if (ca->closing) return STATUS_INVALID_HANDLE;  // lost a race with another CloseCa
    now = ca->children == 0;
    // With children the close completes later: begin the request now.
    if (!now && !sync) {
      NTSTATUS st = NtRequest::begin(pRequest, 3, false, &r);
      if (st != STATUS_SUCCESS) return st;
      ca->close_req = r;
    }
    ca->closing = true;
  }
  unpublish(&ca->pub);
  // Pending notification requests complete with STATUS_CANCELLED before
  // CloseCa returns (seed 000 PCLOSE_CA NOTES).
  (void)ca->fatal_q.complete_all(STATUS_CANCELLED);
  for (auto& q : ca->port_q) (void)q->complete_all(STATUS_CANCELLED);
  ca->dev->drop_port_caps(ca.get());
  if (now) {
    // Nothing references the CA: closed inline.
    ca->dev->remove_ca(ca.get());
    return complete_inline(pRequest, STATUS_SUCCESS);
  }
  // Completes when the CA's PDs and CQs are destroyed. Synchronous: nothing
  // to wait on here (the client must destroy them), as kbv's own close.
  return r ? STATUS_PENDING : complete_inline(pRequest, STATUS_PENDING);
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS GetCaFatalEvent(IB_CA* const pCa, IB_REQUEST* const pRequest) try {
  if (pCa == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto ca = ca_of(pCa);
  if (!ca) return STATUS_INVALID_HANDLE;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_2;
  if (ca->dev->dead()) return complete_inline(pRequest, STATUS_SUCCESS, IbAeLocalFatal);
  return ca->fatal_q.add(pRequest, 2);
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS GetCaPortEvent(IB_CA* const pCa, const UCHAR PortNumber, IB_REQUEST* const pRequest) try {
  if (pCa == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto ca = ca_of(pCa);
  if (!ca) return STATUS_INVALID_HANDLE;
  if (PortNumber == 0 || PortNumber > ca->port_q.size()) return STATUS_IB_INVALID_PORT;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_3;
  if (ca->dev->dead()) return complete_inline(pRequest, STATUS_FILE_FORCED_CLOSED);
  return ca->port_q[PortNumber - 1]->add(pRequest, 3);
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS QueryCa(VOID* const Context, const SIZE_T AttrSize, IB_CA_ATTR* const pAttr,
                 IB_REQUEST* const pRequest) try {
  if (Context == nullptr) return STATUS_INVALID_PARAMETER_1;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_4;
  auto d = device_of(Context);
  if (!d) return STATUS_INVALID_HANDLE;
  // Not even room for the size: nothing can be returned.
  if (AttrSize < sizeof(ULONG)) return complete_inline(pRequest, STATUS_BUFFER_TOO_SMALL);
  if (pAttr == nullptr) return STATUS_INVALID_PARAMETER_3;
  if (d->dead()) return complete_inline(pRequest, STATUS_FILE_FORCED_CLOSED);
  std::shared_ptr<NtRequest> r;
  NTSTATUS st = NtRequest::begin(pRequest, 4, true, &r);
  if (st != STATUS_SUCCESS) return st;
  const uint32_t nports = d->num_ports();
  auto ports = std::make_shared<std::vector<kbv_port_attr_t>>(nports);
  query_ports(d, ports, 1, nports, [d, ports, r, pAttr, AttrSize](int32_t status) {
    if (status != KBV_SUCCESS) {
      (void)r->complete(nt_of(status), 0);
      return;
    }
    deliver(r, ca_blob(*d, *ports), pAttr, AttrSize);
  });
  return r->result(d->pump());
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS QueryPort(VOID* const Context, const UCHAR PortNumber, const SIZE_T AttrSize,
                   IB_PORT_ATTR* const pAttr, IB_REQUEST* const pRequest) try {
  if (Context == nullptr) return STATUS_INVALID_PARAMETER_1;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_5;
  auto d = device_of(Context);
  if (!d) return STATUS_INVALID_HANDLE;
  if (PortNumber == 0 || PortNumber > d->num_ports()) return STATUS_IB_INVALID_PORT;
  if (AttrSize < sizeof(ULONG)) return complete_inline(pRequest, STATUS_BUFFER_TOO_SMALL);
  if (pAttr == nullptr) return STATUS_INVALID_PARAMETER_4;
  if (d->dead()) return complete_inline(pRequest, STATUS_FILE_FORCED_CLOSED);
  std::shared_ptr<NtRequest> r;
  NTSTATUS st = NtRequest::begin(pRequest, 5, true, &r);
  if (st != STATUS_SUCCESS) return st;
  auto ports = std::make_shared<std::vector<kbv_port_attr_t>>(1);
  query_ports(d, ports, PortNumber, PortNumber, [d, ports, r, pAttr, AttrSize](int32_t status) {
    if (status != KBV_SUCCESS) {
      (void)r->complete(nt_of(status), 0);
      return;
    }
    deliver(r, port_record(*d, (*ports)[0]), pAttr, AttrSize);
  });
  return r->result(d->pump());
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS ModifyCa(IB_CA* const pCa, const ULONG Flags, const IB_MODIFY_CA* const pModify,
                  IB_REQUEST* const pRequest) try {
  constexpr ULONG kKnown = IB_MODIFY_CA_SYS_IMAGE_GUID | IB_MODIFY_CA_NODE_DESC;
  if (pCa == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto ca = ca_of(pCa);
  if (!ca) return STATUS_INVALID_HANDLE;
  if ((Flags & ~kKnown) != 0) return STATUS_INVALID_PARAMETER_2;
  if (Flags != 0 && pModify == nullptr) return STATUS_INVALID_PARAMETER_3;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_4;
  if (ca->dev->dead()) return complete_inline(pRequest, STATUS_FILE_FORCED_CLOSED);
  // The system image GUID and node description live in firmware/NVRAM on
  // ConnectX (no PRM command sets them from the driver).
  if (Flags != 0) return complete_inline(pRequest, STATUS_NOT_SUPPORTED);
  return complete_inline(pRequest, STATUS_SUCCESS);
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS ModifyPort(IB_CA* const pCa, const UCHAR PortNumber, const ULONG Flags,
                    const IB_MODIFY_PORT* const pModify, IB_REQUEST* const pRequest) try {
  constexpr ULONG kKnown =
      IB_MOD_PORT_SHUTDOWN | IB_MOD_PORT_INIT_REPLY | IB_MOD_PORT_RESET_QKEY_VIOLATIONS;
  if (pCa == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto ca = ca_of(pCa);
  if (!ca) return STATUS_INVALID_HANDLE;
  if (PortNumber == 0 || PortNumber > ca->port_q.size()) return STATUS_IB_INVALID_PORT;
  if ((Flags & ~kKnown) != 0) return STATUS_INVALID_PARAMETER_3;
  if (pModify == nullptr) return STATUS_INVALID_PARAMETER_4;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_5;
  if (ca->dev->dead()) return complete_inline(pRequest, STATUS_FILE_FORCED_CLOSED);
  // Shutting the port down and InitTypeReply are subnet-management features
  // an Ethernet (RoCE) port does not have.
  if ((Flags & (IB_MOD_PORT_SHUTDOWN | IB_MOD_PORT_INIT_REPLY)) != 0) {
    return complete_inline(pRequest, STATUS_NOT_SUPPORTED);
  }
  // Capability bits are the clients' (ib_modify_port's cap mask): an
  // exclusive bit another CA holds is STATUS_FILE_LOCK_CONFLICT. Q_Key
  // violations are not counted on RoCE (always 0): a reset has no effect.
  NTSTATUS st = ca->dev->modify_port_caps(ca.get(), PortNumber, pModify->SetCapabilites,
                                          pModify->ClearCapabilites);
  return complete_inline(pRequest, st);
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

// ---- the interface ---------------------------------------------------------------------

namespace {

VOID ifc_reference(PVOID Context) {
  if (auto d = device_of(Context)) d->ifc_ref();
}

VOID ifc_dereference(PVOID Context) {
  if (auto d = device_of(Context)) d->ifc_deref();
}

}  // namespace

}  // namespace nt
}  // namespace kbv::compat

extern "C" NTSTATUS kbv_nt_query_interface(const char* uri, IB_VERBS_INTERFACE_STANDARD* pInterface,
                                           USHORT Size, USHORT Version) try {
  using namespace kbv::compat;
  using namespace kbv::compat::nt;
  if (uri == nullptr) return STATUS_INVALID_PARAMETER_1;
  if (pInterface == nullptr) return STATUS_INVALID_PARAMETER_2;
  if (Size < sizeof(IB_VERBS_INTERFACE_STANDARD)) return STATUS_INVALID_PARAMETER_3;
  if (Version != IB_VERBS_INTERFACE_VERSION) return STATUS_INVALID_PARAMETER_4;
  std::shared_ptr<NtDevice> d;
  NTSTATUS st = NtDevice::open(uri, &d);
  if (st != STATUS_SUCCESS) return st;
  IB_VERBS_INTERFACE_STANDARD& i = *pInterface;
  i = IB_VERBS_INTERFACE_STANDARD{};
  i.Size = sizeof(IB_VERBS_INTERFACE_STANDARD);
  i.Version = IB_VERBS_INTERFACE_VERSION;
  i.Context = d.get();
  i.InterfaceReference = ifc_reference;
  i.InterfaceDereference = ifc_dereference;
  const kbv_device_attr_t& a = d->attr();
  i.NodeGuid = htobe64(a.node_guid);
  i.VendorId = a.vendor_id;
  i.DeviceId = a.device_id;
  i.DeviceRev = static_cast<UINT16>(a.hw_ver);
  i.FwVersion = static_cast<UINT32>(fw_version(a.fw_version, 16, 0, -1));
  i.OpenCa = OpenCa;
  i.CloseCa = CloseCa;
  i.GetCaFatalEvent = GetCaFatalEvent;
  i.GetCaPortEvent = GetCaPortEvent;
  i.QueryCa = QueryCa;
  i.QueryPort = QueryPort;
  i.ModifyCa = ModifyCa;
  i.ModifyPort = ModifyPort;
  i.CreateCq = CreateCq;
  i.DestroyCq = DestroyCq;
  i.ResizeCq = ResizeCq;
  i.RearmCq = RearmCq;
  i.RearmNCq = RearmNCq;
  i.PollCq = PollCq;
  i.PeekCq = PeekCq;
  i.GetCqCompEvent = GetCqCompEvent;
  i.GetCqAsyncEvent = GetCqAsyncEvent;
  i.CreatePd = CreatePd;
  i.DestroyPd = DestroyPd;
  i.CreateAh = CreateAh;
  i.DestroyAh = DestroyAh;
  i.ModifyAh = ModifyAh;
  i.QueryAh = QueryAh;
  i.CreateQp = CreateQp;
  i.CreateSpecialQp = CreateSpecialQp;
  i.DestroyQp = DestroyQp;
  i.ModifyQp = ModifyQp;
  i.QueryQp = QueryQp;
  i.PostSend = PostSend;
  i.PostRecv = PostRecv;
  i.GetQpAsyncEvent = GetQpAsyncEvent;
  i.RegMdl = RegMdl;
  i.RegScatterGather = RegScatterGather;
  i.GetDmaMr = GetDmaMr;
  i.DeregMr = DeregMr;
  i.CreateMw = CreateMw;
  i.DestroyMw = DestroyMw;
  i.BindMw = BindMw;
  return STATUS_SUCCESS;
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

extern "C" NTSTATUS kbv_nt_query_interface_by_guid(UINT64 NodeGuid,
                                                   IB_VERBS_INTERFACE_STANDARD* pInterface,
                                                   USHORT Size, USHORT Version) try {
  if (NodeGuid == 0) return STATUS_INVALID_PARAMETER_1;
  char uri[KBV_URI_MAX];
  std::snprintf(uri, sizeof uri, "guid:0x%016llx",
                static_cast<unsigned long long>(be64toh(NodeGuid)));
  return kbv_nt_query_interface(uri, pInterface, Size, Version);
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}
