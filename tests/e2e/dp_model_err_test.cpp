// SPDX-License-Identifier: BSD-3-Clause
//
// The model's transport engine, in one process through kbv's driver: UD
// (GRH area, Q_Key mismatch), RNR NAK and its retry limit, retry exhaustion
// against a dead peer, memory-key violations on both sides (NAK remote
// access, local protection), responder length and invalid-request errors,
// flushing on error, CQ overrun, solicited-only arming, SRQ with its limit
// event.
#include "dp_model_fixture.hpp"

#include <endian.h>
#include <infiniband/mlx5dv.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <thread>

#include "hca/prm/eqe.hpp"

namespace kbv::e2e {
namespace {

using QpTransition = hca::cmd::QpTransition;

bool has_event(const DpNode& n, prm::EventType t, uint32_t number) {
  return std::any_of(n.events.begin(), n.events.end(), [&](const hca::HcaEvent& e) {
    return e.type == static_cast<uint8_t>(t) &&
           (t == prm::EventType::CQ_ERROR ? e.cqn == number : e.qp_srq_n == number);
  });
}

TEST_F(DpModel, UdSendPlacesTheGrhAreaAndDropsAQkeyMismatch) {
  open();
  QpOptions uo;
  uo.st = prm::qpc_st::kUd;
  auto ra = make_qp(*a.node, *a.cq, *a.cq, uo);
  auto rb = make_qp(*b.node, *b.cq, *b.cq, uo);
  ASSERT_TRUE(ra && rb);
  qa = std::move(*ra);
  qb = std::move(*rb);
  ASSERT_TRUE(to_rts_ud(*qa, 0x1234).is_ok());
  ASSERT_TRUE(to_rts_ud(*qb, 0x5678).is_ok());
  ASSERT_TRUE(post_recv(*qb, 1, b.buf->sge(0, 40 + 2048)).is_ok());
  ASSERT_TRUE(post_recv(*qb, 2, b.buf->sge(4096, 40 + 2048)).is_ok());
  fill_pattern(a.buf->data, 2000, 31);
  auto good = make_ah(*a.node, *b.node, qb->qpn(), 0x5678);
  auto bad = make_ah(*a.node, *b.node, qb->qpn(), 0x9999);
  ASSERT_TRUE(good && bad);
  auto w1 = wr(10, WrOpcode::kSend);
  w1.ah = &*bad;
  w1.remote_qpn = qb->qpn();
  w1.q_key = 0x9999;
  auto w2 = wr(11, WrOpcode::kSendImm, sf::kSignaled | sf::kSolicited);
  w2.ah = &*good;
  w2.remote_qpn = qb->qpn();
  w2.q_key = 0x5678;
  w2.imm = 0x0BADF00D;
  ASSERT_TRUE(post_send(*qa, w1, a.buf->sge(0, 2000)).is_ok());
  ASSERT_TRUE(post_send(*qa, w2, a.buf->sge(0, 2000)).is_ok());
  auto wa = poll_cq(*a.cq, 2);
  ASSERT_EQ(wa.size(), 2u);
  EXPECT_EQ(wa[0].status, KBV_SUCCESS);  // UD: sent is complete
  EXPECT_EQ(wa[1].status, KBV_SUCCESS);
  auto wb = poll_cq(*b.cq, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].wr_id, 1u) << "the mismatching datagram consumed nothing";
  EXPECT_EQ(wb[0].status, KBV_SUCCESS);
  EXPECT_EQ(wb[0].byte_len, 40u + 2000u);
  EXPECT_EQ(wb[0].src_qp, qa->qpn());
  EXPECT_TRUE(wb[0].flags & hca::wc_flags::kGrh);
  EXPECT_EQ(wb[0].l3_type, hca::wc_l3::kIpv4) << "RoCE v2 over IPv4 loopback";
  EXPECT_TRUE(wb[0].flags & hca::wc_flags::kImm);
  EXPECT_EQ(wb[0].imm, 0x0BADF00Du);
  EXPECT_EQ(check_pattern(b.buf->data + 40, 2000, 31), 2000u);
  // GRH area: 20 zero bytes, then the IPv4 header (ib_verbs.h rdma_network_hdr).
  const auto* g = reinterpret_cast<const uint8_t*>(b.buf->data);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(g[i], 0) << i;
  EXPECT_EQ(g[20], 0x45);    // version 4, IHL 5
  EXPECT_EQ(g[20 + 9], 17);  // UDP
  EXPECT_EQ(g[20 + 12], 127);
  EXPECT_EQ(g[20 + 15], a.node->model->port_host());
  EXPECT_EQ(g[20 + 16], 127);
  EXPECT_EQ(g[20 + 19], b.node->model->port_host());
  EXPECT_EQ(uint32_t{g[22]} << 8 | g[23], 20u + 8u + 12u + 8u + 4u + 2000u + 4u);
  // The CQE itself (b's first, entry 0): flags_rqpn as mlx5_ib's
  // handle_responder reads it — GRH present (29:28 = 1, in the buffer) and
  // RoCE packet type IPv4 (25:24 = MLX5_CQE_ROCE_L3_HEADER_TYPE_IPV4 = 2;
  // 0 would tell the kernel the 40 bytes are an IB GRH).
  {
    uint32_t fr = 0;
    std::memcpy(&fr, b.cq->cq->mem().buf() + offsetof(mlx5_cqe64, flags_rqpn), 4);
    fr = be32toh(fr);
    EXPECT_EQ(fr & 0xFFFFFF, qa->qpn());
    EXPECT_EQ((fr >> 28) & 3, 1u) << std::hex << fr;
    EXPECT_EQ((fr >> 24) & 3, 2u) << std::hex << fr;
  }
  EXPECT_TRUE(drain_cq(*b.cq, std::chrono::milliseconds(10)).empty());
  EXPECT_EQ(b.node->model->engine_stats().qkey_drops, 1u);
}

TEST_F(DpModel, UdSendToAGidOutsideLoopbackIsLostNotSent) {
  // The model's wire is loopback only: a datagram toward another address
  // completes (UD does not know) but never leaves the model.
  open();
  QpOptions uo;
  uo.st = prm::qpc_st::kUd;
  auto ra = make_qp(*a.node, *a.cq, *a.cq, uo);
  ASSERT_TRUE(ra.has_value());
  qa = std::move(*ra);
  ASSERT_TRUE(to_rts_ud(*qa, 1).is_ok());
  hca::RoceDest d;
  d.dgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1};  // 192.0.2.1 (TEST-NET-1)
  d.dmac = b.node ? b.node->mac : 0;
  auto ah = hca::Ah::make(a.node->hca->caps(), d, 5, 1);
  ASSERT_TRUE(ah.has_value());
  auto w = wr(1, WrOpcode::kSend);
  w.ah = &*ah;
  w.remote_qpn = 5;
  w.q_key = 1;
  ASSERT_TRUE(post_send(*qa, w, a.buf->sge(0, 64)).is_ok());
  auto wa = poll_cq(*a.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, KBV_SUCCESS);
  const auto st = a.node->model->engine_stats();
  EXPECT_EQ(st.tx_unroutable, 1u);
  EXPECT_EQ(st.tx_packets, 0u);
}

