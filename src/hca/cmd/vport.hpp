// SPDX-License-Identifier: BSD-3-Clause
//
// Vport and RoCE address commands (hca/prm/vport.hpp from mlx5_ifc.h):
// QUERY_VPORT_STATE 0x750, QUERY_NIC_VPORT_CONTEXT 0x754,
// MODIFY_NIC_VPORT_CONTEXT 0x755 (roce_en, docs/PRM.md bring-up step 10 on
// Ethernet), QUERY_HCA_VPORT_CONTEXT 0x762, QUERY_HCA_VPORT_GID 0x764,
// QUERY_ROCE_ADDRESS 0x760, SET_ROCE_ADDRESS 0x761.
//
// Ports are 1-based; `other_vport` false addresses the caller's own vport.
// GIDs are 16 bytes in network order. MACs are 48-bit values in the low bits.
//
// Threading: as CmdQueue.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "hca/cmd/exec.hpp"

namespace kbv::hca::cmd {

using Gid = std::array<uint8_t, 16>;

struct VportAttr {
  bool other_vport = false;
  uint16_t vport_number = 0;
};

struct VportState {
  uint32_t state = 0;  // prm::vport_state::kDown / kUp
  uint32_t admin_state = 0;
};
// op_mod: prm::vport_state_op_mod (0 = the function's own NIC vport).
Status query_vport_state(CmdQueue& q, uint16_t op_mod, const VportAttr& v, Done<VportState> done);

struct NicVportContext {
  bool roce_en = false;
  uint32_t mtu = 0;  // bytes, as firmware reports it
  uint64_t system_image_guid = 0;
  uint64_t port_guid = 0;
  uint64_t node_guid = 0;
  uint64_t permanent_mac = 0;  // 48 bits
};
Status query_nic_vport_context(CmdQueue& q, const VportAttr& v, Done<NicVportContext> done);
// MODIFY_NIC_VPORT_CONTEXT with field_select.roce_en: turns RoCE on/off.
Status modify_nic_vport_roce_en(CmdQueue& q, bool enable, DoneStatus done);

struct HcaVportContext {
  uint32_t port_physical_state = 0;  // IBTA PortPhysicalState
  uint32_t port_state = 0;           // prm::ib_port_state
  uint32_t vport_state = 0;
  bool grh_required = false;
  uint64_t system_image_guid = 0, port_guid = 0, node_guid = 0;
  uint32_t cap_mask1 = 0, cap_mask2 = 0;
  uint32_t lid = 0, lmc = 0, sm_lid = 0, sm_sl = 0, subnet_timeout = 0;
  uint32_t qkey_violation_counter = 0, pkey_violation_counter = 0;
};
Status query_hca_vport_context(CmdQueue& q, uint8_t port_num, const VportAttr& v,
                               Done<HcaVportContext> done);

// GIDs of a port: the one at gid_index, or (gid_index == 0xFFFF) the whole
// table of `table_size` entries (kernel vport.c mlx5_query_hca_vport_gid).
inline constexpr uint16_t kAllGids = 0xFFFF;
Status query_hca_vport_gid(CmdQueue& q, uint8_t port_num, uint16_t gid_index, uint32_t table_size,
                           Done<std::vector<Gid>> done);

// Entry pkey_index of a port's P_Key table (QUERY_HCA_VPORT_PKEY; kernel
// vport.c mlx5_query_hca_vport_pkey with one entry). The P_Key, host order.
Status query_hca_vport_pkey(CmdQueue& q, uint8_t port_num, uint16_t pkey_index,
                            Done<uint16_t> done);
// The whole table of `table_size` entries in one command (pkey_index
// 0xFFFF, kernel mlx5_query_hca_vport_pkey's "all" form), host order.
Status query_hca_vport_pkey_table(CmdQueue& q, uint8_t port_num, uint32_t table_size,
                                  Done<std::vector<uint16_t>> done);

struct RoceAddress {
  Gid gid{};
  bool vlan_valid = false;
  uint32_t vlan_id = 0;
  uint64_t source_mac = 0;  // 48 bits
  uint32_t l3_type = 0;     // prm::roce_l3_type
  uint32_t version = 0;     // prm::roce_version
};
Status query_roce_address(CmdQueue& q, uint8_t port_num, uint16_t index, Done<RoceAddress> done);
Status set_roce_address(CmdQueue& q, uint8_t port_num, uint16_t index, const RoceAddress& a,
                        DoneStatus done);

}  // namespace kbv::hca::cmd
