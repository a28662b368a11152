// SPDX-License-Identifier: BSD-3-Clause
// Vport and RoCE address commands (src/sim/fw/objects/vport_cmds.cpp) and the
// port hooks (set_port_host, set_port_state).
#include "fw_obj_support.hpp"

#include "hca/prm/eqe.hpp"

namespace kbv::sim::fw::objtest {
namespace {

class VportTest : public ObjFixture {
 protected:
  template <class L>
  Reply query(Opcode op, uint32_t outlen, void (*edit)(prm::Ref<L>) = nullptr) {
    auto in = cmd<L>(op);
    if (edit) edit(prm::Ref<L>(in.data()));
    return exec(in, outlen);
  }
  Reply query_roce(uint32_t index) {
    auto in = cmd<prm::query_roce_address_in>(Opcode::QUERY_ROCE_ADDRESS);
    prm::Ref<prm::query_roce_address_in>(in.data()).set(
        prm::query_roce_address_in::roce_address_index, index);
    return exec(in, prm::query_roce_address_out::kBits / 8);
  }
  std::vector<std::byte> set_roce_cmd(uint32_t index, const Gid& g, uint32_t version,
                                      uint32_t l3_type) {
    auto in = cmd<prm::set_roce_address_in>(Opcode::SET_ROCE_ADDRESS);
    prm::Ref<prm::set_roce_address_in> s(in.data());
    s.set(prm::set_roce_address_in::roce_address_index, index);
    s.set(prm::set_roce_address_in::vhca_port_num, 1);
    auto r = s.at(prm::set_roce_address_in::roce_address);
    r.set_bytes(prm::roce_addr_layout::source_l3_address, std::as_bytes(std::span(g)));
    r.set(prm::roce_addr_layout::source_mac_47_32, 0x0211);
    r.set(prm::roce_addr_layout::source_mac_31_0, 0x22334455);
    r.set(prm::roce_addr_layout::roce_version, version);
    r.set(prm::roce_addr_layout::roce_l3_type, l3_type);
    return in;
  }
  Reply query_gid(uint32_t index, uint32_t n_out) {
    auto in = cmd<prm::query_hca_vport_gid_in>(Opcode::QUERY_HCA_VPORT_GID);
    prm::Ref<prm::query_hca_vport_gid_in>(in.data()).set(prm::query_hca_vport_gid_in::gid_index,
                                                         index);
    return exec(in, 16 + 16 * n_out);
  }
  static Gid gid_at(const Reply& r, uint32_t i) {
    auto b = prm::CRef<prm::query_hca_vport_gid_out>(r.out.data())
                 .elem<prm::array128_auto>(prm::query_hca_vport_gid_out::gid, i)
                 .bytes(prm::array128_auto::value);
    Gid g{};
    for (int k = 0; k < 16; ++k) g[k] = static_cast<uint8_t>(b[k]);
    return g;
  }
};

TEST_F(VportTest, VportStateFollowsThePort) {
  Reply r = run(Opcode::QUERY_VPORT_STATE, 0, 16, 16);
  ASSERT_EQ(r.status(), 0);
  EXPECT_EQ(field(r, prm::query_vport_state_out::state), prm::vport_state::kUp);
  EXPECT_EQ(field(r, prm::query_vport_state_out::admin_state), prm::vport_state::kAdminAuto);
  set_port_state(fw_->context(), false);
  r = run(Opcode::QUERY_VPORT_STATE, 0, 16, 16);
  EXPECT_EQ(field(r, prm::query_vport_state_out::state), prm::vport_state::kDown);
  Reply h = run(Opcode::QUERY_HCA_VPORT_CONTEXT, 0, 16, 528);
  ASSERT_EQ(h.status(), 0);
  auto v = prm::CRef<prm::query_hca_vport_context_out>(h.out.data())
               .at(prm::query_hca_vport_context_out::hca_vport_context);
  EXPECT_EQ(v.get(prm::hca_vport_context::port_state), prm::ib_port_state::kDown);
  Reply other = query<prm::query_vport_state_in>(Opcode::QUERY_VPORT_STATE, 16, [](auto q) {
    q.set(prm::query_vport_state_in::other_vport, 1);
  });
  EXPECT_EQ(other.status(), st(CmdStatus::BAD_PARAM_ERR));
  EXPECT_EQ(other.syndrome(), synd::kVportStateOther);
  EXPECT_EQ(run(Opcode::QUERY_VPORT_STATE, 2, 16, 16).syndrome(), synd::kBadOpMod);
}

TEST_F(VportTest, HcaVportContextOfAnActivePort) {
  Reply h = run(Opcode::QUERY_HCA_VPORT_CONTEXT, 0, 16, 528);
  ASSERT_EQ(h.status(), 0);
  auto v = prm::CRef<prm::query_hca_vport_context_out>(h.out.data())
               .at(prm::query_hca_vport_context_out::hca_vport_context);
  EXPECT_EQ(v.get(prm::hca_vport_context::port_state), prm::ib_port_state::kActive);
  EXPECT_EQ(v.get(prm::hca_vport_context::vport_state), prm::ib_port_state::kActive);
  EXPECT_EQ(v.get(prm::hca_vport_context::port_physical_state), 5u);  // LinkUp
  EXPECT_EQ(v.get(prm::hca_vport_context::grh_required), 1u);
  EXPECT_EQ(v.get(prm::hca_vport_context::node_guid), 0x006b62fffe760001u);
  auto port2 = cmd<prm::query_hca_vport_context_in>(Opcode::QUERY_HCA_VPORT_CONTEXT);
  prm::Ref<prm::query_hca_vport_context_in>(port2.data())
      .set(prm::query_hca_vport_context_in::port_num, 2);
  Reply r = exec(port2, 528);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_PARAM_ERR));
  EXPECT_EQ(r.syndrome(), synd::kHcaVportPort);
}

