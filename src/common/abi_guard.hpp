// SPDX-License-Identifier: BSD-3-Clause
//
// No exception crosses the C ABI (docs/DESIGN.md "Errors are values";
// issue 16). Every extern "C" entry point of libkbv that can reach code
// which allocates (kbv.h in src/verbs, the NT verbs table in src/compat) is
// written as a function-try-block (the NT table returns
// compat::nt_abi_exception_status() instead):
//
//   kbv_status_t kbv_pd_alloc(...) try {
//     ...
//   } catch (...) {
//     return kbv::abi_exception_status();
//   }
//
// abi_exception_status() is called only inside a catch handler: it maps the
// exception in flight to a status — std::bad_alloc (and std::length_error
// from a container asked for more than it can hold) -> KBV_ERR_NO_MEMORY,
// anything else -> KBV_ERR_INTERNAL — and logs it. It never throws and
// never allocates on the bad_alloc path (the message is a constant).
//
// The guard is the last line of defence: the objects behind the entry
// points undo their own partial work on unwinding (RAII owners, the
// verbs layer's create_object/submit_control), so after KBV_ERR_NO_MEMORY
// the call left no object, handle or mapping behind and can be retried.
//
// Threading: any thread.
#pragma once

#include <kbv/compat/ntstatus.h>
#include <kbv/status.h>

#include <new>
#include <stdexcept>

#include "common/log.hpp"

namespace kbv {

inline kbv_status_t abi_exception_status() noexcept {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return KBV_ERR_NO_MEMORY;
  } catch (const std::length_error&) {
    return KBV_ERR_NO_MEMORY;
  } catch (const std::exception& e) {
    try {
      log::error("abi", "exception at the C ABI: {}", e.what());
    } catch (...) {
    }
    return KBV_ERR_INTERNAL;
  } catch (...) {
    return KBV_ERR_INTERNAL;
  }
}

namespace compat {
// The NT verbs table (src/compat): allocation failure is
// STATUS_INSUFFICIENT_RESOURCES, as a Windows kernel driver reports a failed
// pool allocation; anything else STATUS_INTERNAL_ERROR.
inline KBV_NTSTATUS nt_abi_exception_status() noexcept {
  return abi_exception_status() == KBV_ERR_NO_MEMORY ? KBV_STATUS_INSUFFICIENT_RESOURCES
                                                     : KBV_STATUS_INTERNAL_ERROR;
}
}  // namespace compat

}  // namespace kbv
