// SPDX-License-Identifier: BSD-3-Clause
// Channel interface (kbv/compat/ib_ci.h): memory regions (register, query,
// modify by re-registration, shared regions), memory windows and physical
// regions (IB_UNSUPPORTED), and the status mapping (docs/CI.md).
#include <arpa/inet.h>

#include <cstring>

#include <kbv/compat/ntstatus.h>

#include "compat/ci_objects.hpp"

namespace kbv::compat::ci {
namespace {

constexpr const char* kNames[] = {
    "IB_SUCCESS",
    "IB_INSUFFICIENT_RESOURCES",
    "IB_INSUFFICIENT_MEMORY",
    "IB_INVALID_PARAMETER",
    "IB_INVALID_SETTING",
    "IB_NOT_FOUND",
    "IB_TIMEOUT",
    "IB_CANCELED",
    "IB_INTERRUPTED",
    "IB_INVALID_PERMISSION",
    "IB_UNSUPPORTED",
    "IB_OVERFLOW",
    "IB_MAX_MCAST_QPS_REACHED",
    "IB_INVALID_QP_STATE",
    "IB_INVALID_APM_STATE",
    "IB_INVALID_PORT_STATE",
    "IB_INVALID_STATE",
    "IB_RESOURCE_BUSY",
    "IB_INVALID_PKEY",
    "IB_INVALID_LKEY",
    "IB_INVALID_RKEY",
    "IB_INVALID_MAX_WRS",
    "IB_INVALID_MAX_SGE",
    "IB_INVALID_CQ_SIZE",
    "IB_INVALID_SRQ_SIZE",
    "IB_INVALID_SERVICE_TYPE",
    "IB_INVALID_GID",
    "IB_INVALID_LID",
    "IB_INVALID_GUID",
    "IB_INVALID_GUID_MASK",
    "IB_INVALID_CA_HANDLE",
    "IB_INVALID_AV_HANDLE",
    "IB_INVALID_CQ_HANDLE",
    "IB_INVALID_QP_HANDLE",
    "IB_INVALID_SRQ_HANDLE",
    "IB_INVALID_PD_HANDLE",
    "IB_INVALID_MR_HANDLE",
    "IB_INVALID_FMR_HANDLE",
    "IB_INVALID_MW_HANDLE",
    "IB_INVALID_MCAST_HANDLE",
    "IB_INVALID_CALLBACK",
    "IB_INVALID_AL_HANDLE",
    "IB_INVALID_HANDLE",
    "IB_ERROR",
    "IB_REMOTE_ERROR",
    "IB_VERBS_PROCESSING_DONE",
    "IB_INVALID_WR_TYPE",
    "IB_QP_IN_TIMEWAIT",
    "IB_EE_IN_TIMEWAIT",
    "IB_INVALID_PORT",
    "IB_NOT_DONE",
    "IB_INVALID_INDEX",
    "IB_NO_MATCH",
    "IB_PENDING",
    "IB_UNKNOWN_ERROR",
};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == IB_UNKNOWN_ERROR + 1,
              "one name per ib_api_status_t");

ib_api_status_t by_name(const char* n) {
  for (size_t i = 0; i < sizeof(kNames) / sizeof(kNames[0]); ++i)
    if (std::strcmp(kNames[i], n) == 0) return static_cast<ib_api_status_t>(i);
  return IB_ERROR;
}

ib_api_status_t reg(kbv_ci_pd_s* pd, void* vaddr, uint64_t length, ib_access_t access, kbv_mr_t* mr,
                    uint32_t* lkey, uint32_t* rkey) {
  if (access & IB_AC_MW_BIND) return IB_UNSUPPORTED;  // no memory windows
  kbv_status_t st = kbv_mr_reg(pd->pd, vaddr, length, access_to_kbv(access), KBV_EQ_NONE, 0, mr);
  if (st == KBV_SUCCESS) st = kbv_mr_get_keys(*mr, lkey, rkey);
  return status_of(st);
}

ib_api_status_t register_mr(const ib_pd_handle_t h_pd, const ib_mr_create_t* const c,
                            net32_t* const p_lkey, net32_t* const p_rkey,
                            ib_mr_handle_t* const ph_mr, boolean_t) try {
  if (!live(h_pd, Kind::kPd)) return IB_INVALID_PD_HANDLE;
  if (!c || !p_lkey || !p_rkey || !ph_mr) return IB_INVALID_PARAMETER;
  auto* m = new kbv_ci_mr_s();
  m->pd = h_pd;
  m->vaddr = c->vaddr;
  m->length = c->length;
  m->access = c->access_ctrl;
  ib_api_status_t s = reg(h_pd, c->vaddr, c->length, c->access_ctrl, &m->mr, &m->lkey, &m->rkey);
  if (s != IB_SUCCESS) {
    delete m;
    return s;
  }
  std::lock_guard lk(mu());
  track(m, Kind::kMr);
  ++h_pd->children;
  *p_lkey = htonl(m->lkey);
  *p_rkey = htonl(m->rkey);
  *ph_mr = m;
  return IB_SUCCESS;
} catch (...) {
  return IB_INSUFFICIENT_MEMORY;
}

ib_api_status_t register_pmr(const ib_pd_handle_t h_pd, const ib_phys_create_t* const,
                             uint64_t* const, net32_t* const, net32_t* const, ib_mr_handle_t* const,
                             boolean_t) {
  if (!live(h_pd, Kind::kPd)) return IB_INVALID_PD_HANDLE;
  return IB_UNSUPPORTED;
}

ib_api_status_t query_mr(const ib_mr_handle_t h_mr, ib_mr_attr_t* const q) {
  if (!live(h_mr, Kind::kMr)) return IB_INVALID_MR_HANDLE;
  if (!q) return IB_INVALID_PARAMETER;
  std::memset(q, 0, sizeof *q);
  q->h_pd = h_mr->pd;
  const uint64_t lb = reinterpret_cast<uintptr_t>(h_mr->vaddr);
  q->local_lb = lb;
  q->local_ub = lb + h_mr->length - 1;
  if (h_mr->access & (IB_AC_RDMA_READ | IB_AC_RDMA_WRITE | IB_AC_ATOMIC)) {
    q->remote_lb = q->local_lb;
    q->remote_ub = q->local_ub;
  }
  q->access_ctrl = h_mr->access;
  q->lkey = htonl(h_mr->lkey);
  q->rkey = htonl(h_mr->rkey);
  return IB_SUCCESS;
}

ib_api_status_t modify_mr(const ib_mr_handle_t h_mr, const ib_mr_mod_t mask,
                          const ib_mr_create_t* const c, net32_t* const p_lkey,
                          net32_t* const p_rkey, const ib_pd_handle_t h_pd, boolean_t) {
  if (!live(h_mr, Kind::kMr)) return IB_INVALID_MR_HANDLE;
  if (!p_lkey || !p_rkey || mask == 0 ||
      (mask & ~(IB_MR_MOD_ADDR | IB_MR_MOD_PD | IB_MR_MOD_ACCESS)) != 0)
    return IB_INVALID_PARAMETER;
  if ((mask & (IB_MR_MOD_ADDR | IB_MR_MOD_ACCESS)) && !c) return IB_INVALID_PARAMETER;
  if ((mask & IB_MR_MOD_PD) && !live(h_pd, Kind::kPd)) return IB_INVALID_PD_HANDLE;
  kbv_ci_pd_s* pd = (mask & IB_MR_MOD_PD) ? h_pd : h_mr->pd;
  void* vaddr = (mask & IB_MR_MOD_ADDR) ? c->vaddr : h_mr->vaddr;
  const uint64_t length = (mask & IB_MR_MOD_ADDR) ? c->length : h_mr->length;
  const ib_access_t access = (mask & IB_MR_MOD_ACCESS) ? c->access_ctrl : h_mr->access;
  // kbv keys are immutable: register anew, then drop the old region (on a
  // failure the old one stays as it was).
  kbv_mr_t mr = 0;
  uint32_t lkey = 0, rkey = 0;
  if (ib_api_status_t s = reg(pd, vaddr, length, access, &mr, &lkey, &rkey); s != IB_SUCCESS)
    return s;
  (void)kbv_mr_dereg(h_mr->mr, KBV_EQ_NONE, 0);
  {
    std::lock_guard lk(mu());
    if (pd != h_mr->pd) {
      --h_mr->pd->children;
      ++pd->children;
    }
  }
  h_mr->pd = pd;
  h_mr->mr = mr;
  h_mr->vaddr = vaddr;
  h_mr->length = length;
  h_mr->access = access;
  h_mr->lkey = lkey;
  h_mr->rkey = rkey;
  *p_lkey = htonl(lkey);
  *p_rkey = htonl(rkey);
  return IB_SUCCESS;
}

ib_api_status_t modify_pmr(const ib_mr_handle_t h_mr, const ib_mr_mod_t,
                           const ib_phys_create_t* const, uint64_t* const, net32_t* const,
                           net32_t* const, const ib_pd_handle_t, boolean_t) {
  if (!live(h_mr, Kind::kMr)) return IB_INVALID_MR_HANDLE;
  return IB_UNSUPPORTED;
}

ib_api_status_t register_smr(const ib_mr_handle_t h_mr, const ib_pd_handle_t h_pd,
                             const ib_access_t access_ctrl, uint64_t* const p_vaddr,
                             net32_t* const p_lkey, net32_t* const p_rkey,
                             ib_mr_handle_t* const ph_mr, boolean_t um_call) try {
  if (!live(h_mr, Kind::kMr)) return IB_INVALID_MR_HANDLE;
  if (!live(h_pd, Kind::kPd)) return IB_INVALID_PD_HANDLE;
  if (!p_vaddr || !p_lkey || !p_rkey || !ph_mr) return IB_INVALID_PARAMETER;
  const uint64_t va = reinterpret_cast<uintptr_t>(h_mr->vaddr);
  if (*p_vaddr != va) return IB_INVALID_PARAMETER;  // virtual addresses map 1:1
  const ib_mr_create_t c{h_mr->vaddr, h_mr->length, access_ctrl};
  return register_mr(h_pd, &c, p_lkey, p_rkey, ph_mr, um_call);
} catch (...) {
  return IB_INSUFFICIENT_MEMORY;
}

ib_api_status_t deregister_mr(const ib_mr_handle_t h_mr) {
  if (!live(h_mr, Kind::kMr)) return IB_INVALID_MR_HANDLE;
  {
    std::lock_guard lk(mu());
    untrack(h_mr);
    --h_mr->pd->children;
  }
  (void)kbv_mr_dereg(h_mr->mr, KBV_EQ_NONE, 0);
  delete h_mr;
  return IB_SUCCESS;
}

// Memory windows: kbv has no MW verbs.
ib_api_status_t create_mw(const ib_pd_handle_t h_pd, net32_t* const, ib_mw_handle_t*,
                          ci_umv_buf_t*) {
  if (!live(h_pd, Kind::kPd)) return IB_INVALID_PD_HANDLE;
  return IB_UNSUPPORTED;
}
ib_api_status_t query_mw(const ib_mw_handle_t, ib_pd_handle_t*, net32_t* const, ci_umv_buf_t*) {
  return IB_UNSUPPORTED;
}
ib_api_status_t bind_mw(const ib_mw_handle_t, const ib_qp_handle_t, ib_bind_wr_t* const,
                        net32_t* const) {
  return IB_UNSUPPORTED;
}
ib_api_status_t destroy_mw(const ib_mw_handle_t) { return IB_UNSUPPORTED; }

}  // namespace