TEST_F(DpModel, UdSendErrorMovesOnlyTheSendQueueToSqeUntilSqerr2rts) {
  open();
  QpOptions uo;
  uo.st = prm::qpc_st::kUd;
  auto ra = make_qp(*a.node, *a.cq, *a.cq, uo);
  auto rb = make_qp(*b.node, *b.cq, *b.cq, uo);
  ASSERT_TRUE(ra && rb);
  qa = std::move(*ra);
  qb = std::move(*rb);
  ASSERT_TRUE(to_rts_ud(*qa, 0x77).is_ok());
  ASSERT_TRUE(to_rts_ud(*qb, 0x77).is_ok());
  auto to_b = make_ah(*a.node, *b.node, qb->qpn(), 0x77);
  auto to_a = make_ah(*b.node, *a.node, qa->qpn(), 0x77);
  ASSERT_TRUE(to_b && to_a);
  auto ud = [](uint64_t id, const hca::Ah& ah, uint32_t qpn) {
    auto w = wr(id, WrOpcode::kSend);
    w.ah = &ah;
    w.remote_qpn = qpn;
    w.q_key = 0x77;
    return w;
  };
  // Longer than the UD path MTU (4096): LOCAL_LENGTH, the QP goes to SQE.
  ASSERT_TRUE(post_send(*qa, ud(1, *to_b, qb->qpn()), a.buf->sge(0, 5000)).is_ok());
  auto wa = poll_cq(*a.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].syndrome, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
  EXPECT_EQ(query(*qa).state, prm::qp_state::kSqer);
  // Sends posted in SQE are flushed; the receive side still works.
  ASSERT_TRUE(post_send(*qa, ud(2, *to_b, qb->qpn()), a.buf->sge(0, 10)).is_ok());
  wa = poll_cq(*a.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].wr_id, 2u);
  EXPECT_EQ(wa[0].syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
  ASSERT_TRUE(post_recv(*qa, 3, a.buf->sge(65536, 40 + 256)).is_ok());
  ASSERT_TRUE(post_send(*qb, ud(4, *to_a, qa->qpn()), b.buf->sge(0, 200)).is_ok());
  ASSERT_EQ(poll_cq(*b.cq, 1).size(), 1u);
  wa = poll_cq(*a.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].wr_id, 3u);
  EXPECT_EQ(wa[0].status, KBV_SUCCESS);
  EXPECT_EQ(wa[0].byte_len, 240u);
  // SQERR2RTS: sending works again.
  ASSERT_TRUE(a.node
                  ->sync_status(
                      [&](auto cb) { return qa->qp->modify(QpTransition::kSqErr2Rts, {}, 0, cb); })
                  .is_ok());
  ASSERT_TRUE(post_recv(*qb, 5, b.buf->sge(65536, 40 + 256)).is_ok());
  fill_pattern(a.buf->data, 100, 66);
  ASSERT_TRUE(post_send(*qa, ud(6, *to_b, qb->qpn()), a.buf->sge(0, 100)).is_ok());
  wa = poll_cq(*a.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, KBV_SUCCESS);
  auto wb = poll_cq(*b.cq, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].wr_id, 5u);
  EXPECT_EQ(check_pattern(b.buf->data + 65536 + 40, 100, 66), 100u);
}

