// SPDX-License-Identifier: BSD-3-Clause
#include "hca/dp/rq.hpp"

#include <endian.h>

#include <cstring>

#include "common/log.hpp"
#include "hca/objects/qp.hpp"
#include "hca/objects/srq.hpp"
#include "platform/mmio.hpp"

namespace kbv::hca {

namespace {
constexpr const char* kLog = "hca.rq";

static_assert(sizeof(mlx5_wqe_srq_next_seg) == 16, "mlx5dv.h SRQ next segment");
static_assert(MLX5_INVALID_LKEY == 0x100, "mlx5dv.h terminating lkey");

bool valid_geometry(const RqConfig& c, uint32_t header_segs) {
  if (c.ring == nullptr || c.dbrec == nullptr || c.log_wqes > 16) return false;
  if (c.stride < 16 || (c.stride & (c.stride - 1)) != 0) return false;
  return c.max_sge + header_segs <= c.stride / 16;
}

}  // namespace

namespace rq_detail {
void log_refused(const char* queue, size_t i, kbv_status_t st) {
  log::debug(kLog, "{} request {} refused: {}", queue, i, Status{st}.to_string());
}
}  // namespace rq_detail

// ---- RecvQueue -----------------------------------------------------------------

Result<RecvQueue> RecvQueue::create(const RqConfig& cfg) {
  if (!valid_geometry(cfg, 0)) return Status{KBV_ERR_INVALID_ARGUMENT};
  RecvQueue q;
  q.cfg_ = cfg;
  q.mask_ = (1u << cfg.log_wqes) - 1;
  q.stride_shift_ = static_cast<uint32_t>(__builtin_ctz(cfg.stride));
  q.wr_ids_.assign(size_t{1} << cfg.log_wqes, 0);
  return q;
}

Result<RecvQueue> RecvQueue::for_qp(const Qp& qp, uint32_t max_recv_sge) {
  if (!qp.alive() || qp.rq_wqes() == 0) return Status{KBV_ERR_INVALID_ARGUMENT};
  // The receive queue is first in the QP buffer (hca/objects/qp.hpp).
  return create(RqConfig{.ring = qp.mem().buf(),
                         .log_wqes = qp.rq_log(),
                         .stride = qp.rq_stride(),
                         .dbrec = qp.mem().dbrec(),
                         .max_sge = max_recv_sge});
}

// ---- SrqQueue ------------------------------------------------------------------

Result<SrqQueue> SrqQueue::create(const RqConfig& cfg) {
  if (!valid_geometry(cfg, 1) || cfg.log_wqes < 1) return Status{KBV_ERR_INVALID_ARGUMENT};
  SrqQueue q;
  q.cfg_ = cfg;
  q.mask_ = (1u << cfg.log_wqes) - 1;
  q.wr_ids_.assign(size_t{1} << cfg.log_wqes, 0);
  // rdma-core srq.c / verbs.c mlx5_alloc_srq_buf: link i -> i + 1.
  for (uint32_t i = 0; i <= q.mask_; ++i) {
    std::memset(q.next(i), 0, sizeof(mlx5_wqe_srq_next_seg));
    q.next(i)->next_wqe_index = htobe16(static_cast<uint16_t>((i + 1) & q.mask_));
  }
  q.head_ = 0;
  q.tail_ = q.mask_;
  return q;
}

Result<SrqQueue> SrqQueue::for_srq(const Srq& srq, uint32_t max_sge) {
  if (!srq.alive()) return Status{KBV_ERR_INVALID_ARGUMENT};
  return create(RqConfig{.ring = srq.mem().buf(),
                         .log_wqes = srq.log_size(),
                         .stride = srq.stride(),
                         .dbrec = srq.mem().dbrec(),
                         .max_sge = max_sge});
}

uint64_t SrqQueue::complete(uint16_t wqe_counter) {
  const uint32_t idx = wqe_counter & mask_;
  const uint64_t id = wr_ids_[idx];
  // rdma-core mlx5_free_srq_wqe: append to the free list.
  next(tail_)->next_wqe_index = htobe16(static_cast<uint16_t>(idx));
  tail_ = idx;
  return id;
}

}  // namespace kbv::hca
