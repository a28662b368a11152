// SPDX-License-Identifier: BSD-3-Clause
#include "hca/cmd/srq.hpp"

#include "hca/prm/srq.hpp"

namespace kbv::hca::cmd {

using namespace prm;  // NOLINT

Status create_srq(CmdQueue& q, const SrqAttr& a, Done<uint32_t> done) {
  if (a.pas.empty() || !fits(srqc::log_srq_size, a.log_srq_size) ||
      !fits(srqc::log_rq_stride, a.log_rq_stride) || !fits(srqc::pd, a.pd) ||
      !fits(srqc::cqn, a.cqn) || !fits(srqc::lwm, a.lwm) ||
      !fits(srqc::log_page_size, a.log_page_size) || !fits(srqc::page_offset, a.page_offset))
    return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::CREATE_SRQ, 0, create_srq_in::kBits / 8 + a.pas.size() * 8);
  Ref<create_srq_in> r(in.data());
  Ref<srqc> c = r.at(create_srq_in::srq_context_entry);
  c.set(srqc::log_srq_size, a.log_srq_size);
  c.set(srqc::log_rq_stride, a.log_rq_stride);
  c.set(srqc::page_offset, a.page_offset);
  c.set(srqc::cqn, a.cqn);
  c.set(srqc::log_page_size, a.log_page_size);
  c.set(srqc::pd, a.pd);
  c.set(srqc::lwm, a.lwm);
  c.set(srqc::dbr_addr, a.dbr_addr);
  for (uint32_t i = 0; i < a.pas.size(); ++i) r.set(create_srq_in::pas, i, a.pas[i]);
  return exec<uint32_t>(
      q, in, create_srq_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<uint32_t> {
        return static_cast<uint32_t>(CRef<create_srq_out>(out.data()).get(create_srq_out::srqn));
      },
      std::move(done));
}

Status destroy_srq(CmdQueue& q, uint32_t srqn, DoneStatus done) {
  if (!fits(destroy_srq_in::srqn, srqn)) return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::DESTROY_SRQ, 0, destroy_srq_in::kBits / 8);
  Ref<destroy_srq_in>(in.data()).set(destroy_srq_in::srqn, srqn);
  return exec_status(q, in, destroy_srq_out::kBits / 8, std::move(done));
}

Status query_srq(CmdQueue& q, uint32_t srqn, Done<SrqInfo> done) {
  if (!fits(query_srq_in::srqn, srqn)) return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::QUERY_SRQ, 0, query_srq_in::kBits / 8);
  Ref<query_srq_in>(in.data()).set(query_srq_in::srqn, srqn);
  return exec<SrqInfo>(
      q, in, query_srq_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<SrqInfo> {
        CRef<srqc> c = CRef<query_srq_out>(out.data()).at(query_srq_out::srq_context_entry);
        auto u = [&](Field<srqc> f) { return static_cast<uint32_t>(c.get(f)); };
        SrqInfo i;
        i.state = u(srqc::state);
        i.log_srq_size = u(srqc::log_srq_size);
        i.log_rq_stride = u(srqc::log_rq_stride);
        i.pd = u(srqc::pd);
        i.cqn = u(srqc::cqn);
        i.lwm = u(srqc::lwm);
        i.wqe_cnt = u(srqc::wqe_cnt);
        i.log_page_size = u(srqc::log_page_size);
        i.page_offset = u(srqc::page_offset);
        i.dbr_addr = c.get(srqc::dbr_addr);
        return i;
      },
      std::move(done));
}

Status arm_rq(CmdQueue& q, uint32_t srqn, uint32_t lwm, DoneStatus done) {
  if (!fits(arm_rq_in::srq_number, srqn) || !fits(arm_rq_in::lwm, lwm))
    return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::ARM_RQ, arm_rq_op_mod::kSrq, arm_rq_in::kBits / 8);
  Ref<arm_rq_in> r(in.data());
  r.set(arm_rq_in::srq_number, srqn);
  r.set(arm_rq_in::lwm, lwm);
  return exec_status(q, in, arm_rq_out::kBits / 8, std::move(done));
}

}  // namespace kbv::hca::cmd
