/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The IBVERBS_1.0 versions of the calls libibverbs 1.1 (2006) changed: the
 * old ABI with its own struct ibv_device_1_0 / ibv_context_1_0 wrappers,
 * which rdma-core keeps in libibverbs/compat-1_0.c for binaries linked
 * before 1.1. Every binary built since links the IBVERBS_1.1 versions (the
 * defaults, see export.hpp). kbv does not implement the 1.0 structures:
 * each call fails — NULL with errno EOPNOTSUPP, -1 with errno EOPNOTSUPP
 * where the call reports errors that way, or EOPNOTSUPP returned — and the
 * void ones (list free, event acknowledgements) have nothing to release, as
 * nothing can have been handed out.
 *
 * ibv_register_driver@IBVERBS_1.1 (old providers registering themselves)
 * is here too: kbv loads no provider, so the registration is ignored.
 *
 * Defined without prototypes (old-style "()"): the 1.0 argument types are
 * not in libibverbs-dev's headers and no argument is read.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wold-style-definition"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#endif

#define KBV_1_0(impl, name) __asm__(".symver " #impl ", " #name "@IBVERBS_1.0")

void* kbv_ibv_get_device_list_1_0() {
  errno = EOPNOTSUPP;
  return NULL;
}
KBV_1_0(kbv_ibv_get_device_list_1_0, ibv_get_device_list);

void* kbv_ibv_get_device_name_1_0() {
  errno = EOPNOTSUPP;
  return NULL;
}
KBV_1_0(kbv_ibv_get_device_name_1_0, ibv_get_device_name);

void* kbv_ibv_open_device_1_0() {
  errno = EOPNOTSUPP;
  return NULL;
}
KBV_1_0(kbv_ibv_open_device_1_0, ibv_open_device);

void* kbv_ibv_alloc_pd_1_0() {
  errno = EOPNOTSUPP;
  return NULL;
}
KBV_1_0(kbv_ibv_alloc_pd_1_0, ibv_alloc_pd);

void* kbv_ibv_reg_mr_1_0() {
  errno = EOPNOTSUPP;
  return NULL;
}
KBV_1_0(kbv_ibv_reg_mr_1_0, ibv_reg_mr);

void* kbv_ibv_create_cq_1_0() {
  errno = EOPNOTSUPP;
  return NULL;
}
KBV_1_0(kbv_ibv_create_cq_1_0, ibv_create_cq);

void* kbv_ibv_create_srq_1_0() {
  errno = EOPNOTSUPP;
  return NULL;
}
KBV_1_0(kbv_ibv_create_srq_1_0, ibv_create_srq);

void* kbv_ibv_create_qp_1_0() {
  errno = EOPNOTSUPP;
  return NULL;
}
KBV_1_0(kbv_ibv_create_qp_1_0, ibv_create_qp);

void* kbv_ibv_create_ah_1_0() {
  errno = EOPNOTSUPP;
  return NULL;
}
KBV_1_0(kbv_ibv_create_ah_1_0, ibv_create_ah);

int kbv_ibv_get_async_event_1_0() {
  errno = EOPNOTSUPP;
  return -1;
}
KBV_1_0(kbv_ibv_get_async_event_1_0, ibv_get_async_event);

int kbv_ibv_get_cq_event_1_0() {
  errno = EOPNOTSUPP;
  return -1;
}
KBV_1_0(kbv_ibv_get_cq_event_1_0, ibv_get_cq_event);

int kbv_ibv_query_gid_1_0() {
  errno = EOPNOTSUPP;
  return -1;
}
KBV_1_0(kbv_ibv_query_gid_1_0, ibv_query_gid);

int kbv_ibv_query_pkey_1_0() {
  errno = EOPNOTSUPP;
  return -1;
}
KBV_1_0(kbv_ibv_query_pkey_1_0, ibv_query_pkey);

int kbv_ibv_close_device_1_0() {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
KBV_1_0(kbv_ibv_close_device_1_0, ibv_close_device);

int kbv_ibv_query_device_1_0() {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
KBV_1_0(kbv_ibv_query_device_1_0, ibv_query_device);

int kbv_ibv_query_port_1_0() {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
KBV_1_0(kbv_ibv_query_port_1_0, ibv_query_port);

int kbv_ibv_dealloc_pd_1_0() {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
KBV_1_0(kbv_ibv_dealloc_pd_1_0, ibv_dealloc_pd);

int kbv_ibv_dereg_mr_1_0() {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
KBV_1_0(kbv_ibv_dereg_mr_1_0, ibv_dereg_mr);

int kbv_ibv_resize_cq_1_0() {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
KBV_1_0(kbv_ibv_resize_cq_1_0, ibv_resize_cq);

int kbv_ibv_destroy_cq_1_0() {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
KBV_1_0(kbv_ibv_destroy_cq_1_0, ibv_destroy_cq);

int kbv_ibv_modify_srq_1_0() {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
KBV_1_0(kbv_ibv_modify_srq_1_0, ibv_modify_srq);

int kbv_ibv_query_srq_1_0() {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
KBV_1_0(kbv_ibv_query_srq_1_0, ibv_query_srq);

int kbv_ibv_destroy_srq_1_0() {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
KBV_1_0(kbv_ibv_destroy_srq_1_0, ibv_destroy_srq);

int kbv_ibv_query_qp_1_0() {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
KBV_1_0(kbv_ibv_query_qp_1_0, ibv_query_qp);

int kbv_ibv_modify_qp_1_0() {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
KBV_1_0(kbv_ibv_modify_qp_1_0, ibv_modify_qp);

int kbv_ibv_destroy_qp_1_0() {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
KBV_1_0(kbv_ibv_destroy_qp_1_0, ibv_destroy_qp);

int kbv_ibv_destroy_ah_1_0() {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
KBV_1_0(kbv_ibv_destroy_ah_1_0, ibv_destroy_ah);

int kbv_ibv_attach_mcast_1_0() {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
KBV_1_0(kbv_ibv_attach_mcast_1_0, ibv_attach_mcast);

int kbv_ibv_detach_mcast_1_0() {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
KBV_1_0(kbv_ibv_detach_mcast_1_0, ibv_detach_mcast);

uint64_t kbv_ibv_get_device_guid_1_0() {
  errno = EOPNOTSUPP;
  return 0;
}
KBV_1_0(kbv_ibv_get_device_guid_1_0, ibv_get_device_guid);

void kbv_ibv_free_device_list_1_0() {}
KBV_1_0(kbv_ibv_free_device_list_1_0, ibv_free_device_list);

void kbv_ibv_ack_async_event_1_0() {}
KBV_1_0(kbv_ibv_ack_async_event_1_0, ibv_ack_async_event);

void kbv_ibv_ack_cq_events_1_0() {}
KBV_1_0(kbv_ibv_ack_cq_events_1_0, ibv_ack_cq_events);

void kbv_ibv_register_driver_1_1() {}
__asm__(".symver kbv_ibv_register_driver_1_1, ibv_register_driver@IBVERBS_1.1");
