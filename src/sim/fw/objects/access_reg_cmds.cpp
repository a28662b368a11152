// SPDX-License-Identifier: BSD-3-Clause
//
// ACCESS_REG (0x805) with the port registers (PRM "Port registers"; layouts
// hca/prm/reg.hpp from mlx5_ifc.h). The model's port is local_port 1; any
// other local_port is BAD_PARAM (kRegLocalPort). register_data must hold the
// whole register in both directions (BAD_INPUT_LEN / BAD_OUTPUT_LEN,
// kRegDataShort). Read and write both return the register's contents.
//
//   HOST_ENDIANNESS 0x7004  as before (hca_cmds.cpp)
//   PAOS  0x5006  read: admin_status (UP unless written DOWN) and
//                 oper_status (UP / DOWN: the link); write with ase = 1:
//                 admin UP / UP_ONCE brings the link up, DOWN takes it down
//                 (port-change EQE either way, as set_port_state); admin
//                 values outside 1..3 are BAD_PARAM (kRegBadValue)
//   PTYS  0x5004  proto_mask must name Ethernet (MLX5_PTYS_EN; the port is
//                 RoCE over Ethernet, IB is BAD_PARAM kRegNotEthernet);
//                 capability = admin = 100GBASE-CR4, oper = the same while
//                 the link is up, else 0. A write may set eth_proto_admin to
//                 a non-empty subset of the capability (else kRegBadValue).
//   PMTU  0x5003  max_mtu 9216, admin_mtu / oper_mtu the port MTU (the same
//                 value MODIFY_NIC_VPORT_CONTEXT sets); a write sets
//                 admin_mtu within 128..9216 (else kRegBadValue)
//   PPCNT 0x5008  read only (write: kRegReadOnly). Groups the model counts
//                 from its wire (fw/wire_counters.hpp), counted from INIT_HCA:
//                   IEEE 802.3: frames/octets transmitted and received OK,
//                     frame_check_sequence_errors = datagrams with a bad ICRC
//                     (injected corruptions), frame_too_long = malformed;
//                   RFC 2863: if_in/out octets and unicast packets,
//                     if_in_discards = good packets the transport dropped,
//                     if_in_errors = bad ICRC + malformed, if_out_discards =
//                     datagrams the fault injector dropped, if_out_errors =
//                     send failures;
//                   per-priority (prio_tc 0..7): every packet is priority 0,
//                     priorities 1..7 read zero; prio_tc > 7 BAD_PARAM.
//                 Other groups are BAD_PARAM (kRegGroup): the model has no
//                 PHY, FEC or RMON histogram to report. clr = 1 returns the
//                 counters, then starts every group of the port from zero.
//   PPLM, PDDR, MCIA (and every other id)  BAD_PARAM (kRegUnsupported): the
//                 model has no FEC, no PHY diagnostics and no cable module;
//                 firmware refuses a register it does not implement with
//                 bad parameter (what mlx5_core logs for ACCESS_REG on
//                 devices without them).
//
// Threading: firmware thread.
#include "hca/prm/boot.hpp"
#include "hca/prm/reg.hpp"
#include "sim/fw/hca_cmds.hpp"
#include "sim/fw/objects/objects.hpp"
#include "sim/fw/objects/util.hpp"
#include "sim/fw/syndromes.hpp"

