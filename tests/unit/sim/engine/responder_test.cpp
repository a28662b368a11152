// SPDX-License-Identifier: BSD-3-Clause
//
// The model's RC responder (src/sim/engine/responder.cpp) driven packet by
// packet (transport_support.hpp): the PSN check at the expected PSN, one
// behind, one ahead and far ahead (IBTA 9.7.5.1.x), ACK coalescing (AckReq
// and every Transport::kAckEvery packets, one ACK per received batch), the
// NAK codes (IBTA 9.7.5.2: invalid request, remote access, remote
// operational), RNR NAK with the QP's timer, READ responses and the atomic
// replay cache.
#include "transport_support.hpp"

namespace kbv::sim::engine::test {
namespace {

using wire::AethType;
using wire::NakCode;

class ResponderTest : public TransportFixture {
 protected:
  // The ACKs / NAKs among `s`.
  static std::vector<Sent> acks(const std::vector<Sent>& s) {
    std::vector<Sent> a;
    for (const Sent& x : s)
      if (x.opcode() == op::kAcknowledge) a.push_back(x);
    return a;
  }
  bool placed(uint64_t off, uint32_t len, uint8_t seed) {
    for (uint32_t i = 0; i < len; ++i)
      if (uint8_t(*mem(off + i)) != uint8_t(seed + i * 3)) return false;
    return true;
  }
};

TEST_F(ResponderTest, InOrderSendIsPlacedCompletedAndAckedOnAckReq) {
  post_recv(0, 4096);
  send_pkt(op::kSendOnly, kEpsn, 100, 7, /*ack_req=*/true);
  auto s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].opcode(), op::kAcknowledge);
  EXPECT_EQ(s[0].psn(), kEpsn);
  EXPECT_EQ(wire::aeth_type(s[0].syndrome()), AethType::kAck);
  EXPECT_EQ(s[0].h.aeth->msn, 1u);
  EXPECT_EQ(s[0].h.bth.dest_qp, kPeerQpn);
  EXPECT_TRUE(placed(0, 100, 7));
  auto c = cqes();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].opcode, MLX5_CQE_RESP_SEND);
  EXPECT_EQ(c[0].byte_cnt, 100u);
  EXPECT_EQ(c[0].wqe_counter, 0u);
}

TEST_F(ResponderTest, WithoutAckReqNothingIsAnsweredBelowTheCoalescingCount) {
  post_recv(0, 4096);
  send_pkt(op::kSendOnly, kEpsn, 10, 1);
  EXPECT_TRUE(step().empty());
  EXPECT_EQ(cqes().size(), 1u);
  EXPECT_EQ(counters().acks_sent.load(), 0u);
}

TEST_F(ResponderTest, DuplicateSendIsAckedAgainAndNotPlacedAgain) {
  post_recv(0, 4096);
  post_recv(4096, 4096);
  send_pkt(op::kSendOnly, kEpsn, 64, 1, true);
  ASSERT_EQ(step().size(), 1u);
  ASSERT_EQ(cqes().size(), 1u);
  // The same PSN again (its ACK was lost), with other bytes: ACKed with the
  // last PSN executed, nothing placed, no receive WQE taken.
  send_pkt(op::kSendOnly, kEpsn, 64, 99, true);
  auto s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(wire::aeth_type(s[0].syndrome()), AethType::kAck);
  EXPECT_EQ(s[0].psn(), kEpsn);
  EXPECT_EQ(s[0].h.aeth->msn, 1u);
  EXPECT_TRUE(cqes().empty());
  EXPECT_TRUE(placed(0, 64, 1));
  EXPECT_EQ(counters().duplicates.load(), 1u);
  // Two behind and duplicates in one batch: one coalesced ACK.
  send_pkt(op::kSendOnly, wire::psn_add(kEpsn, -1), 8, 0, true);
  send_pkt(op::kSendOnly, kEpsn, 8, 0, true);
  s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].psn(), kEpsn);
  // The next PSN is still the expected one.
  send_pkt(op::kSendOnly, wire::psn_add(kEpsn, 1), 32, 5, true);
  s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].psn(), wire::psn_add(kEpsn, 1));
  EXPECT_EQ(s[0].h.aeth->msn, 2u);
  EXPECT_TRUE(placed(4096, 32, 5));
}

