// SPDX-License-Identifier: BSD-3-Clause
//
// The peer of wrap_two_process_test.cpp (wrap_proto.hpp): its own model HCA
// through libkbv's C API, a kWrapCqe-entry CQ and kWrapDepth-deep queues;
// receives the RC stream in order and checks every message, then answers
// the UD ping-pong. Usage: e2e_wrap_peer <socket fd>. Exit status 0 when the
// protocol ran (the verdict is in the PeerReport sent back).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "peer_process.hpp"
#include "wrap_proto.hpp"

using namespace kbv::peer;

namespace {

PeerReport run(int fd) {
  PeerReport rep;
  auto say = [&](const std::string& m) {
    std::snprintf(rep.msg, sizeof rep.msg, "%s", m.c_str());
    return rep;
  };
  Endpoint e;
  if (!e.open("sim:wrappeer-" + std::to_string(::getpid()), kWrapCqe, kWrapDepth))
    return say("peer " + e.err);
  PeerInfo mine = e.info(), theirs;
  if (!recv_all(fd, &theirs, sizeof theirs) || !send_all(fd, &mine, sizeof mine))
    return say("peer: socket");
  if (!e.connect(theirs, 200, 100)) return say("peer " + e.err);
  uint8_t* p = e.buf.data();
  kbv_sge_t rs[kWrapDepth], us[kWrapDepth];
  uint32_t bad = 0;
  for (uint32_t i = 0; i < kWrapDepth; ++i) {
    rs[i] = e.sge(kWrapRecvOff + i * kSlot, kSlot);
    us[i] = e.sge(kWrapUdOff + i * 1024, 40 + kUdLen);
    kbv_recv_wr_t r{i, &rs[i], 1, 0}, u{100 + i, &us[i], 1, 0};
    if (kbv_post_recv(e.rc, &r, 1, &bad) != KBV_SUCCESS ||
        kbv_post_recv(e.ud, &u, 1, &bad) != KBV_SUCCESS)
      return say("peer: post_recv");
  }
  char c = 'r';
  if (!send_all(fd, &c, 1)) return say("peer: socket");

  uint32_t k = 0, r = 0, ud_sends = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((k < kRcMessages || r < kUdRounds || ud_sends < kUdRounds) &&
         std::chrono::steady_clock::now() < end) {
    kbv_wc_t wc;
    if (kbv_poll_cq(e.cq, &wc, 1) != 1) {
      (void)kbv_device_progress(e.dev);
      continue;
    }
    ++rep.completions;
    if (wc.status != KBV_SUCCESS)
      return say("peer: completion " + std::to_string(wc.wr_id) + " " +
                 kbv_status_name(static_cast<kbv_status_t>(wc.status)));
    if (wc.wr_id >= 1000) {  // a UD answer went out
      ++ud_sends;
      continue;
    }
    if (wc.wr_id >= 100) {  // UD round r
      const uint32_t slot = static_cast<uint32_t>(wc.wr_id - 100);
      const uint8_t* d = p + kWrapUdOff + slot * 1024 + 40;
      if (k != kRcMessages || wc.byte_len != 40 + ud_len(r) || wc.imm != r ||
          !check(d, ud_len(r), wrap_seed(r)))
        return say("peer: UD round " + std::to_string(r) + " wrong");
      kbv_sge_t s = e.sge(kWrapReplyOff, ud_len(r));
      std::memcpy(p + kWrapReplyOff, d, ud_len(r));
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
      kbv_recv_wr_t u{wc.wr_id, &us[slot], 1, 0};
      if (kbv_post_recv(e.ud, &u, 1, &bad) != KBV_SUCCESS ||
          kbv_post_send(e.ud, &w, 1, &bad) != KBV_SUCCESS)
        return say("peer: UD repost/answer refused");
      ++r;
      continue;
    }
    // RC message k, in order, in receive slot wr_id.
    const uint32_t slot = static_cast<uint32_t>(wc.wr_id);
    if (k >= kRcMessages) return say("peer: an RC message past the last");
    const uint32_t len = wrap_len(k);
    bool ok = wc.byte_len == len;
    switch (wrap_op(k)) {
      case WrapOp::kSendImm:
        ok = ok && wc.opcode == KBV_WC_RECV && (wc.flags & KBV_WC_WITH_IMM) && wc.imm == k &&
             check(p + kWrapRecvOff + slot * kSlot, len, wrap_seed(k));
        break;
      case WrapOp::kSendInline:
        ok = ok && wc.opcode == KBV_WC_RECV && !(wc.flags & KBV_WC_WITH_IMM) &&
             check(p + kWrapRecvOff + slot * kSlot, len, wrap_seed(k));
        break;
      case WrapOp::kWriteImm:
        ok = ok && wc.opcode == KBV_WC_RECV_RDMA_WITH_IMM && wc.imm == k &&
             check(p + kWrapWriteOff + (k % 8) * kSlot, len, wrap_seed(k));
        break;
    }
    if (!ok) return say("peer: RC message " + std::to_string(k) + " wrong or out of order");
    kbv_recv_wr_t rw{slot, &rs[slot], 1, 0};
    if (kbv_post_recv(e.rc, &rw, 1, &bad) != KBV_SUCCESS) return say("peer: RC repost refused");
    ++k;
  }
  if (k != kRcMessages || r != kUdRounds || ud_sends != kUdRounds)
    return say("peer: timed out at RC " + std::to_string(k) + ", UD " + std::to_string(r));
  rep.ok = 1;
  e.close();
  return say("ok");
}

}  // namespace

int main(int argc, char** argv) { return peer_main(argc, argv, run); }
