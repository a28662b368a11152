// SPDX-License-Identifier: BSD-3-Clause
//
// The port as the vport commands show it (mlx5_ifc.h query_vport_state_*,
// query/modify_nic_vport_context_*, query_hca_vport_context/gid/pkey_*,
// query/set_roce_address_*; prm/vport.hpp). The model has one physical
// function with one Ethernet port doing RoCEv2: other_vport must be 0
// (no e-switch, BAD_PARAM) and port numbers are 1 (0 = "the" port, as the
// kernel sends for single-port devices).
//
//   QUERY_VPORT_STATE         op_mod 0 (own vNIC); state up/down follows the
//                             port (set_port_state), admin_state AUTO
//   QUERY_NIC_VPORT_CONTEXT   roce_en, mtu, loopback / promisc flags, GUIDs
//                             (EUI-64 of the MAC), permanent_address = port MAC
//   MODIFY_NIC_VPORT_CONTEXT  field_select roce_en, mtu (128..9216 bytes),
//                             disable_uc/mc_local_lb, promisc; the others
//                             (GUIDs, permanent address, address lists,
//                             min_inline, change events, affiliation) BAD_PARAM
//   QUERY_HCA_VPORT_CONTEXT   port_state / vport_state ACTIVE or DOWN,
//                             port_physical_state LinkUp (5) or Polling (2)
//                             (IBTA PortInfo), GUIDs, grh_required
//   QUERY_HCA_VPORT_GID       gid_index < 256 -> that GID; 0xFFFF -> the whole
//                             table (the kernel's mlx5_query_hca_vport_gid
//                             convention); GIDs are the RoCE address table's
//                             source_l3_address (unset = zero)
//   QUERY_HCA_VPORT_PKEY      pkey_index < 128 -> one; 0xFFFF -> all; the
//                             port's table (tables.hpp PortState::pkeys; entry 0
//                             the default P_Key 0xFFFF, IBTA 10.9.1.1)
//   QUERY_ROCE_ADDRESS        one table entry; an unset index reads as zeros
//   SET_ROCE_ADDRESS          stores an entry (RoCEv2 only, as roce_cap
//                             advertises; l3 type IPv4 needs an IPv4-mapped
//                             address); an all-zero address clears it
// Indices beyond the tables are BAD_INDEX (IX_ERR); outputs too short for
// the entries asked for are BAD_OUTPUT_LEN.
#include "hca/prm/vport.hpp"

#include "sim/fw/objects/objects.hpp"
#include "sim/fw/objects/util.hpp"
#include "sim/fw/syndromes.hpp"

#include <algorithm>

namespace kbv::sim::fw {

namespace {

using namespace objutil;

constexpr uint32_t kAllEntries = 0xFFFF;
constexpr uint32_t kMinMtu = 128;
constexpr uint32_t kMaxMtu = PortState::kDefaultMtu;
constexpr uint32_t kPhysLinkUp = 5;   // IBTA PortPhysicalState LinkUp
constexpr uint32_t kPhysPolling = 2;  // IBTA PortPhysicalState Polling

// EUI-64 from a MAC (RFC 4291 appendix A): flip the U/L bit, insert FF:FE.
uint64_t eui64(const std::array<uint8_t, 6>& m) {
  const uint8_t b[8] = {
      static_cast<uint8_t>(m[0] ^ 0x02), m[1], m[2], 0xFF, 0xFE, m[3], m[4], m[5]};
  uint64_t v = 0;
  for (uint8_t x : b) v = v << 8 | x;
  return v;
}

uint64_t mac_u64(const std::array<uint8_t, 6>& m) {
  uint64_t v = 0;
  for (uint8_t x : m) v = v << 8 | x;
  return v;
}

bool port_ok(uint64_t port) { return port <= 1; }

Outcome query_vport_state(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  prm::CRef<prm::query_vport_state_in> in(c.in.data());
  if (in.get(prm::query_vport_state_in::other_vport))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kVportStateOther);
  prm::Ref<prm::query_vport_state_out> o(out.data());
  o.set(prm::query_vport_state_out::admin_state, prm::vport_state::kAdminAuto);
  o.set(prm::query_vport_state_out::state,
        objects(ctx).port.up ? prm::vport_state::kUp : prm::vport_state::kDown);
  return Outcome::ok();
}

Outcome query_nic_vport(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  prm::CRef<prm::query_nic_vport_context_in> in(c.in.data());
  if (in.get(prm::query_nic_vport_context_in::other_vport))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kNicVportOther);
  const PortState& p = objects(ctx).port;
  using N = prm::nic_vport_context;
  auto v = prm::Ref<prm::query_nic_vport_context_out>(out.data())
               .at(prm::query_nic_vport_context_out::nic_vport_context);
  v.set(N::roce_en, p.roce_en);
  v.set(N::mtu, p.mtu);
  v.set(N::disable_uc_local_lb, p.disable_uc_local_lb);
  v.set(N::disable_mc_local_lb, p.disable_mc_local_lb);
  v.set(N::promisc_uc, p.promisc_uc);
  v.set(N::promisc_mc, p.promisc_mc);
  v.set(N::promisc_all, p.promisc_all);
  const uint64_t guid = eui64(p.mac());
  v.set(N::system_image_guid, guid);
  v.set(N::port_guid, guid);
  v.set(N::node_guid, guid);
  v.set(N::allowed_list_type, in.get(prm::query_nic_vport_context_in::allowed_list_type));
  v.set(N::allowed_list_size, 0);
  auto mac = v.at(N::permanent_address);
  const uint64_t m = mac_u64(p.mac());
  mac.set(prm::mac_address_layout::mac_addr_47_32, m >> 32);
  mac.set(prm::mac_address_layout::mac_addr_31_0, m & 0xFFFFFFFF);
  return Outcome::ok();
}

