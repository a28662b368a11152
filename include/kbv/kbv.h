/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kbv — the C API applications link against (libkbv.so, C ABI, symbols
 * versioned by src/libkbv.map). docs/DESIGN.md "The async control path" and
 * "The fast path".
 *
 * ---- Handles -------------------------------------------------------------
 * Every object (device, PD, MR, CQ, QP, SRQ, AH) is a 64-bit
 * generation-checked handle, never a pointer: generation (high 32 bits) |
 * slot + 1 (low 32 bits). 0 is never valid. A handle that was closed, never
 * created, or belongs to another kind of object yields KBV_ERR_INVALID_HANDLE
 * from every call, never a crash, even when its slot was reused. The handle
 * is also the `object` field of the events about the object and the key of
 * kbv_eq_cancel_object / kbv_cancel_object.
 *
 * ---- Control calls: event queues replace IRPs (kbv/eq.h) -----------------
 * Every control call takes (kbv_eq_t eq, uint64_t user_data):
 *   eq != KBV_EQ_NONE: the call validates its arguments (an invalid argument
 *     returns an error at once and produces no event), then returns
 *     KBV_PENDING; exactly one KBV_EVENT_REQUEST event with that user_data
 *     later appears on eq: {status (firmware status byte and syndrome in
 *     fw_status / syndrome when the device produced it), object = the object
 *     created or acted on, info = call-specific (documented per call)}.
 *     An output handle (*out) is written before the call returns, so it is
 *     valid before its event can be read; it becomes usable when the event
 *     says KBV_SUCCESS (until then calls on it return KBV_ERR_INVALID_STATE
 *     / KBV_ERR_DEVICE_NOT_READY); when the event carries an error the
 *     handle is already invalid. Output structs (query results) must stay
 *     valid until the event; they are written before it is posted.
 *   eq == KBV_EQ_NONE: synchronous. The call drives progress itself and
 *     returns the request's status (KBV_SUCCESS or the error).
 * user_data must be unique among the requests in flight on eq (else
 * KBV_ERR_ALREADY_EXISTS); eq must have room for the completion (else
 * KBV_ERR_QUEUE_FULL). Many requests may be in flight at once (up to 31
 * firmware commands per device are outstanding; more wait in software).
 * Any call may return KBV_ERR_NO_MEMORY when the library cannot allocate
 * host memory (no exception ever leaves kbv); the call then created
 * nothing and may be retried.
 *
 * Cancellation: kbv_eq_cancel(eq, user_data) cancels one request,
 * kbv_eq_cancel_object(eq, object) / kbv_cancel_object(object) every request
 * about an object; a cancelled request's one event has status
 * KBV_ERR_CANCELLED. A firmware command cannot be taken back: if a cancelled
 * create still succeeds in firmware, kbv destroys the object it made.
 *
 * Close/destroy/dealloc/dereg: never fail on a valid handle. The handle
 * stops resolving at once (later calls: KBV_ERR_INVALID_HANDLE), the
 * object's requests in flight (completion notification, modify, query...)
 * complete with KBV_ERR_CANCELLED first, and the close request completes
 * (KBV_SUCCESS, object = the closed handle) when the last reference is gone
 * and the firmware object is destroyed. Children hold references on their
 * parents (a device on its PDs/CQs/SRQs, a PD on its MRs/QPs/SRQs/AHs, a CQ
 * on its QPs, an SRQ on its QPs): closing a parent first is allowed and
 * completes when its children are closed. A synchronous close whose object
 * still has children returns KBV_PENDING (it finishes, with no event, when
 * the last child closes).
 *
 * Asynchronous events (unsolicited, user_data 0) go to the "event EQ" named
 * at creation (the attr's event_eq; when 0, the eq the create call was
 * submitted on; none for a synchronous create without event_eq):
 *   device: KBV_EVENT_PORT_STATE (info: KBV_PORT_EVENT_PORT / _STATE),
 *           KBV_EVENT_DEVICE_FATAL (status KBV_ERR_DEVICE_FATAL or
 *           KBV_ERR_DEVICE_REMOVED);
 *   CQ:     KBV_EVENT_CQ_ERROR (status KBV_ERR_OVERFLOW for an overrun,
 *           KBV_ERR_LOCAL_ACCESS for an access error; syndrome = the PRM
 *           cq error syndrome);
 *   QP:     KBV_EVENT_QP_FATAL, KBV_EVENT_QP_ACCESS_ERROR;
 *   SRQ:    KBV_EVENT_SRQ_LIMIT (after kbv_srq_arm).
 * kbv_cq_arm requests one KBV_EVENT_COMP_NOTIFY event (a request: it carries
 * the arm's user_data and goes to the eq given to kbv_cq_arm).
 *
 * Progress: kbv starts no thread by default. kbv_eq_poll on any queue drives
 * every open device (firmware EQs: command completions, page requests,
 * port events, completion notifications); so does kbv_device_progress().
 * kbv_device_start_progress_thread() (or KBV_OPEN_PROGRESS_THREAD) runs a
 * thread that does it; then an application may sleep in poll/epoll on
 * kbv_eq_get_fd().
 *
 * ---- Fast path ------------------------------------------------------------
 * kbv_post_send / kbv_post_recv / kbv_post_srq_recv take arrays of work
 * requests, kbv_poll_cq fills an array of work completions; no locks and no
 * allocation. Threading: one thread at a time per QP, per SRQ and per CQ,
 * and a QP's posts and the polls of its CQs from the same thread (the CQ
 * poller frees the QP's send ring). Posting to / polling a handle that was
 * closed returns KBV_ERR_INVALID_HANDLE; closing a QP or CQ while another
 * thread posts to / polls it is a programming error.
 *
 * ---- Devices ---------------------------------------------------------------
 * URIs (docs/DESIGN.md "Device addressing"):
 *   "vfio:DDDD:BB:DD.F"  a ConnectX function bound to vfio-pci;
 *   "sim:<name>"         a model HCA (src/sim) in this process: opened if a
 *                        model named <name> exists, otherwise created (and
 *                        removed when the last device opened on it closes).
 *                        Its port is 127.0.0.N:4791 (RoCEv2 over UDP).
 *   "guid:0x<hex>"       the HCA whose node GUID (kbv_device_attr.node_guid,
 *                        1..16 hex digits, not 0) it is — the seeds' way of
 *                        naming a CA (docs/NTSTATUS.md source 004). Resolved
 *                        before kbv_device_open returns, synchronously even
 *                        when eq is given (the open itself then completes on
 *                        eq): a device open in this process with that GUID
 *                        -> KBV_ERR_BUSY (as its URI); else each device of
 *                        kbv_get_device_list not open here is brought up,
 *                        queried and closed until one matches (each probe
 *                        is a bring-up: up to timeout_ns each); none ->
 *                        KBV_ERR_NOT_FOUND. The opened device's
 *                        kbv_device_attr.uri is its own URI ("sim:a").
 * kbv_get_device_list lists the vfio-usable 15b3 functions, then the sim
 * devices named by the environment variable KBV_SIM_DEVICES (comma-separated
 * names: "a,b" -> "sim:a", "sim:b"); when that variable is unset and no
 * vfio device is present, "sim:0" is listed so a machine without an HCA has
 * one device. KBV_SIM_DEVICES="" lists no sim device.
 *
 * Threading (control path): every kbv_* call may be made from any thread;
 * per-device state is protected by one lock (the driver is driven by one
 * thread at a time).
 *
 * Sources: IBTA Vol 1 ch. 10/11 (verbs semantics), rdma-core
 * infiniband/verbs.h (attribute shapes), kernel mlx5_ifc.h / PRM (limits,
 * firmware statuses), docs/NTSTATUS.md sources 000/001 (IRP-free async verbs).
 */
#ifndef KBV_KBV_H
#define KBV_KBV_H

#include <kbv/eq.h>
#include <kbv/status.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* API version: major << 16 | minor. Additive changes bump minor. */
#define KBV_API_VERSION ((0u << 16) | 1u)
uint32_t kbv_api_version(void);

typedef uint64_t kbv_device_t;
typedef uint64_t kbv_pd_t;
typedef uint64_t kbv_mr_t;
typedef uint64_t kbv_cq_t;
typedef uint64_t kbv_qp_t;
typedef uint64_t kbv_srq_t;
typedef uint64_t kbv_ah_t;
#define KBV_HANDLE_NONE ((uint64_t)0)

#define KBV_URI_MAX 64
#define KBV_GID_TABLE_MAX 16

/* ===== devices ============================================================ */

typedef struct kbv_device_desc {
  char uri[KBV_URI_MAX]; /* NUL-terminated: "vfio:0000:3b:00.0", "sim:0" */
  uint16_t vendor_id;    /* PCI ids (sim: the model's, 0x15b3 / ConnectX id) */
  uint16_t device_id;
  uint32_t is_sim;   /* 1 for "sim:" devices */
  int32_t numa_node; /* -1 unknown */
  uint32_t reserved;
} kbv_device_desc_t;

/* Fill up to max descriptors; *count = the number of devices present (may
 * exceed max: call again with a larger array). Errors:
 * KBV_ERR_INVALID_ARGUMENT (count NULL; list NULL with max > 0). A sysfs
 * that cannot be read lists no vfio devices (not an error). */
kbv_status_t kbv_get_device_list(kbv_device_desc_t* list, uint32_t max, uint32_t* count);

/* kbv_device_open_attr.flags */
#define KBV_OPEN_PROGRESS_THREAD (1u << 0) /* start the progress thread at open */

typedef struct kbv_device_open_attr {
  uint32_t flags; /* KBV_OPEN_* */
  uint32_t reserved;
  kbv_eq_t event_eq;   /* device async events (port state, fatal); 0: the open's eq */
  uint64_t timeout_ns; /* bring-up bound; 0: 120 s (kernel FW_INIT_TIMEOUT) */
} kbv_device_open_attr_t;

/* Open a device by URI and bring it up (PRM bring-up: enable HCA, pages,
 * ISSI, caps, INIT_HCA, UAR, EQs). attr may be NULL (defaults). Event: info
 * 0. Errors: KBV_ERR_INVALID_ARGUMENT (uri/out NULL, unknown scheme, bad
 * BDF, name too long, malformed or zero GUID), KBV_ERR_NOT_FOUND (no such
 * vfio function; no device with that GUID),
 * KBV_ERR_NOT_SUPPORTED ("sim:" and the model library libkbv-sim.so.0 cannot
 * be loaded: README "Using the library"), KBV_ERR_BUSY (already open),
 * platform errors (KBV_ERR_IO ...), bring-up failures (firmware statuses,
 * KBV_ERR_TIMEOUT, KBV_ERR_DEVICE_FATAL). */
kbv_status_t kbv_device_open(const char* uri, const kbv_device_open_attr_t* attr, kbv_eq_t eq,
                             uint64_t user_data, kbv_device_t* out);
/* Close (see "Close" above): tears the HCA down once its children are closed.
 * Stops the progress thread. */
kbv_status_t kbv_device_close(kbv_device_t dev, kbv_eq_t eq, uint64_t user_data);

/* Drive the device once (firmware EQs, command completions, health check).
 * Returns the amount of work done (>= 0) or a negative status
 * (KBV_ERR_INVALID_HANDLE). Never blocks for long: if another thread is
 * driving the device it returns 0. */
int kbv_device_progress(kbv_device_t dev);
/* Start / stop a thread that drives the device. It polls every 50 us while
 * it finds work and for 2 ms after the last work or kick (kbv_cq_arm kicks
 * it), then backs off, doubling its pause up to 1 ms: an event arriving on
 * an idle device is seen within 1 ms. KBV_ERR_ALREADY_EXISTS /
 * KBV_ERR_NOT_FOUND when already running / not running. */
kbv_status_t kbv_device_start_progress_thread(kbv_device_t dev);
kbv_status_t kbv_device_stop_progress_thread(kbv_device_t dev);
/* The device's interrupt eventfd (async EQ MSI-X), readable when the device
 * has something for kbv_device_progress. KBV_ERR_NOT_SUPPORTED when the
 * platform has no interrupts. Owned by the device; do not close it. */
kbv_status_t kbv_device_get_fd(kbv_device_t dev, int* fd);

/* The HCA's free-running clock: init segment internal_timer_h/l (0x1000 /
 * 0x1004; device.h mlx5_init_seg), read without a command as the kernel's
 * mlx5_read_internal_timer does (high, low, high again; the low word is
 * read again when the high word moved). *ticks counts device clock cycles
 * since the function's last reset; *frequency_khz is the clock's rate
 * (QUERY_HCA_CAP cmd_hca_cap.device_frequency_khz, read at bring-up), so
 * nanoseconds = ticks * 1e6 / frequency_khz. The clock runs whatever the
 * port does and restarts from 0 at a function reset. The model's clock is 1
 * GHz (ticks = ns) and its registers are refreshed by its housekeeping
 * thread, every 50 ms by default (sim/bus/pci_device.hpp health_period):
 * consecutive reads within that interval may return the same value; it
 * never goes backwards. Either pointer may be NULL. Synchronous, no event.
 * Errors: KBV_ERR_INVALID_HANDLE, KBV_ERR_DEVICE_NOT_READY (not brought up),
 * KBV_ERR_DEVICE_REMOVED (the registers read all-ones),
 * KBV_ERR_NOT_SUPPORTED (device_frequency_khz is 0: no clock). */
kbv_status_t kbv_device_read_clock(kbv_device_t dev, uint64_t* ticks, uint32_t* frequency_khz);

/* kbv_device_attr.cap_flags */
#define KBV_DEVICE_CAP_RC (1ull << 0)
#define KBV_DEVICE_CAP_UC (1ull << 1)
#define KBV_DEVICE_CAP_UD (1ull << 2)
#define KBV_DEVICE_CAP_XRC (1ull << 3)
#define KBV_DEVICE_CAP_ATOMIC (1ull << 4)
#define KBV_DEVICE_CAP_SRQ (1ull << 5)
#define KBV_DEVICE_CAP_ROCE_V1 (1ull << 6)
#define KBV_DEVICE_CAP_ROCE_V2 (1ull << 7)
#define KBV_DEVICE_CAP_BLUEFLAME (1ull << 8)
#define KBV_DEVICE_CAP_MULTICAST (1ull << 9)
/* CQs can return completion timestamps (KBV_CQ_FLAG_COMPLETION_TIMESTAMP):
 * the device has a free-running clock (device_frequency_khz != 0) and
 * offers its format for CQE timestamps (roce_cap.qp_ts_format FREE_RUNNING
 * or FREE_RUNNING_AND_REAL_TIME; mlx5_ifc.h MLX5_TIMESTAMP_FORMAT_CAP_*). */
#define KBV_DEVICE_CAP_COMPLETION_TIMESTAMP (1ull << 10)

typedef struct kbv_device_attr {
  char uri[KBV_URI_MAX];
  char fw_version[32]; /* "major.minor.subminor" from the init segment */
  uint64_t node_guid;  /* host order */
  uint64_t sys_image_guid;
  uint16_t vendor_id;      /* PCI */
  uint16_t device_id;      /* PCI (part id) */
  uint32_t vendor_part_id; /* = device_id */
  uint32_t hw_ver;         /* PCI revision */
  uint32_t phys_port_cnt;
  uint64_t cap_flags; /* KBV_DEVICE_CAP_* */
  /* Limits (from QUERY_HCA_CAP; counts, not logs). */
  uint32_t max_qp, max_qp_wr; /* work requests per queue */
  uint32_t max_cq, max_cqe;
  uint32_t max_mr, max_pd;
  uint64_t max_mr_size;  /* bytes (2^log_max_msg bounds one message) */
  uint32_t max_send_sge; /* what a QP may be created with (WQE size bound) */
  uint32_t max_recv_sge;
  uint32_t max_inline_data; /* bytes, RC, 1 SGE */
  uint32_t max_srq, max_srq_wr, max_srq_sge;
  uint32_t max_qp_rd_atom, max_qp_init_rd_atom;
  uint32_t max_mcast_grp, max_mcast_qp_attach;
  uint32_t max_msg_size; /* bytes */
  uint32_t local_ca_ack_delay;
  uint32_t page_size_cap; /* bytes: translation page sizes supported (bit n = 2^n) */
  uint32_t max_pkeys;     /* P_Key table entries per port (kbv_port_query_pkey) */
  /* The free-running clock's rate in kHz (cmd_hca_cap.device_frequency_khz;
   * ibv_device_attr_ex.hca_core_clock as the kernel's mlx5_ib reports it);
   * 0: no clock. */
  uint32_t core_clock_khz;
  uint32_t reserved[6];
} kbv_device_attr_t;

/* Device query (caps, fw version, GUIDs). Event: info 0. Errors:
 * KBV_ERR_INVALID_HANDLE, KBV_ERR_INVALID_ARGUMENT (out NULL), firmware
 * statuses. */
kbv_status_t kbv_device_query(kbv_device_t dev, kbv_device_attr_t* out, kbv_eq_t eq,
                              uint64_t user_data);

/* Port states (IBTA 14.2.5.6 PortState; mlx5 vport state) */
typedef enum kbv_port_state {
  KBV_PORT_NOP = 0,
  KBV_PORT_DOWN = 1,
  KBV_PORT_INIT = 2,
  KBV_PORT_ARMED = 3,
  KBV_PORT_ACTIVE = 4,
} kbv_port_state_t;

/* KBV_EVENT_PORT_STATE info: port number (1-based) in bits 0..7, the new
 * kbv_port_state_t in bits 32..39. One event per change from the state last
 * reported, which is DOWN when the device opens: a port already ACTIVE at
 * open (its link came up before the driver's event queues existed) is
 * reported once, right after the open completes. */
#define KBV_PORT_EVENT_PORT(info) ((uint32_t)((info)&0xffu))
#define KBV_PORT_EVENT_STATE(info) ((uint32_t)(((info) >> 32) & 0xffu))

typedef enum kbv_link_layer {
  KBV_LINK_LAYER_INFINIBAND = 1,
  KBV_LINK_LAYER_ETHERNET = 2,
} kbv_link_layer_t;

/* IB MTU codes (IBTA 9.6.1; mlx5_ifc.h qpc mtu) */
typedef enum kbv_mtu {
  KBV_MTU_256 = 1,
  KBV_MTU_512 = 2,
  KBV_MTU_1024 = 3,
  KBV_MTU_2048 = 4,
  KBV_MTU_4096 = 5,
} kbv_mtu_t;

/* GID table entry types */
#define KBV_GID_TYPE_ROCE_V1 1
#define KBV_GID_TYPE_ROCE_V2 2

typedef struct kbv_gid_entry {
  uint8_t gid[16];  /* network order; RoCEv2 IPv4: ::ffff:a.b.c.d */
  uint64_t mac;     /* source MAC of this address, 48 bits (0: none) */
  uint32_t type;    /* KBV_GID_TYPE_* (0: entry unused) */
  uint32_t vlan_id; /* 0xffff: no VLAN */
} kbv_gid_entry_t;

typedef struct kbv_port_attr {
  uint32_t port_num;     /* 1-based */
  uint32_t state;        /* kbv_port_state_t */
  uint32_t phys_state;   /* IBTA PortPhysicalState: 5 LinkUp, 3 Disabled, 2 Polling ... */
  uint32_t max_mtu;      /* kbv_mtu_t */
  uint32_t active_mtu;   /* kbv_mtu_t */
  uint32_t mtu_bytes;    /* the port's Ethernet MTU as firmware reports it */
  uint32_t link_layer;   /* kbv_link_layer_t */
  uint32_t gid_tbl_len;  /* device table size */
  uint32_t gid_count;    /* entries filled in gids[] (min of table and KBV_GID_TABLE_MAX) */
  uint32_t roce_version; /* bit 0 RoCEv1, bit 1 RoCEv2 */
  uint64_t port_guid;
  kbv_gid_entry_t gids[KBV_GID_TABLE_MAX];
} kbv_port_attr_t;

/* Port query (state from QUERY_VPORT_STATE / QUERY_HCA_VPORT_CONTEXT, MTU
 * from the NIC vport context, GIDs from QUERY_ROCE_ADDRESS). Event: info =
 * port. Errors: KBV_ERR_INVALID_HANDLE, KBV_ERR_INVALID_ARGUMENT (out NULL),
 * KBV_ERR_INVALID_PORT (port 0 or above phys_port_cnt), firmware statuses. */
kbv_status_t kbv_port_query(kbv_device_t dev, uint32_t port, kbv_port_attr_t* out, kbv_eq_t eq,
                            uint64_t user_data);

/* Entry `index` of the port's P_Key table (QUERY_HCA_VPORT_PKEY; IBTA
 * 10.9.1), host order, into *pkey: entry 0 is the default P_Key 0xFFFF; an
 * unset entry reads 0 (an invalid P_Key). The table has 128 << n entries
 * (cmd_hca_cap.pkey_table_size n; 128 on the model). A QP sends the entry
 * its pkey_index names (kbv_qp_modify KBV_QP_PKEY_INDEX) in every packet's
 * BTH, and a request whose P_Key does not match it is dropped by the
 * receiving HCA and counted (IBTA 10.9.3). Event: info = the P_Key.
 * Errors: KBV_ERR_INVALID_HANDLE, KBV_ERR_INVALID_ARGUMENT (pkey NULL, index
 * past the table), KBV_ERR_INVALID_PORT, firmware statuses. */
kbv_status_t kbv_port_query_pkey(kbv_device_t dev, uint32_t port, uint32_t index, uint16_t* pkey,
                                 kbv_eq_t eq, uint64_t user_data);
/* The whole table in one command (QUERY_HCA_VPORT_PKEY with index 0xFFFF):
 * the first min(n, max_pkeys) entries into table[], host order. Event:
 * info = the table's size (kbv_device_attr.max_pkeys). Errors:
 * KBV_ERR_INVALID_HANDLE, KBV_ERR_INVALID_ARGUMENT (table NULL with n > 0),
 * KBV_ERR_INVALID_PORT, firmware statuses. */
kbv_status_t kbv_port_query_pkey_table(kbv_device_t dev, uint32_t port, uint16_t* table, uint32_t n,
                                       kbv_eq_t eq, uint64_t user_data);

/* Device statistics (for kbv-perf): synchronous, cheap, any thread. */
typedef struct kbv_device_stats {
  uint32_t cmds_in_flight;     /* firmware commands posted to the device now */
  uint32_t cmds_in_flight_max; /* high-water mark */
  uint32_t cmds_queued;        /* waiting in software for a command slot */
  uint32_t reserved0;
  uint64_t cmds_submitted, cmds_completed, cmds_failed, cmds_timed_out;
  uint64_t eqes;          /* firmware EQEs consumed */
  uint64_t async_events;  /* device async events seen */
  uint64_t comp_events;   /* completion notifications seen */
  uint64_t page_requests; /* firmware page requests answered */
  uint64_t reserved[4];
} kbv_device_stats_t;
kbv_status_t kbv_device_get_stats(kbv_device_t dev, kbv_device_stats_t* out);

/* ===== protection domains, memory regions ================================ */

/* Event: info = the PD number. */
kbv_status_t kbv_pd_alloc(kbv_device_t dev, kbv_eq_t eq, uint64_t user_data, kbv_pd_t* out);
kbv_status_t kbv_pd_dealloc(kbv_pd_t pd, kbv_eq_t eq, uint64_t user_data);

/* MR access flags (IBTA 10.6.3; local read is always granted) */
#define KBV_ACCESS_LOCAL_WRITE (1u << 0)
#define KBV_ACCESS_REMOTE_WRITE (1u << 1)
#define KBV_ACCESS_REMOTE_READ (1u << 2)
#define KBV_ACCESS_REMOTE_ATOMIC (1u << 3)

/* Register [addr, addr + length) of this process's memory (pinned and
 * mapped for the device; work requests name virtual addresses inside it).
 * Event: info = lkey << 32 | rkey (also kbv_mr_get_keys). Errors:
 * KBV_ERR_INVALID_HANDLE, KBV_ERR_INVALID_ARGUMENT (addr NULL, length 0,
 * unknown flags, remote write/atomic without local write: IBTA 10.6.3.1),
 * KBV_ERR_LIMIT_EXCEEDED (length above max_mr_size), KBV_ERR_ACCESS_DENIED
 * (the kernel refused to pin the pages — VFIO_IOMMU_MAP_DMA answered EFAULT:
 * part of the range is not mapped or not readable, or any write right was
 * asked for memory the process cannot write, e.g. PROT_READ; rdma-core's
 * ibv_reg_mr fails with EFAULT in the same cases, and kbv's libibverbs
 * reports it so), KBV_ERR_NO_MEMORY, other platform mapping errors
 * (KBV_ERR_NO_RESOURCES, KBV_ERR_IO), firmware statuses. */
kbv_status_t kbv_mr_reg(kbv_pd_t pd, void* addr, size_t length, uint32_t access, kbv_eq_t eq,
                        uint64_t user_data, kbv_mr_t* out);
kbv_status_t kbv_mr_dereg(kbv_mr_t mr, kbv_eq_t eq, uint64_t user_data);
/* Keys of a registered MR (synchronous). KBV_ERR_INVALID_STATE before its
 * registration completed. */
kbv_status_t kbv_mr_get_keys(kbv_mr_t mr, uint32_t* lkey, uint32_t* rkey);

/* ===== completion queues ================================================== */

/* kbv_cq_attr.flags */
/* Completion timestamps: kbv_poll_cq_ts returns each completion's CQE
 * timestamp (see there). The device writes the timestamp into every CQE
 * (mlx5_cqe64 timestamp) in the format its QP's qpc.ts_format selects;
 * asking for it here makes kbv create the QPs attached to the CQ with the
 * free-running format, as the kernel's mlx5_ib does for a CQ created with
 * IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION (qp.c get_ts_format). Requires
 * KBV_DEVICE_CAP_COMPLETION_TIMESTAMP. */
#define KBV_CQ_FLAG_COMPLETION_TIMESTAMP (1u << 0)

typedef struct kbv_cq_attr {
  uint32_t cqe;      /* at least this many completions (rounded up to 2^n) */
  uint32_t flags;    /* KBV_CQ_FLAG_* (0: none; was reserved, must be 0) */
  kbv_eq_t event_eq; /* CQ error events; 0: the create's eq */
} kbv_cq_attr_t;

/* Event: info = the CQN. Errors: KBV_ERR_INVALID_HANDLE,
 * KBV_ERR_INVALID_ARGUMENT (attr/out NULL, cqe 0, unknown flags),
 * KBV_ERR_LIMIT_EXCEEDED (cqe above max_cqe), KBV_ERR_NOT_SUPPORTED
 * (KBV_CQ_FLAG_COMPLETION_TIMESTAMP on a device without
 * KBV_DEVICE_CAP_COMPLETION_TIMESTAMP), firmware statuses. */
kbv_status_t kbv_cq_create(kbv_device_t dev, const kbv_cq_attr_t* attr, kbv_eq_t eq,
                           uint64_t user_data, kbv_cq_t* out);
/* Resize to at least cqe entries (keeps the CQN). The CQ must have been
 * drained (kbv_poll_cq returned 0) and not be polled until the event.
 * Event: info = the new number of entries. Errors as create, and
 * KBV_ERR_BUSY (a resize in flight). */
kbv_status_t kbv_cq_resize(kbv_cq_t cq, uint32_t cqe, kbv_eq_t eq, uint64_t user_data);
/* Errors: a CQ still used by a QP completes (when its QPs are closed). */
kbv_status_t kbv_cq_destroy(kbv_cq_t cq, kbv_eq_t eq, uint64_t user_data);
/* Request one completion notification (KBV_EVENT_COMP_NOTIFY, object = the
 * CQ, info = the CQN) for the next completion (solicited_only: the next
 * solicited or error completion). Arming again before it fired cancels the
 * previous request (KBV_ERR_CANCELLED). eq is required (no synchronous form:
 * KBV_ERR_INVALID_ARGUMENT). Data-path thread (the CQ's owner). */
kbv_status_t kbv_cq_arm(kbv_cq_t cq, int solicited_only, kbv_eq_t eq, uint64_t user_data);

/* ===== shared receive queues =============================================== */

typedef struct kbv_srq_attr {
  uint32_t max_wr;    /* receive WRs (rounded up to 2^n, one kept unused) */
  uint32_t max_sge;   /* SGEs per receive WR */
  uint32_t srq_limit; /* limit watermark (0: none); arm with kbv_srq_arm */
  uint32_t reserved;
  kbv_eq_t event_eq; /* SRQ limit events; 0: the create's eq */
} kbv_srq_attr_t;

/* Event: info = the SRQN. Errors: KBV_ERR_INVALID_HANDLE,
 * KBV_ERR_INVALID_ARGUMENT, KBV_ERR_LIMIT_EXCEEDED, firmware statuses. */
kbv_status_t kbv_srq_create(kbv_pd_t pd, const kbv_srq_attr_t* attr, kbv_eq_t eq,
                            uint64_t user_data, kbv_srq_t* out);
/* Set the limit and arm the limit event (one KBV_EVENT_SRQ_LIMIT on the
 * SRQ's event EQ when fewer than `limit` WQEs remain; ARM_RQ). */
kbv_status_t kbv_srq_arm(kbv_srq_t srq, uint32_t limit, kbv_eq_t eq, uint64_t user_data);
kbv_status_t kbv_srq_destroy(kbv_srq_t srq, kbv_eq_t eq, uint64_t user_data);

/* ===== address handles ===================================================== */

typedef struct kbv_ah_attr {
  uint8_t dgid[16];    /* destination GID, network order */
  uint64_t dmac;       /* next-hop MAC, 48 bits (the peer's kbv_gid_entry.mac) */
  uint32_t flow_label; /* 20 bits */
  uint16_t udp_sport;  /* RoCEv2 source port; 0: derived from the QPNs */
  uint8_t sgid_index;  /* local GID table index */
  uint8_t hop_limit;   /* 0: 64 */
  uint8_t traffic_class;
  uint8_t sl;       /* 0..7 (RoCE priority) */
  uint8_t port_num; /* 0: 1 */
  uint8_t reserved;
} kbv_ah_attr_t;

/* A UD address handle (RoCEv2; nothing is created on the device). Event:
 * info 0. Errors: KBV_ERR_INVALID_HANDLE, KBV_ERR_INVALID_ARGUMENT (flow
 * label, sl), KBV_ERR_INVALID_PORT, KBV_ERR_NOT_FOUND (sgid_index not in the
 * GID table range). */
kbv_status_t kbv_ah_create(kbv_pd_t pd, const kbv_ah_attr_t* attr, kbv_eq_t eq, uint64_t user_data,
                           kbv_ah_t* out);
kbv_status_t kbv_ah_destroy(kbv_ah_t ah, kbv_eq_t eq, uint64_t user_data);

/* ===== queue pairs ========================================================= */

typedef enum kbv_qp_type {
  KBV_QPT_RC = 2, /* values as ibv_qp_type */
  KBV_QPT_UC = 3,
  KBV_QPT_UD = 4,
} kbv_qp_type_t;

typedef enum kbv_qp_state {
  KBV_QPS_RESET = 0, /* values as ibv_qp_state */
  KBV_QPS_INIT = 1,
  KBV_QPS_RTR = 2,
  KBV_QPS_RTS = 3,
  KBV_QPS_SQD = 4,
  KBV_QPS_SQE = 5,
  KBV_QPS_ERR = 6,
} kbv_qp_state_t;

typedef struct kbv_qp_cap {
  uint32_t max_send_wr;
  uint32_t max_recv_wr; /* ignored with an SRQ */
  uint32_t max_send_sge;
  uint32_t max_recv_sge;
  uint32_t max_inline_data; /* bytes */
} kbv_qp_cap_t;

typedef struct kbv_qp_init_attr {
  uint32_t qp_type;    /* kbv_qp_type_t */
  uint32_t sq_sig_all; /* 1: every send WR generates a completion */
  kbv_cq_t send_cq;
  kbv_cq_t recv_cq;
  kbv_srq_t srq; /* 0: own receive queue */
  kbv_qp_cap_t cap;
  uint32_t reserved;
  kbv_eq_t event_eq; /* QP fatal / access error events; 0: the create's eq */
} kbv_qp_init_attr_t;

/* Create a QP in RESET. Event: info = the QPN (kbv_qp_get_num). Errors:
 * KBV_ERR_INVALID_HANDLE (pd, cqs, srq; objects of another device),
 * KBV_ERR_INVALID_ARGUMENT (attr/out NULL, unknown type, send_cq/recv_cq 0),
 * KBV_ERR_LIMIT_EXCEEDED (WRs, SGEs or inline above the device limits or
 * the WQE size), firmware statuses. */
kbv_status_t kbv_qp_create(kbv_pd_t pd, const kbv_qp_init_attr_t* attr, kbv_eq_t eq,
                           uint64_t user_data, kbv_qp_t* out);
kbv_status_t kbv_qp_destroy(kbv_qp_t qp, kbv_eq_t eq, uint64_t user_data);
/* The QPN (synchronous); KBV_ERR_INVALID_STATE before creation completed. */
kbv_status_t kbv_qp_get_num(kbv_qp_t qp, uint32_t* qpn);

/* kbv_qp_modify attr_mask bits (values as ibv_qp_attr_mask) */
#define KBV_QP_STATE (1u << 0)
/* KBV_QP_CUR_STATE: cur_qp_state is the state the QP is known to be in (e.g.
 * SQE after a UD/UC send error, which kbv's own view does not follow);
 * without it kbv uses the state its last modify left. */
#define KBV_QP_CUR_STATE (1u << 1)
#define KBV_QP_ACCESS_FLAGS (1u << 3)
#define KBV_QP_PKEY_INDEX (1u << 4)
#define KBV_QP_PORT (1u << 5)
#define KBV_QP_QKEY (1u << 6)
#define KBV_QP_AV (1u << 7)
#define KBV_QP_PATH_MTU (1u << 8)
#define KBV_QP_TIMEOUT (1u << 9)
#define KBV_QP_RETRY_CNT (1u << 10)
#define KBV_QP_RNR_RETRY (1u << 11)
#define KBV_QP_RQ_PSN (1u << 12)
#define KBV_QP_MAX_QP_RD_ATOMIC (1u << 13)
#define KBV_QP_MIN_RNR_TIMER (1u << 15)
#define KBV_QP_SQ_PSN (1u << 16)
#define KBV_QP_MAX_DEST_RD_ATOMIC (1u << 17)
#define KBV_QP_DEST_QPN (1u << 20)

typedef struct kbv_qp_attr {
  uint32_t qp_state;     /* kbv_qp_state_t: the target state */
  uint32_t cur_qp_state; /* query: the current state */
  uint32_t path_mtu;     /* kbv_mtu_t */
  uint32_t qkey;
  uint32_t rq_psn; /* 24 bits */
  uint32_t sq_psn; /* 24 bits */
  uint32_t dest_qp_num;
  uint32_t qp_access_flags; /* KBV_ACCESS_REMOTE_* */
  kbv_ah_attr_t ah_attr;    /* RC/UC primary path (RoCEv2) */
  uint16_t pkey_index;
  uint8_t port_num;           /* 1-based */
  uint8_t max_rd_atomic;      /* initiator depth */
  uint8_t max_dest_rd_atomic; /* responder resources */
  uint8_t min_rnr_timer;      /* IBTA 9.7.5.2.8 code */
  uint8_t timeout;            /* 4.096 us << timeout; 0 infinite */
  uint8_t retry_cnt;          /* 0..7 */
  uint8_t rnr_retry;          /* 0..7, 7 = infinite */
  uint8_t reserved[7];
  kbv_qp_cap_t cap; /* query: what the QP was created with */
} kbv_qp_attr_t;

/* Move the QP to attr->qp_state (KBV_QP_STATE required in attr_mask) with the
 * attributes attr_mask names. Transitions (IBTA 10.3.1, Table 91):
 * RESET->INIT (PORT, PKEY_INDEX, ACCESS_FLAGS for RC/UC, QKEY for UD),
 * INIT->INIT, INIT->RTR (PATH_MTU; RC/UC: AV, DEST_QPN, RQ_PSN; RC:
 * MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER), RTR->RTS (SQ_PSN; RC: TIMEOUT,
 * RETRY_CNT, RNR_RETRY, MAX_QP_RD_ATOMIC), RTS->RTS, SQE->RTS, any->ERR,
 * any->RESET. Event: info = the new state. Errors: KBV_ERR_INVALID_HANDLE,
 * KBV_ERR_INVALID_ARGUMENT (attr NULL, no KBV_QP_STATE, unknown mask bits,
 * values out of range, a required attribute missing), KBV_ERR_INVALID_QP_STATE
 * (a transition IBTA does not allow from the current state), KBV_ERR_BUSY (a
 * modify in flight), KBV_ERR_NOT_SUPPORTED (RTS->SQD: send queue drain is not
 * implemented), firmware statuses. Attributes accumulate: a value set by an
 * earlier modify (e.g. the path) is kept when a later one does not name it. */
kbv_status_t kbv_qp_modify(kbv_qp_t qp, const kbv_qp_attr_t* attr, uint32_t attr_mask, kbv_eq_t eq,
                           uint64_t user_data);
/* QUERY_QP into *out (state, PSNs, path, caps ...). Event: info = state. */
kbv_status_t kbv_qp_query(kbv_qp_t qp, kbv_qp_attr_t* out, kbv_eq_t eq, uint64_t user_data);

/* Multicast (UD QPs; IBTA 10.5). Errors: KBV_ERR_INVALID_HANDLE,
 * KBV_ERR_INVALID_ARGUMENT (gid NULL, not a multicast GID: ff00::/8 or
 * ::ffff:224.0.0.0/4), KBV_ERR_NOT_SUPPORTED (RC/UC QPs), firmware statuses. */
kbv_status_t kbv_qp_attach_mcast(kbv_qp_t qp, const uint8_t gid[16], kbv_eq_t eq,
                                 uint64_t user_data);
kbv_status_t kbv_qp_detach_mcast(kbv_qp_t qp, const uint8_t gid[16], kbv_eq_t eq,
                                 uint64_t user_data);

/* The firmware command status byte and syndrome (mlx5_ifc.h mbox_out) of the
 * last synchronous control call this thread made: set when the device
 * refused it, 0 / 0 otherwise (success, or an error kbv found itself).
 * Asynchronous calls carry them in their event. Either pointer may be NULL. */
void kbv_last_fw_error(uint8_t* fw_status, uint32_t* syndrome);

/* ===== cancellation across queues ========================================== */

/* Cancel every in-flight request about object on every event queue.
 * *cancelled (may be NULL) = the count. KBV_SUCCESS / KBV_ERR_NOT_FOUND (none
 * in flight) / KBV_ERR_INVALID_HANDLE. */
kbv_status_t kbv_cancel_object(uint64_t object, uint32_t* cancelled);

/* ===== fast path =========================================================== */

typedef struct kbv_sge {
  uint64_t addr; /* virtual address inside a registered MR (inline: any CPU address) */
  uint32_t length;
  uint32_t lkey;
} kbv_sge_t;

typedef enum kbv_wr_opcode {
  KBV_WR_SEND = 0,
  KBV_WR_SEND_IMM = 1,
  KBV_WR_RDMA_WRITE = 2,
  KBV_WR_RDMA_WRITE_IMM = 3,
  KBV_WR_RDMA_READ = 4,
  KBV_WR_ATOMIC_CS = 5, /* compare and swap, 8 bytes */
  KBV_WR_ATOMIC_FA = 6, /* fetch and add, 8 bytes */
} kbv_wr_opcode_t;

/* kbv_send_wr.flags */
#define KBV_SEND_SIGNALED (1u << 0)
#define KBV_SEND_SOLICITED (1u << 1)
#define KBV_SEND_FENCE (1u << 2)
#define KBV_SEND_INLINE (1u << 3)

typedef struct kbv_send_wr {
  uint64_t wr_id;
  uint32_t opcode; /* kbv_wr_opcode_t */
  uint32_t flags;  /* KBV_SEND_* */
  const kbv_sge_t* sg_list;
  uint32_t num_sge;
  uint32_t imm; /* host order; sent big-endian (SEND_IMM, RDMA_WRITE_IMM) */
  /* RDMA and atomics */
  uint64_t remote_addr;
  uint32_t rkey;
  uint32_t reserved;
  /* atomics (IBTA 9.4.5): CS compares with compare_add and writes swap; FA
   * adds compare_add. The old value lands in the one 8-byte SGE. */
  uint64_t compare_add;
  uint64_t swap;
  /* UD */
  kbv_ah_t ah;
  uint32_t remote_qpn;
  uint32_t remote_qkey;
} kbv_send_wr_t;

typedef struct kbv_recv_wr {
  uint64_t wr_id;
  const kbv_sge_t* sg_list;
  uint32_t num_sge;
  uint32_t reserved;
} kbv_recv_wr_t;

/* Post n work requests in order, one doorbell. KBV_SUCCESS: all posted. On
 * an error the requests before *bad_index were posted, it and those after
 * were not (bad_index may be NULL). Errors: KBV_ERR_INVALID_HANDLE (qp/ah),
 * KBV_ERR_INVALID_ARGUMENT (wrs NULL with n > 0, unknown opcode/flags, an
 * atomic without one 8-byte SGE, inline on READ/atomics, sg_list NULL with
 * num_sge > 0), KBV_ERR_INVALID_QP_STATE (send: QP in RESET, INIT or RTR;
 * recv: QP in RESET), KBV_ERR_INVALID_WR_TYPE (opcode not valid
 * for the QP type), KBV_ERR_TOO_MANY_SGE, KBV_ERR_INLINE_TOO_LARGE,
 * KBV_ERR_QUEUE_FULL, KBV_ERR_DEVICE_FATAL / KBV_ERR_DEVICE_REMOVED (the
 * device failed). */
/* kbv_post_recv on a QP created with an SRQ: KBV_ERR_INVALID_ARGUMENT (its
 * receives come from the SRQ). Posting before the create event:
 * KBV_ERR_INVALID_STATE. */
kbv_status_t kbv_post_send(kbv_qp_t qp, const kbv_send_wr_t* wrs, uint32_t n, uint32_t* bad_index);
kbv_status_t kbv_post_recv(kbv_qp_t qp, const kbv_recv_wr_t* wrs, uint32_t n, uint32_t* bad_index);
kbv_status_t kbv_post_srq_recv(kbv_srq_t srq, const kbv_recv_wr_t* wrs, uint32_t n,
                               uint32_t* bad_index);

typedef enum kbv_wc_opcode {
  KBV_WC_SEND = 0,
  KBV_WC_RDMA_WRITE = 1,
  KBV_WC_RDMA_READ = 2,
  KBV_WC_ATOMIC_CS = 3,
  KBV_WC_ATOMIC_FA = 4,
  KBV_WC_RECV = 5,
  KBV_WC_RECV_RDMA_WITH_IMM = 6,
  KBV_WC_UNKNOWN = 7,
} kbv_wc_opcode_t;

/* kbv_wc.network_hdr_type (mlx5 CQE flags_rqpn bits 25:24, as the kernel's
 * mlx5_ib handle_responder reads them). */
typedef enum kbv_wc_network_hdr {
  KBV_WC_NETWORK_GRH = 0,  /* an IB GRH (RoCE v1) fills the 40 bytes */
  KBV_WC_NETWORK_IPV6 = 1, /* RoCE v2 over IPv6: the IPv6 header fills them */
  KBV_WC_NETWORK_IPV4 = 2, /* RoCE v2 over IPv4: the IPv4 header is in bytes 20..39 */
} kbv_wc_network_hdr_t;

/* kbv_wc.flags */
#define KBV_WC_WITH_IMM (1u << 0)
#define KBV_WC_WITH_GRH (1u << 1) /* UD: a 40-byte GRH precedes the data */
#define KBV_WC_WITH_INV (1u << 2) /* SEND with invalidate: imm = the rkey */

typedef struct kbv_wc {
  uint64_t wr_id;
  int32_t status;  /* kbv_status_t (KBV_SUCCESS or a work completion error) */
  uint32_t opcode; /* kbv_wc_opcode_t */
  uint32_t byte_len;
  uint32_t imm;   /* host order */
  uint32_t flags; /* KBV_WC_* */
  uint32_t qp_num;
  uint32_t src_qp; /* UD */
  uint16_t slid;   /* 0 on RoCE */
  uint8_t sl;
  uint8_t syndrome;   /* CQE syndrome (mlx5dv.h MLX5_CQE_SYNDROME_*) for errors */
  uint8_t vendor_err; /* CQE vendor_err_synd */
  /* With KBV_WC_WITH_GRH: what the 40-byte GRH area in front of the data
   * holds (kbv_wc_network_hdr_t; ibv_wc network_hdr_type's role). */
  uint8_t network_hdr_type;
  uint8_t reserved[6];
} kbv_wc_t;

#ifdef __cplusplus
static_assert(sizeof(kbv_wc_t) == 48, "kbv_wc_t is ABI");
static_assert(sizeof(kbv_send_wr_t) == 80, "kbv_send_wr_t is ABI");
#else
_Static_assert(sizeof(kbv_wc_t) == 48, "kbv_wc_t is ABI");
_Static_assert(sizeof(kbv_send_wr_t) == 80, "kbv_send_wr_t is ABI");
#endif

/* Fill up to n completions; returns how many (0..n) or a negative status
 * (KBV_ERR_INVALID_HANDLE, KBV_ERR_INVALID_ARGUMENT: wcs NULL with n > 0,
 * KBV_ERR_BUSY while a kbv_cq_resize is in flight, KBV_ERR_INVALID_STATE
 * before the create event). Error completions are returned like others
 * (status < 0; a QP in error flushes its outstanding work requests with
 * KBV_ERR_WR_FLUSHED). Completions stay readable after a device failure;
 * once the device failed (KBV_EVENT_DEVICE_FATAL) every work request still
 * outstanding on a QP attached here (send queue and receive queue, not an
 * SRQ) completes with KBV_ERR_WR_FLUSHED, opcode KBV_WC_SEND / KBV_WC_RECV,
 * as the kernel's mlx5_ib does for a device in internal error. A program
 * that only polls still has its device's health checked: every 1024th
 * empty poll drives the device once (kbv_device_progress, try-lock). */
int kbv_poll_cq(kbv_cq_t cq, kbv_wc_t* wcs, uint32_t n);

/* As kbv_poll_cq, and timestamps[i] = the time completion i was written,
 * in raw ticks of the HCA's free-running clock: the CQE's timestamp field
 * (rdma-core mlx5dv.h struct mlx5_cqe64 timestamp, big-endian 64 bits at
 * byte 48; read as rdma-core's mlx5 mlx5_cq_read_wc_completion_ts does),
 * the same clock kbv_device_read_clock reads (init segment internal_timer,
 * counting at kbv_device_attr.core_clock_khz = device_frequency_khz; it
 * restarts from 0 at a function reset). Convert with
 * kbv_clock_ticks_to_ns. The values are the device's: completions of one
 * CQ are written in order, so their timestamps do not decrease; a
 * completion kbv makes itself after a device failure (KBV_ERR_WR_FLUSHED,
 * no CQE) has timestamp 0. timestamps must hold n entries. The CQ must
 * have been created with KBV_CQ_FLAG_COMPLETION_TIMESTAMP
 * (KBV_ERR_INVALID_STATE otherwise); kbv_poll_cq on such a CQ works as
 * usual. Errors as kbv_poll_cq, and KBV_ERR_INVALID_ARGUMENT (timestamps
 * NULL with n > 0). Data-path thread (the CQ's owner); no lock, no
 * allocation. */
int kbv_poll_cq_ts(kbv_cq_t cq, kbv_wc_t* wcs, uint64_t* timestamps, uint32_t n);

/* Ticks of the free-running clock (kbv_device_read_clock, kbv_poll_cq_ts)
 * to nanoseconds: ticks * 10^6 / frequency_khz, without overflow for any
 * tick count below 2^64 / 10^6 * frequency_khz (585 years at 1 GHz). 0 for
 * frequency_khz 0 (no clock). */
static inline uint64_t kbv_clock_ticks_to_ns(uint64_t ticks, uint32_t frequency_khz) {
  if (frequency_khz == 0) return 0;
  return ticks / frequency_khz * 1000000u + ticks % frequency_khz * 1000000u / frequency_khz;
}

#ifdef __cplusplus
}
#endif

#endif /* KBV_KBV_H */
