// SPDX-License-Identifier: BSD-3-Clause
// Unit tests of hca::CmdQueue against a fake device whose firmware is the test.
#include "hca/cmdq/cmdq.hpp"

#include <gtest/gtest.h>

#include <memory>

#include "../fake_device.hpp"
#include "hca/prm/opcodes.hpp"

namespace kbv::hca {
namespace {

using test::FakeDevice;
using test::FakeFw;
using test::make_input;

constexpr uint16_t kNop = prm::to_u16(prm::Opcode::NOP);

class CmdqTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto q = CmdQueue::create(dev);
    ASSERT_TRUE(q.has_value()) << q.status().to_string();
    cmdq = std::move(*q);
  }
  // Submits a NOP of `len` input bytes with a result object.
  void submit(CmdResult& r, size_t len = 16, uint32_t out_len = 16, SubmitOptions o = {}) {
    auto in = make_input(kNop, 0, len);
    ASSERT_EQ(cmdq->submit(in, out_len, r.callback(), o), KBV_PENDING);
  }
  FakeDevice dev;
  FakeFw fw{dev};
  std::unique_ptr<CmdQueue> cmdq;
};

TEST_F(CmdqTest, CreateProgramsQueueAddressHighThenLow) {
  EXPECT_EQ(cmdq->slots(), 32u);
  EXPECT_EQ(cmdq->regular_slots(), 31u);
  EXPECT_EQ(cmdq->page_slot(), 31u);
  ASSERT_EQ(dev.writes.size(), 2u);
  EXPECT_EQ(dev.writes[0].offset, prm::init_seg::kCmdqAddrHOff);
  EXPECT_EQ(dev.writes[1].offset, prm::init_seg::kCmdqAddrLSzOff);
  EXPECT_EQ(dev.cmdq_iova(), cmdq->queue_iova());
  EXPECT_EQ(cmdq->queue_iova() % 4096, 0u);
  EXPECT_NE(dev.va(cmdq->queue_iova()), nullptr);
}

TEST(CmdqCreate, RejectsWrongCmdifRevision) {
  FakeDevice dev;
  dev.set_reg32(prm::init_seg::kCmdifRevFwSubOff, 4u << 16);
  auto q = CmdQueue::create(dev);
  EXPECT_EQ(q.status(), KBV_ERR_NOT_SUPPORTED);
  EXPECT_EQ(dev.live_dma(), 0u);
}

TEST(CmdqCreate, RejectsInvalidGeometry) {
  FakeDevice dev(/*log_size=*/6, /*log_stride=*/6);
  EXPECT_EQ(CmdQueue::create(dev).status(), KBV_ERR_NOT_SUPPORTED);
  FakeDevice dev2(/*log_size=*/5, /*log_stride=*/8);  // 32 * 256 B > 4 KiB
  EXPECT_EQ(CmdQueue::create(dev2).status(), KBV_ERR_NOT_SUPPORTED);
}

TEST(CmdqCreate, DeviceGone) {
  FakeDevice dev;
  dev.set_reg32(prm::init_seg::kFwRevOff, 0xFFFFFFFF);
  EXPECT_EQ(CmdQueue::create(dev).status(), KBV_ERR_DEVICE_REMOVED);
}

TEST(CmdqCreate, SmallQueueHasNoReservedPageSlot) {
  FakeDevice dev(/*log_size=*/0, /*log_stride=*/6);
  auto q = CmdQueue::create(dev);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ((*q)->slots(), 1u);
  EXPECT_EQ((*q)->regular_slots(), 1u);
}

