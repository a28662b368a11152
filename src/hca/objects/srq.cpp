// SPDX-License-Identifier: BSD-3-Clause
#include "hca/objects/srq.hpp"

#include "common/log.hpp"

namespace kbv::hca {

namespace {
constexpr const char* kLog = "hca.srq";
uint32_t log2_ceil(uint64_t v) {
  uint32_t l = 0;
  while ((1ull << l) < v) ++l;
  return l;
}
}  // namespace

Status Srq::create(Hca& hca, const SrqConfig& cfg, cmd::Done<std::unique_ptr<Srq>> done) {
  if (!done || cfg.max_wr == 0) return Status{KBV_ERR_INVALID_ARGUMENT};
  if (!hca.ready()) return Status{KBV_ERR_INVALID_STATE};
  const uint32_t log_size = std::max(1u, log2_ceil(cfg.max_wr));
  const uint32_t stride = 1u << log2_ceil(16ull + 16ull * std::max(1u, cfg.max_sge));
  if (log_size > hca.caps().log_max_srq_sz || stride > hca.caps().max_wqe_sz_rq)
    return Status{KBV_ERR_LIMIT_EXCEEDED};
  std::unique_ptr<Srq> srq(new Srq(hca));
  auto mem = QueueMem::alloc(hca.io(), uint64_t{stride} << log_size);
  if (!mem) return mem.status();
  srq->mem_ = std::move(*mem);
  srq->log_size_ = log_size;
  srq->log_stride_ = log2_ceil(stride / 16);
  cmd::SrqAttr a;
  a.log_srq_size = log_size;
  a.log_rq_stride = srq->log_stride_;
  a.pd = cfg.pd;
  a.cqn = cfg.cqn;
  a.lwm = cfg.lwm;
  a.dbr_addr = srq->mem_.dbrec_iova();
  a.pas = srq->mem_.pas();
  Srq* raw = srq.release();
  Status s;
  try {
    s = cmd::create_srq(hca.cmdq(), a, [raw, done](Result<uint32_t> r) {
      std::unique_ptr<Srq> q(raw);
      if (!r) {
        done(r.status());
        return;
      }
      q->srqn_ = *r;
      q->alive_ = true;
      log::debug(kLog, "srq {:#x}: {} WQEs of {} bytes", q->srqn_, q->nwqe(), q->stride());
      done(std::move(q));
    });
  } catch (...) {  // allocation failure: nothing was submitted
    delete raw;
    throw;
  }
  if (s != KBV_PENDING) delete raw;
  return s;
}

Srq::~Srq() {
  if (alive_) log::error(kLog, "srq {:#x} freed while the device still owns it", srqn_);
}

Status Srq::arm(uint32_t lwm, cmd::DoneStatus done) {
  if (!alive_) return Status{KBV_ERR_INVALID_HANDLE};
  return cmd::arm_rq(hca_.cmdq(), srqn_, lwm, std::move(done));
}

Status Srq::query(cmd::Done<cmd::SrqInfo> done) {
  if (!alive_) return Status{KBV_ERR_INVALID_HANDLE};
  return cmd::query_srq(hca_.cmdq(), srqn_, std::move(done));
}

Status Srq::destroy(cmd::DoneStatus done) {
  return destroy_queue_object(alive_, busy_, mem_, std::move(done), [this](cmd::DoneStatus cb) {
    return cmd::destroy_srq(hca_.cmdq(), srqn_, std::move(cb));
  });
}

}  // namespace kbv::hca
