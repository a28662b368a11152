/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_pingpong.c — a minimal RC ping-pong on kbv's C API (kbv/kbv.h).
 *
 * Two devices in one process (by default two model HCAs, "sim:ping" and
 * "sim:pong", talking RoCEv2 over loopback UDP; on hardware give two vfio
 * URIs). Each side gets a PD, one CQ, a registered buffer and an RC QP; the
 * QPs are connected to each other (RESET -> INIT -> RTR -> RTS), then "ping"
 * SENDs a message, "pong" receives it and SENDs it back, ITERS times. Every
 * message is checked byte for byte.
 *
 * Every control call here is synchronous (eq = KBV_EQ_NONE): it returns
 * when the device has done it. Usage: rc_pingpong [uri_a uri_b [iters]]
 */
#include <kbv/kbv.h>
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
  unsigned char buf[2 * MSG_SIZE]; /* [0, MSG_SIZE) send, [MSG_SIZE, 2 MSG_SIZE) receive */
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
  CHECK(kbv_mr_reg(s->pd, s->buf, sizeof s->buf, KBV_ACCESS_LOCAL_WRITE, KBV_EQ_NONE, 0, &s->mr));
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
  printf("rc_pingpong: %d round trips of %d bytes between %s (QP 0x%x) and %s (QP 0x%x): ok\n",
         iters, MSG_SIZE, ping->uri, ping->qpn, pong->uri, pong->qpn);
  return KBV_SUCCESS;
}

int main(int argc, char** argv) {
  struct side ping, pong;
  int iters = argc > 3 ? atoi(argv[3]) : 100;
  kbv_status_t st;
  memset(&ping, 0, sizeof ping);
  memset(&pong, 0, sizeof pong);
  ping.uri = argc > 2 ? argv[1] : "sim:ping";
  pong.uri = argc > 2 ? argv[2] : "sim:pong";
  st = run(&ping, &pong, iters > 0 ? iters : 1);
  teardown(&ping);
  teardown(&pong);
  return st == KBV_SUCCESS ? 0 : 1;
}
