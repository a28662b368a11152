// SPDX-License-Identifier: BSD-3-Clause
//
// Completion queues: the CQ context (cqc) and CREATE_CQ / DESTROY_CQ /
// QUERY_CQ / MODIFY_CQ (0x400 .. 0x403), with the cqc status, arm state and
// moderation constants and MODIFY_CQ's op_mod and field-select bits.
//
// Source: Linux 6.1 include/linux/mlx5/mlx5_ifc.h, the structures named above
// each table (bit offsets and widths; reserved members are left out); enums
// MLX5_CQC_STATUS_*, MLX5_CQC_CQE_SZ_*, MLX5_CQC_ST_*, MLX5_CQ_PERIOD_MODE_*,
// MLX5_MODIFY_CQ_IN_OP_MOD_*, MLX5_MODIFY_FIELD_SELECT_MODIFY_FIELD_SELECT_*,
// MLX5_RESIZE_FIELD_SELECT_RESIZE_FIELD_SELECT_*; include/linux/mlx5/device.h
// MLX5_CQ_STATE_*; PRM (ConnectX-4 Rev 0.40) "Completion Queue Context",
// "CREATE_CQ", "MODIFY_CQ".
//
// Shapes and units:
//   * log_cq_size is log2 of the number of CQEs; cqe_sz selects 64- or 128-byte
//     CQEs (cqe_sz_* below);
//   * the CQ buffer is described by pas[] (64-bit page IOVAs, variable-length
//     tail at byte 272 of create_cq_in / modify_cq_in / query_cq_out) in pages
//     of 2^(log_page_size + 12) bytes (the kernel writes page_shift -
//     MLX5_ADAPTER_PAGE_SHIFT); page_offset is where the buffer starts inside
//     its first page, in units of page_size / 64 (the kernel's mlx5_ib
//     quantizes it with scale 64); page-aligned buffers use 0;
//   * dbr_addr is the IOVA of the 8-byte CQ doorbell record;
//   * uar_page is the UAR index whose 0x20 doorbell arms this CQ; c_eqn the EQ
//     that receives its completion events;
//   * cq_period is in microseconds, cq_max_count in CQEs (event moderation).
//
// Threading: constants and constexpr tables only.
#pragma once

#include <cstdint>

#include "hca/prm/field.hpp"

