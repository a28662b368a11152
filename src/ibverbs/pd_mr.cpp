// SPDX-License-Identifier: BSD-3-Clause
//
// Protection domains and memory regions of kbv's libibverbs (verbs.h;
// rdma-core 44 libibverbs/verbs.c and man pages ibv_alloc_pd(3),
// ibv_reg_mr(3), ibv_rereg_mr(3)).
//
// Access flags: IBV_ACCESS_LOCAL_WRITE / REMOTE_WRITE / REMOTE_READ /
// REMOTE_ATOMIC are kbv's KBV_ACCESS_* (same bits). IBV_ACCESS_MW_BIND is
// accepted and has no effect (kbv has no memory windows: ibv_alloc_mw fails
// with EOPNOTSUPP, so the right can never be used); IBV_ACCESS_HUGETLB is a
// hint and ignored; the optional range (IBV_ACCESS_OPTIONAL_RANGE, e.g.
// RELAXED_ORDERING) is dropped as rdma-core drops optional flags a device
// lacks. IBV_ACCESS_ZERO_BASED and IBV_ACCESS_ON_DEMAND fail with
// EOPNOTSUPP, as does an iova other than the address (kbv work requests
// name virtual addresses, so an MR's iova is its address).
#include <cerrno>
#include <cstdint>
#include <new>

#include "ibverbs/context.hpp"
#include "ibverbs/export.hpp"

namespace kbv::ibverbs {
namespace {

constexpr unsigned kKbvAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
constexpr unsigned kIgnoredAccess = IBV_ACCESS_MW_BIND | IBV_ACCESS_HUGETLB;

ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned access) {
  if (!pd) {
    errno = EINVAL;
    return nullptr;
  }
  access &= ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);
  if (access & ~(kKbvAccess | kIgnoredAccess)) {
    const unsigned known =
        kKbvAccess | kIgnoredAccess | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND;
    errno = (access & ~known) ? EINVAL : EOPNOTSUPP;
    return nullptr;
  }
  if (iova != reinterpret_cast<uintptr_t>(addr)) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  // rdma-core: the range is kept out of fork children (fork.cpp) first.
  if (int e = ibv_dontfork_range(addr, length); e != 0) {
    errno = e;
    return nullptr;
  }
  auto* m = new (std::nothrow) Mr{};
  if (!m) {
    (void)ibv_dofork_range(addr, length);
    errno = ENOMEM;
    return nullptr;
  }
  kbv_status_t s =
      kbv_mr_reg(to_pd(pd)->handle, addr, length, access & kKbvAccess, KBV_EQ_NONE, 0, &m->handle);
  if (s == KBV_SUCCESS) s = kbv_mr_get_keys(m->handle, &m->mr.lkey, &m->mr.rkey);
  if (s != KBV_SUCCESS) {
    if (m->handle != KBV_HANDLE_NONE) (void)kbv_mr_dereg(m->handle, KBV_EQ_NONE, 0);
    delete m;
    (void)ibv_dofork_range(addr, length);
    // The kernel refused to pin the pages (kbv_mr_reg: not mapped, or a
    // write right on memory the process cannot write): EFAULT, as
    // ib_umem_get's pin_user_pages failure reaches rdma-core's ibv_reg_mr.
    if (s == KBV_ERR_ACCESS_DENIED)
      errno = EFAULT;
    else
      fail(s);
    return nullptr;
  }
  m->mr.context = pd->context;
  m->mr.pd = pd;
  m->mr.addr = addr;
  m->mr.length = length;
  m->mr.handle = static_cast<uint32_t>(m->handle);
  if (register_object(state_of(pd->context), m->handle, ObjKind::kMr, m) != 0) {
    (void)kbv_mr_dereg(m->handle, KBV_EQ_NONE, 0);
    delete m;
    (void)ibv_dofork_range(addr, length);
    errno = ENOMEM;
    return nullptr;
  }
  ++to_pd(pd)->users;
  return &m->mr;
}

}  // namespace
}  // namespace kbv::ibverbs

using namespace kbv::ibverbs;

