// SPDX-License-Identifier: BSD-3-Clause
//
// CREATE_CQ / DESTROY_CQ / QUERY_CQ / MODIFY_CQ (mlx5_ifc.h create_cq_in/out,
// destroy_cq_in, query_cq_in/out, modify_cq_in, cqc_bits; prm/cq.hpp).
// CREATE_CQ checks, in order:
//   log_cq_size <= cap log_max_cq_sz                    LIM_ERR   kCqLogSize
//   cqe_sz 64 bytes (128-byte CQEs not offered)          BAD_PARAM kCqCqeSize
//   cc, cqe_comp_en, apu_cq all 0                        BAD_PARAM kCqUnsupported
//   cq_period_mode 0 or 1                                BAD_PARAM kCqPeriodMode
//   uar_page allocated (ALLOC_UAR)                       BAD_RES   kCqUarUnknown
//   c_eqn names an EQ                                    BAD_RES   kCqEqnUnknown
//   log_page_size <= 18                                  BAD_PARAM kCqLogPageSize
//   dbr_addr 8-byte aligned                              BAD_PARAM kCqDbrMisaligned
//   cq_umem_valid 0: inlen holds the pas[] the size
//     needs                                              BAD_INP_LEN kCqPasTooShort
//     each pas[] page aligned                            BAD_PARAM kCqPasMisaligned
//   cq_umem_valid 1: the CQEs at cq_umem_offset inside
//     umem cq_umem_id (its pages and page size; cqc
//     log_page_size / page_offset unused)                umem.hpp checks
//   dbr_umem_valid 1: the record at dbr_addr bytes into
//     umem dbr_umem_id                                   umem.hpp checks
//   a free cqn below 2^log_max_cq                        NO_RES    kCqExhausted
// MODIFY_CQ op_mod 0 (modify_field_select: cq_period, cq_max_count, oi,
// c_eqn) and op_mod 1 (resize: resize_field_select must select log_cq_size;
// page_offset and log_page_size optional; new pas[]); a resize below the CQEs
// outstanding (producer - consumer counter) is BAD_SIZE_OUTS_CQES_ERR (0x40,
// the PRM's "bad size: too many outstanding CQEs").
// DESTROY_CQ of a CQ that a QP (send or receive) or an SRQ uses: RES_BUSY.
#include "sim/fw/objects/objects.hpp"
#include "sim/fw/objects/umem.hpp"
#include "sim/fw/objects/util.hpp"
#include "sim/fw/syndromes.hpp"

#include <cstring>

namespace kbv::sim::fw {

namespace {

using namespace objutil;
using prm::cqc;

constexpr uint64_t kCqeBytes = 64;

Outcome create_cq(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  ObjectTables& t = objects(ctx);
  prm::CRef<prm::create_cq_in> in(c.in.data());
  prm::CRef<cqc> x = in.at(prm::create_cq_in::cq_context);
  Cq q;
  q.log_cq_size = static_cast<uint32_t>(x.get(cqc::log_cq_size));
  if (q.log_cq_size > cap(ctx, prm::cmd_hca_cap::log_max_cq_sz))
    return fail(CmdStatus::LIM_ERR, synd::kCqLogSize);
  if (x.get(cqc::cqe_sz) != prm::cqc_cqe_sz::k64Bytes)
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kCqCqeSize);
  if (x.get(cqc::cc) || x.get(cqc::cqe_comp_en) || x.get(cqc::apu_cq))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kCqUnsupported);
  q.cq_period_mode = static_cast<uint32_t>(x.get(cqc::cq_period_mode));
  if (q.cq_period_mode > prm::cq_period_mode::kStartFromCqe)
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kCqPeriodMode);
  q.uar_page = static_cast<uint32_t>(x.get(cqc::uar_page));
  if (!ctx.uars().is_allocated(q.uar_page))
    return fail(CmdStatus::BAD_RES_ERR, synd::kCqUarUnknown);
  q.c_eqn = static_cast<uint32_t>(x.get(cqc::c_eqn));
  if (!ctx.eqs().exists(q.c_eqn)) return fail(CmdStatus::BAD_RES_ERR, synd::kCqEqnUnknown);
  q.buf.log_page_size = static_cast<uint32_t>(x.get(cqc::log_page_size));
  q.buf.page_offset = static_cast<uint32_t>(x.get(cqc::page_offset));
  if (q.buf.log_page_size > kMaxLogPageSize)
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kCqLogPageSize);
  q.dbr_addr = x.get(cqc::dbr_addr);
  if (q.dbr_addr % 8 != 0) return fail(CmdStatus::BAD_PARAM_ERR, synd::kCqDbrMisaligned);
  if (in.get(prm::create_cq_in::cq_umem_valid)) {
    q.buf_umem = static_cast<uint32_t>(in.get(prm::create_cq_in::cq_umem_id));
    if (Outcome o = umem_place_buffer(t, prm::Opcode::CREATE_CQ, q.buf_umem,
                                      in.get(prm::create_cq_in::cq_umem_offset),
                                      kCqeBytes << q.log_cq_size, true, q.buf);
        !o.is_ok())
      return o;
  } else if (Outcome o = read_pas(c, prm::create_cq_in::pas, kCqeBytes << q.log_cq_size, q.buf,
                                  {synd::kCqPasTooShort, synd::kCqPasMisaligned});
             !o.is_ok()) {
    return o;
  }
  if (x.get(cqc::dbr_umem_valid)) {
    q.dbr_umem = static_cast<uint32_t>(x.get(cqc::dbr_umem_id));
    if (Outcome o = umem_place_dbr(t, prm::Opcode::CREATE_CQ, q.dbr_umem, q.dbr_addr, &q.dbr_addr);
        !o.is_ok())
      return o;
  }
  q.oi = x.get(cqc::oi) != 0;
  q.cq_period = static_cast<uint32_t>(x.get(cqc::cq_period));
  q.cq_max_count = static_cast<uint32_t>(x.get(cqc::cq_max_count));
  q.st = static_cast<uint32_t>(x.get(cqc::st));
  std::memcpy(q.cqc.data(), x.data(), q.cqc.size());

  auto n = t.cq_ids.alloc(uint64_t{1} << cap(ctx, prm::cmd_hca_cap::log_max_cq));
  if (!n) return fail(CmdStatus::NO_RES_ERR, synd::kCqExhausted);
  q.cqn = *n;
  umem_ref(t, q.buf_umem, +1);
  umem_ref(t, q.dbr_umem, +1);
  t.cqs.emplace(*n, std::move(q));
  prm::Ref<prm::create_cq_out>(out.data()).set(prm::create_cq_out::cqn, *n);
  return Outcome::ok();
}

