// SPDX-License-Identifier: BSD-3-Clause
//
// Completion queues and completion channels of kbv's libibverbs:
// ibv_create_cq, ibv_create_cq_ex (verbs_context slot), ibv_resize_cq,
// ibv_destroy_cq, ibv_create_comp_channel / ibv_destroy_comp_channel,
// ibv_get_cq_event, ibv_ack_cq_events, ctx->ops.req_notify_cq (rdma-core 44
// man pages ibv_create_cq(3), ibv_create_cq_ex(3), ibv_get_cq_event(3),
// ibv_create_comp_channel(3)).
//
// A completion channel is a kbv event queue; ibv_req_notify_cq is
// kbv_cq_arm on the CQ's channel queue (one arm at a time: a CQ armed whose
// event was not yet taken stays armed, as ibverbs' arm is level-like), and
// ibv_get_cq_event takes its KBV_EVENT_COMP_NOTIFY. channel->fd is an epoll
// fd (async.hpp): poll/epoll work on it, and ibv_get_cq_event blocks unless
// the program set O_NONBLOCK on it (then EAGAIN). Creating a channel starts
// the device's progress thread, which turns CQEs into notifications while
// the program sleeps. A CQ created without a channel is not armed
// (rdma-core's kernel drops such events; nothing could receive them).
//
// The CQ reports cqe = the requested count rounded up to a power of two
// (kbv's CQ size; ibv_create_cq(3): "at least" the requested count).
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <mutex>
#include <new>

#include "ibverbs/async.hpp"
#include "ibverbs/context.hpp"
#include "ibverbs/export.hpp"

namespace kbv::ibverbs {
namespace {

struct Channel {
  ibv_comp_channel ch;  // FIRST
  kbv_eq_t eq = KBV_EQ_NONE;
};
Channel* to_channel(ibv_comp_channel* c) { return reinterpret_cast<Channel*>(c); }

constexpr uint32_t kChannelDepth = 4096;  // CQs armed at once on one channel

uint32_t round_pow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v && p < (1u << 31)) p <<= 1;
  return p;
}

ibv_cq_ex* create_cq(ibv_context* context, uint32_t cqe, void* cq_context,
                     ibv_comp_channel* channel, uint32_t comp_vector, uint64_t wc_flags) {
  if (!context) {
    errno = EINVAL;
    return nullptr;
  }
  kbv_device_attr_t da;
  if (int e = device_attr(context, &da); e != 0) {
    errno = e;
    return nullptr;
  }
  if (cqe < 1 || cqe > da.max_cqe ||
      comp_vector >= static_cast<uint32_t>(context->num_comp_vectors)) {
    errno = EINVAL;
    return nullptr;
  }
  auto* c = new (std::nothrow) Cq{};
  if (!c) {
    errno = ENOMEM;
    return nullptr;
  }
  if (int e = init_cq_ex_ops(*c, wc_flags); e != 0) {
    delete c;
    errno = e;
    return nullptr;
  }
  ContextState& st = state_of(context);
  kbv_cq_attr_t a{};
  a.cqe = cqe;
  a.event_eq = st.async_eq;
  // rdma-core's mlx5 passes the same wish to the kernel
  // (IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION); kbv refuses it on a device
  // without the capability: EOPNOTSUPP.
  if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) a.flags = KBV_CQ_FLAG_COMPLETION_TIMESTAMP;
  const kbv_status_t s = kbv_cq_create(to_ctx(context)->dev, &a, KBV_EQ_NONE, 0, &c->handle);
  if (s != KBV_SUCCESS) {
    delete c;
    fail(s);
    return nullptr;
  }
  ibv_cq_ex& x = c->cqx;
  x.context = context;
  x.channel = channel;
  x.cq_context = cq_context;
  x.handle = static_cast<uint32_t>(c->handle);
  x.cqe = static_cast<int>(round_pow2(cqe));
  pthread_mutex_init(&x.mutex, nullptr);
  pthread_cond_init(&x.cond, nullptr);
  x.comp_events_completed = 0;
  x.async_events_completed = 0;
  x.comp_mask = 0;
  if (register_object(st, c->handle, ObjKind::kCq, c) != 0) {
    (void)kbv_cq_destroy(c->handle, KBV_EQ_NONE, 0);
    pthread_cond_destroy(&x.cond);
    pthread_mutex_destroy(&x.mutex);
    delete c;
    errno = ENOMEM;
    return nullptr;
  }
  if (channel) {
    pthread_mutex_lock(&context->mutex);
    ++channel->refcnt;
    pthread_mutex_unlock(&context->mutex);
  }
  return &x;
}

