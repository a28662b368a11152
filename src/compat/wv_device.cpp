// SPDX-License-Identifier: BSD-3-Clause
// WinVerbs (kbv/compat/winverbs.h): IWVProvider (devices by GUID),
// IWVDevice (attributes, GID / P_Key tables, port events) and
// IWVCompletionQueue (notify, poll) on the channel interface, and the entry
// points. docs/CI.md "WinVerbs".
#include <arpa/inet.h>
#include <endian.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>

#include "compat/ci_objects.hpp"
#include "compat/wv_objects.hpp"

namespace kbv::compat::wv {
namespace {

uint32_t mtu_bytes(uint8_t ib_mtu) { return ib_mtu >= 1 && ib_mtu <= 5 ? 128u << ib_mtu : 0; }

class Provider final : public Com<IWVProvider> {
 public:
  explicit Provider(const kbv_wv_verbs_t* verbs) {
    if (verbs) verbs_ = *verbs;
  }
  ~Provider() override {
    for (const ci_interface_t& c : ifaces_) (void)kbv_ci_release_interface(&c);
  }

  // Holds the HCA named by uri (kbv_ci_get_interface).
  HRESULT add(const char* uri) try {
    ci_interface_t c{};
    const ib_api_status_t st = kbv_ci_get_interface(uri, &c);
    if (st != IB_SUCCESS) return hr_of(st);
    std::lock_guard lk(mu_);
    ifaces_.push_back(c);
    return WV_SUCCESS;
  } catch (...) {
    return WV_NO_MEMORY;
  }

  HANDLE GetFileHandle() override { return nullptr; }

  HRESULT QueryDeviceList(NET64* pGuidList, SIZE_T* pBufferSize) override {
    if (pBufferSize == nullptr) return WV_INVALID_PARAMETER;
    std::lock_guard lk(mu_);
    const SIZE_T need = ifaces_.size() * sizeof(NET64);
    if (pGuidList == nullptr || *pBufferSize < need) {
      *pBufferSize = need;
      return need == 0 ? WV_SUCCESS : WV_BUFFER_OVERFLOW;
    }
    for (size_t i = 0; i < ifaces_.size(); ++i) pGuidList[i] = ifaces_[i].guid;
    *pBufferSize = need;
    return WV_SUCCESS;
  }

  HRESULT QueryDevice(NET64 Guid, WV_DEVICE_ATTRIBUTES* pAttributes) override {
    if (pAttributes == nullptr) return WV_INVALID_PARAMETER;
    IWVDevice* d = nullptr;
    HRESULT hr = OpenDevice(Guid, &d);
    if (FAILED(hr)) return hr;
    hr = d->Query(pAttributes);
    d->Release();
    return hr;
  }

  HRESULT TranslateAddress(const sockaddr* pAddress, WV_DEVICE_ADDRESS* pDeviceAddress) override {
    if (pAddress == nullptr || pDeviceAddress == nullptr) return WV_INVALID_PARAMETER;
    WV_GID want{};
    if (pAddress->sa_family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(pAddress);
      want.Raw[10] = want.Raw[11] = 0xff;  // ::ffff:a.b.c.d (RoCEv2 IPv4 GID)
      std::memcpy(&want.Raw[12], &sin->sin_addr, 4);
    } else if (pAddress->sa_family == AF_INET6) {
      std::memcpy(want.Raw, &reinterpret_cast<const sockaddr_in6*>(pAddress)->sin6_addr, 16);
    } else {
      return WV_INVALID_PARAMETER;
    }
    std::vector<NET64> guids;
    {
      std::lock_guard lk(mu_);
      for (const ci_interface_t& c : ifaces_) guids.push_back(c.guid);
    }
    for (NET64 g : guids) {
      IWVDevice* d = nullptr;
      if (FAILED(OpenDevice(g, &d))) continue;
      WV_DEVICE_ATTRIBUTES a{};
      HRESULT hr = d->Query(&a);
      for (UINT8 p = 1; SUCCEEDED(hr) && p <= a.PhysPortCount; ++p) {
        DWORD index = 0;
        if (SUCCEEDED(d->FindGid(p, &want, &index))) {
          pDeviceAddress->DeviceGuid = g;
          pDeviceAddress->Pkey = htons(0xffff);
          pDeviceAddress->PortNumber = p;
          d->Release();
          return WV_SUCCESS;
        }
      }
      d->Release();
    }
    return WV_INVALID_ADDRESS;
  }

