// SPDX-License-Identifier: BSD-3-Clause
//
// The QP state transitions (mlx5_ifc.h rst2init_qp_in .. qp_2rst_in;
// prm/qp_cmd.hpp) with the IBTA QP state machine (IBTA Vol 1 10.3.1,
// Figure 124 / Table 91 "QP state transition properties"):
//
//   command      legal from                        to
//   RST2INIT     RST                               INIT
//   INIT2INIT    INIT                              INIT
//   INIT2RTR     INIT                              RTR
//   RTR2RTS      RTR                               RTS
//   RTS2RTS      RTS                               RTS
//   SQERR2RTS    SQER                              RTS
//   SQD_RTS      SQD                               RTS
//   2ERR         any                               ERR
//   2RST         any                               RST (attributes back to creation)
// Anything else is BAD_QP_STATE_ERR (0x10). The kernel's mlx5_ib picks the
// same command for each (current, next) pair (qp.c __mlx5_ib_modify_qp optab).
//
// Each transition reads its required attributes from the qpc unconditionally
// and applies an optional one only when its opt_param_mask bit is set; an
// opt_param_mask bit the transition does not accept for the QP's service type
// is BAD_PARAM (the accepted sets are the kernel's qp.c opt_mask table; IBTA
// Table 91 for SQD->RTS). Every other qpc field is ignored (drivers send the
// whole context each time). Required attributes (IBTA Table 91):
//   RST2INIT   port (ads.vhca_port_num 1..num_ports), pkey_index; RC: rre/rwe/rae,
//              atomic_mode; UC: rwe (rre/rae must be 0); UD: q_key (no RDMA
//              rights); dbr_addr if nonzero; counter_set_id must be 0
//   INIT2RTR   RC/UC: mtu 1..5, remote_qpn, next_rcv_psn, the primary path
//              (RoCE: grh = 1, src_addr_index a set RoCE address, rgid_rip not
//              zero, udp_sport 0 or inside roce_cap's source port range,
//              rmac, hop_limit, tclass, flow_label, sl);
//              RC also min_rnr_nak and log_rra_max (<= cap log_max_ra_res_qp);
//              UD: mtu 0..5; all: log_msg_max <= cap log_max_msg
//   RTR2RTS    next_send_psn; RC also retry_count, rnr_retry, ads.ack_timeout,
//              log_sra_max (<= cap log_max_ra_req_qp)
// Optional (by bit): RRE/RWE/RAE, PKEY_INDEX, Q_KEY, RNR_TIMEOUT (min_rnr_nak),
// PRI_PORT, PM_STATE, SRQN / CQN_RCV (UD RTS2RTS); ALT_ADDR_PATH is refused
// (the model has no automatic path migration).
// A command that fails changes nothing.
#include "hca/prm/qp_cmd.hpp"

#include "sim/fw/objects/objects.hpp"
#include "sim/fw/objects/qp_decode.hpp"
#include "sim/fw/objects/util.hpp"
#include "sim/fw/syndromes.hpp"

#include <algorithm>

