// SPDX-License-Identifier: BSD-3-Clause
//
// Vports and the RoCE address table:
//   * QUERY_VPORT_STATE (0x750): admin and operational state of a vport;
//   * QUERY_NIC_VPORT_CONTEXT / MODIFY_NIC_VPORT_CONTEXT (0x754 / 0x755) with
//     nic_vport_context (roce_en, mtu, GUIDs, permanent MAC) and the
//     modify_nic_vport_field_select bits (bring-up sets roce_en this way);
//   * QUERY_HCA_VPORT_CONTEXT (0x762) with hca_vport_context, QUERY_HCA_VPORT_GID
//     (0x764) and QUERY_HCA_VPORT_PKEY (0x765): the IB view of a port;
//   * QUERY_ROCE_ADDRESS / SET_ROCE_ADDRESS (0x760 / 0x761) with
//     roce_addr_layout: one GID table entry (source address, VLAN, MAC,
//     RoCE version and L3 type).
//
// Source: Linux 6.1 include/linux/mlx5/mlx5_ifc.h, the structures named above
// each table (bit offsets and widths; reserved members are left out); enums
// MLX5_QUERY_VPORT_STATE_OUT_STATE_*, MLX5_VPORT_STATE_OP_MOD_*,
// MLX5_HCA_VPORT_SEL_*; include/linux/mlx5/device.h MLX5_VPORT_ADMIN_STATE_*,
// MLX5_ROCE_VERSION_*, MLX5_ROCE_L3_TYPE_*; IB port states from the kernel's
// include/rdma/ib_verbs.h enum ib_port_state (IBTA Vol 1 PortInfo:PortState);
// PRM (ConnectX-4 Rev 0.40) "NIC Vport Context", "HCA Vport Context",
// "SET_ROCE_ADDRESS".
//
// Shapes and units:
//   * other_vport = 0 addresses the caller's own vport (vport_number ignored);
//   * port_num / vhca_port_num are 1-based port numbers;
//   * GUIDs are 64-bit big-endian fields; GIDs and roce_addr_layout
//     source_l3_address are 16 bytes in network order;
//   * MACs are split as *_47_32 (16 bits) and *_31_0 (32 bits);
//   * query_hca_vport_gid_out / query_hca_vport_pkey_out end in variable-length
//     tables at byte 16 (gid: 16-byte entries; pkey: 4-byte entries with the
//     P_Key in the low 16 bits).
// mlx5_ifc.h names the only member of array128_auto and of pkey like the
// struct; C++ forbids a member named like its class, so kbv calls it `value`.
//
// Threading: constants and constexpr tables only.
#pragma once

#include <cstdint>

#include "hca/prm/field.hpp"