namespace kbv::prm {

// cqc.status (mlx5_ifc.h MLX5_CQC_STATUS_*).
namespace cqc_status {
inline constexpr uint32_t kOk = 0x0;
inline constexpr uint32_t kCqOverflow = 0x9;
inline constexpr uint32_t kCqWriteFail = 0xa;
}  // namespace cqc_status

// cqc.cqe_sz (mlx5_ifc.h MLX5_CQC_CQE_SZ_*).
namespace cqc_cqe_sz {
inline constexpr uint32_t k64Bytes = 0x0;
inline constexpr uint32_t k128Bytes = 0x1;
}  // namespace cqc_cqe_sz

// cqc.st, the arm state (mlx5_ifc.h MLX5_CQC_ST_*; device.h MLX5_CQ_STATE_*
// adds ALWAYS_ARMED).
namespace cqc_st {
inline constexpr uint32_t kSolicitedNotificationRequestArmed = 0x6;
inline constexpr uint32_t kNotificationRequestArmed = 0x9;
inline constexpr uint32_t kFired = 0xa;
inline constexpr uint32_t kAlwaysArmed = 0xb;
}  // namespace cqc_st

// cqc.cq_period_mode (mlx5_ifc.h MLX5_CQ_PERIOD_MODE_*): the moderation timer
// restarts on each event (EQE) or on each CQE.
namespace cq_period_mode {
inline constexpr uint32_t kStartFromEqe = 0x0;
inline constexpr uint32_t kStartFromCqe = 0x1;
}  // namespace cq_period_mode

// modify_cq_in.op_mod (mlx5_ifc.h MLX5_MODIFY_CQ_IN_OP_MOD_*).
namespace modify_cq_op_mod {
inline constexpr uint32_t kModifyCq = 0x0;  // moderation / EQ: modify_field_select
inline constexpr uint32_t kResizeCq = 0x1;  // new buffer: resize_field_select + pas
}  // namespace modify_cq_op_mod

// modify_cq_in.modify_field_select bits when op_mod = kModifyCq
// (mlx5_ifc.h MLX5_MODIFY_FIELD_SELECT_MODIFY_FIELD_SELECT_*).
namespace modify_cq_field_select {
inline constexpr uint32_t kCqPeriod = 0x1;
inline constexpr uint32_t kCqMaxCount = 0x2;
inline constexpr uint32_t kOi = 0x4;
inline constexpr uint32_t kCEqn = 0x8;
}  // namespace modify_cq_field_select

// modify_cq_in.resize_field_select bits when op_mod = kResizeCq
// (mlx5_ifc.h MLX5_RESIZE_FIELD_SELECT_RESIZE_FIELD_SELECT_*).
namespace resize_cq_field_select {
inline constexpr uint32_t kLogCqSize = 0x1;
inline constexpr uint32_t kPageOffset = 0x2;
inline constexpr uint32_t kLogPageSize = 0x4;
}  // namespace resize_cq_field_select

// mlx5_ifc.h: struct mlx5_ifc_cqc_bits (0x200 bits, 64 bytes)
struct cqc {
  static constexpr uint32_t kBits = 0x200;
  using F = Field<cqc>;
  // cqc_status
  static constexpr F status{0x0, 4};
  static constexpr F dbr_umem_valid{0x6, 1};
  static constexpr F apu_cq{0x7, 1};
  // DEVX umem holding the doorbell record when dbr_umem_valid (dbr_addr is
  // then a byte offset into it). Linux 6.1 leaves these bits reserved
  // (reserved_at_20); DPDK drivers/common/mlx5/mlx5_prm.h cqc_bits names them.
  static constexpr F dbr_umem_id{0x20, 32};
  // cqc_cqe_sz
  static constexpr F cqe_sz{0x8, 3};
  // collapsed CQ: every CQE is written to entry 0
  static constexpr F cc{0xb, 1};
  static constexpr F scqe_break_moderation_en{0xd, 1};
  // overrun ignore: no CQ-error event when the CQ overflows
  static constexpr F oi{0xe, 1};
  // cq_period_mode
  static constexpr F cq_period_mode{0xf, 2};
  // CQE compression enable
  static constexpr F cqe_comp_en{0x11, 1};
  static constexpr F mini_cqe_res_format{0x12, 2};
  // arm state, cqc_st
  static constexpr F st{0x14, 4};
  static constexpr F cqe_compression_layout{0x1e, 2};
  // start of the buffer inside its first page, units of page_size / 64
  static constexpr F page_offset{0x54, 6};
  // log2(number of CQEs)
  static constexpr F log_cq_size{0x63, 5};
  // UAR index used to arm the CQ
  static constexpr F uar_page{0x68, 24};
  // moderation period, microseconds
  static constexpr F cq_period{0x84, 12};
  // moderation count, CQEs
  static constexpr F cq_max_count{0x90, 16};
  // EQ number for completion events. Linux 6.1 names the whole dword
  // c_eqn_or_apu_element; older mlx5_ifc.h had an 8-bit c_eqn in its low byte.
  // c_eqn is the same 32 bits so EQ numbers above 255 are not truncated.
  static constexpr F c_eqn_or_apu_element{0xa0, 32};
  static constexpr F c_eqn{0xa0, 32};
  // log2(page size) - 12 (PRM: 4 KiB units)
  static constexpr F log_page_size{0xc3, 5};
  static constexpr F last_notified_index{0x108, 24};
  static constexpr F last_solicit_index{0x128, 24};
  // CQEs consumed (mirrors the doorbell record)
  static constexpr F consumer_counter{0x148, 24};
  // CQEs written
  static constexpr F producer_counter{0x168, 24};
  // IOVA of the 8-byte doorbell record
  static constexpr F dbr_addr{0x1c0, 64};
};
static_assert(cqc::kBits == 0x200 && cqc::kBits / 8 == 64);

// mlx5_ifc.h: struct mlx5_ifc_create_cq_in_bits (0x880 bits, 272 bytes)
struct create_cq_in {
  static constexpr uint32_t kBits = 0x880;
  using F = Field<create_cq_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr Sub<create_cq_in, prm::cqc> cq_context{0x80};
  // DEVX umem placement of the CQ buffer. Linux 6.1 leaves bits 0x280-0x2df
  // reserved; rdma-core and DPDK (drivers/common/mlx5/mlx5_prm.h) name them.
  // Unused by a VFIO driver (cq_umem_valid = 0 selects pas[]).
  static constexpr F cq_umem_offset{0x280, 64};
  static constexpr F cq_umem_id{0x2c0, 32};
  // 1: the buffer is a DEVX umem, pas[] is not used
  static constexpr F cq_umem_valid{0x2e0, 1};
  // variable tail: 64-bit page IOVAs of the CQ buffer
  static constexpr Array<create_cq_in> pas{0x880, 64, 0};
};
static_assert(create_cq_in::kBits == 0x880 && create_cq_in::kBits / 8 == 272);
static_assert(create_cq_in::cq_context.off == 0x80);

// mlx5_ifc.h: struct mlx5_ifc_create_cq_out_bits (0x80 bits, 16 bytes)
struct create_cq_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<create_cq_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr F cqn{0x48, 24};
};
static_assert(create_cq_out::kBits == 0x80 && create_cq_out::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_destroy_cq_in_bits (0x80 bits, 16 bytes)
struct destroy_cq_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<destroy_cq_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F cqn{0x48, 24};
};
static_assert(destroy_cq_in::kBits == 0x80 && destroy_cq_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_destroy_cq_out_bits (0x80 bits, 16 bytes)
struct destroy_cq_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<destroy_cq_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(destroy_cq_out::kBits == 0x80 && destroy_cq_out::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_query_cq_in_bits (0x80 bits, 16 bytes)
struct query_cq_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_cq_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F cqn{0x48, 24};
};
static_assert(query_cq_in::kBits == 0x80 && query_cq_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_query_cq_out_bits (0x880 bits, 272 bytes)
struct query_cq_out {
  static constexpr uint32_t kBits = 0x880;
  using F = Field<query_cq_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr Sub<query_cq_out, prm::cqc> cq_context{0x80};
  // variable tail: 64-bit page IOVAs of the CQ buffer
  static constexpr Array<query_cq_out> pas{0x880, 64, 0};
};
static_assert(query_cq_out::kBits == 0x880 && query_cq_out::kBits / 8 == 272);
static_assert(query_cq_out::cq_context.off == 0x80);

// mlx5_ifc.h: struct mlx5_ifc_modify_cq_in_bits (0x880 bits, 272 bytes)
struct modify_cq_in {
  static constexpr uint32_t kBits = 0x880;
  using F = Field<modify_cq_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F cqn{0x48, 24};
  // mlx5_ifc.h union modify_field_select_resize_field_select (dword 3): read
  // as modify_field_select when op_mod = kModifyCq, resize_field_select when
  // op_mod = kResizeCq.
  static constexpr F modify_field_select{0x60, 32};
  static constexpr F resize_field_select{0x60, 32};
  static constexpr Sub<modify_cq_in, prm::cqc> cq_context{0x80};
  static constexpr F cq_umem_valid{0x2e0, 1};
  // variable tail (resize): 64-bit page IOVAs of the new buffer
  static constexpr Array<modify_cq_in> pas{0x880, 64, 0};
};
static_assert(modify_cq_in::kBits == 0x880 && modify_cq_in::kBits / 8 == 272);
static_assert(modify_cq_in::cq_context.off == 0x80);

// mlx5_ifc.h: struct mlx5_ifc_modify_cq_out_bits (0x80 bits, 16 bytes)
struct modify_cq_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<modify_cq_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(modify_cq_out::kBits == 0x80 && modify_cq_out::kBits / 8 == 16);

// Key offsets (mlx5_ifc.h; reserved_at_<hex> names confirm the sums).
static_assert(cqc::log_cq_size.off == 0x63 && cqc::uar_page.off == 0x68);
static_assert(cqc::c_eqn.off == 0xa0 && cqc::log_page_size.off == 0xc3);
static_assert(cqc::consumer_counter.off == 0x148 && cqc::dbr_addr.off == 0x1c0);
static_assert(create_cq_in::cq_context.end() == 0x280 && create_cq_in::cq_umem_offset.off == 0x280);
static_assert(create_cq_in::cq_umem_id.off == 0x2c0 && create_cq_in::cq_umem_valid.off == 0x2e0);
static_assert(create_cq_in::pas.off == create_cq_in::kBits && create_cq_in::pas.byte_off(0) == 272);
static_assert(query_cq_out::pas.byte_off(0) == 272 && modify_cq_in::pas.byte_off(0) == 272);
static_assert(modify_cq_in::cqn.off == 0x48 && modify_cq_in::cq_context.off == 0x80);
static_assert(create_cq_out::cqn.off == 0x48);

}  // namespace kbv::prm
