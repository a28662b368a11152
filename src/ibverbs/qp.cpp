// SPDX-License-Identifier: BSD-3-Clause
//
// Queue pairs of kbv's libibverbs: ibv_create_qp, ibv_create_qp_ex
// (verbs_context slot), ibv_modify_qp, ibv_query_qp, ibv_destroy_qp,
// ibv_query_qp_data_in_order, ibv_set_ece / ibv_query_ece (rdma-core 44 man
// pages ibv_create_qp(3), ibv_create_qp_ex(3), ibv_modify_qp(3),
// ibv_query_qp(3)).
//
// Types: RC, UC, UD (kbv_qp_type_t has ibv_qp_type's values); XRC, raw
// packet and driver QPs fail with EOPNOTSUPP. Attribute masks:
// enum ibv_qp_attr_mask's bits that kbv_qp_modify takes are the same bits
// (kbv.h KBV_QP_*); kbv checks each transition against IBTA 10.3.1 (required
// and allowed attributes), which gives EINVAL as the kernel's
// ib_modify_qp_is_ok does. Attributes kbv has no support for — alternate
// path / path migration (APM), SQD notification, resizing (IBV_QP_CAP),
// rate limits — fail with EOPNOTSUPP. RoCE address vectors need the GRH
// (ah.hpp).
#include <cerrno>
#include <cstring>
#include <new>

#include "ibverbs/ah.hpp"
#include "ibverbs/context.hpp"
#include "ibverbs/export.hpp"

namespace kbv::ibverbs {
namespace {

constexpr int kKbvMask = IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
                         IBV_QP_PORT | IBV_QP_QKEY | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT |
                         IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_RQ_PSN |
                         IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER | IBV_QP_SQ_PSN |
                         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_DEST_QPN;
static_assert(KBV_QP_STATE == IBV_QP_STATE && KBV_QP_CUR_STATE == IBV_QP_CUR_STATE &&
              KBV_QP_ACCESS_FLAGS == IBV_QP_ACCESS_FLAGS && KBV_QP_AV == IBV_QP_AV &&
              KBV_QP_DEST_QPN == IBV_QP_DEST_QPN && KBV_QP_MIN_RNR_TIMER == IBV_QP_MIN_RNR_TIMER &&
              KBV_QP_MAX_DEST_RD_ATOMIC == IBV_QP_MAX_DEST_RD_ATOMIC);
constexpr int kUnsupportedMask = IBV_QP_EN_SQD_ASYNC_NOTIFY | IBV_QP_ALT_PATH |
                                 IBV_QP_PATH_MIG_STATE | IBV_QP_CAP | IBV_QP_RATE_LIMIT;
constexpr unsigned kQpAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

void hold(ibv_qp_init_attr_ex* a) {
  ++to_pd(a->pd)->users;
  ++to_cq(a->send_cq)->users;
  ++to_cq(a->recv_cq)->users;
  if (a->srq) ++to_srq(a->srq)->users;
}

void release(ibv_qp* q) {
  --to_pd(q->pd)->users;
  --to_cq(q->send_cq)->users;
  --to_cq(q->recv_cq)->users;
  if (q->srq) --to_srq(q->srq)->users;
}

ibv_qp* create_qp(ibv_context* context, ibv_qp_init_attr_ex* a) {
  if (!context || !a || !(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd || !a->send_cq ||
      !a->recv_cq) {
    errno = EINVAL;
    return nullptr;
  }
  const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
                         IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
                         IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH |
                         IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  if (a->comp_mask & ~known) {
    errno = EINVAL;
    return nullptr;
  }
  if ((a->comp_mask & (IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
                       IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH)) ||
      ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags != 0)) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  if (a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UC && a->qp_type != IBV_QPT_UD) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  auto* q = new (std::nothrow) Qp{};
  if (!q) {
    errno = ENOMEM;
    return nullptr;
  }
  ContextState& st = state_of(context);
  kbv_qp_init_attr_t k{};
  k.qp_type = static_cast<uint32_t>(a->qp_type);
  k.sq_sig_all = a->sq_sig_all ? 1 : 0;
  k.send_cq = to_cq(a->send_cq)->handle;
  k.recv_cq = to_cq(a->recv_cq)->handle;
  k.srq = a->srq ? to_srq(a->srq)->handle : KBV_HANDLE_NONE;
  k.cap = kbv_qp_cap_t{a->cap.max_send_wr, a->cap.max_recv_wr, a->cap.max_send_sge,
                       a->cap.max_recv_sge, a->cap.max_inline_data};
  k.event_eq = st.async_eq;
  kbv_status_t s = kbv_qp_create(to_pd(a->pd)->handle, &k, KBV_EQ_NONE, 0, &q->handle);
  uint32_t qpn = 0;
  kbv_qp_attr_t qa{};
  if (s == KBV_SUCCESS) s = kbv_qp_get_num(q->handle, &qpn);
  // The caps the QP got (kbv rounds queue sizes up).
  if (s == KBV_SUCCESS) s = kbv_qp_query(q->handle, &qa, KBV_EQ_NONE, 0);
  if (s != KBV_SUCCESS) {
    if (q->handle != KBV_HANDLE_NONE) (void)kbv_qp_destroy(q->handle, KBV_EQ_NONE, 0);
    delete q;
    fail(s);
    return nullptr;
  }
  // A QP with an SRQ has no receive queue of its own.
  if (a->srq) qa.cap.max_recv_wr = qa.cap.max_recv_sge = 0;
  q->max_send_wr = qa.cap.max_send_wr;
  q->max_send_sge = qa.cap.max_send_sge;
  q->max_inline_data = qa.cap.max_inline_data;
  q->max_recv_wr = qa.cap.max_recv_wr;
  q->max_recv_sge = qa.cap.max_recv_sge;
  q->sq_sig_all = a->sq_sig_all != 0;
  ibv_qp& b = q->qpx.qp_base;
  b.context = context;
  b.qp_context = a->qp_context;
  b.pd = a->pd;
  b.send_cq = a->send_cq;
  b.recv_cq = a->recv_cq;
  b.srq = a->srq;
  b.handle = static_cast<uint32_t>(q->handle);
  b.qp_num = qpn;
  b.state = IBV_QPS_RESET;
  b.qp_type = a->qp_type;
  pthread_mutex_init(&b.mutex, nullptr);
  pthread_cond_init(&b.cond, nullptr);
  b.events_completed = 0;
  // The wr_* functions (fast_qp_ex.cpp) read the QP type and caps set above.
  if (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
    if (int e = init_qp_ex_ops(*q, a->send_ops_flags); e != 0) {
      release_qp_ex(*q);
      pthread_cond_destroy(&b.cond);
      pthread_mutex_destroy(&b.mutex);
      (void)kbv_qp_destroy(q->handle, KBV_EQ_NONE, 0);
      delete q;
      errno = e;
      return nullptr;
    }
  }
  a->cap.max_send_wr = q->max_send_wr;
  a->cap.max_send_sge = q->max_send_sge;
  a->cap.max_inline_data = q->max_inline_data;
  a->cap.max_recv_wr = q->max_recv_wr;
  a->cap.max_recv_sge = q->max_recv_sge;
  if (register_object(st, q->handle, ObjKind::kQp, q) != 0) {
    release_qp_ex(*q);
    (void)kbv_qp_destroy(q->handle, KBV_EQ_NONE, 0);
    pthread_cond_destroy(&b.cond);
    pthread_mutex_destroy(&b.mutex);
    delete q;
    errno = ENOMEM;
    return nullptr;
  }
  hold(a);
  return &b;
}

ibv_qp* vctx_create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr) {
  return create_qp(context, attr);
}

}  // namespace

