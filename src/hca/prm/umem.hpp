// SPDX-License-Identifier: BSD-3-Clause
//
// DEVX user memory: CREATE_UMEM / DESTROY_UMEM (0xa08 / 0xa0a). A umem is a
// firmware object naming a list of pages (MTT entries: page IOVAs with read /
// write rights); CQs and QPs created with cq_umem_valid / wq_umem_valid /
// dbr_umem_valid place their buffers and doorbell records at a byte offset
// into it instead of listing pas[].
//
// Source: rdma-core v44 providers/mlx5/mlx5_ifc.h (struct mlx5_ifc_umem_bits,
// create_umem_in/out, destroy_umem_in/out, mtt_bits) — the same layouts as the
// kernel's include/linux/mlx5/mlx5_ifc.h — and MLX5_CMD_OP_CREATE_UMEM /
// DESTROY_UMEM. rdma-core's providers/mlx5/mlx5_vfio.c _vfio_devx_umem_reg
// shows the fields a driver fills: log_page_size (log2(page) - 12),
// page_offset (bytes from the start of the first page to the umem's first
// byte), num_of_mtt and one mtt per page with rd_en / wr_en.
//
// umem_id is a 24-bit object number allocated by firmware.
//
// Threading: constants and constexpr tables only.
#pragma once

#include "hca/prm/field.hpp"
#include "hca/prm/mkey.hpp"

namespace kbv::prm {

// MTT entries are prm::mtt (mkey.hpp): the page address with rd_en / wr_en
// in bits 0 / 1 of its low byte (mtt_entry builds one).
inline constexpr uint64_t kMttPtagMask = ~uint64_t{0xFF};  // ptag_63_32 : ptag_31_8

// mlx5_ifc.h: struct mlx5_ifc_umem_bits (0x100 bits + mtt[num_of_mtt])
struct umem {
  static constexpr uint32_t kBits = 0x100;
  using F = Field<umem>;
  static constexpr F log_page_size{0x9b, 5};  // log2(page) - 12
  static constexpr F page_offset{0xa0, 32};   // bytes into the first page
  static constexpr F num_of_mtt{0xc0, 64};
};
static_assert(umem::kBits / 8 == 32);

// mlx5_ifc.h: struct mlx5_ifc_create_umem_in_bits (0x180 bits + mtt[])
struct create_umem_in {
  static constexpr uint32_t kBits = 0x180;
  using F = Field<create_umem_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr Sub<create_umem_in, prm::umem> umem{0x80};
  // umem.mtt[]: 64-bit entries after the fixed part, variable length
  static constexpr Array<create_umem_in> mtt{0x180, 64, 0};
};
static_assert(create_umem_in::umem.end() == create_umem_in::kBits);
static_assert(create_umem_in::kBits / 8 == 48);

// mlx5_ifc.h: struct mlx5_ifc_create_umem_out_bits (0x80 bits, 16 bytes)
struct create_umem_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<create_umem_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr F umem_id{0x48, 24};
};

// mlx5_ifc.h: struct mlx5_ifc_destroy_umem_in_bits (0x80 bits, 16 bytes)
struct destroy_umem_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<destroy_umem_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F umem_id{0x48, 24};
};

// mlx5_ifc.h: struct mlx5_ifc_destroy_umem_out_bits (0x80 bits, 16 bytes)
struct destroy_umem_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<destroy_umem_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};

}  // namespace kbv::prm
