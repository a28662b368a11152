// SPDX-License-Identifier: BSD-3-Clause
//
// ud_example.cpp — the datagram exchange of ud_example.c on the C++ API
// (kbv/kbv.hpp): two UD QPs on two devices in one process (by default the
// model HCAs "sim:uda" and "sim:udb"), an address handle (kbv::Ah) each way,
// MSGS datagrams from A to B, each answered by B; every receive starts with
// the 40-byte GRH (IBTA 8.3) and is checked: sender QPN, length, bytes.
//
//   ud_example_cpp [uri_a uri_b [messages]]
#include <kbv/kbv.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr uint32_t kMsgSize = 256;
constexpr uint32_t kGrh = 40;
constexpr uint32_t kQkey = 0x11111111;

bool fail(const char* what, kbv::Status s) {
  std::fprintf(stderr, "ud_example_cpp: %s: %s\n", what, kbv_status_name(s.code()));
  return false;
}

struct Side {
  std::string uri;
  kbv::Device dev;
  kbv::Pd pd;
  kbv::Cq cq;
  kbv::Mr mr;
  kbv::Qp qp;
  kbv::Ah ah;  // towards the other side
  uint32_t qpn = 0, gid_index = 0;
  kbv_gid_entry_t gid{};
  std::array<uint8_t, kMsgSize + kGrh + kMsgSize> buf{};  // send | GRH + receive

  bool setup() {
    auto d = kbv::Device::open(uri);
    if (!d) return fail("open", d.status());
    dev = std::move(*d);
    auto port = dev.query_port(1);
    if (!port) return fail("query_port", port.status());
    auto* v2 = std::find_if(port->gids, port->gids + port->gid_count,
                            [](const auto& g) { return g.type == KBV_GID_TYPE_ROCE_V2; });
    gid_index = v2 != port->gids + port->gid_count ? static_cast<uint32_t>(v2 - port->gids) : 0;
    gid = port->gids[gid_index];
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
    ia.qp_type = KBV_QPT_UD;
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
    // UD: INIT (with the Q_Key), RTR, RTS need no peer.
    kbv_qp_attr_t a{};
    a.qp_state = KBV_QPS_INIT;
    a.port_num = 1;
    a.qkey = kQkey;
    if (auto s = qp.modify(a, KBV_QP_STATE | KBV_QP_PKEY_INDEX | KBV_QP_PORT | KBV_QP_QKEY); !s) {
      return fail("modify INIT", s);
    }
    a.qp_state = KBV_QPS_RTR;
    if (auto s = qp.modify(a, KBV_QP_STATE); !s) return fail("modify RTR", s);
    a.qp_state = KBV_QPS_RTS;
    a.sq_psn = 0;
    if (auto s = qp.modify(a, KBV_QP_STATE | KBV_QP_SQ_PSN); !s) return fail("modify RTS", s);
    return post_recv();
  }

  bool make_ah(const Side& peer) {
    kbv_ah_attr_t at{};
    std::memcpy(at.dgid, peer.gid.gid, 16);
    at.dmac = peer.gid.mac;
    at.sgid_index = static_cast<uint8_t>(gid_index);
    at.port_num = 1;
    auto h = pd.create_ah(at);
    if (!h) return fail("create_ah", h.status());
    ah = std::move(*h);
    return true;
  }

  bool post_recv() {
    kbv_sge_t sge{reinterpret_cast<uint64_t>(buf.data() + kMsgSize), kGrh + kMsgSize, mr.lkey()};
    kbv_recv_wr_t wr{.wr_id = 1, .sg_list = &sge, .num_sge = 1, .reserved = 0};
    kbv::Status s = qp.post_recv({&wr, 1});
    return s ? true : fail("post_recv", s);
  }

  bool send_to(const Side& peer) {
    kbv_sge_t sge{reinterpret_cast<uint64_t>(buf.data()), kMsgSize, mr.lkey()};
    kbv_send_wr_t wr{};
    wr.wr_id = 2;
    wr.opcode = KBV_WR_SEND;
    wr.flags = KBV_SEND_SIGNALED;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.ah = ah.handle();
    wr.remote_qpn = peer.qpn;
    wr.remote_qkey = kQkey;
    kbv::Status s = qp.post_send({&wr, 1});
    return s ? true : fail("post_send", s);
  }

  // Waits for the next datagram and checks it is `from`'s message.
  bool receive_from(const Side& from) {
    for (uint64_t spins = 0; spins < 100'000'000; ++spins) {
      kbv_wc_t wc;
      auto n = cq.poll({&wc, 1});
      if (!n) return fail("poll", n.status());
      if (*n == 0) continue;
      if (wc.status != KBV_SUCCESS) return fail("completion", static_cast<kbv_status_t>(wc.status));
      if (wc.opcode != KBV_WC_RECV) continue;  // a send completion
      if (wc.byte_len != kGrh + kMsgSize || wc.src_qp != from.qpn ||
          !(wc.flags & KBV_WC_WITH_GRH) ||
          std::memcmp(buf.data() + kMsgSize + kGrh, from.buf.data(), kMsgSize) != 0) {
        std::fprintf(stderr, "ud_example_cpp: %s: unexpected datagram (%u bytes from QP 0x%x)\n",
                     uri.c_str(), wc.byte_len, wc.src_qp);
        return false;
      }
      return post_recv();
    }
    return fail("receive", KBV_ERR_TIMEOUT);
  }
};

bool run(Side& a, Side& b, int msgs) {
  if (!a.setup() || !b.setup() || !a.make_ah(b) || !b.make_ah(a)) return false;
  for (int i = 0; i < msgs; ++i) {
    for (uint32_t j = 0; j < kMsgSize; ++j) a.buf[j] = static_cast<uint8_t>(7 * i + j);
    if (!a.send_to(b) || !b.receive_from(a)) return false;
    for (uint32_t j = 0; j < kMsgSize; ++j) b.buf[j] = static_cast<uint8_t>(~(7 * i + j));
    if (!b.send_to(a) || !a.receive_from(b)) return false;
  }
  std::printf(
      "ud_example_cpp: %d datagrams of %u bytes each way between %s (QP 0x%x) and %s (QP 0x%x): "
      "ok\n",
      msgs, kMsgSize, a.uri.c_str(), a.qpn, b.uri.c_str(), b.qpn);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Side a, b;
  a.uri = argc > 2 ? argv[1] : "sim:uda";
  b.uri = argc > 2 ? argv[2] : "sim:udb";
  const int msgs = argc > 3 ? std::max(1, std::atoi(argv[3])) : 20;
  return run(a, b, msgs) ? 0 : 1;
}