TEST_F(ResponderTest, OneAheadIsNakedOnceAndNotExecuted) {
  post_recv(0, 4096);
  post_recv(4096, 4096);
  send_pkt(op::kSendOnly, wire::psn_add(kEpsn, 1), 16, 3, true);
  auto s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].opcode(), op::kAcknowledge);
  EXPECT_EQ(s[0].syndrome(), wire::aeth_nak(NakCode::kPsnSequenceError));
  EXPECT_EQ(s[0].psn(), kEpsn);  // the NAK names the expected PSN
  EXPECT_EQ(s[0].h.aeth->msn, 0u);
  EXPECT_TRUE(cqes().empty());
  EXPECT_FALSE(placed(0, 16, 3));
  // Two ahead: no second NAK until the expected PSN arrived (IBTA 9.7.5.1.2).
  send_pkt(op::kSendOnly, wire::psn_add(kEpsn, 2), 16, 3, true);
  EXPECT_TRUE(step().empty());
  EXPECT_EQ(counters().out_of_sequence.load(), 2u);
  EXPECT_EQ(counters().naks_sent.load(), 1u);
  // The resent sequence: executed in order.
  send_pkt(op::kSendOnly, kEpsn, 16, 10, false);
  send_pkt(op::kSendOnly, wire::psn_add(kEpsn, 1), 16, 20, true);
  s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(wire::aeth_type(s[0].syndrome()), AethType::kAck);
  EXPECT_EQ(s[0].psn(), wire::psn_add(kEpsn, 1));
  EXPECT_EQ(s[0].h.aeth->msn, 2u);
  EXPECT_TRUE(placed(0, 16, 10));
  EXPECT_TRUE(placed(4096, 16, 20));
  // Ahead again after the resync: a new NAK.
  send_pkt(op::kSendOnly, wire::psn_add(kEpsn, 5), 16, 3, true);
  s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].syndrome(), wire::aeth_nak(NakCode::kPsnSequenceError));
  EXPECT_EQ(s[0].psn(), wire::psn_add(kEpsn, 2));
}

TEST_F(ResponderTest, FarAheadIsNakedAndFarBehindIsADuplicate) {
  post_recv(0, 4096);
  // Just under half the PSN space ahead: out of sequence.
  send_pkt(op::kSendOnly, wire::psn_add(kEpsn, 0x7FFFFF), 16, 3, true);
  auto s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].syndrome(), wire::aeth_nak(NakCode::kPsnSequenceError));
  // Half the space away counts as behind (24-bit serial arithmetic): a
  // duplicate, ACKed with epsn - 1 and not executed.
  send_pkt(op::kSendOnly, wire::psn_add(kEpsn, 0x800000), 16, 3, true);
  s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(wire::aeth_type(s[0].syndrome()), AethType::kAck);
  EXPECT_EQ(s[0].psn(), wire::psn_add(kEpsn, -1));
  EXPECT_TRUE(cqes().empty());
  EXPECT_EQ(counters().duplicates.load(), 1u);
}

TEST_F(ResponderTest, AcksCoalesceEveryKAckEveryPacketsAndPerBatch) {
  static_assert(Transport::kAckEvery == 16);
  // A WRITE of 20 packets, one pass per packet, AckReq on the last only:
  // an ACK after the 16th packet and one after the last.
  const uint32_t n = 20;
  std::vector<std::vector<Sent>> per(n);
  for (uint32_t k = 0; k < n; ++k) {
    const wire::Position pos = wire::position_of(k, n);
    const uint8_t o = *wire::make_opcode(wire::Transport::kRc, wire::Operation::kWrite, pos, false);
    std::optional<wire::Reth> reth;
    if (k == 0) reth = wire::Reth{va(0), lkey_, n * kMtu};
    send_pkt(o, wire::psn_add(kEpsn, int32_t(k)), kMtu, uint8_t(k), k + 1 == n, reth);
    per[k] = step();
  }
  for (uint32_t k = 0; k < n; ++k) {
    if (k == 15 || k == 19) {
      ASSERT_EQ(per[k].size(), 1u) << "packet " << k;
      EXPECT_EQ(per[k][0].psn(), wire::psn_add(kEpsn, int32_t(k)));
      EXPECT_EQ(wire::aeth_type(per[k][0].syndrome()), AethType::kAck);
    } else {
      EXPECT_TRUE(per[k].empty()) << "packet " << k;
    }
  }
  EXPECT_EQ(per[19][0].h.aeth->msn, 1u);
  // Three single-packet messages with AckReq received in one batch: one ACK,
  // for the last.
  const uint32_t base = wire::psn_add(kEpsn, int32_t(n));
  for (uint32_t k = 0; k < 3; ++k)
    send_pkt(op::kWriteOnly, wire::psn_add(base, int32_t(k)), 8, 0, true,
             wire::Reth{va(32768 + 8 * k), lkey_, 8});
  auto s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].psn(), wire::psn_add(base, 2));
  EXPECT_EQ(s[0].h.aeth->msn, 4u);
  EXPECT_EQ(counters().acks_sent.load(), 3u);
}

