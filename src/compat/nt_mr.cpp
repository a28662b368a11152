// SPDX-License-Identifier: BSD-3-Clause
// NT verbs: memory registration and memory windows (docs/NTSTATUS.md source 000
// PREG_MDL .. PBIND_MW).
#include <new>

#include "common/abi_guard.hpp"
#include "compat/nt_objects.hpp"
#include "compat/nt_verbs.hpp"

namespace kbv::compat::nt {

namespace {

std::shared_ptr<NtPd> live_pd(const IB_PD* p) { return lookup<NtPd>(p, Kind::kPd); }

// The one virtually contiguous range an MDL list describes; false when an
// MDL does not start where the previous one ended, or one is empty.
bool mdl_range(const MDL* m, uint8_t** start, size_t* length) {
  uint8_t* s = nullptr;
  uint8_t* end = nullptr;
  for (; m != nullptr; m = m->Next) {
    if (m->StartVa == nullptr || m->ByteCount == 0) return false;
    uint8_t* b = static_cast<uint8_t*>(m->StartVa) + m->ByteOffset;
    if (s == nullptr) {
      s = b;
    } else if (b != end) {
      return false;
    }
    end = b + m->ByteCount;
  }
  if (s == nullptr) return false;
  *start = s;
  *length = static_cast<size_t>(end - s);
  return true;
}

}  // namespace

NTSTATUS RegMdl(IB_PD* const pPd, MDL* const pMdlList, const ULONG AccessMask,
                IB_REQUEST* const pRequest) try {
  constexpr ULONG kKnown =
      IB_AC_RDMA_READ | IB_AC_RDMA_WRITE | IB_AC_ATOMIC | IB_AC_LOCAL_WRITE | IB_AC_MW_BIND;
  if (pPd == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto pd = live_pd(pPd);
  if (!pd) return STATUS_INVALID_HANDLE;
  uint8_t* start = nullptr;
  size_t length = 0;
  if (!mdl_range(pMdlList, &start, &length)) return STATUS_INVALID_PARAMETER_2;
  if ((AccessMask & ~kKnown) != 0) return STATUS_INVALID_PARAMETER_3;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_4;
  NtDevice* d = pd->ca->dev.get();
  if (d->dead()) return complete_inline(pRequest, STATUS_FILE_FORCED_CLOSED);
  // No memory windows in kbv: a region cannot be bound.
  if ((AccessMask & IB_AC_MW_BIND) != 0) return complete_inline(pRequest, STATUS_NOT_SUPPORTED);
  uint32_t access = 0;
  if ((AccessMask & IB_AC_RDMA_READ) != 0) access |= KBV_ACCESS_REMOTE_READ;
  if ((AccessMask & IB_AC_RDMA_WRITE) != 0) access |= KBV_ACCESS_REMOTE_WRITE;
  if ((AccessMask & IB_AC_ATOMIC) != 0) access |= KBV_ACCESS_REMOTE_ATOMIC;
  if ((AccessMask & IB_AC_LOCAL_WRITE) != 0) access |= KBV_ACCESS_LOCAL_WRITE;
  std::shared_ptr<NtMr> mr(new (std::nothrow) NtMr());
  if (!mr) return STATUS_NO_MEMORY;
  std::shared_ptr<NtRequest> r;
  NTSTATUS st = NtRequest::begin(pRequest, 4, true, &r);
  if (st != STATUS_SUCCESS) return st;
  mr->pd = pd;
  IB_MR& p = mr->pub;
  p.pPd = pPd;
  p.pLocalStart = p.pRemoteStart = start;
  p.pLocalEnd = p.pRemoteEnd = start + length;
  p.AccessMask = AccessMask;
  p.u.pMdlList = pMdlList;
  p.nRef = 1;
  d->submit(
      [mr, start, length, access](kbv_eq_t eq, uint64_t ud) {
        return kbv_mr_reg(mr->pd->pd, start, length, access, eq, ud, &mr->mr);
      },
      [d, mr, r](const kbv_event_t& ev) {
        if (ev.status != KBV_SUCCESS) {
          (void)r->complete(nt_of(ev.status), 0);
          return;
        }
        mr->pub.LKey = static_cast<UINT32>(ev.info >> 32);
        mr->pub.RKey = static_cast<UINT32>(ev.info);
        add_ref_count(&mr->pd->pub.nRef, 1);
        publish(&mr->pub, mr);
        if (r->complete(STATUS_SUCCESS, reinterpret_cast<ULONG_PTR>(&mr->pub))) return;
        unpublish(&mr->pub);
        d->submit([mr](kbv_eq_t eq, uint64_t ud) { return kbv_mr_dereg(mr->mr, eq, ud); },
                  [mr](const kbv_event_t&) { add_ref_count(&mr->pd->pub.nRef, -1); });
      });
  return r->result(d->pump());
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS RegScatterGather(IB_PD* const pPd, SCATTER_GATHER_LIST* pScatterGather,
                          const ULONG /*AccessMask*/, IB_REQUEST* const pRequest) try {
  if (pPd == nullptr) return STATUS_INVALID_PARAMETER_1;
  if (!live_pd(pPd)) return STATUS_INVALID_HANDLE;
  if (pScatterGather == nullptr) return STATUS_INVALID_PARAMETER_2;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_4;
  // Bus addresses are not a user-mode process's to register.
  return complete_inline(pRequest, STATUS_NOT_SUPPORTED);
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS GetDmaMr(IB_PD* const pPd, const ULONG /*AccessMask*/, IB_REQUEST* const pRequest) try {
  if (pPd == nullptr) return STATUS_INVALID_PARAMETER_1;
  if (!live_pd(pPd)) return STATUS_INVALID_HANDLE;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_3;
  // All of physical memory: not from user mode.
  return complete_inline(pRequest, STATUS_NOT_SUPPORTED);
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS DeregMr(IB_MR* const pMr, IB_REQUEST* const pRequest) try {
  if (pMr == nullptr) return STATUS_INVALID_PARAMETER_1;
  auto mr = lookup<NtMr>(pMr, Kind::kMr);
  if (!mr) return STATUS_INVALID_HANDLE;
  NtDevice* d = mr->pd->ca->dev.get();
  // Seed 000 PDEREG_MR: the MDL list comes back in Information.
  const ULONG_PTR mdl = reinterpret_cast<ULONG_PTR>(mr->pub.u.pMdlList);
  return d->destroy(
      pRequest, 2, [mr] { unpublish(&mr->pub); },
      [mr](kbv_eq_t eq, uint64_t ud) { return kbv_mr_dereg(mr->mr, eq, ud); },
      [mr] { add_ref_count(&mr->pd->pub.nRef, -1); }, mdl);
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS CreateMw(IB_PD* const pPd, CI_UDATA* const pUserData, IB_REQUEST* const pRequest) try {
  if (pPd == nullptr) return STATUS_INVALID_PARAMETER_1;
  if (!live_pd(pPd)) return STATUS_INVALID_HANDLE;
  if (pRequest == nullptr) return STATUS_INVALID_PARAMETER_3;
  no_udata(pUserData);
  // kbv has no memory windows yet (no mkey of type MW, no bind WQE).
  return complete_inline(pRequest, STATUS_NOT_SUPPORTED);
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS DestroyMw(IB_MW* const pMw, IB_REQUEST* const pRequest) try {
  if (pMw == nullptr) return STATUS_INVALID_PARAMETER_1;
  (void)pRequest;
  return STATUS_INVALID_HANDLE;  // CreateMw never made one
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

NTSTATUS BindMw(IB_QP* const pQp, IB_MW* const pMw, const IB_BIND_WR* const pBindWr) try {
  if (pQp == nullptr) return STATUS_INVALID_PARAMETER_1;
  if (pMw == nullptr) return STATUS_INVALID_PARAMETER_2;
  if (pBindWr == nullptr) return STATUS_INVALID_PARAMETER_3;
  return STATUS_INVALID_HANDLE;  // CreateMw never made one
} catch (...) {
  return kbv::compat::nt_abi_exception_status();
}

}  // namespace kbv::compat::nt
