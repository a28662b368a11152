// SPDX-License-Identifier: BSD-3-Clause
//
// Device capabilities: QUERY_HCA_CAP / SET_HCA_CAP and the capability layouts
// they carry (general device caps, RoCE caps, atomic caps).
//
// Sources: kernel include/linux/mlx5/mlx5_ifc.h, structs
// mlx5_ifc_cmd_hca_cap_bits, mlx5_ifc_roce_cap_bits, mlx5_ifc_atomic_caps_bits,
// union mlx5_ifc_hca_cap_union_bits, mlx5_ifc_query_hca_cap_in/out_bits and
// mlx5_ifc_set_hca_cap_in/out_bits. Each bit offset is the sum of the widths
// of the members before it (reserved ones included), checked against the
// kernel's reserved_at_<offset> names. Field names are the kernel's (typos
// included, so they can be grepped). Capability op_mod values are in
// opcodes.hpp (hca_cap_op_mod, CapType, CapMode).
//
// A capability layout is 2048 bits (256 B) inside a 4096-byte union; the
// query output and the set input carry the union at byte 16. QUERY_HCA_CAP
// therefore needs an output of 16 + 4096 bytes (8 mailbox blocks), SET_HCA_CAP
// an input of the same size.
//
// Threading: layouts and constants only.
#pragma once

#include <cstdint>

#include "hca/prm/field.hpp"

