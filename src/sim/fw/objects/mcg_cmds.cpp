// SPDX-License-Identifier: BSD-3-Clause
//
// ATTACH_TO_MCG / DETACH_FROM_MCG (mlx5_ifc.h attach_to_mcg_in,
// detach_from_mcg_in; prm/mcg.hpp): multicast membership of UD QPs
// (IBTA 10.5: only UD QPs join multicast groups).
// ATTACH checks, in order:
//   qpn names a QP                                       BAD_RES   kMcgQpUnknown
//   the QP is UD                                         BAD_PARAM kMcgNotUd
//   multicast_gid is multicast: ff00::/8, or IPv4-mapped
//     ::ffff:224.0.0.0/4 (RoCE, RFC 4291 / RFC 5771)     BAD_PARAM kMcgNotMulticast
//   the QP is not already in the group                  BAD_PARAM kMcgDuplicate
//   the group has fewer than cap max_qp_mcg QPs          LIM_ERR   kMcgGroupFull
//   a new group fits below 2^log_max_mcg groups          NO_RES    kMcgExhausted
// DETACH: qpn names a QP (BAD_RES kDetachQpUnknown), the group exists
// (BAD_RES kDetachNoGroup), the QP is a member (BAD_RES kDetachNotMember); the
// group disappears with its last QP.
// The data-path engine delivers a UD datagram addressed to a group to every
// member (ObjectTables::mcgs).
#include "hca/prm/mcg.hpp"

#include "sim/fw/objects/objects.hpp"
#include "sim/fw/objects/util.hpp"
#include "sim/fw/syndromes.hpp"

#include <algorithm>

namespace kbv::sim::fw {

namespace {

using namespace objutil;

Gid to_gid(std::span<const std::byte> b) {
  Gid g{};
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<uint8_t>(b[i]);
  return g;
}

bool is_multicast(const Gid& g) {
  if (g[0] == 0xFF) return true;
  const bool v4_mapped = std::all_of(g.begin(), g.begin() + 10, [](uint8_t b) { return b == 0; }) &&
                         g[10] == 0xFF && g[11] == 0xFF;
  return v4_mapped && (g[12] & 0xF0) == 0xE0;
}

Outcome attach(FwContext& ctx, const Command& c, std::span<std::byte>) {
  ObjectTables& t = objects(ctx);
  prm::CRef<prm::attach_to_mcg_in> in(c.in.data());
  const auto qpn = static_cast<uint32_t>(in.get(prm::attach_to_mcg_in::qpn));
  Qp* q = t.qp(qpn);
  if (q == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kMcgQpUnknown);
  if (q->st != prm::qpc_st::kUd) return fail(CmdStatus::BAD_PARAM_ERR, synd::kMcgNotUd);
  const Gid g = to_gid(in.bytes(prm::attach_to_mcg_in::multicast_gid));
  if (!is_multicast(g)) return fail(CmdStatus::BAD_PARAM_ERR, synd::kMcgNotMulticast);
  auto it = t.mcgs.find(g);
  if (it != t.mcgs.end()) {
    if (std::find(it->second.begin(), it->second.end(), qpn) != it->second.end())
      return fail(CmdStatus::BAD_PARAM_ERR, synd::kMcgDuplicate);
    if (it->second.size() >= cap(ctx, prm::cmd_hca_cap::max_qp_mcg))
      return fail(CmdStatus::LIM_ERR, synd::kMcgGroupFull);
    it->second.push_back(qpn);
  } else {
    if (t.mcgs.size() >= (uint64_t{1} << cap(ctx, prm::cmd_hca_cap::log_max_mcg)))
      return fail(CmdStatus::NO_RES_ERR, synd::kMcgExhausted);
    t.mcgs.emplace(g, std::vector<uint32_t>{qpn});
  }
  ++q->mcg_count;
  return Outcome::ok();
}

Outcome detach(FwContext& ctx, const Command& c, std::span<std::byte>) {
  ObjectTables& t = objects(ctx);
  prm::CRef<prm::detach_from_mcg_in> in(c.in.data());
  const auto qpn = static_cast<uint32_t>(in.get(prm::detach_from_mcg_in::qpn));
  Qp* q = t.qp(qpn);
  if (q == nullptr) return fail(CmdStatus::BAD_RES_ERR, synd::kDetachQpUnknown);
  auto it = t.mcgs.find(to_gid(in.bytes(prm::detach_from_mcg_in::multicast_gid)));
  if (it == t.mcgs.end()) return fail(CmdStatus::BAD_RES_ERR, synd::kDetachNoGroup);
  auto m = std::find(it->second.begin(), it->second.end(), qpn);
  if (m == it->second.end()) return fail(CmdStatus::BAD_RES_ERR, synd::kDetachNotMember);
  it->second.erase(m);
  if (it->second.empty()) t.mcgs.erase(it);
  --q->mcg_count;
  return Outcome::ok();
}

}  // namespace

void register_mcg_commands(CommandRegistry& r) {
  (void)r.add(prm::Opcode::ATTACH_TO_MCG,
              Handler::make(bytes_of<prm::attach_to_mcg_in>(), bytes_of<prm::attach_to_mcg_out>(),
                            Requires::kInitialized, attach));
  (void)r.add(prm::Opcode::DETACH_FROM_MCG,
              Handler::make(bytes_of<prm::detach_from_mcg_in>(),
                            bytes_of<prm::detach_from_mcg_out>(), Requires::kInitialized, detach));
}

}  // namespace kbv::sim::fw
