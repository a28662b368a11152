// SPDX-License-Identifier: BSD-3-Clause
#include "sim/fw/objects/qp_decode.hpp"

#include <algorithm>

namespace kbv::sim::fw {

void qp_decode(Qp& q) {
  using prm::ads;
  using prm::qpc;
  prm::CRef<qpc> x(q.qpc.data());
  auto u = [&](prm::Field<qpc> f) { return static_cast<uint32_t>(x.get(f)); };
  q.st = u(qpc::st);
  q.pd = u(qpc::pd);
  q.cqn_snd = u(qpc::cqn_snd);
  q.cqn_rcv = u(qpc::cqn_rcv);
  q.rq_type = u(qpc::rq_type);
  q.srqn = q.rq_type == prm::qpc_rq_type::kSrqRq ? u(qpc::srqn_rmpn_xrqn) : 0;
  q.no_sq = u(qpc::no_sq) != 0;
  q.log_sq_size = u(qpc::log_sq_size);
  q.log_rq_size = u(qpc::log_rq_size);
  q.log_rq_stride = u(qpc::log_rq_stride);
  q.uar_page = u(qpc::uar_page);
  if (q.dbr_umem == 0) q.dbr_addr = x.get(qpc::dbr_addr);  // else the umem's IOVA stays
  q.user_index = u(qpc::user_index);
  q.log_msg_max = u(qpc::log_msg_max);
  q.mtu = u(qpc::mtu);
  q.remote_qpn = u(qpc::remote_qpn);
  q.next_send_psn = u(qpc::next_send_psn);
  q.next_rcv_psn = u(qpc::next_rcv_psn);
  q.retry_count = u(qpc::retry_count);
  q.rnr_retry = u(qpc::rnr_retry);
  q.min_rnr_nak = u(qpc::min_rnr_nak);
  q.log_sra_max = u(qpc::log_sra_max);
  q.log_rra_max = u(qpc::log_rra_max);
  q.rre = u(qpc::rre) != 0;
  q.rwe = u(qpc::rwe) != 0;
  q.rae = u(qpc::rae) != 0;
  q.atomic_mode = u(qpc::atomic_mode);
  q.q_key = u(qpc::q_key);
  q.pm_state = u(qpc::pm_state);
  q.rq_bytes = q.rq_type == prm::qpc_rq_type::kNonZeroRq
                   ? (uint64_t{16} << q.log_rq_stride) << q.log_rq_size
                   : 0;
  q.sq_offset = q.rq_bytes;
  q.sq_bytes = q.no_sq ? 0 : uint64_t{64} << q.log_sq_size;

  prm::CRef<ads> p = x.at(qpc::primary_address_path);
  auto a = [&](prm::Field<ads> f) { return static_cast<uint32_t>(p.get(f)); };
  q.path.vhca_port_num = a(ads::vhca_port_num);
  q.path.pkey_index = a(ads::pkey_index);
  q.path.grh = a(ads::grh) != 0;
  q.path.src_addr_index = a(ads::src_addr_index);
  auto g = p.bytes(ads::rgid_rip);
  std::transform(g.begin(), g.end(), q.path.rgid.begin(),
                 [](std::byte b) { return static_cast<uint8_t>(b); });
  const uint64_t mac = uint64_t{a(ads::rmac_47_32)} << 32 | a(ads::rmac_31_0);
  for (int i = 0; i < 6; ++i) q.path.rmac[i] = static_cast<uint8_t>(mac >> (8 * (5 - i)));
  q.path.udp_sport = a(ads::udp_sport);
  q.path.hop_limit = a(ads::hop_limit);
  q.path.tclass = a(ads::tclass);
  q.path.flow_label = a(ads::flow_label);
  q.path.sl = a(ads::sl);
  q.path.stat_rate = a(ads::stat_rate);
  q.path.ack_timeout = a(ads::ack_timeout);
}

void qp_rebind(ObjectTables& t, const Qp& old_q, const Qp& new_q) {
  if (old_q.cqn_rcv != new_q.cqn_rcv) {
    if (Cq* c = t.cq(old_q.cqn_rcv)) --c->refs;
    if (Cq* c = t.cq(new_q.cqn_rcv)) ++c->refs;
  }
  if (old_q.srqn != new_q.srqn) {
    if (Srq* s = t.srq(old_q.srqn)) --s->refs;
    if (Srq* s = t.srq(new_q.srqn)) ++s->refs;
  }
}

}  // namespace kbv::sim::fw
