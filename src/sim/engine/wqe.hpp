// SPDX-License-Identifier: BSD-3-Clause
//
// The model HCA's work-queue front end: parsing one send WQE from a QP's SQ
// ring, and one receive WQE from an RQ or SRQ ring, as the device fetches
// them (through the IOMMU only, sim/bus/iommu.hpp).
//
// Layouts come from rdma-core's infiniband/mlx5dv.h (mlx5_wqe_ctrl_seg,
// mlx5_wqe_raddr_seg, mlx5_wqe_atomic_seg, mlx5_wqe_datagram_seg /
// mlx5_wqe_av, mlx5_wqe_data_seg, mlx5_wqe_inl_data_seg,
// mlx5_wqe_srq_next_seg); facts from docs/PRM.md "Data path":
//   * the SQ is 1 << log_sq_size basic blocks (MLX5_SEND_WQE_BB = 64 B); WQE
//     `index` starts in block index & (n - 1) and spans ds 16-byte units,
//     wrapping from the ring end to its start (rdma-core qp.c wraps the same);
//   * ctrl: opmod_idx_opcode = opmod << 24 | wqe_index << 8 | opcode,
//     qpn_ds = qpn << 8 | ds (ds 6 bits), fm_ce_se (MLX5_WQE_CTRL_FENCE /
//     _CQ_UPDATE / _SOLICITED), imm (big-endian on the wire, kept as read);
//   * segments by opcode: RDMA_WRITE(_IMM) / RDMA_READ: raddr; ATOMIC_CS/FA:
//     raddr + atomic + one 8-byte data segment; UD sends: datagram (48 B)
//     first; then data segments (byte_count, lkey, addr) or inline segments
//     (byte_count | MLX5_INLINE_SEG, data, padded to 16 B).
//   * PRM "Data Segment": byte_count 0 means 2^31 bytes.
//   * receive WQEs (stride 16 << log_rq_stride bytes): data segments until
//     the stride ends or an lkey of MLX5_INVALID_LKEY (0x100) terminates the
//     list; an SRQ WQE starts with mlx5_wqe_srq_next_seg (next_wqe_index).
// Every malformed WQE yields the CQE syndrome the PRM assigns
// (MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR for a bad opcode/segment/index/qpn/size,
// MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR for lengths) plus a model-defined
// vendor syndrome (WqeVendor) saying which check failed. A WQE the IOMMU
// cannot fetch is LOCAL_QP_OP_ERR / kFetchFault (the engine also raises a
// WQ catastrophic event).
//
// Threading: pure functions of their arguments; the caller serialises
// against the firmware thread changing the QP/SRQ tables (tables.hpp). No
// allocation: ParsedWqe is a fixed-size value (keep one per engine thread).
#pragma once

#include "sim/bus/iommu.hpp"
#include "sim/fw/objects/tables.hpp"

#include <kbv/status.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace kbv::sim::engine {

// Limits (sim/fw/caps.cpp: max_wqe_sz_sq 1024, max_wqe_sz_rq 512).
inline constexpr uint32_t kMaxSendWqeBytes = 1024;
inline constexpr uint32_t kMaxRecvWqeBytes = 512;
inline constexpr uint32_t kMaxSge = kMaxSendWqeBytes / 16;  // data segments per WQE
inline constexpr uint32_t kMaxInline = kMaxSendWqeBytes;    // inline bytes (bound)

// Which check rejected a WQE (CQE vendor_err_synd, model-defined).
enum class WqeVendor : uint8_t {
  kNone = 0,
  kFetchFault = 0x01,        // IOMMU fault reading the ring
  kBadIndex = 0x02,          // ctrl wqe_index != the index fetched
  kBadQpn = 0x03,            // ctrl qpn != the QP
  kBadDs = 0x04,             // ds 0, beyond the max WQE size or the ring
  kBadOpcode = 0x05,         // opcode not valid for the service type
  kBadOpmod = 0x06,          // nonzero opmod
  kTruncated = 0x07,         // a required segment does not fit in ds
  kTooManySge = 0x08,        // more data segments than kMaxSge
  kInlineOverrun = 0x09,     // inline byte_count beyond the WQE
  kMixedInline = 0x0a,       // inline and pointer data segments mixed
  kInlineNotAllowed = 0x0b,  // inline data in RDMA_READ / atomics
  kAtomicLength = 0x0c,      // atomic data segment not exactly 8 bytes
  kMsgTooLong = 0x0d,        // total length > 2^log_msg_max
  kRingGeometry = 0x0e,      // the QP's ring is not usable (no SQ, size 0)
  kBadRecvLength = 0x0f,     // receive stride beyond kMaxRecvWqeBytes
};

