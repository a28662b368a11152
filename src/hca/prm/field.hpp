// SPDX-License-Identifier: BSD-3-Clause
//
// PRM layouts as constexpr field tables, and a typed accessor for them.
//
// Convention (identical to the kernel's include/linux/mlx5/mlx5_ifc.h, where
// every layout is written as `struct mlx5_ifc_<name>_bits` of u8 bit arrays):
//   * a field is named by its bit offset from the start of its structure and
//     its width in bits;
//   * bit offset 0 is the most significant bit of byte 0 ("big-endian bit
//     order"); the structure is a sequence of big-endian 32-bit dwords;
//   * a field of at most 32 bits lies inside one dword: it occupies bits
//     [31 - off%32 .. 32 - off%32 - width] of dword off/32 (MLX5_SET/GET);
//   * a 64-bit field starts on a dword boundary and is one big-endian u64
//     (MLX5_SET64/GET64);
//   * byte arrays (GIDs, MACs, opaque data) start and end on byte boundaries;
//   * nested structures start on dword boundaries.
//
// A layout is a struct with `static constexpr uint32_t kBits` (its size in
// bits) and static constexpr Field/Bytes/Sub/Array members. Each table cites
// the mlx5_ifc.h (or device.h / PRM section) structure it was taken from, and
// static_asserts pin its size and key offsets; every Field is validated at
// compile time by its consteval constructor.
//
// Ref<L> is a mutable view of a byte buffer that holds an L; CRef<L> is the
// read-only view. They do no allocation and no bounds checks beyond the
// construction-time size check (debug assert): callers size buffers with
// L::kBytes (the model checks untrusted lengths before it builds a view).
//
// Threading: views are plain pointers; synchronisation is the caller's.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace kbv::prm {

// A scalar field of layout L: width 1..32 inside one dword, or exactly 64
// starting on a dword boundary.
template <class L>
struct Field {
  uint32_t off;    // bit offset from the start of L (big-endian bit order)
  uint32_t width;  // bits
  consteval Field(uint32_t o, uint32_t w) : off(o), width(w) {
    if (!((w >= 1 && w <= 32 && (o % 32) + w <= 32) || (w == 64 && o % 32 == 0)))
      throw "prm::Field: a field must fit in one dword, or be 64 bits on a dword boundary";
  }
  constexpr uint32_t end() const { return off + width; }
  constexpr uint64_t max() const { return width == 64 ? ~0ull : (1ull << width) - 1; }
};

// A byte array of layout L (GIDs, MAC addresses, opaque payloads).
template <class L>
struct Bytes {
  uint32_t off;    // bit offset, a multiple of 8
  uint32_t width;  // bits, a multiple of 8
  consteval Bytes(uint32_t o, uint32_t w) : off(o), width(w) {
    if (o % 8 != 0 || w % 8 != 0 || w == 0) throw "prm::Bytes: byte aligned and sized";
  }
  constexpr uint32_t byte_off() const { return off / 8; }
  constexpr uint32_t size() const { return width / 8; }
  constexpr uint32_t end() const { return off + width; }
};

// Layout S nested inside layout L at a dword-aligned bit offset.
template <class L, class S>
struct Sub {
  uint32_t off;
  consteval explicit Sub(uint32_t o) : off(o) {
    if (o % 32 != 0) throw "prm::Sub: nested structures are dword aligned";
  }
  constexpr uint32_t end() const { return off + S::kBits; }
};

// An array of `stride`-bit elements of layout L starting at `off`. Elements of
// 8, 16, 32 or 64 bits are scalars (e.g. pas[] entries: 64-bit IOVAs); count 0
// means "variable length, up to the end of the command" (mlx5_ifc.h pas[0]).
template <class L>
struct Array {
  uint32_t off;
  uint32_t stride;  // bits per element
  uint32_t count;   // 0 = variable length
  consteval Array(uint32_t o, uint32_t s, uint32_t c) : off(o), stride(s), count(c) {
    if (o % 32 != 0 && !(s == 8 || s == 16)) throw "prm::Array: dword aligned";
    if (!(s == 8 || s == 16 || s == 32 || s == 64) && s % 32 != 0)
      throw "prm::Array: element size must be 8/16/32/64 or whole dwords";
  }
  constexpr uint32_t end() const { return off + stride * count; }
  constexpr uint32_t byte_off(uint32_t i) const { return (off + stride * i) / 8; }
};