Outcome modify_nic_vport(FwContext& ctx, const Command& c, std::span<std::byte>) {
  prm::CRef<prm::modify_nic_vport_context_in> in(c.in.data());
  if (in.get(prm::modify_nic_vport_context_in::other_vport))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kModNicVportOther);
  using S = prm::modify_nic_vport_field_select;
  using N = prm::nic_vport_context;
  auto sel = in.at(prm::modify_nic_vport_context_in::field_select);
  for (prm::Field<S> f : {S::affiliation, S::node_guid, S::port_guid, S::min_inline,
                          S::change_event, S::permanent_address, S::addresses_list})
    if (sel.get(f)) return fail(CmdStatus::BAD_PARAM_ERR, synd::kModNicVportSelect);
  auto v = in.at(prm::modify_nic_vport_context_in::nic_vport_context);
  if (sel.get(S::mtu) && (v.get(N::mtu) < kMinMtu || v.get(N::mtu) > kMaxMtu))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kModNicVportMtu);
  PortState& p = objects(ctx).port;
  if (sel.get(S::roce_en)) p.roce_en = v.get(N::roce_en) != 0;
  if (sel.get(S::mtu)) p.mtu = static_cast<uint32_t>(v.get(N::mtu));
  if (sel.get(S::disable_uc_local_lb)) p.disable_uc_local_lb = v.get(N::disable_uc_local_lb) != 0;
  if (sel.get(S::disable_mc_local_lb)) p.disable_mc_local_lb = v.get(N::disable_mc_local_lb) != 0;
  if (sel.get(S::promisc)) {
    p.promisc_uc = v.get(N::promisc_uc) != 0;
    p.promisc_mc = v.get(N::promisc_mc) != 0;
    p.promisc_all = v.get(N::promisc_all) != 0;
  }
  return Outcome::ok();
}

Outcome query_hca_vport(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  prm::CRef<prm::query_hca_vport_context_in> in(c.in.data());
  if (in.get(prm::query_hca_vport_context_in::other_vport))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kHcaVportOther);
  if (!port_ok(in.get(prm::query_hca_vport_context_in::port_num)))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kHcaVportPort);
  const PortState& p = objects(ctx).port;
  using H = prm::hca_vport_context;
  auto v = prm::Ref<prm::query_hca_vport_context_out>(out.data())
               .at(prm::query_hca_vport_context_out::hca_vport_context);
  const uint32_t st = p.up ? prm::ib_port_state::kActive : prm::ib_port_state::kDown;
  v.set(H::port_state, st);
  v.set(H::vport_state, st);
  v.set(H::port_physical_state, p.up ? kPhysLinkUp : kPhysPolling);
  v.set(H::grh_required, 1);  // RoCE: every packet carries a GRH
  // 16 bits, saturating (IBTA 14.2.5.6 P_KeyViolations).
  v.set(H::pkey_violation_counter,
        std::min<uint32_t>(p.pkey_violations.load(std::memory_order_relaxed), 0xFFFF));
  const uint64_t guid = eui64(p.mac());
  v.set(H::system_image_guid, guid);
  v.set(H::port_guid, guid);
  v.set(H::node_guid, guid);
  return Outcome::ok();
}

