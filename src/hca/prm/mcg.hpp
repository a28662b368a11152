// SPDX-License-Identifier: BSD-3-Clause
//
// Multicast group membership: ATTACH_TO_MCG / DETACH_FROM_MCG (0x806 / 0x807)
// attach a UD QP to (or detach it from) a multicast GID.
//
// Source: Linux 6.1 include/linux/mlx5/mlx5_ifc.h, the structures named above
// each table (bit offsets and widths; reserved members are left out); PRM
// (ConnectX-4 Rev 0.40) "ATTACH_TO_MCG".
//
// Shapes: qpn is the 24-bit QP number; multicast_gid is the 16-byte GID in
// network byte order at byte 16 (for RoCE an IPv4-mapped or IPv6 multicast
// address).
//
// Threading: constants and constexpr tables only.
#pragma once

#include <cstdint>

#include "hca/prm/field.hpp"

namespace kbv::prm {

// mlx5_ifc.h: struct mlx5_ifc_attach_to_mcg_in_bits (0x100 bits, 32 bytes)
struct attach_to_mcg_in {
  static constexpr uint32_t kBits = 0x100;
  using F = Field<attach_to_mcg_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  // 24-bit QP number
  static constexpr F qpn{0x48, 24};
  // 16 bytes, network order
  static constexpr Bytes<attach_to_mcg_in> multicast_gid{0x80, 128};
};
static_assert(attach_to_mcg_in::kBits == 0x100 && attach_to_mcg_in::kBits / 8 == 32);

// mlx5_ifc.h: struct mlx5_ifc_attach_to_mcg_out_bits (0x80 bits, 16 bytes)
struct attach_to_mcg_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<attach_to_mcg_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(attach_to_mcg_out::kBits == 0x80 && attach_to_mcg_out::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_detach_from_mcg_in_bits (0x100 bits, 32 bytes)
struct detach_from_mcg_in {
  static constexpr uint32_t kBits = 0x100;
  using F = Field<detach_from_mcg_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  // 24-bit QP number
  static constexpr F qpn{0x48, 24};
  // 16 bytes, network order
  static constexpr Bytes<detach_from_mcg_in> multicast_gid{0x80, 128};
};
static_assert(detach_from_mcg_in::kBits == 0x100 && detach_from_mcg_in::kBits / 8 == 32);

// mlx5_ifc.h: struct mlx5_ifc_detach_from_mcg_out_bits (0x80 bits, 16 bytes)
struct detach_from_mcg_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<detach_from_mcg_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(detach_from_mcg_out::kBits == 0x80 && detach_from_mcg_out::kBits / 8 == 16);

// Key offsets (mlx5_ifc.h; reserved_at_<hex> names confirm the sums).
static_assert(attach_to_mcg_in::qpn.off == 0x48);
static_assert(attach_to_mcg_in::multicast_gid.byte_off() == 16 &&
              attach_to_mcg_in::multicast_gid.size() == 16);
static_assert(detach_from_mcg_in::qpn.off == 0x48);
static_assert(detach_from_mcg_in::multicast_gid.byte_off() == 16 &&
              detach_from_mcg_in::multicast_gid.end() == detach_from_mcg_in::kBits);

}  // namespace kbv::prm