  HRESULT OpenDevice(NET64 Guid, IWVDevice** ppDevice) override try {
    if (ppDevice == nullptr || Guid == 0) return WV_INVALID_PARAMETER;
    *ppDevice = nullptr;
    ci_interface_t c{};
    if (!find(Guid, &c)) {
      // Not held: resolve it by GUID (kbv's "guid:" URI) and hold it.
      char uri[KBV_URI_MAX];
      std::snprintf(uri, sizeof uri, "guid:0x%llx", static_cast<unsigned long long>(be64toh(Guid)));
      HRESULT hr = add(uri);
      if (FAILED(hr)) return hr;
      if (!find(Guid, &c)) return WV_INVALID_ADDRESS;
    }
    Ca* ca = nullptr;
    HRESULT hr = Ca::get(c, be64toh(Guid), &ca);
    if (FAILED(hr)) return hr;
    *ppDevice = new Device(ca, verbs_);  // takes the CA reference
    return WV_SUCCESS;
  } catch (...) {
    return WV_NO_MEMORY;
  }

  HRESULT CreateConnectEndpoint(IWVConnectEndpoint** pp) override {
    if (pp) *pp = nullptr;
    return WV_NOT_SUPPORTED;
  }
  HRESULT CreateDatagramEndpoint(IWVDatagramEndpoint** pp) override {
    if (pp) *pp = nullptr;
    return WV_NOT_SUPPORTED;
  }

 private:
  bool find(NET64 guid, ci_interface_t* out) {
    std::lock_guard lk(mu_);
    for (const ci_interface_t& c : ifaces_)
      if (c.guid == guid) {
        *out = c;
        return true;
      }
    return false;
  }