TEST_F(DpModel, RcRnrNakWaitsForAReceiveThenDelivers) {
  open();
  ConnectOptions o;
  o.min_rnr_nak = 1;  // 0.01 ms
  o.rnr_retry = 7;    // forever
  pair(prm::qpc_st::kRc, o);
  ASSERT_FALSE(HasFailure());
  fill_pattern(a.buf->data, 1500, 8);
  ASSERT_TRUE(post_send(*qa, wr(1, WrOpcode::kSend), a.buf->sge(0, 1500)).is_ok());
  // b had no receive: it answers with RNR NAKs, and the SEND cannot have
  // completed while that is so.
  Status w = b.node->poll_until([&] { return b.node->model->engine_stats().rnr_naks_sent > 0; });
  ASSERT_TRUE(w.is_ok()) << "no RNR NAK: " << w.to_string();
  hca::WorkCompletion early[1];
  EXPECT_EQ(a.cq->poller->poll(early), 0u);
  ASSERT_TRUE(post_recv(*qb, 5, b.buf->sge(0, 4096)).is_ok());
  auto wa = poll_cq(*a.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, KBV_SUCCESS);
  auto wb = poll_cq(*b.cq, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].byte_len, 1500u);
  EXPECT_EQ(check_pattern(b.buf->data, 1500, 8), 1500u);
  EXPECT_GT(a.node->model->engine_stats().rnr_naks_received, 0u);
}

