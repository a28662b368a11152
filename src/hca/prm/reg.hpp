// SPDX-License-Identifier: BSD-3-Clause
//
// Port access registers carried by ACCESS_REG (0x805; access_register_in/out
// in boot.hpp): PAOS (admin/oper status), PTYS (protocols, speed), PMTU,
// PPCNT (port counters: IEEE 802.3, RFC 2863 and per-priority groups) and
// the headers of PPLM / PDDR (which the model refuses; a driver may still
// ask real silicon for them).
//
// Source: kernel include/linux/mlx5/mlx5_ifc.h, struct mlx5_ifc_<name>_bits
// (paos_reg, ptys_reg, pmtu_reg, ppcnt_reg, pplm_reg, pddr_reg and the
// counter-set layouts eth_802_3_cntrs_grp_data_layout,
// eth_2863_cntrs_grp_data_layout, eth_per_prio_grp_data_layout); register ids
// driver.h MLX5_REG_* (opcodes.hpp RegId); PPCNT group numbers device.h
// MLX5_*_COUNTERS_GROUP; PAOS status values port.h enum mlx5_port_status;
// PTYS proto_mask port.h MLX5_PTYS_IB / MLX5_PTYS_EN; Ethernet protocol bits
// port.h enum mlx5e_link_mode. Every counter of a group is a 64-bit value
// written as a _high / _low dword pair: one big-endian u64 here.
//
// Threading: layouts and constants only.
#pragma once

#include <cstdint>

#include "hca/prm/field.hpp"

