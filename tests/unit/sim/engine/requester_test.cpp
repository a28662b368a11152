// SPDX-License-Identifier: BSD-3-Clause
//
// The model's RC requester (src/sim/engine/requester.cpp) driven packet by
// packet (transport_support.hpp): a send WQE becomes packets with the QP's
// PSNs and AckReq on the last; ACKs complete in order (a partial ACK
// completes nothing); NAK PSN sequence error goes back to its PSN; RNR NAK
// waits its timer and resends; NAK codes complete the WQE with the
// matching syndrome; READ responses and atomic ACKs fill local memory;
// duplicate and stale responses change nothing; responses whose BTH P_Key
// does not match the QP's are dropped and counted (IBTA 10.9.3).
#include "transport_support.hpp"

namespace kbv::sim::engine::test {
namespace {

class RequesterTest : public TransportFixture {
 protected:
  // A signalled WQE of `opcode` with one data segment over [off, off + len).
  void post(uint8_t opcode, uint64_t off, uint32_t len, uint64_t raddr = 0, uint32_t rkey = 0) {
    WqeBuilder b;
    b.ctrl(opcode, sq_index(), qpn_, MLX5_WQE_CTRL_CQ_UPDATE);
    if (opcode != MLX5_OPCODE_SEND) b.raddr(raddr, rkey);
    if (opcode == MLX5_OPCODE_ATOMIC_FA) b.atomic(7, 0);
    b.data(len, lkey_, va(off));
    post_send(b);
  }
  void ack(uint32_t psn, uint8_t syndrome = wire::aeth_ack(wire::kCreditInvalid),
           uint32_t msn = 0) {
    wire::PacketHeaders h = to_qp(req(op::kAcknowledge, psn));
    h.aeth = wire::Aeth{syndrome, msn};
    send(h);
  }
};

TEST_F(RequesterTest, SendGoesOutWithItsPsnsAndCompletesOnlyWhenWhollyAcked) {
  for (uint32_t i = 0; i < 2500; ++i) *mem(i) = std::byte(i);
  post(MLX5_OPCODE_SEND, 0, 2500);
  auto s = step();
  ASSERT_EQ(s.size(), 3u);
  const uint8_t ops[3] = {op::kSendFirst, op::kSendMiddle, op::kSendLast};
  for (uint32_t k = 0; k < 3; ++k) {
    EXPECT_EQ(s[k].opcode(), ops[k]);
    EXPECT_EQ(s[k].psn(), kSpsn + k);
    EXPECT_EQ(s[k].h.bth.dest_qp, kPeerQpn);
    EXPECT_EQ(s[k].h.bth.ack_req, k == 2) << k;
    EXPECT_EQ(s[k].payload.size(), k < 2 ? kMtu : 2500 - 2 * kMtu);
    EXPECT_EQ(s[k].payload[0], uint8_t(k * kMtu));
  }
  EXPECT_TRUE(cqes().empty());
  ack(kSpsn + 1);  // the first two packets
  EXPECT_TRUE(step().empty());
  EXPECT_TRUE(cqes().empty());
  ack(kSpsn + 2);
  EXPECT_TRUE(step().empty());
  auto c = cqes();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].opcode, MLX5_CQE_REQ);
  EXPECT_EQ(c[0].wqe_counter, 0u);
  EXPECT_EQ(qp()->counters.last_acked_psn, kSpsn + 2);
  // A duplicate ACK changes nothing.
  ack(kSpsn + 2);
  EXPECT_TRUE(step().empty());
  EXPECT_TRUE(cqes().empty());
}

TEST_F(RequesterTest, OneAckCompletesEveryEarlierMessageInOrder) {
  post(MLX5_OPCODE_SEND, 0, 10);
  post(MLX5_OPCODE_SEND, 0, 10);
  post(MLX5_OPCODE_SEND, 0, 10);
  auto s = step();
  ASSERT_EQ(s.size(), 3u);
  for (uint32_t k = 0; k < 3; ++k) {
    EXPECT_EQ(s[k].opcode(), op::kSendOnly);
    EXPECT_TRUE(s[k].h.bth.ack_req);
  }
  ack(kSpsn + 1);
  (void)step();
  auto c = cqes();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].wqe_counter, 0u);
  EXPECT_EQ(c[1].wqe_counter, 1u);
  ack(kSpsn + 2);
  (void)step();
  c = cqes();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].wqe_counter, 2u);
}

TEST_F(RequesterTest, NakSequenceErrorResendsFromItsPsn) {
  post(MLX5_OPCODE_SEND, 0, 2500);
  ASSERT_EQ(step().size(), 3u);
  // The responder lost kSpsn + 1: it ACKs nothing past kSpsn and NAKs.
  ack(kSpsn + 1, wire::aeth_nak(wire::NakCode::kPsnSequenceError));
  auto s = step();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].psn(), kSpsn + 1);
  EXPECT_EQ(s[0].opcode(), op::kSendMiddle);
  EXPECT_EQ(s[1].psn(), kSpsn + 2);
  EXPECT_TRUE(s[1].h.bth.ack_req);
  EXPECT_EQ(counters().naks_received.load(), 1u);
  EXPECT_TRUE(cqes().empty());
  ack(kSpsn + 2);
  (void)step();
  EXPECT_EQ(cqes().size(), 1u);
}

