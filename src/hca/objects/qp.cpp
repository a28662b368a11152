// SPDX-License-Identifier: BSD-3-Clause
#include "hca/objects/qp.hpp"

#include <algorithm>

#include "common/log.hpp"
#include "hca/cmd/mcg.hpp"

namespace kbv::hca {

namespace {
constexpr const char* kLog = "hca.qp";
namespace qs = prm::qp_state;

uint32_t log2_ceil(uint64_t v) {
  uint32_t l = 0;
  while ((1ull << l) < v) ++l;
  return l;
}

// Target state of each transition (IBTA 10.3.1).
uint32_t target_state(cmd::QpTransition t) {
  switch (t) {
    case cmd::QpTransition::kRst2Init:
    case cmd::QpTransition::kInit2Init: return qs::kInit;
    case cmd::QpTransition::kInit2Rtr: return qs::kRtr;
    case cmd::QpTransition::kToErr: return qs::kErr;
    case cmd::QpTransition::kToRst: return qs::kRst;
    default: return qs::kRts;
  }
}
}  // namespace

uint16_t roce_udp_sport(const HcaCaps& caps, uint32_t lqpn, uint32_t rqpn) {
  // Kernel ib_verbs.h rdma_calc_flow_label / rdma_flow_label_to_udp_sport.
  uint64_t v = uint64_t{lqpn} * rqpn;
  v ^= v >> 20;
  v ^= v >> 40;
  const auto fl = static_cast<uint32_t>(v & 0xFFFFF);
  const uint32_t low = (fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14);
  uint32_t sport = low | 0xC000;
  const uint32_t lo = caps.r_roce_min_src_udp_port, hi = caps.r_roce_max_src_udp_port;
  if (lo != 0 && hi >= lo && (sport < lo || sport > hi)) sport = lo + sport % (hi - lo + 1);
  return static_cast<uint16_t>(sport);
}

cmd::AddressPath roce_path(const HcaCaps& caps, const RoceDest& d, uint32_t lqpn, uint32_t rqpn) {
  cmd::AddressPath p;
  p.vhca_port_num = d.port;
  p.grh = true;  // RoCE always carries a GRH (IBTA Annex A17)
  p.src_addr_index = d.sgid_index;
  p.rgid = d.dgid;
  p.rmac = d.dmac & 0xFFFFFFFFFFFFull;
  p.udp_sport = d.udp_sport != 0 ? d.udp_sport : roce_udp_sport(caps, lqpn, rqpn);
  p.hop_limit = d.hop_limit;
  p.tclass = d.tclass;
  p.flow_label = d.flow_label & 0xFFFFF;
  p.sl = d.sl;
  return p;
}

Status Qp::create(Hca& hca, const QpConfig& cfg, cmd::Done<std::unique_ptr<Qp>> done) {
  if (!done) return Status{KBV_ERR_INVALID_ARGUMENT};
  if (!hca.ready()) return Status{KBV_ERR_INVALID_STATE};
  const HcaCaps& caps = hca.caps();
  const bool rc = cfg.st == prm::qpc_st::kRc, uc = cfg.st == prm::qpc_st::kUc;
  const bool ud = cfg.st == prm::qpc_st::kUd;
  if (!rc && !uc && !ud) return Status{KBV_ERR_NOT_SUPPORTED};
  if (cfg.max_send_wr == 0) return Status{KBV_ERR_INVALID_ARGUMENT};

  std::unique_ptr<Qp> qp(new Qp(hca));
  // Send queue geometry.
  const uint32_t seg = ud ? 48u : rc ? 32u : 16u;
  const uint32_t inl = cfg.max_inline_data ? (4 + cfg.max_inline_data + 15) / 16 * 16 : 0;
  const uint32_t wqe = 16 + seg + std::max(16u * std::max(1u, cfg.max_send_sge), inl);
  // The WQE's size travels in the 6-bit ds field of its control segment
  // (mlx5dv.h MLX5_WQE_CTRL_DS_MASK): at most 63 16-byte units, whatever the
  // device advertises, so the send path (dp/sq) can always post it.
  constexpr uint32_t kMaxDsBytes = 0x3F * 16;
  if (wqe > caps.max_wqe_sz_sq || wqe > kMaxDsBytes) return Status{KBV_ERR_LIMIT_EXCEEDED};
  qp->wqe_blocks_ = (wqe + kBasicBlock - 1) / kBasicBlock;
  qp->sq_log_ = log2_ceil(uint64_t{cfg.max_send_wr} * qp->wqe_blocks_);
  if (qp->sq_log_ > caps.log_max_qp_sz) return Status{KBV_ERR_LIMIT_EXCEEDED};
  // Receive queue geometry.
  qp->has_rq_ = !cfg.srqn && cfg.max_recv_wr != 0;
  uint64_t rq_bytes = 0;
  if (qp->has_rq_) {
    const uint32_t stride = 1u << log2_ceil(16ull * std::max(1u, cfg.max_recv_sge));
    if (stride > caps.max_wqe_sz_rq) return Status{KBV_ERR_LIMIT_EXCEEDED};
    qp->rq_log_stride_ = log2_ceil(stride / 16);
    qp->rq_log_ = log2_ceil(cfg.max_recv_wr);
    if (qp->rq_log_ > caps.log_max_qp_sz) return Status{KBV_ERR_LIMIT_EXCEEDED};
    rq_bytes = uint64_t{stride} << qp->rq_log_;
  }
  qp->sq_offset_ = rq_bytes;
  auto mem = QueueMem::alloc(hca.io(), rq_bytes + (uint64_t{kBasicBlock} << qp->sq_log_));
  if (!mem) return mem.status();
  qp->mem_ = std::move(*mem);
  qp->st_ = cfg.st;

  cmd::QpCreateAttr a;
  a.st = cfg.st;
  a.pd = cfg.pd;
  a.uar_page = hca.uar().index();
  a.cqn_snd = cfg.send_cqn;
  a.cqn_rcv = cfg.recv_cqn;
  a.ts_format = hca.caps().ts_free_running() ? prm::qpc_ts_format::kFreeRunning
                                             : prm::qpc_ts_format::kDefault;
  a.log_sq_size = qp->sq_log_;
  if (cfg.srqn) {
    a.rq_type = prm::qpc_rq_type::kSrqRq;
    a.srqn = *cfg.srqn;
  } else if (qp->has_rq_) {
    a.rq_type = prm::qpc_rq_type::kNonZeroRq;
    a.log_rq_size = qp->rq_log_;
    a.log_rq_stride = qp->rq_log_stride_;
  } else {
    a.rq_type = prm::qpc_rq_type::kZeroLenRq;
  }
  a.dbr_addr = qp->mem_.dbrec_iova();
  a.pas = qp->mem_.pas();
  a.user_index = cfg.user_index;
  a.log_msg_max = caps.log_max_msg;
  Qp* raw = qp.release();
  Status s;
  try {
    s = cmd::create_qp(hca.cmdq(), a, [raw, done](Result<uint32_t> r) {
      std::unique_ptr<Qp> q(raw);
      if (!r) {
        done(r.status());
        return;
      }
      q->qpn_ = *r;
      q->alive_ = true;
      log::debug(kLog, "qp {:#x} st {}: sq {} blocks, rq {} x {} B", q->qpn_, q->st_,
                 q->sq_blocks(), q->rq_wqes(), q->rq_stride());
      done(std::move(q));
    });
  } catch (...) {  // allocation failure: nothing was submitted
    delete raw;
    throw;
  }
  if (s != KBV_PENDING) delete raw;
  return s;
}

Qp::~Qp() {
  if (alive_) log::error(kLog, "qp {:#x} freed while the device still owns it", qpn_);
}

Status Qp::modify(cmd::QpTransition t, const cmd::QpAttr& a, uint32_t opt_param_mask,
                  cmd::DoneStatus done) {
  if (!done) return Status{KBV_ERR_INVALID_ARGUMENT};
  if (!alive_ || busy_) return Status{KBV_ERR_INVALID_HANDLE};
  return cmd::modify_qp(hca_.cmdq(), t, qpn_, st_, a, opt_param_mask, [this, t, done](Status st) {
    if (st.is_ok()) state_ = target_state(t);
    done(st);
  });
}

Status Qp::query(cmd::Done<cmd::QpInfo> done) {
  if (!alive_) return Status{KBV_ERR_INVALID_HANDLE};
  return cmd::query_qp(hca_.cmdq(), qpn_, std::move(done));
}

Status Qp::attach_mcast(const Gid& mgid, cmd::DoneStatus done) {
  if (!alive_) return Status{KBV_ERR_INVALID_HANDLE};
  return cmd::attach_to_mcg(hca_.cmdq(), qpn_, mgid, std::move(done));
}

Status Qp::detach_mcast(const Gid& mgid, cmd::DoneStatus done) {
  if (!alive_) return Status{KBV_ERR_INVALID_HANDLE};
  return cmd::detach_from_mcg(hca_.cmdq(), qpn_, mgid, std::move(done));
}

Status Qp::destroy(cmd::DoneStatus done) {
  return destroy_queue_object(alive_, busy_, mem_, std::move(done), [this](cmd::DoneStatus cb) {
    return cmd::destroy_qp(hca_.cmdq(), qpn_, std::move(cb));
  });
}

}  // namespace kbv::hca
