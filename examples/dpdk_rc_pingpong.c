/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk_rc_pingpong.c — kbv inside a DPDK application: an RC ping-pong
 * between two ConnectX functions that DPDK's EAL found, mapped and probed
 * for kbv (libkbv-dpdk.so, kbv/dpdk.h; README "Backends").
 *
 * rte_eal_init runs first, with the functions on its allow list; then the
 * two functions are opened as "dpdk:DDDD:BB:DD.F" and each side gets a PD,
 * a CQ, an RC QP and a buffer from DPDK's heap (rte_zmalloc: memory DPDK
 * has mapped into its VFIO container, registered with kbv_mr_reg), as in
 * rc_pingpong.c. ITERS round trips are checked byte for byte; at the end
 * kbv holds no DPDK memory (kbv_dpdk_get_usage).
 *
 * Usage: dpdk_rc_pingpong <EAL arguments> [-- uri_a uri_b [iters]]
 * On the HCA model (two model functions under the LD_PRELOAD emulated
 * kernel; EAL's memory without huge pages, IOVA as VA):
 *   KBV_SIM_DEVICES=2 LD_PRELOAD=libkbv-sim-preload.so dpdk_rc_pingpong \
 *     --no-huge -m 128 --iova-mode=va --no-shconf --no-telemetry -l 0 \
 *     -a fffe:00:01.0 -a fffe:00:02.0
 */
#include <kbv/dpdk.h>
#include <kbv/kbv.h>
#include <rte_eal.h>
#include <rte_malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSG_SIZE 64
#define SPIN_LIMIT 100000000ull /* polls before giving up on a completion */

struct side {
  const char* uri;
  kbv_device_t dev;
  kbv_pd_t pd;
  kbv_cq_t cq;
  kbv_qp_t qp;
  kbv_mr_t mr;
  uint32_t lkey, qpn, psn, gid_index, mtu;
  kbv_gid_entry_t gid;
  unsigned char* buf; /* rte_zmalloc: [0, MSG_SIZE) send, [MSG_SIZE, 2 MSG_SIZE) receive */
};

#define CHECK(call)                                                                        \
  do {                                                                                     \
    kbv_status_t st_ = (call);                                                             \
    if (st_ != KBV_SUCCESS) {                                                              \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, kbv_status_name(st_)); \
      return st_;                                                                          \
    }                                                                                      \
  } while (0)

/* Open the device and create the objects one side needs. */
static kbv_status_t setup(struct side* s, uint32_t psn) {
  kbv_port_attr_t port;
  kbv_cq_attr_t cq_attr = {.cqe = 16};
  kbv_qp_init_attr_t qp_attr = {0};
  uint32_t rkey, i;

  CHECK(kbv_device_open(s->uri, NULL, KBV_EQ_NONE, 0, &s->dev));
  CHECK(kbv_port_query(s->dev, 1, &port, KBV_EQ_NONE, 0));
  s->gid_index = 0;
  for (i = 0; i < port.gid_count; ++i) {
    if (port.gids[i].type == KBV_GID_TYPE_ROCE_V2) {
      s->gid_index = i;
      break;
    }
  }
  s->gid = port.gids[s->gid_index];
  s->mtu = port.active_mtu;
  CHECK(kbv_pd_alloc(s->dev, KBV_EQ_NONE, 0, &s->pd));
  CHECK(kbv_cq_create(s->dev, &cq_attr, KBV_EQ_NONE, 0, &s->cq));
  s->buf = rte_zmalloc("pingpong", 2 * MSG_SIZE, 4096);
  if (!s->buf) {
    fprintf(stderr, "rte_zmalloc failed\n");
    return KBV_ERR_NO_MEMORY;
  }
  CHECK(kbv_mr_reg(s->pd, s->buf, 2 * MSG_SIZE, KBV_ACCESS_LOCAL_WRITE, KBV_EQ_NONE, 0, &s->mr));
  CHECK(kbv_mr_get_keys(s->mr, &s->lkey, &rkey));
  qp_attr.qp_type = KBV_QPT_RC;
  qp_attr.send_cq = s->cq;
  qp_attr.recv_cq = s->cq;
  qp_attr.cap.max_send_wr = 8;
  qp_attr.cap.max_recv_wr = 8;
  qp_attr.cap.max_send_sge = 1;
  qp_attr.cap.max_recv_sge = 1;
  CHECK(kbv_qp_create(s->pd, &qp_attr, KBV_EQ_NONE, 0, &s->qp));
  CHECK(kbv_qp_get_num(s->qp, &s->qpn));
  s->psn = psn;
  return KBV_SUCCESS;
}

