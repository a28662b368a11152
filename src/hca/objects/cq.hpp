// SPDX-License-Identifier: BSD-3-Clause
//
// Cq: a completion queue of the mlx5 driver — its CQE ring (DMA memory, every
// entry's op_own initialised to 0xF0: opcode 15 "invalid", owner 0, docs/PRM.md
// "Data path"), its doorbell record (8 bytes: [0] consumer index, [1] arm
// word), the firmware CQ (CREATE_CQ, cmd/cq.hpp) and the arm doorbell.
// Also QueueMem, the ring + doorbell-record memory that Cq, Qp and Srq own.
//
// Life cycle (asynchronous; callbacks run from Hca::poll()):
//   Cq::create(hca, cfg, done)  -> done(unique_ptr<Cq>) or the error;
//   cq->modify(...), cq->resize(n, done), cq->arm(solicited);
//   cq->destroy(done)           -> the firmware CQ is gone, memory freed.
// The Cq object must outlive its pending commands. Destroying a Cq object
// whose firmware CQ still exists logs an error and frees the memory anyway
// (only correct once the device is torn down).
//
// Sizes: the ring holds 2^ceil(log2(cqe)) 64-byte CQEs (at least 2);
// create/resize refuse more than 2^caps.log_max_cq_sz with
// KBV_ERR_LIMIT_EXCEEDED before asking firmware. 4 KiB pages, page_offset 0.
//
// Arm (docs/PRM.md "Data path"; kernel mlx5_cq_arm / rdma-core mlx5_arm_cq): the
// arm word sn << 28 | cmd | ci (cmd 0 = next completion, 1 << 24 =
// solicited only; sn = arm_sn & 3) goes to dbrec[1] (big-endian), then, after
// mmio_wc_start(), the 64-bit UAR doorbell at uar + 0x20 carries arm word
// << 32 | cqn, followed by mmio_flush_writes() (the barriers of rdma-core's
// mlx5_arm_cq). The data path advances ci (set_ci) and counts
// completion events (on_event: arm_sn++), as the kernel does per event.
//
// Resize keeps the CQN and the consumer index (the device's producer
// counter continues too); the new ring starts fresh (the data path, which
// alone knows unpolled CQEs, must drain the CQ before resizing — kbv has no
// CQE copy yet).
//
// Threading: as Hca (one thread).
#pragma once

#include <kbv/status.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include "hca/cmd/cq.hpp"
#include "hca/hca.hpp"

namespace kbv::hca {

// A queue ring (4 KiB pages, IOVA-contiguous: one DeviceIo block) plus a
// doorbell record, a 64-byte record of the DeviceIo's DbrecPool (64 to a
// page). Move-only; frees
// both on destruction.
class QueueMem {
 public:
  QueueMem() = default;
  ~QueueMem() { reset(); }
  QueueMem(QueueMem&& o) noexcept { *this = std::move(o); }
  QueueMem& operator=(QueueMem&& o) noexcept;
  QueueMem(const QueueMem&) = delete;
  QueueMem& operator=(const QueueMem&) = delete;

  // `bytes` (> 0) rounded up to 4 KiB pages, zeroed.
  static Result<QueueMem> alloc(DeviceIo& io, size_t bytes);
  void reset();

  std::byte* buf() const { return ring_.va; }
  uint64_t iova() const { return ring_.iova; }
  size_t size() const { return ring_.size; }
  // The page IOVAs (pas[] of the create commands), 4 KiB each.
  std::vector<uint64_t> pas() const;
  // Doorbell record: two big-endian 32-bit words.
  volatile uint32_t* dbrec() const { return reinterpret_cast<volatile uint32_t*>(dbr_.va); }
  uint64_t dbrec_iova() const { return dbr_.iova; }
  bool valid() const { return ring_.valid(); }
  // Exchanges the rings only; each keeps its doorbell record (CQ resize: the
  // context's dbr_addr does not change).
  void swap_ring(QueueMem& o) { std::swap(ring_, o.ring_); }

 private:
  DeviceIo* io_ = nullptr;
  DmaBlock ring_, dbr_;
};

// The destroy step CQ, QP and SRQ share: refused while the object is gone
// (KBV_ERR_INVALID_HANDLE) or another command on it is pending
// (KBV_ERR_BUSY); otherwise `submit(callback)` issues the DESTROY_*
// command, and on its success the object is dead and its queue memory freed
// (the device no longer owns it). `alive`, `busy` and `mem` belong to the
// object, which must outlive the pending destroy. Returns submit's status
// (KBV_PENDING, or its refusal: nothing changed).
template <class Submit>
Status destroy_queue_object(bool& alive, bool& busy, QueueMem& mem, cmd::DoneStatus done,
                            Submit submit) {
  if (!done) return Status{KBV_ERR_INVALID_ARGUMENT};
  if (!alive) return Status{KBV_ERR_INVALID_HANDLE};
  if (busy) return Status{KBV_ERR_BUSY};
  Status s = submit([&alive, &busy, &mem, done](Status st) {
    busy = false;
    if (st.is_ok()) {
      alive = false;
      mem.reset();
    }
    done(st);
  });
  if (s == KBV_PENDING) busy = true;
  return s;
}

struct CqConfig {
  uint32_t cqe = 64;            // minimum number of CQEs
  int32_t c_eqn = -1;           // -1: the Hca's completion EQ
  uint32_t cq_period = 0;       // us
  uint32_t cq_max_count = 0;    // CQEs
  uint32_t cq_period_mode = 0;  // prm::cq_period_mode
};

class Cq {
 public:
  static constexpr uint32_t kCqeBytes = 64;
  static constexpr uint8_t kInvalidOpOwn = 0xF0;

  static Status create(Hca& hca, const CqConfig& cfg, cmd::Done<std::unique_ptr<Cq>> done);
  ~Cq();
  Cq(const Cq&) = delete;
  Cq& operator=(const Cq&) = delete;

  uint32_t cqn() const { return cqn_; }
  uint32_t ncqe() const { return 1u << log_size_; }
  uint32_t log_size() const { return log_size_; }
  uint32_t c_eqn() const { return c_eqn_; }
  const QueueMem& mem() const { return mem_; }
  bool alive() const { return alive_; }

  // Arm for the next (solicited: next solicited) completion event.
  void arm(bool solicited);
  void set_ci(uint32_t ci) { ci_ = ci & 0xFFFFFF; }
  uint32_t ci() const { return ci_; }
  void on_event() { ++arm_sn_; }
  uint32_t arm_sn() const { return arm_sn_; }

  Status query(cmd::Done<cmd::CqInfo> done);
  Status modify(const cmd::CqModeration& m, cmd::DoneStatus done);
  // New ring of >= cqe entries (KBV_ERR_LIMIT_EXCEEDED above the cap; a
  // firmware refusal keeps the old ring).
  Status resize(uint32_t cqe, cmd::DoneStatus done);
  Status destroy(cmd::DoneStatus done);

 private:
  explicit Cq(Hca& hca) : hca_(hca) {}
  static Result<uint32_t> log_for(const Hca& hca, uint32_t cqe);
  static void init_ring(QueueMem& m);

  Hca& hca_;
  QueueMem mem_;
  QueueMem resize_mem_;  // the new ring while a resize is pending
  uint32_t cqn_ = 0;
  uint32_t log_size_ = 0;
  uint32_t c_eqn_ = 0;
  uint32_t ci_ = 0;
  uint32_t arm_sn_ = 0;
  bool alive_ = false;
  bool busy_ = false;  // a resize or destroy is pending
};

}  // namespace kbv::hca