ib_api_status_t status_of(kbv_status_t s) {
  // The access layer's name for the status (ntstatus.cpp, docs/NTSTATUS.md),
  // except where the channel interface has a closer code or lacks the name.
  switch (s) {
    case KBV_SUCCESS: return IB_SUCCESS;
    case KBV_PENDING: return IB_PENDING;                    // never returned: every call waits
    case KBV_ERR_INVALID_HANDLE: return IB_INVALID_HANDLE;  // each verb names its own
    case KBV_ERR_INVALID_STATE: return IB_INVALID_STATE;
    case KBV_ERR_QUEUE_FULL: return IB_INSUFFICIENT_RESOURCES;
    case KBV_ERR_INLINE_TOO_LARGE: return IB_INVALID_SETTING;
    default: break;
  }
  return by_name(kbv_status_to_ib_api_status(s));  // IB_ERROR for a name it lacks
}

ib_wc_status_t wc_status_of(int32_t s) {
  switch (s) {
    case KBV_SUCCESS: return IB_WCS_SUCCESS;
    case KBV_ERR_LOCAL_LENGTH: return IB_WCS_LOCAL_LEN_ERR;
    case KBV_ERR_LOCAL_QP_OPERATION: return IB_WCS_LOCAL_OP_ERR;
    case KBV_ERR_LOCAL_PROTECTION: return IB_WCS_LOCAL_PROTECTION_ERR;
    case KBV_ERR_WR_FLUSHED: return IB_WCS_WR_FLUSHED_ERR;
    case KBV_ERR_MW_BIND: return IB_WCS_MEM_WINDOW_BIND_ERR;
    case KBV_ERR_REMOTE_ACCESS: return IB_WCS_REM_ACCESS_ERR;
    case KBV_ERR_REMOTE_OPERATION: return IB_WCS_REM_OP_ERR;
    case KBV_ERR_RNR_RETRY_EXCEEDED: return IB_WCS_RNR_RETRY_ERR;
    case KBV_ERR_RETRY_EXCEEDED: return IB_WCS_TIMEOUT_RETRY_ERR;
    case KBV_ERR_REMOTE_INVALID_REQUEST: return IB_WCS_REM_INVALID_REQ_ERR;
    case KBV_ERR_BAD_RESPONSE: return IB_WCS_BAD_RESP_ERR;
    case KBV_ERR_LOCAL_ACCESS: return IB_WCS_LOCAL_ACCESS_ERR;
    case KBV_ERR_REMOTE_ABORTED: return IB_WCS_REM_ABORT_ERR;
    default: return IB_WCS_GENERAL_ERR;
  }
}

void fill_mr(ci_interface_t& c) {
  c.register_mr = register_mr;
  c.register_pmr = register_pmr;
  c.query_mr = query_mr;
  c.modify_mr = modify_mr;
  c.modify_pmr = modify_pmr;
  c.register_smr = register_smr;
  c.deregister_mr = deregister_mr;
  c.create_mw = create_mw;
  c.query_mw = query_mw;
  c.bind_mw = bind_mw;
  c.destroy_mw = destroy_mw;
}

}  // namespace kbv::compat::ci

extern "C" const char* kbv_ci_status_str(ib_api_status_t s) {
  using namespace kbv::compat::ci;
  if (static_cast<unsigned>(s) > IB_UNKNOWN_ERROR) return "IB_UNKNOWN_ERROR";
  return kNames[s];
}