TEST_F(CmdqTest, InlineCommandEncodingByteByByte) {
  CmdResult r;
  auto in = make_input(kNop, 0x12, 16);
  ASSERT_EQ(cmdq->submit(in, 16, r.callback()), KBV_PENDING);
  EXPECT_EQ(fw.rung(), std::vector<uint32_t>{0});
  const std::byte* e = fw.entry(0);
  auto u8 = [&](size_t off) { return static_cast<unsigned>(e[off]); };
  EXPECT_EQ(u8(0x00), prm::kCmdTypePcie);
  EXPECT_EQ(u8(0x04) << 24 | u8(0x05) << 16 | u8(0x06) << 8 | u8(0x07), 16u);  // inlen
  for (size_t i = 0x08; i < 0x10; ++i) EXPECT_EQ(u8(i), 0u) << "in_ptr byte " << i;
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(e[0x10 + i], in[i]) << "inline input byte " << i;
  EXPECT_EQ(u8(0x10), 0x08u);  // opcode 0x080D, big-endian
  EXPECT_EQ(u8(0x11), 0x0Du);
  EXPECT_EQ(u8(0x16) << 8 | u8(0x17), 0x12u);  // op_mod
  for (size_t i = 0x20; i < 0x38; ++i) EXPECT_EQ(u8(i), 0u) << "out/out_ptr byte " << i;
  EXPECT_EQ(u8(0x3B), 16u);  // outlen
  EXPECT_NE(u8(0x3C), 0u);   // token
  EXPECT_EQ(u8(0x3F), 1u);   // owned by firmware, delivery status 0
  EXPECT_FALSE(r.done);
  EXPECT_EQ(cmdq->poll(), 0u);
  fw.ok(0);
  EXPECT_EQ(cmdq->poll(), 1u);
  ASSERT_TRUE(r.done);
  EXPECT_TRUE(r.status.is_ok());
  EXPECT_EQ(r.out.size(), 16u);
}

TEST_F(CmdqTest, MailboxChainsCarryLongInputAndOutput) {
  const size_t in_len = 16 + 512 + 100;  // two input blocks
  const uint32_t out_len = 16 + 1024;    // two output blocks
  auto in = make_input(kNop, 0, in_len);
  CmdResult r;
  ASSERT_EQ(cmdq->submit(in, out_len, r.callback()), KBV_PENDING);
  ASSERT_EQ(fw.rung(), std::vector<uint32_t>{0});
  auto e = fw.ent(0);
  EXPECT_EQ(e.get(prm::cmd_layout::inlen), in_len);
  EXPECT_EQ(e.get(prm::cmd_layout::outlen), out_len);
  EXPECT_NE(e.get(prm::cmd_layout::in_ptr), 0u);
  EXPECT_NE(e.get(prm::cmd_layout::out_ptr), 0u);
  EXPECT_EQ(e.get(prm::cmd_layout::in_ptr) % 1024, 0u);
  // Byte by byte: the reassembled input (inline + chain) is the input; the
  // chain walk checks block numbers 0,1, tokens and the terminating next = 0.
  EXPECT_EQ(fw.input(0), in);
  // Bytes of the last block beyond the input are zero.
  const uint8_t tok = static_cast<uint8_t>(e.get(prm::cmd_layout::token));
  auto blocks = fw.chain(e.get(prm::cmd_layout::in_ptr), 2, tok);
  ASSERT_EQ(blocks.size(), 2u);
  for (size_t i = 100; i < 512; ++i) EXPECT_EQ(blocks[1][i], std::byte{0});
  fw.chain(e.get(prm::cmd_layout::out_ptr), 2, tok);

  std::vector<std::byte> out(out_len);
  for (size_t i = 16; i < out.size(); ++i) out[i] = static_cast<std::byte>(i * 13 + 1);
  fw.complete(0, out);
  EXPECT_EQ(cmdq->poll(), 1u);
  ASSERT_TRUE(r.done);
  EXPECT_TRUE(r.status.is_ok());
  EXPECT_EQ(r.out, out);
}

