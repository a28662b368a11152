// SPDX-License-Identifier: BSD-3-Clause
//
// The extended post API (ibv_wr_post(3), rdma-core 44 verbs.h struct
// ibv_qp_ex): ibv_wr_start, a builder per WR (ibv_wr_send, ibv_wr_rdma_write,
// ... reading qp->wr_id and qp->wr_flags at that moment), setters for its
// data (ibv_wr_set_sge / _sge_list / _inline_data / _inline_data_list,
// ibv_wr_set_ud_addr), then ibv_wr_complete posts the batch or ibv_wr_abort
// drops it. Semantics follow rdma-core's mlx5 provider (providers/mlx5/qp.c
// mlx5_send_wr_*), which writes WQEs into the send ring as the calls come
// and rings the doorbell at complete:
//   - errors are recorded, not returned: the first one (ENOMEM for more WRs
//     than the send queue holds, more SGEs than max_send_sge, inline data
//     above max_inline_data; EINVAL for a setter with no WR begun or
//     unknown wr_flags; EOPNOTSUPP for an op kbv has no WQE for: send with
//     invalidate, local invalidate, bind MW, atomic write) makes wr_complete
//     drop the whole batch and return it;
//   - zero-length SGEs are skipped; inline data is copied when set, so the
//     buffer may be reused before wr_complete;
//   - IBV_SEND_INLINE in wr_flags means nothing here (inline is what
//     wr_set_inline_data says), as in mlx5.
// Here the WRs accumulate in the QP's WrBatch (sized at create, so the data
// path never allocates) and wr_complete posts them with one kbv_post_send
// (on UD, after checking every WR got its address).
// One difference from mlx5, which checks the ring's free room WR by WR: kbv
// checks it when wr_complete posts, so a batch larger than the room left
// (not than the queue) posts the WRs that fit and returns ENOMEM.
// Threading: one thread per QP between wr_start and wr_complete (mlx5 takes
// the SQ lock there; kbv's fast path has none, as kbv.h says).
#include <errno.h>
#include <infiniband/verbs.h>

#include <kbv/kbv.h>

#include <cstdlib>
#include <cstring>

#include "ibverbs/fast_path.hpp"
#include "ibverbs/objects.hpp"

