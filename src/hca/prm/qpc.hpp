// SPDX-License-Identifier: BSD-3-Clause
//
// Queue pair context: the address path (ads) and the QP context (qpc), with
// the QP state, service type, path-migration, MTU, atomic-mode, RQ-type and
// optional-parameter-mask values. The commands that carry a qpc are in
// hca/prm/qp_cmd.hpp.
//
// Source: Linux 6.1 include/linux/mlx5/mlx5_ifc.h struct mlx5_ifc_ads_bits and
// struct mlx5_ifc_qpc_bits (bit offsets and widths; reserved members are left
// out), enums MLX5_QPC_ST_*, MLX5_QPC_PM_STATE_*, MLX5_QPC_MTU_*,
// MLX5_QPC_ATOMIC_MODE_*; include/linux/mlx5/qp.h enums MLX5_QP_STATE_*,
// MLX5_QP_ST_*, MLX5_QP_OPTPAR_*, MLX5_*_RQ; PRM (ConnectX-4 Rev 0.40)
// "QP Context", "Address Path"; IBTA Vol 1 for the meaning of the transport
// fields (PSNs, timers, retry counts, Q_Key).
//
// Shapes and units (qpc):
//   * log_sq_size: log2(send queue size in 64-byte WQE basic blocks);
//     log_rq_size: log2(receive WQEs); log_rq_stride: log2(receive WQE size
//     in 16-byte units) (the kernel writes wqe_shift - 4);
//   * the WQ buffer is pas[] of the command in pages of 2^(log_page_size + 12)
//     bytes (the kernel writes page_shift - MLX5_ADAPTER_PAGE_SHIFT);
//     page_offset is in units of page_size / 64, 0 for page-aligned buffers;
//   * dbr_addr: IOVA of the 8-byte doorbell record (receive counter, then send
//     counter);
//   * next_send_psn / next_rcv_psn / last_acked_psn: 24-bit PSNs (IBTA 9.7);
//   * log_sra_max / log_rra_max: log2 of outstanding RDMA reads + atomics as
//     requester / responder; retry_count, rnr_retry: IBTA retry counts (7 for
//     rnr_retry means infinite); min_rnr_nak: IBTA RNR timer code;
//   * ads.ack_timeout: local ACK timeout, 4.096 us * 2^ack_timeout (IBTA
//     9.7.6.1.3, 0 = infinite); ads.src_addr_index: SGID index; ads.rgid_rip:
//     remote GID (16 bytes, network order); ads.rmac_47_32/rmac_31_0: next-hop
//     MAC for RoCE; ads.udp_sport: RoCEv2 UDP source port;
//     ads.vhca_port_num: 1-based port.
//
// Threading: constants and constexpr tables only.
#pragma once

#include <cstdint>

#include "hca/prm/field.hpp"