TEST_F(CmdqTest, ThirtyOneInFlightThenSoftwareQueueInOrder) {
  std::vector<CmdResult> r(40);
  for (size_t i = 0; i < r.size(); ++i) {
    auto in = make_input(kNop, static_cast<uint16_t>(i), 16);
    ASSERT_EQ(cmdq->submit(in, 16, r[i].callback()), KBV_PENDING);
  }
  auto rung = fw.rung();
  ASSERT_EQ(rung.size(), 31u);
  for (uint32_t i = 0; i < 31; ++i) EXPECT_EQ(rung[i], i);  // the page slot is never used
  CmdqStats s = cmdq->stats();
  EXPECT_EQ(s.in_flight, 31u);
  EXPECT_EQ(s.max_in_flight, 31u);
  EXPECT_EQ(s.queued, 9u);
  EXPECT_EQ(s.submitted, 40u);

  fw.ok(7);
  EXPECT_EQ(cmdq->poll(), 1u);
  EXPECT_TRUE(r[7].done);
  EXPECT_EQ(fw.rung(), std::vector<uint32_t>{7});
  EXPECT_EQ(fw.op_mod(7), 31u);  // the oldest queued command got the slot
  EXPECT_EQ(cmdq->stats().queued, 8u);

  // Drain everything.
  for (int round = 0; round < 10 && !cmdq->idle(); ++round) {
    for (uint32_t i = 0; i < 31; ++i)
      if (fw.hw_owned(i)) fw.ok(i);
    cmdq->poll();
  }
  for (size_t i = 0; i < r.size(); ++i) EXPECT_TRUE(r[i].done) << i;
  s = cmdq->stats();
  EXPECT_EQ(s.completed, 40u);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(s.in_flight, 0u);
  EXPECT_EQ(s.max_in_flight, 31u);
}

TEST_F(CmdqTest, OutOfOrderCompletionDeliversEachOutputToItsCommand) {
  std::vector<int> order;
  std::vector<uint32_t> got(3);
  for (int i = 0; i < 3; ++i) {
    auto in = make_input(kNop, static_cast<uint16_t>(i), 16);
    ASSERT_EQ(cmdq->submit(in, 32,
                           [&, i](const CmdCompletion& c) {
                             order.push_back(i);
                             ASSERT_EQ(c.out.size(), 32u);
                             got[i] = static_cast<uint32_t>(c.out[20]);
                             EXPECT_EQ(c.op_mod, i);
                           }),
              KBV_PENDING);
  }
  auto out = [](uint8_t tag) {
    std::vector<std::byte> o(32);
    o[20] = std::byte{tag};
    return o;
  };
  fw.complete(2, out(0xC2));
  cmdq->poll();
  fw.complete(0, out(0xC0));
  cmdq->poll();
  fw.complete(1, out(0xC1));
  cmdq->poll();
  EXPECT_EQ(order, (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(got, (std::vector<uint32_t>{0xC0, 0xC1, 0xC2}));
}

TEST_F(CmdqTest, TimeoutQuarantinesSlotUntilDeviceReturnsIt) {
  CmdResult r;
  submit(r, 16, 16, SubmitOptions{.timeout_ns = 5'000'000});
  fw.rung();
  dev.now += 4'000'000;
  cmdq->poll();
  EXPECT_FALSE(r.done);
  dev.now += 1'000'000;
  EXPECT_EQ(cmdq->poll(), 1u);
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.status, KBV_ERR_TIMEOUT);
  CmdqStats s = cmdq->stats();
  EXPECT_EQ(s.timed_out, 1u);
  EXPECT_EQ(s.failed, 1u);
  EXPECT_EQ(s.quarantined, 1u);
  EXPECT_EQ(s.in_flight, 0u);

  // Slot 0 is not reused while the device owns it.
  CmdResult r2;
  submit(r2);
  EXPECT_EQ(fw.rung(), std::vector<uint32_t>{1});
  // The device finally answers slot 0: the late result is dropped, the slot freed.
  fw.ok(0);
  cmdq->poll();
  EXPECT_EQ(cmdq->stats().quarantined, 0u);
  EXPECT_EQ(cmdq->stats().completed, 1u);  // no second callback for the timed-out command
  CmdResult r3;
  submit(r3);
  EXPECT_EQ(fw.rung(), std::vector<uint32_t>{0});
}

TEST_F(CmdqTest, DeliveryStatusSurfaces) {
  CmdResult r;
  submit(r);
  fw.complete(0, std::vector<std::byte>(16), /*delivery=*/0x2);  // TOK_ERR
  cmdq->poll();
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.status, KBV_ERR_CMD_DELIVERY);
  EXPECT_EQ(r.delivery_status, 0x2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_EQ(cmdq->stats().failed, 1u);
}

TEST_F(CmdqTest, FirmwareStatusAndSyndromeSurface) {
  CmdResult r;
  submit(r);
  fw.fail(0, 0x3, 0x1b2c3d4e);
  cmdq->poll();
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.status, KBV_ERR_FW_BAD_PARAM);
  EXPECT_EQ(r.status.fw_status(), 0x3);
  EXPECT_EQ(r.status.syndrome(), 0x1b2c3d4eu);
  EXPECT_EQ(r.delivery_status, 0);
}

