// SPDX-License-Identifier: BSD-3-Clause
// The model firmware's command transport and engine, driven at register level.
#include "sim/fw/cmdq.hpp"
#include "fw_test_support.hpp"
#include "hca/prm/boot.hpp"
#include "hca/prm/opcodes.hpp"
#include "sim/fw/firmware.hpp"
#include "sim/fw/syndromes.hpp"

#include <gtest/gtest.h>

namespace kbv::sim::fw {
namespace {

using prm::CmdStatus;
using prm::DeliveryStatus;
using prm::Opcode;
using test::make_cmd;

uint8_t st(CmdStatus s) { return static_cast<uint8_t>(s); }
uint8_t dl(DeliveryStatus s) { return static_cast<uint8_t>(s); }

class FwCmdq : public ::testing::Test {
 protected:
  void SetUp() override { start(test::test_config()); }
  void start(FwConfig cfg) {
    fw_ = std::make_unique<Firmware>(pci_, std::move(cfg));
    ASSERT_TRUE(fw_->start().is_ok());
    host_ = std::make_unique<test::TestHost>(pci_);
  }
  test::Reply enable() { return host_->exec(make_cmd(Opcode::ENABLE_HCA), 16); }

  test::TestPci pci_;
  std::unique_ptr<Firmware> fw_;
  std::unique_ptr<test::TestHost> host_;
};

TEST_F(FwCmdq, NopCompletesInline) {
  test::Reply r = host_->exec(make_cmd(Opcode::NOP), 16);
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.delivery, 0);
  EXPECT_EQ(r.status(), 0);
  EXPECT_EQ(r.syndrome(), 0u);
  EXPECT_EQ(fw_->stats().commands, 1u);
}

TEST_F(FwCmdq, QueueAddressLowRegisterKeepsGeometry) {
  const uint32_t l = pci_.read32(prm::init_seg::kCmdqAddrLSzOff);
  ASSERT_TRUE(host_->exec(make_cmd(Opcode::NOP), 16).done);  // the address is latched by now
  const uint32_t after = pci_.read32(prm::init_seg::kCmdqAddrLSzOff);
  EXPECT_EQ(after & 0xFF, 5u << 4 | 6u);
  EXPECT_EQ(after & ~0xFFFu, static_cast<uint32_t>(host_->cmdq()));
  (void)l;
}

TEST_F(FwCmdq, UnknownOpcodeIsBadOp) {
  test::Reply r = host_->exec(make_cmd(0x7FF, 0), 16);
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.delivery, 0);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_OP_ERR));
  EXPECT_EQ(r.syndrome(), synd::kUnknownOpcode);
}

TEST_F(FwCmdq, ShortInputAndOutputLengths) {
  ASSERT_EQ(enable().status(), 0);
  // QUERY_ISSI needs 112 output bytes (query_issi_out).
  test::Reply r = host_->exec(make_cmd(Opcode::QUERY_ISSI), 16);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_OUTP_LEN_ERR));
  EXPECT_EQ(r.syndrome(), synd::kOutputTooShort);
  // MANAGE_PAGES needs 16 input bytes; 12 given.
  host_->prepare(0, make_cmd(Opcode::MANAGE_PAGES, 1), 16);
  prm::Ref<prm::cmd_layout>(host_->entry(0)).set(prm::cmd_layout::inlen, 12);
  host_->ring(1);
  r = host_->wait(0);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_INP_LEN_ERR));
  EXPECT_EQ(r.syndrome(), synd::kInputTooShort);
}

TEST_F(FwCmdq, BadOpModIsBadParam) {
  ASSERT_EQ(enable().status(), 0);
  test::Reply r = host_->exec(make_cmd(Opcode::QUERY_PAGES, 7), 16);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_PARAM_ERR));
  EXPECT_EQ(r.syndrome(), synd::kBadOpMod);
}

