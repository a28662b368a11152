// SPDX-License-Identifier: BSD-3-Clause
//
// Ring wrap end to end through kbv.h (kbv_post_send / kbv_post_recv /
// kbv_post_srq_recv / kbv_poll_cq / kbv_cq_resize) on two model HCAs: CQs
// of 4 entries (16 after a resize half way), SQ / RQ / SRQ of minimal depth,
// thousands of messages (RC, UC, UD; SEND, SEND with immediate, RDMA WRITE
// with immediate; inline or gathered; one WQE per post = BlueFlame copy, or
// a batch per post), asserting no CQ error, every completion in order and
// every byte intact.
//
// As dp_model_wrap_test.cpp: each round posts as many signalled requests as
// the CQs hold and waits until the model wrote every CQE of the round (its
// cqes counter) before polling, so each CQ is full when polled and a
// library that returns CQ space late or never gets a CQ overrun
// (KBV_EVENT_CQ_ERROR) in the second round.
#include <gtest/gtest.h>
#include <kbv/kbv.h>

#include <cstring>
#include <string>

#include "verbs_fixture.hpp"

namespace kbv::test {
namespace {

struct WrapCase {
  const char* name;
  uint32_t type;
  bool inl;
  bool bf;  // one WR per kbv_post_send
  bool srq;
  bool resize;
};

constexpr uint32_t kSlot = 4096;
constexpr uint32_t kGrh = 40;
constexpr uint32_t kSmall = 4, kLarge = 16;
constexpr uint32_t kMessages = 4096;

uint8_t pat(uint32_t m, size_t i) { return static_cast<uint8_t>(m * 131 + i * 7 + (i >> 8)); }

class VerbsWrap : public VerbsE2e, public ::testing::WithParamInterface<WrapCase> {
 protected:
  struct Side {
    SimDev* d = nullptr;
    kbv_pd_t pd = 0;
    kbv_cq_t cq = 0;
    kbv_qp_t qp = 0;
    kbv_srq_t srq = 0;
    kbv_mr_t mr = 0;
    uint32_t qpn = 0, lkey = 0, rkey = 0;
    std::vector<uint8_t> buf;
    uint64_t cqes0 = 0;
    uint64_t addr(size_t off) const { return reinterpret_cast<uint64_t>(buf.data()) + off; }
  };

  void setup(Side& s, SimDev& d, const WrapCase& c, uint32_t depth, bool with_srq) {
    s.d = &d;
    s.pd = alloc_pd(d);
    s.cq = make_cq(d, kSmall, events_);
    s.buf.assign(2 * kLarge * kSlot, 0);
    const uint32_t acc = KBV_ACCESS_LOCAL_WRITE | KBV_ACCESS_REMOTE_WRITE;
    ASSERT_EQ(kbv_mr_reg(s.pd, s.buf.data(), s.buf.size(), acc, KBV_EQ_NONE, 0, &s.mr),
              KBV_SUCCESS);
    ASSERT_EQ(kbv_mr_get_keys(s.mr, &s.lkey, &s.rkey), KBV_SUCCESS);
    if (with_srq) {
      kbv_srq_attr_t sa{};
      sa.max_wr = depth + 1;  // one WQE of the ring stays unused (kbv.h)
      sa.max_sge = 1;
      ASSERT_EQ(kbv_srq_create(s.pd, &sa, KBV_EQ_NONE, 0, &s.srq), KBV_SUCCESS);
    }
    kbv_qp_init_attr_t a{};
    a.qp_type = c.type;
    a.send_cq = s.cq;
    a.recv_cq = s.cq;
    a.srq = s.srq;
    a.cap.max_send_wr = depth;
    a.cap.max_recv_wr = depth;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = 64;
    a.event_eq = events_;
    kbv_status_t st = kbv_qp_create(s.pd, &a, KBV_EQ_NONE, 0, &s.qp);
    ASSERT_EQ(st, KBV_SUCCESS) << kbv_status_name(st);
    ASSERT_EQ(kbv_qp_get_num(s.qp, &s.qpn), KBV_SUCCESS);
  }

  // Drives progress until the model of s wrote `target` CQEs; fails on a
  // CQ error or QP event, or after the hang bound.
  void wait_cqes(Side& s, uint64_t target) {
    bool error = false;
    const bool ok = wait_until(
        events_,
        [&] {
          (void)kbv_device_progress(a.d->dev);  // both devices' events
          (void)kbv_device_progress(b.d->dev);
          kbv_event_t ev[8];
          int k = kbv_eq_poll(events_, ev, 8);
          for (int i = 0; i < k; ++i) {
            ADD_FAILURE() << "async event type " << ev[i].type << " status "
                          << kbv_status_name(static_cast<kbv_status_t>(ev[i].status)) << " info "
                          << ev[i].info;
            error = true;
          }
          return error || s.d->model->engine_stats().cqes >= s.cqes0 + target;
        },
        10000ms);
    ASSERT_FALSE(error);
    ASSERT_TRUE(ok) << s.d->model->engine_stats().cqes - s.cqes0 << " of " << target
                    << " CQEs written";
  }

