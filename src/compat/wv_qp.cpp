// SPDX-License-Identifier: BSD-3-Clause
// WinVerbs (kbv/compat/winverbs.h): IWVConnectQueuePair and
// IWVDatagramQueuePair on the channel interface — creation (pre/post),
// Query / Modify (WV_QP_ATTRIBUTES <-> ib_qp_attr_t / ib_qp_mod_t, as
// WinVerbs converts them), PostSend (WV_SEND_REQUEST lists to linked
// ib_send_wr_t lists in chunks, the failed request handed back),
// PostReceive, the one-request helpers and multicast. docs/CI.md "WinVerbs".
#include <arpa/inet.h>
#include <endian.h>

#include <cstring>
#include <new>

#include "compat/wv_objects.hpp"

namespace kbv::compat::wv {
namespace {

ib_qp_state_t ib_state_of(WV_QP_STATE s) {
  switch (s) {
    case WvQpStateReset: return IB_QPS_RESET;
    case WvQpStateInit: return IB_QPS_INIT;
    case WvQpStateRtr: return IB_QPS_RTR;
    case WvQpStateRts: return IB_QPS_RTS;
    case WvQpStateSqd: return IB_QPS_SQD;
    case WvQpStateSqError: return IB_QPS_SQERR;
    default: return IB_QPS_ERROR;
  }
}

WV_QP_STATE wv_state_of(ib_qp_state_t s) {
  switch (s) {
    case IB_QPS_RESET: return WvQpStateReset;
    case IB_QPS_INIT: return WvQpStateInit;
    case IB_QPS_RTR: return WvQpStateRtr;
    case IB_QPS_RTS: return WvQpStateRts;
    case IB_QPS_SQD: return WvQpStateSqd;
    case IB_QPS_SQERR: return WvQpStateSqError;
    default: return WvQpStateError;
  }
}

// WV_QP_ATTR_* -> IB_MOD_QP_* (WinVerbs' option table).
ib_qp_opts_t ib_opts_of(DWORD o) {
  constexpr std::pair<DWORD, ib_qp_opts_t> kMap[] = {
      {WV_QP_ATTR_CAPABILITIES, IB_MOD_QP_SQ_DEPTH | IB_MOD_QP_RQ_DEPTH},
      {WV_QP_ATTR_INITIATOR_DEPTH, IB_MOD_QP_INIT_DEPTH},
      {WV_QP_ATTR_RESPONDER_RESOURCES, IB_MOD_QP_RESP_RES},
      {WV_QP_ATTR_CURRENT_STATE, IB_MOD_QP_CURRENT_STATE},
      {WV_QP_ATTR_PATH_MIG_STATE, IB_MOD_QP_APM_STATE},
      {WV_QP_ATTR_QKEY, IB_MOD_QP_QKEY},
      {WV_QP_ATTR_ACCESS_FLAGS, IB_MOD_QP_ACCESS_CTRL},
      {WV_QP_ATTR_AV, IB_MOD_QP_PRIMARY_AV},
      {WV_QP_ATTR_ALTERNATE_AV, IB_MOD_QP_ALTERNATE_AV},
      {WV_QP_ATTR_PORT_NUMBER, IB_MOD_QP_PRIMARY_PORT},
      {WV_QP_ATTR_PKEY_INDEX, IB_MOD_QP_PKEY},
      {WV_QP_ATTR_ACK_TIMEOUT, IB_MOD_QP_LOCAL_ACK_TIMEOUT},
      {WV_QP_ATTR_RNR_NAK_TIMEOUT, IB_MOD_QP_RNR_NAK_TIMEOUT},
      {WV_QP_ATTR_ERROR_RETRY_COUNT, IB_MOD_QP_RETRY_CNT},
      {WV_QP_ATTR_RNR_RETRY_COUNT, IB_MOD_QP_RNR_RETRY_CNT},
  };
  ib_qp_opts_t r = 0;
  for (const auto& [wv, ib] : kMap)
    if (o & wv) r |= ib;
  return r;
}

void av_to_wv(const ib_av_attr_t& v, WV_ADDRESS_VECTOR* out) {
  WV_ADDRESS_VECTOR& a = *out;
  a = WV_ADDRESS_VECTOR{};
  a.Route.Valid = v.grh_valid ? 1 : 0;
  if (v.grh_valid) {
    a.Route.FlowLabel = htonl(ntohl(v.grh.ver_class_flow) & 0xfffff);
    a.Route.TrafficClass = static_cast<UINT8>(ntohl(v.grh.ver_class_flow) >> 20);
    a.Route.HopLimit = v.grh.hop_limit;
    std::memcpy(a.Route.SGid.Raw, v.grh.src_gid.raw, 16);
    std::memcpy(a.Route.DGid.Raw, v.grh.dest_gid.raw, 16);
  }
  a.DLid = v.dlid;
  a.ServiceLevel = v.sl;
  a.SourcePathBits = v.path_bits;
  a.StaticRate = v.static_rate;
  a.PortNumber = v.port_num;
}

// One WV_SEND_REQUEST as a (not yet linked) ib_send_wr_t; false for an
// opcode the channel interface has no WR for (WvBindWindow: no windows).
bool to_ib_wr(const WV_SEND_REQUEST& r, Sges& sges, ib_send_wr_t* out) {
  if (r.Opcode > WvFetchAdd) return false;
  sges.set(r.pSgl, r.nSge);
  ib_send_wr_t& w = *out;
  std::memset(&w, 0, sizeof w);
  w.wr_id = r.WrId;
  w.ds_array = sges.ds;
  w.num_ds = sges.count;
  w.wr_type = static_cast<ib_wr_type_t>(r.Opcode);  // WvSend..WvFetchAdd = WR_SEND..WR_FETCH_ADD
  w.send_opt = r.Flags & (WV_SEND_IMMEDIATE | WV_SEND_FENCE | WV_SEND_SIGNALED | WV_SEND_SOLICITED |
                          WV_SEND_INLINE);  // IB_SEND_OPT_* bits
  w.immediate_data = r.ImmediateData;
  auto& ops = w.dgrm_or_ops.remote_ops;
  switch (r.Opcode) {
    case WvSend:  // the Datagram member is read by UD QPs only
      w.dgrm_or_ops.ud.h_av = reinterpret_cast<ib_av_handle_t>(r.Wr.Datagram.AhKey);
      w.dgrm_or_ops.ud.remote_qp = r.Wr.Datagram.DestinationQpn;
      w.dgrm_or_ops.ud.remote_qkey = r.Wr.Datagram.DestinationQkey;
      break;
    case WvRdmaWrite:
    case WvRdmaRead:
      ops.vaddr = be64toh(r.Wr.Rdma.RemoteAddress);
      ops.rkey = r.Wr.Rdma.Rkey;
      break;
    case WvCompareExchange:
      ops.vaddr = be64toh(r.Wr.CompareExchange.RemoteAddress);
      ops.rkey = r.Wr.CompareExchange.Rkey;
      ops.atomic1 = r.Wr.CompareExchange.Compare;
      ops.atomic2 = r.Wr.CompareExchange.Exchange;
      break;
    default:  // WvFetchAdd
      ops.vaddr = be64toh(r.Wr.FetchAdd.RemoteAddress);
      ops.rkey = r.Wr.FetchAdd.Rkey;
      ops.atomic1 = r.Wr.FetchAdd.Add;
      break;
  }
  return true;
}

template <class I>
class Qp : public ComOv<I> {
 public:
  Qp(Pd* p, Cq* s, Cq* r, Srq* q, const WV_QP_CREATE& c)
      : pd_(p), scq_(s), rcq_(r), srq_(q), context_(c.Context), type_(c.QpType) {
    pd_->AddRef();
    scq_->AddRef();
    rcq_->AddRef();
    if (srq_) srq_->AddRef();
  }
  ~Qp() override {
    if (h_) {
      scq_->remove_qp(qpn_);
      rcq_->remove_qp(qpn_);
      (void)ci().destroy_qp(h_, 0);
    }
    if (srq_) srq_->Release();
    rcq_->Release();
    scq_->Release();
    pd_->Release();
  }

