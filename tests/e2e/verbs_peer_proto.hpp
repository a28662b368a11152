// SPDX-License-Identifier: BSD-3-Clause
//
// The two-process verbs test (verbs_two_process_test.cpp + verbs_peer.cpp):
// both processes open their own "sim:" device (each a model HCA with its own
// 127.0.0.N RoCEv2 port) through the public C API only (libkbv.so), set up
// an RC and a UD QP, swap PeerInfo over a socket, and the test process runs
// every opcode against the peer; data is checked byte for byte on both
// sides against the deterministic patterns below.
#pragma once

#include <kbv/kbv.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace kbv::peer {

struct PeerInfo {
  uint32_t rc_qpn = 0;
  uint32_t ud_qpn = 0;
  uint8_t gid[16] = {};
  uint64_t mac = 0;
  uint64_t addr = 0;  // the MR's first byte
  uint32_t rkey = 0;
  uint32_t pad = 0;
};

struct PeerReport {
  uint32_t ok = 0;  // 1: every check passed
  uint32_t completions = 0;
  char msg[240] = {};
};

// Layout of each side's 1 MiB buffer.
inline constexpr size_t kBuf = 1 << 20;
inline constexpr uint32_t kSendLen = 5000, kImmLen = 700, kWriteLen = 9000, kWImmLen = 3000,
                          kReadLen = 6000, kUdLen = 512;
inline constexpr size_t kRecvOff = 0;        // server: 5 receive slots of 16 KiB
inline constexpr size_t kWriteDst = 196608;  // server: WRITE target
inline constexpr size_t kWImmDst = 229376;   // server: WRITE_IMM target
inline constexpr size_t kReadSrc = 262144;   // server: READ source
inline constexpr size_t kAtomics = 300000;   // server: CS at +0, FA at +8
inline constexpr uint32_t kImm = 0xA1B2C3D4, kWImm = 0x55667788, kUdImm = 0x01020304;
inline constexpr uint64_t kCsOld = 0x1111222233334444ull, kCsNew = 0xDEADBEEFCAFEF00Dull;
inline constexpr uint64_t kFaOld = 1000, kFaAdd = 234;
inline constexpr uint32_t kQkey = 0x11111111;

inline void fill(uint8_t* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(seed * 31 + i * 7 + (i >> 8));
}
inline bool check(const uint8_t* p, size_t n, uint8_t seed) {
  std::vector<uint8_t> want(n);
  fill(want.data(), n, seed);
  return std::memcmp(p, want.data(), n) == 0;
}

inline bool send_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n) {
    ssize_t k = ::send(fd, c, n, MSG_NOSIGNAL);
    if (k <= 0) return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}
