// SPDX-License-Identifier: BSD-3-Clause
//
// kbv C++ API: RAII owners over the C API (kbv/kbv.h), std::span arguments,
// kbv::Result<T> / kbv::Status, no exceptions (none thrown anywhere here).
//
//   auto dev = kbv::Device::open("sim:0");            // synchronous
//   auto pd = dev->alloc_pd();
//   kbv::Eq eq = *kbv::Eq::create(64);
//   auto cq = dev->create_cq({.cqe = 256}, {eq.handle(), 7});  // KBV_PENDING-style:
//   // cq is returned at once; its creation completes as event user_data 7.
//
// Every owner is move-only; its destructor closes the object synchronously
// (the C close: never fails; with children still open it finishes when they
// close). close(Async) closes explicitly, possibly asynchronously; release()
// gives up ownership and returns the raw handle.
//
// Async: every control method takes an optional kbv::Async {eq, user_data}.
// With an eq the method returns at once; the object (when one is created) is
// returned already owning its handle and the request completes as one event
// on eq (kbv.h "Control calls"). Methods returning Status then return
// KBV_PENDING. Without an eq the call is synchronous.
//
// Fast path (Qp::post_send/post_recv, Srq::post_recv, Cq::poll) inline
// calls into the C API, no allocation. Threading as kbv.h.
#pragma once

#include <kbv/kbv.h>
#include <kbv/eq.hpp>
#include <kbv/status.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kbv {

// The event queue (kbv/eq.hpp); the name the issue uses.
using EventQueue = Eq;

// Where a control call completes: eq == KBV_EQ_NONE means synchronously.
struct Async {
  kbv_eq_t eq = KBV_EQ_NONE;
  uint64_t user_data = 0;
};

namespace detail {

using CloseFn = kbv_status_t (*)(uint64_t, kbv_eq_t, uint64_t);

// Owns one handle closed with Close.
template <CloseFn Close>
class Owned {
 public:
  Owned() = default;
  explicit Owned(uint64_t h) : h_(h) {}
  ~Owned() { (void)close(); }
  Owned(Owned&& o) noexcept : h_(std::exchange(o.h_, KBV_HANDLE_NONE)) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      (void)close();
      h_ = std::exchange(o.h_, KBV_HANDLE_NONE);
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;

  uint64_t handle() const { return h_; }
  explicit operator bool() const { return h_ != KBV_HANDLE_NONE; }
  // Gives up ownership.
  uint64_t release() { return std::exchange(h_, KBV_HANDLE_NONE); }
  // Closes now (sync) or as a request on a.eq. KBV_SUCCESS when nothing is
  // owned.
  // A refused close (a full or invalid queue, a user_data in flight) keeps
  // the handle owned (the destructor closes it synchronously).
  Status close(Async a = {}) {
    if (h_ == KBV_HANDLE_NONE) return Status{};
    Status s = Close(h_, a.eq, a.user_data);
    if (!s.is_error()) h_ = KBV_HANDLE_NONE;
    return s;
  }
  // Cancels every request in flight about this object (any queue).
  Status cancel_requests(uint32_t* cancelled = nullptr) const {
    return kbv_cancel_object(h_, cancelled);
  }

 protected:
  uint64_t h_ = KBV_HANDLE_NONE;
};

// A create call's result: the new owner, or the error (sync), or the owner
// of a pending object (async).
// h is taken by reference: the C call that writes it is the other argument,
// and argument evaluation order is unspecified (by value, h may be read
// before the call has written it).
template <class T>
Result<T> made(kbv_status_t st, const uint64_t& h) {
  if (st == KBV_SUCCESS || st == KBV_PENDING) return T(h);
  return Status{st};
}

}  // namespace detail