TEST_F(ResponderTest, SendWithoutReceiveWqeIsRnrNakedWithTheQpTimer) {
  send_pkt(op::kSendOnly, kEpsn, 16, 3, true);
  auto s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(wire::aeth_type(s[0].syndrome()), AethType::kRnrNak);
  EXPECT_EQ(wire::aeth_value(s[0].syndrome()), qp()->min_rnr_nak);
  EXPECT_EQ(s[0].psn(), kEpsn);
  EXPECT_EQ(counters().rnr_naks_sent.load(), 1u);
  EXPECT_EQ(qp()->state, prm::qp_state::kRts);
  // WRITE with immediate needs a receive WQE too.
  wire::PacketHeaders wi = to_qp(req(op::kWriteOnlyImm, kEpsn, true));
  wi.reth = wire::Reth{va(0), lkey_, 8};
  wi.immdt = wire::ImmDt{0x1234};
  const uint8_t eight[8] = {};
  send(wi, eight);
  s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(wire::aeth_type(s[0].syndrome()), AethType::kRnrNak);
  // Once a receive is posted the same PSN goes through.
  post_recv(0, 4096);
  send_pkt(op::kSendOnly, kEpsn, 16, 3, true);
  s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(wire::aeth_type(s[0].syndrome()), AethType::kAck);
  EXPECT_EQ(s[0].psn(), kEpsn);
  EXPECT_TRUE(placed(0, 16, 3));
}

TEST_F(ResponderTest, MiddleOutsideAMessageIsNakedInvalidRequestAndTheQpFails) {
  send_pkt(op::kWriteMiddle, kEpsn, kMtu, 0, true);
  auto s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].syndrome(), wire::aeth_nak(NakCode::kInvalidRequest));
  EXPECT_EQ(s[0].psn(), kEpsn);
  EXPECT_EQ(qp()->state, prm::qp_state::kErr);
}

TEST_F(ResponderTest, FirstPacketShorterThanTheMtuIsAnInvalidRequest) {
  post_recv(0, 4096);
  send_pkt(op::kSendFirst, kEpsn, kMtu - 1, 0);
  auto s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].syndrome(), wire::aeth_nak(NakCode::kInvalidRequest));
  // The receive WQE was not taken yet: it is flushed with the QP.
  EXPECT_EQ(qp()->state, prm::qp_state::kErr);
  auto c = cqes();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].opcode, MLX5_CQE_RESP_ERR);
  EXPECT_EQ(c[0].syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
}

TEST_F(ResponderTest, WriteWithABadRkeyIsNakedRemoteAccessError) {
  send_pkt(op::kWriteOnly, kEpsn, 8, 0, true, wire::Reth{va(0), lkey_ ^ 0xFF, 8});
  auto s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].syndrome(), wire::aeth_nak(NakCode::kRemoteAccessError));
  EXPECT_EQ(qp()->state, prm::qp_state::kErr);
}

TEST_F(ResponderTest, WritePastTheKeyIsNakedRemoteAccessError) {
  const uint64_t end = kMemPages * 4096;
  send_pkt(op::kWriteOnly, kEpsn, 8, 0, true, wire::Reth{va(end - 7), lkey_, 8});
  auto s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].syndrome(), wire::aeth_nak(NakCode::kRemoteAccessError));
}

TEST_F(ResponderTest, WriteEndingExactlyAtTheKeyEndIsAccepted) {
  const uint64_t end = kMemPages * 4096;
  send_pkt(op::kWriteOnly, kEpsn, 8, 4, true, wire::Reth{va(end - 8), lkey_, 8});
  auto s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(wire::aeth_type(s[0].syndrome()), AethType::kAck);
  EXPECT_TRUE(placed(end - 8, 8, 4));
}

TEST_F(ResponderTest, SendIntoABadReceiveKeyIsNakedRemoteOperationalError) {
  post_recv(0, 4096, lkey_ ^ 0xFF);
  send_pkt(op::kSendOnly, kEpsn, 16, 3, true);
  auto s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].syndrome(), wire::aeth_nak(NakCode::kRemoteOperationalError));
  auto c = cqes();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].opcode, MLX5_CQE_RESP_ERR);
  EXPECT_EQ(c[0].syndrome, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  EXPECT_EQ(qp()->state, prm::qp_state::kErr);
}

