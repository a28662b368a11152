// SPDX-License-Identifier: BSD-3-Clause
//
// CREATE_QP / DESTROY_QP / QUERY_QP (mlx5_ifc.h create_qp_in/out,
// destroy_qp_in, query_qp_in/out, qpc_bits; prm/qp_cmd.hpp, prm/qpc.hpp).
// CREATE_QP makes a QP in RESET. Checks, in order:
//   RoCE enabled on the vport (MODIFY_NIC_VPORT_CONTEXT
//     roce_en; docs/PRM.md bring-up step 10)             BAD_SYS_STATE kQpRoceDisabled
//   offload_type, wq_signature, cd_master/slave, rlky, fre 0; ece 0
//     unless cap ece_support                             BAD_PARAM kQpUnsupported
//   input_qpn 0 (no QPN selection)                       BAD_PARAM kQpInputQpn
//   opt_param_mask 0 (nothing optional at creation)      BAD_PARAM kQpOptParam
//   st RC, UC or UD (cap rc/uc/ud; no XRC, DC, raw, QP1) BAD_PARAM kQpServiceType
//   pm_state not the reserved value                      BAD_PARAM kQpPmState
//   ts_format FREE_RUNNING or DEFAULT (caps: free-running
//     only, roce_cap.qp_ts_format 0)                     BAD_PARAM kQpTsFormat
//   log_msg_max <= cap log_max_msg                       LIM_ERR   kQpLogMsgMax
//   pd allocated                                         BAD_RES   kQpPdUnknown
//   rq_type regular, SRQ or zero-length (no CRQ)         BAD_PARAM kQpRqType
//   regular RQ: log_rq_size <= cap log_max_qp_sz         LIM_ERR   kQpLogRqSize
//               16 << log_rq_stride <= cap max_wqe_sz_rq BAD_PARAM kQpRqStride
//   SRQ RQ: srqn_rmpn_xrqn names an SRQ                  BAD_RES   kQpSrqUnknown
//   SQ (no_sq 0): log_sq_size <= cap log_max_qp_sz       LIM_ERR   kQpLogSqSize
//   a send or a receive queue                            BAD_PARAM kQpNoQueues
//   cqn_snd names a CQ (unless no_sq)                    BAD_RES   kQpCqSndUnknown
//   cqn_rcv names a CQ (unless zero-length RQ)           BAD_RES   kQpCqRcvUnknown
//   uar_page allocated                                   BAD_RES   kQpUarUnknown
//   counter_set_id 0 (no Q counters)                     BAD_RES   kQpCounterSet
//   log_page_size <= 18                                  BAD_PARAM kQpLogPageSize
//   dbr_addr 8-byte aligned                              BAD_PARAM kQpDbrMisaligned
//   wq_umem_valid 0: inlen holds pas[] for RQ + SQ (RQ
//     first: the kernel's mlx5_ib places the SQ at
//     rq_size bytes)                                     BAD_INP_LEN kQpPasTooShort
//     each pas[] page aligned                            BAD_PARAM kQpPasMisaligned
//   wq_umem_valid 1: RQ + SQ at wq_umem_offset inside
//     umem wq_umem_id                                    umem.hpp checks
//   dbr_umem_valid 1: the record at dbr_addr bytes into
//     umem dbr_umem_id (later dbr_addr changes by
//     RST2INIT are not applied to such a QP)             umem.hpp checks
//   a free qpn (2 .. ) below 2^log_max_qp                NO_RES    kQpExhausted
// QUERY_QP returns the context with the current state and the engine's
// progress counters (QpCounters); DESTROY_QP works in
// every state but refuses a QP still attached to a multicast group
// (RES_BUSY; ib_attach_mcast holds a QP usecnt the same way).
#include "hca/prm/qp_cmd.hpp"

#include "sim/fw/objects/objects.hpp"
#include "sim/fw/objects/qp_decode.hpp"
#include "sim/fw/objects/umem.hpp"
#include "sim/fw/objects/util.hpp"
#include "sim/fw/syndromes.hpp"

#include <cstring>

