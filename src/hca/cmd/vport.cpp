// SPDX-License-Identifier: BSD-3-Clause
#include "hca/cmd/vport.hpp"

#include <algorithm>
#include <cstring>

#include "hca/prm/vport.hpp"

namespace kbv::hca::cmd {

using namespace prm;  // NOLINT

Status query_vport_state(CmdQueue& q, uint16_t op_mod, const VportAttr& v, Done<VportState> done) {
  auto in = make_in(Opcode::QUERY_VPORT_STATE, op_mod, query_vport_state_in::kBits / 8);
  Ref<query_vport_state_in> r(in.data());
  r.set(query_vport_state_in::other_vport, v.other_vport);
  r.set(query_vport_state_in::vport_number, v.vport_number);
  return exec<VportState>(
      q, in, query_vport_state_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<VportState> {
        CRef<query_vport_state_out> o(out.data());
        return VportState{static_cast<uint32_t>(o.get(query_vport_state_out::state)),
                          static_cast<uint32_t>(o.get(query_vport_state_out::admin_state))};
      },
      std::move(done));
}

Status query_nic_vport_context(CmdQueue& q, const VportAttr& v, Done<NicVportContext> done) {
  auto in = make_in(Opcode::QUERY_NIC_VPORT_CONTEXT, 0, query_nic_vport_context_in::kBits / 8);
  Ref<query_nic_vport_context_in> r(in.data());
  r.set(query_nic_vport_context_in::other_vport, v.other_vport);
  r.set(query_nic_vport_context_in::vport_number, v.vport_number);
  return exec<NicVportContext>(
      q, in, query_nic_vport_context_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<NicVportContext> {
        CRef<nic_vport_context> c = CRef<query_nic_vport_context_out>(out.data())
                                        .at(query_nic_vport_context_out::nic_vport_context);
        NicVportContext n;
        n.roce_en = c.get(nic_vport_context::roce_en) != 0;
        n.mtu = static_cast<uint32_t>(c.get(nic_vport_context::mtu));
        n.system_image_guid = c.get(nic_vport_context::system_image_guid);
        n.port_guid = c.get(nic_vport_context::port_guid);
        n.node_guid = c.get(nic_vport_context::node_guid);
        CRef<mac_address_layout> mac = c.at(nic_vport_context::permanent_address);
        n.permanent_mac = mac.get(mac_address_layout::mac_addr_47_32) << 32 |
                          mac.get(mac_address_layout::mac_addr_31_0);
        return n;
      },
      std::move(done));
}

Status modify_nic_vport_roce_en(CmdQueue& q, bool enable, DoneStatus done) {
  auto in = make_in(Opcode::MODIFY_NIC_VPORT_CONTEXT, 0, modify_nic_vport_context_in::kBits / 8);
  Ref<modify_nic_vport_context_in> r(in.data());
  r.at(modify_nic_vport_context_in::field_select).set(modify_nic_vport_field_select::roce_en, 1);
  r.at(modify_nic_vport_context_in::nic_vport_context).set(nic_vport_context::roce_en, enable);
  return exec_status(q, in, modify_nic_vport_context_out::kBits / 8, std::move(done));
}

Status query_hca_vport_context(CmdQueue& q, uint8_t port_num, const VportAttr& v,
                               Done<HcaVportContext> done) {
  if (!fits(query_hca_vport_context_in::port_num, port_num)) return Status{KBV_ERR_INVALID_PORT};
  auto in = make_in(Opcode::QUERY_HCA_VPORT_CONTEXT, 0, query_hca_vport_context_in::kBits / 8);
  Ref<query_hca_vport_context_in> r(in.data());
  r.set(query_hca_vport_context_in::other_vport, v.other_vport);
  r.set(query_hca_vport_context_in::port_num, port_num);
  r.set(query_hca_vport_context_in::vport_number, v.vport_number);
  return exec<HcaVportContext>(
      q, in, query_hca_vport_context_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<HcaVportContext> {
        CRef<hca_vport_context> c = CRef<query_hca_vport_context_out>(out.data())
                                        .at(query_hca_vport_context_out::hca_vport_context);
        auto g = [&](Field<hca_vport_context> f) { return static_cast<uint32_t>(c.get(f)); };
        HcaVportContext h;
        h.port_physical_state = g(hca_vport_context::port_physical_state);
        h.port_state = g(hca_vport_context::port_state);
        h.vport_state = g(hca_vport_context::vport_state);
        h.grh_required = g(hca_vport_context::grh_required) != 0;
        h.system_image_guid = c.get(hca_vport_context::system_image_guid);
        h.port_guid = c.get(hca_vport_context::port_guid);
        h.node_guid = c.get(hca_vport_context::node_guid);
        h.cap_mask1 = g(hca_vport_context::cap_mask1);
        h.cap_mask2 = g(hca_vport_context::cap_mask2);
        h.lid = g(hca_vport_context::lid);
        h.lmc = g(hca_vport_context::lmc);
        h.sm_lid = g(hca_vport_context::sm_lid);
        h.sm_sl = g(hca_vport_context::sm_sl);
        h.subnet_timeout = g(hca_vport_context::subnet_timeout);
        h.qkey_violation_counter = g(hca_vport_context::qkey_violation_counter);
        h.pkey_violation_counter = g(hca_vport_context::pkey_violation_counter);
        return h;
      },
      std::move(done));
}

Status query_hca_vport_pkey(CmdQueue& q, uint8_t port_num, uint16_t pkey_index,
                            Done<uint16_t> done) {
  if (!fits(query_hca_vport_pkey_in::port_num, port_num)) return Status{KBV_ERR_INVALID_PORT};
  auto in = make_in(Opcode::QUERY_HCA_VPORT_PKEY, 0, query_hca_vport_pkey_in::kBits / 8);
  Ref<query_hca_vport_pkey_in> r(in.data());
  r.set(query_hca_vport_pkey_in::port_num, port_num);
  r.set(query_hca_vport_pkey_in::pkey_index, pkey_index);
  return exec<uint16_t>(
      q, in, query_hca_vport_pkey_out::pkey.byte_off(1),
      [](std::span<const std::byte> out) -> Result<uint16_t> {
        CRef<query_hca_vport_pkey_out> o(out.data());
        return static_cast<uint16_t>(
            o.elem<pkey>(query_hca_vport_pkey_out::pkey, 0).get(pkey::value));
      },
      std::move(done));
}

Status query_hca_vport_pkey_table(CmdQueue& q, uint8_t port_num, uint32_t table_size,
                                  Done<std::vector<uint16_t>> done) {
  if (!fits(query_hca_vport_pkey_in::port_num, port_num)) return Status{KBV_ERR_INVALID_PORT};
  if (table_size == 0 || table_size > 4096) return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::QUERY_HCA_VPORT_PKEY, 0, query_hca_vport_pkey_in::kBits / 8);
  Ref<query_hca_vport_pkey_in> r(in.data());
  r.set(query_hca_vport_pkey_in::port_num, port_num);
  r.set(query_hca_vport_pkey_in::pkey_index, 0xFFFF);
  return exec<std::vector<uint16_t>>(
      q, in, query_hca_vport_pkey_out::pkey.byte_off(table_size),
      [table_size](std::span<const std::byte> out) -> Result<std::vector<uint16_t>> {
        CRef<query_hca_vport_pkey_out> o(out.data());
        std::vector<uint16_t> v(table_size);
        for (uint32_t i = 0; i < table_size; ++i)
          v[i] = static_cast<uint16_t>(
              o.elem<pkey>(query_hca_vport_pkey_out::pkey, i).get(pkey::value));
        return v;
      },
      std::move(done));
}

