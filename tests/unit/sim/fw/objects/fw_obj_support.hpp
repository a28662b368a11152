// SPDX-License-Identifier: BSD-3-Clause
//
// Test support for the model firmware's object commands (src/sim/fw/objects):
// a started firmware with register_object_commands, brought up to INIT_HCA
// with a UAR, an EQ and RoCE enabled, and builders for the object commands
// (every field written with the prm tables, as a driver would). Commands go
// through the register-level test driver of fw_test_support.hpp.
//
// Threading: test thread only (the firmware thread runs the commands).
#pragma once

#include "../fw_test_support.hpp"

#include "hca/prm/cq.hpp"
#include "hca/prm/eq.hpp"
#include "hca/prm/mcg.hpp"
#include "hca/prm/mkey.hpp"
#include "hca/prm/pd.hpp"
#include "hca/prm/qp_cmd.hpp"
#include "hca/prm/srq.hpp"
#include "hca/prm/uar.hpp"
#include "hca/prm/vport.hpp"
#include "sim/fw/objects/objects.hpp"
#include "sim/fw/objects/tables.hpp"
#include "sim/fw/syndromes.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace kbv::sim::fw::objtest {

using prm::CmdStatus;
using prm::Opcode;
using test::make_cmd;
using test::Reply;

inline uint8_t st(CmdStatus s) { return static_cast<uint8_t>(s); }

// Builds the command input of layout L (fixed part + `tail` bytes).
template <class L>
std::vector<std::byte> cmd(Opcode op, uint16_t op_mod = 0, std::size_t tail = 0) {
  return make_cmd(op, op_mod, L::kBits / 8 + tail);
}

template <class L>
uint32_t field(const Reply& r, prm::Field<L> f) {
  return static_cast<uint32_t>(prm::CRef<L>(r.out.data()).get(f));
}

class ObjFixture : public test::FwFixture {
 protected:
  void SetUp() override {
    FwConfig cfg = test::test_config();
    cfg.boot_pages = 4;
    cfg.init_pages = 6;
    cfg.registrars.push_back(registrar());
    fw_ = std::make_unique<Firmware>(pci_, cfg);
    ASSERT_TRUE(fw_->start().is_ok());
    host_ = std::make_unique<test::TestHost>(pci_);
    bring_up();
    Reply a = run(Opcode::ALLOC_UAR, 0, 16, 16);
    ASSERT_EQ(a.status(), 0);
    uar_ = field(a, prm::alloc_uar_out::uar);
    eqn_ = create_eq();
    ASSERT_EQ(set_roce_en(true).status(), 0);
  }

  // The object-command registrar the firmware is built with.
  virtual std::function<void(CommandRegistry&)> registrar() { return register_object_commands; }

  ObjectTables& tables() { return objects(fw_->context()); }

  Reply exec(const std::vector<std::byte>& in, uint32_t outlen) { return host_->exec(in, outlen); }

  uint32_t create_eq() {
    const uint64_t buf = host_->dma().alloc(4096);
    auto in = cmd<prm::create_eq_in>(Opcode::CREATE_EQ, 0, 8);
    prm::Ref<prm::create_eq_in> c(in.data());
    auto ec = c.at(prm::create_eq_in::eq_context_entry);
    ec.set(prm::eqc::log_eq_size, 6);
    ec.set(prm::eqc::uar_page, uar_);
    c.set(prm::create_eq_in::pas, 0, buf);
    Reply r = exec(in, 16);
    EXPECT_EQ(r.status(), 0);
    return field(r, prm::create_eq_out::eq_number);
  }

  Reply set_roce_en(bool on) {
    auto in = cmd<prm::modify_nic_vport_context_in>(Opcode::MODIFY_NIC_VPORT_CONTEXT);
    prm::Ref<prm::modify_nic_vport_context_in> m(in.data());
    m.at(prm::modify_nic_vport_context_in::field_select)
        .set(prm::modify_nic_vport_field_select::roce_en, 1);
    m.at(prm::modify_nic_vport_context_in::nic_vport_context)
        .set(prm::nic_vport_context::roce_en, on);
    return exec(in, 16);
  }

  // ---- PD ----
  uint32_t alloc_pd() {
    Reply r = run(Opcode::ALLOC_PD, 0, 16, 16);
    EXPECT_EQ(r.status(), 0);
    return field(r, prm::alloc_pd_out::pd);
  }
  Reply dealloc_pd(uint32_t pd) {
    auto in = cmd<prm::dealloc_pd_in>(Opcode::DEALLOC_PD);
    prm::Ref<prm::dealloc_pd_in>(in.data()).set(prm::dealloc_pd_in::pd, pd);
    return exec(in, 16);
  }