// Parse outcome: syndrome 0 = parsed; else MLX5_CQE_SYNDROME_* + vendor.
struct WqeStatus {
  uint8_t syndrome = 0;
  WqeVendor vendor = WqeVendor::kNone;
  bool ok() const { return syndrome == 0; }
};

struct Sge {
  uint32_t byte_count = 0;  // bytes (0 in the segment = 2^31, stored here as 2^31)
  uint32_t lkey = 0;
  uint64_t addr = 0;
};

// The UD address vector fields the transport needs (mlx5_wqe_av).
struct UdAv {
  uint32_t qkey = 0;
  uint32_t dqpn = 0;      // dqp_dct low 24 bits
  bool extended = false;  // MLX5_EXTENDED_UD_AV
  uint8_t stat_rate_sl = 0;
  uint8_t fl_mlid = 0;  // bit 7: GRH present
  std::array<uint8_t, 6> rmac{};
  uint8_t tclass = 0;
  uint8_t hop_limit = 0;
  // As the driver wrote it (kbv src/hca/objects/ah.hpp, rdma-core mlx5 AH): bit 30 GRH
  // present, sgid_index in 27:20, flow_label in 19:0.
  uint32_t grh_gid_fl = 0;
  std::array<uint8_t, 16> rgid{};
};

struct ParsedWqe {
  uint8_t opcode = 0;  // MLX5_OPCODE_*
  uint8_t opmod = 0;
  uint16_t wqe_index = 0;
  uint32_t ds = 0;      // 16-byte units
  uint32_t wqebbs = 0;  // basic blocks consumed: ceil(ds / 4)
  bool fence = false;
  bool cqe_req = false;
  bool solicited = false;
  uint32_t imm = 0;  // host order of the big-endian ctrl.imm
  uint64_t raddr = 0;
  uint32_t rkey = 0;
  uint64_t swap_add = 0;
  uint64_t compare = 0;
  UdAv av;
  uint32_t num_sge = 0;
  std::array<Sge, kMaxSge> sge{};
  bool is_inline = false;
  uint32_t inline_len = 0;
  std::array<std::byte, kMaxInline> inline_data{};
  uint64_t length = 0;  // message bytes (sum of SGEs or inline_len)
};

struct ParsedRecv {
  uint16_t next_wqe_index = 0;  // SRQ only
  uint32_t num_sge = 0;
  std::array<Sge, kMaxSge> sge{};
  uint64_t length = 0;  // receive capacity
};

// IOVA of byte `off` of a WQ/CQ buffer (its pas pages); false if off lies
// beyond the pages.
bool buffer_iova(const fw::WqBuffer& buf, uint64_t off, uint64_t* iova);
// Reads dst.size() bytes starting `pos` bytes into the ring occupying
// [ring_off, ring_off + ring_bytes) of `buf`, wrapping to the ring start.
// Page by page (pages need not be contiguous). KBV_ERR_IOMMU_FAULT /
// KBV_ERR_INVALID_ARGUMENT (outside the pages).
Status ring_read(Iommu& iommu, const fw::WqBuffer& buf, uint64_t ring_off, uint64_t ring_bytes,
                 uint64_t pos, std::span<std::byte> dst);
Status buffer_write(Iommu& iommu, const fw::WqBuffer& buf, uint64_t off,
                    std::span<const std::byte> src);

// Parses the send WQE with index `wqe_index` (the SQ producer counter in
// basic blocks, 16 bits as in the doorbell record) of `qp` into *out.
WqeStatus parse_send_wqe(Iommu& iommu, const fw::Qp& qp, uint16_t wqe_index, ParsedWqe* out);
// Parses a send WQE from raw bytes already fetched (the first ds * 16 are
// used). Shared by parse_send_wqe and the fuzz target.
WqeStatus parse_send_bytes(std::span<const std::byte> wqe, uint32_t st, uint32_t qpn,
                           uint16_t wqe_index, uint32_t log_msg_max, ParsedWqe* out);

// Receive WQE `index` (counter of WQEs) of the QP's RQ.
WqeStatus parse_recv_wqe(Iommu& iommu, const fw::Qp& qp, uint32_t index, ParsedRecv* out);
// SRQ WQE `index` (ring slot; the free list is the next_wqe_index chain).
WqeStatus parse_srq_wqe(Iommu& iommu, const fw::Srq& srq, uint32_t index, ParsedRecv* out);
// Receive WQE bytes (one stride); `srq` = starts with the next segment.
WqeStatus parse_recv_bytes(std::span<const std::byte> wqe, bool srq, ParsedRecv* out);

}  // namespace kbv::sim::engine
