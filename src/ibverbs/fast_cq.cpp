// SPDX-License-Identifier: BSD-3-Clause
//
// Completions: ctx->ops.poll_cq (verbs.h's inline ibv_poll_cq) and the
// ibv_cq_ex poll functions (ibv_start_poll / ibv_next_poll / ibv_end_poll
// and the ibv_wc_read_* readers; rdma-core 44 verbs.h, ibv_create_cq_ex(3)).
// Both read kbv_poll_cq and convert with fast_path.hpp's rules; no lock, no
// allocation, no copy beyond the conversion.
//
// On a model HCA (Context::model_hca) every 64th poll of a CQ that finds
// nothing calls sched_yield(): the model's engine and port threads are this
// machine's threads, and a program that busy-polls (perftest does, as it
// would on silicon) on few cores would otherwise keep them from running, so
// its completions come a scheduler slice late (kbv-perf relaxes the same
// way). Silicon (vfio:) devices never yield.
//
// ibv_cq_ex: start_poll returns ENOENT when the CQ is empty (EINVAL for a
// non-zero attr->comp_mask, as rdma-core's mlx5), else makes the oldest
// completion current (cq->wr_id, cq->status set); next_poll advances
// (ENOENT when none is left); end_poll ends the batch. The completion a
// start/next_poll made current is consumed from kbv's CQ when it is read,
// one at a time, so nothing is held back between polls and ibv_poll_cq on
// the same CQ sees what follows. A CQ created with
// IBV_WC_EX_WITH_COMPLETION_TIMESTAMP is read through kbv_poll_cq_ts
// instead (its own start/next_poll, chosen at create), and
// ibv_wc_read_completion_ts returns the current completion's CQE timestamp
// in raw ticks of the HCA's free-running clock (hca_core_clock kHz).
#include <errno.h>
#include <infiniband/verbs.h>
#include <sched.h>

#include <kbv/kbv.h>

#include <cstring>

#include "ibverbs/fast_path.hpp"
#include "ibverbs/objects.hpp"

