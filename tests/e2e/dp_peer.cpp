// SPDX-License-Identifier: BSD-3-Clause
//
// The peer process of the two-process data-path test: its own model HCA
// (its own 127.0.0.N), kbv's driver, one RC QP, one UD QP and one UC QP. It tells the
// test its addresses over the socketpair fd given as argv[1], then on each
// command checks what arrived over the wire byte for byte and answers with
// a verdict (dp_peer_proto.hpp).
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "dp_harness.hpp"
#include "dp_peer_proto.hpp"

namespace kbv::e2e {
namespace {

namespace p = proto;

struct Peer {
  int fd = -1;
  std::unique_ptr<DpNode> node;
  std::unique_ptr<DpBuffer> buf;
  std::unique_ptr<DpCq> cq;
  std::unique_ptr<DpQp> rc;
  std::unique_ptr<DpCq> ud_cq;
  std::unique_ptr<DpQp> ud;
  std::unique_ptr<DpCq> uc_cq;
  std::unique_ptr<DpQp> uc_qp;
  std::string err;

  bool fail(const std::string& what) {
    if (err.empty()) err = what;
    return false;
  }
  bool check(bool c, const std::string& what) { return c ? true : fail(what); }

  bool post_recvs(DpQp& q, size_t off, uint32_t n, size_t slot) {
    for (uint32_t i = 0; i < n; ++i) {
      hca::Sge sge = buf->sge(off + i * slot, static_cast<uint32_t>(slot));
      hca::RecvWr wr;
      wr.wr_id = 100 + i;
      wr.sg = std::span(&sge, 1);
      Status s = q.rq->post(std::span(&wr, 1));
      if (!s.is_ok()) return fail("post_recv: " + s.to_string());
    }
    return true;
  }

  bool setup() {
    auto n = open_node("dp-peer");
    if (!n) return fail("open: " + n.status().to_string());
    node = std::move(*n);
    using namespace hca::mr_access;
    auto b =
        reg_buffer(*node, p::kBufBytes, kLocalWrite | kRemoteRead | kRemoteWrite | kRemoteAtomic);
    if (!b) return fail("reg: " + b.status().to_string());
    buf = std::move(*b);
    fill_pattern(buf->data + p::kReadOff, p::kReadBytes, p::kReadSeed);
    uint64_t cs = p::kCsInitial, fa = p::kFaInitial;
    std::memcpy(buf->data + p::kAtomicOff, &cs, 8);
    std::memcpy(buf->data + p::kAtomicOff + 8, &fa, 8);
    auto c = make_cq(*node);
    if (!c) return fail("cq: " + c.status().to_string());
    cq = std::move(*c);
    auto q = make_qp(*node, *cq, *cq);
    if (!q) return fail("rc qp: " + q.status().to_string());
    rc = std::move(*q);
    auto uc = make_cq(*node);
    if (!uc) return fail("ud cq: " + uc.status().to_string());
    ud_cq = std::move(*uc);
    QpOptions uo;
    uo.st = prm::qpc_st::kUd;
    auto u = make_qp(*node, *ud_cq, *ud_cq, uo);
    if (!u) return fail("ud qp: " + u.status().to_string());
    ud = std::move(*u);
    if (Status s = to_rts_ud(*ud, p::kUdQkey); !s.is_ok()) return fail("ud rts: " + s.to_string());
    auto ucc = make_cq(*node);
    if (!ucc) return fail("uc cq: " + ucc.status().to_string());
    uc_cq = std::move(*ucc);
    QpOptions co;
    co.st = prm::qpc_st::kUc;
    auto ucq = make_qp(*node, *uc_cq, *uc_cq, co);
    if (!ucq) return fail("uc qp: " + ucq.status().to_string());
    uc_qp = std::move(*ucq);
    // Receives before the peer learns the QPN: nothing can arrive earlier.
    return post_recvs(*rc, p::kRecvOff, p::kRecvSlots, p::kRecvSlot) &&
           post_recvs(*ud, p::kUdOff, 4, p::kUdBytes + 40) &&
           post_recvs(*uc_qp, p::kUcOff, 2, 4096);
  }

  bool check_recv(const hca::WorkCompletion& wc, size_t slot, uint32_t bytes, uint32_t seed,
                  bool imm, uint32_t imm_value, const char* what) {
    if (!check(wc.status == KBV_SUCCESS, std::string(what) + ": status " +
                                             std::to_string(wc.status) + " syndrome " +
                                             std::to_string(wc.syndrome)))
      return false;
    if (!check(wc.byte_len == bytes,
               std::string(what) + ": byte_len " + std::to_string(wc.byte_len)))
      return false;
    if (!check(((wc.flags & hca::wc_flags::kImm) != 0) == imm, std::string(what) + ": imm flag"))
      return false;
    if (imm && !check(wc.imm == imm_value, std::string(what) + ": imm value")) return false;
    if (slot != SIZE_MAX) {
      size_t bad = check_pattern(buf->data + p::kRecvOff + slot * p::kRecvSlot, bytes, seed);
      if (!check(bad == bytes, std::string(what) + ": byte " + std::to_string(bad) + " differs"))
        return false;
    }
    return true;
  }

