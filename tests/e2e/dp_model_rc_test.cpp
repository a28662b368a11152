// SPDX-License-Identifier: BSD-3-Clause
//
// The model's transport engine between two model HCAs in one process,
// driven by kbv's driver: every RC opcode with the data checked byte for
// byte (multi-packet SEND / WRITE / READ across the path MTU, immediate
// data, inline, atomics), PSNs wrapping past 2^24, QUERY_QP progress
// counters, unsignalled WQEs, fence ordering, UC SEND / WRITE.
#include "dp_model_fixture.hpp"

#include <time.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace kbv::e2e {
namespace {

// Tests that count packets exactly: an ack timeout of 4.096 us << 18 = 1 s
// keeps a slow run (sanitizers, a loaded machine) from resending anything.
ConnectOptions slow_timer() {
  ConnectOptions o;
  o.ack_timeout = 18;
  return o;
}

TEST_F(DpModel, RcEveryOpcodeByteForByte) {
  open();
  pair(prm::qpc_st::kRc, slow_timer());
  ASSERT_FALSE(HasFailure());
  std::byte* da = a.buf->data;
  std::byte* db = b.buf->data;
  // b receives the two SENDs and the inline SEND, and the WRITE_IMM's receive.
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(post_recv(*qb, 100 + i, b.buf->sge(i * 16384, 16384)).is_ok());
  constexpr uint32_t kSend = 5000, kImmLen = 700, kWrite = 9000, kRead = 6000;
  fill_pattern(da, kSend, 1);
  fill_pattern(da + 8192, kImmLen, 2);
  std::byte inl[48];
  fill_pattern(inl, sizeof inl, 3);
  fill_pattern(da + 16384, kWrite, 4);
  fill_pattern(db + 262144, kRead, 5);
  uint64_t* cs = reinterpret_cast<uint64_t*>(db + 300000 - 300000 % 8);
  uint64_t* fa = cs + 1;
  *cs = 0x1111222233334444ull;
  *fa = 1000;

  std::vector<hca::SendWr> w;
  std::vector<hca::Sge> s(8);
  s[0] = a.buf->sge(0, kSend);
  s[1] = a.buf->sge(8192, kImmLen);
  s[2] = hca::Sge{reinterpret_cast<uintptr_t>(inl), sizeof inl, 0};
  s[3] = a.buf->sge(16384, kWrite);
  s[4] = a.buf->sge(16384, 3000);  // three packets, ImmDt on the last
  s[5] = a.buf->sge(65536, kRead);
  s[6] = a.buf->sge(131072, 8);
  s[7] = a.buf->sge(131080, 8);
  w.push_back(wr(1, WrOpcode::kSend));
  w.push_back(wr(2, WrOpcode::kSendImm));
  w.back().imm = 0xA1B2C3D4;
  w.push_back(wr(3, WrOpcode::kSend, sf::kSignaled | sf::kInline));
  w.push_back(wr(4, WrOpcode::kRdmaWrite));
  w.back().remote_addr = b.buf->addr(196608);
  w.back().rkey = b.buf->rkey();
  w.push_back(wr(5, WrOpcode::kRdmaWriteImm));
  w.back().remote_addr = b.buf->addr(229376);
  w.back().rkey = b.buf->rkey();
  w.back().imm = 0x55667788;
  w.push_back(wr(6, WrOpcode::kRdmaRead));
  w.back().remote_addr = b.buf->addr(262144);
  w.back().rkey = b.buf->rkey();
  w.push_back(wr(7, WrOpcode::kAtomicCs));
  w.back().remote_addr = reinterpret_cast<uintptr_t>(cs);
  w.back().rkey = b.buf->rkey();
  w.back().compare_add = 0x1111222233334444ull;
  w.back().swap = 0xDEADBEEFCAFEF00Dull;
  w.push_back(wr(8, WrOpcode::kAtomicFa));
  w.back().remote_addr = reinterpret_cast<uintptr_t>(fa);
  w.back().rkey = b.buf->rkey();
  w.back().compare_add = 234;
  for (size_t i = 0; i < w.size(); ++i) w[i].sg = std::span(&s[i], 1);
  size_t bad = 99;
  Status ps = qa->sq->post(w, &bad);
  ASSERT_TRUE(ps.is_ok()) << ps.to_string() << " at " << bad;

  auto wa = poll_cq(*a.cq, 8);
  ASSERT_EQ(wa.size(), 8u);
  const WcOpcode ops[8] = {WcOpcode::kSend,      WcOpcode::kSend,      WcOpcode::kSend,
                           WcOpcode::kRdmaWrite, WcOpcode::kRdmaWrite, WcOpcode::kRdmaRead,
                           WcOpcode::kAtomicCs,  WcOpcode::kAtomicFa};
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(wa[i].status, KBV_SUCCESS) << i << " syndrome " << int{wa[i].syndrome};
    EXPECT_EQ(wa[i].wr_id, 1 + i);
    EXPECT_EQ(wa[i].opcode, ops[i]);
    EXPECT_EQ(wa[i].qpn, qa->qpn());
  }
  EXPECT_EQ(wa[5].byte_len, kRead);
  auto wb = poll_cq(*b.cq, 4);
  ASSERT_EQ(wb.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(wb[i].status, KBV_SUCCESS) << i << " syndrome " << int{wb[i].syndrome};
    EXPECT_EQ(wb[i].wr_id, 100 + i);
    EXPECT_EQ(wb[i].qpn, qb->qpn());
  }
  EXPECT_EQ(wb[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(wb[0].byte_len, kSend);
  EXPECT_FALSE(wb[0].flags & hca::wc_flags::kImm);
  EXPECT_EQ(wb[1].byte_len, kImmLen);
  EXPECT_TRUE(wb[1].flags & hca::wc_flags::kImm);
  EXPECT_EQ(wb[1].imm, 0xA1B2C3D4u);
  EXPECT_EQ(wb[2].byte_len, sizeof inl);
  EXPECT_EQ(wb[3].opcode, WcOpcode::kRecvRdmaImm);
  EXPECT_EQ(wb[3].imm, 0x55667788u);
  EXPECT_EQ(wb[3].byte_len, 3000u);

  EXPECT_EQ(check_pattern(db, kSend, 1), kSend);
  EXPECT_EQ(check_pattern(db + 16384, kImmLen, 2), kImmLen);
  EXPECT_EQ(std::memcmp(db + 32768, inl, sizeof inl), 0);
  EXPECT_EQ(check_pattern(db + 196608, kWrite, 4), kWrite);
  EXPECT_EQ(check_pattern(db + 229376, 3000, 4), 3000u);
  EXPECT_EQ(check_pattern(da + 65536, kRead, 5), kRead);
  uint64_t r_cs, r_fa;
  std::memcpy(&r_cs, da + 131072, 8);
  std::memcpy(&r_fa, da + 131080, 8);
  EXPECT_EQ(r_cs, 0x1111222233334444ull);
  EXPECT_EQ(*cs, 0xDEADBEEFCAFEF00Dull);
  EXPECT_EQ(r_fa, 1000u);
  EXPECT_EQ(*fa, 1234u);

  // Progress as QUERY_QP reports it: the SQ executed every block posted.
  hca::cmd::QpInfo i = query(*qa);
  EXPECT_EQ(i.state, prm::qp_state::kRts);
  // PSNs from 0xFFFF00 (connect_pair), wrapping past 2^24: SEND 5 + 1 + 1,
  // WRITE 9 + 3, READ 6 (its response packets), atomics 2 = 27.
  EXPECT_EQ(i.last_acked_psn, (0xFFFF00u + 27 - 1) & 0xFFFFFF);
  const auto st = a.node->model->engine_stats();
  // At a 1 KiB path MTU: SEND 5 + 1 + 1, WRITE 9 + 3, one READ request, two
  // atomics (the READ's 6 response packets come from b).
  EXPECT_EQ(st.tx_packets, 22u);
  EXPECT_EQ(b.node->model->engine_stats().tx_packets - b.node->model->engine_stats().acks_sent,
            6u + 2u);
  EXPECT_EQ(st.retransmits, 0u);
  EXPECT_EQ(b.node->model->engine_stats().naks_sent, 0u);
}

TEST_F(DpModel, RcLargeMessagesFlowThroughTheSendWindow) {
  // 512 KiB WRITE, SEND and READ at a 1 KiB MTU: 512 packets each, more than
  // the engine keeps in flight, so ACK progress must open the window.
  open();
  pair(prm::qpc_st::kRc, slow_timer());
  ASSERT_FALSE(HasFailure());
  constexpr uint32_t kLen = 512 * 1024;
  fill_pattern(a.buf->data, kLen, 91);
  fill_pattern(b.buf->data + kLen, kLen, 92);
  ASSERT_TRUE(post_recv(*qb, 1, b.buf->sge(0, kLen)).is_ok());
  auto w = wr(1, WrOpcode::kRdmaWrite);
  w.remote_addr = b.buf->addr(0);
  w.rkey = b.buf->rkey();
  ASSERT_TRUE(post_send(*qa, w, a.buf->sge(0, kLen)).is_ok());
  auto wa = poll_cq(*a.cq, 1);
  ASSERT_EQ(wa.size(), 1u);
  ASSERT_EQ(wa[0].status, KBV_SUCCESS);
  EXPECT_EQ(check_pattern(b.buf->data, kLen, 91), kLen);
  fill_pattern(a.buf->data, kLen, 93);
  ASSERT_TRUE(post_send(*qa, wr(2, WrOpcode::kSend), a.buf->sge(0, kLen)).is_ok());
  auto r = wr(3, WrOpcode::kRdmaRead);
  r.remote_addr = b.buf->addr(kLen);
  r.rkey = b.buf->rkey();
  ASSERT_TRUE(post_send(*qa, r, a.buf->sge(kLen, kLen)).is_ok());
  wa = poll_cq(*a.cq, 2);
  ASSERT_EQ(wa.size(), 2u);
  EXPECT_EQ(wa[0].status, KBV_SUCCESS);
  EXPECT_EQ(wa[1].status, KBV_SUCCESS);
  EXPECT_EQ(wa[1].byte_len, kLen);
  auto wb = poll_cq(*b.cq, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].byte_len, kLen);
  EXPECT_EQ(check_pattern(b.buf->data, kLen, 93), kLen);
  EXPECT_EQ(check_pattern(a.buf->data + kLen, kLen, 92), kLen);
  // Coalesced: at most one ACK per 16 packets plus one per message; and at
  // least one per window of 128 packets, or the WRITE and SEND could not
  // have finished.
  const uint64_t acks = b.node->model->engine_stats().acks_sent;
  EXPECT_LE(acks, 2u * kLen / 1024 / 16 + 2);
  EXPECT_GE(acks, 2u * kLen / 1024 / 128);
}

TEST_F(DpModel, IdleEnginesSleep) {
  // After traffic, with connected QPs and nothing to do, each model's
  // firmware thread (which runs its engine) sleeps in epoll: it wakes only
  // for the periodic command-queue scan (FwConfig::scan_interval), where a
  // polling loop would wake thousands of times per scan. Counted, not timed:
  // wait until both firmwares made 5 more scans and compare their wakes with
  // them (at most two wakes per scan: epoll rounds to milliseconds). The CPU an idle model costs is
  // measured in bench/idle_cpu_bench.cpp.
  open();
  pair(prm::qpc_st::kRc);
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(post_recv(*qb, 1, b.buf->sge(0, 64)).is_ok());
  ASSERT_TRUE(post_send(*qa, wr(1, WrOpcode::kSend), a.buf->sge(0, 64)).is_ok());
  ASSERT_EQ(poll_cq(*a.cq, 1).size(), 1u);
  ASSERT_EQ(poll_cq(*b.cq, 1).size(), 1u);
  sim::fw::Firmware* fws[2] = {&a.node->model->firmware(), &b.node->model->firmware()};
  // Start after a scan: traffic still in flight has been handled by then.
  auto scans_done = [&](const sim::fw::FwStats(&from)[2], uint64_t n) {
    return fws[0]->stats().scans >= from[0].scans + n && fws[1]->stats().scans >= from[1].scans + n;
  };
  auto wait_scans = [&](const sim::fw::FwStats(&from)[2], uint64_t n) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!scans_done(from, n) && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // polls the counters
    return scans_done(from, n);
  };
  sim::fw::FwStats s0[2] = {fws[0]->stats(), fws[1]->stats()};
  ASSERT_TRUE(wait_scans(s0, 1));
  sim::fw::FwStats s1[2] = {fws[0]->stats(), fws[1]->stats()};
  ASSERT_TRUE(wait_scans(s1, 5));
  for (int i = 0; i < 2; ++i) {
    const sim::fw::FwStats s2 = fws[i]->stats();
    const uint64_t wakes = s2.loop_passes - s1[i].loop_passes;
    const uint64_t scans = s2.scans - s1[i].scans;
    EXPECT_LE(wakes, 2 * scans + 2)
        << "firmware " << i << ": " << wakes << " wakes in " << scans << " scans";
  }
  // And a doorbell still wakes them.
  ASSERT_TRUE(post_recv(*qb, 2, b.buf->sge(0, 64)).is_ok());
  ASSERT_TRUE(post_send(*qa, wr(2, WrOpcode::kSend), a.buf->sge(0, 64)).is_ok());
  EXPECT_EQ(poll_cq(*a.cq, 1).size(), 1u);
}

