// SPDX-License-Identifier: BSD-3-Clause
//
// The objects kbv's libibverbs.so.1 hands out (internal header, not
// installed). Each wraps the rdma-core struct a program sees as its FIRST
// member, so the pointer a program holds converts back with a cast (the
// structs are standard-layout: static_asserts below), plus the kbv handle(s)
// and what the data path needs precomputed.
//
// Layouts (rdma-core 44 infiniband/verbs.h):
//   ibv_context: verbs.h's inline calls (ibv_post_send, ibv_poll_cq, ...)
//     go through ctx->ops; the _ex calls find `struct verbs_context` by
//     verbs_get_ctx(): ctx->abi_compat == __VERBS_ABI_IS_EXTENDED, the
//     verbs_context ends with the ibv_context, and verbs_get_ctx_op()
//     checks vctx->sz covers the op. Context embeds verbs_context first;
//     mark_extended() sets abi_compat and sz.
//   ibv_cq_ex starts with the ibv_cq fields (ibv_cq_ex_to_cq is a cast), so
//     every CQ is an ibv_cq_ex and serves both ibv_poll_cq and start_poll.
//   ibv_qp_ex starts with ibv_qp (qp_base); every QP is a Qp, and
//     ibv_qp_to_qp_ex() returns &qpx only for a QP created with
//     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS (rdma-core: VERBS_QP_EX), else NULL.
//
// Who fills what (issue 11): the control verbs (src/ibverbs/ by ibv-core)
// create the objects, fill the rdma-core fields and handles, and call the
// data-path init functions below (src/ibverbs/fast_*.cpp, ibv-fast) before
// handing the object out. Threading: as kbv.h's fast path (one thread at a
// time per QP / SRQ / CQ); the data path takes no lock and allocates nothing.
#pragma once

#include <infiniband/verbs.h>

#include <kbv/kbv.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace kbv::ibverbs {

// Control-path state of a context (async event queue, object map, port
// cache, locks): ibv-core's context.hpp.
struct ContextState;

// Linked ibv_send_wr / ibv_recv_wr lists are converted this many at a time
// on the stack and posted with one kbv_post_* call per chunk.
inline constexpr uint32_t kPostChunk = 16;
// (SGE lists are not copied: ibv_sge and kbv_sge_t share one layout.)

struct Context {
  verbs_context vctx;  // FIRST; vctx.context is the ibv_context programs hold
  kbv_device_t dev = KBV_HANDLE_NONE;
  // Control-path state (device, event queues, async events, locks): ibv-core.
  ContextState* state = nullptr;
  // The device is a model HCA ("sim:", or "vfio:fffe:..." through the sim
  // preload), whose "hardware" is threads of this
  // machine: a CQ polled empty again and again gives the CPU away now and
  // then (fast_cq.cpp), as kbv-perf does. Set by fill_context_ops.
  bool model_hca = false;
};

// users: objects created on it and not destroyed yet (MRs, QPs, SRQs, AHs
// on a PD; QPs on a CQ or SRQ). Destroying it while users remain is EBUSY and
// leaves it valid, as the kernel's uverbs answers (ibv-core).
struct Pd {
  ibv_pd pd;  // FIRST
  kbv_pd_t handle = KBV_HANDLE_NONE;
  std::atomic<uint32_t> users{0};
};

struct Mr {
  ibv_mr mr;  // FIRST
  kbv_mr_t handle = KBV_HANDLE_NONE;
};

struct Ah {
  ibv_ah ah;  // FIRST
  kbv_ah_t handle = KBV_HANDLE_NONE;
};

struct Srq {
  ibv_srq srq;  // FIRST
  kbv_srq_t handle = KBV_HANDLE_NONE;
  std::atomic<uint32_t> users{0};
  // What ibv_query_srq reports (the created size and the last limit set).
  uint32_t max_wr = 0, max_sge = 0, srq_limit = 0;
};

struct Cq {
  ibv_cq_ex cqx;  // FIRST; starts with the ibv_cq fields
  kbv_cq_t handle = KBV_HANDLE_NONE;
  std::atomic<uint32_t> users{0};
  // A completion notification is requested (kbv_cq_arm) and its event not yet
  // taken by ibv_get_cq_event: ibv_req_notify_cq does not arm again
  // (ibv-core's channel.cpp).
  std::atomic<bool> notify_armed{false};
  // ibv_create_cq_wc_flags the CQ was created with (ibv_create_cq: the
  // standard IBV_WC_STANDARD_FLAGS set); read_* functions for flags not
  // asked for are left NULL, as rdma-core does.
  uint64_t wc_flags = 0;
  // The completion start_poll/next_poll read; cqx.status / cqx.wr_id mirror
  // it. Data-path state, owned by fast_cq.cpp.
  kbv_wc_t cur{};
  uint64_t cur_ts = 0;       // cur's CQE timestamp (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
  uint32_t empty_polls = 0;  // polls that found nothing (fast_cq.cpp)
};

