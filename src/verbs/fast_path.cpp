// SPDX-License-Identifier: BSD-3-Clause
// The fast path (kbv.h "Fast path"): kbv_post_send / kbv_post_recv /
// kbv_post_srq_recv / kbv_poll_cq over hca::SendQueue, RecvQueue, SrqQueue
// and CqPoller. Handles resolve through the lock-free FastTable; work
// requests are translated in stack chunks (no allocation, no lock).
#include <kbv/kbv.h>

#include <algorithm>
#include <cstddef>
#include <new>

#include "verbs/objects.hpp"

namespace kbv::verbs {
namespace {

// kbv_sge_t is passed to the driver as hca::Sge: same members, same layout.
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

constexpr uint32_t kChunk = 16;
constexpr uint32_t kSendFlags =
    KBV_SEND_SIGNALED | KBV_SEND_SOLICITED | KBV_SEND_FENCE | KBV_SEND_INLINE;

// Staging for up to kChunk translated requests, left uninitialised: each
// entry is constructed when a request is translated into it (the
// translation assigns every member, so the compiler drops the default
// member initialisers; a plain array would zero-fill all kChunk entries on
// every call).
template <class T>
struct Stage {
  alignas(T) unsigned char raw[kChunk * sizeof(T)];
  T* at(uint32_t i) { return new (raw + i * sizeof(T)) T; }
  const T* data() const { return reinterpret_cast<const T*>(raw); }
};

std::span<const hca::Sge> sges(const kbv_sge_t* sg, uint32_t n) {
  return {reinterpret_cast<const hca::Sge*>(sg), n};
}

template <class T>
T* fast(uint64_t h, Kind k) {
  Base* b = fast_lookup(h);
  return b && b->kind == k ? static_cast<T*>(b) : nullptr;
}

Status device_failure(const DeviceImpl& d) {
  return Status{static_cast<kbv_status_t>(d.failure.load(std::memory_order_relaxed))};
}

// Posts the first m translated requests of a chunk; on a refusal sets
// *bad to base + its index.
template <class Q, class Wr>
Status post_chunk(Q& q, const Wr* tmp, uint32_t m, uint32_t base, uint32_t* bad) {
  if (m == 0) return KBV_SUCCESS;
  size_t bi = 0;
  Status s = q.post(std::span<const Wr>(tmp, m), &bi);
  if (!s.is_ok() && bad) *bad = base + static_cast<uint32_t>(bi);
  return s;
}

// What the driver cannot check about a kbv_send_wr_t: the opcode and flag
// values, the SGE list pointer, and (UD) the AH handle, resolved into *ah.
inline kbv_status_t check_wr(const QpImpl& q, const kbv_send_wr_t& w, const hca::Ah** ah) {
  if (w.opcode > KBV_WR_ATOMIC_FA || (w.flags & ~kSendFlags) || (w.num_sge && !w.sg_list))
    return KBV_ERR_INVALID_ARGUMENT;
  if (q.type == KBV_QPT_UD) {
    auto* a = fast<AhImpl>(w.ah, Kind::kAh);
    if (!a || a->dev != q.dev) return KBV_ERR_INVALID_HANDLE;
    *ah = &a->ah;
  }
  return KBV_SUCCESS;
}

// kbv_send_wr_t -> hca::SendWr (the Ah already resolved).
inline void translate(const kbv_send_wr_t& w, const hca::Ah* ah, hca::SendWr& t) {
  t.wr_id = w.wr_id;
  t.opcode = static_cast<hca::WrOpcode>(w.opcode);
  t.flags = w.flags;
  t.sg = sges(w.sg_list, w.num_sge);
  t.imm = w.imm;
  t.remote_addr = w.remote_addr;
  t.rkey = w.rkey;
  t.compare_add = w.compare_add;
  t.swap = w.swap;
  t.ah = ah;
  t.remote_qpn = w.remote_qpn;
  t.q_key = w.remote_qkey;
}

template <class Q>
kbv_status_t post_recv_common(Q& q, const kbv_recv_wr_t* wrs, uint32_t n, uint32_t* bad) {
  Stage<hca::RecvWr> tmp;
  for (uint32_t base = 0; base < n; base += kChunk) {
    const uint32_t m = std::min(kChunk, n - base);
    for (uint32_t i = 0; i < m; ++i) {
      const kbv_recv_wr_t& w = wrs[base + i];
      if (w.num_sge && !w.sg_list) {
        Status s = post_chunk(q, tmp.data(), i, base, bad);
        if (!s.is_ok()) return s.code();
        if (bad) *bad = base + i;
        return KBV_ERR_INVALID_ARGUMENT;
      }
      hca::RecvWr* t = tmp.at(i);
      t->wr_id = w.wr_id;
      t->sg = sges(w.sg_list, w.num_sge);
    }
    Status s = post_chunk(q, tmp.data(), m, base, bad);
    if (!s.is_ok()) return s.code();
  }
  return KBV_SUCCESS;
}

}  // namespace
}  // namespace kbv::verbs

