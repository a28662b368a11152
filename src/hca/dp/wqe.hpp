// SPDX-License-Identifier: BSD-3-Clause
//
// WQE segments: one small setter per segment of an mlx5 send or receive
// WQE, as rdma-core's mlx5 provider has one per segment (providers/mlx5/
// qp.c set_raddr_seg, set_atomic_seg, set_datagram_seg, set_data_ptr_seg,
// set_data_inl_seg; the control segment is filled in _mlx5_post_send).
// SendQueue / RecvQueue / SrqQueue (sq_post.hpp, rq.hpp) compose them.
//
// Layouts: the structs of rdma-core's mlx5dv.h (installed
// <infiniband/mlx5dv.h>, included, never redefined; docs/PRM.md "Data
// path"); the public PRM (ConnectX-4 Rev 0.40) describes the same segments
// in its "Send WQE" / "Receive WQE" segment tables. Every multi-byte field
// is big-endian; the setters take CPU-order values and swap.
//
// Each setter writes exactly its segment's bytes (reserved bytes zero) at
// `seg`, a 16-byte-aligned unit of the ring; the caller places it (and
// handles the ring wrap for the multi-unit datagram and inline segments).
// The stores are plain: the doorbell path's udma_to_device_barrier() is
// what publishes them (sq.hpp, rq.hpp). No checks: the queues validate a
// request before building it. Threading: none (pure functions).
#pragma once

#include <endian.h>
#include <infiniband/mlx5dv.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kbv::hca::wqe {

static_assert(sizeof(mlx5_wqe_ctrl_seg) == 16, "mlx5dv.h control segment");
static_assert(sizeof(mlx5_wqe_raddr_seg) == 16, "mlx5dv.h remote address segment");
static_assert(sizeof(mlx5_wqe_atomic_seg) == 16, "mlx5dv.h atomic segment");
static_assert(sizeof(mlx5_wqe_datagram_seg) == 48, "mlx5dv.h datagram segment");
static_assert(sizeof(mlx5_wqe_data_seg) == 16, "mlx5dv.h data segment");
static_assert(sizeof(mlx5_wqe_inl_data_seg) == 4, "mlx5dv.h inline data header");
static_assert(MLX5_SEND_WQE_BB == 64, "mlx5dv.h basic block");
static_assert(MLX5_INLINE_SEG == 0x80000000u, "mlx5dv.h inline byte_count flag");
static_assert(MLX5_INVALID_LKEY == 0x100, "mlx5dv.h terminating lkey");

// Control segment, first 16 bytes of every send WQE (mlx5dv.h struct
// mlx5_wqe_ctrl_seg; docs/PRM.md "Data path"; rdma-core qp.c
// _mlx5_post_send): opmod_idx_opcode = wqe_index << 8 | opcode (opmod 0;
// wqe_index = the producer counter in basic blocks, low 16 bits), qpn_ds =
// qpn << 8 | ds (WQE size in 16-byte units, 6 bits), signature 0, fm_ce_se
// (MLX5_WQE_CTRL_FENCE / CQ_UPDATE / SOLICITED), imm (big-endian
// immediate for *_IMM opcodes, else 0).
//
// Stored as two 8-byte words assembled in registers (a struct filled field
// by field went through the stack with narrow stores and a wide reload,
// which stalls store forwarding on x86-64; both supported architectures are
// little-endian, so byte 11 is bits 31:24 of the second word). Returns the
// first word as stored (the 8-byte doorbell's value, big-endian in memory).
static_assert(offsetof(mlx5_wqe_ctrl_seg, opmod_idx_opcode) == 0);
static_assert(offsetof(mlx5_wqe_ctrl_seg, qpn_ds) == 4);
static_assert(offsetof(mlx5_wqe_ctrl_seg, signature) == 8);
static_assert(offsetof(mlx5_wqe_ctrl_seg, fm_ce_se) == 11);
static_assert(offsetof(mlx5_wqe_ctrl_seg, imm) == 12);
static_assert(__BYTE_ORDER == __LITTLE_ENDIAN, "kbv supports little-endian x86-64 and aarch64");
[[gnu::always_inline]] inline uint64_t set_ctrl_seg(void* seg, uint32_t wqe_index, uint8_t opcode,
                                                    uint32_t qpn, uint32_t ds, uint8_t fm_ce_se,
                                                    uint32_t imm) {
  const uint64_t w0 = uint64_t{htobe32((wqe_index & 0xFFFF) << 8 | opcode)} |
                      uint64_t{htobe32(qpn << 8 | ds)} << 32;
  const uint64_t w1 = uint64_t{fm_ce_se} << 24 | uint64_t{htobe32(imm)} << 32;
  std::memcpy(seg, &w0, 8);
  std::memcpy(static_cast<unsigned char*>(seg) + 8, &w1, 8);
  return w0;
}

// Remote address segment of RDMA WRITE/READ and atomics (mlx5dv.h struct
// mlx5_wqe_raddr_seg: raddr, rkey, reserved; rdma-core qp.c set_raddr_seg).
[[gnu::always_inline]] inline void set_raddr_seg(void* seg, uint64_t remote_addr, uint32_t rkey) {
  mlx5_wqe_raddr_seg r;
  r.raddr = htobe64(remote_addr);
  r.rkey = htobe32(rkey);
  r.reserved = 0;
  std::memcpy(seg, &r, sizeof r);
}

