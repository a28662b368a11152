// SPDX-License-Identifier: BSD-3-Clause
//
// Reading and writing sub-dword fields of BAR registers through the PRM
// field tables (hca/prm/field.hpp convention: bit 0 is the MSB of the first
// big-endian dword). A register field never crosses a dword, so each access
// is one 32-bit MMIO load (and, for writes, one store of the whole dword).
//
// Threading: stateless helpers over a Bar.
#pragma once

#include <cstdint>

#include "hca/prm/field.hpp"
#include "platform/mmio.hpp"

namespace kbv::hca {

// Byte offset (from the layout's start) of the dword that holds f.
template <class L>
constexpr uint32_t reg_dword_off(prm::Field<L> f) {
  return f.off / 32 * 4;
}

// f extracted from the CPU-order value of its dword.
template <class L>
constexpr uint32_t field_from_dword(uint32_t dword, prm::Field<L> f) {
  const uint32_t shift = 32 - f.width - f.off % 32;
  const uint32_t mask = f.width == 32 ? 0xFFFFFFFFu : ((1u << f.width) - 1);
  return (dword >> shift) & mask;
}

// f placed in an otherwise-zero dword.
template <class L>
constexpr uint32_t field_to_dword(prm::Field<L> f, uint32_t v) {
  const uint32_t shift = 32 - f.width - f.off % 32;
  const uint32_t mask = f.width == 32 ? 0xFFFFFFFFu : ((1u << f.width) - 1);
  return (v & mask) << shift;
}

// One 32-bit MMIO read of the dword holding f (a field of a layout that
// starts at `base` in the BAR).
template <class L>
uint32_t read_reg(const platform::Bar& bar, uint64_t base, prm::Field<L> f) {
  return field_from_dword(bar.read32_be(base + reg_dword_off(f)), f);
}

}  // namespace kbv::hca
