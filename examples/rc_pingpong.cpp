// SPDX-License-Identifier: BSD-3-Clause
//
// rc_pingpong.cpp — the RC ping-pong of rc_pingpong.c on the C++ API
// (kbv/kbv.hpp): RAII owners close every object (children before parents, by
// declaration order), kbv::Result<T> carries each error, std::span carries
// work requests and completions.
//
// Two devices in one process (by default the model HCAs "sim:ping" and
// "sim:pong"; on hardware give two vfio URIs); "ping" SENDs a message, "pong"
// echoes it back, ITERS times, each checked byte for byte. Control calls are
// synchronous (no kbv::Async given).
//
//   rc_pingpong_cpp [uri_a uri_b [iters]]
#include <kbv/kbv.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr uint32_t kMsgSize = 64;

// Prints the failed step and returns false.
bool fail(const char* what, kbv::Status s) {
  std::fprintf(stderr, "rc_pingpong_cpp: %s: %s\n", what, kbv_status_name(s.code()));
  return false;
}

struct Side {
  std::string uri;
  kbv::Device dev;  // declared first: closed last
  kbv::Pd pd;
  kbv::Cq cq;
  kbv::Mr mr;
  kbv::Qp qp;
  uint32_t qpn = 0, psn = 0, gid_index = 0, mtu = KBV_MTU_1024;
  kbv_gid_entry_t gid{};
  std::array<uint8_t, 2 * kMsgSize> buf{};  // [0, kMsgSize) send, the rest receive

  bool setup(uint32_t first_psn) {
    auto d = kbv::Device::open(uri);
    if (!d) return fail("open", d.status());
    dev = std::move(*d);
    auto port = dev.query_port(1);
    if (!port) return fail("query_port", port.status());
    for (uint32_t i = 0; i < port->gid_count; ++i) {
      if (port->gids[i].type == KBV_GID_TYPE_ROCE_V2) {
        gid_index = i;
        break;
      }
    }
    gid = port->gids[gid_index];
    mtu = port->active_mtu;
    auto p = dev.alloc_pd();
    if (!p) return fail("alloc_pd", p.status());
    pd = std::move(*p);
    auto c = dev.create_cq({.cqe = 16, .flags = 0, .event_eq = KBV_EQ_NONE});
    if (!c) return fail("create_cq", c.status());
    cq = std::move(*c);
    auto m = pd.reg_mr(buf.data(), buf.size(), KBV_ACCESS_LOCAL_WRITE);
    if (!m) return fail("reg_mr", m.status());
    mr = std::move(*m);
    kbv_qp_init_attr_t ia{};
    ia.qp_type = KBV_QPT_RC;
    ia.send_cq = cq.handle();
    ia.recv_cq = cq.handle();
    ia.cap = {.max_send_wr = 8,
              .max_recv_wr = 8,
              .max_send_sge = 1,
              .max_recv_sge = 1,
              .max_inline_data = 0};
    auto q = pd.create_qp(ia);
    if (!q) return fail("create_qp", q.status());
    qp = std::move(*q);
    auto n = qp.num();
    if (!n) return fail("qp num", n.status());
    qpn = *n;
    psn = first_psn;
    return true;
  }