// Atomic segment after the remote address segment (mlx5dv.h struct
// mlx5_wqe_atomic_seg: swap_add, compare; rdma-core qp.c set_atomic_seg;
// IBTA 9.4.5): compare-and-swap carries swap and compare; fetch-and-add
// carries the addend in swap_add and compare 0.
[[gnu::always_inline]] inline void set_atomic_seg(void* seg, bool compare_swap, uint64_t swap,
                                                  uint64_t compare_add) {
  mlx5_wqe_atomic_seg a;
  a.swap_add = htobe64(compare_swap ? swap : compare_add);
  a.compare = compare_swap ? htobe64(compare_add) : 0;
  std::memcpy(seg, &a, sizeof a);
}

// Datagram segment of a UD send, 48 bytes (mlx5dv.h struct
// mlx5_wqe_datagram_seg = struct mlx5_wqe_av; rdma-core qp.c
// set_datagram_seg): the address handle's AV with dqp_dct = the
// destination QPN | MLX5_EXTENDED_UD_AV and the request's Q_Key. Written
// into `out` (contiguous); the caller copies its three units into the ring.
[[gnu::always_inline]] inline void set_datagram_seg(mlx5_wqe_datagram_seg* out,
                                                    const mlx5_wqe_av& ah_av, uint32_t remote_qpn,
                                                    uint32_t q_key) {
  out->av = ah_av;
  out->av.dqp_dct = htobe32(remote_qpn | MLX5_EXTENDED_UD_AV);
  out->av.key.qkey.qkey = htobe32(q_key);
}

// Data pointer segment, one per scatter/gather entry of non-zero length
// (mlx5dv.h struct mlx5_wqe_data_seg: byte_count, lkey, addr; rdma-core
// qp.c set_data_ptr_seg; a byte_count of 0 would mean 2 GiB, so callers
// skip empty entries, as rdma-core does).
[[gnu::always_inline]] inline void set_data_ptr_seg(void* seg, uint64_t addr, uint32_t length,
                                                    uint32_t lkey) {
  mlx5_wqe_data_seg d;
  d.byte_count = htobe32(length);
  d.lkey = htobe32(lkey);
  d.addr = htobe64(addr);
  std::memcpy(seg, &d, sizeof d);
}

// The segment that ends a receive WQE's scatter list when it does not fill
// its slot (rdma-core qp.c mlx5_post_recv / srq.c: byte_count 0, lkey
// MLX5_INVALID_LKEY, addr 0).
[[gnu::always_inline]] inline void set_data_ptr_end_seg(void* seg) {
  set_data_ptr_seg(seg, 0, 0, MLX5_INVALID_LKEY);
}

// Inline data segment (mlx5dv.h struct mlx5_wqe_inl_data_seg: byte_count
// = total | MLX5_INLINE_SEG, then the bytes; rdma-core qp.c
// set_data_inl_seg): the 4-byte header, the gathered bytes, zero padding to
// the next 16-byte unit. Its size in 16-byte units (0 for no bytes: no
// segment at all).
constexpr uint32_t inline_seg_units(uint32_t total) { return total ? (4 + total + 15) / 16 : 0; }

// Copies n bytes without a call for the small sizes inline data has
// (overlapping 16/8/4-byte moves; never reads or writes outside [src,
// src + n) / [dst, dst + n)); memcpy above 64.
template <size_t W>
[[gnu::always_inline]] inline void move_bytes(std::byte* dst, const std::byte* src) {
  unsigned char t[W];
  std::memcpy(t, src, W);
  std::memcpy(dst, t, W);
}
[[gnu::always_inline]] inline void copy_small(std::byte* dst, const std::byte* src, size_t n) {
  if (n >= 16) {
    if (n > 64) {
      std::memcpy(dst, src, n);
      return;
    }
    for (size_t at = 0; at + 16 < n; at += 16) move_bytes<16>(dst + at, src + at);
    move_bytes<16>(dst + n - 16, src + n - 16);
  } else if (n >= 8) {
    move_bytes<8>(dst, src);
    move_bytes<8>(dst + n - 8, src + n - 8);
  } else if (n >= 4) {
    move_bytes<4>(dst, src);
    move_bytes<4>(dst + n - 4, src + n - 4);
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = src[i];
  }
}

// Writes the inline segment for `total` bytes gathered from the n entries
// (addr = CPU address, length) of sg at `seg`, which has room for all of
// inline_seg_units(total) units (no ring wrap: the caller builds a
// wrapping segment elsewhere and copies it). The last unit is zeroed first,
// so the padding after the bytes is zero. Nothing for total 0.
template <class SgeT>
[[gnu::always_inline]] inline void set_inline_data_seg(std::byte* seg, const SgeT* sg, size_t n,
                                                       uint32_t total) {
  if (total == 0) return;
  const size_t last = (size_t{total} + 4 - 1) / 16;  // the last unit
  std::memset(seg + last * 16, 0, 16);
  const uint32_t hdr = htobe32(total | MLX5_INLINE_SEG);
  std::memcpy(seg, &hdr, 4);
  std::byte* at = seg + 4;
  for (size_t i = 0; i < n; ++i) {
    const size_t len = sg[i].length;
    copy_small(at, reinterpret_cast<const std::byte*>(static_cast<uintptr_t>(sg[i].addr)), len);
    at += len;
  }
}

}  // namespace kbv::hca::wqe
