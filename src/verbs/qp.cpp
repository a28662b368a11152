// SPDX-License-Identifier: BSD-3-Clause
// Queue pair verbs (kbv.h "queue pairs"): create / modify (IBTA 10.3.1
// transitions with Table 91's required attributes) / query / destroy /
// multicast, over hca::Qp and the data-path queues (dp/sq, dp/rq).
#include <kbv/kbv.h>

#include <cstring>

#include "common/abi_guard.hpp"
#include "common/log.hpp"
#include "hca/prm/uar.hpp"
#include "platform/mmio.hpp"
#include "verbs/objects.hpp"

namespace kbv::verbs {

QpImpl::~QpImpl() = default;

Status QpImpl::build_queues() {
  // RESET restarts the firmware's WQE counters; so do the queues.
  volatile uint32_t* db = qp->mem().dbrec();
  platform::dbrec_store(&db[0], 0);
  platform::dbrec_store(&db[1], 0);
  auto s = hca::SendQueue::for_qp(*dev->hca, *qp, cfg, qp->qpn() % prm::kBfRegsPerUar, sig_all);
  if (!s) return s.status();
  sq.emplace(std::move(*s));
  gate_clear(gate::kNoSq);
  if (qp->rq_wqes() > 0) {
    auto r = hca::RecvQueue::for_qp(*qp, cfg.max_recv_sge);
    if (!r) return r.status();
    rq.emplace(std::move(*r));
    gate_clear(gate::kNoRq);
  }
  return KBV_SUCCESS;
}

void QpImpl::set_qp_state(uint32_t s) {
  qp_state.store(s, std::memory_order_release);
  // kbv_post_send: not in RESET, INIT or RTR; kbv_post_recv: not in RESET.
  const uint32_t closed =
      (s == KBV_QPS_RESET || s == KBV_QPS_INIT || s == KBV_QPS_RTR ? gate::kNoSend : 0) |
      (s == KBV_QPS_RESET ? gate::kNoRecv : 0);
  if (closed) gate_set(closed);
  if (closed != (gate::kNoSend | gate::kNoRecv))
    gate_clear(~closed & (gate::kNoSend | gate::kNoRecv));
}

namespace {

constexpr uint32_t kKnownMask =
    KBV_QP_STATE | KBV_QP_CUR_STATE | KBV_QP_ACCESS_FLAGS | KBV_QP_PKEY_INDEX | KBV_QP_PORT |
    KBV_QP_QKEY | KBV_QP_AV | KBV_QP_PATH_MTU | KBV_QP_TIMEOUT | KBV_QP_RETRY_CNT |
    KBV_QP_RNR_RETRY | KBV_QP_RQ_PSN | KBV_QP_MAX_QP_RD_ATOMIC | KBV_QP_MIN_RNR_TIMER |
    KBV_QP_SQ_PSN | KBV_QP_MAX_DEST_RD_ATOMIC | KBV_QP_DEST_QPN;

// prm::qp_state (mlx5_ifc.h MLX5_QPC_STATE_*) -> kbv_qp_state_t.
uint32_t from_prm_state(uint32_t s) {
  namespace q = prm::qp_state;
  switch (s) {
    case q::kRst: return KBV_QPS_RESET;
    case q::kInit: return KBV_QPS_INIT;
    case q::kRtr: return KBV_QPS_RTR;
    case q::kRts: return KBV_QPS_RTS;
    case q::kSqd:
    case q::kSqDraining: return KBV_QPS_SQD;
    case q::kSqer: return KBV_QPS_SQE;
    default: return KBV_QPS_ERR;
  }
}

uint32_t log2ceil(uint32_t v) {
  uint32_t l = 0;
  while ((1u << l) < v && l < 31) ++l;
  return l;
}

struct Plan {
  hca::cmd::QpTransition t;
  uint32_t required;  // attr_mask bits the transition needs (besides STATE)
  uint32_t allowed;   // further optional bits
};

// IBTA 10.3.1 / Table 91 (RC; UC and UD use subsets) -> the mlx5 command.
Result<Plan> plan_for(uint32_t type, uint32_t cur, uint32_t target) {
  using T = hca::cmd::QpTransition;
  const bool rc = type == KBV_QPT_RC, ud = type == KBV_QPT_UD;
  if (target == KBV_QPS_ERR) return Plan{T::kToErr, 0, 0};
  if (target == KBV_QPS_RESET) return Plan{T::kToRst, 0, 0};
  if (cur == KBV_QPS_RESET && target == KBV_QPS_INIT) {
    uint32_t req = KBV_QP_PKEY_INDEX | KBV_QP_PORT | (ud ? KBV_QP_QKEY : KBV_QP_ACCESS_FLAGS);
    return Plan{T::kRst2Init, req, 0};
  }
  if (cur == KBV_QPS_INIT && target == KBV_QPS_INIT) {
    uint32_t opt = KBV_QP_PKEY_INDEX | KBV_QP_PORT | (ud ? KBV_QP_QKEY : KBV_QP_ACCESS_FLAGS);
    return Plan{T::kInit2Init, 0, opt};
  }
  if (cur == KBV_QPS_INIT && target == KBV_QPS_RTR) {
    uint32_t req = 0, opt = KBV_QP_PKEY_INDEX;
    if (ud) {
      opt |= KBV_QP_QKEY | KBV_QP_PATH_MTU;
    } else {
      req = KBV_QP_AV | KBV_QP_PATH_MTU | KBV_QP_DEST_QPN | KBV_QP_RQ_PSN;
      opt |= KBV_QP_ACCESS_FLAGS;
      if (rc) req |= KBV_QP_MAX_DEST_RD_ATOMIC | KBV_QP_MIN_RNR_TIMER;
    }
    return Plan{T::kInit2Rtr, req, opt};
  }
  if (cur == KBV_QPS_RTR && target == KBV_QPS_RTS) {
    uint32_t req = KBV_QP_SQ_PSN;
    uint32_t opt = ud ? KBV_QP_QKEY : KBV_QP_ACCESS_FLAGS;
    if (rc) {
      req |= KBV_QP_TIMEOUT | KBV_QP_RETRY_CNT | KBV_QP_RNR_RETRY | KBV_QP_MAX_QP_RD_ATOMIC;
      opt |= KBV_QP_MIN_RNR_TIMER;
    }
    return Plan{T::kRtr2Rts, req, opt};
  }
  if ((cur == KBV_QPS_RTS || cur == KBV_QPS_SQE || cur == KBV_QPS_SQD) && target == KBV_QPS_RTS) {
    uint32_t opt = ud ? KBV_QP_QKEY : KBV_QP_ACCESS_FLAGS;
    if (rc) opt |= KBV_QP_MIN_RNR_TIMER;
    T t = cur == KBV_QPS_RTS ? T::kRts2Rts : cur == KBV_QPS_SQE ? T::kSqErr2Rts : T::kSqd2Rts;
    return Plan{t, 0, opt};
  }
  if (target == KBV_QPS_SQD) return Status{KBV_ERR_NOT_SUPPORTED};  // no RTS2SQD yet
  return Status{KBV_ERR_INVALID_QP_STATE};
}

// The optional-parameter bits (prm::qp_optpar) for mask bits a transition
// takes as optional.
uint32_t optpar_of(uint32_t mask) {
  namespace o = prm::qp_optpar;
  uint32_t p = 0;
  if (mask & KBV_QP_ACCESS_FLAGS) p |= o::kRre | o::kRwe | o::kRae;
  if (mask & KBV_QP_PKEY_INDEX) p |= o::kPkeyIndex;
  if (mask & KBV_QP_PORT) p |= o::kPriPort;
  if (mask & KBV_QP_QKEY) p |= o::kQKey;
  if (mask & KBV_QP_MIN_RNR_TIMER) p |= o::kRnrTimeout;
  if (mask & KBV_QP_MAX_QP_RD_ATOMIC) p |= o::kSraMax;
  if (mask & KBV_QP_MAX_DEST_RD_ATOMIC) p |= o::kRraMax;
  if (mask & KBV_QP_RETRY_CNT) p |= o::kRetryCount;
  if (mask & KBV_QP_RNR_RETRY) p |= o::kRnrRetry;
  if (mask & KBV_QP_TIMEOUT) p |= o::kAckTimeout;
  if (mask & KBV_QP_AV) p |= o::kPrimaryAddrPath;
  return p;
}

// Validates the values the mask names and folds them into the QP's
// accumulated attributes.
Status apply_attr(QpImpl& q, const kbv_qp_attr_t& a, uint32_t mask) {
  hca::cmd::QpAttr& x = q.acc;
  const auto& caps = q.dev->hca->caps();
  if (mask & KBV_QP_PORT) {
    if (a.port_num == 0 || a.port_num > caps.num_ports) return KBV_ERR_INVALID_PORT;
    x.path.vhca_port_num = a.port_num;
  }
  if (mask & KBV_QP_PKEY_INDEX) {
    // cmd_hca_cap.pkey_table_size is a log: 128 << n entries (kernel
    // mlx5_to_sw_pkey_sz).
    if (caps.pkey_table_size > 5 || a.pkey_index >= (128u << caps.pkey_table_size))
      return KBV_ERR_INVALID_ARGUMENT;
    x.path.pkey_index = a.pkey_index;
  }
  if (mask & KBV_QP_ACCESS_FLAGS) {
    constexpr uint32_t kRemote =
        KBV_ACCESS_REMOTE_WRITE | KBV_ACCESS_REMOTE_READ | KBV_ACCESS_REMOTE_ATOMIC;
    if (a.qp_access_flags & ~(kRemote | KBV_ACCESS_LOCAL_WRITE)) return KBV_ERR_INVALID_ARGUMENT;
    x.rre = a.qp_access_flags & KBV_ACCESS_REMOTE_READ;
    x.rwe = a.qp_access_flags & KBV_ACCESS_REMOTE_WRITE;
    x.rae = a.qp_access_flags & KBV_ACCESS_REMOTE_ATOMIC;
    if (x.rae && q.type == KBV_QPT_UC) return KBV_ERR_INVALID_ARGUMENT;
    x.atomic_mode = x.rae ? prm::qpc_atomic_mode::kIbSpec : 0;
  }
  if (mask & KBV_QP_QKEY) x.q_key = a.qkey;
  if (mask & KBV_QP_PATH_MTU) {
    if (a.path_mtu < KBV_MTU_256 || a.path_mtu > KBV_MTU_4096) return KBV_ERR_INVALID_ARGUMENT;
    x.mtu = a.path_mtu;
  }
  x.log_msg_max = caps.log_max_msg;
  if (mask & KBV_QP_DEST_QPN) {
    if (a.dest_qp_num > 0xFFFFFF) return KBV_ERR_INVALID_ARGUMENT;
    x.remote_qpn = a.dest_qp_num;
  }
  if (mask & KBV_QP_RQ_PSN) {
    if (a.rq_psn > 0xFFFFFF) return KBV_ERR_INVALID_ARGUMENT;
    x.next_rcv_psn = a.rq_psn;
  }
  if (mask & KBV_QP_SQ_PSN) {
    if (a.sq_psn > 0xFFFFFF) return KBV_ERR_INVALID_ARGUMENT;
    x.next_send_psn = a.sq_psn;
  }
  if (mask & KBV_QP_MAX_DEST_RD_ATOMIC) {
    if (a.max_dest_rd_atomic > (1u << caps.log_max_ra_res_qp)) return KBV_ERR_LIMIT_EXCEEDED;
    x.log_rra_max = log2ceil(a.max_dest_rd_atomic);
  }
  if (mask & KBV_QP_MAX_QP_RD_ATOMIC) {
    if (a.max_rd_atomic > (1u << caps.log_max_ra_req_qp)) return KBV_ERR_LIMIT_EXCEEDED;
    x.log_sra_max = log2ceil(a.max_rd_atomic);
  }
  if (mask & KBV_QP_MIN_RNR_TIMER) {
    if (a.min_rnr_timer > 31) return KBV_ERR_INVALID_ARGUMENT;
    x.min_rnr_nak = a.min_rnr_timer;
  }
  if (mask & KBV_QP_RETRY_CNT) {
    if (a.retry_cnt > 7) return KBV_ERR_INVALID_ARGUMENT;
    x.retry_count = a.retry_cnt;
  }
  if (mask & KBV_QP_RNR_RETRY) {
    if (a.rnr_retry > 7) return KBV_ERR_INVALID_ARGUMENT;
    x.rnr_retry = a.rnr_retry;
  }
  if (mask & KBV_QP_AV) {
    const kbv_ah_attr_t& h = a.ah_attr;
    const uint32_t port = h.port_num ? h.port_num : x.path.vhca_port_num;
    if (port == 0 || port > caps.num_ports) return KBV_ERR_INVALID_PORT;
    if (h.flow_label > 0xFFFFF || h.sl > 7) return KBV_ERR_INVALID_ARGUMENT;
    hca::RoceDest d;
    std::memcpy(d.dgid.data(), h.dgid, 16);
    d.sgid_index = h.sgid_index;
    d.dmac = h.dmac & 0xFFFFFFFFFFFFull;
    d.port = static_cast<uint8_t>(port);
    d.hop_limit = h.hop_limit ? h.hop_limit : 64;
    d.tclass = h.traffic_class;
    d.flow_label = h.flow_label;
    d.sl = h.sl;
    d.udp_sport = h.udp_sport;
    const uint32_t rqpn = (mask & KBV_QP_DEST_QPN) ? a.dest_qp_num : x.remote_qpn;
    const uint8_t ack = x.path.ack_timeout;
    const uint16_t pkey = x.path.pkey_index;
    x.path = hca::roce_path(caps, d, q.qp->qpn(), rqpn);
    x.path.ack_timeout = ack;
    x.path.pkey_index = pkey;
  }
  if (mask & KBV_QP_TIMEOUT) {
    if (a.timeout > 31) return KBV_ERR_INVALID_ARGUMENT;
    x.path.ack_timeout = a.timeout;
  }
  return KBV_SUCCESS;
}

void fill_attr(const QpImpl& q, const hca::cmd::QpInfo& i, kbv_qp_attr_t& o) {
  std::memset(&o, 0, sizeof o);
  o.qp_state = o.cur_qp_state = from_prm_state(i.state);
  o.path_mtu = i.mtu;
  o.qkey = i.q_key;
  o.rq_psn = i.next_rcv_psn;
  o.sq_psn = i.next_send_psn;
  o.dest_qp_num = i.remote_qpn;
  o.qp_access_flags = (i.rre ? KBV_ACCESS_REMOTE_READ : 0) | (i.rwe ? KBV_ACCESS_REMOTE_WRITE : 0) |
                      (i.rae ? KBV_ACCESS_REMOTE_ATOMIC : 0);
  std::memcpy(o.ah_attr.dgid, i.path.rgid.data(), 16);
  o.ah_attr.dmac = i.path.rmac;
  o.ah_attr.flow_label = i.path.flow_label;
  o.ah_attr.udp_sport = i.path.udp_sport;
  o.ah_attr.sgid_index = i.path.src_addr_index;
  o.ah_attr.hop_limit = i.path.hop_limit;
  o.ah_attr.traffic_class = i.path.tclass;
  o.ah_attr.sl = i.path.sl;
  o.ah_attr.port_num = i.path.vhca_port_num;
  o.pkey_index = i.path.pkey_index;
  o.port_num = i.path.vhca_port_num;
  o.max_rd_atomic = static_cast<uint8_t>(1u << i.log_sra_max);
  o.max_dest_rd_atomic = static_cast<uint8_t>(1u << i.log_rra_max);
  o.min_rnr_timer = static_cast<uint8_t>(i.min_rnr_nak);
  o.timeout = i.path.ack_timeout;
  o.retry_cnt = static_cast<uint8_t>(i.retry_count);
  o.rnr_retry = static_cast<uint8_t>(i.rnr_retry);
  o.cap = q.cap;
}

bool is_multicast_gid(const uint8_t* g) {
  if (g[0] == 0xff) return true;  // IPv6 ff00::/8
  bool v4 = true;
  for (int i = 0; i < 10; ++i) v4 &= g[i] == 0;
  return v4 && g[10] == 0xff && g[11] == 0xff && (g[12] & 0xf0) == 0xe0;  // 224.0.0.0/4
}

}  // namespace
}  // namespace kbv::verbs

