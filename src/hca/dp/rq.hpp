// SPDX-License-Identifier: BSD-3-Clause
//
// RecvQueue and SrqQueue: the receive half of the mlx5 data path — receive
// WQEs built in place in a QP's receive ring or in a shared receive queue,
// published through the doorbell record (receives have no UAR doorbell).
//
// Receive WQE (rdma-core providers/mlx5/qp.c mlx5_post_recv; mlx5dv.h
// mlx5_wqe_data_seg, included): stride-sized slots of 16-byte data segments,
// one per SGE of non-zero length (byte_count, lkey, addr, big-endian); when
// fewer segments than the slot holds, a terminating segment follows with
// byte_count 0 and lkey MLX5_INVALID_LKEY (0x100). Then, after
// udma_to_device_barrier(), the doorbell record's receive counter dbrec[0]
// = WQEs posted (low 16 bits, big-endian) (docs/PRM.md "Data path").
//
// SRQ WQE (rdma-core providers/mlx5/srq.c): a mlx5_wqe_srq_next_seg (16 B;
// next_wqe_index at byte 2, big-endian) then the data segments as above.
// Free WQEs form a linked list through next_wqe_index; create() links all
// of them in ring order (i -> i + 1, the last -> 0) before anything is
// posted — it must run before the first post and before the device is told
// of any WQE. head = next WQE to post, tail = the last free WQE; the list
// is full when head == tail, so one WQE always stays unused (capacity nwqe
// - 1, as in rdma-core). A completion returns WQE i to the list end: the
// tail's next_wqe_index = i, tail = i. dbrec[0] = WQEs posted so far (16
// bits).
//
// Checks before anything of a request is written: more SGEs than max_sge
// -> KBV_ERR_TOO_MANY_SGE; no free WQE -> KBV_ERR_QUEUE_FULL. As for sends,
// requests before the refused one are posted, *bad_index names it.
//
// Building: dp/wqe.hpp set_data_ptr_seg / set_data_ptr_end_seg. The post
// loop is inline here and reads requests through a field adapter
// (RecvWrFields for RecvWr; the verbs layer has one for kbv_recv_wr_t), so
// the public kbv_post_recv builds straight from the caller's requests; a
// one-entry list (the common receive) skips the scatter loop.
//
// No locks, no allocation after create(). Threading: one thread per queue.
#pragma once

#include <endian.h>
#include <infiniband/mlx5dv.h>

#include <kbv/status.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/log.hpp"
#include "hca/dp/sq.hpp"
#include "hca/dp/wqe.hpp"
#include "platform/mmio.hpp"

namespace kbv::hca {

class Qp;
class Srq;

struct RecvWr {
  uint64_t wr_id = 0;
  std::span<const Sge> sg{};
};

// How the receive post loops read a request (as sq.hpp SendWrFields): a
// type A with `using Wr`, static wr_id / sg (entries laid out as Sge) /
// num_sge, and `kbv_status_t prepare(const Wr&) const`, run first for each
// request (an error refuses it like the queue's own checks).
struct RecvWrFields {
  using Wr = RecvWr;
  kbv_status_t prepare(const Wr&) const { return KBV_SUCCESS; }
  static uint64_t wr_id(const Wr& w) { return w.wr_id; }
  static const Sge* sg(const Wr& w) { return w.sg.data(); }
  static size_t num_sge(const Wr& w) { return w.sg.size(); }
};

namespace rq_detail {
// The data segments of one receive WQE at `wqe` (room for `slots`), then
// the terminator when they do not fill it (rdma-core mlx5_post_recv).
[[gnu::always_inline]] inline void write_scatter(std::byte* wqe, uint32_t slots, const Sge* sg,
                                                 size_t n) {
  uint32_t j = 0;
  if (n == 1) [[likely]] {
    if (sg[0].length != 0) {  // 0 would mean 2 GiB
      wqe::set_data_ptr_seg(wqe, sg[0].addr, sg[0].length, sg[0].lkey);
      j = 1;
    }
  } else {
    for (size_t i = 0; i < n; ++i)
      if (sg[i].length != 0)
        wqe::set_data_ptr_seg(wqe + 16 * j++, sg[i].addr, sg[i].length, sg[i].lkey);
  }
  if (j < slots) wqe::set_data_ptr_end_seg(wqe + 16 * j);
}
void log_refused(const char* queue, size_t i, kbv_status_t st);
}  // namespace rq_detail

// A receive ring: `ring` of (1 << log_wqes) slots of `stride` bytes
// (a power of two, >= 16), its doorbell record, and the SGE limit the
// queue was created with (<= stride / 16; SRQ: <= stride / 16 - 1).
struct RqConfig {
  std::byte* ring = nullptr;
  uint32_t log_wqes = 0;
  uint32_t stride = 0;
  volatile uint32_t* dbrec = nullptr;
  uint32_t max_sge = 1;
};

class RecvQueue {
 public:
  // KBV_ERR_INVALID_ARGUMENT for a missing ring/record, a stride that is not
  // a power of two >= 16, more than 2^16 WQEs, or max_sge above the stride.
  static Result<RecvQueue> create(const RqConfig& cfg);
  // The receive queue of `qp` (KBV_ERR_INVALID_ARGUMENT when it has none:
  // SRQ or zero-length RQ); max_sge = the QpConfig's max_recv_sge.
  static Result<RecvQueue> for_qp(const Qp& qp, uint32_t max_recv_sge);

