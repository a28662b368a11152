// SPDX-License-Identifier: BSD-3-Clause
//
// CREATE_EQ / DESTROY_EQ / QUERY_EQ / GEN_EQE (mlx5_ifc.h create_eq_in/out,
// destroy_eq_in, query_eq_in/out; prm/eq.hpp). CREATE_EQ checks, in order:
//   log_eq_size <= cap log_max_eq_sz                 BAD_PARAM  kEqLogSize
//   log_page_size <= 18 (1 GiB pages)                 BAD_PARAM  kEqLogPageSize
//   page_offset == 0 (the model's limit)              BAD_PARAM  kEqPageOffset
//   uar_page allocated by ALLOC_UAR                   BAD_PARAM  kEqUarNotAllocated
//   inlen holds every pas[] entry the size needs      BAD_INPUT_LEN kEqPasTooShort
//   each pas[] page-size aligned                      BAD_PARAM  kEqPasMisaligned
//   each page mapped writable in the IOMMU            BAD_PARAM  kEqPasNotMapped
//   a free EQ number                                  NO_RESOURCES kEqExhausted
#include "hca/prm/boot.hpp"
#include "hca/prm/eq.hpp"

#include "sim/fw/context.hpp"
#include "sim/fw/eq.hpp"
#include "sim/fw/syndromes.hpp"

#include <algorithm>

namespace kbv::sim::fw {

namespace {

using prm::CmdStatus;
using prm::eqc;

constexpr uint32_t kMaxLogPageSize = 18;               // 4 KiB << 18 = 1 GiB
constexpr uint64_t kBasePage = prm::kAdapterPageSize;  // log_page_size is relative to it

Outcome create_eq(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  prm::CRef<prm::create_eq_in> in(c.in.data());
  auto ec = in.at(prm::create_eq_in::eq_context_entry);
  EqParams p;
  p.log_eq_size = static_cast<uint32_t>(ec.get(eqc::log_eq_size));
  p.uar_page = static_cast<uint32_t>(ec.get(eqc::uar_page));
  p.intr = static_cast<uint32_t>(ec.get(eqc::intr));
  p.log_page_size = static_cast<uint32_t>(ec.get(eqc::log_page_size));
  for (uint32_t w = 0; w < 4; ++w) p.event_bitmask[w] = in.get(prm::create_eq_in::event_bitmask, w);

  if (p.log_eq_size > ctx.caps().general().get(prm::cmd_hca_cap::log_max_eq_sz))
    return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kEqLogSize);
  if (p.log_page_size > kMaxLogPageSize)
    return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kEqLogPageSize);
  if (ec.get(eqc::page_offset) != 0)
    return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kEqPageOffset);
  if (!ctx.uars().is_allocated(p.uar_page))
    return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kEqUarNotAllocated);

  const uint64_t page_size = kBasePage << p.log_page_size;
  const uint64_t bytes = (uint64_t{1} << p.log_eq_size) * prm::kEqeBytes;
  const uint64_t npages = (bytes + page_size - 1) / page_size;
  if (prm::create_eq_in::kBits / 8 + npages * 8 > c.in.size())
    return Outcome::fail(CmdStatus::BAD_INP_LEN_ERR, synd::kEqPasTooShort);
  p.pas.resize(npages);
  for (uint32_t i = 0; i < npages; ++i) {
    const uint64_t pa = in.get(prm::create_eq_in::pas, i);
    if (pa % page_size != 0) return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kEqPasMisaligned);
    // Only the part of the last page the EQ uses must be mapped.
    const uint64_t used = std::min(page_size, bytes - i * page_size);
    for (uint64_t off = 0; off < used; off += kBasePage)
      if (ctx.iommu().translate(pa + off, std::min(kBasePage, used - off), Iommu::kWrite) ==
          nullptr)
        return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kEqPasNotMapped);
    p.pas[i] = pa;
  }
  std::optional<uint32_t> eqn = ctx.eqs().create(std::move(p));
  if (!eqn) return Outcome::fail(CmdStatus::NO_RES_ERR, synd::kEqExhausted);
  prm::Ref<prm::create_eq_out>(out.data()).set(prm::create_eq_out::eq_number, *eqn);
  return Outcome::ok();
}

