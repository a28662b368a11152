/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ud_example.c — unreliable datagrams on kbv's C API (kbv/kbv.h).
 *
 * Two devices in one process (by default the model HCAs "sim:uda" and
 * "sim:udb"; on hardware give two vfio URIs). Each side creates a UD QP
 * (RESET -> INIT with a Q_Key -> RTR -> RTS) and an address handle (AH) for
 * the other side's GID. A sends MSGS datagrams to B's QPN; each lands in a
 * receive buffer after the 40-byte GRH (IBTA 8.3, KBV_WC_WITH_GRH); B checks
 * the sender's QPN (src_qp) and the bytes, then answers each with a datagram
 * of its own back to A, which checks it too.
 *
 * Every control call is synchronous (eq = KBV_EQ_NONE).
 * Usage: ud_example [uri_a uri_b [messages]]
 */
#include <kbv/kbv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSG_SIZE 256
#define GRH_SIZE 40
#define QKEY 0x11111111u
#define SPIN_LIMIT 100000000ull

struct side {
  const char* uri;
  kbv_device_t dev;
  kbv_pd_t pd;
  kbv_cq_t cq;
  kbv_qp_t qp;
  kbv_mr_t mr;
  kbv_ah_t ah; /* towards the other side */
  uint32_t lkey, qpn, gid_index;
  kbv_gid_entry_t gid;
  unsigned char buf[MSG_SIZE + GRH_SIZE + MSG_SIZE]; /* send | GRH + receive */
};

#define CHECK(call)                                                                        \
  do {                                                                                     \
    kbv_status_t st_ = (call);                                                             \
    if (st_ != KBV_SUCCESS) {                                                              \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, kbv_status_name(st_)); \
      return st_;                                                                          \
    }                                                                                      \
  } while (0)

static kbv_status_t setup(struct side* s) {
  kbv_port_attr_t port;
  kbv_cq_attr_t cq_attr = {.cqe = 16};
  kbv_qp_init_attr_t qp_attr = {0};
  kbv_qp_attr_t a;
  uint32_t rkey, i;

  CHECK(kbv_device_open(s->uri, NULL, KBV_EQ_NONE, 0, &s->dev));
  CHECK(kbv_port_query(s->dev, 1, &port, KBV_EQ_NONE, 0));
  for (i = 0; i < port.gid_count; ++i) {
    if (port.gids[i].type == KBV_GID_TYPE_ROCE_V2) break;
  }
  s->gid_index = i < port.gid_count ? i : 0;
  s->gid = port.gids[s->gid_index];
  CHECK(kbv_pd_alloc(s->dev, KBV_EQ_NONE, 0, &s->pd));
  CHECK(kbv_cq_create(s->dev, &cq_attr, KBV_EQ_NONE, 0, &s->cq));
  CHECK(kbv_mr_reg(s->pd, s->buf, sizeof s->buf, KBV_ACCESS_LOCAL_WRITE, KBV_EQ_NONE, 0, &s->mr));
  CHECK(kbv_mr_get_keys(s->mr, &s->lkey, &rkey));
  qp_attr.qp_type = KBV_QPT_UD;
  qp_attr.send_cq = s->cq;
  qp_attr.recv_cq = s->cq;
  qp_attr.cap.max_send_wr = 8;
  qp_attr.cap.max_recv_wr = 8;
  qp_attr.cap.max_send_sge = 1;
  qp_attr.cap.max_recv_sge = 1;
  CHECK(kbv_qp_create(s->pd, &qp_attr, KBV_EQ_NONE, 0, &s->qp));
  CHECK(kbv_qp_get_num(s->qp, &s->qpn));

  /* A UD QP needs no peer to reach RTS: the destination is in each send. */
  memset(&a, 0, sizeof a);
  a.qp_state = KBV_QPS_INIT;
  a.port_num = 1;
  a.qkey = QKEY;
  CHECK(kbv_qp_modify(s->qp, &a, KBV_QP_STATE | KBV_QP_PKEY_INDEX | KBV_QP_PORT | KBV_QP_QKEY,
                      KBV_EQ_NONE, 0));
  a.qp_state = KBV_QPS_RTR;
  CHECK(kbv_qp_modify(s->qp, &a, KBV_QP_STATE, KBV_EQ_NONE, 0));
  a.qp_state = KBV_QPS_RTS;
  a.sq_psn = 0;
  CHECK(kbv_qp_modify(s->qp, &a, KBV_QP_STATE | KBV_QP_SQ_PSN, KBV_EQ_NONE, 0));
  return KBV_SUCCESS;
}

