// SPDX-License-Identifier: BSD-3-Clause
//
// WinVerbs on the channel interface (kbv/compat/winverbs.h, docs/CI.md
// "WinVerbs"): the objects behind the IWV* interfaces, each wrapping one
// ci_interface_t object, and what they share —
//
//   Object     reference count, a key (the ci context of the object: the
//              channel interface's callbacks find the object by it, never by
//              a pointer that may be gone) and the object's pending
//              OVERLAPPED requests.
//   Com<I>     IUnknown for interface I (QueryInterface along I's bases).
//   ComOv<I>   plus IWVOverlapped (CancelOverlappedRequests,
//              GetOverlappedResult).
//   Ca         one open ci CA per HCA GUID in the process, shared by the
//              IWVDevice objects on it; fans its port events out to them.
//   UmvCall    the seed's pre / IOCTL / post round trip of ci_umv_buf_t.
//
// Threading: pending requests and their completion under one process mutex
// (completion writes the OVERLAPPED and wakes GetOverlappedResult);
// callbacks run on the channel interface's dispatch thread.
#pragma once

#include <kbv/compat/winverbs.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kbv::compat::wv {

// ---- statuses (wv_base.cpp) ----------------------------------------------------
HRESULT hr_of(ib_api_status_t s);    // WvConvertIbStatus
HRESULT wc_hr_of(ib_wc_status_t s);  // a work completion's status

// ---- pending requests ------------------------------------------------------------
enum Kind : uint32_t {
  kCqCompletion = 1u << 0,  // IWVCompletionQueue::Notify next / solicited
  kCqError = 1u << 1,       // IWVCompletionQueue::Notify WvCqError
  kPortEvent = 1u << 2,     // IWVDevice::Notify
  kSrqLimit = 1u << 3,      // IWVSharedReceiveQueue::Notify
};

struct Pending {
  OVERLAPPED* ov = nullptr;
  uint32_t kind = 0;
  uint8_t port = 0;        // kPortEvent
  DWORD* flags = nullptr;  // kPortEvent: written at completion
};

// Completes ov inline (the method's result is the request's): Internal = hr.
HRESULT finish(OVERLAPPED* ov, HRESULT hr);
HRESULT get_result(OVERLAPPED* ov, DWORD* bytes, BOOL wait);

class Object {
 public:
  Object();
  virtual ~Object();
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

  ULONG add_ref();
  ULONG release();     // the last one unregisters the key, cancels, deletes
  bool try_add_ref();  // AddRef unless the count already reached 0
  void* key() const { return reinterpret_cast<void*>(id_); }

  virtual void on_completion() {}                  // ci completion callback
  virtual void on_event(const ib_event_rec_t&) {}  // ci async event callback

  // A request of `kind`: WV_IO_PENDING (queued; Internal = WV_PENDING);
  // WV_SUCCESS when an event of that kind (and port) was latched: complete
  // at once with its flags; WV_NOT_SUPPORTED (hEvent set),
  // WV_INVALID_PARAMETER (ov NULL).
  HRESULT begin(OVERLAPPED* ov, uint32_t kind, uint8_t port = 0, DWORD* flags = nullptr);
  // Complete the pending requests whose kind is in `kinds` (and, for port
  // events, whose port is `port`; 0: every port): Internal = hr, *flags =
  // flags. With latch, an event no request took is kept for the next
  // begin of that kind and port. Returns how many completed.
  uint32_t complete(uint32_t kinds, HRESULT hr, uint8_t port = 0, DWORD flags = 0,
                    bool latch = false);
  HRESULT cancel_all();

 private:
  std::atomic<ULONG> refs_{1};
  uintptr_t id_ = 0;
  std::vector<Pending> pending_;                           // under the process request mutex
  std::map<std::pair<uint32_t, uint8_t>, DWORD> latched_;  // (kind, port) -> flags
};

// For a method given ov == NULL (local was begun instead): wait for the
// request and return its result; otherwise hr.
HRESULT wait_if_sync(OVERLAPPED* ov, OVERLAPPED& local, HRESULT hr);

// The object with that key, AddRef'd (null when gone or going).
Object* acquire(void* key);
// The channel interface's callbacks (ci open_ca): contexts are keys.
void on_ci_completion(void* cq_context);
void on_ci_event(const ib_event_rec_t* rec);

// QueryInterface along an interface's bases.
inline bool implements(REFIID r, const IUnknown*) { return r == IID_IUnknown; }
inline bool implements(REFIID r, const IWVOverlapped*) {
  return r == IID_IWVOverlapped || implements(r, static_cast<const IUnknown*>(nullptr));
}
#define KBV_WV_IMPLEMENTS(I, Base)                                           \
  inline bool implements(REFIID r, const I*) {                               \
    return r == IID_##I || implements(r, static_cast<const Base*>(nullptr)); \
  }