using kbv::Result;
using kbv::Status;
using kbv::verbs::CqImpl;
using kbv::verbs::Kind;
using kbv::verbs::QpImpl;
using kbv::verbs::Ticket;
namespace hca = kbv::hca;
namespace v = kbv::verbs;

namespace {

std::shared_ptr<QpImpl> ready_qp(kbv_qp_t h, Status* st) {
  auto q = v::lookup_as<QpImpl>(h, Kind::kQp);
  if (!q) {
    *st = KBV_ERR_INVALID_HANDLE;
    return nullptr;
  }
  if (!q->ready()) {
    *st = KBV_ERR_INVALID_STATE;
    return nullptr;
  }
  *st = q->dev->check_usable();
  return st->is_ok() ? q : nullptr;
}

void push_attach(const std::shared_ptr<QpImpl>& q, bool attach) {
  const bool same = q->send_cq == q->recv_cq;
  auto* op = new v::AttachOp{q, attach, true, same};
  q->send_cq->push_op(op);
  if (!same) q->recv_cq->push_op(new v::AttachOp{q, attach, false, true});
}

// push_attach(q, false) with the requests allocated at create (once; a
// destroy run again pushes nothing more).
void push_detach(const std::shared_ptr<QpImpl>& q) {
  if (!q->detach_ops[0]) return;
  const bool same = q->send_cq == q->recv_cq;
  v::AttachOp* op = q->detach_ops[0].release();
  *op = v::AttachOp{q, false, true, same};
  q->send_cq->push_op(op);
  if (same) {
    q->detach_ops[1].reset();
    return;
  }
  v::AttachOp* rop = q->detach_ops[1].release();
  *rop = v::AttachOp{q, false, false, true};
  q->recv_cq->push_op(rop);
}

}  // namespace