namespace kbv::prm {

// query_vport_state_out.state (mlx5_ifc.h MLX5_QUERY_VPORT_STATE_OUT_STATE_*)
// and .admin_state (device.h MLX5_VPORT_ADMIN_STATE_*).
namespace vport_state {
inline constexpr uint32_t kDown = 0x0;
inline constexpr uint32_t kUp = 0x1;
inline constexpr uint32_t kAdminAuto = 0x2;  // admin_state only
}  // namespace vport_state

// query_vport_state_in.op_mod (mlx5_ifc.h MLX5_VPORT_STATE_OP_MOD_*).
namespace vport_state_op_mod {
inline constexpr uint32_t kVnicVport = 0x0;
inline constexpr uint32_t kEswVport = 0x1;
inline constexpr uint32_t kUplink = 0x2;
}  // namespace vport_state_op_mod

// hca_vport_context.port_state / vport_state: IB port states (ib_verbs.h enum
// ib_port_state; IBTA PortInfo:PortState).
namespace ib_port_state {
inline constexpr uint32_t kNop = 0x0;
inline constexpr uint32_t kDown = 0x1;
inline constexpr uint32_t kInit = 0x2;
inline constexpr uint32_t kArmed = 0x3;
inline constexpr uint32_t kActive = 0x4;
inline constexpr uint32_t kActiveDefer = 0x5;
}  // namespace ib_port_state

// hca_vport_context.field_select bits (mlx5_ifc.h MLX5_HCA_VPORT_SEL_*).
namespace hca_vport_sel {
inline constexpr uint32_t kPortGuid = 1u << 0;
inline constexpr uint32_t kNodeGuid = 1u << 1;
inline constexpr uint32_t kStatePolicy = 1u << 2;
}  // namespace hca_vport_sel

// roce_addr_layout.roce_version (device.h MLX5_ROCE_VERSION_*).
namespace roce_version {
inline constexpr uint32_t kV1 = 0;
inline constexpr uint32_t kV2 = 2;
}  // namespace roce_version

// roce_addr_layout.roce_l3_type (device.h MLX5_ROCE_L3_TYPE_*).
namespace roce_l3_type {
inline constexpr uint32_t kIpv4 = 0;
inline constexpr uint32_t kIpv6 = 1;
}  // namespace roce_l3_type

// mlx5_ifc.h: struct mlx5_ifc_query_vport_state_in_bits (0x80 bits, 16 bytes)
struct query_vport_state_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_vport_state_in>;
  static constexpr F opcode{0x0, 16};
  // vport_state_op_mod
  static constexpr F op_mod{0x30, 16};
  // 1: vport_number names another vport
  static constexpr F other_vport{0x40, 1};
  static constexpr F vport_number{0x50, 16};
};
static_assert(query_vport_state_in::kBits == 0x80 && query_vport_state_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_query_vport_state_out_bits (0x80 bits, 16 bytes)
struct query_vport_state_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_vport_state_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  // vport_state (kDown/kUp/kAdminAuto)
  static constexpr F admin_state{0x78, 4};
  // operational vport_state
  static constexpr F state{0x7c, 4};
};
static_assert(query_vport_state_out::kBits == 0x80 && query_vport_state_out::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_mac_address_layout_bits (0x40 bits, 8 bytes)
struct mac_address_layout {
  static constexpr uint32_t kBits = 0x40;
  using F = Field<mac_address_layout>;
  static constexpr F mac_addr_47_32{0x10, 16};
  static constexpr F mac_addr_31_0{0x20, 32};
};
static_assert(mac_address_layout::kBits == 0x40 && mac_address_layout::kBits / 8 == 8);

// mlx5_ifc.h: struct mlx5_ifc_nic_vport_context_bits (0x800 bits, 256 bytes)
struct nic_vport_context {
  static constexpr uint32_t kBits = 0x800;
  using F = Field<nic_vport_context>;
  static constexpr F min_wqe_inline_mode{0x5, 3};
  static constexpr F disable_mc_local_lb{0x1d, 1};
  static constexpr F disable_uc_local_lb{0x1e, 1};
  // 1: RoCE enabled on this vport
  static constexpr F roce_en{0x1f, 1};
  static constexpr F arm_change_event{0x20, 1};
  static constexpr F event_on_mtu{0x3b, 1};
  static constexpr F event_on_promisc_change{0x3c, 1};
  static constexpr F event_on_vlan_change{0x3d, 1};
  static constexpr F event_on_mc_address_change{0x3e, 1};
  static constexpr F event_on_uc_address_change{0x3f, 1};
  static constexpr F vhca_id_type{0x40, 1};
  static constexpr F affiliation_criteria{0x4c, 4};
  static constexpr F affiliated_vhca_id{0x50, 16};
  // port MTU, bytes
  static constexpr F mtu{0x130, 16};
  // 64-bit GUID
  static constexpr F system_image_guid{0x140, 64};
  // 64-bit GUID
  static constexpr F port_guid{0x180, 64};
  // 64-bit GUID
  static constexpr F node_guid{0x1c0, 64};
  static constexpr F qkey_violation_counter{0x340, 16};
  static constexpr F promisc_uc{0x780, 1};
  static constexpr F promisc_mc{0x781, 1};
  static constexpr F promisc_all{0x782, 1};
  static constexpr F allowed_list_type{0x785, 3};
  static constexpr F allowed_list_size{0x794, 12};
  // the factory MAC address
  static constexpr Sub<nic_vport_context, prm::mac_address_layout> permanent_address{0x7a0};
  // variable tail: allowed unicast MACs (mac_address_layout)
  static constexpr Array<nic_vport_context> current_uc_mac_address{0x800, 64, 0};
};
static_assert(nic_vport_context::kBits == 0x800 && nic_vport_context::kBits / 8 == 256);
static_assert(nic_vport_context::permanent_address.off == 0x7a0);

// mlx5_ifc.h: struct mlx5_ifc_query_nic_vport_context_in_bits (0x80 bits, 16 bytes)
struct query_nic_vport_context_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_nic_vport_context_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F other_vport{0x40, 1};
  static constexpr F vport_number{0x50, 16};
  static constexpr F allowed_list_type{0x65, 3};
};
static_assert(query_nic_vport_context_in::kBits == 0x80 &&
              query_nic_vport_context_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_query_nic_vport_context_out_bits (0x880 bits, 272 bytes)
struct query_nic_vport_context_out {
  static constexpr uint32_t kBits = 0x880;
  using F = Field<query_nic_vport_context_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr Sub<query_nic_vport_context_out, prm::nic_vport_context> nic_vport_context{0x80};
};
static_assert(query_nic_vport_context_out::kBits == 0x880 &&
              query_nic_vport_context_out::kBits / 8 == 272);
static_assert(query_nic_vport_context_out::nic_vport_context.off == 0x80);

// mlx5_ifc.h: struct mlx5_ifc_modify_nic_vport_field_select_bits (0x20 bits, 4 bytes)
struct modify_nic_vport_field_select {
  static constexpr uint32_t kBits = 0x20;
  using F = Field<modify_nic_vport_field_select>;
  static constexpr F affiliation{0x12, 1};
  static constexpr F disable_uc_local_lb{0x14, 1};
  static constexpr F disable_mc_local_lb{0x15, 1};
  static constexpr F node_guid{0x16, 1};
  static constexpr F port_guid{0x17, 1};
  static constexpr F min_inline{0x18, 1};
  // apply nic_vport_context.mtu
  static constexpr F mtu{0x19, 1};
  static constexpr F change_event{0x1a, 1};
  static constexpr F promisc{0x1b, 1};
  static constexpr F permanent_address{0x1c, 1};
  static constexpr F addresses_list{0x1d, 1};
  // apply nic_vport_context.roce_en
  static constexpr F roce_en{0x1e, 1};
};
static_assert(modify_nic_vport_field_select::kBits == 0x20 &&
              modify_nic_vport_field_select::kBits / 8 == 4);

// mlx5_ifc.h: struct mlx5_ifc_modify_nic_vport_context_in_bits (0x1000 bits, 512 bytes)
struct modify_nic_vport_context_in {
  static constexpr uint32_t kBits = 0x1000;
  using F = Field<modify_nic_vport_context_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F other_vport{0x40, 1};
  static constexpr F vport_number{0x50, 16};
  // which nic_vport_context fields to apply
  static constexpr Sub<modify_nic_vport_context_in, prm::modify_nic_vport_field_select>
      field_select{0x60};
  static constexpr Sub<modify_nic_vport_context_in, prm::nic_vport_context> nic_vport_context{
      0x800};
};
static_assert(modify_nic_vport_context_in::kBits == 0x1000 &&
              modify_nic_vport_context_in::kBits / 8 == 512);
static_assert(modify_nic_vport_context_in::field_select.off == 0x60);
static_assert(modify_nic_vport_context_in::nic_vport_context.off == 0x800);

// mlx5_ifc.h: struct mlx5_ifc_modify_nic_vport_context_out_bits (0x80 bits, 16 bytes)
struct modify_nic_vport_context_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<modify_nic_vport_context_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(modify_nic_vport_context_out::kBits == 0x80 &&
              modify_nic_vport_context_out::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_hca_vport_context_bits (0x1000 bits, 512 bytes)
struct hca_vport_context {
  static constexpr uint32_t kBits = 0x1000;
  using F = Field<hca_vport_context>;
  // hca_vport_sel bits (modify only)
  static constexpr F field_select{0x0, 32};
  static constexpr F sm_virt_aware{0x100, 1};
  static constexpr F has_smi{0x101, 1};
  static constexpr F has_raw{0x102, 1};
  static constexpr F grh_required{0x103, 1};
  // IBTA PortPhysicalState
  static constexpr F port_physical_state{0x110, 4};
  static constexpr F vport_state_policy{0x114, 4};
  // ib_port_state
  static constexpr F port_state{0x118, 4};
  // ib_port_state
  static constexpr F vport_state{0x11c, 4};
  static constexpr F system_image_guid{0x140, 64};
  static constexpr F port_guid{0x180, 64};
  static constexpr F node_guid{0x1c0, 64};
  static constexpr F cap_mask1{0x200, 32};
  static constexpr F cap_mask1_field_select{0x220, 32};
  static constexpr F cap_mask2{0x240, 32};
  static constexpr F cap_mask2_field_select{0x260, 32};
  // IB only
  static constexpr F lid{0x300, 16};
  static constexpr F init_type_reply{0x314, 4};
  static constexpr F lmc{0x318, 3};
  static constexpr F subnet_timeout{0x31b, 5};
  static constexpr F sm_lid{0x320, 16};
  static constexpr F sm_sl{0x330, 4};
  // Q_Key violations (UD)
  static constexpr F qkey_violation_counter{0x340, 16};
  // P_Key violations
  static constexpr F pkey_violation_counter{0x350, 16};
};
static_assert(hca_vport_context::kBits == 0x1000 && hca_vport_context::kBits / 8 == 512);

// mlx5_ifc.h: struct mlx5_ifc_query_hca_vport_context_in_bits (0x80 bits, 16 bytes)
struct query_hca_vport_context_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_hca_vport_context_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F other_vport{0x40, 1};
  // 1-based port
  static constexpr F port_num{0x4c, 4};
  static constexpr F vport_number{0x50, 16};
};
static_assert(query_hca_vport_context_in::kBits == 0x80 &&
              query_hca_vport_context_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_query_hca_vport_context_out_bits (0x1080 bits, 528 bytes)
struct query_hca_vport_context_out {
  static constexpr uint32_t kBits = 0x1080;
  using F = Field<query_hca_vport_context_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr Sub<query_hca_vport_context_out, prm::hca_vport_context> hca_vport_context{0x80};
};
static_assert(query_hca_vport_context_out::kBits == 0x1080 &&
              query_hca_vport_context_out::kBits / 8 == 528);
static_assert(query_hca_vport_context_out::hca_vport_context.off == 0x80);

// mlx5_ifc.h: struct mlx5_ifc_array128_auto_bits (0x80 bits, 16 bytes)
struct array128_auto {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<array128_auto>;
  static constexpr Bytes<array128_auto> value{0x0, 128};
};
static_assert(array128_auto::kBits == 0x80 && array128_auto::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_query_hca_vport_gid_in_bits (0x80 bits, 16 bytes)
struct query_hca_vport_gid_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_hca_vport_gid_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F other_vport{0x40, 1};
  static constexpr F port_num{0x4c, 4};
  static constexpr F vport_number{0x50, 16};
  // first GID to return; gids_num entries come back
  static constexpr F gid_index{0x70, 16};
};
static_assert(query_hca_vport_gid_in::kBits == 0x80 && query_hca_vport_gid_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_query_hca_vport_gid_out_bits (0x80 bits, 16 bytes)
struct query_hca_vport_gid_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_hca_vport_gid_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  // number of gid[] entries
  static constexpr F gids_num{0x60, 16};
  // variable tail: 16-byte GIDs (array128_auto)
  static constexpr Array<query_hca_vport_gid_out> gid{0x80, 0x80, 0};  // of array128_auto
};
static_assert(query_hca_vport_gid_out::kBits == 0x80 && query_hca_vport_gid_out::kBits / 8 == 16);
static_assert(query_hca_vport_gid_out::gid.off == 0x80);

// mlx5_ifc.h: struct mlx5_ifc_pkey_bits (0x20 bits, 4 bytes)
struct pkey {
  static constexpr uint32_t kBits = 0x20;
  using F = Field<pkey>;
  static constexpr F value{0x10, 16};
};
static_assert(pkey::kBits == 0x20 && pkey::kBits / 8 == 4);

// mlx5_ifc.h: struct mlx5_ifc_query_hca_vport_pkey_in_bits (0x80 bits, 16 bytes)
struct query_hca_vport_pkey_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_hca_vport_pkey_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F other_vport{0x40, 1};
  static constexpr F port_num{0x4c, 4};
  static constexpr F vport_number{0x50, 16};
  static constexpr F pkey_index{0x70, 16};
};
static_assert(query_hca_vport_pkey_in::kBits == 0x80 && query_hca_vport_pkey_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_query_hca_vport_pkey_out_bits (0x80 bits, 16 bytes)
struct query_hca_vport_pkey_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_hca_vport_pkey_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  // variable tail: 4-byte entries (struct pkey)
  static constexpr Array<query_hca_vport_pkey_out> pkey{0x80, 0x20, 0};  // of pkey
};
static_assert(query_hca_vport_pkey_out::kBits == 0x80 && query_hca_vport_pkey_out::kBits / 8 == 16);
static_assert(query_hca_vport_pkey_out::pkey.off == 0x80);

// mlx5_ifc.h: struct mlx5_ifc_roce_addr_layout_bits (0x100 bits, 32 bytes)
struct roce_addr_layout {
  static constexpr uint32_t kBits = 0x100;
  using F = Field<roce_addr_layout>;
  // 16 bytes, network order
  static constexpr Bytes<roce_addr_layout> source_l3_address{0x0, 128};
  // 1: tag with vlan_id
  static constexpr F vlan_valid{0x83, 1};
  static constexpr F vlan_id{0x84, 12};
  // source MAC bits 47..32
  static constexpr F source_mac_47_32{0x90, 16};
  // source MAC bits 31..0
  static constexpr F source_mac_31_0{0xa0, 32};
  // roce_l3_type
  static constexpr F roce_l3_type{0xd4, 4};
  // roce_version
  static constexpr F roce_version{0xd8, 8};
};
static_assert(roce_addr_layout::kBits == 0x100 && roce_addr_layout::kBits / 8 == 32);

// mlx5_ifc.h: struct mlx5_ifc_query_roce_address_in_bits (0x80 bits, 16 bytes)
struct query_roce_address_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_roce_address_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  // GID table index
  static constexpr F roce_address_index{0x40, 16};
  // 1-based port
  static constexpr F vhca_port_num{0x5c, 4};
};
static_assert(query_roce_address_in::kBits == 0x80 && query_roce_address_in::kBits / 8 == 16);

