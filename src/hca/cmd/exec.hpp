// SPDX-License-Identifier: BSD-3-Clause
//
// The shape shared by every firmware command function (src/hca/cmd/*): an
// attributes struct in, a Result<T> (or Status) delivered once to a callback
// when the command completes, built on CmdQueue::submit.
//
//   Status s = cmd::alloc_pd(cmdq, [](Result<uint32_t> pd) { ... });
//   // s is KBV_PENDING (the callback will run from cmdq.poll() / the command
//   // EQ) or an error (the callback never runs).
//
// Errors delivered to the callback: whatever the command queue reports
// (firmware status + syndrome, delivery errors, timeouts, device failure)
// and KBV_ERR_INTERNAL when an output is malformed (shorter than its table).
//
// Threading: as CmdQueue (one thread).
#pragma once

#include <kbv/status.hpp>

#include <cstring>
#include <functional>
#include <new>
#include <span>
#include <utility>
#include <vector>

#include "hca/cmdq/cmdq.hpp"
#include "hca/prm/cmd_hdr.hpp"
#include "hca/prm/opcodes.hpp"

namespace kbv::hca::cmd {

template <class T>
using Done = std::function<void(Result<T>)>;
using DoneStatus = std::function<void(Status)>;

// A zeroed command input of `len` bytes with opcode and op_mod set
// (mlx5_ifc.h mbox_in: every input starts with them).
inline std::vector<std::byte> make_in(prm::Opcode op, uint16_t op_mod, size_t len) {
  std::vector<std::byte> in(len < 16 ? 16 : len);
  prm::Ref<prm::mbox_in> h(in.data());
  h.set(prm::mbox_in::opcode, prm::to_u16(op));
  h.set(prm::mbox_in::op_mod, op_mod);
  return in;
}

// Output size for a layout: the kernel's _out tables are sometimes shorter
// than the 16-byte mbox_out (enable_hca_out: 12 B); the queue needs >= 16.
constexpr uint32_t out_len(uint32_t bytes) { return bytes < 16 ? 16 : bytes; }

// Submits `in` and calls done(parse(out)) on success, done(status) otherwise.
// parse: Result<T>(std::span<const std::byte> out), out.size() == out_bytes.
template <class T, class Parse>
Status exec(CmdQueue& q, std::span<const std::byte> in, uint32_t out_bytes, Parse parse,
            Done<T> done, SubmitOptions opts = {}) {
  if (!done) return Status{KBV_ERR_INVALID_ARGUMENT};
  return q.submit(
      in, out_len(out_bytes),
      [parse = std::move(parse), done = std::move(done)](const CmdCompletion& c) {
        if (!c.status.is_ok()) {
          done(Result<T>(c.status));
          return;
        }
        // A decode that fails for memory still answers `done` (a lost
        // answer left bring-up waiting forever: found by verbs_oom).
        Result<T> r = [&]() -> Result<T> {
          try {
            return parse(c.out);
          } catch (const std::bad_alloc&) {
            return Status{KBV_ERR_NO_MEMORY};
          }
        }();
        done(std::move(r));
      },
      opts);
}

// For commands whose output is only status + syndrome.
inline Status exec_status(CmdQueue& q, std::span<const std::byte> in, uint32_t out_bytes,
                          DoneStatus done, SubmitOptions opts = {}) {
  if (!done) return Status{KBV_ERR_INVALID_ARGUMENT};
  return q.submit(
      in, out_len(out_bytes), [done = std::move(done)](const CmdCompletion& c) { done(c.status); },
      opts);
}

}  // namespace kbv::hca::cmd