// verbs.h defines ibv_reg_mr and ibv_reg_mr_iova as macros too; the
// definitions below are kbv_<name> bound by .symver (export.hpp).
extern "C" {

ibv_pd* kbv_ibv_alloc_pd(ibv_context* context) {
  if (!context) {
    errno = EINVAL;
    return nullptr;
  }
  auto* p = new (std::nothrow) Pd{};
  if (!p) {
    errno = ENOMEM;
    return nullptr;
  }
  kbv_status_t s = kbv_pd_alloc(to_ctx(context)->dev, KBV_EQ_NONE, 0, &p->handle);
  if (s != KBV_SUCCESS) {
    delete p;
    fail(s);
    return nullptr;
  }
  p->pd.context = context;
  p->pd.handle = static_cast<uint32_t>(p->handle);
  if (register_object(state_of(context), p->handle, ObjKind::kPd, p) != 0) {
    (void)kbv_pd_dealloc(p->handle, KBV_EQ_NONE, 0);
    delete p;
    errno = ENOMEM;
    return nullptr;
  }
  return &p->pd;
}
KBV_IBV_DEFAULT(ibv_alloc_pd, "IBVERBS_1.1");

// The kernel refuses to free a PD its objects still use (EBUSY, the PD
// stays valid); kbv would accept the close and finish it later, so the
// check is made here.
int kbv_ibv_dealloc_pd(ibv_pd* pd) {
  if (!pd) return EINVAL;
  Pd* p = to_pd(pd);
  if (p->users.load() != 0) return EBUSY;
  const kbv_status_t s = kbv_pd_dealloc(p->handle, KBV_EQ_NONE, 0);
  if (s != KBV_SUCCESS && s != KBV_PENDING) return to_errno(s);
  (void)unregister_object(state_of(pd->context), p->handle);
  delete p;
  return 0;
}
KBV_IBV_DEFAULT(ibv_dealloc_pd, "IBVERBS_1.1");

ibv_mr* kbv_ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return reg_mr(pd, addr, length, reinterpret_cast<uintptr_t>(addr), static_cast<unsigned>(access));
}
KBV_IBV_DEFAULT(ibv_reg_mr, "IBVERBS_1.1");

ibv_mr* kbv_ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  return reg_mr(pd, addr, length, iova, static_cast<unsigned>(access));
}
KBV_IBV_DEFAULT(ibv_reg_mr_iova, "IBVERBS_1.7");

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                         unsigned int access) {
  return reg_mr(pd, addr, length, iova, access);
}

// A dma-buf is memory of another device (GPU); kbv registers host memory.
ibv_mr* ibv_reg_dmabuf_mr(ibv_pd*, uint64_t, size_t, uint64_t, int, int) {
  errno = EOPNOTSUPP;
  return nullptr;
}

int kbv_ibv_dereg_mr(ibv_mr* mr) {
  if (!mr) return EINVAL;
  Mr* m = to_mr(mr);
  const kbv_status_t s = kbv_mr_dereg(m->handle, KBV_EQ_NONE, 0);
  if (s != KBV_SUCCESS && s != KBV_PENDING) return to_errno(s);
  (void)unregister_object(state_of(mr->context), m->handle);
  --to_pd(mr->pd)->users;
  (void)ibv_dofork_range(mr->addr, mr->length);
  delete m;
  return 0;
}
KBV_IBV_DEFAULT(ibv_dereg_mr, "IBVERBS_1.1");

// kbv cannot change a registered region in place: after rdma-core's input
// checks, the answer of rdma-core's default rereg_mr op (dummy_ops.c) —
// IBV_REREG_MR_ERR_INPUT (the old MR stays valid) with errno EOPNOTSUPP.
int kbv_ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  (void)pd;
  if (!mr || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
      ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!length || !addr)) ||
      (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS))) {
    errno = EINVAL;
    return IBV_REREG_MR_ERR_INPUT;
  }
  errno = EOPNOTSUPP;
  return IBV_REREG_MR_ERR_INPUT;
}
KBV_IBV_DEFAULT(ibv_rereg_mr, "IBVERBS_1.1");

}  // extern "C"