namespace kbv::sim::fw {

namespace {

using namespace objutil;
using prm::ads;
using prm::Opcode;
using prm::qpc;
namespace qs = prm::qp_state;
namespace op = prm::qp_optpar;

constexpr uint32_t kAnyState = ~0u;
constexpr uint32_t bit(uint32_t s) { return 1u << s; }

struct Rule {
  Opcode opcode;
  uint32_t from;  // bit mask of legal current states
  uint32_t to;
  uint32_t opt_rc, opt_uc, opt_ud;  // accepted opt_param_mask bits per service type
};

constexpr uint32_t kAccess = op::kRre | op::kRae | op::kRwe;
constexpr Rule kRules[] = {
    {Opcode::RST2INIT_QP, bit(qs::kRst), qs::kInit, 0, 0, 0},
    {Opcode::INIT2INIT_QP, bit(qs::kInit), qs::kInit, kAccess | op::kPkeyIndex | op::kPriPort,
     op::kRwe | op::kPkeyIndex | op::kPriPort, op::kPkeyIndex | op::kQKey | op::kPriPort},
    {Opcode::INIT2RTR_QP, bit(qs::kInit), qs::kRtr, op::kAltAddrPath | kAccess | op::kPkeyIndex,
     op::kAltAddrPath | op::kRwe | op::kPkeyIndex, op::kPkeyIndex | op::kQKey},
    {Opcode::RTR2RTS_QP, bit(qs::kRtr), qs::kRts,
     op::kAltAddrPath | kAccess | op::kPmState | op::kRnrTimeout,
     op::kAltAddrPath | op::kRwe | op::kPmState, op::kQKey},
    {Opcode::RTS2RTS_QP, bit(qs::kRts), qs::kRts,
     kAccess | op::kRnrTimeout | op::kPmState | op::kAltAddrPath,
     op::kRwe | op::kPmState | op::kAltAddrPath, op::kQKey | op::kSrqn | op::kCqnRcv},
    {Opcode::SQERR2RTS_QP, bit(qs::kSqer), qs::kRts, op::kRnrTimeout | kAccess, op::kRwe,
     op::kQKey},
    {Opcode::SQD_RTS_QP, bit(qs::kSqd), qs::kRts,
     kAccess | op::kRnrTimeout | op::kPmState | op::kAltAddrPath,
     op::kRwe | op::kPmState | op::kAltAddrPath, op::kQKey},
    {Opcode::TO_ERR_QP, kAnyState, qs::kErr, 0, 0, 0},
    {Opcode::TO_RST_QP, kAnyState, qs::kRst, 0, 0, 0},
};

// The transitions share one layout (qpn, opt_param_mask, ece, qpc at the same
// bits; sqerr2rts / sqd2rts have no ece, 2ERR / 2RST only the qpn), so the
// handler reads them all through rst2init_qp_in / qp_2rst_in.
template <class L>
constexpr bool same_shape() {
  return L::qpn.off == prm::rst2init_qp_in::qpn.off &&
         L::opt_param_mask.off == prm::rst2init_qp_in::opt_param_mask.off &&
         L::qpc.off == prm::rst2init_qp_in::qpc.off && L::kBits == prm::rst2init_qp_in::kBits;
}
static_assert(same_shape<prm::init2init_qp_in>() && same_shape<prm::init2rtr_qp_in>());
static_assert(same_shape<prm::rtr2rts_qp_in>() && same_shape<prm::rts2rts_qp_in>());
static_assert(same_shape<prm::sqerr2rts_qp_in>() && same_shape<prm::sqd2rts_qp_in>());
static_assert(prm::init2rtr_qp_in::ece.off == prm::rst2init_qp_in::ece.off &&
              prm::rtr2rts_qp_in::ece.off == prm::rst2init_qp_in::ece.off);
static_assert(prm::qp_2err_in::qpn.off == prm::qp_2rst_in::qpn.off &&
              prm::qp_2rst_in::qpn.off == prm::rst2init_qp_in::qpn.off);

const Rule* rule_of(uint16_t opcode) {
  for (const Rule& r : kRules)
    if (prm::to_u16(r.opcode) == opcode) return &r;
  return nullptr;
}

uint32_t opt_allowed(const Rule& r, uint32_t st) {
  switch (st) {
    case prm::qpc_st::kRc: return r.opt_rc;
    case prm::qpc_st::kUc: return r.opt_uc;
    case prm::qpc_st::kUd: return r.opt_ud;
    default: return 0;
  }
}

// One transition being applied to a copy of the QP.
class Apply {
 public:
  Apply(FwContext& ctx, Opcode opcode, Qp& nq, prm::CRef<qpc> in)
      : ctx_(ctx), op_(opcode), q_(nq), in_(in), img_(nq.qpc.data()) {}

  Outcome bad(CmdStatus s, uint16_t check) const { return fail(s, synd::qp_synd(op_, check)); }
  void copy(prm::Field<qpc> f) { img_.set(f, in_.get(f)); }
  uint64_t get(prm::Field<qpc> f) const { return in_.get(f); }
  prm::CRef<ads> path() const { return in_.at(qpc::primary_address_path); }
  prm::Ref<ads> img_path() const { return img_.at(qpc::primary_address_path); }