Outcome query_gid(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  prm::CRef<prm::query_hca_vport_gid_in> in(c.in.data());
  if (in.get(prm::query_hca_vport_gid_in::other_vport))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kGidOther);
  if (!port_ok(in.get(prm::query_hca_vport_gid_in::port_num)))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kGidPort);
  const auto idx = static_cast<uint32_t>(in.get(prm::query_hca_vport_gid_in::gid_index));
  constexpr uint32_t n_all = ObjectTables::kRoceAddrTableSize;
  if (idx != kAllEntries && idx >= n_all) return fail(CmdStatus::IX_ERR, synd::kGidIndex);
  const uint32_t first = idx == kAllEntries ? 0 : idx;
  const uint32_t n = idx == kAllEntries ? n_all : 1;
  if (prm::query_hca_vport_gid_out::gid.byte_off(n) > out.size())
    return fail(CmdStatus::BAD_OUTP_LEN_ERR, synd::kGidOutLen);
  const ObjectTables& t = objects(ctx);
  prm::Ref<prm::query_hca_vport_gid_out> o(out.data());
  o.set(prm::query_hca_vport_gid_out::gids_num, n);
  for (uint32_t i = 0; i < n; ++i) {
    const RoceAddr& a = t.roce[first + i];
    if (!a.valid) continue;
    o.elem<prm::array128_auto>(prm::query_hca_vport_gid_out::gid, i)
        .set_bytes(prm::array128_auto::value, std::as_bytes(std::span(a.l3)));
  }
  return Outcome::ok();
}

Outcome query_pkey(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  prm::CRef<prm::query_hca_vport_pkey_in> in(c.in.data());
  if (in.get(prm::query_hca_vport_pkey_in::other_vport))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kPkeyOther);
  if (!port_ok(in.get(prm::query_hca_vport_pkey_in::port_num)))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kPkeyPort);
  const auto idx = static_cast<uint32_t>(in.get(prm::query_hca_vport_pkey_in::pkey_index));
  constexpr uint32_t n_all = ObjectTables::kPkeyTableSize;
  if (idx != kAllEntries && idx >= n_all) return fail(CmdStatus::IX_ERR, synd::kPkeyIndex);
  const uint32_t first = idx == kAllEntries ? 0 : idx;
  const uint32_t n = idx == kAllEntries ? n_all : 1;
  if (prm::query_hca_vport_pkey_out::pkey.byte_off(n) > out.size())
    return fail(CmdStatus::BAD_OUTP_LEN_ERR, synd::kPkeyOutLen);
  prm::Ref<prm::query_hca_vport_pkey_out> o(out.data());
  for (uint32_t i = 0; i < n; ++i)
    o.elem<prm::pkey>(prm::query_hca_vport_pkey_out::pkey, i)
        .set(prm::pkey::value, objects(ctx).port.pkey(first + i));
  return Outcome::ok();
}

Outcome query_roce_address(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  prm::CRef<prm::query_roce_address_in> in(c.in.data());
  const auto idx = static_cast<uint32_t>(in.get(prm::query_roce_address_in::roce_address_index));
  if (idx >= ObjectTables::kRoceAddrTableSize)
    return fail(CmdStatus::IX_ERR, synd::kQueryRoceIndex);
  if (!port_ok(in.get(prm::query_roce_address_in::vhca_port_num)))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kQueryRocePort);
  const RoceAddr& a = objects(ctx).roce[idx];
  if (!a.valid) return Outcome::ok();  // zeros
  using R = prm::roce_addr_layout;
  auto r = prm::Ref<prm::query_roce_address_out>(out.data())
               .at(prm::query_roce_address_out::roce_address);
  r.set_bytes(R::source_l3_address, std::as_bytes(std::span(a.l3)));
  r.set(R::vlan_valid, a.vlan_valid);
  r.set(R::vlan_id, a.vlan_id);
  const uint64_t m = mac_u64(a.mac);
  r.set(R::source_mac_47_32, m >> 32);
  r.set(R::source_mac_31_0, m & 0xFFFFFFFF);
  r.set(R::roce_l3_type, a.l3_type);
  r.set(R::roce_version, a.version);
  return Outcome::ok();
}

