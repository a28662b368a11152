/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlx5_vfio_test: rdma-core's own user-space VFIO driver for ConnectX
 * (mlx5_vfio in Debian's libmlx5.so.1, package ibverbs-providers; opened
 * with mlx5dv_get_vfio_device_list), unmodified, on two HCA models under
 * LD_PRELOAD=libkbv-sim-preload.so KBV_SIM_DEVICES=2 — an independent
 * driver judging the model's fidelity.
 *
 *  1. verbs on HCA 0: ibv_open_device (mlx5_vfio's bring-up: ENABLE_HCA,
 *     ISSI, boot/init pages, ACCESS_REG HOST_ENDIANNESS, QUERY/SET_HCA_CAP,
 *     INIT_HCA, roce_en, ALLOC_UAR, the command EQ on MSI-X vector 0),
 *     ibv_query_device (mlx5_vfio v44 does not implement it: EOPNOTSUPP),
 *     ibv_alloc_pd, ibv_reg_mr, the events fd and mlx5dv_vfio_process_events
 *     for 3.5 s (mlx5_vfio's health poll aborts the process when the
 *     health counter stops for 3 s), ibv_dereg_mr, ibv_close_device;
 *  2. DevX on both HCAs: QUERY_HCA_CAP through mlx5dv_devx_general_cmd,
 *     CQ and RC QP buffers and doorbell records in DEVX umems
 *     (mlx5dv_devx_umem_reg), mlx5dv_devx_alloc_uar, CREATE_CQ / CREATE_QP
 *     with mlx5dv_devx_obj_create, RST2INIT / INIT2RTR / RTR2RTS with
 *     mlx5dv_devx_obj_modify (QUERY_QP says RTS), then an RDMA WRITE and a
 *     SEND from HCA 0 to HCA 1: WQEs built here with mlx5dv.h's segments,
 *     the doorbell record and the UAR doorbell rung on the UAR page
 *     mlx5_vfio mapped, CQEs polled from the umem CQs, the data compared
 *     byte for byte; the receive CQ armed, its completion event seen on
 *     mlx5_vfio's events fd.
 *
 * The command encoders are this file's own: bit offsets from the kernel's
 * include/linux/mlx5/mlx5_ifc.h (the same layouts as rdma-core's
 * providers/mlx5/mlx5_ifc.h), big-endian, bit 0 the MSB of dword 0 — the
 * DEVX_SET convention. The struct named beside each offset is mlx5_ifc.h's.
 * Exit 0 on success; each failed check prints a line and makes it 1.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;

#define CHECK(cond, ...)                                           \
  do {                                                             \
    if (!(cond)) {                                                 \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);         \
      fprintf(stderr, __VA_ARGS__);                                \
      fprintf(stderr, " (errno %d %s)\n", errno, strerror(errno)); \
      failures++;                                                  \
    }                                                              \
  } while (0)

/* A check the rest of the program depends on. */
#define REQUIRE(cond, ...)      \
  do {                          \
    if (!(cond)) {              \
      CHECK(cond, __VA_ARGS__); \
      exit(1);                  \
    }                           \
  } while (0)

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- PRM field access (DEVX_SET / DEVX_GET convention) ---------------------- */

static void set_bits(void* buf, unsigned off, unsigned width, uint64_t v) {
  uint8_t* p = buf;
  if (width == 64) {
    const uint64_t be = htobe64(v);
    memcpy(p + off / 8, &be, 8);
    return;
  }
  uint32_t dw;
  memcpy(&dw, p + (off / 32) * 4, 4);
  dw = be32toh(dw);
  const unsigned shift = 32 - width - off % 32;
  const uint32_t mask = width == 32 ? 0xFFFFFFFFu : ((1u << width) - 1) << shift;
  dw = (dw & ~mask) | (((uint32_t)v << shift) & mask);
  dw = htobe32(dw);
  memcpy(p + (off / 32) * 4, &dw, 4);
}

static uint64_t get_bits(const void* buf, unsigned off, unsigned width) {
  const uint8_t* p = buf;
  if (width == 64) {
    uint64_t be;
    memcpy(&be, p + off / 8, 8);
    return be64toh(be);
  }
  uint32_t dw;
  memcpy(&dw, p + (off / 32) * 4, 4);
  dw = be32toh(dw);
  const unsigned shift = 32 - width - off % 32;
  return width == 32 ? dw : (dw >> shift) & ((1u << width) - 1);
}

/* Command header (mlx5_ifc.h *_in: opcode [0x0,16], op_mod [0x30,16];
 * *_out: status [0x0,8], syndrome [0x20,32]). */
static void cmd_hdr(void* in, uint16_t opcode, uint16_t op_mod) {
  set_bits(in, 0x0, 16, opcode);
  set_bits(in, 0x30, 16, op_mod);
}
static unsigned out_status(const void* out) { return (unsigned)get_bits(out, 0x0, 8); }
static unsigned out_syndrome(const void* out) { return (unsigned)get_bits(out, 0x20, 32); }