Outcome destroy_eq(FwContext& ctx, const Command& c, std::span<std::byte>) {
  const uint32_t eqn = static_cast<uint32_t>(
      prm::CRef<prm::destroy_eq_in>(c.in.data()).get(prm::destroy_eq_in::eq_number));
  if (ctx.eqs().query(eqn) && ctx.eq_referenced(eqn))
    return Outcome::fail(CmdStatus::BAD_RES_STATE_ERR, synd::kDestroyEqInUse);
  if (!ctx.eqs().destroy(eqn))
    return Outcome::fail(CmdStatus::BAD_RES_ERR, synd::kDestroyEqUnknown);
  return Outcome::ok();
}

// QUERY_EQ: the context as created plus the live counters and arm state, the
// low 64 event bits, and as many pas[] as the output holds.
Outcome query_eq(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  const uint32_t eqn = static_cast<uint32_t>(
      prm::CRef<prm::query_eq_in>(c.in.data()).get(prm::query_eq_in::eq_number));
  std::optional<EqSnapshot> s = ctx.eqs().query(eqn);
  if (!s) return Outcome::fail(CmdStatus::BAD_RES_ERR, synd::kQueryEqUnknown);
  prm::Ref<prm::query_eq_out> o(out.data());
  auto ec = o.at(prm::query_eq_out::eq_context_entry);
  ec.set(eqc::status, static_cast<uint8_t>(prm::EqcStatus::OK));
  ec.set(eqc::st, static_cast<uint8_t>(s->armed ? prm::EqcSt::ARMED : prm::EqcSt::FIRED));
  ec.set(eqc::log_eq_size, s->params.log_eq_size);
  ec.set(eqc::uar_page, s->params.uar_page);
  ec.set(eqc::intr, s->params.intr);
  ec.set(eqc::log_page_size, s->params.log_page_size);
  ec.set(eqc::consumer_counter, s->ci);
  ec.set(eqc::producer_counter, s->pi);
  o.set(prm::query_eq_out::event_bitmask, s->params.event_bitmask[0]);
  const std::size_t room = (out.size() - prm::query_eq_out::kBits / 8) / 8;
  for (std::size_t i = 0; i < s->params.pas.size() && i < room; ++i)
    o.set(prm::query_eq_out::pas, static_cast<uint32_t>(i), s->params.pas[i]);
  return Outcome::ok();
}

// GEN_EQE (mlx5_ifc.h gen_eqe_in): write the given EQE's type, sub_type and
// data to EQ eq_number (the owner bit is the firmware's, as for any EQE).
Outcome gen_eqe(FwContext& ctx, const Command& c, std::span<std::byte>) {
  prm::CRef<prm::gen_eqe_in> in(c.in.data());
  const uint32_t eqn = static_cast<uint32_t>(in.get(prm::gen_eqe_in::eq_number));
  prm::CRef<prm::eqe> e(in.bytes(prm::gen_eqe_in::eqe).data());
  Status s =
      ctx.eqs().post_to(eqn, static_cast<prm::EventType>(e.get(prm::eqe::type)),
                        static_cast<uint8_t>(e.get(prm::eqe::sub_type)), e.bytes(prm::eqe::data));
  if (s == KBV_ERR_NOT_FOUND) return Outcome::fail(CmdStatus::BAD_RES_ERR, synd::kGenEqeUnknown);
  if (!s) return Outcome::fail(CmdStatus::INT_ERR, synd::kGenEqeNotWritten);
  return Outcome::ok();
}

}  // namespace

void register_eq_commands(CommandRegistry& r) {
  (void)r.add(prm::Opcode::GEN_EQE,
              Handler::make(prm::gen_eqe_in::kBits / 8, prm::gen_eqe_out::kBits / 8,
                            Requires::kInitialized, gen_eqe));
  (void)r.add(prm::Opcode::CREATE_EQ,
              Handler::make(prm::create_eq_in::kBits / 8, prm::create_eq_out::kBits / 8,
                            Requires::kInitialized, create_eq));
  (void)r.add(prm::Opcode::DESTROY_EQ,
              Handler::make(prm::destroy_eq_in::kBits / 8, prm::destroy_eq_out::kBits / 8,
                            Requires::kInitialized, destroy_eq));
  (void)r.add(prm::Opcode::QUERY_EQ,
              Handler::make(prm::query_eq_in::kBits / 8, prm::query_eq_out::kBits / 8,
                            Requires::kInitialized, query_eq));
}

}  // namespace kbv::sim::fw