class Mr : public detail::Owned<kbv_mr_dereg> {
 public:
  using Owned::Owned;
  struct Keys {
    uint32_t lkey = 0, rkey = 0;
  };
  Result<Keys> keys() const {
    Keys k;
    kbv_status_t st = kbv_mr_get_keys(h_, &k.lkey, &k.rkey);
    if (st != KBV_SUCCESS) return Status{st};
    return k;
  }
  uint32_t lkey() const {
    auto k = keys();
    return k ? k->lkey : 0;
  }
  uint32_t rkey() const {
    auto k = keys();
    return k ? k->rkey : 0;
  }
};

class Ah : public detail::Owned<kbv_ah_destroy> {
 public:
  using Owned::Owned;
};

class Cq : public detail::Owned<kbv_cq_destroy> {
 public:
  using Owned::Owned;
  // Completions copied into out (non-blocking), or the error.
  Result<uint32_t> poll(std::span<kbv_wc_t> out) {
    int n = kbv_poll_cq(h_, out.data(), static_cast<uint32_t>(out.size()));
    if (n < 0) return Status{static_cast<kbv_status_t>(n)};
    return static_cast<uint32_t>(n);
  }
  // One KBV_EVENT_COMP_NOTIFY on a.eq (required).
  Status arm(bool solicited_only, Async a) {
    return kbv_cq_arm(h_, solicited_only ? 1 : 0, a.eq, a.user_data);
  }
  Status resize(uint32_t cqe, Async a = {}) { return kbv_cq_resize(h_, cqe, a.eq, a.user_data); }
};

class Srq : public detail::Owned<kbv_srq_destroy> {
 public:
  using Owned::Owned;
  Status post_recv(std::span<const kbv_recv_wr_t> wrs, uint32_t* bad_index = nullptr) {
    return kbv_post_srq_recv(h_, wrs.data(), static_cast<uint32_t>(wrs.size()), bad_index);
  }
  Status arm(uint32_t limit, Async a = {}) { return kbv_srq_arm(h_, limit, a.eq, a.user_data); }
};

using Gid = std::array<uint8_t, 16>;

class Qp : public detail::Owned<kbv_qp_destroy> {
 public:
  using Owned::Owned;
  Result<uint32_t> num() const {
    uint32_t n = 0;
    kbv_status_t st = kbv_qp_get_num(h_, &n);
    if (st != KBV_SUCCESS) return Status{st};
    return n;
  }
  Status modify(const kbv_qp_attr_t& attr, uint32_t mask, Async a = {}) {
    return kbv_qp_modify(h_, &attr, mask, a.eq, a.user_data);
  }
  // Synchronous query.
  Result<kbv_qp_attr_t> query() {
    kbv_qp_attr_t out{};
    kbv_status_t st = kbv_qp_query(h_, &out, KBV_EQ_NONE, 0);
    if (st != KBV_SUCCESS) return Status{st};
    return out;
  }
  // Asynchronous query: *out is written before the event.
  Status query(kbv_qp_attr_t* out, Async a) { return kbv_qp_query(h_, out, a.eq, a.user_data); }
  Status attach_mcast(const Gid& gid, Async a = {}) {
    return kbv_qp_attach_mcast(h_, gid.data(), a.eq, a.user_data);
  }
  Status detach_mcast(const Gid& gid, Async a = {}) {
    return kbv_qp_detach_mcast(h_, gid.data(), a.eq, a.user_data);
  }
  Status post_send(std::span<const kbv_send_wr_t> wrs, uint32_t* bad_index = nullptr) {
    return kbv_post_send(h_, wrs.data(), static_cast<uint32_t>(wrs.size()), bad_index);
  }
  Status post_recv(std::span<const kbv_recv_wr_t> wrs, uint32_t* bad_index = nullptr) {
    return kbv_post_recv(h_, wrs.data(), static_cast<uint32_t>(wrs.size()), bad_index);
  }
};