  HRESULT create(const WV_QP_CREATE& a) {
    if (a.QpFlags & WV_QP_MEMORY_MANAGEMENT) return WV_NOT_SUPPORTED;  // no memory windows
    ib_qp_create_t c{};
    c.qp_type = type_ == WvQpTypeRc   ? IB_QPT_RELIABLE_CONN
                : type_ == WvQpTypeUc ? IB_QPT_UNRELIABLE_CONN
                                      : IB_QPT_UNRELIABLE_DGRM;
    c.sq_max_inline = static_cast<uint32_t>(a.MaxInlineSend);
    c.sq_depth = static_cast<uint32_t>(a.SendDepth);
    c.rq_depth = static_cast<uint32_t>(a.ReceiveDepth);
    c.sq_sge = static_cast<uint32_t>(a.SendSge);
    c.rq_sge = static_cast<uint32_t>(a.ReceiveSge);
    c.h_sq_cq = scq_->h;
    c.h_rq_cq = rcq_->h;
    c.h_srq = srq_ ? srq_->h : nullptr;
    c.sq_signaled = (a.QpFlags & WV_QP_SIGNAL_SENDS) != 0;
    const kbv_wv_verbs_t& v = pd_->dev->verbs;
    ib_qp_attr_t qa{};
    const ib_api_status_t st = UmvCall::run(
        [&](ci_umv_buf_t* u) {
          return v.pre_create_qp ? v.pre_create_qp(v.context, &c, u) : IB_SUCCESS;
        },
        [&](ci_umv_buf_t* u) { return ci().create_qp(pd_->h, this->key(), &c, &qa, &h_, u); },
        [&](ib_api_status_t s, ci_umv_buf_t* u) {
          if (v.post_create_qp) v.post_create_qp(v.context, s, u);
        });
    if (st != IB_SUCCESS) {
      h_ = nullptr;
      return hr_of(st);
    }
    qpn_ = ntohl(qa.num);
    scq_->add_qp(qpn_, context_);
    rcq_->add_qp(qpn_, context_);
    return WV_SUCCESS;
  }