// mlx5_ifc.h: struct mlx5_ifc_query_roce_address_out_bits (0x180 bits, 48 bytes)
struct query_roce_address_out {
  static constexpr uint32_t kBits = 0x180;
  using F = Field<query_roce_address_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr Sub<query_roce_address_out, prm::roce_addr_layout> roce_address{0x80};
};
static_assert(query_roce_address_out::kBits == 0x180 && query_roce_address_out::kBits / 8 == 48);
static_assert(query_roce_address_out::roce_address.off == 0x80);

// mlx5_ifc.h: struct mlx5_ifc_set_roce_address_in_bits (0x180 bits, 48 bytes)
struct set_roce_address_in {
  static constexpr uint32_t kBits = 0x180;
  using F = Field<set_roce_address_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  // GID table index
  static constexpr F roce_address_index{0x40, 16};
  // 1-based port
  static constexpr F vhca_port_num{0x5c, 4};
  static constexpr Sub<set_roce_address_in, prm::roce_addr_layout> roce_address{0x80};
};
static_assert(set_roce_address_in::kBits == 0x180 && set_roce_address_in::kBits / 8 == 48);
static_assert(set_roce_address_in::roce_address.off == 0x80);

// mlx5_ifc.h: struct mlx5_ifc_set_roce_address_out_bits (0x80 bits, 16 bytes)
struct set_roce_address_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<set_roce_address_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(set_roce_address_out::kBits == 0x80 && set_roce_address_out::kBits / 8 == 16);

