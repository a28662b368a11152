// SPDX-License-Identifier: BSD-3-Clause
// The bring-up commands of the model firmware in the PRM order (docs/PRM.md
// "Bring-up order"), and their refusals.
#include "fw_test_support.hpp"
#include "hca/prm/boot.hpp"
#include "hca/prm/hca_cap.hpp"
#include "hca/prm/opcodes.hpp"
#include "hca/prm/uar.hpp"
#include "sim/fw/firmware.hpp"
#include "sim/fw/syndromes.hpp"

#include <gtest/gtest.h>

namespace kbv::sim::fw {
namespace {

using prm::CmdStatus;
using prm::Opcode;
using test::make_cmd;

uint8_t st(CmdStatus s) { return static_cast<uint8_t>(s); }
using test::u16;

using FwBringup = test::FwFixture;

TEST_F(FwBringup, PrmOrderSucceedsAndTeardownReturnsPages) {
  bring_up();
  EXPECT_EQ(fw_->context().pages().held(), 10u);
  EXPECT_EQ(query_pages(prm::QueryPagesOpMod::REGULAR_PAGES), 0);
  // While initialized the firmware keeps the pages it needs.
  auto take = make_cmd(Opcode::MANAGE_PAGES, u16(prm::ManagePagesOpMod::HCA_RETURN_PAGES));
  prm::Ref<prm::manage_pages_in>(take.data()).set(prm::manage_pages_in::input_num_entries, 16);
  test::Reply t = host_->exec(take, 16 + 16 * 8);
  ASSERT_EQ(t.status(), 0);
  EXPECT_EQ(
      prm::CRef<prm::manage_pages_out>(t.out.data()).get(prm::manage_pages_out::output_num_entries),
      0u);

  ASSERT_EQ(run(Opcode::TEARDOWN_HCA, 0, 16, 16).status(), 0);
  t = host_->exec(take, 16 + 16 * 8);
  ASSERT_EQ(t.status(), 0);
  prm::CRef<prm::manage_pages_out> o(t.out.data());
  ASSERT_EQ(o.get(prm::manage_pages_out::output_num_entries), 10u);
  for (uint32_t i = 0; i < 10; ++i) {
    const uint64_t p = o.get(prm::manage_pages_out::pas, i);
    EXPECT_EQ(p % 4096, 0u);
    EXPECT_GE(p, test::DmaArena::kIovaBase);
  }
  EXPECT_EQ(fw_->context().pages().held(), 0u);
  EXPECT_EQ(run(Opcode::DISABLE_HCA, 0, 16, 12).status(), 0);
  EXPECT_FALSE(fw_->context().hca().enabled);
}

TEST_F(FwBringup, InitHcaBeforePagesIsBadSysState) {
  ASSERT_EQ(run(Opcode::ENABLE_HCA, 0, 16, 12).status(), 0);
  test::Reply r = run(Opcode::INIT_HCA, 0, 32, 16);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_SYS_STATE_ERR));
  EXPECT_EQ(r.syndrome(), synd::kInitNoBootPages);
  ASSERT_EQ(give(fresh_pages(4)).status(), 0);
  r = run(Opcode::INIT_HCA, 0, 32, 16);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_SYS_STATE_ERR));
  EXPECT_EQ(r.syndrome(), synd::kInitNoInitPages);
  ASSERT_EQ(give(fresh_pages(6)).status(), 0);
  EXPECT_EQ(run(Opcode::INIT_HCA, 0, 32, 16).status(), 0);
  // A second INIT_HCA is refused.
  EXPECT_EQ(run(Opcode::INIT_HCA, 0, 32, 16).syndrome(), synd::kInitTwice);
}

