// SPDX-License-Identifier: BSD-3-Clause
// NT verbs: protection domains and completion queues (docs/NTSTATUS.md source 000
// PCREATE_PD .. PGET_CQ_ASYNC_EVENT; docs/NTSTATUS.md).
#include <arpa/inet.h>

#include <new>

#include "common/abi_guard.hpp"
#include "compat/nt_objects.hpp"
#include "compat/nt_verbs.hpp"

namespace kbv::compat {

void NtCq::on_event(const kbv_event_t& ev) {
  if (ev.type != KBV_EVENT_CQ_ERROR || closing.load()) return;
  if (async_cb != nullptr) async_cb(&pub, pub.Context, IbAeCqError);
  (void)async_q.fire(STATUS_SUCCESS, IbAeCqError);
}

void NtCq::on_fatal() {
  (void)comp.complete(STATUS_FILE_FORCED_CLOSED);
  (void)async_q.complete_all(STATUS_FILE_FORCED_CLOSED);
}

void NtCq::comp_event() {
  if (closing.load()) return;
  if (comp_cb != nullptr) comp_cb(&pub, pub.Context);
  (void)comp.fire();
}

namespace nt {

namespace {

std::shared_ptr<NtCa> live_ca(const IB_CA* p) {
  auto c = lookup<NtCa>(p, Kind::kCa);
  if (!c) return nullptr;
  std::lock_guard lk(c->mu);
  return c->closing ? nullptr : c;
}

std::shared_ptr<NtCq> live_cq(const IB_CQ* p) {
  auto c = lookup<NtCq>(p, Kind::kCq);
  return c && !c->closing.load() ? c : nullptr;
}

ULONG roundup_pow2(ULONG n) {
  ULONG p = 1;
  while (p < n && p != 0x80000000u) p <<= 1;
  return p;
}

IB_WC_STATUS wc_status(int32_t s) {
  switch (s) {
    case KBV_SUCCESS: return IbWcSuccess;
    case KBV_ERR_LOCAL_LENGTH: return IbWcLocalLenErr;
    case KBV_ERR_LOCAL_QP_OPERATION: return IbWcLocalOpErr;
    case KBV_ERR_LOCAL_PROTECTION:
    case KBV_ERR_LOCAL_ACCESS: return IbWcLocalProtectionErr;
    case KBV_ERR_WR_FLUSHED: return IbWcWrFlushedErr;
    case KBV_ERR_MW_BIND: return IbWcMwBindErr;
    case KBV_ERR_REMOTE_ACCESS: return IbWcRemAccessErr;
    case KBV_ERR_REMOTE_OPERATION:
    case KBV_ERR_REMOTE_ABORTED: return IbWcRemOpErr;
    case KBV_ERR_RNR_RETRY_EXCEEDED: return IbWcRnrRetryErr;
    case KBV_ERR_RETRY_EXCEEDED: return IbWcTimeoutRetryErr;
    case KBV_ERR_REMOTE_INVALID_REQUEST: return IbWcRemInvalidReqErr;
    case KBV_ERR_BAD_RESPONSE: return IbWcUnmatchedResponse;
    default: return IbWcUnknown;
  }
}

IB_OP_TYPE wc_type(uint32_t op) {
  switch (op) {
    case KBV_WC_RDMA_WRITE: return IbRdmaWrite;
    case KBV_WC_RDMA_READ: return IbRdmaRead;
    case KBV_WC_ATOMIC_CS: return IbInterlockedCompareExchange;
    case KBV_WC_ATOMIC_FA: return IbInterlockedAdd;
    case KBV_WC_RECV: return IbRecv;
    case KBV_WC_RECV_RDMA_WITH_IMM: return IbRecvRdmaWrite;
    default: return IbSend;
  }
}

IB_WC to_wc(NtDevice& d, const kbv_wc_t& w) {
  IB_WC c{};
  c.hQp = d.qp_by_qpn(w.qp_num);
  c.WrId = w.wr_id;
  c.Status = wc_status(w.status);
  c.Type = wc_type(w.opcode);
  c.VendorError = w.status == KBV_SUCCESS ? 0 : (ULONG{w.syndrome} << 8) | w.vendor_err;
  c.Length = w.byte_len;
  if ((w.flags & KBV_WC_WITH_IMM) != 0) {
    c.Flags |= IB_WC_FLAG_IMMEDIATE;
    c.ImmediateData = htonl(w.imm);
  }
  if ((w.flags & KBV_WC_WITH_GRH) != 0) c.Flags |= IB_WC_FLAG_GRH;
  c.Ud.RemoteQp = w.src_qp;
  c.Ud.RemoteLid = w.slid;
  c.Ud.RemoteSl = w.sl;
  return c;
}

}  // namespace

// ---- PD ----------------------------------------------------------------------------

NTSTATUS CreatePd(IB_CA* const pCa, CI_UDATA* const pUserData, IB_REQUEST* const pRequest) try {
  if (pCa == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto ca = live_ca(pCa);
  if (!ca) return STATUS_INVALID_HANDLE;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_3;
  if (ca->dev->dead()) return complete_inline(pRequest, STATUS_FILE_FORCED_CLOSED);
  no_udata(pUserData);
  std::shared_ptr<NtPd> pd(new (std::nothrow) NtPd());
  if (!pd) return STATUS_NO_MEMORY;
  std::shared_ptr<NtRequest> r;
  NTSTATUS st = NtRequest::begin(pRequest, 3, true, &r);
  if (st != STATUS_SUCCESS) return st;
  pd->ca = ca;
  pd->pub.pCa = pCa;
  pd->pub.nRef = 1;
  ca->child_added();
  NtDevice* d = ca->dev.get();
  d->submit(
      [d, pd](kbv_eq_t eq, uint64_t ud) { return kbv_pd_alloc(d->handle(), eq, ud, &pd->pd); },
      [d, pd, r](const kbv_event_t& ev) {
        if (ev.status != KBV_SUCCESS) {
          pd->ca->child_gone();
          (void)r->complete(nt_of(ev.status), 0);
          return;
        }
        publish(&pd->pub, pd);
        if (r->complete(STATUS_SUCCESS, reinterpret_cast<ULONG_PTR>(&pd->pub))) return;
        // Cancelled while kbv made it: take it back.
        unpublish(&pd->pub);
        d->submit([pd](kbv_eq_t eq, uint64_t ud) { return kbv_pd_dealloc(pd->pd, eq, ud); },
                  [pd](const kbv_event_t&) { pd->ca->child_gone(); });
      });
  return r->result(d->pump());
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS DestroyPd(IB_PD* const pPd, CI_UDATA* const pUserData, IB_REQUEST* const pRequest) try {
  if (pPd == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto pd = lookup<NtPd>(pPd, Kind::kPd);
  if (!pd) return STATUS_INVALID_HANDLE;
  no_udata(pUserData);
  return pd->ca->dev->destroy(
      pRequest, 3, [pd] { unpublish(&pd->pub); },
      [pd](kbv_eq_t eq, uint64_t ud) { return kbv_pd_dealloc(pd->pd, eq, ud); },
      [pd] { pd->ca->child_gone(); });
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

// ---- CQ ----------------------------------------------------------------------------

NTSTATUS CreateCq(IB_CA* const pCa, ULONG const NumCqes, VOID* const Context,
                  PFN_IB_CQ_COMP_EVENT CqCompEvent, PFN_IB_CQ_ASYNC_EVENT CqAsyncEvent,
                  CI_UDATA* const pUserData, IB_REQUEST* const pRequest) try {
  if (pCa == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto ca = live_ca(pCa);
  if (!ca) return STATUS_INVALID_HANDLE;
  if (NumCqes == 0) return STATUS_INVALID_PARAMETER_2;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_7;
  if (ca->dev->dead()) return complete_inline(pRequest, STATUS_FILE_FORCED_CLOSED);
  no_udata(pUserData);
  std::shared_ptr<NtCq> cq(new (std::nothrow) NtCq());
  if (!cq) return STATUS_NO_MEMORY;
  std::shared_ptr<NtRequest> r;
  NTSTATUS st = NtRequest::begin(pRequest, 7, true, &r);
  if (st != STATUS_SUCCESS) return st;
  cq->ca = ca;
  cq->comp_cb = CqCompEvent;
  cq->async_cb = CqAsyncEvent;
  cq->pub.pCa = pCa;
  cq->pub.NumCqes = roundup_pow2(NumCqes);  // kbv_cq_create rounds up to 2^n
  cq->pub.Context = Context;
  cq->pub.nRef = 1;
  ca->child_added();
  NtDevice* d = ca->dev.get();
  d->submit(
      [d, cq, NumCqes](kbv_eq_t eq, uint64_t ud) {
        kbv_cq_attr_t a{};
        a.cqe = NumCqes;
        a.event_eq = eq;  // CQ errors come to the dispatch thread
        return kbv_cq_create(d->handle(), &a, eq, ud, &cq->cq);
      },
      [d, cq, r](const kbv_event_t& ev) {
        if (ev.status != KBV_SUCCESS) {
          cq->ca->child_gone();
          (void)r->complete(nt_of(ev.status), 0);
          return;
        }
        d->route(cq->cq, cq);
        publish(&cq->pub, cq);
        if (r->complete(STATUS_SUCCESS, reinterpret_cast<ULONG_PTR>(&cq->pub))) return;
        unpublish(&cq->pub);
        cq->closing = true;
        d->submit([cq](kbv_eq_t eq, uint64_t ud) { return kbv_cq_destroy(cq->cq, eq, ud); },
                  [d, cq](const kbv_event_t&) {
                    d->unroute(cq->cq);
                    cq->ca->child_gone();
                  });
      });
  return r->result(d->pump());
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS DestroyCq(IB_CQ* const pCq, CI_UDATA* const pUserData, IB_REQUEST* const pRequest) try {
  if (pCq == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto cq = live_cq(pCq);
  if (!cq) return STATUS_INVALID_HANDLE;
  no_udata(pUserData);
  NtDevice* d = cq->ca->dev.get();
  return d->destroy(
      pRequest, 3,
      [cq] {
        cq->closing = true;
        unpublish(&cq->pub);
        // Notification requests complete with STATUS_CANCELLED first.
        (void)cq->comp.complete(STATUS_CANCELLED);
        (void)cq->async_q.complete_all(STATUS_CANCELLED);
      },
      [cq](kbv_eq_t eq, uint64_t ud) { return kbv_cq_destroy(cq->cq, eq, ud); },
      [d, cq] {
        d->unroute(cq->cq);
        cq->ca->child_gone();
      });
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS ResizeCq(IB_CQ* const pCq, ULONG const NumCqes, CI_UDATA* const pUserData,
                  IB_REQUEST* const pRequest) try {
  if (pCq == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto cq = live_cq(pCq);
  if (!cq) return STATUS_INVALID_HANDLE;
  if (NumCqes == 0) return STATUS_INVALID_PARAMETER_2;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_4;
  NtDevice* d = cq->ca->dev.get();
  if (d->dead()) return complete_inline(pRequest, STATUS_FILE_FORCED_CLOSED);
  no_udata(pUserData);
  // kbv resizes a drained CQ: completions still in it move to the read-ahead
  // buffer PollCq drains first (the caller is the CQ's polling thread).
  kbv_wc_t w[32];
  for (;;) {
    int n = kbv_poll_cq(cq->cq, w, 32);
    if (n < 0) return complete_inline(pRequest, nt_of(n));
    for (int i = 0; i < n; ++i) cq->ahead.push_back(to_wc(*d, w[i]));
    if (n < 32) break;
  }
  std::shared_ptr<NtRequest> r;
  NTSTATUS st = NtRequest::begin(pRequest, 4, true, &r);
  if (st != STATUS_SUCCESS) return st;
  d->submit(
      [cq, NumCqes](kbv_eq_t eq, uint64_t ud) { return kbv_cq_resize(cq->cq, NumCqes, eq, ud); },
      [cq, r](const kbv_event_t& ev) {
        if (ev.status != KBV_SUCCESS) {
          (void)r->complete(nt_of(ev.status), 0);
          return;
        }
        cq->pub.NumCqes = static_cast<ULONG>(ev.info);
        (void)r->complete(STATUS_SUCCESS, cq->pub.NumCqes);
      });
  return r->result(d->pump());
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS RearmCq(IB_CQ* const pCq, const BOOLEAN Solicited) try {
  if (pCq == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto cq = live_cq(pCq);
  if (!cq) return STATUS_INVALID_HANDLE;
  NtDevice* d = cq->ca->dev.get();
  if (d->dead()) return STATUS_FILE_FORCED_CLOSED;
  // One kbv notification per arm; arming again cancels the previous one
  // (its event, KBV_ERR_CANCELLED, is dropped here).
  std::weak_ptr<NtCq> w = cq;
  kbv_status_t st = d->submit(
      [cq, Solicited](kbv_eq_t eq, uint64_t ud) {
        return kbv_cq_arm(cq->cq, Solicited ? 1 : 0, eq, ud);
      },
      [w](const kbv_event_t& ev) {
        if (ev.status != KBV_SUCCESS) return;
        if (auto c = w.lock()) c->comp_event();
      });
  return st == KBV_PENDING || st == KBV_SUCCESS ? STATUS_SUCCESS : nt_of(st);
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS RearmNCq(IB_CQ* const pCq, const ULONG NumCqes) try {
  if (pCq == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto cq = live_cq(pCq);
  if (!cq) return STATUS_INVALID_HANDLE;
  // Seed 000 PREARM_N_CQ: 1 <= NumCqes <= the CQ's size.
  if (NumCqes < 1 || NumCqes > cq->pub.NumCqes) return STATUS_INVALID_PARAMETER;
  if (cq->ca->dev->dead()) return STATUS_FILE_FORCED_CLOSED;
  // mlx5 CQs arm for the next (solicited) completion only (PRM "CQ
  // arming"; no N-notify), so IB_CA_CAP_N_NOTIFY_CQ is not reported.
  return STATUS_NOT_SUPPORTED;
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS PollCq(IB_CQ* const pCq, LONG* const pNumWc, IB_WC Wc[]) try {
  if (pCq == nullptr) return STATUS_INVALID_PARAMETER_1;
  if (pNumWc == nullptr || *pNumWc <= 0) return STATUS_INVALID_PARAMETER_2;
  if (Wc == nullptr) return STATUS_INVALID_PARAMETER_3;
  auto cq = live_cq(pCq);
  if (!cq) return STATUS_INVALID_HANDLE;
  NtDevice& d = *cq->ca->dev;
  const LONG want = *pNumWc;
  LONG n = 0;
  while (n < want && !cq->ahead.empty()) {
    Wc[n++] = cq->ahead.front();
    cq->ahead.pop_front();
  }
  kbv_wc_t w[32];
  while (n < want) {
    const uint32_t chunk = static_cast<uint32_t>(std::min<LONG>(want - n, 32));
    int got = kbv_poll_cq(cq->cq, w, chunk);
    if (got < 0) {
      *pNumWc = n;
      return nt_of(got);
    }
    for (int i = 0; i < got; ++i) Wc[n++] = to_wc(d, w[i]);
    if (static_cast<uint32_t>(got) < chunk) break;
  }
  *pNumWc = n;
  return n == 0 ? STATUS_NO_MORE_ENTRIES : STATUS_SUCCESS;
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS PeekCq(IB_CQ* const pCq, LONG* const pNumWc) try {
  if (pCq == nullptr) return STATUS_INVALID_PARAMETER_1;
  if (pNumWc == nullptr) return STATUS_INVALID_PARAMETER_2;
  auto cq = live_cq(pCq);
  if (!cq) return STATUS_INVALID_HANDLE;
  NtDevice& d = *cq->ca->dev;
  // Read ahead: the completions move to the buffer PollCq drains first.
  kbv_wc_t w[32];
  for (;;) {
    int got = kbv_poll_cq(cq->cq, w, 32);
    if (got < 0) return nt_of(got);
    for (int i = 0; i < got; ++i) cq->ahead.push_back(to_wc(d, w[i]));
    if (got < 32) break;
  }
  *pNumWc = static_cast<LONG>(cq->ahead.size());
  return STATUS_SUCCESS;
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS GetCqCompEvent(IB_CQ* const pCq, IB_REQUEST* const pRequest) try {
  if (pCq == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto cq = live_cq(pCq);
  if (!cq) return STATUS_INVALID_HANDLE;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_2;
  if (cq->ca->dev->dead()) return complete_inline(pRequest, STATUS_FILE_FORCED_CLOSED);
  return cq->comp.arm(pRequest, 2);
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS GetCqAsyncEvent(IB_CQ* const pCq, IB_REQUEST* const pRequest) try {
  if (pCq == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto cq = live_cq(pCq);
  if (!cq) return STATUS_INVALID_HANDLE;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_2;
  if (cq->ca->dev->dead()) return complete_inline(pRequest, STATUS_FILE_FORCED_CLOSED);
  return cq->async_q.add(pRequest, 2);
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

}  // namespace nt
}  // namespace kbv::compat