  bool check_rc() {
    // SEND, SEND_IMM, inline SEND, RDMA_WRITE_IMM: four receives in order.
    auto wcs = poll_cq(*cq, 4);
    if (!check(wcs.size() == 4, "rc: " + std::to_string(wcs.size()) + " of 4 receives"))
      return false;
    for (size_t i = 0; i < 4; ++i)
      if (!check(wcs[i].wr_id == 100 + i, "rc: receive order")) return false;
    if (!check(wcs[0].opcode == hca::WcOpcode::kRecv, "send opcode") ||
        !check(wcs[3].opcode == hca::WcOpcode::kRecvRdmaImm, "write-imm opcode"))
      return false;
    if (!check_recv(wcs[0], 0, p::kSendBytes, p::kSendSeed, false, 0, "send") ||
        !check_recv(wcs[1], 1, p::kSendImmBytes, p::kSendImmSeed, true, p::kImm, "send-imm") ||
        !check_recv(wcs[2], 2, p::kInlineBytes, p::kInlineSeed, false, 0, "inline send") ||
        !check_recv(wcs[3], SIZE_MAX, p::kWriteImmBytes, 0, true, p::kWriteImm, "write-imm"))
      return false;
    size_t bad = check_pattern(buf->data + p::kWriteOff, p::kWriteBytes, p::kWriteSeed);
    if (!check(bad == p::kWriteBytes, "rdma write: byte " + std::to_string(bad))) return false;
    bad = check_pattern(buf->data + p::kWriteOff + p::kWriteBytes, p::kWriteImmBytes,
                        p::kWriteImmSeed);
    if (!check(bad == p::kWriteImmBytes, "rdma write-imm: byte " + std::to_string(bad)))
      return false;
    uint64_t cs = 0, fa = 0;
    std::memcpy(&cs, buf->data + p::kAtomicOff, 8);
    std::memcpy(&fa, buf->data + p::kAtomicOff + 8, 8);
    if (!check(cs == p::kCsSwap, "compare-and-swap result") ||
        !check(fa == p::kFaInitial + p::kFaAdd, "fetch-and-add result"))
      return false;
    // The other direction: one signalled SEND back.
    fill_pattern(buf->data + p::kWriteOff, p::kBackBytes, p::kBackSeed);
    hca::Sge sge = buf->sge(p::kWriteOff, p::kBackBytes);
    hca::SendWr wr;
    wr.wr_id = 7;
    wr.opcode = hca::WrOpcode::kSend;
    wr.flags = hca::send_flags::kSignaled;
    wr.sg = std::span(&sge, 1);
    if (Status s = rc->sq->post(std::span(&wr, 1)); !s.is_ok())
      return fail("send back: " + s.to_string());
    auto done = poll_cq(*cq, 1);
    return check(done.size() == 1 && done[0].status == KBV_SUCCESS && done[0].wr_id == 7,
                 "send back completion");
  }

  bool check_ud() {
    auto wcs = poll_cq(*ud_cq, 2);
    if (!check(wcs.size() == 2, "ud: " + std::to_string(wcs.size()) + " of 2 receives"))
      return false;
    for (size_t i = 0; i < 2; ++i) {
      const auto& wc = wcs[i];
      if (!check(wc.status == KBV_SUCCESS, "ud status " + std::to_string(wc.status)) ||
          !check(wc.byte_len == p::kUdBytes + 40, "ud byte_len " + std::to_string(wc.byte_len)) ||
          !check((wc.flags & hca::wc_flags::kGrh) != 0, "ud grh flag"))
        return false;
      const std::byte* slot = buf->data + p::kUdOff + i * (p::kUdBytes + 40);
      size_t bad = check_pattern(slot + 40, p::kUdBytes, p::kUdSeed + static_cast<uint32_t>(i));
      if (!check(bad == p::kUdBytes, "ud payload byte " + std::to_string(bad))) return false;
    }
    return check((wcs[1].flags & hca::wc_flags::kImm) != 0 && wcs[1].imm == p::kImm, "ud send-imm");
  }

