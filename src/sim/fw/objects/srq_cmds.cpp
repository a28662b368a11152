// SPDX-License-Identifier: BSD-3-Clause
//
// CREATE_SRQ / DESTROY_SRQ / QUERY_SRQ / ARM_RQ (mlx5_ifc.h create_srq_in/out,
// destroy_srq_in, query_srq_in/out, arm_rq_in, srqc_bits; prm/srq.hpp).
// CREATE_SRQ checks, in order:
//   log_srq_size <= cap log_max_srq_sz                  LIM_ERR   kSrqLogSize
//   16 << log_rq_stride <= cap max_wqe_sz_rq             BAD_PARAM kSrqStride
//   xrcd, wq_signature, cont_srq, rlky all 0 (basic
//     SRQs only)                                         BAD_PARAM kSrqUnsupported
//   lwm <= the number of WQEs (ib_modify_srq: srq_limit
//     beyond max_wr is invalid)                          BAD_PARAM kSrqLwm
//   pd allocated                                         BAD_RES   kSrqPdUnknown
//   cqn 0 or a CQ                                        BAD_RES   kSrqCqUnknown
//   log_page_size <= 18                                  BAD_PARAM kSrqLogPageSize
//   dbr_addr 8-byte aligned                              BAD_PARAM kSrqDbrMisaligned
//   inlen holds the pas[] the size needs                 BAD_INP_LEN kSrqPasTooShort
//   each pas[] page aligned                              BAD_PARAM kSrqPasMisaligned
//   a free srqn below 2^log_max_srq                      NO_RES    kSrqExhausted
// ARM_RQ (op_mod 1 = SRQ; XRQs are not offered): srq_number names an SRQ
// (BAD_RES), lwm <= its size (BAD_PARAM); stores lwm and arms the SRQ limit
// event (the data-path engine raises it and disarms).
// DESTROY_SRQ of an SRQ a QP receives from: RES_BUSY.
#include "sim/fw/objects/objects.hpp"
#include "sim/fw/objects/util.hpp"
#include "sim/fw/syndromes.hpp"

#include <cstring>

namespace kbv::sim::fw {

namespace {

using namespace objutil;
using prm::srqc;

Outcome create_srq(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  ObjectTables& t = objects(ctx);
  prm::CRef<prm::create_srq_in> in(c.in.data());
  prm::CRef<srqc> x = in.at(prm::create_srq_in::srq_context_entry);
  Srq s;
  s.log_srq_size = static_cast<uint32_t>(x.get(srqc::log_srq_size));
  if (s.log_srq_size > cap(ctx, prm::cmd_hca_cap::log_max_srq_sz))
    return fail(CmdStatus::LIM_ERR, synd::kSrqLogSize);
  s.log_rq_stride = static_cast<uint32_t>(x.get(srqc::log_rq_stride));
  if ((16u << s.log_rq_stride) > cap(ctx, prm::cmd_hca_cap::max_wqe_sz_rq))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kSrqStride);
  if (x.get(srqc::xrcd) || x.get(srqc::wq_signature) || x.get(srqc::cont_srq) || x.get(srqc::rlky))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kSrqUnsupported);
  s.lwm = static_cast<uint32_t>(x.get(srqc::lwm));
  if (s.lwm > (1u << s.log_srq_size)) return fail(CmdStatus::BAD_PARAM_ERR, synd::kSrqLwm);
  s.pd = static_cast<uint32_t>(x.get(srqc::pd));
  Pd* pd = t.pd(s.pd);
  if (pd == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kSrqPdUnknown);
  s.cqn = static_cast<uint32_t>(x.get(srqc::cqn));
  Cq* cq = s.cqn != 0 ? t.cq(s.cqn) : nullptr;
  if (s.cqn != 0 && cq == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kSrqCqUnknown);
  s.buf.log_page_size = static_cast<uint32_t>(x.get(srqc::log_page_size));
  s.buf.page_offset = static_cast<uint32_t>(x.get(srqc::page_offset));
  if (s.buf.log_page_size > kMaxLogPageSize)
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kSrqLogPageSize);
  s.dbr_addr = x.get(srqc::dbr_addr);
  if (s.dbr_addr % 8 != 0) return fail(CmdStatus::BAD_PARAM_ERR, synd::kSrqDbrMisaligned);
  const uint64_t bytes = (uint64_t{16} << s.log_rq_stride) << s.log_srq_size;
  if (Outcome o = read_pas(c, prm::create_srq_in::pas, bytes, s.buf,
                           {synd::kSrqPasTooShort, synd::kSrqPasMisaligned});
      !o.is_ok())
    return o;
  s.armed = false;  // armed by ARM_RQ (PRM "ARM_RQ"; the kernel arms after create)
  std::memcpy(s.srqc.data(), x.data(), s.srqc.size());

  auto n = t.srq_ids.alloc(uint64_t{1} << cap(ctx, prm::cmd_hca_cap::log_max_srq));
  if (!n) return fail(CmdStatus::NO_RES_ERR, synd::kSrqExhausted);
  s.srqn = *n;
  ++pd->refs;
  if (cq) ++cq->refs;
  t.srqs.emplace(*n, std::move(s));
  prm::Ref<prm::create_srq_out>(out.data()).set(prm::create_srq_out::srqn, *n);
  return Outcome::ok();
}