Outcome destroy_cq(FwContext& ctx, const Command& c, std::span<std::byte>) {
  ObjectTables& t = objects(ctx);
  const auto cqn = static_cast<uint32_t>(
      prm::CRef<prm::destroy_cq_in>(c.in.data()).get(prm::destroy_cq_in::cqn));
  Cq* q = t.cq(cqn);
  if (q == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kDestroyCqUnknown);
  if (q->refs != 0) return fail(CmdStatus::RES_BUSY, synd::kDestroyCqInUse);
  umem_ref(t, q->buf_umem, -1);
  umem_ref(t, q->dbr_umem, -1);
  t.cqs.erase(cqn);
  t.cq_ids.release(cqn);
  return Outcome::ok();
}

Outcome query_cq(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  ObjectTables& t = objects(ctx);
  const auto cqn =
      static_cast<uint32_t>(prm::CRef<prm::query_cq_in>(c.in.data()).get(prm::query_cq_in::cqn));
  const Cq* q = t.cq(cqn);
  if (q == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kQueryCqUnknown);
  prm::Ref<prm::query_cq_out> o(out.data());
  prm::Ref<cqc> x = o.at(prm::query_cq_out::cq_context);
  std::memcpy(x.data(), q->cqc.data(), q->cqc.size());
  x.set(cqc::status, q->status);
  x.set(cqc::st, q->st);
  x.set(cqc::producer_counter, q->producer_counter);
  x.set(cqc::consumer_counter, q->consumer_counter);
  write_pas(out, prm::query_cq_out::pas, q->buf.pas);
  return Outcome::ok();
}

Outcome modify_moderation(FwContext& ctx, Cq& q, prm::CRef<prm::modify_cq_in> in) {
  namespace fs = prm::modify_cq_field_select;
  const uint64_t sel = in.get(prm::modify_cq_in::modify_field_select);
  if (sel & ~uint64_t{fs::kCqPeriod | fs::kCqMaxCount | fs::kOi | fs::kCEqn})
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kModifyCqSelect);
  prm::CRef<cqc> x = in.at(prm::modify_cq_in::cq_context);
  prm::Ref<cqc> img(q.cqc.data());
  if (sel & fs::kCEqn) {
    const auto eqn = static_cast<uint32_t>(x.get(cqc::c_eqn));
    if (!ctx.eqs().exists(eqn)) return fail(CmdStatus::BAD_RES_ERR, synd::kModifyCqEqnUnknown);
    q.c_eqn = eqn;
    img.set(cqc::c_eqn, eqn);
  }
  if (sel & fs::kCqPeriod) {
    q.cq_period = static_cast<uint32_t>(x.get(cqc::cq_period));
    img.set(cqc::cq_period, q.cq_period);
  }
  if (sel & fs::kCqMaxCount) {
    q.cq_max_count = static_cast<uint32_t>(x.get(cqc::cq_max_count));
    img.set(cqc::cq_max_count, q.cq_max_count);
  }
  if (sel & fs::kOi) {
    q.oi = x.get(cqc::oi) != 0;
    img.set(cqc::oi, q.oi);
  }
  return Outcome::ok();
}