namespace kbv::ibverbs {

// kbv_wc_t and ibv_wc have the same size: kbv fills the program's array and
// each entry is converted in place (through a local copy).
static_assert(sizeof(kbv_wc_t) == sizeof(ibv_wc));

namespace {
// A poll of cq found nothing (see the header).
inline void idle(Cq& cq) {
  if ((++cq.empty_polls & 63) == 0 && to_ctx(cq.cqx.context)->model_hca) sched_yield();
}
}  // namespace

int poll_cq(ibv_cq* ibcq, int num_entries, ibv_wc* wc) {
  if (num_entries <= 0) [[unlikely]]
    return 0;
  const int got = kbv_poll_cq(to_cq(ibcq)->handle, reinterpret_cast<kbv_wc_t*>(wc),
                              static_cast<uint32_t>(num_entries));
  // ibv_poll_cq(3): a negative value on failure.
  if (got <= 0) [[unlikely]] {
    if (got == 0) {
      idle(*to_cq(ibcq));
      return 0;
    }
    return -post_errno(static_cast<kbv_status_t>(got));
  }
  for (int i = 0; i < got; ++i) {
    kbv_wc_t k;
    std::memcpy(&k, &wc[i], sizeof k);
    to_ibv_wc(k, wc[i]);
  }
  return got;
}

namespace {

// The ibv_cq_ex callbacks. cq.cur is the current completion.
int take(Cq& cq) {
  const int got = kbv_poll_cq(cq.handle, &cq.cur, 1);
  if (got == 0) {
    idle(cq);
    return ENOENT;
  }
  if (got < 0) [[unlikely]]
    return post_errno(static_cast<kbv_status_t>(got));
  cq.cqx.wr_id = cq.cur.wr_id;
  cq.cqx.status = wc_status(cq.cur.status);
  return 0;
}

// take() for a CQ created with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP: the
// completion and its CQE timestamp (kbv_poll_cq_ts) into cq.cur / cq.cur_ts.
int take_ts(Cq& cq) {
  const int got = kbv_poll_cq_ts(cq.handle, &cq.cur, &cq.cur_ts, 1);
  if (got == 0) {
    idle(cq);
    return ENOENT;
  }
  if (got < 0) [[unlikely]]
    return post_errno(static_cast<kbv_status_t>(got));
  cq.cqx.wr_id = cq.cur.wr_id;
  cq.cqx.status = wc_status(cq.cur.status);
  return 0;
}

int start_poll(ibv_cq_ex* c, ibv_poll_cq_attr* attr) {
  if (attr != nullptr && attr->comp_mask != 0) [[unlikely]]
    return EINVAL;
  return take(*to_cq(c));
}
int next_poll(ibv_cq_ex* c) { return take(*to_cq(c)); }
int start_poll_ts(ibv_cq_ex* c, ibv_poll_cq_attr* attr) {
  if (attr != nullptr && attr->comp_mask != 0) [[unlikely]]
    return EINVAL;
  return take_ts(*to_cq(c));
}
int next_poll_ts(ibv_cq_ex* c) { return take_ts(*to_cq(c)); }
void end_poll(ibv_cq_ex*) {}

const kbv_wc_t& cur(ibv_cq_ex* c) { return to_cq(c)->cur; }

ibv_wc_opcode read_opcode(ibv_cq_ex* c) { return wc_opcode(cur(c).opcode); }
uint32_t read_vendor_err(ibv_cq_ex* c) { return cur(c).vendor_err; }
uint32_t read_byte_len(ibv_cq_ex* c) { return cur(c).byte_len; }
// rdma-core's mlx5 returns the invalidated rkey in CPU order through the same
// reader (ibv_wc_read_invalidated_rkey casts it back).
__be32 read_imm_data(ibv_cq_ex* c) {
  const kbv_wc_t& k = cur(c);
  return (k.flags & KBV_WC_WITH_INV) ? static_cast<__be32>(k.imm) : htobe32(k.imm);
}
uint32_t read_qp_num(ibv_cq_ex* c) { return cur(c).qp_num; }
uint32_t read_src_qp(ibv_cq_ex* c) { return is_recv(cur(c).opcode) ? cur(c).src_qp : 0; }
unsigned int read_wc_flags(ibv_cq_ex* c) { return wc_flags(cur(c).flags); }
uint32_t read_slid(ibv_cq_ex* c) { return is_recv(cur(c).opcode) ? cur(c).slid : 0; }
uint8_t read_sl(ibv_cq_ex* c) { return is_recv(cur(c).opcode) ? wc_sl(cur(c)) : 0; }
uint8_t read_dlid_path_bits(ibv_cq_ex*) { return 0; }
// The CQE's timestamp in raw device clock ticks, as rdma-core's mlx5
// (mlx5_cq_read_wc_completion_ts: be64toh(cqe64->timestamp)).
uint64_t read_completion_ts(ibv_cq_ex* c) { return to_cq(c)->cur_ts; }

// What kbv can give: the standard fields and the completion timestamp (on
// a device with KBV_DEVICE_CAP_COMPLETION_TIMESTAMP; the create fails with
// EOPNOTSUPP otherwise). Wall-clock timestamps (no real-time clock), cvlan,
// flow tag and tag matching are not.
constexpr uint64_t kSupportedWcFlags =
    uint64_t{IBV_WC_STANDARD_FLAGS} | uint64_t{IBV_WC_EX_WITH_COMPLETION_TIMESTAMP};

}  // namespace

int init_cq_ex_ops(Cq& cq, uint64_t flags) {
  if (flags & ~kSupportedWcFlags) return EOPNOTSUPP;
  cq.wc_flags = flags;
  ibv_cq_ex& x = cq.cqx;
  const bool ts = (flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) != 0;
  x.start_poll = ts ? start_poll_ts : start_poll;
  x.next_poll = ts ? next_poll_ts : next_poll;
  x.end_poll = end_poll;
  x.read_opcode = read_opcode;
  x.read_vendor_err = read_vendor_err;
  x.read_wc_flags = read_wc_flags;
  x.read_byte_len = (flags & IBV_WC_EX_WITH_BYTE_LEN) ? read_byte_len : nullptr;
  x.read_imm_data = (flags & IBV_WC_EX_WITH_IMM) ? read_imm_data : nullptr;
  x.read_qp_num = (flags & IBV_WC_EX_WITH_QP_NUM) ? read_qp_num : nullptr;
  x.read_src_qp = (flags & IBV_WC_EX_WITH_SRC_QP) ? read_src_qp : nullptr;
  x.read_slid = (flags & IBV_WC_EX_WITH_SLID) ? read_slid : nullptr;
  x.read_sl = (flags & IBV_WC_EX_WITH_SL) ? read_sl : nullptr;
  x.read_dlid_path_bits = (flags & IBV_WC_EX_WITH_DLID_PATH_BITS) ? read_dlid_path_bits : nullptr;
  x.read_completion_ts = ts ? read_completion_ts : nullptr;
  x.read_cvlan = nullptr;
  x.read_flow_tag = nullptr;
  x.read_tm_info = nullptr;
  x.read_completion_wallclock_ns = nullptr;
  return 0;
}

}  // namespace kbv::ibverbs
