// SPDX-License-Identifier: BSD-3-Clause
//
// End to end: the fast path of include/kbv/kbv.h between two model HCAs in
// one process (RoCEv2 over loopback UDP) — every RC opcode through
// kbv_post_send / kbv_post_recv / kbv_poll_cq with the data checked byte for
// byte, UD with an address handle, SRQ receives, completion notification,
// error completions, and the CQ error and SRQ limit events.
#include <gtest/gtest.h>
#include <kbv/kbv.h>

#include <sys/mman.h>

#include <cstring>

#include "verbs_fixture.hpp"

namespace kbv::test {
namespace {

constexpr size_t kBuf = 1 << 20;

struct Side {
  SimDev* d = nullptr;
  kbv_pd_t pd = 0;
  kbv_cq_t cq = 0;
  kbv_qp_t qp = 0;
  uint32_t qpn = 0;
  kbv_mr_t mr = 0;
  uint32_t lkey = 0, rkey = 0;
  std::vector<uint8_t> buf;
  uint64_t addr(size_t off) const { return reinterpret_cast<uint64_t>(buf.data()) + off; }
  kbv_sge_t sge(size_t off, uint32_t len) const { return {addr(off), len, lkey}; }
};

void fill(uint8_t* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(seed * 31 + i * 7 + (i >> 8));
}

class VerbsData : public VerbsE2e {
 protected:
  void setup_side(Side& s, SimDev& d, uint32_t type, kbv_srq_t srq = 0, uint32_t cqe = 256,
                  kbv_eq_t cq_events = 0) {
    s.d = &d;
    s.pd = alloc_pd(d);
    s.cq = make_cq(d, cqe, cq_events);
    s.buf.assign(kBuf, 0);
    const uint32_t acc = KBV_ACCESS_LOCAL_WRITE | KBV_ACCESS_REMOTE_WRITE | KBV_ACCESS_REMOTE_READ |
                         KBV_ACCESS_REMOTE_ATOMIC;
    ASSERT_EQ(kbv_mr_reg(s.pd, s.buf.data(), s.buf.size(), acc, KBV_EQ_NONE, 0, &s.mr),
              KBV_SUCCESS);
    ASSERT_EQ(kbv_mr_get_keys(s.mr, &s.lkey, &s.rkey), KBV_SUCCESS);
    (void)srq;
    (void)type;
  }
  void make_qps(uint32_t type, kbv_srq_t srq_b = 0) {
    a.qp = make_qp(a.pd, type, a.cq, a.cq, 0, qp_events);
    b.qp = make_qp(b.pd, type, b.cq, b.cq, srq_b, qp_events);
    ASSERT_EQ(kbv_qp_get_num(a.qp, &a.qpn), KBV_SUCCESS);
    ASSERT_EQ(kbv_qp_get_num(b.qp, &b.qpn), KBV_SUCCESS);
    ASSERT_EQ(connect(a.qp, type, *b.d, b.qpn), KBV_SUCCESS);
    ASSERT_EQ(connect(b.qp, type, *a.d, a.qpn, 200, 100), KBV_SUCCESS);
  }
  void open_pair(uint32_t type) {
    SimDev& da = open_dev();
    SimDev& db = open_dev();
    setup_side(a, da, type);
    setup_side(b, db, type);
    make_qps(type);
  }
  // Polls cq until n completions arrived (driving progress), or the limit.
  static std::vector<kbv_wc_t> poll_n(kbv_cq_t cq, size_t n,
                                      std::chrono::milliseconds limit = 10000ms) {
    std::vector<kbv_wc_t> out;
    const auto end = std::chrono::steady_clock::now() + limit;
    while (out.size() < n && std::chrono::steady_clock::now() < end) {
      kbv_wc_t wc[16];
      int k = kbv_poll_cq(cq, wc, 16);
      EXPECT_GE(k, 0);
      if (k > 0) {
        out.insert(out.end(), wc, wc + k);
        continue;
      }
      std::this_thread::sleep_for(20us);
    }
    return out;
  }
  void close_side(Side& s) {
    if (s.qp) {
      EXPECT_EQ(kbv_qp_destroy(s.qp, KBV_EQ_NONE, 0), KBV_SUCCESS);
    }
    if (s.cq) {
      EXPECT_EQ(kbv_cq_destroy(s.cq, KBV_EQ_NONE, 0), KBV_SUCCESS);
    }
    if (s.mr) {
      EXPECT_EQ(kbv_mr_dereg(s.mr, KBV_EQ_NONE, 0), KBV_SUCCESS);
    }
    if (s.pd) {
      EXPECT_EQ(kbv_pd_dealloc(s.pd, KBV_EQ_NONE, 0), KBV_SUCCESS);
    }
    s = Side{};
  }
  void TearDown() override {
    close_side(a);
    close_side(b);
    VerbsE2e::TearDown();
  }
  Side a, b;
  kbv_eq_t qp_events = 0;  // async events of both QPs (0: none)
};

// The first event of `type` on eq within the limit (others are skipped).
kbv_event_t wait_type(kbv_eq_t eq, uint32_t type, std::chrono::milliseconds limit = 5000ms) {
  const auto end = std::chrono::steady_clock::now() + limit;
  kbv_event_t ev{};
  while (std::chrono::steady_clock::now() < end) {
    if (kbv_eq_poll(eq, &ev, 1) == 1 && ev.type == type) return ev;
    std::this_thread::sleep_for(50us);
  }
  return kbv_event_t{};
}

kbv_send_wr_t swr(uint64_t id, uint32_t op, const kbv_sge_t* sg, uint32_t n,
                  uint32_t flags = KBV_SEND_SIGNALED) {
  kbv_send_wr_t w{};
  w.wr_id = id;
  w.opcode = op;
  w.flags = flags;
  w.sg_list = sg;
  w.num_sge = n;
  return w;
}

TEST_F(VerbsData, RcEveryOpcodeByteForByte) {
  open_pair(KBV_QPT_RC);
  ASSERT_FALSE(HasFailure());
  constexpr uint32_t kSend = 5000, kImm = 700, kInl = 48, kWrite = 9000, kWImm = 3000, kRead = 6000;
  // b's receives: SEND, SEND_IMM, inline SEND, and the WRITE_IMM's.
  kbv_sge_t rs[4];
  kbv_recv_wr_t rw[4];
  for (int i = 0; i < 4; ++i) {
    rs[i] = b.sge(i * 16384, 16384);
    rw[i] = {100u + i, &rs[i], 1, 0};
  }
  uint32_t bad = 0;
  ASSERT_EQ(kbv_post_recv(b.qp, rw, 4, &bad), KBV_SUCCESS);

  uint8_t* pa = a.buf.data();
  uint8_t* pb = b.buf.data();
  fill(pa, kSend, 1);
  fill(pa + 8192, kImm, 2);
  uint8_t inl[kInl];
  fill(inl, kInl, 3);
  fill(pa + 16384, kWrite, 4);
  fill(pa + 32768, kWImm, 5);
  fill(pb + 262144, kRead, 6);
  uint64_t cs_old = 0x1111222233334444ull, fa_old = 1000;
  std::memcpy(pb + 300000, &cs_old, 8);
  std::memcpy(pb + 300008, &fa_old, 8);

  kbv_sge_t s[8] = {
      a.sge(0, kSend),      a.sge(8192, kImm),   {reinterpret_cast<uint64_t>(inl), kInl, 0},
      a.sge(16384, kWrite), a.sge(32768, kWImm), a.sge(65536, kRead),
      a.sge(131072, 8),     a.sge(131080, 8)};
  kbv_send_wr_t w[8] = {swr(1, KBV_WR_SEND, &s[0], 1),
                        swr(2, KBV_WR_SEND_IMM, &s[1], 1),
                        swr(3, KBV_WR_SEND, &s[2], 1, KBV_SEND_SIGNALED | KBV_SEND_INLINE),
                        swr(4, KBV_WR_RDMA_WRITE, &s[3], 1),
                        swr(5, KBV_WR_RDMA_WRITE_IMM, &s[4], 1),
                        swr(6, KBV_WR_RDMA_READ, &s[5], 1),
                        swr(7, KBV_WR_ATOMIC_CS, &s[6], 1),
                        swr(8, KBV_WR_ATOMIC_FA, &s[7], 1, KBV_SEND_SIGNALED | KBV_SEND_FENCE)};
  w[1].imm = 0xA1B2C3D4;
  w[3].remote_addr = b.addr(196608);
  w[3].rkey = b.rkey;
  w[4].remote_addr = b.addr(229376);
  w[4].rkey = b.rkey;
  w[4].imm = 0x55667788;
  w[5].remote_addr = b.addr(262144);
  w[5].rkey = b.rkey;
  w[6].remote_addr = b.addr(300000);
  w[6].rkey = b.rkey;
  w[6].compare_add = cs_old;
  w[6].swap = 0xDEADBEEFCAFEF00Dull;
  w[7].remote_addr = b.addr(300008);
  w[7].rkey = b.rkey;
  w[7].compare_add = 234;
  ASSERT_EQ(kbv_post_send(a.qp, w, 8, &bad), KBV_SUCCESS);

  auto ca = poll_n(a.cq, 8);
  ASSERT_EQ(ca.size(), 8u);
  const uint32_t want_op[8] = {KBV_WC_SEND,       KBV_WC_SEND,       KBV_WC_SEND,
                               KBV_WC_RDMA_WRITE, KBV_WC_RDMA_WRITE, KBV_WC_RDMA_READ,
                               KBV_WC_ATOMIC_CS,  KBV_WC_ATOMIC_FA};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(ca[i].wr_id, static_cast<uint64_t>(i + 1));
    EXPECT_EQ(ca[i].status, KBV_SUCCESS) << i << " " << kbv_status_name((kbv_status_t)ca[i].status);
    EXPECT_EQ(ca[i].opcode, want_op[i]) << i;
    EXPECT_EQ(ca[i].qp_num, a.qpn);
  }
  EXPECT_EQ(ca[5].byte_len, kRead);
  EXPECT_EQ(ca[6].byte_len, 8u);
  EXPECT_EQ(ca[7].byte_len, 8u);