enum {
  OP_QUERY_HCA_CAP = 0x100,
  OP_CREATE_CQ = 0x400,
  OP_CREATE_QP = 0x500,
  OP_RST2INIT_QP = 0x502,
  OP_INIT2RTR_QP = 0x503,
  OP_RTR2RTS_QP = 0x504,
  OP_QUERY_QP = 0x50b,
  OP_QUERY_ROCE_ADDRESS = 0x760,
};

/* cmd_hca_cap_bits, inside query_hca_cap_out.capability (bit 0x80). */
enum {
  CAP_OFF = 0x80,
  CAP_LOG_MAX_QP = 0x9b,    /* [5] */
  CAP_LOG_MAX_CQ_SZ = 0xc8, /* [8] */
  CAP_PORT_TYPE = 0x1b6,    /* [2]: 1 = Ethernet */
  CAP_LOG_MAX_MSG = 0x1c3,  /* [5] */
  CAP_ROCE = 0x21d,         /* [1] */
  CAP_RC = 0x23f,           /* [1] */
  CAP_UMEM_UID_0 = 0x252,   /* [1] */
  QUERY_HCA_CAP_OUT_BYTES = 0x1010,
};

/* cqc_bits (create_cq_in.cq_context at bit 0x80). */
enum {
  CQC = 0x80,
  CQC_DBR_UMEM_VALID = 0x6,      /* [1] */
  CQC_CQE_SZ = 0x8,              /* [3]: 0 = 64 bytes */
  CQC_DBR_UMEM_ID = 0x20,        /* [32] (DPDK mlx5_prm.h; reserved_at_20 in Linux) */
  CQC_LOG_CQ_SIZE = 0x63,        /* [5] */
  CQC_UAR_PAGE = 0x68,           /* [24] */
  CQC_C_EQN = 0xa0,              /* [32] c_eqn_or_apu_element */
  CQC_LOG_PAGE_SIZE = 0xc3,      /* [5]: log2(page) - 12 */
  CQC_DBR_ADDR = 0x1c0,          /* [64]: byte offset into the dbr umem */
  CREATE_CQ_UMEM_OFFSET = 0x280, /* [64] create_cq_in.cq_umem_offset */
  CREATE_CQ_UMEM_ID = 0x2c0,     /* [32] */
  CREATE_CQ_UMEM_VALID = 0x2e0,  /* [1] */
  CREATE_CQ_IN_BYTES = 0x110,
  CREATE_CQ_OUT_CQN = 0x48, /* [24] create_cq_out.cqn */
};

/* qpc_bits (create_qp_in.qpc / <transition>_in.qpc at bit 0xc0) and
 * ads_bits (qpc.primary_address_path at qpc bit 0xc0). */
enum {
  QPC = 0xc0,
  QPC_STATE = 0x0,                  /* [4] */
  QPC_ST = 0x8,                     /* [8]: 0 = RC */
  QPC_PM_STATE = 0x13,              /* [2]: 3 = migrated */
  QPC_PD = 0x28,                    /* [24] */
  QPC_MTU = 0x40,                   /* [3]: 3 = 1024 */
  QPC_LOG_MSG_MAX = 0x43,           /* [5] */
  QPC_LOG_RQ_SIZE = 0x49,           /* [4] */
  QPC_LOG_RQ_STRIDE = 0x4d,         /* [3]: stride = 16 << n */
  QPC_LOG_SQ_SIZE = 0x51,           /* [4] */
  QPC_UAR_PAGE = 0x68,              /* [24] */
  QPC_LOG_PAGE_SIZE = 0xa3,         /* [5] */
  QPC_REMOTE_QPN = 0xa8,            /* [24] */
  ADS = 0xc0,                       /* primary_address_path */
  ADS_PKEY_INDEX = 0x10,            /* [16] */
  ADS_GRH = 0x28,                   /* [1] */
  ADS_ACK_TIMEOUT = 0x40,           /* [5] */
  ADS_SRC_ADDR_INDEX = 0x48,        /* [8] */
  ADS_HOP_LIMIT = 0x58,             /* [8] */
  ADS_RGID_RIP = 0x80,              /* [128] */
  ADS_UDP_SPORT = 0x110,            /* [16] */
  ADS_VHCA_PORT_NUM = 0x128,        /* [8] */
  ADS_RMAC_47_32 = 0x130,           /* [16] */
  ADS_RMAC_31_0 = 0x140,            /* [32] */
  QPC_LOG_SRA_MAX = 0x388,          /* [3] */
  QPC_RETRY_COUNT = 0x38d,          /* [3] */
  QPC_RNR_RETRY = 0x390,            /* [3] */
  QPC_NEXT_SEND_PSN = 0x3c8,        /* [24] */
  QPC_CQN_SND = 0x3e8,              /* [24] */
  QPC_LOG_RRA_MAX = 0x488,          /* [3] */
  QPC_RRE = 0x490,                  /* [1] */
  QPC_RWE = 0x491,                  /* [1] */
  QPC_MIN_RNR_NAK = 0x4a3,          /* [5] */
  QPC_NEXT_RCV_PSN = 0x4a8,         /* [24] */
  QPC_CQN_RCV = 0x4e8,              /* [24] */
  QPC_DBR_ADDR = 0x500,             /* [64] */
  QPC_RQ_TYPE = 0x565,              /* [3]: 0 = regular */
  QPC_DBR_UMEM_VALID = 0x683,       /* [1] */
  QPC_DBR_UMEM_ID = 0x720,          /* [32] (rdma-core providers/mlx5/mlx5_ifc.h) */
  CREATE_QP_WQ_UMEM_OFFSET = 0x800, /* [64] create_qp_in.wq_umem_offset */
  CREATE_QP_WQ_UMEM_ID = 0x840,     /* [32] */
  CREATE_QP_WQ_UMEM_VALID = 0x860,  /* [1] */
  CREATE_QP_IN_BYTES = 0x110,
  CREATE_QP_OUT_QPN = 0x48, /* [24] create_qp_out.qpn */
  MODIFY_QP_QPN = 0x48,     /* [24] <transition>_in.qpn */
  MODIFY_QP_IN_BYTES = 0x110,
  QUERY_QP_OUT_BYTES = 0x110,
};

