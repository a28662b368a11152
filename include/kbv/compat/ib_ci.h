/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kbv's channel interface: IBAL's ci_interface_t (the table every OpenIB
 * Windows HCA driver exported to the access layer; docs/NTSTATUS.md source
 * 002, ib_ci.h) on kbv's verbs. Shapes follow the public OpenIB/WinOF
 * headers inc/iba/ib_ci.h and inc/iba/ib_types.h (names, argument order,
 * enum order); the code is kbv's. docs/CI.md maps every function pointer to
 * kbv and lists what returns IB_UNSUPPORTED.
 *
 * One header per translation unit: ib_ci.h (IBAL's names) and
 * ib_verbs.h / ib_types.h (the RFC's) define some of the same names
 * (IB_AC_*, IB_MOD_QP_*) as macros and enumerators.
 *
 * Byte order as IBAL: ib_net16/32/64_t and net32/64_t are network order
 * (QPNs, PSNs, Q_Keys, immediate data, lkey/rkey, GUIDs); everything else is
 * host order.
 *
 * Getting the table: kbv_ci_get_interface(uri_or_guid, &ci) opens the HCA
 * (kbv_device_open rules; "guid:0x<hex>" names it by node GUID) and fills
 * ci (guid, ids, every function pointer). open_ca(ci.guid, ...) then opens
 * the CA; open_ca of a GUID no interface holds opens that HCA by GUID.
 * kbv_ci_release_interface drops the interface's reference; the device
 * closes when it and every CA opened on it are gone.
 *
 * Calls are synchronous (as IBAL's channel interface): each control call
 * returns when kbv's request completed. Completion and async events are
 * delivered by one dispatch thread per open CA (it waits on the CA's kbv
 * event queue): pfn_completion_cb(cq_context) once per enable_cq_notify,
 * pfn_async_event_cb(&rec) for CA events (context = ca_context) and for CQ,
 * QP and SRQ events (context = the object's context). A callback may call
 * any function here except close_ca of its own CA.
 *
 * Threading: control calls from any thread. post_send/post_recv on one QP
 * from one thread at a time, poll_cq/peek_cq on one CQ from one thread at a
 * time (kbv.h "Fast path").
 *
 * User-mode private data (ci_umv_buf_t): kbv is itself the user-mode
 * library (libname is empty: there is no separate vendor library to talk
 * to), so a buffer carrying input (input_size > 0) is IB_UNSUPPORTED; a
 * buffer without input gets output_size 0 and status IB_SUCCESS.
 */
#ifndef KBV_COMPAT_IB_CI_H
#define KBV_COMPAT_IB_CI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint16_t ib_net16_t;
typedef uint32_t ib_net32_t;
typedef uint64_t ib_net64_t;
typedef uint32_t net32_t;
typedef uint64_t net64_t;
typedef int boolean_t;

/* ib_types.h ib_api_status_t, in IBAL's order (values are ordinals). */
typedef enum _ib_api_status_t {
  IB_SUCCESS,
  IB_INSUFFICIENT_RESOURCES,
  IB_INSUFFICIENT_MEMORY,
  IB_INVALID_PARAMETER,
  IB_INVALID_SETTING,
  IB_NOT_FOUND,
  IB_TIMEOUT,
  IB_CANCELED,
  IB_INTERRUPTED,
  IB_INVALID_PERMISSION,
  IB_UNSUPPORTED,
  IB_OVERFLOW,
  IB_MAX_MCAST_QPS_REACHED,
  IB_INVALID_QP_STATE,
  IB_INVALID_APM_STATE,
  IB_INVALID_PORT_STATE,
  IB_INVALID_STATE,
  IB_RESOURCE_BUSY,
  IB_INVALID_PKEY,
  IB_INVALID_LKEY,
  IB_INVALID_RKEY,
  IB_INVALID_MAX_WRS,
  IB_INVALID_MAX_SGE,
  IB_INVALID_CQ_SIZE,
  IB_INVALID_SRQ_SIZE,
  IB_INVALID_SERVICE_TYPE,
  IB_INVALID_GID,
  IB_INVALID_LID,
  IB_INVALID_GUID,
  IB_INVALID_GUID_MASK,
  IB_INVALID_CA_HANDLE,
  IB_INVALID_AV_HANDLE,
  IB_INVALID_CQ_HANDLE,
  IB_INVALID_QP_HANDLE,
  IB_INVALID_SRQ_HANDLE,
  IB_INVALID_PD_HANDLE,
  IB_INVALID_MR_HANDLE,
  IB_INVALID_FMR_HANDLE,
  IB_INVALID_MW_HANDLE,
  IB_INVALID_MCAST_HANDLE,
  IB_INVALID_CALLBACK,
  IB_INVALID_AL_HANDLE,
  IB_INVALID_HANDLE,
  IB_ERROR,
  IB_REMOTE_ERROR,
  IB_VERBS_PROCESSING_DONE,
  IB_INVALID_WR_TYPE,
  IB_QP_IN_TIMEWAIT,
  IB_EE_IN_TIMEWAIT,
  IB_INVALID_PORT,
  IB_NOT_DONE,
  IB_INVALID_INDEX,
  IB_NO_MATCH,
  IB_PENDING,
  IB_UNKNOWN_ERROR
} ib_api_status_t;

/* "IB_INVALID_QP_STATE" ... ("IB_UNKNOWN_ERROR" for a value out of range). */
const char* kbv_ci_status_str(ib_api_status_t s);

/* Opaque handles (kbv's objects; never dereference). */
typedef struct kbv_ci_ca_s* ib_ca_handle_t;
typedef struct kbv_ci_pd_s* ib_pd_handle_t;
typedef struct kbv_ci_av_s* ib_av_handle_t;
typedef struct kbv_ci_cq_s* ib_cq_handle_t;
typedef struct kbv_ci_qp_s* ib_qp_handle_t;
typedef struct kbv_ci_srq_s* ib_srq_handle_t;
typedef struct kbv_ci_mr_s* ib_mr_handle_t;
typedef struct kbv_ci_mw_s* ib_mw_handle_t;
typedef struct kbv_ci_mcast_s* ib_mcast_handle_t;

/* ---- ci_umv_buf_t ----------------------------------------------------- */
typedef struct _umv_buf {
  uint32_t command;
  uint32_t status;
  uint32_t input_size;
  uint32_t output_size;
  void* p_inout_buf;
} ci_umv_buf_t;

/* ---- addresses, GIDs ---------------------------------------------------- */
typedef union _ib_gid {
  uint8_t raw[16];
  struct _ib_gid_unicast {
    ib_net64_t prefix;
    ib_net64_t interface_id;
  } unicast;
  struct _ib_gid_multicast {
    uint8_t header[2];
    uint8_t raw_group_id[14];
  } multicast;
} ib_gid_t;

typedef struct _ib_grh {
  ib_net32_t ver_class_flow; /* version 4 bits, traffic class 8, flow label 20 */
  uint16_t resv1;
  uint8_t resv2;
  uint8_t hop_limit;
  ib_gid_t src_gid; /* a GID of the local port's table (all zero: its RoCEv2 GID) */
  ib_gid_t dest_gid;
} ib_grh_t;

/* ib_mtu_t: 1 = 256 ... 5 = 4096 (IBTA 9.6.1, kbv_mtu_t). */
typedef uint8_t ib_mtu_t;

typedef struct _ib_av_attr {
  uint8_t port_num;
  uint8_t sl;
  ib_net16_t dlid;     /* RoCE: ignored */
  boolean_t grh_valid; /* RoCE: must be TRUE (IB_INVALID_SETTING otherwise) */
  ib_grh_t grh;
  uint8_t static_rate;
  uint8_t path_bits;
  struct _av_conn {
    uint8_t path_mtu; /* ib_mtu_t */
    uint8_t local_ack_timeout;
    uint8_t seq_err_retry_cnt;
    uint8_t rnr_retry_cnt;
  } conn;
} ib_av_attr_t;

/* ---- CA and port attributes (query_ca) -------------------------------- */
typedef uint8_t ib_port_state_t; /* IB_LINK_* of IBTA PortState: 1 DOWN .. 4 ACTIVE */

typedef struct _ib_port_attr {
  ib_net64_t port_guid;
  uint8_t port_num;
  uint8_t link_state; /* 1 down, 2 init, 3 armed, 4 active (IBTA PortState) */
  uint8_t active_mtu; /* ib_mtu_t */
  uint8_t mtu;        /* ib_mtu_t: the largest */
  uint16_t num_pkeys; /* entries of p_pkey_table */
  uint16_t num_gids;  /* entries of p_gid_table */
  ib_net16_t lid;     /* RoCE: 0 */
  uint16_t reserved;
  ib_net16_t* p_pkey_table; /* point into the query_ca buffer */
  ib_gid_t* p_gid_table;
} ib_port_attr_t;

typedef struct _ib_ca_attr {
  ib_net64_t ca_guid;
  uint32_t vend_id;
  uint16_t dev_id;
  uint16_t revision;
  uint64_t fw_ver; /* major << 32 | minor << 16 | subminor */
  uint32_t size;   /* bytes of this attribute block (with its tables) */
  uint32_t max_pds;
  uint32_t max_qps;
  uint32_t max_wrs;
  uint32_t max_sges;
  uint32_t max_rd_sges;
  uint32_t max_cqs;
  uint32_t max_cqes;
  uint32_t max_srq;
  uint32_t max_srq_wrs;
  uint32_t max_srq_sges;
  uint32_t max_mrs;
  uint64_t init_region_size;
  uint32_t max_pkeys;
  uint32_t max_mcast_grps;
  uint32_t max_qps_per_mcast_grp;
  uint32_t max_qp_resp_res;
  uint32_t max_qp_init_depth;
  uint32_t local_ack_delay;
  boolean_t atomicity; /* TRUE: the HCA does atomics */
  boolean_t srq_supported;
  uint8_t num_ports;
  uint8_t reserved[7];
  ib_port_attr_t* p_port_attr; /* num_ports entries, inside this block */
} ib_ca_attr_t;

typedef uint32_t ib_ca_mod_t;
typedef struct _ib_port_attr_mod {
  uint32_t cap; /* IB_CA_MOD_* capability bits */
  uint16_t pkey_ctr;
  uint16_t qkey_ctr;
} ib_port_attr_mod_t;

/* ---- async events ------------------------------------------------------- */
typedef enum _ib_async_event_t {
  IB_AE_SQ_ERROR = 1,
  IB_AE_SQ_DRAINED,
  IB_AE_RQ_ERROR,
  IB_AE_CQ_ERROR,
  IB_AE_QP_FATAL,
  IB_AE_QP_COMM,
  IB_AE_QP_APM,
  IB_AE_LOCAL_FATAL,
  IB_AE_PKEY_TRAP,
  IB_AE_QKEY_TRAP,
  IB_AE_MKEY_TRAP,
  IB_AE_PORT_TRAP,
  IB_AE_SYSIMG_GUID_TRAP,
  IB_AE_BUF_OVERRUN,
  IB_AE_LINK_INTEGRITY,
  IB_AE_FLOW_CTRL_ERROR,
  IB_AE_BKEY_TRAP,
  IB_AE_QP_APM_ERROR,
  IB_AE_WQ_REQ_ERROR,
  IB_AE_WQ_ACCESS_ERROR,
  IB_AE_PORT_ACTIVE,
  IB_AE_PORT_DOWN,
  IB_AE_CLIENT_REREGISTER,
  IB_AE_SRQ_LIMIT_REACHED,
  IB_AE_SRQ_CATAS_ERROR,
  IB_AE_SRQ_QP_LAST_WQE_REACHED,
  IB_AE_UNKNOWN
} ib_async_event_t;

/* kbv delivers: IB_AE_PORT_ACTIVE / IB_AE_PORT_DOWN (context = ca_context,
 * port_number), IB_AE_LOCAL_FATAL (ca_context), IB_AE_CQ_ERROR (cq_context;
 * vendor_specific = the kbv status), IB_AE_QP_FATAL and IB_AE_WQ_ACCESS_ERROR
 * (qp_context), IB_AE_SRQ_LIMIT_REACHED (srq_context). */
typedef struct _ib_event_rec {
  void* context;
  ib_async_event_t type;
  uint64_t vendor_specific;
  uint8_t port_number;
} ib_event_rec_t;

/* ---- protection domains, SRQs, QPs -------------------------------------- */
typedef enum _ib_pd_type { IB_PDT_NORMAL, IB_PDT_ALIAS, IB_PDT_SQP, IB_PDT_UD } ib_pd_type_t;

typedef enum _ib_qp_type {
  IB_QPT_RELIABLE_CONN = 0,
  IB_QPT_UNRELIABLE_CONN = 1,
  IB_QPT_RELIABLE_DGRM = 2,
  IB_QPT_UNRELIABLE_DGRM,
  IB_QPT_QP0,
  IB_QPT_QP1,
  IB_QPT_RAW_IPV6,
  IB_QPT_RAW_ETHER,
  IB_QPT_MAD,
  IB_QPT_QP0_ALIAS,
  IB_QPT_QP1_ALIAS,
  IB_QPT_UNKNOWN
} ib_qp_type_t;

typedef uint32_t ib_qp_state_t;
#define IB_QPS_RESET 0x00000001
#define IB_QPS_INIT 0x00000002
#define IB_QPS_RTR 0x00000004
#define IB_QPS_RTS 0x00000008
#define IB_QPS_SQD 0x00000010
#define IB_QPS_SQERR 0x00000080
#define IB_QPS_ERROR 0x00000100

typedef uint32_t ib_access_t;
#define IB_AC_RDMA_READ 0x00000001
#define IB_AC_RDMA_WRITE 0x00000002
#define IB_AC_ATOMIC 0x00000004
#define IB_AC_LOCAL_WRITE 0x00000008
#define IB_AC_MW_BIND 0x00000010

typedef uint32_t ib_qp_opts_t; /* which optional members of rtr / rts are given */
#define IB_MOD_QP_ALTERNATE_AV 0x00000001
#define IB_MOD_QP_PKEY 0x00000002
#define IB_MOD_QP_APM_STATE 0x00000004
#define IB_MOD_QP_PRIMARY_AV 0x00000008
#define IB_MOD_QP_RNR_NAK_TIMEOUT 0x00000010
#define IB_MOD_QP_RESP_RES 0x00000020
#define IB_MOD_QP_INIT_DEPTH 0x00000040
#define IB_MOD_QP_PRIMARY_PORT 0x00000080
#define IB_MOD_QP_ACCESS_CTRL 0x00000100
#define IB_MOD_QP_QKEY 0x00000200
#define IB_MOD_QP_SQ_DEPTH 0x00000400
#define IB_MOD_QP_RQ_DEPTH 0x00000800
#define IB_MOD_QP_CURRENT_STATE 0x00001000
#define IB_MOD_QP_RETRY_CNT 0x00002000
#define IB_MOD_QP_LOCAL_ACK_TIMEOUT 0x00004000
#define IB_MOD_QP_RNR_RETRY_CNT 0x00008000

typedef enum _ib_apm_state { IB_APM_MIGRATED = 1, IB_APM_REARM, IB_APM_ARMED } ib_apm_state_t;

typedef struct _ib_srq_attr {
  uint32_t max_wr;
  uint32_t max_sge;
  uint32_t srq_limit;
} ib_srq_attr_t;
typedef uint32_t ib_srq_attr_mask_t;
#define IB_SRQ_MAX_WR 0x1
#define IB_SRQ_LIMIT 0x2

typedef struct _ib_qp_create {
  ib_qp_type_t qp_type;
  uint32_t sq_max_inline;
  uint32_t sq_depth;
  uint32_t rq_depth;
  uint32_t sq_sge;
  uint32_t rq_sge;
  ib_cq_handle_t h_sq_cq;
  ib_cq_handle_t h_rq_cq;
  ib_srq_handle_t h_srq;
  boolean_t sq_signaled;
} ib_qp_create_t;

typedef struct _ib_qp_attr {
  ib_pd_handle_t h_pd;
  ib_qp_type_t qp_type;
  ib_access_t access_ctrl;
  uint16_t pkey_index;
  uint32_t sq_max_inline;
  uint32_t sq_depth;
  uint32_t rq_depth;
  uint32_t sq_sge;
  uint32_t rq_sge;
  uint8_t init_depth;
  uint8_t resp_res;
  ib_cq_handle_t h_sq_cq;
  ib_cq_handle_t h_rq_cq;
  ib_srq_handle_t h_srq;
  boolean_t sq_signaled;
  ib_qp_state_t state;
  ib_net32_t num;
  ib_net32_t dest_num;
  ib_net32_t qkey;
  ib_net32_t sq_psn;
  ib_net32_t rq_psn;
  uint8_t primary_port;
  uint8_t alternate_port;
  ib_av_attr_t primary_av;
  ib_av_attr_t alternate_av;
  ib_apm_state_t apm_state;
} ib_qp_attr_t;

/* ib_qp_mod_t: the state-specific members of IBAL's union; kbv reads those
 * of req_state (init: RESET->INIT / INIT->INIT; rtr: INIT->RTR; rts:
 * RTR->RTS / RTS->RTS / SQERR->RTS), none for IB_QPS_ERROR / IB_QPS_RESET.
 * IB_QPS_SQD: IB_UNSUPPORTED (kbv_qp_modify has no SQ drain). Alternate
 * paths (APM) are not supported: IB_MOD_QP_ALTERNATE_AV / APM_STATE ->
 * IB_UNSUPPORTED. */
typedef struct _ib_qp_mod {
  ib_qp_state_t req_state;
  union _qp_state {
    struct _qp_init {
      uint8_t primary_port;
      ib_net32_t qkey;
      uint16_t pkey_index;
      ib_access_t access_ctrl;
    } init;
    struct _qp_rtr {
      ib_net32_t rq_psn;
      ib_net32_t dest_qp;
      ib_av_attr_t primary_av;
      uint8_t resp_res;
      uint8_t rnr_nak_timeout;
      ib_qp_opts_t opts;
      ib_av_attr_t alternate_av;
      ib_net32_t qkey;
      uint16_t pkey_index;
      ib_access_t access_ctrl;
      uint32_t sq_depth;
      uint32_t rq_depth;
    } rtr;
    struct _qp_rts {
      ib_net32_t sq_psn;
      uint8_t retry_cnt;
      uint8_t rnr_retry_cnt;
      uint8_t local_ack_timeout;
      uint8_t init_depth;
      ib_qp_opts_t opts;
      uint8_t rnr_nak_timeout;
      ib_qp_state_t current_state;
      ib_net32_t qkey;
      ib_access_t access_ctrl;
      uint8_t resp_res;
      ib_av_attr_t primary_av;
      ib_av_attr_t alternate_av;
      uint32_t sq_depth;
      uint32_t rq_depth;
      ib_apm_state_t apm_state;
      uint8_t primary_port;
      uint16_t pkey_index;
    } rts;
    struct _qp_sqd {
      boolean_t sqd_event;
    } sqd;
  } state;
} ib_qp_mod_t;

/* ---- memory ---------------------------------------------------------------- */
typedef struct _ib_mr_create {
  void* vaddr;
  uint64_t length;
  ib_access_t access_ctrl;
} ib_mr_create_t;

typedef struct _ib_phys_range {
  uint64_t base_addr;
  uint64_t size;
} ib_phys_range_t;

typedef struct _ib_phys_create {
  uint64_t length;
  uint32_t num_ranges;
  ib_phys_range_t* range_array;
  uint32_t buf_offset;
  uint32_t hca_page_size;
  ib_access_t access_ctrl;
} ib_phys_create_t;

typedef struct _ib_mr_attr {
  ib_pd_handle_t h_pd;
  uint64_t local_lb;
  uint64_t local_ub;
  uint64_t remote_lb;
  uint64_t remote_ub;
  ib_access_t access_ctrl;
  net32_t lkey;
  net32_t rkey;
} ib_mr_attr_t;

typedef uint32_t ib_mr_mod_t;
#define IB_MR_MOD_ADDR 0x00000001
#define IB_MR_MOD_PD 0x00000002
#define IB_MR_MOD_ACCESS 0x00000004

/* ---- work requests and completions ------------------------------------------ */
typedef struct _ib_local_ds {
  uint64_t vaddr;
  uint32_t length;
  uint32_t lkey; /* net32_t, as register_mr returned it */
} ib_local_ds_t;

typedef enum _ib_wr_type_t {
  WR_SEND,
  WR_RDMA_WRITE,
  WR_RDMA_READ,
  WR_COMPARE_SWAP,
  WR_FETCH_ADD,
  WR_LSO,
  WR_NOP,
  WR_LOCAL_INV,
  WR_FAST_REG_MR,
  WR_UNKNOWN
} ib_wr_type_t;

typedef uint32_t ib_send_opt_t;
#define IB_SEND_OPT_IMMEDIATE 0x00000001
#define IB_SEND_OPT_FENCE 0x00000002
#define IB_SEND_OPT_SIGNALED 0x00000004
#define IB_SEND_OPT_SOLICITED 0x00000008
#define IB_SEND_OPT_INLINE 0x00000010
#define IB_SEND_OPT_LOCAL 0x00000020

typedef struct _ib_send_wr {
  uint64_t wr_id;
  struct _ib_send_wr* p_next;
  ib_local_ds_t* ds_array;
  uint32_t num_ds;
  ib_wr_type_t wr_type; /* WR_SEND .. WR_FETCH_ADD (others: IB_INVALID_WR_TYPE) */
  ib_send_opt_t send_opt;
  ib_net32_t immediate_data; /* with IB_SEND_OPT_IMMEDIATE (SEND, RDMA_WRITE) */
  union {
    struct _send_ud {
      ib_av_handle_t h_av;
      ib_net32_t remote_qp;
      ib_net32_t remote_qkey;
      uint16_t pkey_index;
    } ud;
    struct _send_remote_ops {
      uint64_t vaddr;
      net32_t rkey;
      ib_net64_t atomic1; /* compare (CS) / add (FA) */
      ib_net64_t atomic2; /* swap (CS) */
    } remote_ops;
  } dgrm_or_ops;
} ib_send_wr_t;

typedef struct _ib_recv_wr {
  struct _ib_recv_wr* p_next;
  uint64_t wr_id;
  uint32_t num_ds;
  ib_local_ds_t* ds_array;
} ib_recv_wr_t;

typedef enum _ib_wc_status_t {
  IB_WCS_SUCCESS,
  IB_WCS_LOCAL_LEN_ERR,
  IB_WCS_LOCAL_OP_ERR,
  IB_WCS_LOCAL_PROTECTION_ERR,
  IB_WCS_WR_FLUSHED_ERR,
  IB_WCS_MEM_WINDOW_BIND_ERR,
  IB_WCS_REM_ACCESS_ERR,
  IB_WCS_REM_OP_ERR,
  IB_WCS_RNR_RETRY_ERR,
  IB_WCS_TIMEOUT_RETRY_ERR,
  IB_WCS_REM_INVALID_REQ_ERR,
  IB_WCS_BAD_RESP_ERR,
  IB_WCS_LOCAL_ACCESS_ERR,
  IB_WCS_GENERAL_ERR,
  IB_WCS_REM_ABORT_ERR
} ib_wc_status_t;

typedef enum _ib_wc_type_t {
  IB_WC_SEND,
  IB_WC_RDMA_WRITE,
  IB_WC_RDMA_READ,
  IB_WC_COMPARE_SWAP,
  IB_WC_FETCH_ADD,
  IB_WC_MW_BIND,
  IB_WC_NOP,
  IB_WC_UNKNOWN1,
  IB_WC_RECV = (1 << 7),
  IB_WC_RECV_RDMA_WRITE,
  IB_WC_LSO,
  IB_WC_LOCAL_INV,
  IB_WC_FAST_REG_MR,
  IB_WC_UNKNOWN2
} ib_wc_type_t;

typedef uint32_t ib_recv_opt_t;
#define IB_RECV_OPT_IMMEDIATE 0x00000001
#define IB_RECV_OPT_FORWARD 0x00000002
#define IB_RECV_OPT_GRH_VALID 0x00000004
#define IB_RECV_OPT_INVALIDATE 0x00000008

typedef struct _ib_wc {
  struct _ib_wc* p_next;
  uint64_t wr_id;
  ib_wc_type_t wc_type;
  uint32_t length;
  uint64_t vendor_specific; /* the kbv status (kbv_status_t) of an error completion */
  ib_wc_status_t status;
  union _wc_recv {
    struct _wc_conn {
      ib_recv_opt_t recv_opt;
      ib_net32_t immediate_data;
    } conn;
    struct _wc_ud {
      ib_recv_opt_t recv_opt;
      ib_net32_t immediate_data;
      ib_net32_t remote_qp;
      uint16_t pkey_index;
      ib_net16_t remote_lid;
      uint8_t remote_sl;
      uint8_t path_bits;
    } ud;
  } recv;
} ib_wc_t;

/* ---- MAD and vendor calls ------------------------------------------------------ */
typedef struct _ib_mad {
  uint8_t base_ver;
  uint8_t mgmt_class;
  uint8_t class_ver;
  uint8_t method;
  ib_net16_t status;
  ib_net16_t class_spec;
  ib_net64_t trans_id;
  ib_net16_t attr_id;
  ib_net16_t resv;
  ib_net32_t attr_mod;
  uint8_t data[232];
} ib_mad_t;

typedef struct _ib_ci_op {
  uint32_t command;
  uint32_t status;
  uint32_t buf_size;
  uint32_t num_bytes_ret;
  void* p_buf;
} ib_ci_op_t;

typedef struct _ib_bind_wr {
  uint64_t wr_id;
  ib_send_opt_t send_opt;
  ib_mr_handle_t h_mr;
  ib_access_t access_ctrl;
  net32_t current_rkey;
  ib_local_ds_t local_ds;
} ib_bind_wr_t;

/* ---- the function table (ib_ci.h ci_* typedefs) ----------------------------------- */
typedef void (*ci_completion_cb_t)(void* cq_context);
typedef void (*ci_async_event_cb_t)(const ib_event_rec_t* const p_event_record);

/* Errors: IB_INVALID_PARAMETER (a callback NULL, guid 0, ph_ca NULL),
 * IB_RESOURCE_BUSY (a CA is open on that HCA already), IB_NOT_FOUND (no HCA
 * with that GUID), IB_INSUFFICIENT_RESOURCES. */
typedef ib_api_status_t (*ci_open_ca)(const ib_net64_t ca_guid,
                                      const ci_completion_cb_t pfn_completion_cb,
                                      const ci_async_event_cb_t pfn_async_event_cb,
                                      const void* const ca_context, ib_ca_handle_t* ph_ca);
/* IB_UNSUPPORTED: kbv runs in the process; there is no kernel CA to extend. */
typedef ib_api_status_t (*ci_um_open_ca_t)(const ib_ca_handle_t h_ca, ci_umv_buf_t* const p_umv_buf,
                                           ib_ca_handle_t* const ph_um_ca);
/* *p_size < the attributes' size (or p_ca_attr NULL): *p_size = the size,
 * IB_INSUFFICIENT_MEMORY. */
typedef ib_api_status_t (*ci_query_ca)(const ib_ca_handle_t h_ca, ib_ca_attr_t* p_ca_attr,
                                       uint32_t* p_size, ci_umv_buf_t* p_umv_buf);
/* IB_UNSUPPORTED for any capability change (a RoCE port's capability bits
 * and counters are the firmware's); IB_INVALID_PORT for a bad port. */
typedef ib_api_status_t (*ci_modify_ca)(const ib_ca_handle_t h_ca, const uint8_t port_num,
                                        const ib_ca_mod_t ca_mod,
                                        const ib_port_attr_mod_t* p_port_attr_mod);
/* IB_RESOURCE_BUSY while objects (PD, CQ ...) of the CA exist. */
typedef ib_api_status_t (*ci_close_ca)(ib_ca_handle_t h_ca);
typedef void (*ci_um_close_ca_t)(ib_ca_handle_t h_ca, ib_ca_handle_t h_um_ca);
/* IB_UNSUPPORTED (no vendor commands). */
typedef ib_api_status_t (*ci_vendor_call)(const ib_ca_handle_t h_ca,
                                          const void* const* const handle_array,
                                          uint32_t num_handles, ib_ci_op_t* const p_ci_op,
                                          ci_umv_buf_t* p_umv_buf);
typedef ib_api_status_t (*ci_allocate_pd)(const ib_ca_handle_t h_ca, const ib_pd_type_t type,
                                          ib_pd_handle_t* ph_pd, ci_umv_buf_t* p_umv_buf);
typedef ib_api_status_t (*ci_deallocate_pd)(ib_pd_handle_t h_pd);
typedef ib_api_status_t (*ci_create_av)(const ib_pd_handle_t h_pd, const ib_av_attr_t* p_av_attr,
                                        ib_av_handle_t* ph_av, ci_umv_buf_t* p_umv_buf);
typedef ib_api_status_t (*ci_query_av)(const ib_av_handle_t h_av, ib_av_attr_t* p_av_attr,
                                       ib_pd_handle_t* ph_pd, ci_umv_buf_t* p_umv_buf);
typedef ib_api_status_t (*ci_modify_av)(const ib_av_handle_t h_av, const ib_av_attr_t* p_av_attr,
                                        ci_umv_buf_t* p_umv_buf);
typedef ib_api_status_t (*ci_destroy_av)(const ib_av_handle_t h_av);
typedef ib_api_status_t (*ci_create_srq)(const ib_pd_handle_t h_pd, const void* srq_context,
                                         const ib_srq_attr_t* const p_srq_attr,
                                         ib_srq_handle_t* ph_srq, ci_umv_buf_t* p_umv_buf);
/* IB_SRQ_LIMIT arms the limit event; IB_SRQ_MAX_WR (resize): IB_UNSUPPORTED. */
typedef ib_api_status_t (*ci_modify_srq)(const ib_srq_handle_t h_srq,
                                         const ib_srq_attr_t* const p_srq_attr,
                                         const ib_srq_attr_mask_t srq_attr_mask,
                                         ci_umv_buf_t* p_umv_buf);
typedef ib_api_status_t (*ci_query_srq)(const ib_srq_handle_t h_srq,
                                        ib_srq_attr_t* const p_srq_attr, ci_umv_buf_t* p_umv_buf);
typedef ib_api_status_t (*ci_destroy_srq)(const ib_srq_handle_t h_srq);
/* RC, UC, UD; others IB_INVALID_SETTING. p_qp_attr (may be NULL) is filled. */
typedef ib_api_status_t (*ci_create_qp)(const ib_pd_handle_t h_pd, const void* qp_context,
                                        const ib_qp_create_t* p_create_attr,
                                        ib_qp_attr_t* p_qp_attr, ib_qp_handle_t* ph_qp,
                                        ci_umv_buf_t* p_umv_buf);
/* IB_UNSUPPORTED: kbv has no QP0/QP1 (RoCE has no SMA; no GSI QP). */
typedef ib_api_status_t (*ci_create_spl_qp)(const ib_pd_handle_t h_pd, const uint8_t port_num,
                                            const void* qp_context,
                                            const ib_qp_create_t* p_create_attr,
                                            ib_qp_attr_t* p_qp_attr, ib_qp_handle_t* ph_qp);
typedef ib_api_status_t (*ci_modify_qp)(const ib_qp_handle_t h_qp, const ib_qp_mod_t* p_modify_attr,
                                        ib_qp_attr_t* p_qp_attr, ci_umv_buf_t* p_umv_buf);
typedef ib_api_status_t (*ci_query_qp)(const ib_qp_handle_t h_qp, ib_qp_attr_t* const p_qp_attr,
                                       ci_umv_buf_t* p_umv_buf);
/* timewait is not used (kbv keeps no time-wait list). */
typedef ib_api_status_t (*ci_destroy_qp)(const ib_qp_handle_t h_qp, const uint64_t timewait);
/* *p_size in: at least this many entries; out: the entries made. */
typedef ib_api_status_t (*ci_create_cq)(const ib_ca_handle_t h_ca, const void* cq_context,
                                        uint32_t* const p_size, ib_cq_handle_t* ph_cq,
                                        ci_umv_buf_t* p_umv_buf);
/* The CQ must be drained (kbv_cq_resize): IB_RESOURCE_BUSY otherwise. */
typedef ib_api_status_t (*ci_resize_cq)(const ib_cq_handle_t h_cq, uint32_t* const p_size,
                                        ci_umv_buf_t* p_umv_buf);
typedef ib_api_status_t (*ci_query_cq)(const ib_cq_handle_t h_cq, uint32_t* p_size,
                                       ci_umv_buf_t* p_umv_buf);
typedef ib_api_status_t (*ci_destroy_cq)(const ib_cq_handle_t h_cq);
/* Keys come back in network order (net32_t). um_call is ignored. */
typedef ib_api_status_t (*ci_register_mr)(const ib_pd_handle_t h_pd,
                                          const ib_mr_create_t* const p_mr_create,
                                          net32_t* const p_lkey, net32_t* const p_rkey,
                                          ib_mr_handle_t* const ph_mr, boolean_t um_call);
/* IB_UNSUPPORTED: a user-mode process has no physical addresses to give. */
typedef ib_api_status_t (*ci_register_pmr)(const ib_pd_handle_t h_pd,
                                           const ib_phys_create_t* const p_pmr_create,
                                           uint64_t* const p_vaddr, net32_t* const p_lkey,
                                           net32_t* const p_rkey, ib_mr_handle_t* const ph_mr,
                                           boolean_t um_call);
typedef ib_api_status_t (*ci_query_mr)(const ib_mr_handle_t h_mr, ib_mr_attr_t* const p_mr_query);
/* Re-registers (new keys) with the region, PD and access the mask names. */
typedef ib_api_status_t (*ci_modify_mr)(const ib_mr_handle_t h_mr, const ib_mr_mod_t mr_modify_mask,
                                        const ib_mr_create_t* const p_mr_create,
                                        net32_t* const p_lkey, net32_t* const p_rkey,
                                        const ib_pd_handle_t h_pd, boolean_t um_call);
/* IB_UNSUPPORTED (as register_pmr). */
typedef ib_api_status_t (*ci_modify_pmr)(const ib_mr_handle_t h_mr,
                                         const ib_mr_mod_t mr_modify_mask,
                                         const ib_phys_create_t* const p_pmr_create,
                                         uint64_t* const p_vaddr, net32_t* const p_lkey,
                                         net32_t* const p_rkey, const ib_pd_handle_t h_pd,
                                         boolean_t um_call);
/* A second region over h_mr's memory (own keys) in h_pd; *p_vaddr in: the
 * address wanted (must be h_mr's: kbv maps virtual addresses 1:1, else
 * IB_INVALID_PARAMETER), out: the address. */
typedef ib_api_status_t (*ci_register_smr)(const ib_mr_handle_t h_mr, const ib_pd_handle_t h_pd,
                                           const ib_access_t access_ctrl, uint64_t* const p_vaddr,
                                           net32_t* const p_lkey, net32_t* const p_rkey,
                                           ib_mr_handle_t* const ph_mr, boolean_t um_call);
typedef ib_api_status_t (*ci_deregister_mr)(const ib_mr_handle_t h_mr);
/* Memory windows: IB_UNSUPPORTED (kbv has no MW verbs). */
typedef ib_api_status_t (*ci_create_mw)(const ib_pd_handle_t h_pd, net32_t* const p_rkey,
                                        ib_mw_handle_t* ph_mw, ci_umv_buf_t* p_umv_buf);
typedef ib_api_status_t (*ci_query_mw)(const ib_mw_handle_t h_mw, ib_pd_handle_t* ph_pd,
                                       net32_t* const p_rkey, ci_umv_buf_t* p_umv_buf);
typedef ib_api_status_t (*ci_bind_mw)(const ib_mw_handle_t h_mw, const ib_qp_handle_t h_qp,
                                      ib_bind_wr_t* const p_mw_bind, net32_t* const p_rkey);
typedef ib_api_status_t (*ci_destroy_mw)(const ib_mw_handle_t h_mw);
/* Posts the linked list in order. On an error *pp_failed (may be NULL) is
 * the first WR not posted (those before it were); IB_INVALID_WR_TYPE,
 * IB_INVALID_MAX_SGE, IB_INVALID_QP_STATE, IB_INSUFFICIENT_RESOURCES (queue
 * full), IB_INVALID_PARAMETER. */
typedef ib_api_status_t (*ci_post_send)(const ib_qp_handle_t h_qp, ib_send_wr_t* const p_send_wr,
                                        ib_send_wr_t** pp_failed);
typedef ib_api_status_t (*ci_post_recv)(const ib_qp_handle_t h_qp, ib_recv_wr_t* const p_recv_wr,
                                        ib_recv_wr_t** pp_failed);
typedef ib_api_status_t (*ci_post_srq_recv)(const ib_srq_handle_t h_srq,
                                            ib_recv_wr_t* const p_recv_wr,
                                            ib_recv_wr_t** pp_failed);
/* The completions waiting (read ahead into the CQ's buffer, which poll_cq
 * drains first). */
typedef ib_api_status_t (*ci_peek_cq)(const ib_cq_handle_t h_cq, uint32_t* const p_n_cqes);
/* Fills entries taken from *pp_free_wclist (in order), links them into
 * *pp_done_wclist (in completion order, last p_next NULL) and leaves the
 * unused rest in *pp_free_wclist (NULL when all were used: more may wait).
 * IB_SUCCESS with one or more, IB_NOT_FOUND with none (*pp_done_wclist
 * NULL), IB_INVALID_PARAMETER (a list pointer NULL or an empty free list). */
typedef ib_api_status_t (*ci_poll_cq)(const ib_cq_handle_t h_cq, ib_wc_t** const pp_free_wclist,
                                      ib_wc_t** const pp_done_wclist);
/* One pfn_completion_cb(cq_context) for the next (solicited) completion. */
typedef ib_api_status_t (*ci_enable_cq_notify)(const ib_cq_handle_t h_cq,
                                               const boolean_t solicited);
/* IB_UNSUPPORTED (kbv_cq_arm has no completion count). */
typedef ib_api_status_t (*ci_enable_ncomp_cq_notify)(const ib_cq_handle_t h_cq,
                                                     const uint32_t n_cqes);
/* UD QPs; mcast_lid ignored on RoCE. */
typedef ib_api_status_t (*ci_attach_mcast)(const ib_qp_handle_t h_qp, const ib_gid_t* p_mcast_gid,
                                           const ib_net16_t mcast_lid, ib_mcast_handle_t* ph_mcast,
                                           ci_umv_buf_t* p_umv_buf);
typedef ib_api_status_t (*ci_detach_mcast)(const ib_mcast_handle_t h_mcast);
/* IB_UNSUPPORTED: RoCE has no subnet management agent to answer MADs. */
typedef ib_api_status_t (*ci_local_mad)(const ib_ca_handle_t h_ca, const uint8_t port_num,
                                        const ib_mad_t* p_mad_in, ib_mad_t* p_mad_out);

#define MAX_LIB_NAME 32
#define VERBS_MAJOR_VER (0x0001)
#define VERBS_MINOR_VER (0x0001)
#define VERBS_VERSION (((VERBS_MAJOR_VER) << 16) | (VERBS_MINOR_VER))

typedef struct _ci_interface {
  net64_t guid;     /* the HCA's node GUID (network order) */
  void* p_hca_dev;  /* kbv: the interface's device (opaque) */
  uint32_t vend_id; /* PCI ids */
  uint16_t dev_id;
  uint16_t dev_revision;
  char libname[MAX_LIB_NAME]; /* empty: no separate user-mode vendor library */
  uint32_t version;           /* VERBS_VERSION */

  ci_open_ca open_ca;
  ci_um_open_ca_t um_open_ca;
  ci_query_ca query_ca;
  ci_modify_ca modify_ca;
  ci_close_ca close_ca;
  ci_um_close_ca_t um_close_ca;
  ci_vendor_call vendor_call;

  ci_allocate_pd allocate_pd;
  ci_deallocate_pd deallocate_pd;

  ci_create_av create_av;
  ci_query_av query_av;
  ci_modify_av modify_av;
  ci_destroy_av destroy_av;

  ci_create_srq create_srq;
  ci_modify_srq modify_srq;
  ci_query_srq query_srq;
  ci_destroy_srq destroy_srq;

  ci_create_qp create_qp;
  ci_create_spl_qp create_spl_qp;
  ci_modify_qp modify_qp;
  ci_query_qp query_qp;
  ci_destroy_qp destroy_qp;

  ci_create_cq create_cq;
  ci_resize_cq resize_cq;
  ci_query_cq query_cq;
  ci_destroy_cq destroy_cq;

  ci_register_mr register_mr;
  ci_register_pmr register_pmr;
  ci_query_mr query_mr;
  ci_modify_mr modify_mr;
  ci_modify_pmr modify_pmr;
  ci_register_smr register_smr;
  ci_deregister_mr deregister_mr;

  ci_create_mw create_mw;
  ci_query_mw query_mw;
  ci_bind_mw bind_mw;
  ci_destroy_mw destroy_mw;

  ci_post_send post_send;
  ci_post_recv post_recv;
  ci_post_srq_recv post_srq_recv;

  ci_peek_cq peek_cq;
  ci_poll_cq poll_cq;
  ci_enable_cq_notify enable_cq_notify;
  ci_enable_ncomp_cq_notify enable_ncomp_cq_notify;

  ci_attach_mcast attach_mcast;
  ci_detach_mcast detach_mcast;

  ci_local_mad local_mad;
} ci_interface_t;

/* Open the HCA named by uri_or_guid (a kbv URI: "sim:<name>", "vfio:<bdf>",
 * "guid:0x<hex>") and fill *p_ci. The interface holds the device until
 * kbv_ci_release_interface. Errors: IB_INVALID_PARAMETER (an argument
 * NULL, a malformed URI), IB_NOT_FOUND, IB_RESOURCE_BUSY (the device is
 * open in this process through something else), IB_INSUFFICIENT_RESOURCES,
 * the device open's status mapped (docs/CI.md). */
ib_api_status_t kbv_ci_get_interface(const char* uri_or_guid, ci_interface_t* p_ci);
/* Drop the interface's reference (the device closes when no CA is open on
 * it either). IB_INVALID_PARAMETER (NULL), IB_NOT_FOUND (not held). */
ib_api_status_t kbv_ci_release_interface(const ci_interface_t* p_ci);

#ifdef __cplusplus
}
#endif

#endif /* KBV_COMPAT_IB_CI_H */