  auto cb = poll_n(b.cq, 4);
  ASSERT_EQ(cb.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(cb[i].wr_id, 100u + i);
    EXPECT_EQ(cb[i].status, KBV_SUCCESS);
    EXPECT_EQ(cb[i].qp_num, b.qpn);
  }
  EXPECT_EQ(cb[0].opcode, static_cast<uint32_t>(KBV_WC_RECV));
  EXPECT_EQ(cb[0].byte_len, kSend);
  EXPECT_EQ(cb[0].flags & KBV_WC_WITH_IMM, 0u);
  EXPECT_EQ(cb[1].byte_len, kImm);
  EXPECT_TRUE(cb[1].flags & KBV_WC_WITH_IMM);
  EXPECT_EQ(cb[1].imm, 0xA1B2C3D4u);
  EXPECT_EQ(cb[2].byte_len, kInl);
  EXPECT_EQ(cb[3].opcode, static_cast<uint32_t>(KBV_WC_RECV_RDMA_WITH_IMM));
  EXPECT_TRUE(cb[3].flags & KBV_WC_WITH_IMM);
  EXPECT_EQ(cb[3].imm, 0x55667788u);
  EXPECT_EQ(cb[3].byte_len, kWImm);

  // Bytes.
  EXPECT_EQ(std::memcmp(pb, pa, kSend), 0);
  EXPECT_EQ(std::memcmp(pb + 16384, pa + 8192, kImm), 0);
  EXPECT_EQ(std::memcmp(pb + 32768, inl, kInl), 0);
  EXPECT_EQ(std::memcmp(pb + 196608, pa + 16384, kWrite), 0);
  EXPECT_EQ(std::memcmp(pb + 229376, pa + 32768, kWImm), 0);
  EXPECT_EQ(std::memcmp(pa + 65536, pb + 262144, kRead), 0);
  uint64_t v = 0;
  std::memcpy(&v, pa + 131072, 8);
  EXPECT_EQ(v, cs_old);  // the old value comes back
  std::memcpy(&v, pb + 300000, 8);
  EXPECT_EQ(v, 0xDEADBEEFCAFEF00Dull);
  std::memcpy(&v, pa + 131080, 8);
  EXPECT_EQ(v, fa_old);
  std::memcpy(&v, pb + 300008, 8);
  EXPECT_EQ(v, fa_old + 234);
}

TEST_F(VerbsData, CompletionNotificationAfterArming) {
  open_pair(KBV_QPT_RC);
  ASSERT_FALSE(HasFailure());
  kbv_eq_t eq = make_eq();
  ASSERT_EQ(kbv_cq_arm(b.cq, 0, eq, 42), KBV_PENDING);
  kbv_sge_t r = b.sge(0, 4096);
  kbv_recv_wr_t rw{9, &r, 1, 0};
  ASSERT_EQ(kbv_post_recv(b.qp, &rw, 1, nullptr), KBV_SUCCESS);
  fill(a.buf.data(), 100, 9);
  kbv_sge_t s = a.sge(0, 100);
  kbv_send_wr_t w = swr(1, KBV_WR_SEND, &s, 1);
  ASSERT_EQ(kbv_post_send(a.qp, &w, 1, nullptr), KBV_SUCCESS);
  kbv_event_t ev = wait_event(eq);
  EXPECT_EQ(ev.type, static_cast<uint32_t>(KBV_EVENT_COMP_NOTIFY));
  EXPECT_EQ(ev.user_data, 42u);
  EXPECT_EQ(ev.status, KBV_SUCCESS);
  EXPECT_EQ(ev.object, b.cq);
  auto wc = poll_n(b.cq, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 9u);
  EXPECT_EQ(std::memcmp(b.buf.data(), a.buf.data(), 100), 0);
  // One event per arm: nothing more without arming again.
  ASSERT_EQ(kbv_post_recv(b.qp, &rw, 1, nullptr), KBV_SUCCESS);
  ASSERT_EQ(kbv_post_send(a.qp, &w, 1, nullptr), KBV_SUCCESS);
  ASSERT_EQ(poll_n(b.cq, 1).size(), 1u);
  EXPECT_TRUE(wait_events(eq, 1, 100ms).empty());
  ASSERT_EQ(poll_n(a.cq, 2).size(), 2u);
}

TEST_F(VerbsData, SolicitedOnlyArmAndCancelledArm) {
  open_pair(KBV_QPT_RC);
  ASSERT_FALSE(HasFailure());
  kbv_eq_t eq = make_eq();
  kbv_sge_t r = b.sge(0, 4096);
  kbv_recv_wr_t rw{9, &r, 1, 0};
  kbv_sge_t s = a.sge(0, 64);
  kbv_send_wr_t plain = swr(1, KBV_WR_SEND, &s, 1);
  kbv_send_wr_t solicited = swr(2, KBV_WR_SEND, &s, 1);
  solicited.flags |= KBV_SEND_SOLICITED;
  // Armed for solicited completions only: an unsolicited receive completes
  // without an event, the solicited one raises it (IBTA 11.4.2.2).
  ASSERT_EQ(kbv_cq_arm(b.cq, 1, eq, 50), KBV_PENDING);
  ASSERT_EQ(kbv_post_recv(b.qp, &rw, 1, nullptr), KBV_SUCCESS);
  ASSERT_EQ(kbv_post_send(a.qp, &plain, 1, nullptr), KBV_SUCCESS);
  ASSERT_EQ(poll_n(b.cq, 1).size(), 1u);
  EXPECT_TRUE(wait_events(eq, 1, 100ms).empty());
  ASSERT_EQ(kbv_post_recv(b.qp, &rw, 1, nullptr), KBV_SUCCESS);
  ASSERT_EQ(kbv_post_send(a.qp, &solicited, 1, nullptr), KBV_SUCCESS);
  kbv_event_t ev = wait_event(eq);
  EXPECT_EQ(ev.type, static_cast<uint32_t>(KBV_EVENT_COMP_NOTIFY));
  EXPECT_EQ(ev.user_data, 50u);
  EXPECT_EQ(ev.status, KBV_SUCCESS);
  auto wc = poll_n(b.cq, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 9u);
  // An armed request cancelled by its user_data: one CANCELLED event, and
  // the completion that follows raises nothing.
  ASSERT_EQ(kbv_cq_arm(b.cq, 0, eq, 51), KBV_PENDING);
  EXPECT_EQ(kbv_eq_cancel(eq, 51), KBV_SUCCESS);
  ev = wait_event(eq);
  EXPECT_EQ(ev.type, static_cast<uint32_t>(KBV_EVENT_COMP_NOTIFY));
  EXPECT_EQ(ev.user_data, 51u);
  EXPECT_EQ(ev.status, KBV_ERR_CANCELLED);
  ASSERT_EQ(kbv_post_recv(b.qp, &rw, 1, nullptr), KBV_SUCCESS);
  ASSERT_EQ(kbv_post_send(a.qp, &plain, 1, nullptr), KBV_SUCCESS);
  ASSERT_EQ(poll_n(b.cq, 1).size(), 1u);
  EXPECT_TRUE(wait_events(eq, 1, 100ms).empty());
  // Arming again works: the next completion raises the event.
  ASSERT_EQ(kbv_cq_arm(b.cq, 0, eq, 52), KBV_PENDING);
  ASSERT_EQ(kbv_post_recv(b.qp, &rw, 1, nullptr), KBV_SUCCESS);
  ASSERT_EQ(kbv_post_send(a.qp, &plain, 1, nullptr), KBV_SUCCESS);
  ev = wait_event(eq);
  EXPECT_EQ(ev.user_data, 52u);
  EXPECT_EQ(ev.status, KBV_SUCCESS);
  ASSERT_EQ(poll_n(b.cq, 1).size(), 1u);
  ASSERT_EQ(poll_n(a.cq, 4).size(), 4u);
}

TEST_F(VerbsData, CqResizeKeepsItsQueuePairs) {
  open_pair(KBV_QPT_RC);
  ASSERT_FALSE(HasFailure());
  kbv_sge_t s = a.sge(0, 256);
  kbv_send_wr_t w = swr(1, KBV_WR_RDMA_WRITE, &s, 1);
  w.remote_addr = b.addr(4096);
  w.rkey = b.rkey;
  fill(a.buf.data(), 256, 40);
  ASSERT_EQ(kbv_post_send(a.qp, &w, 1, nullptr), KBV_SUCCESS);
  ASSERT_EQ(poll_n(a.cq, 1).size(), 1u);  // drained: now it may be resized
  ASSERT_EQ(kbv_cq_resize(a.cq, 1000, KBV_EQ_NONE, 0), KBV_SUCCESS);
  fill(a.buf.data(), 256, 41);
  w.wr_id = 2;
  ASSERT_EQ(kbv_post_send(a.qp, &w, 1, nullptr), KBV_SUCCESS);
  auto wc = poll_n(a.cq, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 2u);
  EXPECT_EQ(wc[0].status, KBV_SUCCESS);
  EXPECT_EQ(std::memcmp(b.buf.data() + 4096, a.buf.data(), 256), 0);
}

TEST_F(VerbsData, UcSendAndWrite) {
  open_pair(KBV_QPT_UC);
  ASSERT_FALSE(HasFailure());
  kbv_sge_t r = b.sge(0, 4096);
  kbv_recv_wr_t rw{3, &r, 1, 0};
  ASSERT_EQ(kbv_post_recv(b.qp, &rw, 1, nullptr), KBV_SUCCESS);
  fill(a.buf.data(), 3000, 50);
  fill(a.buf.data() + 8192, 2500, 51);
  kbv_sge_t s[2] = {a.sge(0, 3000), a.sge(8192, 2500)};
  // The WRITE goes first: the SEND's arrival then means it was placed.
  kbv_send_wr_t w[2] = {swr(1, KBV_WR_RDMA_WRITE, &s[1], 1), swr(2, KBV_WR_SEND_IMM, &s[0], 1)};
  w[1].imm = 0x77;
  w[0].remote_addr = b.addr(65536);
  w[0].rkey = b.rkey;
  // READ and atomics are RC only (IBTA 9.7): refused, nothing posted.
  kbv_send_wr_t rd = swr(9, KBV_WR_RDMA_READ, &s[0], 1);
  uint32_t bad = 7;
  EXPECT_EQ(kbv_post_send(a.qp, &rd, 1, &bad), KBV_ERR_INVALID_WR_TYPE);
  EXPECT_EQ(bad, 0u);
  ASSERT_EQ(kbv_post_send(a.qp, w, 2, &bad), KBV_SUCCESS);
  auto wa = poll_n(a.cq, 2);
  ASSERT_EQ(wa.size(), 2u);
  EXPECT_EQ(wa[0].status, KBV_SUCCESS);
  EXPECT_EQ(wa[1].status, KBV_SUCCESS);
  auto wb = poll_n(b.cq, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].byte_len, 3000u);
  EXPECT_EQ(wb[0].imm, 0x77u);
  EXPECT_EQ(std::memcmp(b.buf.data(), a.buf.data(), 3000), 0);
  EXPECT_EQ(std::memcmp(b.buf.data() + 65536, a.buf.data() + 8192, 2500), 0);
}