/* query_roce_address_in / _out.roce_address (roce_addr_layout_bits). */
enum {
  ROCE_ADDR_INDEX = 0x40, /* [16] query_roce_address_in.roce_address_index */
  ROCE_ADDR_PORT = 0x5c,  /* [4] vhca_port_num */
  ROCE_ADDR = 0x80,       /* query_roce_address_out.roce_address */
  ROCE_MAC_47_32 = 0x90,  /* [16] */
  ROCE_MAC_31_0 = 0xa0,   /* [32] */
  QUERY_ROCE_ADDRESS_OUT_BYTES = 0x30,
};

/* ---- one model HCA through mlx5_vfio --------------------------------------- */

enum {
  LOG_CQ_SIZE = 6, /* 64 CQEs of 64 bytes: one 4 KiB page */
  LOG_RQ_SIZE = 6, /* 64 receive WQEs of 64 bytes (stride 2) */
  LOG_SQ_SIZE = 6, /* 64 send basic blocks of 64 bytes */
  RQ_BYTES = 64 << LOG_RQ_SIZE,
  SQ_BYTES = 64 << LOG_SQ_SIZE,
  DATA_BYTES = 64 * 1024,
  QP_DBR_OFF = 64, /* the QP's record after the CQ's in the dbr page */
};

struct hca {
  const char* bdf;
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  uint32_t pdn;
  struct mlx5dv_devx_uar* uar;
  uint32_t eqn;
  void* dbr_page; /* CQ record at 0, QP record at QP_DBR_OFF */
  struct mlx5dv_devx_umem* dbr_umem;
  struct mlx5_cqe64* cqes;
  struct mlx5dv_devx_umem* cq_umem;
  struct mlx5dv_devx_obj* cq;
  uint32_t cqn, cq_ci;
  uint8_t* wq; /* RQ at 0, SQ at RQ_BYTES */
  struct mlx5dv_devx_umem* wq_umem;
  struct mlx5dv_devx_obj* qp;
  uint32_t qpn, sq_pi, rq_pi;
  uint8_t* data;
  struct ibv_mr* mr;
  uint8_t gid[16];
  uint8_t mac[6];
};

static struct ibv_context* open_hca(const char* bdf) {
  struct mlx5dv_vfio_context_attr attr = {.pci_name = bdf};
  struct ibv_device** list = mlx5dv_get_vfio_device_list(&attr);
  REQUIRE(list && list[0], "mlx5dv_get_vfio_device_list(%s)", bdf);
  struct ibv_context* ctx = ibv_open_device(list[0]);
  REQUIRE(ctx, "ibv_open_device(%s)", bdf);
  ibv_free_device_list(list);
  return ctx;
}

/* mlx5dv_devx_general_cmd; returns the firmware status (0 = OK). */
static unsigned general_cmd(struct hca* h, const void* in, size_t inlen, void* out, size_t outlen) {
  const int r = mlx5dv_devx_general_cmd(h->ctx, in, inlen, out, outlen);
  CHECK(r == 0, "%s: general command %#x: status %#x syndrome %#x", h->bdf,
        (unsigned)get_bits(in, 0, 16), out_status(out), out_syndrome(out));
  return r == 0 ? 0 : (out_status(out) ? out_status(out) : 0xFFu);
}

static void query_caps(struct hca* h) {
  uint8_t in[16] = {0};
  uint8_t* out = calloc(1, QUERY_HCA_CAP_OUT_BYTES);
  cmd_hdr(in, OP_QUERY_HCA_CAP, 0 << 1 | 1); /* general device, current */
  REQUIRE(general_cmd(h, in, sizeof in, out, QUERY_HCA_CAP_OUT_BYTES) == 0, "QUERY_HCA_CAP");
  CHECK(get_bits(out, CAP_OFF + CAP_PORT_TYPE, 2) == 1, "port_type Ethernet");
  CHECK(get_bits(out, CAP_OFF + CAP_ROCE, 1) == 1, "roce");
  CHECK(get_bits(out, CAP_OFF + CAP_RC, 1) == 1, "rc");
  CHECK(get_bits(out, CAP_OFF + CAP_UMEM_UID_0, 1) == 1, "umem_uid_0");
  CHECK(get_bits(out, CAP_OFF + CAP_LOG_MAX_QP, 5) >= 1, "log_max_qp");
  CHECK(get_bits(out, CAP_OFF + CAP_LOG_MAX_CQ_SZ, 8) >= LOG_CQ_SIZE, "log_max_cq_sz");
  CHECK(get_bits(out, CAP_OFF + CAP_LOG_MAX_MSG, 5) >= 16, "log_max_msg");
  free(out);
}

