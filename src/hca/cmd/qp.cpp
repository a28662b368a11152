// SPDX-License-Identifier: BSD-3-Clause
#include "hca/cmd/qp.hpp"

#include "hca/prm/qp_cmd.hpp"

namespace kbv::hca::cmd {

using namespace prm;  // NOLINT

namespace {

namespace op = qp_optpar;

bool path_fits(const AddressPath& p) {
  return fits(ads::pkey_index, p.pkey_index) && fits(ads::flow_label, p.flow_label) &&
         fits(ads::sl, p.sl) && fits(ads::stat_rate, p.stat_rate) &&
         fits(ads::ack_timeout, p.ack_timeout) && p.rmac <= 0xFFFFFFFFFFFFull;
}

bool attr_fits(const QpAttr& a) {
  return path_fits(a.path) && fits(qpc::mtu, a.mtu) && fits(qpc::log_msg_max, a.log_msg_max) &&
         fits(qpc::remote_qpn, a.remote_qpn) && fits(qpc::next_rcv_psn, a.next_rcv_psn) &&
         fits(qpc::next_send_psn, a.next_send_psn) && fits(qpc::min_rnr_nak, a.min_rnr_nak) &&
         fits(qpc::log_rra_max, a.log_rra_max) && fits(qpc::log_sra_max, a.log_sra_max) &&
         fits(qpc::retry_count, a.retry_count) && fits(qpc::rnr_retry, a.rnr_retry) &&
         fits(qpc::pm_state, a.pm_state) && fits(qpc::srqn_rmpn_xrqn, a.srqn) &&
         fits(qpc::cqn_rcv, a.cqn_rcv) && fits(qpc::atomic_mode, a.atomic_mode);
}

void set_path(Ref<ads> d, const AddressPath& p) {
  d.set(ads::grh, p.grh);
  d.set(ads::src_addr_index, p.src_addr_index);
  d.set_bytes(ads::rgid_rip, std::as_bytes(std::span(p.rgid)));
  d.set(ads::rmac_47_32, p.rmac >> 32);
  d.set(ads::rmac_31_0, p.rmac & 0xFFFFFFFF);
  d.set(ads::udp_sport, p.udp_sport);
  d.set(ads::hop_limit, p.hop_limit);
  d.set(ads::tclass, p.tclass);
  d.set(ads::flow_label, p.flow_label);
  d.set(ads::sl, p.sl);
  d.set(ads::stat_rate, p.stat_rate);
  d.set(ads::vhca_port_num, p.vhca_port_num);
}

void set_access(Ref<qpc> c, const QpAttr& a, uint32_t bits) {
  if (bits & op::kRre) c.set(qpc::rre, a.rre);
  if (bits & op::kRwe) c.set(qpc::rwe, a.rwe);
  if (bits & op::kRae) {
    c.set(qpc::rae, a.rae);
    c.set(qpc::atomic_mode, a.atomic_mode);
  }
}

// Fills the qpc of a transition: the required attributes of (t, st) and the
// optional ones named by `mask`.
void fill(Ref<qpc> c, QpTransition t, uint32_t st, const QpAttr& a, uint32_t mask) {
  const bool rc = st == qpc_st::kRc, uc = st == qpc_st::kUc;
  Ref<ads> p = c.at(qpc::primary_address_path);
  switch (t) {
    case QpTransition::kRst2Init:
      p.set(ads::vhca_port_num, a.path.vhca_port_num);
      p.set(ads::pkey_index, a.path.pkey_index);
      if (rc) set_access(c, a, op::kRre | op::kRwe | op::kRae);
      if (uc) set_access(c, a, op::kRwe);
      if (!rc && !uc) c.set(qpc::q_key, a.q_key);
      break;
    case QpTransition::kInit2Rtr:
      c.set(qpc::mtu, a.mtu);
      c.set(qpc::log_msg_max, a.log_msg_max);
      if (rc || uc) {
        set_path(p, a.path);
        c.set(qpc::remote_qpn, a.remote_qpn);
        c.set(qpc::next_rcv_psn, a.next_rcv_psn);
      }
      if (rc) {
        c.set(qpc::log_rra_max, a.log_rra_max);
        c.set(qpc::min_rnr_nak, a.min_rnr_nak);
      }
      break;
    case QpTransition::kRtr2Rts:
      c.set(qpc::next_send_psn, a.next_send_psn);
      if (rc) {
        c.set(qpc::log_sra_max, a.log_sra_max);
        c.set(qpc::retry_count, a.retry_count);
        c.set(qpc::rnr_retry, a.rnr_retry);
        p.set(ads::ack_timeout, a.path.ack_timeout);
      }
      break;
    default: break;
  }
  set_access(c, a, mask);
  if (mask & op::kPkeyIndex) p.set(ads::pkey_index, a.path.pkey_index);
  if (mask & op::kPriPort) p.set(ads::vhca_port_num, a.path.vhca_port_num);
  if (mask & op::kQKey) c.set(qpc::q_key, a.q_key);
  if (mask & op::kRnrTimeout) c.set(qpc::min_rnr_nak, a.min_rnr_nak);
  if (mask & op::kPmState) c.set(qpc::pm_state, a.pm_state);
  if (mask & op::kSraMax) c.set(qpc::log_sra_max, a.log_sra_max);
  if (mask & op::kRraMax) c.set(qpc::log_rra_max, a.log_rra_max);
  if (mask & op::kRetryCount) c.set(qpc::retry_count, a.retry_count);
  if (mask & op::kRnrRetry) c.set(qpc::rnr_retry, a.rnr_retry);
  if (mask & op::kAckTimeout) p.set(ads::ack_timeout, a.path.ack_timeout);
  if (mask & op::kSrqn) {
    c.set(qpc::rq_type, qpc_rq_type::kSrqRq);
    c.set(qpc::srqn_rmpn_xrqn, a.srqn);
  }
  if (mask & op::kCqnRcv) c.set(qpc::cqn_rcv, a.cqn_rcv);
}

Status short_cmd(CmdQueue& q, Opcode opc, uint32_t qpn, DoneStatus done) {
  if (!fits(qp_2rst_in::qpn, qpn)) return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(opc, 0, qp_2rst_in::kBits / 8);
  Ref<qp_2rst_in>(in.data()).set(qp_2rst_in::qpn, qpn);
  return exec_status(q, in, qp_2rst_out::kBits / 8, std::move(done));
}

// Every qpc-carrying transition shares rst2init_qp_in's shape (qpn at 0x48,
// opt_param_mask at 0x80, qpc at 0xc0; mlx5_ifc.h).
static_assert(init2rtr_qp_in::qpc.off == rst2init_qp_in::qpc.off &&
              sqerr2rts_qp_in::opt_param_mask.off == rst2init_qp_in::opt_param_mask.off &&
              sqd2rts_qp_in::qpn.off == rst2init_qp_in::qpn.off &&
              rts2rts_qp_in::kBits == rst2init_qp_in::kBits);

}  // namespace

Opcode transition_opcode(QpTransition t) {
  switch (t) {
    case QpTransition::kRst2Init: return Opcode::RST2INIT_QP;
    case QpTransition::kInit2Init: return Opcode::INIT2INIT_QP;
    case QpTransition::kInit2Rtr: return Opcode::INIT2RTR_QP;
    case QpTransition::kRtr2Rts: return Opcode::RTR2RTS_QP;
    case QpTransition::kRts2Rts: return Opcode::RTS2RTS_QP;
    case QpTransition::kSqErr2Rts: return Opcode::SQERR2RTS_QP;
    case QpTransition::kSqd2Rts: return Opcode::SQD_RTS_QP;
    case QpTransition::kToErr: return Opcode::TO_ERR_QP;
    case QpTransition::kToRst: return Opcode::TO_RST_QP;
  }
  return Opcode::TO_ERR_QP;
}

Status create_qp(CmdQueue& q, const QpCreateAttr& a, Done<uint32_t> done) {
  if (a.pas.empty() || !fits(qpc::st, a.st) || !fits(qpc::pd, a.pd) ||
      !fits(qpc::uar_page, a.uar_page) || !fits(qpc::cqn_snd, a.cqn_snd) ||
      !fits(qpc::cqn_rcv, a.cqn_rcv) || !fits(qpc::log_sq_size, a.log_sq_size) ||
      !fits(qpc::rq_type, a.rq_type) || !fits(qpc::log_rq_size, a.log_rq_size) ||
      !fits(qpc::log_rq_stride, a.log_rq_stride) || !fits(qpc::srqn_rmpn_xrqn, a.srqn) ||
      !fits(qpc::log_page_size, a.log_page_size) || !fits(qpc::page_offset, a.page_offset) ||
      !fits(qpc::user_index, a.user_index) || !fits(qpc::log_msg_max, a.log_msg_max) ||
      !fits(qpc::pm_state, a.pm_state) || !fits(qpc::ts_format, a.ts_format))
    return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::CREATE_QP, 0, create_qp_in::kBits / 8 + a.pas.size() * 8);
  Ref<create_qp_in> r(in.data());
  Ref<qpc> c = r.at(create_qp_in::qpc);
  c.set(qpc::st, a.st);
  c.set(qpc::pm_state, a.pm_state);
  c.set(qpc::pd, a.pd);
  c.set(qpc::log_msg_max, a.log_msg_max);
  c.set(qpc::uar_page, a.uar_page);
  c.set(qpc::user_index, a.user_index);
  c.set(qpc::log_page_size, a.log_page_size);
  c.set(qpc::page_offset, a.page_offset);
  c.set(qpc::no_sq, a.no_sq);
  c.set(qpc::ts_format, a.ts_format);
  if (!a.no_sq) {
    c.set(qpc::log_sq_size, a.log_sq_size);
    c.set(qpc::cqn_snd, a.cqn_snd);
  }
  c.set(qpc::rq_type, a.rq_type);
  if (a.rq_type == qpc_rq_type::kNonZeroRq) {
    c.set(qpc::log_rq_size, a.log_rq_size);
    c.set(qpc::log_rq_stride, a.log_rq_stride);
  }
  if (a.rq_type == qpc_rq_type::kSrqRq) c.set(qpc::srqn_rmpn_xrqn, a.srqn);
  if (a.rq_type != qpc_rq_type::kZeroLenRq) c.set(qpc::cqn_rcv, a.cqn_rcv);
  c.set(qpc::dbr_addr, a.dbr_addr);
  for (uint32_t i = 0; i < a.pas.size(); ++i) r.set(create_qp_in::pas, i, a.pas[i]);
  return exec<uint32_t>(
      q, in, create_qp_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<uint32_t> {
        return static_cast<uint32_t>(CRef<create_qp_out>(out.data()).get(create_qp_out::qpn));
      },
      std::move(done));
}