Status query_hca_vport_gid(CmdQueue& q, uint8_t port_num, uint16_t gid_index, uint32_t table_size,
                           Done<std::vector<Gid>> done) {
  if (!fits(query_hca_vport_gid_in::port_num, port_num)) return Status{KBV_ERR_INVALID_PORT};
  const uint32_t nout = gid_index == kAllGids ? table_size : 1;
  if (nout == 0 || nout > 4096) return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::QUERY_HCA_VPORT_GID, 0, query_hca_vport_gid_in::kBits / 8);
  Ref<query_hca_vport_gid_in> r(in.data());
  r.set(query_hca_vport_gid_in::port_num, port_num);
  r.set(query_hca_vport_gid_in::gid_index, gid_index);
  const uint32_t out_bytes = query_hca_vport_gid_out::kBits / 8 + 16 * nout;
  return exec<std::vector<Gid>>(
      q, in, out_bytes,
      [nout](std::span<const std::byte> out) -> Result<std::vector<Gid>> {
        CRef<query_hca_vport_gid_out> o(out.data());
        const uint32_t n = static_cast<uint32_t>(o.get(query_hca_vport_gid_out::gids_num));
        std::vector<Gid> gids(std::min(n ? n : nout, nout));
        for (uint32_t i = 0; i < gids.size(); ++i) {
          auto b =
              o.elem<array128_auto>(query_hca_vport_gid_out::gid, i).bytes(array128_auto::value);
          std::memcpy(gids[i].data(), b.data(), 16);
        }
        return gids;
      },
      std::move(done));
}