  static std::vector<kbv_wc_t> take(kbv_cq_t cq, size_t n) {
    std::vector<kbv_wc_t> out(n);
    size_t got = 0;
    while (got < n) {
      int k = kbv_poll_cq(cq, out.data() + got, static_cast<uint32_t>(n - got));
      EXPECT_GE(k, 0);
      if (k <= 0) break;  // every CQE was written before: nothing to wait for
      got += static_cast<size_t>(k);
    }
    out.resize(got);
    kbv_wc_t extra;
    EXPECT_EQ(kbv_poll_cq(cq, &extra, 1), 0) << "more completions than work requests";
    return out;
  }

  void TearDown() override {
    for (Side* s : {&a, &b}) {
      if (s->qp) {
        EXPECT_EQ(kbv_qp_destroy(s->qp, KBV_EQ_NONE, 0), KBV_SUCCESS);
      }
      if (s->srq) {
        EXPECT_EQ(kbv_srq_destroy(s->srq, KBV_EQ_NONE, 0), KBV_SUCCESS);
      }
      if (s->cq) {
        EXPECT_EQ(kbv_cq_destroy(s->cq, KBV_EQ_NONE, 0), KBV_SUCCESS);
      }
      if (s->mr) {
        EXPECT_EQ(kbv_mr_dereg(s->mr, KBV_EQ_NONE, 0), KBV_SUCCESS);
      }
      if (s->pd) {
        EXPECT_EQ(kbv_pd_dealloc(s->pd, KBV_EQ_NONE, 0), KBV_SUCCESS);
      }
      *s = Side{};
    }
    VerbsE2e::TearDown();
  }

