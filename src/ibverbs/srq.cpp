// SPDX-License-Identifier: BSD-3-Clause
//
// Shared receive queues of kbv's libibverbs: ibv_create_srq, ibv_modify_srq,
// ibv_query_srq, ibv_destroy_srq (rdma-core 44 man pages ibv_create_srq(3),
// ibv_modify_srq(3)). Basic SRQs only: verbs.h's inline ibv_create_srq_ex
// takes basic ones to ibv_create_srq itself and answers EOPNOTSUPP for XRC
// and tag-matching SRQs (the create_srq_ex slot is left empty).
//
// IBV_SRQ_LIMIT arms the limit event (kbv_srq_arm: one
// IBV_EVENT_SRQ_LIMIT_REACHED when fewer than srq_limit WQEs remain; the
// limit then reads 0 again, IBTA 10.2.9.4). Resizing (IBV_SRQ_MAX_WR) is
// refused with EINVAL, as mlx5 refuses it (the device does not set
// IBV_DEVICE_SRQ_RESIZE). max_wr / max_sge read back as created: kbv holds
// at least that many.
#include <cerrno>
#include <new>

#include "ibverbs/context.hpp"
#include "ibverbs/export.hpp"

using namespace kbv::ibverbs;

extern "C" {

ibv_srq* kbv_ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* srq_init_attr) {
  if (!pd || !srq_init_attr) {
    errno = EINVAL;
    return nullptr;
  }
  const ibv_srq_attr& a = srq_init_attr->attr;
  kbv_device_attr_t da;
  if (int e = device_attr(pd->context, &da); e != 0) {
    errno = e;
    return nullptr;
  }
  if (a.max_wr == 0 || a.max_wr > da.max_srq_wr || a.max_sge == 0 || a.max_sge > da.max_srq_sge ||
      a.srq_limit > a.max_wr) {
    errno = EINVAL;
    return nullptr;
  }
  auto* s = new (std::nothrow) Srq{};
  if (!s) {
    errno = ENOMEM;
    return nullptr;
  }
  ContextState& st = state_of(pd->context);
  kbv_srq_attr_t k{};
  k.max_wr = a.max_wr;
  k.max_sge = a.max_sge;
  k.srq_limit = a.srq_limit;
  k.event_eq = st.async_eq;
  kbv_status_t r = kbv_srq_create(to_pd(pd)->handle, &k, KBV_EQ_NONE, 0, &s->handle);
  if (r == KBV_SUCCESS && a.srq_limit) r = kbv_srq_arm(s->handle, a.srq_limit, KBV_EQ_NONE, 0);
  if (r != KBV_SUCCESS) {
    if (s->handle != KBV_HANDLE_NONE) (void)kbv_srq_destroy(s->handle, KBV_EQ_NONE, 0);
    delete s;
    fail(r);
    return nullptr;
  }
  s->max_wr = a.max_wr;
  s->max_sge = a.max_sge;
  s->srq_limit = a.srq_limit;
  ibv_srq& b = s->srq;
  b.context = pd->context;
  b.srq_context = srq_init_attr->srq_context;
  b.pd = pd;
  b.handle = static_cast<uint32_t>(s->handle);
  pthread_mutex_init(&b.mutex, nullptr);
  pthread_cond_init(&b.cond, nullptr);
  b.events_completed = 0;
  if (register_object(st, s->handle, ObjKind::kSrq, s) != 0) {
    (void)kbv_srq_destroy(s->handle, KBV_EQ_NONE, 0);
    pthread_cond_destroy(&b.cond);
    pthread_mutex_destroy(&b.mutex);
    delete s;
    errno = ENOMEM;
    return nullptr;
  }
  ++to_pd(pd)->users;
  return &b;
}
KBV_IBV_DEFAULT(ibv_create_srq, "IBVERBS_1.1");

int kbv_ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* srq_attr, int srq_attr_mask) {
  if (!srq || !srq_attr) return EINVAL;
  if (srq_attr_mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) return EINVAL;
  if (srq_attr_mask & IBV_SRQ_MAX_WR) return EINVAL;  // no resize (see top)
  Srq* s = to_srq(srq);
  if (srq_attr_mask & IBV_SRQ_LIMIT) {
    if (srq_attr->srq_limit > s->max_wr) return EINVAL;
    const kbv_status_t r = kbv_srq_arm(s->handle, srq_attr->srq_limit, KBV_EQ_NONE, 0);
    if (r != KBV_SUCCESS) return to_errno(r);
    s->srq_limit = srq_attr->srq_limit;
  }
  return 0;
}
KBV_IBV_DEFAULT(ibv_modify_srq, "IBVERBS_1.1");

int kbv_ibv_query_srq(ibv_srq* srq, ibv_srq_attr* srq_attr) {
  if (!srq || !srq_attr) return EINVAL;
  Srq* s = to_srq(srq);
  srq_attr->max_wr = s->max_wr;
  srq_attr->max_sge = s->max_sge;
  srq_attr->srq_limit = s->srq_limit;
  return 0;
}
KBV_IBV_DEFAULT(ibv_query_srq, "IBVERBS_1.1");

int kbv_ibv_destroy_srq(ibv_srq* srq) {
  if (!srq) return EINVAL;
  Srq* s = to_srq(srq);
  if (s->users.load() != 0) return EBUSY;  // QPs still use it (uverbs: EBUSY)
  const kbv_status_t r = kbv_srq_destroy(s->handle, KBV_EQ_NONE, 0);
  if (r != KBV_SUCCESS && r != KBV_PENDING) return to_errno(r);
  const ObjEntry e = unregister_object(state_of(srq->context), s->handle);
  wait_acked(&srq->mutex, &srq->cond, &srq->events_completed, e.delivered);
  --to_pd(srq->pd)->users;
  pthread_cond_destroy(&srq->cond);
  pthread_mutex_destroy(&srq->mutex);
  delete s;
  return 0;
}
KBV_IBV_DEFAULT(ibv_destroy_srq, "IBVERBS_1.1");

}  // extern "C"