TEST_F(DpModel, RcUnsignalledWqesCompleteSilentlyAndInOrder) {
  open();
  pair(prm::qpc_st::kRc);
  ASSERT_FALSE(HasFailure());
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(post_recv(*qb, 200 + i, b.buf->sge(i * 4096, 4096)).is_ok());
  for (int i = 0; i < 10; ++i) {
    fill_pattern(a.buf->data + i * 4096, 3000, 50 + i);
    auto x = wr(i, WrOpcode::kSend, i % 3 == 2 ? sf::kSignaled : 0);
    ASSERT_TRUE(post_send(*qa, x, a.buf->sge(i * 4096, 3000)).is_ok());
  }
  auto wa = poll_cq(*a.cq, 3);
  ASSERT_EQ(wa.size(), 3u);
  EXPECT_EQ(wa[0].wr_id, 2u);
  EXPECT_EQ(wa[1].wr_id, 5u);
  EXPECT_EQ(wa[2].wr_id, 8u);
  EXPECT_TRUE(drain_cq(*a.cq, std::chrono::milliseconds(20)).empty());
  auto wb = poll_cq(*b.cq, 10);
  ASSERT_EQ(wb.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(wb[i].wr_id, 200u + i);
    EXPECT_EQ(check_pattern(b.buf->data + i * 4096, 3000, 50 + i), 3000u) << i;
  }
}

