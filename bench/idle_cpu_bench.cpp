// SPDX-License-Identifier: BSD-3-Clause
//
// What two idle model HCAs cost in CPU (moved here from the dp_model test
// IdleEnginesSleep, which now counts firmware wakes instead of timing CPU;
// issue 21): two models opened through kbv.h, an RC QP pair connected and
// one SEND exchanged, then the process's CPU time (CLOCK_PROCESS_CPUTIME_ID)
// over kWindow of wall time with nothing to do. The models' firmware
// threads sleep in epoll and wake only for the command-queue scan, so the
// figure is far below one spinning thread (ratio 1.0). Prints
//   ratio idle_models_cpu_per_wall <process CPU / wall time>
//   ms idle_cpu <CPU ms> wall <wall ms>
// Run: build/bench/kbv-bench-idle-cpu (not timed by any test).
#include <kbv/kbv.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sim/model.hpp"

namespace {

constexpr auto kWindow = std::chrono::milliseconds(1000);

void check(kbv_status_t st, const char* what) {
  if (st == KBV_SUCCESS) return;
  std::fprintf(stderr, "idle_cpu_bench: %s: %s\n", what, kbv_status_name(st));
  std::exit(1);
}

double cpu_ms() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

struct Side {
  std::unique_ptr<kbv::sim::Model> model;
  kbv_device_t dev = 0;
  kbv_port_attr_t port{};
  kbv_pd_t pd = 0;
  kbv_cq_t cq = 0;
  kbv_qp_t qp = 0;
  uint32_t qpn = 0;
  std::vector<uint8_t> buf = std::vector<uint8_t>(4096);
  kbv_mr_t mr = 0;
  uint32_t lkey = 0, rkey = 0;
};

void open_side(Side& s, const std::string& name) {
  auto m = kbv::sim::Model::create(name);
  if (!m) check(KBV_ERR_IO, "model");
  s.model = std::move(*m);
  check(kbv_device_open(("sim:" + name).c_str(), nullptr, KBV_EQ_NONE, 0, &s.dev), "open");
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {  // the link comes up a few ms after INIT_HCA
    check(kbv_port_query(s.dev, 1, &s.port, KBV_EQ_NONE, 0), "port");
  } while (s.port.state != KBV_PORT_ACTIVE && std::chrono::steady_clock::now() < end);
  check(kbv_pd_alloc(s.dev, KBV_EQ_NONE, 0, &s.pd), "pd");
  kbv_cq_attr_t ca{};
  ca.cqe = 16;
  check(kbv_cq_create(s.dev, &ca, KBV_EQ_NONE, 0, &s.cq), "cq");
  check(kbv_mr_reg(s.pd, s.buf.data(), s.buf.size(), KBV_ACCESS_LOCAL_WRITE, KBV_EQ_NONE, 0, &s.mr),
        "mr");
  check(kbv_mr_get_keys(s.mr, &s.lkey, &s.rkey), "keys");
  kbv_qp_init_attr_t qa{};
  qa.qp_type = KBV_QPT_RC;
  qa.send_cq = qa.recv_cq = s.cq;
  qa.cap = {4, 4, 1, 1, 0};
  check(kbv_qp_create(s.pd, &qa, KBV_EQ_NONE, 0, &s.qp), "qp");
  check(kbv_qp_get_num(s.qp, &s.qpn), "qpn");
}

void connect(Side& s, const Side& peer) {
  kbv_qp_attr_t a{};
  a.qp_state = KBV_QPS_INIT;
  a.port_num = 1;
  check(
      kbv_qp_modify(s.qp, &a, KBV_QP_STATE | KBV_QP_PORT | KBV_QP_PKEY_INDEX | KBV_QP_ACCESS_FLAGS,
                    KBV_EQ_NONE, 0),
      "init");
  a.qp_state = KBV_QPS_RTR;
  a.path_mtu = KBV_MTU_1024;
  a.dest_qp_num = peer.qpn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 1;
  std::memcpy(a.ah_attr.dgid, peer.port.gids[0].gid, 16);
  a.ah_attr.dmac = peer.port.gids[0].mac;
  check(kbv_qp_modify(s.qp, &a,
                      KBV_QP_STATE | KBV_QP_AV | KBV_QP_PATH_MTU | KBV_QP_DEST_QPN | KBV_QP_RQ_PSN |
                          KBV_QP_MAX_DEST_RD_ATOMIC | KBV_QP_MIN_RNR_TIMER,
                      KBV_EQ_NONE, 0),
        "rtr");
  a.qp_state = KBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  check(kbv_qp_modify(s.qp, &a,
                      KBV_QP_STATE | KBV_QP_SQ_PSN | KBV_QP_TIMEOUT | KBV_QP_RETRY_CNT |
                          KBV_QP_RNR_RETRY | KBV_QP_MAX_QP_RD_ATOMIC,
                      KBV_EQ_NONE, 0),
        "rts");
}

void poll_one(kbv_cq_t cq) {
  kbv_wc_t wc;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (kbv_poll_cq(cq, &wc, 1) == 0)
    if (std::chrono::steady_clock::now() > end) check(KBV_ERR_TIMEOUT, "completion");
  check(static_cast<kbv_status_t>(wc.status), "completion status");
}

}  // namespace

int main() {
  Side a, b;
  const std::string tag = std::to_string(::getpid());
  open_side(a, "idle-a" + tag);
  open_side(b, "idle-b" + tag);
  connect(a, b);
  connect(b, a);
  kbv_sge_t rs{reinterpret_cast<uint64_t>(b.buf.data()), 64, b.lkey};
  kbv_recv_wr_t rw{1, &rs, 1, 0};
  check(kbv_post_recv(b.qp, &rw, 1, nullptr), "recv");
  kbv_sge_t ss{reinterpret_cast<uint64_t>(a.buf.data()), 64, a.lkey};
  kbv_send_wr_t sw{};
  sw.wr_id = 1;
  sw.opcode = KBV_WR_SEND;
  sw.flags = KBV_SEND_SIGNALED;
  sw.sg_list = &ss;
  sw.num_sge = 1;
  check(kbv_post_send(a.qp, &sw, 1, nullptr), "send");
  poll_one(a.cq);
  poll_one(b.cq);

  const auto w0 = std::chrono::steady_clock::now();
  const double c0 = cpu_ms();
  std::this_thread::sleep_for(kWindow);  // the measurement window: nothing to do
  const double cpu = cpu_ms() - c0;
  const double wall =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
  std::printf("ratio idle_models_cpu_per_wall %.4f\n", cpu / wall);
  std::printf("ms idle_cpu %.1f wall %.1f\n", cpu, wall);

  for (Side* s : {&a, &b}) {
    (void)kbv_qp_destroy(s->qp, KBV_EQ_NONE, 0);
    (void)kbv_cq_destroy(s->cq, KBV_EQ_NONE, 0);
    (void)kbv_mr_dereg(s->mr, KBV_EQ_NONE, 0);
    (void)kbv_pd_dealloc(s->pd, KBV_EQ_NONE, 0);
    (void)kbv_device_close(s->dev, KBV_EQ_NONE, 0);
  }
  return 0;
}