namespace kbv::sim::fw {

namespace {

using namespace objutil;  // NOLINT: bytes_of, fail
using prm::RegId;

constexpr uint32_t kMinMtu = 128;
constexpr uint32_t kMaxMtu = PortState::kDefaultMtu;

// The port registers' state: what PAOS / PTYS writes set, and the counter
// baseline (PPCNT counts from here). Dropped by TEARDOWN_HCA / reset as every
// extension; port_regs_init() starts it again at INIT_HCA.
struct PortRegs : Extension {
  bool admin_up = true;
  uint32_t eth_proto_admin = prm::kEthProto100GBaseCr4;
  WireCounters base;
  bool based = false;
};

PortRegs& regs(FwContext& ctx) {
  PortRegs& r = ctx.ext<PortRegs>();
  if (!r.based) {
    r.base = ctx.wire_counters();
    r.based = true;
  }
  return r;
}

Outcome paos(FwContext& ctx, bool write, const std::byte* in, std::byte* out) {
  using R = prm::paos_reg;
  PortRegs& pr = regs(ctx);
  if (write && prm::CRef<R>(in).get(R::ase)) {
    const auto admin = static_cast<uint8_t>(prm::CRef<R>(in).get(R::admin_status));
    if (admin < static_cast<uint8_t>(prm::PortStatus::UP) ||
        admin > static_cast<uint8_t>(prm::PortStatus::UP_ONCE))
      return fail(CmdStatus::BAD_PARAM_ERR, synd::kRegBadValue);
    pr.admin_up = admin != static_cast<uint8_t>(prm::PortStatus::DOWN);
    set_port_state(ctx, pr.admin_up);
  }
  prm::Ref<R> o(out);
  o.set(R::local_port, 1);
  o.set(R::admin_status,
        static_cast<uint8_t>(pr.admin_up ? prm::PortStatus::UP : prm::PortStatus::DOWN));
  o.set(R::oper_status,
        static_cast<uint8_t>(objects(ctx).port.up ? prm::PortStatus::UP : prm::PortStatus::DOWN));
  return Outcome::ok();
}

Outcome ptys(FwContext& ctx, bool write, const std::byte* in, std::byte* out) {
  using R = prm::ptys_reg;
  prm::CRef<R> i(in);
  if (!(i.get(R::proto_mask) & prm::kPtysEn))
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kRegNotEthernet);
  PortRegs& pr = regs(ctx);
  if (write) {
    const auto admin = static_cast<uint32_t>(i.get(R::eth_proto_admin));
    if (admin == 0 || (admin & ~prm::kEthProto100GBaseCr4) != 0)
      return fail(CmdStatus::BAD_PARAM_ERR, synd::kRegBadValue);
    pr.eth_proto_admin = admin;
  }
  prm::Ref<R> o(out);
  o.set(R::local_port, 1);
  o.set(R::proto_mask, prm::kPtysEn);
  o.set(R::an_disable_cap, 1);  // nothing to negotiate: the link is fixed
  o.set(R::an_disable_admin, 1);
  o.set(R::eth_proto_capability, prm::kEthProto100GBaseCr4);
  o.set(R::eth_proto_admin, pr.eth_proto_admin);
  o.set(R::eth_proto_oper, objects(ctx).port.up ? pr.eth_proto_admin : 0);
  return Outcome::ok();
}

Outcome pmtu(FwContext& ctx, bool write, const std::byte* in, std::byte* out) {
  using R = prm::pmtu_reg;
  PortState& p = objects(ctx).port;
  if (write) {
    const auto mtu = static_cast<uint32_t>(prm::CRef<R>(in).get(R::admin_mtu));
    if (mtu < kMinMtu || mtu > kMaxMtu) return fail(CmdStatus::BAD_PARAM_ERR, synd::kRegBadValue);
    p.mtu = mtu;
  }
  prm::Ref<R> o(out);
  o.set(R::local_port, 1);
  o.set(R::max_mtu, kMaxMtu);
  o.set(R::admin_mtu, p.mtu);
  o.set(R::oper_mtu, p.mtu);
  return Outcome::ok();
}

Outcome ppcnt(FwContext& ctx, bool write, const std::byte* in, std::byte* out) {
  using R = prm::ppcnt_reg;
  if (write) return fail(CmdStatus::BAD_PARAM_ERR, synd::kRegReadOnly);
  prm::CRef<R> i(in);
  const auto grp = static_cast<prm::PpcntGroup>(i.get(R::grp));
  const auto prio = static_cast<uint32_t>(i.get(R::prio_tc));
  PortRegs& pr = regs(ctx);
  const WireCounters now = ctx.wire_counters();
  const WireCounters w = now - pr.base;
  prm::Ref<R> o(out);
  o.set(R::local_port, 1);
  o.set(R::grp, static_cast<uint8_t>(grp));
  o.set(R::prio_tc, prio);
  switch (grp) {
    case prm::PpcntGroup::IEEE_802_3: {
      using G = prm::eth_802_3_cntrs;
      prm::Ref<G> g = o.at(R::eth_802_3);
      g.set(G::a_frames_transmitted_ok, w.tx_packets);
      g.set(G::a_frames_received_ok, w.rx_packets);
      g.set(G::a_frame_check_sequence_errors, w.rx_bad_icrc);
      g.set(G::a_octets_transmitted_ok, w.tx_bytes);
      g.set(G::a_octets_received_ok, w.rx_bytes);
      g.set(G::a_frame_too_long_errors, w.rx_malformed);
      break;
    }
    case prm::PpcntGroup::RFC_2863: {
      using G = prm::eth_2863_cntrs;
      prm::Ref<G> g = o.at(R::eth_2863);
      g.set(G::if_in_octets, w.rx_bytes);
      g.set(G::if_in_ucast_pkts, w.rx_packets);
      g.set(G::if_in_discards, w.rx_discards);
      g.set(G::if_in_errors, w.rx_bad_icrc + w.rx_malformed);
      g.set(G::if_out_octets, w.tx_bytes);
      g.set(G::if_out_ucast_pkts, w.tx_packets);
      g.set(G::if_out_discards, w.tx_fault_dropped);
      g.set(G::if_out_errors, w.tx_errors);
      break;
    }
    case prm::PpcntGroup::PER_PRIORITY: {
      if (prio >= prm::kNumPriorities) return fail(CmdStatus::BAD_PARAM_ERR, synd::kRegBadValue);
      if (prio != 0) break;  // every packet the model sends is priority 0
      using G = prm::eth_per_prio_cntrs;
      prm::Ref<G> g = o.at(R::eth_per_prio);
      g.set(G::rx_octets, w.rx_bytes);
      g.set(G::rx_frames, w.rx_packets);
      g.set(G::tx_octets, w.tx_bytes);
      g.set(G::tx_frames, w.tx_packets);
      g.set(G::rx_discards, w.rx_discards);
      break;
    }
    default: return fail(CmdStatus::BAD_PARAM_ERR, synd::kRegGroup);
  }
  if (i.get(R::clr)) pr.base = now;
  return Outcome::ok();
}

// Register size in bytes, or 0 for registers the model refuses.
uint32_t reg_bytes(uint16_t id) {
  switch (static_cast<RegId>(id)) {
    case RegId::PAOS: return bytes_of<prm::paos_reg>();
    case RegId::PTYS: return bytes_of<prm::ptys_reg>();
    case RegId::PMTU: return bytes_of<prm::pmtu_reg>();
    case RegId::PPCNT: return bytes_of<prm::ppcnt_reg>();
    default: return 0;
  }
}

Outcome access_reg(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  prm::CRef<prm::access_register_in> in(c.in.data());
  const auto id = static_cast<uint16_t>(in.get(prm::access_register_in::register_id));
  if (id == static_cast<uint16_t>(RegId::HOST_ENDIANNESS))
    return access_reg_host_endianness(ctx, c, out);
  const uint32_t n = reg_bytes(id);
  if (n == 0) return fail(CmdStatus::BAD_PARAM_ERR, synd::kRegUnsupported);
  constexpr uint32_t kHdr = bytes_of<prm::access_register_in>();
  if (c.in.size() < kHdr + n) return fail(CmdStatus::BAD_INP_LEN_ERR, synd::kRegDataShort);
  if (out.size() < kHdr + n) return fail(CmdStatus::BAD_OUTP_LEN_ERR, synd::kRegDataShort);
  const std::byte* data = c.in.data() + kHdr;
  // local_port is bits 8..15 of every port register (mlx5_ifc.h).
  if (prm::CRef<prm::paos_reg>(data).get(prm::paos_reg::local_port) != 1)
    return fail(CmdStatus::BAD_PARAM_ERR, synd::kRegLocalPort);
  const bool write = c.op_mod == static_cast<uint16_t>(prm::AccessRegOpMod::WRITE);
  std::byte* o = out.data() + kHdr;
  switch (static_cast<RegId>(id)) {
    case RegId::PAOS: return paos(ctx, write, data, o);
    case RegId::PTYS: return ptys(ctx, write, data, o);
    case RegId::PMTU: return pmtu(ctx, write, data, o);
    default: return ppcnt(ctx, write, data, o);
  }
}

}  // namespace

void port_regs_init(FwContext& ctx) { (void)regs(ctx); }

bool port_admin_up(FwContext& ctx) { return regs(ctx).admin_up; }

void register_access_reg_commands(CommandRegistry& r) {
  (void)r.replace(
      prm::to_u16(prm::Opcode::ACCESS_REG),
      Handler::make(bytes_of<prm::access_register_in>(), bytes_of<prm::access_register_out>(),
                    Requires::kEnabled, access_reg,
                    std::vector<uint16_t>{static_cast<uint16_t>(prm::AccessRegOpMod::WRITE),
                                          static_cast<uint16_t>(prm::AccessRegOpMod::READ)}));
}

}  // namespace kbv::sim::fw