namespace kbv::prm {

// qpc.state (qp.h enum MLX5_QP_STATE_*, which the kernel's mlx5_ib uses to
// decode QUERY_QP). mlx5_ifc.h enum MLX5_QPC_STATE_* lists 0x7 as "SQD"
// instead; qp.h has SQD (drained) = 0x5 and SQ_DRAINING = 0x7. kbv follows
// qp.h.
namespace qp_state {
inline constexpr uint32_t kRst = 0x0;
inline constexpr uint32_t kInit = 0x1;
inline constexpr uint32_t kRtr = 0x2;
inline constexpr uint32_t kRts = 0x3;
inline constexpr uint32_t kSqer = 0x4;
inline constexpr uint32_t kSqd = 0x5;
inline constexpr uint32_t kErr = 0x6;
inline constexpr uint32_t kSqDraining = 0x7;
inline constexpr uint32_t kSuspended = 0x9;
}  // namespace qp_state

// qpc.st, the service type (mlx5_ifc.h MLX5_QPC_ST_*; qp.h MLX5_QP_ST_*).
namespace qpc_st {
inline constexpr uint32_t kRc = 0x0;
inline constexpr uint32_t kUc = 0x1;
inline constexpr uint32_t kUd = 0x2;
inline constexpr uint32_t kXrc = 0x3;
inline constexpr uint32_t kMlx = 0x4;
inline constexpr uint32_t kDci = 0x5;
inline constexpr uint32_t kDct = 0x6;
inline constexpr uint32_t kQp0 = 0x7;
inline constexpr uint32_t kQp1 = 0x8;  // GSI
inline constexpr uint32_t kRawDatagram = 0x9;
inline constexpr uint32_t kRawIpv6 = 0xa;
inline constexpr uint32_t kSniffer = 0xb;
inline constexpr uint32_t kRegUmr = 0xc;
inline constexpr uint32_t kPtp1588 = 0xd;
inline constexpr uint32_t kSyncUmr = 0xe;
}  // namespace qpc_st

// qpc.pm_state, path migration (mlx5_ifc.h MLX5_QPC_PM_STATE_*).
namespace qpc_pm_state {
inline constexpr uint32_t kArmed = 0x0;
inline constexpr uint32_t kRearm = 0x1;
inline constexpr uint32_t kReserved = 0x2;
inline constexpr uint32_t kMigrated = 0x3;
}  // namespace qpc_pm_state

// qpc.ts_format, the format of the timestamps in the QP's CQEs (mlx5_ifc.h
// MLX5_QPC_TIMESTAMP_FORMAT_*), and the cap values saying which a device
// offers (roce_cap.qp_ts_format, cmd_hca_cap.sq_ts_format / rq_ts_format;
// mlx5_ifc.h MLX5_TIMESTAMP_FORMAT_CAP_*).
namespace qpc_ts_format {
inline constexpr uint32_t kFreeRunning = 0x0;  // the internal timer (init segment 0x1000)
inline constexpr uint32_t kDefault = 0x1;      // the device's default format
inline constexpr uint32_t kRealTime = 0x2;     // the real-time (PTP) clock
inline constexpr uint32_t kCapFreeRunning = 0x0;
inline constexpr uint32_t kCapRealTime = 0x1;
inline constexpr uint32_t kCapFreeRunningAndRealTime = 0x2;
}  // namespace qpc_ts_format

// qpc.mtu, the IB path MTU encoding (mlx5_ifc.h MLX5_QPC_MTU_*; IBTA 9.6.1).
namespace qpc_mtu {
inline constexpr uint32_t k256Bytes = 0x1;
inline constexpr uint32_t k512Bytes = 0x2;
inline constexpr uint32_t k1kBytes = 0x3;
inline constexpr uint32_t k2kBytes = 0x4;
inline constexpr uint32_t k4kBytes = 0x5;
inline constexpr uint32_t kRawEthernetQp = 0x7;
}  // namespace qpc_mtu

// The byte size of an IB MTU code (1..5 -> 256..4096), 0 for other codes.
constexpr uint32_t mtu_bytes(uint32_t mtu_code) {
  return mtu_code >= qpc_mtu::k256Bytes && mtu_code <= qpc_mtu::k4kBytes ? 128u << mtu_code : 0;
}

// qpc.atomic_mode (mlx5_ifc.h MLX5_QPC_ATOMIC_MODE_*).
namespace qpc_atomic_mode {
inline constexpr uint32_t kIbSpec = 0x1;
inline constexpr uint32_t kOnly8B = 0x2;
inline constexpr uint32_t kUpTo8B = 0x3;
inline constexpr uint32_t kUpTo16B = 0x4;
inline constexpr uint32_t kUpTo32B = 0x5;
inline constexpr uint32_t kUpTo64B = 0x6;
inline constexpr uint32_t kUpTo128B = 0x7;
inline constexpr uint32_t kUpTo256B = 0x8;
}  // namespace qpc_atomic_mode

// qpc.rq_type (qp.h MLX5_NON_ZERO_RQ, MLX5_SRQ_RQ, MLX5_CRQ_RQ, MLX5_ZERO_LEN_RQ).
namespace qpc_rq_type {
inline constexpr uint32_t kNonZeroRq = 0x0;  // own receive queue of log_rq_size
inline constexpr uint32_t kSrqRq = 0x1;      // receives from srqn_rmpn_xrqn
inline constexpr uint32_t kCrqRq = 0x2;
inline constexpr uint32_t kZeroLenRq = 0x3;  // no receive queue
}  // namespace qpc_rq_type

// opt_param_mask bits of the state-transition commands: which optional qpc
// fields the command applies (qp.h enum mlx5_qp_optpar).
namespace qp_optpar {
inline constexpr uint32_t kAltAddrPath = 1u << 0;
inline constexpr uint32_t kRre = 1u << 1;
inline constexpr uint32_t kRae = 1u << 2;
inline constexpr uint32_t kRwe = 1u << 3;
inline constexpr uint32_t kPkeyIndex = 1u << 4;
inline constexpr uint32_t kQKey = 1u << 5;
inline constexpr uint32_t kRnrTimeout = 1u << 6;
inline constexpr uint32_t kPrimaryAddrPath = 1u << 7;
inline constexpr uint32_t kSraMax = 1u << 8;
inline constexpr uint32_t kRraMax = 1u << 9;
inline constexpr uint32_t kPmState = 1u << 10;
inline constexpr uint32_t kRetryCount = 1u << 12;
inline constexpr uint32_t kRnrRetry = 1u << 13;
inline constexpr uint32_t kAckTimeout = 1u << 14;
inline constexpr uint32_t kLagTxAff = 1u << 15;
inline constexpr uint32_t kPriPort = 1u << 16;
inline constexpr uint32_t kSrqn = 1u << 18;
inline constexpr uint32_t kCqnRcv = 1u << 19;
inline constexpr uint32_t kDcHs = 1u << 20;
inline constexpr uint32_t kDcKey = 1u << 21;
inline constexpr uint32_t kCounterSetId = 1u << 25;
}  // namespace qp_optpar

// mlx5_ifc.h: struct mlx5_ifc_ads_bits (0x160 bits, 44 bytes)
struct ads {
  static constexpr uint32_t kBits = 0x160;
  using F = Field<ads>;
  // force loopback
  static constexpr F fl{0x0, 1};
  static constexpr F free_ar{0x1, 1};
  // index into the P_Key table
  static constexpr F pkey_index{0x10, 16};
  // 1: send a GRH (always 1 for RoCE)
  static constexpr F grh{0x28, 1};
  static constexpr F mlid{0x29, 7};
  // remote LID (IB only)
  static constexpr F rlid{0x30, 16};
  // 4.096 us * 2^ack_timeout, 0 = infinite (IBTA 9.7.6.1.3)
  static constexpr F ack_timeout{0x40, 5};
  // SGID table index (RoCE: selects the source address and version)
  static constexpr F src_addr_index{0x48, 8};
  // static rate limit code, 0 = port rate
  static constexpr F stat_rate{0x54, 4};
  // GRH hop limit / IP TTL
  static constexpr F hop_limit{0x58, 8};
  // GRH traffic class (RoCEv2: DSCP << 2 | ECN)
  static constexpr F tclass{0x64, 8};
  // GRH flow label
  static constexpr F flow_label{0x6c, 20};
  // remote GID / IP, 16 bytes, network order
  static constexpr Bytes<ads> rgid_rip{0x80, 128};
  static constexpr F f_dscp{0x104, 1};
  static constexpr F f_ecn{0x105, 1};
  static constexpr F f_eth_prio{0x107, 1};
  static constexpr F ecn{0x108, 2};
  static constexpr F dscp{0x10a, 6};
  // RoCEv2 UDP source port
  static constexpr F udp_sport{0x110, 16};
  static constexpr F dei_cfi{0x120, 1};
  static constexpr F eth_prio{0x121, 3};
  // service level
  static constexpr F sl{0x124, 4};
  // 1-based port number
  static constexpr F vhca_port_num{0x128, 8};
  // next-hop MAC bits 47..32
  static constexpr F rmac_47_32{0x130, 16};
  // next-hop MAC bits 31..0
  static constexpr F rmac_31_0{0x140, 32};
};
static_assert(ads::kBits == 0x160 && ads::kBits / 8 == 44);

// mlx5_ifc.h: struct mlx5_ifc_qpc_bits (0x740 bits, 232 bytes)
struct qpc {
  static constexpr uint32_t kBits = 0x740;
  using F = Field<qpc>;
  // qp_state (read by QUERY_QP; firmware owns it)
  static constexpr F state{0x0, 4};
  static constexpr F lag_tx_port_affinity{0x4, 4};
  // service type, qpc_st
  static constexpr F st{0x8, 8};
  static constexpr F isolate_vl_tc{0x12, 1};
  // qpc_pm_state
  static constexpr F pm_state{0x13, 2};
  static constexpr F req_e2e_credit_mode{0x16, 2};
  static constexpr F offload_type{0x18, 4};
  static constexpr F end_padding_mode{0x1c, 2};
  static constexpr F wq_signature{0x20, 1};
  static constexpr F block_lb_mc{0x21, 1};
  static constexpr F atomic_like_write_en{0x22, 1};
  static constexpr F latency_sensitive{0x23, 1};
  static constexpr F drain_sigerr{0x25, 1};
  // protection domain
  static constexpr F pd{0x28, 24};
  // path MTU, qpc_mtu
  static constexpr F mtu{0x40, 3};
  // log2(max message size in bytes)
  static constexpr F log_msg_max{0x43, 5};
  // log2(receive WQEs)
  static constexpr F log_rq_size{0x49, 4};
  // log2(receive WQE size / 16)
  static constexpr F log_rq_stride{0x4d, 3};
  // 1: no send queue
  static constexpr F no_sq{0x50, 1};
  // log2(send queue size in 64-byte basic blocks)
  static constexpr F log_sq_size{0x51, 4};
  static constexpr F ts_format{0x58, 2};
  // reserved lkey enable
  static constexpr F rlky{0x5b, 1};
  static constexpr F ulp_stateless_offload_mode{0x5c, 4};
  // Q counter set
  static constexpr F counter_set_id{0x60, 8};
  // UAR index of the send doorbell
  static constexpr F uar_page{0x68, 24};
  // user index, reported in CQEs (srqn_uidx)
  static constexpr F user_index{0x88, 24};
  // log2(page size) - 12
  static constexpr F log_page_size{0xa3, 5};
  // destination QPN (RC/UC)
  static constexpr F remote_qpn{0xa8, 24};
  // ads
  static constexpr Sub<qpc, prm::ads> primary_address_path{0xc0};
  // ads (alternate path)
  static constexpr Sub<qpc, prm::ads> secondary_address_path{0x220};
  // request an ACK every 2^n packets
  static constexpr F log_ack_req_freq{0x380, 4};
  // log2(outstanding RDMA reads/atomics as requester)
  static constexpr F log_sra_max{0x388, 3};
  // transport retries (IBTA), 0..7
  static constexpr F retry_count{0x38d, 3};
  // RNR NAK retries, 7 = infinite
  static constexpr F rnr_retry{0x390, 3};
  // fast register (UMR) enable
  static constexpr F fre{0x394, 1};
  static constexpr F cur_rnr_retry{0x395, 3};
  static constexpr F cur_retry_count{0x398, 3};
  // SQ PSN
  static constexpr F next_send_psn{0x3c8, 24};
  static constexpr F log_num_dci_stream_channels{0x3e3, 5};
  // CQ for send completions
  static constexpr F cqn_snd{0x3e8, 24};
  static constexpr F log_num_dci_errored_streams{0x403, 5};
  // source QPN sent in DETH (QP1)
  static constexpr F deth_sqpn{0x408, 24};
  // read back by QUERY_QP
  static constexpr F last_acked_psn{0x448, 24};
  // send sequence number
  static constexpr F ssn{0x468, 24};
  // log2(outstanding RDMA reads/atomics as responder)
  static constexpr F log_rra_max{0x488, 3};
  // qpc_atomic_mode
  static constexpr F atomic_mode{0x48c, 4};
  // remote read enable
  static constexpr F rre{0x490, 1};
  // remote write enable
  static constexpr F rwe{0x491, 1};
  // remote atomic enable
  static constexpr F rae{0x492, 1};
  // units of page_size / 64
  static constexpr F page_offset{0x494, 6};
  static constexpr F cd_slave_receive{0x49d, 1};
  static constexpr F cd_slave_send{0x49e, 1};
  static constexpr F cd_master{0x49f, 1};
  // IBTA RNR timer code sent in RNR NAKs
  static constexpr F min_rnr_nak{0x4a3, 5};
  // RQ PSN (expected PSN)
  static constexpr F next_rcv_psn{0x4a8, 24};
  // XRC domain
  static constexpr F xrcd{0x4c8, 24};
  // CQ for receive completions
  static constexpr F cqn_rcv{0x4e8, 24};
  // IOVA of the doorbell record
  static constexpr F dbr_addr{0x500, 64};
  // UD Q_Key
  static constexpr F q_key{0x540, 32};
  // qpc_rq_type
  static constexpr F rq_type{0x565, 3};
  // SRQ number when rq_type = kSrqRq
  static constexpr F srqn_rmpn_xrqn{0x568, 24};
  // responder message sequence number (AETH MSN)
  static constexpr F rmsn{0x588, 24};
  static constexpr F hw_sq_wqebb_counter{0x5a0, 16};
  static constexpr F sw_sq_wqebb_counter{0x5b0, 16};
  static constexpr F hw_rq_counter{0x5c0, 32};
  static constexpr F sw_rq_counter{0x5e0, 32};
  static constexpr F cgs{0x62f, 1};
  static constexpr F cs_req{0x630, 8};
  static constexpr F cs_res{0x638, 8};
  static constexpr F dc_access_key{0x640, 64};
  static constexpr F dbr_umem_valid{0x683, 1};
  // DEVX umem holding the doorbell record when dbr_umem_valid (dbr_addr is
  // then a byte offset into it); rdma-core providers/mlx5/mlx5_ifc.h qpc_bits.
  static constexpr F dbr_umem_id{0x720, 32};
};
static_assert(qpc::kBits == 0x740 && qpc::kBits / 8 == 232);
static_assert(qpc::primary_address_path.off == 0xc0);
static_assert(qpc::secondary_address_path.off == 0x220);

// Key offsets (mlx5_ifc.h; reserved_at_<hex> names confirm the sums).
static_assert(ads::rgid_rip.byte_off() == 16 && ads::rgid_rip.size() == 16);
static_assert(ads::ack_timeout.off == 0x40 && ads::src_addr_index.off == 0x48);
static_assert(ads::udp_sport.off == 0x110 && ads::vhca_port_num.off == 0x128);
static_assert(ads::rmac_47_32.off == 0x130 && ads::rmac_31_0.off == 0x140);
static_assert(qpc::primary_address_path.end() == 0x220);
static_assert(qpc::secondary_address_path.end() == 0x380);
static_assert(qpc::mtu.off == 0x40 && qpc::log_sq_size.off == 0x51 && qpc::uar_page.off == 0x68);
static_assert(qpc::remote_qpn.off == 0xa8 && qpc::next_send_psn.off == 0x3c8);
static_assert(qpc::cqn_snd.off == 0x3e8 && qpc::next_rcv_psn.off == 0x4a8);
static_assert(qpc::cqn_rcv.off == 0x4e8 && qpc::dbr_addr.off == 0x500 && qpc::q_key.off == 0x540);
static_assert(qpc::srqn_rmpn_xrqn.off == 0x568 && qpc::sw_rq_counter.off == 0x5e0);
static_assert(mtu_bytes(qpc_mtu::k256Bytes) == 256 && mtu_bytes(qpc_mtu::k4kBytes) == 4096);

}  // namespace kbv::prm