Status destroy_qp(CmdQueue& q, uint32_t qpn, DoneStatus done) {
  if (!fits(destroy_qp_in::qpn, qpn)) return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::DESTROY_QP, 0, destroy_qp_in::kBits / 8);
  Ref<destroy_qp_in>(in.data()).set(destroy_qp_in::qpn, qpn);
  return exec_status(q, in, destroy_qp_out::kBits / 8, std::move(done));
}

Status modify_qp(CmdQueue& q, QpTransition t, uint32_t qpn, uint32_t st, const QpAttr& a,
                 uint32_t opt_param_mask, DoneStatus done) {
  if (t == QpTransition::kToErr || t == QpTransition::kToRst)
    return short_cmd(q, transition_opcode(t), qpn, std::move(done));
  if (opt_param_mask & op::kAltAddrPath) return Status{KBV_ERR_NOT_SUPPORTED};
  if (!fits(rst2init_qp_in::qpn, qpn) || !attr_fits(a)) return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(transition_opcode(t), 0, rst2init_qp_in::kBits / 8);
  Ref<rst2init_qp_in> r(in.data());
  r.set(rst2init_qp_in::qpn, qpn);
  r.set(rst2init_qp_in::opt_param_mask, opt_param_mask);
  fill(r.at(rst2init_qp_in::qpc), t, st, a, opt_param_mask);
  return exec_status(q, in, rst2init_qp_out::kBits / 8, std::move(done));
}