// Storage for the ibv_wr_* API between wr_start and wr_complete
// (fast_qp_ex.cpp). Sized at init_qp_ex_ops from the QP's caps: up to
// max_send_wr WRs (more is ENOMEM at wr_complete, as a full send queue in
// rdma-core's mlx5), max_send_sge SGEs each, max_inline_data bytes of copied
// inline data each (rdma-core copies inline data into the WQE when
// wr_set_inline_data is called; so do we, into this arena).
struct WrBatch {
  kbv_send_wr_t* wrs = nullptr;  // [max_wr]
  kbv_sge_t* sges = nullptr;     // [max_wr * max_sge]
  uint8_t* inl = nullptr;        // [max_wr * max_inline]
  uint32_t max_wr = 0, max_sge = 0, max_inline = 0;
  uint32_t n = 0;        // WRs begun since wr_start (the last one is being built)
  int err = 0;           // first error of the batch (errno); wr_complete returns it
  bool started = false;  // inside wr_start .. wr_complete/wr_abort
};

struct Qp {
  ibv_qp_ex qpx;  // FIRST; qpx.qp_base is the ibv_qp
  kbv_qp_t handle = KBV_HANDLE_NONE;
  // Caps the QP was created with (after the device's rounding): bound the
  // wr_* batch storage.
  uint32_t max_send_wr = 0, max_send_sge = 0, max_inline_data = 0;
  // The rest of what ibv_query_qp's init_attr reports (ibv-core).
  uint32_t max_recv_wr = 0, max_recv_sge = 0;
  bool sq_sig_all = false;
  // UD: the QP's Q_Key (set by ibv_modify_qp with IBV_QP_QKEY). A send WR
  // whose remote_qkey has bit 31 set uses it instead (IBTA 10.2.5 / o10-7.1).
  uint32_t qkey = 0;
  // Created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS: ibv_qp_to_qp_ex returns &qpx.
  bool ex = false;
  WrBatch batch;
};

template <class T>
inline constexpr bool kWraps = std::is_standard_layout_v<T>;
static_assert(kWraps<Context> && kWraps<Pd> && kWraps<Mr> && kWraps<Ah> && kWraps<Srq> &&
              kWraps<Cq> && kWraps<Qp>);

// ---- from the rdma-core pointer a program passes back ----------------------
inline Context* to_ctx(ibv_context* c) {
  return reinterpret_cast<Context*>(reinterpret_cast<uint8_t*>(c) -
                                    offsetof(verbs_context, context));
}
inline Pd* to_pd(ibv_pd* p) { return reinterpret_cast<Pd*>(p); }
inline Mr* to_mr(ibv_mr* m) { return reinterpret_cast<Mr*>(m); }
inline Ah* to_ah(ibv_ah* a) { return reinterpret_cast<Ah*>(a); }
inline Srq* to_srq(ibv_srq* s) { return reinterpret_cast<Srq*>(s); }
inline Cq* to_cq(ibv_cq* c) { return reinterpret_cast<Cq*>(c); }
inline Cq* to_cq(ibv_cq_ex* c) { return reinterpret_cast<Cq*>(c); }
inline Qp* to_qp(ibv_qp* q) { return reinterpret_cast<Qp*>(q); }
inline Qp* to_qp(ibv_qp_ex* q) { return reinterpret_cast<Qp*>(q); }

// Marks ctx.vctx extended (verbs_get_ctx finds it) and sets its size, so
// verbs_get_ctx_op() accepts every op slot of rdma-core 44's verbs_context.
inline void mark_extended(Context& ctx) {
  ctx.vctx.sz = sizeof(verbs_context);
  ctx.vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
}

// ---- data-path init (fast_*.cpp, ibv-fast) -----------------------------------

// Fills the data-path slots of ctx.vctx.context.ops: post_send, post_recv,
// post_srq_recv, poll_cq (req_notify_cq lives with the completion channel
// in ibv-core's files; no other slot is touched), and ctx.model_hca from the
// device's URI (ctx.state->device, when set).
void fill_context_ops(Context& ctx);

// Sets cq.wc_flags and the ibv_cq_ex poll functions (start_poll, next_poll,
// end_poll, read_* for the flags asked for). Call for every CQ (ibv_create_cq
// passes IBV_WC_STANDARD_FLAGS). Returns 0, or EOPNOTSUPP when wc_flags asks
// for a field kbv cannot give (wall-clock timestamps, cvlan, flow tag, tag
// matching): the create must then fail with that errno. Completion
// timestamps are given; the CQ must then be created with
// KBV_CQ_FLAG_COMPLETION_TIMESTAMP (cq.cpp).
int init_cq_ex_ops(Cq& cq, uint64_t wc_flags);

// Sets qp.ex and the ibv_qp_ex wr_* functions for send_ops_flags
// (IBV_QP_EX_WITH_*), and allocates qp.batch from qp.max_send_wr /
// max_send_sge / max_inline_data (fill those first). Call only for a create
// with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS. Returns 0, EOPNOTSUPP (an op the QP
// type cannot carry, which rdma-core's mlx5 refuses at create: RDMA on UD,
// READ/atomics on UC, unknown bits), ENOMEM. Ops kbv lacks (send_inv,
// local_inv, bind_mw, tso, atomic_write) are accepted here and a batch using
// one is refused whole by wr_complete with EOPNOTSUPP.
int init_qp_ex_ops(Qp& qp, uint64_t send_ops_flags);
// Frees what init_qp_ex_ops allocated (safe on a QP it never ran on).
void release_qp_ex(Qp& qp);

}  // namespace kbv::ibverbs

// Exported by ibv-fast's files (ibv-core's version script names it in
// IBVERBS_1.1... as rdma-core's libibverbs.map does):
//   ibv_qp_to_qp_ex (fast_qp_ex.cpp).
