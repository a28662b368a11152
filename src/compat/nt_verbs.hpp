// SPDX-License-Identifier: BSD-3-Clause
//
// The entries of IB_VERBS_INTERFACE_STANDARD (kbv/compat/ib_verbs.h), one
// function per RFC verb (docs/NTSTATUS.md source 000), grouped by file:
//   nt_ca.cpp  CA open/close, fatal/port event requests, query/modify CA and
//              port, kbv_nt_query_interface
//   nt_cq.cpp  PD and CQ verbs, polling into IB_WC arrays
//   nt_qp.cpp  QP verbs, linked-list posting, AH verbs
//   nt_mr.cpp  memory registration, memory windows
// Argument faults: STATUS_INVALID_PARAMETER_n for the n-th argument (from 1,
// the request counted) when NULL or malformed; STATUS_INVALID_HANDLE for an
// object pointer that is not a live object of the right kind.
#pragma once

#include <kbv/compat/ib_verbs.h>

namespace kbv::compat::nt {

// nt_ca.cpp
NTSTATUS OpenCa(VOID* const IfcContext, VOID* const Context, PFN_IB_CA_ASYNC_EVENT CaAsyncEvent,
                CI_UDATA* const pUserData, IB_REQUEST* const pRequest);
NTSTATUS CloseCa(IB_CA* const pCa, CI_UDATA* const pUserData, IB_REQUEST* const pRequest);
NTSTATUS GetCaFatalEvent(IB_CA* const pCa, IB_REQUEST* const pRequest);
NTSTATUS GetCaPortEvent(IB_CA* const pCa, const UCHAR PortNumber, IB_REQUEST* const pRequest);
NTSTATUS QueryCa(VOID* const Context, const SIZE_T AttrSize, IB_CA_ATTR* const pAttr,
                 IB_REQUEST* const pRequest);
NTSTATUS QueryPort(VOID* const Context, const UCHAR PortNumber, const SIZE_T AttrSize,
                   IB_PORT_ATTR* const pAttr, IB_REQUEST* const pRequest);
NTSTATUS ModifyCa(IB_CA* const pCa, const ULONG Flags, const IB_MODIFY_CA* const pModify,
                  IB_REQUEST* const pRequest);
NTSTATUS ModifyPort(IB_CA* const pCa, const UCHAR PortNumber, const ULONG Flags,
                    const IB_MODIFY_PORT* const pModify, IB_REQUEST* const pRequest);

// nt_cq.cpp
NTSTATUS CreateCq(IB_CA* const pCa, ULONG const NumCqes, VOID* const Context,
                  PFN_IB_CQ_COMP_EVENT CqCompEvent, PFN_IB_CQ_ASYNC_EVENT CqAsyncEvent,
                  CI_UDATA* const pUserData, IB_REQUEST* const pRequest);
NTSTATUS DestroyCq(IB_CQ* const pCq, CI_UDATA* const pUserData, IB_REQUEST* const pRequest);
NTSTATUS ResizeCq(IB_CQ* const pCq, ULONG const NumCqes, CI_UDATA* const pUserData,
                  IB_REQUEST* const pRequest);
NTSTATUS RearmCq(IB_CQ* const pCq, const BOOLEAN Solicited);
NTSTATUS RearmNCq(IB_CQ* const pCq, const ULONG NumCqes);
NTSTATUS PollCq(IB_CQ* const pCq, LONG* const pNumWc, IB_WC Wc[]);
NTSTATUS PeekCq(IB_CQ* const pCq, LONG* const pNumWc);
NTSTATUS GetCqCompEvent(IB_CQ* const pCq, IB_REQUEST* const pRequest);
NTSTATUS GetCqAsyncEvent(IB_CQ* const pCq, IB_REQUEST* const pRequest);
NTSTATUS CreatePd(IB_CA* const pCa, CI_UDATA* const pUserData, IB_REQUEST* const pRequest);
NTSTATUS DestroyPd(IB_PD* const pPd, CI_UDATA* const pUserData, IB_REQUEST* const pRequest);

// nt_qp.cpp
NTSTATUS CreateAh(IB_PD* const pPd, IB_AH_ATTR* const pAhAttr, IB_AH** const ppAh);
NTSTATUS DestroyAh(IB_AH* const pAh);
NTSTATUS ModifyAh(IB_AH* const pAh, IB_AH_ATTR* const pModify);
NTSTATUS QueryAh(IB_AH* const pAh, IB_AH_ATTR* const pAttr);
NTSTATUS CreateQp(IB_PD* const pPd, IB_QP_CREATE* const pCreateQp, VOID* const Context,
                  PFN_IB_QP_ASYNC_EVENT QpAsyncEvent, CI_UDATA* const pUserData,
                  IB_REQUEST* const pRequest);
NTSTATUS CreateSpecialQp(IB_PD* const pPd, UCHAR PortNum, IB_QP_CREATE* const pCreateQp,
                         VOID* const Context, PFN_IB_QP_ASYNC_EVENT QpAsyncEvent,
                         IB_REQUEST* const pRequest);
NTSTATUS DestroyQp(IB_QP* const pQp, CI_UDATA* const pUserData, IB_REQUEST* const pRequest);
NTSTATUS ModifyQp(IB_QP* const pQp, IB_QP_MODIFY* const pModify, CI_UDATA* const pUserData,
                  IB_REQUEST* const pRequest);
NTSTATUS QueryQp(IB_QP* const pQp, IB_QP_ATTR* const pAttr, CI_UDATA* const pUserData,
                 IB_REQUEST* const pRequest);
NTSTATUS PostSend(IB_QP* const pQp, const IB_SEND_WR* pSendWr, IB_SEND_WR** const ppFailedSend);
NTSTATUS PostRecv(IB_QP* const pQp, const IB_RECV_WR* pRecvWr, IB_RECV_WR** const ppFailedRecv);
NTSTATUS GetQpAsyncEvent(IB_QP* const pQp, IB_REQUEST* const pRequest);

// nt_mr.cpp
NTSTATUS RegMdl(IB_PD* const pPd, MDL* const pMdlList, const ULONG AccessMask,
                IB_REQUEST* const pRequest);
NTSTATUS RegScatterGather(IB_PD* const pPd, SCATTER_GATHER_LIST* pScatterGather,
                          const ULONG AccessMask, IB_REQUEST* const pRequest);
NTSTATUS GetDmaMr(IB_PD* const pPd, const ULONG AccessMask, IB_REQUEST* const pRequest);
NTSTATUS DeregMr(IB_MR* const pMr, IB_REQUEST* const pRequest);
NTSTATUS CreateMw(IB_PD* const pPd, CI_UDATA* const pUserData, IB_REQUEST* const pRequest);
NTSTATUS DestroyMw(IB_MW* const pMw, IB_REQUEST* const pRequest);
NTSTATUS BindMw(IB_QP* const pQp, IB_MW* const pMw, const IB_BIND_WR* const pBindWr);

// CI_UDATA: kbv needs no user-mode vendor data; a given one returns nothing.
inline void no_udata(CI_UDATA* u) {
  if (u != nullptr) u->OutputSize = 0;
}

}  // namespace kbv::compat::nt
