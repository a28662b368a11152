// SPDX-License-Identifier: BSD-3-Clause
// PD, MR, CQ, SRQ and AH verbs (kbv.h) over the driver objects (src/hca).
#include <kbv/kbv.h>

#include "common/abi_guard.hpp"
#include "common/log.hpp"
#include "hca/cmd/pd.hpp"
#include "verbs/objects.hpp"

namespace kbv::verbs {

namespace {
constexpr const char* kLog = "verbs";

// Ends a destroy: logs a failure (close never fails: the object goes anyway).
void destroyed(Base& b, Status st) {
  if (!st.is_ok()) log::warn(kLog, "object {:#x}: destroy: {}", b.handle(), st.to_string());
  finish_close(b);
}
}  // namespace

Status destroy_started(Base& b, Status submit) {
  // No memory to build the command, or a command of the object still in
  // flight (a CQ resize, a QP modify: hca destroy_queue_object BUSY):
  // nothing sent, run_destroy retries (before, BUSY finished the close and
  // leaked the firmware object; found by the api_surface fuzzer: a CQ
  // destroyed while its resize was in flight stayed in firmware).
  if (submit == KBV_ERR_NO_MEMORY || submit == KBV_ERR_BUSY) return submit;
  if (submit.is_error()) destroyed(b, submit);  // the device failed: nothing to wait for
  return KBV_SUCCESS;
}

MrImpl::~MrImpl() = default;
SrqImpl::~SrqImpl() = default;

CqImpl::~CqImpl() {
  AttachOp* op = ops.exchange(nullptr);
  while (op) {
    AttachOp* n = op->next;
    delete op;
    op = n;
  }
}

void CqImpl::push_op(AttachOp* op) {
  AttachOp* head = ops.load(std::memory_order_relaxed);
  do {
    op->next = head;
  } while (
      !ops.compare_exchange_weak(head, op, std::memory_order_release, std::memory_order_relaxed));
  // After the push: apply_ops clears the bit before it takes the stack, so
  // a pushed operation always has the bit set until it is taken.
  gate_set(gate::kCqOps);
}

bool CqImpl::begin_resize() {
  if (resizing.exchange(true)) return false;
  gate_set(gate::kCqResizing);
  return true;
}

void CqImpl::end_resize() {
  gate_clear(gate::kCqResizing);
  resizing = false;
}

void CqImpl::apply_ops() {
  if (gate.load(std::memory_order_acquire) & gate::kCqOps) gate_clear(gate::kCqOps);
  // A plain load first: the exchange (a locked instruction) only when the
  // control path pushed something.
  if (ops.load(std::memory_order_relaxed) == nullptr) return;
  AttachOp* op = ops.exchange(nullptr, std::memory_order_acquire);
  if (!op) return;
  // Reverse into submission order.
  AttachOp* fifo = nullptr;
  while (op) {
    AttachOp* n = op->next;
    op->next = fifo;
    fifo = op;
    op = n;
  }
  while (fifo) {
    AttachOp* n = fifo->next;
    QpImpl& q = *fifo->qp;
    const uint32_t qpn = q.qp ? q.qp->qpn() : 0;
    if (fifo->attach) {
      attached.push_back({fifo->qp, fifo->send, fifo->recv});
      if (poller) {
        Status s = poller->attach(qpn, fifo->send && q.sq ? &*q.sq : nullptr,
                                  fifo->recv && q.rq ? &*q.rq : nullptr,
                                  fifo->recv && q.srq && q.srq->q ? &*q.srq->q : nullptr);
        if (!s.is_ok()) log::error(kLog, "cq: attach qp {:#x}: {}", qpn, s.to_string());
      }
    } else {
      std::erase_if(attached, [&](const Attached& a) { return a.qp == fifo->qp; });
      if (poller) (void)poller->detach(qpn);
    }
    delete fifo;
    fifo = n;
  }
}

Status CqImpl::rebuild_poller() {
  auto p = hca::CqPoller::for_cq(*cq);
  if (!p) return p.status();
  poller.emplace(std::move(*p));
  gate_clear(gate::kNoPoller);
  for (const auto& a : attached) {
    QpImpl& q = *a.qp;
    (void)poller->attach(q.qp->qpn(), a.send && q.sq ? &*q.sq : nullptr,
                         a.recv && q.rq ? &*q.rq : nullptr,
                         a.recv && q.srq && q.srq->q ? &*q.srq->q : nullptr);
  }
  return KBV_SUCCESS;
}

}  // namespace kbv::verbs

