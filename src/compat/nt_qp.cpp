// SPDX-License-Identifier: BSD-3-Clause
// NT verbs: queue pairs (create/modify/query/destroy, linked-list posting,
// async event requests) and address handles (docs/NTSTATUS.md source 000 PCREATE_AH ..
// PGET_QP_ASYNC_EVENT; docs/NTSTATUS.md).
#include <arpa/inet.h>

#include <cstring>
#include <new>
#include <vector>

#include "common/abi_guard.hpp"
#include "compat/nt_objects.hpp"
#include "compat/nt_verbs.hpp"

namespace kbv::compat {

void NtQp::on_event(const kbv_event_t& ev) {
  IB_ASYNC_EVENT ae;
  if (ev.type == KBV_EVENT_QP_FATAL) {
    ae = IbAeQpFatal;
  } else if (ev.type == KBV_EVENT_QP_ACCESS_ERROR) {
    ae = IbAeWqAccessError;
  } else {
    return;
  }
  if (async_cb != nullptr) async_cb(&pub, pub.Context, ae);
  (void)async_q.fire(STATUS_SUCCESS, ae);
}

void NtQp::on_fatal() { (void)async_q.complete_all(STATUS_FILE_FORCED_CLOSED); }

namespace nt {

namespace {

std::shared_ptr<NtPd> live_pd(const IB_PD* p) { return lookup<NtPd>(p, Kind::kPd); }
std::shared_ptr<NtQp> live_qp(const IB_QP* p) { return lookup<NtQp>(p, Kind::kQp); }
std::shared_ptr<NtCq> live_cq(const IB_CQ* p) {
  auto c = lookup<NtCq>(p, Kind::kCq);
  return c && !c->closing.load() ? c : nullptr;
}

// IB_ACCESS_MASK -> KBV_ACCESS_*; false for bits kbv does not have.
bool to_kbv_access(ULONG m, uint32_t* out) {
  constexpr ULONG kKnown = IB_AC_RDMA_READ | IB_AC_RDMA_WRITE | IB_AC_ATOMIC | IB_AC_LOCAL_WRITE;
  if ((m & ~kKnown) != 0) return false;
  uint32_t a = 0;
  if ((m & IB_AC_RDMA_READ) != 0) a |= KBV_ACCESS_REMOTE_READ;
  if ((m & IB_AC_RDMA_WRITE) != 0) a |= KBV_ACCESS_REMOTE_WRITE;
  if ((m & IB_AC_ATOMIC) != 0) a |= KBV_ACCESS_REMOTE_ATOMIC;
  if ((m & IB_AC_LOCAL_WRITE) != 0) a |= KBV_ACCESS_LOCAL_WRITE;
  *out = a;
  return true;
}

ULONG from_kbv_access(uint32_t a) {
  ULONG m = 0;
  if ((a & KBV_ACCESS_REMOTE_READ) != 0) m |= IB_AC_RDMA_READ;
  if ((a & KBV_ACCESS_REMOTE_WRITE) != 0) m |= IB_AC_RDMA_WRITE;
  if ((a & KBV_ACCESS_REMOTE_ATOMIC) != 0) m |= IB_AC_ATOMIC;
  if ((a & KBV_ACCESS_LOCAL_WRITE) != 0) m |= IB_AC_LOCAL_WRITE;
  return m;
}

IB_QP_STATE from_kbv_state(uint32_t s) {
  switch (s) {
    case KBV_QPS_INIT: return IbQpsInit;
    case KBV_QPS_RTR: return IbQpsRtr;
    case KBV_QPS_RTS: return IbQpsRts;
    case KBV_QPS_SQD: return IbQpsSqd;
    case KBV_QPS_SQE: return IbQpsSqErr;
    case KBV_QPS_ERR: return IbQpsError;
    default: return IbQpsReset;
  }
}

// The port's active MTU (the RFC's modify structure has no path MTU).
NTSTATUS port_mtu(NtDevice& d, uint8_t port, uint32_t* mtu) {
  kbv_port_attr_t pa{};
  kbv_event_t ev = d.run([&d, port, &pa](kbv_eq_t eq, uint64_t ud) {
    return kbv_port_query(d.handle(), port, &pa, eq, ud);
  });
  if (ev.status != KBV_SUCCESS) return nt_of(ev.status);
  d.note_port(pa);
  *mtu = pa.active_mtu;
  return STATUS_SUCCESS;
}

// IB_QP_MODIFY -> kbv_qp_modify's attr and mask. The RFC's union names the
// required attributes of each transition (IBTA 10.3.1 Table 91), Opts the
// optional ones.
NTSTATUS build_modify(NtQp& qp, const IB_QP_MODIFY& m, kbv_qp_attr_t* a, uint32_t* mask) {
  NtDevice& d = *qp.pd->ca->dev;
  const bool ud = qp.pub.Type == IbQpTypeUnreliableDgrm;
  const bool rc = qp.pub.Type == IbQpTypeReliableConn;
  *a = kbv_qp_attr_t{};
  uint32_t k = KBV_QP_STATE;
  uint32_t acc = 0;
  switch (m.ReqState) {
    case IbQpsReset: a->qp_state = KBV_QPS_RESET; break;
    case IbQpsError: a->qp_state = KBV_QPS_ERR; break;
    case IbQpsSqd: a->qp_state = KBV_QPS_SQD; break;
    case IbQpsInit: {
      const auto& s = m.state.Init;
      if (s.PrimaryPort == 0 || s.PrimaryPort > d.num_ports()) return STATUS_IB_INVALID_PORT;
      a->qp_state = KBV_QPS_INIT;
      a->port_num = s.PrimaryPort;
      a->pkey_index = s.PkeyIndex;
      k |= KBV_QP_PORT | KBV_QP_PKEY_INDEX;
      if (ud) {
        a->qkey = s.Qkey;
        k |= KBV_QP_QKEY;
      } else {
        if (!to_kbv_access(s.AccessMask, &acc)) return STATUS_INVALID_PARAMETER_2;
        a->qp_access_flags = acc & ~KBV_ACCESS_LOCAL_WRITE;
        k |= KBV_QP_ACCESS_FLAGS;
      }
      break;
    }
    case IbQpsRtr: {
      const auto& s = m.state.rtr;
      constexpr ULONG kOpts = IB_MOD_QP_QKEY | IB_MOD_QP_PKEY | IB_MOD_QP_ACCESS_CTRL;
      if ((s.Opts & ~kOpts) != 0) return STATUS_NOT_SUPPORTED;  // alternate path, resize
      a->qp_state = KBV_QPS_RTR;
      NTSTATUS st = port_mtu(d, qp.port.load(), &a->path_mtu);
      if (st != STATUS_SUCCESS) return st;
      k |= KBV_QP_PATH_MTU;
      if (!ud) {
        st = resolve_av(d, s.PrimaryAh, &a->ah_attr, STATUS_IB_INVALID_PORT,
                        STATUS_INVALID_PARAMETER_2);
        if (st != STATUS_SUCCESS) return st;
        a->dest_qp_num = s.DestQp;
        a->rq_psn = s.RqPsn;
        k |= KBV_QP_AV | KBV_QP_DEST_QPN | KBV_QP_RQ_PSN;
      }
      if (rc) {
        a->max_dest_rd_atomic = s.RespRes;
        a->min_rnr_timer = s.RnrNakTimeout;
        k |= KBV_QP_MAX_DEST_RD_ATOMIC | KBV_QP_MIN_RNR_TIMER;
      }
      if ((s.Opts & IB_MOD_QP_QKEY) != 0) {
        a->qkey = s.Qkey;
        k |= KBV_QP_QKEY;
      }
      if ((s.Opts & IB_MOD_QP_PKEY) != 0) {
        a->pkey_index = s.PkeyIndex;
        k |= KBV_QP_PKEY_INDEX;
      }
      if ((s.Opts & IB_MOD_QP_ACCESS_CTRL) != 0) {
        if (!to_kbv_access(s.AccessMask, &acc)) return STATUS_INVALID_PARAMETER_2;
        a->qp_access_flags = acc & ~KBV_ACCESS_LOCAL_WRITE;
        k |= KBV_QP_ACCESS_FLAGS;
      }
      break;
    }
    case IbQpsRts: {
      const auto& s = m.state.rts;
      constexpr ULONG kOpts = IB_MOD_QP_RNR_NAK_TIMEOUT | IB_MOD_QP_CURRENT_STATE | IB_MOD_QP_QKEY |
                              IB_MOD_QP_ACCESS_CTRL | IB_MOD_QP_RESP_RES | IB_MOD_QP_PRIMARY_AV |
                              IB_MOD_QP_PRIMARY_PORT | IB_MOD_QP_PKEY;
      if ((s.Opts & ~kOpts) != 0) return STATUS_NOT_SUPPORTED;
      a->qp_state = KBV_QPS_RTS;
      // RTR->RTS (and SQE/SQD->RTS) carry the send PSN and timers; RTS->RTS
      // only the optional attributes.
      if (qp.state.load() != IbQpsRts) {
        a->sq_psn = s.SqPsn;
        k |= KBV_QP_SQ_PSN;
        if (rc) {
          a->timeout = s.LocalAckTimeout;
          a->retry_cnt = s.RetryCnt;
          a->rnr_retry = s.RnrRetryCnt;
          a->max_rd_atomic = s.InitDepth;
          k |= KBV_QP_TIMEOUT | KBV_QP_RETRY_CNT | KBV_QP_RNR_RETRY | KBV_QP_MAX_QP_RD_ATOMIC;
        }
      }
      if ((s.Opts & IB_MOD_QP_RNR_NAK_TIMEOUT) != 0) {
        a->min_rnr_timer = s.RnrNakTimeout;
        k |= KBV_QP_MIN_RNR_TIMER;
      }
      if ((s.Opts & IB_MOD_QP_CURRENT_STATE) != 0) {
        switch (s.CurrentState) {
          case IbQpsRts: a->cur_qp_state = KBV_QPS_RTS; break;
          case IbQpsSqErr: a->cur_qp_state = KBV_QPS_SQE; break;
          case IbQpsSqd: a->cur_qp_state = KBV_QPS_SQD; break;
          default: return STATUS_INVALID_PARAMETER_2;
        }
        k |= KBV_QP_CUR_STATE;
      }
      if ((s.Opts & IB_MOD_QP_QKEY) != 0) {
        a->qkey = s.Qkey;
        k |= KBV_QP_QKEY;
      }
      if ((s.Opts & IB_MOD_QP_ACCESS_CTRL) != 0) {
        if (!to_kbv_access(s.AccessMask, &acc)) return STATUS_INVALID_PARAMETER_2;
        a->qp_access_flags = acc & ~KBV_ACCESS_LOCAL_WRITE;
        k |= KBV_QP_ACCESS_FLAGS;
      }
      if ((s.Opts & IB_MOD_QP_RESP_RES) != 0) {
        a->max_dest_rd_atomic = s.RespRes;
        k |= KBV_QP_MAX_DEST_RD_ATOMIC;
      }
      if ((s.Opts & IB_MOD_QP_PRIMARY_AV) != 0) {
        NTSTATUS st = resolve_av(d, s.PrimaryAh, &a->ah_attr, STATUS_IB_INVALID_PORT,
                                 STATUS_INVALID_PARAMETER_2);
        if (st != STATUS_SUCCESS) return st;
        k |= KBV_QP_AV;
      }
      if ((s.Opts & IB_MOD_QP_PRIMARY_PORT) != 0) {
        if (s.PrimaryPort == 0 || s.PrimaryPort > d.num_ports()) return STATUS_IB_INVALID_PORT;
        a->port_num = s.PrimaryPort;
        k |= KBV_QP_PORT;
      }
      if ((s.Opts & IB_MOD_QP_PKEY) != 0) {
        a->pkey_index = s.PkeyIndex;
        k |= KBV_QP_PKEY_INDEX;
      }
      break;
    }
    default:  // SQD draining/drained and SQ error are states the QP enters, not targets
      return STATUS_INVALID_PARAMETER_2;
  }
  *mask = k;
  return STATUS_SUCCESS;
}

// One linked-list WR -> kbv_send_wr; sges: room for wr.SgeCount entries.
NTSTATUS to_send_wr(const NtQp& qp, const IB_SEND_WR& w, kbv_sge_t* sges, kbv_send_wr_t* o) {
  *o = kbv_send_wr_t{};
  o->wr_id = w.WrId;
  const bool imm = (w.Flags & IB_WR_FLAG_IMMEDIATE) != 0;
  switch (w.Type) {
    case IbSend: o->opcode = imm ? KBV_WR_SEND_IMM : KBV_WR_SEND; break;
    case IbRdmaWrite: o->opcode = imm ? KBV_WR_RDMA_WRITE_IMM : KBV_WR_RDMA_WRITE; break;
    case IbRdmaRead: o->opcode = KBV_WR_RDMA_READ; break;
    case IbInterlockedCompareExchange: o->opcode = KBV_WR_ATOMIC_CS; break;
    case IbInterlockedAdd: o->opcode = KBV_WR_ATOMIC_FA; break;
    default: return STATUS_IB_INVALID_WR_TYPE;
  }
  if (imm && w.Type != IbSend && w.Type != IbRdmaWrite) return STATUS_IB_INVALID_WR_TYPE;
  if (imm) o->imm = ntohl(w.ImmediateData);
  if ((w.Flags & IB_WR_FLAG_SIGNALED) != 0) o->flags |= KBV_SEND_SIGNALED;
  if ((w.Flags & IB_WR_FLAG_SOLICITED) != 0) o->flags |= KBV_SEND_SOLICITED;
  if ((w.Flags & IB_WR_FLAG_FENCE) != 0) o->flags |= KBV_SEND_FENCE;
  if ((w.Flags & IB_WR_FLAG_INLINE) != 0) o->flags |= KBV_SEND_INLINE;
  for (ULONG i = 0; i < w.SgeCount; ++i) {
    const IB_SGE* s = w.Sge[i];
    if (s == nullptr) return STATUS_INVALID_PARAMETER;
    sges[i] = kbv_sge_t{reinterpret_cast<uintptr_t>(s->Address), s->Length, s->LKey};
  }
  o->sg_list = w.SgeCount != 0 ? sges : nullptr;
  o->num_sge = w.SgeCount;
  switch (w.Type) {
    case IbRdmaWrite:
    case IbRdmaRead:
      o->remote_addr = reinterpret_cast<uintptr_t>(w.u.Rdma.Address);
      o->rkey = w.u.Rdma.RKey;
      break;
    case IbInterlockedCompareExchange:
      o->remote_addr = reinterpret_cast<uintptr_t>(w.u.CompareExchange.Address);
      o->rkey = w.u.CompareExchange.RKey;
      o->compare_add = w.u.CompareExchange.Comparand;
      o->swap = w.u.CompareExchange.Exchange;
      break;
    case IbInterlockedAdd:
      o->remote_addr = reinterpret_cast<uintptr_t>(w.u.ExchangeAdd.Address);
      o->rkey = w.u.ExchangeAdd.RKey;
      o->compare_add = w.u.ExchangeAdd.Value;
      break;
    default: break;
  }
  if (qp.pub.Type == IbQpTypeUnreliableDgrm) {
    auto ah = lookup<NtAh>(w.u.Ud.pAh, Kind::kAh);
    if (!ah) return STATUS_INVALID_HANDLE;
    std::lock_guard lk(ah->mu);
    o->ah = ah->ah;
    o->remote_qpn = w.u.Ud.RemoteQpn;
    o->remote_qkey = w.u.Ud.RemoteQkey;
  }
  return STATUS_SUCCESS;
}

constexpr uint32_t kPostChunk = 16;

}  // namespace

// ---- QP ----------------------------------------------------------------------------

NTSTATUS CreateQp(IB_PD* const pPd, IB_QP_CREATE* const pCreateQp, VOID* const Context,
                  PFN_IB_QP_ASYNC_EVENT QpAsyncEvent, CI_UDATA* const pUserData,
                  IB_REQUEST* const pRequest) try {
  if (pPd == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto pd = live_pd(pPd);
  if (!pd) return STATUS_INVALID_HANDLE;
  if (pCreateQp == nullptr) return STATUS_INVALID_PARAMETER_2;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_6;
  const IB_QP_CREATE& c = *pCreateQp;
  uint32_t type;
  switch (c.Type) {
    case IbQpTypeReliableConn: type = KBV_QPT_RC; break;
    case IbQpTypeUnreliableConn: type = KBV_QPT_UC; break;
    case IbQpTypeUnreliableDgrm: type = KBV_QPT_UD; break;
    case IbQpTypeQp0:
    case IbQpTypeQp1:
    case IbQpTypeMad:
    case IbQpTypeQp0Alias:
    case IbQpTypeQp1Alias: return complete_inline(pRequest, STATUS_NOT_SUPPORTED);
    default: return STATUS_INVALID_PARAMETER_2;
  }
  if (c.pSendCq == nullptr || c.pRecvCq == nullptr) return STATUS_INVALID_PARAMETER_2;
  auto scq = live_cq(c.pSendCq);
  auto rcq = live_cq(c.pRecvCq);
  NtDevice* d = pd->ca->dev.get();
  if (!scq || !rcq) return STATUS_INVALID_HANDLE;
  if (scq->ca->dev.get() != d || rcq->ca->dev.get() != d) return STATUS_INVALID_PARAMETER_MIX;
  if (c.pSrq != nullptr) return complete_inline(pRequest, STATUS_NOT_SUPPORTED);
  if (d->dead()) return complete_inline(pRequest, STATUS_FILE_FORCED_CLOSED);
  no_udata(pUserData);
  std::shared_ptr<NtQp> qp(new (std::nothrow) NtQp());
  if (!qp) return STATUS_NO_MEMORY;
  std::shared_ptr<NtRequest> r;
  NTSTATUS st = NtRequest::begin(pRequest, 6, true, &r);
  if (st != STATUS_SUCCESS) return st;
  qp->pd = pd;
  qp->send_cq = scq;
  qp->recv_cq = rcq;
  qp->async_cb = QpAsyncEvent;
  qp->sq_signaled = c.SqSignaled != 0;
  IB_QP& p = qp->pub;
  p.pPd = pPd;
  p.Context = Context;
  p.pSendCq = c.pSendCq;
  p.pRecvCq = c.pRecvCq;
  p.Type = c.Type;
  p.SqDepth = c.SqDepth;
  p.RqDepth = c.RqDepth;
  p.SqSge = c.SqSge;
  p.RqSge = c.RqSge;
  p.SqMaxInline = c.SqMaxInline;
  d->submit(
      [qp, type](kbv_eq_t eq, uint64_t ud) {
        kbv_qp_init_attr_t a{};
        a.qp_type = type;
        a.sq_sig_all = qp->sq_signaled ? 1 : 0;
        a.send_cq = qp->send_cq->cq;
        a.recv_cq = qp->recv_cq->cq;
        a.cap = {qp->pub.SqDepth, qp->pub.RqDepth, qp->pub.SqSge, qp->pub.RqSge,
                 qp->pub.SqMaxInline};
        a.event_eq = eq;
        return kbv_qp_create(qp->pd->pd, &a, eq, ud, &qp->qp);
      },
      [d, qp, r](const kbv_event_t& ev) {
        if (ev.status != KBV_SUCCESS) {
          (void)r->complete(nt_of(ev.status), 0);
          return;
        }
        qp->pub.Qpn = static_cast<ULONG>(ev.info);
        add_ref_count(&qp->pd->pub.nRef, 1);
        add_ref_count(&qp->send_cq->pub.nRef, 1);
        add_ref_count(&qp->recv_cq->pub.nRef, 1);
        d->add_qpn(qp->pub.Qpn, &qp->pub);
        d->route(qp->qp, qp);
        publish(&qp->pub, qp);
        if (r->complete(STATUS_SUCCESS, reinterpret_cast<ULONG_PTR>(&qp->pub))) return;
        unpublish(&qp->pub);
        d->submit([qp](kbv_eq_t eq, uint64_t ud) { return kbv_qp_destroy(qp->qp, eq, ud); },
                  [d, qp](const kbv_event_t&) {
                    d->unroute(qp->qp);
                    d->remove_qpn(qp->pub.Qpn);
                    add_ref_count(&qp->pd->pub.nRef, -1);
                    add_ref_count(&qp->send_cq->pub.nRef, -1);
                    add_ref_count(&qp->recv_cq->pub.nRef, -1);
                  });
      });
  return r->result(d->pump());
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS CreateSpecialQp(IB_PD* const pPd, UCHAR PortNum, IB_QP_CREATE* const pCreateQp,
                         VOID* const /*Context*/, PFN_IB_QP_ASYNC_EVENT /*QpAsyncEvent*/,
                         IB_REQUEST* const pRequest) try {
  if (pPd == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto pd = live_pd(pPd);
  if (!pd) return STATUS_INVALID_HANDLE;
  if (PortNum == 0 || PortNum > pd->ca->dev->num_ports()) return STATUS_IB_INVALID_PORT;
  if (pCreateQp == nullptr) return STATUS_INVALID_PARAMETER_3;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_6;
  // QP0 does not exist on RoCE ports and kbv has no GSI (QP1) QP yet.
  return complete_inline(pRequest, STATUS_NOT_SUPPORTED);
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS DestroyQp(IB_QP* const pQp, CI_UDATA* const pUserData, IB_REQUEST* const pRequest) try {
  if (pQp == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto qp = live_qp(pQp);
  if (!qp) return STATUS_INVALID_HANDLE;
  no_udata(pUserData);
  NtDevice* d = qp->pd->ca->dev.get();
  return d->destroy(
      pRequest, 3,
      [qp] {
        unpublish(&qp->pub);
        (void)qp->async_q.complete_all(STATUS_CANCELLED);
      },
      [qp](kbv_eq_t eq, uint64_t ud) { return kbv_qp_destroy(qp->qp, eq, ud); },
      [d, qp] {
        d->unroute(qp->qp);
        d->remove_qpn(qp->pub.Qpn);
        add_ref_count(&qp->pd->pub.nRef, -1);
        add_ref_count(&qp->send_cq->pub.nRef, -1);
        add_ref_count(&qp->recv_cq->pub.nRef, -1);
      });
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS ModifyQp(IB_QP* const pQp, IB_QP_MODIFY* const pModify, CI_UDATA* const pUserData,
                  IB_REQUEST* const pRequest) try {
  if (pQp == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto qp = live_qp(pQp);
  if (!qp) return STATUS_INVALID_HANDLE;
  if (pModify == nullptr) return STATUS_INVALID_PARAMETER_2;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_4;
  NtDevice* d = qp->pd->ca->dev.get();
  if (d->dead()) return complete_inline(pRequest, STATUS_FILE_FORCED_CLOSED);
  no_udata(pUserData);
  auto attr = std::make_shared<kbv_qp_attr_t>();
  uint32_t mask = 0;
  NTSTATUS st = build_modify(*qp, *pModify, attr.get(), &mask);
  if (st != STATUS_SUCCESS) return complete_inline(pRequest, st);
  std::shared_ptr<NtRequest> r;
  st = NtRequest::begin(pRequest, 4, true, &r);
  if (st != STATUS_SUCCESS) return st;
  d->submit(
      [qp, attr, mask](kbv_eq_t eq, uint64_t ud) {
        return kbv_qp_modify(qp->qp, attr.get(), mask, eq, ud);
      },
      [qp, attr, mask, r](const kbv_event_t& ev) {
        if (ev.status != KBV_SUCCESS) {
          (void)r->complete(nt_of(ev.status), 0);
          return;
        }
        qp->state = from_kbv_state(attr->qp_state);
        if ((mask & KBV_QP_PORT) != 0) qp->port = attr->port_num;
        (void)r->complete(STATUS_SUCCESS, 0);
      });
  return r->result(d->pump());
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS QueryQp(IB_QP* const pQp, IB_QP_ATTR* const pAttr, CI_UDATA* const pUserData,
                 IB_REQUEST* const pRequest) try {
  if (pQp == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto qp = live_qp(pQp);
  if (!qp) return STATUS_INVALID_HANDLE;
  if (pAttr == nullptr) return STATUS_INVALID_PARAMETER_2;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_4;
  NtDevice* d = qp->pd->ca->dev.get();
  if (d->dead()) return complete_inline(pRequest, STATUS_FILE_FORCED_CLOSED);
  no_udata(pUserData);
  std::shared_ptr<NtRequest> r;
  NTSTATUS st = NtRequest::begin(pRequest, 4, true, &r);
  if (st != STATUS_SUCCESS) return st;
  auto out = std::make_shared<kbv_qp_attr_t>();
  d->submit([qp, out](kbv_eq_t eq, uint64_t ud) { return kbv_qp_query(qp->qp, out.get(), eq, ud); },
            [qp, out, r, pAttr](const kbv_event_t& ev) {
              if (ev.status != KBV_SUCCESS) {
                (void)r->complete(nt_of(ev.status), 0);
                return;
              }
              const kbv_qp_attr_t& q = *out;
              IB_QP_ATTR a{};
              a.AccessMask = from_kbv_access(q.qp_access_flags);
              a.PkeyIndex = q.pkey_index;
              a.InitDepth = q.max_rd_atomic;
              a.RespRes = q.max_dest_rd_atomic;
              a.SqSignaled = qp->sq_signaled ? TRUE : FALSE;
              a.State = from_kbv_state(q.cur_qp_state);
              a.DestQpNum = q.dest_qp_num;
              a.Qkey = q.qkey;
              a.SqPsn = q.sq_psn;
              a.RqPsn = q.rq_psn;
              a.primary_port = q.port_num;
              a.PrimaryAh.PortNumber = q.ah_attr.port_num != 0 ? q.ah_attr.port_num : q.port_num;
              a.PrimaryAh.SvcLvl = q.ah_attr.sl;
              a.PrimaryAh.Flags = IB_AH_FLAG_GRH;
              a.PrimaryAh.Grh.VerClassFlow =
                  htonl((6u << 28) | (uint32_t{q.ah_attr.traffic_class} << 20) |
                        (q.ah_attr.flow_label & 0xfffff));
              a.PrimaryAh.Grh.HopLimit = q.ah_attr.hop_limit;
              std::memcpy(a.PrimaryAh.Grh.DGid.Raw, q.ah_attr.dgid, 16);
              a.ApmState = IbApmMigrated;
              *pAttr = a;
              qp->state = a.State;
              (void)r->complete(STATUS_SUCCESS, sizeof(IB_QP_ATTR));
            });
  return r->result(d->pump());
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

static NTSTATUS to_recv_wr(const NtQp&, const IB_RECV_WR& w, kbv_sge_t* sges, kbv_recv_wr_t* o) {
  for (ULONG i = 0; i < w.SgeCount; ++i) {
    if (w.Sge[i] == nullptr) return STATUS_INVALID_PARAMETER;
    sges[i] =
        kbv_sge_t{reinterpret_cast<uintptr_t>(w.Sge[i]->Address), w.Sge[i]->Length, w.Sge[i]->LKey};
  }
  *o = kbv_recv_wr_t{w.WrId, w.SgeCount != 0 ? sges : nullptr, w.SgeCount, 0};
  return STATUS_SUCCESS;
}

// Posts the RFC's linked list `first` through kbv's array calls, kPostChunk
// work requests at a time: each chunk is converted (convert: IB_* WR ->
// kbv WR, its SGEs into per-thread storage sized before any pointer into it
// is taken) and posted with one call. The first refused WR (by conversion
// or by kbv) stops the list and is returned in *failed (seed 000
// PPOST_SEND / PPOST_RECV); the ones before it are posted.
template <class IbWr, class KbvWr, class Convert, class Post>
NTSTATUS post_linked(NtQp& qp, const IbWr* first, IbWr** const failed, Convert convert, Post post) {
  thread_local std::vector<kbv_sge_t> sges;
  KbvWr wrs[kPostChunk];
  const IbWr* chunk_wr[kPostChunk];
  const IbWr* w = first;
  while (w != nullptr) {
    size_t need = 0;
    uint32_t n = 0;
    for (const IbWr* x = w; x != nullptr && n < kPostChunk; x = x->pNext, ++n) need += x->SgeCount;
    if (sges.size() < need) sges.resize(need);
    n = 0;
    size_t used = 0;
    NTSTATUS bad = STATUS_SUCCESS;
    for (; w != nullptr && n < kPostChunk; w = w->pNext) {
      bad = convert(qp, *w, sges.data() + used, &wrs[n]);
      if (bad != STATUS_SUCCESS) break;
      used += w->SgeCount;
      chunk_wr[n++] = w;
    }
    uint32_t bad_index = 0;
    kbv_status_t st = n == 0 ? KBV_SUCCESS : post(qp.qp, wrs, n, &bad_index);
    if (st != KBV_SUCCESS) {
      if (failed != nullptr) *failed = const_cast<IbWr*>(chunk_wr[bad_index]);
      return nt_of(st);
    }
    if (bad != STATUS_SUCCESS) {
      if (failed != nullptr) *failed = const_cast<IbWr*>(w);
      return bad;
    }
  }
  return STATUS_SUCCESS;
}

NTSTATUS PostSend(IB_QP* const pQp, const IB_SEND_WR* pSendWr,
                  IB_SEND_WR** const ppFailedSend) try {
  if (pQp == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto qp = live_qp(pQp);
  if (!qp) return STATUS_INVALID_HANDLE;
  // Seed 000 PPOST_SEND: "STATUS_INVALID_PARAMETER: a reference to the send
  // work request list was not provided"; ppFailedSend may be NULL only for a
  // single work request.
  if (pSendWr == nullptr) return STATUS_INVALID_PARAMETER;
  if (ppFailedSend == nullptr && pSendWr->pNext != nullptr) return STATUS_INVALID_PARAMETER_3;
  if (qp->pd->ca->dev->dead()) return STATUS_FILE_FORCED_CLOSED;
  return post_linked<IB_SEND_WR, kbv_send_wr_t>(*qp, pSendWr, ppFailedSend, to_send_wr,
                                                kbv_post_send);
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS PostRecv(IB_QP* const pQp, const IB_RECV_WR* pRecvWr,
                  IB_RECV_WR** const ppFailedRecv) try {
  if (pQp == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto qp = live_qp(pQp);
  if (!qp) return STATUS_INVALID_HANDLE;
  if (pRecvWr == nullptr) return STATUS_INVALID_PARAMETER;
  if (ppFailedRecv == nullptr && pRecvWr->pNext != nullptr) return STATUS_INVALID_PARAMETER_3;
  if (qp->pd->ca->dev->dead()) return STATUS_FILE_FORCED_CLOSED;
  return post_linked<IB_RECV_WR, kbv_recv_wr_t>(*qp, pRecvWr, ppFailedRecv, to_recv_wr,
                                                kbv_post_recv);
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS GetQpAsyncEvent(IB_QP* const pQp, IB_REQUEST* const pRequest) try {
  if (pQp == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto qp = live_qp(pQp);
  if (!qp) return STATUS_INVALID_HANDLE;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_2;
  if (qp->pd->ca->dev->dead()) return complete_inline(pRequest, STATUS_FILE_FORCED_CLOSED);
  return qp->async_q.add(pRequest, 2);
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

// ---- AH ----------------------------------------------------------------------------
// Seed 000 PCREATE_AH / PMODIFY_AH name their own codes:
// STATUS_INVALID_PARAMETER_1 for an invalid port number and
// STATUS_INVALID_PARAMETER_2 for an invalid source GID.

NTSTATUS CreateAh(IB_PD* const pPd, IB_AH_ATTR* const pAhAttr, IB_AH** const ppAh) try {
  auto pd = live_pd(pPd);
  if (!pd) return STATUS_INVALID_HANDLE;
  if (pAhAttr == nullptr) return STATUS_INVALID_PARAMETER_2;
  if (ppAh == nullptr) return STATUS_INVALID_PARAMETER_3;
  NtDevice& d = *pd->ca->dev;
  if (d.dead()) return STATUS_FILE_FORCED_CLOSED;
  kbv_ah_attr_t av{};
  NTSTATUS st =
      resolve_av(d, *pAhAttr, &av, STATUS_INVALID_PARAMETER_1, STATUS_INVALID_PARAMETER_2);
  if (st != STATUS_SUCCESS) return st;
  std::shared_ptr<NtAh> ah(new (std::nothrow) NtAh());
  if (!ah) return STATUS_NO_MEMORY;
  kbv_event_t ev = d.run([&pd, &av, &ah](kbv_eq_t eq, uint64_t ud) {
    return kbv_ah_create(pd->pd, &av, eq, ud, &ah->ah);
  });
  if (ev.status != KBV_SUCCESS) return nt_of(ev.status);
  ah->pd = pd;
  ah->pub.pPd = pPd;
  ah->attr = *pAhAttr;
  add_ref_count(&pd->pub.nRef, 1);
  publish(&ah->pub, ah);
  *ppAh = &ah->pub;
  return STATUS_SUCCESS;
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS DestroyAh(IB_AH* const pAh) try {
  auto ah = lookup<NtAh>(pAh, Kind::kAh);
  if (!ah) return STATUS_INVALID_HANDLE;
  unpublish(pAh);
  kbv_ah_t h;
  {
    std::lock_guard lk(ah->mu);
    h = ah->ah;
  }
  (void)ah->pd->ca->dev->run([h](kbv_eq_t eq, uint64_t ud) { return kbv_ah_destroy(h, eq, ud); });
  add_ref_count(&ah->pd->pub.nRef, -1);
  return STATUS_SUCCESS;  // cannot fail
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS ModifyAh(IB_AH* const pAh, IB_AH_ATTR* const pModify) try {
  auto ah = lookup<NtAh>(pAh, Kind::kAh);
  if (!ah) return STATUS_INVALID_HANDLE;
  if (pModify == nullptr) return STATUS_INVALID_PARAMETER_2;
  NtDevice& d = *ah->pd->ca->dev;
  if (d.dead()) return STATUS_FILE_FORCED_CLOSED;
  kbv_ah_attr_t av{};
  NTSTATUS st =
      resolve_av(d, *pModify, &av, STATUS_INVALID_PARAMETER_1, STATUS_INVALID_PARAMETER_2);
  if (st != STATUS_SUCCESS) return st;
  // A kbv address handle is host memory only: make the new one, then retire
  // the old one.
  kbv_ah_t fresh = 0;
  kbv_event_t ev = d.run([&ah, &av, &fresh](kbv_eq_t eq, uint64_t ud) {
    return kbv_ah_create(ah->pd->pd, &av, eq, ud, &fresh);
  });
  if (ev.status != KBV_SUCCESS) return nt_of(ev.status);
  kbv_ah_t old;
  {
    std::lock_guard lk(ah->mu);
    old = ah->ah;
    ah->ah = fresh;
    ah->attr = *pModify;
  }
  (void)d.run([old](kbv_eq_t eq, uint64_t ud) { return kbv_ah_destroy(old, eq, ud); });
  return STATUS_SUCCESS;
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS QueryAh(IB_AH* const pAh, IB_AH_ATTR* const pAttr) try {
  auto ah = lookup<NtAh>(pAh, Kind::kAh);
  if (!ah) return STATUS_INVALID_HANDLE;
  if (pAttr == nullptr) return STATUS_INVALID_PARAMETER_2;
  if (ah->pd->ca->dev->dead()) return STATUS_FILE_FORCED_CLOSED;
  std::lock_guard lk(ah->mu);
  *pAttr = ah->attr;
  return STATUS_SUCCESS;
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

}  // namespace nt
}  // namespace kbv::compat