Status query_roce_address(CmdQueue& q, uint8_t port_num, uint16_t index, Done<RoceAddress> done) {
  if (!fits(query_roce_address_in::vhca_port_num, port_num)) return Status{KBV_ERR_INVALID_PORT};
  auto in = make_in(Opcode::QUERY_ROCE_ADDRESS, 0, query_roce_address_in::kBits / 8);
  Ref<query_roce_address_in> r(in.data());
  r.set(query_roce_address_in::roce_address_index, index);
  r.set(query_roce_address_in::vhca_port_num, port_num);
  return exec<RoceAddress>(
      q, in, query_roce_address_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<RoceAddress> {
        CRef<roce_addr_layout> l =
            CRef<query_roce_address_out>(out.data()).at(query_roce_address_out::roce_address);
        RoceAddress a;
        auto g = l.bytes(roce_addr_layout::source_l3_address);
        std::memcpy(a.gid.data(), g.data(), 16);
        a.vlan_valid = l.get(roce_addr_layout::vlan_valid) != 0;
        a.vlan_id = static_cast<uint32_t>(l.get(roce_addr_layout::vlan_id));
        a.source_mac = l.get(roce_addr_layout::source_mac_47_32) << 32 |
                       l.get(roce_addr_layout::source_mac_31_0);
        a.l3_type = static_cast<uint32_t>(l.get(roce_addr_layout::roce_l3_type));
        a.version = static_cast<uint32_t>(l.get(roce_addr_layout::roce_version));
        return a;
      },
      std::move(done));
}

Status set_roce_address(CmdQueue& q, uint8_t port_num, uint16_t index, const RoceAddress& a,
                        DoneStatus done) {
  if (!fits(set_roce_address_in::vhca_port_num, port_num)) return Status{KBV_ERR_INVALID_PORT};
  if (!fits(roce_addr_layout::vlan_id, a.vlan_id) || a.source_mac >> 48 ||
      !fits(roce_addr_layout::roce_l3_type, a.l3_type) ||
      !fits(roce_addr_layout::roce_version, a.version))
    return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::SET_ROCE_ADDRESS, 0, set_roce_address_in::kBits / 8);
  Ref<set_roce_address_in> r(in.data());
  r.set(set_roce_address_in::roce_address_index, index);
  r.set(set_roce_address_in::vhca_port_num, port_num);
  Ref<roce_addr_layout> l = r.at(set_roce_address_in::roce_address);
  l.set_bytes(roce_addr_layout::source_l3_address,
              std::as_bytes(std::span<const uint8_t>(a.gid.data(), a.gid.size())));
  l.set(roce_addr_layout::vlan_valid, a.vlan_valid);
  l.set(roce_addr_layout::vlan_id, a.vlan_id);
  l.set(roce_addr_layout::source_mac_47_32, a.source_mac >> 32);
  l.set(roce_addr_layout::source_mac_31_0, a.source_mac & 0xFFFFFFFF);
  l.set(roce_addr_layout::roce_l3_type, a.l3_type);
  l.set(roce_addr_layout::roce_version, a.version);
  return exec_status(q, in, set_roce_address_out::kBits / 8, std::move(done));
}

}  // namespace kbv::hca::cmd
