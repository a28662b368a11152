// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-qp-scale: N RC QP pairs between two model HCAs in this process
// (issue 14, "Scale"): creates 2N QPs, connects each pair (RESET -> INIT ->
// RTR -> RTS on both sides), then every QP writes one 64-byte message to its
// peer (RDMA WRITE, signalled); every completion must be a success and every
// byte is checked. Control calls go through the asynchronous API with many
// requests in flight (--inflight), as an application setting up many
// connections would.
//
// Prints the wall time of each phase and its cost per QP pair, then
//   ratio-free figures: `figure qp_create_us <v>`, `figure qp_connect_us <v>`,
//   `figure qp_data_us <v>` (per pair), and exits 0 only when every step
//   succeeded and every byte matched.
//
// Usage: kbv-qp-scale [N (default 1000)] [--inflight K (default 64)]
// Public API only (kbv/kbv.h); the model devices are "sim:<name>".
#include <kbv/kbv.h>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kMsg = 64;

struct Side {
  std::string uri;
  kbv_device_t dev = 0;
  kbv_port_attr_t port{};
  kbv_pd_t pd = 0;
  kbv_cq_t cq = 0;
  kbv_mr_t mr = 0;
  uint32_t lkey = 0, rkey = 0;
  std::vector<uint8_t> buf;  // [0, N*kMsg): source; [N*kMsg, 2N*kMsg): target
  std::vector<kbv_qp_t> qps;
  std::vector<uint32_t> qpns;
};

bool check(kbv_status_t st, const char* what) {
  if (st == KBV_SUCCESS || st == KBV_PENDING) return true;
  std::fprintf(stderr, "kbv-qp-scale: %s: %s\n", what, kbv_status_name(st));
  return false;
}

