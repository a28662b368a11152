// SPDX-License-Identifier: BSD-3-Clause
#include "sim/engine/cqe.hpp"

#include "common/log.hpp"
#include "hca/prm/cq.hpp"
#include "sim/engine/wqe.hpp"

#include <infiniband/mlx5dv.h>

#include <cstddef>

namespace kbv::sim::engine {

namespace {

constexpr uint32_t kCqeBytes = sizeof(mlx5_cqe64);
static_assert(kCqeBytes == 64);
static_assert(offsetof(mlx5_cqe64, op_own) == 63);
static_assert(offsetof(mlx5_err_cqe, syndrome) == 55);
static_assert(offsetof(mlx5_cqe64, timestamp) == 48);  // docs/PRM.md "Data path"

void put32(std::byte* p, uint32_t v) {
  p[0] = std::byte(v >> 24);
  p[1] = std::byte(v >> 16);
  p[2] = std::byte(v >> 8);
  p[3] = std::byte(v);
}
void put64(std::byte* p, uint64_t v) {
  put32(p, static_cast<uint32_t>(v >> 32));
  put32(p + 4, static_cast<uint32_t>(v));
}
void put16(std::byte* p, uint16_t v) {
  p[0] = std::byte(v >> 8);
  p[1] = std::byte(v);
}
uint32_t get32(const std::byte* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

bool is_error(uint8_t opcode) { return opcode == MLX5_CQE_REQ_ERR || opcode == MLX5_CQE_RESP_ERR; }

Status fire(fw::Cq& cq, CqNotify& n, CqEventSink& sink) {
  cq.st = prm::cqc_st::kFired;
  n.last_fired_sn = static_cast<int>(n.arm_sn);
  return sink.completion(cq.c_eqn, cq.cqn);
}

}  // namespace

std::array<std::byte, 64> build_cqe(const CqeFields& f, uint8_t owner) {
  std::array<std::byte, 64> c{};
  std::byte* p = c.data();
  put32(p + offsetof(mlx5_cqe64, flags_rqpn), f.flags_rqpn);
  put32(p + offsetof(mlx5_cqe64, srqn_uidx), f.srqn_uidx);
  put32(p + offsetof(mlx5_cqe64, imm_inval_pkey), f.imm);
  put32(p + offsetof(mlx5_cqe64, byte_cnt), f.byte_cnt);
  put64(p + offsetof(mlx5_cqe64, timestamp), f.timestamp);
  uint32_t sop = f.qpn & 0xffffff;
  if (f.opcode == MLX5_CQE_REQ || f.opcode == MLX5_CQE_REQ_ERR) sop |= uint32_t{f.wqe_opcode} << 24;
  put32(p + offsetof(mlx5_cqe64, sop_drop_qpn), sop);
  put16(p + offsetof(mlx5_cqe64, wqe_counter), f.wqe_counter);
  if (is_error(f.opcode)) {
    p[offsetof(mlx5_err_cqe, vendor_err_synd)] = std::byte(f.vendor_syndrome);
    p[offsetof(mlx5_err_cqe, syndrome)] = std::byte(f.syndrome);
  }
  // op_own: opcode 7:4, solicited bit 1 (mlx5dv_get_cqe_se), owner bit 0.
  p[offsetof(mlx5_cqe64, op_own)] =
      std::byte(uint8_t(f.opcode << 4) | (f.solicited ? 0x2 : 0) | (owner & MLX5_CQE_OWNER_MASK));
  return c;
}

Status write_cqe(Iommu& iommu, fw::Cq& cq, CqNotify& notify, const CqeFields& f,
                 CqEventSink& sink) {
  if (cq.status != prm::cqc_status::kOk) return KBV_ERR_OVERFLOW;
  const uint32_t n = 1u << cq.log_cq_size;
  std::array<std::byte, 4> dbr{};
  if (!iommu.dma_read(cq.dbr_addr, dbr).is_ok()) {
    cq.status = prm::cqc_status::kCqWriteFail;
    (void)sink.cq_error(cq.cqn, prm::CqErrSyndrome::CQ_ACCESS_VIOLATION_ERROR);
    return KBV_ERR_IOMMU_FAULT;
  }
  cq.consumer_counter = get32(dbr.data()) & 0xffffff;
  const uint32_t used = (cq.producer_counter - cq.consumer_counter) & 0xffffff;
  if (used >= n && !cq.oi) {
    cq.status = prm::cqc_status::kCqOverflow;
    log::warn("sim.engine", "CQ {:#x} overrun (pi {} ci {})", cq.cqn, cq.producer_counter,
              cq.consumer_counter);
    (void)sink.cq_error(cq.cqn, prm::CqErrSyndrome::CQ_OVERRUN);
    return KBV_ERR_OVERFLOW;
  }
  const uint32_t pi = cq.producer_counter;
  const auto img = build_cqe(f, static_cast<uint8_t>((pi >> cq.log_cq_size) & 1));
  const uint64_t off = uint64_t{pi & (n - 1)} * kCqeBytes;
  // Everything but op_own first, then op_own: the entry becomes software's last.
  std::span<const std::byte> all(img);
  if (!buffer_write(iommu, cq.buf, off, all.first(63)).is_ok() ||
      !buffer_write(iommu, cq.buf, off + 63, all.subspan(63, 1)).is_ok()) {
    cq.status = prm::cqc_status::kCqWriteFail;
    (void)sink.cq_error(cq.cqn, prm::CqErrSyndrome::CQ_ACCESS_VIOLATION_ERROR);
    return KBV_ERR_IOMMU_FAULT;
  }
  cq.producer_counter = pi + 1;
  const bool sol = f.solicited || is_error(f.opcode);
  if (sol) notify.last_solicited = pi + 1;
  if (cq.st == prm::cqc_st::kNotificationRequestArmed ||
      (cq.st == prm::cqc_st::kSolicitedNotificationRequestArmed && sol)) {
    return fire(cq, notify, sink);
  }
  return Status::ok();
}

Status arm_cq(fw::Cq& cq, CqNotify& notify, uint32_t word, CqEventSink& sink) {
  const uint32_t sn = (word >> 28) & 3;
  const bool solicited = (word & MLX5_CQ_DB_REQ_NOT_SOL) != 0;
  const uint32_t ci = word & 0xffffff;
  if (notify.last_fired_sn == static_cast<int>(sn)) return Status::ok();  // stale request
  cq.st = solicited ? prm::cqc_st::kSolicitedNotificationRequestArmed
                    : prm::cqc_st::kNotificationRequestArmed;
  notify.arm_sn = sn;
  // CQEs already beyond the armed consumer index fire at once.
  const uint32_t pending = (cq.producer_counter - ci) & 0xffffff;
  const bool sol_pending =
      notify.last_solicited != 0 && ((notify.last_solicited - 1 - ci) & 0xffffff) < pending;
  if (pending != 0 && pending <= (1u << cq.log_cq_size) && (!solicited || sol_pending))
    return fire(cq, notify, sink);
  return Status::ok();
}

Status arm_cq_from_dbrec(Iommu& iommu, fw::Cq& cq, CqNotify& notify, CqEventSink& sink) {
  std::array<std::byte, 4> w{};
  if (!iommu.dma_read(cq.dbr_addr + 4, w).is_ok()) return KBV_ERR_IOMMU_FAULT;
  return arm_cq(cq, notify, get32(w.data()), sink);
}

CqDoorbell decode_cq_doorbell(std::span<const std::byte, 8> bytes) {
  return CqDoorbell{get32(bytes.data()), get32(bytes.data() + 4) & 0xffffff};
}

}  // namespace kbv::sim::engine