  RecvQueue(RecvQueue&&) noexcept = default;
  RecvQueue& operator=(RecvQueue&&) noexcept = default;

  Status post(std::span<const RecvWr> wrs, size_t* bad_index = nullptr) {
    return post(RecvWrFields{}, wrs.data(), wrs.size(), bad_index);
  }
  // Requests of the adapter A's type (RecvWrFields); inline.
  template <class A>
  kbv_status_t post(const A& a, const typename A::Wr* wrs, size_t n, size_t* bad_index) {
    size_t i = 0;
    kbv_status_t result = KBV_SUCCESS;
    for (; i < n; ++i) {
      const typename A::Wr& wr = wrs[i];
      kbv_status_t s = a.prepare(wr);
      if (s == KBV_SUCCESS) [[likely]] {
        if (A::num_sge(wr) > cfg_.max_sge)
          s = KBV_ERR_TOO_MANY_SGE;
        else if (head_ - tail_ >= mask_ + 1)
          s = KBV_ERR_QUEUE_FULL;
      }
      if (s != KBV_SUCCESS) [[unlikely]] {
        if (bad_index) *bad_index = i;
        rq_detail::log_refused("receive", i, s);
        result = s;
        break;
      }
      const uint32_t idx = head_ & mask_;
      rq_detail::write_scatter(cfg_.ring + size_t{idx} * cfg_.stride, cfg_.stride / 16, A::sg(wr),
                               A::num_sge(wr));
      wr_ids_[idx] = A::wr_id(wr);
      ++head_;
    }
    if (i) [[likely]] {
      platform::udma_to_device_barrier();  // WQEs before the record
      platform::dbrec_store(&cfg_.dbrec[0], htobe32(head_ & 0xFFFF));
    }
    return result;
  }

  // One request of one SGE that the adapter's prepare() accepts, with
  // room: posted (WQE, wr_id, barrier, record), true. Anything else: false
  // with nothing written; post() then gives the request its status. The
  // public kbv_post_recv's straight line.
  template <class A>
  [[gnu::always_inline]] bool post_one(const A& a, const typename A::Wr& wr) {
    const uint32_t head = head_;
    if (A::num_sge(wr) != 1 || cfg_.max_sge == 0 || a.prepare(wr) != KBV_SUCCESS ||
        head - tail_ > mask_)
      return false;
    const uint32_t idx = head & mask_;
    rq_detail::write_scatter(cfg_.ring + (size_t{idx} << stride_shift_), cfg_.stride / 16,
                             A::sg(wr), 1);
    wr_ids_[idx] = A::wr_id(wr);
    head_ = head + 1;
    platform::udma_to_device_barrier();  // WQE before the record
    platform::dbrec_store(&cfg_.dbrec[0], htobe32((head + 1) & 0xFFFF));
    return true;
  }

