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
  // Gaps were NAKed (PSN sequence error, the only NAK without an error
  // here) and the requester went back on them, not only on its ack timer.
  EXPECT_GT(sb.out_of_sequence, 0u);
  EXPECT_GT(sb.naks_sent, 0u);
  EXPECT_GT(sa.naks_received, 0u);
  EXPECT_EQ(sa.error_cqes + sb.error_cqes, 0u);
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
  // Every bad ICRC is a corruption the sender injected (the rest were lost
  // nowhere else on loopback, but a full socket buffer could drop some).
  EXPECT_LE(sa.rx_bad_icrc, sb.fault_corrupted);
  EXPECT_LE(sb.rx_bad_icrc, sa.fault_corrupted);
}

TEST_F(DpModel, RcAtomicsExecuteExactlyOnceUnderLossAndDuplication) {
  // A duplicate atomic is answered from the responder's replay cache, never
  // executed twice: 200 fetch-and-adds of 1 leave exactly 200 and return
  // every value from 0 to 199 once.
  open(faulty(31, 0.05, 0.05, 0.05, 0), faulty(32, 0.05, 0.05, 0.05, 0));
  ConnectOptions o;
  o.ack_timeout = 8;
  QpOptions qo;
  qo.max_send_wr = 128;
  pair(prm::qpc_st::kRc, o, qo);
  ASSERT_FALSE(HasFailure());
  auto* counter = reinterpret_cast<uint64_t*>(b.buf->data + 4096);
  *counter = 0;
  constexpr uint32_t kOps = 200, kBatch = 50;
  std::vector<uint64_t> seen;
  for (uint32_t base = 0; base < kOps; base += kBatch) {
    for (uint32_t i = base; i < base + kBatch; ++i) {
      auto w = wr(i, WrOpcode::kAtomicFa);
      w.remote_addr = b.buf->addr(4096);
      w.rkey = b.buf->rkey();
      w.compare_add = 1;
      ASSERT_TRUE(post_send(*qa, w, a.buf->sge(8 * i, 8)).is_ok());
    }
    auto wa = poll_cq(*a.cq, kBatch, std::chrono::seconds(20));
    ASSERT_EQ(wa.size(), kBatch);
    for (const auto& wc : wa) ASSERT_EQ(wc.status, KBV_SUCCESS) << wc.wr_id;
  }
  EXPECT_EQ(*counter, kOps);
  for (uint32_t i = 0; i < kOps; ++i) {
    uint64_t v;
    std::memcpy(&v, a.buf->data + 8 * i, 8);
    seen.push_back(v);
  }
  for (uint32_t i = 0; i < kOps; ++i) EXPECT_EQ(seen[i], i) << "in order, once each";
  EXPECT_GT(a.node->model->engine_stats().retransmits, 0u);
}

TEST_F(DpModel, UcLosesWholeMessagesNeverParts) {
  // UC over a lossy wire: a message with a lost packet is dropped whole (the
  // next first / only packet resynchronises); what arrives is intact.
  open(faulty(41, 0.1, 0, 0, 0), {});
  pair(prm::qpc_st::kUc, {}, [] {
    QpOptions q;
    q.max_send_wr = 128;
    q.max_recv_wr = 128;
    return q;
  }());
  ASSERT_FALSE(HasFailure());
  constexpr uint32_t kN = 100, kLen = 2500;  // three packets each
  for (uint32_t i = 0; i < kN; ++i)
    ASSERT_TRUE(post_recv(*qb, i, b.buf->sge(i * kSlot, kSlot)).is_ok());
  for (uint32_t i = 0; i < kN; ++i) {
    std::byte* p = a.buf->data + i * kSlot;
    fill_pattern(p, kLen, 500 + i);
    std::memcpy(p, &i, 4);
    ASSERT_TRUE(post_send(*qa, wr(i, WrOpcode::kSend), a.buf->sge(i * kSlot, kLen)).is_ok());
    if (i % 32 == 31) {
      ASSERT_EQ(poll_cq(*a.cq, 32).size(), 32u);
    }
  }
  ASSERT_EQ(poll_cq(*a.cq, kN % 32).size(), kN % 32);
  auto wb = drain_cq(*b.cq, std::chrono::milliseconds(100));
  ASSERT_LT(wb.size(), kN) << "10% packet loss loses messages";
  ASSERT_GT(wb.size(), kN / 2);
  uint32_t last = 0;
  for (size_t k = 0; k < wb.size(); ++k) {
    const auto& wc = wb[k];
    ASSERT_EQ(wc.status, KBV_SUCCESS);
    EXPECT_EQ(wc.wr_id, k) << "receives are consumed in order";
    EXPECT_EQ(wc.byte_len, kLen);
    const std::byte* p = b.buf->data + wc.wr_id * kSlot;
    uint32_t idx;
    std::memcpy(&idx, p, 4);
    if (k > 0) {
      EXPECT_GT(idx, last) << "in order";
    }
    last = idx;
    std::vector<std::byte> want(kLen);
    fill_pattern(want.data(), kLen, 500 + idx);
    std::memcpy(want.data(), &idx, 4);
    EXPECT_EQ(std::memcmp(p, want.data(), kLen), 0) << "message " << idx;
  }
  EXPECT_GT(b.node->model->engine_stats().out_of_sequence, 0u);
}

}  // namespace
}  // namespace kbv::e2e