Outcome resize(FwContext& ctx, Cq& q, const Command& c, prm::CRef<prm::modify_cq_in> in) {
  namespace fs = prm::resize_cq_field_select;
  const uint64_t sel = in.get(prm::modify_cq_in::resize_field_select);
  if (sel & ~uint64_t{fs::kLogCqSize | fs::kPageOffset | fs::kLogPageSize})
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kModifyCqSelect);
  if (!(sel & fs::kLogCqSize)) return fail(CmdStatus::BAD_PARAM_ERR, synd::kResizeCqNoSize);
  prm::CRef<cqc> x = in.at(prm::modify_cq_in::cq_context);
  const auto log_size = static_cast<uint32_t>(x.get(cqc::log_cq_size));
  if (log_size > cap(ctx, prm::cmd_hca_cap::log_max_cq_sz))
    return fail(CmdStatus::LIM_ERR, synd::kResizeCqLogSize);
  const uint32_t outstanding = (q.producer_counter - q.consumer_counter) & 0xFFFFFF;
  if (outstanding > (1u << log_size))
    return fail(CmdStatus::BAD_SIZE_OUTS_CQES_ERR, synd::kResizeCqOutstanding);
  WqBuffer nb = q.buf;
  if (sel & fs::kLogPageSize) nb.log_page_size = static_cast<uint32_t>(x.get(cqc::log_page_size));
  if (sel & fs::kPageOffset) nb.page_offset = static_cast<uint32_t>(x.get(cqc::page_offset));
  if (nb.log_page_size > kMaxLogPageSize)
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kResizeCqLogPageSize);
  if (Outcome o = read_pas(c, prm::modify_cq_in::pas, kCqeBytes << log_size, nb,
                           {synd::kResizeCqPasTooShort, synd::kResizeCqPasMisaligned});
      !o.is_ok())
    return o;
  q.buf = std::move(nb);
  q.log_cq_size = log_size;
  prm::Ref<cqc> img(q.cqc.data());
  img.set(cqc::log_cq_size, log_size);
  img.set(cqc::log_page_size, q.buf.log_page_size);
  img.set(cqc::page_offset, q.buf.page_offset);
  return Outcome::ok();
}

Outcome modify_cq(FwContext& ctx, const Command& c, std::span<std::byte>) {
  ObjectTables& t = objects(ctx);
  prm::CRef<prm::modify_cq_in> in(c.in.data());
  Cq* q = t.cq(static_cast<uint32_t>(in.get(prm::modify_cq_in::cqn)));
  if (q == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kModifyCqUnknown);
  if (in.get(prm::modify_cq_in::cq_umem_valid))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kModifyCqUmem);
  if (c.op_mod == prm::modify_cq_op_mod::kResizeCq) return resize(ctx, *q, c, in);
  return modify_moderation(ctx, *q, in);
}

}  // namespace

void register_cq_commands(CommandRegistry& r) {
  using prm::Opcode;
  (void)r.add(Opcode::CREATE_CQ,
              Handler::make(bytes_of<prm::create_cq_in>(), bytes_of<prm::create_cq_out>(),
                            Requires::kInitialized, create_cq));
  (void)r.add(Opcode::DESTROY_CQ,
              Handler::make(bytes_of<prm::destroy_cq_in>(), bytes_of<prm::destroy_cq_out>(),
                            Requires::kInitialized, destroy_cq));
  (void)r.add(Opcode::QUERY_CQ,
              Handler::make(bytes_of<prm::query_cq_in>(), bytes_of<prm::query_cq_out>(),
                            Requires::kInitialized, query_cq));
  (void)r.add(Opcode::MODIFY_CQ,
              Handler::make(bytes_of<prm::modify_cq_in>(), bytes_of<prm::modify_cq_out>(),
                            Requires::kInitialized, modify_cq,
                            {static_cast<uint16_t>(prm::modify_cq_op_mod::kModifyCq),
                             static_cast<uint16_t>(prm::modify_cq_op_mod::kResizeCq)}));
}

}  // namespace kbv::sim::fw