TEST_F(ResponderTest, ReadIsAnsweredFirstMiddleLastAndReplayedFromMemory) {
  for (uint32_t i = 0; i < 2500; ++i) *mem(8192 + i) = std::byte(i * 7);
  wire::PacketHeaders h = to_qp(req(op::kReadRequest, kEpsn, true));
  h.reth = wire::Reth{va(8192), lkey_, 2500};
  send(h);
  auto s = step();
  ASSERT_EQ(s.size(), 3u);
  const uint8_t ops[3] = {op::kReadResponseFirst, op::kReadResponseMiddle, op::kReadResponseLast};
  for (uint32_t k = 0; k < 3; ++k) {
    EXPECT_EQ(s[k].opcode(), ops[k]);
    EXPECT_EQ(s[k].psn(), wire::psn_add(kEpsn, int32_t(k)));
    EXPECT_EQ(s[k].h.aeth.has_value(), k != 1);  // AETH on first and last (IBTA 9.7.5.1.4)
    ASSERT_EQ(s[k].payload.size(), k < 2 ? kMtu : 2500 - 2 * kMtu);
    for (uint32_t i = 0; i < s[k].payload.size(); ++i)
      ASSERT_EQ(s[k].payload[i], uint8_t((k * kMtu + i) * 7)) << k << " " << i;
  }
  EXPECT_EQ(s[2].h.aeth->msn, 1u);
  // The responses lost: the same request again is executed again from
  // memory (changed meanwhile), with the same PSNs.
  *mem(8192) = std::byte{0xEE};
  send(h);
  s = step();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].psn(), kEpsn);
  EXPECT_EQ(s[0].payload[0], 0xEE);
  EXPECT_EQ(counters().duplicates.load(), 1u);
  // The READ took three PSNs: the next request is kEpsn + 3.
  post_recv(0, 4096);
  send_pkt(op::kSendOnly, wire::psn_add(kEpsn, 3), 8, 1, true);
  s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(wire::aeth_type(s[0].syndrome()), AethType::kAck);
  EXPECT_EQ(s[0].psn(), wire::psn_add(kEpsn, 3));
}

TEST_F(ResponderTest, ZeroLengthReadIsOneResponseOnly) {
  wire::PacketHeaders h = to_qp(req(op::kReadRequest, kEpsn, true));
  h.reth = wire::Reth{0, 0, 0};
  send(h);
  auto s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].opcode(), op::kReadResponseOnly);
  EXPECT_TRUE(s[0].payload.empty());
}

TEST_F(ResponderTest, DuplicateAtomicsReturnTheSavedValueAndAreNotExecutedAgain) {
  uint64_t v = 100;
  std::memcpy(mem(16384), &v, 8);
  v = 0x5555;
  std::memcpy(mem(16392), &v, 8);
  wire::PacketHeaders fa = to_qp(req(op::kFetchAdd, kEpsn, true));
  fa.atomic_eth = wire::AtomicEth{va(16384), lkey_, 5, 0};
  wire::PacketHeaders cs = to_qp(req(op::kCompareSwap, wire::psn_add(kEpsn, 1), true));
  cs.atomic_eth = wire::AtomicEth{va(16392), lkey_, 0xAAAA, 0x5555};
  send(fa);
  auto s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].opcode(), op::kAtomicAcknowledge);
  EXPECT_EQ(s[0].psn(), kEpsn);
  ASSERT_TRUE(s[0].h.atomic_ack_eth.has_value());
  EXPECT_EQ(s[0].h.atomic_ack_eth->orig, 100u);
  send(cs);
  s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].h.atomic_ack_eth->orig, 0x5555u);
  uint64_t a = 0, b = 0;
  std::memcpy(&a, mem(16384), 8);
  std::memcpy(&b, mem(16392), 8);
  EXPECT_EQ(a, 105u);
  EXPECT_EQ(b, 0xAAAAu);
  // Both again (their ACKs were lost): the saved originals, memory as is.
  send(fa);
  send(cs);
  s = step();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].psn(), kEpsn);
  EXPECT_EQ(s[0].h.atomic_ack_eth->orig, 100u);
  EXPECT_EQ(s[1].psn(), wire::psn_add(kEpsn, 1));
  EXPECT_EQ(s[1].h.atomic_ack_eth->orig, 0x5555u);
  std::memcpy(&a, mem(16384), 8);
  std::memcpy(&b, mem(16392), 8);
  EXPECT_EQ(a, 105u);
  EXPECT_EQ(b, 0xAAAAu);
  EXPECT_EQ(counters().duplicates.load(), 2u);
}

TEST_F(ResponderTest, MisalignedAtomicIsAnInvalidRequest) {
  wire::PacketHeaders fa = to_qp(req(op::kFetchAdd, kEpsn, true));
  fa.atomic_eth = wire::AtomicEth{va(16388), lkey_, 5, 0};
  send(fa);
  auto s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].syndrome(), wire::aeth_nak(NakCode::kInvalidRequest));
}

TEST_F(ResponderTest, OperationsTheQpDoesNotAllowAreInvalidRequests) {
  qp()->rre = false;
  wire::PacketHeaders h = to_qp(req(op::kReadRequest, kEpsn, true));
  h.reth = wire::Reth{va(0), lkey_, 8};
  send(h);
  auto s = step();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].syndrome(), wire::aeth_nak(NakCode::kInvalidRequest));
}

}  // namespace
}  // namespace kbv::sim::engine::test
