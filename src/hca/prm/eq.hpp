// SPDX-License-Identifier: BSD-3-Clause
//
// Event queue commands and context: eqc, CREATE_EQ, DESTROY_EQ, QUERY_EQ,
// GEN_EQE, and the EQ doorbell.
//
// Sources: kernel include/linux/mlx5/mlx5_ifc.h, struct mlx5_ifc_eqc_bits,
// mlx5_ifc_create_eq_in/out_bits, mlx5_ifc_destroy_eq_in/out_bits,
// mlx5_ifc_query_eq_in/out_bits, mlx5_ifc_gen_eqe_in_bits and
// mlx5_ifc_gen_eq_out_bits (bit offsets summed from member widths, checked
// against the reserved_at_<offset> names); enums MLX5_EQC_STATUS_* and
// MLX5_EQC_ST_*. Doorbell: include/linux/mlx5/eq.h (MLX5_NUM_SPARE_EQE) and
// drivers/net/ethernet/mellanox/mlx5/core/lib/eq.h (eq_update_ci: UAR + 0x40
// arms, + 0x48 only updates; value = ci & 0xffffff | eqn << 24); docs/PRM.md
// "Event queues".
//
// EQE layout and event types: eqe.hpp. EQ buffer: 1 << log_eq_size EQEs of 64
// B in pages of 4 KiB << log_page_size, listed in pas[].
//
// Threading: layouts and constants only.
#pragma once

#include <cstdint>

#include "hca/prm/eqe.hpp"
#include "hca/prm/field.hpp"
#include "hca/prm/uar.hpp"

namespace kbv::prm {

// mlx5_ifc.h mlx5_ifc_eqc_bits (64 B): the EQ context.
struct eqc {
  static constexpr uint32_t kBits = 0x200;
  using F = Field<eqc>;
  static constexpr F status{0x0, 4};  // EqcStatus
  static constexpr F ec{0xd, 1};
  static constexpr F oi{0xe, 1};   // overrun ignore
  static constexpr F st{0x14, 4};  // EqcSt: armed / fired
  static constexpr F page_offset{0x54, 6};
  static constexpr F log_eq_size{0x63, 5};    // log2 of the number of EQEs
  static constexpr F uar_page{0x68, 24};      // UAR whose doorbell arms this EQ
  static constexpr F intr{0xb4, 12};          // MSI-X vector
  static constexpr F log_page_size{0xc3, 5};  // log2(page size / 4 KiB)
  static constexpr F consumer_counter{0x148, 24};
  static constexpr F producer_counter{0x168, 24};
};
static_assert(eqc::kBits / 8 == 64);
static_assert(eqc::log_eq_size.off / 8 == 12 && eqc::log_eq_size.end() == eqc::uar_page.off);
static_assert(eqc::uar_page.end() == 0x80);
static_assert(eqc::intr.end() == 0xc0);  // low 12 bits of the dword at byte 20
static_assert(eqc::log_page_size.off / 8 == 24);
static_assert(eqc::consumer_counter.off / 32 * 4 == 40);
static_assert(eqc::producer_counter.off / 32 * 4 == 44);

// eqc.status (MLX5_EQC_STATUS_*) and eqc.st (MLX5_EQC_ST_*).
enum class EqcStatus : uint8_t { OK = 0x0, EQ_WRITE_FAILURE = 0xa };
enum class EqcSt : uint8_t { ARMED = 0x9, FIRED = 0xa };

// mlx5_ifc.h mlx5_ifc_create_eq_in_bits (272 B + 8 B per page). The context is
// at byte 16, the 256-bit event bitmask (four big-endian u64; word w bit b =
// event type 64 w + b, see eqe.hpp event_word / event_bit) at byte 88, pas[] at
// byte 272.
struct create_eq_in {
  static constexpr uint32_t kBits = 0x880;  // fixed part; pas[] follows
  using F = Field<create_eq_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr Sub<create_eq_in, eqc> eq_context_entry{0x80};
  static constexpr Array<create_eq_in> event_bitmask{0x2c0, 64, 4};
  static constexpr Array<create_eq_in> pas{0x880, 64, 0};  // 64-bit page IOVAs
};
static_assert(create_eq_in::kBits / 8 == 272);
static_assert(create_eq_in::eq_context_entry.off / 8 == 16);
static_assert(create_eq_in::eq_context_entry.end() == 0x280);
static_assert(create_eq_in::event_bitmask.byte_off(0) == 88);
static_assert(create_eq_in::event_bitmask.end() == 0x3c0);
static_assert(create_eq_in::pas.byte_off(0) == 272);

// Bytes of a CREATE_EQ input listing npages pages.
constexpr uint32_t create_eq_in_len(uint32_t npages) {
  return create_eq_in::kBits / 8 + 8 * npages;
}

// mlx5_ifc.h mlx5_ifc_create_eq_out_bits (16 B).
struct create_eq_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<create_eq_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr F eq_number{0x58, 8};  // the EQN
};
static_assert(create_eq_out::kBits / 8 == 16);
static_assert(create_eq_out::eq_number.off / 8 == 11);