/* The address handle towards peer: its GID and MAC (RoCEv2). */
static kbv_status_t make_ah(struct side* s, const struct side* peer) {
  kbv_ah_attr_t ah = {0};
  memcpy(ah.dgid, peer->gid.gid, 16);
  ah.dmac = peer->gid.mac;
  ah.sgid_index = (uint8_t)s->gid_index;
  ah.port_num = 1;
  CHECK(kbv_ah_create(s->pd, &ah, KBV_EQ_NONE, 0, &s->ah));
  return KBV_SUCCESS;
}

static kbv_status_t post_recv(struct side* s) {
  kbv_sge_t sge = {(uint64_t)(uintptr_t)(s->buf + MSG_SIZE), GRH_SIZE + MSG_SIZE, s->lkey};
  kbv_recv_wr_t wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1};
  return kbv_post_recv(s->qp, &wr, 1, NULL);
}

static kbv_status_t post_send(struct side* s, const struct side* peer) {
  kbv_sge_t sge = {(uint64_t)(uintptr_t)s->buf, MSG_SIZE, s->lkey};
  kbv_send_wr_t wr = {.wr_id = 2,
                      .opcode = KBV_WR_SEND,
                      .flags = KBV_SEND_SIGNALED,
                      .sg_list = &sge,
                      .num_sge = 1,
                      .ah = s->ah,
                      .remote_qpn = peer->qpn,
                      .remote_qkey = QKEY};
  return kbv_post_send(s->qp, &wr, 1, NULL);
}

/* Waits for the next receive on s and checks it came from `from`. */
static kbv_status_t receive(struct side* s, const struct side* from) {
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
    if (wc.opcode != KBV_WC_RECV) continue; /* a send completion */
    if (wc.byte_len != GRH_SIZE + MSG_SIZE || wc.src_qp != from->qpn ||
        !(wc.flags & KBV_WC_WITH_GRH)) {
      fprintf(stderr, "%s: unexpected datagram (%u bytes from QP 0x%x)\n", s->uri, wc.byte_len,
              wc.src_qp);
      return KBV_ERR_INTERNAL;
    }
    if (memcmp(s->buf + MSG_SIZE + GRH_SIZE, from->buf, MSG_SIZE) != 0) {
      fprintf(stderr, "%s: the datagram's bytes differ from what was sent\n", s->uri);
      return KBV_ERR_INTERNAL;
    }
    return post_recv(s);
  }
  return KBV_ERR_TIMEOUT;
}

static void teardown(struct side* s) {
  if (s->ah) (void)kbv_ah_destroy(s->ah, KBV_EQ_NONE, 0);
  if (s->qp) (void)kbv_qp_destroy(s->qp, KBV_EQ_NONE, 0);
  if (s->mr) (void)kbv_mr_dereg(s->mr, KBV_EQ_NONE, 0);
  if (s->cq) (void)kbv_cq_destroy(s->cq, KBV_EQ_NONE, 0);
  if (s->pd) (void)kbv_pd_dealloc(s->pd, KBV_EQ_NONE, 0);
  if (s->dev) (void)kbv_device_close(s->dev, KBV_EQ_NONE, 0);
}

static kbv_status_t run(struct side* a, struct side* b, int msgs) {
  int i, j;
  CHECK(setup(a));
  CHECK(setup(b));
  CHECK(make_ah(a, b));
  CHECK(make_ah(b, a));
  CHECK(post_recv(a));
  CHECK(post_recv(b));
  for (i = 0; i < msgs; ++i) {
    for (j = 0; j < MSG_SIZE; ++j) a->buf[j] = (unsigned char)(3 * i + j);
    CHECK(post_send(a, b));
    CHECK(receive(b, a));
    for (j = 0; j < MSG_SIZE; ++j) b->buf[j] = (unsigned char)~(3 * i + j);
    CHECK(post_send(b, a));
    CHECK(receive(a, b));
  }
  printf(
      "ud_example: %d datagrams of %d bytes each way between %s (QP 0x%x) and %s (QP 0x%x): ok\n",
      msgs, MSG_SIZE, a->uri, a->qpn, b->uri, b->qpn);
  return KBV_SUCCESS;
}

int main(int argc, char** argv) {
  struct side a, b;
  int msgs = argc > 3 ? atoi(argv[3]) : 20;
  kbv_status_t st;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  a.uri = argc > 2 ? argv[1] : "sim:uda";
  b.uri = argc > 2 ? argv[2] : "sim:udb";
  st = run(&a, &b, msgs > 0 ? msgs : 1);
  teardown(&a);
  teardown(&b);
  return st == KBV_SUCCESS ? 0 : 1;
}