void fill_qp_ops(Context& ctx) { ctx.vctx.create_qp_ex = vctx_create_qp_ex; }

}  // namespace kbv::ibverbs

using namespace kbv::ibverbs;

extern "C" {

ibv_qp* kbv_ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
  if (!pd || !qp_init_attr) {
    errno = EINVAL;
    return nullptr;
  }
  ibv_qp_init_attr_ex a{};
  std::memcpy(&a, qp_init_attr, sizeof *qp_init_attr);
  a.comp_mask = IBV_QP_INIT_ATTR_PD;
  a.pd = pd;
  ibv_qp* q = create_qp(pd->context, &a);
  if (q) qp_init_attr->cap = a.cap;
  return q;
}
KBV_IBV_DEFAULT(ibv_create_qp, "IBVERBS_1.1");

int kbv_ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
  if (!qp || !attr) return EINVAL;
  if (attr_mask & kUnsupportedMask) return EOPNOTSUPP;
  if (attr_mask & ~(kKbvMask | kUnsupportedMask)) return EINVAL;
  Qp* q = to_qp(qp);
  kbv_qp_attr_t k{};
  k.qp_state = attr->qp_state;
  k.cur_qp_state = attr->cur_qp_state;
  k.path_mtu = attr->path_mtu;
  k.qkey = attr->qkey;
  k.rq_psn = attr->rq_psn;
  k.sq_psn = attr->sq_psn;
  k.dest_qp_num = attr->dest_qp_num;
  if ((attr_mask & IBV_QP_ACCESS_FLAGS) && (attr->qp_access_flags & ~kQpAccess)) return EINVAL;
  k.qp_access_flags = attr->qp_access_flags & kQpAccess;
  if (attr_mask & IBV_QP_AV) {
    if (int e = to_kbv_ah(qp->context, attr->ah_attr, &k.ah_attr); e != 0) return e;
  }
  k.pkey_index = attr->pkey_index;
  k.port_num = attr->port_num;
  k.max_rd_atomic = attr->max_rd_atomic;
  k.max_dest_rd_atomic = attr->max_dest_rd_atomic;
  k.min_rnr_timer = attr->min_rnr_timer;
  k.timeout = attr->timeout;
  k.retry_cnt = attr->retry_cnt;
  k.rnr_retry = attr->rnr_retry;
  const kbv_status_t s =
      kbv_qp_modify(q->handle, &k, static_cast<uint32_t>(attr_mask), KBV_EQ_NONE, 0);
  if (s != KBV_SUCCESS) return to_errno(s);
  if (attr_mask & IBV_QP_STATE) qp->state = attr->qp_state;
  if (attr_mask & IBV_QP_QKEY) q->qkey = attr->qkey;
  return 0;
}
KBV_IBV_DEFAULT(ibv_modify_qp, "IBVERBS_1.1");