  HRESULT Query(WV_QP_ATTRIBUTES* pAttributes) override {
    if (pAttributes == nullptr) return WV_INVALID_PARAMETER;
    ib_qp_attr_t a{};
    const ib_api_status_t st = ci().query_qp(h_, &a, nullptr);
    if (st != IB_SUCCESS) return hr_of(st);
    WV_QP_ATTRIBUTES& w = *pAttributes;
    w = WV_QP_ATTRIBUTES{};
    w.pPd = pd_;
    w.pSendCq = scq_;
    w.pReceiveCq = rcq_;
    w.pSharedReceiveQueue = srq_;
    w.SendDepth = a.sq_depth;
    w.SendSge = a.sq_sge;
    w.ReceiveDepth = a.rq_depth;
    w.ReceiveSge = a.rq_sge;
    w.MaxInlineSend = a.sq_max_inline;
    w.InitiatorDepth = a.init_depth;
    w.ResponderResources = a.resp_res;
    w.QpType = type_;
    w.CurrentQpState = w.QpState = wv_state_of(a.state);
    w.ApmState = static_cast<WV_APM_STATE>(a.apm_state);  // same values
    w.Qpn = a.num;
    w.DestinationQpn = a.dest_num;
    w.Qkey = a.qkey;
    w.SendPsn = a.sq_psn;
    w.ReceivePsn = a.rq_psn;
    w.QpFlags = a.sq_signaled ? WV_QP_SIGNAL_SENDS : 0;
    w.AccessFlags = a.access_ctrl;
    av_to_wv(a.primary_av, &w.AddressVector);
    w.AddressVector.PortNumber = a.primary_port;
    w.PathMtu = a.primary_av.conn.path_mtu ? 128u << a.primary_av.conn.path_mtu : 0;
    w.PkeyIndex = a.pkey_index;
    w.LocalAckTimeout = a.primary_av.conn.local_ack_timeout;
    w.SequenceErrorRetryCount = a.primary_av.conn.seq_err_retry_cnt;
    w.RnrRetryCount = a.primary_av.conn.rnr_retry_cnt;
    return WV_SUCCESS;
  }

