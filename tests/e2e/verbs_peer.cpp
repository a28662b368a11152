// SPDX-License-Identifier: BSD-3-Clause
//
// The peer of verbs_two_process_test.cpp: a separate process that opens its
// own model HCA through libkbv's public C API, answers as the responder of
// every opcode and checks what arrived byte for byte (verbs_peer_proto.hpp).
// Usage: e2e_verbs_peer <socket fd>. Exit status 0 when the protocol ran.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "peer_process.hpp"
#include "verbs_peer_proto.hpp"

using namespace kbv::peer;

namespace {

PeerReport run(int fd) {
  PeerReport rep;
  auto say = [&](const std::string& m) {
    std::snprintf(rep.msg, sizeof rep.msg, "%s", m.c_str());
    return rep;
  };
  Endpoint e;
  if (!e.open("sim:peer-" + std::to_string(::getpid()))) return say("peer " + e.err);
  uint8_t* p = e.buf.data();
  fill(p + kReadSrc, kReadLen, 6);
  std::memcpy(p + kAtomics, &kCsOld, 8);
  std::memcpy(p + kAtomics + 8, &kFaOld, 8);
  PeerInfo mine = e.info(), theirs;
  if (!recv_all(fd, &theirs, sizeof theirs) || !send_all(fd, &mine, sizeof mine))
    return say("peer: socket");
  if (!e.connect(theirs, 200, 100)) return say("peer " + e.err);
  kbv_sge_t rs[5];
  kbv_recv_wr_t rw[5];
  for (int i = 0; i < 4; ++i) {
    rs[i] = e.sge(kRecvOff + i * 16384, 16384);
    rw[i] = {100u + i, &rs[i], 1, 0};
  }
  rs[4] = e.sge(kRecvOff + 4 * 16384, 40 + kUdLen);
  rw[4] = {200, &rs[4], 1, 0};
  uint32_t bad = 0;
  kbv_status_t st = kbv_post_recv(e.rc, rw, 4, &bad);
  if (st == KBV_SUCCESS) st = kbv_post_recv(e.ud, &rw[4], 1, &bad);
  if (st != KBV_SUCCESS) return say(std::string("peer post_recv: ") + kbv_status_name(st));
  char c = 'r';
  if (!send_all(fd, &c, 1) || !recv_all(fd, &c, 1)) return say("peer: socket");
  auto wc = e.poll(5);
  rep.completions = static_cast<uint32_t>(wc.size());
  if (wc.size() != 5) return say("peer: " + std::to_string(wc.size()) + " completions of 5");
  std::string errs;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) errs += std::string(what) + "; ";
  };
  const kbv_wc_t* ud = nullptr;
  std::vector<const kbv_wc_t*> rc;
  for (const auto& w : wc) {
    expect(w.status == KBV_SUCCESS, "status");
    if (w.wr_id == 200)
      ud = &w;
    else
      rc.push_back(&w);
  }
  if (!ud || rc.size() != 4) return say("peer: completions of the wrong queues");
  expect(rc[0]->wr_id == 100 && rc[0]->byte_len == kSendLen && !(rc[0]->flags & KBV_WC_WITH_IMM),
         "send wc");
  expect(rc[1]->byte_len == kImmLen && (rc[1]->flags & KBV_WC_WITH_IMM) && rc[1]->imm == kImm,
         "send_imm wc");
  expect(rc[2]->byte_len == 48, "inline wc");
  expect(rc[3]->opcode == KBV_WC_RECV_RDMA_WITH_IMM && rc[3]->imm == kWImm &&
             rc[3]->byte_len == kWImmLen,
         "write_imm wc");
  expect(ud->byte_len == 40 + kUdLen && (ud->flags & KBV_WC_WITH_GRH) && ud->imm == kUdImm &&
             ud->src_qp == theirs.ud_qpn,
         "ud wc");
  expect(check(p + kRecvOff, kSendLen, 1), "send bytes");
  expect(check(p + kRecvOff + 16384, kImmLen, 2), "send_imm bytes");
  expect(check(p + kRecvOff + 2 * 16384, 48, 3), "inline bytes");
  expect(check(p + kWriteDst, kWriteLen, 4), "write bytes");
  expect(check(p + kWImmDst, kWImmLen, 5), "write_imm bytes");
  expect(check(p + kRecvOff + 4 * 16384 + 40, kUdLen, 7), "ud bytes");
  uint64_t v = 0;
  std::memcpy(&v, p + kAtomics, 8);
  expect(v == kCsNew, "compare-swap result");
  std::memcpy(&v, p + kAtomics + 8, 8);
  expect(v == kFaOld + kFaAdd, "fetch-add result");
  if (!errs.empty()) return say("peer: " + errs);
  rep.ok = 1;
  e.close();
  return say("ok");
}

}  // namespace

int main(int argc, char** argv) { return peer_main(argc, argv, run); }
