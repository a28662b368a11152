// SPDX-License-Identifier: BSD-3-Clause
//
// The model's RC transport under wire faults (ModelConfig::faults, seeded so
// runs repeat): every message delivered exactly once and in order, byte for
// byte, under 5% drop with reordering and duplication, and under corruption
// (ICRC failures); RDMA READs refetch what was lost.
#include "dp_model_fixture.hpp"

#include <cstring>

namespace kbv::e2e {
namespace {

constexpr uint32_t kMsgs = 300;
constexpr size_t kSlot = 4096;

sim::ModelConfig faulty(uint64_t seed, double drop, double dup, double reorder, double corrupt) {
  sim::ModelConfig c;
  c.faults.drop = drop;
  c.faults.duplicate = dup;
  c.faults.reorder = reorder;
  c.faults.reorder_depth = 2;
  c.faults.corrupt = corrupt;
  c.faults.seed = seed;
  return c;
}

// Sends kMsgs SENDs of 1..3000 bytes (several packets each at a 1 KiB MTU)
// and, every fifth message, an RDMA READ of the same size back from b, in
// windows the rings hold; checks order, counts and bytes on both sides.
void exchange(DpModel& t, DpQp& qa, DpQp& qb, DpBuffer& ba, DpBuffer& bb, DpCq& ca, DpCq& cb) {
  constexpr uint32_t kWindow = 32;
  uint32_t next_recv = 0, sent = 0, got = 0;
  // b's READ source: one pattern per slot in the upper half.
  for (uint32_t i = 0; i < 64; ++i) fill_pattern(bb.data + 512 * 1024 + i * kSlot, kSlot, 9000 + i);
  while (got < kMsgs) {
    while (next_recv < kMsgs && next_recv < got + kWindow) {
      hca::Sge g = bb.sge((next_recv % kWindow) * kSlot, kSlot);
      hca::RecvWr w;
      w.wr_id = next_recv;
      w.sg = std::span(&g, 1);
      ASSERT_TRUE(qb.rq->post(std::span(&w, 1)).is_ok());
      ++next_recv;
    }
    const uint32_t batch_end = std::min(kMsgs, got + kWindow);
    std::vector<uint32_t> reads;
    for (; sent < batch_end; ++sent) {
      const uint32_t len = 1 + (sent * 977) % 3000;
      const size_t off = (sent % kWindow) * kSlot;
      fill_pattern(ba.data + off, len, sent);
      hca::SendWr w;
      w.wr_id = sent;
      w.opcode = WrOpcode::kSend;
      w.flags = sf::kSignaled;
      hca::Sge g = ba.sge(off, len);
      w.sg = std::span(&g, 1);
      ASSERT_TRUE(qa.sq->post(std::span(&w, 1)).is_ok());
      if (sent % 5 == 0) {
        hca::SendWr r;
        r.wr_id = 1'000'000 + sent;
        r.opcode = WrOpcode::kRdmaRead;
        r.flags = sf::kSignaled;
        const uint32_t src = sent % 64;
        r.remote_addr = bb.addr(512 * 1024 + src * kSlot);
        r.rkey = bb.rkey();
        hca::Sge rg = ba.sge(256 * 1024 + (sent % kWindow) * kSlot, len);
        r.sg = std::span(&rg, 1);
        ASSERT_TRUE(qa.sq->post(std::span(&r, 1)).is_ok());
        reads.push_back(sent);
      }
    }
    const size_t expect_a = (batch_end - got) + reads.size();
    auto wa = poll_cq(ca, expect_a, std::chrono::seconds(20));
    ASSERT_EQ(wa.size(), expect_a) << "requester completions after message " << got;
    size_t ri = 0;
    uint32_t si = got;
    for (const auto& wc : wa) {
      ASSERT_EQ(wc.status, KBV_SUCCESS) << "wr " << wc.wr_id << " syndrome " << int{wc.syndrome};
      if (wc.wr_id >= 1'000'000) {
        ASSERT_LT(ri, reads.size());
        const uint32_t m = reads[ri++];
        EXPECT_EQ(wc.wr_id, 1'000'000u + m) << "in order";
        const uint32_t len = 1 + (m * 977) % 3000;
        EXPECT_EQ(check_pattern(ba.data + 256 * 1024 + (m % kWindow) * kSlot, len, 9000 + m % 64),
                  len)
            << "READ " << m;
      } else {
        EXPECT_EQ(wc.wr_id, si++) << "in order";
      }
    }
    auto wb = poll_cq(cb, batch_end - got, std::chrono::seconds(20));
    ASSERT_EQ(wb.size(), batch_end - got) << "receives after message " << got;
    for (const auto& wc : wb) {
      ASSERT_EQ(wc.status, KBV_SUCCESS);
      ASSERT_EQ(wc.wr_id, got) << "each message once, in order";
      const uint32_t len = 1 + (got * 977) % 3000;
      EXPECT_EQ(wc.byte_len, len);
      EXPECT_EQ(check_pattern(bb.data + (got % kWindow) * kSlot, len, got), len) << got;
      ++got;
    }
  }
  EXPECT_TRUE(drain_cq(cb, std::chrono::milliseconds(20)).empty()) << "no message twice";
  (void)t;
}

TEST_F(DpModel, RcExactlyOnceInOrderUnder5PercentDropReorderAndDuplication) {
  open(faulty(11, 0.05, 0.03, 0.05, 0), faulty(12, 0.05, 0.03, 0.05, 0));
  ConnectOptions o;
  o.ack_timeout = 8;  // 1 ms: losses are found quickly
  o.retry_count = 7;
  QpOptions qo;
  qo.max_send_wr = 128;
  qo.max_recv_wr = 64;
  pair(prm::qpc_st::kRc, o, qo);
  ASSERT_FALSE(HasFailure());
  exchange(*this, *qa, *qb, *a.buf, *b.buf, *a.cq, *b.cq);
  const auto sa = a.node->model->engine_stats(), sb = b.node->model->engine_stats();
  EXPECT_GT(sa.fault_dropped + sb.fault_dropped, 0u);
  EXPECT_GT(sa.fault_duplicated + sb.fault_duplicated, 0u);
  EXPECT_GT(sa.fault_reordered + sb.fault_reordered, 0u);
  EXPECT_GT(sa.retransmits, 0u);
  EXPECT_GT(sb.duplicates, 0u);
  EXPECT_EQ(query(*qa).state, prm::qp_state::kRts);
  EXPECT_EQ(query(*qb).state, prm::qp_state::kRts);
}

TEST_F(DpModel, RcDeliversEverythingThroughCorruptedPackets) {
  open(faulty(21, 0, 0, 0, 0.05), faulty(22, 0, 0, 0, 0.05));
  ConnectOptions o;
  o.ack_timeout = 8;
  QpOptions qo;
  qo.max_send_wr = 128;
  pair(prm::qpc_st::kRc, o, qo);
  ASSERT_FALSE(HasFailure());
  exchange(*this, *qa, *qb, *a.buf, *b.buf, *a.cq, *b.cq);
  const auto sa = a.node->model->engine_stats(), sb = b.node->model->engine_stats();
  EXPECT_GT(sa.rx_bad_icrc + sb.rx_bad_icrc, 0u) << "corrupted datagrams fail the ICRC check";
  EXPECT_EQ(sa.rx_bad_icrc, sb.fault_corrupted);
  EXPECT_EQ(sb.rx_bad_icrc, sa.fault_corrupted);
}

}  // namespace
}  // namespace kbv::e2e
