// SPDX-License-Identifier: BSD-3-Clause
//
// Stale keys between two processes (issue 16): the peer (e2e_keys_peer, its
// own model HCA) registers a region and hands out its rkey; the test WRITEs
// through it (works), the peer deregisters the region and registers another
// of the same size; a WRITE with the old rkey aimed at the new region must
// complete with a remote access error and change no byte on the peer.
// Before the fix both regions got the same key (0x400 twice: variant byte 0
// and the lowest free mkey index), and the WRITE landed in the new buffer.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <string>

#include "keys_proto.hpp"
#include "peer_process.hpp"

namespace kbv::peer {
namespace {

kbv_send_wr_t write_wr(uint64_t id, const kbv_sge_t* sg, uint64_t raddr, uint32_t rkey) {
  kbv_send_wr_t w{};
  w.wr_id = id;
  w.opcode = KBV_WR_RDMA_WRITE;
  w.flags = KBV_SEND_SIGNALED;
  w.sg_list = sg;
  w.num_sge = 1;
  w.remote_addr = raddr;
  w.rkey = rkey;
  return w;
}

TEST(KeysTwoProcess, OldRkeyAfterReregistrationIsRemoteAccessError) {
  PeerProcess peer;
  ASSERT_TRUE(peer.start("e2e_keys_peer")) << std::strerror(errno);
  const int fd = peer.fd();

  Endpoint e;
  ASSERT_TRUE(e.open("sim:keys-" + std::to_string(::getpid()))) << e.err;
  PeerInfo mine = e.info(), theirs;
  ASSERT_TRUE(send_all(fd, &mine, sizeof mine));
  ASSERT_TRUE(recv_all(fd, &theirs, sizeof theirs));
  ASSERT_TRUE(e.connect(theirs, 100, 200)) << e.err;

  // The live key works (and proves the connection).
  fill(e.buf.data(), kKeysLen, 4);
  kbv_sge_t sg = e.sge(0, kKeysLen);
  kbv_send_wr_t w = write_wr(1, &sg, theirs.addr + kKeysLiveOff, theirs.rkey);
  uint32_t bad = 0;
  ASSERT_EQ(kbv_post_send(e.rc, &w, 1, &bad), KBV_SUCCESS);
  auto wc = e.poll(1);
  ASSERT_EQ(wc.size(), 1u);
  ASSERT_EQ(wc[0].status, KBV_SUCCESS) << kbv_status_name((kbv_status_t)wc[0].status);
  char c = 'g';
  ASSERT_TRUE(send_all(fd, &c, 1));

  NewRegion nr;
  ASSERT_TRUE(recv_all(fd, &nr, sizeof nr));
  EXPECT_NE(nr.rkey, theirs.rkey) << "the new region got the old region's key";
  EXPECT_NE(nr.rkey & 0xFF, theirs.rkey & 0xFF) << "variant byte not rotated";
  EXPECT_NE(nr.rkey >> 8, theirs.rkey >> 8) << "mkey index reused at once";

  // The stale key, aimed at the new region (the peer's pages of the new
  // region are mapped for device writes): remote access error, nothing
  // written.
  fill(e.buf.data() + kKeysLen, kKeysLen, 5);
  kbv_sge_t sg2 = e.sge(kKeysLen, kKeysLen);
  w = write_wr(2, &sg2, nr.addr + kKeysStaleOff, theirs.rkey);
  ASSERT_EQ(kbv_post_send(e.rc, &w, 1, &bad), KBV_SUCCESS);
  wc = e.poll(1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 2u);
  EXPECT_EQ(wc[0].status, KBV_ERR_REMOTE_ACCESS) << kbv_status_name((kbv_status_t)wc[0].status);

  c = 'c';
  ASSERT_TRUE(send_all(fd, &c, 1));
  PeerReport rep;
  ASSERT_TRUE(recv_all(fd, &rep, sizeof rep));
  EXPECT_EQ(rep.ok, 1u) << rep.msg;
  e.close();
  const int status = peer.finish();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace kbv::peer
