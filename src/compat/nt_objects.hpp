// SPDX-License-Identifier: BSD-3-Clause
//
// The objects behind the NT verbs interface's public structures
// (kbv/compat/ib_verbs.h): one NtDevice per kbv_nt_query_interface (the
// interface Context: a kbv device, an internal event queue and the dispatch
// thread that turns kbv events into IB_REQUEST completions, the stand-in for
// the DPC that completes IRPs), and one object per IB_CA / IB_PD / IB_CQ /
// IB_QP / IB_MR / IB_AH, each holding its public structure and the kbv
// handle it stands for.
//
// Public pointers are never trusted: every call looks its object up in a
// registry by address (lookup<T>), so a NULL, stale or foreign pointer gives
// a status, never a dereference. An object leaves the registry when its
// destroy call is accepted (later calls: STATUS_INVALID_HANDLE) and is freed
// when the last internal reference (shared_ptr) goes.
//
// References (the RFC's nRef; close "completes when references drop"): the
// kbv objects already hold references on their parents (kbv.h "Close"), so a
// destroy of a PD/CQ completes when kbv says it did. The CA is the NT
// layer's own: its close completes when its PDs and CQs are gone.
//
// Threading: the registry and every member below are thread-safe (one mutex
// each); fast-path members (CQ buffer) belong to the CQ's polling thread.
#pragma once

#include <kbv/compat/ib_verbs.h>
#include <kbv/kbv.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "compat/nt_request.hpp"

namespace kbv::compat {

enum class Kind : uint8_t { kDevice, kCa, kPd, kCq, kQp, kMr, kAh };

class NtDevice;

struct NtObject {
  explicit NtObject(Kind k) : kind(k) {}
  virtual ~NtObject() = default;
  // An unsolicited kbv event about this object's kbv handle.
  virtual void on_event(const kbv_event_t& /*ev*/) {}
  // The device failed: complete waiting notification requests.
  virtual void on_fatal() {}
  const Kind kind;
};

// ---- registry of live public structures --------------------------------------
void publish(const void* pub, std::shared_ptr<NtObject> obj);
void unpublish(const void* pub);
std::shared_ptr<NtObject> lookup_any(const void* pub);
template <class T>
std::shared_ptr<T> lookup(const void* pub, Kind k) {
  auto o = lookup_any(pub);
  if (!o || o->kind != k) return nullptr;
  return std::static_pointer_cast<T>(o);
}

// Atomic update of a public LONG volatile nRef.
inline void add_ref_count(LONG volatile* n, LONG d) { __atomic_add_fetch(n, d, __ATOMIC_RELAXED); }

// ---- the device (interface context) ------------------------------------------
class NtDevice : public NtObject, public std::enable_shared_from_this<NtDevice> {
 public:
  using Call = std::function<kbv_status_t(kbv_eq_t eq, uint64_t user_data)>;
  using Cont = std::function<void(const kbv_event_t& ev)>;

  NtDevice() : NtObject(Kind::kDevice) {}
  ~NtDevice() override;

  // Open uri, create the internal queue, start the dispatch thread.
  static NTSTATUS open(const char* uri, std::shared_ptr<NtDevice>* out);

  // Start a kbv control call on the internal queue: call(eq, user_data);
  // cont runs (on the dispatch thread) with its one event. When call does
  // not return KBV_PENDING, cont runs now with an event carrying its status.
  // Returns what call returned (KBV_PENDING, or the status cont got).
  kbv_status_t submit(const Call& call, Cont cont);
  // A destroy (close "cannot fail", seed 000 PDESTROY_*): begins req
  // (argument arg); then accepted() (unpublish, cancel notifications), the
  // kbv close call, gone() once kbv finished it, and the request completes
  // with STATUS_SUCCESS. A synchronous request runs the kbv call
  // synchronously: STATUS_SUCCESS, or STATUS_PENDING when kbv finishes it
  // later (children still open; nothing to wait on). Errors (nothing
  // happened): begin's.
  NTSTATUS destroy(IB_REQUEST* req, unsigned arg, const std::function<void()>& accepted,
                   const Call& close, std::function<void()> gone, ULONG_PTR info = 0);
  // The wait loop body for a synchronous request completed by this device's
  // dispatch thread: empty when the caller is not that thread (it may
  // sleep), else a function that dispatches once.
  std::function<void()> pump();
  // Run call synchronously (submit + wait): its event.
  kbv_event_t run(const Call& call);

  // Objects to tell about unsolicited kbv events (by kbv handle).
  void route(uint64_t handle, const std::shared_ptr<NtObject>& obj);
  void unroute(uint64_t handle);
  // The QP with this QPN (IB_WC.hQp); nullptr when unknown.
  void add_qpn(uint32_t qpn, IB_QP* qp);
  void remove_qpn(uint32_t qpn);
  IB_QP* qp_by_qpn(uint32_t qpn);

  // The interface's references (InterfaceReference / Dereference); the CAs
  // opened on it hold shared_ptrs. The last of both closes the device.
  void ifc_ref();
  void ifc_deref();

  void add_ca(const std::shared_ptr<NtObject>& ca);
  void remove_ca(const NtObject* ca);

  bool dead() const { return dead_.load(std::memory_order_acquire); }
  kbv_device_t handle() const { return dev_; }
  const kbv_device_attr_t& attr() const { return attr_; }
  uint32_t num_ports() const { return attr_.phys_port_cnt; }