TEST_F(FwCmdq, CommandsBeforeEnableAreBadSysState) {
  test::Reply r = host_->exec(make_cmd(Opcode::QUERY_ISSI), 112);
  EXPECT_EQ(r.status(), st(CmdStatus::BAD_SYS_STATE_ERR));
  EXPECT_EQ(r.syndrome(), synd::kNotEnabled);
}

TEST_F(FwCmdq, MailboxChainedInputAndOutput) {
  ASSERT_EQ(enable().status(), 0);
  // SET_HCA_CAP: 16 + 4096 input bytes (8 blocks); QUERY_HCA_CAP: 4112 output bytes.
  auto q = make_cmd(Opcode::QUERY_HCA_CAP,
                    prm::hca_cap_op_mod(prm::CapType::GENERAL, prm::CapMode::CUR));
  test::Reply cur = host_->exec(q, 16 + 4096);
  ASSERT_EQ(cur.status(), 0);
  ASSERT_EQ(host_->out_blocks(0).size(), 8u);
  prm::CRef<prm::cmd_hca_cap> caps(cur.out.data() + 16);
  EXPECT_EQ(caps.get(prm::cmd_hca_cap::num_ports), 1u);
  EXPECT_EQ(caps.get(prm::cmd_hca_cap::roce), 1u);
  // Send it back with log_max_qp lowered; the value lives in block 0 data.
  auto s = make_cmd(Opcode::SET_HCA_CAP, prm::set_hca_cap_op_mod(prm::CapType::GENERAL), 16 + 4096);
  std::memcpy(s.data() + 16, cur.out.data() + 16, 4096);
  prm::Ref<prm::cmd_hca_cap>(s.data() + 16).set(prm::cmd_hca_cap::log_max_qp, 12);
  ASSERT_EQ(host_->exec(s, 16, 1).status(), 0);
  EXPECT_EQ(host_->in_blocks(1).size(), 8u);
  test::Reply again = host_->exec(q, 16 + 4096, 2);
  ASSERT_EQ(again.status(), 0);
  EXPECT_EQ(prm::CRef<prm::cmd_hca_cap>(again.out.data() + 16).get(prm::cmd_hca_cap::log_max_qp),
            12u);
}

TEST_F(FwCmdq, BadTypeIsDeliveryError) {
  host_->prepare(3, make_cmd(Opcode::NOP), 16);
  prm::Ref<prm::cmd_layout>(host_->entry(3)).set(prm::cmd_layout::type, 5);
  host_->ring(1u << 3);
  test::Reply r = host_->wait(3);
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.delivery, dl(DeliveryStatus::CMD_DESCR_ERR));
  EXPECT_EQ(fw_->stats().delivery_errors, 1u);
  EXPECT_EQ(fw_->stats().commands, 0u);
}

std::vector<std::byte> big_nop() { return make_cmd(Opcode::NOP, 0, 16 + 600); }  // 2 blocks

TEST_F(FwCmdq, BadTokenInMailbox) {
  host_->prepare(0, big_nop(), 16);
  prm::Ref<prm::cmd_prot_block>(host_->dma().host(host_->in_blocks(0)[1]))
      .set(prm::cmd_prot_block::token, 0x11);
  host_->ring(1);
  EXPECT_EQ(host_->wait(0).delivery, dl(DeliveryStatus::TOK_ERR));
}

TEST_F(FwCmdq, BadBlockNumber) {
  host_->prepare(0, big_nop(), 16);
  prm::Ref<prm::cmd_prot_block>(host_->dma().host(host_->in_blocks(0)[1]))
      .set(prm::cmd_prot_block::block_num, 2);
  host_->ring(1);
  EXPECT_EQ(host_->wait(0).delivery, dl(DeliveryStatus::BAD_BLK_NUM_ERR));
}