using kbv::Result;
using kbv::Status;
using kbv::verbs::Base;
using kbv::verbs::CqImpl;
using kbv::verbs::DeviceImpl;
using kbv::verbs::Kind;
using kbv::verbs::PdImpl;
using kbv::verbs::Ticket;
namespace hca = kbv::hca;
namespace v = kbv::verbs;

namespace {

// A usable device from its handle: *st = INVALID_HANDLE / the failure /
// DEVICE_NOT_READY otherwise.
std::shared_ptr<DeviceImpl> usable_device(uint64_t h, Status* st) {
  auto d = v::lookup_as<DeviceImpl>(h, Kind::kDevice);
  if (!d) {
    *st = KBV_ERR_INVALID_HANDLE;
    return nullptr;
  }
  *st = d->check_usable();
  return st->is_ok() ? d : nullptr;
}

// A ready object of `kind` (INVALID_HANDLE / INVALID_STATE while creating /
// the device's failure).
template <class T>
std::shared_ptr<T> ready_object(uint64_t h, Kind kind, Status* st) {
  auto o = v::lookup_as<T>(h, kind);
  if (!o) {
    *st = KBV_ERR_INVALID_HANDLE;
    return nullptr;
  }
  if (!o->ready()) {
    *st = KBV_ERR_INVALID_STATE;
    return nullptr;
  }
  *st = o->dev->check_usable();
  return st->is_ok() ? o : nullptr;
}

template <class T>
kbv_status_t destroy_kind(uint64_t h, Kind kind, kbv_eq_t eq, uint64_t user_data) {
  auto o = v::lookup(h, kind);
  if (!o) return KBV_ERR_INVALID_HANDLE;
  return v::close_object(o, eq, user_data).code();
}

}  // namespace

