// SPDX-License-Identifier: BSD-3-Clause
//
// Queue pair commands: CREATE_QP (0x500), DESTROY_QP (0x501), QUERY_QP
// (0x50B) and the state transitions RST2INIT_QP (0x502), INIT2INIT_QP
// (0x50E), INIT2RTR_QP (0x503), RTR2RTS_QP (0x504), RTS2RTS_QP (0x505),
// SQERR2RTS_QP (0x506), SQD_RTS_QP (0x50C, table sqd2rts_qp), 2ERR_QP
// (0x507, table qp_2err) and 2RST_QP (0x50A, table qp_2rst). The contexts
// they carry (qpc, ads) and the opt_param_mask bits are in hca/prm/qpc.hpp.
//
// Source: Linux 6.1 include/linux/mlx5/mlx5_ifc.h, the structures named above
// each table (bit offsets and widths; reserved members are left out); PRM
// (ConnectX-4 Rev 0.40) "CREATE_QP", "QP State Transitions".
//
// Shapes:
//   * every command with a qpc carries it at bit 0xc0 (byte 24), after
//     opt_param_mask (byte 16; qp_optpar bits) and ece (byte 20, enhanced
//     connection establishment; absent from sqerr2rts / sqd2rts);
//   * create_qp_in and query_qp_out end in pas[] at byte 272: 64-bit page
//     IOVAs of the WQ buffer (RQ first, then SQ), variable length;
//   * qp_2err_in / qp_2rst_in only name the qpn.
//
// Threading: constants and constexpr tables only.
#pragma once

#include <cstdint>

#include "hca/prm/field.hpp"
#include "hca/prm/qpc.hpp"

