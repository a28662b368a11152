// SPDX-License-Identifier: BSD-3-Clause
// Generic firmware command input/output headers.
// Source: kernel include/linux/mlx5/mlx5_ifc.h, struct mlx5_ifc_mbox_in_bits
// and struct mlx5_ifc_mbox_out_bits; PRM "Command Interface" (every command's
// input starts with opcode/uid/op_mod, every output with status/syndrome).
#pragma once

#include "hca/prm/field.hpp"

namespace kbv::prm {

// mlx5_ifc.h: mlx5_ifc_mbox_in_bits (0x80 bits)
struct mbox_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<mbox_in>;
  static constexpr F opcode{0x00, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
};
static_assert(mbox_in::kBits / 8 == 16);
static_assert(mbox_in::op_mod.off == 0x30);

// mlx5_ifc.h: mlx5_ifc_mbox_out_bits (0x80 bits)
struct mbox_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<mbox_out>;
  static constexpr F status{0x00, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(mbox_out::kBits / 8 == 16);
static_assert(mbox_out::syndrome.off == 0x20);

}  // namespace kbv::prm