Status rst2init_qp(CmdQueue& q, uint32_t qpn, uint32_t st, const QpAttr& a, uint32_t opt,
                   DoneStatus done) {
  return modify_qp(q, QpTransition::kRst2Init, qpn, st, a, opt, std::move(done));
}
Status init2init_qp(CmdQueue& q, uint32_t qpn, uint32_t st, const QpAttr& a, uint32_t opt,
                    DoneStatus done) {
  return modify_qp(q, QpTransition::kInit2Init, qpn, st, a, opt, std::move(done));
}
Status init2rtr_qp(CmdQueue& q, uint32_t qpn, uint32_t st, const QpAttr& a, uint32_t opt,
                   DoneStatus done) {
  return modify_qp(q, QpTransition::kInit2Rtr, qpn, st, a, opt, std::move(done));
}
Status rtr2rts_qp(CmdQueue& q, uint32_t qpn, uint32_t st, const QpAttr& a, uint32_t opt,
                  DoneStatus done) {
  return modify_qp(q, QpTransition::kRtr2Rts, qpn, st, a, opt, std::move(done));
}
Status rts2rts_qp(CmdQueue& q, uint32_t qpn, uint32_t st, const QpAttr& a, uint32_t opt,
                  DoneStatus done) {
  return modify_qp(q, QpTransition::kRts2Rts, qpn, st, a, opt, std::move(done));
}
Status sqerr2rts_qp(CmdQueue& q, uint32_t qpn, uint32_t st, const QpAttr& a, uint32_t opt,
                    DoneStatus done) {
  return modify_qp(q, QpTransition::kSqErr2Rts, qpn, st, a, opt, std::move(done));
}
Status sqd2rts_qp(CmdQueue& q, uint32_t qpn, uint32_t st, const QpAttr& a, uint32_t opt,
                  DoneStatus done) {
  return modify_qp(q, QpTransition::kSqd2Rts, qpn, st, a, opt, std::move(done));
}
Status qp_2err(CmdQueue& q, uint32_t qpn, DoneStatus done) {
  return short_cmd(q, Opcode::TO_ERR_QP, qpn, std::move(done));
}
Status qp_2rst(CmdQueue& q, uint32_t qpn, DoneStatus done) {
  return short_cmd(q, Opcode::TO_RST_QP, qpn, std::move(done));
}

