/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data types of the NT kernel-verbs interface (kbv/compat/ib_verbs.h):
 * fixed-width Windows base types, the STATUS_* names, and the IB_* types of
 * the OpenIB Windows "[RFC v2] Kernel Async Verbs" inc/iba/ibdef.h
 * (docs/NTSTATUS.md source 000, Nov 2005): attributes, work requests and completions,
 * QP create/modify/query structures. Included by ib_verbs.h; see there for
 * what differs from the RFC and the completion rules.
 */
#ifndef KBV_COMPAT_IB_TYPES_H
#define KBV_COMPAT_IB_TYPES_H

#include <kbv/compat/ntstatus.h>
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

#ifdef __cplusplus
}
#endif

#endif /* KBV_COMPAT_IB_TYPES_H */