// Fills every attribute whatever attr_mask asks (ibv_query_qp(3): the mask
// is a hint; rdma-core's providers fill them all too).
int kbv_ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr) {
  (void)attr_mask;
  if (!qp || !attr || !init_attr) return EINVAL;
  Qp* q = to_qp(qp);
  kbv_qp_attr_t k{};
  const kbv_status_t s = kbv_qp_query(q->handle, &k, KBV_EQ_NONE, 0);
  if (s != KBV_SUCCESS) return to_errno(s);
  std::memset(attr, 0, sizeof *attr);
  attr->qp_state = static_cast<ibv_qp_state>(k.cur_qp_state);
  attr->cur_qp_state = attr->qp_state;
  attr->path_mtu = static_cast<ibv_mtu>(k.path_mtu);
  attr->path_mig_state = IBV_MIG_MIGRATED;
  attr->qkey = k.qkey;
  attr->rq_psn = k.rq_psn;
  attr->sq_psn = k.sq_psn;
  attr->dest_qp_num = k.dest_qp_num;
  attr->qp_access_flags = k.qp_access_flags;
  attr->cap = ibv_qp_cap{q->max_send_wr, q->max_recv_wr, q->max_send_sge, q->max_recv_sge,
                         q->max_inline_data};
  if (qp->qp_type != IBV_QPT_UD) from_kbv_ah(k.ah_attr, &attr->ah_attr);
  attr->pkey_index = k.pkey_index;
  attr->max_rd_atomic = k.max_rd_atomic;
  attr->max_dest_rd_atomic = k.max_dest_rd_atomic;
  attr->min_rnr_timer = k.min_rnr_timer;
  attr->port_num = k.port_num;
  attr->timeout = k.timeout;
  attr->retry_cnt = k.retry_cnt;
  attr->rnr_retry = k.rnr_retry;
  qp->state = attr->qp_state;
  std::memset(init_attr, 0, sizeof *init_attr);
  init_attr->qp_context = qp->qp_context;
  init_attr->send_cq = qp->send_cq;
  init_attr->recv_cq = qp->recv_cq;
  init_attr->srq = qp->srq;
  init_attr->cap = attr->cap;
  init_attr->qp_type = qp->qp_type;
  init_attr->sq_sig_all = q->sq_sig_all ? 1 : 0;
  return 0;
}
KBV_IBV_DEFAULT(ibv_query_qp, "IBVERBS_1.1");

int kbv_ibv_destroy_qp(ibv_qp* qp) {
  if (!qp) return EINVAL;
  Qp* q = to_qp(qp);
  const kbv_status_t s = kbv_qp_destroy(q->handle, KBV_EQ_NONE, 0);
  if (s != KBV_SUCCESS && s != KBV_PENDING) return to_errno(s);
  const ObjEntry e = unregister_object(state_of(qp->context), q->handle);
  // rdma-core: wait for the acknowledgement of every async event delivered.
  wait_acked(&qp->mutex, &qp->cond, &qp->events_completed, e.delivered);
  release(qp);
  release_qp_ex(*q);
  pthread_cond_destroy(&qp->cond);
  pthread_mutex_destroy(&qp->mutex);
  delete q;
  return 0;
}
KBV_IBV_DEFAULT(ibv_destroy_qp, "IBVERBS_1.1");

// ibv_query_qp_data_in_order(3): 1 only when the device guarantees that a
// message's data lands in order; kbv makes no such promise for silicon, so
// 0 ("not guaranteed"), rdma-core's answer for a provider without the op.
int ibv_query_qp_data_in_order(ibv_qp* qp, ibv_wr_opcode op, uint32_t flags) {
  (void)qp;
  (void)op;
  (void)flags;
  return 0;
}

// Enhanced connection establishment is a ConnectX firmware option kbv does
// not negotiate: EOPNOTSUPP (ibv_set_ece(3)).
int ibv_set_ece(ibv_qp* qp, ibv_ece* ece) {
  (void)qp;
  (void)ece;
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

int ibv_query_ece(ibv_qp* qp, ibv_ece* ece) {
  (void)qp;
  (void)ece;
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

}  // extern "C"