  HRESULT Modify(WV_QP_ATTRIBUTES* pAttributes, DWORD Options, OVERLAPPED* pOverlapped) override {
    if (pAttributes == nullptr) return finish(pOverlapped, WV_INVALID_PARAMETER);
    const WV_QP_ATTRIBUTES& a = *pAttributes;
    WV_QP_STATE to = a.QpState;
    if (!(Options & WV_QP_ATTR_STATE)) {  // attributes only: stay in the current state
      WV_QP_ATTRIBUTES cur;
      if (HRESULT hr = Query(&cur); FAILED(hr)) return finish(pOverlapped, hr);
      to = cur.QpState;
    }
    const bool connected = type_ != WvQpTypeUd;
    ib_qp_mod_t m{};
    m.req_state = ib_state_of(to);
    switch (to) {
      case WvQpStateInit:
        m.state.init.primary_port = a.AddressVector.PortNumber;
        m.state.init.qkey = a.Qkey;
        m.state.init.pkey_index = a.PkeyIndex;
        m.state.init.access_ctrl = a.AccessFlags;
        break;
      case WvQpStateRtr: {
        auto& r = m.state.rtr;
        r.rq_psn = a.ReceivePsn;
        r.dest_qp = a.DestinationQpn;
        if (connected)
          if (HRESULT hr = to_ib(a.AddressVector, &a, &r.primary_av); FAILED(hr))
            return finish(pOverlapped, hr);
        r.resp_res = static_cast<uint8_t>(a.ResponderResources);
        r.rnr_nak_timeout = a.RnrNakTimeout;
        r.opts = ib_opts_of(Options);
        r.qkey = a.Qkey;
        r.pkey_index = a.PkeyIndex;
        r.access_ctrl = a.AccessFlags;
        r.sq_depth = static_cast<uint32_t>(a.SendDepth);
        r.rq_depth = static_cast<uint32_t>(a.ReceiveDepth);
        break;
      }
      case WvQpStateRts: {
        auto& r = m.state.rts;
        r.sq_psn = a.SendPsn;
        r.retry_cnt = a.SequenceErrorRetryCount;
        r.rnr_retry_cnt = a.RnrRetryCount;
        r.local_ack_timeout = a.LocalAckTimeout;
        r.init_depth = static_cast<uint8_t>(a.InitiatorDepth);
        r.opts = ib_opts_of(Options);
        r.rnr_nak_timeout = a.RnrNakTimeout;
        r.current_state = ib_state_of(a.CurrentQpState);
        r.qkey = a.Qkey;
        r.access_ctrl = a.AccessFlags;
        r.resp_res = static_cast<uint8_t>(a.ResponderResources);
        if (connected && (Options & WV_QP_ATTR_AV))
          if (HRESULT hr = to_ib(a.AddressVector, &a, &r.primary_av); FAILED(hr))
            return finish(pOverlapped, hr);
        r.apm_state = static_cast<ib_apm_state_t>(a.ApmState);
        r.primary_port = a.AddressVector.PortNumber;
        r.pkey_index = a.PkeyIndex;
        break;
      }
      case WvQpStateSqd: m.state.sqd.sqd_event = 1; break;
      default: break;
    }
    return finish(pOverlapped, hr_of(ci().modify_qp(h_, &m, nullptr, nullptr)));
  }

  HRESULT PostReceive(UINT64 WrId, WV_SGE* pSgl, SIZE_T nSge) override try {
    if (pSgl == nullptr && nSge > 0) return WV_INVALID_PARAMETER;
    Sges s;
    s.set(pSgl, nSge);
    ib_recv_wr_t w{nullptr, WrId, s.count, s.ds};
    return hr_of(ci().post_recv(h_, &w, nullptr));
  } catch (...) {
    return WV_NO_MEMORY;
  }

  HRESULT PostSend(WV_SEND_REQUEST* pSend, WV_SEND_REQUEST** ppFailed) override try {
    if (ppFailed) *ppFailed = nullptr;
    if (pSend == nullptr) return WV_INVALID_PARAMETER;
    constexpr size_t kChunk = 16;
    ib_send_wr_t w[kChunk];
    Sges sges[kChunk];
    WV_SEND_REQUEST* src[kChunk];
    for (WV_SEND_REQUEST* r = pSend; r;) {
      size_t n = 0;
      bool bad = false;
      for (; r && n < kChunk; r = r->pNext, ++n) {
        if (!to_ib_wr(*r, sges[n], &w[n])) {
          bad = true;
          break;
        }
        src[n] = r;
        if (n) w[n - 1].p_next = &w[n];
      }
      if (n) {
        ib_send_wr_t* failed = nullptr;
        const ib_api_status_t st = ci().post_send(h_, &w[0], &failed);
        if (st != IB_SUCCESS) {
          if (ppFailed) *ppFailed = failed ? src[failed - w] : src[0];
          return hr_of(st);
        }
      }
      if (bad) {
        if (ppFailed) *ppFailed = r;
        return WV_NOT_SUPPORTED;  // WvBindWindow
      }
    }
    return WV_SUCCESS;
  } catch (...) {
    return WV_NO_MEMORY;
  }