  // ---- CQ ----
  // CREATE_CQ of 1 << log_size CQEs in 4 KiB pages.
  std::vector<std::byte> cq_cmd(uint32_t log_size) {
    const uint64_t bytes = uint64_t{64} << log_size;
    const uint32_t npages = static_cast<uint32_t>((bytes + 4095) / 4096);
    auto in = cmd<prm::create_cq_in>(Opcode::CREATE_CQ, 0, 8 * npages);
    prm::Ref<prm::create_cq_in> c(in.data());
    auto x = c.at(prm::create_cq_in::cq_context);
    x.set(prm::cqc::log_cq_size, log_size);
    x.set(prm::cqc::uar_page, uar_);
    x.set(prm::cqc::c_eqn, eqn_);
    x.set(prm::cqc::dbr_addr, host_->dma().alloc(64, 64));
    const uint64_t buf = host_->dma().alloc(npages * 4096);
    for (uint32_t i = 0; i < npages; ++i) c.set(prm::create_cq_in::pas, i, buf + 4096 * i);
    return in;
  }
  uint32_t create_cq(uint32_t log_size = 4) {
    Reply r = exec(cq_cmd(log_size), 16);
    EXPECT_EQ(r.status(), 0);
    return field(r, prm::create_cq_out::cqn);
  }
  Reply destroy_cq(uint32_t cqn) {
    auto in = cmd<prm::destroy_cq_in>(Opcode::DESTROY_CQ);
    prm::Ref<prm::destroy_cq_in>(in.data()).set(prm::destroy_cq_in::cqn, cqn);
    return exec(in, 16);
  }

  // ---- SRQ ----
  std::vector<std::byte> srq_cmd(uint32_t pd, uint32_t log_size = 4, uint32_t cqn = 0) {
    const uint64_t bytes = uint64_t{64} << log_size;  // stride 2: 64-byte WQEs
    const uint32_t npages = static_cast<uint32_t>((bytes + 4095) / 4096);
    auto in = cmd<prm::create_srq_in>(Opcode::CREATE_SRQ, 0, 8 * npages);
    prm::Ref<prm::create_srq_in> c(in.data());
    auto x = c.at(prm::create_srq_in::srq_context_entry);
    x.set(prm::srqc::log_srq_size, log_size);
    x.set(prm::srqc::log_rq_stride, 2);
    x.set(prm::srqc::pd, pd);
    x.set(prm::srqc::cqn, cqn);
    x.set(prm::srqc::dbr_addr, host_->dma().alloc(64, 64));
    const uint64_t buf = host_->dma().alloc(npages * 4096);
    for (uint32_t i = 0; i < npages; ++i) c.set(prm::create_srq_in::pas, i, buf + 4096 * i);
    return in;
  }
  uint32_t create_srq(uint32_t pd, uint32_t log_size = 4, uint32_t cqn = 0) {
    Reply r = exec(srq_cmd(pd, log_size, cqn), 16);
    EXPECT_EQ(r.status(), 0);
    return field(r, prm::create_srq_out::srqn);
  }

  // ---- QP ----
  struct QpSpec {
    uint32_t st = prm::qpc_st::kRc;
    uint32_t pd = 0, scq = 0, rcq = 0;
    uint32_t log_sq = 4;  // 16 basic blocks = 1 KiB
    uint32_t log_rq = 4;  // 16 WQEs of 64 bytes (stride 2) = 1 KiB
    uint32_t rq_type = prm::qpc_rq_type::kNonZeroRq;
    uint32_t srqn = 0;
  };
  std::vector<std::byte> qp_cmd(const QpSpec& s) {
    const uint64_t rq = s.rq_type == prm::qpc_rq_type::kNonZeroRq ? uint64_t{64} << s.log_rq : 0;
    const uint64_t bytes = rq + (uint64_t{64} << s.log_sq);
    const uint32_t npages = static_cast<uint32_t>((bytes + 4095) / 4096);
    auto in = cmd<prm::create_qp_in>(Opcode::CREATE_QP, 0, 8 * npages);
    prm::Ref<prm::create_qp_in> c(in.data());
    auto x = c.at(prm::create_qp_in::qpc);
    x.set(prm::qpc::st, s.st);
    x.set(prm::qpc::pm_state, prm::qpc_pm_state::kMigrated);
    x.set(prm::qpc::pd, s.pd);
    x.set(prm::qpc::cqn_snd, s.scq);
    x.set(prm::qpc::cqn_rcv, s.rcq);
    x.set(prm::qpc::log_sq_size, s.log_sq);
    x.set(prm::qpc::log_rq_size, s.log_rq);
    x.set(prm::qpc::log_rq_stride, 2);
    x.set(prm::qpc::rq_type, s.rq_type);
    x.set(prm::qpc::srqn_rmpn_xrqn, s.srqn);
    x.set(prm::qpc::uar_page, uar_);
    x.set(prm::qpc::log_msg_max, 30);
    x.set(prm::qpc::dbr_addr, host_->dma().alloc(64, 64));
    const uint64_t buf = host_->dma().alloc(npages * 4096);
    for (uint32_t i = 0; i < npages; ++i) c.set(prm::create_qp_in::pas, i, buf + 4096 * i);
    return in;
  }
  // A QP of service type st on a fresh PD and CQ.
  QpSpec spec(uint32_t st = prm::qpc_st::kRc) {
    QpSpec s;
    s.st = st;
    s.pd = alloc_pd();
    s.scq = s.rcq = create_cq();
    return s;
  }
  uint32_t create_qp(const QpSpec& s) {
    Reply r = exec(qp_cmd(s), 16);
    EXPECT_EQ(r.status(), 0) << std::hex << r.syndrome();
    return field(r, prm::create_qp_out::qpn);
  }
  Reply destroy_qp(uint32_t qpn) {
    auto in = cmd<prm::destroy_qp_in>(Opcode::DESTROY_QP);
    prm::Ref<prm::destroy_qp_in>(in.data()).set(prm::destroy_qp_in::qpn, qpn);
    return exec(in, 16);
  }
  Reply query_qp(uint32_t qpn, uint32_t npas = 1) {
    auto in = cmd<prm::query_qp_in>(Opcode::QUERY_QP);
    prm::Ref<prm::query_qp_in>(in.data()).set(prm::query_qp_in::qpn, qpn);
    return exec(in, prm::query_qp_out::kBits / 8 + 8 * npas);
  }
  uint32_t qp_state(uint32_t qpn) {
    Reply r = query_qp(qpn);
    EXPECT_EQ(r.status(), 0);
    return static_cast<uint32_t>(
        prm::CRef<prm::query_qp_out>(r.out.data()).at(prm::query_qp_out::qpc).get(prm::qpc::state));
  }

