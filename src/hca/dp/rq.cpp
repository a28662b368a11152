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

// Data segments for wr at `wqe` (room for `slots` segments); the terminator
// when they do not fill the slot (rdma-core mlx5_post_recv).
void write_scatter(std::byte* wqe, uint32_t slots, std::span<const Sge> sg) {
  auto* d = reinterpret_cast<mlx5_wqe_data_seg*>(wqe);
  uint32_t j = 0;
  for (const Sge& s : sg) {
    if (s.length == 0) continue;  // 0 would mean 2 GiB
    d[j].byte_count = htobe32(s.length);
    d[j].lkey = htobe32(s.lkey);
    d[j].addr = htobe64(s.addr);
    ++j;
  }
  if (j < slots) {
    d[j].byte_count = 0;
    d[j].lkey = htobe32(MLX5_INVALID_LKEY);
    d[j].addr = 0;
  }
}
}  // namespace

// ---- RecvQueue -----------------------------------------------------------------

Result<RecvQueue> RecvQueue::create(const RqConfig& cfg) {
  if (!valid_geometry(cfg, 0)) return Status{KBV_ERR_INVALID_ARGUMENT};
  RecvQueue q;
  q.cfg_ = cfg;
  q.mask_ = (1u << cfg.log_wqes) - 1;
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

Status RecvQueue::post(std::span<const RecvWr> wrs, size_t* bad_index) {
  Status result = Status::ok();
  uint32_t n = 0;
  for (size_t i = 0; i < wrs.size(); ++i) {
    const RecvWr& wr = wrs[i];
    Status s = Status::ok();
    if (wr.sg.size() > cfg_.max_sge)
      s = Status{KBV_ERR_TOO_MANY_SGE};
    else if (head_ - tail_ >= mask_ + 1)
      s = Status{KBV_ERR_QUEUE_FULL};
    if (!s.is_ok()) [[unlikely]] {
      if (bad_index) *bad_index = i;
      log::debug(kLog, "receive request {} refused: {}", i, s.to_string());
      result = s;
      break;
    }
    const uint32_t idx = head_ & mask_;
    write_scatter(cfg_.ring + size_t{idx} * cfg_.stride, cfg_.stride / 16, wr.sg);
    wr_ids_[idx] = wr.wr_id;
    ++head_;
    ++n;
  }
  if (n) {
    platform::udma_to_device_barrier();  // WQEs before the record
    cfg_.dbrec[0] = htobe32(head_ & 0xFFFF);
  }
  return result;
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

Status SrqQueue::post(std::span<const RecvWr> wrs, size_t* bad_index) {
  Status result = Status::ok();
  uint32_t n = 0;
  for (size_t i = 0; i < wrs.size(); ++i) {
    const RecvWr& wr = wrs[i];
    Status s = Status::ok();
    if (wr.sg.size() > cfg_.max_sge)
      s = Status{KBV_ERR_TOO_MANY_SGE};
    else if (head_ == tail_)
      s = Status{KBV_ERR_QUEUE_FULL};
    if (!s.is_ok()) [[unlikely]] {
      if (bad_index) *bad_index = i;
      log::debug(kLog, "SRQ receive request {} refused: {}", i, s.to_string());
      result = s;
      break;
    }
    const uint32_t idx = head_;
    std::byte* wqe = cfg_.ring + size_t{idx} * cfg_.stride;
    write_scatter(wqe + sizeof(mlx5_wqe_srq_next_seg), cfg_.stride / 16 - 1, wr.sg);
    wr_ids_[idx] = wr.wr_id;
    head_ = be16toh(next(idx)->next_wqe_index) & mask_;
    ++counter_;
    ++n;
  }
  if (n) {
    platform::udma_to_device_barrier();
    cfg_.dbrec[0] = htobe32(counter_ & 0xFFFF);
  }
  return result;
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
