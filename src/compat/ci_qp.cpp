// SPDX-License-Identifier: BSD-3-Clause
// Channel interface (kbv/compat/ib_ci.h): QPs, SRQs, multicast, and the data
// path — linked ib_send_wr_t / ib_recv_wr_t lists posted through kbv's
// arrays in chunks (the failed WR handed back), poll_cq's free/done lists
// filled from kbv_poll_cq. docs/CI.md.
#include <arpa/inet.h>
#include <endian.h>

#include <algorithm>
#include <cstring>

#include "compat/ci_objects.hpp"

namespace kbv::compat::ci {
namespace {

constexpr uint32_t kChunk = 16;  // WRs converted per kbv_post_* call (stack arrays)

uint32_t qpt_to_kbv(ib_qp_type_t t) {
  switch (t) {
    case IB_QPT_RELIABLE_CONN: return KBV_QPT_RC;
    case IB_QPT_UNRELIABLE_CONN: return KBV_QPT_UC;
    case IB_QPT_UNRELIABLE_DGRM: return KBV_QPT_UD;
    default: return 0;
  }
}

ib_qp_state_t state_of(uint32_t s) {
  switch (s) {
    case KBV_QPS_RESET: return IB_QPS_RESET;
    case KBV_QPS_INIT: return IB_QPS_INIT;
    case KBV_QPS_RTR: return IB_QPS_RTR;
    case KBV_QPS_RTS: return IB_QPS_RTS;
    case KBV_QPS_SQD: return IB_QPS_SQD;
    case KBV_QPS_SQE: return IB_QPS_SQERR;
    default: return IB_QPS_ERROR;
  }
}

ib_access_t access_of(uint32_t k) {
  ib_access_t a = 0;
  if (k & KBV_ACCESS_LOCAL_WRITE) a |= IB_AC_LOCAL_WRITE;
  if (k & KBV_ACCESS_REMOTE_WRITE) a |= IB_AC_RDMA_WRITE;
  if (k & KBV_ACCESS_REMOTE_READ) a |= IB_AC_RDMA_READ;
  if (k & KBV_ACCESS_REMOTE_ATOMIC) a |= IB_AC_ATOMIC;
  return a;
}

void fill_attr(const kbv_ci_qp_s& q, const kbv_qp_attr_t* k, ib_qp_attr_t* a) {
  std::memset(a, 0, sizeof *a);
  a->h_pd = q.pd;
  a->qp_type = q.create.qp_type;
  a->sq_max_inline = q.create.sq_max_inline;
  a->sq_depth = q.create.sq_depth;
  a->rq_depth = q.create.rq_depth;
  a->sq_sge = q.create.sq_sge;
  a->rq_sge = q.create.rq_sge;
  a->h_sq_cq = q.create.h_sq_cq;
  a->h_rq_cq = q.create.h_rq_cq;
  a->h_srq = q.create.h_srq;
  a->sq_signaled = q.create.sq_signaled;
  a->num = htonl(q.qpn);
  a->state = IB_QPS_RESET;
  if (!k) return;
  a->state = state_of(k->cur_qp_state);
  a->access_ctrl = access_of(k->qp_access_flags);
  a->pkey_index = k->pkey_index;
  a->init_depth = k->max_rd_atomic;
  a->resp_res = k->max_dest_rd_atomic;
  a->dest_num = htonl(k->dest_qp_num);
  a->qkey = htonl(k->qkey);
  a->sq_psn = htonl(k->sq_psn);
  a->rq_psn = htonl(k->rq_psn);
  a->primary_port = k->port_num;
  a->primary_av.port_num = k->port_num;
  a->primary_av.sl = k->ah_attr.sl;
  a->primary_av.grh_valid = 1;
  a->primary_av.grh.hop_limit = k->ah_attr.hop_limit;
  a->primary_av.grh.ver_class_flow =
      htonl(6u << 28 | uint32_t{k->ah_attr.traffic_class} << 20 | k->ah_attr.flow_label);
  std::memcpy(a->primary_av.grh.dest_gid.raw, k->ah_attr.dgid, 16);
  a->primary_av.conn.path_mtu = static_cast<uint8_t>(k->path_mtu);
  a->primary_av.conn.local_ack_timeout = k->timeout;
  a->primary_av.conn.seq_err_retry_cnt = k->retry_cnt;
  a->primary_av.conn.rnr_retry_cnt = k->rnr_retry;
  a->apm_state = IB_APM_MIGRATED;
}

ib_api_status_t query(kbv_ci_qp_s& q, ib_qp_attr_t* out) {
  kbv_qp_attr_t k{};
  kbv_status_t st = kbv_qp_query(q.qp, &k, KBV_EQ_NONE, 0);
  if (st != KBV_SUCCESS) return status_of(st);
  fill_attr(q, &k, out);
  return IB_SUCCESS;
}

// ---- QP ----------------------------------------------------------------------------

ib_api_status_t create_qp(const ib_pd_handle_t h_pd, const void* qp_context,
                          const ib_qp_create_t* p_create_attr, ib_qp_attr_t* p_qp_attr,
                          ib_qp_handle_t* ph_qp, ci_umv_buf_t* p_umv_buf) try {
  if (!live(h_pd, Kind::kPd)) return IB_INVALID_PD_HANDLE;
  if (!p_create_attr || !ph_qp) return IB_INVALID_PARAMETER;
  const ib_qp_create_t& c = *p_create_attr;
  const uint32_t type = qpt_to_kbv(c.qp_type);
  if (type == 0) return IB_INVALID_SETTING;
  if (!live(c.h_sq_cq, Kind::kCq) || !live(c.h_rq_cq, Kind::kCq)) return IB_INVALID_CQ_HANDLE;
  if (c.h_srq && !live(c.h_srq, Kind::kSrq)) return IB_INVALID_SRQ_HANDLE;
  if (ib_api_status_t u = umv(p_umv_buf); u != IB_SUCCESS) return u;
  CiDevice& d = *h_pd->ca->dev;
  kbv_qp_init_attr_t a{};
  a.qp_type = type;
  a.sq_sig_all = c.sq_signaled ? 1 : 0;
  a.send_cq = c.h_sq_cq->cq;
  a.recv_cq = c.h_rq_cq->cq;
  a.srq = c.h_srq ? c.h_srq->srq : 0;
  a.cap.max_send_wr = c.sq_depth;
  a.cap.max_recv_wr = c.rq_depth;
  a.cap.max_send_sge = c.sq_sge;
  a.cap.max_recv_sge = c.rq_sge;
  a.cap.max_inline_data = c.sq_max_inline;
  a.event_eq = d.eq;
  auto* q = new kbv_ci_qp_s();
  q->pd = h_pd;
  q->context = const_cast<void*>(qp_context);
  q->create = c;
  kbv_status_t st = kbv_qp_create(h_pd->pd, &a, KBV_EQ_NONE, 0, &q->qp);
  if (st == KBV_SUCCESS) st = kbv_qp_get_num(q->qp, &q->qpn);
  if (st != KBV_SUCCESS) {
    if (q->qp) (void)kbv_qp_destroy(q->qp, KBV_EQ_NONE, 0);
    delete q;
    return status_of(st);
  }
  {
    std::lock_guard lk(mu());
    track(q, Kind::kQp);
    d.qp_by_handle[q->qp] = q;
    ++h_pd->children;
    ++c.h_sq_cq->children;
    ++c.h_rq_cq->children;
    if (c.h_srq) ++c.h_srq->children;
  }
  if (p_qp_attr) fill_attr(*q, nullptr, p_qp_attr);
  *ph_qp = q;
  return IB_SUCCESS;
} catch (...) {
  return IB_INSUFFICIENT_MEMORY;
}

ib_api_status_t create_spl_qp(const ib_pd_handle_t h_pd, const uint8_t, const void*,
                              const ib_qp_create_t*, ib_qp_attr_t*, ib_qp_handle_t*) {
  if (!live(h_pd, Kind::kPd)) return IB_INVALID_PD_HANDLE;
  return IB_UNSUPPORTED;
}

ib_api_status_t modify_qp(const ib_qp_handle_t h_qp, const ib_qp_mod_t* p_modify_attr,
                          ib_qp_attr_t* p_qp_attr, ci_umv_buf_t* p_umv_buf) try {
  if (!live(h_qp, Kind::kQp)) return IB_INVALID_QP_HANDLE;
  if (!p_modify_attr) return IB_INVALID_PARAMETER;
  if (ib_api_status_t u = umv(p_umv_buf); u != IB_SUCCESS) return u;
  const ib_qp_mod_t& m = *p_modify_attr;
  const bool rc = h_qp->create.qp_type == IB_QPT_RELIABLE_CONN;
  const bool ud = h_qp->create.qp_type == IB_QPT_UNRELIABLE_DGRM;
  kbv_qp_attr_t a{};
  uint32_t mask = KBV_QP_STATE;
  switch (m.req_state) {
    case IB_QPS_RESET: a.qp_state = KBV_QPS_RESET; break;
    case IB_QPS_ERROR: a.qp_state = KBV_QPS_ERR; break;
    case IB_QPS_INIT: {
      a.qp_state = KBV_QPS_INIT;
      a.port_num = m.state.init.primary_port;
      a.pkey_index = m.state.init.pkey_index;
      mask |= KBV_QP_PORT | KBV_QP_PKEY_INDEX;
      if (ud) {
        a.qkey = ntohl(m.state.init.qkey);
        mask |= KBV_QP_QKEY;
      } else {
        a.qp_access_flags = access_to_kbv(m.state.init.access_ctrl) & ~KBV_ACCESS_LOCAL_WRITE;
        mask |= KBV_QP_ACCESS_FLAGS;
      }
      break;
    }
    case IB_QPS_RTR: {
      const auto& r = m.state.rtr;
      if (r.opts & (IB_MOD_QP_ALTERNATE_AV | IB_MOD_QP_APM_STATE)) return IB_UNSUPPORTED;
      a.qp_state = KBV_QPS_RTR;
      if (!ud) {
        kbv_ah_attr_t ah;
        if (ib_api_status_t s = av_to_kbv(*h_qp->pd->ca->dev, r.primary_av, &ah); s != IB_SUCCESS)
          return s;
        a.ah_attr = ah;
        a.path_mtu = r.primary_av.conn.path_mtu;
        a.dest_qp_num = ntohl(r.dest_qp);
        a.rq_psn = ntohl(r.rq_psn);
        mask |= KBV_QP_AV | KBV_QP_PATH_MTU | KBV_QP_DEST_QPN | KBV_QP_RQ_PSN;
        if (rc) {
          a.max_dest_rd_atomic = r.resp_res;
          a.min_rnr_timer = r.rnr_nak_timeout;
          mask |= KBV_QP_MAX_DEST_RD_ATOMIC | KBV_QP_MIN_RNR_TIMER;
        }
      }
      if (r.opts & IB_MOD_QP_QKEY) {
        a.qkey = ntohl(r.qkey);
        mask |= KBV_QP_QKEY;
      }
      if (r.opts & IB_MOD_QP_PKEY) {
        a.pkey_index = r.pkey_index;
        mask |= KBV_QP_PKEY_INDEX;
      }
      if ((r.opts & IB_MOD_QP_ACCESS_CTRL) && !ud) {
        a.qp_access_flags = access_to_kbv(r.access_ctrl) & ~KBV_ACCESS_LOCAL_WRITE;
        mask |= KBV_QP_ACCESS_FLAGS;
      }
      break;
    }
    case IB_QPS_RTS: {
      const auto& r = m.state.rts;
      if (r.opts & (IB_MOD_QP_ALTERNATE_AV | IB_MOD_QP_APM_STATE)) return IB_UNSUPPORTED;
      a.qp_state = KBV_QPS_RTS;
      a.sq_psn = ntohl(r.sq_psn);
      mask |= KBV_QP_SQ_PSN;
      if (rc) {
        a.retry_cnt = r.retry_cnt;
        a.rnr_retry = r.rnr_retry_cnt;
        a.timeout = r.local_ack_timeout;
        a.max_rd_atomic = r.init_depth;
        mask |= KBV_QP_RETRY_CNT | KBV_QP_RNR_RETRY | KBV_QP_TIMEOUT | KBV_QP_MAX_QP_RD_ATOMIC;
      }
      if (r.opts & IB_MOD_QP_QKEY) {
        a.qkey = ntohl(r.qkey);
        mask |= KBV_QP_QKEY;
      }
      if (r.opts & IB_MOD_QP_CURRENT_STATE) {
        const ib_qp_state_t cs = r.current_state;
        a.cur_qp_state = cs == IB_QPS_SQERR ? KBV_QPS_SQE
                         : cs == IB_QPS_RTS ? KBV_QPS_RTS
                                            : KBV_QPS_RTR;
        mask |= KBV_QP_CUR_STATE;
      }
      break;
    }
    case IB_QPS_SQD: return IB_UNSUPPORTED;
    default: return IB_INVALID_SETTING;
  }
  kbv_status_t st = kbv_qp_modify(h_qp->qp, &a, mask, KBV_EQ_NONE, 0);
  if (st != KBV_SUCCESS) return status_of(st);
  if (p_qp_attr) return query(*h_qp, p_qp_attr);
  return IB_SUCCESS;
} catch (...) {
  return IB_INSUFFICIENT_MEMORY;
}

ib_api_status_t query_qp(const ib_qp_handle_t h_qp, ib_qp_attr_t* const p_qp_attr,
                         ci_umv_buf_t* p_umv_buf) {
  if (!live(h_qp, Kind::kQp)) return IB_INVALID_QP_HANDLE;
  if (!p_qp_attr) return IB_INVALID_PARAMETER;
  if (ib_api_status_t u = umv(p_umv_buf); u != IB_SUCCESS) return u;
  return query(*h_qp, p_qp_attr);
}

ib_api_status_t destroy_qp(const ib_qp_handle_t h_qp, const uint64_t) {
  if (!live(h_qp, Kind::kQp)) return IB_INVALID_QP_HANDLE;
  {
    std::lock_guard lk(mu());
    if (h_qp->children.load() > 0) return IB_RESOURCE_BUSY;  // multicast attached
    untrack(h_qp);
    h_qp->pd->ca->dev->qp_by_handle.erase(h_qp->qp);
    --h_qp->pd->children;
    --h_qp->create.h_sq_cq->children;
    --h_qp->create.h_rq_cq->children;
    if (h_qp->create.h_srq) --h_qp->create.h_srq->children;
  }
  (void)kbv_qp_destroy(h_qp->qp, KBV_EQ_NONE, 0);
  delete h_qp;
  return IB_SUCCESS;
}

// ---- SRQ ---------------------------------------------------------------------------

ib_api_status_t create_srq(const ib_pd_handle_t h_pd, const void* srq_context,
                           const ib_srq_attr_t* const p_srq_attr, ib_srq_handle_t* ph_srq,
                           ci_umv_buf_t* p_umv_buf) try {
  if (!live(h_pd, Kind::kPd)) return IB_INVALID_PD_HANDLE;
  if (!p_srq_attr || !ph_srq) return IB_INVALID_PARAMETER;
  if (p_srq_attr->max_wr == 0) return IB_INVALID_SRQ_SIZE;
  if (ib_api_status_t u = umv(p_umv_buf); u != IB_SUCCESS) return u;
  CiDevice& d = *h_pd->ca->dev;
  kbv_srq_attr_t a{};
  a.max_wr = p_srq_attr->max_wr;
  a.max_sge = p_srq_attr->max_sge;
  a.srq_limit = p_srq_attr->srq_limit;
  a.event_eq = d.eq;
  auto* s = new kbv_ci_srq_s();
  s->pd = h_pd;
  s->context = const_cast<void*>(srq_context);
  s->attr = *p_srq_attr;
  kbv_status_t st = kbv_srq_create(h_pd->pd, &a, KBV_EQ_NONE, 0, &s->srq);
  if (st != KBV_SUCCESS) {
    delete s;
    return status_of(st);
  }
  std::lock_guard lk(mu());
  track(s, Kind::kSrq);
  d.srq_by_handle[s->srq] = s;
  ++h_pd->children;
  *ph_srq = s;
  return IB_SUCCESS;
} catch (...) {
  return IB_INSUFFICIENT_MEMORY;
}

ib_api_status_t modify_srq(const ib_srq_handle_t h_srq, const ib_srq_attr_t* const p_srq_attr,
                           const ib_srq_attr_mask_t mask, ci_umv_buf_t* p_umv_buf) {
  if (!live(h_srq, Kind::kSrq)) return IB_INVALID_SRQ_HANDLE;
  if (!p_srq_attr || (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT)) != 0) return IB_INVALID_PARAMETER;
  if (ib_api_status_t u = umv(p_umv_buf); u != IB_SUCCESS) return u;
  if (mask & IB_SRQ_MAX_WR) return IB_UNSUPPORTED;  // kbv cannot resize an SRQ
  if (mask & IB_SRQ_LIMIT) {
    kbv_status_t st = kbv_srq_arm(h_srq->srq, p_srq_attr->srq_limit, KBV_EQ_NONE, 0);
    if (st != KBV_SUCCESS) return status_of(st);
    h_srq->attr.srq_limit = p_srq_attr->srq_limit;
  }
  return IB_SUCCESS;
}

ib_api_status_t query_srq(const ib_srq_handle_t h_srq, ib_srq_attr_t* const p_srq_attr,
                          ci_umv_buf_t* p_umv_buf) {
  if (!live(h_srq, Kind::kSrq)) return IB_INVALID_SRQ_HANDLE;
  if (!p_srq_attr) return IB_INVALID_PARAMETER;
  if (ib_api_status_t u = umv(p_umv_buf); u != IB_SUCCESS) return u;
  *p_srq_attr = h_srq->attr;
  return IB_SUCCESS;
}

ib_api_status_t destroy_srq(const ib_srq_handle_t h_srq) {
  if (!live(h_srq, Kind::kSrq)) return IB_INVALID_SRQ_HANDLE;
  {
    std::lock_guard lk(mu());
    if (h_srq->children.load() > 0) return IB_RESOURCE_BUSY;
    untrack(h_srq);
    h_srq->pd->ca->dev->srq_by_handle.erase(h_srq->srq);
    --h_srq->pd->children;
  }
  (void)kbv_srq_destroy(h_srq->srq, KBV_EQ_NONE, 0);
  delete h_srq;
  return IB_SUCCESS;
}

// ---- data path -------------------------------------------------------------------------

// One linked WR to kbv's form; false for a WR kbv cannot post (its type).
bool to_kbv(const ib_send_wr_t& w, kbv_send_wr_t& k, kbv_sge_t* sges, uint32_t max_sge,
            ib_api_status_t* why) {
  std::memset(&k, 0, sizeof k);
  k.wr_id = w.wr_id;
  const bool imm = (w.send_opt & IB_SEND_OPT_IMMEDIATE) != 0;
  switch (w.wr_type) {
    case WR_SEND: k.opcode = imm ? KBV_WR_SEND_IMM : KBV_WR_SEND; break;
    case WR_RDMA_WRITE: k.opcode = imm ? KBV_WR_RDMA_WRITE_IMM : KBV_WR_RDMA_WRITE; break;
    case WR_RDMA_READ: k.opcode = KBV_WR_RDMA_READ; break;
    case WR_COMPARE_SWAP: k.opcode = KBV_WR_ATOMIC_CS; break;
    case WR_FETCH_ADD: k.opcode = KBV_WR_ATOMIC_FA; break;
    default: *why = IB_INVALID_WR_TYPE; return false;
  }
  if (w.send_opt & IB_SEND_OPT_SIGNALED) k.flags |= KBV_SEND_SIGNALED;
  if (w.send_opt & IB_SEND_OPT_SOLICITED) k.flags |= KBV_SEND_SOLICITED;
  if (w.send_opt & IB_SEND_OPT_FENCE) k.flags |= KBV_SEND_FENCE;
  if (w.send_opt & IB_SEND_OPT_INLINE) k.flags |= KBV_SEND_INLINE;
  if (w.num_ds > max_sge) {
    *why = IB_INVALID_MAX_SGE;
    return false;
  }
  if (w.num_ds > 0 && w.ds_array == nullptr) {
    *why = IB_INVALID_PARAMETER;
    return false;
  }
  for (uint32_t i = 0; i < w.num_ds; ++i)
    sges[i] = {w.ds_array[i].vaddr, w.ds_array[i].length, ntohl(w.ds_array[i].lkey)};
  k.sg_list = sges;
  k.num_sge = w.num_ds;
  k.imm = ntohl(w.immediate_data);
  k.remote_addr = w.dgrm_or_ops.remote_ops.vaddr;
  k.rkey = ntohl(w.dgrm_or_ops.remote_ops.rkey);
  k.compare_add = be64toh(w.dgrm_or_ops.remote_ops.atomic1);
  k.swap = be64toh(w.dgrm_or_ops.remote_ops.atomic2);
  return true;
}

ib_api_status_t post_send(const ib_qp_handle_t h_qp, ib_send_wr_t* const p_send_wr,
                          ib_send_wr_t** pp_failed) {
  if (!live(h_qp, Kind::kQp)) return IB_INVALID_QP_HANDLE;
  if (pp_failed) *pp_failed = nullptr;
  const bool ud = h_qp->create.qp_type == IB_QPT_UNRELIABLE_DGRM;
  constexpr uint32_t kMaxSge = 32;
  kbv_send_wr_t wrs[kChunk];
  kbv_sge_t sges[kChunk][kMaxSge];
  ib_send_wr_t* src[kChunk];
  for (ib_send_wr_t* w = p_send_wr; w != nullptr;) {
    uint32_t n = 0;
    ib_api_status_t bad = IB_SUCCESS;
    for (; w != nullptr && n < kChunk; w = w->p_next, ++n) {
      if (!to_kbv(*w, wrs[n], sges[n], kMaxSge, &bad)) break;
      if (ud) {
        const ib_av_handle_t av = w->dgrm_or_ops.ud.h_av;
        if (!live(av, Kind::kAv)) {
          bad = IB_INVALID_AV_HANDLE;
          break;
        }
        wrs[n].ah = av->ah;
        wrs[n].remote_qpn = ntohl(w->dgrm_or_ops.ud.remote_qp);
        wrs[n].remote_qkey = ntohl(w->dgrm_or_ops.ud.remote_qkey);
      }
      src[n] = w;
    }
    uint32_t bad_index = 0;
    kbv_status_t st = n ? kbv_post_send(h_qp->qp, wrs, n, &bad_index) : KBV_SUCCESS;
    if (st != KBV_SUCCESS) {
      if (pp_failed) *pp_failed = src[bad_index];
      return status_of(st);
    }
    if (bad != IB_SUCCESS) {  // w is the WR that could not be converted
      if (pp_failed) *pp_failed = w;
      return bad;
    }
  }
  return IB_SUCCESS;
}

template <class PostFn>
ib_api_status_t post_recv_list(ib_recv_wr_t* const list, ib_recv_wr_t** pp_failed, PostFn post) {
  if (pp_failed) *pp_failed = nullptr;
  constexpr uint32_t kMaxSge = 32;
  kbv_recv_wr_t wrs[kChunk];
  kbv_sge_t sges[kChunk][kMaxSge];
  ib_recv_wr_t* src[kChunk];
  for (ib_recv_wr_t* w = list; w != nullptr;) {
    uint32_t n = 0;
    ib_api_status_t bad = IB_SUCCESS;
    for (; w != nullptr && n < kChunk; w = w->p_next, ++n) {
      if (w->num_ds > kMaxSge) {
        bad = IB_INVALID_MAX_SGE;
        break;
      }
      if (w->num_ds > 0 && w->ds_array == nullptr) {
        bad = IB_INVALID_PARAMETER;
        break;
      }
      for (uint32_t i = 0; i < w->num_ds; ++i)
        sges[n][i] = {w->ds_array[i].vaddr, w->ds_array[i].length, ntohl(w->ds_array[i].lkey)};
      wrs[n] = {w->wr_id, sges[n], w->num_ds, 0};
      src[n] = w;
    }
    uint32_t bad_index = 0;
    kbv_status_t st = n ? post(wrs, n, &bad_index) : KBV_SUCCESS;
    if (st != KBV_SUCCESS) {
      if (pp_failed) *pp_failed = src[bad_index];
      return status_of(st);
    }
    if (bad != IB_SUCCESS) {
      if (pp_failed) *pp_failed = w;
      return bad;
    }
  }
  return IB_SUCCESS;
}

ib_api_status_t post_recv(const ib_qp_handle_t h_qp, ib_recv_wr_t* const p_recv_wr,
                          ib_recv_wr_t** pp_failed) {
  if (!live(h_qp, Kind::kQp)) return IB_INVALID_QP_HANDLE;
  return post_recv_list(p_recv_wr, pp_failed, [&](const kbv_recv_wr_t* w, uint32_t n, uint32_t* b) {
    return kbv_post_recv(h_qp->qp, w, n, b);
  });
}

ib_api_status_t post_srq_recv(const ib_srq_handle_t h_srq, ib_recv_wr_t* const p_recv_wr,
                              ib_recv_wr_t** pp_failed) {
  if (!live(h_srq, Kind::kSrq)) return IB_INVALID_SRQ_HANDLE;
  return post_recv_list(p_recv_wr, pp_failed, [&](const kbv_recv_wr_t* w, uint32_t n, uint32_t* b) {
    return kbv_post_srq_recv(h_srq->srq, w, n, b);
  });
}

void to_wc(const kbv_wc_t& k, ib_wc_t& w) {
  ib_wc_t* next = w.p_next;
  std::memset(&w, 0, sizeof w);
  w.p_next = next;
  w.wr_id = k.wr_id;
  switch (k.opcode) {
    case KBV_WC_SEND: w.wc_type = IB_WC_SEND; break;
    case KBV_WC_RDMA_WRITE: w.wc_type = IB_WC_RDMA_WRITE; break;
    case KBV_WC_RDMA_READ: w.wc_type = IB_WC_RDMA_READ; break;
    case KBV_WC_ATOMIC_CS: w.wc_type = IB_WC_COMPARE_SWAP; break;
    case KBV_WC_ATOMIC_FA: w.wc_type = IB_WC_FETCH_ADD; break;
    case KBV_WC_RECV: w.wc_type = IB_WC_RECV; break;
    case KBV_WC_RECV_RDMA_WITH_IMM: w.wc_type = IB_WC_RECV_RDMA_WRITE; break;
    default: w.wc_type = IB_WC_UNKNOWN1; break;
  }
  w.length = k.byte_len;
  w.status = wc_status_of(k.status);
  if (k.status != KBV_SUCCESS)
    w.vendor_specific = static_cast<uint64_t>(static_cast<int64_t>(k.status));
  if (k.flags & KBV_WC_WITH_IMM) {
    w.recv.ud.recv_opt |= IB_RECV_OPT_IMMEDIATE;
    w.recv.ud.immediate_data = htonl(k.imm);
  }
  if (k.flags & KBV_WC_WITH_GRH) w.recv.ud.recv_opt |= IB_RECV_OPT_GRH_VALID;
  if (k.flags & KBV_WC_WITH_INV) w.recv.ud.recv_opt |= IB_RECV_OPT_INVALIDATE;
  w.recv.ud.remote_qp = htonl(k.src_qp);
  w.recv.ud.remote_sl = k.sl;
}

// Up to n completions, the read-ahead of peek_cq first, then the CQ; each
// handed to fn in completion order; *done = how many. An error of
// kbv_poll_cq ends the walk (returned).
template <class Fn>
ib_api_status_t take(kbv_ci_cq_s& cq, uint32_t n, Fn&& fn, uint32_t* done) {
  *done = 0;
  while (*done < n && !cq.ahead.empty()) {
    fn(cq.ahead.front());
    cq.ahead.pop_front();
    ++*done;
  }
  kbv_wc_t k[kChunk];
  while (*done < n) {
    const uint32_t want = std::min(n - *done, kChunk);
    const int got = kbv_poll_cq(cq.cq, k, want);
    if (got < 0) return status_of(static_cast<kbv_status_t>(got));
    for (int i = 0; i < got; ++i) fn(k[i]);
    *done += static_cast<uint32_t>(got);
    if (static_cast<uint32_t>(got) < want) break;
  }
  return IB_SUCCESS;
}

ib_api_status_t peek_cq(const ib_cq_handle_t h_cq, uint32_t* const p_n_cqes) {
  if (!live(h_cq, Kind::kCq)) return IB_INVALID_CQ_HANDLE;
  if (!p_n_cqes) return IB_INVALID_PARAMETER;
  kbv_wc_t w[32];
  for (;;) {
    const int got = kbv_poll_cq(h_cq->cq, w, 32);
    if (got < 0) return status_of(static_cast<kbv_status_t>(got));
    h_cq->ahead.insert(h_cq->ahead.end(), w, w + got);
    if (got < 32) break;
  }
  *p_n_cqes = static_cast<uint32_t>(h_cq->ahead.size());
  return IB_SUCCESS;
}

ib_api_status_t poll_cq(const ib_cq_handle_t h_cq, ib_wc_t** const pp_free_wclist,
                        ib_wc_t** const pp_done_wclist) {
  if (!live(h_cq, Kind::kCq)) return IB_INVALID_CQ_HANDLE;
  if (!pp_free_wclist || !pp_done_wclist || !*pp_free_wclist) return IB_INVALID_PARAMETER;
  *pp_done_wclist = nullptr;
  ib_wc_t** tail = pp_done_wclist;
  ib_wc_t* free_list = *pp_free_wclist;
  uint32_t want = 0;
  for (ib_wc_t* f = free_list; f; f = f->p_next) ++want;
  uint32_t done = 0;
  const ib_api_status_t st = take(
      *h_cq, want,
      [&](const kbv_wc_t& k) {
        ib_wc_t* w = free_list;
        free_list = w->p_next;
        to_wc(k, *w);
        w->p_next = nullptr;
        *tail = w;
        tail = &w->p_next;
      },
      &done);
  *pp_free_wclist = free_list;
  if (done) return IB_SUCCESS;
  return st != IB_SUCCESS ? st : IB_NOT_FOUND;
}

// ---- multicast ------------------------------------------------------------------------

ib_api_status_t attach_mcast(const ib_qp_handle_t h_qp, const ib_gid_t* p_mcast_gid,
                             const ib_net16_t, ib_mcast_handle_t* ph_mcast,
                             ci_umv_buf_t* p_umv_buf) try {
  if (!live(h_qp, Kind::kQp)) return IB_INVALID_QP_HANDLE;
  if (!p_mcast_gid || !ph_mcast) return IB_INVALID_PARAMETER;
  if (ib_api_status_t u = umv(p_umv_buf); u != IB_SUCCESS) return u;
  kbv_status_t st = kbv_qp_attach_mcast(h_qp->qp, p_mcast_gid->raw, KBV_EQ_NONE, 0);
  if (st != KBV_SUCCESS) return st == KBV_ERR_INVALID_ARGUMENT ? IB_INVALID_GID : status_of(st);
  auto* m = new kbv_ci_mcast_s();
  m->qp = h_qp;
  m->gid = *p_mcast_gid;
  std::lock_guard lk(mu());
  track(m, Kind::kMcast);
  ++h_qp->children;
  *ph_mcast = m;
  return IB_SUCCESS;
} catch (...) {
  return IB_INSUFFICIENT_MEMORY;
}

ib_api_status_t detach_mcast(const ib_mcast_handle_t h_mcast) {
  if (!live(h_mcast, Kind::kMcast)) return IB_INVALID_MCAST_HANDLE;
  {
    std::lock_guard lk(mu());
    untrack(h_mcast);
    --h_mcast->qp->children;
  }
  kbv_status_t st = kbv_qp_detach_mcast(h_mcast->qp->qp, h_mcast->gid.raw, KBV_EQ_NONE, 0);
  delete h_mcast;
  return status_of(st);
}

}  // namespace

