// SPDX-License-Identifier: BSD-3-Clause
//
// Control-path state of kbv's libibverbs (internal): the devices
// ibv_get_device_list hands out, the per-context state behind
// Context::state, errno conversion.
//
// Devices. kbv_get_device_list's order (vfio: functions, then the model
// devices of KBV_SIM_DEVICES, or "sim:0"; kbv.h "Devices") names them as the
// kernel names ConnectX functions: the i-th device is "mlx5_<i>". Each
// Device lives for the rest of the process once listed (rdma-core keeps its
// ibv_device objects too), so an ibv_device pointer stays valid after
// ibv_free_device_list. The kbv device behind it is opened by the first
// ibv_open_device (or a GUID read) and closed with the last context.
//
// Threading: every function here may be called from any thread (one global
// lock for the device table; one lock per context for its object map).
#pragma once

#include <infiniband/verbs.h>

#include <kbv/kbv.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ibverbs/objects.hpp"

namespace kbv::ibverbs {

struct Device {
  ibv_device dev{};  // FIRST: the ibv_device programs hold
  char uri[KBV_URI_MAX] = {};
  int index = -1;  // position in the last kbv_get_device_list (mlx5_<index>)
  // Guarded by the device table lock:
  kbv_device_t handle = KBV_HANDLE_NONE;  // open while refs > 0
  uint32_t refs = 0;
  bool attr_known = false;
  kbv_device_attr_t attr{};  // static for the device's life once known
};
static_assert(std::is_standard_layout_v<Device>);

inline Device* to_device(ibv_device* d) { return reinterpret_cast<Device*>(d); }

// Every object a context created, by kbv handle: async events name CQs, QPs
// and SRQs by it, and ibv_close_device destroys what the program left
// (the kernel's uverbs does so when its file closes), children first: the
// enum's order.
enum class ObjKind : uint8_t { kQp, kAh, kMr, kSrq, kCq, kPd };
struct ObjEntry {
  ObjKind kind;
  void* obj;                    // Qp* / Ah* / Mr* / Srq* / Cq* / Pd*
  uint32_t delivered = 0;       // async events ibv_get_async_event returned for it
  uint32_t comp_delivered = 0;  // CQ: completion events ibv_get_cq_event returned
};

struct ContextState {
  Device* device = nullptr;
  kbv_eq_t async_eq = KBV_EQ_NONE;  // event_eq of the device and of every object
  int async_epfd = -1;              // context->async_fd (see async.cpp)
  std::mutex mu;
  std::condition_variable acked;                   // an async event was acknowledged
  std::unordered_map<uint64_t, ObjEntry> objects;  // kbv handle -> object
  bool progress_thread = false;                    // started for a completion channel
  // ibv_resize_cq (cq.cpp): kbv's resize keeps only a drained ring, so the
  // completions a CQ still holds are taken out first (through the data
  // path's ctx->ops.poll_cq) and handed out before new ones by a poll_cq
  // installed in their place (stash_poll); CQs made by ibv_create_cq_ex
  // (read through start_poll) are not resized.
  std::atomic<uint32_t> stashed{0};                           // completions waiting in stash
  std::unordered_map<const void*, std::deque<ibv_wc>> stash;  // by Cq*
  int (*data_poll_cq)(ibv_cq*, int, ibv_wc*) = nullptr;       // fast_cq.cpp's
  std::unordered_map<const void*, bool> cq_ex;                // created by _ex
  // Last kbv_port_query of each port (port_num 0: never queried); the GID
  // calls read it, ibv_query_port refreshes it.
  std::vector<kbv_port_attr_t> ports;
};

inline ContextState& state_of(ibv_context* c) { return *to_ctx(c)->state; }

// errno for a kbv status as rdma-core's verbs report them: kbv.h's mapping
// (kbv_status_to_errno) except that a request beyond a device limit is
// EINVAL and exhausted device resources ENOMEM, as the kernel's uverbs
// returns them.
int to_errno(kbv_status_t s);

// Sets errno from s and returns it (for the calls that return an errno).
int fail(kbv_status_t s);

// Registers / unregisters an object for async event delivery. unregister
// returns its entry: the events delivered for it (the destroy waits for that
// many acknowledgements, as rdma-core's destroy does).
// register_object: 0, or ENOMEM (the create then undoes itself).
int register_object(ContextState& st, uint64_t handle, ObjKind kind, void* obj);
ObjEntry unregister_object(ContextState& st, uint64_t handle);
// Destroys every object still registered (ibv_close_device).
void destroy_leftovers(ContextState& st);
// Waits until *completed (under the object's own mutex/cond, as rdma-core
// keeps them in ibv_cq / ibv_qp / ibv_srq) reaches want.
void wait_acked(pthread_mutex_t* mu, pthread_cond_t* cond, const uint32_t* completed,
                uint32_t want);

// Fill the context's slots: vctx.query_port / query_device_ex (query.cpp),
// ops.req_notify_cq / vctx.create_cq_ex (cq.cpp), vctx.create_qp_ex (qp.cpp).
void fill_query_ops(Context& ctx);
void fill_cq_ops(Context& ctx);
void fill_qp_ops(Context& ctx);

// The device attributes (queried once per device). 0 or an errno.
int device_attr(ibv_context* ctx, kbv_device_attr_t* out);

}  // namespace kbv::ibverbs

// Exported calls the library uses itself (query.cpp).
extern "C" {
int kbv_ibv_query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid);
int ibv_dontfork_range(void* base, size_t size);  // fork.cpp
int ibv_dofork_range(void* base, size_t size);
// rdma-core's enum ibv_gid_type_sysfs (IBVERBS_PRIVATE_34 ibv_query_gid_type).
enum kbv_ibv_gid_type_sysfs { KBV_SYSFS_GID_IB_ROCE_V1 = 0, KBV_SYSFS_GID_ROCE_V2 = 1 };
int ibv_query_gid_type(ibv_context* context, uint8_t port_num, unsigned int index,
                       kbv_ibv_gid_type_sysfs* type);
}