TEST_F(VportTest, PortChangeEventGoesToTheSubscribedEq) {
  const uint64_t buf = host_->dma().alloc(4096);
  for (int i = 0; i < 64; ++i) host_->dma().host(buf)[i * 64 + 63] = std::byte{1};
  auto in = cmd<prm::create_eq_in>(Opcode::CREATE_EQ, 0, 8);
  prm::Ref<prm::create_eq_in> c(in.data());
  c.at(prm::create_eq_in::eq_context_entry).set(prm::eqc::log_eq_size, 6);
  c.at(prm::create_eq_in::eq_context_entry).set(prm::eqc::uar_page, uar_);
  c.set(prm::create_eq_in::event_bitmask, prm::event_word(prm::EventType::PORT_CHANGE),
        prm::event_bit(prm::EventType::PORT_CHANGE));
  c.set(prm::create_eq_in::pas, 0, buf);
  ASSERT_EQ(exec(in, 16).status(), 0);

  set_port_state(fw_->context(), false);
  prm::CRef<prm::eqe> e(host_->dma().host(buf));
  EXPECT_EQ(e.get(prm::eqe::owner), 0u);  // written by the device (pass 0)
  EXPECT_EQ(e.get(prm::eqe::type), prm::to_u8(prm::EventType::PORT_CHANGE));
  EXPECT_EQ(e.get(prm::eqe::sub_type), static_cast<uint8_t>(prm::PortChangeSubtype::DOWN));
  EXPECT_EQ(prm::CRef<prm::eqe_port_state>(e.bytes(prm::eqe::data).data())
                .get(prm::eqe_port_state::port_num),
            1u);
  set_port_state(fw_->context(), true);
  prm::CRef<prm::eqe> e2(host_->dma().host(buf) + 64);
  EXPECT_EQ(e2.get(prm::eqe::sub_type), static_cast<uint8_t>(prm::PortChangeSubtype::ACTIVE));
}