extern "C" {

kbv_status_t kbv_qp_create(kbv_pd_t pd, const kbv_qp_init_attr_t* attr, kbv_eq_t eq,
                           uint64_t user_data, kbv_qp_t* out) try {
  if (!out || !attr) return KBV_ERR_INVALID_ARGUMENT;
  *out = 0;
  auto p = v::lookup_as<v::PdImpl>(pd, Kind::kPd);
  if (!p) return KBV_ERR_INVALID_HANDLE;
  if (!p->ready()) return KBV_ERR_INVALID_STATE;
  Status st = p->dev->check_usable();
  if (!st.is_ok()) return st.code();
  uint32_t prm_st;
  switch (attr->qp_type) {
    case KBV_QPT_RC: prm_st = kbv::prm::qpc_st::kRc; break;
    case KBV_QPT_UC: prm_st = kbv::prm::qpc_st::kUc; break;
    case KBV_QPT_UD: prm_st = kbv::prm::qpc_st::kUd; break;
    default: return KBV_ERR_INVALID_ARGUMENT;
  }
  if (attr->sq_sig_all > 1 || attr->cap.max_send_wr == 0) return KBV_ERR_INVALID_ARGUMENT;
  if (attr->send_cq == 0 || attr->recv_cq == 0) return KBV_ERR_INVALID_ARGUMENT;
  auto scq = v::lookup_as<CqImpl>(attr->send_cq, Kind::kCq);
  auto rcq = v::lookup_as<CqImpl>(attr->recv_cq, Kind::kCq);
  if (!scq || !rcq || scq->dev != p->dev || rcq->dev != p->dev) return KBV_ERR_INVALID_HANDLE;
  if (!scq->ready() || !rcq->ready()) return KBV_ERR_INVALID_STATE;
  std::shared_ptr<v::SrqImpl> srq;
  if (attr->srq) {
    srq = v::lookup_as<v::SrqImpl>(attr->srq, Kind::kSrq);
    if (!srq || srq->dev != p->dev) return KBV_ERR_INVALID_HANDLE;
    if (!srq->ready()) return KBV_ERR_INVALID_STATE;
  } else if (attr->cap.max_recv_wr == 0) {
    return KBV_ERR_INVALID_ARGUMENT;
  }
  const auto& caps = p->dev->hca->caps();
  const uint32_t max_wr = 1u << caps.log_max_qp_sz;
  if (attr->cap.max_send_wr > max_wr || attr->cap.max_recv_wr > max_wr)
    return KBV_ERR_LIMIT_EXCEEDED;
  auto evq = v::event_queue_for(attr->event_eq, eq);
  if (!evq) return evq.status().code();

  auto q = std::make_shared<QpImpl>();
  // The detach requests its destroy will push, allocated now: a destroy
  // must not need memory (kbv.h "Close": it never fails).
  q->detach_ops[0] = std::make_unique<v::AttachOp>();
  q->detach_ops[1] = std::make_unique<v::AttachOp>();
  q->dev = p->dev;
  q->event_eq = *evq;
  q->type = attr->qp_type;
  q->cap = attr->cap;
  q->sig_all = attr->sq_sig_all != 0;
  q->send_cq = scq;
  q->recv_cq = rcq;
  q->srq = srq;
  q->cfg.st = prm_st;
  q->cfg.pd = p->pdn;
  q->cfg.send_cqn = scq->cq->cqn();
  q->cfg.recv_cqn = rcq->cq->cqn();
  if (srq) q->cfg.srqn = srq->srq->srqn();
  q->cfg.max_send_wr = attr->cap.max_send_wr;
  q->cfg.max_recv_wr = srq ? 0 : attr->cap.max_recv_wr;
  q->cfg.max_send_sge = attr->cap.max_send_sge ? attr->cap.max_send_sge : 1;
  q->cfg.max_recv_sge = attr->cap.max_recv_sge ? attr->cap.max_recv_sge : 1;
  q->cfg.max_inline_data = attr->cap.max_inline_data;
  std::vector<std::shared_ptr<v::Base>> parents{p, scq};
  if (rcq != scq) parents.push_back(rcq);
  if (srq) parents.push_back(srq);
  return v::create_object(
             q, parents, eq, user_data, out,
             [q](const Ticket& t) -> Status {
               return hca::Qp::create(
                   *q->dev->hca, q->cfg, [q, t](Result<std::unique_ptr<hca::Qp>> r) {
                     if (!r) return v::create_failed(q, &t, r.status());
                     q->qp = std::move(*r);
                     q->destroy = [raw = q.get()] {
                       raw->dev->qps.erase(raw->qp->qpn());
                       push_detach(std::static_pointer_cast<QpImpl>(raw->shared_from_this()));
                       Status s = raw->qp->destroy([raw](Status x) {
                         if (!x.is_ok()) kbv::log::warn("verbs", "qp destroy: {}", x.to_string());
                         raw->send_cq.reset();
                         raw->recv_cq.reset();
                         raw->srq.reset();
                         v::finish_close(*raw);
                       });
                       if (s == KBV_ERR_NO_MEMORY || s == KBV_ERR_BUSY) return s;  // retried
                       if (s.is_error()) {
                         raw->send_cq.reset();
                         raw->recv_cq.reset();
                         raw->srq.reset();
                         v::finish_close(*raw);
                       }
                       return Status{KBV_SUCCESS};
                     };
                     Status b = q->build_queues();
                     if (!b.is_ok()) {
                       kbv::log::error("verbs", "qp {:#x}: queues: {}", q->qp->qpn(),
                                       b.to_string());
                       (void)v::EventQueue::complete(t, b, q->handle(), 0);
                       q->set_state(v::State::kReady);
                       v::close_internal(q);
                       return;
                     }
                     q->dev->qps[q->qp->qpn()] = q;
                     push_attach(q, true);
                     v::created(q, t, q->qp->qpn());
                   });
             })
      .code();
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_qp_destroy(kbv_qp_t qp, kbv_eq_t eq, uint64_t user_data) try {
  auto q = v::lookup(qp, Kind::kQp);
  if (!q) return KBV_ERR_INVALID_HANDLE;
  return v::close_object(q, eq, user_data).code();
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_qp_get_num(kbv_qp_t qp, uint32_t* qpn) try {
  if (!qpn) return KBV_ERR_INVALID_ARGUMENT;
  auto q = v::lookup_as<QpImpl>(qp, Kind::kQp);
  if (!q) return KBV_ERR_INVALID_HANDLE;
  if (!q->ready()) return KBV_ERR_INVALID_STATE;
  *qpn = q->qp->qpn();
  return KBV_SUCCESS;
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_qp_modify(kbv_qp_t qp, const kbv_qp_attr_t* attr, uint32_t attr_mask, kbv_eq_t eq,
                           uint64_t user_data) try {
  Status st;
  auto q = ready_qp(qp, &st);
  if (!q) return st.code();
  if (!attr || !(attr_mask & KBV_QP_STATE) || (attr_mask & ~v::kKnownMask))
    return KBV_ERR_INVALID_ARGUMENT;
  if (attr->qp_state > KBV_QPS_ERR) return KBV_ERR_INVALID_ARGUMENT;
  if (q->modifying.exchange(true)) return KBV_ERR_BUSY;
  struct Clear {
    std::shared_ptr<QpImpl> q;
    bool keep = false;
    ~Clear() {
      if (!keep) q->modifying = false;
    }
  } clear{q};
  std::unique_lock lk(q->dev->mu);
  // KBV_QP_CUR_STATE names the state the application knows the QP is in
  // (ibv_modify_qp's cur_qp_state): the device may have moved it (an error
  // completion puts a UD/UC QP in SQE, an RC QP in ERR) without kbv's view
  // following; firmware checks it either way.
  if ((attr_mask & KBV_QP_CUR_STATE) && attr->cur_qp_state > KBV_QPS_ERR)
    return KBV_ERR_INVALID_ARGUMENT;
  const uint32_t cur =
      (attr_mask & KBV_QP_CUR_STATE) ? attr->cur_qp_state : v::from_prm_state(q->qp->state());
  auto plan = v::plan_for(q->type, cur, attr->qp_state);
  if (!plan) return plan.status().code();
  const uint32_t given = attr_mask & ~(KBV_QP_STATE | KBV_QP_CUR_STATE);
  if ((given & plan->required) != plan->required) return KBV_ERR_INVALID_ARGUMENT;
  if (given & ~(plan->required | plan->allowed)) return KBV_ERR_INVALID_ARGUMENT;
  const hca::cmd::QpAttr saved = q->acc;
  Status a = v::apply_attr(*q, *attr, given);
  if (!a.is_ok()) {
    q->acc = saved;
    return a.code();
  }
  const uint32_t opt = v::optpar_of(given & plan->allowed);
  const uint32_t target = attr->qp_state;
  const hca::cmd::QpAttr x = q->acc;
  lk.unlock();
  auto started = std::make_shared<bool>(false);
  Status r =
      v::submit_control(*q->dev, q->obj.get(), eq, user_data,
                        [q, plan = *plan, x, opt, target, started](const Ticket& t) -> Status {
                          Status s = q->qp->modify(plan.t, x, opt, [q, t, target](Status res) {
                            if (res.is_ok()) {
                              if (target == KBV_QPS_RESET) {
                                Status b = q->build_queues();
                                if (!b.is_ok()) res = b;
                              }
                              q->set_qp_state(target);
                            }
                            q->modifying = false;
                            (void)v::EventQueue::complete(t, res, q->handle(), target);
                          });
                          *started = s.is_pending();
                          return s;
                        });
  if (*started) clear.keep = true;
  if (r.is_error() && !*started) {
    std::lock_guard g(q->dev->mu);
    q->acc = saved;
  }
  return r.code();
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_qp_query(kbv_qp_t qp, kbv_qp_attr_t* out, kbv_eq_t eq, uint64_t user_data) try {
  Status st;
  auto q = ready_qp(qp, &st);
  if (!q) return st.code();
  if (!out) return KBV_ERR_INVALID_ARGUMENT;
  return v::submit_control(*q->dev, q->obj.get(), eq, user_data,
                           [q, out](const Ticket& t) -> Status {
                             return q->qp->query([q, out, t](Result<hca::cmd::QpInfo> r) {
                               if (!r) {
                                 (void)v::EventQueue::complete(t, r.status(), q->handle(), 0);
                                 return;
                               }
                               // Written only while the request is live: a
                               // cancelled query's buffer may be gone.
                               if (!v::EventQueue::pending(t)) return;
                               v::fill_attr(*q, *r, *out);
                               (void)v::EventQueue::complete(t, KBV_SUCCESS, q->handle(),
                                                             out->qp_state);
                             });
                           })
      .code();
} catch (...) {
  return kbv::abi_exception_status();
}

static kbv_status_t mcast(kbv_qp_t qp, const uint8_t gid[16], kbv_eq_t eq, uint64_t user_data,
                          bool attach) {
  Status st;
  auto q = ready_qp(qp, &st);
  if (!q) return st.code();
  if (!gid || !v::is_multicast_gid(gid)) return KBV_ERR_INVALID_ARGUMENT;
  if (q->type != KBV_QPT_UD) return KBV_ERR_NOT_SUPPORTED;
  hca::Gid g;
  std::memcpy(g.data(), gid, 16);
  return v::submit_control(*q->dev, q->obj.get(), eq, user_data,
                           [q, g, attach](const Ticket& t) -> Status {
                             auto done = [q, t](Status s) {
                               (void)v::EventQueue::complete(t, s, q->handle(), 0);
                             };
                             return attach ? q->qp->attach_mcast(g, done)
                                           : q->qp->detach_mcast(g, done);
                           })
      .code();
}

kbv_status_t kbv_qp_attach_mcast(kbv_qp_t qp, const uint8_t gid[16], kbv_eq_t eq,
                                 uint64_t user_data) try {
  return mcast(qp, gid, eq, user_data, true);
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_qp_detach_mcast(kbv_qp_t qp, const uint8_t gid[16], kbv_eq_t eq,
                                 uint64_t user_data) try {
  return mcast(qp, gid, eq, user_data, false);
} catch (...) {
  return kbv::abi_exception_status();
}

}  // extern "C"