extern "C" {

// ---- PD -----------------------------------------------------------------------------

kbv_status_t kbv_pd_alloc(kbv_device_t dev, kbv_eq_t eq, uint64_t user_data, kbv_pd_t* out) try {
  if (!out) return KBV_ERR_INVALID_ARGUMENT;
  *out = 0;
  Status st;
  auto d = usable_device(dev, &st);
  if (!d) return st.code();
  auto p = std::make_shared<PdImpl>();
  p->dev = d;
  return v::create_object(p, {d}, eq, user_data, out,
                          [p, d](const Ticket& t) -> Status {
                            return hca::cmd::alloc_pd(d->hca->cmdq(), [p, t](Result<uint32_t> r) {
                              if (!r) return v::create_failed(p, &t, r.status());
                              p->pdn = *r;
                              p->destroy = [raw = p.get()] {
                                Status s = hca::cmd::dealloc_pd(
                                    raw->dev->hca->cmdq(), raw->pdn,
                                    [raw](Status x) { v::destroyed(*raw, x); });
                                return v::destroy_started(*raw, s);
                              };
                              v::created(p, t, p->pdn);
                            });
                          })
      .code();
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_pd_dealloc(kbv_pd_t pd, kbv_eq_t eq, uint64_t user_data) try {
  return destroy_kind<PdImpl>(pd, Kind::kPd, eq, user_data);
} catch (...) {
  return kbv::abi_exception_status();
}

// ---- MR -----------------------------------------------------------------------------

kbv_status_t kbv_mr_reg(kbv_pd_t pd, void* addr, size_t length, uint32_t access, kbv_eq_t eq,
                        uint64_t user_data, kbv_mr_t* out) try {
  if (!out) return KBV_ERR_INVALID_ARGUMENT;
  *out = 0;
  Status st;
  auto p = ready_object<PdImpl>(pd, Kind::kPd, &st);
  if (!p) return st.code();
  constexpr uint32_t kAll = KBV_ACCESS_LOCAL_WRITE | KBV_ACCESS_REMOTE_WRITE |
                            KBV_ACCESS_REMOTE_READ | KBV_ACCESS_REMOTE_ATOMIC;
  if (!addr || length == 0 || (access & ~kAll)) return KBV_ERR_INVALID_ARGUMENT;
  // IBTA 10.6.3.1: remote write / atomic need local write.
  if ((access & (KBV_ACCESS_REMOTE_WRITE | KBV_ACCESS_REMOTE_ATOMIC)) &&
      !(access & KBV_ACCESS_LOCAL_WRITE))
    return KBV_ERR_INVALID_ARGUMENT;
  uint32_t hacc = 0;
  if (access & KBV_ACCESS_LOCAL_WRITE) hacc |= hca::mr_access::kLocalWrite;
  if (access & KBV_ACCESS_REMOTE_WRITE) hacc |= hca::mr_access::kRemoteWrite;
  if (access & KBV_ACCESS_REMOTE_READ) hacc |= hca::mr_access::kRemoteRead;
  if (access & KBV_ACCESS_REMOTE_ATOMIC) hacc |= hca::mr_access::kRemoteAtomic;
  auto m = std::make_shared<v::MrImpl>();
  m->dev = p->dev;
  return v::create_object(
             m, {p}, eq, user_data, out,
             [m, p, addr, length, hacc](const Ticket& t) -> Status {
               DeviceImpl& d = *m->dev;
               return hca::Mr::create(
                   *d.hca, d.pdev->dma(), p->pdn, addr, length, hacc,
                   [m, t](Result<std::unique_ptr<hca::Mr>> r) {
                     if (!r) return v::create_failed(m, &t, r.status());
                     m->mr = std::move(*r);
                     m->destroy = [raw = m.get()] {
                       Status s = raw->mr->destroy([raw](Status x) { v::destroyed(*raw, x); });
                       return v::destroy_started(*raw, s);
                     };
                     v::created(m, t, uint64_t{m->mr->lkey()} << 32 | m->mr->rkey());
                   });
             })
      .code();
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_mr_dereg(kbv_mr_t mr, kbv_eq_t eq, uint64_t user_data) try {
  return destroy_kind<v::MrImpl>(mr, Kind::kMr, eq, user_data);
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_mr_get_keys(kbv_mr_t mr, uint32_t* lkey, uint32_t* rkey) try {
  auto m = v::lookup_as<v::MrImpl>(mr, Kind::kMr);
  if (!m) return KBV_ERR_INVALID_HANDLE;
  if (!m->ready()) return KBV_ERR_INVALID_STATE;
  if (lkey) *lkey = m->mr->lkey();
  if (rkey) *rkey = m->mr->rkey();
  return KBV_SUCCESS;
} catch (...) {
  return kbv::abi_exception_status();
}

// ---- CQ -----------------------------------------------------------------------------

kbv_status_t kbv_cq_create(kbv_device_t dev, const kbv_cq_attr_t* attr, kbv_eq_t eq,
                           uint64_t user_data, kbv_cq_t* out) try {
  if (!out || !attr || attr->cqe == 0 || (attr->flags & ~KBV_CQ_FLAG_COMPLETION_TIMESTAMP) != 0)
    return KBV_ERR_INVALID_ARGUMENT;
  *out = 0;
  Status st;
  auto d = usable_device(dev, &st);
  if (!d) return st.code();
  if (attr->cqe > (1u << d->hca->caps().log_max_cq_sz)) return KBV_ERR_LIMIT_EXCEEDED;
  const bool ts = (attr->flags & KBV_CQ_FLAG_COMPLETION_TIMESTAMP) != 0;
  if (ts && !v::completion_timestamps(d->hca->caps())) return KBV_ERR_NOT_SUPPORTED;
  auto evq = v::event_queue_for(attr->event_eq, eq);
  if (!evq) return evq.status().code();
  auto c = std::make_shared<CqImpl>();
  c->dev = d;
  c->event_eq = *evq;
  c->timestamps = ts;
  hca::CqConfig cfg;
  cfg.cqe = attr->cqe;
  return v::create_object(
             c, {d}, eq, user_data, out,
             [c, d, cfg](const Ticket& t) -> Status {
               return hca::Cq::create(*d->hca, cfg, [c, t](Result<std::unique_ptr<hca::Cq>> r) {
                 if (!r) return v::create_failed(c, &t, r.status());
                 c->cq = std::move(*r);
                 const uint32_t cqn = c->cq->cqn();
                 c->destroy = [raw = c.get()] {
                   // No QP uses the CQ any more (each held a reference):
                   // drop the attached set (breaks the QP <-> CQ cycle).
                   raw->apply_ops();
                   raw->attached.clear();
                   raw->gate_set(v::gate::kNoPoller);
                   raw->poller.reset();
                   raw->notify.cancel();
                   raw->dev->cqs.erase(raw->cq->cqn());
                   Status s = raw->cq->destroy([raw](Status x) { v::destroyed(*raw, x); });
                   return v::destroy_started(*raw, s);
                 };
                 Status ps;
                 try {  // runs in a command callback: nothing may escape
                   ps = c->rebuild_poller();
                   if (ps.is_ok()) c->dev->cqs[cqn] = c;
                 } catch (...) {
                   ps = kbv::abi_exception_status();
                 }
                 if (!ps.is_ok()) {
                   // No memory for the poller or the table: destroy the CQ.
                   (void)v::EventQueue::complete(t, ps, c->handle(), 0);
                   c->set_state(v::State::kReady);
                   v::close_internal(c);
                   return;
                 }
                 v::created(c, t, cqn);
               });
             })
      .code();
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_cq_resize(kbv_cq_t cq, uint32_t cqe, kbv_eq_t eq, uint64_t user_data) try {
  Status st;
  auto c = ready_object<CqImpl>(cq, Kind::kCq, &st);
  if (!c) return st.code();
  if (cqe == 0) return KBV_ERR_INVALID_ARGUMENT;
  if (cqe > (1u << c->dev->hca->caps().log_max_cq_sz)) return KBV_ERR_LIMIT_EXCEEDED;
  if (!c->begin_resize()) return KBV_ERR_BUSY;
  auto started = std::make_shared<bool>(false);
  Status r = v::submit_control(*c->dev, c->obj.get(), eq, user_data,
                               [c, cqe, started](const Ticket& t) -> Status {
                                 // Pending attach/detach first: the new poller
                                 // re-attaches the current set.
                                 c->apply_ops();
                                 Status s = c->cq->resize(cqe, [c, t](Status x) {
                                   if (x.is_ok()) x = c->rebuild_poller();
                                   c->end_resize();
                                   (void)v::EventQueue::complete(t, x, c->handle(), c->cq->ncqe());
                                 });
                                 *started = s.is_pending();
                                 return s;
                               });
  if (!*started) c->end_resize();  // no callback will run
  return r.code();
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_cq_destroy(kbv_cq_t cq, kbv_eq_t eq, uint64_t user_data) try {
  return destroy_kind<CqImpl>(cq, Kind::kCq, eq, user_data);
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_cq_arm(kbv_cq_t cq, int solicited_only, kbv_eq_t eq, uint64_t user_data) try {
  Status st;
  auto c = ready_object<CqImpl>(cq, Kind::kCq, &st);
  if (!c) return st.code();
  if (eq == KBV_EQ_NONE) return KBV_ERR_INVALID_ARGUMENT;
  auto q = v::eq_from_handle(eq);
  if (!q) return KBV_ERR_INVALID_HANDLE;
  Status s = c->notify.arm(*c->obj, q, user_data);
  if (!s.is_pending()) return s.code();
  c->cq->arm(solicited_only != 0);
  c->dev->kick_progress();  // a progress thread backing off polls again now
  return KBV_PENDING;
} catch (...) {
  return kbv::abi_exception_status();
}

// ---- SRQ ----------------------------------------------------------------------------

kbv_status_t kbv_srq_create(kbv_pd_t pd, const kbv_srq_attr_t* attr, kbv_eq_t eq,
                            uint64_t user_data, kbv_srq_t* out) try {
  if (!out || !attr || attr->max_wr == 0 || attr->max_sge == 0) return KBV_ERR_INVALID_ARGUMENT;
  *out = 0;
  Status st;
  auto p = ready_object<PdImpl>(pd, Kind::kPd, &st);
  if (!p) return st.code();
  const auto& caps = p->dev->hca->caps();
  if (attr->max_wr >= (1u << caps.log_max_srq_sz) || attr->max_sge > caps.max_wqe_sz_rq / 16 - 1)
    return KBV_ERR_LIMIT_EXCEEDED;
  if (attr->srq_limit >= attr->max_wr + 1) return KBV_ERR_INVALID_ARGUMENT;
  auto evq = v::event_queue_for(attr->event_eq, eq);
  if (!evq) return evq.status().code();
  auto s = std::make_shared<v::SrqImpl>();
  s->dev = p->dev;
  s->event_eq = *evq;
  s->cfg.pd = p->pdn;
  // One WQE of the ring always stays unused (dp/rq.hpp), so ask for one more.
  s->cfg.max_wr = attr->max_wr + 1;
  s->cfg.max_sge = attr->max_sge;
  s->cfg.lwm = attr->srq_limit;
  return v::create_object(
             s, {p}, eq, user_data, out,
             [s](const Ticket& t) -> Status {
               return hca::Srq::create(
                   *s->dev->hca, s->cfg, [s, t](Result<std::unique_ptr<hca::Srq>> r) {
                     if (!r) return v::create_failed(s, &t, r.status());
                     s->srq = std::move(*r);
                     s->destroy = [raw = s.get()] {
                       raw->dev->srqs.erase(raw->srq->srqn());
                       Status x = raw->srq->destroy([raw](Status y) { v::destroyed(*raw, y); });
                       return v::destroy_started(*raw, x);
                     };
                     auto q = hca::SrqQueue::for_srq(*s->srq, s->cfg.max_sge);
                     if (!q) {
                       (void)v::EventQueue::complete(t, q.status(), s->handle(), 0);
                       s->set_state(v::State::kReady);
                       v::close_internal(s);
                       return;
                     }
                     s->q.emplace(std::move(*q));
                     s->dev->srqs[s->srq->srqn()] = s;
                     v::created(s, t, s->srq->srqn());
                   });
             })
      .code();
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_srq_arm(kbv_srq_t srq, uint32_t limit, kbv_eq_t eq, uint64_t user_data) try {
  Status st;
  auto s = ready_object<v::SrqImpl>(srq, Kind::kSrq, &st);
  if (!s) return st.code();
  if (limit == 0 || limit >= s->srq->nwqe()) return KBV_ERR_INVALID_ARGUMENT;
  return v::submit_control(*s->dev, s->obj.get(), eq, user_data,
                           [s, limit](const Ticket& t) -> Status {
                             return s->srq->arm(limit, [s, t, limit](Status x) {
                               (void)v::EventQueue::complete(t, x, s->handle(), limit);
                             });
                           })
      .code();
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_srq_destroy(kbv_srq_t srq, kbv_eq_t eq, uint64_t user_data) try {
  return destroy_kind<v::SrqImpl>(srq, Kind::kSrq, eq, user_data);
} catch (...) {
  return kbv::abi_exception_status();
}

// ---- AH -----------------------------------------------------------------------------

kbv_status_t kbv_ah_create(kbv_pd_t pd, const kbv_ah_attr_t* attr, kbv_eq_t eq, uint64_t user_data,
                           kbv_ah_t* out) try {
  if (!out || !attr) return KBV_ERR_INVALID_ARGUMENT;
  *out = 0;
  Status st;
  auto p = ready_object<PdImpl>(pd, Kind::kPd, &st);
  if (!p) return st.code();
  const auto& caps = p->dev->hca->caps();
  const uint32_t port = attr->port_num ? attr->port_num : 1;
  if (port > caps.num_ports) return KBV_ERR_INVALID_PORT;
  const uint32_t gids =
      caps.roce_address_table_size ? caps.roce_address_table_size : caps.gid_table_size;
  if (gids && attr->sgid_index >= gids) return KBV_ERR_NOT_FOUND;
  hca::RoceDest dst;
  std::memcpy(dst.dgid.data(), attr->dgid, 16);
  dst.sgid_index = attr->sgid_index;
  dst.dmac = attr->dmac & 0xFFFFFFFFFFFFull;
  dst.port = static_cast<uint8_t>(port);
  dst.hop_limit = attr->hop_limit ? attr->hop_limit : 64;
  dst.tclass = attr->traffic_class;
  dst.flow_label = attr->flow_label;
  dst.sl = attr->sl;
  dst.udp_sport = attr->udp_sport;
  auto made = hca::Ah::make(caps, dst, 0, 0);
  if (!made) return made.status().code();
  auto a = std::make_shared<v::AhImpl>();
  a->dev = p->dev;
  a->ah = *made;
  return v::create_object(a, {p}, eq, user_data, out,
                          [a](const Ticket& t) -> Status {
                            // Nothing to create on the device (hca/objects/ah.hpp).
                            v::created(a, t, 0);
                            return KBV_SUCCESS;
                          })
      .code();
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_ah_destroy(kbv_ah_t ah, kbv_eq_t eq, uint64_t user_data) try {
  return destroy_kind<v::AhImpl>(ah, Kind::kAh, eq, user_data);
} catch (...) {
  return kbv::abi_exception_status();
}

}  // extern "C"
