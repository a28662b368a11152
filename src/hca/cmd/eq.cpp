// SPDX-License-Identifier: BSD-3-Clause
#include "hca/cmd/eq.hpp"

#include "hca/prm/eq.hpp"

namespace kbv::hca::cmd {

using namespace prm;  // NOLINT

Status create_eq(CmdQueue& q, const CreateEqAttr& a, Done<uint32_t> done) {
  if (a.pas.empty() || !fits(eqc::log_eq_size, a.log_eq_size) || !fits(eqc::uar_page, a.uar) ||
      !fits(eqc::intr, a.intr) || !fits(eqc::log_page_size, a.log_page_size))
    return Status{KBV_ERR_INVALID_ARGUMENT};
  const uint32_t n = static_cast<uint32_t>(a.pas.size());
  auto in = make_in(Opcode::CREATE_EQ, 0, create_eq_in_len(n));
  Ref<create_eq_in> r(in.data());
  Ref<eqc> ctx = r.at(create_eq_in::eq_context_entry);
  ctx.set(eqc::log_eq_size, a.log_eq_size);
  ctx.set(eqc::uar_page, a.uar);
  ctx.set(eqc::intr, a.intr);
  ctx.set(eqc::log_page_size, a.log_page_size);
  for (uint32_t w = 0; w < 4; ++w) r.set(create_eq_in::event_bitmask, w, a.event_bitmask[w]);
  for (uint32_t i = 0; i < n; ++i) r.set(create_eq_in::pas, i, a.pas[i]);
  return exec<uint32_t>(
      q, in, create_eq_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<uint32_t> {
        return static_cast<uint32_t>(CRef<create_eq_out>(out.data()).get(create_eq_out::eq_number));
      },
      std::move(done));
}

Status destroy_eq(CmdQueue& q, uint32_t eqn, DoneStatus done) {
  auto in = make_in(Opcode::DESTROY_EQ, 0, destroy_eq_in::kBits / 8);
  Ref<destroy_eq_in>(in.data()).set(destroy_eq_in::eq_number, eqn);
  return exec_status(q, in, destroy_eq_out::kBits / 8, std::move(done));
}

Status query_eq(CmdQueue& q, uint32_t eqn, Done<EqInfo> done) {
  auto in = make_in(Opcode::QUERY_EQ, 0, query_eq_in::kBits / 8);
  Ref<query_eq_in>(in.data()).set(query_eq_in::eq_number, eqn);
  return exec<EqInfo>(
      q, in, query_eq_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<EqInfo> {
        CRef<query_eq_out> o(out.data());
        CRef<eqc> c = o.at(query_eq_out::eq_context_entry);
        EqInfo i;
        i.status = static_cast<uint32_t>(c.get(eqc::status));
        i.st = static_cast<uint32_t>(c.get(eqc::st));
        i.log_eq_size = static_cast<uint32_t>(c.get(eqc::log_eq_size));
        i.uar_page = static_cast<uint32_t>(c.get(eqc::uar_page));
        i.intr = static_cast<uint32_t>(c.get(eqc::intr));
        i.consumer_counter = static_cast<uint32_t>(c.get(eqc::consumer_counter));
        i.producer_counter = static_cast<uint32_t>(c.get(eqc::producer_counter));
        i.event_bitmask = o.get(query_eq_out::event_bitmask);
        return i;
      },
      std::move(done));
}

}  // namespace kbv::hca::cmd
