/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NT kernel-verbs interface on kbv: IB_VERBS_INTERFACE_STANDARD in the
 * shape of the OpenIB Windows "[RFC v2] Kernel Async Verbs" (docs/NTSTATUS.md source 000,
 * inc/iba/ibdef.h + inc/kernel/iba/ibverbs.h, Nov 2005), so code written
 * against that proposal ports to kbv. Semantics: docs/NTSTATUS.md "IRP
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
 * Completion rules (docs/NTSTATUS.md, seed 000 RETURN VALUES of every function):
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

#include <kbv/compat/ib_types.h>
#include <kbv/eq.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

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
/* The same for the HCA whose node GUID is NodeGuid (network byte order, as
 * IB_VERBS_INTERFACE_STANDARD.NodeGuid): the seeds' HCA resolution by CA
 * GUID (docs/NTSTATUS.md source 004), kbv_device_open's "guid:0x<hex>"
 * rules. Errors: STATUS_INVALID_PARAMETER_1 (NodeGuid 0), _2, _3, _4 as
 * above, STATUS_NOT_FOUND (no HCA has it), STATUS_DEVICE_BUSY (it is open
 * in this process). */
NTSTATUS kbv_nt_query_interface_by_guid(UINT64 NodeGuid, IB_VERBS_INTERFACE_STANDARD* pInterface,
                                        USHORT Size, USHORT Version);

#ifdef __cplusplus
}
#endif

#endif /* KBV_COMPAT_IB_VERBS_H */
