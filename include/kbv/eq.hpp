// SPDX-License-Identifier: BSD-3-Clause
//
// kbv::Eq — RAII owner of a kbv_eq_t (kbv/eq.h). Move-only; the destructor
// destroys the queue. Threading as in kbv/eq.h: poll() has one consumer at a
// time; cancel() and fd() may be called from any thread.
#pragma once

#include <kbv/eq.h>
#include <kbv/status.hpp>

#include <cstdint>
#include <span>
#include <utility>

namespace kbv {

class Eq {
 public:
  Eq() = default;
  // depth: events held (1..KBV_EQ_MAX_DEPTH). Errors as kbv_eq_create.
  static Result<Eq> create(uint32_t depth) {
    kbv_eq_t h = KBV_EQ_NONE;
    kbv_status_t st = kbv_eq_create(depth, &h);
    if (st != KBV_SUCCESS) return Status{st};
    return Eq(h);
  }
  ~Eq() { reset(); }
  Eq(Eq&& o) noexcept : h_(std::exchange(o.h_, KBV_EQ_NONE)) {}
  Eq& operator=(Eq&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, KBV_EQ_NONE);
    }
    return *this;
  }
  Eq(const Eq&) = delete;
  Eq& operator=(const Eq&) = delete;

  kbv_eq_t handle() const { return h_; }
  explicit operator bool() const { return h_ != KBV_EQ_NONE; }

  // Number of events copied into out (non-blocking), or the error.
  Result<uint32_t> poll(std::span<kbv_event_t> out) {
    int n = kbv_eq_poll(h_, out.data(), static_cast<uint32_t>(out.size()));
    if (n < 0) return Status{static_cast<kbv_status_t>(n)};
    return static_cast<uint32_t>(n);
  }
  Result<int> fd() const {
    int fd = -1;
    kbv_status_t st = kbv_eq_get_fd(h_, &fd);
    if (st != KBV_SUCCESS) return Status{st};
    return fd;
  }
  Status cancel(uint64_t user_data) { return kbv_eq_cancel(h_, user_data); }
  Status cancel_object(uint64_t object) { return kbv_eq_cancel_object(h_, object, nullptr); }

  // Destroy now (also done by the destructor).
  void reset() {
    if (h_ != KBV_EQ_NONE) (void)kbv_eq_destroy(std::exchange(h_, KBV_EQ_NONE));
  }

 private:
  explicit Eq(kbv_eq_t h) : h_(h) {}
  kbv_eq_t h_ = KBV_EQ_NONE;
};

}  // namespace kbv