TEST_F(VportTest, NicVportContextQueryAndModify) {
  Reply r = run(Opcode::QUERY_NIC_VPORT_CONTEXT, 0, 16, 272);
  ASSERT_EQ(r.status(), 0);
  auto v = prm::CRef<prm::query_nic_vport_context_out>(r.out.data())
               .at(prm::query_nic_vport_context_out::nic_vport_context);
  EXPECT_EQ(v.get(prm::nic_vport_context::roce_en), 1u);  // set by the fixture
  EXPECT_EQ(v.get(prm::nic_vport_context::mtu), PortState::kDefaultMtu);
  auto mac = v.at(prm::nic_vport_context::permanent_address);
  EXPECT_EQ(mac.get(prm::mac_address_layout::mac_addr_47_32), 0x026bu);
  EXPECT_EQ(mac.get(prm::mac_address_layout::mac_addr_31_0), 0x62760001u);
  EXPECT_EQ(v.get(prm::nic_vport_context::port_guid), 0x006b62fffe760001u);

  auto in = cmd<prm::modify_nic_vport_context_in>(Opcode::MODIFY_NIC_VPORT_CONTEXT);
  prm::Ref<prm::modify_nic_vport_context_in> m(in.data());
  auto sel = m.at(prm::modify_nic_vport_context_in::field_select);
  auto ctx = m.at(prm::modify_nic_vport_context_in::nic_vport_context);
  sel.set(prm::modify_nic_vport_field_select::mtu, 1);
  ctx.set(prm::nic_vport_context::mtu, 1522);
  ctx.set(prm::nic_vport_context::roce_en, 0);  // not selected: unchanged
  ASSERT_EQ(exec(in, 16).status(), 0);
  EXPECT_EQ(tables().port.mtu, 1522u);
  EXPECT_TRUE(tables().port.roce_en);
  ctx.set(prm::nic_vport_context::mtu, 20000);
  Reply big = exec(in, 16);
  EXPECT_EQ(big.status(), st(CmdStatus::BAD_PARAM_ERR));
  EXPECT_EQ(big.syndrome(), synd::kModNicVportMtu);
  sel.set(prm::modify_nic_vport_field_select::mtu, 0);
  sel.set(prm::modify_nic_vport_field_select::permanent_address, 1);
  EXPECT_EQ(exec(in, 16).syndrome(), synd::kModNicVportSelect);
}

TEST_F(VportTest, GidTableStartsWithThePortAddress) {
  set_port_host(fw_->context(), 7);
  Reply one = query_gid(0, 1);
  ASSERT_EQ(one.status(), 0);
  EXPECT_EQ(field(one, prm::query_hca_vport_gid_out::gids_num), 1u);
  EXPECT_EQ(gid_at(one, 0), ipv4_mapped_gid(127, 0, 0, 7));
  Reply all = query_gid(0xFFFF, 256);
  ASSERT_EQ(all.status(), 0);
  EXPECT_EQ(field(all, prm::query_hca_vport_gid_out::gids_num), 256u);
  EXPECT_EQ(gid_at(all, 0), ipv4_mapped_gid(127, 0, 0, 7));
  EXPECT_EQ(gid_at(all, 1), Gid{});
  EXPECT_EQ(query_gid(256, 1).status(), st(CmdStatus::IX_ERR));
  Reply short_out = query_gid(0xFFFF, 4);
  EXPECT_EQ(short_out.status(), st(CmdStatus::BAD_OUTP_LEN_ERR));
  EXPECT_EQ(short_out.syndrome(), synd::kGidOutLen);
}

TEST_F(VportTest, PkeyTable) {
  auto pkeys = [&](uint32_t index, uint32_t n) {
    auto in = cmd<prm::query_hca_vport_pkey_in>(Opcode::QUERY_HCA_VPORT_PKEY);
    prm::Ref<prm::query_hca_vport_pkey_in>(in.data()).set(prm::query_hca_vport_pkey_in::pkey_index,
                                                          index);
    return exec(in, 16 + 4 * n);
  };
  auto pkey_at = [](const Reply& r, uint32_t i) {
    return prm::CRef<prm::query_hca_vport_pkey_out>(r.out.data())
        .elem<prm::pkey>(prm::query_hca_vport_pkey_out::pkey, i)
        .get(prm::pkey::value);
  };
  Reply r = pkeys(0, 1);
  ASSERT_EQ(r.status(), 0);
  EXPECT_EQ(pkey_at(r, 0), 0xFFFFu);
  Reply all = pkeys(0xFFFF, 128);
  ASSERT_EQ(all.status(), 0);
  EXPECT_EQ(pkey_at(all, 0), 0xFFFFu);
  EXPECT_EQ(pkey_at(all, 1), 0u);
  EXPECT_EQ(pkeys(128, 1).syndrome(), synd::kPkeyIndex);
  EXPECT_EQ(pkeys(0xFFFF, 2).status(), st(CmdStatus::BAD_OUTP_LEN_ERR));
}