  bool check_uc() {
    // UC: a SEND with immediate into the first receive, an RDMA WRITE with
    // immediate consuming the second; no ACKs came back for either.
    auto wcs = poll_cq(*uc_cq, 2);
    if (!check(wcs.size() == 2, "uc: " + std::to_string(wcs.size()) + " of 2 receives"))
      return false;
    const auto& s = wcs[0];
    const auto& w = wcs[1];
    if (!check(s.status == KBV_SUCCESS && w.status == KBV_SUCCESS, "uc status") ||
        !check(s.wr_id == 100 && w.wr_id == 101, "uc receive order") ||
        !check(s.opcode == hca::WcOpcode::kRecv && w.opcode == hca::WcOpcode::kRecvRdmaImm,
               "uc opcodes") ||
        !check(s.byte_len == p::kUcSendBytes && w.byte_len == p::kUcWriteBytes, "uc byte_len") ||
        !check((s.flags & hca::wc_flags::kImm) && s.imm == p::kUcImm, "uc send-imm") ||
        !check((w.flags & hca::wc_flags::kImm) && w.imm == p::kUcWriteImm, "uc write-imm"))
      return false;
    size_t bad = check_pattern(buf->data + p::kUcOff, p::kUcSendBytes, p::kUcSendSeed);
    if (!check(bad == p::kUcSendBytes, "uc send: byte " + std::to_string(bad))) return false;
    bad = check_pattern(buf->data + p::kUcWriteOff, p::kUcWriteBytes, p::kUcWriteSeed);
    return check(bad == p::kUcWriteBytes, "uc write: byte " + std::to_string(bad));
  }

  void reply(bool ok) {
    p::Verdict v{};
    v.ok = ok ? 1 : 0;
    std::snprintf(v.what, sizeof v.what, "%s", err.c_str());
    (void)p::write_all(fd, &v, sizeof v);
  }

  int run() {
    const bool ok = setup();
    p::Hello h{};
    if (ok) {
      std::memcpy(h.gid, node->gid.data(), 16);
      h.mac = node->mac;
      h.rc_qpn = rc->qpn();
      h.rc_psn = 0x300;
      h.ud_qpn = ud->qpn();
      h.uc_qpn = uc_qp->qpn();
      h.uc_psn = 0x500;
      h.rkey = buf->rkey();
      h.addr = buf->addr();
    }
    if (!p::write_all(fd, &h, sizeof h)) return 2;
    reply(ok);
    if (!ok) return 1;
    p::Hello peer{};
    if (!p::read_all(fd, &peer, sizeof peer)) return 2;
    PeerInfo pi;
    std::memcpy(pi.gid.data(), peer.gid, 16);
    pi.mac = peer.mac;
    pi.qpn = peer.rc_qpn;
    pi.psn = peer.rc_psn;
    Status s = connect_qp(*rc, pi, h.rc_psn);
    if (!s.is_ok()) fail("connect: " + s.to_string());
    if (s.is_ok()) {
      PeerInfo ui = pi;
      ui.qpn = peer.uc_qpn;
      ui.psn = peer.uc_psn;
      s = connect_qp(*uc_qp, ui, h.uc_psn);
      if (!s.is_ok()) fail("uc connect: " + s.to_string());
    }
    reply(s.is_ok());
    for (;;) {
      uint32_t cmd = 0;
      if (!p::read_all(fd, &cmd, sizeof cmd)) return 2;
      if (cmd == p::kQuit) break;
      bool r = cmd == p::kCheckRc   ? check_rc()
               : cmd == p::kCheckUd ? check_ud()
               : cmd == p::kCheckUc ? check_uc()
                                    : false;
      reply(r);
    }
    int rc_exit = 0;
    auto step = [&](const char* what, Status s) {
      if (s.is_ok()) return;
      std::fprintf(stderr, "dp_peer: %s: %s\n", what, s.to_string().c_str());
      rc_exit = 1;
    };
    step("destroy rc qp", destroy_qp(*rc));
    step("destroy ud qp", destroy_qp(*ud));
    step("destroy uc qp", destroy_qp(*uc_qp));
    step("destroy uc cq", node->sync_status([&](auto cb) { return uc_cq->cq->destroy(cb); }));
    step("destroy cq", node->sync_status([&](auto cb) { return cq->cq->destroy(cb); }));
    step("destroy ud cq", node->sync_status([&](auto cb) { return ud_cq->cq->destroy(cb); }));
    step("dereg", dereg_buffer(*node, *buf));
    step("close", close_node(*node));
    return rc_exit;
  }
};

}  // namespace
}  // namespace kbv::e2e

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <socket fd>\n", argv[0]);
    return 2;
  }
  kbv::e2e::Peer peer;
  peer.fd = std::atoi(argv[1]);
  return peer.run();
}