  // Receive completion (in order): the oldest outstanding wr_id. With none
  // outstanding (a device completing a receive never posted) nothing is
  // consumed and the wr_id is that of the last one completed.
  uint64_t complete() {
    if (head_ == tail_) [[unlikely]]
      return wr_ids_[(tail_ - 1) & mask_];
    return wr_ids_[tail_++ & mask_];
  }

  // The device failed: the oldest outstanding wr_id, completed in software
  // (SendQueue::flush_one); false when none is left.
  bool flush_one(uint64_t* wr_id) {
    if (head_ == tail_) return false;
    *wr_id = wr_ids_[tail_++ & mask_];
    return true;
  }

  uint32_t wqes() const { return mask_ + 1; }
  uint32_t head() const { return head_; }
  uint32_t outstanding() const { return head_ - tail_; }

 private:
  RecvQueue() = default;

  RqConfig cfg_;
  uint32_t mask_ = 0;
  uint32_t head_ = 0, tail_ = 0;
  uint32_t stride_shift_ = 0;  // log2(stride)
  std::vector<uint64_t> wr_ids_;
};

class SrqQueue {
 public:
  // As RecvQueue::create, with max_sge <= stride / 16 - 1 (the next
  // segment); links the free list in the ring.
  static Result<SrqQueue> create(const RqConfig& cfg);
  static Result<SrqQueue> for_srq(const Srq& srq, uint32_t max_sge);

  SrqQueue(SrqQueue&&) noexcept = default;
  SrqQueue& operator=(SrqQueue&&) noexcept = default;

  Status post(std::span<const RecvWr> wrs, size_t* bad_index = nullptr) {
    return post(RecvWrFields{}, wrs.data(), wrs.size(), bad_index);
  }
  template <class A>
  kbv_status_t post(const A& a, const typename A::Wr* wrs, size_t n, size_t* bad_index) {
    size_t i = 0;
    kbv_status_t result = KBV_SUCCESS;
    for (; i < n; ++i) {
      const typename A::Wr& wr = wrs[i];
      kbv_status_t s = a.prepare(wr);
      if (s == KBV_SUCCESS) [[likely]] {
        if (A::num_sge(wr) > cfg_.max_sge)
          s = KBV_ERR_TOO_MANY_SGE;
        else if (head_ == tail_)
          s = KBV_ERR_QUEUE_FULL;
      }
      if (s != KBV_SUCCESS) [[unlikely]] {
        if (bad_index) *bad_index = i;
        rq_detail::log_refused("SRQ receive", i, s);
        result = s;
        break;
      }
      const uint32_t idx = head_;
      std::byte* w = cfg_.ring + size_t{idx} * cfg_.stride;
      rq_detail::write_scatter(w + sizeof(mlx5_wqe_srq_next_seg), cfg_.stride / 16 - 1, A::sg(wr),
                               A::num_sge(wr));
      wr_ids_[idx] = A::wr_id(wr);
      head_ = be16toh(next(idx)->next_wqe_index) & mask_;
      ++counter_;
    }
    if (i) [[likely]] {
      platform::udma_to_device_barrier();
      platform::dbrec_store(&cfg_.dbrec[0], htobe32(counter_ & 0xFFFF));
    }
    return result;
  }

  // Completion of SRQ WQE `wqe_counter`: its wr_id; the WQE goes back to the
  // free list.
  uint64_t complete(uint16_t wqe_counter);

  uint32_t wqes() const { return mask_ + 1; }
  uint32_t counter() const { return counter_; }
  uint32_t head() const { return head_; }
  uint32_t tail() const { return tail_; }

 private:
  SrqQueue() = default;
  mlx5_wqe_srq_next_seg* next(uint32_t i) const {
    return reinterpret_cast<mlx5_wqe_srq_next_seg*>(cfg_.ring + size_t{i} * cfg_.stride);
  }

  RqConfig cfg_;
  uint32_t mask_ = 0;
  uint32_t head_ = 0, tail_ = 0;
  uint32_t counter_ = 0;
  std::vector<uint64_t> wr_ids_;
};

}  // namespace kbv::hca