// verbs_context slot behind verbs.h's inline ibv_create_cq_ex.
ibv_cq_ex* vctx_create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr) {
  if (!attr) {
    errno = EINVAL;
    return nullptr;
  }
  if (attr->comp_mask &
      ~static_cast<uint32_t>(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)) {
    errno = EINVAL;
    return nullptr;
  }
  // A single-threaded CQ is what every kbv CQ is (kbv.h fast path: one
  // thread at a time); overrun-ignoring CQs are not supported.
  if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
      (attr->flags & ~static_cast<uint32_t>(IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  ibv_cq_ex* x = create_cq(context, attr->cqe, attr->cq_context, attr->channel, attr->comp_vector,
                           attr->wc_flags);
  if (x) {
    ContextState& st = state_of(context);
    std::lock_guard lk(st.mu);
    try {
      st.cq_ex[to_cq(x)] = true;
    } catch (...) {  // only ibv_resize_cq reads it (an _ex CQ it would take)
    }
  }
  return x;
}

// ctx->ops.poll_cq once a resize stashed completions (see context.hpp):
// the stashed ones first, in order, then the data path's.
int stash_poll(ibv_cq* cq, int num_entries, ibv_wc* wc) {
  ContextState& st = state_of(cq->context);
  int got = 0;
  if (st.stashed.load(std::memory_order_acquire) != 0 && num_entries > 0) {
    std::lock_guard lk(st.mu);
    auto it = st.stash.find(to_cq(cq));
    if (it != st.stash.end()) {
      auto& q = it->second;
      while (got < num_entries && !q.empty()) {
        wc[got++] = q.front();
        q.pop_front();
      }
      st.stashed.fetch_sub(static_cast<uint32_t>(got), std::memory_order_release);
      if (q.empty()) st.stash.erase(it);
    }
  }
  if (got == num_entries) return got;
  const int more = st.data_poll_cq(cq, num_entries - got, wc + got);
  if (more < 0) return got > 0 ? got : more;
  return got + more;
}

// ctx->ops.req_notify_cq (verbs.h's inline ibv_req_notify_cq): 0 or an errno.
int req_notify_cq(ibv_cq* cq, int solicited_only) {
  Cq* c = to_cq(cq);
  if (!cq->channel) return 0;  // nowhere to deliver (see top)
  if (c->notify_armed.exchange(true)) return 0;
  const kbv_status_t s = kbv_cq_arm(c->handle, solicited_only, to_channel(cq->channel)->eq,
                                    reinterpret_cast<uintptr_t>(c));
  if (s == KBV_PENDING || s == KBV_SUCCESS) return 0;
  c->notify_armed.store(false);
  return to_errno(s);
}

}  // namespace

void fill_cq_ops(Context& ctx) {
  ctx.state->data_poll_cq = ctx.vctx.context.ops.poll_cq;  // fill_context_ops set it
  ctx.vctx.context.ops.req_notify_cq = req_notify_cq;
  ctx.vctx.create_cq_ex = vctx_create_cq_ex;
}

}  // namespace kbv::ibverbs

using namespace kbv::ibverbs;

extern "C" {

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  if (!context) {
    errno = EINVAL;
    return nullptr;
  }
  auto* ch = new (std::nothrow) Channel{};
  if (!ch) {
    errno = ENOMEM;
    return nullptr;
  }
  kbv_status_t s = kbv_eq_create(kChannelDepth, &ch->eq);
  if (s != KBV_SUCCESS) {
    delete ch;
    fail(s);
    return nullptr;
  }
  const int fd = make_wait_fd(ch->eq);
  if (fd < 0) {
    (void)kbv_eq_destroy(ch->eq);
    delete ch;
    errno = -fd;
    return nullptr;
  }
  ch->ch.context = context;
  ch->ch.fd = fd;
  ch->ch.refcnt = 0;
  ensure_progress(*to_ctx(context));
  return &ch->ch;
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  if (!channel) return EINVAL;
  pthread_mutex_lock(&channel->context->mutex);
  const int refs = channel->refcnt;
  pthread_mutex_unlock(&channel->context->mutex);
  if (refs != 0) return EBUSY;  // CQs still use it (rdma-core: EBUSY)
  Channel* ch = to_channel(channel);
  ::close(ch->ch.fd);
  (void)kbv_eq_destroy(ch->eq);
  delete ch;
  return 0;
}

ibv_cq* kbv_ibv_create_cq(ibv_context* context, int cqe, void* cq_context,
                          ibv_comp_channel* channel, int comp_vector) {
  if (cqe < 1 || comp_vector < 0) {
    errno = EINVAL;
    return nullptr;
  }
  ibv_cq_ex* x = create_cq(context, static_cast<uint32_t>(cqe), cq_context, channel,
                           static_cast<uint32_t>(comp_vector), IBV_WC_STANDARD_FLAGS);
  return x ? ibv_cq_ex_to_cq(x) : nullptr;
}
KBV_IBV_DEFAULT(ibv_create_cq, "IBVERBS_1.1");

