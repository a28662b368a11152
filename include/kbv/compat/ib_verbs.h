/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NT kernel-verbs interface on kbv: IB_VERBS_INTERFACE_STANDARD in the
 * shape of the OpenIB Windows "[RFC v2] Kernel Async Verbs" (shared/seeds/000,
 * inc/iba/ibdef.h + inc/kernel/iba/ibverbs.h, Nov 2005), so code written
 * against that proposal ports to kbv. Semantics: shared/NTSTATUS.md "IRP
 * semantics to reproduce"; statuses: kbv/compat/ntstatus.h.
 *
 * What differs from the RFC, and why:
 *  - The IRP is replaced by IB_REQUEST (below): IoStatus {Status, Information}
 *    as in the IRP, completed either as one event on a kbv event queue
 *    (kbv/eq.h) or through a completion callback (the IRP's completion
 *    routine). A request with neither is run synchronously.
 *  - IRP_MN_QUERY_INTERFACE is replaced by kbv_nt_query_interface(uri, ...):
 *    the device is named by a kbv URI ("sim:<name>", "vfio:<bdf>").
 *  - MDLs: this is user mode; MDL is a minimal list of virtually contiguous
 *    buffers (StartVa/ByteOffset/ByteCount/Next). Physical registrations
 *    (RegScatterGather, GetDmaMr) need physical addresses a user-mode process
 *    does not have: they return STATUS_NOT_SUPPORTED.
 *  - CI_UDATA (user-mode vendor data) has no use in a user-mode driver: it may
 *    be NULL; when given, its OutputSize is set to 0.
 *  - Windows integer types are fixed-width here (ULONG is 32 bits as on
 *    Windows, not the LP64 unsigned long). Define KBV_NT_NO_WINDOWS_TYPES
 *    before including this header to supply them yourself.
 *
 * Completion rules (NTSTATUS.md, seed 000 RETURN VALUES of every function):
 *  - STATUS_PENDING: the request completes later, exactly once: IoStatus is
 *    written, then the completion callback runs or the event is posted.
 *  - Any other return value: the call is over and nothing more happens to
 *    the request: no callback runs and no event is posted (kbv posts an
 *    event only for a call that returned pending). A request the call
 *    answered (success, STATUS_BUFFER_OVERFLOW, STATUS_FILE_FORCED_CLOSED,
 *    STATUS_NOT_SUPPORTED ...) holds the same status (and Information) in
 *    IoStatus; an argument fault found first (STATUS_INVALID_PARAMETER_n,
 *    STATUS_INVALID_HANDLE) may leave it untouched: the return value is
 *    authoritative.
 *  - STATUS_INVALID_PARAMETER_n names the n-th argument, counted from 1; the
 *    request argument is counted too.
 *
 * Threading: every function may be called from any thread. Completions
 * (callbacks, events) and the object event callbacks (PFN_IB_*_EVENT) run on
 * the CA's dispatch thread (the stand-in for the DPC that completes IRPs) or,
 * for requests completed by a call (cancel, close), on the calling thread.
 * A callback may call any function of the interface, including blocking
 * synchronous ones. PollCq/PeekCq/RearmCq on one CQ and PostSend/PostRecv on
 * one QP must not run concurrently with each other (one thread per CQ/QP, as
 * in kbv's fast path).
 */
#ifndef KBV_COMPAT_IB_VERBS_H
#define KBV_COMPAT_IB_VERBS_H

#include <kbv/compat/ntstatus.h>
#include <kbv/eq.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Windows base types (fixed width, as on Windows) -------------------- */
#ifndef KBV_NT_NO_WINDOWS_TYPES
typedef KBV_NTSTATUS NTSTATUS;
#ifndef VOID
#define VOID void
#endif
typedef char CHAR;
typedef uint8_t UCHAR;
typedef uint8_t UINT8;
typedef uint8_t BOOLEAN;
typedef uint16_t USHORT;
typedef uint16_t UINT16;
typedef int32_t LONG;
typedef uint32_t ULONG;
typedef uint32_t UINT32;
typedef uint64_t UINT64;
typedef uintptr_t ULONG_PTR;
typedef size_t SIZE_T;
typedef void* PVOID;
#ifndef TRUE
#define TRUE 1
#endif
#ifndef FALSE
#define FALSE 0
#endif
#ifndef IN
#define IN
#endif
#ifndef OUT
#define OUT
#endif
#ifndef OPTIONAL
#define OPTIONAL
#endif
#endif /* KBV_NT_NO_WINDOWS_TYPES */

/* The unprefixed STATUS_* names used by ported code (values: ntstatus.h). */
#ifndef KBV_NT_NO_STATUS_NAMES
#define STATUS_SUCCESS KBV_STATUS_SUCCESS
#define STATUS_ABANDONED KBV_STATUS_ABANDONED
#define STATUS_EVENT_DONE KBV_STATUS_EVENT_DONE
#define STATUS_ACCESS_VIOLATION KBV_STATUS_ACCESS_VIOLATION
#define STATUS_OBJECT_NAME_COLLISION KBV_STATUS_OBJECT_NAME_COLLISION
#define STATUS_DATA_OVERRUN KBV_STATUS_DATA_OVERRUN
#define STATUS_DEVICE_NOT_READY KBV_STATUS_DEVICE_NOT_READY
#define STATUS_REMOTE_RESOURCES KBV_STATUS_REMOTE_RESOURCES
#define STATUS_INVALID_ADDRESS KBV_STATUS_INVALID_ADDRESS
#define STATUS_CONNECTION_RESET KBV_STATUS_CONNECTION_RESET
#define STATUS_CONNECTION_REFUSED KBV_STATUS_CONNECTION_REFUSED
#define STATUS_CONNECTION_INVALID KBV_STATUS_CONNECTION_INVALID
#define STATUS_HOST_UNREACHABLE KBV_STATUS_HOST_UNREACHABLE
#define STATUS_CONNECTION_ABORTED KBV_STATUS_CONNECTION_ABORTED
#define STATUS_TIMEOUT KBV_STATUS_TIMEOUT
#define STATUS_PENDING KBV_STATUS_PENDING
#define STATUS_BUFFER_OVERFLOW KBV_STATUS_BUFFER_OVERFLOW
#define STATUS_DEVICE_BUSY KBV_STATUS_DEVICE_BUSY
#define STATUS_NO_MORE_ENTRIES KBV_STATUS_NO_MORE_ENTRIES
#define STATUS_UNSUCCESSFUL KBV_STATUS_UNSUCCESSFUL
#define STATUS_INVALID_HANDLE KBV_STATUS_INVALID_HANDLE
#define STATUS_INVALID_PARAMETER KBV_STATUS_INVALID_PARAMETER
#define STATUS_INVALID_DEVICE_REQUEST KBV_STATUS_INVALID_DEVICE_REQUEST
#define STATUS_NO_MEMORY KBV_STATUS_NO_MEMORY
#define STATUS_ACCESS_DENIED KBV_STATUS_ACCESS_DENIED
#define STATUS_BUFFER_TOO_SMALL KBV_STATUS_BUFFER_TOO_SMALL
#define STATUS_INVALID_PARAMETER_MIX KBV_STATUS_INVALID_PARAMETER_MIX
#define STATUS_FILE_LOCK_CONFLICT KBV_STATUS_FILE_LOCK_CONFLICT
#define STATUS_INSUFFICIENT_RESOURCES KBV_STATUS_INSUFFICIENT_RESOURCES
#define STATUS_IO_TIMEOUT KBV_STATUS_IO_TIMEOUT
#define STATUS_FILE_FORCED_CLOSED KBV_STATUS_FILE_FORCED_CLOSED
#define STATUS_NOT_SUPPORTED KBV_STATUS_NOT_SUPPORTED
#define STATUS_INTERNAL_ERROR KBV_STATUS_INTERNAL_ERROR
#define STATUS_INVALID_PARAMETER_1 ((NTSTATUS)0xC00000EF)
#define STATUS_INVALID_PARAMETER_2 ((NTSTATUS)0xC00000F0)
#define STATUS_INVALID_PARAMETER_3 ((NTSTATUS)0xC00000F1)
#define STATUS_INVALID_PARAMETER_4 ((NTSTATUS)0xC00000F2)
#define STATUS_INVALID_PARAMETER_5 ((NTSTATUS)0xC00000F3)
#define STATUS_INVALID_PARAMETER_6 ((NTSTATUS)0xC00000F4)
#define STATUS_INVALID_PARAMETER_7 ((NTSTATUS)0xC00000F5)
#define STATUS_INVALID_PARAMETER_8 ((NTSTATUS)0xC00000F6)
#define STATUS_INVALID_PARAMETER_9 ((NTSTATUS)0xC00000F7)
#define STATUS_INVALID_PARAMETER_10 ((NTSTATUS)0xC00000F8)
#define STATUS_INVALID_PARAMETER_11 ((NTSTATUS)0xC00000F9)
#define STATUS_INVALID_PARAMETER_12 ((NTSTATUS)0xC00000FA)
#define STATUS_CANCELLED KBV_STATUS_CANCELLED
#define STATUS_INVALID_DEVICE_STATE KBV_STATUS_INVALID_DEVICE_STATE
#define STATUS_NOT_FOUND KBV_STATUS_NOT_FOUND
#define STATUS_DEVICE_REMOVED KBV_STATUS_DEVICE_REMOVED
#define STATUS_IB_INSUFFICIENT_WR KBV_STATUS_IB_INSUFFICIENT_WR
#define STATUS_IB_INSUFFICIENT_SGE KBV_STATUS_IB_INSUFFICIENT_SGE
#define STATUS_IB_INVALID_WR_TYPE KBV_STATUS_IB_INVALID_WR_TYPE
#define STATUS_IB_INVALID_STATE KBV_STATUS_IB_INVALID_STATE
#define STATUS_IB_INVALID_PORT KBV_STATUS_IB_INVALID_PORT
#endif /* KBV_NT_NO_STATUS_NAMES */

#define KBV_NT_ALIGN8 __attribute__((aligned(8)))

/* ---- the request object (replaces the IRP) ------------------------------- */

/* IRP IoStatus: Status and Information (wdm.h IO_STATUS_BLOCK). */
typedef struct _IO_STATUS_BLOCK {
  NTSTATUS Status;
  ULONG_PTR Information;
} IO_STATUS_BLOCK;

typedef struct _IB_REQUEST IB_REQUEST;

/* The IRP completion routine: runs once when a request that returned
 * STATUS_PENDING completes; IoStatus is already written. The request memory
 * is the caller's again when the routine is called. */
typedef VOID (*PIB_REQUEST_COMPLETION)(IB_REQUEST* pRequest, VOID* Context);

/* A request: initialise with kbv_nt_init_request(); it must stay valid (and
 * not be reused) from the call that returned STATUS_PENDING until it
 * completes. How it completes, in this order of choice:
 *   CompletionRoutine != NULL  the routine is called;
 *   Eq != KBV_EQ_NONE          one kbv_event_t on Eq: type KBV_EVENT_REQUEST,
 *                              user_data = UserData, status =
 *                              kbv_status_from_ntstatus(IoStatus.Status),
 *                              object = (uintptr_t)pRequest, info =
 *                              IoStatus.Information. Room for the event is
 *                              reserved when the call returns pending, so it
 *                              is never lost; kbv_eq_cancel(Eq, UserData)
 *                              cancels the request (status KBV_ERR_CANCELLED;
 *                              IoStatus.Status is then STATUS_CANCELLED).
 *   neither                    the call is synchronous: it returns the final
 *                              status (a notification request, which could
 *                              wait forever, is refused with
 *                              STATUS_INVALID_PARAMETER_n). Only a close of
 *                              an object still referenced returns
 *                              STATUS_PENDING: it has nothing to wait on
 *                              and finishes when the references go.
 * Internal is kbv's while the request is pending. */
struct _IB_REQUEST {
  IO_STATUS_BLOCK IoStatus;
  kbv_eq_t Eq;
  UINT64 UserData;
  PIB_REQUEST_COMPLETION CompletionRoutine;
  VOID* CompletionContext;
  UINT64 Internal[2];
};

/* Prepare a request (IoInitializeIrp + IoSetCompletionRoutine): IoStatus =
 * {STATUS_PENDING, 0}. */
VOID kbv_nt_init_request(IB_REQUEST* pRequest, kbv_eq_t Eq, UINT64 UserData,
                         PIB_REQUEST_COMPLETION CompletionRoutine, VOID* CompletionContext);

/* Cancel a pending request (IoCancelIrp). STATUS_SUCCESS: it completed with
 * STATUS_CANCELLED (its callback ran or its event was posted) before this
 * returned. STATUS_NOT_FOUND: it is not pending (never submitted, already
 * completed). STATUS_INVALID_PARAMETER_1: pRequest is NULL. */
NTSTATUS kbv_nt_cancel_request(IB_REQUEST* pRequest);

/* ---- inc/iba/ibdef.h (seed 000) ------------------------------------------ */

typedef struct _IB_CA* IB_CA_HANDLE;
typedef struct _IB_PD* IB_PD_HANDLE;
typedef struct _IB_CQ* IB_CQ_HANDLE;
typedef struct _IB_SRQ* IB_SRQ_HANDLE;
typedef struct _IB_QP* IB_QP_HANDLE;
typedef struct _IB_AH* IB_ADDR_HANDLE;
typedef struct _IB_MR* IB_MR_HANDLE;
typedef struct _IB_MW* IB_MW_HANDLE;
/* __ptr64 handles: pointers are 64 bits here. */
typedef IB_CA_HANDLE IB_CA_HANDLE64;
typedef IB_PD_HANDLE IB_PD_HANDLE64;
typedef IB_CQ_HANDLE IB_CQ_HANDLE64;
typedef IB_SRQ_HANDLE IB_SRQ_HANDLE64;
typedef IB_QP_HANDLE IB_QP_HANDLE64;
typedef IB_ADDR_HANDLE IB_ADDR_HANDLE64;
typedef IB_MR_HANDLE IB_MR_HANDLE64;
typedef IB_MW_HANDLE IB_MW_HANDLE64;

#pragma pack(push, 1)
/* GIDs in network byte order; RoCEv2 GIDs are IPv4-mapped (::ffff:a.b.c.d). */
typedef union KBV_NT_ALIGN8 _IB_GID {
  UCHAR Raw[16];
  struct _IB_GID_UNICAST {
    UINT64 Prefix;
    UINT64 InterfaceId;
  } Unicast;
  struct _IB_GID_MULTICAST {
    UCHAR Header[2];
    UCHAR RawGroupId[14];
  } Multicast;
} IB_GID;

typedef struct KBV_NT_ALIGN8 _IB_GRH {
  ULONG VerClassFlow; /* version 4 bits, traffic class 8, flow label 20 */
  USHORT PayloadLength;
  UCHAR NextHdr;
  UCHAR HopLimit;
  IB_GID SGid;
  IB_GID DGid;
} IB_GRH;
#pragma pack(pop)

typedef enum _IB_MTU {
  IB_MTU_256 = 1,
  IB_MTU_512 = 2,
  IB_MTU_1024 = 3,
  IB_MTU_2048 = 4,
  IB_MTU_4096 = 5
} IB_MTU;

typedef enum _IB_LINK_STATE {
  IB_LINK_NO_CHANGE = 0,
  IB_LINK_DOWN = 1,
  IB_LINK_INIT = 2,
  IB_LINK_ARMED = 3,
  IB_LINK_ACTIVE = 4,
  IB_LINK_ACT_DEFER = 5
} IB_LINK_STATE;

typedef enum _IB_LINK_WIDTH {
  IB_LINK_WIDTH_1X = 1,
  IB_LINK_WIDTH_4X = 2,
  IB_LINK_WIDTH_8X = 4,
  IB_LINK_WIDTH_12X = 8
} IB_LINK_WIDTH;

typedef enum _IB_LINK_SPEED {
  IB_LINK_SPEED_2_5_GBS = 1,
  IB_LINK_SPEED_5_GBS = 2,
  IB_LINK_SPEED_10_GBS = 4
} IB_LINK_SPEED;

enum IB_PORT_CAP_FLAGS {
  IB_PORT_CAP_IS_SM = (1 << 1),
  IB_PORT_CAP_NOTICE_SUP = (1 << 2),
  IB_PORT_CAP_TRAP_SUP = (1 << 3),
  IB_PORT_CAP_OPT_IPD_SUP = (1 << 4),
  IB_PORT_CAP_APM_SUP = (1 << 5),
  IB_PORT_CAP_SL_MAP_SUP = (1 << 6),
  IB_PORT_CAP_MKEY_NVRAM = (1 << 7),
  IB_PORT_CAP_PKEY_NVRAM = (1 << 8),
  IB_PORT_CAP_LED_INFO_SUP = (1 << 9),
  IB_PORT_CAP_IS_SM_DISABLED = (1 << 10),
  IB_PORT_CAP_SYS_IMAGE_GUID_SUP = (1 << 11),
  IB_PORT_CAP_PKEY_SW_EXT_PORT_TRAP_SUP = (1 << 12),
  IB_PORT_CAP_CM_SUP = (1 << 16),
  IB_PORT_CAP_SNMP_TUNNEL_SUP = (1 << 17),
  IB_PORT_CAP_REINIT_SUP = (1 << 18),
  IB_PORT_CAP_DEVICE_MGMT_SUP = (1 << 19),
  IB_PORT_CAP_VENDOR_CLASS_SUP = (1 << 20),
  IB_PORT_CAP_DR_NOTICE_SUP = (1 << 21),
  IB_PORT_CAP_CAP_MASK_NOTICE_SUP = (1 << 22),
  IB_PORT_CAP_BOOT_MGMT_SUP = (1 << 23),
  IB_PORT_CAP_LINK_LATENCY_SUP = (1 << 24),
  IB_PORT_CAP_CLIENT_REG_SUP = (1 << 25)
};

enum _IB_INIT_TYPE {
  IB_INIT_TYPE_NO_LOAD = 1,
  IB_INIT_TYPE_PRESERVE_CONTENT = (1 << 1),
  IB_INIT_TYPE_PRESERVE_PRESENCE = (1 << 2),
  IB_INIT_TYPE_DO_NOT_RESUSCITATE = (1 << 3)
};

/* Port attributes. QueryPort/QueryCa write the GID table (NumGids IB_GIDs at
 * GidTblOffset) and the P_Key table (NumPkeys USHORTs, network order, at
 * PkeyTblOffset) after the structure; offsets are from the structure's start.
 * NextPortAttrOffset: offset of the next port's IB_PORT_ATTR (0 for the last).
 * Size: the bytes the whole port record (with its tables) needs. */
typedef struct KBV_NT_ALIGN8 _IB_PORT_ATTR {
  ULONG Size;
  ULONG CapabilitiesFlags; /* IB_PORT_CAP_FLAGS */
  UINT64 PortGuid;         /* network byte order */
  IB_LINK_STATE LinkState;
  IB_LINK_WIDTH LinkWidth;
  IB_LINK_SPEED LinkSpeed;
  ULONG LinkWidthSup;
  ULONG LinkSpeedSup;
  ULONG LinkWidthEnabled;
  ULONG LinkSpeedEnabled;
  IB_MTU Mtu;
  UINT64 MaxMsgSize;
  USHORT NumGids;
  USHORT NumPkeys;
  ULONG NextPortAttrOffset;
  ULONG GidTblOffset;
  ULONG PkeyTblOffset;
  USHORT PkeyViolations;
  USHORT QkeyViolations;
  USHORT BaseLid;
  USHORT SmLid;
  USHORT MaxVls;
  UCHAR Lmc;
  UCHAR PortNum;
  UCHAR InitTypeReply;
  UCHAR SubnetTimeout; /* 4.096 us * 2^SubnetTimeout */
  UCHAR SmSvcLvl;
} IB_PORT_ATTR;

enum IB_MODIFY_PORT_FLAGS {
  IB_MOD_PORT_SHUTDOWN = (1 << 0),
  IB_MOD_PORT_INIT_REPLY = (1 << 1),
  IB_MOD_PORT_RESET_QKEY_VIOLATIONS = (1 << 2)
};

typedef struct KBV_NT_ALIGN8 _IB_MODIFY_PORT {
  ULONG SetCapabilites; /* sic, the RFC's spelling */
  ULONG ClearCapabilites;
  UCHAR InitTypeReply;
} IB_MODIFY_PORT;

enum IB_CA_CAP_FLAGS {
  IB_CA_CAP_RESIZE_MAX_WR = (1 << 0),
  IB_CA_CAP_BAD_PKEY_CNTR = (1 << 1),
  IB_CA_CAP_BAD_QKEY_CNTR = (1 << 2),
  IB_CA_CAP_AUTO_PATH_MIG = (1 << 3),
  IB_CA_CAP_CHANGE_PHY_PORT = (1 << 4),
  IB_CA_CAP_AH_PORT_ENFORCE = (1 << 5),
  IB_CA_CAP_CURR_QP_STATE_MOD = (1 << 6),
  IB_CA_CAP_SHUTDOWN_PORT = (1 << 7),
  IB_CA_CAP_INIT_TYPE = (1 << 8),
  IB_CA_CAP_PORT_ACTIVE_EVENT = (1 << 9),
  IB_CA_CAP_SYS_IMAGE_GUID = (1 << 10),
  IB_CA_CAP_RC_RNR_NAK_GEN = (1 << 11),
  IB_CA_CAP_N_NOTIFY_CQ = (1 << 12),
  IB_CA_CAP_SRQ_RESIZE = (1 << 13)
};

typedef enum _IB_ATOMIC_CAP { IbAtomicNone, IbAtomicLocal, IbAtomicGlobal } IB_ATOMIC_CAP;

/* CA attributes, followed (at PortAttrOffset) by NumPorts IB_PORT_ATTR
 * records with their tables. Size: the bytes the whole result needs. */
typedef struct KBV_NT_ALIGN8 _IB_CA_ATTR {
  ULONG Size;
  UINT32 VendorId;
  UINT16 DeviceId;
  UINT16 DeviceRev;
  UINT32 DriverVersion;
  UINT64 FwVersion; /* major << 32 | minor << 16 | subminor */
  UINT64 CaGuid;    /* network byte order */
  UINT64 SystemImageGuid;
  ULONG PortAttrOffset;
  UINT8 NumPorts;
  UINT8 MaxQpReadAtomic;
  UINT8 MaxReadAtomic;
  UINT8 MaxQpInitReadAtomic;
  UINT64 PageSizeSupport;  /* bit n-1 set: 2^n byte pages supported */
  ULONG CapabilitiesFlags; /* IB_CA_CAP_FLAGS */
  IB_ATOMIC_CAP AtomicCap;
  ULONG MaxQp;
  ULONG MaxQpWr;
  ULONG MaxQpSge;
  ULONG MaxCq;
  ULONG MaxCqe;
  ULONG MaxPd;
  ULONG MaxAh;
  ULONG MaxMr;
  UINT64 MaxMrSize;
  ULONG MaxMw;
  ULONG MaxMcastGrp;
  ULONG MaxMcastQp;
  ULONG MaxMcastQpPerGrp;
  ULONG MaxSrq;
  ULONG MaxSrqWr;
  ULONG MaxSrqSge;
  UINT16 MaxPKeys;
  UINT8 LocalAckDelay;
} IB_CA_ATTR;

enum IB_MODIFY_CA_FLAGS {
  IB_MODIFY_CA_SYS_IMAGE_GUID = (1 << 0),
  IB_MODIFY_CA_NODE_DESC = (1 << 1)
};

typedef struct KBV_NT_ALIGN8 _IB_MODIFY_CA {
  UINT64 SystemImageGuid;
  CHAR NodeDesc[64];
} IB_MODIFY_CA;

/* Affiliated and unaffiliated asynchronous events (seed 000 IB_ASYNC_EVENT).
 * kbv delivers: IbAeCqError (CQ overrun, MLX5_EVENT_TYPE_CQ_ERROR),
 * IbAeQpFatal (MLX5_EVENT_TYPE_WQ_CATAS_ERROR), IbAeWqAccessError
 * (MLX5_EVENT_TYPE_WQ_ACCESS_ERROR), IbAeLocalFatal (health buffer),
 * IbAePortActive / IbAePortDown (MLX5_EVENT_TYPE_PORT_CHANGE). */
typedef enum _IB_ASYNC_EVENT {
  IbAeSqError = 1,
  IbAeSqDrained,
  IbAeRqError,
  IbAeCqError,
  IbAeQpFatal,
  IbAeQpComm,
  IbAeQpApm,
  IbAeLocalFatal,
  IbAePkeyTrap,
  IbAeQkeyTrap,
  IbAeMkeyTrap,
  IbAePortTrap,
  IbAeSysimgGuidTrap,
  IbAeBufOverrun,
  IbAeLinkIntegrity,
  IbAeFlowCtrlError,
  IbAeBkeyTrap,
  IbAeQpApmError,
  IbAeWqReqError,
  IbAeWqAccessError,
  IbAePortActive,
  IbAePortDown,
  IbAeClientReregister,
  IbAeUnknown /* always last */
} IB_ASYNC_EVENT;

typedef enum _IB_WC_STATUS {
  IbWcSuccess,
  IbWcLocalLenErr,
  IbWcLocalOpErr,
  IbWcLocalProtectionErr,
  IbWcWrFlushedErr,
  IbWcMwBindErr,
  IbWcRemAccessErr,
  IbWcRemOpErr,
  IbWcRnrRetryErr,
  IbWcTimeoutRetryErr,
  IbWcRemInvalidReqErr,
  IbWcUnmatchedResponse,
  IbWcCanceled,
  IbWcUnknown /* must be last */
} IB_WC_STATUS;

typedef enum _IB_OP_TYPE {
  IbSend,
  IbRdmaWrite,
  IbRdmaRead,
  IbInterlockedCompareExchange,
  IbInterlockedAdd,
  IbBindMw,
  /* (Type & IbRecv) tells a receive completion. */
  IbRecv = (1 << 7),
  IbRecvRdmaWrite
} IB_OP_TYPE;

enum IB_WC_FLAGS {
  IB_WC_FLAG_IMMEDIATE = (1 << 0),
  IB_WC_FLAG_GRH = (1 << 1),
  IB_WC_FLAG_VENDOR_MASK = (int)0xFFFF0000
};

/* One work completion. hQp: the QP it belongs to (NULL for a QP destroyed
 * since). VendorError: for an error completion, the CQE's syndrome << 8 |
 * vendor_err_synd (mlx5dv.h mlx5_err_cqe), 0 on success. ImmediateData in
 * network byte order. Ud.RemoteLid is 0 on RoCE. */
typedef struct KBV_NT_ALIGN8 _IB_WC {
  IB_QP_HANDLE64 hQp;
  UINT64 WrId;
  IB_WC_STATUS Status;
  IB_OP_TYPE Type;
  ULONG VendorError;
  ULONG Length;
  ULONG Flags; /* IB_WC_FLAGS */
  ULONG ImmediateData;
  struct _WC_UD {
    ULONG RemoteQp;
    USHORT RemoteLid;
    USHORT PkeyIndex;
    UCHAR RemoteSl;
    UCHAR PathBits;
  } Ud;
} IB_WC;

/* Access rights. The RFC's IB_AC_RDMA_READ is (0<<1) == 0, which cannot be
 * told from "no access"; kbv reads it as bit 0 (1<<0), the only free bit. */
enum IB_ACCESS_MASK {
  IB_AC_RDMA_READ = (1 << 0),
  IB_AC_RDMA_WRITE = (1 << 1),
  IB_AC_ATOMIC = (1 << 2),
  IB_AC_LOCAL_WRITE = (1 << 3),
  IB_AC_MW_BIND = (1 << 4)
};

enum IB_WR_FLAGS {
  IB_WR_FLAG_IMMEDIATE = (1 << 0),
  IB_WR_FLAG_FENCE = (1 << 1),
  IB_WR_FLAG_SIGNALED = (1 << 2),
  IB_WR_FLAG_SOLICITED = (1 << 3),
  IB_WR_FLAG_INLINE = (1 << 4),
  IB_WR_FLAG_LOCAL = (1 << 5),
  IB_WR_FLAG_VENDOR_MASK = (int)0xFFFF0000
};

typedef struct KBV_NT_ALIGN8 _IB_SGE {
  VOID* Address;
  ULONG Length;
  ULONG LKey;
} IB_SGE;

/* Send work request: a linked list through pNext (NULL ends it). The RFC's
 * trailing array Sge[] holds SgeCount pointers to IB_SGE entries; allocate
 * with IB_SEND_WR_SIZE(n). Type: IbSend, IbRdmaWrite, IbRdmaRead,
 * IbInterlockedCompareExchange, IbInterlockedAdd (IbBindMw, IbRecv* are not
 * valid here). ImmediateData (network order) is sent when
 * IB_WR_FLAG_IMMEDIATE is set (IbSend, IbRdmaWrite). */
typedef struct KBV_NT_ALIGN8 _IB_SEND_WR {
  struct _IB_SEND_WR* pNext;
  UINT64 WrId;
  IB_OP_TYPE Type;
  ULONG Flags; /* IB_WR_FLAGS */
  ULONG ImmediateData;
  union _WR {
    struct _SEND_UD {
      IB_ADDR_HANDLE pAh;
      ULONG RemoteQpn;
      ULONG RemoteQkey;
      USHORT PKeyIndex;
    } Ud;
    struct _SEND_RDMA {
      VOID* Address;
      ULONG RKey;
    } Rdma;
    struct _SEND_COMP_XCHG {
      VOID* Address;
      UINT64 Exchange;
      UINT64 Comparand;
      ULONG RKey;
    } CompareExchange;
    struct _SEND_XCHG_ADD {
      VOID* Address;
      UINT64 Value;
      ULONG RKey;
    } ExchangeAdd;
  } u;
  ULONG SgeCount;
  IB_SGE* Sge[];
} IB_SEND_WR;

/* Receive work request: linked through pNext; Sge[] as in IB_SEND_WR. */
typedef struct KBV_NT_ALIGN8 _IB_RECV_WR {
  struct _IB_RECV_WR* pNext;
  UINT64 WrId;
  ULONG SgeCount;
  IB_SGE* Sge[];
} IB_RECV_WR;

#define IB_SEND_WR_SIZE(n) (sizeof(IB_SEND_WR) + (size_t)(n) * sizeof(IB_SGE*))
#define IB_RECV_WR_SIZE(n) (sizeof(IB_RECV_WR) + (size_t)(n) * sizeof(IB_SGE*))

typedef struct KBV_NT_ALIGN8 _IB_BIND_WR {
  UINT64 WrId;
  IB_MR_HANDLE* pMr;
  ULONG Flags;      /* IB_WR_FLAGS */
  ULONG AccessMask; /* IB_ACCESS_MASK */
  VOID* Addr;
  ULONG Length;
} IB_BIND_WR;

enum IB_AH_FLAGS { IB_AH_FLAG_GRH = (1 << 0) };

/* Address vector. On RoCEv2 (kbv's link layer) IB_AH_FLAG_GRH is required:
 * Grh.DGid is the destination, Grh.SGid one of the port's GIDs (all zero:
 * the port's first GID), Grh.HopLimit and the traffic class of VerClassFlow
 * are used. DLid/PathBits are ignored on Ethernet. */
typedef struct KBV_NT_ALIGN8 _IB_AH_ATTR {
  UCHAR PortNumber;
  UCHAR SvcLvl;
  USHORT DLid;
  ULONG Flags; /* IB_AH_FLAGS */
  IB_GRH Grh;
  UCHAR StaticRate;
  UCHAR PathBits;
} IB_AH_ATTR;

typedef enum _IB_QP_TYPE {
  IbQpTypeReliableConn = 0,
  IbQpTypeUnreliableConn = 1,
  IbQpTypeUnreliableDgrm = 3,
  IbQpTypeQp0,
  IbQpTypeQp1,
  IbQpTypeMad,
  IbQpTypeQp0Alias,
  IbQpTypeQp1Alias
} IB_QP_TYPE;

typedef struct KBV_NT_ALIGN8 _IB_QP_CREATE {
  IB_QP_TYPE Type; /* RC, UC or UD; special QPs are not supported */
  ULONG SqDepth;
  ULONG RqDepth;
  ULONG SqSge;
  ULONG RqSge;
  ULONG SqMaxInline;
  IB_CQ_HANDLE pSendCq;
  IB_CQ_HANDLE pRecvCq;
  IB_SRQ_HANDLE pSrq; /* must be NULL: the RFC has no SRQ verbs yet */
  BOOLEAN SqSignaled; /* TRUE: every send completes; FALSE: IB_WR_FLAG_SIGNALED */
} IB_QP_CREATE;

typedef enum _IB_QP_STATE {
  IbQpsReset,
  IbQpsInit,
  IbQpsRtr,
  IbQpsRts,
  IbQpsSqd,
  IbQpsSqdDraining,
  IbQpsSqdDrained,
  IbQpsSqErr,
  IbQpsError
} IB_QP_STATE;

typedef enum _IB_APM_STATE { IbApmMigrated = 1, IbApmRearm, IbApmArmed } IB_APM_STATE;

/* Optional attributes of a transition (state.rtr.Opts / state.rts.Opts). */
enum IB_QP_MOD_FLAGS {
  IB_MOD_QP_ALTERNATE_AV = (1 << 0),
  IB_MOD_QP_PKEY = (1 << 1),
  IB_MOD_QP_APM_STATE = (1 << 2),
  IB_MOD_QP_PRIMARY_AV = (1 << 3),
  IB_MOD_QP_RNR_NAK_TIMEOUT = (1 << 4),
  IB_MOD_QP_RESP_RES = (1 << 5),
  IB_MOD_QP_INIT_DEPTH = (1 << 6),
  IB_MOD_QP_PRIMARY_PORT = (1 << 7),
  IB_MOD_QP_ACCESS_CTRL = (1 << 8),
  IB_MOD_QP_QKEY = (1 << 9),
  IB_MOD_QP_SQ_DEPTH = (1 << 10),
  IB_MOD_QP_RQ_DEPTH = (1 << 11),
  IB_MOD_QP_CURRENT_STATE = (1 << 12),
  IB_MOD_QP_RETRY_CNT = (1 << 13),
  IB_MOD_QP_LOCAL_ACK_TIMEOUT = (1 << 14),
  IB_MOD_QP_RNR_RETRY_CNT = (1 << 15)
};

/* A transition to ReqState with that state's attributes (the RFC's union).
 * ReqState IbQpsReset and IbQpsError need no attributes. The path MTU, which
 * the RFC's structure lacks, is the port's active MTU. */
typedef struct KBV_NT_ALIGN8 _IB_QP_MODIFY {
  IB_QP_STATE ReqState;
  union _QpState {
    struct _QpInit {
      UCHAR PrimaryPort;
      ULONG Qkey;
      USHORT PkeyIndex;
      ULONG AccessMask; /* IB_ACCESS_MASK: remote rights of the QP */
    } Init;
    struct _QpRtr {
      ULONG RqPsn;
      ULONG DestQp;
      IB_AH_ATTR PrimaryAh;
      UCHAR RespRes;
      UCHAR RnrNakTimeout;
      ULONG Opts; /* IB_QP_MOD_FLAGS for the fields below */
      IB_AH_ATTR AlternateAh;
      ULONG Qkey;
      USHORT PkeyIndex;
      ULONG AccessMask;
      ULONG SqDepth;
      ULONG RqDepth;
    } rtr;
    struct _QpRts {
      ULONG SqPsn;
      UCHAR RetryCnt;
      UCHAR RnrRetryCnt;
      UCHAR LocalAckTimeout;
      UCHAR InitDepth;
      ULONG Opts; /* IB_QP_MOD_FLAGS for the fields below */
      UCHAR RnrNakTimeout;
      IB_QP_STATE CurrentState;
      ULONG Qkey;
      ULONG AccessMask;
      UCHAR RespRes;
      IB_AH_ATTR PrimaryAh;
      IB_AH_ATTR AlternateAh;
      ULONG SqDepth;
      ULONG RqDepth;
      IB_APM_STATE ApmState;
      UCHAR PrimaryPort;
      USHORT PkeyIndex;
    } rts;
    struct _QpSqd {
      BOOLEAN SqdEvent;
    } sqd;
  } state;
} IB_QP_MODIFY;

typedef struct KBV_NT_ALIGN8 _IB_QP_ATTR {
  ULONG AccessMask;
  USHORT PkeyIndex;
  UCHAR InitDepth;
  UCHAR RespRes;
  BOOLEAN SqSignaled;
  IB_QP_STATE State;
  ULONG DestQpNum;
  ULONG Qkey;
  ULONG SqPsn;
  ULONG RqPsn;
  UCHAR primary_port;
  UCHAR alternate_port;
  IB_AH_ATTR PrimaryAh;
  IB_AH_ATTR AlternateAh;
  IB_APM_STATE ApmState;
} IB_QP_ATTR;

/* ---- inc/kernel/iba/ibverbs.h (seed 000) --------------------------------- */

/* User-mode vendor data (unused by kbv: may be NULL; OutputSize set to 0). */
typedef struct _CI_UDATA {
  const VOID* pInputBuffer;
  VOID* pOutputBuffer;
  SIZE_T InputSize;
  SIZE_T OutputSize;
} CI_UDATA;

/* User-mode stand-in for the Windows MDL: a list of buffers that must be
 * virtually contiguous (each one starts where the previous one ends). The
 * buffer of one MDL is StartVa + ByteOffset .. + ByteCount. */
typedef struct _MDL {
  struct _MDL* Next;
  VOID* StartVa;
  ULONG ByteOffset;
  ULONG ByteCount;
} MDL;

/* Not available to a user-mode process (physical addresses). */
typedef struct _SCATTER_GATHER_LIST SCATTER_GATHER_LIST;

/* Object structures (public, as in the RFC). The fields are read-only for
 * clients; nRef counts references (the creator's and those of objects
 * created on it). */
typedef struct _IB_CA {
  VOID* Context;
  LONG volatile nRef;
} IB_CA;

typedef VOID (*PFN_IB_CA_ASYNC_EVENT)(IB_CA* const pCa, VOID* CaContext, const UCHAR PortNumber,
                                      IB_ASYNC_EVENT Event);

typedef struct _IB_CQ {
  IB_CA* pCa;
  ULONG NumCqes; /* actual size */
  VOID* Context;
  LONG volatile nRef;
} IB_CQ;

typedef VOID (*PFN_IB_CQ_COMP_EVENT)(IB_CQ* pCq, VOID* CqContext);
typedef VOID (*PFN_IB_CQ_ASYNC_EVENT)(IB_CQ* pCq, VOID* CqContext, IB_ASYNC_EVENT Event);

typedef struct _IB_PD {
  IB_CA* pCa;
  LONG volatile nRef;
} IB_PD;

typedef struct _IB_AH {
  IB_PD* pPd;
} IB_AH;

typedef struct _IB_SRQ {
  IB_PD* pPd;
  VOID* Context;
} IB_SRQ;

/* A QP: Qpn and the actual queue depths. */
typedef struct _IB_QP {
  IB_PD* pPd;
  VOID* Context;
  IB_CQ* pSendCq;
  IB_CQ* pRecvCq;
  IB_SRQ* pSrq;
  IB_QP_TYPE Type;
  ULONG Qpn;
  ULONG SqDepth;
  ULONG RqDepth;
  ULONG SqSge;
  ULONG RqSge;
  ULONG SqMaxInline;
} IB_QP;

typedef VOID (*PFN_IB_QP_ASYNC_EVENT)(IB_QP* pQp, VOID* QpContext, IB_ASYNC_EVENT Event);

/* Registered memory. pLocalStart..pLocalEnd (exclusive) is the registered
 * range; the remote range is the same (kbv registers by virtual address). */
typedef struct _IB_MR {
  IB_PD* pPd;
  UINT8* pLocalStart;
  UINT8* pLocalEnd;
  UINT8* pRemoteStart;
  UINT8* pRemoteEnd;
  ULONG AccessMask;
  UINT32 LKey;
  UINT32 RKey;
  union _u {
    MDL* pMdlList;
    UINT64 IoVa;
  } u;
  LONG volatile nRef;
} IB_MR;

typedef struct _IB_MW {
  IB_PD* pPd;
  UINT32 RKey;
} IB_MW;

/* ---- the function table --------------------------------------------------
 * Seed 000 gives each verb's parameters and return values; what kbv adds:
 *  - OpenCa completes inline (STATUS_SUCCESS, Information = the IB_CA).
 *  - CloseCa / Destroy* / DeregMr never fail on a live object: pending
 *    notification requests complete with STATUS_CANCELLED first; the close
 *    completes when the object's references are gone (a CA's PDs and CQs; a
 *    CQ's QPs; a PD's QPs and MRs) — inline (STATUS_SUCCESS) when nothing
 *    references it. A synchronous close of a referenced object returns
 *    STATUS_PENDING and finishes, with nothing written, when they go.
 *  - QueryCa / QueryPort: AttrSize < 4: STATUS_BUFFER_TOO_SMALL; smaller
 *    than the attributes with their port records and GID/P_Key tables:
 *    STATUS_BUFFER_OVERFLOW, the truncated attributes, Size = the bytes
 *    needed; Information = the bytes written.
 *  - GetCaFatalEvent / GetCaPortEvent / GetCqAsyncEvent / GetQpAsyncEvent:
 *    several may wait; one completes per event (Information = the
 *    IB_ASYNC_EVENT); an event no request waited for is kept (up to 16) and
 *    the next request completes inline with it. GetCqCompEvent: one at a
 *    time, a new one completes the previous with STATUS_CANCELLED. The
 *    object callbacks (PFN_IB_*_EVENT) run before the request completes.
 *  - After a device fatal: the first fatal request completes with
 *    STATUS_SUCCESS, every other notification request with
 *    STATUS_FILE_FORCED_CLOSED, and calls return STATUS_FILE_FORCED_CLOSED
 *    (GetCaFatalEvent: STATUS_SUCCESS inline); closes still work.
 *  - RearmNCq: STATUS_INVALID_PARAMETER unless 1 <= NumCqes <= the CQ's
 *    size; then STATUS_NOT_SUPPORTED (mlx5 CQs have no N-notify).
 *  - PollCq: STATUS_NO_MORE_ENTRIES and *pNumWc = 0 on an empty CQ.
 *  - PostSend / PostRecv: the requests before the failed one are posted;
 *    *ppFailed names it (STATUS_IB_INSUFFICIENT_WR, _SGE, _INVALID_WR_TYPE,
 *    STATUS_IB_INVALID_STATE ...); no list: STATUS_INVALID_PARAMETER.
 *  - CreateAh / ModifyAh: the RFC's STATUS_INVALID_PARAMETER_1 (port) and
 *    _2 (source GID); a PD that is not live: STATUS_INVALID_HANDLE.
 *  - Port numbers out of range: STATUS_IB_INVALID_PORT.
 */

typedef NTSTATUS (*POPEN_CA)(VOID* const IfcContext, VOID* const Context,
                             PFN_IB_CA_ASYNC_EVENT CaAsyncEvent, CI_UDATA* const pUserData,
                             IB_REQUEST* const pRequest);
typedef NTSTATUS (*PCLOSE_CA)(IB_CA* const pCa, CI_UDATA* const pUserData,
                              IB_REQUEST* const pRequest);
typedef NTSTATUS (*PGET_CA_FATAL_EVENT)(IB_CA* const pCa, IB_REQUEST* const pRequest);
typedef NTSTATUS (*PGET_CA_PORT_EVENT)(IB_CA* const pCa, const UCHAR PortNumber,
                                       IB_REQUEST* const pRequest);
typedef NTSTATUS (*PQUERY_CA)(VOID* const Context, const SIZE_T AttrSize, IB_CA_ATTR* const pAttr,
                              IB_REQUEST* const pRequest);
typedef NTSTATUS (*PQUERY_PORT)(VOID* const Context, const UCHAR PortNumber, const SIZE_T AttrSize,
                                IB_PORT_ATTR* const pAttr, IB_REQUEST* const pRequest);
typedef NTSTATUS (*PMODIFY_CA)(IB_CA* const pCa, const ULONG Flags,
                               const IB_MODIFY_CA* const pModify, IB_REQUEST* const pRequest);
typedef NTSTATUS (*PMODIFY_PORT)(IB_CA* const pCa, const UCHAR PortNumber, const ULONG Flags,
                                 const IB_MODIFY_PORT* const pModify, IB_REQUEST* const pRequest);

typedef NTSTATUS (*PCREATE_CQ)(IB_CA* const pCa, ULONG const NumCqes, VOID* const Context,
                               PFN_IB_CQ_COMP_EVENT CqCompEvent, PFN_IB_CQ_ASYNC_EVENT CqAsyncEvent,
                               CI_UDATA* const pUserData, IB_REQUEST* const pRequest);
typedef NTSTATUS (*PDESTROY_CQ)(IB_CQ* const pCq, CI_UDATA* const pUserData,
                                IB_REQUEST* const pRequest);
typedef NTSTATUS (*PRESIZE_CQ)(IB_CQ* const pCq, ULONG const NumCqes, CI_UDATA* const pUserData,
                               IB_REQUEST* const pRequest);
typedef NTSTATUS (*PREARM_CQ)(IB_CQ* const pCq, const BOOLEAN Solicited);
typedef NTSTATUS (*PREARM_N_CQ)(IB_CQ* const pCq, const ULONG NumCqes);
/* Wc: an array of *pNumWc IB_WC structures (the RFC's text; its declaration
 * reads IB_WC* Wc[]). */
typedef NTSTATUS (*PPOLL_CQ)(IB_CQ* const pCq, LONG* const pNumWc, IB_WC Wc[]);
typedef NTSTATUS (*PPEEK_CQ)(IB_CQ* const pCq, LONG* const pNumWc);
typedef NTSTATUS (*PGET_CQ_COMP_EVENT)(IB_CQ* const pCq, IB_REQUEST* const pRequest);
typedef NTSTATUS (*PGET_CQ_ASYNC_EVENT)(IB_CQ* const pCq, IB_REQUEST* const pRequest);

typedef NTSTATUS (*PCREATE_PD)(IB_CA* const pCa, CI_UDATA* const pUserData,
                               IB_REQUEST* const pRequest);
typedef NTSTATUS (*PDESTROY_PD)(IB_PD* const pPd, CI_UDATA* const pUserData,
                                IB_REQUEST* const pRequest);

typedef NTSTATUS (*PCREATE_AH)(IB_PD* const pPd, IB_AH_ATTR* const pAhAttr, IB_AH** const ppAh);
typedef NTSTATUS (*PDESTROY_AH)(IB_AH* const pAh);
typedef NTSTATUS (*PMODIFY_AH)(IB_AH* const pAh, IB_AH_ATTR* const pModify);
typedef NTSTATUS (*PQUERY_AH)(IB_AH* const pAh, IB_AH_ATTR* const pAttr);

typedef NTSTATUS (*PPOST_SRQ_RECV)(IB_SRQ* const pSrq, const IB_RECV_WR* pRecvWr,
                                   IB_RECV_WR** const ppFailedRecv);

typedef NTSTATUS (*PCREATE_QP)(IB_PD* const pPd, IB_QP_CREATE* const pCreateQp, VOID* const Context,
                               PFN_IB_QP_ASYNC_EVENT QpAsyncEvent, CI_UDATA* const pUserData,
                               IB_REQUEST* const pRequest);
typedef NTSTATUS (*PCREATE_SPECIAL_QP)(IB_PD* const pPd, UCHAR PortNum,
                                       IB_QP_CREATE* const pCreateQp, VOID* const Context,
                                       PFN_IB_QP_ASYNC_EVENT QpAsyncEvent,
                                       IB_REQUEST* const pRequest);
typedef NTSTATUS (*PDESTROY_QP)(IB_QP* const pQp, CI_UDATA* const pUserData,
                                IB_REQUEST* const pRequest);
typedef NTSTATUS (*PMODIFY_QP)(IB_QP* const pQp, IB_QP_MODIFY* const pModify,
                               CI_UDATA* const pUserData, IB_REQUEST* const pRequest);
typedef NTSTATUS (*PQUERY_QP)(IB_QP* const pQp, IB_QP_ATTR* const pAttr, CI_UDATA* const pUserData,
                              IB_REQUEST* const pRequest);
typedef NTSTATUS (*PPOST_SEND)(IB_QP* const pQp, const IB_SEND_WR* pSendWr,
                               IB_SEND_WR** const ppFailedSend);
typedef NTSTATUS (*PPOST_RECV)(IB_QP* const pQp, const IB_RECV_WR* pRecvWr,
                               IB_RECV_WR** const ppFailedRecv);
typedef NTSTATUS (*PGET_QP_ASYNC_EVENT)(IB_QP* const pQp, IB_REQUEST* const pRequest);

typedef NTSTATUS (*PREG_MDL)(IB_PD* const pPd, MDL* const pMdlList, const ULONG AccessMask,
                             IB_REQUEST* const pRequest);
typedef NTSTATUS (*PREG_SCATTER_GATHER)(IB_PD* const pPd, SCATTER_GATHER_LIST* pScatterGather,
                                        const ULONG AccessMask, IB_REQUEST* const pRequest);
typedef NTSTATUS (*PGET_DMA_MR)(IB_PD* const pPd, const ULONG AccessMask,
                                IB_REQUEST* const pRequest);
typedef NTSTATUS (*PDEREG_MR)(IB_MR* const pMr, IB_REQUEST* const pRequest);

typedef NTSTATUS (*PCREATE_MW)(IB_PD* const pPd, CI_UDATA* const pUserData,
                               IB_REQUEST* const pRequest);
/* The RFC declares pMr here (a slip); kbv takes the window. */
typedef NTSTATUS (*PDESTROY_MW)(IB_MW* const pMw, IB_REQUEST* const pRequest);
typedef NTSTATUS (*PBIND_MW)(IB_QP* const pQp, IB_MW* const pMw, const IB_BIND_WR* const pBindWr);

typedef VOID (*PINTERFACE_REFERENCE)(PVOID Context);
typedef VOID (*PINTERFACE_DEREFERENCE)(PVOID Context);

#define IB_VERBS_INTERFACE_VERSION (1)

typedef struct _IB_VERBS_INTERFACE_STANDARD {
  /* Generic interface header (wdm.h INTERFACE). */
  USHORT Size;
  USHORT Version;
  /* Context for OpenCa, QueryCa and QueryPort. */
  PVOID Context;
  PINTERFACE_REFERENCE InterfaceReference;
  PINTERFACE_DEREFERENCE InterfaceDereference;

  /* HCA information. */
  UINT64 NodeGuid; /* network byte order */
  UINT32 VendorId;
  UINT16 DeviceId;
  UINT16 DeviceRev;
  UINT32 FwVersion; /* major << 16 | minor (the RFC has 32 bits) */
  CHAR UvpName[32]; /* "" : kbv needs no user-mode provider */

  /* HCA management. */
  POPEN_CA OpenCa;
  PCLOSE_CA CloseCa;
  PGET_CA_FATAL_EVENT GetCaFatalEvent;
  PGET_CA_PORT_EVENT GetCaPortEvent;
  PQUERY_CA QueryCa;
  PQUERY_PORT QueryPort;
  PMODIFY_CA ModifyCa;
  PMODIFY_PORT ModifyPort;

  /* CQ management. */
  PCREATE_CQ CreateCq;
  PDESTROY_CQ DestroyCq;
  PRESIZE_CQ ResizeCq;
  PREARM_CQ RearmCq;
  PREARM_N_CQ RearmNCq;
  PPOLL_CQ PollCq;
  PPEEK_CQ PeekCq;
  PGET_CQ_COMP_EVENT GetCqCompEvent;
  PGET_CQ_ASYNC_EVENT GetCqAsyncEvent;

  /* Protection domains. */
  PCREATE_PD CreatePd;
  PDESTROY_PD DestroyPd;

  /* Address handles. */
  PCREATE_AH CreateAh;
  PDESTROY_AH DestroyAh;
  PMODIFY_AH ModifyAh;
  PQUERY_AH QueryAh;

  /* Queue pairs. */
  PCREATE_QP CreateQp;
  PCREATE_SPECIAL_QP CreateSpecialQp;
  PDESTROY_QP DestroyQp;
  PMODIFY_QP ModifyQp;
  PQUERY_QP QueryQp;
  PPOST_SEND PostSend;
  PPOST_RECV PostRecv;
  PGET_QP_ASYNC_EVENT GetQpAsyncEvent;

  /* Memory regions. */
  PREG_MDL RegMdl;
  PREG_SCATTER_GATHER RegScatterGather;
  PGET_DMA_MR GetDmaMr;
  PDEREG_MR DeregMr;

  /* Memory windows. */
  PCREATE_MW CreateMw;
  PDESTROY_MW DestroyMw;
  PBIND_MW BindMw;
} IB_VERBS_INTERFACE_STANDARD;

/* Replaces IRP_MN_QUERY_INTERFACE for GUID_IB_VERBS_INTERFACE: open the
 * device named by uri ("sim:<name>", "vfio:<bdf>"; kbv_device_open rules)
 * and fill *pInterface (the table, the HCA information, Context). The
 * interface holds one reference (InterfaceReference adds one,
 * InterfaceDereference drops one). The device closes when the last
 * reference and the last CA opened through it are gone — before that call
 * returns, unless it is made from a completion routine. Synchronous.
 * Errors: STATUS_INVALID_PARAMETER_1 (uri NULL), _2 (pInterface NULL),
 * _3 (Size smaller than sizeof(IB_VERBS_INTERFACE_STANDARD)), _4 (Version
 * not IB_VERBS_INTERFACE_VERSION), the device open's status
 * (STATUS_NOT_FOUND for no such device, ...). */
NTSTATUS kbv_nt_query_interface(const char* uri, IB_VERBS_INTERFACE_STANDARD* pInterface,
                                USHORT Size, USHORT Version);

#ifdef __cplusplus
}
#endif

#endif /* KBV_COMPAT_IB_VERBS_H */