  // A transition command for qpn with valid attributes for every transition
  // (RoCE path to ::ffff:127.0.0.2 from GID 0); tests change fields in it.
  std::vector<std::byte> modify_cmd(Opcode op, uint32_t qpn, uint32_t opt_mask = 0) {
    const bool short_form = op == Opcode::TO_ERR_QP || op == Opcode::TO_RST_QP;
    auto in = short_form ? cmd<prm::qp_2rst_in>(op) : cmd<prm::rst2init_qp_in>(op);
    prm::Ref<prm::qp_2rst_in>(in.data()).set(prm::qp_2rst_in::qpn, qpn);
    if (short_form) return in;
    prm::Ref<prm::rst2init_qp_in> c(in.data());
    c.set(prm::rst2init_qp_in::opt_param_mask, opt_mask);
    auto x = c.at(prm::rst2init_qp_in::qpc);
    auto p = x.at(prm::qpc::primary_address_path);
    p.set(prm::ads::vhca_port_num, 1);
    p.set(prm::ads::grh, 1);
    p.set(prm::ads::src_addr_index, 0);
    const Gid dst = ipv4_mapped_gid(127, 0, 0, 2);
    p.set_bytes(prm::ads::rgid_rip, std::as_bytes(std::span(dst)));
    p.set(prm::ads::rmac_47_32, 0x026b);
    p.set(prm::ads::rmac_31_0, 0x62760002);
    p.set(prm::ads::udp_sport, 0xC123);
    p.set(prm::ads::hop_limit, 64);
    p.set(prm::ads::tclass, 0x68);
    p.set(prm::ads::ack_timeout, 14);
    x.set(prm::qpc::mtu, prm::qpc_mtu::k1kBytes);
    x.set(prm::qpc::log_msg_max, 30);
    x.set(prm::qpc::remote_qpn, 0x123);
    x.set(prm::qpc::next_rcv_psn, 0x111);
    x.set(prm::qpc::next_send_psn, 0x222);
    x.set(prm::qpc::retry_count, 7);
    x.set(prm::qpc::rnr_retry, 7);
    x.set(prm::qpc::min_rnr_nak, 12);
    x.set(prm::qpc::log_rra_max, 2);
    x.set(prm::qpc::log_sra_max, 2);
    x.set(prm::qpc::q_key, 0x11111111);
    return in;
  }
  Reply modify(Opcode op, uint32_t qpn, uint32_t opt_mask = 0) {
    return exec(modify_cmd(op, qpn, opt_mask), 16);
  }
  // RST -> INIT -> RTR -> RTS.
  void to_rts(uint32_t qpn) {
    ASSERT_EQ(modify(Opcode::RST2INIT_QP, qpn).status(), 0);
    ASSERT_EQ(modify(Opcode::INIT2RTR_QP, qpn).status(), 0);
    ASSERT_EQ(modify(Opcode::RTR2RTS_QP, qpn).status(), 0);
  }

  uint32_t uar_ = 0;
  uint32_t eqn_ = 0;
};

}  // namespace kbv::sim::fw::objtest