  Outcome port(bool zero_keeps) {
    const uint64_t p = path().get(ads::vhca_port_num);
    if (p == 0 && zero_keeps) return Outcome::ok();
    if (p == 0 || p > cap(ctx_, prm::cmd_hca_cap::num_ports))
      return bad(CmdStatus::BAD_PARAM_ERR, synd::kQpPort);
    img_path().set(ads::vhca_port_num, p);
    return Outcome::ok();
  }
  Outcome pkey_index() {
    const uint64_t i = path().get(ads::pkey_index);
    if (i >= ObjectTables::kPkeyTableSize) return bad(CmdStatus::BAD_PARAM_ERR, synd::kQpPkeyIndex);
    img_path().set(ads::pkey_index, i);
    return Outcome::ok();
  }
  // Access rights: UC has no RDMA read / atomics, UD no RDMA at all (IBTA 9.4).
  Outcome access(uint32_t bits) {
    const bool rre = get(qpc::rre), rwe = get(qpc::rwe), rae = get(qpc::rae);
    if (q_.st == prm::qpc_st::kUc && (rre || rae))
      return bad(CmdStatus::BAD_PARAM_ERR, synd::kQpAccessFlags);
    if (q_.st == prm::qpc_st::kUd && (rre || rwe || rae))
      return bad(CmdStatus::BAD_PARAM_ERR, synd::kQpAccessFlags);
    if (bits & op::kRre) copy(qpc::rre);
    if (bits & op::kRwe) copy(qpc::rwe);
    if (bits & op::kRae) {
      copy(qpc::rae);
      copy(qpc::atomic_mode);
    }
    return Outcome::ok();
  }
  Outcome pm_state() {
    if (get(qpc::pm_state) == prm::qpc_pm_state::kReserved)
      return bad(CmdStatus::BAD_PARAM_ERR, synd::kQpPmStateParam);
    copy(qpc::pm_state);
    return Outcome::ok();
  }
  // The RoCE primary path (INIT2RTR): a GRH is mandatory on RoCE (IBTA Annex
  // A16/A17; the IB core's rdma_check_ah_attr refuses RoCE AHs without one).
  Outcome primary_path(ObjectTables& t) {
    prm::CRef<ads> p = path();
    if (!p.get(ads::grh)) return bad(CmdStatus::BAD_PARAM_ERR, synd::kQpGrh);
    const uint64_t sgid = p.get(ads::src_addr_index);
    if (sgid >= ObjectTables::kRoceAddrTableSize || !t.roce[sgid].valid)
      return bad(CmdStatus::BAD_PARAM_ERR, synd::kQpSgidIndex);
    auto g = p.bytes(ads::rgid_rip);
    if (std::all_of(g.begin(), g.end(), [](std::byte b) { return b == std::byte{0}; }))
      return bad(CmdStatus::BAD_PARAM_ERR, synd::kQpRgid);
    // RoCEv2 source port: 0 lets the device choose, else inside the range
    // roce_cap advertises (r_roce_min/max_src_udp_port).
    const uint64_t sport = p.get(ads::udp_sport);
    const prm::CRef<prm::roce_cap> rc = ctx_.caps().roce();
    if (sport != 0 && (sport < rc.get(prm::roce_cap::r_roce_min_src_udp_port) ||
                       sport > rc.get(prm::roce_cap::r_roce_max_src_udp_port)))
      return bad(CmdStatus::BAD_PARAM_ERR, synd::kQpUdpSport);
    if (Outcome o = port(true); !o.is_ok()) return o;
    prm::Ref<ads> d = img_path();
    for (prm::Field<ads> f :
         {ads::fl,          ads::free_ar,        ads::grh,       ads::mlid,       ads::rlid,
          ads::ack_timeout, ads::src_addr_index, ads::stat_rate, ads::hop_limit,  ads::tclass,
          ads::flow_label,  ads::f_dscp,         ads::f_ecn,     ads::f_eth_prio, ads::ecn,
          ads::dscp,        ads::udp_sport,      ads::dei_cfi,   ads::eth_prio,   ads::sl,
          ads::rmac_47_32,  ads::rmac_31_0})
      d.set(f, p.get(f));
    d.set_bytes(ads::rgid_rip, g);
    return Outcome::ok();
  }

