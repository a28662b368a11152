// SPDX-License-Identifier: BSD-3-Clause
//
// End to end across two processes: this test's model HCA and the one of a
// peer process (dp_peer.cpp, path in $KBV_DP_PEER), each with kbv's driver,
// exchange every RC opcode (SEND, SEND with immediate, inline SEND, RDMA
// WRITE, RDMA WRITE with immediate, RDMA READ, compare-and-swap,
// fetch-and-add), UC SEND and RDMA WRITE with immediate (multi-packet, no
// ACKs) and UD SENDs over the RoCEv2 wire on loopback; both sides
// check the data byte for byte. Only addresses and verdicts travel over the
// socketpair (dp_peer_proto.hpp).
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "dp_harness.hpp"
#include "dp_peer_proto.hpp"
#include "exe_wrapper.hpp"

extern char** environ;

namespace kbv::e2e {
namespace {

namespace p = proto;
using hca::WcOpcode;
using hca::WrOpcode;
namespace sf = hca::send_flags;

class TwoProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* peer = std::getenv("KBV_DP_PEER");
    ASSERT_NE(peer, nullptr) << "KBV_DP_PEER names the peer program (meson sets it)";
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    timeval tv{30, 0};  // a hung peer fails the test instead of hanging it
    ASSERT_EQ(::setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 3);  // dup2 clears FD_CLOEXEC
    const ExecArgv argv(peer, {"3"});
    int rc = posix_spawnp(&pid_, argv.file(), &fa, nullptr, argv.argv(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(sv[1]);
    fd_ = sv[0];
    ASSERT_EQ(rc, 0) << std::strerror(rc);
  }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
    if (pid_ > 0) {
      int st = 0;
      ::waitpid(pid_, &st, 0);
      if (!exit_checked_) return;
      EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "peer exit status " << st;
    }
  }
  // The peer's answer to the last step.
  void expect_verdict(const char* step) {
    p::Verdict v{};
    ASSERT_TRUE(p::read_all(fd_, &v, sizeof v)) << step << ": no answer from the peer";
    v.what[sizeof v.what - 1] = 0;
    EXPECT_EQ(v.ok, 1u) << step << ": peer says " << v.what;
  }
  void command(uint32_t c) { ASSERT_TRUE(p::write_all(fd_, &c, sizeof c)); }