Outcome destroy_srq(FwContext& ctx, const Command& c, std::span<std::byte>) {
  ObjectTables& t = objects(ctx);
  const auto srqn = static_cast<uint32_t>(
      prm::CRef<prm::destroy_srq_in>(c.in.data()).get(prm::destroy_srq_in::srqn));
  Srq* s = t.srq(srqn);
  if (s == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kDestroySrqUnknown);
  if (s->refs != 0) return fail(CmdStatus::RES_BUSY, synd::kDestroySrqInUse);
  if (Pd* pd = t.pd(s->pd)) --pd->refs;
  if (Cq* cq = s->cqn ? t.cq(s->cqn) : nullptr) --cq->refs;
  t.srqs.erase(srqn);
  t.srq_ids.release(srqn);
  return Outcome::ok();
}

Outcome query_srq(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  ObjectTables& t = objects(ctx);
  const auto srqn =
      static_cast<uint32_t>(prm::CRef<prm::query_srq_in>(c.in.data()).get(prm::query_srq_in::srqn));
  const Srq* s = t.srq(srqn);
  if (s == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kQuerySrqUnknown);
  prm::Ref<prm::query_srq_out> o(out.data());
  prm::Ref<srqc> x = o.at(prm::query_srq_out::srq_context_entry);
  std::memcpy(x.data(), s->srqc.data(), s->srqc.size());
  x.set(srqc::state, s->state);
  x.set(srqc::lwm, s->lwm);
  x.set(srqc::wqe_cnt, s->wqe_cnt);
  write_pas(out, prm::query_srq_out::pas, s->buf.pas);
  return Outcome::ok();
}

Outcome arm_rq(FwContext& ctx, const Command& c, std::span<std::byte>) {
  ObjectTables& t = objects(ctx);
  prm::CRef<prm::arm_rq_in> in(c.in.data());
  Srq* s = t.srq(static_cast<uint32_t>(in.get(prm::arm_rq_in::srq_number)));
  if (s == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kArmRqUnknown);
  const auto lwm = static_cast<uint32_t>(in.get(prm::arm_rq_in::lwm));
  if (lwm > (1u << s->log_srq_size)) return fail(CmdStatus::BAD_PARAM_ERR, synd::kArmRqLwm);
  s->lwm = lwm;
  s->armed = lwm != 0;
  return Outcome::ok();
}

}  // namespace

void register_srq_commands(CommandRegistry& r) {
  using prm::Opcode;
  (void)r.add(Opcode::CREATE_SRQ,
              Handler::make(bytes_of<prm::create_srq_in>(), bytes_of<prm::create_srq_out>(),
                            Requires::kInitialized, create_srq));
  (void)r.add(Opcode::DESTROY_SRQ,
              Handler::make(bytes_of<prm::destroy_srq_in>(), bytes_of<prm::destroy_srq_out>(),
                            Requires::kInitialized, destroy_srq));
  (void)r.add(Opcode::QUERY_SRQ,
              Handler::make(bytes_of<prm::query_srq_in>(), bytes_of<prm::query_srq_out>(),
                            Requires::kInitialized, query_srq));
  (void)r.add(Opcode::ARM_RQ, Handler::make(bytes_of<prm::arm_rq_in>(), bytes_of<prm::arm_rq_out>(),
                                            Requires::kInitialized, arm_rq,
                                            {static_cast<uint16_t>(prm::arm_rq_op_mod::kSrq)}));
}

}  // namespace kbv::sim::fw
