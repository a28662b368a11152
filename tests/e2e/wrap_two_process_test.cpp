// SPDX-License-Identifier: BSD-3-Clause
//
// Ring wrap across two processes (issue 21; wrap_proto.hpp): this test and
// e2e_wrap_peer (fork + exec), each with its own model HCA, a CQ of
// kWrapCqe entries and queues kWrapDepth deep, run a 3000-message RC stream
// (SEND_IMM, inline SEND, RDMA_WRITE_IMM) and a 400-round UD ping-pong
// through them: every ring of both processes wraps hundreds of times. Both
// sides check every completion (status, order, opcode, length, immediate)
// and every byte; a driver that returned ring space late or early, or
// mis-tracked an owner bit across a wrap, fails here.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <deque>
#include <string>

#include "peer_process.hpp"
#include "wrap_proto.hpp"

namespace kbv::peer {
namespace {

// Polls one completion (60 s bound on a hang, not a measurement).
bool poll_one(Endpoint& e, kbv_wc_t& wc) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < end) {
    if (kbv_poll_cq(e.cq, &wc, 1) == 1) return true;
    (void)kbv_device_progress(e.dev);
  }
  return false;
}

TEST(WrapTwoProcess, RingsWrapHundredsOfTimesInBothProcesses) {
  PeerProcess peer;
  ASSERT_TRUE(peer.start("e2e_wrap_peer")) << std::strerror(errno);
  const int fd = peer.fd();

  Endpoint e;
  ASSERT_TRUE(e.open("sim:wrap-" + std::to_string(::getpid()), kWrapCqe, kWrapDepth)) << e.err;
  PeerInfo mine = e.info(), theirs;
  ASSERT_TRUE(send_all(fd, &mine, sizeof mine));
  ASSERT_TRUE(recv_all(fd, &theirs, sizeof theirs));
  ASSERT_TRUE(e.connect(theirs, 100, 200)) << e.err;
  // UD receives for the peer's answers, posted before it may answer.
  uint8_t* p = e.buf.data();
  kbv_sge_t us[kWrapDepth];
  uint32_t bad = 0;
  for (uint32_t i = 0; i < kWrapDepth; ++i) {
    us[i] = e.sge(kWrapUdOff + i * 1024, 40 + kUdLen);
    kbv_recv_wr_t u{100 + i, &us[i], 1, 0};
    ASSERT_EQ(kbv_post_recv(e.ud, &u, 1, &bad), KBV_SUCCESS);
  }
  char c = 0;
  ASSERT_TRUE(recv_all(fd, &c, 1));  // the peer's receives are posted
  ASSERT_EQ(c, 'r');

  // 1. The RC stream: the send queue kept full, completions in order.
  // Source data of message k at k % 8 regions of kSlot.
  uint32_t posted = 0, done = 0;
  std::deque<uint32_t> outstanding;
  while (done < kRcMessages) {
    while (posted < kRcMessages && outstanding.size() < kWrapDepth) {
      const uint32_t k = posted;
      const uint32_t len = wrap_len(k);
      uint8_t* src = p + (k % 8) * kSlot;
      fill(src, len, wrap_seed(k));
      kbv_sge_t s = e.sge((k % 8) * kSlot, len);
      kbv_send_wr_t w{};
      w.wr_id = k;
      w.flags = KBV_SEND_SIGNALED;
      w.sg_list = &s;
      w.num_sge = 1;
      switch (wrap_op(k)) {
        case WrapOp::kSendImm:
          w.opcode = KBV_WR_SEND_IMM;
          w.imm = k;
          break;
        case WrapOp::kSendInline:
          w.opcode = KBV_WR_SEND;
          w.flags |= KBV_SEND_INLINE;
          break;
        case WrapOp::kWriteImm:
          w.opcode = KBV_WR_RDMA_WRITE_IMM;
          w.imm = k;
          w.rkey = theirs.rkey;
          w.remote_addr = theirs.addr + kWrapWriteOff + (k % 8) * kSlot;
          break;
      }
      ASSERT_EQ(kbv_post_send(e.rc, &w, 1, &bad), KBV_SUCCESS) << "message " << k;
      outstanding.push_back(k);
      ++posted;
    }
    kbv_wc_t wc;
    ASSERT_TRUE(poll_one(e, wc)) << "no completion after message " << done;
    ASSERT_EQ(wc.status, KBV_SUCCESS)
        << wc.wr_id << " " << kbv_status_name(static_cast<kbv_status_t>(wc.status));
    ASSERT_EQ(wc.qp_num, mine.rc_qpn);
    ASSERT_FALSE(outstanding.empty());
    ASSERT_EQ(wc.wr_id, outstanding.front()) << "send completions out of order";
    const uint32_t k = outstanding.front();
    EXPECT_EQ(wc.opcode, wrap_op(k) == WrapOp::kWriteImm ? KBV_WC_RDMA_WRITE : KBV_WC_SEND);
    outstanding.pop_front();
    ++done;
  }

  // 2. The UD ping-pong.
  for (uint32_t r = 0; r < kUdRounds; ++r) {
    const uint32_t len = ud_len(r);
    fill(p + kWrapReplyOff, len, wrap_seed(r));
    kbv_sge_t s = e.sge(kWrapReplyOff, len);
    kbv_send_wr_t w{};
    w.wr_id = 1000 + r;
    w.opcode = KBV_WR_SEND_IMM;
    w.flags = KBV_SEND_SIGNALED;
    w.sg_list = &s;
    w.num_sge = 1;
    w.imm = r;
    w.ah = e.ah;
    w.remote_qpn = theirs.ud_qpn;
    w.remote_qkey = kQkey;
    ASSERT_EQ(kbv_post_send(e.ud, &w, 1, &bad), KBV_SUCCESS) << "round " << r;
    bool sent = false, answered = false;
    while (!sent || !answered) {
      kbv_wc_t wc;
      ASSERT_TRUE(poll_one(e, wc)) << "round " << r;
      ASSERT_EQ(wc.status, KBV_SUCCESS)
          << wc.wr_id << " " << kbv_status_name(static_cast<kbv_status_t>(wc.status));
      if (wc.wr_id == 1000 + r) {
        sent = true;
        continue;
      }
      ASSERT_GE(wc.wr_id, 100u);
      ASSERT_LT(wc.wr_id, 100u + kWrapDepth);
      const uint32_t slot = static_cast<uint32_t>(wc.wr_id - 100);
      EXPECT_EQ(wc.byte_len, 40 + len);
      EXPECT_EQ(wc.imm, r);
      EXPECT_EQ(wc.src_qp, theirs.ud_qpn);
      EXPECT_TRUE(check(p + kWrapUdOff + slot * 1024 + 40, len, wrap_seed(r))) << "round " << r;
      kbv_recv_wr_t u{wc.wr_id, &us[slot], 1, 0};
      ASSERT_EQ(kbv_post_recv(e.ud, &u, 1, &bad), KBV_SUCCESS);
      answered = true;
    }
  }

  PeerReport rep;
  ASSERT_TRUE(recv_all(fd, &rep, sizeof rep));
  EXPECT_EQ(rep.ok, 1u) << rep.msg;
  EXPECT_EQ(rep.completions, kRcMessages + 2 * kUdRounds);
  e.close();
  const int status = peer.finish();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace kbv::peer
