/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sysfs helpers and kernel-struct converters libibverbs exports for
 * other rdma-core libraries (IBVERBS_1.0 / 1.1 "historical symbols";
 * librdmacm imports them): ibv_get_sysfs_path, ibv_read_sysfs_file,
 * ibv_copy_{qp,ah}_attr_from_kern, ibv_copy_path_rec_{from,to}_kern.
 *
 * They do what rdma-core 44's libibverbs/sysfs.c and marshall.c do: read a
 * file under sysfs (the path from $SYSFS_PATH, default /sys), and copy the
 * kernel ABI structs of <rdma/ib_user_verbs.h> / <rdma/ib_user_sa.h> field
 * by field into the verbs ones. kbv's devices have no sysfs directory of
 * their own (ibdev_path names /sys/class/infiniband/mlx5_<i>, which exists
 * only where a kernel driver made it), so reads under it fail with ENOENT
 * as for any missing file.
 */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Prototypes: rdma-core's internal headers (not installed by libibverbs-dev). */
const char* ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr* dst, struct ib_uverbs_ah_attr* src);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr* dst, struct ib_uverbs_qp_attr* src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec* dst, struct ib_user_path_rec* src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec* dst, struct ibv_sa_path_rec* src);

const char* ibv_get_sysfs_path(void) {
  static char path[256];
  if (path[0] == '\0') {
    const char* env = getenv("SYSFS_PATH");
    snprintf(path, sizeof path, "%s", env && env[0] ? env : "/sys");
    /* without trailing slashes */
    for (size_t n = strlen(path); n > 1 && path[n - 1] == '/'; --n) path[n - 1] = '\0';
  }
  return path;
}

/* The file's contents with a trailing newline removed (NUL-terminated);
 * returns the length read, or -1 with errno. */
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  char* name = NULL;
  if (!dir || !file || !buf || size == 0) {
    errno = EINVAL;
    return -1;
  }
  if (asprintf(&name, "%s/%s", dir, file) < 0) {
    errno = ENOMEM;
    return -1;
  }
  const int fd = open(name, O_RDONLY | O_CLOEXEC);
  free(name);
  if (fd < 0) return -1;
  const ssize_t len = read(fd, buf, size);
  const int err = errno;
  close(fd);
  if (len < 0) {
    errno = err;
    return -1;
  }
  if (len > 0 && buf[len - 1] == '\n')
    buf[len - 1] = '\0';
  else if ((size_t)len < size)
    buf[len] = '\0';
  else
    buf[size - 1] = '\0';
  return (int)len;
}

void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr* dst, struct ib_uverbs_ah_attr* src) {
  memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof dst->grh.dgid.raw);
  dst->grh.flow_label = src->grh.flow_label;
  dst->grh.sgid_index = src->grh.sgid_index;
  dst->grh.hop_limit = src->grh.hop_limit;
  dst->grh.traffic_class = src->grh.traffic_class;
  dst->dlid = src->dlid;
  dst->sl = src->sl;
  dst->src_path_bits = src->src_path_bits;
  dst->static_rate = src->static_rate;
  dst->is_global = src->is_global;
  dst->port_num = src->port_num;
}

void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr* dst, struct ib_uverbs_qp_attr* src) {
  dst->cur_qp_state = (enum ibv_qp_state)src->cur_qp_state;
  dst->path_mtu = (enum ibv_mtu)src->path_mtu;
  dst->path_mig_state = (enum ibv_mig_state)src->path_mig_state;
  dst->qkey = src->qkey;
  dst->rq_psn = src->rq_psn;
  dst->sq_psn = src->sq_psn;
  dst->dest_qp_num = src->dest_qp_num;
  dst->qp_access_flags = src->qp_access_flags;
  dst->cap.max_send_wr = src->max_send_wr;
  dst->cap.max_recv_wr = src->max_recv_wr;
  dst->cap.max_send_sge = src->max_send_sge;
  dst->cap.max_recv_sge = src->max_recv_sge;
  dst->cap.max_inline_data = src->max_inline_data;
  ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
  ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
  dst->pkey_index = src->pkey_index;
  dst->alt_pkey_index = src->alt_pkey_index;
  dst->en_sqd_async_notify = src->en_sqd_async_notify;
  dst->sq_draining = src->sq_draining;
  dst->max_rd_atomic = src->max_rd_atomic;
  dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
  dst->min_rnr_timer = src->min_rnr_timer;
  dst->port_num = src->port_num;
  dst->timeout = src->timeout;
  dst->retry_cnt = src->retry_cnt;
  dst->rnr_retry = src->rnr_retry;
  dst->alt_port_num = src->alt_port_num;
  dst->alt_timeout = src->alt_timeout;
}

/* struct ibv_sa_path_rec and struct ib_user_path_rec carry the same
 * fields (IBTA 15.2.5.16 PathRecord) in different order and widths. */
#define KBV_COPY_PATH_REC(dst, src)                                      \
  do {                                                                   \
    (dst)->dlid = (src)->dlid;                                           \
    (dst)->slid = (src)->slid;                                           \
    (dst)->raw_traffic = (src)->raw_traffic;                             \
    (dst)->flow_label = (src)->flow_label;                               \
    (dst)->hop_limit = (src)->hop_limit;                                 \
    (dst)->traffic_class = (src)->traffic_class;                         \
    (dst)->reversible = (src)->reversible;                               \
    (dst)->numb_path = (src)->numb_path;                                 \
    (dst)->pkey = (src)->pkey;                                           \
    (dst)->sl = (src)->sl;                                               \
    (dst)->mtu_selector = (src)->mtu_selector;                           \
    (dst)->mtu = (src)->mtu;                                             \
    (dst)->rate_selector = (src)->rate_selector;                         \
    (dst)->rate = (src)->rate;                                           \
    (dst)->packet_life_time = (src)->packet_life_time;                   \
    (dst)->preference = (src)->preference;                               \
    (dst)->packet_life_time_selector = (src)->packet_life_time_selector; \
  } while (0)

void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec* dst, struct ib_user_path_rec* src) {
  memcpy(dst->dgid.raw, src->dgid, sizeof dst->dgid.raw);
  memcpy(dst->sgid.raw, src->sgid, sizeof dst->sgid.raw);
  KBV_COPY_PATH_REC(dst, src);
}

void ibv_copy_path_rec_to_kern(struct ib_user_path_rec* dst, struct ibv_sa_path_rec* src) {
  memcpy(dst->dgid, src->dgid.raw, sizeof dst->dgid);
  memcpy(dst->sgid, src->sgid.raw, sizeof dst->sgid);
  KBV_COPY_PATH_REC(dst, src);
}
