// SPDX-License-Identifier: BSD-3-Clause
//
// QUERY_HCA_CAP 0x100 and SET_HCA_CAP 0x109 (hca/prm/hca_cap.hpp from
// mlx5_ifc.h cmd_hca_cap / roce_cap / query_hca_cap_in/out /
// set_hca_cap_in/out; op_mod = cap_type << 1 | mode, docs/PRM.md step 7), and
// HcaCaps: the capabilities the driver and the verbs layer use, parsed.
//
// Raw capability blocks are 4096 bytes (prm::hca_cap_union); SET_HCA_CAP
// takes a block in the same layout (the driver starts from the "current"
// block and edits fields, as mlx5_vfio.c handle_hca_cap does).
//
// Threading: as CmdQueue; HcaCaps is a value.
#pragma once

#include <cstdint>
#include <vector>

#include "hca/cmd/exec.hpp"
#include "hca/prm/qpc.hpp"

namespace kbv::hca {

// General device capabilities (cmd_hca_cap) + RoCE (roce_cap). log_* fields
// are log2 of a count, as the PRM gives them.
struct HcaCaps {
  // cmd_hca_cap
  uint32_t log_max_qp = 0, log_max_qp_sz = 0;
  uint32_t log_max_cq = 0, log_max_cq_sz = 0;
  uint32_t log_max_eq = 0, log_max_eq_sz = 0;
  uint32_t log_max_srq = 0, log_max_srq_sz = 0;
  uint32_t log_max_mkey = 0, log_max_pd = 0, log_max_transport_domain = 0;
  uint32_t log_max_msg = 0, log_max_mcg = 0, max_qp_mcg = 0;
  uint32_t log_max_ra_req_qp = 0, log_max_ra_res_qp = 0;
  uint32_t max_num_eqs = 0;
  uint32_t num_ports = 0, port_type = 0;  // port_type 0 IB, 1 Ethernet
  uint32_t gid_table_size = 0, pkey_table_size = 0;
  uint32_t local_ca_ack_delay = 0;
  uint32_t device_frequency_khz = 0;  // internal timer rate (kbv_device_read_clock)
  uint32_t cmdif_checksum = 0;        // 0 off
  uint32_t cqe_version = 0;
  uint32_t log_pg_sz = 0;
  bool uar_4k = false;
  uint32_t log_uar_page_sz = 0, num_of_uars_per_page = 0;
  bool bf = false;
  uint32_t log_bf_reg_size = 0;
  uint32_t max_wqe_sz_sq = 0, max_wqe_sz_rq = 0;
  bool roce = false, atomic = false, rc = false, uc = false, ud = false, xrc = false;
  bool driver_version = false, release_all_pages = false, fast_teardown = false;
  bool force_teardown = false;
  // roce_cap (valid when roce)
  uint32_t roce_version = 0;  // bitmask: prm::kRoceVersion1Cap / kRoceVersion2Cap
  uint32_t roce_l3_type = 0;
  uint32_t r_roce_dest_udp_port = 0;
  uint32_t r_roce_min_src_udp_port = 0, r_roce_max_src_udp_port = 0;
  uint32_t roce_address_table_size = 0;
  // roce_cap.qp_ts_format (prm::qpc_ts_format::kCap*): the CQE timestamp
  // formats RC/UC/UD QPs may ask for. 0 (free-running only) on a device
  // without RoCE caps, as the field reads there.
  uint32_t qp_ts_format = 0;
  // The free-running format is offered (kernel mlx5_ib qp.c fr_supported).
  bool ts_free_running() const {
    return qp_ts_format == prm::qpc_ts_format::kCapFreeRunning ||
           qp_ts_format == prm::qpc_ts_format::kCapFreeRunningAndRealTime;
  }

  // Fills the general fields from a cmd_hca_cap block (4096 bytes).
  void parse_general(std::span<const std::byte> cap);
  // Fills the roce_* fields from a roce_cap block.
  void parse_roce(std::span<const std::byte> cap);
};

namespace cmd {

inline constexpr uint32_t kCapBlockBytes = 4096;  // prm::hca_cap_union

// The capability block of `type` (max: supported; cur: in effect).
Status query_hca_cap(CmdQueue& q, prm::CapType type, prm::CapMode mode,
                     Done<std::vector<std::byte>> done);
// Sets the capability block of `type` (cap.size() == kCapBlockBytes).
Status set_hca_cap(CmdQueue& q, prm::CapType type, std::span<const std::byte> cap, DoneStatus done);

}  // namespace cmd
}  // namespace kbv::hca
