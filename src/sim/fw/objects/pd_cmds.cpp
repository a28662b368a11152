// SPDX-License-Identifier: BSD-3-Clause
//
// ALLOC_PD / DEALLOC_PD and ALLOC_ / DEALLOC_TRANSPORT_DOMAIN (mlx5_ifc.h
// alloc_pd_in/out, dealloc_pd_in, alloc_transport_domain_in/out,
// dealloc_transport_domain_in; prm/pd.hpp):
//   ALLOC_PD      a free pd below 2^log_max_pd           else NO_RES   kPdExhausted
//   DEALLOC_PD    pd allocated                           else BAD_RES  kPdUnknown
//                 no MKEY / QP / SRQ uses it             else RES_BUSY kPdInUse
//   ALLOC_TD      below 2^log_max_transport_domain       else NO_RES   kTdExhausted
//   DEALLOC_TD    allocated                              else BAD_RES  kTdUnknown
// Transport domains group TIRs / TISs (Ethernet offloads), which the model
// does not have, so a TD is never in use.
#include "hca/prm/pd.hpp"

#include "sim/fw/objects/objects.hpp"
#include "sim/fw/objects/util.hpp"
#include "sim/fw/syndromes.hpp"

namespace kbv::sim::fw {

namespace {

using namespace objutil;

Outcome alloc_pd(FwContext& ctx, const Command&, std::span<std::byte> out) {
  ObjectTables& t = objects(ctx);
  auto n = t.pd_ids.alloc(uint64_t{1} << cap(ctx, prm::cmd_hca_cap::log_max_pd));
  if (!n) return fail(CmdStatus::NO_RES_ERR, synd::kPdExhausted);
  t.pds.emplace(*n, Pd{});
  prm::Ref<prm::alloc_pd_out>(out.data()).set(prm::alloc_pd_out::pd, *n);
  return Outcome::ok();
}

Outcome dealloc_pd(FwContext& ctx, const Command& c, std::span<std::byte>) {
  ObjectTables& t = objects(ctx);
  const auto pdn =
      static_cast<uint32_t>(prm::CRef<prm::dealloc_pd_in>(c.in.data()).get(prm::dealloc_pd_in::pd));
  Pd* pd = t.pd(pdn);
  if (pd == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kPdUnknown);
  if (pd->refs != 0) return fail(CmdStatus::RES_BUSY, synd::kPdInUse);
  t.pds.erase(pdn);
  t.pd_ids.release(pdn);
  return Outcome::ok();
}

Outcome alloc_td(FwContext& ctx, const Command&, std::span<std::byte> out) {
  ObjectTables& t = objects(ctx);
  auto n = t.td_ids.alloc(uint64_t{1} << cap(ctx, prm::cmd_hca_cap::log_max_transport_domain));
  if (!n) return fail(CmdStatus::NO_RES_ERR, synd::kTdExhausted);
  t.tds.emplace(*n, true);
  prm::Ref<prm::alloc_transport_domain_out>(out.data())
      .set(prm::alloc_transport_domain_out::transport_domain, *n);
  return Outcome::ok();
}

Outcome dealloc_td(FwContext& ctx, const Command& c, std::span<std::byte>) {
  ObjectTables& t = objects(ctx);
  const auto td =
      static_cast<uint32_t>(prm::CRef<prm::dealloc_transport_domain_in>(c.in.data())
                                .get(prm::dealloc_transport_domain_in::transport_domain));
  if (t.tds.erase(td) == 0) return fail(CmdStatus::BAD_RES_ERR, synd::kTdUnknown);
  t.td_ids.release(td);
  return Outcome::ok();
}

}  // namespace

void register_pd_commands(CommandRegistry& r) {
  using prm::Opcode;
  (void)r.add(Opcode::ALLOC_PD,
              Handler::make(bytes_of<prm::alloc_pd_in>(), bytes_of<prm::alloc_pd_out>(),
                            Requires::kInitialized, alloc_pd));
  (void)r.add(Opcode::DEALLOC_PD,
              Handler::make(bytes_of<prm::dealloc_pd_in>(), bytes_of<prm::dealloc_pd_out>(),
                            Requires::kInitialized, dealloc_pd));
  (void)r.add(
      Opcode::ALLOC_TRANSPORT_DOMAIN,
      Handler::make(bytes_of<prm::alloc_transport_domain_in>(),
                    bytes_of<prm::alloc_transport_domain_out>(), Requires::kInitialized, alloc_td));
  (void)r.add(Opcode::DEALLOC_TRANSPORT_DOMAIN,
              Handler::make(bytes_of<prm::dealloc_transport_domain_in>(),
                            bytes_of<prm::dealloc_transport_domain_out>(), Requires::kInitialized,
                            dealloc_td));
}

}  // namespace kbv::sim::fw