/* Connect s's QP to peer's (IBTA 10.3.1: RESET -> INIT -> RTR -> RTS). */
static kbv_status_t connect_qp(struct side* s, const struct side* peer) {
  kbv_qp_attr_t a;

  memset(&a, 0, sizeof a);
  a.qp_state = KBV_QPS_INIT;
  a.port_num = 1;
  CHECK(kbv_qp_modify(s->qp, &a,
                      KBV_QP_STATE | KBV_QP_PKEY_INDEX | KBV_QP_PORT | KBV_QP_ACCESS_FLAGS,
                      KBV_EQ_NONE, 0));

  memset(&a, 0, sizeof a);
  a.qp_state = KBV_QPS_RTR;
  a.path_mtu = s->mtu < peer->mtu ? s->mtu : peer->mtu;
  a.dest_qp_num = peer->qpn;
  a.rq_psn = peer->psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  memcpy(a.ah_attr.dgid, peer->gid.gid, 16);
  a.ah_attr.dmac = peer->gid.mac;
  a.ah_attr.sgid_index = (uint8_t)s->gid_index;
  a.ah_attr.port_num = 1;
  CHECK(kbv_qp_modify(s->qp, &a,
                      KBV_QP_STATE | KBV_QP_AV | KBV_QP_PATH_MTU | KBV_QP_DEST_QPN | KBV_QP_RQ_PSN |
                          KBV_QP_MAX_DEST_RD_ATOMIC | KBV_QP_MIN_RNR_TIMER,
                      KBV_EQ_NONE, 0));

  memset(&a, 0, sizeof a);
  a.qp_state = KBV_QPS_RTS;
  a.sq_psn = s->psn;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  CHECK(kbv_qp_modify(s->qp, &a,
                      KBV_QP_STATE | KBV_QP_SQ_PSN | KBV_QP_TIMEOUT | KBV_QP_RETRY_CNT |
                          KBV_QP_RNR_RETRY | KBV_QP_MAX_QP_RD_ATOMIC,
                      KBV_EQ_NONE, 0));
  return KBV_SUCCESS;
}

static kbv_status_t post_recv(struct side* s) {
  kbv_sge_t sge = {(uint64_t)(uintptr_t)(s->buf + MSG_SIZE), MSG_SIZE, s->lkey};
  kbv_recv_wr_t wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1};
  return kbv_post_recv(s->qp, &wr, 1, NULL);
}

static kbv_status_t post_send(struct side* s) {
  kbv_sge_t sge = {(uint64_t)(uintptr_t)s->buf, MSG_SIZE, s->lkey};
  kbv_send_wr_t wr = {
      .wr_id = 2, .opcode = KBV_WR_SEND, .flags = KBV_SEND_SIGNALED, .sg_list = &sge, .num_sge = 1};
  return kbv_post_send(s->qp, &wr, 1, NULL);
}

/* Poll s's CQ until a completion of `opcode` arrives (others are consumed). */
static kbv_status_t wait_for(struct side* s, uint32_t opcode) {
  unsigned long long spins;
  kbv_wc_t wc;
  for (spins = 0; spins < SPIN_LIMIT; ++spins) {
    int n = kbv_poll_cq(s->cq, &wc, 1);
    if (n < 0) return (kbv_status_t)n;
    if (n == 0) continue;
    if (wc.status != KBV_SUCCESS) {
      fprintf(stderr, "%s: completion error %s\n", s->uri, kbv_status_name(wc.status));
      return (kbv_status_t)wc.status;
    }
    if (wc.opcode == opcode) return KBV_SUCCESS;
  }
  return KBV_ERR_TIMEOUT;
}

