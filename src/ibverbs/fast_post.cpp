// SPDX-License-Identifier: BSD-3-Clause
//
// ctx->ops.post_send / post_recv / post_srq_recv: verbs.h's inline
// ibv_post_send, ibv_post_recv and ibv_post_srq_recv land here. The linked
// list is converted kPostChunk WRs at a time into a kbv array on the stack
// (rules: fast_path.hpp) and posted with one kbv_post_* call per chunk; no
// lock, no allocation. On a refusal *bad_wr is the first WR not posted (the
// ones before it were), and the return is its errno (ibv_post_send(3);
// values as rdma-core's mlx5: fast_path.hpp send_errno / post_errno).
#include <infiniband/verbs.h>

#include <kbv/kbv.h>

#include <cstring>

#include "ibverbs/context.hpp"
#include "ibverbs/fast_path.hpp"
#include "ibverbs/objects.hpp"

namespace kbv::ibverbs {
namespace {

// Walks a linked list of IbWr (ibv_send_wr / ibv_recv_wr): converts up to
// kPostChunk with convert(const IbWr&, KbvWr&) -> errno, posts each chunk
// with post(const KbvWr*, n, uint32_t* bad_index) -> kbv_status_t, whose
// refusal becomes ToErrno(status).
template <class IbWr, class KbvWr, int (*ToErrno)(kbv_status_t), class Convert, class Post>
inline int post_linked(IbWr* first, IbWr** bad_wr, Convert convert, Post post) {
  KbvWr wrs[kPostChunk];
  IbWr* chunk_wr[kPostChunk];
  IbWr* w = first;
  while (w != nullptr) {
    uint32_t n = 0;
    int bad = 0;
    for (; w != nullptr && n < kPostChunk; w = w->next) {
      bad = convert(*w, wrs[n]);
      if (bad != 0) [[unlikely]]
        break;
      chunk_wr[n++] = w;
    }
    if (n > 0) {
      uint32_t bad_index = 0;
      const kbv_status_t st = post(wrs, n, &bad_index);
      if (st != KBV_SUCCESS) [[unlikely]] {
        if (bad_wr != nullptr) *bad_wr = chunk_wr[bad_index < n ? bad_index : 0];
        return ToErrno(st);
      }
    }
    if (bad != 0) [[unlikely]] {
      if (bad_wr != nullptr) *bad_wr = w;
      return bad;
    }
  }
  return 0;
}

int post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  const Qp& qp = *to_qp(ibqp);
  const kbv_qp_t h = qp.handle;
  if (wr != nullptr && wr->next == nullptr) [[likely]] {  // one WR: no list walk
    kbv_send_wr_t k;
    int err = to_kbv_send_wr(qp, *wr, k);
    if (err == 0) [[likely]] {
      const kbv_status_t st = kbv_post_send(h, &k, 1, nullptr);
      if (st == KBV_SUCCESS) [[likely]]
        return 0;
      err = send_errno(st);
    }
    if (bad_wr != nullptr) *bad_wr = wr;
    return err;
  }
  return post_linked<ibv_send_wr, kbv_send_wr_t, send_errno>(
      wr, bad_wr,
      [&qp](const ibv_send_wr& w, kbv_send_wr_t& k) { return to_kbv_send_wr(qp, w, k); },
      [h](const kbv_send_wr_t* k, uint32_t n, uint32_t* bad) {
        return kbv_post_send(h, k, n, bad);
      });
}

int post_recv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  const kbv_qp_t h = to_qp(ibqp)->handle;
  if (wr != nullptr && wr->next == nullptr) [[likely]] {
    kbv_recv_wr_t k;
    int err = to_kbv_recv_wr(*wr, k);
    if (err == 0) [[likely]] {
      const kbv_status_t st = kbv_post_recv(h, &k, 1, nullptr);
      if (st == KBV_SUCCESS) [[likely]]
        return 0;
      err = post_errno(st);
    }
    if (bad_wr != nullptr) *bad_wr = wr;
    return err;
  }
  return post_linked<ibv_recv_wr, kbv_recv_wr_t, post_errno>(
      wr, bad_wr, [](const ibv_recv_wr& w, kbv_recv_wr_t& k) { return to_kbv_recv_wr(w, k); },
      [h](const kbv_recv_wr_t* k, uint32_t n, uint32_t* bad) {
        return kbv_post_recv(h, k, n, bad);
      });
}

int post_srq_recv(ibv_srq* ibsrq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  const kbv_srq_t h = to_srq(ibsrq)->handle;
  return post_linked<ibv_recv_wr, kbv_recv_wr_t, post_errno>(
      wr, bad_wr, [](const ibv_recv_wr& w, kbv_recv_wr_t& k) { return to_kbv_recv_wr(w, k); },
      [h](const kbv_recv_wr_t* k, uint32_t n, uint32_t* bad) {
        return kbv_post_srq_recv(h, k, n, bad);
      });
}

}  // namespace

int poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc);  // fast_cq.cpp

void fill_context_ops(Context& ctx) {
  // Model HCAs: "sim:<name>", and the model's emulated VFIO functions, which
  // live in PCI domain 0xfffe (src/sim/bus/vfio_kernel.hpp; the sim preload).
  const char* uri =
      ctx.state != nullptr && ctx.state->device != nullptr ? ctx.state->device->uri : "";
  ctx.model_hca = std::strncmp(uri, "sim:", 4) == 0 || std::strncmp(uri, "vfio:fffe:", 10) == 0;
  ibv_context_ops& ops = ctx.vctx.context.ops;
  ops.post_send = post_send;
  ops.post_recv = post_recv;
  ops.post_srq_recv = post_srq_recv;
  ops.poll_cq = poll_cq;
}

}  // namespace kbv::ibverbs
