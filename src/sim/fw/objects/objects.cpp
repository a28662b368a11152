// SPDX-License-Identifier: BSD-3-Clause
#include "sim/fw/objects/objects.hpp"

#include "common/log.hpp"
#include "hca/prm/eqe.hpp"
#include "hca/prm/vport.hpp"
#include "sim/fw/objects/tables.hpp"
#include "sim/fw/objects/umem.hpp"

#include <array>

namespace kbv::sim::fw {

namespace {
constexpr const char* kLog = "sim.fw.obj";
}  // namespace

Gid ipv4_mapped_gid(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  Gid g{};
  g[10] = 0xFF;
  g[11] = 0xFF;
  g[12] = a;
  g[13] = b;
  g[14] = c;
  g[15] = d;
  return g;
}

void ObjectTables::reset_roce_table() {
  roce = {};
  RoceAddr& a = roce[0];
  a.valid = true;
  a.l3 = ipv4_mapped_gid(127, 0, 0, port.host);
  a.mac = port.mac();
  a.l3_type = prm::roce_l3_type::kIpv4;
  a.version = prm::roce_version::kV2;
}

void set_port_host(FwContext& ctx, uint8_t host) {
  ObjectTables& t = objects(ctx);
  t.port.host = host;
  t.port.bound = true;
  t.reset_roce_table();
}

void set_port_state(FwContext& ctx, bool up) {
  ObjectTables& t = objects(ctx);
  if (t.port.up == up) return;
  t.port.up = up;
  std::array<std::byte, prm::kEqeDataBits / 8> data{};
  prm::Ref<prm::eqe_port_state>(data.data()).set(prm::eqe_port_state::port_num, 1);
  const auto sub =
      static_cast<uint8_t>(up ? prm::PortChangeSubtype::ACTIVE : prm::PortChangeSubtype::DOWN);
  if (ctx.eqs().subscribed(prm::EventType::PORT_CHANGE)) {
    Status s = ctx.eqs().post_event(prm::EventType::PORT_CHANGE, sub, data);
    if (!s) log::warn(kLog, "port change event not delivered: {}", s.message());
  }
}

namespace {
// Every opcode register_object_commands adds.
constexpr prm::Opcode kObjectOpcodes[] = {
    prm::Opcode::ALLOC_PD,
    prm::Opcode::DEALLOC_PD,
    prm::Opcode::ALLOC_TRANSPORT_DOMAIN,
    prm::Opcode::DEALLOC_TRANSPORT_DOMAIN,
    prm::Opcode::CREATE_MKEY,
    prm::Opcode::QUERY_MKEY,
    prm::Opcode::DESTROY_MKEY,
    prm::Opcode::CREATE_CQ,
    prm::Opcode::DESTROY_CQ,
    prm::Opcode::QUERY_CQ,
    prm::Opcode::MODIFY_CQ,
    prm::Opcode::CREATE_SRQ,
    prm::Opcode::DESTROY_SRQ,
    prm::Opcode::QUERY_SRQ,
    prm::Opcode::ARM_RQ,
    prm::Opcode::CREATE_QP,
    prm::Opcode::DESTROY_QP,
    prm::Opcode::QUERY_QP,
    prm::Opcode::RST2INIT_QP,
    prm::Opcode::INIT2INIT_QP,
    prm::Opcode::INIT2RTR_QP,
    prm::Opcode::RTR2RTS_QP,
    prm::Opcode::RTS2RTS_QP,
    prm::Opcode::SQERR2RTS_QP,
    prm::Opcode::SQD_RTS_QP,
    prm::Opcode::TO_ERR_QP,
    prm::Opcode::TO_RST_QP,
    prm::Opcode::ATTACH_TO_MCG,
    prm::Opcode::DETACH_FROM_MCG,
    prm::Opcode::QUERY_VPORT_STATE,
    prm::Opcode::QUERY_NIC_VPORT_CONTEXT,
    prm::Opcode::MODIFY_NIC_VPORT_CONTEXT,
    prm::Opcode::QUERY_HCA_VPORT_CONTEXT,
    prm::Opcode::QUERY_HCA_VPORT_GID,
    prm::Opcode::QUERY_HCA_VPORT_PKEY,
    prm::Opcode::QUERY_ROCE_ADDRESS,
    prm::Opcode::SET_ROCE_ADDRESS,
    prm::Opcode::CREATE_UMEM,
    prm::Opcode::DESTROY_UMEM,
    prm::Opcode::ACCESS_REG,  // replaces the bring-up handler (register_access_reg_commands)
};
}  // namespace

std::function<void(CommandRegistry&)> object_commands(uint8_t port_host) {
  return [port_host](CommandRegistry& r) {
    CommandRegistry mine;
    register_object_commands(mine);
    for (prm::Opcode op : kObjectOpcodes) {
      const Handler* h = mine.find(prm::to_u16(op));
      if (h == nullptr) continue;
      Handler w = *h;
      w.fn = [inner = h->fn, port_host](FwContext& ctx, const Command& c,
                                        std::span<std::byte> out) {
        if (!objects(ctx).port.bound) set_port_host(ctx, port_host);
        return inner(ctx, c, out);
      };
      if (Status s = op == prm::Opcode::ACCESS_REG ? r.replace(prm::to_u16(op), std::move(w))
                                                   : r.add(op, std::move(w));
          !s)
        log::warn(kLog, "{}: not registered: {}", prm::opcode_name(op), s.message());
    }
  };
}

void register_object_commands(CommandRegistry& r) {
  register_pd_commands(r);
  register_mkey_commands(r);
  register_cq_commands(r);
  register_srq_commands(r);
  register_qp_commands(r);
  register_qp_modify_commands(r);
  register_mcg_commands(r);
  register_vport_commands(r);
  register_umem_commands(r);
  register_access_reg_commands(r);
}

}  // namespace kbv::sim::fw