/* RoCE address table entry 0 of port 1: the port's GID and MAC. */
static void query_gid(struct hca* h) {
  uint8_t in[16] = {0}, out[QUERY_ROCE_ADDRESS_OUT_BYTES] = {0};
  cmd_hdr(in, OP_QUERY_ROCE_ADDRESS, 0);
  set_bits(in, ROCE_ADDR_INDEX, 16, 0);
  set_bits(in, ROCE_ADDR_PORT, 4, 1);
  REQUIRE(general_cmd(h, in, sizeof in, out, sizeof out) == 0, "QUERY_ROCE_ADDRESS");
  memcpy(h->gid, out + ROCE_ADDR / 8, 16);
  const uint64_t mac = get_bits(out, ROCE_ADDR + ROCE_MAC_47_32, 16) << 32 |
                       get_bits(out, ROCE_ADDR + ROCE_MAC_31_0, 32);
  for (int i = 0; i < 6; ++i) h->mac[i] = (uint8_t)(mac >> (40 - 8 * i));
  CHECK(h->gid[10] == 0xFF && h->gid[11] == 0xFF && h->gid[12] == 127,
        "%s: GID 0 is ::ffff:127.x.y.z", h->bdf);
}

static void* page_alloc(size_t bytes) {
  void* p = NULL;
  REQUIRE(posix_memalign(&p, 4096, bytes) == 0, "posix_memalign");
  memset(p, 0, bytes);
  return p;
}

static void create_cq(struct hca* h) {
  h->cqes = page_alloc(64 << LOG_CQ_SIZE);
  for (int i = 0; i < 1 << LOG_CQ_SIZE; ++i) h->cqes[i].op_own = MLX5_CQE_INVALID << 4;
  h->cq_umem = mlx5dv_devx_umem_reg(h->ctx, h->cqes, 64 << LOG_CQ_SIZE, IBV_ACCESS_LOCAL_WRITE);
  REQUIRE(h->cq_umem, "%s: umem for the CQ", h->bdf);
  uint8_t in[CREATE_CQ_IN_BYTES] = {0}, out[16] = {0};
  cmd_hdr(in, OP_CREATE_CQ, 0);
  set_bits(in, CQC + CQC_CQE_SZ, 3, 0);
  set_bits(in, CQC + CQC_LOG_CQ_SIZE, 5, LOG_CQ_SIZE);
  set_bits(in, CQC + CQC_UAR_PAGE, 24, h->uar->page_id);
  set_bits(in, CQC + CQC_C_EQN, 32, h->eqn);
  set_bits(in, CQC + CQC_LOG_PAGE_SIZE, 5, 0);
  set_bits(in, CQC + CQC_DBR_UMEM_VALID, 1, 1);
  set_bits(in, CQC + CQC_DBR_UMEM_ID, 32, h->dbr_umem->umem_id);
  set_bits(in, CQC + CQC_DBR_ADDR, 64, 0);
  set_bits(in, CREATE_CQ_UMEM_VALID, 1, 1);
  set_bits(in, CREATE_CQ_UMEM_ID, 32, h->cq_umem->umem_id);
  set_bits(in, CREATE_CQ_UMEM_OFFSET, 64, 0);
  h->cq = mlx5dv_devx_obj_create(h->ctx, in, sizeof in, out, sizeof out);
  REQUIRE(h->cq, "%s: CREATE_CQ status %#x syndrome %#x", h->bdf, out_status(out),
          out_syndrome(out));
  h->cqn = (uint32_t)get_bits(out, CREATE_CQ_OUT_CQN, 24);
}

static void create_qp(struct hca* h) {
  h->wq = page_alloc(RQ_BYTES + SQ_BYTES);
  h->wq_umem = mlx5dv_devx_umem_reg(h->ctx, h->wq, RQ_BYTES + SQ_BYTES, IBV_ACCESS_LOCAL_WRITE);
  REQUIRE(h->wq_umem, "%s: umem for the QP", h->bdf);
  uint8_t in[CREATE_QP_IN_BYTES] = {0}, out[16] = {0};
  cmd_hdr(in, OP_CREATE_QP, 0);
  set_bits(in, QPC + QPC_ST, 8, 0);
  set_bits(in, QPC + QPC_PM_STATE, 2, 3);
  set_bits(in, QPC + QPC_PD, 24, h->pdn);
  set_bits(in, QPC + QPC_LOG_MSG_MAX, 5, 30);
  set_bits(in, QPC + QPC_LOG_RQ_SIZE, 4, LOG_RQ_SIZE);
  set_bits(in, QPC + QPC_LOG_RQ_STRIDE, 3, 2);
  set_bits(in, QPC + QPC_LOG_SQ_SIZE, 4, LOG_SQ_SIZE);
  set_bits(in, QPC + QPC_UAR_PAGE, 24, h->uar->page_id);
  set_bits(in, QPC + QPC_LOG_PAGE_SIZE, 5, 0);
  set_bits(in, QPC + QPC_CQN_SND, 24, h->cqn);
  set_bits(in, QPC + QPC_CQN_RCV, 24, h->cqn);
  set_bits(in, QPC + QPC_RQ_TYPE, 3, 0);
  set_bits(in, QPC + QPC_DBR_UMEM_VALID, 1, 1);
  set_bits(in, QPC + QPC_DBR_UMEM_ID, 32, h->dbr_umem->umem_id);
  set_bits(in, QPC + QPC_DBR_ADDR, 64, QP_DBR_OFF);
  set_bits(in, CREATE_QP_WQ_UMEM_VALID, 1, 1);
  set_bits(in, CREATE_QP_WQ_UMEM_ID, 32, h->wq_umem->umem_id);
  set_bits(in, CREATE_QP_WQ_UMEM_OFFSET, 64, 0);
  h->qp = mlx5dv_devx_obj_create(h->ctx, in, sizeof in, out, sizeof out);
  REQUIRE(h->qp, "%s: CREATE_QP status %#x syndrome %#x", h->bdf, out_status(out),
          out_syndrome(out));
  h->qpn = (uint32_t)get_bits(out, CREATE_QP_OUT_QPN, 24);
}

