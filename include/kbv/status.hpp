// SPDX-License-Identifier: BSD-3-Clause
//
// kbv::Status — the C++ face of kbv_status_t (kbv/status.h), plus the firmware
// status byte and syndrome when the device produced the error, and
// kbv::Result<T> for calls that return a value or a status.
//
// Threading: value types; no shared state.
#pragma once

#include <kbv/status.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace kbv {

enum class Code : int32_t {
#define KBV_STATUS_CXX_ENUM_(name, value, msg) name = (value),
  KBV_STATUS_LIST(KBV_STATUS_CXX_ENUM_)
#undef KBV_STATUS_CXX_ENUM_
};

class [[nodiscard]] Status {
 public:
  constexpr Status() = default;
  constexpr Status(kbv_status_t code) : code_(code) {}  // NOLINT: implicit by design
  // A status the firmware returned: fw_status is the command output status
  // byte, syndrome the 32-bit syndrome (mlx5_ifc.h mbox_out: status, syndrome).
  constexpr Status(kbv_status_t code, uint8_t fw_status, uint32_t syndrome)
      : code_(code), fw_status_(fw_status), syndrome_(syndrome) {}

  static constexpr Status ok() { return Status{}; }
  // From a firmware command's status byte and syndrome (mapping in status.h).
  static Status from_fw(uint8_t fw_status, uint32_t syndrome) {
    return {kbv_status_from_cmd_status(fw_status), fw_status, syndrome};
  }
  static Status from_errno(int err) { return kbv_status_from_errno(err); }

  constexpr bool is_ok() const { return code_ == KBV_SUCCESS; }
  constexpr bool is_pending() const { return code_ == KBV_PENDING; }
  constexpr bool is_error() const { return static_cast<int>(code_) < 0; }
  constexpr explicit operator bool() const { return !is_error(); }

  constexpr kbv_status_t code() const { return code_; }
  constexpr uint8_t fw_status() const { return fw_status_; }
  constexpr uint32_t syndrome() const { return syndrome_; }
  std::string_view name() const { return kbv_status_name(code_); }
  std::string_view message() const { return kbv_status_message(code_); }
  // "KBV_ERR_FW_BAD_PARAM (firmware: bad parameter) [fw status 0x3 syndrome 0x1b2c]"
  std::string to_string() const;

  friend constexpr bool operator==(Status a, Status b) { return a.code_ == b.code_; }
  friend constexpr bool operator==(Status a, kbv_status_t b) { return a.code_ == b; }

 private:
  kbv_status_t code_ = KBV_SUCCESS;
  uint8_t fw_status_ = 0;
  uint32_t syndrome_ = 0;
};

// A value or an error status. Accessing value() of an error is a programming
// error (checked by assert in debug builds).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T v) : v_(std::move(v)) {}          // NOLINT: implicit by design
  Result(Status s) : v_(s) {}                // NOLINT
  Result(kbv_status_t s) : v_(Status{s}) {}  // NOLINT
  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  Status status() const { return has_value() ? Status{} : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace kbv