TEST_F(CmdqTest, EventModeCompletesOnlyFromEqeAndChecksOwnership) {
  cmdq->set_event_mode(true);
  CmdResult a, b;
  submit(a);
  submit(b);
  fw.ok(0);
  EXPECT_EQ(cmdq->poll(), 0u);  // no scan of ownership in event mode
  EXPECT_FALSE(a.done);
  // An EQE naming both: slot 1 is still firmware's, so only slot 0 completes.
  EXPECT_EQ(cmdq->on_cmd_eqe(0x3), 1u);
  EXPECT_TRUE(a.done);
  EXPECT_FALSE(b.done);
  // Lost EQE for slot 1: recovered at the deadline from the entry.
  fw.ok(1);
  dev.now += 61ull * 1000 * 1000 * 1000;
  EXPECT_EQ(cmdq->poll(), 1u);
  ASSERT_TRUE(b.done);
  EXPECT_TRUE(b.status.is_ok());
  EXPECT_EQ(cmdq->stats().timed_out, 0u);
}

TEST_F(CmdqTest, PageSupplyUsesReservedSlotWhileRegularSlotsAreFull) {
  std::vector<CmdResult> r(31);
  for (auto& x : r) submit(x);
  CmdResult extra, page;
  submit(extra);
  submit(page, 16, 16, SubmitOptions{.page_supply = true});
  auto rung = fw.rung();
  ASSERT_EQ(rung.size(), 32u);
  EXPECT_EQ(rung.back(), 31u);
  EXPECT_EQ(cmdq->stats().queued, 1u);
  fw.ok(31);
  cmdq->poll();
  EXPECT_TRUE(page.done);
  EXPECT_FALSE(extra.done);
  // A second page command waits for slot 31, not for a regular slot.
  CmdResult p2, p3;
  submit(p2, 16, 16, SubmitOptions{.page_supply = true});
  submit(p3, 16, 16, SubmitOptions{.page_supply = true});
  EXPECT_EQ(fw.rung(), std::vector<uint32_t>{31});
  fw.ok(0);  // a regular slot frees: it goes to `extra`, not to p3
  cmdq->poll();
  EXPECT_EQ(fw.rung(), std::vector<uint32_t>{0});
  fw.ok(31);
  cmdq->poll();
  EXPECT_TRUE(p2.done);
  EXPECT_EQ(fw.rung(), std::vector<uint32_t>{31});
}

TEST_F(CmdqTest, FailAllCompletesPostedAndQueuedCommands) {
  std::vector<CmdResult> r(33);
  for (auto& x : r) submit(x);
  cmdq->fail_all(Status{KBV_ERR_DEVICE_FATAL});
  for (auto& x : r) {
    ASSERT_TRUE(x.done);
    EXPECT_EQ(x.status, KBV_ERR_DEVICE_FATAL);
  }
  CmdResult late;
  auto in = make_input(kNop, 0, 16);
  EXPECT_EQ(cmdq->submit(in, 16, late.callback()), KBV_ERR_DEVICE_FATAL);
  EXPECT_FALSE(late.done);
  EXPECT_EQ(cmdq->poll(), 0u);
  EXPECT_EQ(cmdq->stats().completed, 33u);
}