  // RESET -> INIT -> RTR -> RTS towards peer (IBTA 10.3.1).
  bool connect(const Side& peer) {
    kbv_qp_attr_t a{};
    a.qp_state = KBV_QPS_INIT;
    a.port_num = 1;
    if (kbv::Status s =
            qp.modify(a, KBV_QP_STATE | KBV_QP_PKEY_INDEX | KBV_QP_PORT | KBV_QP_ACCESS_FLAGS);
        !s) {
      return fail("modify INIT", s);
    }
    a = {};
    a.qp_state = KBV_QPS_RTR;
    a.path_mtu = std::min(mtu, peer.mtu);
    a.dest_qp_num = peer.qpn;
    a.rq_psn = peer.psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    std::memcpy(a.ah_attr.dgid, peer.gid.gid, 16);
    a.ah_attr.dmac = peer.gid.mac;
    a.ah_attr.sgid_index = static_cast<uint8_t>(gid_index);
    a.ah_attr.port_num = 1;
    if (kbv::Status s =
            qp.modify(a, KBV_QP_STATE | KBV_QP_AV | KBV_QP_PATH_MTU | KBV_QP_DEST_QPN |
                             KBV_QP_RQ_PSN | KBV_QP_MAX_DEST_RD_ATOMIC | KBV_QP_MIN_RNR_TIMER);
        !s) {
      return fail("modify RTR", s);
    }
    a = {};
    a.qp_state = KBV_QPS_RTS;
    a.sq_psn = psn;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    if (kbv::Status s =
            qp.modify(a, KBV_QP_STATE | KBV_QP_SQ_PSN | KBV_QP_TIMEOUT | KBV_QP_RETRY_CNT |
                             KBV_QP_RNR_RETRY | KBV_QP_MAX_QP_RD_ATOMIC);
        !s) {
      return fail("modify RTS", s);
    }
    return true;
  }

  bool post_recv() {
    kbv_sge_t sge{reinterpret_cast<uint64_t>(buf.data() + kMsgSize), kMsgSize, mr.lkey()};
    kbv_recv_wr_t wr{.wr_id = 1, .sg_list = &sge, .num_sge = 1, .reserved = 0};
    kbv::Status s = qp.post_recv({&wr, 1});
    return s ? true : fail("post_recv", s);
  }

  bool post_send() {
    kbv_sge_t sge{reinterpret_cast<uint64_t>(buf.data()), kMsgSize, mr.lkey()};
    kbv_send_wr_t wr{};
    wr.wr_id = 2;
    wr.opcode = KBV_WR_SEND;
    wr.flags = KBV_SEND_SIGNALED;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    kbv::Status s = qp.post_send({&wr, 1});
    return s ? true : fail("post_send", s);
  }

  // Polls until a receive completes (send completions are consumed).
  bool wait_recv() {
    for (uint64_t spins = 0; spins < 100'000'000; ++spins) {
      std::array<kbv_wc_t, 4> wcs;
      auto n = cq.poll(wcs);
      if (!n) return fail("poll", n.status());
      for (uint32_t i = 0; i < *n; ++i) {
        if (wcs[i].status != KBV_SUCCESS) {
          return fail("completion", static_cast<kbv_status_t>(wcs[i].status));
        }
        if (wcs[i].opcode == KBV_WC_RECV) return post_recv();
      }
    }
    return fail("wait_recv", KBV_ERR_TIMEOUT);
  }
};

bool run(Side& ping, Side& pong, int iters) {
  if (!ping.setup(0x1000) || !pong.setup(0x2000)) return false;
  if (!ping.connect(pong) || !pong.connect(ping)) return false;
  if (!ping.post_recv() || !pong.post_recv()) return false;
  for (int i = 0; i < iters; ++i) {
    for (uint32_t j = 0; j < kMsgSize; ++j) ping.buf[j] = static_cast<uint8_t>(i * 5 + j);
    if (!ping.post_send() || !pong.wait_recv()) return false;
    std::memcpy(pong.buf.data(), pong.buf.data() + kMsgSize, kMsgSize);  // echo
    if (!pong.post_send() || !ping.wait_recv()) return false;
    if (std::memcmp(ping.buf.data(), ping.buf.data() + kMsgSize, kMsgSize) != 0) {
      std::fprintf(stderr, "rc_pingpong_cpp: iteration %d: the echo differs\n", i);
      return false;
    }
  }
  std::printf(
      "rc_pingpong_cpp: %d round trips of %u bytes between %s (QP 0x%x) and %s (QP 0x%x): ok\n",
      iters, kMsgSize, ping.uri.c_str(), ping.qpn, pong.uri.c_str(), pong.qpn);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Side ping, pong;
  ping.uri = argc > 2 ? argv[1] : "sim:ping";
  pong.uri = argc > 2 ? argv[2] : "sim:pong";
  const int iters = argc > 3 ? std::max(1, std::atoi(argv[3])) : 100;
  return run(ping, pong, iters) ? 0 : 1;
}
