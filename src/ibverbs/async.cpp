// SPDX-License-Identifier: BSD-3-Clause
//
// Async events and wait fds (async.hpp). rdma-core 44 man pages
// ibv_get_async_event(3): every event must be acknowledged; destroying an
// object waits for the acknowledgements of its events.
#include "ibverbs/async.hpp"

#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "ibverbs/export.hpp"

namespace kbv::ibverbs {

int make_wait_fd(kbv_eq_t eq) {
  int efd = -1;
  kbv_status_t s = kbv_eq_get_fd(eq, &efd);
  if (s != KBV_SUCCESS) return -to_errno(s);
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return -errno;
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.fd = efd;
  if (::epoll_ctl(ep, EPOLL_CTL_ADD, efd, &e) != 0) {
    const int err = errno;
    ::close(ep);
    return -err;
  }
  return ep;
}

int wait_readable(int epfd) {
  const int fl = ::fcntl(epfd, F_GETFL);
  const bool nonblock = fl >= 0 && (fl & O_NONBLOCK) != 0;
  epoll_event e{};
  while (true) {
    const int n = ::epoll_wait(epfd, &e, 1, nonblock ? 0 : -1);
    if (n > 0) return 0;
    if (n == 0) return EAGAIN;
    if (errno != EINTR) return errno;
  }
}

void ensure_progress(Context& ctx) {
  ContextState& st = *ctx.state;
  std::lock_guard lk(st.mu);
  if (st.progress_thread) return;
  // ALREADY_EXISTS: another context of the device started it.
  const kbv_status_t s = kbv_device_start_progress_thread(ctx.dev);
  st.progress_thread = s == KBV_SUCCESS || s == KBV_ERR_ALREADY_EXISTS;
}

int async_setup(Context& ctx) {
  const int ep = make_wait_fd(ctx.state->async_eq);
  if (ep < 0) return -ep;
  ctx.state->async_epfd = ep;
  return 0;
}

void async_teardown(Context& ctx) {
  if (ctx.state->async_epfd >= 0) ::close(ctx.state->async_epfd);
  ctx.state->async_epfd = -1;
}

namespace {

// Converts one kbv event; false when it is not delivered (see async.hpp).
bool convert(ContextState& st, const kbv_event_t& ev, ibv_async_event* out) {
  switch (ev.type) {
    case KBV_EVENT_PORT_STATE:
      out->element.port_num = static_cast<int>(KBV_PORT_EVENT_PORT(ev.info));
      out->event_type = KBV_PORT_EVENT_STATE(ev.info) == KBV_PORT_ACTIVE ? IBV_EVENT_PORT_ACTIVE
                                                                         : IBV_EVENT_PORT_ERR;
      return true;
    case KBV_EVENT_DEVICE_FATAL:
      out->element.port_num = 0;
      out->event_type = IBV_EVENT_DEVICE_FATAL;
      return true;
    case KBV_EVENT_CQ_ERROR:
    case KBV_EVENT_QP_FATAL:
    case KBV_EVENT_QP_ACCESS_ERROR:
    case KBV_EVENT_SRQ_LIMIT: {
      std::lock_guard lk(st.mu);
      auto it = st.objects.find(ev.object);
      if (it == st.objects.end()) return false;
      ObjEntry& o = it->second;
      ++o.delivered;
      switch (ev.type) {
        case KBV_EVENT_CQ_ERROR:
          out->element.cq = ibv_cq_ex_to_cq(&static_cast<Cq*>(o.obj)->cqx);
          out->event_type = IBV_EVENT_CQ_ERR;
          break;
        case KBV_EVENT_QP_FATAL:
          out->element.qp = &static_cast<Qp*>(o.obj)->qpx.qp_base;
          out->event_type = IBV_EVENT_QP_FATAL;
          break;
        case KBV_EVENT_QP_ACCESS_ERROR:
          out->element.qp = &static_cast<Qp*>(o.obj)->qpx.qp_base;
          out->event_type = IBV_EVENT_QP_ACCESS_ERR;
          break;
        default:
          // The limit fired and is disarmed (IBTA 10.2.9.4): it reads 0.
          static_cast<Srq*>(o.obj)->srq_limit = 0;
          out->element.srq = &static_cast<Srq*>(o.obj)->srq;
          out->event_type = IBV_EVENT_SRQ_LIMIT_REACHED;
          break;
      }
      return true;
    }
    case KBV_EVENT_OVERFLOW:
      std::fprintf(stderr, "kbv libibverbs: %llu async events lost (event queue full)\n",
                   static_cast<unsigned long long>(ev.info));
      return false;
    default: return false;
  }
}

}  // namespace
}  // namespace kbv::ibverbs

using namespace kbv::ibverbs;

extern "C" {

int kbv_ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
  if (!context || !event) {
    errno = EINVAL;
    return -1;
  }
  Context& ctx = *to_ctx(context);
  ContextState& st = *ctx.state;
  bool progress = false;
  while (true) {
    kbv_event_t ev{};
    const int n = kbv_eq_poll(st.async_eq, &ev, 1);
    if (n < 0) {
      fail(static_cast<kbv_status_t>(n));
      return -1;
    }
    if (n == 1) {
      if (convert(st, ev, event)) return 0;
      continue;
    }
    if (!progress) {
      ensure_progress(ctx);
      progress = true;
    }
    const int err = wait_readable(st.async_epfd);
    if (err != 0) {
      errno = err;
      return -1;
    }
  }
}
KBV_IBV_DEFAULT(ibv_get_async_event, "IBVERBS_1.1");

void kbv_ibv_ack_async_event(ibv_async_event* event) {
  if (!event) return;
  pthread_mutex_t* mu = nullptr;
  pthread_cond_t* cond = nullptr;
  uint32_t* completed = nullptr;
  switch (event->event_type) {
    case IBV_EVENT_CQ_ERR:
      mu = &event->element.cq->mutex;
      cond = &event->element.cq->cond;
      completed = &event->element.cq->async_events_completed;
      break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      mu = &event->element.qp->mutex;
      cond = &event->element.qp->cond;
      completed = &event->element.qp->events_completed;
      break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      mu = &event->element.srq->mutex;
      cond = &event->element.srq->cond;
      completed = &event->element.srq->events_completed;
      break;
    default: return;  // device and port events need no acknowledgement count
  }
  pthread_mutex_lock(mu);
  ++*completed;
  pthread_cond_broadcast(cond);
  pthread_mutex_unlock(mu);
}
KBV_IBV_DEFAULT(ibv_ack_async_event, "IBVERBS_1.1");

}  // extern "C"
