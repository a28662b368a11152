// SPDX-License-Identifier: BSD-3-Clause
// The fast path (kbv.h "Fast path"): kbv_post_send / kbv_post_recv /
// kbv_post_srq_recv / kbv_poll_cq over hca::SendQueue, RecvQueue, SrqQueue
// and CqPoller. Handles resolve inline through the lock-free FastTable
// (fast_table.hpp fast_handles()); the queues' post loops (hca/dp/sq_post.hpp,
// rq.hpp) are inlined here and build WQEs straight from the caller's
// kbv_send_wr_t / kbv_recv_wr_t through the field adapters below: no
// translation, no staging copy, no allocation, no lock. What the driver
// cannot check (opcode and flag values, a NULL sg_list, the UD AH handle)
// is checked by the adapters' prepare(), per request, before anything of it
// is written, so a bad request still gets its status and *bad_index.
#include <kbv/kbv.h>

#include <cstddef>

#include "hca/dp/sq_post.hpp"
#include "verbs/fast_table.hpp"
#include "verbs/objects.hpp"

namespace kbv::verbs {
namespace {

// kbv_sge_t is read by the driver as hca::Sge: same members, same layout.
static_assert(sizeof(kbv_sge_t) == sizeof(hca::Sge));
static_assert(offsetof(kbv_sge_t, addr) == offsetof(hca::Sge, addr));
static_assert(offsetof(kbv_sge_t, length) == offsetof(hca::Sge, length));
static_assert(offsetof(kbv_sge_t, lkey) == offsetof(hca::Sge, lkey));
// Flag and opcode values are the driver's (dp/sq.hpp, dp/cq.hpp).
static_assert(KBV_SEND_SIGNALED == hca::send_flags::kSignaled);
static_assert(KBV_SEND_SOLICITED == hca::send_flags::kSolicited);
static_assert(KBV_SEND_FENCE == hca::send_flags::kFence);
static_assert(KBV_SEND_INLINE == hca::send_flags::kInline);
static_assert(KBV_WR_ATOMIC_FA == static_cast<int>(hca::WrOpcode::kAtomicFa));
static_assert(KBV_WR_RDMA_READ == static_cast<int>(hca::WrOpcode::kRdmaRead));
static_assert(KBV_WC_RECV_RDMA_WITH_IMM == static_cast<int>(hca::WcOpcode::kRecvRdmaImm));
static_assert(KBV_WC_UNKNOWN == static_cast<int>(hca::WcOpcode::kUnknown));
static_assert(KBV_WC_WITH_IMM == hca::wc_flags::kImm);
static_assert(KBV_WC_WITH_GRH == hca::wc_flags::kGrh);
static_assert(KBV_WC_WITH_INV == hca::wc_flags::kInv);
// hca::WorkCompletion is kbv_wc_t member for member: kbv_poll_cq has the
// poller write the caller's array (no copy).
static_assert(sizeof(kbv_wc_t) == sizeof(hca::WorkCompletion));
static_assert(offsetof(kbv_wc_t, wr_id) == offsetof(hca::WorkCompletion, wr_id));
static_assert(offsetof(kbv_wc_t, status) == offsetof(hca::WorkCompletion, status));
static_assert(offsetof(kbv_wc_t, opcode) == offsetof(hca::WorkCompletion, opcode));
static_assert(offsetof(kbv_wc_t, byte_len) == offsetof(hca::WorkCompletion, byte_len));
static_assert(offsetof(kbv_wc_t, imm) == offsetof(hca::WorkCompletion, imm));
static_assert(offsetof(kbv_wc_t, flags) == offsetof(hca::WorkCompletion, flags));
static_assert(offsetof(kbv_wc_t, qp_num) == offsetof(hca::WorkCompletion, qpn));
static_assert(offsetof(kbv_wc_t, src_qp) == offsetof(hca::WorkCompletion, src_qp));
static_assert(offsetof(kbv_wc_t, slid) == offsetof(hca::WorkCompletion, slid));
static_assert(offsetof(kbv_wc_t, sl) == offsetof(hca::WorkCompletion, sl));
static_assert(offsetof(kbv_wc_t, syndrome) == offsetof(hca::WorkCompletion, syndrome));
static_assert(offsetof(kbv_wc_t, vendor_err) == offsetof(hca::WorkCompletion, vendor_err));
static_assert(offsetof(kbv_wc_t, network_hdr_type) == offsetof(hca::WorkCompletion, l3_type));
static_assert(sizeof(kbv_status_t) == sizeof(int32_t));

constexpr uint32_t kMaxPoll = 1u << 30;  // CQEs one kbv_poll_cq returns at most (int range)

constexpr uint32_t kSendFlags =
    KBV_SEND_SIGNALED | KBV_SEND_SOLICITED | KBV_SEND_FENCE | KBV_SEND_INLINE;

template <class T>
[[gnu::always_inline]] inline T* fast(uint64_t h, Kind k) {
  Base* b = fast_handles().get(h);
  return b && b->kind == k ? static_cast<T*>(b) : nullptr;
}

Status device_failure(const DeviceImpl& d) {
  return Status{static_cast<kbv_status_t>(d.failure.load(std::memory_order_relaxed))};
}

// kbv_send_wr_t as hca::SendQueue's post loop reads it (hca/dp/sq.hpp
// "field adapter"). prepare(): an opcode or flag kbv.h does not define, or
// sg_list NULL with num_sge > 0 -> KBV_ERR_INVALID_ARGUMENT; UD: the AH
// handle not an AH of the QP's device -> KBV_ERR_INVALID_HANDLE.
struct KbvSendWrs {
  using Wr = kbv_send_wr_t;
  const DeviceImpl* dev;