namespace kbv::sim::fw {

namespace {

using namespace objutil;
using prm::qpc;
namespace rq = prm::qpc_rq_type;

Outcome create_qp(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  ObjectTables& t = objects(ctx);
  prm::CRef<prm::create_qp_in> in(c.in.data());
  prm::CRef<qpc> x = in.at(prm::create_qp_in::qpc);
  auto u = [&](prm::Field<qpc> f) { return static_cast<uint32_t>(x.get(f)); };

  if (!t.port.roce_en) return fail(CmdStatus::BAD_SYS_STATE_ERR, synd::kQpRoceDisabled);
  if (u(qpc::offload_type) || u(qpc::wq_signature) || u(qpc::cd_master) || u(qpc::cd_slave_send) ||
      u(qpc::cd_slave_receive) || u(qpc::rlky) || u(qpc::fre) ||
      (in.get(prm::create_qp_in::ece) && !cap(ctx, prm::cmd_hca_cap::ece_support)))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kQpUnsupported);
  if (in.get(prm::create_qp_in::input_qpn))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kQpInputQpn);
  if (in.get(prm::create_qp_in::opt_param_mask))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kQpOptParam);
  const uint32_t st = u(qpc::st);
  const bool st_ok = (st == prm::qpc_st::kRc && cap(ctx, prm::cmd_hca_cap::rc)) ||
                     (st == prm::qpc_st::kUc && cap(ctx, prm::cmd_hca_cap::uc)) ||
                     (st == prm::qpc_st::kUd && cap(ctx, prm::cmd_hca_cap::ud));
  if (!st_ok) return fail(CmdStatus::BAD_PARAM_ERR, synd::kQpServiceType);
  if (u(qpc::pm_state) == prm::qpc_pm_state::kReserved)
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kQpPmState);
  // CQE timestamps: the caps offer the free-running format only
  // (roce_cap.qp_ts_format, fw/caps.cpp); DEFAULT is that one here.
  if (u(qpc::ts_format) > prm::qpc_ts_format::kDefault)
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kQpTsFormat);
  if (u(qpc::log_msg_max) > cap(ctx, prm::cmd_hca_cap::log_max_msg))
    return fail(CmdStatus::LIM_ERR, synd::kQpLogMsgMax);
  Pd* pd = t.pd(u(qpc::pd));
  if (pd == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kQpPdUnknown);

  const uint32_t rq_type = u(qpc::rq_type);
  const uint64_t max_log = cap(ctx, prm::cmd_hca_cap::log_max_qp_sz);
  Srq* srq = nullptr;
  if (rq_type == rq::kNonZeroRq) {
    if (u(qpc::log_rq_size) > max_log) return fail(CmdStatus::LIM_ERR, synd::kQpLogRqSize);
    if ((16u << u(qpc::log_rq_stride)) > cap(ctx, prm::cmd_hca_cap::max_wqe_sz_rq))
      return fail(CmdStatus::BAD_PARAM_ERR, synd::kQpRqStride);
  } else if (rq_type == rq::kSrqRq) {
    srq = t.srq(u(qpc::srqn_rmpn_xrqn));
    if (srq == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kQpSrqUnknown);
  } else if (rq_type != rq::kZeroLenRq) {
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kQpRqType);
  }
  const bool no_sq = u(qpc::no_sq) != 0;
  if (!no_sq && u(qpc::log_sq_size) > max_log) return fail(CmdStatus::LIM_ERR, synd::kQpLogSqSize);
  if (no_sq && rq_type == rq::kZeroLenRq) return fail(CmdStatus::BAD_PARAM_ERR, synd::kQpNoQueues);
  Cq* scq = nullptr;
  Cq* rcq = nullptr;
  if (!no_sq && (scq = t.cq(u(qpc::cqn_snd))) == nullptr)
    return fail(CmdStatus::BAD_RES_ERR, synd::kQpCqSndUnknown);
  if (rq_type != rq::kZeroLenRq && (rcq = t.cq(u(qpc::cqn_rcv))) == nullptr)
    return fail(CmdStatus::BAD_RES_ERR, synd::kQpCqRcvUnknown);
  if (!ctx.uars().is_allocated(u(qpc::uar_page)))
    return fail(CmdStatus::BAD_RES_ERR, synd::kQpUarUnknown);
  if (u(qpc::counter_set_id) != 0) return fail(CmdStatus::BAD_RES_ERR, synd::kQpCounterSet);

  Qp q;
  std::memcpy(q.qpc.data(), x.data(), q.qpc.size());
  prm::Ref<qpc> img(q.qpc.data());
  img.set(qpc::state, prm::qp_state::kRst);
  if (no_sq) img.set(qpc::cqn_snd, 0);
  if (rq_type == rq::kZeroLenRq) img.set(qpc::cqn_rcv, 0);
  if (rq_type != rq::kSrqRq) img.set(qpc::srqn_rmpn_xrqn, 0);
  qp_decode(q);
  q.buf.log_page_size = u(qpc::log_page_size);
  q.buf.page_offset = u(qpc::page_offset);
  if (q.buf.log_page_size > kMaxLogPageSize)
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kQpLogPageSize);
  if (q.dbr_addr % 8 != 0) return fail(CmdStatus::BAD_PARAM_ERR, synd::kQpDbrMisaligned);
  if (in.get(prm::create_qp_in::wq_umem_valid)) {
    q.buf_umem = static_cast<uint32_t>(in.get(prm::create_qp_in::wq_umem_id));
    if (Outcome o = umem_place_buffer(t, prm::Opcode::CREATE_QP, q.buf_umem,
                                      in.get(prm::create_qp_in::wq_umem_offset),
                                      q.rq_bytes + q.sq_bytes, false, q.buf);
        !o.is_ok())
      return o;
  } else if (Outcome o = read_pas(c, prm::create_qp_in::pas, q.rq_bytes + q.sq_bytes, q.buf,
                                  {synd::kQpPasTooShort, synd::kQpPasMisaligned});
             !o.is_ok()) {
    return o;
  }
  if (u(qpc::dbr_umem_valid)) {
    q.dbr_umem = u(qpc::dbr_umem_id);
    if (Outcome o = umem_place_dbr(t, prm::Opcode::CREATE_QP, q.dbr_umem, q.dbr_addr, &q.dbr_addr);
        !o.is_ok())
      return o;
  }

  auto n = t.qp_ids.alloc(uint64_t{1} << cap(ctx, prm::cmd_hca_cap::log_max_qp));
  if (!n) return fail(CmdStatus::NO_RES_ERR, synd::kQpExhausted);
  q.qpn = *n;
  q.state = prm::qp_state::kRst;
  q.created = q.qpc;
  ++pd->refs;
  umem_ref(t, q.buf_umem, +1);
  umem_ref(t, q.dbr_umem, +1);
  if (scq) ++scq->refs;
  if (rcq) ++rcq->refs;
  if (srq) ++srq->refs;
  t.qps.emplace(*n, std::move(q));
  prm::Ref<prm::create_qp_out> o(out.data());
  o.set(prm::create_qp_out::qpn, *n);
  o.set(prm::create_qp_out::ece, 0);
  return Outcome::ok();
}

