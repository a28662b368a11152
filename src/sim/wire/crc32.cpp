// SPDX-License-Identifier: BSD-3-Clause
// The CRC-32 register update behind the ICRC: ISA-L, the Armv8 CRC32
// instructions, or slice-by-8 tables. Definition and sources: icrc.hpp.
#include "sim/wire/icrc.hpp"

#include <endian.h>

#include <array>
#include <cstring>

#if defined(KBV_HAVE_ISAL)
#include <isa-l/crc.h>
#endif
#if defined(__aarch64__)
#include <arm_acle.h>
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace kbv::sim::wire {

namespace {

// kTable[0] is the byte-at-a-time table of the reflected polynomial
// 0xEDB88320; kTable[k][b] is kTable[0][b] advanced by k more zero bytes
// (the slice-by-8 tables).
constexpr std::array<std::array<uint32_t, 256>, 8> kTable = [] {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    t[0][b] = c;
  }
  for (uint32_t b = 0; b < 256; ++b)
    for (size_t k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
  return t;
}();

#if defined(__aarch64__) && !defined(KBV_HAVE_ISAL)
// CRC32X / CRC32B: the IEEE 802.3 polynomial, reflected, no inversion
// (Arm ARM C6.2); compiled for +crc, called only when HWCAP_CRC32 says the
// CPU has it (optional in Armv8.0, mandatory from Armv8.1).
__attribute__((target("+crc"))) uint32_t crc32_update_armv8(uint32_t reg, const uint8_t* p,
                                                            size_t n) {
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    reg = __crc32d(reg, le64toh(w));
  }
  for (; n > 0; ++p, --n) reg = __crc32b(reg, *p);
  return reg;
}

bool cpu_has_crc32() {
  static const bool has = (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
  return has;
}
#endif

}  // namespace

uint32_t crc32_update_table(uint32_t reg, std::span<const uint8_t> data) {
  const uint8_t* p = data.data();
  size_t n = data.size();
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    w = le64toh(w) ^ reg;
    const auto lo = static_cast<uint32_t>(w), hi = static_cast<uint32_t>(w >> 32);
    reg = kTable[7][lo & 0xFF] ^ kTable[6][(lo >> 8) & 0xFF] ^ kTable[5][(lo >> 16) & 0xFF] ^
          kTable[4][lo >> 24] ^ kTable[3][hi & 0xFF] ^ kTable[2][(hi >> 8) & 0xFF] ^
          kTable[1][(hi >> 16) & 0xFF] ^ kTable[0][hi >> 24];
  }
  for (; n > 0; ++p, --n) reg = (reg >> 8) ^ kTable[0][(reg ^ *p) & 0xFF];
  return reg;
}

uint32_t crc32_update(uint32_t reg, std::span<const uint8_t> data) {
#if defined(KBV_HAVE_ISAL)
  // ISA-L's crc32_gzip_refl is zlib's crc32 (preset and inversion inside):
  // the raw register update is its inversion at both ends.
  return ~crc32_gzip_refl(~reg, data.data(), data.size());
#else
#if defined(__aarch64__)
  if (cpu_has_crc32()) return crc32_update_armv8(reg, data.data(), data.size());
#endif
  return crc32_update_table(reg, data);
#endif
}

uint32_t crc32(std::span<const uint8_t> data) { return ~crc32_update(0xFFFFFFFFu, data); }

}  // namespace kbv::sim::wire
