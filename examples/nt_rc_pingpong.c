/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nt_rc_pingpong.c — an RC ping-pong written the way code for the Windows
 * kernel-verbs proposal kbv comes from is written (docs/NTSTATUS.md source 000,
 * IB_VERBS_INTERFACE_STANDARD), on kbv's NT verbs interface only
 * (kbv/compat/ib_verbs.h):
 *
 *   get the interface of each HCA (kbv_nt_query_interface stands in for
 *   IRP_MN_QUERY_INTERFACE), OpenCa, queue a fatal-event request, CreatePd,
 *   CreateCq, RegMdl, CreateQp, QueryPort (size negotiation: ask for the size,
 *   then the attributes), ModifyQp RESET -> INIT -> RTR -> RTS towards the
 *   other HCA, then "ping" PostSends a message, "pong" PostRecvs and returns
 *   it, ITERS times, every message checked byte for byte and every completion
 *   reaped with PollCq into an IB_WC array; the first receive is awaited with
 *   RearmCq + GetCqCompEvent. Then everything is destroyed and the CAs closed
 *   (the queued fatal requests complete with STATUS_CANCELLED).
 *
 * Requests (the IRP's replacement, IB_REQUEST) complete on one kbv event
 * queue: a call returns STATUS_PENDING, then an event names the request,
 * whose IoStatus holds {Status, Information}.
 *
 * Two devices in one process: by default two model HCAs ("sim:nt_ping",
 * "sim:nt_pong", RoCEv2 over loopback UDP). Usage:
 *   nt_rc_pingpong [uri_a uri_b [iters]]
 */
/* nanosleep (POSIX.1-2008) with -std=c11 too (pkg-config and CMake users). */
#define _POSIX_C_SOURCE 200809L

#include <kbv/compat/ib_verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MSG_SIZE 64
#define WAIT_MS 10000 /* give up on a request or completion after this */

static kbv_eq_t g_eq; /* every request completes here */
static uint64_t g_next_user_data = 1;

struct side {
  const char* uri;
  IB_VERBS_INTERFACE_STANDARD ifc;
  IB_CA* ca;
  IB_PD* pd;
  IB_CQ* cq;
  IB_QP* qp;
  IB_MR* mr;
  MDL mdl;
  IB_GID gid;
  IB_REQUEST fatal;                /* queued for the CA's lifetime */
  unsigned char buf[2 * MSG_SIZE]; /* [0, MSG_SIZE) send, [MSG_SIZE, 2 MSG_SIZE) receive */
};

static void sleep_us(long us) {
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

static void init_req(IB_REQUEST* r) {
  kbv_nt_init_request(r, g_eq, g_next_user_data++, NULL, NULL);
}

/* What the IRP's caller does with STATUS_PENDING: wait for the completion,
 * then read IoStatus. Events of other requests (e.g. a notification) that
 * complete meanwhile are matched by their request pointer. */
static NTSTATUS wait_req(IB_REQUEST* r, NTSTATUS st) {
  kbv_event_t ev;
  long waited = 0;
  if (st != STATUS_PENDING) return st;
  while (waited < WAIT_MS * 1000L) {
    int n = kbv_eq_poll(g_eq, &ev, 1);
    if (n < 0) return kbv_status_to_ntstatus((kbv_status_t)n);
    if (n == 1 && ev.object == (uint64_t)(uintptr_t)r) return r->IoStatus.Status;
    if (n == 0) {
      sleep_us(20);
      waited += 20;
    }
  }
  return STATUS_IO_TIMEOUT;
}

#define CHECK(call)                                                          \
  do {                                                                       \
    NTSTATUS st_ = (call);                                                   \
    if (!NT_SUCCESS(st_)) {                                                  \
      fprintf(stderr, "%s:%d: %s: %s (0x%08x)\n", __FILE__, __LINE__, #call, \
              kbv_ntstatus_name(st_), (unsigned)st_);                        \
      return st_;                                                            \
    }                                                                        \
  } while (0)

/* A request-based call: submit, wait if pending, check. */
#define CALL(r, call) CHECK(wait_req(&(r), (init_req(&(r)), (call))))

static void on_ca_event(IB_CA* const ca, VOID* ctx, const UCHAR port, IB_ASYNC_EVENT ev) {
  (void)ca;
  printf("%s: CA event %d on port %u\n", ((struct side*)ctx)->uri, (int)ev, (unsigned)port);
}

static NTSTATUS wait_link(struct side* s) {
  IB_PORT_ATTR attr;
  IB_REQUEST r;
  int i;
  for (i = 0; i < WAIT_MS; ++i) {
    NTSTATUS st;
    init_req(&r);
    st = wait_req(&r, s->ifc.QueryPort(s->ifc.Context, 1, sizeof(attr), &attr, &r));
    if (st != STATUS_SUCCESS && st != STATUS_BUFFER_OVERFLOW) return st;
    if (attr.LinkState == IB_LINK_ACTIVE) return STATUS_SUCCESS;
    sleep_us(1000);
  }
  return STATUS_IO_TIMEOUT;
}

/* The port's first GID, with QueryPort's size negotiation. */
static NTSTATUS port_gid(struct side* s) {
  ULONG size = 0;
  IB_PORT_ATTR* attr;
  IB_REQUEST r;
  NTSTATUS st;
  init_req(&r);
  st = wait_req(&r, s->ifc.QueryPort(s->ifc.Context, 1, sizeof(size), (IB_PORT_ATTR*)&size, &r));
  if (st != STATUS_BUFFER_OVERFLOW) return NT_SUCCESS(st) ? STATUS_INTERNAL_ERROR : st;
  attr = malloc(size);
  if (attr == NULL) return STATUS_NO_MEMORY;
  init_req(&r);
  st = wait_req(&r, s->ifc.QueryPort(s->ifc.Context, 1, size, attr, &r));
  if (st == STATUS_SUCCESS && attr->NumGids == 0) st = STATUS_NOT_FOUND;
  if (st == STATUS_SUCCESS)
    memcpy(&s->gid, (const UCHAR*)attr + attr->GidTblOffset, sizeof(s->gid));
  free(attr);
  return st;
}

static NTSTATUS setup(struct side* s) {
  IB_REQUEST r;
  IB_QP_CREATE create;
  NTSTATUS st;

  CHECK(kbv_nt_query_interface(s->uri, &s->ifc, sizeof(s->ifc), IB_VERBS_INTERFACE_VERSION));
  CHECK(wait_link(s));
  CALL(r, s->ifc.OpenCa(s->ifc.Context, s, on_ca_event, NULL, &r));
  s->ca = (IB_CA*)r.IoStatus.Information;
  /* A client asks to hear of a catastrophic error for as long as it uses
   * the CA; CloseCa completes the request with STATUS_CANCELLED. */
  init_req(&s->fatal);
  st = s->ifc.GetCaFatalEvent(s->ca, &s->fatal);
  if (st != STATUS_PENDING) return NT_SUCCESS(st) ? STATUS_DEVICE_REMOVED : st;

  CALL(r, s->ifc.CreatePd(s->ca, NULL, &r));
  s->pd = (IB_PD*)r.IoStatus.Information;
  CALL(r, s->ifc.CreateCq(s->ca, 16, s, NULL, NULL, NULL, &r));
  s->cq = (IB_CQ*)r.IoStatus.Information;
  memset(&s->mdl, 0, sizeof(s->mdl));
  s->mdl.StartVa = s->buf;
  s->mdl.ByteCount = sizeof(s->buf);
  CALL(r, s->ifc.RegMdl(s->pd, &s->mdl, IB_AC_LOCAL_WRITE, &r));
  s->mr = (IB_MR*)r.IoStatus.Information;
  memset(&create, 0, sizeof(create));
  create.Type = IbQpTypeReliableConn;
  create.SqDepth = 4;
  create.RqDepth = 4;
  create.SqSge = 1;
  create.RqSge = 1;
  create.pSendCq = s->cq;
  create.pRecvCq = s->cq;
  create.SqSignaled = TRUE;
  CALL(r, s->ifc.CreateQp(s->pd, &create, s, NULL, NULL, &r));
  s->qp = (IB_QP*)r.IoStatus.Information;
  CHECK(port_gid(s));
  printf("%s: QPN 0x%06lx, CQ of %lu entries, lkey 0x%08lx\n", s->uri, (unsigned long)s->qp->Qpn,
         (unsigned long)s->cq->NumCqes, (unsigned long)s->mr->LKey);
  return STATUS_SUCCESS;
}

static NTSTATUS connect_qp(struct side* s, const struct side* peer) {
  IB_REQUEST r;
  IB_QP_MODIFY m;

  memset(&m, 0, sizeof(m));
  m.ReqState = IbQpsInit;
  m.state.Init.PrimaryPort = 1;
  CALL(r, s->ifc.ModifyQp(s->qp, &m, NULL, &r));

  memset(&m, 0, sizeof(m));
  m.ReqState = IbQpsRtr;
  m.state.rtr.RqPsn = 0x10;
  m.state.rtr.DestQp = peer->qp->Qpn;
  m.state.rtr.PrimaryAh.PortNumber = 1;
  m.state.rtr.PrimaryAh.Flags = IB_AH_FLAG_GRH; /* RoCE: addressed by GID */
  m.state.rtr.PrimaryAh.Grh.HopLimit = 64;
  m.state.rtr.PrimaryAh.Grh.DGid = peer->gid;
  m.state.rtr.RespRes = 1;
  m.state.rtr.RnrNakTimeout = 12;
  CALL(r, s->ifc.ModifyQp(s->qp, &m, NULL, &r));

  memset(&m, 0, sizeof(m));
  m.ReqState = IbQpsRts;
  m.state.rts.SqPsn = 0x10;
  m.state.rts.RetryCnt = 7;
  m.state.rts.RnrRetryCnt = 7;
  m.state.rts.LocalAckTimeout = 14;
  m.state.rts.InitDepth = 1;
  CALL(r, s->ifc.ModifyQp(s->qp, &m, NULL, &r));
  return STATUS_SUCCESS;
}

/* Reap one completion of the given kind from the side's CQ. */
static NTSTATUS wait_wc(struct side* s, IB_OP_TYPE type, ULONG* len) {
  IB_WC wc[4];
  long waited;
  for (waited = 0; waited < WAIT_MS * 1000L;) {
    LONG n = 4;
    LONG i;
    NTSTATUS st = s->ifc.PollCq(s->cq, &n, wc);
    if (st == STATUS_NO_MORE_ENTRIES) {
      sleep_us(5);
      waited += 5;
      continue;
    }
    CHECK(st);
    for (i = 0; i < n; ++i) {
      if (wc[i].Status != IbWcSuccess) {
        fprintf(stderr, "%s: completion error %d (vendor 0x%lx)\n", s->uri, (int)wc[i].Status,
                (unsigned long)wc[i].VendorError);
        return STATUS_UNSUCCESSFUL;
      }
      if (wc[i].Type == type) {
        *len = wc[i].Length;
        return STATUS_SUCCESS;
      }
    }
  }
  return STATUS_IO_TIMEOUT;
}

static NTSTATUS post_recv(struct side* s) {
  IB_SGE sge = {s->buf + MSG_SIZE, MSG_SIZE, 0};
  IB_RECV_WR* wr = calloc(1, IB_RECV_WR_SIZE(1));
  IB_RECV_WR* failed = NULL;
  NTSTATUS st;
  if (wr == NULL) return STATUS_NO_MEMORY;
  sge.LKey = s->mr->LKey;
  wr->WrId = 1;
  wr->SgeCount = 1;
  wr->Sge[0] = &sge;
  st = s->ifc.PostRecv(s->qp, wr, &failed);
  free(wr);
  return st;
}

static NTSTATUS post_send(struct side* s) {
  IB_SGE sge = {s->buf, MSG_SIZE, 0};
  IB_SEND_WR* wr = calloc(1, IB_SEND_WR_SIZE(1));
  IB_SEND_WR* failed = NULL;
  NTSTATUS st;
  if (wr == NULL) return STATUS_NO_MEMORY;
  sge.LKey = s->mr->LKey;
  wr->WrId = 2;
  wr->Type = IbSend;
  wr->SgeCount = 1;
  wr->Sge[0] = &sge;
  st = s->ifc.PostSend(s->qp, wr, &failed);
  free(wr);
  return st;
}

/* One message from `from` to `to`, checked. */
static NTSTATUS transfer(struct side* from, struct side* to, int iter, int notify) {
  ULONG len = 0;
  IB_REQUEST comp;
  int i;
  for (i = 0; i < MSG_SIZE; ++i) from->buf[i] = (unsigned char)(iter * 7 + i);
  CHECK(post_recv(to));
  if (notify) {
    /* Wait for the receive the way an event-driven client does: one
     * completion notification request, then arm the CQ. */
    init_req(&comp);
    if (to->ifc.GetCqCompEvent(to->cq, &comp) != STATUS_PENDING) return STATUS_INTERNAL_ERROR;
    CHECK(to->ifc.RearmCq(to->cq, FALSE));
  }
  CHECK(post_send(from));
  if (notify) CHECK(wait_req(&comp, STATUS_PENDING));
  CHECK(wait_wc(from, IbSend, &len));
  CHECK(wait_wc(to, IbRecv, &len));
  if (len != MSG_SIZE || memcmp(to->buf + MSG_SIZE, from->buf, MSG_SIZE) != 0) {
    fprintf(stderr, "iteration %d: message corrupted (%lu bytes)\n", iter, (unsigned long)len);
    return STATUS_DATA_OVERRUN;
  }
  return STATUS_SUCCESS;
}

static void teardown(struct side* s) {
  IB_REQUEST r;
  /* Destroy and close never fail; each completes when its references drop. */
  if (s->qp != NULL) (void)wait_req(&r, (init_req(&r), s->ifc.DestroyQp(s->qp, NULL, &r)));
  if (s->mr != NULL) (void)wait_req(&r, (init_req(&r), s->ifc.DeregMr(s->mr, &r)));
  if (s->cq != NULL) (void)wait_req(&r, (init_req(&r), s->ifc.DestroyCq(s->cq, NULL, &r)));
  if (s->pd != NULL) (void)wait_req(&r, (init_req(&r), s->ifc.DestroyPd(s->pd, NULL, &r)));
  if (s->ca != NULL) {
    (void)wait_req(&r, (init_req(&r), s->ifc.CloseCa(s->ca, NULL, &r)));
    if (s->fatal.IoStatus.Status != STATUS_CANCELLED) {
      fprintf(stderr, "%s: fatal request ended with 0x%08x\n", s->uri,
              (unsigned)s->fatal.IoStatus.Status);
    }
  }
  if (s->ifc.InterfaceDereference != NULL) s->ifc.InterfaceDereference(s->ifc.Context);
}

int main(int argc, char** argv) {
  static struct side a, b;
  int iters = 100;
  int i;
  NTSTATUS st;

  a.uri = argc > 2 ? argv[1] : "sim:nt_ping";
  b.uri = argc > 2 ? argv[2] : "sim:nt_pong";
  if (argc > 3) iters = atoi(argv[3]);
  if (kbv_eq_create(64, &g_eq) != KBV_SUCCESS) {
    fprintf(stderr, "nt_rc_pingpong: no event queue\n");
    return 1;
  }
  st = setup(&a);
  if (NT_SUCCESS(st)) st = setup(&b);
  if (NT_SUCCESS(st)) st = connect_qp(&a, &b);
  if (NT_SUCCESS(st)) st = connect_qp(&b, &a);
  for (i = 0; NT_SUCCESS(st) && i < iters; ++i) {
    st = transfer(&a, &b, i, i == 0);                /* ping */
    if (NT_SUCCESS(st)) st = transfer(&b, &a, i, 0); /* pong */
  }
  teardown(&a);
  teardown(&b);
  (void)kbv_eq_destroy(g_eq);
  if (!NT_SUCCESS(st)) {
    fprintf(stderr, "nt_rc_pingpong: failed: %s (0x%08x)\n", kbv_ntstatus_name(st), (unsigned)st);
    return 1;
  }
  printf("nt_rc_pingpong: %d round trips of %d bytes between %s and %s: ok\n", iters, MSG_SIZE,
         a.uri, b.uri);
  return 0;
}