TEST_F(DpModel, RcFenceMakesASendCarryTheDataAnEarlierReadBrought) {
  open();
  pair(prm::qpc_st::kRc);
  ASSERT_FALSE(HasFailure());
  // READ b[0..8 KiB) into a[64 KiB..], then SEND a[64 KiB..] back to b with
  // a fence: the SEND must gather after the READ completed.
  fill_pattern(b.buf->data, 8192, 77);
  ASSERT_TRUE(post_recv(*qb, 1, b.buf->sge(131072, 8192)).is_ok());
  auto rd = wr(1, WrOpcode::kRdmaRead);
  rd.remote_addr = b.buf->addr(0);
  rd.rkey = b.buf->rkey();
  auto sd = wr(2, WrOpcode::kSend, sf::kSignaled | sf::kFence);
  hca::Sge s1 = a.buf->sge(65536, 8192), s2 = a.buf->sge(65536, 8192);
  rd.sg = std::span(&s1, 1);
  sd.sg = std::span(&s2, 1);
  hca::SendWr both[2] = {rd, sd};
  ASSERT_TRUE(qa->sq->post(both).is_ok());
  auto wa = poll_cq(*a.cq, 2);
  ASSERT_EQ(wa.size(), 2u);
  EXPECT_EQ(wa[0].status, KBV_SUCCESS);
  EXPECT_EQ(wa[1].status, KBV_SUCCESS);
  auto wb = poll_cq(*b.cq, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].byte_len, 8192u);
  EXPECT_EQ(check_pattern(b.buf->data + 131072, 8192, 77), 8192u);
}

