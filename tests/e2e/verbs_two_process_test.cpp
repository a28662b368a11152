// SPDX-License-Identifier: BSD-3-Clause
//
// Two processes exchanging data through libkbv's public C API: this test
// and e2e_verbs_peer (fork + exec), each with its own model HCA and
// 127.0.0.N RoCEv2 port, QP information swapped over a socketpair. The test
// runs every opcode (SEND, SEND_IMM, inline SEND, RDMA_WRITE,
// RDMA_WRITE_IMM, RDMA_READ, ATOMIC_CS, ATOMIC_FA on RC; SEND_IMM on UD);
// both sides check the data byte for byte (verbs_peer_proto.hpp).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <string>

#include "peer_process.hpp"
#include "verbs_peer_proto.hpp"

namespace kbv::peer {
namespace {

kbv_send_wr_t swr(uint64_t id, uint32_t op, const kbv_sge_t* sg,
                  uint32_t flags = KBV_SEND_SIGNALED) {
  kbv_send_wr_t w{};
  w.wr_id = id;
  w.opcode = op;
  w.flags = flags;
  w.sg_list = sg;
  w.num_sge = 1;
  return w;
}

TEST(VerbsTwoProcess, EveryOpcodeByteForByte) {
  PeerProcess peer;
  ASSERT_TRUE(peer.start("e2e_verbs_peer")) << std::strerror(errno);
  const int fd = peer.fd();

  Endpoint e;
  ASSERT_TRUE(e.open("sim:twoproc-" + std::to_string(::getpid()))) << e.err;
  PeerInfo mine = e.info(), theirs;
  ASSERT_TRUE(send_all(fd, &mine, sizeof mine));
  ASSERT_TRUE(recv_all(fd, &theirs, sizeof theirs));
  ASSERT_NE(std::memcmp(mine.gid, theirs.gid, 16), 0);  // two ports, two addresses
  ASSERT_TRUE(e.connect(theirs, 100, 200)) << e.err;
  char c = 0;
  ASSERT_TRUE(recv_all(fd, &c, 1));  // the peer's receives are posted
  ASSERT_EQ(c, 'r');

  uint8_t* p = e.buf.data();
  fill(p, kSendLen, 1);
  fill(p + 8192, kImmLen, 2);
  uint8_t inl[48];
  fill(inl, sizeof inl, 3);
  fill(p + 16384, kWriteLen, 4);
  fill(p + 32768, kWImmLen, 5);
  fill(p + 40960, kUdLen, 7);
  kbv_sge_t s[9] = {e.sge(0, kSendLen),
                    e.sge(8192, kImmLen),
                    {reinterpret_cast<uint64_t>(inl), sizeof inl, 0},
                    e.sge(16384, kWriteLen),
                    e.sge(32768, kWImmLen),
                    e.sge(65536, kReadLen),
                    e.sge(131072, 8),
                    e.sge(131080, 8),
                    e.sge(40960, kUdLen)};
  kbv_send_wr_t w[8] = {swr(1, KBV_WR_SEND, &s[0]),
                        swr(2, KBV_WR_SEND_IMM, &s[1]),
                        swr(3, KBV_WR_SEND, &s[2], KBV_SEND_SIGNALED | KBV_SEND_INLINE),
                        swr(4, KBV_WR_RDMA_WRITE, &s[3]),
                        swr(5, KBV_WR_RDMA_WRITE_IMM, &s[4]),
                        swr(6, KBV_WR_RDMA_READ, &s[5]),
                        swr(7, KBV_WR_ATOMIC_CS, &s[6]),
                        swr(8, KBV_WR_ATOMIC_FA, &s[7])};
  w[1].imm = kImm;
  w[3].remote_addr = theirs.addr + kWriteDst;
  w[4].remote_addr = theirs.addr + kWImmDst;
  w[4].imm = kWImm;
  w[5].remote_addr = theirs.addr + kReadSrc;
  w[6].remote_addr = theirs.addr + kAtomics;
  w[6].compare_add = kCsOld;
  w[6].swap = kCsNew;
  w[7].remote_addr = theirs.addr + kAtomics + 8;
  w[7].compare_add = kFaAdd;
  for (int i = 3; i < 8; ++i) w[i].rkey = theirs.rkey;
  uint32_t bad = 0;
  ASSERT_EQ(kbv_post_send(e.rc, w, 8, &bad), KBV_SUCCESS) << bad;
  kbv_send_wr_t u = swr(9, KBV_WR_SEND_IMM, &s[8]);
  u.imm = kUdImm;
  u.ah = e.ah;
  u.remote_qpn = theirs.ud_qpn;
  u.remote_qkey = kQkey;
  ASSERT_EQ(kbv_post_send(e.ud, &u, 1, &bad), KBV_SUCCESS);

  auto wc = e.poll(9);
  ASSERT_EQ(wc.size(), 9u);
  std::vector<uint64_t> ids;
  for (const auto& x : wc) {
    EXPECT_EQ(x.status, KBV_SUCCESS) << x.wr_id << " " << kbv_status_name((kbv_status_t)x.status);
    if (x.qp_num == mine.rc_qpn) ids.push_back(x.wr_id);
  }
  EXPECT_EQ(ids, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  // What came back: READ data and the atomics' old values.
  EXPECT_TRUE(check(p + 65536, kReadLen, 6));
  uint64_t v = 0;
  std::memcpy(&v, p + 131072, 8);
  EXPECT_EQ(v, kCsOld);
  std::memcpy(&v, p + 131080, 8);
  EXPECT_EQ(v, kFaOld);

  c = 'd';
  ASSERT_TRUE(send_all(fd, &c, 1));
  PeerReport rep;
  ASSERT_TRUE(recv_all(fd, &rep, sizeof rep));
  EXPECT_EQ(rep.ok, 1u) << rep.msg;
  EXPECT_EQ(rep.completions, 5u);
  e.close();
  const int status = peer.finish();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace kbv::peer