TEST_F(VerbsData, UdSendWithAddressHandle) {
  open_pair(KBV_QPT_UD);
  ASSERT_FALSE(HasFailure());
  kbv_ah_attr_t aa{};
  std::memcpy(aa.dgid, b.d->port.gids[0].gid, 16);
  aa.dmac = b.d->port.gids[0].mac;
  kbv_ah_t ah = 0;
  ASSERT_EQ(kbv_ah_create(a.pd, &aa, KBV_EQ_NONE, 0, &ah), KBV_SUCCESS);
  kbv_sge_t r = b.sge(0, 40 + 512);  // GRH + payload
  kbv_recv_wr_t rw{5, &r, 1, 0};
  ASSERT_EQ(kbv_post_recv(b.qp, &rw, 1, nullptr), KBV_SUCCESS);
  fill(a.buf.data(), 512, 11);
  kbv_sge_t s = a.sge(0, 512);
  kbv_send_wr_t w = swr(1, KBV_WR_SEND_IMM, &s, 1);
  w.imm = 0x01020304;
  w.ah = ah;
  w.remote_qpn = b.qpn;
  w.remote_qkey = 0x11111111;
  uint32_t bad = 9;
  // RDMA on UD is refused; so is a missing address handle.
  kbv_send_wr_t rd = swr(2, KBV_WR_RDMA_WRITE, &s, 1);
  rd.ah = ah;
  EXPECT_EQ(kbv_post_send(a.qp, &rd, 1, &bad), KBV_ERR_INVALID_WR_TYPE);
  kbv_send_wr_t noah = w;
  noah.ah = 0;
  EXPECT_EQ(kbv_post_send(a.qp, &noah, 1, &bad), KBV_ERR_INVALID_HANDLE);
  ASSERT_EQ(kbv_post_send(a.qp, &w, 1, &bad), KBV_SUCCESS);
  auto wa = poll_n(a.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, KBV_SUCCESS);
  auto wb = poll_n(b.cq, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].status, KBV_SUCCESS);
  EXPECT_EQ(wb[0].byte_len, 40u + 512);
  EXPECT_TRUE(wb[0].flags & KBV_WC_WITH_GRH);
  EXPECT_EQ(wb[0].network_hdr_type, KBV_WC_NETWORK_IPV4) << "the IPv4 header in bytes 20..39";
  EXPECT_TRUE(wb[0].flags & KBV_WC_WITH_IMM);
  EXPECT_EQ(wb[0].imm, 0x01020304u);
  EXPECT_EQ(wb[0].src_qp, a.qpn);
  EXPECT_EQ(std::memcmp(b.buf.data() + 40, a.buf.data(), 512), 0);
  EXPECT_EQ(kbv_ah_destroy(ah, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST_F(VerbsData, UdSendErrorThenSqeToRts) {
  open_pair(KBV_QPT_UD);
  ASSERT_FALSE(HasFailure());
  kbv_ah_attr_t aa{};
  std::memcpy(aa.dgid, b.d->port.gids[0].gid, 16);
  aa.dmac = b.d->port.gids[0].mac;
  kbv_ah_t ah = 0;
  ASSERT_EQ(kbv_ah_create(a.pd, &aa, KBV_EQ_NONE, 0, &ah), KBV_SUCCESS);
  kbv_sge_t r = b.sge(0, 40 + 256);
  kbv_recv_wr_t rw{5, &r, 1, 0};
  ASSERT_EQ(kbv_post_recv(b.qp, &rw, 1, nullptr), KBV_SUCCESS);
  // A send from memory no key covers: local protection error, QP to SQE.
  kbv_sge_t bad = {a.addr(0), 256, a.lkey ^ 0x7700};
  kbv_send_wr_t w = swr(1, KBV_WR_SEND, &bad, 1);
  w.ah = ah;
  w.remote_qpn = b.qpn;
  w.remote_qkey = 0x11111111;
  ASSERT_EQ(kbv_post_send(a.qp, &w, 1, nullptr), KBV_SUCCESS);
  auto wa = poll_n(a.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, KBV_ERR_LOCAL_PROTECTION) << kbv_status_name((kbv_status_t)wa[0].status);
  kbv_qp_attr_t q{};
  ASSERT_EQ(kbv_qp_query(a.qp, &q, KBV_EQ_NONE, 0), KBV_SUCCESS);
  ASSERT_EQ(q.qp_state, static_cast<uint32_t>(KBV_QPS_SQE));
  // The application names the state it knows: SQE -> RTS (SQERR2RTS).
  kbv_qp_attr_t x{};
  x.qp_state = KBV_QPS_RTS;
  x.cur_qp_state = KBV_QPS_SQE;
  ASSERT_EQ(kbv_qp_modify(a.qp, &x, KBV_QP_STATE | KBV_QP_CUR_STATE, KBV_EQ_NONE, 0), KBV_SUCCESS);
  fill(a.buf.data(), 256, 60);
  kbv_sge_t good = a.sge(0, 256);
  w.wr_id = 2;
  w.sg_list = &good;
  ASSERT_EQ(kbv_post_send(a.qp, &w, 1, nullptr), KBV_SUCCESS);
  wa = poll_n(a.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].wr_id, 2u);
  EXPECT_EQ(wa[0].status, KBV_SUCCESS);
  auto wb = poll_n(b.cq, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].status, KBV_SUCCESS);
  EXPECT_EQ(std::memcmp(b.buf.data() + 40, a.buf.data(), 256), 0);
  EXPECT_EQ(kbv_ah_destroy(ah, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST_F(VerbsData, SrqReceivesAndLimitEvent) {
  SimDev& da = open_dev();
  SimDev& db = open_dev();
  setup_side(a, da, KBV_QPT_RC);
  setup_side(b, db, KBV_QPT_RC);
  kbv_eq_t events = make_eq();
  kbv_srq_attr_t sa{};
  sa.max_wr = 15;
  sa.max_sge = 1;
  sa.event_eq = events;
  kbv_srq_t srq = 0;
  ASSERT_EQ(kbv_srq_create(b.pd, &sa, KBV_EQ_NONE, 0, &srq), KBV_SUCCESS);
  make_qps(KBV_QPT_RC, srq);
  ASSERT_FALSE(HasFailure());
  kbv_sge_t r[8];
  kbv_recv_wr_t rw[8];
  for (int i = 0; i < 8; ++i) {
    r[i] = b.sge(i * 4096, 4096);
    rw[i] = {200u + i, &r[i], 1, 0};
  }
  ASSERT_EQ(kbv_post_srq_recv(srq, rw, 8, nullptr), KBV_SUCCESS);
  ASSERT_EQ(kbv_srq_arm(srq, 4, KBV_EQ_NONE, 0), KBV_SUCCESS);
  kbv_sge_t s[5];
  kbv_send_wr_t w[5];
  for (int i = 0; i < 5; ++i) {
    fill(a.buf.data() + i * 1000, 1000, static_cast<uint8_t>(20 + i));
    s[i] = a.sge(i * 1000, 1000);
    w[i] = swr(1 + i, KBV_WR_SEND, &s[i], 1);
  }
  ASSERT_EQ(kbv_post_send(a.qp, w, 5, nullptr), KBV_SUCCESS);
  auto wb = poll_n(b.cq, 5);
  ASSERT_EQ(wb.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(wb[i].status, KBV_SUCCESS);
    EXPECT_EQ(wb[i].wr_id, 200u + i);
    EXPECT_EQ(std::memcmp(b.buf.data() + i * 4096, a.buf.data() + i * 1000, 1000), 0);
  }
  // 3 WQEs left < limit 4: one SRQ limit event.
  kbv_event_t ev = wait_event(events);
  EXPECT_EQ(ev.type, static_cast<uint32_t>(KBV_EVENT_SRQ_LIMIT));
  EXPECT_EQ(ev.object, srq);
  ASSERT_EQ(poll_n(a.cq, 5).size(), 5u);
  EXPECT_EQ(kbv_qp_destroy(b.qp, KBV_EQ_NONE, 0), KBV_SUCCESS);
  b.qp = 0;
  EXPECT_EQ(kbv_srq_destroy(srq, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST_F(VerbsData, RemoteAccessErrorCompletesWithItsStatus) {
  qp_events = make_eq();
  open_pair(KBV_QPT_RC);
  ASSERT_FALSE(HasFailure());
  kbv_sge_t s = a.sge(0, 64);
  kbv_send_wr_t w = swr(7, KBV_WR_RDMA_WRITE, &s, 1);
  w.remote_addr = b.addr(0);
  w.rkey = b.rkey ^ 0x55;  // no such key
  kbv_send_wr_t next = swr(8, KBV_WR_SEND, &s, 1);
  kbv_send_wr_t both[2] = {w, next};
  ASSERT_EQ(kbv_post_send(a.qp, both, 2, nullptr), KBV_SUCCESS);
  auto wa = poll_n(a.cq, 2);
  ASSERT_EQ(wa.size(), 2u);
  EXPECT_EQ(wa[0].wr_id, 7u);
  EXPECT_EQ(wa[0].status, KBV_ERR_REMOTE_ACCESS) << kbv_status_name((kbv_status_t)wa[0].status);
  EXPECT_NE(wa[0].syndrome, 0u);
  EXPECT_EQ(wa[1].wr_id, 8u);
  EXPECT_EQ(wa[1].status, KBV_ERR_WR_FLUSHED);
  // The responder's QP reports the access violation as an async event.
  kbv_event_t ev = wait_type(qp_events, KBV_EVENT_QP_ACCESS_ERROR);
  EXPECT_EQ(ev.type, static_cast<uint32_t>(KBV_EVENT_QP_ACCESS_ERROR));
  EXPECT_EQ(ev.object, b.qp);
  EXPECT_EQ(ev.info, b.qpn);
  // Both QPs are in error now; posting still works and flushes.
  kbv_qp_attr_t q{};
  ASSERT_EQ(kbv_qp_query(a.qp, &q, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(q.qp_state, static_cast<uint32_t>(KBV_QPS_ERR));
}

TEST_F(VerbsData, ReceiveTooSmallIsAQpFatalEvent) {
  qp_events = make_eq();
  open_pair(KBV_QPT_RC);
  ASSERT_FALSE(HasFailure());
  kbv_sge_t r = b.sge(0, 16);
  kbv_recv_wr_t rw{1, &r, 1, 0};
  ASSERT_EQ(kbv_post_recv(b.qp, &rw, 1, nullptr), KBV_SUCCESS);
  kbv_sge_t s = a.sge(0, 100);
  kbv_send_wr_t w = swr(2, KBV_WR_SEND, &s, 1);
  ASSERT_EQ(kbv_post_send(a.qp, &w, 1, nullptr), KBV_SUCCESS);
  auto wb = poll_n(b.cq, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].status, KBV_ERR_LOCAL_LENGTH) << kbv_status_name((kbv_status_t)wb[0].status);
  kbv_event_t ev = wait_type(qp_events, KBV_EVENT_QP_FATAL);
  EXPECT_EQ(ev.type, static_cast<uint32_t>(KBV_EVENT_QP_FATAL));
  EXPECT_EQ(ev.object, b.qp);
  auto wa = poll_n(a.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, KBV_ERR_REMOTE_INVALID_REQUEST)
      << kbv_status_name((kbv_status_t)wa[0].status);
}

TEST_F(VerbsData, DeviceFatalDuringTraffic) {
  // The fatal is injected through the model's health hook once traffic
  // flows, and the test waits for the DEVICE_FATAL event. Health checks every
  // 100 ms only bound how soon the syndrome is seen: a late health counter
  // (the model's thread descheduled on a loaded host) is reported, never
  // fatal (src/hca/health.hpp, health.c MAX_MISSES), so setup cannot fail
  // on a timer race.
  hca::HcaConfig cfg;
  cfg.health.interval_ns = 100'000'000;
  verbs::set_hca_config(cfg);
  kbv_eq_t events = make_eq();
  auto m = sim::Model::create(unique_name("dft"), sim::ModelConfig{});
  ASSERT_TRUE(m.has_value());
  auto owned = std::make_unique<SimDev>();
  owned->model = std::move(*m);
  owned->uri = "sim:" + owned->model->name();
  kbv_device_open_attr_t oa{};
  oa.event_eq = events;
  ASSERT_EQ(kbv_device_open(owned->uri.c_str(), &oa, KBV_EQ_NONE, 0, &owned->dev), KBV_SUCCESS);
  wait_port_active(*owned);
  devs_.push_back(std::move(owned));
  SimDev& da = *devs_.back();
  SimDev& db = open_dev();
  setup_side(a, da, KBV_QPT_RC);
  setup_side(b, db, KBV_QPT_RC);
  make_qps(KBV_QPT_RC);
  ASSERT_FALSE(HasFailure());
  // RDMA writes stream from a; the device dies in the middle.
  kbv_sge_t s = a.sge(0, 4096);
  kbv_send_wr_t w = swr(0, KBV_WR_RDMA_WRITE, &s, 1);
  w.remote_addr = b.addr(0);
  w.rkey = b.rkey;
  bool fatal = false, injected = false;
  uint64_t posted = 0, completed = 0, flushed = 0;
  std::vector<int> seen;  // completions per wr_id
  auto take = [&](const kbv_wc_t* wc, int k) {
    for (int i = 0; i < k; ++i) {
      ASSERT_LT(wc[i].wr_id, seen.size());
      ++seen[wc[i].wr_id];
      EXPECT_TRUE(wc[i].status == KBV_SUCCESS || wc[i].status == KBV_ERR_WR_FLUSHED)
          << kbv_status_name(static_cast<kbv_status_t>(wc[i].status));
      if (wc[i].status == KBV_ERR_WR_FLUSHED) ++flushed;
    }
    completed += static_cast<uint64_t>(k);
  };
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (!fatal && std::chrono::steady_clock::now() < end) {
    w.wr_id = posted;
    kbv_status_t st = kbv_post_send(a.qp, &w, 1, nullptr);
    if (st == KBV_SUCCESS) {
      ++posted;
      seen.push_back(0);
    } else {
      EXPECT_TRUE(st == KBV_ERR_QUEUE_FULL || st == KBV_ERR_DEVICE_FATAL) << kbv_status_name(st);
    }
    kbv_wc_t wc[16];
    int k = kbv_poll_cq(a.cq, wc, 16);
    ASSERT_GE(k, 0);
    take(wc, k);
    if (!injected && completed >= 20) {  // traffic is flowing: now the device dies
      da.model->device().inject_health_fatal(0x1, 0x42);
      injected = true;
    }
    kbv_event_t ev;
    if (kbv_eq_poll(events, &ev, 1) == 1 && ev.type == KBV_EVENT_DEVICE_FATAL) {
      fatal = true;
      EXPECT_EQ(ev.status, KBV_ERR_DEVICE_FATAL);
      EXPECT_EQ(ev.object, da.dev);
    }
  }
  ASSERT_TRUE(injected);
  ASSERT_TRUE(fatal);
  EXPECT_GE(completed, 20u);
  // Every request still outstanding completes within 1 s of the fatal
  // event (flushed: the dead device writes no CQE), each exactly once.
  const auto flush_end = std::chrono::steady_clock::now() + 1s;
  while (completed < posted && std::chrono::steady_clock::now() < flush_end) {
    kbv_wc_t wc[16];
    int k = kbv_poll_cq(a.cq, wc, 16);
    ASSERT_GE(k, 0);
    take(wc, k);
  }
  EXPECT_EQ(completed, posted) << flushed << " flushed";
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << "wr_id " << i;
  EXPECT_EQ(kbv_post_send(a.qp, &w, 1, nullptr), KBV_ERR_DEVICE_FATAL);
  kbv_recv_wr_t rw{};
  EXPECT_EQ(kbv_post_recv(a.qp, &rw, 1, nullptr), KBV_ERR_DEVICE_FATAL);
  kbv_wc_t wc[4];
  EXPECT_GE(kbv_poll_cq(a.cq, wc, 4), 0);  // polling never crashes
  // Every close still completes (TearDown closes the rest and the devices).
}

TEST_F(VerbsData, DeviceFatalSeenByAProgramThatOnlyPolls) {
  // No event queue, no progress thread: a program that posts and polls
  // (kbv-perf's loops) still sees the device die — kbv_poll_cq drives the
  // device's health check — and every outstanding request completes, within
  // 1 s of the injection (health checked every 100 ms here).
  hca::HcaConfig cfg;
  cfg.health.interval_ns = 100'000'000;
  verbs::set_hca_config(cfg);
  SimDev& da = open_dev();
  SimDev& db = open_dev();
  setup_side(a, da, KBV_QPT_RC);
  setup_side(b, db, KBV_QPT_RC);
  make_qps(KBV_QPT_RC);
  ASSERT_FALSE(HasFailure());
  kbv_sge_t s = a.sge(0, 4096);
  kbv_send_wr_t w = swr(0, KBV_WR_RDMA_WRITE, &s, 1);
  w.remote_addr = b.addr(0);
  w.rkey = b.rkey;
  uint64_t posted = 0, completed = 0;
  std::chrono::steady_clock::time_point injected_at{};
  bool injected = false, dead = false;
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < end && !(dead && completed == posted)) {
    const kbv_status_t st = kbv_post_send(a.qp, &w, 1, nullptr);
    if (st == KBV_SUCCESS) w.wr_id = ++posted;
    dead = st == KBV_ERR_DEVICE_FATAL;
    kbv_wc_t wc[16];
    const int k = kbv_poll_cq(a.cq, wc, 16);
    ASSERT_GE(k, 0);
    completed += static_cast<uint64_t>(k);
    if (!injected && completed >= 20) {
      da.model->device().inject_health_fatal(0x1, 0x42);
      injected_at = std::chrono::steady_clock::now();
      injected = true;
    }
  }
  ASSERT_TRUE(injected);
  EXPECT_TRUE(dead);
  EXPECT_EQ(completed, posted);
  EXPECT_LT(std::chrono::steady_clock::now() - injected_at, 1s);
}

TEST_F(VerbsData, CqOverrunIsACqErrorEvent) {
  SimDev& da = open_dev();
  SimDev& db = open_dev();
  kbv_eq_t events = make_eq();
  setup_side(a, da, KBV_QPT_RC, 0, 2, events);
  setup_side(b, db, KBV_QPT_RC);
  make_qps(KBV_QPT_RC);
  ASSERT_FALSE(HasFailure());
  kbv_sge_t s = a.sge(0, 8);
  kbv_send_wr_t w[4];
  for (int i = 0; i < 4; ++i) {
    w[i] = swr(1 + i, KBV_WR_RDMA_WRITE, &s, 1);
    w[i].remote_addr = b.addr(0);
    w[i].rkey = b.rkey;
  }
  ASSERT_EQ(kbv_post_send(a.qp, w, 4, nullptr), KBV_SUCCESS);
  kbv_event_t ev{};
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < end) {
    if (kbv_eq_poll(events, &ev, 1) == 1 && ev.type == KBV_EVENT_CQ_ERROR) break;
    std::this_thread::sleep_for(50us);
  }
  EXPECT_EQ(ev.type, static_cast<uint32_t>(KBV_EVENT_CQ_ERROR));
  EXPECT_EQ(ev.object, a.cq);
  EXPECT_EQ(ev.status, KBV_ERR_OVERFLOW);
}

// Registration of memory the process cannot write (issue 16): any write
// right is refused with KBV_ERR_ACCESS_DENIED (the emulated VFIO kernel's
// MAP_DMA answers EFAULT, as Linux's pin_user_pages with FOLL_WRITE); read
// rights work, and a peer's RDMA READ from it returns its bytes.
TEST_F(VerbsData, ReadOnlyMemoryRegistersForReadsOnly) {
  open_pair(KBV_QPT_RC);
  ASSERT_FALSE(HasFailure());
  const size_t len = 3 * 4096;
  auto* ro = static_cast<uint8_t*>(
      ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(ro, MAP_FAILED);
  fill(ro, len, 21);
  ASSERT_EQ(::mprotect(ro, len, PROT_READ), 0);
  kbv_mr_t mr = 0;
  for (uint32_t acc : {KBV_ACCESS_LOCAL_WRITE, KBV_ACCESS_LOCAL_WRITE | KBV_ACCESS_REMOTE_WRITE,
                       KBV_ACCESS_LOCAL_WRITE | KBV_ACCESS_REMOTE_ATOMIC}) {
    EXPECT_EQ(kbv_mr_reg(b.pd, ro, len, acc, KBV_EQ_NONE, 0, &mr), KBV_ERR_ACCESS_DENIED) << acc;
    EXPECT_EQ(mr, kbv_mr_t{0});
  }
  ASSERT_EQ(kbv_mr_reg(b.pd, ro, len, KBV_ACCESS_REMOTE_READ, KBV_EQ_NONE, 0, &mr), KBV_SUCCESS);
  uint32_t lkey = 0, rkey = 0;
  ASSERT_EQ(kbv_mr_get_keys(mr, &lkey, &rkey), KBV_SUCCESS);
  kbv_sge_t s = a.sge(0, len - 100);
  kbv_send_wr_t w = swr(1, KBV_WR_RDMA_READ, &s, 1);
  w.remote_addr = reinterpret_cast<uint64_t>(ro) + 100;
  w.rkey = rkey;
  ASSERT_EQ(kbv_post_send(a.qp, &w, 1, nullptr), KBV_SUCCESS);
  auto wc = poll_n(a.cq, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, KBV_SUCCESS) << kbv_status_name((kbv_status_t)wc[0].status);
  EXPECT_EQ(std::memcmp(a.buf.data(), ro + 100, len - 100), 0);
  EXPECT_EQ(kbv_mr_dereg(mr, KBV_EQ_NONE, 0), KBV_SUCCESS);
  ::munmap(ro, len);
}

}  // namespace
}  // namespace kbv::test
