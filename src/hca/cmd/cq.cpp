// SPDX-License-Identifier: BSD-3-Clause
#include "hca/cmd/cq.hpp"

#include "hca/prm/cq.hpp"

namespace kbv::hca::cmd {

using namespace prm;  // NOLINT

Status create_cq(CmdQueue& q, const CqAttr& a, Done<uint32_t> done) {
  if (a.pas.empty() || !fits(cqc::log_cq_size, a.log_cq_size) || !fits(cqc::uar_page, a.uar_page) ||
      !fits(cqc::log_page_size, a.log_page_size) || !fits(cqc::page_offset, a.page_offset) ||
      !fits(cqc::cq_period, a.cq_period) || !fits(cqc::cq_max_count, a.cq_max_count) ||
      !fits(cqc::cq_period_mode, a.cq_period_mode))
    return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::CREATE_CQ, 0, create_cq_in::kBits / 8 + a.pas.size() * 8);
  Ref<create_cq_in> r(in.data());
  Ref<cqc> c = r.at(create_cq_in::cq_context);
  c.set(cqc::cqe_sz, cqc_cqe_sz::k64Bytes);
  c.set(cqc::oi, a.oi);
  c.set(cqc::cq_period_mode, a.cq_period_mode);
  c.set(cqc::page_offset, a.page_offset);
  c.set(cqc::log_cq_size, a.log_cq_size);
  c.set(cqc::uar_page, a.uar_page);
  c.set(cqc::cq_period, a.cq_period);
  c.set(cqc::cq_max_count, a.cq_max_count);
  c.set(cqc::c_eqn, a.c_eqn);
  c.set(cqc::log_page_size, a.log_page_size);
  c.set(cqc::dbr_addr, a.dbr_addr);
  for (uint32_t i = 0; i < a.pas.size(); ++i) r.set(create_cq_in::pas, i, a.pas[i]);
  return exec<uint32_t>(
      q, in, create_cq_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<uint32_t> {
        return static_cast<uint32_t>(CRef<create_cq_out>(out.data()).get(create_cq_out::cqn));
      },
      std::move(done));
}

Status destroy_cq(CmdQueue& q, uint32_t cqn, DoneStatus done) {
  if (!fits(destroy_cq_in::cqn, cqn)) return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::DESTROY_CQ, 0, destroy_cq_in::kBits / 8);
  Ref<destroy_cq_in>(in.data()).set(destroy_cq_in::cqn, cqn);
  return exec_status(q, in, destroy_cq_out::kBits / 8, std::move(done));
}

Status query_cq(CmdQueue& q, uint32_t cqn, uint32_t max_pas, Done<CqInfo> done) {
  if (!fits(query_cq_in::cqn, cqn)) return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::QUERY_CQ, 0, query_cq_in::kBits / 8);
  Ref<query_cq_in>(in.data()).set(query_cq_in::cqn, cqn);
  return exec<CqInfo>(
      q, in, query_cq_out::kBits / 8 + max_pas * 8,
      [max_pas](std::span<const std::byte> out) -> Result<CqInfo> {
        CRef<query_cq_out> o(out.data());
        CRef<cqc> c = o.at(query_cq_out::cq_context);
        auto u = [&](Field<cqc> f) { return static_cast<uint32_t>(c.get(f)); };
        CqInfo i;
        i.status = u(cqc::status);
        i.st = u(cqc::st);
        i.log_cq_size = u(cqc::log_cq_size);
        i.uar_page = u(cqc::uar_page);
        i.c_eqn = u(cqc::c_eqn);
        i.log_page_size = u(cqc::log_page_size);
        i.page_offset = u(cqc::page_offset);
        i.cq_period = u(cqc::cq_period);
        i.cq_max_count = u(cqc::cq_max_count);
        i.cq_period_mode = u(cqc::cq_period_mode);
        i.oi = u(cqc::oi) != 0;
        i.dbr_addr = c.get(cqc::dbr_addr);
        i.producer_counter = u(cqc::producer_counter);
        i.consumer_counter = u(cqc::consumer_counter);
        for (uint32_t k = 0; k < max_pas; ++k) i.pas.push_back(o.get(query_cq_out::pas, k));
        return i;
      },
      std::move(done));
}

Status modify_cq(CmdQueue& q, uint32_t cqn, const CqModeration& m, DoneStatus done) {
  if (!fits(modify_cq_in::cqn, cqn) || !fits(cqc::cq_period, m.cq_period) ||
      !fits(cqc::cq_max_count, m.cq_max_count))
    return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::MODIFY_CQ, modify_cq_op_mod::kModifyCq, modify_cq_in::kBits / 8);
  Ref<modify_cq_in> r(in.data());
  r.set(modify_cq_in::cqn, cqn);
  r.set(modify_cq_in::modify_field_select, m.select);
  Ref<cqc> c = r.at(modify_cq_in::cq_context);
  c.set(cqc::cq_period, m.cq_period);
  c.set(cqc::cq_max_count, m.cq_max_count);
  c.set(cqc::oi, m.oi);
  c.set(cqc::c_eqn, m.c_eqn);
  return exec_status(q, in, modify_cq_out::kBits / 8, std::move(done));
}

Status resize_cq(CmdQueue& q, uint32_t cqn, const CqResize& rz, DoneStatus done) {
  if (!fits(modify_cq_in::cqn, cqn) || rz.pas.empty() || !fits(cqc::log_cq_size, rz.log_cq_size) ||
      !fits(cqc::log_page_size, rz.log_page_size) || !fits(cqc::page_offset, rz.page_offset))
    return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::MODIFY_CQ, modify_cq_op_mod::kResizeCq,
                    modify_cq_in::kBits / 8 + rz.pas.size() * 8);
  Ref<modify_cq_in> r(in.data());
  r.set(modify_cq_in::cqn, cqn);
  r.set(modify_cq_in::resize_field_select, resize_cq_field_select::kLogCqSize |
                                               resize_cq_field_select::kPageOffset |
                                               resize_cq_field_select::kLogPageSize);
  Ref<cqc> c = r.at(modify_cq_in::cq_context);
  c.set(cqc::log_cq_size, rz.log_cq_size);
  c.set(cqc::log_page_size, rz.log_page_size);
  c.set(cqc::page_offset, rz.page_offset);
  for (uint32_t i = 0; i < rz.pas.size(); ++i) r.set(modify_cq_in::pas, i, rz.pas[i]);
  return exec_status(q, in, modify_cq_out::kBits / 8, std::move(done));
}

}  // namespace kbv::hca::cmd