namespace kbv::prm {

// port.h enum mlx5_port_status (PAOS admin_status / oper_status).
enum class PortStatus : uint8_t {
  UP = 1,
  DOWN = 2,
  UP_ONCE = 3,    // admin only
  DOWN_FAIL = 4,  // oper only: down by port failure
};

// mlx5_ifc.h paos_reg_bits (16 B). ase: admin_status is written (write only).
struct paos_reg {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<paos_reg>;
  static constexpr F swid{0x0, 8};
  static constexpr F local_port{0x8, 8};
  static constexpr F admin_status{0x14, 4};
  static constexpr F oper_status{0x1c, 4};
  static constexpr F ase{0x20, 1};
  static constexpr F ee{0x21, 1};
  static constexpr F e{0x3e, 2};
};
static_assert(paos_reg::kBits / 8 == 16);
static_assert(paos_reg::local_port.off / 8 == 1);
static_assert(paos_reg::admin_status.off / 8 == 2 && paos_reg::oper_status.off / 8 == 3);

// PTYS proto_mask (port.h): which protocol block of the register is meant.
inline constexpr uint32_t kPtysIb = 1u << 0;
inline constexpr uint32_t kPtysEn = 1u << 2;
// port.h enum mlx5e_link_mode: bit 20 of eth_proto_* is 100GBASE-CR4, the
// link the model advertises (4 lanes x 25 Gb/s: what kbv's ibverbs layer
// reports as 4X EDR).
inline constexpr uint32_t kEthProto100GBaseCr4 = 1u << 20;

// mlx5_ifc.h ptys_reg_bits (64 B).
struct ptys_reg {
  static constexpr uint32_t kBits = 0x200;
  using F = Field<ptys_reg>;
  static constexpr F an_disable_admin{0x1, 1};
  static constexpr F an_disable_cap{0x2, 1};
  static constexpr F local_port{0x8, 8};
  static constexpr F plane_ind{0x18, 4};
  static constexpr F proto_mask{0x1d, 3};
  static constexpr F an_status{0x20, 4};
  static constexpr F data_rate_oper{0x30, 16};
  static constexpr F ext_eth_proto_capability{0x40, 32};
  static constexpr F eth_proto_capability{0x60, 32};
  static constexpr F ib_link_width_capability{0x80, 16};
  static constexpr F ib_proto_capability{0x90, 16};
  static constexpr F ext_eth_proto_admin{0xa0, 32};
  static constexpr F eth_proto_admin{0xc0, 32};
  static constexpr F ib_link_width_admin{0xe0, 16};
  static constexpr F ib_proto_admin{0xf0, 16};
  static constexpr F ext_eth_proto_oper{0x100, 32};
  static constexpr F eth_proto_oper{0x120, 32};
  static constexpr F ib_link_width_oper{0x140, 16};
  static constexpr F ib_proto_oper{0x150, 16};
  static constexpr F connector_type{0x17c, 4};
  static constexpr F eth_proto_lp_advertise{0x180, 32};
};
static_assert(ptys_reg::kBits / 8 == 64);
static_assert(ptys_reg::eth_proto_capability.off / 8 == 12);
static_assert(ptys_reg::eth_proto_admin.off / 8 == 24);
static_assert(ptys_reg::eth_proto_oper.off / 8 == 36);
static_assert(ptys_reg::eth_proto_lp_advertise.off / 8 == 48);

// mlx5_ifc.h pmtu_reg_bits (16 B). MTUs in bytes.
struct pmtu_reg {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<pmtu_reg>;
  static constexpr F local_port{0x8, 8};
  static constexpr F max_mtu{0x20, 16};
  static constexpr F admin_mtu{0x40, 16};
  static constexpr F oper_mtu{0x60, 16};
};
static_assert(pmtu_reg::kBits / 8 == 16);
static_assert(pmtu_reg::max_mtu.off / 8 == 4 && pmtu_reg::admin_mtu.off / 8 == 8 &&
              pmtu_reg::oper_mtu.off / 8 == 12);

// device.h MLX5_*_COUNTERS_GROUP: ppcnt_reg.grp.
enum class PpcntGroup : uint8_t {
  IEEE_802_3 = 0x0,
  RFC_2863 = 0x1,
  RFC_2819 = 0x2,
  RFC_3635 = 0x3,
  ETHERNET_EXTENDED = 0x5,
  ETHERNET_DISCARD = 0x6,
  PER_PRIORITY = 0x10,
  PER_TRAFFIC_CLASS = 0x11,
  PHYSICAL_LAYER = 0x12,
  PHYSICAL_LAYER_STATISTICAL = 0x16,
  INFINIBAND_PORT = 0x20,
};

// mlx5_ifc.h eth_802_3_cntrs_grp_data_layout_bits (248 B, the counter_set
// union's 0x7c0 bits).
struct eth_802_3_cntrs {
  static constexpr uint32_t kBits = 0x7c0;
  using F = Field<eth_802_3_cntrs>;
  static constexpr F a_frames_transmitted_ok{0x000, 64};
  static constexpr F a_frames_received_ok{0x040, 64};
  static constexpr F a_frame_check_sequence_errors{0x080, 64};
  static constexpr F a_alignment_errors{0x0c0, 64};
  static constexpr F a_octets_transmitted_ok{0x100, 64};
  static constexpr F a_octets_received_ok{0x140, 64};
  static constexpr F a_multicast_frames_xmitted_ok{0x180, 64};
  static constexpr F a_broadcast_frames_xmitted_ok{0x1c0, 64};
  static constexpr F a_multicast_frames_received_ok{0x200, 64};
  static constexpr F a_broadcast_frames_received_ok{0x240, 64};
  static constexpr F a_in_range_length_errors{0x280, 64};
  static constexpr F a_out_of_range_length_field{0x2c0, 64};
  static constexpr F a_frame_too_long_errors{0x300, 64};
  static constexpr F a_symbol_error_during_carrier{0x340, 64};
  static constexpr F a_mac_control_frames_transmitted{0x380, 64};
  static constexpr F a_mac_control_frames_received{0x3c0, 64};
  static constexpr F a_unsupported_opcodes_received{0x400, 64};
  static constexpr F a_pause_mac_ctrl_frames_received{0x440, 64};
  static constexpr F a_pause_mac_ctrl_frames_transmitted{0x480, 64};
};
static_assert(eth_802_3_cntrs::kBits / 8 == 248);
static_assert(eth_802_3_cntrs::a_pause_mac_ctrl_frames_transmitted.end() == 0x4c0);

// mlx5_ifc.h eth_2863_cntrs_grp_data_layout_bits (248 B).
struct eth_2863_cntrs {
  static constexpr uint32_t kBits = 0x7c0;
  using F = Field<eth_2863_cntrs>;
  static constexpr F if_in_octets{0x000, 64};
  static constexpr F if_in_ucast_pkts{0x040, 64};
  static constexpr F if_in_discards{0x080, 64};
  static constexpr F if_in_errors{0x0c0, 64};
  static constexpr F if_in_unknown_protos{0x100, 64};
  static constexpr F if_out_octets{0x140, 64};
  static constexpr F if_out_ucast_pkts{0x180, 64};
  static constexpr F if_out_discards{0x1c0, 64};
  static constexpr F if_out_errors{0x200, 64};
  static constexpr F if_in_multicast_pkts{0x240, 64};
  static constexpr F if_in_broadcast_pkts{0x280, 64};
  static constexpr F if_out_multicast_pkts{0x2c0, 64};
  static constexpr F if_out_broadcast_pkts{0x300, 64};
};
static_assert(eth_2863_cntrs::kBits / 8 == 248);
static_assert(eth_2863_cntrs::if_out_broadcast_pkts.end() == 0x340);

// mlx5_ifc.h eth_per_prio_grp_data_layout_bits (248 B): one priority
// (ppcnt_reg.prio_tc) per read.
struct eth_per_prio_cntrs {
  static constexpr uint32_t kBits = 0x7c0;
  using F = Field<eth_per_prio_cntrs>;
  static constexpr F rx_octets{0x000, 64};
  static constexpr F rx_frames{0x100, 64};
  static constexpr F tx_octets{0x140, 64};
  static constexpr F tx_frames{0x240, 64};
  static constexpr F rx_pause{0x280, 64};
  static constexpr F rx_pause_duration{0x2c0, 64};
  static constexpr F tx_pause{0x300, 64};
  static constexpr F tx_pause_duration{0x340, 64};
  static constexpr F rx_pause_transition{0x380, 64};
  static constexpr F rx_discards{0x3c0, 64};
  static constexpr F device_stall_minor_watermark_cnt{0x400, 64};
  static constexpr F device_stall_critical_watermark_cnt{0x440, 64};
};
static_assert(eth_per_prio_cntrs::kBits / 8 == 248);
static_assert(eth_per_prio_cntrs::device_stall_critical_watermark_cnt.end() == 0x480);

// mlx5_ifc.h ppcnt_reg_bits (256 B): an 8-byte header and the counter set
// (the union eth_cntrs_grp_data_layout_auto, 0x7c0 bits). clr: clear the
// group's counters after reading them. prio_tc: the priority (per-priority
// group) or traffic class; today's mlx5_ifc.h makes it 5 bits at 0x3b (older
// kernels: 3 bits at 0x3d — the same bits for values 0..7).
struct ppcnt_reg {
  static constexpr uint32_t kBits = 0x800;
  using F = Field<ppcnt_reg>;
  static constexpr F swid{0x0, 8};
  static constexpr F local_port{0x8, 8};
  static constexpr F pnat{0x10, 2};
  static constexpr F grp{0x1a, 6};
  static constexpr F clr{0x20, 1};
  static constexpr F plane_ind{0x34, 4};
  static constexpr F prio_tc{0x3b, 5};
  static constexpr Sub<ppcnt_reg, eth_802_3_cntrs> eth_802_3{0x40};
  static constexpr Sub<ppcnt_reg, eth_2863_cntrs> eth_2863{0x40};
  static constexpr Sub<ppcnt_reg, eth_per_prio_cntrs> eth_per_prio{0x40};
};
static_assert(ppcnt_reg::kBits / 8 == 256);
static_assert(ppcnt_reg::grp.end() == 0x20);
static_assert(ppcnt_reg::prio_tc.end() == 0x40);
static_assert(ppcnt_reg::eth_802_3.end() == ppcnt_reg::kBits);
// Priorities of the per-priority group (IEEE 802.1Q PCP).
inline constexpr uint32_t kNumPriorities = 8;

// mlx5_ifc.h pplm_reg_bits (120 B): port FEC modes. Only the header is named
// here (the model refuses the register: it has no FEC to report).
struct pplm_reg {
  static constexpr uint32_t kBits = 0x3c0;
  using F = Field<pplm_reg>;
  static constexpr F local_port{0x8, 8};
  static constexpr F fec_mode_active{0x68, 24};
};
static_assert(pplm_reg::kBits / 8 == 120);

// mlx5_ifc.h pddr_reg_bits (256 B): port diagnostics database, one page per
// read (page_select). Header only (refused by the model: no PHY to diagnose).
struct pddr_reg {
  static constexpr uint32_t kBits = 0x800;
  using F = Field<pddr_reg>;
  static constexpr F local_port{0x8, 8};
  static constexpr F pnat{0x10, 2};
  static constexpr F page_select{0x38, 8};
};
static_assert(pddr_reg::kBits / 8 == 256);
static_assert(pddr_reg::page_select.off / 8 == 7);

}  // namespace kbv::prm