TEST_F(RequesterTest, RnrNakWaitsItsTimerThenResends) {
  post(MLX5_OPCODE_SEND, 0, 10);
  ASSERT_EQ(step().size(), 1u);
  // Timer code 1: 0.01 ms (IBTA table 45).
  ack(kSpsn, wire::aeth_rnr_nak(1));
  const auto t0 = std::chrono::steady_clock::now();
  auto s = step_until_sent();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::microseconds(10));
  EXPECT_EQ(s[0].psn(), kSpsn);
  EXPECT_EQ(s[0].opcode(), op::kSendOnly);
  EXPECT_EQ(counters().rnr_naks_received.load(), 1u);
  EXPECT_TRUE(cqes().empty());
  ack(kSpsn);
  (void)step();
  EXPECT_EQ(cqes().size(), 1u);
}

TEST_F(RequesterTest, NakCodesCompleteTheWqeWithTheirSyndrome) {
  struct Case {
    wire::NakCode code;
    uint8_t syndrome;
  };
  const Case cases[] = {
      {wire::NakCode::kRemoteAccessError, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR},
      {wire::NakCode::kInvalidRequest, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR},
      {wire::NakCode::kRemoteOperationalError, MLX5_CQE_SYNDROME_REMOTE_OP_ERR},
  };
  // One QP per code: the first error moves the QP to ERR.
  for (const Case& c : cases) {
    SCOPED_TRACE(int(c.code));
    if (&c != &cases[0]) {
      TearDown();
      SetUp();
      ASSERT_FALSE(HasFatalFailure());
    }
    post(MLX5_OPCODE_RDMA_WRITE, 0, 8, 0x1000, 0x77);
    ASSERT_EQ(step().size(), 1u);
    ack(kSpsn, wire::aeth_nak(c.code));
    (void)step();
    auto e = cqes();
    ASSERT_GE(e.size(), 1u);
    EXPECT_EQ(e[0].opcode, MLX5_CQE_REQ_ERR);
    EXPECT_EQ(e[0].syndrome, c.syndrome);
    EXPECT_EQ(e[0].wqe_counter, 0u);
    EXPECT_EQ(qp()->state, prm::qp_state::kErr);
  }
}

TEST_F(RequesterTest, ReadResponsesFillLocalMemoryInOrder) {
  post(MLX5_OPCODE_RDMA_READ, 4096, 2500, 0xABC000, 0x55);
  auto s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].opcode(), op::kReadRequest);
  EXPECT_EQ(s[0].psn(), kSpsn);
  ASSERT_TRUE(s[0].h.reth.has_value());
  EXPECT_EQ(s[0].h.reth->va, 0xABC000u);
  EXPECT_EQ(s[0].h.reth->rkey, 0x55u);
  EXPECT_EQ(s[0].h.reth->dma_len, 2500u);
  const uint8_t ops[3] = {op::kReadResponseFirst, op::kReadResponseMiddle, op::kReadResponseLast};
  for (uint32_t k = 0; k < 3; ++k) {
    wire::PacketHeaders h = to_qp(req(ops[k], kSpsn + k));
    if (k != 1) h.aeth = wire::Aeth{wire::aeth_ack(wire::kCreditInvalid), 1};
    std::vector<uint8_t> p(k < 2 ? kMtu : 2500 - 2 * kMtu);
    for (uint32_t i = 0; i < p.size(); ++i) p[i] = uint8_t((k * kMtu + i) * 5);
    send(h, p);
    EXPECT_TRUE(step().empty());
    if (k < 2) {
      EXPECT_TRUE(cqes().empty()) << k;
    }
  }
  for (uint32_t i = 0; i < 2500; ++i) ASSERT_EQ(uint8_t(*mem(4096 + i)), uint8_t(i * 5)) << i;
  auto c = cqes();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].opcode, MLX5_CQE_REQ);
  EXPECT_EQ(c[0].byte_cnt, 2500u);
}

TEST_F(RequesterTest, AckPastAnUnansweredReadGoesBackToIt) {
  post(MLX5_OPCODE_RDMA_READ, 4096, 100, 0xABC000, 0x55);
  post(MLX5_OPCODE_SEND, 0, 10);
  ASSERT_EQ(step().size(), 2u);
  // The SEND's ACK arrives but the READ response never did: the READ is
  // sent again (implicit NAK), nothing completes.
  ack(kSpsn + 1);
  auto s = step();
  ASSERT_GE(s.size(), 1u);
  EXPECT_EQ(s[0].opcode(), op::kReadRequest);
  EXPECT_EQ(s[0].psn(), kSpsn);
  EXPECT_TRUE(cqes().empty());
}