Outcome destroy_qp(FwContext& ctx, const Command& c, std::span<std::byte>) {
  ObjectTables& t = objects(ctx);
  const auto qpn = static_cast<uint32_t>(
      prm::CRef<prm::destroy_qp_in>(c.in.data()).get(prm::destroy_qp_in::qpn));
  Qp* q = t.qp(qpn);
  if (q == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kDestroyQpUnknown);
  if (q->mcg_count != 0) return fail(CmdStatus::RES_BUSY, synd::kDestroyQpAttached);
  if (Pd* pd = t.pd(q->pd)) --pd->refs;
  if (Cq* cq = t.cq(q->cqn_snd)) --cq->refs;
  if (Cq* cq = t.cq(q->cqn_rcv)) --cq->refs;
  if (Srq* s = t.srq(q->srqn)) --s->refs;
  umem_ref(t, q->buf_umem, -1);
  umem_ref(t, q->dbr_umem, -1);
  t.qps.erase(qpn);
  t.qp_ids.release(qpn);
  return Outcome::ok();
}

Outcome query_qp(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  ObjectTables& t = objects(ctx);
  const auto qpn =
      static_cast<uint32_t>(prm::CRef<prm::query_qp_in>(c.in.data()).get(prm::query_qp_in::qpn));
  const Qp* q = t.qp(qpn);
  if (q == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kQueryQpUnknown);
  prm::Ref<prm::query_qp_out> o(out.data());
  prm::Ref<qpc> x = o.at(prm::query_qp_out::qpc);
  std::memcpy(x.data(), q->qpc.data(), q->qpc.size());
  x.set(qpc::state, q->state);
  const QpCounters& n = q->counters;
  x.set(qpc::hw_sq_wqebb_counter, n.hw_sq_wqebb_counter);
  x.set(qpc::sw_sq_wqebb_counter, n.sw_sq_wqebb_counter);
  x.set(qpc::hw_rq_counter, n.hw_rq_counter);
  x.set(qpc::sw_rq_counter, n.sw_rq_counter);
  x.set(qpc::last_acked_psn, n.last_acked_psn);
  x.set(qpc::ssn, n.ssn);
  x.set(qpc::rmsn, n.rmsn);
  x.set(qpc::cur_retry_count, n.cur_retry_count);
  x.set(qpc::cur_rnr_retry, n.cur_rnr_retry);
  write_pas(out, prm::query_qp_out::pas, q->buf.pas);
  return Outcome::ok();
}

}  // namespace

void register_qp_commands(CommandRegistry& r) {
  using prm::Opcode;
  (void)r.add(Opcode::CREATE_QP,
              Handler::make(bytes_of<prm::create_qp_in>(), bytes_of<prm::create_qp_out>(),
                            Requires::kInitialized, create_qp));
  (void)r.add(Opcode::DESTROY_QP,
              Handler::make(bytes_of<prm::destroy_qp_in>(), bytes_of<prm::destroy_qp_out>(),
                            Requires::kInitialized, destroy_qp));
  (void)r.add(Opcode::QUERY_QP,
              Handler::make(bytes_of<prm::query_qp_in>(), bytes_of<prm::query_qp_out>(),
                            Requires::kInitialized, query_qp));
}

}  // namespace kbv::sim::fw
