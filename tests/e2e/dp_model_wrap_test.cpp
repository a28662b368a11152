// SPDX-License-Identifier: BSD-3-Clause
//
// Ring wrap end to end through kbv's driver (src/hca) on two model HCAs:
// CQs of 4 entries (16 after a resize in the middle), SQs / RQs / SRQs of
// minimal depth, thousands of messages per run (RC, UC, UD; SEND, SEND with
// immediate, RDMA WRITE with immediate; inline or gathered; one WQE per
// post = BlueFlame copy, or a batch per post = doorbell only), asserting no
// CQ error, every completion in order and every byte intact.
//
// Each round posts exactly as many signalled work requests as the CQs hold
// and waits until the model has written every CQE of the round (its cqes
// counter) before polling: each CQ is full when it is polled. A driver that
// returns CQ space late (the consumer-index doorbell record one behind) or
// never makes the model report CQ overrun (a CQ_ERROR event, no more CQEs)
// in the second round; a driver that miscounts its SQ / RQ / SRQ ring posts
// over live WQEs or refuses with KBV_ERR_QUEUE_FULL.
#include "dp_model_fixture.hpp"

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

namespace kbv::e2e {
namespace {

struct WrapCase {
  const char* name;
  uint32_t st;
  bool inl;     // sends carry their data inline
  bool bf;      // one WQE per post (BlueFlame copy) instead of a batch per post
  bool srq;     // b receives through an SRQ
  bool resize;  // both CQs go 4 -> 16 entries half way
};

constexpr uint32_t kQkey = 0x11111111;
constexpr uint32_t kSlot = 4096;  // per outstanding message, both sides
constexpr uint32_t kGrh = 40;     // UD receive buffers start with the GRH area

class DpWrap : public DpModel, public ::testing::WithParamInterface<WrapCase> {
 protected:
  // CQEs the model has written on `n` since the start (EngineStats::cqes).
  static uint64_t model_cqes(DpNode& n) { return n.model->engine_stats().cqes; }

  // Drives n's driver until the model has written `target` CQEs on it;
  // fails on a CQ_ERROR event (overrun) or after the hang bound.
  void wait_cqes(DpNode& n, uint64_t target, const char* side) {
    Status s = n.poll_until(
        [&] {
          for (const auto& e : n.events)
            if (e.type == prm::to_u8(prm::EventType::CQ_ERROR)) return true;
          return model_cqes(n) >= target;
        },
        30 * kSecond);
    for (const auto& e : n.events) {
      ASSERT_NE(e.type, prm::to_u8(prm::EventType::CQ_ERROR))
          << side << ": CQ " << e.cqn << " error, syndrome " << int{e.cq_syndrome};
    }
    ASSERT_TRUE(s.is_ok()) << side << ": " << model_cqes(n) << " of " << target
                           << " CQEs written: " << s.to_string();
  }

  // Polls exactly `n` completions (already written) from cq.
  static std::vector<hca::WorkCompletion> take(DpCq& cq, size_t n) {
    auto wc = poll_cq(cq, n, std::chrono::seconds(5));
    hca::WorkCompletion extra[1];
    EXPECT_EQ(cq.poller->poll(extra), 0u) << "more CQEs than work requests";
    return wc;
  }

  void resize(DpNode& n, DpCq& c, uint32_t cqe, std::vector<DpQp*> qps) {
    Status s = n.sync_status([&](auto cb) { return c.cq->resize(cqe, cb); });
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_EQ(c.cq->ncqe(), cqe);
    auto p = hca::CqPoller::for_cq(*c.cq);
    ASSERT_TRUE(p.has_value()) << p.status().to_string();
    c.poller.emplace(std::move(*p));
    for (DpQp* q : qps) {
      hca::RecvQueue* rq = q->rq ? &*q->rq : nullptr;
      hca::SrqQueue* sr = srq_ && q == qb.get() ? &*srq_->rq : nullptr;
      ASSERT_TRUE(c.poller->attach(q->qpn(), &*q->sq, rq, sr).is_ok());
    }
  }

  void TearDown() override {
    for (auto* q : {&qa, &qb})
      if (*q) (void)destroy_qp(**q);
    qa.reset();
    qb.reset();
    if (srq_) (void)b.node->sync_status([&](auto cb) { return srq_->srq->destroy(cb); });
    srq_.reset();
    // (not a structured binding: clang 14, the TSan build's compiler, cannot
    // capture one in a lambda)
    for (auto sc : {std::pair{&a, &cq_a}, std::pair{&b, &cq_b}}) {
      auto* c = sc.second;
      if (*c) (void)sc.first->node->sync_status([&](auto cb) { return (*c)->cq->destroy(cb); });
    }
    cq_a.reset();
    cq_b.reset();
    DpModel::TearDown();
  }