TEST_F(VportTest, RoceAddressTable) {
  Reply r0 = query_roce(0);
  ASSERT_EQ(r0.status(), 0);
  auto a0 = prm::CRef<prm::query_roce_address_out>(r0.out.data())
                .at(prm::query_roce_address_out::roce_address);
  EXPECT_EQ(a0.get(prm::roce_addr_layout::roce_version), prm::roce_version::kV2);
  EXPECT_EQ(a0.get(prm::roce_addr_layout::roce_l3_type), prm::roce_l3_type::kIpv4);
  EXPECT_EQ(a0.get(prm::roce_addr_layout::source_mac_31_0), 0x62760001u);

  Reply unset = query_roce(3);
  ASSERT_EQ(unset.status(), 0);
  EXPECT_TRUE(std::all_of(unset.out.begin() + 16, unset.out.end(),
                          [](std::byte b) { return b == std::byte{0}; }));

  const Gid v6 = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55};
  ASSERT_EQ(
      exec(set_roce_cmd(3, v6, prm::roce_version::kV2, prm::roce_l3_type::kIpv6), 16).status(), 0);
  Reply r3 = query_roce(3);
  auto a3 = prm::CRef<prm::query_roce_address_out>(r3.out.data())
                .at(prm::query_roce_address_out::roce_address);
  auto l3 = a3.bytes(prm::roce_addr_layout::source_l3_address);
  EXPECT_EQ(static_cast<uint8_t>(l3[0]), 0xfe);
  EXPECT_EQ(static_cast<uint8_t>(l3[15]), 0x55);
  EXPECT_EQ(a3.get(prm::roce_addr_layout::source_mac_31_0), 0x22334455u);
  EXPECT_EQ(gid_at(query_gid(3, 1), 0), v6);
  EXPECT_TRUE(tables().roce[3].valid);

  // Refusals.
  Reply v1 = exec(set_roce_cmd(4, v6, prm::roce_version::kV1, prm::roce_l3_type::kIpv6), 16);
  EXPECT_EQ(v1.syndrome(), synd::kSetRoceVersion);
  EXPECT_EQ(exec(set_roce_cmd(4, v6, prm::roce_version::kV2, 5), 16).syndrome(),
            synd::kSetRoceL3Type);
  EXPECT_EQ(
      exec(set_roce_cmd(4, v6, prm::roce_version::kV2, prm::roce_l3_type::kIpv4), 16).syndrome(),
      synd::kSetRoceIpv4Mapped);
  Reply idx = exec(set_roce_cmd(256, v6, prm::roce_version::kV2, 1), 16);
  EXPECT_EQ(idx.status(), st(CmdStatus::IX_ERR));
  EXPECT_EQ(query_roce(256).syndrome(), synd::kQueryRoceIndex);

  // A zero address clears the entry.
  ASSERT_EQ(exec(set_roce_cmd(3, Gid{}, prm::roce_version::kV2, 1), 16).status(), 0);
  EXPECT_FALSE(tables().roce[3].valid);
}

// A model whose port is 127.0.0.9 (object_commands(9)) keeps that identity
// across TEARDOWN_HCA, which drops every object table.
class PortBoundTest : public VportTest {
 protected:
  std::function<void(CommandRegistry&)> registrar() override { return object_commands(9); }
};

TEST_F(PortBoundTest, IdentitySurvivesTeardown) {
  EXPECT_EQ(gid_at(query_gid(0, 1), 0), ipv4_mapped_gid(127, 0, 0, 9));
  ASSERT_EQ(run(Opcode::TEARDOWN_HCA, 0, 16, 16).status(), 0);
  ASSERT_EQ(run(Opcode::INIT_HCA, 0, 32, 16).status(), 0);
  Reply g = query_gid(0, 1);
  ASSERT_EQ(g.status(), 0);
  EXPECT_EQ(gid_at(g, 0), ipv4_mapped_gid(127, 0, 0, 9));
  Reply q = query_roce(0);
  EXPECT_EQ(prm::CRef<prm::query_roce_address_out>(q.out.data())
                .at(prm::query_roce_address_out::roce_address)
                .get(prm::roce_addr_layout::source_mac_31_0),
            0x62760009u);
  EXPECT_FALSE(tables().port.roce_en);  // vport state is not identity: back to default
}

TEST(ObjectCommands, BoundRegistrarCoversEveryCommand) {
  CommandRegistry plain, bound;
  register_object_commands(plain);
  object_commands(3)(bound);
  EXPECT_EQ(bound.size(), plain.size());
  EXPECT_GE(plain.size(), 37u);
  EXPECT_NE(bound.find(prm::to_u16(Opcode::CREATE_QP)), nullptr);
}

}  // namespace
}  // namespace kbv::sim::fw::objtest
