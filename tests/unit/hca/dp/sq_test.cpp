// SPDX-License-Identifier: BSD-3-Clause
// SendQueue (hca/dp/sq.hpp) on the fake device: golden bytes of every WQE
// kind (offsets from rdma-core mlx5dv.h: mlx5_wqe_ctrl_seg, raddr, atomic,
// datagram, data and inline segments; values from the MLX5_OPCODE_* /
// MLX5_WQE_CTRL_* constants), wrap-around at the ring end, inline padding,
// the batch doorbell (record, one BAR write, BlueFlame halves), and every
// refusal leaving the ring untouched past the bad request.
#include <infiniband/mlx5dv.h>

#include <cstddef>
#include <vector>

#include "dp_fixture.hpp"

namespace kbv::hca::test {
namespace {

namespace st = prm::qpc_st;

using DpSqTest = DpFixture;

// Control segment fields at their mlx5dv.h offsets.
struct Ctrl {
  uint32_t opmod_idx_opcode, qpn_ds;
  uint8_t fm_ce_se;
  uint32_t imm;
};
Ctrl ctrl_at(const std::byte* p) {
  return {be32_at(p, offsetof(mlx5_wqe_ctrl_seg, opmod_idx_opcode)),
          be32_at(p, offsetof(mlx5_wqe_ctrl_seg, qpn_ds)),
          static_cast<uint8_t>(p[offsetof(mlx5_wqe_ctrl_seg, fm_ce_se)]),
          be32_at(p, offsetof(mlx5_wqe_ctrl_seg, imm))};
}
void expect_data_seg(const std::byte* p, uint32_t len, uint32_t lkey, uint64_t addr) {
  EXPECT_EQ(be32_at(p, offsetof(mlx5_wqe_data_seg, byte_count)), len);
  EXPECT_EQ(be32_at(p, offsetof(mlx5_wqe_data_seg, lkey)), lkey);
  EXPECT_EQ(be64_at(p, offsetof(mlx5_wqe_data_seg, addr)), addr);
}

TEST_F(DpSqTest, RcSendGoldenBytesAndBlueFlameCopy) {
  auto q = SendQueue::create(sq_config(st::kRc, 4));
  ASSERT_TRUE(q.has_value());
  const Sge sg[] = {{0x1000, 100, 0x11}, {0x2000, 0, 0x22}, {0x3000, 300, 0x33}};
  SendWr wr{.wr_id = 7,
            .opcode = WrOpcode::kSend,
            .flags = send_flags::kSignaled | send_flags::kSolicited,
            .sg = sg};
  ASSERT_TRUE(q->post({&wr, 1}).is_ok());
  const Ctrl c = ctrl_at(sq_bb(0));
  EXPECT_EQ(c.opmod_idx_opcode, 0u << 8 | MLX5_OPCODE_SEND);
  // ctrl + two data segments (the zero-length SGE is skipped).
  EXPECT_EQ(c.qpn_ds, kQpn << 8 | 3);
  EXPECT_EQ(c.fm_ce_se, MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_SOLICITED);
  EXPECT_EQ(c.fm_ce_se, 0x0A);  // docs/PRM.md: 0x08 CQE, 0x02 solicited
  expect_data_seg(sq_bb(0) + 16, 100, 0x11, 0x1000);
  expect_data_seg(sq_bb(0) + 32, 300, 0x33, 0x3000);
  // Doorbell record: one basic block; a single small WQE goes BlueFlame:
  // eight 8-byte writes to the first half carrying the WQE.
  EXPECT_EQ(dbrec_word(1), 1u);
  ASSERT_EQ(dev.writes.size(), 8u);
  for (unsigned i = 0; i < 8; ++i) {
    EXPECT_EQ(dev.writes[i].offset, kBf + 8 * i);
    EXPECT_EQ(dev.writes[i].value, be64_at(sq_bb(0), 8 * i));
  }
  EXPECT_EQ(0, std::memcmp(dev.bar_mem() + kBf, sq_bb(0), 64));
  EXPECT_EQ(q->next_bf_offset(), kBf + kBfSize / 2);
  EXPECT_EQ(q->pc(), 1u);
  EXPECT_EQ(q->complete(0), 7u);
  EXPECT_EQ(q->free_blocks(), 16u);
}

TEST_F(DpSqTest, RdmaAndAtomicGoldenBytes) {
  auto q = SendQueue::create(sq_config(st::kRc, 4));
  ASSERT_TRUE(q.has_value());
  const Sge sg[] = {{0xA000, 64, 0x44}};
  const Sge at[] = {{0xB000, 8, 0x55}};
  const SendWr wrs[] = {
      {.wr_id = 1,
       .opcode = WrOpcode::kRdmaWriteImm,
       .flags = send_flags::kFence,
       .sg = sg,
       .imm = 0xCAFEBABE,
       .remote_addr = 0x1122334455667788,
       .rkey = 0x99},
      {.wr_id = 2, .opcode = WrOpcode::kRdmaRead, .sg = sg, .remote_addr = 0x5000, .rkey = 0x77},
      {.wr_id = 3,
       .opcode = WrOpcode::kAtomicCs,
       .sg = at,
       .remote_addr = 0x6000,
       .rkey = 0x66,
       .compare_add = 0x0102030405060708,
       .swap = 0x1112131415161718},
      {.wr_id = 4,
       .opcode = WrOpcode::kAtomicFa,
       .sg = at,
       .remote_addr = 0x7000,
       .rkey = 0x65,
       .compare_add = 5},
  };
  ASSERT_TRUE(q->post(wrs).is_ok());
  // WRITE_IMM: ctrl, raddr, data; imm in the control segment; fence 0x80.
  Ctrl c = ctrl_at(sq_bb(0));
  EXPECT_EQ(c.opmod_idx_opcode, 0u << 8 | MLX5_OPCODE_RDMA_WRITE_IMM);
  EXPECT_EQ(c.qpn_ds, kQpn << 8 | 3);
  EXPECT_EQ(c.fm_ce_se, MLX5_WQE_CTRL_FENCE);
  EXPECT_EQ(c.fm_ce_se, 0x80);
  EXPECT_EQ(c.imm, 0xCAFEBABEu);
  EXPECT_EQ(be64_at(sq_bb(0), 16 + offsetof(mlx5_wqe_raddr_seg, raddr)), 0x1122334455667788u);
  EXPECT_EQ(be32_at(sq_bb(0), 16 + offsetof(mlx5_wqe_raddr_seg, rkey)), 0x99u);
  EXPECT_EQ(be32_at(sq_bb(0), 16 + offsetof(mlx5_wqe_raddr_seg, reserved)), 0u);
  expect_data_seg(sq_bb(0) + 32, 64, 0x44, 0xA000);
  // READ: no imm.
  c = ctrl_at(sq_bb(1));
  EXPECT_EQ(c.opmod_idx_opcode, 1u << 8 | MLX5_OPCODE_RDMA_READ);
  EXPECT_EQ(c.qpn_ds, kQpn << 8 | 3);
  EXPECT_EQ(c.imm, 0u);
  EXPECT_EQ(be64_at(sq_bb(1), 16), 0x5000u);
  EXPECT_EQ(be32_at(sq_bb(1), 24), 0x77u);
  // CS: ctrl, raddr, atomic (swap_add = swap, compare), data = 64 B.
  c = ctrl_at(sq_bb(2));
  EXPECT_EQ(c.opmod_idx_opcode, 2u << 8 | MLX5_OPCODE_ATOMIC_CS);
  EXPECT_EQ(c.qpn_ds, kQpn << 8 | 4);
  EXPECT_EQ(be64_at(sq_bb(2), 16), 0x6000u);
  EXPECT_EQ(be64_at(sq_bb(2), 32 + offsetof(mlx5_wqe_atomic_seg, swap_add)), 0x1112131415161718u);
  EXPECT_EQ(be64_at(sq_bb(2), 32 + offsetof(mlx5_wqe_atomic_seg, compare)), 0x0102030405060708u);
  expect_data_seg(sq_bb(2) + 48, 8, 0x55, 0xB000);
  // FA: swap_add = the addend, compare 0.
  c = ctrl_at(sq_bb(3));
  EXPECT_EQ(c.opmod_idx_opcode, 3u << 8 | MLX5_OPCODE_ATOMIC_FA);
  EXPECT_EQ(be64_at(sq_bb(3), 32), 5u);
  EXPECT_EQ(be64_at(sq_bb(3), 40), 0u);
  // One doorbell for the batch: the record, then one 64-bit write of the
  // last control segment's first 8 bytes to the first BlueFlame half.
  EXPECT_EQ(dbrec_word(1), 4u);
  ASSERT_EQ(dev.writes.size(), 1u);
  EXPECT_EQ(dev.writes[0].offset, kBf);
  EXPECT_EQ(dev.writes[0].width, 8u);
  EXPECT_EQ(dev.writes[0].value, be64_at(sq_bb(3), 0));
  // The next doorbell uses the other half, the one after that the first.
  ASSERT_TRUE(q->post(wrs).is_ok());
  ASSERT_EQ(dev.writes.size(), 2u);
  EXPECT_EQ(dev.writes[1].offset, kBf + kBfSize / 2);
  EXPECT_EQ(dev.writes[1].value, uint64_t{7u << 8 | MLX5_OPCODE_ATOMIC_FA} << 32 | (kQpn << 8 | 4));
  EXPECT_EQ(dbrec_word(1), 8u);
  ASSERT_TRUE(q->post({wrs, 1}).is_ok());
  EXPECT_EQ(dev.writes.back().offset, kBf + 7 * 8);  // BlueFlame copy, first half
  // Completions: wr_ids by wqe_counter; room freed up to the completed WQE.
  EXPECT_EQ(q->free_blocks(), 16u - 9);
  EXPECT_EQ(q->complete(2), 3u);
  EXPECT_EQ(q->free_blocks(), 16u - 6);
  EXPECT_EQ(q->complete(8), 1u);
  EXPECT_EQ(q->free_blocks(), 16u);
}

TEST_F(DpSqTest, UdSendDatagramSegment) {
  auto q = SendQueue::create(sq_config(st::kUd, 4));
  ASSERT_TRUE(q.has_value());
  HcaCaps caps;
  RoceDest d;
  d.dgid = ipv4_mapped_gid(127, 0, 0, 2);
  d.dmac = 0x0a0b0c0d0e0f;
  d.udp_sport = 0xC123;
  auto ah = Ah::make(caps, d, 0x777, 0x1111);
  ASSERT_TRUE(ah.has_value());
  const Sge sg[] = {{0x4000, 256, 0x12}};
  SendWr wr{.wr_id = 9,
            .opcode = WrOpcode::kSendImm,
            .sg = sg,
            .imm = 0x01020304,
            .ah = &*ah,
            .remote_qpn = 0xABCDE,
            .q_key = 0x80010002};
  ASSERT_TRUE(q->post({&wr, 1}).is_ok());
  const Ctrl c = ctrl_at(sq_bb(0));
  EXPECT_EQ(c.opmod_idx_opcode, uint32_t{MLX5_OPCODE_SEND_IMM});
  EXPECT_EQ(c.qpn_ds, kQpn << 8 | 5);  // ctrl + 3 datagram + data = 80 B
  EXPECT_EQ(c.imm, 0x01020304u);
  // mlx5_wqe_datagram_seg at 16: the Ah's AV with the request's QPN/Q_Key.
  const std::byte* av = sq_bb(0) + 16;
  EXPECT_EQ(be32_at(av, offsetof(mlx5_wqe_av, key)), 0x80010002u);
  EXPECT_EQ(be32_at(av, offsetof(mlx5_wqe_av, dqp_dct)), 0xABCDEu | MLX5_EXTENDED_UD_AV);
  EXPECT_EQ(be16_at(av, offsetof(mlx5_wqe_av, rlid)), 0xC123u);
  EXPECT_EQ(0, std::memcmp(av + offsetof(mlx5_wqe_av, rmac), ah->av.rmac, 6));
  EXPECT_EQ(0, std::memcmp(av + offsetof(mlx5_wqe_av, rgid), d.dgid.data(), 16));
  EXPECT_EQ(be32_at(av, offsetof(mlx5_wqe_av, grh_gid_fl)), 1u << 30);
  expect_data_seg(sq_bb(1), 256, 0x12, 0x4000);
  // Two basic blocks, both copied through BlueFlame (128 B <= half of 512).
  EXPECT_EQ(dbrec_word(1), 2u);
  ASSERT_EQ(dev.writes.size(), 16u);
  EXPECT_EQ(0, std::memcmp(dev.bar_mem() + kBf, sq_bb(0), 128));
  EXPECT_EQ(q->complete(0), 9u);
}

TEST_F(DpSqTest, WqeWrapsAtTheRingEnd) {
  // Four basic blocks; 80-byte UD WQEs take two each. With three 1-BB RC
  // sends first, WQE at pc 3 runs from the last block into block 0.
  auto q = SendQueue::create(sq_config(st::kUd, 2));
  ASSERT_TRUE(q.has_value());
  auto ah = Ah::make(HcaCaps{}, RoceDest{}, 1, 2);
  ASSERT_TRUE(ah.has_value());
  const Sge sg[] = {{0x4000, 16, 0x12}};
  SendWr one{.wr_id = 1, .opcode = WrOpcode::kSend, .ah = &*ah, .remote_qpn = 5};
  const SendWr three[] = {one, one, one};
  ASSERT_TRUE(q->post(three).is_ok());  // ctrl + datagram = 64 B each
  EXPECT_EQ(q->pc(), 3u);
  for (uint32_t i = 0; i < 3; ++i) q->complete(static_cast<uint16_t>(i));
  SendWr wr{.wr_id = 2, .opcode = WrOpcode::kSend, .sg = sg, .ah = &*ah, .remote_qpn = 0x99};
  // The batch above rang the first half; this doorbell uses the second.
  const uint64_t bf = q->next_bf_offset();
  EXPECT_EQ(bf, kBf + kBfSize / 2);
  ASSERT_TRUE(q->post({&wr, 1}).is_ok());
  EXPECT_EQ(ctrl_at(sq_bb(3)).opmod_idx_opcode, 3u << 8 | MLX5_OPCODE_SEND);
  EXPECT_EQ(ctrl_at(sq_bb(3)).qpn_ds, kQpn << 8 | 5);
  EXPECT_EQ(be32_at(sq_bb(3), 16 + offsetof(mlx5_wqe_av, dqp_dct)), 0x99u | MLX5_EXTENDED_UD_AV);
  // The data segment (unit 4) is the first 16 bytes of block 0.
  expect_data_seg(sq_bb(0), 16, 0x12, 0x4000);
  EXPECT_EQ(dbrec_word(1), 5u);
  // The BlueFlame copy sends block 3, then block 0.
  EXPECT_EQ(0, std::memcmp(dev.bar_mem() + bf + 64, sq_bb(0), 64));
  EXPECT_EQ(0, std::memcmp(dev.bar_mem() + bf, sq_bb(3), 64));
  EXPECT_EQ(q->complete(3), 2u);
  EXPECT_EQ(q->free_blocks(), 4u);
}

TEST_F(DpSqTest, CompletionOfAWqeNotInFlightFreesNothing) {
  // A device completing a WQE never posted (or one completed before) must
  // not make the ring look emptier than it is (tests/fuzz cq_poll).
  auto q = SendQueue::create(sq_config(st::kRc, 2));
  ASSERT_TRUE(q.has_value());
  const SendWr two[] = {{.wr_id = 7, .opcode = WrOpcode::kSend},
                        {.wr_id = 8, .opcode = WrOpcode::kSend}};
  ASSERT_TRUE(q->post(two).is_ok());
  EXPECT_EQ(q->free_blocks(), 2u);
  q->complete(3);  // never posted
  EXPECT_EQ(q->free_blocks(), 2u);
  EXPECT_EQ(q->complete(0), 7u);
  EXPECT_EQ(q->free_blocks(), 3u);
  q->complete(0);  // again
  EXPECT_EQ(q->free_blocks(), 3u);
  EXPECT_EQ(q->complete(1), 8u);
  EXPECT_EQ(q->free_blocks(), 4u);
  EXPECT_LE(q->free_blocks(), q->blocks());
}

TEST_F(DpSqTest, InlineDataPaddedAndWrapped) {
  auto q = SendQueue::create(sq_config(st::kRc, 2, 4, 200));
  ASSERT_TRUE(q.has_value());
  std::vector<uint8_t> a(5), b(20);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(0xA0 + i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(0xB0 + i);
  const Sge sg[] = {{reinterpret_cast<uintptr_t>(a.data()), 5, 0},
                    {reinterpret_cast<uintptr_t>(b.data()), 20, 0}};
  // Dirty the ring so the zero padding is visible.
  std::memset(sq_ring.va, 0xEE, 256);
  SendWr wr{.wr_id = 1, .opcode = WrOpcode::kSend, .flags = send_flags::kInline, .sg = sg};
  ASSERT_TRUE(q->post({&wr, 1}).is_ok());
  // ctrl + ceil((4 + 25) / 16) = 2 units.
  EXPECT_EQ(ctrl_at(sq_bb(0)).qpn_ds, kQpn << 8 | 3);
  EXPECT_EQ(be32_at(sq_bb(0), 16), 25u | MLX5_INLINE_SEG);
  EXPECT_EQ(0, std::memcmp(sq_bb(0) + 20, a.data(), 5));
  EXPECT_EQ(0, std::memcmp(sq_bb(0) + 25, b.data(), 20));
  for (size_t i = 45; i < 48; ++i) EXPECT_EQ(sq_bb(0)[i], std::byte{0}) << i;
  EXPECT_EQ(sq_bb(0)[48], std::byte{0xEE});  // past the WQE: untouched
  // Fill to pc 3, then a 150-byte inline WQE (ctrl + 10 units = 176 B, 3
  // blocks) from block 3 wraps into blocks 0 and 1.
  q->complete(0);
  SendWr plain{.wr_id = 2, .opcode = WrOpcode::kSend};
  const SendWr two[] = {plain, plain};
  ASSERT_TRUE(q->post(two).is_ok());
  q->complete(2);
  std::vector<uint8_t> big(150);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 3 + 1);
  const Sge bsg[] = {{reinterpret_cast<uintptr_t>(big.data()), 150, 0}};
  SendWr w2{.wr_id = 3, .opcode = WrOpcode::kSend, .flags = send_flags::kInline, .sg = bsg};
  std::memset(sq_ring.va, 0xEE, 128);
  ASSERT_TRUE(q->post({&w2, 1}).is_ok());
  EXPECT_EQ(ctrl_at(sq_bb(3)).qpn_ds, kQpn << 8 | 11);
  EXPECT_EQ(be32_at(sq_bb(3), 16), 150u | MLX5_INLINE_SEG);
  std::vector<std::byte> got(150);
  std::memcpy(got.data(), sq_bb(3) + 20, 44);        // to the ring end
  std::memcpy(got.data() + 44, sq_bb(0), 150 - 44);  // continued at the start
  EXPECT_EQ(0, std::memcmp(got.data(), big.data(), 150));
  for (size_t i = 106; i < 112; ++i) EXPECT_EQ(sq_ring.va[i], std::byte{0}) << i;  // pad
  EXPECT_EQ(sq_ring.va[112], std::byte{0xEE});
  EXPECT_EQ(dbrec_word(1), 6u);
}

TEST_F(DpSqTest, RefusalsStopTheBatchAndLeaveTheRingUntouched) {
  auto q = SendQueue::create(sq_config(st::kUc, 3, 2, 16));
  ASSERT_TRUE(q.has_value());
  const Sge sg3[] = {{1, 1, 1}, {2, 2, 2}, {3, 3, 3}};
  const Sge big[] = {{0x1, 17, 0}};
  const Sge sg1[] = {{0x10, 8, 1}};
  const SendWr good{.wr_id = 1, .opcode = WrOpcode::kSend, .sg = sg1};
  const struct {
    SendWr bad;
    kbv_status_t want;
  } cases[] = {
      {{.opcode = WrOpcode::kRdmaRead, .sg = sg1}, KBV_ERR_INVALID_WR_TYPE},  // UC: no READ
      {{.opcode = WrOpcode::kAtomicFa, .sg = sg1}, KBV_ERR_INVALID_WR_TYPE},
      {{.opcode = static_cast<WrOpcode>(42)}, KBV_ERR_INVALID_WR_TYPE},
      {{.opcode = WrOpcode::kSend, .sg = sg3}, KBV_ERR_TOO_MANY_SGE},
      {{.opcode = WrOpcode::kSend, .flags = send_flags::kInline, .sg = big},
       KBV_ERR_INLINE_TOO_LARGE},
  };
  uint32_t pc = 0;
  for (const auto& tc : cases) {
    std::memset(sq_ring.va, 0x5A, 512);
    dev.writes.clear();
    const SendWr batch[] = {good, tc.bad, good};
    size_t bad = 99;
    EXPECT_EQ(q->post(batch, &bad), tc.want);
    EXPECT_EQ(bad, 1u);
    // The first request is posted and rung; nothing after it is written.
    ++pc;
    EXPECT_EQ(q->pc(), pc);
    EXPECT_EQ(dbrec_word(1), pc);
    EXPECT_EQ(ctrl_at(sq_bb((pc - 1) & 7)).opmod_idx_opcode, (pc - 1) << 8 | MLX5_OPCODE_SEND);
    for (uint32_t b = 0; b < 8; ++b) {
      if (b == ((pc - 1) & 7)) continue;
      for (size_t i = 0; i < 64; ++i) ASSERT_EQ(sq_bb(b)[i], std::byte{0x5A}) << b << ":" << i;
    }
    EXPECT_EQ(dev.writes.size(), 8u);  // one BlueFlame copy for the one WQE
    q->complete(static_cast<uint16_t>(pc - 1));
    // A refusal first: nothing posted, no doorbell at all.
    dev.writes.clear();
    EXPECT_EQ(q->post({&tc.bad, 1}, &bad), tc.want);
    EXPECT_EQ(bad, 0u);
    EXPECT_TRUE(dev.writes.empty());
    EXPECT_EQ(q->pc(), pc);
  }
}

TEST_F(DpSqTest, QueueFullAndPerTypeOpcodes) {
  auto q = SendQueue::create(sq_config(st::kRc, 2));
  ASSERT_TRUE(q.has_value());
  const Sge sg1[] = {{0x10, 8, 1}};
  const SendWr w{.wr_id = 5, .opcode = WrOpcode::kSend, .sg = sg1};
  const SendWr five[] = {w, w, w, w, w};
  size_t bad = 0;
  EXPECT_EQ(q->post(five, &bad), KBV_ERR_QUEUE_FULL);
  EXPECT_EQ(bad, 4u);
  EXPECT_EQ(q->free_blocks(), 0u);
  EXPECT_EQ(dbrec_word(1), 4u);
  EXPECT_EQ(q->post({&w, 1}), KBV_ERR_QUEUE_FULL);
  EXPECT_EQ(q->complete(1), 5u);  // frees blocks 0 and 1
  EXPECT_EQ(q->free_blocks(), 2u);
  EXPECT_TRUE(q->post({&w, 1}).is_ok());
  EXPECT_EQ(ctrl_at(sq_bb(0)).opmod_idx_opcode, 4u << 8 | MLX5_OPCODE_SEND);

  // Atomics need one 8-byte SGE; READ may not be inline.
  const Sge sg2[] = {{0x10, 4, 1}};
  const SendWr atom{.opcode = WrOpcode::kAtomicCs, .sg = sg2};
  EXPECT_EQ(q->post({&atom, 1}), KBV_ERR_INVALID_ARGUMENT);
  const SendWr rd{.opcode = WrOpcode::kRdmaRead, .flags = send_flags::kInline, .sg = sg1};
  EXPECT_EQ(q->post({&rd, 1}), KBV_ERR_INVALID_ARGUMENT);
  const Sge null_bytes[] = {{0, 4, 0}};
  const SendWr inl0{.opcode = WrOpcode::kSend, .flags = send_flags::kInline, .sg = null_bytes};
  EXPECT_EQ(q->post({&inl0, 1}), KBV_ERR_INVALID_ARGUMENT);

  // UD: sends only, and an address handle is required.
  auto ud = SendQueue::create(sq_config(st::kUd, 2));
  ASSERT_TRUE(ud.has_value());
  const SendWr wr_write{.opcode = WrOpcode::kRdmaWrite, .sg = sg1};
  EXPECT_EQ(ud->post({&wr_write, 1}), KBV_ERR_INVALID_WR_TYPE);
  EXPECT_EQ(ud->post({&w, 1}), KBV_ERR_INVALID_ARGUMENT);  // no Ah
  EXPECT_EQ(ud->pc(), 0u);

  // Unsupported QP types and bad geometry are refused at setup.
  EXPECT_EQ(SendQueue::create(sq_config(st::kXrc, 2)).status(), KBV_ERR_NOT_SUPPORTED);
  SqConfig c = sq_config(st::kRc, 2);
  c.bf_offset = FakeDevice::kBarBytes;
  EXPECT_EQ(SendQueue::create(c).status(), KBV_ERR_INVALID_ARGUMENT);
  // A one-block ring (Qp with max_send_wr 1) works: index 1 reuses block 0.
  auto one = SendQueue::create(sq_config(st::kRc, 0, 1, 0));
  ASSERT_TRUE(one.has_value());
  EXPECT_TRUE(one->post({&w, 1}).is_ok());
  EXPECT_EQ(one->post({&w, 1}), KBV_ERR_QUEUE_FULL);
  EXPECT_EQ(one->complete(0), 5u);
  EXPECT_TRUE(one->post({&w, 1}).is_ok());
  EXPECT_EQ(ctrl_at(sq_ring.va).opmod_idx_opcode, 1u << 8 | MLX5_OPCODE_SEND);
  EXPECT_EQ(dbrec_word(1), 2u);
  c = sq_config(st::kRc, 2);
  c.bf_reg_size = 48;  // not a power of two
  EXPECT_EQ(SendQueue::create(c).status(), KBV_ERR_INVALID_ARGUMENT);
  c = sq_config(st::kRc, 2);
  c.bf_offset = kBf + 8;  // BlueFlame copies need 64-byte alignment
  EXPECT_EQ(SendQueue::create(c).status(), KBV_ERR_INVALID_ARGUMENT);
  c.bf_copy = false;
  EXPECT_TRUE(SendQueue::create(c).has_value());
  // WQE size limits: ds is 6 bits; a WQE must fit in the ring.
  c = sq_config(st::kRc, 6, 60);  // 1 + 2 + 60 units = 63: fits the 6 bits
  EXPECT_TRUE(SendQueue::create(c).has_value());
  c = sq_config(st::kRc, 6, 61);
  EXPECT_EQ(SendQueue::create(c).status(), KBV_ERR_LIMIT_EXCEEDED);
  c = sq_config(st::kUd, 6, 1, 1000);
  EXPECT_EQ(SendQueue::create(c).status(), KBV_ERR_LIMIT_EXCEEDED);
  c = sq_config(st::kUd, 0, 1, 0);  // 80 bytes: two blocks in a one-block ring
  EXPECT_EQ(SendQueue::create(c).status(), KBV_ERR_LIMIT_EXCEEDED);
  c = sq_config(st::kRc, 2);
  c.log_blocks = 17;  // wqe_index is 16 bits
  EXPECT_EQ(SendQueue::create(c).status(), KBV_ERR_INVALID_ARGUMENT);
}

TEST_F(DpSqTest, WithoutBlueFlameOneDoorbellAddress) {
  SqConfig c = sq_config(st::kRc, 3);
  c.bf_reg_size = 0;
  c.bf_copy = false;
  auto q = SendQueue::create(c);
  ASSERT_TRUE(q.has_value());
  const SendWr w{.wr_id = 1, .opcode = WrOpcode::kSend, .flags = send_flags::kSignaled};
  ASSERT_TRUE(q->post({&w, 1}).is_ok());
  ASSERT_TRUE(q->post({&w, 1}).is_ok());
  ASSERT_EQ(dev.writes.size(), 2u);
  EXPECT_EQ(dev.writes[0].offset, kBf);
  EXPECT_EQ(dev.writes[1].offset, kBf);
  EXPECT_EQ(dev.writes[1].value, uint64_t{1u << 8 | MLX5_OPCODE_SEND} << 32 | (kQpn << 8 | 1));
  // sig_all: every WQE asks for a CQE.
  c = sq_config(st::kRc, 3);
  c.sig_all = true;
  auto s = SendQueue::create(c);
  ASSERT_TRUE(s.has_value());
  const SendWr u{.opcode = WrOpcode::kSend};
  ASSERT_TRUE(s->post({&u, 1}).is_ok());
  EXPECT_EQ(ctrl_at(sq_ring.va).fm_ce_se, MLX5_WQE_CTRL_CQ_UPDATE);
}

}  // namespace
}  // namespace kbv::hca::test