namespace detail {
inline uint32_t load_be32(const std::byte* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return __builtin_bswap32(v);
}
inline void store_be32(std::byte* p, uint32_t v) {
  v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}
inline uint64_t load_be64(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}
inline void store_be64(std::byte* p, uint64_t v) {
  v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}
inline uint64_t get_bits(const std::byte* base, uint32_t off, uint32_t width) {
  if (width == 64) return load_be64(base + off / 8);
  const uint32_t dw = load_be32(base + (off / 32) * 4);
  const uint32_t shift = 32 - width - (off % 32);
  const uint32_t mask = width == 32 ? 0xFFFFFFFFu : ((1u << width) - 1);
  return (dw >> shift) & mask;
}
inline void set_bits(std::byte* base, uint32_t off, uint32_t width, uint64_t v) {
  if (width == 64) {
    store_be64(base + off / 8, v);
    return;
  }
  std::byte* p = base + (off / 32) * 4;
  const uint32_t shift = 32 - width - (off % 32);
  const uint32_t mask = width == 32 ? 0xFFFFFFFFu : ((1u << width) - 1);
  uint32_t dw = load_be32(p);
  dw = (dw & ~(mask << shift)) | ((static_cast<uint32_t>(v) & mask) << shift);
  store_be32(p, dw);
}
}  // namespace detail

template <class L>
class CRef;

// Mutable view of a buffer holding layout L.
template <class L>
class Ref {
 public:
  static constexpr std::size_t kBytes = L::kBits / 8;

  explicit Ref(std::byte* p) : p_(p) {}
  explicit Ref(std::span<std::byte> b) : p_(b.data()) { assert(b.size() >= kBytes); }

  // Store v in f, truncated to f.width bits (as the kernel's MLX5_SET does).
  void set(Field<L> f, uint64_t v) const { detail::set_bits(p_, f.off, f.width, v); }
  uint64_t get(Field<L> f) const { return detail::get_bits(p_, f.off, f.width); }

  std::span<std::byte> bytes(Bytes<L> f) const { return {p_ + f.byte_off(), f.size()}; }
  void set_bytes(Bytes<L> f, std::span<const std::byte> src) const {
    const std::size_t n = src.size() < f.size() ? src.size() : f.size();
    std::memcpy(p_ + f.byte_off(), src.data(), n);
  }

  template <class S>
  Ref<S> at(Sub<L, S> s) const {
    return Ref<S>(p_ + s.off / 8);
  }
  // Element i of a scalar array (pas[], bitmasks).
  void set(Array<L> a, uint32_t i, uint64_t v) const {
    detail::set_bits(p_ + a.byte_off(i) / 4 * 4, (a.off + a.stride * i) % 32, a.stride, v);
  }
  uint64_t get(Array<L> a, uint32_t i) const {
    return detail::get_bits(p_ + a.byte_off(i) / 4 * 4, (a.off + a.stride * i) % 32, a.stride);
  }
  // Element i of an array of nested structures.
  template <class S>
  Ref<S> elem(Array<L> a, uint32_t i) const {
    return Ref<S>(p_ + a.byte_off(i));
  }

  std::byte* data() const { return p_; }
  operator CRef<L>() const { return CRef<L>(p_); }  // NOLINT: implicit by design

 private:
  std::byte* p_;
};

// Read-only view of a buffer holding layout L.
template <class L>
class CRef {
 public:
  static constexpr std::size_t kBytes = L::kBits / 8;

  explicit CRef(const std::byte* p) : p_(p) {}
  explicit CRef(std::span<const std::byte> b) : p_(b.data()) { assert(b.size() >= kBytes); }

  uint64_t get(Field<L> f) const { return detail::get_bits(p_, f.off, f.width); }
  std::span<const std::byte> bytes(Bytes<L> f) const { return {p_ + f.byte_off(), f.size()}; }
  template <class S>
  CRef<S> at(Sub<L, S> s) const {
    return CRef<S>(p_ + s.off / 8);
  }
  uint64_t get(Array<L> a, uint32_t i) const {
    return detail::get_bits(p_ + a.byte_off(i) / 4 * 4, (a.off + a.stride * i) % 32, a.stride);
  }
  template <class S>
  CRef<S> elem(Array<L> a, uint32_t i) const {
    return CRef<S>(p_ + a.byte_off(i));
  }
  const std::byte* data() const { return p_; }

 private:
  const std::byte* p_;
};

// True when every bit of v fits in f (for validating attributes before set()).
template <class L>
constexpr bool fits(Field<L> f, uint64_t v) {
  return v <= f.max();
}

}  // namespace kbv::prm