 private:
  FwContext& ctx_;
  Opcode op_;
  Qp& q_;
  prm::CRef<qpc> in_;
  prm::Ref<qpc> img_;
};

Outcome apply_required(FwContext& ctx, ObjectTables& t, Apply& a, const Qp& q, Opcode opcode) {
  const bool rc = q.st == prm::qpc_st::kRc, uc = q.st == prm::qpc_st::kUc;
  switch (opcode) {
    case Opcode::RST2INIT_QP: {
      if (Outcome o = a.port(false); !o.is_ok()) return o;
      if (Outcome o = a.pkey_index(); !o.is_ok()) return o;
      if (Outcome o = a.access(rc ? kAccess : uc ? op::kRwe : 0); !o.is_ok()) return o;
      if (!rc && !uc) a.copy(qpc::q_key);
      if (const uint64_t dbr = a.get(qpc::dbr_addr)) {
        if (dbr % 8 != 0) return a.bad(CmdStatus::BAD_PARAM_ERR, synd::kQpDbr);
        a.copy(qpc::dbr_addr);
      }
      if (a.get(qpc::counter_set_id) != 0)
        return a.bad(CmdStatus::BAD_RES_ERR, synd::kQpCounterSetParam);
      return Outcome::ok();
    }
    case Opcode::INIT2RTR_QP: {
      const uint64_t mtu = a.get(qpc::mtu);
      if ((rc || uc) ? prm::mtu_bytes(static_cast<uint32_t>(mtu)) == 0
                     : (mtu != 0 && prm::mtu_bytes(static_cast<uint32_t>(mtu)) == 0))
        return a.bad(CmdStatus::BAD_PARAM_ERR, synd::kQpMtu);
      if (a.get(qpc::log_msg_max) > cap(ctx, prm::cmd_hca_cap::log_max_msg))
        return a.bad(CmdStatus::LIM_ERR, synd::kQpMsgMax);
      a.copy(qpc::mtu);
      a.copy(qpc::log_msg_max);
      if (!rc && !uc) return Outcome::ok();
      if (Outcome o = a.primary_path(t); !o.is_ok()) return o;
      a.copy(qpc::remote_qpn);
      a.copy(qpc::next_rcv_psn);
      if (rc) {
        if (a.get(qpc::log_rra_max) > cap(ctx, prm::cmd_hca_cap::log_max_ra_res_qp))
          return a.bad(CmdStatus::LIM_ERR, synd::kQpRraMax);
        a.copy(qpc::log_rra_max);
        a.copy(qpc::min_rnr_nak);
      }
      return Outcome::ok();
    }
    case Opcode::RTR2RTS_QP: {
      a.copy(qpc::next_send_psn);
      if (!rc) return Outcome::ok();
      if (a.get(qpc::log_sra_max) > cap(ctx, prm::cmd_hca_cap::log_max_ra_req_qp))
        return a.bad(CmdStatus::LIM_ERR, synd::kQpSraMax);
      a.copy(qpc::log_sra_max);
      a.copy(qpc::retry_count);
      a.copy(qpc::rnr_retry);
      a.img_path().set(ads::ack_timeout, a.path().get(ads::ack_timeout));
      return Outcome::ok();
    }
    default: return Outcome::ok();
  }
}

Outcome apply_optional(ObjectTables& t, Apply& a, uint32_t mask) {
  if (mask & op::kAltAddrPath) return a.bad(CmdStatus::BAD_PARAM_ERR, synd::kQpAltPath);
  if (mask & kAccess)
    if (Outcome o = a.access(mask & kAccess); !o.is_ok()) return o;
  if (mask & op::kPkeyIndex)
    if (Outcome o = a.pkey_index(); !o.is_ok()) return o;
  if (mask & op::kPriPort)
    if (Outcome o = a.port(false); !o.is_ok()) return o;
  if (mask & op::kPmState)
    if (Outcome o = a.pm_state(); !o.is_ok()) return o;
  if (mask & op::kQKey) a.copy(qpc::q_key);
  if (mask & op::kRnrTimeout) a.copy(qpc::min_rnr_nak);
  if (mask & op::kSrqn) {
    if (t.srq(static_cast<uint32_t>(a.get(qpc::srqn_rmpn_xrqn))) == nullptr)
      return a.bad(CmdStatus::BAD_RES_ERR, synd::kQpSrqn);
    a.copy(qpc::srqn_rmpn_xrqn);
    a.copy(qpc::rq_type);
  }
  if (mask & op::kCqnRcv) {
    if (t.cq(static_cast<uint32_t>(a.get(qpc::cqn_rcv))) == nullptr)
      return a.bad(CmdStatus::BAD_RES_ERR, synd::kQpCqnRcv);
    a.copy(qpc::cqn_rcv);
  }
  return Outcome::ok();
}

// Every transition command: the QP number is at the same place in each
// (mlx5_ifc.h <cmd>_in.qpn, bit 0x48), the qpc at bit 0xc0, opt_param_mask at
// bit 0x80; 2ERR / 2RST carry only the qpn.
Outcome modify_qp(FwContext& ctx, const Command& c, std::span<std::byte>) {
  const Rule* r = rule_of(c.opcode);
  if (r == nullptr) return fail(CmdStatus::BAD_OP_ERR, synd::kUnknownOpcode);
  const auto opcode = static_cast<Opcode>(c.opcode);
  ObjectTables& t = objects(ctx);
  const auto qpn =
      static_cast<uint32_t>(prm::CRef<prm::qp_2rst_in>(c.in.data()).get(prm::qp_2rst_in::qpn));
  Qp* q = t.qp(qpn);
  if (q == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::qp_synd(opcode, synd::kQpUnknown));
  if (r->from != kAnyState && !(r->from & bit(q->state)))
    return fail(CmdStatus::BAD_QP_STATE_ERR, synd::qp_synd(opcode, synd::kQpBadState));

  if (opcode == Opcode::TO_ERR_QP) {
    q->state = qs::kErr;
    t.qps_to_err.push_back(qpn);
    return Outcome::ok();
  }
  Qp nq = *q;
  if (opcode == Opcode::TO_RST_QP) {
    // IBTA 10.3.1: Reset returns every attribute to its creation value.
    nq.qpc = nq.created;
    nq.counters = QpCounters{};
    nq.dp_state.reset();  // the engine forgets the QP's transport state
  } else {
    prm::CRef<prm::rst2init_qp_in> in(c.in.data());
    const auto mask = static_cast<uint32_t>(in.get(prm::rst2init_qp_in::opt_param_mask));
    if (mask & ~opt_allowed(*r, q->st))
      return fail(CmdStatus::BAD_PARAM_ERR, synd::qp_synd(opcode, synd::kQpOptMask));
    if (opcode != Opcode::SQERR2RTS_QP && opcode != Opcode::SQD_RTS_QP &&
        in.get(prm::rst2init_qp_in::ece) != 0 && !cap(ctx, prm::cmd_hca_cap::ece_support))
      return fail(CmdStatus::BAD_PARAM_ERR, synd::qp_synd(opcode, synd::kQpEce));
    Apply a(ctx, opcode, nq, in.at(prm::rst2init_qp_in::qpc));
    if (Outcome o = apply_required(ctx, t, a, *q, opcode); !o.is_ok()) return o;
    if (Outcome o = apply_optional(t, a, mask); !o.is_ok()) return o;
  }
  qp_decode(nq);
  nq.state = r->to;
  qp_rebind(t, *q, nq);
  *q = std::move(nq);
  return Outcome::ok();
}

}  // namespace

void register_qp_modify_commands(CommandRegistry& r) {
  for (const Rule& rule : kRules) {
    const bool short_form = rule.opcode == Opcode::TO_ERR_QP || rule.opcode == Opcode::TO_RST_QP;
    // Every qpc-carrying transition is 272 bytes in, 16 out (mlx5_ifc.h).
    const uint32_t inlen =
        short_form ? bytes_of<prm::qp_2rst_in>() : bytes_of<prm::rst2init_qp_in>();
    (void)r.add(rule.opcode, Handler::make(inlen, bytes_of<prm::qp_2rst_out>(),
                                           Requires::kInitialized, modify_qp));
  }
}

}  // namespace kbv::sim::fw