  template <bool Ud>
  [[gnu::always_inline]] kbv_status_t prepare(const Wr& w, const hca::Ah** ah) const {
    if (w.opcode > KBV_WR_ATOMIC_FA || (w.flags & ~kSendFlags) != 0 ||
        (w.num_sge != 0 && w.sg_list == nullptr)) [[unlikely]]
      return KBV_ERR_INVALID_ARGUMENT;
    if constexpr (Ud) {
      auto* a = fast<AhImpl>(w.ah, Kind::kAh);
      if (a == nullptr || a->dev.get() != dev) return KBV_ERR_INVALID_HANDLE;
      *ah = &a->ah;
    }
    return KBV_SUCCESS;
  }
  static uint64_t wr_id(const Wr& w) { return w.wr_id; }
  static uint32_t opcode(const Wr& w) { return w.opcode; }
  static uint32_t flags(const Wr& w) { return w.flags; }
  static const hca::Sge* sg(const Wr& w) { return reinterpret_cast<const hca::Sge*>(w.sg_list); }
  static size_t num_sge(const Wr& w) { return w.num_sge; }
  static uint32_t imm(const Wr& w) { return w.imm; }
  static uint64_t remote_addr(const Wr& w) { return w.remote_addr; }
  static uint32_t rkey(const Wr& w) { return w.rkey; }
  static uint64_t compare_add(const Wr& w) { return w.compare_add; }
  static uint64_t swap(const Wr& w) { return w.swap; }
  static uint32_t remote_qpn(const Wr& w) { return w.remote_qpn; }
  static uint32_t q_key(const Wr& w) { return w.remote_qkey; }
};

// kbv_recv_wr_t as RecvQueue / SrqQueue read it (hca/dp/rq.hpp):
// sg_list NULL with num_sge > 0 -> KBV_ERR_INVALID_ARGUMENT.
struct KbvRecvWrs {
  using Wr = kbv_recv_wr_t;
  [[gnu::always_inline]] kbv_status_t prepare(const Wr& w) const {
    if (w.num_sge != 0 && w.sg_list == nullptr) [[unlikely]]
      return KBV_ERR_INVALID_ARGUMENT;
    return KBV_SUCCESS;
  }
  static uint64_t wr_id(const Wr& w) { return w.wr_id; }
  static const hca::Sge* sg(const Wr& w) { return reinterpret_cast<const hca::Sge*>(w.sg_list); }
  static size_t num_sge(const Wr& w) { return w.num_sge; }
};

// Posts through queue q with adapter a; *bad_index (when non-null) names
// the refused request.
template <class Q, class A>
[[gnu::always_inline]] inline kbv_status_t post_with(Q& q, const A& a, const typename A::Wr* wrs,
                                                     uint32_t n, uint32_t* bad_index) {
  size_t bad = 0;
  const kbv_status_t st = q.post(a, wrs, n, &bad);
  if (st != KBV_SUCCESS && bad_index != nullptr) [[unlikely]]
    *bad_index = static_cast<uint32_t>(bad);
  return st;
}

}  // namespace
}  // namespace kbv::verbs