// mlx5_ifc.h mlx5_ifc_destroy_eq_in_bits (16 B).
struct destroy_eq_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<destroy_eq_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F eq_number{0x58, 8};
};
static_assert(destroy_eq_in::kBits / 8 == 16);
static_assert(destroy_eq_in::eq_number.off / 8 == 11);

// mlx5_ifc.h mlx5_ifc_destroy_eq_out_bits (16 B).
struct destroy_eq_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<destroy_eq_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(destroy_eq_out::kBits / 8 == 16);

// mlx5_ifc.h mlx5_ifc_query_eq_in_bits (16 B).
struct query_eq_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_eq_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F eq_number{0x58, 8};
};
static_assert(query_eq_in::kBits / 8 == 16);

// mlx5_ifc.h mlx5_ifc_query_eq_out_bits (272 B + pas[]). Unlike create_eq_in,
// the kernel declares a single 64-bit event_bitmask here (event types 0..63).
struct query_eq_out {
  static constexpr uint32_t kBits = 0x880;  // fixed part; pas[] follows
  using F = Field<query_eq_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr Sub<query_eq_out, eqc> eq_context_entry{0x80};
  static constexpr F event_bitmask{0x2c0, 64};
  static constexpr Array<query_eq_out> pas{0x880, 64, 0};
};
static_assert(query_eq_out::kBits / 8 == 272);
static_assert(query_eq_out::eq_context_entry.off / 8 == 16);
static_assert(query_eq_out::event_bitmask.off / 8 == 88);

// mlx5_ifc.h mlx5_ifc_gen_eqe_in_bits (80 B): ask firmware to write the given
// 64-byte EQE to EQ eq_number.
struct gen_eqe_in {
  static constexpr uint32_t kBits = 0x280;
  using F = Field<gen_eqe_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F eq_number{0x58, 8};
  static constexpr Bytes<gen_eqe_in> eqe{0x80, 64 * 8};
};
static_assert(gen_eqe_in::kBits / 8 == 80);
static_assert(gen_eqe_in::eqe.byte_off() == 16 && gen_eqe_in::eqe.size() == kEqeBytes);

// mlx5_ifc.h mlx5_ifc_gen_eq_out_bits (16 B).
struct gen_eqe_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<gen_eqe_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(gen_eqe_out::kBits / 8 == 16);

// EQ doorbell: a 32-bit big-endian write into the EQ's UAR page (eqc.uar_page)
// of (ci & 0xffffff) | eqn << 24, at kEqDoorbellArmOff to update the consumer
// index and re-arm, at kEqDoorbellUpdateOff to update it only.
inline constexpr uint32_t kEqDoorbellArmOff = kUarEqDoorbellArmOff;  // 0x40
inline constexpr uint32_t kEqDoorbellUpdateOff = kUarEqDoorbellOff;  // 0x48
constexpr uint32_t eq_doorbell_value(uint32_t ci, uint32_t eqn) {
  return (ci & 0xFFFFFF) | (eqn << 24);
}
// Software must update the consumer index at least every kNumSpareEqe entries
// (include/linux/mlx5/eq.h MLX5_NUM_SPARE_EQE); drivers size EQs with that
// many spare entries.
inline constexpr uint32_t kNumSpareEqe = 0x80;

}  // namespace kbv::prm
