// SPDX-License-Identifier: BSD-3-Clause
//
// Devices and contexts of kbv's libibverbs: ibv_get_device_list and friends,
// ibv_open_device / ibv_close_device (verbs.h; rdma-core 44
// libibverbs/device.c for the behaviour). Naming: context.hpp.
#include <arpa/inet.h>
#include <endian.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include <kbv/log.h>

#include "ibverbs/async.hpp"
#include "ibverbs/context.hpp"
#include "ibverbs/export.hpp"

namespace kbv::ibverbs {
namespace {

std::mutex& table_mu() {
  static std::mutex mu;
  return mu;
}
// Every device ever listed, by URI; never freed (see context.hpp): the
// table itself outlives static destruction, so the devices stay reachable
// until exit.
std::vector<Device*>& table() {
  static auto* t = new std::vector<Device*>();
  return *t;
}

Device* find_or_add(const char* uri) {
  for (Device* d : table())
    if (std::strcmp(d->uri, uri) == 0) return d;
  auto* d = new (std::nothrow) Device{};
  if (!d) return nullptr;
  std::snprintf(d->uri, sizeof d->uri, "%s", uri);
  d->dev.node_type = IBV_NODE_CA;
  d->dev.transport_type = IBV_TRANSPORT_IB;  // RoCE devices report IB transport
  table().push_back(d);
  return d;
}

void name_device(Device* d, int index) {
  d->index = index;
  std::snprintf(d->dev.name, sizeof d->dev.name, "mlx5_%d", index);
  std::snprintf(d->dev.dev_name, sizeof d->dev.dev_name, "uverbs%d", index);
  std::snprintf(d->dev.dev_path, sizeof d->dev.dev_path, "/sys/class/infiniband_verbs/uverbs%d",
                index);
  std::snprintf(d->dev.ibdev_path, sizeof d->dev.ibdev_path, "/sys/class/infiniband/mlx5_%d",
                index);
}

// A kernel driver keeps its HCA up, so a program opening a device finds its
// ports trained. kbv brings the HCA up at open and a port trains its link
// after INIT_HCA: wait (bounded, as kbv-devinfo does) for each DOWN port to
// leave DOWN, driving the device meanwhile. A port that stays down (no link
// on silicon) is reported DOWN after the bound.
constexpr auto kLinkWait = std::chrono::seconds(2);
void wait_ports_trained(kbv_device_t dev, uint32_t ports) {
  const auto deadline = std::chrono::steady_clock::now() + kLinkWait;
  for (uint32_t port = 1; port <= ports; ++port) {
    while (true) {
      kbv_port_attr_t p{};
      if (kbv_port_query(dev, port, &p, KBV_EQ_NONE, 0) != KBV_SUCCESS) break;
      if (p.state != KBV_PORT_DOWN || std::chrono::steady_clock::now() >= deadline) break;
      if (kbv_device_progress(dev) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

// Opens the kbv device behind d (first user) or takes a reference.
// event_eq receives its async events when this call opens it. Table lock held.
kbv_status_t device_ref(Device* d, kbv_eq_t event_eq) {
  if (d->refs == 0) {
    kbv_device_open_attr_t a{};
    a.event_eq = event_eq;
    kbv_status_t s = kbv_device_open(d->uri, &a, KBV_EQ_NONE, 0, &d->handle);
    if (s != KBV_SUCCESS) {
      d->handle = KBV_HANDLE_NONE;
      return s;
    }
  }
  ++d->refs;
  if (!d->attr_known) {
    if (kbv_device_query(d->handle, &d->attr, KBV_EQ_NONE, 0) == KBV_SUCCESS) d->attr_known = true;
  }
  if (d->refs == 1 && d->attr_known && event_eq != KBV_EQ_NONE)
    wait_ports_trained(d->handle, d->attr.phys_port_cnt);
  return KBV_SUCCESS;
}

// Table lock held.
void device_unref(Device* d) {
  if (d->refs == 0) return;
  if (--d->refs == 0) {
    // A synchronous close returns KBV_PENDING while children remain; the
    // contexts closed theirs, so it finishes here.
    (void)kbv_device_close(d->handle, KBV_EQ_NONE, 0);
    d->handle = KBV_HANDLE_NONE;
  }
}

}  // namespace

int to_errno(kbv_status_t s) {
  switch (s) {
    case KBV_ERR_LIMIT_EXCEEDED: return EINVAL;
    case KBV_ERR_NO_RESOURCES: return ENOMEM;
    case KBV_ERR_INVALID_HANDLE: return EINVAL;
    default: {
      const int e = kbv_status_to_errno(s);
      return e == 0 ? EIO : e;
    }
  }
}

int fail(kbv_status_t s) {
  const int e = to_errno(s);
  errno = e;
  return e;
}

int register_object(ContextState& st, uint64_t handle, ObjKind kind, void* obj) {
  std::lock_guard lk(st.mu);
  try {
    st.objects[handle] = ObjEntry{kind, obj, 0, 0};
  } catch (...) {  // no exception crosses the C ABI
    return ENOMEM;
  }
  return 0;
}

ObjEntry unregister_object(ContextState& st, uint64_t handle) {
  std::lock_guard lk(st.mu);
  auto it = st.objects.find(handle);
  if (it == st.objects.end()) return ObjEntry{ObjKind::kCq, nullptr, 0, 0};
  const ObjEntry e = it->second;
  st.objects.erase(it);
  return e;
}

void destroy_leftovers(ContextState& st) {
  // The context is being closed: no other thread may use it, so the map is
  // walked once per kind (children first) without copying it.
  std::unordered_map<uint64_t, ObjEntry> left;
  {
    std::lock_guard lk(st.mu);
    left.swap(st.objects);
  }
  for (int k = 0; k <= static_cast<int>(ObjKind::kPd); ++k) {
    for (const auto& [h, e] : left) {
      if (static_cast<int>(e.kind) != k) continue;
      switch (e.kind) {
        case ObjKind::kQp: {
          auto* q = static_cast<Qp*>(e.obj);
          (void)kbv_qp_destroy(h, KBV_EQ_NONE, 0);
          release_qp_ex(*q);
          delete q;
          break;
        }
        case ObjKind::kAh:
          (void)kbv_ah_destroy(h, KBV_EQ_NONE, 0);
          delete static_cast<Ah*>(e.obj);
          break;
        case ObjKind::kMr:
          (void)kbv_mr_dereg(h, KBV_EQ_NONE, 0);
          delete static_cast<Mr*>(e.obj);
          break;
        case ObjKind::kSrq:
          (void)kbv_srq_destroy(h, KBV_EQ_NONE, 0);
          delete static_cast<Srq*>(e.obj);
          break;
        case ObjKind::kCq:
          (void)kbv_cq_destroy(h, KBV_EQ_NONE, 0);
          delete static_cast<Cq*>(e.obj);
          break;
        case ObjKind::kPd:
          (void)kbv_pd_dealloc(h, KBV_EQ_NONE, 0);
          delete static_cast<Pd*>(e.obj);
          break;
      }
    }
  }
}

void wait_acked(pthread_mutex_t* mu, pthread_cond_t* cond, const uint32_t* completed,
                uint32_t want) {
  pthread_mutex_lock(mu);
  while (*completed < want) pthread_cond_wait(cond, mu);
  pthread_mutex_unlock(mu);
}

int device_attr(ibv_context* ctx, kbv_device_attr_t* out) {
  Device* d = to_device(ctx->device);
  std::lock_guard lk(table_mu());
  if (!d->attr_known) {
    kbv_status_t s = kbv_device_query(to_ctx(ctx)->dev, &d->attr, KBV_EQ_NONE, 0);
    if (s != KBV_SUCCESS) return to_errno(s);
    d->attr_known = true;
  }
  *out = d->attr;
  return 0;
}

}  // namespace kbv::ibverbs

using namespace kbv::ibverbs;

extern "C" {

ibv_device** kbv_ibv_get_device_list(int* num_devices) {
  try {
    uint32_t count = 0;
    kbv_status_t s = kbv_get_device_list(nullptr, 0, &count);
    std::vector<kbv_device_desc_t> descs;
    while (s == KBV_SUCCESS) {
      descs.resize(count);
      uint32_t again = 0;
      s = kbv_get_device_list(descs.data(), count, &again);
      if (s != KBV_SUCCESS || again <= count) {
        descs.resize(std::min(again, count));
        break;
      }
      count = again;
    }
    if (s != KBV_SUCCESS) {
      fail(s);
      return nullptr;
    }
    auto** list = static_cast<ibv_device**>(calloc(descs.size() + 1, sizeof(ibv_device*)));
    if (!list) {
      errno = ENOMEM;
      return nullptr;
    }
    std::lock_guard lk(table_mu());
    for (size_t i = 0; i < descs.size(); ++i) {
      Device* d = find_or_add(descs[i].uri);
      if (!d) {
        free(list);
        errno = ENOMEM;
        return nullptr;
      }
      name_device(d, static_cast<int>(i));
      list[i] = &d->dev;
      // KBV_LOG_LEVEL=info shows which kbv device each name is.
      if (kbv_log_get_level() >= KBV_LOG_INFO)
        std::fprintf(stderr, "kbv info [ibverbs] %s = %s\n", d->dev.name, d->uri);
    }
    if (num_devices) *num_devices = static_cast<int>(descs.size());
    return list;
  } catch (...) {
    errno = ENOMEM;
    return nullptr;
  }
}
KBV_IBV_DEFAULT(ibv_get_device_list, "IBVERBS_1.1");

void kbv_ibv_free_device_list(ibv_device** list) { free(list); }
KBV_IBV_DEFAULT(ibv_free_device_list, "IBVERBS_1.1");

const char* kbv_ibv_get_device_name(ibv_device* device) { return device ? device->name : nullptr; }
KBV_IBV_DEFAULT(ibv_get_device_name, "IBVERBS_1.1");

int ibv_get_device_index(ibv_device* device) { return device ? to_device(device)->index : -1; }

// The node GUID, network order (rdma-core reads sysfs node_guid). kbv knows
// it from the device query, so a device nobody opened yet is opened for it
// (a model device is created and removed again).
__be64 kbv_ibv_get_device_guid(ibv_device* device) {
  if (!device) return 0;
  Device* d = to_device(device);
  std::lock_guard lk(table_mu());
  if (!d->attr_known) {
    kbv_eq_t none = KBV_EQ_NONE;
    if (device_ref(d, none) == KBV_SUCCESS) device_unref(d);
  }
  if (!d->attr_known) {
    errno = ENODEV;
    return 0;
  }
  return htobe64(d->attr.node_guid);
}
KBV_IBV_DEFAULT(ibv_get_device_guid, "IBVERBS_1.1");

ibv_context* kbv_ibv_open_device(ibv_device* device) {
  if (!device) {
    errno = EINVAL;
    return nullptr;
  }
  Device* d = to_device(device);
  auto* ctx = new (std::nothrow) Context{};
  auto* st = new (std::nothrow) ContextState{};
  if (!ctx || !st) {
    delete ctx;
    delete st;
    errno = ENOMEM;
    return nullptr;
  }
  ctx->state = st;
  st->device = d;
  kbv_status_t s = kbv_eq_create(kAsyncEqDepth, &st->async_eq);
  if (s == KBV_SUCCESS) {
    std::lock_guard lk(table_mu());
    s = device_ref(d, st->async_eq);
    if (s == KBV_SUCCESS) ctx->dev = d->handle;
  }
  int err = s == KBV_SUCCESS ? 0 : to_errno(s);
  if (err == 0) {
    // The port events of the bring-up this open did (link up) are not
    // events for the program: a kernel driver had the port up before.
    kbv_event_t ev[16];
    int n;
    while ((n = kbv_eq_poll(st->async_eq, ev, 16)) > 0) {
    }
    err = async_setup(*ctx);
  }
  if (err != 0) {
    if (ctx->dev != KBV_HANDLE_NONE) {
      std::lock_guard lk(table_mu());
      device_unref(d);
    }
    if (st->async_eq != KBV_EQ_NONE) (void)kbv_eq_destroy(st->async_eq);
    delete st;
    delete ctx;
    errno = err;
    return nullptr;
  }
  ibv_context& c = ctx->vctx.context;
  c.device = device;
  c.cmd_fd = -1;  // no kernel uverbs device behind kbv
  c.async_fd = st->async_epfd;
  c.num_comp_vectors = 1;
  pthread_mutex_init(&c.mutex, nullptr);
  mark_extended(*ctx);
  fill_verbs_ops(*ctx);
  return &c;
}
KBV_IBV_DEFAULT(ibv_open_device, "IBVERBS_1.1");

int kbv_ibv_close_device(ibv_context* context) {
  if (!context) return EINVAL;
  Context* ctx = to_ctx(context);
  ContextState* st = ctx->state;
  // What the program did not destroy goes now, as the kernel's uverbs
  // cleans up when its file closes (the wrappers are freed too: using them
  // after the close is invalid in rdma-core as well).
  destroy_leftovers(*st);
  async_teardown(*ctx);
  {
    // A progress thread a channel started runs until the device closes
    // with its last context (kbv_device_close stops it): another context
    // of the device may sleep on it.
    std::lock_guard lk(table_mu());
    device_unref(st->device);
  }
  (void)kbv_eq_destroy(st->async_eq);
  pthread_mutex_destroy(&context->mutex);
  delete st;
  delete ctx;
  return 0;
}
KBV_IBV_DEFAULT(ibv_close_device, "IBVERBS_1.1");

}  // extern "C"