TEST_F(CmdqTest, CallbackMaySubmitAndFifoOrderIsKept) {
  std::vector<CmdResult> r(31);
  CmdResult chained;
  auto chained_in = make_input(kNop, 0x77, 16);
  for (uint32_t i = 0; i < 31; ++i) {
    if (i == 3) {
      auto in = make_input(kNop, 3, 16);
      ASSERT_EQ(cmdq->submit(in, 16,
                             [&](const CmdCompletion& c) {
                               r[3].done = true;
                               r[3].status = c.status;
                               EXPECT_EQ(cmdq->submit(chained_in, 16, chained.callback()),
                                         KBV_PENDING);
                             }),
                KBV_PENDING);
    } else {
      submit(r[i]);
    }
  }
  CmdResult queued;
  auto queued_in = make_input(kNop, 0x55, 16);
  ASSERT_EQ(cmdq->submit(queued_in, 16, queued.callback()), KBV_PENDING);
  fw.rung();
  // Slot 3 completes; its callback submits. The already-queued command must
  // take the free slot first; the new one waits behind it.
  fw.ok(3);
  cmdq->poll();
  EXPECT_TRUE(r[3].done);
  EXPECT_EQ(fw.rung(), std::vector<uint32_t>{3});
  EXPECT_EQ(fw.op_mod(3), 0x55u);
  EXPECT_EQ(cmdq->stats().queued, 1u);
  fw.ok(3);
  cmdq->poll();
  EXPECT_TRUE(queued.done);
  EXPECT_EQ(fw.op_mod(3), 0x77u);
  fw.ok(3);
  cmdq->poll();
  EXPECT_TRUE(chained.done);
  EXPECT_EQ(cmdq->stats().queued, 0u);
}

TEST_F(CmdqTest, CancelQueuedAndPostedCommands) {
  std::vector<CmdResult> r(33);
  std::vector<uint64_t> ids(33);
  for (size_t i = 0; i < r.size(); ++i) {
    auto in = make_input(kNop, static_cast<uint16_t>(i), 16);
    ASSERT_EQ(cmdq->submit(in, 16, r[i].callback(), {}, &ids[i]), KBV_PENDING);
  }
  EXPECT_EQ(fw.rung().size(), 31u);
  // A queued command is never sent.
  ASSERT_TRUE(cmdq->cancel(ids[31]).is_ok());
  ASSERT_TRUE(r[31].done);
  EXPECT_EQ(r[31].status, KBV_ERR_CANCELLED);
  EXPECT_EQ(cmdq->stats().queued, 1u);
  // A posted one completes now; its slot stays busy until firmware is done.
  ASSERT_TRUE(cmdq->cancel(ids[4]).is_ok());
  EXPECT_EQ(r[4].status, KBV_ERR_CANCELLED);
  EXPECT_EQ(cmdq->cancel(ids[4]), KBV_ERR_NOT_FOUND);
  EXPECT_EQ(cmdq->stats().in_flight, 31u);
  fw.ok(4);
  cmdq->poll();
  // Slot 4 went to the last queued command (op_mod 32), not to #31.
  EXPECT_EQ(fw.rung(), std::vector<uint32_t>{4});
  EXPECT_EQ(fw.op_mod(4), 32u);
  EXPECT_EQ(cmdq->stats().completed, 2u);  // the two cancels; the dropped result is not counted
  EXPECT_EQ(cmdq->stats().cancelled, 2u);
  fw.ok(0);
  cmdq->poll();
  EXPECT_TRUE(r[0].status.is_ok());
  EXPECT_EQ(cmdq->cancel(ids[0]), KBV_ERR_NOT_FOUND);
  EXPECT_EQ(cmdq->cancel(12345), KBV_ERR_NOT_FOUND);
}

TEST_F(CmdqTest, CancelledCommandThatTimesOutIsQuarantinedSilently) {
  CmdResult r;
  uint64_t id = 0;
  auto in = make_input(kNop, 0, 16);
  ASSERT_EQ(cmdq->submit(in, 16, r.callback(), SubmitOptions{.timeout_ns = 1000}, &id),
            KBV_PENDING);
  ASSERT_TRUE(cmdq->cancel(id).is_ok());
  dev.now += 2000;
  cmdq->poll();
  EXPECT_EQ(cmdq->stats().timed_out, 0u);
  EXPECT_EQ(cmdq->stats().quarantined, 1u);
  EXPECT_EQ(cmdq->stats().completed, 1u);
  fw.ok(0);
  cmdq->poll();
  EXPECT_EQ(cmdq->stats().quarantined, 0u);
}

