// SPDX-License-Identifier: BSD-3-Clause
//
// SendQueue's post loop (sq.hpp: the WQE format, checks, doorbell and
// completion rules are described there). A header so that a caller with
// its own work-request type (the verbs fast path: kbv_send_wr_t) gets the
// check, the build and the doorbell inlined into its entry point, reading
// its requests through a field adapter (sq.hpp SendWrFields) with no
// intermediate copy. Include it only where post<A>() is instantiated
// (src/hca/dp/sq.cpp, src/verbs/fast_path.cpp).
//
// A WQE is built by composing the dp/wqe.hpp segment setters in the order
// rdma-core's _mlx5_post_send places them: [datagram (UD)] [remote address
// (RDMA, atomics)] [atomic] [data pointers | inline data], then the control
// segment last (the doorbell is what publishes the WQE; writing the control
// segment last only keeps a half-built WQE from looking complete in a dump).
//
// Threading: one thread per SendQueue.
#pragma once

#include <endian.h>
#include <infiniband/mlx5dv.h>

#include <cstddef>
#include <cstdint>

#include "hca/dp/sq.hpp"
#include "hca/dp/wqe.hpp"
#include "hca/prm/qpc.hpp"

namespace kbv::hca {

namespace sq_detail {

// Per WrOpcode value (0..6): the mlx5 opcode (mlx5dv.h MLX5_OPCODE_*;
// docs/PRM.md "Opcodes"), the segments between the control segment and the
// data (1: remote address; 2: remote address + atomic), and whether the
// control segment carries immediate data.
struct OpInfo {
  uint8_t mlx5;
  uint8_t extra;
  bool imm;
};
inline constexpr uint32_t kOpcodes = 7;
inline constexpr OpInfo kOps[kOpcodes] = {
    {MLX5_OPCODE_SEND, 0, false},           // kSend
    {MLX5_OPCODE_SEND_IMM, 0, true},        // kSendImm
    {MLX5_OPCODE_RDMA_WRITE, 1, false},     // kRdmaWrite
    {MLX5_OPCODE_RDMA_WRITE_IMM, 1, true},  // kRdmaWriteImm
    {MLX5_OPCODE_RDMA_READ, 1, false},      // kRdmaRead
    {MLX5_OPCODE_ATOMIC_CS, 2, false},      // kAtomicCs
    {MLX5_OPCODE_ATOMIC_FA, 2, false},      // kAtomicFa
};
static_assert(static_cast<uint32_t>(WrOpcode::kAtomicFa) == kOpcodes - 1);

// Opcodes each transport allows, one bit per WrOpcode value (IBTA 9.7 /
// 10.2.2 operations per service type: UD sends only; UC sends and RDMA
// writes; RC everything).
// (A function, not a variable template: `kAllowed<St> >> op` is read as a
// comparison by clang-format.) Checks op < kOpcodes itself.
template <uint32_t St>
constexpr bool allowed(uint32_t op) {
  constexpr uint32_t mask = St == prm::qpc_st::kUd   ? 0b0000011u
                            : St == prm::qpc_st::kUc ? 0b0001111u
                                                     : 0b1111111u;
  return op < kOpcodes && ((mask >> op) & 1) != 0;
}

// fm_ce_se of the control segment per send_flags & 7 (kSignaled ->
// MLX5_WQE_CTRL_CQ_UPDATE, kSolicited -> MLX5_WQE_CTRL_SOLICITED, kFence ->
// MLX5_WQE_CTRL_FENCE; mlx5dv.h, docs/PRM.md "Data path").
constexpr uint8_t fm_ce_se(uint32_t f) {
  return static_cast<uint8_t>(((f & send_flags::kSignaled) ? MLX5_WQE_CTRL_CQ_UPDATE : 0) |
                              ((f & send_flags::kSolicited) ? MLX5_WQE_CTRL_SOLICITED : 0) |
                              ((f & send_flags::kFence) ? MLX5_WQE_CTRL_FENCE : 0));
}
inline constexpr uint8_t kFmCeSe[8] = {fm_ce_se(0), fm_ce_se(1), fm_ce_se(2), fm_ce_se(3),
                                       fm_ce_se(4), fm_ce_se(5), fm_ce_se(6), fm_ce_se(7)};

}  // namespace sq_detail

template <uint32_t St, class A>
[[gnu::always_inline]] inline kbv_status_t SendQueue::check(const typename A::Wr& wr, const Ah* ah,
                                                            Shape* shape) const {
  using sq_detail::kOps;
  const uint32_t op = A::opcode(wr);
  if (!sq_detail::allowed<St>(op)) return KBV_ERR_INVALID_WR_TYPE;
  const size_t nsge = A::num_sge(wr);
  if (nsge > cfg_.max_sge) return KBV_ERR_TOO_MANY_SGE;
  uint32_t ds = 1 + kOps[op].extra;  // control (+ remote address, atomic)
  if constexpr (St == prm::qpc_st::kUd) {
    if (ah == nullptr || A::remote_qpn(wr) > 0xFFFFFF) return KBV_ERR_INVALID_ARGUMENT;
    ds += 3;  // datagram segment
  }
  const Sge* sg = A::sg(wr);
  const uint32_t flags = A::flags(wr);
  if (kOps[op].extra == 2) [[unlikely]] {
    // IBTA 9.4.5: an atomic operates on 8 bytes; the local SGE receives the
    // original value.
    if ((flags & send_flags::kInline) || nsge != 1 || sg[0].length != 8)
      return KBV_ERR_INVALID_ARGUMENT;
    *shape = Shape{ds + 1, 0};
    return KBV_SUCCESS;
  }
  if (flags & send_flags::kInline) {
    if (op == static_cast<uint32_t>(WrOpcode::kRdmaRead)) return KBV_ERR_INVALID_ARGUMENT;
    uint64_t total = 0;
    for (size_t i = 0; i < nsge; ++i) {
      if (sg[i].length != 0 && sg[i].addr == 0) return KBV_ERR_INVALID_ARGUMENT;
      total += sg[i].length;
    }
    if (total > cfg_.max_inline) return KBV_ERR_INLINE_TOO_LARGE;
    const auto len = static_cast<uint32_t>(total);
    *shape = Shape{ds + wqe::inline_seg_units(len), len};
    return KBV_SUCCESS;
  }
  if (nsge == 1) [[likely]] {
    ds += sg[0].length != 0;
  } else {
    for (size_t i = 0; i < nsge; ++i) ds += sg[i].length != 0;
  }
  *shape = Shape{ds, 0};
  return KBV_SUCCESS;
}

template <uint32_t St, class A>
[[gnu::always_inline]] inline void SendQueue::build(const typename A::Wr& wr, const Ah* ah,
                                                    Shape shape) {
  using sq_detail::kOps;
  const uint32_t pc = pc_;
  const uint32_t op = A::opcode(wr);
  uint32_t u = 1;
  if constexpr (St == prm::qpc_st::kUd) {
    mlx5_wqe_datagram_seg d;
    wqe::set_datagram_seg(&d, ah->av, A::remote_qpn(wr), A::q_key(wr));
    const auto* p = reinterpret_cast<const std::byte*>(&d);
    for (uint32_t k = 0; k < 3; ++k) std::memcpy(unit(pc, u++), p + 16 * k, 16);
  }
  if (kOps[op].extra != 0) {
    wqe::set_raddr_seg(unit(pc, u++), A::remote_addr(wr), A::rkey(wr));
    if (kOps[op].extra == 2)
      wqe::set_atomic_seg(unit(pc, u++), op == static_cast<uint32_t>(WrOpcode::kAtomicCs),
                          A::swap(wr), A::compare_add(wr));
  }
  const Sge* sg = A::sg(wr);
  const size_t nsge = A::num_sge(wr);
  const uint32_t flags = A::flags(wr);
  if (flags & send_flags::kInline) {
    if (shape.inline_len != 0) {
      const size_t start = ((size_t{pc} << 6) + (size_t{u} << 4)) & ring_mask_;
      if (start + wqe::inline_seg_units(shape.inline_len) * 16 <= ring_mask_ + 1) [[likely]]
        wqe::set_inline_data_seg(cfg_.ring + start, sg, nsge, shape.inline_len);
      else
        put_wrapped_inline(start, sg, nsge, shape.inline_len);
    }
  } else if (nsge == 1) [[likely]] {
    if (sg[0].length != 0) wqe::set_data_ptr_seg(unit(pc, u), sg[0].addr, sg[0].length, sg[0].lkey);
  } else {
    for (size_t i = 0; i < nsge; ++i)
      if (sg[i].length != 0)
        wqe::set_data_ptr_seg(unit(pc, u++), sg[i].addr, sg[i].length, sg[i].lkey);
  }
  wqe::set_ctrl_seg(unit(pc, 0), pc, kOps[op].mlx5, cfg_.qpn, shape.ds,
                    sq_detail::kFmCeSe[flags & 7] | ce_all_, kOps[op].imm ? A::imm(wr) : 0);
}

[[gnu::always_inline]] inline void SendQueue::ring_doorbell(uint32_t first_pc, uint32_t n,
                                                            uint32_t last_pc) {
  // WQEs before the record the device may read because of it (rdma-core
  // qp.c _mlx5_post_send; util/udma_barrier.h).
  platform::udma_to_device_barrier();
  platform::dbrec_store(&cfg_.dbrec[1], htobe32(pc_ & 0xFFFF));
  // Record (and WQEs) before the UAR write; also opens the WC sequence.
  platform::mmio_wc_start();
  const uint64_t reg = cfg_.bf_offset + bf_cur_;
  const uint32_t bytes = (pc_ - first_pc) * 64;
  if (n == 1 && (bytes == 64 ? bf_one_ : cfg_.bf_copy && bytes <= bf_half_)) {
    // BlueFlame: the whole WQE through the register (rdma-core mlx5_bf_copy).
    for (uint32_t k = 0; k < bytes / 64; ++k) bar_.bf_copy64(reg + 64 * k, unit(first_pc + k, 0));
  } else {
    // The first 8 bytes of the last control segment (big-endian in memory):
    // opmod_idx_opcode, qpn_ds.
    const auto* c = reinterpret_cast<const uint32_t*>(unit(last_pc, 0));
    bar_.write64_be(reg, uint64_t{be32toh(c[0])} << 32 | be32toh(c[1]));
  }
  // WC buffers out before anything later (rdma-core: mmio_flush_writes
  // before toggling the BlueFlame offset).
  platform::mmio_flush_writes();
  bf_cur_ ^= bf_half_;
}

// The common request shape, built without the general path's per-unit
// ring arithmetic: one SGE, an opcode the QP type allows without an atomic
// segment (SEND*, RDMA_WRITE*, RDMA_READ), on RC or UC (no datagram
// segment), within max_sge; with kInline (not READ), bytes at a non-zero
// address, within max_inline, and few enough that the WQE stays in one
// basic block. Its WQE (control [+ remote address] [+ data pointer | inline
// data]) is at most 64 bytes, so it never leaves its basic block and never
// wraps. Anything else, refusals included, takes the general path.
template <uint32_t St, class A>
[[gnu::always_inline]] inline bool SendQueue::simple(const typename A::Wr& wr) const {
  if constexpr (St == prm::qpc_st::kUd) {
    return false;
  } else {
    const uint32_t op = A::opcode(wr);
    if (A::num_sge(wr) != 1 || cfg_.max_sge == 0 || !sq_detail::allowed<St>(op) ||
        sq_detail::kOps[op].extra >= 2)
      return false;
    if ((A::flags(wr) & send_flags::kInline) == 0) [[likely]]
      return true;
    const Sge& sge = A::sg(wr)[0];
    return op != static_cast<uint32_t>(WrOpcode::kRdmaRead) && sge.length <= cfg_.max_inline &&
           (sge.length == 0 || sge.addr != 0) &&
           1 + sq_detail::kOps[op].extra + wqe::inline_seg_units(sge.length) <= 4;
  }
}

template <class A>
[[gnu::always_inline]] inline void SendQueue::build_simple(const typename A::Wr& wr) {
  using sq_detail::kOps;
  const uint32_t pc = pc_;
  const uint32_t op = A::opcode(wr);
  const uint32_t flags = A::flags(wr);
  const Sge& sge = A::sg(wr)[0];
  std::byte* w = cfg_.ring + (size_t{pc & mask_} << 6);
  uint32_t ds = 1;
  if (kOps[op].extra != 0) wqe::set_raddr_seg(w + 16 * ds++, A::remote_addr(wr), A::rkey(wr));
  if (sge.length != 0) {
    if (flags & send_flags::kInline) {
      wqe::set_inline_data_seg(w + 16 * ds, &sge, 1, sge.length);
      ds += wqe::inline_seg_units(sge.length);
    } else {
      wqe::set_data_ptr_seg(w + 16 * ds++, sge.addr, sge.length, sge.lkey);
    }
  }
  wqe::set_ctrl_seg(w, pc, kOps[op].mlx5, cfg_.qpn, ds, sq_detail::kFmCeSe[flags & 7] | ce_all_,
                    kOps[op].imm ? A::imm(wr) : 0);
  slots_[pc & mask_] = Slot{A::wr_id(wr), pc + 1};
}

template <class A>
[[gnu::always_inline]] inline bool SendQueue::common_shape(const A& a, const typename A::Wr& wr,
                                                           uint8_t simple_ops,
                                                           uint32_t max_inline) {
  // simple_ops is 0 for UD, so prepare() is never asked for an address
  // handle here.
  const uint32_t op = A::opcode(wr);
  if (op >= sq_detail::kOpcodes || ((simple_ops >> op) & 1) == 0 || A::num_sge(wr) != 1)
    return false;
  const Ah* ah = nullptr;
  if (a.template prepare<false>(wr, &ah) != KBV_SUCCESS) return false;
  if (A::flags(wr) & send_flags::kInline) {
    const Sge& sge = A::sg(wr)[0];
    if (op == static_cast<uint32_t>(WrOpcode::kRdmaRead) || sge.length > max_inline ||
        (sge.length != 0 && sge.addr == 0) ||
        1 + sq_detail::kOps[op].extra + wqe::inline_seg_units(sge.length) > 4)
      return false;
  }
  return true;
}

template <class A>
[[gnu::always_inline]] inline uint64_t SendQueue::write_common(std::byte* w, Slot* slot,
                                                               uint32_t pc, uint32_t qpn,
                                                               uint8_t ce_all,
                                                               const typename A::Wr& wr) {
  using sq_detail::kOps;
  const uint32_t op = A::opcode(wr);
  const uint32_t flags = A::flags(wr);
  const uint8_t fm_ce_se = sq_detail::kFmCeSe[flags & 7] | ce_all;
  // The WQE: control [+ remote address] [+ data pointer | inline data].
  const Sge& sge = A::sg(wr)[0];
  uint32_t ds = 1;
  if (kOps[op].extra != 0) wqe::set_raddr_seg(w + 16 * ds++, A::remote_addr(wr), A::rkey(wr));
  if (sge.length != 0) {
    if (flags & send_flags::kInline) {
      wqe::set_inline_data_seg(w + 16 * ds, &sge, 1, sge.length);
      ds += wqe::inline_seg_units(sge.length);
    } else {
      wqe::set_data_ptr_seg(w + 16 * ds++, sge.addr, sge.length, sge.lkey);
    }
  }
  const uint64_t ctrl0 =
      wqe::set_ctrl_seg(w, pc, kOps[op].mlx5, qpn, ds, fm_ce_se, kOps[op].imm ? A::imm(wr) : 0);
  *slot = Slot{A::wr_id(wr), pc + 1};
  return ctrl0;
}

template <class A>
[[gnu::always_inline]] inline bool SendQueue::post_one(const A& a, const typename A::Wr& wr) {
  using sq_detail::kOps;
  // simple<St>() with the QP type's part precomputed (simple_ops_: 0 for
  // UD, so prepare() is never asked for an address handle here).
  const uint32_t op = A::opcode(wr);
  if (op >= sq_detail::kOpcodes || ((simple_ops_ >> op) & 1) == 0 || A::num_sge(wr) != 1)
    return false;
  const Ah* ah = nullptr;
  if (a.template prepare<false>(wr, &ah) != KBV_SUCCESS) return false;
  if (A::flags(wr) & send_flags::kInline) {
    const Sge& sge = A::sg(wr)[0];
    if (op == static_cast<uint32_t>(WrOpcode::kRdmaRead) || sge.length > cfg_.max_inline ||
        (sge.length != 0 && sge.addr == 0) ||
        1 + kOps[op].extra + wqe::inline_seg_units(sge.length) > 4)
      return false;
  }
  const uint32_t pc = pc_;
  if (pc - tail_ > mask_) return false;
  // The WQE is written through std::byte, which may alias any member: what
  // the WQE needs is read first; the doorbell's members are read after it
  // (a load each, no spill), and nothing is recomputed from pc_.
  std::byte* const w = cfg_.ring + (size_t{pc & mask_} << 6);
  Slot* const slot = slots_.data() + (pc & mask_);
  const uint32_t qpn = cfg_.qpn;
  const uint8_t fm_ce_se = sq_detail::kFmCeSe[A::flags(wr) & 7] | ce_all_;
  const uint32_t next = pc + 1;
  pc_ = next;
  // The WQE: control [+ remote address] [+ data pointer | inline data].
  const Sge& sge = A::sg(wr)[0];
  uint32_t ds = 1;
  if (kOps[op].extra != 0) wqe::set_raddr_seg(w + 16 * ds++, A::remote_addr(wr), A::rkey(wr));
  if (sge.length != 0) {
    if (A::flags(wr) & send_flags::kInline) {
      wqe::set_inline_data_seg(w + 16 * ds, &sge, 1, sge.length);
      ds += wqe::inline_seg_units(sge.length);
    } else {
      wqe::set_data_ptr_seg(w + 16 * ds++, sge.addr, sge.length, sge.lkey);
    }
  }
  const uint64_t ctrl0 =
      wqe::set_ctrl_seg(w, pc, kOps[op].mlx5, qpn, ds, fm_ce_se, kOps[op].imm ? A::imm(wr) : 0);
  *slot = Slot{A::wr_id(wr), next};
  // The doorbell (ring_doorbell for one 64-byte WQE).
  platform::udma_to_device_barrier();
  platform::dbrec_store(&cfg_.dbrec[1], htobe32(next & 0xFFFF));
  platform::mmio_wc_start();
  const uint64_t reg = cfg_.bf_offset + bf_cur_;
  if (bf_one_)
    bar_.bf_copy64(reg, w);
  else
    bar_.write64_be(reg, be64toh(ctrl0));  // opmod_idx_opcode, qpn_ds
  platform::mmio_flush_writes();
  bf_cur_ ^= bf_half_;
  return true;
}

template <uint32_t St, class A>
[[gnu::always_inline]] inline kbv_status_t SendQueue::post_wrs(const A& a,
                                                               const typename A::Wr* wrs, size_t n,
                                                               size_t* bad_index) {
  if constexpr (St != prm::qpc_st::kUd) {
    // One request of the common shape with room (the usual post): no loop,
    // so few live registers. Anything else takes the loop below, which
    // repeats prepare() (pure checks for non-UD requests).
    if (n == 1 && post_one(a, wrs[0])) [[likely]]
      return KBV_SUCCESS;
  }
  const uint32_t first = pc_;
  uint32_t last = pc_;
  kbv_status_t s = KBV_SUCCESS;
  size_t i = 0;
  if constexpr (St != prm::qpc_st::kUd) {
    // The leading requests of the common shape with room (a batch): the
    // queue's constants and the producer counter in registers (a WQE store
    // through std::byte would otherwise reload every member), one slot each.
    std::byte* const ring = cfg_.ring;
    Slot* const slots = slots_.data();
    const uint32_t mask = mask_, tail = tail_, qpn = cfg_.qpn, max_inline = cfg_.max_inline;
    const uint8_t ops = simple_ops_, ce_all = ce_all_;
    uint32_t pc = pc_;
    for (; i < n; ++i) {
      const typename A::Wr& wr = wrs[i];
      if (!common_shape(a, wr, ops, max_inline) || pc - tail > mask) break;
      (void)write_common<A>(ring + (size_t{pc & mask} << 6), slots + (pc & mask), pc, qpn, ce_all,
                            wr);
      last = pc++;
    }
    pc_ = pc;
  }
  for (; i < n; ++i) {
    const typename A::Wr& wr = wrs[i];
    const Ah* ah = nullptr;
    s = a.template prepare<St == prm::qpc_st::kUd>(wr, &ah);
    if (s != KBV_SUCCESS) [[unlikely]]
      break;
    if (simple<St, A>(wr)) [[likely]] {
      if (pc_ - tail_ > mask_) [[unlikely]] {
        s = KBV_ERR_QUEUE_FULL;
        break;
      }
      build_simple<A>(wr);
      last = pc_++;
      continue;
    }
    Shape shape{};
    s = check<St, A>(wr, ah, &shape);
    const uint32_t bbs = (shape.ds + 3) / 4;  // 64-byte basic blocks
    if (s == KBV_SUCCESS && (pc_ - tail_) + bbs > mask_ + 1) s = KBV_ERR_QUEUE_FULL;
    if (s != KBV_SUCCESS) [[unlikely]]
      break;
    build<St, A>(wr, ah, shape);
    slots_[pc_ & mask_] = Slot{A::wr_id(wr), pc_ + bbs};
    last = pc_;
    pc_ += bbs;
  }
  if (i) [[likely]]
    ring_doorbell(first, static_cast<uint32_t>(i), last);
  if (i < n) [[unlikely]] {
    if (bad_index) *bad_index = i;
    refused(i, s);
    return s;
  }
  return KBV_SUCCESS;
}

template <class A>
[[gnu::always_inline]] inline kbv_status_t SendQueue::post(const A& a, const typename A::Wr* wrs,
                                                           size_t n, size_t* bad_index) {
  switch (kind_) {
    case Kind::kRc: return post_wrs<prm::qpc_st::kRc>(a, wrs, n, bad_index);
    case Kind::kUc: return post_wrs<prm::qpc_st::kUc>(a, wrs, n, bad_index);
    default: return post_wrs<prm::qpc_st::kUd>(a, wrs, n, bad_index);
  }
}

}  // namespace kbv::hca