  int fd_ = -1;
  pid_t pid_ = -1;
  bool exit_checked_ = false;
};

TEST_F(TwoProcess, EveryOpcodeCrossesTheWireByteForByte) {
  auto nr = open_node("dp-2proc");
  ASSERT_TRUE(nr.has_value()) << nr.status().to_string();
  DpNode& n = **nr;
  using namespace hca::mr_access;
  auto br = reg_buffer(n, p::kBufBytes, kLocalWrite | kRemoteRead | kRemoteWrite | kRemoteAtomic);
  ASSERT_TRUE(br.has_value()) << br.status().to_string();
  DpBuffer& buf = **br;
  auto cqr = make_cq(n);
  ASSERT_TRUE(cqr.has_value()) << cqr.status().to_string();
  DpCq& cq = **cqr;
  auto qr = make_qp(n, cq, cq);
  ASSERT_TRUE(qr.has_value()) << qr.status().to_string();
  DpQp& rc = **qr;
  auto ucq = make_cq(n);
  ASSERT_TRUE(ucq.has_value());
  QpOptions uo;
  uo.st = prm::qpc_st::kUd;
  auto ur = make_qp(n, **ucq, **ucq, uo);
  ASSERT_TRUE(ur.has_value()) << ur.status().to_string();
  DpQp& ud = **ur;
  ASSERT_TRUE(to_rts_ud(ud, 0x2222).is_ok());
  auto uccq = make_cq(n);
  ASSERT_TRUE(uccq.has_value());
  QpOptions co;
  co.st = prm::qpc_st::kUc;
  auto ucr = make_qp(n, **uccq, **uccq, co);
  ASSERT_TRUE(ucr.has_value()) << ucr.status().to_string();
  DpQp& uc = **ucr;

  // Addresses: the peer's, then ours.
  p::Hello peer{};
  ASSERT_TRUE(p::read_all(fd_, &peer, sizeof peer)) << "the peer did not start";
  expect_verdict("peer setup");
  ASSERT_FALSE(HasFailure());
  p::Hello me{};
  std::memcpy(me.gid, n.gid.data(), 16);
  me.mac = n.mac;
  me.rc_qpn = rc.qpn();
  me.rc_psn = 0xFFFFF0;  // our PSNs wrap past 2^24 during the test
  me.ud_qpn = ud.qpn();
  me.uc_qpn = uc.qpn();
  me.uc_psn = 0xFFFFFE;  // wraps during the UC WRITE
  me.rkey = buf.rkey();
  me.addr = buf.addr();
  ASSERT_TRUE(p::write_all(fd_, &me, sizeof me));
  PeerInfo pi;
  std::memcpy(pi.gid.data(), peer.gid, 16);
  EXPECT_NE(pi.gid, n.gid) << "two processes, two ports";
  pi.mac = peer.mac;
  pi.qpn = peer.rc_qpn;
  pi.psn = peer.rc_psn;
  ASSERT_TRUE(connect_qp(rc, pi, me.rc_psn).is_ok());
  PeerInfo ui = pi;
  ui.qpn = peer.uc_qpn;
  ui.psn = peer.uc_psn;
  ASSERT_TRUE(connect_qp(uc, ui, me.uc_psn).is_ok());
  expect_verdict("peer connect");
  ASSERT_FALSE(HasFailure());

  // Local layout: sources from 0, READ landing at kReadOff, atomics' results
  // at kAtomicOff, the peer's SEND back into receive slot 0 at kRecvOff... we
  // use kWriteOff for the receive so sources stay intact.
  std::byte* d = buf.data;
  fill_pattern(d + 0, p::kSendBytes, p::kSendSeed);
  fill_pattern(d + 8192, p::kSendImmBytes, p::kSendImmSeed);
  std::byte inl[p::kInlineBytes];
  fill_pattern(inl, sizeof inl, p::kInlineSeed);
  fill_pattern(d + 16384, p::kWriteBytes, p::kWriteSeed);
  fill_pattern(d + 40960, p::kWriteImmBytes, p::kWriteImmSeed);
  {
    hca::Sge back = buf.sge(p::kWriteOff, p::kRecvSlot);
    hca::RecvWr rw;
    rw.wr_id = 900;
    rw.sg = std::span(&back, 1);
    ASSERT_TRUE(rc.rq->post(std::span(&rw, 1)).is_ok());
  }

  hca::Sge s_send = buf.sge(0, p::kSendBytes);
  hca::Sge s_imm = buf.sge(8192, p::kSendImmBytes);
  hca::Sge s_inl{reinterpret_cast<uintptr_t>(inl), p::kInlineBytes, 0};
  hca::Sge s_write = buf.sge(16384, p::kWriteBytes);
  hca::Sge s_wimm = buf.sge(40960, p::kWriteImmBytes);
  hca::Sge s_read = buf.sge(p::kReadOff, p::kReadBytes);
  hca::Sge s_cs = buf.sge(p::kAtomicOff, 8);
  hca::Sge s_fa = buf.sge(p::kAtomicOff + 8, 8);
  hca::SendWr w[8];
  for (int i = 0; i < 8; ++i) {
    w[i].wr_id = 1 + i;
    w[i].flags = sf::kSignaled;
  }
  w[0].opcode = WrOpcode::kSend;
  w[0].sg = std::span(&s_send, 1);
  w[1].opcode = WrOpcode::kSendImm;
  w[1].sg = std::span(&s_imm, 1);
  w[1].imm = p::kImm;
  w[2].opcode = WrOpcode::kSend;
  w[2].flags |= sf::kInline;
  w[2].sg = std::span(&s_inl, 1);
  w[3].opcode = WrOpcode::kRdmaWrite;
  w[3].sg = std::span(&s_write, 1);
  w[3].remote_addr = peer.addr + p::kWriteOff;
  w[3].rkey = peer.rkey;
  w[4].opcode = WrOpcode::kRdmaWriteImm;
  w[4].sg = std::span(&s_wimm, 1);
  w[4].remote_addr = peer.addr + p::kWriteOff + p::kWriteBytes;
  w[4].rkey = peer.rkey;
  w[4].imm = p::kWriteImm;
  w[5].opcode = WrOpcode::kRdmaRead;
  w[5].sg = std::span(&s_read, 1);
  w[5].remote_addr = peer.addr + p::kReadOff;
  w[5].rkey = peer.rkey;
  w[6].opcode = WrOpcode::kAtomicCs;
  w[6].sg = std::span(&s_cs, 1);
  w[6].remote_addr = peer.addr + p::kAtomicOff;
  w[6].rkey = peer.rkey;
  w[6].compare_add = p::kCsInitial;
  w[6].swap = p::kCsSwap;
  w[7].opcode = WrOpcode::kAtomicFa;
  w[7].sg = std::span(&s_fa, 1);
  w[7].remote_addr = peer.addr + p::kAtomicOff + 8;
  w[7].rkey = peer.rkey;
  w[7].compare_add = p::kFaAdd;
  size_t bad = 99;
  Status ps = rc.sq->post(w, &bad);
  ASSERT_TRUE(ps.is_ok()) << ps.to_string() << " at " << bad;

  auto wcs = poll_cq(cq, 8);
  ASSERT_EQ(wcs.size(), 8u) << "requester completions";
  const WcOpcode ops[8] = {WcOpcode::kSend,      WcOpcode::kSend,      WcOpcode::kSend,
                           WcOpcode::kRdmaWrite, WcOpcode::kRdmaWrite, WcOpcode::kRdmaRead,
                           WcOpcode::kAtomicCs,  WcOpcode::kAtomicFa};
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(wcs[i].status, KBV_SUCCESS) << i << " syndrome " << int{wcs[i].syndrome};
    EXPECT_EQ(wcs[i].wr_id, 1 + i);
    EXPECT_EQ(wcs[i].opcode, ops[i]) << i;
    EXPECT_EQ(wcs[i].qpn, rc.qpn());
  }
  EXPECT_EQ(wcs[5].byte_len, p::kReadBytes);
  EXPECT_EQ(check_pattern(d + p::kReadOff, p::kReadBytes, p::kReadSeed), p::kReadBytes)
      << "RDMA READ data";
  uint64_t cs_orig = 0, fa_orig = 0;
  std::memcpy(&cs_orig, d + p::kAtomicOff, 8);
  std::memcpy(&fa_orig, d + p::kAtomicOff + 8, 8);
  EXPECT_EQ(cs_orig, p::kCsInitial) << "compare-and-swap returns the original value";
  EXPECT_EQ(fa_orig, p::kFaInitial) << "fetch-and-add returns the original value";