namespace kbv::ibverbs {
namespace {

void fail(WrBatch& b, int err) {
  if (b.err == 0) b.err = err;
}

// The WR being built, or nullptr after an overflow / before any builder.
kbv_send_wr_t* cur_wr(WrBatch& b) {
  if (b.n == 0 || b.n > b.max_wr) [[unlikely]] {
    fail(b, EINVAL);
    return nullptr;
  }
  return &b.wrs[b.n - 1];
}

// Begins a WR: reads wr_id / wr_flags as the builder is called.
kbv_send_wr_t* begin(ibv_qp_ex* x, uint32_t opcode) {
  Qp& qp = *to_qp(x);
  WrBatch& b = qp.batch;
  if (b.n >= b.max_wr) [[unlikely]] {
    // Counted so later setters of this WR are ignored (cur_wr: n > max_wr).
    b.n = b.max_wr + 1;
    fail(b, ENOMEM);
    return nullptr;
  }
  kbv_send_wr_t& k = b.wrs[b.n++];
  const int64_t fl = send_flags(x->wr_flags & ~IBV_SEND_INLINE);
  if (fl < 0) [[unlikely]]
    fail(b, EINVAL);
  k = kbv_send_wr_t{};
  k.wr_id = x->wr_id;
  k.opcode = opcode;
  k.flags = fl < 0 ? 0 : static_cast<uint32_t>(fl);
  k.sg_list = b.sges + static_cast<size_t>(b.n - 1) * b.max_sge;
  return &k;
}

void wr_start(ibv_qp_ex* x) {
  WrBatch& b = to_qp(x)->batch;
  b.n = 0;
  b.err = 0;
  b.started = true;
}

int wr_complete(ibv_qp_ex* x) {
  Qp& qp = *to_qp(x);
  WrBatch& b = qp.batch;
  const int err = b.started ? b.err : EINVAL;
  const uint32_t n = b.n;
  b.n = 0;
  b.err = 0;
  b.started = false;
  if (err != 0) [[unlikely]]
    return err;
  if (n == 0) return 0;
  if (qp.qpx.qp_base.qp_type == IBV_QPT_UD) {
    // A WR without ibv_wr_set_ud_addr would make kbv refuse it after posting
    // the ones before: refuse the batch whole, as mlx5 does.
    for (uint32_t i = 0; i < n; ++i)
      if (b.wrs[i].ah == KBV_HANDLE_NONE) [[unlikely]]
        return EINVAL;
  }
  const kbv_status_t st = kbv_post_send(qp.handle, b.wrs, n, nullptr);
  if (st == KBV_SUCCESS) [[likely]]
    return 0;
  // mlx5: a batch on a QP out of RTS is EINVAL (mlx5_send_wr_complete_error);
  // a full queue ENOMEM.
  return st == KBV_ERR_INVALID_QP_STATE ? EINVAL : send_errno(st);
}

void wr_abort(ibv_qp_ex* x) {
  WrBatch& b = to_qp(x)->batch;
  b.n = 0;
  b.err = 0;
  b.started = false;
}

// ---- builders ------------------------------------------------------------------
void wr_send(ibv_qp_ex* x) { begin(x, KBV_WR_SEND); }
void wr_send_imm(ibv_qp_ex* x, __be32 imm) {
  if (kbv_send_wr_t* k = begin(x, KBV_WR_SEND_IMM)) k->imm = be32toh(imm);
}
void wr_rdma_write(ibv_qp_ex* x, uint32_t rkey, uint64_t remote_addr) {
  if (kbv_send_wr_t* k = begin(x, KBV_WR_RDMA_WRITE)) {
    k->rkey = rkey;
    k->remote_addr = remote_addr;
  }
}
void wr_rdma_write_imm(ibv_qp_ex* x, uint32_t rkey, uint64_t remote_addr, __be32 imm) {
  if (kbv_send_wr_t* k = begin(x, KBV_WR_RDMA_WRITE_IMM)) {
    k->rkey = rkey;
    k->remote_addr = remote_addr;
    k->imm = be32toh(imm);
  }
}
void wr_rdma_read(ibv_qp_ex* x, uint32_t rkey, uint64_t remote_addr) {
  if (kbv_send_wr_t* k = begin(x, KBV_WR_RDMA_READ)) {
    k->rkey = rkey;
    k->remote_addr = remote_addr;
  }
}
void wr_atomic_cmp_swp(ibv_qp_ex* x, uint32_t rkey, uint64_t remote_addr, uint64_t compare,
                       uint64_t swap) {
  if (kbv_send_wr_t* k = begin(x, KBV_WR_ATOMIC_CS)) {
    k->rkey = rkey;
    k->remote_addr = remote_addr;
    k->compare_add = compare;
    k->swap = swap;
  }
}
void wr_atomic_fetch_add(ibv_qp_ex* x, uint32_t rkey, uint64_t remote_addr, uint64_t add) {
  if (kbv_send_wr_t* k = begin(x, KBV_WR_ATOMIC_FA)) {
    k->rkey = rkey;
    k->remote_addr = remote_addr;
    k->compare_add = add;
  }
}
// Ops kbv has no WQE for: the WR counts (so the batch's shape is kept) and
// the batch fails with EOPNOTSUPP at wr_complete.
void refuse(ibv_qp_ex* x) {
  begin(x, KBV_WR_SEND);
  fail(to_qp(x)->batch, EOPNOTSUPP);
}
void wr_send_inv(ibv_qp_ex* x, uint32_t) { refuse(x); }
void wr_local_inv(ibv_qp_ex* x, uint32_t) { refuse(x); }
void wr_bind_mw(ibv_qp_ex* x, ibv_mw*, uint32_t, const ibv_mw_bind_info*) { refuse(x); }
void wr_atomic_write(ibv_qp_ex* x, uint32_t, uint64_t, const void*) { refuse(x); }

// ---- setters -------------------------------------------------------------------
void wr_set_ud_addr(ibv_qp_ex* x, ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) {
  Qp& qp = *to_qp(x);
  kbv_send_wr_t* k = cur_wr(qp.batch);
  if (k == nullptr) return;
  if (ah == nullptr) [[unlikely]] {
    fail(qp.batch, EINVAL);
    return;
  }
  k->ah = to_ah(ah)->handle;
  k->remote_qpn = remote_qpn;
  k->remote_qkey = ud_qkey(qp, remote_qkey);
}

void wr_set_sge(ibv_qp_ex* x, uint32_t lkey, uint64_t addr, uint32_t length) {
  WrBatch& b = to_qp(x)->batch;
  kbv_send_wr_t* k = cur_wr(b);
  if (k == nullptr) return;
  if (length == 0) {
    k->num_sge = 0;
    return;
  }
  if (b.max_sge == 0) [[unlikely]] {
    fail(b, ENOMEM);
    return;
  }
  kbv_sge_t* s = b.sges + static_cast<size_t>(b.n - 1) * b.max_sge;
  s[0] = kbv_sge_t{addr, length, lkey};
  k->num_sge = 1;
}

void wr_set_sge_list(ibv_qp_ex* x, size_t num_sge, const ibv_sge* list) {
  WrBatch& b = to_qp(x)->batch;
  kbv_send_wr_t* k = cur_wr(b);
  if (k == nullptr) return;
  if (num_sge > b.max_sge) [[unlikely]] {
    fail(b, ENOMEM);
    return;
  }
  if (num_sge > 0 && list == nullptr) [[unlikely]] {
    fail(b, EINVAL);
    return;
  }
  kbv_sge_t* s = b.sges + static_cast<size_t>(b.n - 1) * b.max_sge;
  uint32_t m = 0;
  for (size_t i = 0; i < num_sge; ++i) {
    if (list[i].length == 0) continue;
    s[m++] = kbv_sge_t{list[i].addr, list[i].length, list[i].lkey};
  }
  k->num_sge = m;
}

// Copies the data into the WR's slot of the inline arena.
uint8_t* inline_slot(WrBatch& b) { return b.inl + static_cast<size_t>(b.n - 1) * b.max_inline; }

void set_inline(WrBatch& b, kbv_send_wr_t& k, size_t length) {
  if (length == 0) {
    k.num_sge = 0;
    return;
  }
  kbv_sge_t* s = b.sges + static_cast<size_t>(b.n - 1) * b.max_sge;
  s[0] = kbv_sge_t{reinterpret_cast<uintptr_t>(inline_slot(b)), static_cast<uint32_t>(length), 0};
  k.num_sge = 1;
  k.flags |= KBV_SEND_INLINE;
}

void wr_set_inline_data(ibv_qp_ex* x, void* addr, size_t length) {
  WrBatch& b = to_qp(x)->batch;
  kbv_send_wr_t* k = cur_wr(b);
  if (k == nullptr) return;
  if (length > b.max_inline || (length > 0 && b.max_sge == 0)) [[unlikely]] {
    fail(b, ENOMEM);
    return;
  }
  if (length > 0) std::memcpy(inline_slot(b), addr, length);
  set_inline(b, *k, length);
}

void wr_set_inline_data_list(ibv_qp_ex* x, size_t num_buf, const ibv_data_buf* list) {
  WrBatch& b = to_qp(x)->batch;
  kbv_send_wr_t* k = cur_wr(b);
  if (k == nullptr) return;
  size_t total = 0;
  for (size_t i = 0; i < num_buf; ++i) {
    total += list[i].length;
    if (total > b.max_inline) [[unlikely]] {
      fail(b, ENOMEM);
      return;
    }
  }
  if (total > 0 && b.max_sge == 0) [[unlikely]] {
    fail(b, ENOMEM);
    return;
  }
  uint8_t* dst = inline_slot(b);
  for (size_t i = 0; i < num_buf; ++i) {
    if (list[i].length == 0) continue;
    std::memcpy(dst, list[i].addr, list[i].length);
    dst += list[i].length;
  }
  set_inline(b, *k, total);
}

// Ops each QP type can carry (rdma-core mlx5 qp.c MLX5_SUPPORTED_SEND_OPS_FLAGS_*).
constexpr uint64_t kOpsRc =
    IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_SEND_WITH_IMM |
    IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
    IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
    IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_ATOMIC_WRITE;
constexpr uint64_t kOpsUc = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV |
                            IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE |
                            IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_LOCAL_INV |
                            IBV_QP_EX_WITH_BIND_MW;
constexpr uint64_t kOpsUd = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

}  // namespace

int init_qp_ex_ops(Qp& qp, uint64_t ops) {
  const ibv_qp_type type = qp.qpx.qp_base.qp_type;
  uint64_t allowed = 0;
  switch (type) {
    case IBV_QPT_RC: allowed = kOpsRc; break;
    case IBV_QPT_UC: allowed = kOpsUc; break;
    case IBV_QPT_UD: allowed = kOpsUd; break;
    default: return EOPNOTSUPP;
  }
  if (ops & ~allowed) return EOPNOTSUPP;

  release_qp_ex(qp);
  WrBatch& b = qp.batch;
  b.max_wr = qp.max_send_wr;
  b.max_sge = qp.max_send_sge > 0 ? qp.max_send_sge : (qp.max_inline_data > 0 ? 1 : 0);
  b.max_inline = qp.max_inline_data;
  const size_t nw = b.max_wr > 0 ? b.max_wr : 1;
  b.wrs = static_cast<kbv_send_wr_t*>(std::calloc(nw, sizeof(kbv_send_wr_t)));
  b.sges =
      static_cast<kbv_sge_t*>(std::calloc(nw * (b.max_sge > 0 ? b.max_sge : 1), sizeof(kbv_sge_t)));
  b.inl = static_cast<uint8_t*>(std::calloc(nw * (b.max_inline > 0 ? b.max_inline : 1), 1));
  if (b.wrs == nullptr || b.sges == nullptr || b.inl == nullptr) {
    release_qp_ex(qp);
    return ENOMEM;
  }

  ibv_qp_ex& x = qp.qpx;
  x.comp_mask = 0;
  x.wr_id = 0;
  x.wr_flags = 0;
  x.wr_start = wr_start;
  x.wr_complete = wr_complete;
  x.wr_abort = wr_abort;
  x.wr_send = wr_send;
  x.wr_send_imm = wr_send_imm;
  x.wr_set_sge = wr_set_sge;
  x.wr_set_sge_list = wr_set_sge_list;
  x.wr_set_inline_data = wr_set_inline_data;
  x.wr_set_inline_data_list = wr_set_inline_data_list;
  x.wr_send_tso = nullptr;
  x.wr_set_xrc_srqn = nullptr;
  // Builders and setters the QP type cannot use stay NULL, as in mlx5.
  x.wr_set_ud_addr = nullptr;
  x.wr_send_inv = nullptr;
  x.wr_rdma_write = nullptr;
  x.wr_rdma_write_imm = nullptr;
  x.wr_local_inv = nullptr;
  x.wr_bind_mw = nullptr;
  x.wr_rdma_read = nullptr;
  x.wr_atomic_cmp_swp = nullptr;
  x.wr_atomic_fetch_add = nullptr;
  x.wr_atomic_write = nullptr;
  if (type == IBV_QPT_UD) {
    x.wr_set_ud_addr = wr_set_ud_addr;
  } else {
    x.wr_send_inv = wr_send_inv;
    x.wr_rdma_write = wr_rdma_write;
    x.wr_rdma_write_imm = wr_rdma_write_imm;
    x.wr_local_inv = wr_local_inv;
    x.wr_bind_mw = wr_bind_mw;
  }
  if (type == IBV_QPT_RC) {
    x.wr_rdma_read = wr_rdma_read;
    x.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
    x.wr_atomic_fetch_add = wr_atomic_fetch_add;
    x.wr_atomic_write = wr_atomic_write;
  }
  qp.ex = true;
  return 0;
}

void release_qp_ex(Qp& qp) {
  WrBatch& b = qp.batch;
  std::free(b.wrs);
  std::free(b.sges);
  std::free(b.inl);
  b = WrBatch{};
  qp.ex = false;
}

}  // namespace kbv::ibverbs

// ibv_qp_to_qp_ex(3): the extended QP of a QP created with
// IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, else NULL (rdma-core: VERBS_QP_EX).
extern "C" __attribute__((visibility("default"))) ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
  if (qp == nullptr) return nullptr;
  kbv::ibverbs::Qp* q = kbv::ibverbs::to_qp(qp);
  return q->ex ? &q->qpx : nullptr;
}