class Pd : public detail::Owned<kbv_pd_dealloc> {
 public:
  using Owned::Owned;
  Result<Mr> reg_mr(void* addr, size_t length, uint32_t access, Async a = {}) {
    kbv_mr_t h = 0;
    return detail::made<Mr>(kbv_mr_reg(h_, addr, length, access, a.eq, a.user_data, &h), h);
  }
  Result<Mr> reg_mr(std::span<std::byte> buf, uint32_t access, Async a = {}) {
    return reg_mr(buf.data(), buf.size(), access, a);
  }
  Result<Qp> create_qp(const kbv_qp_init_attr_t& attr, Async a = {}) {
    kbv_qp_t h = 0;
    return detail::made<Qp>(kbv_qp_create(h_, &attr, a.eq, a.user_data, &h), h);
  }
  Result<Srq> create_srq(const kbv_srq_attr_t& attr, Async a = {}) {
    kbv_srq_t h = 0;
    return detail::made<Srq>(kbv_srq_create(h_, &attr, a.eq, a.user_data, &h), h);
  }
  Result<Ah> create_ah(const kbv_ah_attr_t& attr, Async a = {}) {
    kbv_ah_t h = 0;
    return detail::made<Ah>(kbv_ah_create(h_, &attr, a.eq, a.user_data, &h), h);
  }
};

class Device : public detail::Owned<kbv_device_close> {
 public:
  using Owned::Owned;

  static Result<std::vector<kbv_device_desc_t>> list() {
    uint32_t count = 0;
    kbv_status_t st = kbv_get_device_list(nullptr, 0, &count);
    if (st != KBV_SUCCESS) return Status{st};
    std::vector<kbv_device_desc_t> v(count);
    st = kbv_get_device_list(v.data(), count, &count);
    if (st != KBV_SUCCESS) return Status{st};
    if (count < v.size()) v.resize(count);
    return v;
  }
  static Result<Device> open(const std::string& uri, const kbv_device_open_attr_t* attr = nullptr,
                             Async a = {}) {
    kbv_device_t h = 0;
    return detail::made<Device>(kbv_device_open(uri.c_str(), attr, a.eq, a.user_data, &h), h);
  }

  Result<kbv_device_attr_t> query() const {
    kbv_device_attr_t out{};
    kbv_status_t st = kbv_device_query(h_, &out, KBV_EQ_NONE, 0);
    if (st != KBV_SUCCESS) return Status{st};
    return out;
  }
  Status query(kbv_device_attr_t* out, Async a) const {
    return kbv_device_query(h_, out, a.eq, a.user_data);
  }
  Result<kbv_port_attr_t> query_port(uint32_t port) const {
    kbv_port_attr_t out{};
    kbv_status_t st = kbv_port_query(h_, port, &out, KBV_EQ_NONE, 0);
    if (st != KBV_SUCCESS) return Status{st};
    return out;
  }
  Status query_port(uint32_t port, kbv_port_attr_t* out, Async a) const {
    return kbv_port_query(h_, port, out, a.eq, a.user_data);
  }
  Result<kbv_device_stats_t> stats() const {
    kbv_device_stats_t out{};
    kbv_status_t st = kbv_device_get_stats(h_, &out);
    if (st != KBV_SUCCESS) return Status{st};
    return out;
  }
  // Work done (>= 0) or the error.
  Result<uint32_t> progress() {
    int n = kbv_device_progress(h_);
    if (n < 0) return Status{static_cast<kbv_status_t>(n)};
    return static_cast<uint32_t>(n);
  }
  Status start_progress_thread() { return kbv_device_start_progress_thread(h_); }
  Status stop_progress_thread() { return kbv_device_stop_progress_thread(h_); }
  Result<int> fd() const {
    int fd = -1;
    kbv_status_t st = kbv_device_get_fd(h_, &fd);
    if (st != KBV_SUCCESS) return Status{st};
    return fd;
  }

  Result<Pd> alloc_pd(Async a = {}) {
    kbv_pd_t h = 0;
    return detail::made<Pd>(kbv_pd_alloc(h_, a.eq, a.user_data, &h), h);
  }
  Result<Cq> create_cq(const kbv_cq_attr_t& attr, Async a = {}) {
    kbv_cq_t h = 0;
    return detail::made<Cq>(kbv_cq_create(h_, &attr, a.eq, a.user_data, &h), h);
  }
};

}  // namespace kbv
