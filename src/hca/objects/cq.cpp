// SPDX-License-Identifier: BSD-3-Clause
#include "hca/objects/cq.hpp"

#include "common/log.hpp"
#include "hca/prm/uar.hpp"
#include "platform/mmio.hpp"

namespace kbv::hca {

namespace {
constexpr const char* kLog = "hca.cq";
constexpr size_t kPage = 4096;
}  // namespace

QueueMem& QueueMem::operator=(QueueMem&& o) noexcept {
  if (this != &o) {
    reset();
    io_ = o.io_;
    ring_ = o.ring_;
    dbr_ = o.dbr_;
    o.io_ = nullptr;
    o.ring_ = {};
    o.dbr_ = {};
  }
  return *this;
}

Result<QueueMem> QueueMem::alloc(DeviceIo& io, size_t bytes) {
  if (bytes == 0) return Status{KBV_ERR_INVALID_ARGUMENT};
  const size_t size = (bytes + kPage - 1) / kPage * kPage;
  auto ring = io.dma_alloc(size, kPage);
  if (!ring) return ring.status();
  auto dbr = io.dbrecs().alloc(io);  // 64 to a page (DbrecPool)
  if (!dbr) {
    io.dma_free(*ring);
    return dbr.status();
  }
  QueueMem m;
  m.io_ = &io;
  m.ring_ = *ring;
  m.dbr_ = *dbr;
  return m;
}

void QueueMem::reset() {
  if (io_ == nullptr) return;
  if (ring_.valid()) io_->dma_free(ring_);
  if (dbr_.valid()) io_->dbrecs().free(*io_, dbr_);
  io_ = nullptr;
  ring_ = {};
  dbr_ = {};
}

std::vector<uint64_t> QueueMem::pas() const {
  std::vector<uint64_t> v(ring_.size / kPage);
  for (size_t i = 0; i < v.size(); ++i) v[i] = ring_.iova + i * kPage;
  return v;
}

Result<uint32_t> Cq::log_for(const Hca& hca, uint32_t cqe) {
  uint32_t log = 1;
  while ((1ull << log) < cqe) ++log;
  if (log > hca.caps().log_max_cq_sz) return Status{KBV_ERR_LIMIT_EXCEEDED};
  return log;
}

void Cq::init_ring(QueueMem& m) {
  // docs/PRM.md "Data path": new CQ buffers are filled with op_own 0xF0.
  for (size_t off = 0; off + kCqeBytes <= m.size(); off += kCqeBytes)
    m.buf()[off + kCqeBytes - 1] = std::byte{kInvalidOpOwn};
}

Status Cq::create(Hca& hca, const CqConfig& cfg, cmd::Done<std::unique_ptr<Cq>> done) {
  if (!done || !hca.ready())
    return Status{!done ? KBV_ERR_INVALID_ARGUMENT : KBV_ERR_INVALID_STATE};
  auto log = log_for(hca, cfg.cqe);
  if (!log) return log.status();
  uint32_t eqn;
  if (cfg.c_eqn >= 0) {
    eqn = static_cast<uint32_t>(cfg.c_eqn);
  } else if (hca.comp_eq() != nullptr) {
    eqn = hca.comp_eq()->eqn();
  } else {
    return Status{KBV_ERR_INVALID_STATE};
  }
  std::unique_ptr<Cq> cq(new Cq(hca));
  auto mem = QueueMem::alloc(hca.io(), size_t{kCqeBytes} << *log);
  if (!mem) return mem.status();
  cq->mem_ = std::move(*mem);
  init_ring(cq->mem_);
  cq->log_size_ = *log;
  cq->c_eqn_ = eqn;
  cmd::CqAttr a;
  a.log_cq_size = *log;
  a.uar_page = hca.uar().index();
  a.c_eqn = eqn;
  a.dbr_addr = cq->mem_.dbrec_iova();
  a.pas = cq->mem_.pas();
  a.cq_period = cfg.cq_period;
  a.cq_max_count = cfg.cq_max_count;
  a.cq_period_mode = cfg.cq_period_mode;
  Cq* raw = cq.release();
  Status s;
  try {
    s = cmd::create_cq(hca.cmdq(), a, [raw, done](Result<uint32_t> r) {
      std::unique_ptr<Cq> c(raw);
      if (!r) {
        done(r.status());
        return;
      }
      c->cqn_ = *r;
      c->alive_ = true;
      log::debug(kLog, "cq {:#x}: {} CQEs on eq {}", c->cqn_, c->ncqe(), c->c_eqn_);
      done(std::move(c));
    });
  } catch (...) {  // allocation failure: nothing was submitted
    delete raw;
    throw;
  }
  if (s != KBV_PENDING) delete raw;
  return s;
}

Cq::~Cq() {
  if (alive_) log::error(kLog, "cq {:#x} freed while the device still owns it", cqn_);
}

void Cq::arm(bool solicited) {
  // docs/PRM.md "Data path": arm word, record, barrier, 64-bit UAR doorbell.
  const uint32_t cmd = solicited ? 1u << 24 : 0u;
  const uint32_t word = (arm_sn_ & 3) << 28 | cmd | ci_;
  platform::dbrec_store(&mem_.dbrec()[1], htobe32(word));
  // rdma-core cq.c mlx5_arm_cq: the record before the doorbell with
  // mmio_wc_start(), the doorbell flushed with mmio_flush_writes().
  platform::mmio_wc_start();
  hca_.io().bar0().write64_be(hca_.uar().bar_offset() + prm::kUarCqDoorbellOff,
                              uint64_t{word} << 32 | cqn_);
  platform::mmio_flush_writes();
}

Status Cq::query(cmd::Done<cmd::CqInfo> done) {
  if (!alive_) return Status{KBV_ERR_INVALID_HANDLE};
  return cmd::query_cq(hca_.cmdq(), cqn_, static_cast<uint32_t>(mem_.size() / kPage),
                       std::move(done));
}

Status Cq::modify(const cmd::CqModeration& m, cmd::DoneStatus done) {
  if (!alive_) return Status{KBV_ERR_INVALID_HANDLE};
  return cmd::modify_cq(hca_.cmdq(), cqn_, m, std::move(done));
}

Status Cq::resize(uint32_t cqe, cmd::DoneStatus done) {
  if (!done) return Status{KBV_ERR_INVALID_ARGUMENT};
  if (!alive_) return Status{KBV_ERR_INVALID_HANDLE};
  if (busy_) return Status{KBV_ERR_BUSY};
  auto log = log_for(hca_, cqe);
  if (!log) return log.status();
  auto mem = QueueMem::alloc(hca_.io(), size_t{kCqeBytes} << *log);
  if (!mem) return mem.status();
  init_ring(*mem);
  cmd::CqResize r;
  r.log_cq_size = *log;
  r.pas = mem->pas();
  resize_mem_ = std::move(*mem);
  const uint32_t new_log = *log;
  Status s = cmd::resize_cq(hca_.cmdq(), cqn_, r, [this, new_log, done](Status st) {
    busy_ = false;
    if (st.is_ok()) {
      mem_.swap_ring(resize_mem_);  // the doorbell record stays (dbr_addr unchanged)
      log_size_ = new_log;
      // ci_ continues: the device keeps its producer counter across a
      // resize (the kernel's mlx5_ib resize keeps cons_index), so CQE n
      // lands at n & (ncqe - 1) of the new ring.
    }
    resize_mem_.reset();
    done(st);
  });
  if (s != KBV_PENDING) {
    resize_mem_.reset();
    return s;
  }
  busy_ = true;
  return s;
}

Status Cq::destroy(cmd::DoneStatus done) {
  return destroy_queue_object(alive_, busy_, mem_, std::move(done), [this](cmd::DoneStatus cb) {
    return cmd::destroy_cq(hca_.cmdq(), cqn_, std::move(cb));
  });
}

}  // namespace kbv::hca
