/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * IBVERBS_PRIVATE_34: the symbols rdma-core's libibverbs exports for its own
 * providers (libmlx5, libefa, ...) — the uverbs command layer (ibv_cmd_*,
 * execute_ioctl), provider registration and context set-up. Their meaning
 * is rdma-core's internals (libibverbs/driver.h, cmd_ioctl.h; not installed
 * by libibverbs-dev). kbv loads no provider and has no kernel uverbs device
 * behind its contexts, so:
 *   - every uverbs command (ibv_cmd_*, execute_ioctl) fails with EOPNOTSUPP,
 *     the errno rdma-core's command layer gives for a method the kernel
 *     lacks; they are defined without a prototype (old-style "()", so any
 *     caller's arguments are accepted) and return that errno, as the
 *     ibv_cmd_* functions return errno values;
 *   - verbs_open_device and _verbs_init_and_alloc_context return NULL with
 *     errno EOPNOTSUPP; ibv_read_ibdev_sysfs_file returns -1 with errno
 *     ENOENT (kbv devices have no sysfs directory);
 *   - verbs_register_driver_34 ignores the provider (a provider's
 *     constructor calls it; kbv never dispatches to providers), verbs_set_ops
 *     and verbs_uninit_context act on provider contexts, which cannot exist;
 *   - verbs_init_cq, __ioctl_final_num_attrs, __verbs_log and
 *     verbs_allow_disassociate_destroy do what rdma-core's do.
 * ibv_query_gid_type, the one private symbol programs import (ibv_devinfo),
 * is in query.cpp.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wold-style-definition"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#endif

#define KBV_NO_UVERBS(name) \
  int name() {              \
    errno = EOPNOTSUPP;     \
    return EOPNOTSUPP;      \
  }

KBV_NO_UVERBS(execute_ioctl)
KBV_NO_UVERBS(ibv_cmd_advise_mr)
KBV_NO_UVERBS(ibv_cmd_alloc_dm)
KBV_NO_UVERBS(ibv_cmd_alloc_mw)
KBV_NO_UVERBS(ibv_cmd_alloc_pd)
KBV_NO_UVERBS(ibv_cmd_attach_mcast)
KBV_NO_UVERBS(ibv_cmd_close_xrcd)
KBV_NO_UVERBS(ibv_cmd_create_ah)
KBV_NO_UVERBS(ibv_cmd_create_counters)
KBV_NO_UVERBS(ibv_cmd_create_cq)
KBV_NO_UVERBS(ibv_cmd_create_cq_ex)
KBV_NO_UVERBS(ibv_cmd_create_flow)
KBV_NO_UVERBS(ibv_cmd_create_flow_action_esp)
KBV_NO_UVERBS(ibv_cmd_create_qp)
KBV_NO_UVERBS(ibv_cmd_create_qp_ex2)
KBV_NO_UVERBS(ibv_cmd_create_qp_ex)
KBV_NO_UVERBS(ibv_cmd_create_rwq_ind_table)
KBV_NO_UVERBS(ibv_cmd_create_srq)
KBV_NO_UVERBS(ibv_cmd_create_srq_ex)
KBV_NO_UVERBS(ibv_cmd_create_wq)
KBV_NO_UVERBS(ibv_cmd_dealloc_mw)
KBV_NO_UVERBS(ibv_cmd_dealloc_pd)
KBV_NO_UVERBS(ibv_cmd_dereg_mr)
KBV_NO_UVERBS(ibv_cmd_destroy_ah)
KBV_NO_UVERBS(ibv_cmd_destroy_counters)
KBV_NO_UVERBS(ibv_cmd_destroy_cq)
KBV_NO_UVERBS(ibv_cmd_destroy_flow)
KBV_NO_UVERBS(ibv_cmd_destroy_flow_action)
KBV_NO_UVERBS(ibv_cmd_destroy_qp)
KBV_NO_UVERBS(ibv_cmd_destroy_rwq_ind_table)
KBV_NO_UVERBS(ibv_cmd_destroy_srq)
KBV_NO_UVERBS(ibv_cmd_destroy_wq)
KBV_NO_UVERBS(ibv_cmd_detach_mcast)
KBV_NO_UVERBS(ibv_cmd_free_dm)
KBV_NO_UVERBS(ibv_cmd_get_context)
KBV_NO_UVERBS(ibv_cmd_modify_flow_action_esp)
KBV_NO_UVERBS(ibv_cmd_modify_qp)
KBV_NO_UVERBS(ibv_cmd_modify_qp_ex)
KBV_NO_UVERBS(ibv_cmd_modify_srq)
KBV_NO_UVERBS(ibv_cmd_modify_wq)
KBV_NO_UVERBS(ibv_cmd_open_qp)
KBV_NO_UVERBS(ibv_cmd_open_xrcd)
KBV_NO_UVERBS(ibv_cmd_poll_cq)
KBV_NO_UVERBS(ibv_cmd_post_recv)
KBV_NO_UVERBS(ibv_cmd_post_send)
KBV_NO_UVERBS(ibv_cmd_post_srq_recv)
KBV_NO_UVERBS(ibv_cmd_query_context)
KBV_NO_UVERBS(ibv_cmd_query_device)
KBV_NO_UVERBS(ibv_cmd_query_device_any)
KBV_NO_UVERBS(ibv_cmd_query_mr)
KBV_NO_UVERBS(ibv_cmd_query_port)
KBV_NO_UVERBS(ibv_cmd_query_qp)
KBV_NO_UVERBS(ibv_cmd_query_srq)
KBV_NO_UVERBS(ibv_cmd_read_counters)
KBV_NO_UVERBS(ibv_cmd_reg_dm_mr)
KBV_NO_UVERBS(ibv_cmd_reg_dmabuf_mr)
KBV_NO_UVERBS(ibv_cmd_reg_mr)
KBV_NO_UVERBS(ibv_cmd_req_notify_cq)
KBV_NO_UVERBS(ibv_cmd_rereg_mr)
KBV_NO_UVERBS(ibv_cmd_resize_cq)
KBV_NO_UVERBS(ibv_cmd_modify_cq)

/* rdma-core cmd.c: lets a destroy succeed on a disassociated device. */
bool verbs_allow_disassociate_destroy;

void* verbs_open_device() {
  errno = EOPNOTSUPP;
  return NULL;
}

void* _verbs_init_and_alloc_context() {
  errno = EOPNOTSUPP;
  return NULL;
}

void verbs_register_driver_34() {}
void verbs_set_ops() {}
void verbs_uninit_context() {}

int ibv_read_ibdev_sysfs_file() {
  errno = ENOENT;
  return -1;
}

/* rdma-core cmd_ioctl.h struct ibv_command_buffer: the fields read here. */
struct kbv_command_buffer {
  struct kbv_command_buffer* next;
  struct ib_uverbs_attr* next_attr;
  struct ib_uverbs_attr* last_attr;
  uint8_t uhw_in_idx, uhw_out_idx, uhw_in_headroom_dwords, uhw_out_headroom_dwords;
  uint8_t flags;
  struct ib_uverbs_ioctl_hdr hdr;
};

/* Number of attributes in this and all the linked command buffers. */
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, struct kbv_command_buffer* link);
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, struct kbv_command_buffer* link) {
  for (; link; link = link->next) num_attrs += (unsigned int)(link->next_attr - link->hdr.attrs);
  return num_attrs;
}

/* rdma-core's provider logging: to stderr when VERBS_LOG_LEVEL (a number)
 * is at least level. */
void __verbs_log(void* ctx, uint32_t level, const char* fmt, ...);
void __verbs_log(void* ctx, uint32_t level, const char* fmt, ...) {
  (void)ctx;
  const char* env = getenv("VERBS_LOG_LEVEL");
  if (!env || strtoul(env, NULL, 0) < level) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
}

/* The common ibv_cq fields, as rdma-core's providers have them set. */
void verbs_init_cq(struct ibv_cq* cq, struct ibv_context* context, struct ibv_comp_channel* channel,
                   void* cq_context);
void verbs_init_cq(struct ibv_cq* cq, struct ibv_context* context, struct ibv_comp_channel* channel,
                   void* cq_context) {
  cq->context = context;
  cq->channel = channel;
  cq->cq_context = cq_context;
  cq->comp_events_completed = 0;
  cq->async_events_completed = 0;
  pthread_mutex_init(&cq->mutex, NULL);
  pthread_cond_init(&cq->cond, NULL);
  if (channel) {
    pthread_mutex_lock(&context->mutex);
    ++channel->refcnt;
    pthread_mutex_unlock(&context->mutex);
  }
}