TEST_F(FwBringup, ManagePagesRefusesUnmappedMisalignedDuplicate) {
  ASSERT_EQ(run(Opcode::ENABLE_HCA, 0, 16, 12).status(), 0);
  test::Reply r = give({0x7000000000ull});
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_PARAM_ERR));
  EXPECT_EQ(r.syndrome(), synd::kPageNotMapped);
  const uint64_t p = host_->dma().alloc(8192);
  r = give({p + 512});
  EXPECT_EQ(r.syndrome(), synd::kPageMisaligned);
  r = give({p, p});
  EXPECT_EQ(r.syndrome(), synd::kPageDuplicate);
  EXPECT_EQ(fw_->context().pages().held(), 0u);  // all or nothing
  ASSERT_EQ(give({p}).status(), 0);
  EXPECT_EQ(give({p}).syndrome(), synd::kPageDuplicate);
  // A pas[] count beyond inlen.
  auto in = make_cmd(Opcode::MANAGE_PAGES, 1, 16 + 8);
  prm::Ref<prm::manage_pages_in>(in.data()).set(prm::manage_pages_in::input_num_entries, 3);
  r = host_->exec(in, 16);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_INP_LEN_ERR));
  EXPECT_EQ(r.syndrome(), synd::kPasTooShort);
}

TEST_F(FwBringup, IssiAndEnableChecks) {
  ASSERT_EQ(run(Opcode::ENABLE_HCA, 0, 16, 12).status(), 0);
  EXPECT_EQ(run(Opcode::ENABLE_HCA, 0, 16, 12).syndrome(), synd::kEnableTwice);
  auto si = make_cmd(Opcode::SET_ISSI);
  prm::Ref<prm::set_issi_in>(si.data()).set(prm::set_issi_in::current_issi, 2);
  test::Reply r = host_->exec(si, 16);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_PARAM_ERR));
  EXPECT_EQ(r.syndrome(), synd::kIssiUnsupported);
  auto en = make_cmd(Opcode::ENABLE_HCA);
  prm::Ref<prm::enable_hca_in>(en.data()).set(prm::enable_hca_in::function_id, 3);
  EXPECT_EQ(host_->exec(en, 12).syndrome(), synd::kEnableFunctionId);
}

TEST_F(FwBringup, AccessRegHostEndiannessReadBackAndOtherRegisters) {
  ASSERT_EQ(run(Opcode::ENABLE_HCA, 0, 16, 12).status(), 0);
  auto w = make_cmd(Opcode::ACCESS_REG, u16(prm::AccessRegOpMod::WRITE), 32);
  prm::Ref<prm::access_register_in>(w.data()).set(prm::access_register_in::register_id,
                                                  u16(prm::RegId::HOST_ENDIANNESS));
  prm::Ref<prm::register_host_endianness>(w.data() + 16).set(prm::register_host_endianness::he, 1);
  ASSERT_EQ(host_->exec(w, 32).status(), 0);
  auto rd = make_cmd(Opcode::ACCESS_REG, u16(prm::AccessRegOpMod::READ), 32);
  prm::Ref<prm::access_register_in>(rd.data()).set(prm::access_register_in::register_id,
                                                   u16(prm::RegId::HOST_ENDIANNESS));
  test::Reply r = host_->exec(rd, 32);
  ASSERT_EQ(r.status(), 0);
  EXPECT_EQ(prm::CRef<prm::register_host_endianness>(r.out.data() + 16)
                .get(prm::register_host_endianness::he),
            1u);
  prm::Ref<prm::access_register_in>(rd.data()).set(prm::access_register_in::register_id,
                                                   u16(prm::RegId::PTYS));
  r = host_->exec(rd, 32);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_PARAM_ERR));
  EXPECT_EQ(r.syndrome(), synd::kRegUnsupported);
}