TEST_F(FwCmdq, MisalignedPointers) {
  host_->prepare(0, big_nop(), 16);
  prm::Ref<prm::cmd_layout> e(host_->entry(0));
  e.set(prm::cmd_layout::in_ptr, e.get(prm::cmd_layout::in_ptr) + 0x100);  // not 512-B aligned
  host_->ring(1);
  EXPECT_EQ(host_->wait(0).delivery, dl(DeliveryStatus::IN_PTR_ALIGN_ERR));

  host_->prepare(1, make_cmd(Opcode::NOP), 16 + 600);
  prm::Ref<prm::cmd_layout> e1(host_->entry(1));
  e1.set(prm::cmd_layout::out_ptr, e1.get(prm::cmd_layout::out_ptr) + 8);
  host_->ring(1u << 1);
  EXPECT_EQ(host_->wait(1).delivery, dl(DeliveryStatus::OUT_PTR_ALIGN_ERR));

  // A next pointer must be 1 KiB aligned (512 is not enough).
  host_->prepare(2, big_nop(), 16);
  prm::Ref<prm::cmd_prot_block> b0(host_->dma().host(host_->in_blocks(2)[0]));
  b0.set(prm::cmd_prot_block::next, b0.get(prm::cmd_prot_block::next) + 512);
  host_->ring(1u << 2);
  EXPECT_EQ(host_->wait(2).delivery, dl(DeliveryStatus::IN_PTR_ALIGN_ERR));
}

TEST_F(FwCmdq, UnmappedMailboxIsDeliveryErrorNotCrash) {
  host_->prepare(0, big_nop(), 16);
  prm::Ref<prm::cmd_layout>(host_->entry(0)).set(prm::cmd_layout::in_ptr, 0x7000000000ull);
  const uint64_t faults = pci_.test_iommu().fault_count();
  host_->ring(1);
  test::Reply r = host_->wait(0);
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.delivery, dl(DeliveryStatus::FW_ERR));
  EXPECT_GT(pci_.test_iommu().fault_count(), faults);
  // The firmware still serves commands.
  EXPECT_EQ(host_->exec(make_cmd(Opcode::NOP), 16, 1).status(), 0);
}

TEST_F(FwCmdq, InputLengthBelowHeaderIsDeliveryError) {
  host_->prepare(0, make_cmd(Opcode::NOP), 16);
  prm::Ref<prm::cmd_layout>(host_->entry(0)).set(prm::cmd_layout::inlen, 4);
  host_->ring(1);
  EXPECT_EQ(host_->wait(0).delivery, dl(DeliveryStatus::IN_LENGTH_ERR));
}

TEST_F(FwCmdq, SignaturesCheckedOnlyWithChecksum) {
  // Off by default: a garbage signature is fine.
  host_->prepare(0, big_nop(), 16);
  prm::Ref<prm::cmd_layout>(host_->entry(0)).set(prm::cmd_layout::sig, 0x42);
  host_->ring(1);
  EXPECT_EQ(host_->wait(0).delivery, 0);
}

TEST(FwCmdqChecksum, BadSignatureRefusedGoodAccepted) {
  test::TestPci pci;
  FwConfig cfg = test::test_config();
  cfg.cmdif_checksum = true;
  Firmware fw(pci, cfg);
  ASSERT_TRUE(fw.start().is_ok());
  test::TestHost host(pci);
  // Unsigned entry: refused.
  host.prepare(0, make_cmd(Opcode::NOP), 16);
  host.ring(1);
  EXPECT_EQ(host.wait(0).delivery, dl(DeliveryStatus::SIGNAT_ERR));
  // Signed entry and blocks (the kernel's rules): accepted, and the completed
  // entry and output blocks verify.
  host.prepare(1, make_cmd(Opcode::NOP, 0, 16 + 600), 16 + 600);
  for (uint64_t b : host.in_blocks(1)) {
    std::byte* p = host.dma().host(b);
    p[0x23E] = std::byte{static_cast<uint8_t>(~xor8(std::span(p + 0x200, 0x3E)))};
    p[0x23F] = std::byte{static_cast<uint8_t>(~xor8(std::span(p, 0x23F)))};
  }
  std::byte* e = host.entry(1);
  e[0x3D] = std::byte{0};
  e[0x3D] = std::byte{static_cast<uint8_t>(~xor8(std::span(e, 64)))};
  host.ring(1u << 1);
  test::Reply r = host.wait(1);
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.delivery, 0);
  EXPECT_EQ(r.status(), 0);
  EXPECT_EQ(xor8(std::span(host.entry(1), 64)), 0xFF);
  for (uint64_t b : host.out_blocks(1)) {
    std::byte* p = host.dma().host(b);
    EXPECT_EQ(xor8(std::span(p, 576)), 0xFF);
    EXPECT_EQ(xor8(std::span(p + 0x200, 0x3F)), 0xFF);
  }
}

