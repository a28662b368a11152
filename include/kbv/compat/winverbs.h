/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kbv's WinVerbs (C++): the COM-style interfaces of the OpenFabrics Windows
 * verbs library (docs/NTSTATUS.md source 003, "winverbs implementation
 * approach"; shapes — interface and method names, argument order, structure
 * fields and flag values — from the public WinOF inc/user/rdma/winverbs.h
 * and wvstatus.h; the code is kbv's) on kbv's channel interface
 * (kbv/compat/ib_ci.h): every IWV* object wraps a ci_interface_t object and
 * every method is one or two ci calls. docs/CI.md "WinVerbs" maps each
 * method and lists what returns WV_NOT_SUPPORTED.
 *
 * Getting started: WvGetObject(IID_IWVProvider, &p) gives a provider over
 * every device of kbv_get_device_list (each opened and held while the
 * provider lives), kbv_wv_open_provider(uris, n, verbs, &p) one over the
 * named devices (kbv URIs or "guid:0x<hex>") with an optional user-mode
 * provider table (kbv_wv_verbs_t). Devices are named by node GUID, as
 * WinVerbs names a CA: QueryDeviceList lists the GUIDs (network order),
 * OpenDevice(guid) opens one; a GUID the provider does not hold is resolved
 * with kbv's "guid:" URI (docs/DESIGN.md "Device addressing") and added.
 *
 * Results: HRESULT (WV_SUCCESS = 0; FAILED(hr) for errors). Errors of the
 * channel interface map through WvConvertIbStatus (ib_api_status_t ->
 * WV_*, WinVerbs' table; docs/CI.md lists it beside the ib_api_status_t and
 * NTSTATUS mappings). COM rules: QueryInterface E_NOINTERFACE for an IID the
 * object does not implement; AddRef/Release count references, the object
 * goes at the last Release (children hold their parents: a QP its PD and
 * CQs, a PD and a CQ their device). Nothing throws.
 *
 * Asynchronous methods (the ones taking OVERLAPPED*):
 *   - With an OVERLAPPED: a method that must wait for the device (the
 *     Notify methods of IWVDevice, IWVCompletionQueue and
 *     IWVSharedReceiveQueue) returns WV_IO_PENDING and completes the
 *     request later; any other return means the request is complete. A
 *     complete request holds its HRESULT in Internal and its byte count in
 *     InternalHigh. GetOverlappedResult(ov, &bytes, bWait) returns that
 *     HRESULT, WV_PENDING for a request still pending when bWait is FALSE
 *     (poll), and waits for it when bWait is TRUE. CancelOverlappedRequests
 *     completes every pending request of the object with WV_CANCELLED; the
 *     last Release of an object cancels its requests too. Control methods
 *     (Modify, RegisterMemory, DeregisterMemory, Attach/DetachMulticast)
 *     run the channel interface's synchronous call and complete their
 *     request before they return (as a driver completing an overlapped
 *     IOCTL at once): their result is both the return value and the
 *     request's. hEvent is not used by kbv (there are no Win32 events): a
 *     non-NULL hEvent is WV_NOT_SUPPORTED; wait or poll with
 *     GetOverlappedResult.
 *   - Without an OVERLAPPED (NULL): the method waits for its result.
 *
 * Provider pre/post split (the seed's IWVCompletionQueue::Create): for
 * AllocateProtectionDomain, CreateCompletionQueue, CreateSharedReceiveQueue,
 * Create*QueuePair and CreateAddressHandle the provider table's pre_* hook
 * fills a ci_umv_buf_t (command, input, output size and buffer); its input
 * is copied into the request after the request's own fields, the
 * ci_umv_buf_t rebuilt over that copy for the channel interface call, and
 * the call's status and output (output_size as the driver set it, at most
 * the size asked) copied back before post_* gets the ci status and the
 * caller's ci_umv_buf_t. An error from pre_* is the method's result
 * (converted), without the call or post_*. A NULL hook is the default: no
 * private data (pre) / nothing (post). kbv's channel interface takes no
 * private input (ib_ci.h: IB_UNSUPPORTED), so a provider that sends some
 * gets WV_NOT_SUPPORTED with post_* told IB_UNSUPPORTED.
 *
 * Byte order as WinVerbs: NET16/32/64 are network order (GUIDs, QPNs, PSNs,
 * Q_Keys, rkeys, P_Keys, immediate data, remote addresses in
 * WV_SEND_REQUEST); Lkey and everything else host order.
 *
 * Threading: control methods from any thread. PostSend/PostReceive of one
 * QP (or SRQ) from one thread at a time, Poll/Peek of one CQ from one
 * thread at a time (kbv.h "Fast path"). Requests complete on the channel
 * interface's dispatch thread (ib_ci.h); GetOverlappedResult from any.
 */
#ifndef KBV_COMPAT_WINVERBS_H
#define KBV_COMPAT_WINVERBS_H

#ifndef __cplusplus
#error "kbv/compat/winverbs.h declares C++ interfaces"
#endif

#include <kbv/compat/ib_ci.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

/* ---- Windows base types ------------------------------------------------- */
typedef int32_t HRESULT;
typedef int32_t LONG;
typedef uint32_t ULONG;
typedef uint32_t DWORD;
typedef int BOOL;
typedef uint8_t UINT8;
typedef uint16_t UINT16;
typedef uint32_t UINT32;
typedef uint64_t UINT64;
typedef uintptr_t ULONG_PTR;
typedef size_t SIZE_T;
typedef void VOID;
typedef void* PVOID;
typedef void* LPVOID;
typedef void* HANDLE;
typedef uint16_t NET16;
typedef uint32_t NET32;
typedef uint64_t NET64;

typedef struct _GUID {
  uint32_t Data1;
  uint16_t Data2;
  uint16_t Data3;
  uint8_t Data4[8];
} GUID;
typedef GUID IID;
typedef const IID& REFIID;
inline bool operator==(const GUID& a, const GUID& b) { return memcmp(&a, &b, sizeof a) == 0; }
inline bool operator!=(const GUID& a, const GUID& b) { return !(a == b); }

#define SUCCEEDED(hr) (((HRESULT)(hr)) >= 0)
#define FAILED(hr) (((HRESULT)(hr)) < 0)
#define S_OK ((HRESULT)0x00000000L)
#define E_NOTIMPL ((HRESULT)0x80004001L)
#define E_NOINTERFACE ((HRESULT)0x80004002L)
#define E_POINTER ((HRESULT)0x80004003L)

/* wvstatus.h: values map to NTSTATUS where possible. */
#define WV_SUCCESS ((HRESULT)0x00000000L)
#define WV_TIMEOUT ((HRESULT)0x00000102L)
#define WV_PENDING ((HRESULT)0x00000103L)
#define WV_BUFFER_OVERFLOW ((HRESULT)0x80000005L)
#define WV_DEVICE_BUSY ((HRESULT)0x80000011L)
#define WV_NO_MORE_ENTRIES ((HRESULT)0x8000001AL)
#define WV_IO_PENDING ((HRESULT)0x800703E5L)
#define WV_REJECTED ((HRESULT)0x80070047L)
#define WV_UNSUCCESSFUL ((HRESULT)0xC0000001L)
#define WV_ACCESS_VIOLATION ((HRESULT)0xC0000005L)
#define WV_INVALID_HANDLE ((HRESULT)0xC0000008L)
#define WV_INVALID_PARAMETER ((HRESULT)0xC000000DL)
#define WV_NO_MEMORY ((HRESULT)0xC0000017L)
#define WV_INVALID_PARAMETER_MIX ((HRESULT)0xC0000030L)
#define WV_DATA_OVERRUN ((HRESULT)0xC000003CL)
#define WV_INSUFFICIENT_RESOURCES ((HRESULT)0xC000009AL)
#define WV_NOT_INITIALIZED ((HRESULT)0xC00000A3L)
#define WV_IO_TIMEOUT ((HRESULT)0xC00000B5L)
#define WV_NOT_SUPPORTED ((HRESULT)0xC00000BBL)
#define WV_INTERNAL_ERROR ((HRESULT)0xC00000E5L)
#define WV_CANCELLED ((HRESULT)0xC0000120L)
#define WV_REMOTE_ERROR ((HRESULT)0xC000013DL)
#define WV_INVALID_ADDRESS ((HRESULT)0xC0000141L)
#define WV_ADDRESS_ALREADY_EXISTS ((HRESULT)0xC000020AL)
#define WV_CONNECTION_REFUSED ((HRESULT)0xC0000236L)
#define WV_CONNECTION_INVALID ((HRESULT)0xC000023AL)
#define WV_CONNECTION_ACTIVE ((HRESULT)0xC000023BL)
#define WV_HOST_UNREACHABLE ((HRESULT)0xC000023DL)
#define WV_CONNECTION_ABORTED ((HRESULT)0xC0000241L)
#define WV_DEVICE_REMOVED ((HRESULT)0xC00002B6L)
#define WV_LOCAL_LENGTH ((HRESULT)0xC0380001L)
#define WV_INVALIDATION_ERROR ((HRESULT)0xC0380002L)
#define WV_LOCAL_OP_ERROR ((HRESULT)0xC0380003L)
#define WV_LOCAL_PROTECTION_ERROR ((HRESULT)0xC0380004L)
#define WV_WR_FLUSHED_ERROR ((HRESULT)0xC0380005L)
#define WV_BIND_WINDOW_ERROR ((HRESULT)0xC0380006L)
#define WV_REMOTE_ACCESS_ERROR ((HRESULT)0xC0380007L)
#define WV_REMOTE_OP_ERROR ((HRESULT)0xC0380008L)
#define WV_RNR_RETRY_ERROR ((HRESULT)0xC0380009L)
#define WV_TIMEOUT_RETRY_ERROR ((HRESULT)0xC038000AL)
#define WV_REMOTE_INVALID_REQUEST_ERROR ((HRESULT)0xC038000BL)
#define WV_BAD_RESPONSE_ERROR ((HRESULT)0xC038000CL)
#define WV_LOCAL_ACCESS_ERROR ((HRESULT)0xC038000DL)
#define WV_UNKNOWN_ERROR ((HRESULT)0xC038000EL)

/* The Win32 OVERLAPPED layout. Internal: the request's HRESULT (WV_PENDING
 * while pending); InternalHigh: bytes transferred (0 for every kbv request);
 * Offset/OffsetHigh unused; hEvent must be NULL (see above). */
typedef struct _OVERLAPPED {
  ULONG_PTR Internal;
  ULONG_PTR InternalHigh;
  union {
    struct {
      DWORD Offset;
      DWORD OffsetHigh;
    };
    PVOID Pointer;
  };
  HANDLE hEvent;
} OVERLAPPED;

/* ---- winverbs.h types ----------------------------------------------------- */
typedef union _WV_GID {
  UINT8 Raw[16]; /* network order */
} WV_GID;

#define WV_DEVICE_RESIZE_MAX_WR 0x00000001
#define WV_DEVICE_BAD_PKEY_COUNTER 0x00000002
#define WV_DEVICE_BAD_QKEY_COUNTER 0x00000004
#define WV_DEVICE_PATH_MIGRATION 0x00000010
#define WV_DEVICE_CHANGE_PHYSICAL_PORT 0x00000020
#define WV_DEVICE_AH_PORT_CHECKING 0x00000040
#define WV_DEVICE_QP_STATE_MODIFIER 0x00000080
#define WV_DEVICE_SHUTDOWN_PORT 0x00000100
#define WV_DEVICE_INIT_TYPE 0x00000200
#define WV_DEVICE_PORT_ACTIVE_EVENT 0x00000400
#define WV_DEVICE_SYSTEM_IMAGE_GUID 0x00000800
#define WV_DEVICE_RC_RNR_NAK_GENERATION 0x00001000
#define WV_DEVICE_SRQ_RESIZE 0x00002000
#define WV_DEVICE_BATCH_NOTIFY_CQ 0x00004000

typedef enum _WV_DEVICE_TYPE { WvDeviceUnknown, WvDeviceInfiniband, WvDeviceIwarp } WV_DEVICE_TYPE;
typedef enum _WV_ATOMIC_CAPABILITIES {
  WvAtomicNone,
  WvAtomicDevice,
  WvAtomicNode
} WV_ATOMIC_CAPABILITIES;

/* RoCE HCAs report WvDeviceInfiniband (IBTA transport, verbs semantics). */
typedef struct _WV_DEVICE_ATTRIBUTES {
  UINT64 FwVersion; /* major << 32 | minor << 16 | subminor */
  NET64 NodeGuid;
  NET64 SystemImageGuid;
  UINT32 VendorId;
  UINT32 VendorPartId;
  UINT32 HwVersion;
  DWORD CapabilityFlags; /* WV_DEVICE_*: kbv sets PORT_ACTIVE_EVENT, SYSTEM_IMAGE_GUID,
                            RC_RNR_NAK_GENERATION */
  WV_ATOMIC_CAPABILITIES AtomicCapability;
  DWORD PageSizeCapabilityFlags;
  SIZE_T MaxMrSize;
  SIZE_T MaxQp;
  SIZE_T MaxQpWr;
  SIZE_T MaxSge;
  SIZE_T MaxCq;
  SIZE_T MaxCqEntries;
  SIZE_T MaxMr;
  SIZE_T MaxPd;
  SIZE_T MaxQpResponderResources;
  SIZE_T MaxResponderResources;
  SIZE_T MaxQpInitiatorDepth;
  SIZE_T MaxInlineSend;
  SIZE_T MaxMw;
  SIZE_T MaxMulticast;
  SIZE_T MaxQpAttach;
  SIZE_T MaxMulticastQp;
  SIZE_T MaxAh;
  SIZE_T MaxFmr;
  SIZE_T MaxMapPerFmr;
  SIZE_T MaxSrq;
  SIZE_T MaxSrqWr;
  SIZE_T MaxSrqSge;
  SIZE_T MaxPkeys;
  WV_DEVICE_TYPE DeviceType;
  UINT8 LocalAckDelay;
  UINT8 PhysPortCount;
} WV_DEVICE_ATTRIBUTES;

typedef enum _WV_PORT_STATE {
  WvPortNop,
  WvPortDown,
  WvPortInit,
  WvPortArmed,
  WvPortActive,
  WvPortActiveDefer
} WV_PORT_STATE;

typedef struct _WV_PORT_ATTRIBUTES {
  DWORD PortCabilityFlags; /* (sic, WinVerbs' spelling) */
  WV_PORT_STATE State;
  UINT32 MaxMtu;    /* bytes: 256 .. 4096 */
  UINT32 ActiveMtu; /* bytes */
  UINT32 GidTableLength;
  UINT32 MaxMessageSize;
  UINT32 BadPkeyCounter;
  UINT32 QkeyViolationCounter;
  UINT16 PkeyTableLength;
  NET16 Lid; /* RoCE: 0 */
  NET16 SmLid;
  UINT8 Lmc;
  UINT8 MaxVls;
  UINT8 SmSl;
  UINT8 SubnetTimeout;
  UINT8 InitTypeReply;
  UINT8 ActiveWidth;
  UINT8 ActiveSpeed;
  UINT8 PhysicalState;
} WV_PORT_ATTRIBUTES;

typedef struct _WV_DEVICE_ADDRESS {
  NET64 DeviceGuid;
  NET16 Pkey;
  UINT8 PortNumber;
} WV_DEVICE_ADDRESS;

/* IWVDevice::Notify flags */
#define WV_EVENT_ERROR 0x00000001
#define WV_EVENT_STATE 0x00000002
#define WV_EVENT_ADDRESS 0x00000004
#define WV_EVENT_LINK_ADDRESS 0x00000008
#define WV_EVENT_PARTITION 0x00000010
#define WV_EVENT_MANAGEMENT 0x00000020

typedef enum _WV_CQ_NOTIFY_TYPE { WvCqError, WvCqNextCompletion, WvCqSolicited } WV_CQ_NOTIFY_TYPE;

typedef enum _WV_OPCODE {
  WvSend,
  WvRdmaWrite,
  WvRdmaRead,
  WvCompareExchange,
  WvFetchAdd,
  WvBindWindow,
  WvReceive = (1 << 7),
  WvReceiveRdmaWrite
} WV_OPCODE;

#define WV_WC_IMMEDIATE 0x00000001
#define WV_WC_GRH_VALID 0x00000004

typedef struct _WV_COMPLETION {
  VOID* QpContext; /* WV_QP_CREATE.Context of the QP it came from */
  UINT64 WrId;
  WV_OPCODE Opcode;
  UINT32 Length;
  UINT64 VendorCode; /* kbv's status (kbv_status_t) of an error completion */
  HRESULT Status;    /* WV_SUCCESS or WV_LOCAL_LENGTH .. WV_UNKNOWN_ERROR */
  DWORD Flags;       /* WV_WC_* */
  NET32 ImmediateData;
  NET32 SourceQpn; /* UD */
  UINT16 PkeyIndex;
  NET16 SLid;
  UINT8 SL;
  UINT8 DLidPathBits;
} WV_COMPLETION;

typedef struct _WV_MEMORY_KEYS {
  UINT32 Lkey; /* host order */
  NET32 Rkey;
} WV_MEMORY_KEYS;

/* Access flags (the same bits as IBAL's IB_AC_*; REMOTE_WRITE includes LOCAL_WRITE). */
#define WV_ACCESS_REMOTE_READ 0x00000001
#define WV_ACCESS_REMOTE_WRITE 0x0000000A
#define WV_ACCESS_REMOTE_ATOMIC 0x00000004
#define WV_ACCESS_LOCAL_WRITE 0x00000008
#define WV_ACCESS_MW_BIND 0x00000010

/* Send flags (the same bits as IBAL's IB_SEND_OPT_*). */
#define WV_SEND_IMMEDIATE 0x00000001
#define WV_SEND_FENCE 0x00000002
#define WV_SEND_SIGNALED 0x00000004
#define WV_SEND_SOLICITED 0x00000008
#define WV_SEND_INLINE 0x00000010

typedef struct _WV_SGE {
  VOID* pAddress;
  UINT32 Length;
  UINT32 Lkey;
} WV_SGE;

typedef struct _WV_SEND_DATAGRAM {
  UINT64 WrId;
  ULONG_PTR AhKey; /* from CreateAddressHandle */
  WV_SGE* pSgl;
  SIZE_T nSge;
  DWORD Flags;
  NET32 ImmediateData;
  NET32 DestinationQpn;
  NET32 DestinationQkey;
} WV_SEND_DATAGRAM;

typedef struct _WV_SEND_REQUEST {
  UINT64 WrId;
  struct _WV_SEND_REQUEST* pNext;
  WV_SGE* pSgl;
  UINT32 nSge;
  WV_OPCODE Opcode; /* WvSend .. WvFetchAdd (WvBindWindow: WV_NOT_SUPPORTED) */
  DWORD Flags;
  NET32 ImmediateData;
  union {
    struct {
      NET64 RemoteAddress;
      NET32 Rkey;
    } Rdma;
    struct {
      NET64 RemoteAddress;
      NET32 Rkey;
      NET64 Compare;
      NET64 Exchange;
    } CompareExchange;
    struct {
      NET64 RemoteAddress;
      NET32 Rkey;
      NET64 Add;
      UINT64 Reserved;
    } FetchAdd;
    struct {
      ULONG_PTR AhKey;
      NET32 DestinationQpn;
      NET32 DestinationQkey;
    } Datagram;
  } Wr;
} WV_SEND_REQUEST;

typedef struct _WV_NETWORK_ROUTE {
  UINT8 Valid; /* RoCE: must be set (every packet has a GRH) */
  UINT8 Reserved;
  UINT8 HopLimit;
  UINT8 TrafficClass;
  NET32 FlowLabel;
  WV_GID SGid; /* all zero: the port's RoCEv2 GID */
  WV_GID DGid;
} WV_NETWORK_ROUTE;

typedef struct _WV_ADDRESS_VECTOR {
  WV_NETWORK_ROUTE Route;
  UINT16 Reserved;
  NET16 DLid; /* RoCE: ignored */
  UINT8 ServiceLevel;
  UINT8 SourcePathBits;
  UINT8 StaticRate;
  UINT8 PortNumber;
} WV_ADDRESS_VECTOR;

typedef enum _WV_QP_TYPE { WvQpTypeRc, WvQpTypeUc, WvQpTypeReserved, WvQpTypeUd } WV_QP_TYPE;
typedef enum _WV_QP_STATE {
  WvQpStateReset,
  WvQpStateInit,
  WvQpStateRtr,
  WvQpStateRts,
  WvQpStateSqd,
  WvQpStateSqError,
  WvQpStateError
} WV_QP_STATE;
typedef enum _WV_APM_STATE { WvApmMigrated = 1, WvApmRearm, WvApmArmed } WV_APM_STATE;

#define WV_QP_SIGNAL_SENDS 0x00000001
#define WV_QP_MEMORY_MANAGEMENT 0x00000002 /* kbv: WV_NOT_SUPPORTED (no memory windows) */

struct IWVCompletionQueue;
struct IWVSharedReceiveQueue;
struct IWVProtectionDomain;

typedef struct _WV_QP_CREATE {
  IWVCompletionQueue* pSendCq;
  IWVCompletionQueue* pReceiveCq;
  IWVSharedReceiveQueue* pSharedReceiveQueue; /* may be NULL */
  VOID* Context;                              /* WV_COMPLETION.QpContext */
  SIZE_T SendDepth;
  SIZE_T SendSge;
  SIZE_T ReceiveDepth;
  SIZE_T ReceiveSge;
  SIZE_T MaxInlineSend;
  SIZE_T InitiatorDepth;
  SIZE_T ResponderResources;
  WV_QP_TYPE QpType;
  DWORD QpFlags; /* WV_QP_* */
} WV_QP_CREATE;

/* IWVQueuePair::Modify Options: which optional attributes are given. */
#define WV_QP_ATTR_CAPABILITIES 0x00000001
#define WV_QP_ATTR_INITIATOR_DEPTH 0x00000002
#define WV_QP_ATTR_RESPONDER_RESOURCES 0x00000004
#define WV_QP_ATTR_CURRENT_STATE 0x00000008
#define WV_QP_ATTR_STATE 0x00000010
#define WV_QP_ATTR_PATH_MIG_STATE 0x00000020
#define WV_QP_ATTR_DESTINATION_QPN 0x00000040
#define WV_QP_ATTR_QKEY 0x00000080
#define WV_QP_ATTR_SEND_PSN 0x00000100
#define WV_QP_ATTR_RECEIVE_PSN 0x00000200
#define WV_QP_ATTR_FLAGS 0x00000400
#define WV_QP_ATTR_ACCESS_FLAGS 0x00000800
#define WV_QP_ATTR_AV 0x00001000
#define WV_QP_ATTR_ALTERNATE_AV 0x00002000
#define WV_QP_ATTR_PORT_NUMBER 0x00004000
#define WV_QP_ATTR_PKEY_INDEX 0x00008000
#define WV_QP_ATTR_ACK_TIMEOUT 0x00010000
#define WV_QP_ATTR_RNR_NAK_TIMEOUT 0x00020000
#define WV_QP_ATTR_ERROR_RETRY_COUNT 0x00040000
#define WV_QP_ATTR_RNR_RETRY_COUNT 0x00080000

typedef struct _WV_QP_ATTRIBUTES {
  IWVProtectionDomain* pPd; /* Query: the object's (not AddRef'd) */
  IWVCompletionQueue* pSendCq;
  IWVCompletionQueue* pReceiveCq;
  IWVSharedReceiveQueue* pSharedReceiveQueue;
  SIZE_T SendDepth;
  SIZE_T SendSge;
  SIZE_T ReceiveDepth;
  SIZE_T ReceiveSge;
  SIZE_T MaxInlineSend;
  SIZE_T InitiatorDepth;
  SIZE_T ResponderResources;
  WV_QP_TYPE QpType;
  WV_QP_STATE CurrentQpState;
  WV_QP_STATE QpState; /* Modify: the state wanted (WV_QP_ATTR_STATE; else the current) */
  WV_APM_STATE ApmState;
  NET32 Qpn;
  NET32 DestinationQpn;
  NET32 Qkey;
  NET32 SendPsn;
  NET32 ReceivePsn;
  DWORD QpFlags;
  DWORD AccessFlags;
  WV_ADDRESS_VECTOR AddressVector; /* its PortNumber is the QP's port (INIT) */
  WV_ADDRESS_VECTOR AlternateAddressVector;
  UINT32 PathMtu; /* bytes: 256, 512, 1024, 2048, 4096 */
  UINT32 AlternatePathMtu;
  UINT16 PkeyIndex;
  UINT16 AlternatePkeyIndex;
  UINT8 LocalAckTimeout;
  UINT8 AlternateLocalAckTimeout;
  UINT8 RnrNakTimeout;
  UINT8 SequenceErrorRetryCount;
  UINT8 RnrRetryCount;
} WV_QP_ATTRIBUTES;

/* ---- interfaces (winverbs.h order; IIDs are WinVerbs') --------------------- */
inline constexpr IID IID_IUnknown = {0x00000000, 0x0000, 0x0000, {0xC0, 0, 0, 0, 0, 0, 0, 0x46}};
inline constexpr IID IID_IWVOverlapped = {
    0x64687592, 0xaa67, 0x4b55, {0xbc, 0x4b, 0xe1, 0x89, 0xbd, 0xd2, 0xfc, 0x4f}};
inline constexpr IID IID_IWVCompletionQueue = {
    0xa5f6a8de, 0x18a6, 0x4086, {0xaa, 0x93, 0x7b, 0x66, 0x60, 0x7a, 0x29, 0x0a}};
inline constexpr IID IID_IWVMemoryWindow = {
    0xe8ae206f, 0xb31f, 0x4709, {0x8d, 0xc9, 0x6e, 0x87, 0x62, 0x5f, 0x93, 0xfc}};
inline constexpr IID IID_IWVAddressHandle = {
    0x95903fde, 0xfdac, 0x4007, {0x92, 0xb7, 0xe0, 0x12, 0x86, 0xcd, 0x36, 0xe8}};
inline constexpr IID IID_IWVSharedReceiveQueue = {
    0xb2bf30e4, 0x8c2e, 0x4659, {0xac, 0x7a, 0x4c, 0x5e, 0x0d, 0x2c, 0x71, 0x14}};
inline constexpr IID IID_IWVQueuePair = {
    0x35c64226, 0x6a1f, 0x4c8d, {0x94, 0x65, 0xc6, 0xfe, 0xe8, 0x05, 0x3c, 0xdd}};
inline constexpr IID IID_IWVConnectQueuePair = {
    0xdf905570, 0xaeeb, 0x4114, {0xb3, 0x0e, 0x4d, 0xc3, 0xeb, 0x5a, 0x9a, 0xd6}};
inline constexpr IID IID_IWVDatagramQueuePair = {
    0x3ba2f15e, 0xd961, 0x4df8, {0x8f, 0xc2, 0x60, 0x43, 0xa6, 0xd6, 0x78, 0x26}};
inline constexpr IID IID_IWVProtectionDomain = {
    0xe3657abe, 0x8c4e, 0x4994, {0xbe, 0x32, 0x45, 0xb4, 0x9b, 0xae, 0x95, 0xe4}};
inline constexpr IID IID_IWVDevice = {
    0x244af78c, 0xb1ac, 0x40e4, {0x98, 0x96, 0x27, 0x1d, 0x58, 0xd5, 0x91, 0xb8}};
inline constexpr IID IID_IWVProvider = {
    0x75ad0eda, 0x23c9, 0x4687, {0x8f, 0xff, 0xd1, 0xb3, 0x4e, 0x1e, 0xf5, 0xbe}};

/* Interfaces are released, never deleted (protected destructors). */
struct IUnknown {
  virtual HRESULT QueryInterface(REFIID riid, LPVOID* ppvObj) = 0;
  virtual ULONG AddRef() = 0;
  virtual ULONG Release() = 0;

 protected:
  ~IUnknown() = default;
};

struct IWVOverlapped : IUnknown {
  virtual HRESULT CancelOverlappedRequests() = 0;
  /* pNumberOfBytesTransferred may be NULL; NULL pOverlapped: WV_INVALID_PARAMETER. */
  virtual HRESULT GetOverlappedResult(OVERLAPPED* pOverlapped, DWORD* pNumberOfBytesTransferred,
                                      BOOL bWait) = 0;

 protected:
  ~IWVOverlapped() = default;
};

struct IWVCompletionQueue : IWVOverlapped {
  /* ci resize_cq: the CQ must be empty (WV_DEVICE_BUSY otherwise); *pEntries out: the size. */
  virtual HRESULT Resize(SIZE_T* pEntries) = 0;
  virtual HRESULT Peek(SIZE_T* pCompletedEntries) = 0;
  /* WvCqNextCompletion / WvCqSolicited: pending until the next (solicited)
   * completion (enable_cq_notify; every pending request of either kind
   * completes with WV_SUCCESS on the callback, and with the CQ's error on a
   * CQ error). WvCqError: pending until the CQ reports an error. */
  virtual HRESULT Notify(WV_CQ_NOTIFY_TYPE Type, OVERLAPPED* pOverlapped) = 0;
  /* WV_NOT_SUPPORTED (ci enable_ncomp_cq_notify: kbv_cq_arm has no count). */
  virtual HRESULT BatchNotify(SIZE_T CompletedEntries, OVERLAPPED* pOverlapped) = 0;
  /* Up to Entries completions; returns how many (0 when none or on error). */
  virtual SIZE_T Poll(WV_COMPLETION Completions[], SIZE_T Entries) = 0;

 protected:
  ~IWVCompletionQueue() = default;
};

/* Never created on kbv (AllocateMemoryWindow is WV_NOT_SUPPORTED). */
struct IWVMemoryWindow : IUnknown {
 protected:
  ~IWVMemoryWindow() = default;
};

struct IWVAddressHandle : IUnknown {
 protected:
  ~IWVAddressHandle() = default;
};

struct IWVSharedReceiveQueue : IWVOverlapped {
  virtual HRESULT Query(SIZE_T* pMaxWr, SIZE_T* pMaxSge, SIZE_T* pSrqLimit) = 0;
  /* Arms the limit event at SrqLimit; a MaxWr other than the SRQ's:
   * WV_NOT_SUPPORTED (no SRQ resize). */
  virtual HRESULT Modify(SIZE_T MaxWr, SIZE_T SrqLimit) = 0;
  virtual HRESULT PostReceive(UINT64 WrId, WV_SGE* pSgl, SIZE_T nSge) = 0;
  /* Pending until the armed limit is reached (IB_AE_SRQ_LIMIT_REACHED). */
  virtual HRESULT Notify(OVERLAPPED* pOverlapped) = 0;

 protected:
  ~IWVSharedReceiveQueue() = default;
};

struct IWVQueuePair : IWVOverlapped {
  virtual HRESULT Query(WV_QP_ATTRIBUTES* pAttributes) = 0;
  /* To pAttributes->QpState (ci modify_qp); Options: WV_QP_ATTR_*. SQD,
   * alternate paths (ALTERNATE_AV, PATH_MIG_STATE): WV_NOT_SUPPORTED. */
  virtual HRESULT Modify(WV_QP_ATTRIBUTES* pAttributes, DWORD Options, OVERLAPPED* pOverlapped) = 0;
  virtual HRESULT PostReceive(UINT64 WrId, WV_SGE* pSgl, SIZE_T nSge) = 0;
  /* The linked list in order; on an error *ppFailed (may be NULL) is the
   * first request not posted (those before it were). */
  virtual HRESULT PostSend(WV_SEND_REQUEST* pSend, WV_SEND_REQUEST** ppFailed) = 0;

 protected:
  ~IWVQueuePair() = default;
};

struct IWVConnectQueuePair : IWVQueuePair {
  virtual HRESULT Send(UINT64 WrId, WV_SGE* pSgl, SIZE_T nSge, DWORD Flags,
                       NET32 ImmediateData) = 0;
  virtual HRESULT Read(UINT64 WrId, WV_SGE* pSgl, SIZE_T nSge, DWORD Flags, NET64 Address,
                       NET32 Rkey) = 0;
  virtual HRESULT Write(UINT64 WrId, WV_SGE* pSgl, SIZE_T nSge, DWORD Flags, NET32 ImmediateData,
                        NET64 Address, NET32 Rkey) = 0;
  virtual HRESULT CompareExchange(UINT64 WrId, WV_SGE* pSge, DWORD Flags, NET64 Compare,
                                  NET64 Exchange, NET64 Address, NET32 Rkey) = 0;
  virtual HRESULT FetchAdd(UINT64 WrId, WV_SGE* pSge, DWORD Flags, NET64 Value, NET64 Address,
                           NET32 Rkey) = 0;
  /* WV_NOT_SUPPORTED (no memory windows). */
  virtual HRESULT BindMemoryWindow(IWVMemoryWindow* pMw, UINT64 WrId, UINT32 Lkey,
                                   DWORD AccessFlags, DWORD SendFlags, const VOID* pBuffer,
                                   SIZE_T BufferLength, NET32* pRkey) = 0;

 protected:
  ~IWVConnectQueuePair() = default;
};

struct IWVDatagramQueuePair : IWVQueuePair {
  virtual HRESULT Send(UINT64 WrId, ULONG_PTR AhKey, WV_SGE* pSge, DWORD Flags,
                       NET32 DestinationQpn, NET32 DestinationQkey) = 0;
  virtual HRESULT SendMessage(WV_SEND_DATAGRAM* pSend) = 0;
  /* ci attach_mcast / detach_mcast (Lid unused on RoCE). */
  virtual HRESULT AttachMulticast(WV_GID* pGid, NET16 Lid, OVERLAPPED* pOverlapped) = 0;
  virtual HRESULT DetachMulticast(WV_GID* pGid, NET16 Lid, OVERLAPPED* pOverlapped) = 0;

 protected:
  ~IWVDatagramQueuePair() = default;
};

struct IWVProtectionDomain : IWVOverlapped {
  virtual HRESULT CreateSharedReceiveQueue(SIZE_T MaxWr, SIZE_T MaxSge, SIZE_T SrqLimit,
                                           IWVSharedReceiveQueue** ppSrq) = 0;
  /* RC or UC (else WV_INVALID_PARAMETER). */
  virtual HRESULT CreateConnectQueuePair(WV_QP_CREATE* pAttributes, IWVConnectQueuePair** ppQp) = 0;
  /* UD (else WV_INVALID_PARAMETER). */
  virtual HRESULT CreateDatagramQueuePair(WV_QP_CREATE* pAttributes,
                                          IWVDatagramQueuePair** ppQp) = 0;
  /* ci register_mr; deregistered by DeregisterMemory(Lkey) or with the PD. */
  virtual HRESULT RegisterMemory(const VOID* pBuffer, SIZE_T BufferLength, DWORD AccessFlags,
                                 OVERLAPPED* pOverlapped, WV_MEMORY_KEYS* pKeys) = 0;
  virtual HRESULT DeregisterMemory(UINT32 Lkey, OVERLAPPED* pOverlapped) = 0;
  /* WV_NOT_SUPPORTED (ci create_mw: IB_UNSUPPORTED). */
  virtual HRESULT AllocateMemoryWindow(IWVMemoryWindow** ppMw) = 0;
  /* *pAhKey names the address in WV_SEND_REQUEST / Send while the handle lives. */
  virtual HRESULT CreateAddressHandle(WV_ADDRESS_VECTOR* pAddress, IWVAddressHandle** ppAh,
                                      ULONG_PTR* pAhKey) = 0;

 protected:
  ~IWVProtectionDomain() = default;
};

struct IWVDevice : IWVOverlapped {
  virtual HRESULT Query(WV_DEVICE_ATTRIBUTES* pAttributes) = 0;
  virtual HRESULT QueryPort(UINT8 PortNumber, WV_PORT_ATTRIBUTES* pAttributes) = 0;
  virtual HRESULT QueryGid(UINT8 PortNumber, DWORD Index, WV_GID* pGid) = 0;
  virtual HRESULT FindGid(UINT8 PortNumber, WV_GID* pGid, DWORD* pIndex) = 0;
  virtual HRESULT QueryPkey(UINT8 PortNumber, UINT16 Index, NET16* pPkey) = 0;
  virtual HRESULT FindPkey(UINT8 PortNumber, NET16 Pkey, UINT16* pIndex) = 0;
  /* *pEntries in: at least; out: the entries made. */
  virtual HRESULT CreateCompletionQueue(SIZE_T* pEntries, IWVCompletionQueue** ppCq) = 0;
  virtual HRESULT AllocateProtectionDomain(IWVProtectionDomain** ppPd) = 0;
  /* Pending until an event on PortNumber: *pFlags (written at completion)
   * WV_EVENT_STATE for a port state change, WV_EVENT_ERROR for a device
   * fatal error. Events with no request pending are kept per port and
   * complete the next request at once. */
  virtual HRESULT Notify(UINT8 PortNumber, OVERLAPPED* pOverlapped, DWORD* pFlags) = 0;

 protected:
  ~IWVDevice() = default;
};

struct IWVConnectEndpoint; /* not provided by kbv */
struct IWVDatagramEndpoint;

struct IWVProvider : IUnknown {
  /* NULL: kbv has no kernel file (requests complete on the dispatch thread). */
  virtual HANDLE GetFileHandle() = 0;
  /* *pBufferSize in: bytes of pGuidList (may be NULL with 0); out: the bytes
   * the list needs. Too small: WV_BUFFER_OVERFLOW with *pBufferSize set. */
  virtual HRESULT QueryDeviceList(NET64* pGuidList, SIZE_T* pBufferSize) = 0;
  virtual HRESULT QueryDevice(NET64 Guid, WV_DEVICE_ATTRIBUTES* pAttributes) = 0;
  /* The device and port whose GID table holds pAddress (AF_INET: its
   * IPv4-mapped GID; AF_INET6: the address), Pkey the default 0xFFFF;
   * WV_INVALID_ADDRESS when none. */
  virtual HRESULT TranslateAddress(const sockaddr* pAddress, WV_DEVICE_ADDRESS* pDeviceAddress) = 0;
  /* WV_INVALID_ADDRESS: no HCA with that GUID; WV_DEVICE_BUSY: its CA is
   * open through the channel interface elsewhere in this process. */
  virtual HRESULT OpenDevice(NET64 Guid, IWVDevice** ppDevice) = 0;
  /* WV_NOT_SUPPORTED: kbv has no connection manager (IB CM / rdma_cm). */
  virtual HRESULT CreateConnectEndpoint(IWVConnectEndpoint** ppConnectEndpoint) = 0;
  virtual HRESULT CreateDatagramEndpoint(IWVDatagramEndpoint** ppDatagramEndpoint) = 0;

 protected:
  ~IWVProvider() = default;
};

/* ---- the user-mode provider table (uvp_interface_t's pre/post role) -------- */
typedef struct kbv_wv_verbs {
  void* context; /* passed to every hook */
  ib_api_status_t (*pre_allocate_pd)(void* context, ci_umv_buf_t* p_umv_buf);
  void (*post_allocate_pd)(void* context, ib_api_status_t status, ci_umv_buf_t* p_umv_buf);
  ib_api_status_t (*pre_create_cq)(void* context, uint32_t* p_size, ci_umv_buf_t* p_umv_buf);
  void (*post_create_cq)(void* context, ib_api_status_t status, uint32_t size,
                         ci_umv_buf_t* p_umv_buf);
  ib_api_status_t (*pre_create_srq)(void* context, ib_srq_attr_t* p_srq_attr,
                                    ci_umv_buf_t* p_umv_buf);
  void (*post_create_srq)(void* context, ib_api_status_t status, ci_umv_buf_t* p_umv_buf);
  ib_api_status_t (*pre_create_qp)(void* context, ib_qp_create_t* p_create_attr,
                                   ci_umv_buf_t* p_umv_buf);
  void (*post_create_qp)(void* context, ib_api_status_t status, ci_umv_buf_t* p_umv_buf);
  ib_api_status_t (*pre_create_av)(void* context, ib_av_attr_t* p_av_attr, ci_umv_buf_t* p_umv_buf);
  void (*post_create_av)(void* context, ib_api_status_t status, ci_umv_buf_t* p_umv_buf);
} kbv_wv_verbs_t;

/* ---- entry points (libkbv) ------------------------------------------------- */
extern "C" {
/* WvGetObject: IID_IWVProvider -> a provider over kbv_get_device_list (the
 * devices that open; none: an empty provider). Other IIDs: E_NOINTERFACE. */
HRESULT kbv_wv_get_object(const IID* riid, LPVOID* ppvObj);
/* A provider over the named HCAs (kbv URIs or "guid:0x<hex>"), each opened
 * through kbv_ci_get_interface and held until the provider's last Release;
 * verbs (may be NULL, copied) supplies the pre/post hooks. Errors: the
 * first open's, converted (WV_INVALID_ADDRESS: not found, WV_DEVICE_BUSY). */
HRESULT kbv_wv_open_provider(const char* const* uris, size_t count, const kbv_wv_verbs_t* verbs,
                             IWVProvider** ppProvider);
/* WvConvertIbStatus: WinVerbs' table (docs/CI.md "WinVerbs status mapping"). */
HRESULT kbv_wv_convert_ib_status(ib_api_status_t status);
/* "WV_CANCELLED" ...; "WV_UNKNOWN_STATUS" for another value. */
const char* kbv_wv_status_str(HRESULT hr);
}

inline HRESULT WvGetObject(REFIID riid, LPVOID* ppvObj) { return kbv_wv_get_object(&riid, ppvObj); }
inline HRESULT WvConvertIbStatus(ib_api_status_t status) {
  return kbv_wv_convert_ib_status(status);
}

#endif /* KBV_COMPAT_WINVERBS_H */