  Side a, b;
  kbv_eq_t events_ = 0;
};

TEST_P(VerbsWrap, EveryCompletionInOrderEveryByteIntact) {
  const WrapCase& c = GetParam();
  const bool ud = c.type == KBV_QPT_UD;
  events_ = make_eq();
  SimDev& da = open_dev();
  SimDev& db = open_dev();
  const uint32_t depth = c.resize ? kLarge : kSmall;
  setup(a, da, c, depth, false);
  setup(b, db, c, depth, c.srq);
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(connect(a.qp, c.type, *b.d, b.qpn), KBV_SUCCESS);
  ASSERT_EQ(connect(b.qp, c.type, *a.d, a.qpn, 200, 100), KBV_SUCCESS);
  kbv_ah_t ah = 0;
  if (ud) {
    kbv_ah_attr_t h{};
    std::memcpy(h.dgid, b.d->port.gids[0].gid, 16);
    h.dmac = b.d->port.gids[0].mac;
    ASSERT_EQ(kbv_ah_create(a.pd, &h, KBV_EQ_NONE, 0, &ah), KBV_SUCCESS);
  }
  a.cqes0 = a.d->model->engine_stats().cqes;
  b.cqes0 = b.d->model->engine_stats().cqes;

  const uint32_t max_len = c.inl ? 64 : (ud ? 2048 : 3000);
  auto len_of = [&](uint32_t m) { return 1 + (m * 397u) % max_len; };
  auto op_of = [&](uint32_t m) -> uint32_t {
    if (ud) return m % 2 ? KBV_WR_SEND_IMM : KBV_WR_SEND;
    return m % 3 == 0 ? KBV_WR_SEND : m % 3 == 1 ? KBV_WR_SEND_IMM : KBV_WR_RDMA_WRITE_IMM;
  };
  uint64_t done = 0;
  uint32_t w = kSmall;
  for (uint32_t m0 = 0; m0 < kMessages; m0 += w) {
    if (c.resize && m0 == kMessages / 2) {
      for (Side* s : {&a, &b}) {
        kbv_status_t st = kbv_cq_resize(s->cq, kLarge, KBV_EQ_NONE, 0);
        ASSERT_EQ(st, KBV_SUCCESS) << kbv_status_name(st);
      }
      w = kLarge;
    }
    const uint32_t n = std::min(w, kMessages - m0);
    std::vector<kbv_sge_t> rs(n), ss(n);
    std::vector<kbv_recv_wr_t> rw(n);
    std::vector<kbv_send_wr_t> sw(n);
    for (uint32_t k = 0; k < n; ++k) {
      const uint32_t m = m0 + k;
      rs[k] = {b.addr((m % w) * kSlot), kSlot, b.lkey};
      rw[k] = kbv_recv_wr_t{0x100000u + m, &rs[k], 1, 0};
      const uint32_t len = len_of(m);
      uint8_t* p = a.buf.data() + (m % w) * kSlot;
      for (uint32_t i = 0; i < len; ++i) p[i] = pat(m, i);
      ss[k] = {reinterpret_cast<uint64_t>(p), len, c.inl ? 0 : a.lkey};
      kbv_send_wr_t& x = sw[k];
      x = kbv_send_wr_t{};
      x.wr_id = m;
      x.opcode = op_of(m);
      x.flags = KBV_SEND_SIGNALED | (c.inl ? KBV_SEND_INLINE : 0);
      x.sg_list = &ss[k];
      x.num_sge = 1;
      x.imm = 0xC0DE0000u + m;
      if (x.opcode == KBV_WR_RDMA_WRITE_IMM) {
        x.remote_addr = b.addr(kLarge * kSlot + (m % w) * kSlot);
        x.rkey = b.rkey;
      }
      if (ud) {
        x.ah = ah;
        x.remote_qpn = b.qpn;
        x.remote_qkey = 0x11111111;
      }
    }
    uint32_t bad = 0;
    kbv_status_t st = c.srq ? kbv_post_srq_recv(b.srq, rw.data(), n, &bad)
                            : kbv_post_recv(b.qp, rw.data(), n, &bad);
    ASSERT_EQ(st, KBV_SUCCESS) << "recv " << m0 + bad << ": " << kbv_status_name(st);
    if (c.bf) {
      for (uint32_t k = 0; k < n; ++k) {
        st = kbv_post_send(a.qp, &sw[k], 1, nullptr);
        ASSERT_EQ(st, KBV_SUCCESS) << "send " << m0 + k << ": " << kbv_status_name(st);
      }
    } else {
      st = kbv_post_send(a.qp, sw.data(), n, &bad);
      ASSERT_EQ(st, KBV_SUCCESS) << "send " << m0 + bad << ": " << kbv_status_name(st);
    }
    done += n;
    wait_cqes(a, done);
    ASSERT_FALSE(HasFailure()) << "round at message " << m0;
    wait_cqes(b, done);
    ASSERT_FALSE(HasFailure()) << "round at message " << m0;
    auto wa = take(a.cq, n);
    auto wb = take(b.cq, n);
    ASSERT_EQ(wa.size(), n) << "round at message " << m0;
    ASSERT_EQ(wb.size(), n) << "round at message " << m0;
    for (uint32_t k = 0; k < n; ++k) {
      const uint32_t m = m0 + k;
      const uint32_t len = len_of(m);
      const uint32_t op = op_of(m);
      ASSERT_EQ(wa[k].status, KBV_SUCCESS) << "send " << m << " syndrome " << int{wa[k].syndrome};
      ASSERT_EQ(wa[k].wr_id, m);
      ASSERT_EQ(wa[k].opcode, op == KBV_WR_RDMA_WRITE_IMM ? KBV_WC_RDMA_WRITE : KBV_WC_SEND);
      ASSERT_EQ(wb[k].status, KBV_SUCCESS) << "recv " << m << " syndrome " << int{wb[k].syndrome};
      ASSERT_EQ(wb[k].wr_id, 0x100000u + m) << "receive completions out of order";
      ASSERT_EQ(wb[k].qp_num, b.qpn);
      ASSERT_EQ(bool(wb[k].flags & KBV_WC_WITH_IMM), op != KBV_WR_SEND) << m;
      if (op != KBV_WR_SEND) {
        ASSERT_EQ(wb[k].imm, 0xC0DE0000u + m);
      }
      const uint8_t* got;
      if (op == KBV_WR_RDMA_WRITE_IMM) {
        ASSERT_EQ(wb[k].opcode, KBV_WC_RECV_RDMA_WITH_IMM);
        got = b.buf.data() + kLarge * kSlot + (m % w) * kSlot;
      } else {
        ASSERT_EQ(wb[k].opcode, KBV_WC_RECV);
        got = b.buf.data() + (m % w) * kSlot + (ud ? kGrh : 0);
      }
      ASSERT_EQ(wb[k].byte_len, len + (ud ? kGrh : 0)) << m;
      for (uint32_t i = 0; i < len; ++i) {
        ASSERT_EQ(got[i], pat(m, i)) << "message " << m << " byte " << i;
      }
    }
  }
  EXPECT_EQ(done, kMessages);
  for (Side* s : {&a, &b}) {
    EXPECT_EQ(s->d->model->engine_stats().error_cqes, 0u);
  }
  if (ah) {
    EXPECT_EQ(kbv_ah_destroy(ah, KBV_EQ_NONE, 0), KBV_SUCCESS);
  }
}

const WrapCase kCases[] = {
    {"RcGather", KBV_QPT_RC, false, false, false, false},
    {"RcInlineBlueFlame", KBV_QPT_RC, true, true, false, false},
    {"RcSrqResize", KBV_QPT_RC, false, true, true, true},
    {"UcInlineBatch", KBV_QPT_UC, true, false, false, false},
    {"UcGatherBlueFlameResize", KBV_QPT_UC, false, true, false, true},
    {"UdInlineBlueFlame", KBV_QPT_UD, true, true, false, false},
    {"UdSrqBatch", KBV_QPT_UD, false, false, true, false},
};

INSTANTIATE_TEST_SUITE_P(Wrap, VerbsWrap, ::testing::ValuesIn(kCases),
                         [](const auto& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace kbv::test