  // The peer checks what arrived and sends back.
  command(p::kCheckRc);
  auto back = poll_cq(cq, 1);
  ASSERT_EQ(back.size(), 1u) << "the peer's SEND";
  EXPECT_EQ(back[0].status, KBV_SUCCESS);
  EXPECT_EQ(back[0].wr_id, 900u);
  EXPECT_EQ(back[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(back[0].byte_len, p::kBackBytes);
  EXPECT_EQ(check_pattern(d + p::kWriteOff, p::kBackBytes, p::kBackSeed), p::kBackBytes);
  expect_verdict("RC checks");

  // UD: two datagrams (the second with immediate data) to the peer's UD QP.
  // The address handle toward the peer's port: its GID and MAC.
  hca::RoceDest dst;
  dst.dgid = pi.gid;
  dst.dmac = pi.mac;
  auto peer_ah = hca::Ah::make(n.hca->caps(), dst, peer.ud_qpn, p::kUdQkey);
  ASSERT_TRUE(peer_ah.has_value());
  fill_pattern(d + 65536, p::kUdBytes, p::kUdSeed);
  fill_pattern(d + 65536 + 4096, p::kUdBytes, p::kUdSeed + 1);
  hca::Sge u0 = buf.sge(65536, p::kUdBytes), u1 = buf.sge(65536 + 4096, p::kUdBytes);
  hca::SendWr uw[2];
  for (int i = 0; i < 2; ++i) {
    uw[i].wr_id = 50 + i;
    uw[i].flags = sf::kSignaled;
    uw[i].ah = &*peer_ah;
    uw[i].remote_qpn = peer.ud_qpn;
    uw[i].q_key = p::kUdQkey;
  }
  uw[0].opcode = WrOpcode::kSend;
  uw[0].sg = std::span(&u0, 1);
  uw[1].opcode = WrOpcode::kSendImm;
  uw[1].sg = std::span(&u1, 1);
  uw[1].imm = p::kImm;
  ASSERT_TRUE(ud.sq->post(uw).is_ok());
  auto uwcs = poll_cq(**ucq, 2);
  ASSERT_EQ(uwcs.size(), 2u);
  EXPECT_EQ(uwcs[0].status, KBV_SUCCESS);
  EXPECT_EQ(uwcs[1].status, KBV_SUCCESS);
  command(p::kCheckUd);
  expect_verdict("UD checks");

  // UC: SEND with immediate and RDMA WRITE with immediate, several packets
  // each; the requester completes them without any acknowledgement.
  fill_pattern(d + 65536, p::kUcSendBytes, p::kUcSendSeed);
  fill_pattern(d + 98304, p::kUcWriteBytes, p::kUcWriteSeed);
  hca::Sge c0 = buf.sge(65536, p::kUcSendBytes), c1 = buf.sge(98304, p::kUcWriteBytes);
  hca::SendWr cw[2];
  for (int i = 0; i < 2; ++i) {
    cw[i].wr_id = 60 + i;
    cw[i].flags = sf::kSignaled;
  }
  cw[0].opcode = WrOpcode::kSendImm;
  cw[0].sg = std::span(&c0, 1);
  cw[0].imm = p::kUcImm;
  cw[1].opcode = WrOpcode::kRdmaWriteImm;
  cw[1].sg = std::span(&c1, 1);
  cw[1].remote_addr = peer.addr + p::kUcWriteOff;
  cw[1].rkey = peer.rkey;
  cw[1].imm = p::kUcWriteImm;
  const uint64_t rx_before = n.model->engine_stats().rx_packets;
  ASSERT_TRUE(uc.sq->post(cw).is_ok());
  auto cwcs = poll_cq(**uccq, 2);
  ASSERT_EQ(cwcs.size(), 2u);
  EXPECT_EQ(cwcs[0].status, KBV_SUCCESS);
  EXPECT_EQ(cwcs[0].wr_id, 60u);
  EXPECT_EQ(cwcs[1].status, KBV_SUCCESS);
  EXPECT_EQ(cwcs[1].opcode, WcOpcode::kRdmaWrite);
  command(p::kCheckUc);
  expect_verdict("UC checks");
  EXPECT_EQ(n.model->engine_stats().rx_packets, rx_before) << "UC: nothing comes back";

  command(p::kQuit);
  exit_checked_ = true;
  EXPECT_TRUE(destroy_qp(rc).is_ok());
  EXPECT_TRUE(destroy_qp(ud).is_ok());
  EXPECT_TRUE(destroy_qp(uc).is_ok());
  EXPECT_TRUE(n.sync_status([&](auto cb) { return (*uccq)->cq->destroy(cb); }).is_ok());
  EXPECT_TRUE(n.sync_status([&](auto cb) { return cq.cq->destroy(cb); }).is_ok());
  EXPECT_TRUE(n.sync_status([&](auto cb) { return (*ucq)->cq->destroy(cb); }).is_ok());
  EXPECT_TRUE(dereg_buffer(n, buf).is_ok());
  EXPECT_TRUE(close_node(n).is_ok());
}

}  // namespace
}  // namespace kbv::e2e