KBV_WV_IMPLEMENTS(IWVCompletionQueue, IWVOverlapped)
KBV_WV_IMPLEMENTS(IWVAddressHandle, IUnknown)
KBV_WV_IMPLEMENTS(IWVSharedReceiveQueue, IWVOverlapped)
KBV_WV_IMPLEMENTS(IWVQueuePair, IWVOverlapped)
KBV_WV_IMPLEMENTS(IWVConnectQueuePair, IWVQueuePair)
KBV_WV_IMPLEMENTS(IWVDatagramQueuePair, IWVQueuePair)
KBV_WV_IMPLEMENTS(IWVProtectionDomain, IWVOverlapped)
KBV_WV_IMPLEMENTS(IWVDevice, IWVOverlapped)
KBV_WV_IMPLEMENTS(IWVProvider, IUnknown)
#undef KBV_WV_IMPLEMENTS

template <class I>
class Com : public I, public Object {
 public:
  HRESULT QueryInterface(REFIID riid, LPVOID* ppvObj) override {
    if (ppvObj == nullptr) return E_POINTER;
    if (!implements(riid, static_cast<const I*>(nullptr))) {
      *ppvObj = nullptr;
      return E_NOINTERFACE;
    }
    *ppvObj = static_cast<I*>(this);
    add_ref();
    return WV_SUCCESS;
  }
  ULONG AddRef() override { return add_ref(); }
  ULONG Release() override { return release(); }
};

template <class I>
class ComOv : public Com<I> {
 public:
  HRESULT CancelOverlappedRequests() override { return this->cancel_all(); }
  HRESULT GetOverlappedResult(OVERLAPPED* ov, DWORD* bytes, BOOL wait) override {
    return get_result(ov, bytes, wait);
  }
};

// ---- the seed's pre / IOCTL / post round trip ------------------------------------
// user: what pre_* filled (zero: no private data). to_driver() copies its
// input into the request buffer (after the request's fields, as the seed's
// RtlCopyMemory(pattr + 1, ...)) and returns the ci_umv_buf_t rebuilt over
// it; from_driver() copies the driver's status and output back into user.
class UmvCall {
 public:
  ci_umv_buf_t user{};
  ci_umv_buf_t* to_driver();
  void from_driver();

  // pre(&user) (an error is returned as is: no call, no post), then
  // call(to_driver()), from_driver(), post(call's status, &user).
  template <class Pre, class Call, class Post>
  static ib_api_status_t run(Pre&& pre, Call&& call, Post&& post) {
    UmvCall u;
    if (ib_api_status_t st = pre(&u.user); st != IB_SUCCESS) return st;
    const ib_api_status_t st = call(u.to_driver());
    u.from_driver();
    post(st, &u.user);
    return st;
  }

 private:
  ci_umv_buf_t driver_{};
  std::vector<uint8_t> request_;
};

// ---- the shared CA ------------------------------------------------------------------
class Device;

class Ca final : public Object {
 public:
  // The open CA of that HCA (guid host order), opened through ci when no
  // device holds it. *out AddRef'd.
  static HRESULT get(const ci_interface_t& ci, uint64_t guid, Ca** out);
  ~Ca() override;
  void on_event(const ib_event_rec_t& rec) override;
  void attach(Device* d);
  void detach(Device* d);

  ci_interface_t ci{};
  ib_ca_handle_t h = nullptr;
  uint64_t guid = 0;
  uint8_t ports = 0;  // physical ports (query_ca at open)

 private:
  std::mutex mu_;
  std::vector<void*> devices_;  // keys
};

// The ca attributes (query_ca's size negotiation); storage in mem.
HRESULT query_ca(const Ca& ca, std::vector<uint64_t>& mem, ib_ca_attr_t** out);
void to_wv(const ib_ca_attr_t& a, WV_DEVICE_ATTRIBUTES* out);

// ---- objects ---------------------------------------------------------------------------
class Device final : public ComOv<IWVDevice> {
 public:
  Device(Ca* ca, const kbv_wv_verbs_t& verbs);
  ~Device() override;
  void port_event(uint8_t port, DWORD flags);

  HRESULT Query(WV_DEVICE_ATTRIBUTES* pAttributes) override;
  HRESULT QueryPort(UINT8 PortNumber, WV_PORT_ATTRIBUTES* pAttributes) override;
  HRESULT QueryGid(UINT8 PortNumber, DWORD Index, WV_GID* pGid) override;
  HRESULT FindGid(UINT8 PortNumber, WV_GID* pGid, DWORD* pIndex) override;
  HRESULT QueryPkey(UINT8 PortNumber, UINT16 Index, NET16* pPkey) override;
  HRESULT FindPkey(UINT8 PortNumber, NET16 Pkey, UINT16* pIndex) override;
  HRESULT CreateCompletionQueue(SIZE_T* pEntries, IWVCompletionQueue** ppCq) override;
  HRESULT AllocateProtectionDomain(IWVProtectionDomain** ppPd) override;
  HRESULT Notify(UINT8 PortNumber, OVERLAPPED* pOverlapped, DWORD* pFlags) override;

  Ca* const ca;
  const kbv_wv_verbs_t verbs;

 private:
};

