// SPDX-License-Identifier: BSD-3-Clause
//
// Helpers shared by the object command handlers: layout sizes, the pas[]
// reader for CQ / SRQ / QP buffers, and outcome shorthands.
//
// Threading: pure functions; called on the firmware thread.
#pragma once

#include "hca/prm/field.hpp"
#include "hca/prm/hca_cap.hpp"
#include "hca/prm/opcodes.hpp"
#include "sim/fw/objects/tables.hpp"
#include "sim/fw/registry.hpp"

#include <cstdint>

namespace kbv::sim::fw::objutil {

using prm::CmdStatus;

template <class L>
constexpr uint32_t bytes_of() {
  return L::kBits / 8;
}

inline Outcome fail(CmdStatus s, uint32_t synd) { return Outcome::fail(s, synd); }

// Largest page the model accepts for WQ / CQ buffers: 4 KiB << 18 = 1 GiB.
inline constexpr uint32_t kMaxLogPageSize = 18;

// Number of pages of 4 KiB << log_page_size a buffer of `bytes` needs when it
// starts page_offset / 64 of a page into its first page.
inline uint64_t pages_for(uint64_t bytes, uint32_t log_page_size, uint32_t page_offset) {
  const uint64_t page = uint64_t{4096} << log_page_size;
  const uint64_t total = page_offset * (page / 64) + bytes;
  return (total + page - 1) / page;
}

struct PasSynd {
  uint32_t too_short;   // BAD_INP_LEN_ERR: inlen does not hold the entries
  uint32_t misaligned;  // BAD_PARAM_ERR: entry not page aligned
};

// Reads the pas[] tail `pas` of layout L in `c.in` (the variable-length
// 64-bit page list after the fixed part, mlx5_ifc.h pas[0]) for a buffer of
// `bytes` into buf.pas. buf.log_page_size / page_offset are already set.
template <class L>
Outcome read_pas(const Command& c, prm::Array<L> pas, uint64_t bytes, WqBuffer& buf, PasSynd s) {
  const uint64_t n = pages_for(bytes, buf.log_page_size, buf.page_offset);
  if (pas.byte_off(0) + n * 8 > c.in.size()) return fail(CmdStatus::BAD_INP_LEN_ERR, s.too_short);
  prm::CRef<L> in(c.in.data());
  const uint64_t page = buf.page_bytes();
  buf.pas.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t pa = in.get(pas, i);
    if (pa % page != 0) return fail(CmdStatus::BAD_PARAM_ERR, s.misaligned);
    buf.pas[i] = pa;
  }
  return Outcome::ok();
}

// Copies as many page addresses as `out` holds after the fixed part of the
// output layout L (QUERY_CQ / QUERY_SRQ / QUERY_QP pas[]).
template <class L>
void write_pas(std::span<std::byte> out, prm::Array<L> pas, const std::vector<uint64_t>& v) {
  prm::Ref<L> o(out.data());
  const std::size_t fixed = pas.byte_off(0);
  const std::size_t room = out.size() > fixed ? (out.size() - fixed) / 8 : 0;
  for (std::size_t i = 0; i < v.size() && i < room; ++i) o.set(pas, static_cast<uint32_t>(i), v[i]);
}

// The cmd_hca_cap limit `f` in force.
inline uint64_t cap(FwContext& ctx, prm::Field<prm::cmd_hca_cap> f) {
  return ctx.caps().general().get(f);
}

}  // namespace kbv::sim::fw::objutil