namespace kbv::prm {

// mlx5_ifc.h mlx5_ifc_cmd_hca_cap_bits (0x800 bits): the general device
// capabilities (cap type GENERAL). Every named field of the kernel's layout.
// Widths: log_* fields are log2 values; max_wqe_sz_* are bytes; cmdif_checksum
// 0 = off (drivers SET_HCA_CAP it to 0), cqe_version 0/1; port_type 0 = IB,
// 1 = Ethernet; log_pg_sz is the log2 of the smallest page size firmware accepts.
struct cmd_hca_cap {
  static constexpr uint32_t kBits = 0x800;
  using F = Field<cmd_hca_cap>;
  // dword 0 (byte 0x0)
  static constexpr F shared_object_to_user_object_allowed{0x10, 1};
  static constexpr F vhca_resource_manager{0x1f, 1};
  // dword 1 (byte 0x4)
  static constexpr F hca_cap_2{0x20, 1};
  static constexpr F create_lag_when_not_master_up{0x21, 1};
  static constexpr F dtor{0x22, 1};
  static constexpr F event_on_vhca_state_teardown_request{0x23, 1};
  static constexpr F event_on_vhca_state_in_use{0x24, 1};
  static constexpr F event_on_vhca_state_active{0x25, 1};
  static constexpr F event_on_vhca_state_allocated{0x26, 1};
  static constexpr F event_on_vhca_state_invalid{0x27, 1};
  static constexpr F vhca_id{0x30, 16};
  // dword 4 (byte 0x10)
  static constexpr F log_max_srq_sz{0x80, 8};
  static constexpr F log_max_qp_sz{0x88, 8};
  static constexpr F event_cap{0x90, 1};
  static constexpr F isolate_vl_tc_new{0x93, 1};
  static constexpr F prio_tag_required{0x98, 1};
  static constexpr F log_max_qp{0x9b, 5};
  // dword 5 (byte 0x14)
  static constexpr F ece_support{0xa3, 1};
  static constexpr F reg_c_preserve{0xa9, 1};
  static constexpr F log_max_srq{0xab, 5};
  static constexpr F uplink_follow{0xb1, 1};
  static constexpr F ts_cqe_to_dest_cqn{0xb2, 1};
  static constexpr F go_back_n{0xb9, 1};
  // dword 6 (byte 0x18)
  static constexpr F max_sgl_for_optimized_performance{0xc0, 8};
  static constexpr F log_max_cq_sz{0xc8, 8};
  static constexpr F relaxed_ordering_write_umr{0xd0, 1};
  static constexpr F relaxed_ordering_read_umr{0xd1, 1};
  static constexpr F virtio_net_device_emualtion_manager{0xd9, 1};
  static constexpr F virtio_blk_device_emualtion_manager{0xda, 1};
  static constexpr F log_max_cq{0xdb, 5};
  // dword 7 (byte 0x1c)
  static constexpr F log_max_eq_sz{0xe0, 8};
  static constexpr F relaxed_ordering_write{0xe8, 1};
  static constexpr F relaxed_ordering_read_pci_enabled{0xe9, 1};
  static constexpr F log_max_mkey{0xea, 6};
  static constexpr F terminate_scatter_list_mkey{0xf6, 1};
  static constexpr F repeated_mkey{0xf7, 1};
  static constexpr F dump_fill_mkey{0xf8, 1};
  static constexpr F fast_teardown{0xfb, 1};
  static constexpr F log_max_eq{0xfc, 4};
  // dword 8 (byte 0x20)
  static constexpr F max_indirection{0x100, 8};
  static constexpr F fixed_buffer_size{0x108, 1};
  static constexpr F log_max_mrw_sz{0x109, 7};
  static constexpr F force_teardown{0x110, 1};
  static constexpr F log_max_bsf_list_size{0x112, 6};
  static constexpr F umr_extended_translation_offset{0x118, 1};
  static constexpr F null_mkey{0x119, 1};
  static constexpr F log_max_klm_list_size{0x11a, 6};
  // dword 9 (byte 0x24)
  static constexpr F qpc_extension{0x122, 1};
  static constexpr F log_max_ra_req_dc{0x12a, 6};
  static constexpr F eth_wqe_too_small{0x132, 1};
  static constexpr F vnic_env_cq_overrun{0x139, 1};
  static constexpr F log_max_ra_res_dc{0x13a, 6};
  // dword 10 (byte 0x28)
  static constexpr F release_all_pages{0x145, 1};
  static constexpr F must_not_use{0x146, 1};
  static constexpr F roce_accl{0x149, 1};
  static constexpr F log_max_ra_req_qp{0x14a, 6};
  static constexpr F log_max_ra_res_qp{0x15a, 6};
  // dword 11 (byte 0x2c)
  static constexpr F end_pad{0x160, 1};
  static constexpr F cc_query_allowed{0x161, 1};
  static constexpr F cc_modify_allowed{0x162, 1};
  static constexpr F start_pad{0x163, 1};
  static constexpr F cache_line_128byte{0x164, 1};
  static constexpr F rts2rts_qp_counters_set_id{0x169, 1};
  static constexpr F vnic_env_int_rq_oob{0x16c, 1};
  static constexpr F sbcam_reg{0x16d, 1};
  static constexpr F qcam_reg{0x16f, 1};
  static constexpr F gid_table_size{0x170, 16};
  // dword 12 (byte 0x30)
  static constexpr F out_of_seq_cnt{0x180, 1};
  static constexpr F vport_counters{0x181, 1};
  static constexpr F retransmission_q_counters{0x182, 1};
  static constexpr F debug{0x183, 1};
  static constexpr F modify_rq_counter_set_id{0x184, 1};
  static constexpr F rq_delay_drop{0x185, 1};
  static constexpr F max_qp_cnt{0x186, 10};
  static constexpr F pkey_table_size{0x190, 16};
  // dword 13 (byte 0x34)
  static constexpr F vport_group_manager{0x1a0, 1};
  static constexpr F vhca_group_manager{0x1a1, 1};
  static constexpr F ib_virt{0x1a2, 1};
  static constexpr F eth_virt{0x1a3, 1};
  static constexpr F vnic_env_queue_counters{0x1a4, 1};
  static constexpr F ets{0x1a5, 1};
  static constexpr F nic_flow_table{0x1a6, 1};
  static constexpr F eswitch_manager{0x1a7, 1};
  static constexpr F device_memory{0x1a8, 1};
  static constexpr F mcam_reg{0x1a9, 1};
  static constexpr F pcam_reg{0x1aa, 1};
  static constexpr F local_ca_ack_delay{0x1ab, 5};
  static constexpr F port_module_event{0x1b0, 1};
  static constexpr F enhanced_error_q_counters{0x1b1, 1};
  static constexpr F ports_check{0x1b2, 1};
  static constexpr F disable_link_up{0x1b4, 1};
  static constexpr F beacon_led{0x1b5, 1};
  static constexpr F port_type{0x1b6, 2};
  static constexpr F num_ports{0x1b8, 8};
  // dword 14 (byte 0x38)
  static constexpr F pps{0x1c1, 1};
  static constexpr F pps_modify{0x1c2, 1};
  static constexpr F log_max_msg{0x1c3, 5};
  static constexpr F max_tc{0x1cc, 4};
  static constexpr F temp_warn_event{0x1d0, 1};
  static constexpr F dcbx{0x1d1, 1};
  static constexpr F general_notification_event{0x1d2, 1};
  static constexpr F fpga{0x1d5, 1};
  static constexpr F rol_s{0x1d6, 1};
  static constexpr F rol_g{0x1d7, 1};
  static constexpr F wol_s{0x1d9, 1};
  static constexpr F wol_g{0x1da, 1};
  static constexpr F wol_a{0x1db, 1};
  static constexpr F wol_b{0x1dc, 1};
  static constexpr F wol_m{0x1dd, 1};
  static constexpr F wol_u{0x1de, 1};
  static constexpr F wol_p{0x1df, 1};
  // dword 15 (byte 0x3c)
  static constexpr F stat_rate_support{0x1e0, 16};
  static constexpr F pci_sync_for_fw_update_event{0x1f1, 1};
  static constexpr F init2_lag_tx_port_affinity{0x1f8, 1};
  static constexpr F cqe_version{0x1fc, 4};
  // dword 16 (byte 0x40)
  static constexpr F compact_address_vector{0x200, 1};
  static constexpr F striding_rq{0x201, 1};
  static constexpr F ipoib_enhanced_offloads{0x203, 1};
  static constexpr F ipoib_basic_offloads{0x204, 1};
  static constexpr F repeated_block_disabled{0x206, 1};
  static constexpr F umr_modify_entity_size_disabled{0x207, 1};
  static constexpr F umr_modify_atomic_disabled{0x208, 1};
  static constexpr F umr_indirect_mkey_disabled{0x209, 1};
  static constexpr F umr_fence{0x20a, 2};
  static constexpr F dc_req_scat_data_cqe{0x20c, 1};
  static constexpr F drain_sigerr{0x20f, 1};
  static constexpr F cmdif_checksum{0x210, 2};
  static constexpr F sigerr_cqe{0x212, 1};
  static constexpr F wq_signature{0x214, 1};
  static constexpr F sctr_data_cqe{0x215, 1};
  static constexpr F sho{0x217, 1};
  static constexpr F tph{0x218, 1};
  static constexpr F rf{0x219, 1};
  static constexpr F dct{0x21a, 1};
  static constexpr F qos{0x21b, 1};
  static constexpr F eth_net_offloads{0x21c, 1};
  static constexpr F roce{0x21d, 1};
  static constexpr F atomic{0x21e, 1};
  // dword 17 (byte 0x44)
  static constexpr F cq_oi{0x220, 1};
  static constexpr F cq_resize{0x221, 1};
  static constexpr F cq_moderation{0x222, 1};
  static constexpr F cq_period_mode_modify{0x223, 1};
  static constexpr F cq_eq_remap{0x226, 1};
  static constexpr F pg{0x227, 1};
  static constexpr F block_lb_mc{0x228, 1};
  static constexpr F scqe_break_moderation{0x22a, 1};
  static constexpr F cq_period_start_from_cqe{0x22b, 1};
  static constexpr F cd{0x22c, 1};
  static constexpr F apm{0x22e, 1};
  static constexpr F vector_calc{0x22f, 1};
  static constexpr F umr_ptr_rlky{0x230, 1};
  static constexpr F imaicl{0x231, 1};
  static constexpr F qp_packet_based{0x232, 1};
  static constexpr F qkv{0x236, 1};
  static constexpr F pkv{0x237, 1};
  static constexpr F set_deth_sqpn{0x238, 1};
  static constexpr F xrc{0x23c, 1};
  static constexpr F ud{0x23d, 1};
  static constexpr F uc{0x23e, 1};
  static constexpr F rc{0x23f, 1};
  // dword 18 (byte 0x48)
  static constexpr F uar_4k{0x240, 1};
  static constexpr F fl_rc_qp_when_roce_disabled{0x248, 1};
  static constexpr F regexp_params{0x249, 1};
  static constexpr F uar_sz{0x24a, 6};
  static constexpr F port_selection_cap{0x250, 1};
  static constexpr F umem_uid_0{0x252, 1};
  static constexpr F log_pg_sz{0x258, 8};
  // dword 19 (byte 0x4c)
  static constexpr F bf{0x260, 1};
  static constexpr F driver_version{0x261, 1};
  static constexpr F pad_tx_eth_packet{0x262, 1};
  static constexpr F mkey_by_name{0x266, 1};
  static constexpr F log_bf_reg_size{0x26b, 5};
  static constexpr F qp_error_syndrome{0x273, 1};
  static constexpr F lag_dct{0x276, 2};
  static constexpr F lag_tx_port_affinity{0x278, 1};
  static constexpr F lag_native_fdb_selection{0x279, 1};
  static constexpr F lag_master{0x27b, 1};
  static constexpr F num_lag_ports{0x27c, 4};
  // dword 20 (byte 0x50)
  static constexpr F max_wqe_sz_sq{0x290, 16};
  // dword 21 (byte 0x54)
  static constexpr F shampo{0x2ab, 1};
  static constexpr F max_wqe_sz_rq{0x2b0, 16};
  // dword 22 (byte 0x58)
  static constexpr F max_flow_counter_31_16{0x2c0, 16};
  static constexpr F max_wqe_sz_sq_dc{0x2d0, 16};
  // dword 23 (byte 0x5c)
  static constexpr F max_qp_mcg{0x2e7, 25};
  // dword 24 (byte 0x60)
  static constexpr F flow_counter_bulk_alloc{0x310, 8};
  static constexpr F log_max_mcg{0x318, 8};
  // dword 25 (byte 0x64)
  static constexpr F log_max_transport_domain{0x323, 5};
  static constexpr F relaxed_ordering_read{0x32a, 1};
  static constexpr F log_max_pd{0x32b, 5};
  static constexpr F log_max_xrcd{0x33b, 5};
  // dword 26 (byte 0x68)
  static constexpr F nic_receive_steering_discard{0x340, 1};
  static constexpr F receive_discard_vport_down{0x341, 1};
  static constexpr F transmit_discard_vport_down{0x342, 1};
  static constexpr F eq_overrun_count{0x343, 1};
  static constexpr F invalid_command_count{0x345, 1};
  static constexpr F quota_exceeded_count{0x346, 1};
  static constexpr F log_max_flow_counter_bulk{0x348, 8};
  static constexpr F max_flow_counter_15_0{0x350, 16};
  // dword 27 (byte 0x6c)
  static constexpr F log_max_rq{0x363, 5};
  static constexpr F log_max_sq{0x36b, 5};
  static constexpr F log_max_tir{0x373, 5};
  static constexpr F log_max_tis{0x37b, 5};
  // dword 28 (byte 0x70)
  static constexpr F basic_cyclic_rcv_wqe{0x380, 1};
  static constexpr F log_max_rmp{0x383, 5};
  static constexpr F log_max_rqt{0x38b, 5};
  static constexpr F log_max_rqt_size{0x393, 5};
  static constexpr F log_max_tis_per_sq{0x39b, 5};
  // dword 29 (byte 0x74)
  static constexpr F ext_stride_num_range{0x3a0, 1};
  static constexpr F roce_rw_supported{0x3a1, 1};
  static constexpr F log_max_current_uc_list_wr_supported{0x3a2, 1};
  static constexpr F log_max_stride_sz_rq{0x3a3, 5};
  static constexpr F log_min_stride_sz_rq{0x3ab, 5};
  static constexpr F log_max_stride_sz_sq{0x3b3, 5};
  static constexpr F log_min_stride_sz_sq{0x3bb, 5};
  // dword 30 (byte 0x78)
  static constexpr F hairpin{0x3c0, 1};
  static constexpr F log_max_hairpin_queues{0x3c3, 5};
  static constexpr F log_max_hairpin_wq_data_sz{0x3cb, 5};
  static constexpr F log_max_hairpin_num_packets{0x3d3, 5};
  static constexpr F log_max_wq_sz{0x3db, 5};
  // dword 31 (byte 0x7c)
  static constexpr F nic_vport_change_event{0x3e0, 1};
  static constexpr F disable_local_lb_uc{0x3e1, 1};
  static constexpr F disable_local_lb_mc{0x3e2, 1};
  static constexpr F log_min_hairpin_wq_data_sz{0x3e3, 5};
  static constexpr F vhca_state{0x3ea, 1};
  static constexpr F log_max_vlan_list{0x3eb, 5};
  static constexpr F log_max_current_mc_list{0x3f3, 5};
  static constexpr F log_max_current_uc_list{0x3fb, 5};
  // dword 32 (byte 0x80)
  static constexpr F general_obj_types{0x400, 64};
  // dword 34 (byte 0x88)
  static constexpr F sq_ts_format{0x440, 2};
  static constexpr F rq_ts_format{0x442, 2};
  static constexpr F steering_format_version{0x444, 4};
  static constexpr F create_qp_start_hint{0x448, 24};
  // dword 35 (byte 0x8c)
  static constexpr F ats{0x461, 1};
  static constexpr F log_max_uctx{0x463, 5};
  static constexpr F ipsec_offload{0x46a, 1};
  static constexpr F log_max_umem{0x46b, 5};
  static constexpr F max_num_eqs{0x470, 16};
  // dword 36 (byte 0x90)
  static constexpr F tls_tx{0x481, 1};
  static constexpr F tls_rx{0x482, 1};
  static constexpr F log_max_l2_table{0x483, 5};
  static constexpr F log_uar_page_sz{0x490, 16};
  // dword 38 (byte 0x98)
  static constexpr F device_frequency_mhz{0x4c0, 32};
  // dword 39 (byte 0x9c)
  static constexpr F device_frequency_khz{0x4e0, 32};
  // dword 41 (byte 0xa4)
  static constexpr F num_of_uars_per_page{0x520, 32};
  // dword 42 (byte 0xa8)
  static constexpr F flex_parser_protocols{0x540, 32};
  // dword 43 (byte 0xac)
  static constexpr F max_geneve_tlv_options{0x560, 8};
  static constexpr F max_geneve_tlv_option_data_len{0x56b, 5};
  static constexpr F adv_virtualization{0x579, 1};
  // dword 44 (byte 0xb0)
  static constexpr F log_max_dci_stream_channels{0x58b, 5};
  static constexpr F log_max_dci_errored_streams{0x593, 5};
  // dword 45 (byte 0xb4)
  static constexpr F enhanced_cqe_compression{0x5b0, 1};
  static constexpr F log_max_dek{0x5b3, 5};
  static constexpr F mini_cqe_resp_stride_index{0x5bc, 1};
  static constexpr F cqe_128_always{0x5bd, 1};
  static constexpr F cqe_compression_128{0x5be, 1};
  static constexpr F cqe_compression{0x5bf, 1};
  // dword 46 (byte 0xb8)
  static constexpr F cqe_compression_timeout{0x5c0, 16};
  static constexpr F cqe_compression_max_num{0x5d0, 16};
  // dword 47 (byte 0xbc)
  static constexpr F flex_parser_id_gtpu_dw_0{0x5e8, 4};
  static constexpr F tag_matching{0x5f0, 1};
  static constexpr F rndv_offload_rc{0x5f1, 1};
  static constexpr F rndv_offload_dc{0x5f2, 1};
  static constexpr F log_tag_matching_list_sz{0x5f3, 5};
  static constexpr F log_max_xrq{0x5fb, 5};
  // dword 48 (byte 0xc0)
  static constexpr F affiliate_nic_vport_criteria{0x600, 8};
  static constexpr F native_port_num{0x608, 8};
  static constexpr F num_vhca_ports{0x610, 8};
  static constexpr F flex_parser_id_gtpu_teid{0x618, 4};
  static constexpr F sw_owner_id{0x61e, 1};
  // dword 49 (byte 0xc4)
  static constexpr F max_num_of_monitor_counters{0x620, 16};
  static constexpr F num_ppcnt_monitor_counters{0x630, 16};
  // dword 50 (byte 0xc8)
  static constexpr F max_num_sf{0x640, 16};
  static constexpr F num_q_monitor_counters{0x650, 16};
  // dword 52 (byte 0xd0)
  static constexpr F sf{0x680, 1};
  static constexpr F sf_set_partition{0x681, 1};
  static constexpr F log_max_sf{0x683, 5};
  static constexpr F apu{0x688, 1};
  static constexpr F migration{0x68d, 1};
  static constexpr F log_min_sf_size{0x690, 8};
  static constexpr F max_num_sf_partitions{0x698, 8};
  // dword 53 (byte 0xd4)
  static constexpr F uctx_cap{0x6a0, 32};
  // dword 54 (byte 0xd8)
  static constexpr F flex_parser_id_geneve_tlv_option_0{0x6c4, 4};
  static constexpr F flex_parser_id_icmp_dw1{0x6c8, 4};
  static constexpr F flex_parser_id_icmp_dw0{0x6cc, 4};
  static constexpr F flex_parser_id_icmpv6_dw1{0x6d0, 4};
  static constexpr F flex_parser_id_icmpv6_dw0{0x6d4, 4};
  static constexpr F flex_parser_id_outer_first_mpls_over_gre{0x6d8, 4};
  static constexpr F flex_parser_id_outer_first_mpls_over_udp_label{0x6dc, 4};
  // dword 55 (byte 0xdc)
  static constexpr F max_num_match_definer{0x6e0, 16};
  static constexpr F sf_base_id{0x6f0, 16};
  // dword 56 (byte 0xe0)
  static constexpr F flex_parser_id_gtpu_dw_2{0x700, 4};
  static constexpr F flex_parser_id_gtpu_first_ext_dw_0{0x704, 4};
  static constexpr F num_total_dynamic_vf_msix{0x708, 24};
  // dword 57 (byte 0xe4)
  static constexpr F dynamic_msix_table_size{0x734, 12};
  // dword 58 (byte 0xe8)
  static constexpr F min_dynamic_vf_msix_table_size{0x74c, 4};
  static constexpr F max_dynamic_vf_msix_table_size{0x754, 12};
  // dword 60 (byte 0xf0)
  static constexpr F vhca_tunnel_commands{0x780, 64};
  // dword 62 (byte 0xf8)
  static constexpr F match_definer_format_supported{0x7c0, 64};
};
static_assert(cmd_hca_cap::kBits / 8 == 256);
// Offsets the bring-up path depends on, checked against mlx5_ifc.h
// reserved_at_<hex> neighbours (e.g. reserved_at_99[0x2] then log_max_qp).
static_assert(cmd_hca_cap::log_max_qp_sz.off == 0x88);
static_assert(cmd_hca_cap::log_max_qp.off == 0x9b && cmd_hca_cap::log_max_qp.end() == 0xa0);
static_assert(cmd_hca_cap::log_max_cq.end() == 0xe0);
static_assert(cmd_hca_cap::log_max_eq.end() == 0x100);
static_assert(cmd_hca_cap::port_type.off == 0x1b6 && cmd_hca_cap::num_ports.off == 0x1b8);
static_assert(cmd_hca_cap::log_max_msg.off == 0x1c3);
static_assert(cmd_hca_cap::cqe_version.end() == 0x200);
static_assert(cmd_hca_cap::cmdif_checksum.off == 0x210);  // byte 0x42, bits 7:6
static_assert(cmd_hca_cap::roce.off == 0x21d && cmd_hca_cap::atomic.off == 0x21e);
static_assert(cmd_hca_cap::uar_sz.off == 0x24a && cmd_hca_cap::log_pg_sz.off == 0x258);
static_assert(cmd_hca_cap::log_bf_reg_size.off == 0x26b);
static_assert(cmd_hca_cap::max_wqe_sz_sq.off == 0x290 && cmd_hca_cap::max_wqe_sz_rq.off == 0x2b0);
static_assert(cmd_hca_cap::log_max_pd.off == 0x32b);
static_assert(cmd_hca_cap::general_obj_types.off == 0x400);
static_assert(cmd_hca_cap::log_uar_page_sz.off == 0x490);  // byte 0x92
static_assert(cmd_hca_cap::num_of_uars_per_page.off == 0x520);
static_assert(cmd_hca_cap::match_definer_format_supported.end() == cmd_hca_cap::kBits);

// mlx5_ifc.h mlx5_ifc_roce_cap_bits (0x800 bits): cap type ROCE.
// roce_version is a bitmask (bit 0 v1, bit 2 v2: device.h MLX5_ROCE_VERSION_*_CAP),
// l3_type a bitmask (bit 1 IPv4, bit 2 IPv6: MLX5_ROCE_L3_TYPE_*_CAP).
struct roce_cap {
  static constexpr uint32_t kBits = 0x800;
  using F = Field<roce_cap>;
  static constexpr F roce_apm{0x0, 1};
  static constexpr F sw_r_roce_src_udp_port{0x4, 1};
  static constexpr F fl_rc_qp_when_roce_disabled{0x5, 1};
  static constexpr F fl_rc_qp_when_roce_enabled{0x6, 1};
  static constexpr F qp_ts_format{0x1e, 2};
  static constexpr F l3_type{0x8c, 4};
  static constexpr F roce_version{0x98, 8};
  static constexpr F r_roce_dest_udp_port{0xb0, 16};  // 4791
  static constexpr F r_roce_max_src_udp_port{0xc0, 16};
  static constexpr F r_roce_min_src_udp_port{0xd0, 16};
  static constexpr F roce_address_table_size{0xf0, 16};  // GID table entries
};
static_assert(roce_cap::kBits / 8 == 256);
static_assert(roce_cap::roce_version.off / 8 == 19);
static_assert(roce_cap::r_roce_dest_udp_port.off / 8 == 22);
static_assert(roce_cap::roce_address_table_size.end() == 0x100);

inline constexpr uint8_t kRoceVersion1Cap = 1u << 0;  // device.h MLX5_ROCE_VERSION_1_CAP
inline constexpr uint8_t kRoceVersion2Cap = 1u << 2;  // device.h MLX5_ROCE_VERSION_2_CAP
inline constexpr uint8_t kRoceL3TypeIpv4Cap = 1u << 1;
inline constexpr uint8_t kRoceL3TypeIpv6Cap = 1u << 2;

// mlx5_ifc.h mlx5_ifc_atomic_caps_bits (0x800 bits): cap type ATOMIC.
// atomic_operations bits (driver.h MLX5_ATOMIC_OPS_*): bit 0 compare-and-swap,
// bit 1 fetch-and-add, bits 2/3 extended (masked) variants; atomic_size_qp is a
// mask of supported operand sizes (mlx5_ifc.h MLX5_ATOMIC_CAPS_ATOMIC_SIZE_QP_*:
// 0x8 = 8 bytes).
struct atomic_caps {
  static constexpr uint32_t kBits = 0x800;
  using F = Field<atomic_caps>;
  static constexpr F atomic_req_8B_endianness_mode{0x40, 2};
  static constexpr F supported_atomic_req_8B_endianness_mode_1{0x46, 1};
  static constexpr F atomic_operations{0x90, 16};
  static constexpr F atomic_size_qp{0xb0, 16};
  static constexpr F atomic_size_dc{0xd0, 16};
};
static_assert(atomic_caps::kBits / 8 == 256);
static_assert(atomic_caps::atomic_operations.off / 8 == 18);
static_assert(atomic_caps::atomic_size_qp.off / 8 == 22);

inline constexpr uint16_t kAtomicOpCmpSwap = 1u << 0;
inline constexpr uint16_t kAtomicOpFetchAdd = 1u << 1;
inline constexpr uint16_t kAtomicOpExtendedCmpSwap = 1u << 2;
inline constexpr uint16_t kAtomicOpExtendedFetchAdd = 1u << 3;
inline constexpr uint16_t kAtomicSizeQp8Bytes = 0x8;

// mlx5_ifc.h union mlx5_ifc_hca_cap_union_bits: 0x8000 bits (4096 B), the
// largest member being the flow table caps. View it as the capability type
// that was queried.
struct hca_cap_union {
  static constexpr uint32_t kBits = 0x8000;
  static constexpr Sub<hca_cap_union, prm::cmd_hca_cap> cmd_hca_cap{0x0};
  static constexpr Sub<hca_cap_union, prm::roce_cap> roce_cap{0x0};
  static constexpr Sub<hca_cap_union, prm::atomic_caps> atomic_caps{0x0};
};
static_assert(hca_cap_union::kBits / 8 == 4096);

// mlx5_ifc.h mlx5_ifc_query_hca_cap_in_bits (16 B). op_mod = hca_cap_op_mod().
struct query_hca_cap_in {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<query_hca_cap_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F other_function{0x40, 1};
  static constexpr F function_id{0x50, 16};
};
static_assert(query_hca_cap_in::kBits / 8 == 16);
static_assert(query_hca_cap_in::function_id.off / 8 == 10);

// mlx5_ifc.h mlx5_ifc_query_hca_cap_out_bits (16 + 4096 B).
struct query_hca_cap_out {
  static constexpr uint32_t kBits = 0x8080;
  using F = Field<query_hca_cap_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
  static constexpr Sub<query_hca_cap_out, hca_cap_union> capability{0x80};
};
static_assert(query_hca_cap_out::kBits / 8 == 16 + 4096);
static_assert(query_hca_cap_out::capability.off / 8 == 16);
static_assert(query_hca_cap_out::capability.end() == query_hca_cap_out::kBits);

// mlx5_ifc.h mlx5_ifc_set_hca_cap_in_bits (16 + 4096 B). op_mod =
// set_hca_cap_op_mod(CapType).
struct set_hca_cap_in {
  static constexpr uint32_t kBits = 0x8080;
  using F = Field<set_hca_cap_in>;
  static constexpr F opcode{0x0, 16};
  static constexpr F op_mod{0x30, 16};
  static constexpr F other_function{0x40, 1};
  static constexpr F function_id{0x50, 16};
  static constexpr Sub<set_hca_cap_in, hca_cap_union> capability{0x80};
};
static_assert(set_hca_cap_in::kBits / 8 == 16 + 4096);
static_assert(set_hca_cap_in::capability.off / 8 == 16);

// mlx5_ifc.h mlx5_ifc_set_hca_cap_out_bits (16 B).
struct set_hca_cap_out {
  static constexpr uint32_t kBits = 0x80;
  using F = Field<set_hca_cap_out>;
  static constexpr F status{0x0, 8};
  static constexpr F syndrome{0x20, 32};
};
static_assert(set_hca_cap_out::kBits / 8 == 16);

}  // namespace kbv::prm