Outcome set_roce_address(FwContext& ctx, const Command& c, std::span<std::byte>) {
  prm::CRef<prm::set_roce_address_in> in(c.in.data());
  const auto idx = static_cast<uint32_t>(in.get(prm::set_roce_address_in::roce_address_index));
  if (idx >= ObjectTables::kRoceAddrTableSize) return fail(CmdStatus::IX_ERR, synd::kSetRoceIndex);
  if (!port_ok(in.get(prm::set_roce_address_in::vhca_port_num)))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kSetRocePort);
  using R = prm::roce_addr_layout;
  prm::CRef<R> r = in.at(prm::set_roce_address_in::roce_address);
  RoceAddr a;
  auto l3 = r.bytes(R::source_l3_address);
  std::transform(l3.begin(), l3.end(), a.l3.begin(),
                 [](std::byte b) { return static_cast<uint8_t>(b); });
  RoceAddr& slot = objects(ctx).roce[idx];
  if (std::all_of(a.l3.begin(), a.l3.end(), [](uint8_t b) { return b == 0; })) {
    slot = RoceAddr{};  // delete (the kernel's GID removal writes a zero address)
    return Outcome::ok();
  }
  a.version = static_cast<uint32_t>(r.get(R::roce_version));
  if (a.version != prm::roce_version::kV2)
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kSetRoceVersion);
  a.l3_type = static_cast<uint32_t>(r.get(R::roce_l3_type));
  if (a.l3_type != prm::roce_l3_type::kIpv4 && a.l3_type != prm::roce_l3_type::kIpv6)
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kSetRoceL3Type);
  const Gid mapped_prefix = ipv4_mapped_gid(0, 0, 0, 0);
  if (a.l3_type == prm::roce_l3_type::kIpv4 &&
      !std::equal(a.l3.begin(), a.l3.begin() + 12, mapped_prefix.begin()))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kSetRoceIpv4Mapped);
  const uint64_t m = r.get(R::source_mac_47_32) << 32 | r.get(R::source_mac_31_0);
  for (int i = 0; i < 6; ++i) a.mac[i] = static_cast<uint8_t>(m >> (8 * (5 - i)));
  a.vlan_valid = r.get(R::vlan_valid) != 0;
  a.vlan_id = static_cast<uint32_t>(r.get(R::vlan_id));
  a.valid = true;
  slot = a;
  return Outcome::ok();
}

}  // namespace

void register_vport_commands(CommandRegistry& r) {
  using prm::Opcode;
  (void)r.add(Opcode::QUERY_VPORT_STATE, Handler::make(bytes_of<prm::query_vport_state_in>(),
                                                       bytes_of<prm::query_vport_state_out>(),
                                                       Requires::kEnabled, query_vport_state));
  (void)r.add(Opcode::QUERY_NIC_VPORT_CONTEXT,
              Handler::make(bytes_of<prm::query_nic_vport_context_in>(),
                            bytes_of<prm::query_nic_vport_context_out>(), Requires::kEnabled,
                            query_nic_vport));
  (void)r.add(Opcode::MODIFY_NIC_VPORT_CONTEXT,
              Handler::make(bytes_of<prm::modify_nic_vport_context_in>(),
                            bytes_of<prm::modify_nic_vport_context_out>(), Requires::kEnabled,
                            modify_nic_vport));
  (void)r.add(Opcode::QUERY_HCA_VPORT_CONTEXT,
              Handler::make(bytes_of<prm::query_hca_vport_context_in>(),
                            bytes_of<prm::query_hca_vport_context_out>(), Requires::kEnabled,
                            query_hca_vport));
  // The GID / P_Key outputs are sized by the request (at least one entry).
  (void)r.add(
      Opcode::QUERY_HCA_VPORT_GID,
      Handler::make(bytes_of<prm::query_hca_vport_gid_in>(),
                    prm::query_hca_vport_gid_out::gid.byte_off(1), Requires::kEnabled, query_gid));
  (void)r.add(Opcode::QUERY_HCA_VPORT_PKEY,
              Handler::make(bytes_of<prm::query_hca_vport_pkey_in>(),
                            prm::query_hca_vport_pkey_out::pkey.byte_off(1), Requires::kEnabled,
                            query_pkey));
  (void)r.add(Opcode::QUERY_ROCE_ADDRESS, Handler::make(bytes_of<prm::query_roce_address_in>(),
                                                        bytes_of<prm::query_roce_address_out>(),
                                                        Requires::kEnabled, query_roce_address));
  (void)r.add(Opcode::SET_ROCE_ADDRESS, Handler::make(bytes_of<prm::set_roce_address_in>(),
                                                      bytes_of<prm::set_roce_address_out>(),
                                                      Requires::kEnabled, set_roce_address));
}

}  // namespace kbv::sim::fw