  std::mutex mu_;
  std::vector<ci_interface_t> ifaces_;
  kbv_wv_verbs_t verbs_{};
};

}  // namespace

void to_wv(const ib_ca_attr_t& a, WV_DEVICE_ATTRIBUTES* out) {
  WV_DEVICE_ATTRIBUTES& w = *out;
  w = WV_DEVICE_ATTRIBUTES{};
  w.FwVersion = a.fw_ver;
  w.NodeGuid = a.ca_guid;
  w.SystemImageGuid = a.ca_guid;  // the model's and ConnectX's equal the node GUID
  w.VendorId = a.vend_id;
  w.VendorPartId = a.dev_id;
  w.HwVersion = a.revision;
  w.CapabilityFlags =
      WV_DEVICE_PORT_ACTIVE_EVENT | WV_DEVICE_SYSTEM_IMAGE_GUID | WV_DEVICE_RC_RNR_NAK_GENERATION;
  w.AtomicCapability = a.atomicity ? WvAtomicDevice : WvAtomicNone;
  w.PageSizeCapabilityFlags = 4096;
  w.MaxMrSize = a.init_region_size;
  w.MaxQp = a.max_qps;
  w.MaxQpWr = a.max_wrs;
  w.MaxSge = a.max_sges;
  w.MaxCq = a.max_cqs;
  w.MaxCqEntries = a.max_cqes;
  w.MaxMr = a.max_mrs;
  w.MaxPd = a.max_pds;
  w.MaxQpResponderResources = a.max_qp_resp_res;
  w.MaxResponderResources = a.max_qp_resp_res;
  w.MaxQpInitiatorDepth = a.max_qp_init_depth;
  w.MaxMulticast = a.max_mcast_grps;
  w.MaxQpAttach = a.max_qps_per_mcast_grp;
  w.MaxMulticastQp = a.max_qps_per_mcast_grp;
  w.MaxSrq = a.srq_supported ? a.max_srq : 0;
  w.MaxSrqWr = a.max_srq_wrs;
  w.MaxSrqSge = a.max_srq_sges;
  w.MaxPkeys = a.max_pkeys;
  w.DeviceType = WvDeviceInfiniband;
  w.LocalAckDelay = static_cast<UINT8>(a.local_ack_delay);
  w.PhysPortCount = a.num_ports;
}

// ---- IWVDevice ---------------------------------------------------------------------

Device::Device(Ca* c, const kbv_wv_verbs_t& v) : ca(c), verbs(v) { ca->attach(this); }

Device::~Device() {
  ca->detach(this);
  ca->release();
}

void Device::port_event(uint8_t port, DWORD flags) {
  complete(kPortEvent, WV_SUCCESS, port, flags, /*latch=*/true);
}

// fn(port attributes) for a valid port of the device (query_ca).
template <class Fn>
HRESULT with_port(const Ca& ca, UINT8 port, Fn&& fn) {
  std::vector<uint64_t> mem;
  ib_ca_attr_t* a = nullptr;
  HRESULT hr = query_ca(ca, mem, &a);
  if (FAILED(hr)) return hr;
  if (port < 1 || port > a->num_ports) return WV_INVALID_PARAMETER;
  return fn(a->p_port_attr[port - 1]);
}

HRESULT Device::Query(WV_DEVICE_ATTRIBUTES* pAttributes) {
  if (pAttributes == nullptr) return WV_INVALID_PARAMETER;
  std::vector<uint64_t> mem;
  ib_ca_attr_t* a = nullptr;
  HRESULT hr = query_ca(*ca, mem, &a);
  if (SUCCEEDED(hr)) to_wv(*a, pAttributes);
  return hr;
}

HRESULT Device::QueryPort(UINT8 PortNumber, WV_PORT_ATTRIBUTES* pAttributes) {
  if (pAttributes == nullptr) return WV_INVALID_PARAMETER;
  return with_port(*ca, PortNumber, [&](const ib_port_attr_t& p) {
    WV_PORT_ATTRIBUTES& w = *pAttributes;
    w = WV_PORT_ATTRIBUTES{};
    w.State = static_cast<WV_PORT_STATE>(p.link_state);  // IBTA PortState values
    w.MaxMtu = mtu_bytes(p.mtu);
    w.ActiveMtu = mtu_bytes(p.active_mtu);
    w.GidTableLength = p.num_gids;
    w.MaxMessageSize = 1u << 31;  // IBTA: 2^31 bytes
    w.PkeyTableLength = p.num_pkeys;
    w.Lid = p.lid;
    w.PhysicalState = p.link_state == 4 ? 5 : 3;  // LinkUp / Disabled (IBTA PortPhysicalState)
    return WV_SUCCESS;
  });
}

HRESULT Device::QueryGid(UINT8 PortNumber, DWORD Index, WV_GID* pGid) {
  if (pGid == nullptr) return WV_INVALID_PARAMETER;
  return with_port(*ca, PortNumber, [&](const ib_port_attr_t& p) {
    if (Index >= p.num_gids) return WV_INVALID_PARAMETER;
    std::memcpy(pGid->Raw, p.p_gid_table[Index].raw, 16);
    return WV_SUCCESS;
  });
}

HRESULT Device::FindGid(UINT8 PortNumber, WV_GID* pGid, DWORD* pIndex) {
  if (pGid == nullptr || pIndex == nullptr) return WV_INVALID_PARAMETER;
  return with_port(*ca, PortNumber, [&](const ib_port_attr_t& p) {
    for (DWORD i = 0; i < p.num_gids; ++i)
      if (std::memcmp(p.p_gid_table[i].raw, pGid->Raw, 16) == 0) {
        *pIndex = i;
        return WV_SUCCESS;
      }
    return WV_INVALID_ADDRESS;
  });
}

HRESULT Device::QueryPkey(UINT8 PortNumber, UINT16 Index, NET16* pPkey) {
  if (pPkey == nullptr) return WV_INVALID_PARAMETER;
  return with_port(*ca, PortNumber, [&](const ib_port_attr_t& p) {
    if (Index >= p.num_pkeys) return WV_INVALID_PARAMETER;
    *pPkey = p.p_pkey_table[Index];
    return WV_SUCCESS;
  });
}

HRESULT Device::FindPkey(UINT8 PortNumber, NET16 Pkey, UINT16* pIndex) {
  if (pIndex == nullptr) return WV_INVALID_PARAMETER;
  return with_port(*ca, PortNumber, [&](const ib_port_attr_t& p) {
    for (UINT16 i = 0; i < p.num_pkeys; ++i)
      if (p.p_pkey_table[i] == Pkey) {
        *pIndex = i;
        return WV_SUCCESS;
      }
    return WV_INVALID_PARAMETER;  // not in the table
  });
}

HRESULT Device::CreateCompletionQueue(SIZE_T* pEntries, IWVCompletionQueue** ppCq) try {
  if (pEntries == nullptr || ppCq == nullptr || *pEntries > UINT32_MAX) return WV_INVALID_PARAMETER;
  *ppCq = nullptr;
  auto* cq = new Cq(this);
  uint32_t n = static_cast<uint32_t>(*pEntries);
  const kbv_wv_verbs_t& v = verbs;
  const ib_api_status_t st = UmvCall::run(
      [&](ci_umv_buf_t* u) {
        return v.pre_create_cq ? v.pre_create_cq(v.context, &n, u) : IB_SUCCESS;
      },
      [&](ci_umv_buf_t* u) { return ca->ci.create_cq(ca->h, cq->key(), &n, &cq->h, u); },
      [&](ib_api_status_t s, ci_umv_buf_t* u) {
        if (v.post_create_cq) v.post_create_cq(v.context, s, n, u);
      });
  if (st != IB_SUCCESS) {
    cq->h = nullptr;
    cq->release();
    return hr_of(st);
  }
  *pEntries = n;
  *ppCq = cq;
  return WV_SUCCESS;
} catch (...) {
  return WV_NO_MEMORY;
}

HRESULT Device::AllocateProtectionDomain(IWVProtectionDomain** ppPd) try {
  if (ppPd == nullptr) return WV_INVALID_PARAMETER;
  *ppPd = nullptr;
  auto* pd = new Pd(this);
  const kbv_wv_verbs_t& v = verbs;
  const ib_api_status_t st = UmvCall::run(
      [&](ci_umv_buf_t* u) {
        return v.pre_allocate_pd ? v.pre_allocate_pd(v.context, u) : IB_SUCCESS;
      },
      [&](ci_umv_buf_t* u) { return ca->ci.allocate_pd(ca->h, IB_PDT_NORMAL, &pd->h, u); },
      [&](ib_api_status_t s, ci_umv_buf_t* u) {
        if (v.post_allocate_pd) v.post_allocate_pd(v.context, s, u);
      });
  if (st != IB_SUCCESS) {
    pd->h = nullptr;
    pd->release();
    return hr_of(st);
  }
  *ppPd = pd;
  return WV_SUCCESS;
} catch (...) {
  return WV_NO_MEMORY;
}

HRESULT Device::Notify(UINT8 PortNumber, OVERLAPPED* pOverlapped, DWORD* pFlags) {
  if (pFlags == nullptr || PortNumber < 1 || PortNumber > ca->ports) return WV_INVALID_PARAMETER;
  OVERLAPPED local{};
  return wait_if_sync(pOverlapped, local,
                      begin(pOverlapped ? pOverlapped : &local, kPortEvent, PortNumber, pFlags));
}

// ---- IWVCompletionQueue ------------------------------------------------------------

Cq::~Cq() {
  if (h) (void)dev->ca->ci.destroy_cq(h);
  dev->Release();
}

void Cq::on_completion() {
  {
    std::lock_guard lk(arm_mu_);
    armed_ = false;
  }
  complete(kCqCompletion, WV_SUCCESS);
}

void Cq::on_event(const ib_event_rec_t& rec) {
  if (rec.type != IB_AE_CQ_ERROR) return;
  HRESULT why = hr_of(ci::status_of(static_cast<kbv_status_t>(rec.vendor_specific)));
  if (SUCCEEDED(why)) why = WV_UNKNOWN_ERROR;
  complete(kCqError, WV_SUCCESS);
  complete(kCqCompletion, why);
}

void Cq::add_qp(uint32_t qpn, void* context) {
  std::lock_guard lk(qmu_);
  qp_context_[qpn] = context;
}

void Cq::remove_qp(uint32_t qpn) {
  std::lock_guard lk(qmu_);
  qp_context_.erase(qpn);
}

HRESULT Cq::Resize(SIZE_T* pEntries) {
  if (pEntries == nullptr || *pEntries > UINT32_MAX) return WV_INVALID_PARAMETER;
  uint32_t n = static_cast<uint32_t>(*pEntries);
  const ib_api_status_t st = dev->ca->ci.resize_cq(h, &n, nullptr);
  if (st != IB_SUCCESS) return hr_of(st);
  *pEntries = n;
  return WV_SUCCESS;
}

HRESULT Cq::Peek(SIZE_T* pCompletedEntries) {
  if (pCompletedEntries == nullptr) return WV_INVALID_PARAMETER;
  uint32_t n = 0;
  const ib_api_status_t st = dev->ca->ci.peek_cq(h, &n);
  if (st != IB_SUCCESS) return hr_of(st);
  *pCompletedEntries = n;
  return WV_SUCCESS;
}

HRESULT Cq::Notify(WV_CQ_NOTIFY_TYPE Type, OVERLAPPED* pOverlapped) {
  if (Type != WvCqError && Type != WvCqNextCompletion && Type != WvCqSolicited)
    return WV_INVALID_PARAMETER;
  OVERLAPPED local{};
  OVERLAPPED* ov = pOverlapped ? pOverlapped : &local;
  if (Type == WvCqError) return wait_if_sync(pOverlapped, local, begin(ov, kCqError));
  std::unique_lock lk(arm_mu_);
  HRESULT hr = begin(ov, kCqCompletion);
  if (hr != WV_IO_PENDING) return hr;
  const bool solicited = Type == WvCqSolicited;
  // One arm serves every request: re-arm only to widen solicited -> any.
  if (!armed_ || (solicited_ && !solicited)) {
    const ib_api_status_t st = dev->ca->ci.enable_cq_notify(h, solicited);
    if (st != IB_SUCCESS) {
      complete(kCqCompletion, hr_of(st));
      return hr_of(st);
    }
    armed_ = true;
    solicited_ = solicited;
  }
  lk.unlock();
  return wait_if_sync(pOverlapped, local, WV_IO_PENDING);
}

HRESULT Cq::BatchNotify(SIZE_T CompletedEntries, OVERLAPPED* pOverlapped) {
  if (CompletedEntries == 0 || CompletedEntries > UINT32_MAX) return WV_INVALID_PARAMETER;
  const ib_api_status_t st =
      dev->ca->ci.enable_ncomp_cq_notify(h, static_cast<uint32_t>(CompletedEntries));
  if (st != IB_SUCCESS) return finish(pOverlapped, hr_of(st));  // IB_UNSUPPORTED on kbv
  {
    std::lock_guard lk(arm_mu_);
    armed_ = true;
    solicited_ = false;
  }
  OVERLAPPED local{};
  return wait_if_sync(pOverlapped, local, begin(pOverlapped ? pOverlapped : &local, kCqCompletion));
}

SIZE_T Cq::Poll(WV_COMPLETION Completions[], SIZE_T Entries) {
  if (Completions == nullptr) return 0;
  constexpr uint32_t kChunk = 16;
  ib_wc_t wc[kChunk];
  uint32_t qpn[kChunk];
  SIZE_T done = 0;
  while (done < Entries) {
    const auto want = static_cast<uint32_t>(std::min<SIZE_T>(Entries - done, kChunk));
    uint32_t got = 0;
    if (ci::poll_cq_array(h, want, wc, qpn, &got) != IB_SUCCESS || got == 0) break;
    std::lock_guard lk(qmu_);
    for (uint32_t i = 0; i < got; ++i) {
      const ib_wc_t& k = wc[i];
      WV_COMPLETION& w = Completions[done + i];
      auto it = qp_context_.find(qpn[i]);
      w.QpContext = it == qp_context_.end() ? nullptr : it->second;
      w.WrId = k.wr_id;
      w.Opcode = static_cast<WV_OPCODE>(k.wc_type);  // IB_WC_* and Wv* share values
      w.Length = k.length;
      w.VendorCode = k.vendor_specific;
      w.Status = wc_hr_of(k.status);
      w.Flags = k.recv.ud.recv_opt & (WV_WC_IMMEDIATE | WV_WC_GRH_VALID);
      w.ImmediateData = k.recv.ud.immediate_data;
      w.SourceQpn = k.recv.ud.remote_qp;
      w.PkeyIndex = k.recv.ud.pkey_index;
      w.SLid = k.recv.ud.remote_lid;
      w.SL = k.recv.ud.remote_sl;
      w.DLidPathBits = k.recv.ud.path_bits;
    }
    done += got;
    if (got < want) break;
  }
  return done;
}

}  // namespace kbv::compat::wv

