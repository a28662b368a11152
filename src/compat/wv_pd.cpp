// SPDX-License-Identifier: BSD-3-Clause
// WinVerbs (kbv/compat/winverbs.h): IWVProtectionDomain (memory
// registration, address handles, SRQ and QP creation), IWVSharedReceiveQueue
// and IWVAddressHandle on the channel interface. docs/CI.md "WinVerbs".
#include <arpa/inet.h>

#include <cstring>
#include <new>

#include "compat/wv_objects.hpp"

namespace kbv::compat::wv {

uint8_t ib_mtu_of(UINT32 bytes) {
  switch (bytes) {
    case 256: return 1;
    case 512: return 2;
    case 1024: return 3;
    case 2048: return 4;
    case 4096: return 5;
    default: return 0;
  }
}

HRESULT to_ib(const WV_ADDRESS_VECTOR& a, const WV_QP_ATTRIBUTES* qa, ib_av_attr_t* out) {
  ib_av_attr_t& v = *out;
  v = ib_av_attr_t{};
  v.port_num = a.PortNumber;
  v.sl = a.ServiceLevel;
  v.dlid = a.DLid;
  v.static_rate = a.StaticRate;
  v.path_bits = a.SourcePathBits;
  v.grh_valid = a.Route.Valid != 0;
  if (v.grh_valid) {
    v.grh.ver_class_flow =
        htonl((ntohl(a.Route.FlowLabel) & 0xfffff) | uint32_t{a.Route.TrafficClass} << 20);
    v.grh.hop_limit = a.Route.HopLimit;
    std::memcpy(v.grh.src_gid.raw, a.Route.SGid.Raw, 16);
    std::memcpy(v.grh.dest_gid.raw, a.Route.DGid.Raw, 16);
  }
  if (qa != nullptr) {
    v.conn.path_mtu = ib_mtu_of(qa->PathMtu);
    if (v.conn.path_mtu == 0) return WV_INVALID_PARAMETER;
    v.conn.local_ack_timeout = qa->LocalAckTimeout;
    v.conn.seq_err_retry_cnt = qa->SequenceErrorRetryCount;
    v.conn.rnr_retry_cnt = qa->RnrRetryCount;
  }
  return WV_SUCCESS;
}

void Sges::set(const WV_SGE* sgl, SIZE_T n) {
  count = static_cast<uint32_t>(n);
  ib_local_ds_t* d = local;
  if (n > kLocal) {
    heap.resize(n);
    d = heap.data();
  }
  for (SIZE_T i = 0; i < n; ++i) {
    d[i].vaddr = reinterpret_cast<uintptr_t>(sgl[i].pAddress);
    d[i].length = sgl[i].Length;
    d[i].lkey = htonl(sgl[i].Lkey);  // ib_local_ds_t: as register_mr returned it
  }
  ds = d;
}

// ---- IWVProtectionDomain ------------------------------------------------------------

Pd::~Pd() {
  for (auto& [lkey, mr] : mrs_) (void)dev->ca->ci.deregister_mr(mr);
  if (h) (void)dev->ca->ci.deallocate_pd(h);
  dev->Release();
}

HRESULT Pd::CreateSharedReceiveQueue(SIZE_T MaxWr, SIZE_T MaxSge, SIZE_T SrqLimit,
                                     IWVSharedReceiveQueue** ppSrq) try {
  if (ppSrq == nullptr || MaxWr > UINT32_MAX || MaxSge > UINT32_MAX || SrqLimit > UINT32_MAX)
    return WV_INVALID_PARAMETER;
  *ppSrq = nullptr;
  auto* srq = new Srq(this);
  ib_srq_attr_t a{static_cast<uint32_t>(MaxWr), static_cast<uint32_t>(MaxSge),
                  static_cast<uint32_t>(SrqLimit)};
  const kbv_wv_verbs_t& v = dev->verbs;
  const ib_api_status_t st = UmvCall::run(
      [&](ci_umv_buf_t* u) {
        return v.pre_create_srq ? v.pre_create_srq(v.context, &a, u) : IB_SUCCESS;
      },
      [&](ci_umv_buf_t* u) { return dev->ca->ci.create_srq(h, srq->key(), &a, &srq->h, u); },
      [&](ib_api_status_t s, ci_umv_buf_t* u) {
        if (v.post_create_srq) v.post_create_srq(v.context, s, u);
      });
  if (st != IB_SUCCESS) {
    srq->h = nullptr;
    srq->release();
    return hr_of(st);
  }
  srq->attr = a;
  *ppSrq = srq;
  return WV_SUCCESS;
} catch (...) {
  return WV_NO_MEMORY;
}

HRESULT Pd::CreateConnectQueuePair(WV_QP_CREATE* pAttributes, IWVConnectQueuePair** ppQp) {
  return create_connect_qp(this, pAttributes, ppQp);
}

HRESULT Pd::CreateDatagramQueuePair(WV_QP_CREATE* pAttributes, IWVDatagramQueuePair** ppQp) {
  return create_datagram_qp(this, pAttributes, ppQp);
}

HRESULT Pd::RegisterMemory(const VOID* pBuffer, SIZE_T BufferLength, DWORD AccessFlags,
                           OVERLAPPED* pOverlapped, WV_MEMORY_KEYS* pKeys) try {
  if (pBuffer == nullptr || BufferLength == 0 || pKeys == nullptr)
    return finish(pOverlapped, WV_INVALID_PARAMETER);
  ib_mr_create_t mc{const_cast<VOID*>(pBuffer), BufferLength, AccessFlags};
  net32_t lkey = 0, rkey = 0;
  ib_mr_handle_t mr = nullptr;
  const ib_api_status_t st = dev->ca->ci.register_mr(h, &mc, &lkey, &rkey, &mr, 0);
  if (st != IB_SUCCESS) return finish(pOverlapped, hr_of(st));
  {
    std::lock_guard lk(mu_);
    mrs_[ntohl(lkey)] = mr;
  }
  pKeys->Lkey = ntohl(lkey);
  pKeys->Rkey = rkey;
  return finish(pOverlapped, WV_SUCCESS);
} catch (...) {
  return finish(pOverlapped, WV_NO_MEMORY);
}

HRESULT Pd::DeregisterMemory(UINT32 Lkey, OVERLAPPED* pOverlapped) {
  ib_mr_handle_t mr = nullptr;
  {
    std::lock_guard lk(mu_);
    auto it = mrs_.find(Lkey);
    if (it == mrs_.end()) return finish(pOverlapped, hr_of(IB_INVALID_LKEY));
    mr = it->second;
    mrs_.erase(it);
  }
  return finish(pOverlapped, hr_of(dev->ca->ci.deregister_mr(mr)));
}

HRESULT Pd::AllocateMemoryWindow(IWVMemoryWindow** ppMw) {
  if (ppMw == nullptr) return WV_INVALID_PARAMETER;
  *ppMw = nullptr;
  net32_t rkey = 0;
  ib_mw_handle_t mw = nullptr;
  const ib_api_status_t st = dev->ca->ci.create_mw(h, &rkey, &mw, nullptr);
  if (st != IB_SUCCESS) return hr_of(st);  // IB_UNSUPPORTED on kbv
  (void)dev->ca->ci.destroy_mw(mw);        // a window kbv could make has no IWV object yet
  return WV_NOT_SUPPORTED;
}

HRESULT Pd::CreateAddressHandle(WV_ADDRESS_VECTOR* pAddress, IWVAddressHandle** ppAh,
                                ULONG_PTR* pAhKey) try {
  if (pAddress == nullptr || ppAh == nullptr || pAhKey == nullptr) return WV_INVALID_PARAMETER;
  *ppAh = nullptr;
  ib_av_attr_t av;
  if (HRESULT hr = to_ib(*pAddress, nullptr, &av); FAILED(hr)) return hr;
  auto* ah = new Ah(this);
  const kbv_wv_verbs_t& v = dev->verbs;
  const ib_api_status_t st = UmvCall::run(
      [&](ci_umv_buf_t* u) {
        return v.pre_create_av ? v.pre_create_av(v.context, &av, u) : IB_SUCCESS;
      },
      [&](ci_umv_buf_t* u) { return dev->ca->ci.create_av(h, &av, &ah->h, u); },
      [&](ib_api_status_t s, ci_umv_buf_t* u) {
        if (v.post_create_av) v.post_create_av(v.context, s, u);
      });
  if (st != IB_SUCCESS) {
    ah->h = nullptr;
    ah->release();
    return hr_of(st);
  }
  *pAhKey = reinterpret_cast<ULONG_PTR>(ah->h);
  *ppAh = ah;
  return WV_SUCCESS;
} catch (...) {
  return WV_NO_MEMORY;
}

// ---- IWVAddressHandle ---------------------------------------------------------------

Ah::~Ah() {
  if (h) (void)pd->dev->ca->ci.destroy_av(h);
  pd->Release();
}

// ---- IWVSharedReceiveQueue ----------------------------------------------------------

Srq::~Srq() {
  if (h) (void)pd->dev->ca->ci.destroy_srq(h);
  pd->Release();
}

void Srq::on_event(const ib_event_rec_t& rec) {
  if (rec.type == IB_AE_SRQ_LIMIT_REACHED) complete(kSrqLimit, WV_SUCCESS, 0, 0, /*latch=*/true);
}

HRESULT Srq::Query(SIZE_T* pMaxWr, SIZE_T* pMaxSge, SIZE_T* pSrqLimit) {
  if (pMaxWr == nullptr || pMaxSge == nullptr || pSrqLimit == nullptr) return WV_INVALID_PARAMETER;
  ib_srq_attr_t a{};
  const ib_api_status_t st = pd->dev->ca->ci.query_srq(h, &a, nullptr);
  if (st != IB_SUCCESS) return hr_of(st);
  *pMaxWr = a.max_wr;
  *pMaxSge = a.max_sge;
  *pSrqLimit = a.srq_limit;
  return WV_SUCCESS;
}

HRESULT Srq::Modify(SIZE_T MaxWr, SIZE_T SrqLimit) {
  if (MaxWr > UINT32_MAX || SrqLimit > UINT32_MAX) return WV_INVALID_PARAMETER;
  ib_srq_attr_t a{static_cast<uint32_t>(MaxWr), attr.max_sge, static_cast<uint32_t>(SrqLimit)};
  // A new MaxWr is a resize (IB_SRQ_MAX_WR): IB_UNSUPPORTED on kbv.
  const ib_srq_attr_mask_t mask = IB_SRQ_LIMIT | (a.max_wr != attr.max_wr ? IB_SRQ_MAX_WR : 0);
  const ib_api_status_t st = pd->dev->ca->ci.modify_srq(h, &a, mask, nullptr);
  if (st == IB_SUCCESS) attr.srq_limit = a.srq_limit;
  return hr_of(st);
}

HRESULT Srq::PostReceive(UINT64 WrId, WV_SGE* pSgl, SIZE_T nSge) try {
  if (pSgl == nullptr && nSge > 0) return WV_INVALID_PARAMETER;
  Sges s;
  s.set(pSgl, nSge);
  ib_recv_wr_t w{nullptr, WrId, s.count, s.ds};
  return hr_of(pd->dev->ca->ci.post_srq_recv(h, &w, nullptr));
} catch (...) {
  return WV_NO_MEMORY;
}

HRESULT Srq::Notify(OVERLAPPED* pOverlapped) {
  OVERLAPPED local{};
  return wait_if_sync(pOverlapped, local, begin(pOverlapped ? pOverlapped : &local, kSrqLimit));
}

}  // namespace kbv::compat::wv