inline bool recv_all(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n) {
    ssize_t k = ::recv(fd, c, n, 0);
    if (k <= 0) return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// One process's side: device, PD, CQ, MR, an RC and a UD QP.
struct Endpoint {
  kbv_device_t dev = 0;
  kbv_port_attr_t port{};
  kbv_pd_t pd = 0;
  kbv_cq_t cq = 0;
  kbv_mr_t mr = 0;
  kbv_qp_t rc = 0, ud = 0;
  kbv_ah_t ah = 0;
  uint32_t lkey = 0, rkey = 0;
  std::vector<uint8_t> buf = std::vector<uint8_t>(kBuf);
  std::string err;

  uint64_t addr(size_t off) const { return reinterpret_cast<uint64_t>(buf.data()) + off; }
  kbv_sge_t sge(size_t off, uint32_t len) const { return {addr(off), len, lkey}; }

  bool fail(const char* what, kbv_status_t st) {
    err = std::string(what) + ": " + kbv_status_name(st);
    return false;
  }

  // cqe: the CQ's entries; depth: each QP's send and receive queue depth.
  bool open(const std::string& uri, uint32_t cqe = 256, uint32_t depth = 32) {
    kbv_status_t st = kbv_device_open(uri.c_str(), nullptr, KBV_EQ_NONE, 0, &dev);
    if (st != KBV_SUCCESS) return fail("open", st);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      st = kbv_port_query(dev, 1, &port, KBV_EQ_NONE, 0);
      if (st != KBV_SUCCESS) return fail("port", st);
      if (port.state == KBV_PORT_ACTIVE) break;
      if (std::chrono::steady_clock::now() > end) return fail("port", KBV_ERR_TIMEOUT);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if ((st = kbv_pd_alloc(dev, KBV_EQ_NONE, 0, &pd)) != KBV_SUCCESS) return fail("pd", st);
    kbv_cq_attr_t ca{};
    ca.cqe = cqe;
    if ((st = kbv_cq_create(dev, &ca, KBV_EQ_NONE, 0, &cq)) != KBV_SUCCESS) return fail("cq", st);
    const uint32_t acc = KBV_ACCESS_LOCAL_WRITE | KBV_ACCESS_REMOTE_WRITE | KBV_ACCESS_REMOTE_READ |
                         KBV_ACCESS_REMOTE_ATOMIC;
    st = kbv_mr_reg(pd, buf.data(), buf.size(), acc, KBV_EQ_NONE, 0, &mr);
    if (st != KBV_SUCCESS) return fail("mr", st);
    if ((st = kbv_mr_get_keys(mr, &lkey, &rkey)) != KBV_SUCCESS) return fail("keys", st);
    for (uint32_t type : {KBV_QPT_RC, KBV_QPT_UD}) {
      kbv_qp_init_attr_t qa{};
      qa.qp_type = type;
      qa.send_cq = qa.recv_cq = cq;
      qa.cap = {depth, depth, 1, 1, 64};
      st = kbv_qp_create(pd, &qa, KBV_EQ_NONE, 0, type == KBV_QPT_RC ? &rc : &ud);
      if (st != KBV_SUCCESS) return fail("qp", st);
    }
    return true;
  }

  PeerInfo info() const {
    PeerInfo i;
    (void)kbv_qp_get_num(rc, &i.rc_qpn);
    (void)kbv_qp_get_num(ud, &i.ud_qpn);
    std::memcpy(i.gid, port.gids[0].gid, 16);
    i.mac = port.gids[0].mac;
    i.addr = addr(0);
    i.rkey = rkey;
    return i;
  }

  bool connect(const PeerInfo& p, uint32_t sq_psn, uint32_t rq_psn) {
    for (uint32_t type : {KBV_QPT_RC, KBV_QPT_UD}) {
      kbv_qp_t qp = type == KBV_QPT_RC ? rc : ud;
      kbv_qp_attr_t a{};
      a.qp_state = KBV_QPS_INIT;
      a.port_num = 1;
      a.qp_access_flags =
          KBV_ACCESS_REMOTE_READ | KBV_ACCESS_REMOTE_WRITE | KBV_ACCESS_REMOTE_ATOMIC;
      a.qkey = kQkey;
      uint32_t m = KBV_QP_STATE | KBV_QP_PORT | KBV_QP_PKEY_INDEX |
                   (type == KBV_QPT_UD ? KBV_QP_QKEY : KBV_QP_ACCESS_FLAGS);
      kbv_status_t st = kbv_qp_modify(qp, &a, m, KBV_EQ_NONE, 0);
      if (st != KBV_SUCCESS) return fail("init", st);
      a.qp_state = KBV_QPS_RTR;
      a.path_mtu = KBV_MTU_1024;
      a.dest_qp_num = p.rc_qpn;
      a.rq_psn = rq_psn;
      a.max_dest_rd_atomic = 4;
      a.min_rnr_timer = 12;
      std::memcpy(a.ah_attr.dgid, p.gid, 16);
      a.ah_attr.dmac = p.mac;
      m = KBV_QP_STATE;
      if (type == KBV_QPT_RC)
        m |= KBV_QP_AV | KBV_QP_PATH_MTU | KBV_QP_DEST_QPN | KBV_QP_RQ_PSN |
             KBV_QP_MAX_DEST_RD_ATOMIC | KBV_QP_MIN_RNR_TIMER;
      if ((st = kbv_qp_modify(qp, &a, m, KBV_EQ_NONE, 0)) != KBV_SUCCESS) return fail("rtr", st);
      a.qp_state = KBV_QPS_RTS;
      a.sq_psn = sq_psn;
      a.timeout = 14;
      a.retry_cnt = 7;
      a.rnr_retry = 7;
      a.max_rd_atomic = 4;
      m = KBV_QP_STATE | KBV_QP_SQ_PSN;
      if (type == KBV_QPT_RC)
        m |= KBV_QP_TIMEOUT | KBV_QP_RETRY_CNT | KBV_QP_RNR_RETRY | KBV_QP_MAX_QP_RD_ATOMIC;
      if ((st = kbv_qp_modify(qp, &a, m, KBV_EQ_NONE, 0)) != KBV_SUCCESS) return fail("rts", st);
    }
    kbv_ah_attr_t aa{};
    std::memcpy(aa.dgid, p.gid, 16);
    aa.dmac = p.mac;
    kbv_status_t st = kbv_ah_create(pd, &aa, KBV_EQ_NONE, 0, &ah);
    if (st != KBV_SUCCESS) return fail("ah", st);
    return true;
  }

  // Polls the CQ for n completions (10 s limit).
  std::vector<kbv_wc_t> poll(size_t n) {
    std::vector<kbv_wc_t> out;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (out.size() < n && std::chrono::steady_clock::now() < end) {
      kbv_wc_t wc[16];
      int k = kbv_poll_cq(cq, wc, 16);
      if (k > 0) {
        out.insert(out.end(), wc, wc + k);
        continue;
      }
      (void)kbv_device_progress(dev);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    return out;
  }

  void close() {
    if (ah) (void)kbv_ah_destroy(ah, KBV_EQ_NONE, 0);
    if (rc) (void)kbv_qp_destroy(rc, KBV_EQ_NONE, 0);
    if (ud) (void)kbv_qp_destroy(ud, KBV_EQ_NONE, 0);
    if (cq) (void)kbv_cq_destroy(cq, KBV_EQ_NONE, 0);
    if (mr) (void)kbv_mr_dereg(mr, KBV_EQ_NONE, 0);
    if (pd) (void)kbv_pd_dealloc(pd, KBV_EQ_NONE, 0);
    if (dev) (void)kbv_device_close(dev, KBV_EQ_NONE, 0);
    ah = rc = ud = cq = mr = pd = dev = 0;
  }
};

}  // namespace kbv::peer