namespace kbv::prm {

// mlx5_ifc.h: struct mlx5_ifc_create_qp_in_bits (0x880 bits, 272 bytes)
struct create_qp_in {
  static constexpr uint32_t kBits = 0x880;
  using F = Field<create_qp_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  // requested QPN (needs a capability); 0 = firmware picks
  static constexpr F input_qpn{0x48, 24};
  // qp_optpar bits
  static constexpr F opt_param_mask{0x80, 32};
  // enhanced connection establishment options
  static constexpr F ece{0xa0, 32};
  static constexpr Sub<create_qp_in, prm::qpc> qpc{0xc0};
  // DEVX umem placement of the WQ buffer. Linux 6.1 leaves bits 0x800-0x85f
  // reserved; later kernels' mlx5_ifc.h and DPDK's drivers/common/mlx5/
  // mlx5_prm.h name them. Unused by a VFIO driver (wq_umem_valid = 0 selects
  // pas[]).
  static constexpr F wq_umem_offset{0x800, 64};
  static constexpr F wq_umem_id{0x840, 32};
  // 1: the WQ buffer is a DEVX umem, pas[] is not used
  static constexpr F wq_umem_valid{0x860, 1};
  // variable tail: 64-bit page IOVAs of the WQ buffer
  static constexpr Array<create_qp_in> pas{0x880, 64, 0};
};
static_assert(create_qp_in::kBits == 0x880 && create_qp_in::kBits / 8 == 272);
static_assert(create_qp_in::qpc.off == 0xc0);

// mlx5_ifc.h: struct mlx5_ifc_create_qp_out_bits (0x80 bits, 16 bytes)
struct create_qp_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<create_qp_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  // 24-bit QP number
  static constexpr F qpn{0x48, 24};
  // enhanced connection establishment options
  static constexpr F ece{0x60, 32};
};
static_assert(create_qp_out::kBits == 0x80 && create_qp_out::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_destroy_qp_in_bits (0x80 bits, 16 bytes)
struct destroy_qp_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<destroy_qp_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  // 24-bit QP number
  static constexpr F qpn{0x48, 24};
};
static_assert(destroy_qp_in::kBits == 0x80 && destroy_qp_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_destroy_qp_out_bits (0x80 bits, 16 bytes)
struct destroy_qp_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<destroy_qp_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(destroy_qp_out::kBits == 0x80 && destroy_qp_out::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_query_qp_in_bits (0x80 bits, 16 bytes)
struct query_qp_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_qp_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  // 24-bit QP number
  static constexpr F qpn{0x48, 24};
};
static_assert(query_qp_in::kBits == 0x80 && query_qp_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_query_qp_out_bits (0x880 bits, 272 bytes)
struct query_qp_out {
  static constexpr uint32_t kBits = 0x880;
  using F = Field<query_qp_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  // qp_optpar bits
  static constexpr F opt_param_mask{0x80, 32};
  // enhanced connection establishment options
  static constexpr F ece{0xa0, 32};
  static constexpr Sub<query_qp_out, prm::qpc> qpc{0xc0};
  // variable tail: 64-bit page IOVAs of the WQ buffer
  static constexpr Array<query_qp_out> pas{0x880, 64, 0};
};
static_assert(query_qp_out::kBits == 0x880 && query_qp_out::kBits / 8 == 272);
static_assert(query_qp_out::qpc.off == 0xc0);

// The five transitions that carry a QP context and ECE share one layout in
// mlx5_ifc.h: struct mlx5_ifc_{rst2init,init2init,init2rtr,rtr2rts,rts2rts}
// _qp_in_bits (0x880 bits, 272 bytes) and _qp_out_bits (0x80 bits, 16
// bytes). One template states it once; the opcode parameter keeps each
// command its own type, so a field of one command cannot be used on another.
template <uint16_t Op>
struct qp_transition_in {
  static constexpr uint16_t kOpcode = Op;
  static constexpr uint32_t kBits = 0x880;
  using F = Field<qp_transition_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  // 24-bit QP number
  static constexpr F qpn{0x48, 24};
  // qp_optpar bits
  static constexpr F opt_param_mask{0x80, 32};
  // enhanced connection establishment options
  static constexpr F ece{0xa0, 32};
  static constexpr Sub<qp_transition_in, prm::qpc> qpc{0xc0};
};

template <uint16_t Op>
struct qp_transition_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<qp_transition_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  // enhanced connection establishment options
  static constexpr F ece{0x60, 32};
};

using rst2init_qp_in = qp_transition_in<0x502>;  // RST2INIT_QP
using rst2init_qp_out = qp_transition_out<0x502>;
using init2init_qp_in = qp_transition_in<0x50E>;  // INIT2INIT_QP
using init2init_qp_out = qp_transition_out<0x50E>;
using init2rtr_qp_in = qp_transition_in<0x503>;  // INIT2RTR_QP
using init2rtr_qp_out = qp_transition_out<0x503>;
using rtr2rts_qp_in = qp_transition_in<0x504>;  // RTR2RTS_QP
using rtr2rts_qp_out = qp_transition_out<0x504>;
using rts2rts_qp_in = qp_transition_in<0x505>;  // RTS2RTS_QP
using rts2rts_qp_out = qp_transition_out<0x505>;

static_assert(rst2init_qp_in::kBits / 8 == 272 && rst2init_qp_out::kBits / 8 == 16);
static_assert(rst2init_qp_in::qpn.off == 0x48 && rst2init_qp_in::opt_param_mask.off == 0x80);
static_assert(rst2init_qp_in::ece.off == 0xa0 && rst2init_qp_in::qpc.off == 0xc0);
static_assert(rst2init_qp_in::qpc.end() <= rst2init_qp_in::kBits);  // reserved tail after qpc
static_assert(rst2init_qp_out::ece.off == 0x60);

// mlx5_ifc.h: struct mlx5_ifc_sqerr2rts_qp_in_bits (0x880 bits, 272 bytes)
struct sqerr2rts_qp_in {
  static constexpr uint32_t kBits = 0x880;
  using F = Field<sqerr2rts_qp_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  // 24-bit QP number
  static constexpr F qpn{0x48, 24};
  // qp_optpar bits
  static constexpr F opt_param_mask{0x80, 32};
  static constexpr Sub<sqerr2rts_qp_in, prm::qpc> qpc{0xc0};
};
static_assert(sqerr2rts_qp_in::kBits == 0x880 && sqerr2rts_qp_in::kBits / 8 == 272);
static_assert(sqerr2rts_qp_in::qpc.off == 0xc0);

// mlx5_ifc.h: struct mlx5_ifc_sqerr2rts_qp_out_bits (0x80 bits, 16 bytes)
struct sqerr2rts_qp_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<sqerr2rts_qp_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(sqerr2rts_qp_out::kBits == 0x80 && sqerr2rts_qp_out::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_sqd2rts_qp_in_bits (0x880 bits, 272 bytes)
struct sqd2rts_qp_in {
  static constexpr uint32_t kBits = 0x880;
  using F = Field<sqd2rts_qp_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  // 24-bit QP number
  static constexpr F qpn{0x48, 24};
  // qp_optpar bits
  static constexpr F opt_param_mask{0x80, 32};
  static constexpr Sub<sqd2rts_qp_in, prm::qpc> qpc{0xc0};
};
static_assert(sqd2rts_qp_in::kBits == 0x880 && sqd2rts_qp_in::kBits / 8 == 272);
static_assert(sqd2rts_qp_in::qpc.off == 0xc0);

// mlx5_ifc.h: struct mlx5_ifc_sqd2rts_qp_out_bits (0x80 bits, 16 bytes)
struct sqd2rts_qp_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<sqd2rts_qp_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(sqd2rts_qp_out::kBits == 0x80 && sqd2rts_qp_out::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_qp_2err_in_bits (0x80 bits, 16 bytes)
struct qp_2err_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<qp_2err_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  // 24-bit QP number
  static constexpr F qpn{0x48, 24};
};
static_assert(qp_2err_in::kBits == 0x80 && qp_2err_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_qp_2err_out_bits (0x80 bits, 16 bytes)
struct qp_2err_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<qp_2err_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(qp_2err_out::kBits == 0x80 && qp_2err_out::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_qp_2rst_in_bits (0x80 bits, 16 bytes)
struct qp_2rst_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<qp_2rst_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F uid{0x10, 16};
  static constexpr F op_mod{0x30, 16};
  // 24-bit QP number
  static constexpr F qpn{0x48, 24};
};
static_assert(qp_2rst_in::kBits == 0x80 && qp_2rst_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_qp_2rst_out_bits (0x80 bits, 16 bytes)
struct qp_2rst_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<qp_2rst_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(qp_2rst_out::kBits == 0x80 && qp_2rst_out::kBits / 8 == 16);

// Key offsets (mlx5_ifc.h; reserved_at_<hex> names confirm the sums).
static_assert(create_qp_in::opt_param_mask.off == 0x80 && create_qp_in::ece.off == 0xa0);
static_assert(create_qp_in::qpc.end() == 0x800 && create_qp_in::wq_umem_offset.off == 0x800);
static_assert(create_qp_in::wq_umem_id.off == 0x840 && create_qp_in::wq_umem_valid.off == 0x860);
static_assert(create_qp_in::pas.off == create_qp_in::kBits && create_qp_in::pas.byte_off(0) == 272);
static_assert(create_qp_out::qpn.off == 0x48 && create_qp_out::ece.off == 0x60);
static_assert(query_qp_out::qpc.off == 0xc0 && query_qp_out::pas.byte_off(0) == 272);
static_assert(rst2init_qp_in::qpc.off == 0xc0 && init2init_qp_in::qpc.off == 0xc0);
static_assert(init2rtr_qp_in::qpc.off == 0xc0 && rtr2rts_qp_in::qpc.off == 0xc0);
static_assert(rts2rts_qp_in::qpc.off == 0xc0 && sqerr2rts_qp_in::qpc.off == 0xc0);
static_assert(sqd2rts_qp_in::qpc.off == 0xc0 && sqd2rts_qp_in::opt_param_mask.off == 0x80);
static_assert(qp_2err_in::qpn.off == 0x48 && qp_2rst_in::qpn.off == 0x48);

}  // namespace kbv::prm