TEST_F(DpModel, UcSendAndWriteWithoutAcknowledgements) {
  open();
  pair(prm::qpc_st::kUc);
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(post_recv(*qb, 7, b.buf->sge(0, 8192)).is_ok());
  ASSERT_TRUE(post_recv(*qb, 8, b.buf->sge(8192, 64)).is_ok());
  fill_pattern(a.buf->data, 4000, 9);
  fill_pattern(a.buf->data + 16384, 3000, 10);
  ASSERT_TRUE(post_send(*qa, wr(1, WrOpcode::kSend), a.buf->sge(0, 4000)).is_ok());
  auto w = wr(2, WrOpcode::kRdmaWriteImm);
  w.remote_addr = b.buf->addr(65536);
  w.rkey = b.buf->rkey();
  w.imm = 42;
  ASSERT_TRUE(post_send(*qa, w, a.buf->sge(16384, 3000)).is_ok());
  auto wa = poll_cq(*a.cq, 2);
  ASSERT_EQ(wa.size(), 2u);
  EXPECT_EQ(wa[0].status, KBV_SUCCESS);
  EXPECT_EQ(wa[1].status, KBV_SUCCESS);
  auto wb = poll_cq(*b.cq, 2);
  ASSERT_EQ(wb.size(), 2u);
  EXPECT_EQ(wb[0].byte_len, 4000u);
  EXPECT_EQ(check_pattern(b.buf->data, 4000, 9), 4000u);
  EXPECT_EQ(wb[1].opcode, WcOpcode::kRecvRdmaImm);
  EXPECT_EQ(wb[1].imm, 42u);
  EXPECT_EQ(check_pattern(b.buf->data + 65536, 3000, 10), 3000u);
  EXPECT_EQ(b.node->model->engine_stats().acks_sent, 0u);
}

}  // namespace
}  // namespace kbv::e2e
