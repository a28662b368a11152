// SPDX-License-Identifier: BSD-3-Clause
//
// Protection domains and transport domains: ALLOC_PD / DEALLOC_PD (0x800 /
// 0x801) and ALLOC_TRANSPORT_DOMAIN / DEALLOC_TRANSPORT_DOMAIN (0x816 / 0x817).
//
// Source: Linux 6.1 include/linux/mlx5/mlx5_ifc.h, the structures named above
// each table (bit offsets and widths; reserved members are left out). PRM
// (ConnectX-4 Rev 0.40) "ALLOC_PD", "ALLOC_TRANSPORT_DOMAIN".
//
// pd and transport_domain are 24-bit object numbers allocated by firmware and
// returned in the *_out command; the DEALLOC commands name them again. The
// opcodes live in hca/prm/opcodes.hpp.
//
// Threading: constants and constexpr tables only.
#pragma once

#include "hca/prm/field.hpp"

namespace kbv::prm {

// mlx5_ifc.h: struct mlx5_ifc_alloc_pd_in_bits (0x80 bits, 16 bytes)
struct alloc_pd_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<alloc_pd_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
};
static_assert(alloc_pd_in::kBits == 0x80 && alloc_pd_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_alloc_pd_out_bits (0x80 bits, 16 bytes)
struct alloc_pd_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<alloc_pd_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr F pd{0x48, 24};
};
static_assert(alloc_pd_out::kBits == 0x80 && alloc_pd_out::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_dealloc_pd_in_bits (0x80 bits, 16 bytes)
struct dealloc_pd_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<dealloc_pd_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F pd{0x48, 24};
};
static_assert(dealloc_pd_in::kBits == 0x80 && dealloc_pd_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_dealloc_pd_out_bits (0x80 bits, 16 bytes)
struct dealloc_pd_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<dealloc_pd_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(dealloc_pd_out::kBits == 0x80 && dealloc_pd_out::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_alloc_transport_domain_in_bits (0x80 bits, 16 bytes)
struct alloc_transport_domain_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<alloc_transport_domain_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
};
static_assert(alloc_transport_domain_in::kBits == 0x80 &&
              alloc_transport_domain_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_alloc_transport_domain_out_bits (0x80 bits, 16 bytes)
struct alloc_transport_domain_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<alloc_transport_domain_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr F transport_domain{0x48, 24};
};
static_assert(alloc_transport_domain_out::kBits == 0x80 &&
              alloc_transport_domain_out::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_dealloc_transport_domain_in_bits (0x80 bits, 16 bytes)
struct dealloc_transport_domain_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<dealloc_transport_domain_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F transport_domain{0x48, 24};
};
static_assert(dealloc_transport_domain_in::kBits == 0x80 &&
              dealloc_transport_domain_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_dealloc_transport_domain_out_bits (0x80 bits, 16 bytes)
struct dealloc_transport_domain_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<dealloc_transport_domain_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(dealloc_transport_domain_out::kBits == 0x80 &&
              dealloc_transport_domain_out::kBits / 8 == 16);

// Key offsets (mlx5_ifc.h: the object number is the low 24 bits of dword 2).
static_assert(alloc_pd_out::pd.off == 0x48 && alloc_pd_out::pd.width == 24);
static_assert(dealloc_pd_in::pd.off == 0x48);
static_assert(alloc_transport_domain_out::transport_domain.off == 0x48);
static_assert(dealloc_transport_domain_in::transport_domain.off == 0x48);

}  // namespace kbv::prm
