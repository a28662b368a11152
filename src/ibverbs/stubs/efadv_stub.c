// SPDX-License-Identifier: BSD-3-Clause
//
// kbv's stub libefa.so.1: every function rdma-core 44's EFA direct-verbs
// library exports (efadv.h, version nodes EFA_1.0 .. EFA_1.2 of libefa.map),
// with its prototype, each failing as providers/efa/man/*.3.md (v44.0)
// documents: constructors return NULL with errno = EOPNOTSUPP, the queries
// return EOPNOTSUPP ("the value of errno on failure"). efadv_wc_read_sgid is
// an inline function of efadv.h, not a library symbol.
//
// Why: Debian's perftest links libefa.so.1; kbv has no EFA device, and
// rdma-core's real libefa binds to libibverbs' private provider ABI, which
// kbv's libibverbs.so.1 does not offer (see mlx5dv_stub.c).
// Every function is thread-safe and touches no argument.
#include <errno.h>
#include <infiniband/efadv.h>
#include <stddef.h>
#include <stdint.h>

// The arguments are the prototypes' (efadv.h); a stub uses none of them.
#pragma GCC diagnostic ignored "-Wunused-parameter"

/* ---- EFA_1.0 ---- */

struct ibv_qp* efadv_create_driver_qp(struct ibv_pd* ibvpd, struct ibv_qp_init_attr* attr,
                                      uint32_t driver_qp_type) {
  errno = EOPNOTSUPP;
  return NULL;
}

/* ---- EFA_1.1 ---- */

struct ibv_qp* efadv_create_qp_ex(struct ibv_context* ibvctx, struct ibv_qp_init_attr_ex* attr_ex,
                                  struct efadv_qp_init_attr* efa_attr, uint32_t inlen) {
  errno = EOPNOTSUPP;
  return NULL;
}

int efadv_query_ah(struct ibv_ah* ibvah, struct efadv_ah_attr* attr, uint32_t inlen) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

int efadv_query_device(struct ibv_context* ibvctx, struct efadv_device_attr* attr, uint32_t inlen) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

/* ---- EFA_1.2 ---- */

struct efadv_cq* efadv_cq_from_ibv_cq_ex(struct ibv_cq_ex* ibvcqx) {
  errno = EOPNOTSUPP;
  return NULL;
}

struct ibv_cq_ex* efadv_create_cq(struct ibv_context* ibvctx, struct ibv_cq_init_attr_ex* attr_ex,
                                  struct efadv_cq_init_attr* efa_attr, uint32_t inlen) {
  errno = EOPNOTSUPP;
  return NULL;
}