Status query_qp(CmdQueue& q, uint32_t qpn, Done<QpInfo> done) {
  if (!fits(query_qp_in::qpn, qpn)) return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::QUERY_QP, 0, query_qp_in::kBits / 8);
  Ref<query_qp_in>(in.data()).set(query_qp_in::qpn, qpn);
  return exec<QpInfo>(
      q, in, query_qp_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<QpInfo> {
        CRef<qpc> c = CRef<query_qp_out>(out.data()).at(query_qp_out::qpc);
        auto u = [&](Field<qpc> f) { return static_cast<uint32_t>(c.get(f)); };
        QpInfo i;
        i.state = u(qpc::state);
        i.st = u(qpc::st);
        i.pd = u(qpc::pd);
        i.mtu = u(qpc::mtu);
        i.log_msg_max = u(qpc::log_msg_max);
        i.remote_qpn = u(qpc::remote_qpn);
        i.next_send_psn = u(qpc::next_send_psn);
        i.next_rcv_psn = u(qpc::next_rcv_psn);
        i.last_acked_psn = u(qpc::last_acked_psn);
        i.q_key = u(qpc::q_key);
        i.rre = u(qpc::rre) != 0;
        i.rwe = u(qpc::rwe) != 0;
        i.rae = u(qpc::rae) != 0;
        i.min_rnr_nak = u(qpc::min_rnr_nak);
        i.retry_count = u(qpc::retry_count);
        i.rnr_retry = u(qpc::rnr_retry);
        i.log_sra_max = u(qpc::log_sra_max);
        i.log_rra_max = u(qpc::log_rra_max);
        i.cqn_snd = u(qpc::cqn_snd);
        i.cqn_rcv = u(qpc::cqn_rcv);
        i.rq_type = u(qpc::rq_type);
        i.srqn = u(qpc::srqn_rmpn_xrqn);
        i.log_sq_size = u(qpc::log_sq_size);
        i.log_rq_size = u(qpc::log_rq_size);
        i.log_rq_stride = u(qpc::log_rq_stride);
        i.no_sq = u(qpc::no_sq) != 0;
        i.uar_page = u(qpc::uar_page);
        i.user_index = u(qpc::user_index);
        i.pm_state = u(qpc::pm_state);
        i.dbr_addr = c.get(qpc::dbr_addr);
        CRef<ads> p = c.at(qpc::primary_address_path);
        auto v = [&](Field<ads> f) { return static_cast<uint32_t>(p.get(f)); };
        i.path.vhca_port_num = static_cast<uint8_t>(v(ads::vhca_port_num));
        i.path.pkey_index = static_cast<uint16_t>(v(ads::pkey_index));
        i.path.grh = v(ads::grh) != 0;
        i.path.src_addr_index = static_cast<uint8_t>(v(ads::src_addr_index));
        auto g = p.bytes(ads::rgid_rip);
        for (size_t k = 0; k < 16; ++k) i.path.rgid[k] = static_cast<uint8_t>(g[k]);
        i.path.rmac = uint64_t{v(ads::rmac_47_32)} << 32 | v(ads::rmac_31_0);
        i.path.udp_sport = static_cast<uint16_t>(v(ads::udp_sport));
        i.path.hop_limit = static_cast<uint8_t>(v(ads::hop_limit));
        i.path.tclass = static_cast<uint8_t>(v(ads::tclass));
        i.path.flow_label = v(ads::flow_label);
        i.path.sl = static_cast<uint8_t>(v(ads::sl));
        i.path.stat_rate = static_cast<uint8_t>(v(ads::stat_rate));
        i.path.ack_timeout = static_cast<uint8_t>(v(ads::ack_timeout));
        return i;
      },
      std::move(done));
}

}  // namespace kbv::hca::cmd
