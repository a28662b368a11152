// SPDX-License-Identifier: BSD-3-Clause
//
// UAR (user access region) commands and the UAR page layout: ALLOC_UAR,
// DEALLOC_UAR, and the doorbell offsets inside a UAR page.
//
// Sources: kernel include/linux/mlx5/mlx5_ifc.h, struct
// mlx5_ifc_alloc_uar_in/out_bits and mlx5_ifc_dealloc_uar_in/out_bits;
// include/linux/mlx5/doorbell.h (MLX5_CQ_DOORBELL 0x20, MLX5_BF_OFFSET 0x800);
// include/linux/mlx5/device.h (MLX5_ADAPTER_PAGE_SHIFT 12, MLX5_BFREGS_PER_UAR 4);
// drivers/net/ethernet/mellanox/mlx5/core/lib/eq.h (EQ doorbell at 0x40/0x48);
// docs/PRM.md "Data path" (UAR page n at BAR0 + n * 4096).
//
// Threading: layouts and constants only.
#pragma once

#include <cstdint>

#include "hca/prm/field.hpp"

namespace kbv::prm {

// mlx5_ifc.h mlx5_ifc_alloc_uar_in_bits (16 B).
struct alloc_uar_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<alloc_uar_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
};
static_assert(alloc_uar_in::kBits / 8 == 16);

// mlx5_ifc.h mlx5_ifc_alloc_uar_out_bits (16 B): uar = the UAR page index.
struct alloc_uar_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<alloc_uar_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr F uar{0x48, 24};
};
static_assert(alloc_uar_out::kBits / 8 == 16);
static_assert(alloc_uar_out::uar.off / 32 * 4 == 8 && alloc_uar_out::uar.end() == 0x60);

// mlx5_ifc.h mlx5_ifc_dealloc_uar_in_bits (16 B).
struct dealloc_uar_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<dealloc_uar_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F uar{0x48, 24};
};
static_assert(dealloc_uar_in::kBits / 8 == 16);
static_assert(dealloc_uar_in::uar.end() == 0x60);

// mlx5_ifc.h mlx5_ifc_dealloc_uar_out_bits (16 B).
struct dealloc_uar_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<dealloc_uar_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(dealloc_uar_out::kBits / 8 == 16);

// UAR pages are 4 KiB (MLX5_ADAPTER_PAGE_SHIFT); page n is at BAR0 + n * 4096
// (when cmd_hca_cap.uar_4k is set the device may pack several per system page).
inline constexpr uint32_t kUarPageShift = 12;
inline constexpr uint32_t kUarPageSize = 1u << kUarPageShift;
constexpr uint64_t uar_page_offset(uint32_t uar) { return uint64_t{uar} << kUarPageShift; }

// Offsets inside a UAR page.
inline constexpr uint32_t kUarCqDoorbellOff = 0x20;     // 64-bit CQ arm doorbell
inline constexpr uint32_t kUarEqDoorbellArmOff = 0x40;  // EQ: update ci and arm
inline constexpr uint32_t kUarEqDoorbellOff = 0x48;     // EQ: update ci only
inline constexpr uint32_t kUarBlueflameOff = 0x800;     // first BlueFlame register
inline constexpr uint32_t kBfRegsPerUar = 4;            // device.h MLX5_BFREGS_PER_UAR

// The page index and the offset inside the page of a BAR0 offset.
constexpr uint32_t uar_page_of(uint64_t bar_offset) {
  return static_cast<uint32_t>(bar_offset >> kUarPageShift);
}
constexpr uint32_t uar_offset_in_page(uint64_t bar_offset) {
  return static_cast<uint32_t>(bar_offset & (kUarPageSize - 1));
}

// BlueFlame register i of a UAR page is 1 << cmd_hca_cap.log_bf_reg_size
// bytes at kUarBlueflameOff + i * size (kernel MLX5_BF_OFFSET, rdma-core mlx5
// bf_reg_size). A driver uses each register in two halves, alternating after
// every post (rdma-core mlx5: bf->buf_size = size / 2, bf->offset ^=
// buf_size), so a WQE's first 8 bytes land at the start of a half.
constexpr uint32_t uar_bf_offset(uint32_t bf_index, uint32_t log_bf_reg_size) {
  return kUarBlueflameOff + (bf_index << log_bf_reg_size);
}
constexpr uint32_t uar_bf_half_size(uint32_t log_bf_reg_size) {
  return (1u << log_bf_reg_size) / 2;
}
static_assert(uar_bf_offset(0, 9) == 0x800 && uar_bf_offset(3, 9) == 0xE00);
static_assert(uar_bf_offset(0, 9) + uar_bf_half_size(9) == 0x900);
static_assert(uar_offset_in_page(5 * 4096 + 0x20) == kUarCqDoorbellOff &&
              uar_page_of(5 * 4096 + 0x20) == 5);

}  // namespace kbv::prm