double since_us(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

// One asynchronous step per QP index (user_data = index), at most
// `inflight` outstanding; `submit(i)` starts step i, the event finishes it.
template <class Submit>
bool run_async(kbv_eq_t eq, size_t n, size_t inflight, const char* what, Submit submit) {
  size_t next = 0, done = 0, out = 0;
  std::vector<kbv_event_t> ev(256);
  while (done < n) {
    while (next < n && out < inflight) {
      kbv_status_t st = submit(next);
      if (st != KBV_PENDING) {
        if (!check(st, what)) return false;
        ++done;  // completed synchronously
      } else {
        ++out;
      }
      ++next;
    }
    int k = kbv_eq_poll(eq, ev.data(), static_cast<uint32_t>(ev.size()));
    if (k < 0) return check(static_cast<kbv_status_t>(k), "kbv_eq_poll");
    for (int i = 0; i < k; ++i) {
      if (ev[i].type != KBV_EVENT_REQUEST) continue;  // port events
      if (ev[i].status != KBV_SUCCESS) {
        std::fprintf(stderr, "kbv-qp-scale: %s %lu: %s (fw status %u syndrome %#x)\n", what,
                     static_cast<unsigned long>(ev[i].user_data),
                     kbv_status_name(static_cast<kbv_status_t>(ev[i].status)), ev[i].fw_status,
                     ev[i].syndrome);
        return false;
      }
      --out;
      ++done;
    }
  }
  return true;
}

bool open_side(Side& s, const std::string& name, uint32_t n) {
  s.uri = "sim:" + name;
  if (!check(kbv_device_open(s.uri.c_str(), nullptr, KBV_EQ_NONE, 0, &s.dev), "device open"))
    return false;
  const auto end = Clock::now() + std::chrono::seconds(10);
  for (;;) {
    if (!check(kbv_port_query(s.dev, 1, &s.port, KBV_EQ_NONE, 0), "port query")) return false;
    if (s.port.state == KBV_PORT_ACTIVE) break;
    if (Clock::now() > end) {
      std::fprintf(stderr, "kbv-qp-scale: %s: port never became active\n", s.uri.c_str());
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!check(kbv_pd_alloc(s.dev, KBV_EQ_NONE, 0, &s.pd), "pd alloc")) return false;
  kbv_cq_attr_t ca{};
  ca.cqe = n + 64;
  if (!check(kbv_cq_create(s.dev, &ca, KBV_EQ_NONE, 0, &s.cq), "cq create")) return false;
  s.buf.assign(size_t{2} * n * kMsg, 0);
  if (!check(kbv_mr_reg(s.pd, s.buf.data(), s.buf.size(),
                        KBV_ACCESS_LOCAL_WRITE | KBV_ACCESS_REMOTE_WRITE, KBV_EQ_NONE, 0, &s.mr),
             "mr reg"))
    return false;
  if (!check(kbv_mr_get_keys(s.mr, &s.lkey, &s.rkey), "mr keys")) return false;
  s.qps.assign(n, 0);
  s.qpns.assign(n, 0);
  return true;
}

uint8_t pattern(uint32_t side, uint32_t i, uint32_t b) {
  return static_cast<uint8_t>((i * 131u + b * 7u + side * 89u) ^ (i >> 8));
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t n = 1000;
  size_t inflight = 64;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--inflight") == 0 && i + 1 < argc) {
      inflight = std::strtoul(argv[++i], nullptr, 0);
    } else if (argv[i][0] != '-') {
      n = static_cast<uint32_t>(std::strtoul(argv[i], nullptr, 0));
    } else {
      std::fprintf(stderr, "usage: kbv-qp-scale [N] [--inflight K]\n");
      return 2;
    }
  }
  if (n == 0 || inflight == 0) return 2;
  const std::string tag = std::to_string(getpid());
  Side s[2];
  if (!open_side(s[0], "qpscale-a" + tag, n) || !open_side(s[1], "qpscale-b" + tag, n)) return 1;
  kbv_eq_t eq = 0;
  if (!check(kbv_eq_create(static_cast<uint32_t>(inflight + 64), &eq), "eq create")) return 1;

  // ---- create 2N QPs ----
  auto t0 = Clock::now();
  bool ok = run_async(eq, size_t{2} * n, inflight, "qp create", [&](size_t k) {
    Side& d = s[k % 2];
    kbv_qp_init_attr_t a{};
    a.qp_type = KBV_QPT_RC;
    a.send_cq = d.cq;
    a.recv_cq = d.cq;
    a.cap.max_send_wr = 2;
    a.cap.max_recv_wr = 1;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    return kbv_qp_create(d.pd, &a, eq, k, &d.qps[k / 2]);
  });
  const double create_us = since_us(t0);
  if (!ok) return 1;
  for (Side& d : s)
    for (uint32_t i = 0; i < n; ++i)
      if (!check(kbv_qp_get_num(d.qps[i], &d.qpns[i]), "qp num")) return 1;

  // ---- connect: three transitions per QP, each step over all 2N QPs ----
  t0 = Clock::now();
  for (uint32_t step = 0; step < 3 && ok; ++step) {
    ok = run_async(eq, size_t{2} * n, inflight, "qp modify", [&](size_t k) {
      Side& d = s[k % 2];
      const Side& peer = s[1 - k % 2];
      const uint32_t i = static_cast<uint32_t>(k / 2);
      kbv_qp_attr_t a{};
      uint32_t m = KBV_QP_STATE;
      if (step == 0) {
        a.qp_state = KBV_QPS_INIT;
        a.port_num = 1;
        a.qp_access_flags = KBV_ACCESS_REMOTE_WRITE;
        m |= KBV_QP_PORT | KBV_QP_PKEY_INDEX | KBV_QP_ACCESS_FLAGS;
      } else if (step == 1) {
        a.qp_state = KBV_QPS_RTR;
        a.path_mtu = KBV_MTU_1024;
        a.dest_qp_num = peer.qpns[i];
        a.rq_psn = i & 0xFFFFFF;
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer = 12;
        std::memcpy(a.ah_attr.dgid, peer.port.gids[0].gid, 16);
        a.ah_attr.dmac = peer.port.gids[0].mac;
        a.ah_attr.hop_limit = 64;
        m |= KBV_QP_AV | KBV_QP_PATH_MTU | KBV_QP_DEST_QPN | KBV_QP_RQ_PSN |
             KBV_QP_MAX_DEST_RD_ATOMIC | KBV_QP_MIN_RNR_TIMER;
      } else {
        a.qp_state = KBV_QPS_RTS;
        a.sq_psn = i & 0xFFFFFF;
        a.timeout = 14;  // 67 ms, perftest's default
        a.retry_cnt = 7;
        a.rnr_retry = 7;
        a.max_rd_atomic = 1;
        m |= KBV_QP_SQ_PSN | KBV_QP_TIMEOUT | KBV_QP_RETRY_CNT | KBV_QP_RNR_RETRY |
             KBV_QP_MAX_QP_RD_ATOMIC;
      }
      return kbv_qp_modify(d.qps[i], &a, m, eq, k);
    });
  }
  const double connect_us = since_us(t0);
  if (!ok) return 1;

  // ---- data: every QP writes one message to its peer's target area ----
  for (uint32_t side = 0; side < 2; ++side)
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t b = 0; b < kMsg; ++b) s[side].buf[size_t{i} * kMsg + b] = pattern(side, i, b);
  t0 = Clock::now();
  for (uint32_t side = 0; side < 2; ++side) {
    Side& d = s[side];
    const Side& peer = s[1 - side];
    for (uint32_t i = 0; i < n; ++i) {
      kbv_sge_t sge{reinterpret_cast<uint64_t>(d.buf.data() + size_t{i} * kMsg), kMsg, d.lkey};
      kbv_send_wr_t wr{};
      wr.wr_id = i;
      wr.opcode = KBV_WR_RDMA_WRITE;
      wr.flags = KBV_SEND_SIGNALED;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.remote_addr = reinterpret_cast<uint64_t>(peer.buf.data() + (size_t{n} + i) * kMsg);
      wr.rkey = peer.rkey;
      if (!check(kbv_post_send(d.qps[i], &wr, 1, nullptr), "post send")) return 1;
    }
  }
  uint32_t got[2] = {0, 0};
  std::vector<kbv_wc_t> wc(256);
  const auto limit = Clock::now() + std::chrono::seconds(120);
  while ((got[0] < n || got[1] < n) && Clock::now() < limit) {
    for (uint32_t side = 0; side < 2; ++side) {
      int k = kbv_poll_cq(s[side].cq, wc.data(), static_cast<uint32_t>(wc.size()));
      if (k < 0) return check(static_cast<kbv_status_t>(k), "poll cq") ? 1 : 1;
      for (int j = 0; j < k; ++j) {
        if (wc[j].status != KBV_SUCCESS) {
          std::fprintf(stderr, "kbv-qp-scale: side %u QP %#x: %s (syndrome %#x)\n", side,
                       wc[j].qp_num, kbv_status_name(static_cast<kbv_status_t>(wc[j].status)),
                       wc[j].syndrome);
          return 1;
        }
        ++got[side];
      }
    }
  }
  const double data_us = since_us(t0);
  if (got[0] < n || got[1] < n) {
    std::fprintf(stderr, "kbv-qp-scale: %u + %u of %u completions\n", got[0], got[1], n);
    return 1;
  }
  uint64_t bad = 0;
  for (uint32_t side = 0; side < 2; ++side)
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t b = 0; b < kMsg; ++b)
        if (s[side].buf[(size_t{n} + i) * kMsg + b] != pattern(1 - side, i, b)) ++bad;
  if (bad != 0) {
    std::fprintf(stderr, "kbv-qp-scale: %lu bytes differ\n", static_cast<unsigned long>(bad));
    return 1;
  }

  std::printf("qp pairs %u (inflight %zu): create %.1f ms, connect %.1f ms, data %.1f ms\n", n,
              inflight, create_us / 1000, connect_us / 1000, data_us / 1000);
  std::printf("figure qp_create_us %.2f\n", create_us / n);
  std::printf("figure qp_connect_us %.2f\n", connect_us / n);
  std::printf("figure qp_data_us %.2f\n", data_us / n);
  std::printf("verified %u messages each way, %u completions, no error\n", n, got[0] + got[1]);

  // Teardown (synchronous closes; children before parents).
  for (Side& d : s) {
    for (kbv_qp_t q : d.qps) (void)kbv_qp_destroy(q, KBV_EQ_NONE, 0);
    (void)kbv_mr_dereg(d.mr, KBV_EQ_NONE, 0);
    (void)kbv_cq_destroy(d.cq, KBV_EQ_NONE, 0);
    (void)kbv_pd_dealloc(d.pd, KBV_EQ_NONE, 0);
    (void)kbv_device_close(d.dev, KBV_EQ_NONE, 0);
  }
  (void)kbv_eq_destroy(eq);
  return 0;
}