// Key offsets (mlx5_ifc.h; reserved_at_<hex> names confirm the sums).
static_assert(query_vport_state_out::admin_state.off == 0x78 &&
              query_vport_state_out::state.off == 0x7c);
static_assert(nic_vport_context::roce_en.off == 0x1f && nic_vport_context::mtu.off == 0x130);
static_assert(nic_vport_context::node_guid.off == 0x1c0);
static_assert(nic_vport_context::current_uc_mac_address.off == nic_vport_context::kBits &&
              nic_vport_context::current_uc_mac_address.stride == 64);
static_assert(nic_vport_context::permanent_address.off == 0x7a0 &&
              nic_vport_context::permanent_address.end() == 0x7e0);
static_assert(query_nic_vport_context_out::nic_vport_context.end() ==
              query_nic_vport_context_out::kBits);
static_assert(modify_nic_vport_field_select::roce_en.off == 0x1e);
static_assert(modify_nic_vport_context_in::field_select.off == 0x60 &&
              modify_nic_vport_context_in::nic_vport_context.off == 0x800);
static_assert(hca_vport_context::port_state.off == 0x118 && hca_vport_context::lid.off == 0x300);
static_assert(hca_vport_context::pkey_violation_counter.off == 0x350);
static_assert(query_hca_vport_context_out::hca_vport_context.end() ==
              query_hca_vport_context_out::kBits);
static_assert(query_hca_vport_gid_out::gid.byte_off(1) == 32);
static_assert(query_hca_vport_pkey_out::pkey.byte_off(2) == 24);
static_assert(roce_addr_layout::source_l3_address.size() == 16 &&
              roce_addr_layout::roce_version.off == 0xd8);
static_assert(set_roce_address_in::roce_address.off == 0x80 &&
              set_roce_address_in::roce_address.end() == set_roce_address_in::kBits);
static_assert(query_roce_address_out::roce_address.end() == query_roce_address_out::kBits);

}  // namespace kbv::prm