static void modify_qp(struct hca* h, uint16_t opcode, uint8_t* in) {
  uint8_t out[16] = {0};
  cmd_hdr(in, opcode, 0);
  set_bits(in, MODIFY_QP_QPN, 24, h->qpn);
  const int r = mlx5dv_devx_obj_modify(h->qp, in, MODIFY_QP_IN_BYTES, out, sizeof out);
  REQUIRE(r == 0, "%s: QP transition %#x status %#x syndrome %#x", h->bdf, opcode, out_status(out),
          out_syndrome(out));
}

static unsigned query_qp_state(struct hca* h) {
  uint8_t in[16] = {0}, out[QUERY_QP_OUT_BYTES] = {0};
  cmd_hdr(in, OP_QUERY_QP, 0);
  set_bits(in, MODIFY_QP_QPN, 24, h->qpn);
  const int r = mlx5dv_devx_obj_query(h->qp, in, sizeof in, out, sizeof out);
  CHECK(r == 0, "%s: QUERY_QP status %#x", h->bdf, out_status(out));
  return (unsigned)get_bits(out, QPC + QPC_STATE, 4);
}

/* RST -> INIT -> RTR -> RTS, connected to `peer` over RoCEv2. */
static void connect_qp(struct hca* h, const struct hca* peer) {
  uint8_t in[MODIFY_QP_IN_BYTES];
  memset(in, 0, sizeof in);
  set_bits(in, QPC + ADS + ADS_VHCA_PORT_NUM, 8, 1);
  set_bits(in, QPC + ADS + ADS_PKEY_INDEX, 16, 0);
  set_bits(in, QPC + QPC_RRE, 1, 1);
  set_bits(in, QPC + QPC_RWE, 1, 1);
  modify_qp(h, OP_RST2INIT_QP, in);
  CHECK(query_qp_state(h) == 1, "%s: INIT", h->bdf);

  memset(in, 0, sizeof in);
  set_bits(in, QPC + QPC_MTU, 3, 3);
  set_bits(in, QPC + QPC_LOG_MSG_MAX, 5, 30);
  set_bits(in, QPC + QPC_REMOTE_QPN, 24, peer->qpn);
  set_bits(in, QPC + QPC_NEXT_RCV_PSN, 24, 0x1000);
  set_bits(in, QPC + QPC_LOG_RRA_MAX, 3, 2);
  set_bits(in, QPC + QPC_MIN_RNR_NAK, 5, 12);
  set_bits(in, QPC + ADS + ADS_GRH, 1, 1);
  set_bits(in, QPC + ADS + ADS_SRC_ADDR_INDEX, 8, 0);
  set_bits(in, QPC + ADS + ADS_HOP_LIMIT, 8, 64);
  set_bits(in, QPC + ADS + ADS_UDP_SPORT, 16, 0xC000);
  set_bits(in, QPC + ADS + ADS_VHCA_PORT_NUM, 8, 1);
  memcpy(in + (QPC + ADS + ADS_RGID_RIP) / 8, peer->gid, 16);
  set_bits(in, QPC + ADS + ADS_RMAC_47_32, 16, (uint64_t)peer->mac[0] << 8 | peer->mac[1]);
  set_bits(in, QPC + ADS + ADS_RMAC_31_0, 32,
           (uint64_t)peer->mac[2] << 24 | peer->mac[3] << 16 | peer->mac[4] << 8 | peer->mac[5]);
  modify_qp(h, OP_INIT2RTR_QP, in);
  CHECK(query_qp_state(h) == 2, "%s: RTR", h->bdf);

  memset(in, 0, sizeof in);
  set_bits(in, QPC + QPC_NEXT_SEND_PSN, 24, 0x1000);
  set_bits(in, QPC + QPC_LOG_SRA_MAX, 3, 2);
  set_bits(in, QPC + QPC_RETRY_COUNT, 3, 7);
  set_bits(in, QPC + QPC_RNR_RETRY, 3, 7);
  set_bits(in, QPC + ADS + ADS_ACK_TIMEOUT, 5, 14);
  modify_qp(h, OP_RTR2RTS_QP, in);
  CHECK(query_qp_state(h) == 3, "%s: RTS", h->bdf);
}