TEST(CmdqChecksum, SignaturesMakeEveryRegionXorToFF) {
  auto xor8 = [](const std::byte* p, size_t from, size_t to) {
    unsigned x = 0;
    for (size_t i = from; i < to; ++i) x ^= static_cast<unsigned>(p[i]);
    return x;
  };
  for (bool on : {false, true}) {
    FakeDevice dev;
    FakeFw fw(dev);
    CmdQueue::Config cfg;
    cfg.checksum = on;
    auto q = CmdQueue::create(dev, cfg);
    ASSERT_TRUE(q.has_value());
    CmdResult r;
    auto in = make_input(kNop, 3, 16 + 600);  // two input blocks
    ASSERT_EQ((*q)->submit(in, 16 + 100, r.callback()), KBV_PENDING);
    auto e = fw.ent(0);
    const uint8_t tok = static_cast<uint8_t>(e.get(prm::cmd_layout::token));
    auto blocks = fw.chain(e.get(prm::cmd_layout::in_ptr), 2, tok);
    auto out_blocks = fw.chain(e.get(prm::cmd_layout::out_ptr), 1, tok);
    blocks.insert(blocks.end(), out_blocks.begin(), out_blocks.end());
    ASSERT_EQ(blocks.size(), 3u);
    if (on) {
      EXPECT_EQ(xor8(fw.entry(0), 0, 64), 0xFFu);
      for (std::byte* b : blocks) {
        EXPECT_EQ(xor8(b, 0x200, 0x23F), 0xFFu);  // control part incl. ctrl_sig
        EXPECT_EQ(xor8(b, 0, 0x240), 0xFFu);      // whole block incl. sig
      }
    } else {
      EXPECT_EQ(e.get(prm::cmd_layout::sig), 0u);
      for (std::byte* b : blocks) {
        EXPECT_EQ(b[0x23E], std::byte{0});
        EXPECT_EQ(b[0x23F], std::byte{0});
      }
    }
    EXPECT_EQ(fw.input(0), in);  // the payload is unchanged either way
  }
}

TEST_F(CmdqTest, InvalidArguments) {
  CmdResult r;
  auto small = make_input(kNop, 0, 8);
  EXPECT_EQ(cmdq->submit(small, 16, r.callback()), KBV_ERR_INVALID_ARGUMENT);
  auto in = make_input(kNop, 0, 16);
  EXPECT_EQ(cmdq->submit(in, 8, r.callback()), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(cmdq->submit(in, 16, CmdCallback{}), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(fw.rung().empty());
  EXPECT_EQ(cmdq->stats().submitted, 0u);
}

TEST_F(CmdqTest, MailboxAllocationFailureIsReturned) {
  dev.fail_dma = true;
  CmdResult r;
  auto in = make_input(kNop, 0, 600);
  EXPECT_EQ(cmdq->submit(in, 16, r.callback()), KBV_ERR_NO_MEMORY);
  EXPECT_TRUE(fw.rung().empty());
  dev.fail_dma = false;
  EXPECT_EQ(cmdq->submit(in, 16, r.callback()), KBV_PENDING);
}

TEST(CmdqLifetime, DestroyReturnsAllDmaMemory) {
  FakeDevice dev;
  {
    auto q = CmdQueue::create(dev);
    ASSERT_TRUE(q.has_value());
    FakeFw fw(dev);
    CmdResult r;
    auto in = make_input(kNop, 0, 2000);
    ASSERT_EQ((*q)->submit(in, 2000, r.callback()), KBV_PENDING);
    fw.ok(0);
    (*q)->poll();
    EXPECT_TRUE(r.done);
    EXPECT_GT(dev.live_dma(), 1u);
  }
  EXPECT_EQ(dev.live_dma(), 0u);
}

}  // namespace
}  // namespace kbv::hca