TEST_F(FwCmdq, ManyCommandsInFlightAcrossAllSlots) {
  fw_->set_latency(std::chrono::microseconds(200));
  fw_->set_max_concurrent(4);
  uint32_t mask = 0;
  for (unsigned s = 0; s < 32; ++s) {
    host_->prepare(s, make_cmd(Opcode::NOP, static_cast<uint16_t>(s)), 16);
    mask |= 1u << s;
  }
  host_->ring(mask);
  for (unsigned s = 0; s < 32; ++s) {
    test::Reply r = host_->wait(s);
    ASSERT_TRUE(r.done) << "slot " << s;
    EXPECT_EQ(r.delivery, 0);
    EXPECT_EQ(r.status(), 0);
  }
  EXPECT_EQ(fw_->stats().commands, 32u);
  EXPECT_EQ(fw_->stats().max_inflight, 4u);  // concurrency honoured, and used
}

TEST_F(FwCmdq, DoorbellInRawByteOrderStillFindsItsSlot) {
  host_->prepare(2, make_cmd(Opcode::NOP), 16);
  host_->ring(__builtin_bswap32(1u << 2));
  test::Reply r = host_->wait(2);
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.status(), 0);
}

TEST(FwTraceEnv, KbvSimCmdTraceEnablesTheTrace) {
  ::setenv("KBV_SIM_CMD_TRACE", "1", 1);
  EXPECT_TRUE(CmdTrace::env_enabled());
  test::TestPci pci;
  Firmware on(pci, test::test_config());
  EXPECT_TRUE(on.trace().enabled());
  ::setenv("KBV_SIM_CMD_TRACE", "0", 1);
  EXPECT_FALSE(CmdTrace::env_enabled());
  Firmware off(pci, test::test_config());
  EXPECT_FALSE(off.trace().enabled());
  ::unsetenv("KBV_SIM_CMD_TRACE");
}

TEST_F(FwCmdq, TraceShowsEveryCommand) {
  std::vector<std::string> lines;
  std::mutex mu;
  fw_->trace().set_sink([&](std::string_view l) {
    std::lock_guard lock(mu);
    lines.emplace_back(l);
  });
  fw_->trace().set_enabled(true);
  ASSERT_TRUE(host_->exec(make_cmd(0x7FF, 0), 16).done);
  std::lock_guard lock(mu);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_NE(lines[0].find("UNKNOWN (0x7ff)"), std::string::npos);
  EXPECT_NE(lines[0].find("BAD_OP_ERR (0x2) syndrome 0x1"), std::string::npos);
}

TEST_F(FwCmdq, SlotNotOwnedIsIgnored) {
  // Never handed over (setting the bit and clearing it again left a window in
  // which a scan from another doorbell could count the slot a second time).
  host_->prepare(4, make_cmd(Opcode::NOP), 16, 0x5a, /*hand_over=*/false);
  host_->ring(1u << 4);
  // A later command on another slot completes; slot 4 was not executed.
  ASSERT_TRUE(host_->exec(make_cmd(Opcode::NOP), 16, 5).done);
  EXPECT_EQ(fw_->stats().ignored_doorbells, 1u);
  EXPECT_EQ(fw_->stats().commands, 1u);
}