TEST_F(RequesterTest, AtomicAckWritesTheOriginalValueLocally) {
  post(MLX5_OPCODE_ATOMIC_FA, 8192, 8, 0xDEF000, 0x66);
  auto s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].opcode(), op::kFetchAdd);
  ASSERT_TRUE(s[0].h.atomic_eth.has_value());
  EXPECT_EQ(s[0].h.atomic_eth->va, 0xDEF000u);
  EXPECT_EQ(s[0].h.atomic_eth->swap_add, 7u);
  wire::PacketHeaders h = to_qp(req(op::kAtomicAcknowledge, kSpsn));
  h.aeth = wire::Aeth{wire::aeth_ack(wire::kCreditInvalid), 1};
  h.atomic_ack_eth = wire::AtomicAckEth{0x1122334455667788ull};
  send(h);
  (void)step();
  uint64_t v = 0;
  std::memcpy(&v, mem(8192), 8);
  EXPECT_EQ(v, 0x1122334455667788ull);
  auto c = cqes();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].opcode, MLX5_CQE_REQ);
  EXPECT_EQ(c[0].byte_cnt, 8u);
  // A duplicate atomic ACK does not write again.
  std::memset(mem(8192), 0, 8);
  send(h);
  (void)step();
  std::memcpy(&v, mem(8192), 8);
  EXPECT_EQ(v, 0u);
  EXPECT_TRUE(cqes().empty());
}

TEST_F(RequesterTest, ResponsesForPsnsNeverSentAreIgnored) {
  post(MLX5_OPCODE_SEND, 0, 10);
  ASSERT_EQ(step().size(), 1u);
  ack(kSpsn + 5);
  EXPECT_TRUE(step().empty());
  EXPECT_TRUE(cqes().empty());
  ack(kSpsn + 5, wire::aeth_nak(wire::NakCode::kRemoteAccessError));
  EXPECT_TRUE(step().empty());
  EXPECT_EQ(qp()->state, prm::qp_state::kRts);
}

TEST_F(RequesterTest, ResponsesWithAMismatchedPkeyAreDroppedAndCounted) {
  // The QP's pkey_index 0 is the default P_Key 0xFFFF (full member of
  // partition 0x7FFF); 0x8002 is a full member of partition 0x0002.
  std::atomic<uint32_t>& violations = tables().port.pkey_violations;
  const uint32_t v0 = violations.load();
  post(MLX5_OPCODE_SEND, 0, 10);
  post(MLX5_OPCODE_RDMA_READ, 4096, 100, 0xABC000, 0x55);
  post(MLX5_OPCODE_ATOMIC_FA, 8192, 8, 0xDEF000, 0x66);
  ASSERT_EQ(step().size(), 3u);
  std::memset(mem(4096), 0, 100);
  std::memset(mem(8192), 0, 8);
  const wire::Aeth ok{wire::aeth_ack(wire::kCreditInvalid), 1};
  wire::PacketHeaders a = to_qp(req(op::kAcknowledge, kSpsn));
  a.aeth = ok;
  wire::PacketHeaders r = to_qp(req(op::kReadResponseOnly, kSpsn + 1));
  r.aeth = ok;
  const std::vector<uint8_t> data(100, 0x5A);
  wire::PacketHeaders f = to_qp(req(op::kAtomicAcknowledge, kSpsn + 2));
  f.aeth = ok;
  f.atomic_ack_eth = wire::AtomicAckEth{0x1122334455667788ull};
  // Another partition, then the invalid P_Key 0 (IBTA 10.9.1.2): each
  // response dropped, counted, nothing written or completed.
  for (uint16_t bad : {uint16_t{0x8002}, uint16_t{0x0000}}) {
    a.bth.pkey = r.bth.pkey = f.bth.pkey = bad;
    const uint32_t before = violations.load();
    send(a);
    send(r, data);
    send(f);
    EXPECT_TRUE(step().empty());
    EXPECT_EQ(violations.load(), before + 3) << bad;
    EXPECT_TRUE(cqes().empty()) << bad;
    EXPECT_EQ(uint8_t(*mem(4096)), 0) << bad;
    uint64_t v = 1;
    std::memcpy(&v, mem(8192), 8);
    EXPECT_EQ(v, 0u) << bad;
    EXPECT_EQ(qp()->state, prm::qp_state::kRts);
  }
  // A limited member of the QP's partition (0x7FFF; the QP's entry is a
  // full member): the same responses complete all three.
  a.bth.pkey = r.bth.pkey = f.bth.pkey = 0x7FFF;
  const uint32_t before = violations.load();
  send(a);
  send(r, data);
  send(f);
  (void)step();
  EXPECT_EQ(violations.load(), before);
  EXPECT_EQ(violations.load(), v0 + 6);
  auto c = cqes();
  ASSERT_EQ(c.size(), 3u);
  for (const Cqe& e : c) EXPECT_EQ(e.opcode, MLX5_CQE_REQ);
  EXPECT_EQ(uint8_t(*mem(4096 + 99)), 0x5A);
  uint64_t v = 0;
  std::memcpy(&v, mem(8192), 8);
  EXPECT_EQ(v, 0x1122334455667788ull);
}

}  // namespace
}  // namespace kbv::sim::engine::test