// kbv resizes a drained CQ (kbv_cq_resize keeps no CQE of the old ring), so
// the completions the CQ holds are taken out first and handed out before
// new ones (context.hpp "stash"). The program must not poll the CQ during
// the call (ibv_resize_cq(3)). A CQ made by ibv_create_cq_ex is read through
// start_poll, which the stash does not feed: EOPNOTSUPP. A new size below the
// completions outstanding is EINVAL (as mlx5); they stay readable.
int kbv_ibv_resize_cq(ibv_cq* cq, int cqe) {
  if (!cq || cqe < 1) return EINVAL;
  kbv_device_attr_t da;
  if (int e = device_attr(cq->context, &da); e != 0) return e;
  if (static_cast<uint32_t>(cqe) > da.max_cqe) return EINVAL;
  ContextState& st = state_of(cq->context);
  {
    std::lock_guard lk(st.mu);
    if (st.cq_ex.count(to_cq(cq))) return EOPNOTSUPP;
  }
  try {
    std::deque<ibv_wc> taken;
    ibv_wc wc[16];
    int n;
    while ((n = st.data_poll_cq(cq, 16, wc)) > 0) taken.insert(taken.end(), wc, wc + n);
    bool too_small = false;
    {
      std::lock_guard lk(st.mu);
      if (!taken.empty()) {
        auto& q = st.stash[to_cq(cq)];
        q.insert(q.end(), taken.begin(), taken.end());
        st.stashed.fetch_add(static_cast<uint32_t>(taken.size()));
        cq->context->ops.poll_cq = stash_poll;
      }
      auto it = st.stash.find(to_cq(cq));
      too_small = it != st.stash.end() && it->second.size() > static_cast<size_t>(cqe);
    }
    if (n < 0) return EIO;
    if (too_small) return EINVAL;
  } catch (...) {  // no exception crosses the C ABI
    return ENOMEM;
  }
  const kbv_status_t s =
      kbv_cq_resize(to_cq(cq)->handle, static_cast<uint32_t>(cqe), KBV_EQ_NONE, 0);
  if (s != KBV_SUCCESS) return to_errno(s);
  cq->cqe = static_cast<int>(round_pow2(static_cast<uint32_t>(cqe)));
  return 0;
}
KBV_IBV_DEFAULT(ibv_resize_cq, "IBVERBS_1.1");

int kbv_ibv_destroy_cq(ibv_cq* cq) {
  if (!cq) return EINVAL;
  Cq* c = to_cq(cq);
  if (c->users.load() != 0) return EBUSY;  // QPs still use it (uverbs: EBUSY)
  const kbv_status_t s = kbv_cq_destroy(c->handle, KBV_EQ_NONE, 0);
  if (s != KBV_SUCCESS && s != KBV_PENDING) return to_errno(s);
  // After the destroy no event can be produced for it; the entry's counts
  // are final.
  const ObjEntry e = unregister_object(state_of(cq->context), c->handle);
  {
    ContextState& st = state_of(cq->context);
    std::lock_guard lk(st.mu);
    st.cq_ex.erase(c);
    if (auto it = st.stash.find(c); it != st.stash.end()) {
      st.stashed.fetch_sub(static_cast<uint32_t>(it->second.size()));
      st.stash.erase(it);
    }
  }
  // rdma-core: the destroy waits until every event delivered for the CQ was
  // acknowledged (ibv_ack_cq_events / ibv_ack_async_event).
  wait_acked(&cq->mutex, &cq->cond, &cq->comp_events_completed, e.comp_delivered);
  wait_acked(&cq->mutex, &cq->cond, &cq->async_events_completed, e.delivered);
  if (cq->channel) {
    pthread_mutex_lock(&cq->context->mutex);
    --cq->channel->refcnt;
    pthread_mutex_unlock(&cq->context->mutex);
  }
  pthread_cond_destroy(&cq->cond);
  pthread_mutex_destroy(&cq->mutex);
  delete c;
  return 0;
}
KBV_IBV_DEFAULT(ibv_destroy_cq, "IBVERBS_1.1");

int kbv_ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  if (!channel || !cq || !cq_context) {
    errno = EINVAL;
    return -1;
  }
  Channel* ch = to_channel(channel);
  ContextState& st = state_of(channel->context);
  while (true) {
    kbv_event_t ev{};
    const int n = kbv_eq_poll(ch->eq, &ev, 1);
    if (n < 0) {
      fail(static_cast<kbv_status_t>(n));
      return -1;
    }
    if (n == 1) {
      // A cancelled arm (its CQ was destroyed) or an event about a CQ gone
      // since is dropped.
      if (ev.type != KBV_EVENT_COMP_NOTIFY || ev.status != KBV_SUCCESS) continue;
      Cq* c = nullptr;
      {
        std::lock_guard lk(st.mu);
        auto it = st.objects.find(ev.object);
        if (it == st.objects.end()) continue;
        c = static_cast<Cq*>(it->second.obj);
        ++it->second.comp_delivered;
      }
      c->notify_armed.store(false);
      *cq = ibv_cq_ex_to_cq(&c->cqx);
      *cq_context = c->cqx.cq_context;
      return 0;
    }
    const int err = wait_readable(channel->fd);
    if (err != 0) {
      errno = err;
      return -1;
    }
  }
}
KBV_IBV_DEFAULT(ibv_get_cq_event, "IBVERBS_1.1");

void kbv_ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  if (!cq) return;
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += nevents;
  pthread_cond_broadcast(&cq->cond);
  pthread_mutex_unlock(&cq->mutex);
}
KBV_IBV_DEFAULT(ibv_ack_cq_events, "IBVERBS_1.1");

}  // extern "C"