namespace kbv::verbs {
namespace {

// The general paths: every check in kbv.h's order, any request list. The
// public entry points below come here for anything but their straight
// line, so each status and *bad_index is the one these give.
[[gnu::noinline]] kbv_status_t post_send_general(kbv_qp_t qp, const kbv_send_wr_t* wrs, uint32_t n,
                                                 uint32_t* bad_index) {
  auto* q = fast<QpImpl>(qp, Kind::kQp);
  if (!q) [[unlikely]]
    return KBV_ERR_INVALID_HANDLE;
  if (bad_index) *bad_index = 0;
  if (!q->ready()) [[unlikely]]
    return KBV_ERR_INVALID_STATE;
  if (n > 0 && !wrs) [[unlikely]]
    return KBV_ERR_INVALID_ARGUMENT;
  if (q->dev->failed.load(std::memory_order_acquire)) [[unlikely]]
    return device_failure(*q->dev).code();
  const uint32_t s = q->qp_state.load(std::memory_order_acquire);
  if (s == KBV_QPS_RESET || s == KBV_QPS_INIT || s == KBV_QPS_RTR) [[unlikely]]
    return KBV_ERR_INVALID_QP_STATE;
  if (!q->sq) [[unlikely]]
    return KBV_ERR_INVALID_STATE;
  return post_with(*q->sq, KbvSendWrs{q->dev.get()}, wrs, n, bad_index);
}

[[gnu::noinline]] kbv_status_t post_recv_general(kbv_qp_t qp, const kbv_recv_wr_t* wrs, uint32_t n,
                                                 uint32_t* bad_index) {
  auto* q = fast<QpImpl>(qp, Kind::kQp);
  if (!q) [[unlikely]]
    return KBV_ERR_INVALID_HANDLE;
  if (bad_index) *bad_index = 0;
  if (!q->ready()) [[unlikely]]
    return KBV_ERR_INVALID_STATE;
  if (n > 0 && !wrs) [[unlikely]]
    return KBV_ERR_INVALID_ARGUMENT;
  if (q->dev->failed.load(std::memory_order_acquire)) [[unlikely]]
    return device_failure(*q->dev).code();
  if (q->qp_state.load(std::memory_order_acquire) == KBV_QPS_RESET) [[unlikely]]
    return KBV_ERR_INVALID_QP_STATE;
  if (!q->rq) [[unlikely]]
    return KBV_ERR_INVALID_ARGUMENT;  // receives come from its SRQ
  return post_with(*q->rq, KbvRecvWrs{}, wrs, n, bad_index);
}

// A poll that found fewer CQEs than asked for (got of n): a failed
// device's outstanding requests are flushed; every 1024th empty poll
// drives the device (its health check runs even if only polls do).
[[gnu::noinline]] int poll_short(CqImpl& c, hca::WorkCompletion* out, uint32_t n, size_t got) {
  if (c.dev->failed.load(std::memory_order_acquire)) {
    // The device died: it writes no more CQEs; every request still
    // outstanding completes now with KBV_ERR_WR_FLUSHED.
    got += c.poller->flush(out + got, n - got);
  } else if (got == 0 && (++c.empty_polls & 1023) == 0) {
    (void)c.dev->progress();  // try-lock
  }
  return static_cast<int>(got);
}

[[gnu::noinline]] int poll_cq_general(kbv_cq_t cq, kbv_wc_t* wcs, uint32_t n) {
  auto* c = fast<CqImpl>(cq, Kind::kCq);
  if (!c) [[unlikely]]
    return KBV_ERR_INVALID_HANDLE;
  if (!c->ready()) return KBV_ERR_INVALID_STATE;
  if (n > 0 && !wcs) return KBV_ERR_INVALID_ARGUMENT;
  if (c->resizing.load(std::memory_order_acquire)) return KBV_ERR_BUSY;
  c->apply_ops();  // pending attach/detach (clears gate::kCqOps)
  if (!c->poller) return 0;
  if (n > kMaxPoll) n = kMaxPoll;  // keeps the count in int range
  auto* out = reinterpret_cast<hca::WorkCompletion*>(wcs);
  const size_t got = c->poller->poll(out, n);
  if (got < n) [[unlikely]]
    return poll_short(*c, out, n, got);
  return static_cast<int>(got);
}

}  // namespace
}  // namespace kbv::verbs

namespace v = kbv::verbs;
namespace hca = kbv::hca;
using kbv::Status;
using v::Kind;

