// SPDX-License-Identifier: BSD-3-Clause
//
// Srq: a shared receive queue — its WQE ring and doorbell record (QueueMem,
// hca/objects/cq.hpp), the firmware SRQ (CREATE_SRQ, cmd/srq.hpp) and the limit
// event arm (ARM_RQ).
//
// Sizes: 2^ceil(log2(max_wr)) WQEs (at least 2) of stride
// 2^ceil(log2(16 + 16 * max_sge)) bytes (the mlx5 SRQ "next" segment, then
// one 16-byte data segment per SGE; mlx5dv.h mlx5_wqe_srq_next_seg /
// mlx5_wqe_data_seg). Above caps.log_max_srq_sz or caps.max_wqe_sz_rq:
// KBV_ERR_LIMIT_EXCEEDED before the command.
// The limit event (EQE 0x14, HcaEvent kAsync with qp_srq_n = srqn) fires once
// when fewer than lwm WQEs remain; arm() sets lwm and re-arms.
//
// Lifetime as Cq (the object outlives its pending commands; destroy first).
// Threading: as Hca (one thread).
#pragma once

#include <kbv/status.hpp>

#include <cstdint>
#include <memory>

#include "hca/cmd/srq.hpp"
#include "hca/hca.hpp"
#include "hca/objects/cq.hpp"

namespace kbv::hca {

struct SrqConfig {
  uint32_t pd = 0;
  uint32_t max_wr = 64;
  uint32_t max_sge = 1;
  uint32_t cqn = 0;  // 0: none
  uint32_t lwm = 0;  // 0: no limit event
};

class Srq {
 public:
  static Status create(Hca& hca, const SrqConfig& cfg, cmd::Done<std::unique_ptr<Srq>> done);
  ~Srq();
  Srq(const Srq&) = delete;
  Srq& operator=(const Srq&) = delete;

  uint32_t srqn() const { return srqn_; }
  uint32_t nwqe() const { return 1u << log_size_; }
  uint32_t stride() const { return 16u << log_stride_; }
  uint32_t log_size() const { return log_size_; }
  uint32_t log_stride() const { return log_stride_; }
  const QueueMem& mem() const { return mem_; }
  bool alive() const { return alive_; }

  Status arm(uint32_t lwm, cmd::DoneStatus done);
  Status query(cmd::Done<cmd::SrqInfo> done);
  Status destroy(cmd::DoneStatus done);

 private:
  explicit Srq(Hca& hca) : hca_(hca) {}

  Hca& hca_;
  QueueMem mem_;
  uint32_t srqn_ = 0;
  uint32_t log_size_ = 0, log_stride_ = 0;
  bool alive_ = false;
  bool busy_ = false;
};

}  // namespace kbv::hca