static void teardown(struct side* s) {
  /* Children first; each close is synchronous. */
  if (s->qp) (void)kbv_qp_destroy(s->qp, KBV_EQ_NONE, 0);
  if (s->mr) (void)kbv_mr_dereg(s->mr, KBV_EQ_NONE, 0);
  if (s->cq) (void)kbv_cq_destroy(s->cq, KBV_EQ_NONE, 0);
  if (s->pd) (void)kbv_pd_dealloc(s->pd, KBV_EQ_NONE, 0);
  if (s->dev) (void)kbv_device_close(s->dev, KBV_EQ_NONE, 0);
  rte_free(s->buf);
}

static kbv_status_t run(struct side* ping, struct side* pong, int iters) {
  int i, j;
  CHECK(setup(ping, 0x1000));
  CHECK(setup(pong, 0x2000));
  CHECK(connect_qp(ping, pong));
  CHECK(connect_qp(pong, ping));
  CHECK(post_recv(ping));
  CHECK(post_recv(pong));
  for (i = 0; i < iters; ++i) {
    for (j = 0; j < MSG_SIZE; ++j) ping->buf[j] = (unsigned char)(i + j);
    CHECK(post_send(ping));
    CHECK(wait_for(pong, KBV_WC_RECV)); /* ping's message is in pong's receive half */
    CHECK(post_recv(pong));
    memcpy(pong->buf, pong->buf + MSG_SIZE, MSG_SIZE); /* echo it back */
    CHECK(post_send(pong));
    CHECK(wait_for(ping, KBV_WC_RECV));
    CHECK(post_recv(ping));
    if (memcmp(ping->buf, ping->buf + MSG_SIZE, MSG_SIZE) != 0) {
      fprintf(stderr, "iteration %d: the echo differs from the message\n", i);
      return KBV_ERR_INTERNAL;
    }
  }
  printf("dpdk_rc_pingpong: %d round trips of %d bytes between %s (QP 0x%x) and %s (QP 0x%x): ok\n",
         iters, MSG_SIZE, ping->uri, ping->qpn, pong->uri, pong->qpn);
  return KBV_SUCCESS;
}

int main(int argc, char** argv) {
  struct side ping, pong;
  kbv_dpdk_usage_t u;
  kbv_status_t st;
  int iters, n = rte_eal_init(argc, argv);
  if (n < 0) {
    fprintf(stderr, "rte_eal_init failed\n");
    return 1;
  }
  /* What follows EAL's arguments (after "--"): uri_a uri_b [iters]. */
  argc -= n;
  argv += n;
  iters = argc > 3 ? atoi(argv[3]) : 20;
  memset(&ping, 0, sizeof ping);
  memset(&pong, 0, sizeof pong);
  ping.uri = argc > 2 ? argv[1] : "dpdk:fffe:00:01.0";
  pong.uri = argc > 2 ? argv[2] : "dpdk:fffe:00:02.0";
  st = run(&ping, &pong, iters > 0 ? iters : 1);
  if (kbv_dpdk_get_usage(&u) == KBV_SUCCESS)
    printf("kbv holds %u DPDK memzones (%llu bytes), %u container mappings, %u devices open\n",
           u.memzones, (unsigned long long)u.memzone_bytes, u.external_maps, u.devices_open);
  teardown(&ping);
  teardown(&pong);
  if (kbv_dpdk_get_usage(&u) == KBV_SUCCESS) {
    printf("after close: %u memzones, %u container mappings, %u devices open\n", u.memzones,
           u.external_maps, u.devices_open);
    if (st == KBV_SUCCESS && (u.memzones || u.external_maps || u.devices_open))
      st = KBV_ERR_INTERNAL;
  }
  rte_eal_cleanup();
  return st == KBV_SUCCESS ? 0 : 1;
}