 protected:
  const ci_interface_t& ci() const { return pd_->dev->ca->ci; }
  ib_qp_handle_t handle() const { return h_; }
  HRESULT post_one(WV_SEND_REQUEST& r) { return PostSend(&r, nullptr); }

 private:
  Pd* const pd_;
  Cq* const scq_;
  Cq* const rcq_;
  Srq* const srq_;
  void* const context_;
  const WV_QP_TYPE type_;
  ib_qp_handle_t h_ = nullptr;
  uint32_t qpn_ = 0;
};

WV_SEND_REQUEST request(UINT64 id, WV_OPCODE op, WV_SGE* sgl, SIZE_T n, DWORD flags) {
  WV_SEND_REQUEST r{};
  r.WrId = id;
  r.Opcode = op;
  r.pSgl = sgl;
  r.nSge = static_cast<UINT32>(n);
  r.Flags = flags;
  return r;
}

WV_SEND_REQUEST datagram(UINT64 id, WV_SGE* sgl, SIZE_T n, DWORD flags, ULONG_PTR ah, NET32 qpn,
                         NET32 qkey) {
  WV_SEND_REQUEST r = request(id, WvSend, sgl, n, flags);
  r.Wr.Datagram.AhKey = ah;
  r.Wr.Datagram.DestinationQpn = qpn;
  r.Wr.Datagram.DestinationQkey = qkey;
  return r;
}

class ConnectQp final : public Qp<IWVConnectQueuePair> {
 public:
  using Qp::Qp;
  HRESULT Send(UINT64 WrId, WV_SGE* pSgl, SIZE_T nSge, DWORD Flags, NET32 ImmediateData) override {
    WV_SEND_REQUEST r = request(WrId, WvSend, pSgl, nSge, Flags);
    r.ImmediateData = ImmediateData;
    return post_one(r);
  }
  HRESULT Read(UINT64 WrId, WV_SGE* pSgl, SIZE_T nSge, DWORD Flags, NET64 Address,
               NET32 Rkey) override {
    WV_SEND_REQUEST r = request(WrId, WvRdmaRead, pSgl, nSge, Flags);
    r.Wr.Rdma.RemoteAddress = Address;
    r.Wr.Rdma.Rkey = Rkey;
    return post_one(r);
  }
  HRESULT Write(UINT64 WrId, WV_SGE* pSgl, SIZE_T nSge, DWORD Flags, NET32 ImmediateData,
                NET64 Address, NET32 Rkey) override {
    WV_SEND_REQUEST r = request(WrId, WvRdmaWrite, pSgl, nSge, Flags);
    r.ImmediateData = ImmediateData;
    r.Wr.Rdma.RemoteAddress = Address;
    r.Wr.Rdma.Rkey = Rkey;
    return post_one(r);
  }
  HRESULT CompareExchange(UINT64 WrId, WV_SGE* pSge, DWORD Flags, NET64 Compare, NET64 Exchange,
                          NET64 Address, NET32 Rkey) override {
    WV_SEND_REQUEST r = request(WrId, WvCompareExchange, pSge, pSge ? 1 : 0, Flags);
    r.Wr.CompareExchange.RemoteAddress = Address;
    r.Wr.CompareExchange.Rkey = Rkey;
    r.Wr.CompareExchange.Compare = Compare;
    r.Wr.CompareExchange.Exchange = Exchange;
    return post_one(r);
  }
  HRESULT FetchAdd(UINT64 WrId, WV_SGE* pSge, DWORD Flags, NET64 Value, NET64 Address,
                   NET32 Rkey) override {
    WV_SEND_REQUEST r = request(WrId, WvFetchAdd, pSge, pSge ? 1 : 0, Flags);
    r.Wr.FetchAdd.RemoteAddress = Address;
    r.Wr.FetchAdd.Rkey = Rkey;
    r.Wr.FetchAdd.Add = Value;
    return post_one(r);
  }
  HRESULT BindMemoryWindow(IWVMemoryWindow*, UINT64, UINT32, DWORD, DWORD, const VOID*, SIZE_T,
                           NET32*) override {
    return WV_NOT_SUPPORTED;  // ci bind_mw: no memory windows on kbv
  }
};

class DatagramQp final : public Qp<IWVDatagramQueuePair> {
 public:
  using Qp::Qp;
  ~DatagramQp() override {
    for (auto& [gid, mc] : mcast_) (void)ci().detach_mcast(mc);
  }
  HRESULT Send(UINT64 WrId, ULONG_PTR AhKey, WV_SGE* pSge, DWORD Flags, NET32 DestinationQpn,
               NET32 DestinationQkey) override {
    WV_SEND_REQUEST r =
        datagram(WrId, pSge, pSge ? 1 : 0, Flags, AhKey, DestinationQpn, DestinationQkey);
    return post_one(r);
  }
  HRESULT SendMessage(WV_SEND_DATAGRAM* pSend) override {
    if (pSend == nullptr) return WV_INVALID_PARAMETER;
    const WV_SEND_DATAGRAM& d = *pSend;
    WV_SEND_REQUEST r =
        datagram(d.WrId, d.pSgl, d.nSge, d.Flags, d.AhKey, d.DestinationQpn, d.DestinationQkey);
    r.ImmediateData = d.ImmediateData;
    return post_one(r);
  }
  HRESULT AttachMulticast(WV_GID* pGid, NET16 Lid, OVERLAPPED* pOverlapped) override try {
    if (pGid == nullptr) return finish(pOverlapped, WV_INVALID_PARAMETER);
    ib_gid_t g;
    std::memcpy(g.raw, pGid->Raw, 16);
    ib_mcast_handle_t mc = nullptr;
    const ib_api_status_t st = ci().attach_mcast(handle(), &g, Lid, &mc, nullptr);
    if (st == IB_SUCCESS) {
      std::lock_guard lk(mu_);
      mcast_.emplace_back(*pGid, mc);
    }
    return finish(pOverlapped, hr_of(st));
  } catch (...) {
    return finish(pOverlapped, WV_NO_MEMORY);
  }
  HRESULT DetachMulticast(WV_GID* pGid, NET16, OVERLAPPED* pOverlapped) override {
    if (pGid == nullptr) return finish(pOverlapped, WV_INVALID_PARAMETER);
    ib_mcast_handle_t mc = nullptr;
    {
      std::lock_guard lk(mu_);
      for (auto it = mcast_.begin(); it != mcast_.end(); ++it)
        if (std::memcmp(it->first.Raw, pGid->Raw, 16) == 0) {
          mc = it->second;
          mcast_.erase(it);
          break;
        }
    }
    if (mc == nullptr) return finish(pOverlapped, WV_INVALID_PARAMETER);  // not attached
    return finish(pOverlapped, hr_of(ci().detach_mcast(mc)));
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<WV_GID, ib_mcast_handle_t>> mcast_;
};

// The objects the application passed, as this library's (else null).
template <class T, class I>
T* ours(I* p) {
  return p ? dynamic_cast<T*>(p) : nullptr;
}

template <class Q, class I>
HRESULT create_qp(Pd* pd, WV_QP_CREATE* a, bool datagram, I** out) try {
  if (out == nullptr || a == nullptr) return WV_INVALID_PARAMETER;
  *out = nullptr;
  if ((a->QpType == WvQpTypeUd) != datagram ||
      (a->QpType != WvQpTypeRc && a->QpType != WvQpTypeUc && a->QpType != WvQpTypeUd))
    return WV_INVALID_PARAMETER;
  Cq* s = ours<Cq>(a->pSendCq);
  Cq* r = ours<Cq>(a->pReceiveCq);
  Srq* q = ours<Srq>(a->pSharedReceiveQueue);
  if (!s || !r || (a->pSharedReceiveQueue && !q)) return WV_INVALID_HANDLE;
  if (s->dev->ca != pd->dev->ca || r->dev->ca != pd->dev->ca || (q && q->pd != pd))
    return WV_INVALID_PARAMETER;
  auto* qp = new Q(pd, s, r, q, *a);
  if (HRESULT hr = qp->create(*a); FAILED(hr)) {
    qp->release();
    return hr;
  }
  *out = qp;
  return WV_SUCCESS;
} catch (...) {
  return WV_NO_MEMORY;
}

}  // namespace

HRESULT create_connect_qp(Pd* pd, WV_QP_CREATE* attr, IWVConnectQueuePair** out) {
  return create_qp<ConnectQp>(pd, attr, false, out);
}

HRESULT create_datagram_qp(Pd* pd, WV_QP_CREATE* attr, IWVDatagramQueuePair** out) {
  return create_qp<DatagramQp>(pd, attr, true, out);
}

}  // namespace kbv::compat::wv