static void setup_devx(struct hca* h) {
  h->pd = ibv_alloc_pd(h->ctx);
  REQUIRE(h->pd, "%s: ibv_alloc_pd", h->bdf);
  struct mlx5dv_pd dvpd = {0};
  struct mlx5dv_obj obj = {.pd = {.in = h->pd, .out = &dvpd}};
  REQUIRE(mlx5dv_init_obj(&obj, MLX5DV_OBJ_PD) == 0, "%s: mlx5dv_init_obj(PD)", h->bdf);
  h->pdn = dvpd.pdn;
  h->uar = mlx5dv_devx_alloc_uar(h->ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
  REQUIRE(h->uar && h->uar->reg_addr && h->uar->base_addr, "%s: mlx5dv_devx_alloc_uar", h->bdf);
  REQUIRE(mlx5dv_devx_query_eqn(h->ctx, 0, &h->eqn) == 0, "%s: mlx5dv_devx_query_eqn", h->bdf);
  h->dbr_page = page_alloc(4096);
  h->dbr_umem = mlx5dv_devx_umem_reg(h->ctx, h->dbr_page, 4096, IBV_ACCESS_LOCAL_WRITE);
  REQUIRE(h->dbr_umem, "%s: umem for the doorbell records", h->bdf);
  query_caps(h);
  query_gid(h);
  create_cq(h);
  create_qp(h);
  h->data = page_alloc(DATA_BYTES);
  h->mr = ibv_reg_mr(h->pd, h->data, DATA_BYTES,
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  REQUIRE(h->mr, "%s: ibv_reg_mr", h->bdf);
}

static void teardown_devx(struct hca* h) {
  CHECK(ibv_dereg_mr(h->mr) == 0, "%s: ibv_dereg_mr", h->bdf);
  CHECK(mlx5dv_devx_obj_destroy(h->qp) == 0, "%s: DESTROY_QP", h->bdf);
  CHECK(mlx5dv_devx_obj_destroy(h->cq) == 0, "%s: DESTROY_CQ", h->bdf);
  CHECK(mlx5dv_devx_umem_dereg(h->wq_umem) == 0, "%s: umem dereg", h->bdf);
  CHECK(mlx5dv_devx_umem_dereg(h->cq_umem) == 0, "%s: umem dereg", h->bdf);
  CHECK(mlx5dv_devx_umem_dereg(h->dbr_umem) == 0, "%s: umem dereg", h->bdf);
  mlx5dv_devx_free_uar(h->uar);
  CHECK(ibv_dealloc_pd(h->pd) == 0, "%s: ibv_dealloc_pd", h->bdf);
  CHECK(ibv_close_device(h->ctx) == 0, "%s: ibv_close_device", h->bdf);
  free(h->data);
  free(h->wq);
  free(h->cqes);
  free(h->dbr_page);
}

/* ---- data path: WQEs, doorbells, CQEs (mlx5dv.h layouts) ------------------- */

static volatile __be32* qp_dbrec(struct hca* h) {
  return (volatile __be32*)((uint8_t*)h->dbr_page + QP_DBR_OFF);
}
/* CQ doorbell record: word 0 the consumer index, word 1 the arm request
 * (the mlx5 provider's MLX5_CQ_SET_CI / MLX5_CQ_ARM_DB, not in mlx5dv.h). */
enum { CQ_SET_CI = 0, CQ_ARM_DB = 1 };
static volatile __be32* cq_dbrec(struct hca* h) { return (volatile __be32*)h->dbr_page; }

/* Posts one signalled send WQE (RDMA WRITE to raddr/rkey, or SEND) of `len`
 * bytes from h->data + off, and rings the doorbell: record first, then the
 * UAR's BlueFlame/doorbell register with the control segment's first 8 bytes. */
static void post_send(struct hca* h, uint8_t opcode, uint32_t off, uint32_t len, uint64_t raddr,
                      uint32_t rkey) {
  const uint32_t idx = h->sq_pi & ((1u << LOG_SQ_SIZE) - 1);
  uint8_t* wqe = h->wq + RQ_BYTES + idx * 64;
  memset(wqe, 0, 64);
  struct mlx5_wqe_ctrl_seg* ctrl = (struct mlx5_wqe_ctrl_seg*)wqe;
  uint8_t* seg = wqe + sizeof *ctrl;
  uint8_t ds = 1;
  if (opcode == MLX5_OPCODE_RDMA_WRITE) {
    struct mlx5_wqe_raddr_seg* r = (struct mlx5_wqe_raddr_seg*)seg;
    r->raddr = htobe64(raddr);
    r->rkey = htobe32(rkey);
    seg += sizeof *r;
    ++ds;
  }
  mlx5dv_set_data_seg((struct mlx5_wqe_data_seg*)seg, len, h->mr->lkey, (uintptr_t)(h->data + off));
  ++ds;
  mlx5dv_set_ctrl_seg(ctrl, (uint16_t)h->sq_pi, opcode, 0, h->qpn, MLX5_WQE_CTRL_CQ_UPDATE, ds, 0,
                      0);
  ++h->sq_pi;
  __sync_synchronize();
  qp_dbrec(h)[MLX5_SND_DBR] = htobe32(h->sq_pi & 0xFFFF);
  __sync_synchronize();
  uint64_t first8;
  memcpy(&first8, ctrl, 8);
  *(volatile uint64_t*)h->uar->reg_addr = first8;
  __sync_synchronize();
}

/* Posts one receive WQE for `len` bytes at h->data + off (one data segment,
 * then an invalid-lkey segment ending the scatter list). */
static void post_recv(struct hca* h, uint32_t off, uint32_t len) {
  const uint32_t idx = h->rq_pi & ((1u << LOG_RQ_SIZE) - 1);
  struct mlx5_wqe_data_seg* seg = (struct mlx5_wqe_data_seg*)(h->wq + idx * 64);
  mlx5dv_set_data_seg(&seg[0], len, h->mr->lkey, (uintptr_t)(h->data + off));
  mlx5dv_set_data_seg(&seg[1], 0, MLX5_INVALID_LKEY, 0);
  ++h->rq_pi;
  __sync_synchronize();
  qp_dbrec(h)[MLX5_RCV_DBR] = htobe32(h->rq_pi & 0xFFFF);
}

/* Waits up to 10 s for the next CQE; returns it (consumed: the record holds
 * the new consumer index) or NULL. */
static struct mlx5_cqe64* poll_cq(struct hca* h) {
  const double until = now_s() + 10.0;
  for (;;) {
    struct mlx5_cqe64* cqe = &h->cqes[h->cq_ci & ((1u << LOG_CQ_SIZE) - 1)];
    const uint8_t op_own = *(volatile uint8_t*)&cqe->op_own;
    const int sw_owner = (h->cq_ci >> LOG_CQ_SIZE) & 1;
    if ((op_own >> 4) != MLX5_CQE_INVALID && (op_own & MLX5_CQE_OWNER_MASK) == sw_owner) {
      __sync_synchronize();
      ++h->cq_ci;
      cq_dbrec(h)[CQ_SET_CI] = htobe32(h->cq_ci & 0xFFFFFF);
      return cqe;
    }
    if (now_s() > until) return NULL;
    sched_yield();
  }
}

/* Arms h's CQ for the next completion (record word 1, then the UAR's CQ
 * doorbell at offset 0x20: sn | cmd | ci, cqn). */
static void arm_cq(struct hca* h) {
  const uint32_t sn = 0, ci = h->cq_ci & 0xFFFFFF;
  const uint32_t word = sn << 28 | MLX5_CQ_DB_REQ_NOT | ci;
  cq_dbrec(h)[CQ_ARM_DB] = htobe32(word);
  __sync_synchronize();
  const uint64_t db = (uint64_t)htobe32(h->cqn) << 32 | htobe32(word);
  *(volatile uint64_t*)((uint8_t*)h->uar->base_addr + MLX5_CQ_DOORBELL) = db;
  __sync_synchronize();
}

static void check_cqe(struct hca* h, struct mlx5_cqe64* cqe, uint8_t opcode, uint32_t bytes,
                      const char* what) {
  REQUIRE(cqe, "%s: %s: no CQE", h->bdf, what);
  const uint8_t op = mlx5dv_get_cqe_opcode(cqe);
  if (op == MLX5_CQE_REQ_ERR || op == MLX5_CQE_RESP_ERR) {
    const struct mlx5_err_cqe* e = (const struct mlx5_err_cqe*)cqe;
    CHECK(0, "%s: %s: error CQE syndrome %#x vendor %#x", h->bdf, what, e->syndrome,
          e->vendor_err_synd);
    return;
  }
  CHECK(op == opcode, "%s: %s: CQE opcode %u, expected %u", h->bdf, what, op, opcode);
  CHECK((be32toh(cqe->sop_drop_qpn) & 0xFFFFFF) == h->qpn, "%s: %s: CQE qpn", h->bdf, what);
  if (opcode == MLX5_CQE_RESP_SEND)
    CHECK(be32toh(cqe->byte_cnt) == bytes, "%s: %s: byte_cnt %u, expected %u", h->bdf, what,
          be32toh(cqe->byte_cnt), bytes);
}

static void fill(uint8_t* p, uint32_t len, uint32_t seed) {
  for (uint32_t i = 0; i < len; ++i) p[i] = (uint8_t)(seed + i * 7 + (i >> 8));
}

static void data_path(struct hca* a, struct hca* b) {
  /* RDMA WRITE: a.data[0, 40000) -> b.data[8192, ...). */
  const uint32_t wlen = 40000, woff = 8192;
  fill(a->data, wlen, 0x11);
  memset(b->data, 0, DATA_BYTES);
  post_send(a, MLX5_OPCODE_RDMA_WRITE, 0, wlen, (uintptr_t)(b->data + woff), b->mr->rkey);
  check_cqe(a, poll_cq(a), MLX5_CQE_REQ, 0, "RDMA WRITE");
  CHECK(memcmp(a->data, b->data + woff, wlen) == 0, "RDMA WRITE data differs");
  int zero = 1;
  for (uint32_t i = 0; i < woff; ++i) zero &= b->data[i] == 0;
  for (uint32_t i = woff + wlen; i < DATA_BYTES; ++i) zero &= b->data[i] == 0;
  CHECK(zero, "RDMA WRITE touched bytes outside its range");

  /* SEND: a.data[32768, +5000) -> the receive buffer b.data[49152, +8192);
   * b's CQ is armed first: its completion raises an event on mlx5_vfio's
   * events fd (the CQ's EQ is the one on MSI-X vector 0). */
  const uint32_t slen = 5000, soff = 32768, roff = 49152;
  fill(a->data + soff, slen, 0x5A);
  post_recv(b, roff, 8192);
  arm_cq(b);
  const int efd = mlx5dv_vfio_get_events_fd(b->ctx);
  post_send(a, MLX5_OPCODE_SEND, soff, slen, 0, 0);
  check_cqe(a, poll_cq(a), MLX5_CQE_REQ, 0, "SEND (requester)");
  check_cqe(b, poll_cq(b), MLX5_CQE_RESP_SEND, slen, "SEND (responder)");
  CHECK(memcmp(a->data + soff, b->data + roff, slen) == 0, "SEND data differs");
  struct pollfd pfd = {.fd = efd, .events = POLLIN};
  CHECK(poll(&pfd, 1, 5000) == 1 && (pfd.revents & POLLIN),
        "%s: no completion event on the events fd", b->bdf);
  CHECK(mlx5dv_vfio_process_events(b->ctx) == 0, "%s: mlx5dv_vfio_process_events", b->bdf);
}

/* ---- part 1: verbs and events on one HCA ------------------------------------ */

static void verbs_one_hca(const char* bdf) {
  struct ibv_context* ctx = open_hca(bdf);
  struct ibv_device_attr attr;
  /* mlx5_vfio v44 sets no query_device op: libibverbs answers EOPNOTSUPP. */
  const int q = ibv_query_device(ctx, &attr);
  CHECK(q == EOPNOTSUPP || q == 0, "ibv_query_device: %d", q);
  if (q == 0) CHECK(attr.max_qp > 0, "ibv_query_device max_qp");

  struct ibv_pd* pd = ibv_alloc_pd(ctx);
  REQUIRE(pd, "ibv_alloc_pd");
  void* buf = page_alloc(3 * 4096 + 100);
  struct ibv_mr* mr = ibv_reg_mr(pd, (uint8_t*)buf + 100, 3 * 4096,
                                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
  REQUIRE(mr, "ibv_reg_mr");
  CHECK(mr->lkey != 0 && mr->lkey == mr->rkey, "mkey %#x / %#x", mr->lkey, mr->rkey);
  struct ibv_mr* mr2 = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
  REQUIRE(mr2, "second ibv_reg_mr");
  CHECK((mr2->lkey >> 8) != (mr->lkey >> 8), "two MRs, two mkey indexes");

  /* The events fd: an eventfd mlx5_vfio gave VFIO_DEVICE_SET_IRQS for MSI-X
   * vector 0 (command completions and page requests). Processing events for
   * 3.5 s runs mlx5_vfio's health poll three times a second apart: a health
   * counter that does not advance makes it abort the process. */
  const int efd = mlx5dv_vfio_get_events_fd(ctx);
  CHECK(efd >= 0 && (fcntl(efd, F_GETFL) & O_NONBLOCK), "events fd %d non-blocking", efd);
  const double until = now_s() + 3.5;
  int calls = 0;
  while (now_s() < until) {
    struct pollfd pfd = {.fd = efd, .events = POLLIN};
    (void)poll(&pfd, 1, 250);
    CHECK(mlx5dv_vfio_process_events(ctx) == 0, "mlx5dv_vfio_process_events");
    ++calls;
  }
  CHECK(calls >= 14, "process_events ran %d times", calls);

  CHECK(ibv_dereg_mr(mr2) == 0, "ibv_dereg_mr");
  CHECK(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr");
  CHECK(ibv_dealloc_pd(pd) == 0, "ibv_dealloc_pd");
  CHECK(ibv_close_device(ctx) == 0, "ibv_close_device");
  free(buf);
  /* The device can be opened again after a close (teardown, function reset). */
  ctx = open_hca(bdf);
  CHECK(ibv_close_device(ctx) == 0, "ibv_close_device (second open)");
}

int main(int argc, char** argv) {
  const char* bdf0 = argc > 1 ? argv[1] : "fffe:00:01.0";
  const char* bdf1 = argc > 2 ? argv[2] : "fffe:00:02.0";

  verbs_one_hca(bdf0);
  printf("mlx5_vfio verbs on %s: %s\n", bdf0, failures ? "FAILED" : "ok");

  struct hca a = {.bdf = bdf0}, b = {.bdf = bdf1};
  a.ctx = open_hca(bdf0);
  b.ctx = open_hca(bdf1);
  setup_devx(&a);
  setup_devx(&b);
  connect_qp(&a, &b);
  connect_qp(&b, &a);
  data_path(&a, &b);
  teardown_devx(&a);
  teardown_devx(&b);
  printf("mlx5_vfio DevX RDMA WRITE + SEND %s -> %s: %s\n", bdf0, bdf1, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