TEST_F(DpModel, RcRnrRetryExhaustedEndsInRnrRetryExceeded) {
  open();
  ConnectOptions o;
  o.min_rnr_nak = 16;  // IBTA Table 45: 2.56 ms, carried in b's RNR NAKs
  o.rnr_retry = 2;
  o.ack_timeout = 16;  // 268 ms: no ack timeout resends anything meanwhile
  pair(prm::qpc_st::kRc, o);
  ASSERT_FALSE(HasFailure());
  // One message alone on the wire (a second one would draw PSN sequence
  // NAKs whose resends add RNR NAKs): the first try and two retries.
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(post_send(*qa, wr(1, WrOpcode::kSend), a.buf->sge(0, 100)).is_ok());
  auto wa = poll_cq(*a.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  // The requester waited the responder's RNR timer before each of the two
  // retries (a lower bound: a slow machine only waits longer).
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::microseconds(2 * 2560));
  EXPECT_EQ(wa[0].syndrome, MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
  EXPECT_EQ(b.node->model->engine_stats().rnr_naks_sent, 3u);
  EXPECT_EQ(query(*qa).state, prm::qp_state::kErr);
  ASSERT_TRUE(post_send(*qa, wr(2, WrOpcode::kSend), a.buf->sge(0, 100)).is_ok());
  wa = poll_cq(*a.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
}

TEST_F(DpModel, RcDeadPeerEndsInRetryExceededNotAHang) {
  open();
  ConnectOptions o;
  o.ack_timeout = 8;  // 4.096 us << 8 = 1 ms
  o.retry_count = 3;
  pair(prm::qpc_st::kRc, o);
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(destroy_qp(*qb).is_ok());  // the peer's QP is gone: nothing answers
  qb.reset();
  ASSERT_TRUE(post_send(*qa, wr(1, WrOpcode::kSend), a.buf->sge(0, 3000)).is_ok());
  auto w = wr(2, WrOpcode::kRdmaWrite, 0);
  w.remote_addr = 0x1000;
  w.rkey = 0x1234;
  ASSERT_TRUE(post_send(*qa, w, a.buf->sge(0, 10)).is_ok());
  auto wa = poll_cq(*a.cq, 2, std::chrono::seconds(5));
  ASSERT_EQ(wa.size(), 2u);
  EXPECT_EQ(wa[0].wr_id, 1u);
  EXPECT_EQ(wa[0].syndrome, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
  EXPECT_EQ(wa[1].wr_id, 2u) << "an unsignalled WQE still completes when flushed";
  EXPECT_EQ(wa[1].syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
  const auto st = a.node->model->engine_stats();
  EXPECT_EQ(st.timeouts, 4u);  // the first expiry and three retries
  EXPECT_GE(st.retransmits, 3u * 3u);
  EXPECT_EQ(query(*qa).state, prm::qp_state::kErr);
  // Later WQEs complete with flush errors (send and receive side).
  ASSERT_TRUE(post_send(*qa, wr(3, WrOpcode::kSend), a.buf->sge(0, 10)).is_ok());
  ASSERT_TRUE(post_recv(*qa, 4, a.buf->sge(0, 10)).is_ok());
  auto late = poll_cq(*a.cq, 2);
  ASSERT_EQ(late.size(), 2u);
  for (const auto& wc : late) EXPECT_EQ(wc.syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
}

TEST_F(DpModel, RcBadRkeyIsARemoteAccessErrorOnBothSides) {
  open();
  pair(prm::qpc_st::kRc);
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(post_recv(*qb, 9, b.buf->sge(0, 64)).is_ok());
  auto w = wr(1, WrOpcode::kRdmaWrite);
  w.remote_addr = b.buf->addr(kBuf - 16);  // runs past the registration
  w.rkey = b.buf->rkey();
  ASSERT_TRUE(post_send(*qa, w, a.buf->sge(0, 64)).is_ok());
  ASSERT_TRUE(post_send(*qa, wr(2, WrOpcode::kSend), a.buf->sge(0, 8)).is_ok());
  auto wa = poll_cq(*a.cq, 2);
  ASSERT_EQ(wa.size(), 2u);
  EXPECT_EQ(wa[0].syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
  EXPECT_EQ(wa[1].syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
  // The responder went to ERR as well: its posted receive is flushed, and it
  // raised a WQ access error event.
  auto wb = poll_cq(*b.cq, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].wr_id, 9u);
  EXPECT_EQ(wb[0].syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
  EXPECT_EQ(query(*qb).state, prm::qp_state::kErr);
  EXPECT_EQ(query(*qa).state, prm::qp_state::kErr);
  ASSERT_TRUE(
      b.node
          ->poll_until(
              [&] { return has_event(*b.node, prm::EventType::WQ_ACCESS_ERROR, qb->qpn()); },
              kSecond)
          .is_ok());
  EXPECT_EQ(b.node->model->engine_stats().naks_sent, 1u);
}

TEST_F(DpModel, RcReadWithAWrongRkeyIsARemoteAccessError) {
  open();
  pair(prm::qpc_st::kRc);
  ASSERT_FALSE(HasFailure());
  auto w = wr(1, WrOpcode::kRdmaRead);
  w.remote_addr = b.buf->addr(0);
  w.rkey = b.buf->rkey() ^ 0x5500;  // another key
  ASSERT_TRUE(post_send(*qa, w, a.buf->sge(0, 4096)).is_ok());
  auto wa = poll_cq(*a.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
}

TEST_F(DpModel, RcBadLkeyIsALocalProtectionErrorAndFlushes) {
  open();
  pair(prm::qpc_st::kRc);
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(post_recv(*qb, 1, b.buf->sge(0, 4096)).is_ok());
  hca::Sge s = a.buf->sge(0, 100);
  s.lkey ^= 0x700;
  ASSERT_TRUE(post_send(*qa, wr(1, WrOpcode::kSend), s).is_ok());
  ASSERT_TRUE(post_send(*qa, wr(2, WrOpcode::kSend), a.buf->sge(0, 100)).is_ok());
  auto wa = poll_cq(*a.cq, 2);
  ASSERT_EQ(wa.size(), 2u);
  EXPECT_EQ(wa[0].syndrome, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  EXPECT_EQ(wa[1].syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
  EXPECT_EQ(query(*qa).state, prm::qp_state::kErr);
  EXPECT_TRUE(drain_cq(*b.cq, std::chrono::milliseconds(10)).empty());
}

TEST_F(DpModel, RcBadReceiveLkeyIsARemoteOperationalErrorAtTheRequester) {
  // The responder cannot write the receive buffer (its lkey is wrong): its
  // WQE completes with LOCAL_PROT, it NAKs remote operational error and goes
  // to ERR; the requester's WQE completes with REMOTE_OP.
  open();
  pair(prm::qpc_st::kRc);
  ASSERT_FALSE(HasFailure());
  hca::Sge bad = b.buf->sge(0, 4096);
  bad.lkey ^= 0x700;  // another index (not 0x100, which would end the list)
  ASSERT_TRUE(post_recv(*qb, 1, bad).is_ok());
  ASSERT_TRUE(post_send(*qa, wr(1, WrOpcode::kSend), a.buf->sge(0, 100)).is_ok());
  auto wa = poll_cq(*a.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].syndrome, MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
  auto wb = poll_cq(*b.cq, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].syndrome, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  EXPECT_EQ(query(*qb).state, prm::qp_state::kErr);
}

TEST_F(DpModel, RcReadIntoABadLocalBufferIsALocalProtectionError) {
  open();
  pair(prm::qpc_st::kRc);
  ASSERT_FALSE(HasFailure());
  auto r = wr(1, WrOpcode::kRdmaRead);
  r.remote_addr = b.buf->addr(0);
  r.rkey = b.buf->rkey();
  hca::Sge s = a.buf->sge(0, 2048);
  s.lkey ^= 0x700;
  ASSERT_TRUE(post_send(*qa, r, s).is_ok());
  auto wa = poll_cq(*a.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].syndrome, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  EXPECT_EQ(query(*qa).state, prm::qp_state::kErr);
  EXPECT_EQ(query(*qb).state, prm::qp_state::kRts) << "the responder did nothing wrong";
}

TEST_F(DpModel, RcSendLongerThanTheReceiveIsALengthErrorOnBothSides) {
  open();
  pair(prm::qpc_st::kRc);
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(post_recv(*qb, 1, b.buf->sge(0, 100)).is_ok());
  ASSERT_TRUE(post_recv(*qb, 2, b.buf->sge(4096, 100)).is_ok());
  ASSERT_TRUE(post_send(*qa, wr(1, WrOpcode::kSend), a.buf->sge(0, 500)).is_ok());
  auto wa = poll_cq(*a.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].syndrome, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
  auto wb = poll_cq(*b.cq, 2);
  ASSERT_EQ(wb.size(), 2u);
  EXPECT_EQ(wb[0].wr_id, 1u);
  EXPECT_EQ(wb[0].syndrome, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
  EXPECT_EQ(wb[1].wr_id, 2u);
  EXPECT_EQ(wb[1].syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
}

TEST_F(DpModel, RcWriteToAQpWithoutRemoteWriteIsAnInvalidRequest) {
  open();
  ConnectOptions o;
  o.rwe = false;
  pair(prm::qpc_st::kRc, o);
  ASSERT_FALSE(HasFailure());
  auto w = wr(1, WrOpcode::kRdmaWrite);
  w.remote_addr = b.buf->addr(0);
  w.rkey = b.buf->rkey();
  ASSERT_TRUE(post_send(*qa, w, a.buf->sge(0, 64)).is_ok());
  auto wa = poll_cq(*a.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].syndrome, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
  ASSERT_TRUE(
      b.node
          ->poll_until(
              [&] { return has_event(*b.node, prm::EventType::WQ_INVAL_REQ_ERROR, qb->qpn()); },
              kSecond)
          .is_ok());
}

TEST_F(DpModel, UcWriteWithABadRkeyIsDroppedSilently) {
  // IBTA UC responder errors (class D / E, as rxe_resp.c): an RDMA WRITE
  // with an R_Key violation is dropped whole — no CQE, no error, the QP
  // stays in RTS and the receive WQE a WRITE with immediate would have used
  // goes to the next message.
  open();
  pair(prm::qpc_st::kUc);
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(post_recv(*qb, 1, b.buf->sge(0, 64)).is_ok());
  fill_pattern(a.buf->data, 3000, 21);
  auto bad = wr(1, WrOpcode::kRdmaWriteImm);
  bad.remote_addr = b.buf->addr(8192);
  bad.rkey = b.buf->rkey() ^ 0x5500;  // another key
  bad.imm = 1;
  auto good = bad;
  good.wr_id = 2;
  good.rkey = b.buf->rkey();
  good.remote_addr = b.buf->addr(16384);
  good.imm = 2;
  ASSERT_TRUE(post_send(*qa, bad, a.buf->sge(0, 3000)).is_ok());  // three packets
  ASSERT_TRUE(post_send(*qa, good, a.buf->sge(0, 3000)).is_ok());
  auto wa = poll_cq(*a.cq, 2);
  ASSERT_EQ(wa.size(), 2u);
  for (const auto& wc : wa) EXPECT_EQ(wc.status, KBV_SUCCESS) << "UC: the requester never knows";
  auto wb = poll_cq(*b.cq, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].status, KBV_SUCCESS);
  EXPECT_EQ(wb[0].wr_id, 1u);
  EXPECT_EQ(wb[0].imm, 2u) << "the dropped WRITE consumed no receive";
  EXPECT_EQ(check_pattern(b.buf->data + 16384, 3000, 21), 3000u);
  EXPECT_TRUE(drain_cq(*b.cq, std::chrono::milliseconds(10)).empty());
  EXPECT_EQ(query(*qb).state, prm::qp_state::kRts);
  EXPECT_EQ(b.node->model->engine_stats().uc_error_drops, 1u);
  EXPECT_EQ(b.node->model->engine_stats().naks_sent, 0u);
}

TEST_F(DpModel, ModifyToErrorFlushesPostedReceives) {
  open();
  pair(prm::qpc_st::kRc);
  ASSERT_FALSE(HasFailure());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(post_recv(*qb, 40 + i, b.buf->sge(0, 64)).is_ok());
  ASSERT_TRUE(
      b.node->sync_status([&](auto cb) { return qb->qp->modify(QpTransition::kToErr, {}, 0, cb); })
          .is_ok());
  auto wb = poll_cq(*b.cq, 3);
  ASSERT_EQ(wb.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(wb[i].wr_id, 40u + i);
    EXPECT_EQ(wb[i].syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
  }
}

// The drain pattern (kernel mlx5_ib_drain_rq): move the QP to ERR, then
// post one receive — only the doorbell record changes, mlx5 has no receive
// doorbell — and wait for its flush completion. Nothing else wakes the
// model's engine meanwhile.
TEST_F(DpModel, ReceivePostedAfterErrorIsFlushedWithoutAnyOtherTraffic) {
  open();
  pair(prm::qpc_st::kRc);
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(
      b.node->sync_status([&](auto cb) { return qb->qp->modify(QpTransition::kToErr, {}, 0, cb); })
          .is_ok());
  EXPECT_TRUE(drain_cq(*b.cq, std::chrono::milliseconds(20)).empty());
  ASSERT_TRUE(post_recv(*qb, 77, b.buf->sge(0, 64)).is_ok());
  auto wb = poll_cq(*b.cq, 1, std::chrono::seconds(5));
  ASSERT_EQ(wb.size(), 1u) << "the drain receive never completed";
  EXPECT_EQ(wb[0].wr_id, 77u);
  EXPECT_EQ(wb[0].syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
  EXPECT_EQ(wb[0].status, KBV_ERR_WR_FLUSHED);
}

TEST_F(DpModel, CqOverrunRaisesACqErrorEvent) {
  open();
  auto small = make_cq(*b.node, 4);
  ASSERT_TRUE(small.has_value());
  const uint32_t ncqe = (*small)->cq->ncqe();
  auto ra = make_qp(*a.node, *a.cq, *a.cq);
  auto rb = make_qp(*b.node, **small, **small);
  ASSERT_TRUE(ra && rb);
  qa = std::move(*ra);
  qb = std::move(*rb);
  ASSERT_TRUE(connect_pair(*qa, *qb).is_ok());
  const uint32_t n = ncqe + 2;
  for (uint32_t i = 0; i < n; ++i) ASSERT_TRUE(post_recv(*qb, i, b.buf->sge(0, 64)).is_ok());
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_TRUE(post_send(*qa, wr(i, WrOpcode::kSend), a.buf->sge(0, 8)).is_ok());
  EXPECT_EQ(poll_cq(*a.cq, n).size(), n);  // the requester side is unaffected
  const uint32_t cqn = (*small)->cq->cqn();
  EXPECT_TRUE(
      b.node->poll_until([&] { return has_event(*b.node, prm::EventType::CQ_ERROR, cqn); }, kSecond)
          .is_ok());
  (void)destroy_qp(*qb);
  qb.reset();
  (void)b.node->sync_status([&](auto cb) { return (*small)->cq->destroy(cb); });
}

TEST_F(DpModel, SolicitedOnlyArmFiresOnTheSolicitedSend) {
  open();
  pair(prm::qpc_st::kRc);
  ASSERT_FALSE(HasFailure());
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(post_recv(*qb, i, b.buf->sge(0, 64)).is_ok());
  b.cq->cq->arm(true);
  ASSERT_TRUE(post_send(*qa, wr(1, WrOpcode::kSend), a.buf->sge(0, 8)).is_ok());
  ASSERT_EQ(poll_cq(*b.cq, 1).size(), 1u);
  pump_events(*b.node, 20);
  EXPECT_TRUE(b.node->comp_events.empty()) << "an unsolicited SEND does not fire the arm";
  ASSERT_TRUE(
      post_send(*qa, wr(2, WrOpcode::kSend, sf::kSignaled | sf::kSolicited), a.buf->sge(0, 8))
          .is_ok());
  ASSERT_TRUE(b.node->poll_until([&] { return !b.node->comp_events.empty(); }, kSecond).is_ok());
  EXPECT_EQ(b.node->comp_events.front(), b.cq->cq->cqn());
  EXPECT_EQ(b.node->comp_events.size(), 1u) << "one event per arm";
  EXPECT_EQ(poll_cq(*b.cq, 1).size(), 1u);
  // a's CQ was never armed: its completions raise no event.
  EXPECT_EQ(poll_cq(*a.cq, 2).size(), 2u);
  pump_events(*a.node, 10);
  EXPECT_TRUE(a.node->comp_events.empty());
}

TEST_F(DpModel, SolicitedRdmaWriteWithImmediateFiresASolicitedOnlyArm) {
  // IBTA 9.2.4: SE rides on the last packet of an RDMA WRITE with immediate
  // too; the responder's receive CQE is solicited and fires the arm.
  open();
  pair(prm::qpc_st::kRc);
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(post_recv(*qb, 1, b.buf->sge(0, 64)).is_ok());
  ASSERT_TRUE(post_recv(*qb, 2, b.buf->sge(0, 64)).is_ok());
  b.cq->cq->arm(true);
  auto w = wr(1, WrOpcode::kRdmaWriteImm);
  w.remote_addr = b.buf->addr(8192);
  w.rkey = b.buf->rkey();
  w.imm = 5;
  fill_pattern(a.buf->data, 3000, 12);  // three packets at the 1 KiB MTU
  ASSERT_TRUE(post_send(*qa, w, a.buf->sge(0, 3000)).is_ok());
  ASSERT_EQ(poll_cq(*b.cq, 1).size(), 1u);
  pump_events(*b.node, 20);
  EXPECT_TRUE(b.node->comp_events.empty()) << "not solicited: no event";
  w.wr_id = 2;
  w.flags |= sf::kSolicited;
  ASSERT_TRUE(post_send(*qa, w, a.buf->sge(0, 3000)).is_ok());
  ASSERT_TRUE(b.node->poll_until([&] { return !b.node->comp_events.empty(); }, kSecond).is_ok());
  EXPECT_EQ(b.node->comp_events.front(), b.cq->cq->cqn());
  auto wb = poll_cq(*b.cq, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].opcode, WcOpcode::kRecvRdmaImm);
  EXPECT_EQ(wb[0].imm, 5u);
  EXPECT_EQ(check_pattern(b.buf->data + 8192, 3000, 12), 3000u);
  EXPECT_EQ(poll_cq(*a.cq, 2).size(), 2u);
}

TEST_F(DpModel, SrqFeedsReceivesAndRaisesItsLimitEvent) {
  open();
  auto srq = make_srq(*b.node, 16, 1);
  ASSERT_TRUE(srq.has_value()) << srq.status().to_string();
  DpSrq& s = **srq;
  auto ra = make_qp(*a.node, *a.cq, *a.cq);
  auto rb = make_qp(*b.node, *b.cq, *b.cq, {}, &s);
  ASSERT_TRUE(ra && rb);
  qa = std::move(*ra);
  qb = std::move(*rb);
  ASSERT_TRUE(connect_pair(*qa, *qb).is_ok());
  for (int i = 0; i < 4; ++i) {
    hca::Sge g = b.buf->sge(i * 4096, 4096);
    hca::RecvWr w;
    w.wr_id = 70 + i;
    w.sg = std::span(&g, 1);
    ASSERT_TRUE(s.rq->post(std::span(&w, 1)).is_ok());
  }
  ASSERT_TRUE(b.node->sync_status([&](auto cb) { return s.srq->arm(3, cb); }).is_ok());
  for (int i = 0; i < 2; ++i) {
    fill_pattern(a.buf->data + i * 4096, 1000, 60 + i);
    ASSERT_TRUE(post_send(*qa, wr(i, WrOpcode::kSend), a.buf->sge(i * 4096, 1000)).is_ok());
  }
  auto wb = poll_cq(*b.cq, 2);
  ASSERT_EQ(wb.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(wb[i].wr_id, 70u + i);
    EXPECT_EQ(check_pattern(b.buf->data + i * 4096, 1000, 60 + i), 1000u);
  }
  // 4 posted, 2 taken: fewer than lwm 3 remain.
  EXPECT_TRUE(
      b.node
          ->poll_until(
              [&] { return has_event(*b.node, prm::EventType::SRQ_RQ_LIMIT, s.srq->srqn()); },
              kSecond)
          .is_ok());
  // Moved to ERR, the QP reports its last WQE from the SRQ (IBTA 11.6.3).
  ASSERT_TRUE(
      b.node->sync_status([&](auto cb) { return qb->qp->modify(QpTransition::kToErr, {}, 0, cb); })
          .is_ok());
  EXPECT_TRUE(
      b.node
          ->poll_until([&] { return has_event(*b.node, prm::EventType::SRQ_LAST_WQE, qb->qpn()); },
                       kSecond)
          .is_ok());
  EXPECT_TRUE(drain_cq(*b.cq, std::chrono::milliseconds(10)).empty())
      << "the SRQ's WQEs are not flushed with the QP";
  (void)destroy_qp(*qb);
  qb.reset();
  (void)b.node->sync_status([&](auto cb) { return s.srq->destroy(cb); });
}

}  // namespace
}  // namespace kbv::e2e