TEST_F(FwBringup, CapsMaxCurrentRoceAndSetLimits) {
  ASSERT_EQ(run(Opcode::ENABLE_HCA, 0, 16, 12).status(), 0);
  test::Reply mx = run(Opcode::QUERY_HCA_CAP,
                       prm::hca_cap_op_mod(prm::CapType::GENERAL, prm::CapMode::MAX), 16, 4112);
  ASSERT_EQ(mx.status(), 0);
  prm::CRef<prm::cmd_hca_cap> m(mx.out.data() + 16);
  EXPECT_EQ(m.get(prm::cmd_hca_cap::port_type), 1u);  // Ethernet
  EXPECT_EQ(m.get(prm::cmd_hca_cap::cmdif_checksum), 3u);
  EXPECT_GT(m.get(prm::cmd_hca_cap::log_max_qp), 0u);
  test::Reply roce = run(Opcode::QUERY_HCA_CAP,
                         prm::hca_cap_op_mod(prm::CapType::ROCE, prm::CapMode::CUR), 16, 4112);
  ASSERT_EQ(roce.status(), 0);
  prm::CRef<prm::roce_cap> rc(roce.out.data() + 16);
  EXPECT_EQ(rc.get(prm::roce_cap::r_roce_dest_udp_port), 4791u);
  EXPECT_EQ(rc.get(prm::roce_cap::roce_version) & prm::kRoceVersion2Cap, prm::kRoceVersion2Cap);
  // An unsupported cap type.
  test::Reply odp = run(Opcode::QUERY_HCA_CAP,
                        prm::hca_cap_op_mod(prm::CapType::ODP, prm::CapMode::CUR), 16, 4112);
  EXPECT_EQ(odp.status(), st(CmdStatus::BAD_PARAM_ERR));
  // SET above max is refused and changes nothing.
  auto set = make_cmd(Opcode::SET_HCA_CAP, prm::set_hca_cap_op_mod(prm::CapType::GENERAL), 4112);
  std::memcpy(set.data() + 16, mx.out.data() + 16, 4096);
  prm::Ref<prm::cmd_hca_cap>(set.data() + 16)
      .set(prm::cmd_hca_cap::log_max_qp, m.get(prm::cmd_hca_cap::log_max_qp) + 1);
  test::Reply r = host_->exec(set, 16);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_PARAM_ERR));
  EXPECT_EQ(r.syndrome(), synd::kSetCapAboveMax);
}

TEST_F(FwBringup, UarAllocBoundsAndDealloc) {
  bring_up();
  test::Reply a = run(Opcode::ALLOC_UAR, 0, 16, 16);
  ASSERT_EQ(a.status(), 0);
  const uint32_t uar = static_cast<uint32_t>(
      prm::CRef<prm::alloc_uar_out>(a.out.data()).get(prm::alloc_uar_out::uar));
  EXPECT_GE(uar, 2u);  // pages 0 and 1 are the init segment
  auto d = make_cmd(Opcode::DEALLOC_UAR);
  prm::Ref<prm::dealloc_uar_in>(d.data()).set(prm::dealloc_uar_in::uar, uar);
  EXPECT_EQ(host_->exec(d, 16).status(), 0);
  test::Reply again = host_->exec(d, 16);
  EXPECT_EQ(again.status(), st(CmdStatus::BAD_RES_ERR));
  EXPECT_EQ(again.syndrome(), synd::kUarNotAllocated);
  prm::Ref<prm::dealloc_uar_in>(d.data()).set(prm::dealloc_uar_in::uar, 0xFFFFF);
  test::Reply oob = host_->exec(d, 16);
  EXPECT_EQ(oob.status(), st(CmdStatus::IX_ERR));
  EXPECT_EQ(oob.syndrome(), synd::kUarOutOfRange);
}

TEST_F(FwBringup, UarBeforeInitIsBadSysState) {
  ASSERT_EQ(run(Opcode::ENABLE_HCA, 0, 16, 12).status(), 0);
  test::Reply r = run(Opcode::ALLOC_UAR, 0, 16, 16);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_SYS_STATE_ERR));
  EXPECT_EQ(r.syndrome(), synd::kNotInitialized);
}

TEST_F(FwBringup, SetCapAfterInitIsBadSysState) {
  bring_up();
  auto set = make_cmd(Opcode::SET_HCA_CAP, prm::set_hca_cap_op_mod(prm::CapType::GENERAL), 4112);
  test::Reply r = host_->exec(set, 16);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_SYS_STATE_ERR));
  EXPECT_EQ(r.syndrome(), synd::kSetCapAfterInit);
}

}  // namespace
}  // namespace kbv::sim::fw
