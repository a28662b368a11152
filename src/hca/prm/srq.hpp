// SPDX-License-Identifier: BSD-3-Clause
//
// Shared receive queues: the SRQ context (srqc) and CREATE_SRQ / DESTROY_SRQ /
// QUERY_SRQ (0x700 / 0x701 / 0x702), and ARM_RQ (0x703), which arms the SRQ
// limit event (EQE type 0x14) at a low-watermark.
//
// Source: Linux 6.1 include/linux/mlx5/mlx5_ifc.h, the structures named above
// each table (bit offsets and widths; reserved members are left out); enums
// MLX5_SRQC_STATE_* and MLX5_ARM_RQ_IN_OP_MOD_*; PRM (ConnectX-4 Rev 0.40)
// "SRQ Context", "CREATE_SRQ", "ARM_RQ".
//
// Shapes and units:
//   * log_srq_size: log2(number of receive WQEs); log_rq_stride: log2(WQE
//     size in 16-byte units) (the kernel's srq.c writes wqe_shift - 4);
//   * the WQ buffer is pas[] (64-bit page IOVAs, variable-length tail at byte
//     272) in pages of 2^(log_page_size + 12) bytes (log_page_size is 6 bits
//     here, 5 in cqc/qpc); page_offset in units of page_size / 64;
//   * dbr_addr: IOVA of the doorbell record (its first 32-bit word carries
//     the receive counter);
//   * lwm: low watermark; when fewer WQEs than lwm remain the device raises
//     one SRQ limit event and disarms (arm again with ARM_RQ);
//   * srqc has no user_index (that lives in xrc_srqc / rmpc).
//
// Threading: constants and constexpr tables only.
#pragma once

#include <cstdint>

#include "hca/prm/field.hpp"

namespace kbv::prm {

// srqc.state (mlx5_ifc.h MLX5_SRQC_STATE_*).
namespace srqc_state {
inline constexpr uint32_t kGood = 0x0;
inline constexpr uint32_t kError = 0x1;
}  // namespace srqc_state

// arm_rq_in.op_mod (mlx5_ifc.h MLX5_ARM_RQ_IN_OP_MOD_*).
namespace arm_rq_op_mod {
inline constexpr uint32_t kSrq = 0x1;
inline constexpr uint32_t kXrq = 0x2;
}  // namespace arm_rq_op_mod

// mlx5_ifc.h: struct mlx5_ifc_srqc_bits (0x200 bits, 64 bytes)
struct srqc {
  static constexpr uint32_t kBits = 0x200;
  using F = Field<srqc>;
  // srqc_state
  static constexpr F state{0x0, 4};
  // log2(number of WQEs)
  static constexpr F log_srq_size{0x4, 4};
  // WQE signature (checksum) enable
  static constexpr F wq_signature{0x20, 1};
  static constexpr F cont_srq{0x21, 1};
  // reserved lkey enable
  static constexpr F rlky{0x23, 1};
  // log2(WQE size / 16)
  static constexpr F log_rq_stride{0x25, 3};
  // XRC domain (XRC SRQs only)
  static constexpr F xrcd{0x28, 24};
  // units of page_size / 64
  static constexpr F page_offset{0x40, 6};
  // CQ number
  static constexpr F cqn{0x48, 24};
  // log2(page size) - 12
  static constexpr F log_page_size{0x82, 6};
  // protection domain
  static constexpr F pd{0xc8, 24};
  // limit watermark, WQEs
  static constexpr F lwm{0xe0, 16};
  // WQEs posted (read back)
  static constexpr F wqe_cnt{0xf0, 16};
  // IOVA of the doorbell record
  static constexpr F dbr_addr{0x140, 64};
};
static_assert(srqc::kBits == 0x200 && srqc::kBits / 8 == 64);

// mlx5_ifc.h: struct mlx5_ifc_create_srq_in_bits (0x880 bits, 272 bytes)
struct create_srq_in {
  static constexpr uint32_t kBits = 0x880;
  using F = Field<create_srq_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr Sub<create_srq_in, prm::srqc> srq_context_entry{0x80};
  // variable tail: 64-bit page IOVAs of the WQ buffer
  static constexpr Array<create_srq_in> pas{0x880, 64, 0};
};
static_assert(create_srq_in::kBits == 0x880 && create_srq_in::kBits / 8 == 272);
static_assert(create_srq_in::srq_context_entry.off == 0x80);

// mlx5_ifc.h: struct mlx5_ifc_create_srq_out_bits (0x80 bits, 16 bytes)
struct create_srq_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<create_srq_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  // 24-bit SRQ number
  static constexpr F srqn{0x48, 24};
};
static_assert(create_srq_out::kBits == 0x80 && create_srq_out::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_destroy_srq_in_bits (0x80 bits, 16 bytes)
struct destroy_srq_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<destroy_srq_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  // 24-bit SRQ number
  static constexpr F srqn{0x48, 24};
};
static_assert(destroy_srq_in::kBits == 0x80 && destroy_srq_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_destroy_srq_out_bits (0x80 bits, 16 bytes)
struct destroy_srq_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<destroy_srq_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(destroy_srq_out::kBits == 0x80 && destroy_srq_out::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_query_srq_in_bits (0x80 bits, 16 bytes)
struct query_srq_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_srq_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  // 24-bit SRQ number
  static constexpr F srqn{0x48, 24};
};
static_assert(query_srq_in::kBits == 0x80 && query_srq_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_query_srq_out_bits (0x880 bits, 272 bytes)
struct query_srq_out {
  static constexpr uint32_t kBits = 0x880;
  using F = Field<query_srq_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr Sub<query_srq_out, prm::srqc> srq_context_entry{0x80};
  // variable tail: 64-bit page IOVAs of the WQ buffer
  static constexpr Array<query_srq_out> pas{0x880, 64, 0};
};
static_assert(query_srq_out::kBits == 0x880 && query_srq_out::kBits / 8 == 272);
static_assert(query_srq_out::srq_context_entry.off == 0x80);

// mlx5_ifc.h: struct mlx5_ifc_arm_rq_in_bits (0x80 bits, 16 bytes)
struct arm_rq_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<arm_rq_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  // arm_rq_op_mod
  static constexpr F op_mod{0x30, 16};
  // SRQ number to arm
  static constexpr F srq_number{0x48, 24};
  // limit watermark, WQEs
  static constexpr F lwm{0x70, 16};
};
static_assert(arm_rq_in::kBits == 0x80 && arm_rq_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_arm_rq_out_bits (0x80 bits, 16 bytes)
struct arm_rq_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<arm_rq_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(arm_rq_out::kBits == 0x80 && arm_rq_out::kBits / 8 == 16);

// Key offsets (mlx5_ifc.h; reserved_at_<hex> names confirm the sums).
static_assert(srqc::log_rq_stride.off == 0x25 && srqc::page_offset.off == 0x40);
static_assert(srqc::log_page_size.off == 0x82 && srqc::log_page_size.width == 6);
static_assert(srqc::pd.off == 0xc8 && srqc::lwm.off == 0xe0 && srqc::dbr_addr.off == 0x140);
static_assert(create_srq_in::srq_context_entry.end() == 0x280);
static_assert(create_srq_in::pas.off == create_srq_in::kBits &&
              create_srq_in::pas.byte_off(0) == 272);
static_assert(query_srq_out::pas.byte_off(0) == 272);
static_assert(create_srq_out::srqn.off == 0x48 && destroy_srq_in::srqn.off == 0x48);
static_assert(arm_rq_in::srq_number.off == 0x48 && arm_rq_in::lwm.off == 0x70);

}  // namespace kbv::prm
