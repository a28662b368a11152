// SPDX-License-Identifier: BSD-3-Clause
//
// The model HCA's CQE writer and completion notification (arming).
//
// Ring (docs/PRM.md "Data path"; rdma-core mlx5dv.h struct mlx5_cqe64): a CQ of
// n = 1 << log_cq_size 64-byte CQEs at the CQ's WqBuffer. The producer
// writes CQE number pi at slot pi & (n - 1) with op_own = opcode << 4 |
// owner, owner = (pi >> log_cq_size) & 1 (software owns the entry when the
// owner bit equals (ci & n) != 0), byte 63 written last.
//
// Fields written (mlx5_cqe64 offsets via offsetof): srqn_uidx @32,
// imm_inval_pkey @36, byte_cnt @44, timestamp @48 (64 bits: the internal
// timer in free-running format, the one qpc.ts_format FREE_RUNNING / DEFAULT
// selects and the only one the model's caps offer; rdma-core cq.c
// mlx5_cq_read_wc_completion_ts reads it with be64toh), sop_drop_qpn @56 (WQE opcode in 31:24
// for requester CQEs, qpn in 23:0), wqe_counter @60, flags_rqpn @28 (UD:
// source QPN 23:0, GRH in 29:28), op_own @63 (solicited in bit 1,
// mlx5dv_get_cqe_se). Error CQEs (MLX5_CQE_REQ_ERR / RESP_ERR; rdma-core
// mlx5dv.h struct mlx5_err_cqe): vendor_err_synd @54, syndrome @55.
//
// Overrun: before writing, the consumer index is read from the CQ doorbell
// record (dbrec[0], 24 bits, big-endian; docs/PRM.md). When pi - ci == n the CQ
// is full: unless cqc.oi, the CQ goes to status CQ_OVERFLOW (prm::cqc_status)
// and a CQ error event (CQ_OVERRUN) is raised instead of overwriting; later
// CQEs are dropped (KBV_ERR_OVERFLOW).
//
// Arming (docs/PRM.md: 64-bit UAR+0x20 write, high = sn << 28 | cmd | ci, low =
// cqn; or the doorbell record arm word dbrec[1]; cmd 0 = any completion,
// MLX5_CQ_DB_REQ_NOT_SOL = solicited only): the CQ becomes armed (cqc_st
// NOTIFICATION_REQUEST_ARMED / SOLICITED_..._ARMED). A request with the sn
// of the event that already fired is stale (a repeated doorbell) and ignored.
// The armed CQ fires exactly once — st becomes FIRED and one completion EQE
// goes to the CQ's EQ (c_eqn) — when a CQE is written that meets the arm
// (any CQE; solicited: a CQE with solicited set or an error CQE, IBTA
// 11.4.2.2), or at arm time if such a CQE is already beyond ci.
//
// Threading: the engine thread owning the CQ; no allocation.
#pragma once

#include "hca/prm/eqe.hpp"
#include "sim/bus/iommu.hpp"
#include "sim/fw/eq.hpp"
#include "sim/fw/objects/events.hpp"
#include "sim/fw/objects/tables.hpp"

#include <kbv/status.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace kbv::sim::engine {

// Where completion and CQ error events go (events.hpp through an EqTable in
// the model; a recorder in tests).
class CqEventSink {
 public:
  virtual ~CqEventSink() = default;
  virtual Status completion(uint32_t eqn, uint32_t cqn) = 0;
  virtual Status cq_error(uint32_t cqn, prm::CqErrSyndrome syndrome) = 0;
};

// The model's sink: the firmware's EQ writer (fw/objects/events.hpp:
// completion to the CQ's EQ, CQ error to the EQ subscribed to CQ_ERROR).
class EqCqEvents final : public CqEventSink {
 public:
  explicit EqCqEvents(fw::EqTable& eqs) : eqs_(eqs) {}
  Status completion(uint32_t eqn, uint32_t cqn) override {
    return fw::post_completion_event(eqs_, eqn, cqn);
  }
  Status cq_error(uint32_t cqn, prm::CqErrSyndrome syndrome) override {
    return fw::post_cq_error(eqs_, cqn, syndrome);
  }

 private:
  fw::EqTable& eqs_;
};

// What one CQE says (zero fields are written as zero).
struct CqeFields {
  uint8_t opcode = 0;  // MLX5_CQE_REQ / RESP_* / REQ_ERR / RESP_ERR
  uint32_t qpn = 0;
  uint8_t wqe_opcode = 0;  // requester CQEs: the WQE's MLX5_OPCODE_*
  uint16_t wqe_counter = 0;
  uint32_t byte_cnt = 0;
  uint32_t imm = 0;  // host order; written big-endian as the driver reads it
  uint32_t srqn_uidx = 0;
  uint32_t flags_rqpn = 0;  // UD responder: source QPN | GRH flags
  bool solicited = false;
  uint8_t syndrome = 0;  // error CQEs: MLX5_CQE_SYNDROME_*
  uint8_t vendor_syndrome = 0;
  // The free-running clock when the CQE is written (PciFunction::
  // internal_timer, device_frequency_khz ticks): mlx5_cqe64 timestamp.
  uint64_t timestamp = 0;
};

// Engine-owned notification state of a CQ (beside fw::Cq).
struct CqNotify {
  int last_fired_sn = -1;       // sn of the last event fired, -1: none yet
  uint32_t arm_sn = 0;          // sn of the pending arm request
  uint32_t last_solicited = 0;  // 1 + counter of the last solicited/error CQE (0: none)
};

// The 64-byte CQE image (exposed for tests and the fuzz target).
std::array<std::byte, 64> build_cqe(const CqeFields& f, uint8_t owner);

// Writes one CQE at cq.producer_counter and advances it; raises the CQ
// error / completion events described above. KBV_ERR_OVERFLOW (full, or
// the CQ is already in error), KBV_ERR_IOMMU_FAULT (ring or doorbell record
// not mapped: the CQ goes to CQ_WRITE_FAIL and an ACCESS_VIOLATION CQ error
// is raised).
Status write_cqe(Iommu& iommu, fw::Cq& cq, CqNotify& notify, const CqeFields& f, CqEventSink& sink);

// An arm request (word = sn << 28 | cmd | ci, host order).
Status arm_cq(fw::Cq& cq, CqNotify& notify, uint32_t word, CqEventSink& sink);
// Reads the arm word from the doorbell record (dbrec[1]) and applies it.
Status arm_cq_from_dbrec(Iommu& iommu, fw::Cq& cq, CqNotify& notify, CqEventSink& sink);

// Decodes the 64-bit UAR+0x20 CQ doorbell as stored in BAR memory (bytes
// 0-3: big-endian arm word, 4-7: big-endian cqn).
struct CqDoorbell {
  uint32_t word = 0;
  uint32_t cqn = 0;
};
CqDoorbell decode_cq_doorbell(std::span<const std::byte, 8> bytes);

}  // namespace kbv::sim::engine