TEST_F(FwCmdq, InjectedFailureThenRecovery) {
  fw_->fail_opcode(prm::to_u16(Opcode::NOP), st(CmdStatus::NO_RES_ERR), 0xABCD, 1);
  test::Reply r = host_->exec(make_cmd(Opcode::NOP), 16);
  EXPECT_EQ(r.status(), st(CmdStatus::NO_RES_ERR));
  EXPECT_EQ(r.syndrome(), 0xABCDu);
  EXPECT_EQ(host_->exec(make_cmd(Opcode::NOP), 16).status(), 0);
  EXPECT_EQ(fw_->stats().failed, 1u);
}

TEST_F(FwCmdq, InjectedDelayCompletesOutOfOrder) {
  fw_->delay_opcode(prm::to_u16(Opcode::QUERY_ADAPTER), std::chrono::milliseconds(300));
  ASSERT_EQ(enable().status(), 0);
  host_->prepare(1, make_cmd(Opcode::QUERY_ADAPTER), 272);
  host_->ring(1u << 1);
  host_->prepare(2, make_cmd(Opcode::NOP), 16);
  host_->ring(1u << 2);
  test::Reply nop = host_->wait(2);
  ASSERT_TRUE(nop.done);
  EXPECT_TRUE(host_->owned_by_hw(1));  // the delayed command is still running
  test::Reply qa = host_->wait(1);
  ASSERT_TRUE(qa.done);
  EXPECT_EQ(qa.status(), 0);
  auto blk = prm::CRef<prm::query_adapter_out>(qa.out.data())
                 .at(prm::query_adapter_out::query_adapter_struct);
  EXPECT_EQ(blk.get(prm::query_adapter_param_block::vsd_vendor_id), 0x15b3u);
}

TEST(FwCmdqScan, UntrappedDoorbellPickedUpByOwnershipScan) {
  test::TestPci pci;
  FwConfig cfg = test::test_config();
  cfg.scan_interval = std::chrono::milliseconds(5);
  Firmware fw(pci, cfg);
  ASSERT_TRUE(fw.start().is_ok());
  test::TestHost host(pci);
  host.prepare(7, make_cmd(Opcode::NOP), 16);
  host.ring(1u << 7, /*trapped=*/false);
  test::Reply r = host.wait(7);
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.status(), 0);
}

TEST_F(FwCmdq, NothingRunsWhileInitializing) {
  pci_.store_be32(prm::init_seg::kInitializingOff, prm::kInitializingBit);
  host_->prepare(0, make_cmd(Opcode::NOP), 16);
  const uint64_t passes = fw_->stats().loop_passes;
  host_->ring(1);
  // The doorbell wakes the firmware thread; while initializing it also
  // wakes every millisecond. Three passes after the ring: it has seen it.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (fw_->stats().loop_passes < passes + 3 && std::chrono::steady_clock::now() < until)
    std::this_thread::yield();
  ASSERT_GE(fw_->stats().loop_passes, passes + 3);
  EXPECT_TRUE(host_->owned_by_hw(0));
  EXPECT_EQ(fw_->stats().commands, 0u);
  pci_.store_be32(prm::init_seg::kInitializingOff, 0);
  test::Reply r = host_->wait(0);
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.status(), 0);
}

TEST_F(FwCmdq, ResetDropsState) {
  ASSERT_EQ(enable().status(), 0);
  pci_.reset();
  host_ = std::make_unique<test::TestHost>(pci_);  // the driver sets the queue up again
  // After reset the HCA is disabled again: ENABLE_HCA works (not "twice").
  test::Reply r = enable();
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.status(), 0);
}

}  // namespace
}  // namespace kbv::sim::fw
