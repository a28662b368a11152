// SPDX-License-Identifier: BSD-3-Clause
//
// The peer of keys_two_process_test.cpp (issue 16, stale keys): a separate
// process with its own model HCA (libkbv's public C API) that registers a
// region, hands its rkey to the test, deregisters it, registers another
// region of the same size and finally checks that the test's WRITE with the
// old rkey changed neither buffer.
// Usage: e2e_keys_peer <socket fd>. Exit status 0 when the protocol ran.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "keys_proto.hpp"
#include "peer_process.hpp"

using namespace kbv::peer;

namespace {

PeerReport run(int fd) {
  PeerReport rep;
  auto say = [&](const std::string& m) {
    std::snprintf(rep.msg, sizeof rep.msg, "%s", m.c_str());
    return rep;
  };
  Endpoint e;
  if (!e.open("sim:keys-peer-" + std::to_string(::getpid()))) return say("peer " + e.err);
  uint8_t* a = e.buf.data();
  fill(a, kBuf, 8);
  PeerInfo mine = e.info(), theirs;
  if (!recv_all(fd, &theirs, sizeof theirs) || !send_all(fd, &mine, sizeof mine))
    return say("peer: socket");
  if (!e.connect(theirs, 200, 100)) return say("peer " + e.err);
  char c = 0;
  // 'g': the test's WRITE through the live key has completed.
  if (!recv_all(fd, &c, 1) || c != 'g') return say("peer: socket");
  std::string errs;
  if (!check(a + kKeysLiveOff, kKeysLen, 4)) errs += "live-key write missing; ";

  // Deregister A, register B of the same size and access.
  kbv_status_t st = kbv_mr_dereg(e.mr, KBV_EQ_NONE, 0);
  e.mr = 0;
  if (st != KBV_SUCCESS) return say(std::string("peer dereg: ") + kbv_status_name(st));
  std::vector<uint8_t> b(kBuf);
  fill(b.data(), kBuf, 9);
  st = kbv_mr_reg(e.pd, b.data(), b.size(), kKeysAccess, KBV_EQ_NONE, 0, &e.mr);
  if (st != KBV_SUCCESS) return say(std::string("peer reg: ") + kbv_status_name(st));
  NewRegion nr;
  nr.addr = reinterpret_cast<uint64_t>(b.data());
  if ((st = kbv_mr_get_keys(e.mr, &nr.lkey, &nr.rkey)) != KBV_SUCCESS)
    return say(std::string("peer keys: ") + kbv_status_name(st));
  if (!send_all(fd, &nr, sizeof nr)) return say("peer: socket");

  // 'c': the test's WRITEs with the old rkey have completed (with errors).
  if (!recv_all(fd, &c, 1) || c != 'c') return say("peer: socket");
  if (!check(b.data(), kBuf, 9)) errs += "new region changed; ";
  std::vector<uint8_t> want(kBuf);
  fill(want.data(), kBuf, 8);
  std::memcpy(want.data() + kKeysLiveOff, a + kKeysLiveOff, kKeysLen);  // the live write
  if (std::memcmp(a, want.data(), kBuf) != 0) errs += "old (deregistered) buffer changed; ";
  if (!errs.empty()) return say("peer: " + errs);
  rep.ok = 1;
  e.close();
  return say("ok");
}

}  // namespace

int main(int argc, char** argv) { return peer_main(argc, argv, run); }