using namespace kbv::compat::wv;

extern "C" HRESULT kbv_wv_open_provider(const char* const* uris, size_t count,
                                        const kbv_wv_verbs_t* verbs, IWVProvider** ppProvider) try {
  if (ppProvider == nullptr || (count > 0 && uris == nullptr)) return WV_INVALID_PARAMETER;
  *ppProvider = nullptr;
  auto* p = new Provider(verbs);
  for (size_t i = 0; i < count; ++i) {
    const HRESULT hr = uris[i] ? p->add(uris[i]) : WV_INVALID_PARAMETER;
    if (FAILED(hr)) {
      p->Release();
      return hr;
    }
  }
  *ppProvider = p;
  return WV_SUCCESS;
} catch (...) {
  return WV_NO_MEMORY;
}

extern "C" HRESULT kbv_wv_get_object(const IID* riid, LPVOID* ppvObj) try {
  if (ppvObj == nullptr || riid == nullptr) return E_POINTER;
  *ppvObj = nullptr;
  if (*riid != IID_IWVProvider) return E_NOINTERFACE;
  uint32_t n = 0;
  if (kbv_get_device_list(nullptr, 0, &n) != KBV_SUCCESS) n = 0;
  std::vector<kbv_device_desc_t> list(n);
  if (n && kbv_get_device_list(list.data(), n, &n) != KBV_SUCCESS) n = 0;
  list.resize(std::min<size_t>(n, list.size()));
  auto* p = new Provider(nullptr);
  for (const kbv_device_desc_t& d : list) (void)p->add(d.uri);  // one that fails is left out
  *ppvObj = static_cast<IWVProvider*>(p);
  return WV_SUCCESS;
} catch (...) {
  return WV_NO_MEMORY;
}