// The public entry points: a straight line for the common call (a handle in
// the flat part of the fast table, its object's gate open, one request of
// the common shape with room; a poll of 1..2^30 into a non-null array),
// else the general path above. The straight line reads one word of the
// object for the kind and every state (objects.hpp gate) and writes nothing
// before it has decided to post, so the general path starts from the
// caller's state.
extern "C" {

kbv_status_t kbv_post_send(kbv_qp_t qp, const kbv_send_wr_t* wrs, uint32_t n, uint32_t* bad_index) {
  v::Base* b = v::fast_handles().get_flat(qp);
  if (b != nullptr && n == 1 && wrs != nullptr && b->gate_open(Kind::kQp, v::gate::kSend))
      [[likely]] {
    auto* q = static_cast<v::QpImpl*>(b);
    // gate::kNoSq clear: the queue exists.
    if ((*q->sq).post_one(v::KbvSendWrs{nullptr}, wrs[0])) [[likely]] {
      if (bad_index) *bad_index = 0;
      return KBV_SUCCESS;
    }
  }
  return v::post_send_general(qp, wrs, n, bad_index);
}

kbv_status_t kbv_post_recv(kbv_qp_t qp, const kbv_recv_wr_t* wrs, uint32_t n, uint32_t* bad_index) {
  v::Base* b = v::fast_handles().get_flat(qp);
  if (b != nullptr && n == 1 && wrs != nullptr && b->gate_open(Kind::kQp, v::gate::kRecv))
      [[likely]] {
    auto* q = static_cast<v::QpImpl*>(b);
    // gate::kNoRq clear: the queue exists.
    if ((*q->rq).post_one(v::KbvRecvWrs{}, wrs[0])) [[likely]] {
      if (bad_index) *bad_index = 0;
      return KBV_SUCCESS;
    }
  }
  return v::post_recv_general(qp, wrs, n, bad_index);
}

kbv_status_t kbv_post_srq_recv(kbv_srq_t srq, const kbv_recv_wr_t* wrs, uint32_t n,
                               uint32_t* bad_index) {
  auto* s = v::fast<v::SrqImpl>(srq, Kind::kSrq);
  if (!s) return KBV_ERR_INVALID_HANDLE;
  if (bad_index) *bad_index = 0;
  if (!s->ready() || !s->q) return KBV_ERR_INVALID_STATE;
  if (n > 0 && !wrs) return KBV_ERR_INVALID_ARGUMENT;
  if (s->dev->failed.load(std::memory_order_acquire)) return v::device_failure(*s->dev).code();
  return v::post_with(*s->q, v::KbvRecvWrs{}, wrs, n, bad_index);
}

int kbv_poll_cq(kbv_cq_t cq, kbv_wc_t* wcs, uint32_t n) {
  v::Base* b = v::fast_handles().get_flat(cq);
  if (b != nullptr && n - 1 < v::kMaxPoll && wcs != nullptr &&
      b->gate_open(Kind::kCq, v::gate::kPoll)) [[likely]] {
    auto* c = static_cast<v::CqImpl*>(b);
    auto* out = reinterpret_cast<hca::WorkCompletion*>(wcs);
    // gate::kNoPoller clear: the poller exists.
    const size_t got = (*c->poller).poll(out, n);
    if (got < n) [[unlikely]]
      return v::poll_short(*c, out, n, got);
    return static_cast<int>(got);
  }
  return v::poll_cq_general(cq, wcs, n);
}

// kbv_poll_cq with the CQEs' timestamps (kbv.h): the poller's timestamped
// instantiation (hca/dp/cq.hpp), so kbv_poll_cq itself reads none.
int kbv_poll_cq_ts(kbv_cq_t cq, kbv_wc_t* wcs, uint64_t* timestamps, uint32_t n) {
  auto* c = v::fast<v::CqImpl>(cq, Kind::kCq);
  if (!c) [[unlikely]]
    return KBV_ERR_INVALID_HANDLE;
  if (!c->ready()) return KBV_ERR_INVALID_STATE;
  if (!c->timestamps) return KBV_ERR_INVALID_STATE;
  if (n > 0 && (!wcs || !timestamps)) return KBV_ERR_INVALID_ARGUMENT;
  if (c->resizing.load(std::memory_order_acquire)) return KBV_ERR_BUSY;
  c->apply_ops();  // pending attach/detach (clears gate::kCqOps), as poll_cq_general
  if (!c->poller) return 0;
  if (n > v::kMaxPoll) n = v::kMaxPoll;  // keeps the count in int range
  auto* out = reinterpret_cast<hca::WorkCompletion*>(wcs);
  size_t got = c->poller->poll(out, timestamps, n);
  if (got < n) [[unlikely]] {
    if (c->dev->failed.load(std::memory_order_acquire)) {
      // As kbv_poll_cq; these completions have no CQE, so no timestamp.
      const size_t flushed = c->poller->flush(out + got, n - got);
      for (size_t i = got; i < got + flushed; ++i) timestamps[i] = 0;
      got += flushed;
    } else if (got == 0 && (++c->empty_polls & 1023) == 0) {
      (void)c->dev->progress();
    }
  }
  return static_cast<int>(got);
}

}  // extern "C"