class Cq final : public ComOv<IWVCompletionQueue> {
 public:
  explicit Cq(Device* d) : dev(d) { dev->AddRef(); }
  ~Cq() override;
  void on_completion() override;
  void on_event(const ib_event_rec_t& rec) override;
  void add_qp(uint32_t qpn, void* context);
  void remove_qp(uint32_t qpn);

  HRESULT Resize(SIZE_T* pEntries) override;
  HRESULT Peek(SIZE_T* pCompletedEntries) override;
  HRESULT Notify(WV_CQ_NOTIFY_TYPE Type, OVERLAPPED* pOverlapped) override;
  HRESULT BatchNotify(SIZE_T CompletedEntries, OVERLAPPED* pOverlapped) override;
  SIZE_T Poll(WV_COMPLETION Completions[], SIZE_T Entries) override;

  Device* const dev;
  ib_cq_handle_t h = nullptr;

 private:
  std::mutex arm_mu_;
  bool armed_ = false;      // an enable_cq_notify not yet called back
  bool solicited_ = false;  // ... for solicited completions only
  std::mutex qmu_;
  std::unordered_map<uint32_t, void*> qp_context_;  // qpn -> WV_QP_CREATE.Context
};

class Pd final : public ComOv<IWVProtectionDomain> {
 public:
  explicit Pd(Device* d) : dev(d) { dev->AddRef(); }
  ~Pd() override;

  HRESULT CreateSharedReceiveQueue(SIZE_T MaxWr, SIZE_T MaxSge, SIZE_T SrqLimit,
                                   IWVSharedReceiveQueue** ppSrq) override;
  HRESULT CreateConnectQueuePair(WV_QP_CREATE* pAttributes, IWVConnectQueuePair** ppQp) override;
  HRESULT CreateDatagramQueuePair(WV_QP_CREATE* pAttributes, IWVDatagramQueuePair** ppQp) override;
  HRESULT RegisterMemory(const VOID* pBuffer, SIZE_T BufferLength, DWORD AccessFlags,
                         OVERLAPPED* pOverlapped, WV_MEMORY_KEYS* pKeys) override;
  HRESULT DeregisterMemory(UINT32 Lkey, OVERLAPPED* pOverlapped) override;
  HRESULT AllocateMemoryWindow(IWVMemoryWindow** ppMw) override;
  HRESULT CreateAddressHandle(WV_ADDRESS_VECTOR* pAddress, IWVAddressHandle** ppAh,
                              ULONG_PTR* pAhKey) override;

  Device* const dev;
  ib_pd_handle_t h = nullptr;

 private:
  std::mutex mu_;
  std::unordered_map<uint32_t, ib_mr_handle_t> mrs_;  // lkey -> region
};

class Srq final : public ComOv<IWVSharedReceiveQueue> {
 public:
  explicit Srq(Pd* p) : pd(p) { pd->AddRef(); }
  ~Srq() override;
  void on_event(const ib_event_rec_t& rec) override;

  HRESULT Query(SIZE_T* pMaxWr, SIZE_T* pMaxSge, SIZE_T* pSrqLimit) override;
  HRESULT Modify(SIZE_T MaxWr, SIZE_T SrqLimit) override;
  HRESULT PostReceive(UINT64 WrId, WV_SGE* pSgl, SIZE_T nSge) override;
  HRESULT Notify(OVERLAPPED* pOverlapped) override;

  Pd* const pd;
  ib_srq_handle_t h = nullptr;
  ib_srq_attr_t attr{};
};

class Ah final : public Com<IWVAddressHandle> {
 public:
  explicit Ah(Pd* p) : pd(p) { pd->AddRef(); }
  ~Ah() override;
  Pd* const pd;
  ib_av_handle_t h = nullptr;
};

// WV_ADDRESS_VECTOR (+ with qa, the QP attributes' path fields: PathMtu in
// bytes, ack timeout, retry counts) -> ib_av_attr_t. WV_INVALID_PARAMETER
// for a PathMtu that is not an IB MTU.
HRESULT to_ib(const WV_ADDRESS_VECTOR& a, const WV_QP_ATTRIBUTES* qa, ib_av_attr_t* out);
uint8_t ib_mtu_of(UINT32 bytes);  // 256 .. 4096 -> 1 .. 5; else 0

// A WV_SGE list as ib_local_ds_t (Lkey to the network order register_mr
// returned); up to kLocal entries without allocating.
struct Sges {
  static constexpr SIZE_T kLocal = 16;
  ib_local_ds_t local[kLocal];
  std::vector<ib_local_ds_t> heap;
  ib_local_ds_t* ds = nullptr;
  uint32_t count = 0;
  void set(const WV_SGE* sgl, SIZE_T n);
};

// Created by Pd (wv_qp.cpp).
HRESULT create_connect_qp(Pd* pd, WV_QP_CREATE* attr, IWVConnectQueuePair** out);
HRESULT create_datagram_qp(Pd* pd, WV_QP_CREATE* attr, IWVDatagramQueuePair** out);

}  // namespace kbv::compat::wv