  std::unique_ptr<DpCq> cq_a, cq_b;
  std::unique_ptr<DpSrq> srq_;
};

TEST_P(DpWrap, EveryCompletionInOrderEveryByteIntact) {
  const WrapCase& c = GetParam();
  const bool ud = c.st == prm::qpc_st::kUd;
  const bool rc = c.st == prm::qpc_st::kRc;
  constexpr uint32_t kSmall = 4, kLarge = 16;
  constexpr uint32_t kMessages = 4096;
  open();
  ASSERT_FALSE(HasFailure());
  // Each side's QP sends and receives on one CQ of 4 entries.
  for (auto [s, cq] : {std::pair{&a, &cq_a}, std::pair{&b, &cq_b}}) {
    auto r = make_cq(*s->node, kSmall);
    ASSERT_TRUE(r.has_value()) << r.status().to_string();
    *cq = std::move(*r);
    ASSERT_EQ((*cq)->cq->ncqe(), kSmall);
  }
  // Minimal depth: the rings hold what one round posts (16 after a resize).
  const uint32_t depth = c.resize ? kLarge : kSmall;
  QpOptions qo;
  qo.st = c.st;
  qo.max_send_wr = depth;
  qo.max_recv_wr = depth;
  qo.max_send_sge = 1;
  qo.max_recv_sge = 1;
  qo.max_inline = 64;
  if (c.srq) {
    // An SRQ ring keeps one WQE unused (hca/dp/rq.hpp): one more than a round.
    auto r = make_srq(*b.node, depth + 1, 1);
    ASSERT_TRUE(r.has_value()) << r.status().to_string();
    srq_ = std::move(*r);
  }
  auto ra = make_qp(*a.node, *cq_a, *cq_a, qo);
  ASSERT_TRUE(ra.has_value()) << ra.status().to_string();
  qa = std::move(*ra);
  auto rb = make_qp(*b.node, *cq_b, *cq_b, qo, srq_.get());
  ASSERT_TRUE(rb.has_value()) << rb.status().to_string();
  qb = std::move(*rb);
  std::optional<hca::Ah> ah;
  if (ud) {
    ASSERT_TRUE(to_rts_ud(*qa, kQkey).is_ok());
    ASSERT_TRUE(to_rts_ud(*qb, kQkey).is_ok());
    auto h = make_ah(*a.node, *b.node, qb->qpn(), kQkey);
    ASSERT_TRUE(h.has_value()) << h.status().to_string();
    ah = *h;
  } else {
    ConnectOptions o;
    o.ack_timeout = 14;  // 67 ms: a loaded machine does not retransmit
    Status s = connect_pair(*qa, *qb, o);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
  }

  // Message m: length, opcode, source bytes (pattern m).
  const uint32_t max_len = c.inl ? 64 : (ud ? 2048 : 3000);
  auto len_of = [&](uint32_t m) { return 1 + (m * 397u) % max_len; };
  auto op_of = [&](uint32_t m) {
    if (ud) return m % 2 ? WrOpcode::kSendImm : WrOpcode::kSend;
    switch (m % 3) {
      case 0: return WrOpcode::kSend;
      case 1: return WrOpcode::kSendImm;
      default: return WrOpcode::kRdmaWriteImm;
    }
  };
  std::byte* src = a.buf->data;
  std::byte* dst = b.buf->data;
  const uint64_t cqes_a0 = model_cqes(*a.node), cqes_b0 = model_cqes(*b.node);
  uint64_t done = 0;
  uint32_t w = kSmall;
  for (uint32_t m0 = 0; m0 < kMessages; m0 += w) {
    if (c.resize && m0 == kMessages / 2) {
      resize(*a.node, *cq_a, kLarge, {qa.get()});
      resize(*b.node, *cq_b, kLarge, {qb.get()});
      ASSERT_FALSE(HasFailure());
      w = kLarge;
    }
    const uint32_t n = std::min(w, kMessages - m0);
    // b: one receive per message, into the slot of the message.
    for (uint32_t k = 0; k < n; ++k) {
      const uint32_t m = m0 + k;
      hca::Sge sge = b.buf->sge((m % w) * kSlot, kSlot);
      hca::RecvWr rw;
      rw.wr_id = 0x100000 + m;
      rw.sg = std::span(&sge, 1);
      Status s = c.srq ? srq_->rq->post(std::span(&rw, 1)) : qb->rq->post(std::span(&rw, 1));
      ASSERT_TRUE(s.is_ok()) << "recv " << m << ": " << s.to_string();
    }
    // a: the messages, one post each (BlueFlame) or one post for all.
    std::vector<hca::SendWr> wrs(n);
    std::vector<hca::Sge> sges(n);
    for (uint32_t k = 0; k < n; ++k) {
      const uint32_t m = m0 + k;
      const uint32_t len = len_of(m);
      std::byte* p = src + (m % w) * kSlot;
      fill_pattern(p, len, m);
      sges[k] = c.inl ? hca::Sge{reinterpret_cast<uintptr_t>(p), len, 0}
                      : a.buf->sge((m % w) * kSlot, len);
      hca::SendWr& x = wrs[k];
      x.wr_id = m;
      x.opcode = op_of(m);
      x.flags = sf::kSignaled | (c.inl ? sf::kInline : 0);
      x.imm = 0xC0DE0000u + m;
      x.sg = std::span(&sges[k], 1);
      if (x.opcode == WrOpcode::kRdmaWriteImm) {
        // The WRITE lands past the receive slots; the receive WQE only
        // carries the immediate.
        x.remote_addr = b.buf->addr(kLarge * kSlot + (m % w) * kSlot);
        x.rkey = b.buf->rkey();
      }
      if (ud) {
        x.ah = &*ah;
        x.remote_qpn = qb->qpn();
        x.q_key = kQkey;
      }
    }
    if (c.bf) {
      for (uint32_t k = 0; k < n; ++k) {
        Status s = qa->sq->post(std::span(&wrs[k], 1));
        ASSERT_TRUE(s.is_ok()) << "send " << m0 + k << ": " << s.to_string();
      }
    } else {
      size_t bad = 0;
      Status s = qa->sq->post(wrs, &bad);
      ASSERT_TRUE(s.is_ok()) << "send " << m0 + bad << ": " << s.to_string();
    }
    // Every CQE of the round written: both CQs are full now.
    done += n;
    wait_cqes(*a.node, cqes_a0 + done, "a");
    wait_cqes(*b.node, cqes_b0 + done, "b");
    ASSERT_FALSE(HasFailure()) << "round at message " << m0;
    auto wa = take(*cq_a, n);
    auto wb = take(*cq_b, n);
    ASSERT_EQ(wa.size(), n) << "round at message " << m0;
    ASSERT_EQ(wb.size(), n) << "round at message " << m0;
    for (uint32_t k = 0; k < n; ++k) {
      const uint32_t m = m0 + k;
      const uint32_t len = len_of(m);
      const WrOpcode op = op_of(m);
      ASSERT_EQ(wa[k].status, KBV_SUCCESS) << "send " << m << " syndrome " << int{wa[k].syndrome};
      ASSERT_EQ(wa[k].wr_id, m);
      ASSERT_EQ(wa[k].opcode,
                op == WrOpcode::kRdmaWriteImm ? WcOpcode::kRdmaWrite : WcOpcode::kSend);
      ASSERT_EQ(wb[k].status, KBV_SUCCESS) << "recv " << m << " syndrome " << int{wb[k].syndrome};
      ASSERT_EQ(wb[k].wr_id, 0x100000u + m) << "receive completions out of order";
      ASSERT_EQ(wb[k].qpn, qb->qpn());
      const bool imm = op != WrOpcode::kSend;
      ASSERT_EQ(bool(wb[k].flags & hca::wc_flags::kImm), imm) << m;
      if (imm) {
        ASSERT_EQ(wb[k].imm, 0xC0DE0000u + m);
      }
      const std::byte* got;
      if (op == WrOpcode::kRdmaWriteImm) {
        ASSERT_EQ(wb[k].opcode, WcOpcode::kRecvRdmaImm);
        got = dst + kLarge * kSlot + (m % w) * kSlot;
      } else {
        ASSERT_EQ(wb[k].opcode, WcOpcode::kRecv);
        got = dst + (m % w) * kSlot + (ud ? kGrh : 0);
      }
      ASSERT_EQ(wb[k].byte_len, len + (ud ? kGrh : 0)) << m;
      ASSERT_EQ(check_pattern(got, len, m), len) << "message " << m << " corrupted";
    }
  }
  EXPECT_EQ(done, kMessages);
  for (DpNode* n : {a.node.get(), b.node.get()}) {
    const auto st = n->model->engine_stats();
    EXPECT_EQ(st.error_cqes, 0u);
    EXPECT_EQ(st.flush_cqes, 0u);
  }
  if (rc) {
    EXPECT_EQ(query(*qa).state, prm::qp_state::kRts);
  }
}

const WrapCase kCases[] = {
    {"RcGather", prm::qpc_st::kRc, false, false, false, false},
    {"RcInlineBlueFlame", prm::qpc_st::kRc, true, true, false, false},
    {"RcGatherBlueFlame", prm::qpc_st::kRc, false, true, false, false},
    {"RcInlineBatch", prm::qpc_st::kRc, true, false, false, false},
    {"RcSrq", prm::qpc_st::kRc, false, true, true, false},
    {"RcResize", prm::qpc_st::kRc, false, false, false, true},
    {"UcGather", prm::qpc_st::kUc, false, false, false, false},
    {"UcInlineBlueFlame", prm::qpc_st::kUc, true, true, false, false},
    {"UcResizeSrq", prm::qpc_st::kUc, true, false, true, true},
    {"UdGather", prm::qpc_st::kUd, false, false, false, false},
    {"UdInlineBlueFlame", prm::qpc_st::kUd, true, true, false, false},
    {"UdSrqResize", prm::qpc_st::kUd, false, true, true, true},
};

INSTANTIATE_TEST_SUITE_P(Wrap, DpWrap, ::testing::ValuesIn(kCases),
                         [](const auto& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace kbv::e2e
