// SPDX-License-Identifier: BSD-3-Clause
//
// The channel interface's objects (kbv/compat/ib_ci.h, docs/CI.md): one
// CiDevice per HCA (the kbv device, its event queue and dispatch thread,
// the interface and CA references), and the objects behind IBAL's handles,
// each wrapping a kbv handle. Handles are pointers to these; every call
// checks a handle against the live set first (a stale or foreign pointer is
// IB_INVALID_*_HANDLE, never dereferenced).
//
// Threading: the live set and each device's maps under one process mutex;
// callbacks run on the device's dispatch thread without it held.
#pragma once

#include <kbv/compat/ib_ci.h>
#include <kbv/kbv.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace kbv::compat::ci {

enum class Kind : uint8_t { kCa, kPd, kAv, kCq, kQp, kSrq, kMr, kMcast };

struct CiDevice;

}  // namespace kbv::compat::ci

struct kbv_ci_ca_s {
  std::shared_ptr<kbv::compat::ci::CiDevice> dev;
  ci_completion_cb_t comp_cb = nullptr;
  ci_async_event_cb_t async_cb = nullptr;
  void* context = nullptr;
  std::atomic<int32_t> children{0};
};
struct kbv_ci_pd_s {
  kbv_ci_ca_s* ca = nullptr;
  kbv_pd_t pd = 0;
  std::atomic<int32_t> children{0};
};
struct kbv_ci_av_s {
  kbv_ci_pd_s* pd = nullptr;
  kbv_ah_t ah = 0;
  ib_av_attr_t attr{};
};
struct kbv_ci_cq_s {
  kbv_ci_ca_s* ca = nullptr;
  kbv_cq_t cq = 0;
  void* context = nullptr;
  uint32_t size = 0;
  std::deque<kbv_wc_t> ahead;  // read by peek_cq, drained first by poll_cq
  std::atomic<int32_t> children{0};
};
struct kbv_ci_srq_s {
  kbv_ci_pd_s* pd = nullptr;
  kbv_srq_t srq = 0;
  void* context = nullptr;
  ib_srq_attr_t attr{};
  std::atomic<int32_t> children{0};
};
struct kbv_ci_qp_s {
  kbv_ci_pd_s* pd = nullptr;
  kbv_qp_t qp = 0;
  void* context = nullptr;
  ib_qp_create_t create{};
  uint32_t qpn = 0;
  std::atomic<int32_t> children{0};
};
struct kbv_ci_mr_s {
  kbv_ci_pd_s* pd = nullptr;
  kbv_mr_t mr = 0;
  void* vaddr = nullptr;
  uint64_t length = 0;
  ib_access_t access = 0;
  uint32_t lkey = 0, rkey = 0;  // host order
};
struct kbv_ci_mcast_s {
  kbv_ci_qp_s* qp = nullptr;
  ib_gid_t gid{};
};

namespace kbv::compat::ci {

struct CiDevice {
  std::string uri;
  kbv_device_t dev = 0;
  kbv_eq_t eq = 0;  // device, CQ, QP, SRQ events and CQ notifications
  kbv_device_attr_t attr{};
  std::vector<kbv_port_attr_t> ports;  // index port - 1; refreshed by refresh_ports
  int stop_fd = -1;
  std::thread thread;
  // Under the process mutex:
  int iface_refs = 0;
  kbv_ci_ca_s* ca = nullptr;                          // the one open CA
  std::unordered_map<uint64_t, void*> cq_by_handle;   // kbv handle -> kbv_ci_cq_s*
  std::unordered_map<uint64_t, void*> qp_by_handle;   // -> kbv_ci_qp_s*
  std::unordered_map<uint64_t, void*> srq_by_handle;  // -> kbv_ci_srq_s*
  std::atomic<uint64_t> next_user_data{1};

  ~CiDevice();
  void loop();
  void refresh_ports();
};

std::mutex& mu();
// Live handles (under mu()).
void track(const void* p, Kind k);
void untrack(const void* p);
bool live(const void* p, Kind k);  // takes mu()

// kbv status -> ib_api_status_t (docs/CI.md; kbv_status_to_ib_api_status by name).
ib_api_status_t status_of(kbv_status_t s);
ib_wc_status_t wc_status_of(int32_t s);
// p_umv_buf rules (ib_ci.h): IB_UNSUPPORTED with input, else output_size 0.
ib_api_status_t umv(ci_umv_buf_t* b);
// IB_AC_* <-> KBV_ACCESS_*.
uint32_t access_to_kbv(ib_access_t a);
// An AV to kbv's AH attributes: sgid from the port's GID table, the
// destination MAC from a local port's table or the neighbour table.
ib_api_status_t av_to_kbv(CiDevice& d, const ib_av_attr_t& av, kbv_ah_attr_t* out);
// The device with that node GUID (host order) held by an interface, or null.
std::shared_ptr<CiDevice> device_by_guid(uint64_t guid);
// Opens (kbv_device_open) and registers a device. *out on IB_SUCCESS.
ib_api_status_t open_device(const char* uri, std::shared_ptr<CiDevice>* out);

// Up to n completions into wcs[0..*got) (p_next NULL), qpns[i] the QPN
// (host order) of wcs[i] — the shape of the user-mode provider's
// poll_cq_array that WinVerbs polls through (ci_qp.cpp; winverbs.h Poll).
// IB_SUCCESS (also with *got 0), IB_INVALID_CQ_HANDLE, IB_INVALID_PARAMETER,
// kbv_poll_cq's error mapped when nothing was taken.
ib_api_status_t poll_cq_array(ib_cq_handle_t h_cq, uint32_t n, ib_wc_t* wcs, uint32_t* qpns,
                              uint32_t* got);

// Function table parts, filled by each file.
void fill_ca(ci_interface_t& ci);  // ci_ca.cpp: CA, PD, AV, CQ, events, misc
void fill_qp(ci_interface_t& ci);  // ci_qp.cpp: QP, SRQ, post, poll, mcast
void fill_mr(ci_interface_t& ci);  // ci_mr.cpp: MR, MW, status names

}  // namespace kbv::compat::ci
