/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ci_rc_pingpong.c — an RC ping-pong written the way an OpenIB Windows
 * access-layer client of an HCA driver's channel interface is written
 * (IBAL's ci_interface_t, docs/NTSTATUS.md source 002), on kbv's
 * kbv/compat/ib_ci.h only:
 *
 *   get each HCA's interface (kbv_ci_get_interface stands in for the
 *   driver's interface query), open_ca by its GUID with a completion and an
 *   async-event callback, query_ca (ask the size, then the attributes: the
 *   port's GID), allocate_pd, create_cq, register_mr, create_qp, modify_qp
 *   RESET -> INIT -> RTR -> RTS towards the other HCA; then "ping" posts a
 *   SEND and "pong" returns it, ITERS times, every message checked byte for
 *   byte; the first receive is awaited through enable_cq_notify and the
 *   completion callback, the rest by poll_cq with ib_wc_t free/done lists.
 *   Receives go as one linked ib_recv_wr_t list. Then everything is
 *   destroyed, the CAs closed and the interfaces released.
 *
 * Two HCAs in one process: by default two model HCAs ("sim:ci_ping",
 * "sim:ci_pong", RoCEv2 over loopback UDP). Usage:
 *   ci_rc_pingpong [uri_a uri_b [iters]]
 */
/* nanosleep (POSIX.1-2008) with -std=c11 too. */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <kbv/compat/ib_ci.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MSG_SIZE 64
#define RECVS 4
#define WAIT_US 10000000L /* give up on a completion after this */

struct side {
  const char* uri;
  ci_interface_t ci;
  ib_ca_handle_t ca;
  ib_pd_handle_t pd;
  ib_cq_handle_t cq;
  ib_qp_handle_t qp;
  ib_mr_handle_t mr;
  net32_t lkey, rkey;
  ib_gid_t gid;
  uint32_t qpn;
  atomic_int notified;                       /* completion callbacks seen */
  unsigned char buf[(RECVS + 1) * MSG_SIZE]; /* [0, MSG_SIZE) send, then RECVS receive slots */
};

static void sleep_us(long us) {
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

static int check(const char* what, ib_api_status_t st) {
  if (st == IB_SUCCESS) return 0;
  fprintf(stderr, "ci_rc_pingpong: %s: %s\n", what, kbv_ci_status_str(st));
  return -1;
}

/* The channel interface calls these on the HCA's dispatch thread. */
static void on_completion(void* cq_context) {
  struct side* s = (struct side*)cq_context;
  atomic_fetch_add(&s->notified, 1);
}
static void on_async_event(const ib_event_rec_t* rec) {
  if (rec->type != IB_AE_PORT_ACTIVE)
    fprintf(stderr, "ci_rc_pingpong: async event %d on port %u\n", (int)rec->type,
            rec->port_number);
}

/* query_ca's size negotiation, then the port's first GID once it is active. */
static int port_gid(struct side* s) {
  for (long waited = 0; waited < WAIT_US; waited += 1000) {
    uint32_t size = 0;
    ib_api_status_t st = s->ci.query_ca(s->ca, NULL, &size, NULL);
    if (st != IB_INSUFFICIENT_MEMORY) return check("query_ca (size)", st);
    ib_ca_attr_t* a = (ib_ca_attr_t*)malloc(size);
    if (a == NULL) return -1;
    st = s->ci.query_ca(s->ca, a, &size, NULL);
    int active = st == IB_SUCCESS && a->p_port_attr[0].link_state == 4;
    if (st == IB_SUCCESS && a->p_port_attr[0].num_gids > 0)
      s->gid = a->p_port_attr[0].p_gid_table[0];
    free(a);
    if (check("query_ca", st)) return -1;
    if (active) return 0;
    sleep_us(1000);
  }
  fprintf(stderr, "ci_rc_pingpong: %s: port never active\n", s->uri);
  return -1;
}

static int open_side(struct side* s) {
  if (check("kbv_ci_get_interface", kbv_ci_get_interface(s->uri, &s->ci))) return -1;
  /* The seeds name a CA by its GUID. */
  if (check("open_ca", s->ci.open_ca(s->ci.guid, on_completion, on_async_event, s, &s->ca)))
    return -1;
  if (port_gid(s)) return -1;
  if (check("allocate_pd", s->ci.allocate_pd(s->ca, IB_PDT_NORMAL, &s->pd, NULL))) return -1;
  uint32_t cqe = 2 * RECVS + 2;
  if (check("create_cq", s->ci.create_cq(s->ca, s, &cqe, &s->cq, NULL))) return -1;
  ib_mr_create_t mc = {s->buf, sizeof s->buf, IB_AC_LOCAL_WRITE};
  if (check("register_mr", s->ci.register_mr(s->pd, &mc, &s->lkey, &s->rkey, &s->mr, 0))) return -1;
  ib_qp_create_t qc;
  memset(&qc, 0, sizeof qc);
  qc.qp_type = IB_QPT_RELIABLE_CONN;
  qc.sq_depth = 4;
  qc.rq_depth = RECVS;
  qc.sq_sge = 1;
  qc.rq_sge = 1;
  qc.h_sq_cq = s->cq;
  qc.h_rq_cq = s->cq;
  qc.sq_signaled = 1;
  ib_qp_attr_t qa;
  if (check("create_qp", s->ci.create_qp(s->pd, s, &qc, &qa, &s->qp, NULL))) return -1;
  s->qpn = ntohl(qa.num);
  return 0;
}

static int connect_side(struct side* s, const struct side* peer) {
  ib_qp_mod_t m;
  memset(&m, 0, sizeof m);
  m.req_state = IB_QPS_INIT;
  m.state.init.primary_port = 1;
  m.state.init.access_ctrl = IB_AC_LOCAL_WRITE;
  if (check("modify_qp INIT", s->ci.modify_qp(s->qp, &m, NULL, NULL))) return -1;
  memset(&m, 0, sizeof m);
  m.req_state = IB_QPS_RTR;
  m.state.rtr.rq_psn = htonl(0x100);
  m.state.rtr.dest_qp = htonl(peer->qpn);
  m.state.rtr.primary_av.port_num = 1;
  m.state.rtr.primary_av.grh_valid = 1;
  m.state.rtr.primary_av.grh.hop_limit = 64;
  m.state.rtr.primary_av.grh.dest_gid = peer->gid;
  m.state.rtr.primary_av.conn.path_mtu = 3; /* 1024 */
  m.state.rtr.resp_res = 1;
  m.state.rtr.rnr_nak_timeout = 12;
  if (check("modify_qp RTR", s->ci.modify_qp(s->qp, &m, NULL, NULL))) return -1;
  memset(&m, 0, sizeof m);
  m.req_state = IB_QPS_RTS;
  m.state.rts.sq_psn = htonl(0x100);
  m.state.rts.retry_cnt = 7;
  m.state.rts.rnr_retry_cnt = 7;
  m.state.rts.local_ack_timeout = 14;
  m.state.rts.init_depth = 1;
  return check("modify_qp RTS", s->ci.modify_qp(s->qp, &m, NULL, NULL));
}

/* All RECVS receive slots, as one linked list. */
static int post_recvs(struct side* s) {
  ib_local_ds_t ds[RECVS];
  ib_recv_wr_t wr[RECVS];
  for (int i = 0; i < RECVS; ++i) {
    ds[i].vaddr = (uint64_t)(uintptr_t)(s->buf + (i + 1) * MSG_SIZE);
    ds[i].length = MSG_SIZE;
    ds[i].lkey = s->lkey;
    wr[i].p_next = i + 1 < RECVS ? &wr[i + 1] : NULL;
    wr[i].wr_id = (uint64_t)(i + 1);
    wr[i].num_ds = 1;
    wr[i].ds_array = &ds[i];
  }
  ib_recv_wr_t* failed = NULL;
  ib_api_status_t st = s->ci.post_recv(s->qp, wr, &failed);
  if (st != IB_SUCCESS && failed != NULL)
    fprintf(stderr, "ci_rc_pingpong: receive %llu not posted\n", (unsigned long long)failed->wr_id);
  return check("post_recv", st);
}

static int post_one_recv(struct side* s, uint64_t slot) {
  ib_local_ds_t ds = {(uint64_t)(uintptr_t)(s->buf + slot * MSG_SIZE), MSG_SIZE, s->lkey};
  ib_recv_wr_t wr = {NULL, slot, 1, &ds};
  return check("post_recv", s->ci.post_recv(s->qp, &wr, NULL));
}

static int send_msg(struct side* s, unsigned seq) {
  memset(s->buf, (int)(seq & 0xff), MSG_SIZE);
  ib_local_ds_t ds = {(uint64_t)(uintptr_t)s->buf, MSG_SIZE, s->lkey};
  ib_send_wr_t wr;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = 1000 + seq;
  wr.ds_array = &ds;
  wr.num_ds = 1;
  wr.wr_type = WR_SEND;
  wr.send_opt = IB_SEND_OPT_SIGNALED;
  ib_send_wr_t* failed = NULL;
  return check("post_send", s->ci.post_send(s->qp, &wr, &failed));
}

/* Waits for one completion of `type` through poll_cq's free/done lists;
 * *slot = its wr_id. Other completions are checked and dropped. */
static int wait_wc(struct side* s, ib_wc_type_t type, uint64_t* slot) {
  ib_wc_t pool[2];
  for (long waited = 0; waited < WAIT_US;) {
    pool[0].p_next = &pool[1];
    pool[1].p_next = NULL;
    ib_wc_t* free_list = pool;
    ib_wc_t* done = NULL;
    ib_api_status_t st = s->ci.poll_cq(s->cq, &free_list, &done);
    if (st == IB_NOT_FOUND) {
      sleep_us(10);
      waited += 10;
      continue;
    }
    if (check("poll_cq", st)) return -1;
    int found = 0;
    for (ib_wc_t* w = done; w != NULL; w = w->p_next) {
      if (w->status != IB_WCS_SUCCESS) {
        fprintf(stderr, "ci_rc_pingpong: completion %llu failed: status %d\n",
                (unsigned long long)w->wr_id, (int)w->status);
        return -1;
      }
      if (w->wc_type == type) {
        *slot = w->wr_id;
        found = 1;
      }
    }
    if (found) return 0;
  }
  fprintf(stderr, "ci_rc_pingpong: %s: no completion\n", s->uri);
  return -1;
}

static int check_msg(struct side* s, uint64_t slot, unsigned seq) {
  for (int i = 0; i < MSG_SIZE; ++i) {
    if (s->buf[slot * MSG_SIZE + i] != (unsigned char)(seq & 0xff)) {
      fprintf(stderr, "ci_rc_pingpong: message %u byte %d wrong\n", seq, i);
      return -1;
    }
  }
  return 0;
}

static void close_side(struct side* s) {
  if (s->ca == NULL) return;
  if (s->qp) (void)s->ci.destroy_qp(s->qp, 0);
  if (s->mr) (void)s->ci.deregister_mr(s->mr);
  if (s->cq) (void)s->ci.destroy_cq(s->cq);
  if (s->pd) (void)s->ci.deallocate_pd(s->pd);
  (void)check("close_ca", s->ci.close_ca(s->ca));
  (void)kbv_ci_release_interface(&s->ci);
}

int main(int argc, char** argv) {
  static struct side a, b; /* zeroed */
  a.uri = argc > 2 ? argv[1] : "sim:ci_ping";
  b.uri = argc > 2 ? argv[2] : "sim:ci_pong";
  const unsigned iters = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 100;
  int rc = 1;
  if (open_side(&a) || open_side(&b) || connect_side(&a, &b) || connect_side(&b, &a)) goto out;
  if (post_recvs(&a) || post_recvs(&b)) goto out;
  /* The first receive through the completion callback. */
  if (check("enable_cq_notify", b.ci.enable_cq_notify(b.cq, 0))) goto out;
  for (unsigned i = 0; i < iters; ++i) {
    uint64_t slot = 0;
    if (send_msg(&a, i) || wait_wc(&b, IB_WC_RECV, &slot)) goto out;
    if (i == 0) {
      for (long waited = 0; atomic_load(&b.notified) == 0 && waited < WAIT_US; waited += 10)
        sleep_us(10);
      if (atomic_load(&b.notified) == 0) {
        fprintf(stderr, "ci_rc_pingpong: no completion callback\n");
        goto out;
      }
    }
    if (check_msg(&b, slot, i) || post_one_recv(&b, slot)) goto out;
    /* pong: the same bytes back */
    if (send_msg(&b, i) || wait_wc(&a, IB_WC_RECV, &slot)) goto out;
    if (check_msg(&a, slot, i) || post_one_recv(&a, slot)) goto out;
  }
  printf("ci_rc_pingpong: %u round trips of %d bytes between %s and %s: ok\n", iters, MSG_SIZE,
         a.uri, b.uri);
  rc = 0;
out:
  close_side(&a);
  close_side(&b);
  return rc;
}