ib_api_status_t poll_cq_array(ib_cq_handle_t h_cq, uint32_t n, ib_wc_t* wcs, uint32_t* qpns,
                              uint32_t* got) {
  if (!live(h_cq, Kind::kCq)) return IB_INVALID_CQ_HANDLE;
  if (!got || (n > 0 && (!wcs || !qpns))) return IB_INVALID_PARAMETER;
  uint32_t i = 0;
  const ib_api_status_t st = take(
      *h_cq, n,
      [&](const kbv_wc_t& k) {
        wcs[i].p_next = nullptr;
        to_wc(k, wcs[i]);
        qpns[i] = k.qp_num;
        ++i;
      },
      got);
  return *got ? IB_SUCCESS : st;
}

void fill_qp(ci_interface_t& c) {
  c.create_qp = create_qp;
  c.create_spl_qp = create_spl_qp;
  c.modify_qp = modify_qp;
  c.query_qp = query_qp;
  c.destroy_qp = destroy_qp;
  c.create_srq = create_srq;
  c.modify_srq = modify_srq;
  c.query_srq = query_srq;
  c.destroy_srq = destroy_srq;
  c.post_send = post_send;
  c.post_recv = post_recv;
  c.post_srq_recv = post_srq_recv;
  c.peek_cq = peek_cq;
  c.poll_cq = poll_cq;
  c.attach_mcast = attach_mcast;
  c.detach_mcast = detach_mcast;
}

}  // namespace kbv::compat::ci