  // Port capability bits set by clients (ModifyPort); owner: the CA that
  // set an exclusive bit (IB_PORT_CAP_IS_SM, IB_PORT_CAP_CM_SUP).
  NTSTATUS modify_port_caps(const void* ca, uint8_t port, ULONG set, ULONG clear);
  ULONG port_caps(uint8_t port);
  void drop_port_caps(const void* ca);

  // Every open device (AV MAC resolution from their GID tables).
  static std::vector<std::shared_ptr<NtDevice>> all();
  // The GID table of a port as last queried (every port query notes it; a
  // port event refreshes it), and the MAC of one of its GIDs (0: unknown).
  // Cached so that resolving an address never waits on another device's
  // dispatch thread.
  void note_port(const kbv_port_attr_t& pa);
  uint64_t mac_of(const uint8_t* gid);

 private:
  void loop();
  void dispatch(const kbv_event_t& ev);
  uint32_t dispatch_once();
  void request_stop();
  void stop_and_close();
  void user_gone();

  kbv_device_t dev_ = 0;
  kbv_eq_t eq_ = KBV_EQ_NONE;
  int stop_fd_ = -1;
  kbv_device_attr_t attr_{};
  std::atomic<bool> dead_{false};
  std::atomic<bool> stop_{false};
  std::atomic<int> ifc_refs_{1};
  std::atomic<int> users_{1};  // interface references + open CAs
  std::thread thread_;
  std::thread::id thread_id_;

  std::mutex mu_;
  uint64_t next_ud_ = 1;
  std::unordered_map<uint64_t, Cont> conts_;
  std::unordered_map<uint64_t, std::weak_ptr<NtObject>> routes_;
  std::unordered_map<uint32_t, IB_QP*> qpns_;
  std::vector<std::weak_ptr<NtObject>> cas_;
  struct PortCaps {
    std::unordered_map<const void*, ULONG> by_ca;
  };
  std::vector<PortCaps> port_caps_;
  struct GidMac {
    uint32_t port;
    uint8_t gid[16];
    uint64_t mac;
  };
  std::vector<GidMac> gids_;
};

// ---- CA, PD, CQ, QP, MR, AH ------------------------------------------------------
struct NtCa : NtObject, std::enable_shared_from_this<NtCa> {
  NtCa() : NtObject(Kind::kCa) {}
  void on_event(const kbv_event_t& ev) override;  // port state, device fatal
  void on_fatal() override;
  // A child (PD, CQ) was created / is gone; the last one after CloseCa
  // completes the close.
  void child_added();
  void child_gone();

  IB_CA pub{};
  std::shared_ptr<NtDevice> dev;
  PFN_IB_CA_ASYNC_EVENT async_cb = nullptr;
  NtEventQueue fatal_q;
  std::vector<std::unique_ptr<NtEventQueue>> port_q;  // [port - 1]
  std::mutex mu;
  uint32_t children = 0;
  bool closing = false;
  std::shared_ptr<NtRequest> close_req;
};

struct NtPd : NtObject {
  NtPd() : NtObject(Kind::kPd) {}
  IB_PD pub{};
  std::shared_ptr<NtCa> ca;
  kbv_pd_t pd = 0;
};

struct NtCq : NtObject {
  NtCq() : NtObject(Kind::kCq) {}
  void on_event(const kbv_event_t& ev) override;  // CQ error
  void on_fatal() override;
  void comp_event();  // an armed notification fired

  IB_CQ pub{};
  std::shared_ptr<NtCa> ca;
  kbv_cq_t cq = 0;
  PFN_IB_CQ_COMP_EVENT comp_cb = nullptr;
  PFN_IB_CQ_ASYNC_EVENT async_cb = nullptr;
  NtNotifySlot comp;
  NtEventQueue async_q;
  std::atomic<bool> closing{false};
  // PeekCq reads completions ahead into this buffer; PollCq drains it first.
  std::deque<IB_WC> ahead;
};

struct NtQp : NtObject {
  NtQp() : NtObject(Kind::kQp) {}
  void on_event(const kbv_event_t& ev) override;  // QP fatal / access error
  void on_fatal() override;

  IB_QP pub{};
  std::shared_ptr<NtPd> pd;
  std::shared_ptr<NtCq> send_cq, recv_cq;
  kbv_qp_t qp = 0;
  PFN_IB_QP_ASYNC_EVENT async_cb = nullptr;
  NtEventQueue async_q;
  std::atomic<uint8_t> port{1};
  std::atomic<int> state{IbQpsReset};  // IB_QP_STATE after the last modify
  bool sq_signaled = false;
};

struct NtMr : NtObject {
  NtMr() : NtObject(Kind::kMr) {}
  IB_MR pub{};
  std::shared_ptr<NtPd> pd;
  kbv_mr_t mr = 0;
};

struct NtAh : NtObject {
  NtAh() : NtObject(Kind::kAh) {}
  IB_AH pub{};
  std::shared_ptr<NtPd> pd;
  std::mutex mu;
  kbv_ah_t ah = 0;
  IB_AH_ATTR attr{};
};

// ---- helpers shared by the verbs files -------------------------------------------
// The NTSTATUS of a kbv status (kbv_status_to_ntstatus).
NTSTATUS nt_of(int32_t kbv_status);
// Convert an IB_AH_ATTR into a kbv address vector (RoCEv2): port, source GID
// index from Grh.SGid, destination MAC from the GID tables of the open
// devices or the host's ARP table. bad_port / bad_sgid: what the caller
// returns for those faults.
NTSTATUS resolve_av(NtDevice& dev, const IB_AH_ATTR& av, kbv_ah_attr_t* out, NTSTATUS bad_port,
                    NTSTATUS bad_sgid);

}  // namespace kbv::compat