namespace v = kbv::verbs;
namespace hca = kbv::hca;
using kbv::Status;
using v::Kind;

extern "C" {

kbv_status_t kbv_post_send(kbv_qp_t qp, const kbv_send_wr_t* wrs, uint32_t n, uint32_t* bad_index) {
  auto* q = v::fast<v::QpImpl>(qp, Kind::kQp);
  if (!q) return KBV_ERR_INVALID_HANDLE;
  if (bad_index) *bad_index = 0;
  if (!q->ready()) return KBV_ERR_INVALID_STATE;
  if (n > 0 && !wrs) return KBV_ERR_INVALID_ARGUMENT;
  if (q->dev->failed.load(std::memory_order_acquire)) return v::device_failure(*q->dev).code();
  const uint32_t s = q->qp_state.load(std::memory_order_acquire);
  if (s == KBV_QPS_RESET || s == KBV_QPS_INIT || s == KBV_QPS_RTR) return KBV_ERR_INVALID_QP_STATE;
  if (!q->sq) return KBV_ERR_INVALID_STATE;
  if (n == 1) {
    // One request (the common case): translated once, no chunk loop.
    const hca::Ah* ah = nullptr;
    const kbv_status_t err = v::check_wr(*q, *wrs, &ah);
    if (err != KBV_SUCCESS) [[unlikely]]
      return err;
    hca::SendWr t;
    v::translate(*wrs, ah, t);
    return q->sq->post(&t, 1, nullptr);
  }
  v::Stage<hca::SendWr> tmp;
  for (uint32_t base = 0; base < n; base += v::kChunk) {
    const uint32_t m = std::min(v::kChunk, n - base);
    for (uint32_t i = 0; i < m; ++i) {
      const kbv_send_wr_t& w = wrs[base + i];
      const hca::Ah* ah = nullptr;
      const kbv_status_t err = v::check_wr(*q, w, &ah);
      if (err != KBV_SUCCESS) {
        Status ps = v::post_chunk(*q->sq, tmp.data(), i, base, bad_index);
        if (!ps.is_ok()) return ps.code();
        if (bad_index) *bad_index = base + i;
        return err;
      }
      v::translate(w, ah, *tmp.at(i));
    }
    Status ps = v::post_chunk(*q->sq, tmp.data(), m, base, bad_index);
    if (!ps.is_ok()) return ps.code();
  }
  return KBV_SUCCESS;
}

kbv_status_t kbv_post_recv(kbv_qp_t qp, const kbv_recv_wr_t* wrs, uint32_t n, uint32_t* bad_index) {
  auto* q = v::fast<v::QpImpl>(qp, Kind::kQp);
  if (!q) return KBV_ERR_INVALID_HANDLE;
  if (bad_index) *bad_index = 0;
  if (!q->ready()) return KBV_ERR_INVALID_STATE;
  if (n > 0 && !wrs) return KBV_ERR_INVALID_ARGUMENT;
  if (q->dev->failed.load(std::memory_order_acquire)) return v::device_failure(*q->dev).code();
  if (q->qp_state.load(std::memory_order_acquire) == KBV_QPS_RESET) return KBV_ERR_INVALID_QP_STATE;
  if (!q->rq) return KBV_ERR_INVALID_ARGUMENT;  // receives come from its SRQ
  return v::post_recv_common(*q->rq, wrs, n, bad_index);
}

kbv_status_t kbv_post_srq_recv(kbv_srq_t srq, const kbv_recv_wr_t* wrs, uint32_t n,
                               uint32_t* bad_index) {
  auto* s = v::fast<v::SrqImpl>(srq, Kind::kSrq);
  if (!s) return KBV_ERR_INVALID_HANDLE;
  if (bad_index) *bad_index = 0;
  if (!s->ready() || !s->q) return KBV_ERR_INVALID_STATE;
  if (n > 0 && !wrs) return KBV_ERR_INVALID_ARGUMENT;
  if (s->dev->failed.load(std::memory_order_acquire)) return v::device_failure(*s->dev).code();
  return v::post_recv_common(*s->q, wrs, n, bad_index);
}

int kbv_poll_cq(kbv_cq_t cq, kbv_wc_t* wcs, uint32_t n) {
  auto* c = v::fast<v::CqImpl>(cq, Kind::kCq);
  if (!c) return KBV_ERR_INVALID_HANDLE;
  if (!c->ready()) return KBV_ERR_INVALID_STATE;
  if (n > 0 && !wcs) return KBV_ERR_INVALID_ARGUMENT;
  if (c->resizing.load(std::memory_order_acquire)) return KBV_ERR_BUSY;
  if (c->ops.load(std::memory_order_relaxed) != nullptr) [[unlikely]]
    c->apply_ops();
  if (!c->poller) return 0;
  if (n > (1u << 30)) n = 1u << 30;  // keeps the count in int range
  return static_cast<int>(c->poller->poll(reinterpret_cast<hca::WorkCompletion*>(wcs), n));
}

}  // extern "C"
