// SPDX-License-Identifier: BSD-3-Clause
// WinVerbs (kbv/compat/winverbs.h): WvConvertIbStatus and the status names,
// the objects' registry and reference counts, OVERLAPPED requests, the
// ci_umv_buf_t round trip, the channel interface's callbacks and the shared
// CA. docs/CI.md "WinVerbs".
#include <endian.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <new>

#include "compat/ci_objects.hpp"
#include "compat/wv_objects.hpp"

namespace kbv::compat::wv {
namespace {

// The process request mutex: pending lists, OVERLAPPED completion, waiters.
std::mutex& req_mu() {
  static std::mutex* m = new std::mutex();
  return *m;
}
std::condition_variable& req_cv() {
  static std::condition_variable* c = new std::condition_variable();
  return *c;
}

// Serialises opening and closing CAs (Ca::get, ~Ca).
std::mutex& open_mu() {
  static std::mutex* m = new std::mutex();
  return *m;
}

struct Registry {
  std::mutex mu;
  uintptr_t next = 1;
  std::unordered_map<uintptr_t, Object*> objs;
  std::unordered_map<uint64_t, Ca*> cas;  // node GUID (host order) -> open CA
};
Registry& reg() {
  static Registry* r = new Registry();  // outlives static destruction
  return *r;
}

void store_result(OVERLAPPED* ov, HRESULT hr) {
  ov->InternalHigh = 0;
  __atomic_store_n(&ov->Internal, static_cast<ULONG_PTR>(static_cast<uint32_t>(hr)),
                   __ATOMIC_RELEASE);
}
HRESULT load_result(const OVERLAPPED* ov) {
  return static_cast<HRESULT>(
      static_cast<uint32_t>(__atomic_load_n(&ov->Internal, __ATOMIC_ACQUIRE)));
}

// WvConvertIbStatus: WinVerbs' table, in ib_api_status_t order.
constexpr HRESULT kIbToWv[] = {
    WV_SUCCESS,                 // IB_SUCCESS
    WV_INSUFFICIENT_RESOURCES,  // IB_INSUFFICIENT_RESOURCES
    WV_NO_MEMORY,               // IB_INSUFFICIENT_MEMORY
    WV_INVALID_PARAMETER,       // IB_INVALID_PARAMETER
    WV_INVALID_PARAMETER,       // IB_INVALID_SETTING
    WV_INVALID_ADDRESS,         // IB_NOT_FOUND
    WV_TIMEOUT,                 // IB_TIMEOUT
    WV_CANCELLED,               // IB_CANCELED
    WV_CANCELLED,               // IB_INTERRUPTED
    WV_ACCESS_VIOLATION,        // IB_INVALID_PERMISSION
    WV_NOT_SUPPORTED,           // IB_UNSUPPORTED
    WV_BUFFER_OVERFLOW,         // IB_OVERFLOW
    WV_INSUFFICIENT_RESOURCES,  // IB_MAX_MCAST_QPS_REACHED
    WV_INVALID_PARAMETER,       // IB_INVALID_QP_STATE
    WV_INVALID_PARAMETER,       // IB_INVALID_APM_STATE
    WV_INVALID_PARAMETER,       // IB_INVALID_PORT_STATE
    WV_INVALID_PARAMETER,       // IB_INVALID_STATE
    WV_DEVICE_BUSY,             // IB_RESOURCE_BUSY
    WV_INVALID_HANDLE,          // IB_INVALID_PKEY
    WV_INVALID_HANDLE,          // IB_INVALID_LKEY
    WV_INVALID_HANDLE,          // IB_INVALID_RKEY
    WV_INSUFFICIENT_RESOURCES,  // IB_INVALID_MAX_WRS
    WV_INSUFFICIENT_RESOURCES,  // IB_INVALID_MAX_SGE
    WV_INSUFFICIENT_RESOURCES,  // IB_INVALID_CQ_SIZE
    WV_INSUFFICIENT_RESOURCES,  // IB_INVALID_SRQ_SIZE
    WV_NOT_SUPPORTED,           // IB_INVALID_SERVICE_TYPE
    WV_INVALID_ADDRESS,         // IB_INVALID_GID
    WV_INVALID_ADDRESS,         // IB_INVALID_LID
    WV_INVALID_ADDRESS,         // IB_INVALID_GUID
    WV_INVALID_ADDRESS,         // IB_INVALID_GUID_MASK
    WV_INVALID_HANDLE,          // IB_INVALID_CA_HANDLE
    WV_INVALID_HANDLE,          // IB_INVALID_AV_HANDLE
    WV_INVALID_HANDLE,          // IB_INVALID_CQ_HANDLE
    WV_INVALID_HANDLE,          // IB_INVALID_QP_HANDLE
    WV_INVALID_HANDLE,          // IB_INVALID_SRQ_HANDLE
    WV_INVALID_HANDLE,          // IB_INVALID_PD_HANDLE
    WV_INVALID_HANDLE,          // IB_INVALID_MR_HANDLE
    WV_INVALID_HANDLE,          // IB_INVALID_FMR_HANDLE
    WV_INVALID_HANDLE,          // IB_INVALID_MW_HANDLE
    WV_INVALID_HANDLE,          // IB_INVALID_MCAST_HANDLE
    WV_INVALID_PARAMETER,       // IB_INVALID_CALLBACK
    WV_INVALID_HANDLE,          // IB_INVALID_AL_HANDLE
    WV_INVALID_HANDLE,          // IB_INVALID_HANDLE
    WV_UNKNOWN_ERROR,           // IB_ERROR
    WV_REMOTE_OP_ERROR,         // IB_REMOTE_ERROR
    WV_SUCCESS,                 // IB_VERBS_PROCESSING_DONE
    WV_INVALID_PARAMETER,       // IB_INVALID_WR_TYPE
    WV_INVALID_PARAMETER,       // IB_QP_IN_TIMEWAIT
    WV_INVALID_PARAMETER,       // IB_EE_IN_TIMEWAIT
    WV_INVALID_ADDRESS,         // IB_INVALID_PORT
    WV_PENDING,                 // IB_NOT_DONE
    WV_INVALID_PARAMETER,       // IB_INVALID_INDEX
    WV_INVALID_PARAMETER,       // IB_NO_MATCH
    WV_PENDING,                 // IB_PENDING
};
static_assert(sizeof kIbToWv / sizeof kIbToWv[0] == IB_UNKNOWN_ERROR,
              "one WinVerbs status per ib_api_status_t below IB_UNKNOWN_ERROR");

struct Name {
  HRESULT hr;
  const char* name;
};
#define KBV_WV_NAME(x) \
  { x, #x }
constexpr Name kNames[] = {
    KBV_WV_NAME(WV_SUCCESS),
    KBV_WV_NAME(WV_TIMEOUT),
    KBV_WV_NAME(WV_PENDING),
    KBV_WV_NAME(WV_BUFFER_OVERFLOW),
    KBV_WV_NAME(WV_DEVICE_BUSY),
    KBV_WV_NAME(WV_NO_MORE_ENTRIES),
    KBV_WV_NAME(WV_IO_PENDING),
    KBV_WV_NAME(WV_REJECTED),
    KBV_WV_NAME(WV_UNSUCCESSFUL),
    KBV_WV_NAME(WV_ACCESS_VIOLATION),
    KBV_WV_NAME(WV_INVALID_HANDLE),
    KBV_WV_NAME(WV_INVALID_PARAMETER),
    KBV_WV_NAME(WV_NO_MEMORY),
    KBV_WV_NAME(WV_INVALID_PARAMETER_MIX),
    KBV_WV_NAME(WV_DATA_OVERRUN),
    KBV_WV_NAME(WV_INSUFFICIENT_RESOURCES),
    KBV_WV_NAME(WV_NOT_INITIALIZED),
    KBV_WV_NAME(WV_IO_TIMEOUT),
    KBV_WV_NAME(WV_NOT_SUPPORTED),
    KBV_WV_NAME(WV_INTERNAL_ERROR),
    KBV_WV_NAME(WV_CANCELLED),
    KBV_WV_NAME(WV_REMOTE_ERROR),
    KBV_WV_NAME(WV_INVALID_ADDRESS),
    KBV_WV_NAME(WV_ADDRESS_ALREADY_EXISTS),
    KBV_WV_NAME(WV_CONNECTION_REFUSED),
    KBV_WV_NAME(WV_CONNECTION_INVALID),
    KBV_WV_NAME(WV_CONNECTION_ACTIVE),
    KBV_WV_NAME(WV_HOST_UNREACHABLE),
    KBV_WV_NAME(WV_CONNECTION_ABORTED),
    KBV_WV_NAME(WV_DEVICE_REMOVED),
    KBV_WV_NAME(WV_LOCAL_LENGTH),
    KBV_WV_NAME(WV_INVALIDATION_ERROR),
    KBV_WV_NAME(WV_LOCAL_OP_ERROR),
    KBV_WV_NAME(WV_LOCAL_PROTECTION_ERROR),
    KBV_WV_NAME(WV_WR_FLUSHED_ERROR),
    KBV_WV_NAME(WV_BIND_WINDOW_ERROR),
    KBV_WV_NAME(WV_REMOTE_ACCESS_ERROR),
    KBV_WV_NAME(WV_REMOTE_OP_ERROR),
    KBV_WV_NAME(WV_RNR_RETRY_ERROR),
    KBV_WV_NAME(WV_TIMEOUT_RETRY_ERROR),
    KBV_WV_NAME(WV_REMOTE_INVALID_REQUEST_ERROR),
    KBV_WV_NAME(WV_BAD_RESPONSE_ERROR),
    KBV_WV_NAME(WV_LOCAL_ACCESS_ERROR),
    KBV_WV_NAME(WV_UNKNOWN_ERROR),
    KBV_WV_NAME(E_NOTIMPL),
    KBV_WV_NAME(E_NOINTERFACE),
    KBV_WV_NAME(E_POINTER),
};
#undef KBV_WV_NAME

}  // namespace

HRESULT hr_of(ib_api_status_t s) {
  const auto i = static_cast<size_t>(s);
  return i < sizeof kIbToWv / sizeof kIbToWv[0] ? kIbToWv[i] : WV_UNKNOWN_ERROR;
}

HRESULT wc_hr_of(ib_wc_status_t s) {
  switch (s) {
    case IB_WCS_SUCCESS: return WV_SUCCESS;
    case IB_WCS_LOCAL_LEN_ERR: return WV_LOCAL_LENGTH;
    case IB_WCS_LOCAL_OP_ERR: return WV_LOCAL_OP_ERROR;
    case IB_WCS_LOCAL_PROTECTION_ERR: return WV_LOCAL_PROTECTION_ERROR;
    case IB_WCS_WR_FLUSHED_ERR: return WV_WR_FLUSHED_ERROR;
    case IB_WCS_MEM_WINDOW_BIND_ERR: return WV_BIND_WINDOW_ERROR;
    case IB_WCS_REM_ACCESS_ERR: return WV_REMOTE_ACCESS_ERROR;
    case IB_WCS_REM_OP_ERR: return WV_REMOTE_OP_ERROR;
    case IB_WCS_RNR_RETRY_ERR: return WV_RNR_RETRY_ERROR;
    case IB_WCS_TIMEOUT_RETRY_ERR: return WV_TIMEOUT_RETRY_ERROR;
    case IB_WCS_REM_INVALID_REQ_ERR: return WV_REMOTE_INVALID_REQUEST_ERROR;
    case IB_WCS_BAD_RESP_ERR: return WV_BAD_RESPONSE_ERROR;
    case IB_WCS_LOCAL_ACCESS_ERR: return WV_LOCAL_ACCESS_ERROR;
    default: return WV_UNKNOWN_ERROR;  // IB_WCS_GENERAL_ERR, IB_WCS_REM_ABORT_ERR
  }
}

// ---- objects ---------------------------------------------------------------------

Object::Object() {
  Registry& r = reg();
  std::lock_guard lk(r.mu);
  id_ = r.next++;
  r.objs[id_] = this;
}

Object::~Object() = default;

ULONG Object::add_ref() { return refs_.fetch_add(1, std::memory_order_relaxed) + 1; }

ULONG Object::release() {
  const ULONG n = refs_.fetch_sub(1, std::memory_order_acq_rel) - 1;
  if (n != 0) return n;
  {
    Registry& r = reg();
    std::lock_guard lk(r.mu);
    r.objs.erase(id_);
  }
  (void)cancel_all();
  delete this;
  return 0;
}

bool Object::try_add_ref() {
  ULONG n = refs_.load(std::memory_order_relaxed);
  do {
    if (n == 0) return false;  // being released
  } while (!refs_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel));
  return true;
}

Object* acquire(void* key) {
  Registry& r = reg();
  std::lock_guard lk(r.mu);
  auto it = r.objs.find(reinterpret_cast<uintptr_t>(key));
  return it != r.objs.end() && it->second->try_add_ref() ? it->second : nullptr;
}

void on_ci_completion(void* cq_context) {
  if (Object* o = acquire(cq_context)) {
    o->on_completion();
    o->release();
  }
}

void on_ci_event(const ib_event_rec_t* rec) {
  if (rec == nullptr) return;
  if (Object* o = acquire(rec->context)) {
    o->on_event(*rec);
    o->release();
  }
}

// ---- requests ---------------------------------------------------------------------

HRESULT finish(OVERLAPPED* ov, HRESULT hr) {
  if (ov == nullptr) return hr;
  {
    std::lock_guard lk(req_mu());
    store_result(ov, hr);
  }
  req_cv().notify_all();
  return hr;
}

HRESULT get_result(OVERLAPPED* ov, DWORD* bytes, BOOL wait) {
  if (ov == nullptr) return WV_INVALID_PARAMETER;
  std::unique_lock lk(req_mu());
  if (wait) req_cv().wait(lk, [ov] { return load_result(ov) != WV_PENDING; });
  if (bytes) *bytes = static_cast<DWORD>(ov->InternalHigh);
  return load_result(ov);
}

HRESULT Object::begin(OVERLAPPED* ov, uint32_t kind, uint8_t port, DWORD* flags) try {
  if (ov == nullptr) return WV_INVALID_PARAMETER;
  if (ov->hEvent != nullptr) return WV_NOT_SUPPORTED;  // no Win32 events on kbv
  std::lock_guard lk(req_mu());
  for (uint8_t p : {port, uint8_t{0}}) {
    auto it = latched_.find({kind, p});
    if (it == latched_.end()) continue;
    if (flags) *flags = it->second;
    latched_.erase(it);
    store_result(ov, WV_SUCCESS);
    return WV_SUCCESS;
  }
  pending_.push_back(Pending{ov, kind, port, flags});
  ov->InternalHigh = 0;
  __atomic_store_n(&ov->Internal, static_cast<ULONG_PTR>(WV_PENDING), __ATOMIC_RELEASE);
  return WV_IO_PENDING;
} catch (...) {
  return WV_NO_MEMORY;
}

uint32_t Object::complete(uint32_t kinds, HRESULT hr, uint8_t port, DWORD flags, bool latch) {
  uint32_t n = 0;
  {
    std::lock_guard lk(req_mu());
    auto keep = std::remove_if(pending_.begin(), pending_.end(), [&](const Pending& p) {
      if ((p.kind & kinds) == 0 || (p.kind == kPortEvent && port != 0 && p.port != port))
        return false;
      if (p.flags) *p.flags = flags;
      store_result(p.ov, hr);
      ++n;
      return true;
    });
    pending_.erase(keep, pending_.end());
    if (n == 0 && latch) latched_[{kinds, port}] |= flags;
  }
  if (n) req_cv().notify_all();
  return n;
}

HRESULT Object::cancel_all() {
  complete(~0u, WV_CANCELLED);
  return WV_SUCCESS;
}

HRESULT wait_if_sync(OVERLAPPED* ov, OVERLAPPED& local, HRESULT hr) {
  if (ov != nullptr || hr != WV_IO_PENDING) return hr;
  return get_result(&local, nullptr, 1);
}

// ---- ci_umv_buf_t round trip ----------------------------------------------------------

ci_umv_buf_t* UmvCall::to_driver() {
  const uint32_t in = user.p_inout_buf ? user.input_size : 0;
  const uint32_t out = user.p_inout_buf ? user.output_size : 0;
  request_.assign(std::max(in, out), 0);
  if (in) std::memcpy(request_.data(), user.p_inout_buf, in);
  driver_ = ci_umv_buf_t{};
  driver_.command = user.command;
  driver_.input_size = in;
  driver_.output_size = out;
  driver_.p_inout_buf = request_.empty() ? nullptr : request_.data();
  return &driver_;
}

void UmvCall::from_driver() {
  user.status = driver_.status;
  user.output_size = std::min(driver_.output_size, user.output_size);
  if (user.output_size && user.p_inout_buf)
    std::memcpy(user.p_inout_buf, request_.data(), user.output_size);
}

// ---- the shared CA ---------------------------------------------------------------------

HRESULT Ca::get(const ci_interface_t& ci, uint64_t guid, Ca** out) try {
  // One open at a time, and none while a CA closes (ib_ci.h: one open CA
  // per HCA): a second OpenDevice of a GUID shares the first one's CA.
  std::lock_guard open_lk(open_mu());
  Registry& r = reg();
  {
    std::lock_guard lk(r.mu);
    auto it = r.cas.find(guid);
    if (it != r.cas.end() && it->second->try_add_ref()) {
      *out = it->second;
      return WV_SUCCESS;
    }
  }
  auto* ca = new Ca();
  ca->ci = ci;
  ca->guid = guid;
  const ib_api_status_t st =
      ci.open_ca(htobe64(guid), on_ci_completion, on_ci_event, ca->key(), &ca->h);
  if (st != IB_SUCCESS) {
    ca->h = nullptr;
    ca->release();
    return hr_of(st);
  }
  std::vector<uint64_t> mem;
  ib_ca_attr_t* a = nullptr;
  if (SUCCEEDED(query_ca(*ca, mem, &a))) ca->ports = a->num_ports;
  {
    std::lock_guard lk(r.mu);
    r.cas[guid] = ca;
  }
  *out = ca;
  return WV_SUCCESS;
} catch (...) {
  return WV_NO_MEMORY;
}

Ca::~Ca() {
  {
    Registry& r = reg();
    std::lock_guard lk(r.mu);
    auto it = r.cas.find(guid);
    if (it != r.cas.end() && it->second == this) r.cas.erase(it);
  }
  if (h == nullptr) return;
  // close_ca may not run on the CA's own dispatch thread (ib_ci.h), where a
  // callback can drop the last reference: then a thread of its own does it.
  auto close = [close_ca = ci.close_ca, h = h] {
    std::lock_guard open_lk(open_mu());
    (void)close_ca(h);
  };
  if (ci::live(h, ci::Kind::kCa) && h->dev->thread.get_id() == std::this_thread::get_id()) {
    std::thread(close).detach();
    return;
  }
  close();
}

void Ca::attach(Device* d) {
  std::lock_guard lk(mu_);
  devices_.push_back(d->key());
}

void Ca::detach(Device* d) {
  std::lock_guard lk(mu_);
  devices_.erase(std::remove(devices_.begin(), devices_.end(), d->key()), devices_.end());
}

void Ca::on_event(const ib_event_rec_t& rec) {
  DWORD flags = 0;
  if (rec.type == IB_AE_PORT_ACTIVE || rec.type == IB_AE_PORT_DOWN)
    flags = WV_EVENT_STATE;
  else if (rec.type == IB_AE_LOCAL_FATAL)
    flags = WV_EVENT_ERROR;
  if (flags == 0) return;
  std::vector<void*> keys;
  {
    std::lock_guard lk(mu_);
    keys = devices_;
  }
  for (void* k : keys) {
    Object* o = acquire(k);
    if (o == nullptr) continue;
    // A device fatal error concerns every port (port 0).
    static_cast<Device*>(o)->port_event(flags == WV_EVENT_ERROR ? 0 : rec.port_number, flags);
    o->release();
  }
}

HRESULT query_ca(const Ca& ca, std::vector<uint64_t>& mem, ib_ca_attr_t** out) try {
  uint32_t size = 0;
  ib_api_status_t st = ca.ci.query_ca(ca.h, nullptr, &size, nullptr);
  for (int tries = 0; st == IB_INSUFFICIENT_MEMORY && tries < 4; ++tries) {
    mem.assign(size / 8 + 1, 0);
    st = ca.ci.query_ca(ca.h, reinterpret_cast<ib_ca_attr_t*>(mem.data()), &size, nullptr);
  }
  if (st != IB_SUCCESS) return hr_of(st);
  *out = reinterpret_cast<ib_ca_attr_t*>(mem.data());
  return WV_SUCCESS;
} catch (...) {
  return WV_NO_MEMORY;
}

}  // namespace kbv::compat::wv

using namespace kbv::compat::wv;

extern "C" HRESULT kbv_wv_convert_ib_status(ib_api_status_t status) { return hr_of(status); }

extern "C" const char* kbv_wv_status_str(HRESULT hr) {
  for (const Name& n : kNames)
    if (n.hr == hr) return n.name;
  return "WV_UNKNOWN_STATUS";
}
