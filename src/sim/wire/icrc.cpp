// SPDX-License-Identifier: BSD-3-Clause
// RoCEv2 ICRC and CRC-32 (slice-by-8). Definition and sources: icrc.hpp.
#include "sim/wire/icrc.hpp"

#include "sim/wire/headers.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kbv::sim::wire {

namespace {

using Tables = std::array<std::array<uint32_t, 256>, 8>;

// Table t[k][b]: the register after feeding byte b followed by k zero bytes.
constexpr Tables make_tables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    t[0][b] = c;
  }
  for (uint32_t b = 0; b < 256; ++b) {
    for (size_t k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
  }
  return t;
}

constexpr Tables kTables = make_tables();

// Offsets inside the IPv4 header (RFC 791) and UDP header (RFC 768).
constexpr size_t kIpTos = 1, kIpTotalLen = 2, kIpId = 4, kIpFrag = 6, kIpTtl = 8, kIpProto = 9,
                 kIpCsum = 10, kIpSrc = 12, kIpDst = 16;
constexpr size_t kUdpSport = 0, kUdpDport = 2, kUdpLen = 4, kUdpCsum = 6;
constexpr size_t kBthVariantByte = 4;  // FECN | BECN | resv6 (rxe: "bth.resv8a")

constexpr size_t kPseudoBytes = kIpv4HeaderBytes + kUdpHeaderBytes + kBthBytes;

// Masks the variant fields of a 40-byte IPv4+UDP+BTH copy in place.
void mask_variant(uint8_t* p) {
  p[kIpTos] = 0xFF;
  p[kIpTtl] = 0xFF;
  p[kIpCsum] = 0xFF;
  p[kIpCsum + 1] = 0xFF;
  p[kIpv4HeaderBytes + kUdpCsum] = 0xFF;
  p[kIpv4HeaderBytes + kUdpCsum + 1] = 0xFF;
  p[kIpv4HeaderBytes + kUdpHeaderBytes + kBthVariantByte] = 0xFF;
}

// CRC over the masked 40-byte pseudo header, then the rest of the datagram
// after the BTH up to (not including) the ICRC field; returns the ICRC.
uint32_t finish(uint8_t* pseudo, std::span<const uint8_t> datagram) {
  mask_variant(pseudo);
  uint32_t reg = crc32_update(kIcrcSeed, {pseudo, kPseudoBytes});
  reg = crc32_update(reg, datagram.subspan(kBthBytes, datagram.size() - kBthBytes - kIcrcBytes));
  return ~reg;
}

uint16_t ipv4_checksum(const uint8_t* h) {
  uint32_t sum = 0;
  for (size_t i = 0; i < kIpv4HeaderBytes; i += 2) sum += be::load16(h + i);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

uint32_t crc32_table(uint32_t reg, const uint8_t* p, size_t n) {
  while (n >= 8) {
    uint32_t lo =
        reg ^ (uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24);
    reg = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^
          kTables[4][lo >> 24] ^ kTables[3][p[4]] ^ kTables[2][p[5]] ^ kTables[1][p[6]] ^
          kTables[0][p[7]];
    p += 8;
    n -= 8;
  }
  while (n--) reg = (reg >> 8) ^ kTables[0][(reg ^ *p++) & 0xFF];
  return reg;
}

#if defined(__x86_64__)
// Carry-less multiplication folding (Intel, "Fast CRC Computation for
// Generic Polynomials Using PCLMULQDQ Instruction", 2009; the constants are
// those of that paper for the bit-reflected CRC-32 polynomial, as Linux
// arch/x86/crypto/crc32-pclmul_asm.S uses them): four 128-bit lanes fold
// 64 bytes per step, then one lane folds 16 bytes per step, then a 64->32
// bit fold and a Barrett reduction. n >= 64 and a multiple of 16; the same
// register convention as crc32_table (no preset, no inversion).
#define KBV_CLMUL __attribute__((target("pclmul,sse4.1")))
KBV_CLMUL inline __m128i load(const uint8_t* q) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
}
// x * (k.lo for x.lo, k.hi for x.hi), folded onto `data`.
KBV_CLMUL inline __m128i fold(__m128i x, __m128i k, __m128i data) {
  return _mm_xor_si128(
      _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), data);
}
KBV_CLMUL uint32_t crc32_clmul(uint32_t reg, const uint8_t* p, size_t n) {
  const __m128i k1k2 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);  // x^(4*128+32), x^(4*128-32)
  const __m128i k3k4 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);  // x^(128+32), x^(128-32)
  const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124);              // x^64 mod P
  const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
  const __m128i poly_mu = _mm_set_epi64x(0x1F7011641, 0x1DB710641);  // mu, P'
  __m128i x1 = _mm_xor_si128(load(p), _mm_cvtsi32_si128(static_cast<int>(reg)));
  __m128i x2 = load(p + 16), x3 = load(p + 32), x4 = load(p + 48);
  p += 64;
  n -= 64;
  for (; n >= 64; n -= 64, p += 64) {
    x1 = fold(x1, k1k2, load(p));
    x2 = fold(x2, k1k2, load(p + 16));
    x3 = fold(x3, k1k2, load(p + 32));
    x4 = fold(x4, k1k2, load(p + 48));
  }
  x1 = fold(x1, k3k4, x2);
  x1 = fold(x1, k3k4, x3);
  x1 = fold(x1, k3k4, x4);
  for (; n >= 16; n -= 16, p += 16) x1 = fold(x1, k3k4, load(p));
  // 128 -> 64 bits (appending 32 zero bits), then 64 -> 32.
  x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), _mm_clmulepi64_si128(k3k4, x1, 0x01));
  const __m128i hi = _mm_srli_si128(x1, 4);
  x1 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, mask32), k5, 0x00), hi);
  // Barrett reduction (bit-reflected).
  const __m128i t = x1;
  x1 = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), poly_mu, 0x10);
  x1 = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), poly_mu, 0x00);
  return static_cast<uint32_t>(_mm_extract_epi32(_mm_xor_si128(x1, t), 1));
}

bool have_clmul() {
  static const bool v = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  }();
  return v;
}
#endif

}  // namespace

uint32_t crc32_update(uint32_t reg, std::span<const uint8_t> data) {
  const uint8_t* p = data.data();
  size_t n = data.size();
#if defined(__x86_64__)
  if (n >= 64 && have_clmul()) {
    const size_t bulk = n & ~size_t{15};
    reg = crc32_clmul(reg, p, bulk);
    p += bulk;
    n -= bulk;
  }
#endif
  return crc32_table(reg, p, n);
}

uint32_t crc32(std::span<const uint8_t> data) { return ~crc32_update(0xFFFFFFFFu, data); }

void build_ipv4_udp_header(const Ipv4Flow& flow, size_t roce_bytes, uint8_t tos, uint8_t ttl,
                           std::span<uint8_t, kIpv4HeaderBytes + kUdpHeaderBytes> out) {
  uint8_t* p = out.data();
  std::memset(p, 0, out.size());
  p[0] = 0x45;  // version 4, IHL 5
  p[kIpTos] = tos;
  be::store16(p + kIpTotalLen,
              static_cast<uint16_t>(kIpv4HeaderBytes + kUdpHeaderBytes + roce_bytes));
  be::store16(p + kIpId, 0);
  be::store16(p + kIpFrag, 0x4000);  // DF
  p[kIpTtl] = ttl;
  p[kIpProto] = 17;  // UDP
  be::store32(p + kIpSrc, flow.src_ip);
  be::store32(p + kIpDst, flow.dst_ip);
  be::store16(p + kIpCsum, ipv4_checksum(p));
  uint8_t* u = p + kIpv4HeaderBytes;
  be::store16(u + kUdpSport, flow.src_port);
  be::store16(u + kUdpDport, flow.dst_port);
  be::store16(u + kUdpLen, static_cast<uint16_t>(kUdpHeaderBytes + roce_bytes));
  be::store16(u + kUdpCsum, 0);
}

Result<uint32_t> compute_icrc(const Ipv4Flow& flow, std::span<const uint8_t> datagram) {
  if (datagram.size() < kBthBytes + kIcrcBytes) return KBV_ERR_INVALID_ARGUMENT;
  uint8_t pseudo[kPseudoBytes];
  build_ipv4_udp_header(flow, datagram.size(), 0xFF, 0xFF,
                        std::span<uint8_t, kIpv4HeaderBytes + kUdpHeaderBytes>(pseudo, 28));
  std::memcpy(pseudo + kIpv4HeaderBytes + kUdpHeaderBytes, datagram.data(), kBthBytes);
  return finish(pseudo, datagram);
}

Result<uint32_t> compute_icrc_ipv4(std::span<const uint8_t> ip_packet) {
  constexpr size_t kHdr = kIpv4HeaderBytes + kUdpHeaderBytes;
  if (ip_packet.size() < kHdr + kBthBytes + kIcrcBytes) return KBV_ERR_INVALID_ARGUMENT;
  if (ip_packet[0] != 0x45 || ip_packet[kIpProto] != 17) return KBV_ERR_INVALID_ARGUMENT;
  uint8_t pseudo[kPseudoBytes];
  std::memcpy(pseudo, ip_packet.data(), kPseudoBytes);
  return finish(pseudo, ip_packet.subspan(kHdr));
}

Status write_icrc(const Ipv4Flow& flow, std::span<uint8_t> datagram) {
  Result<uint32_t> c = compute_icrc(flow, datagram);
  if (!c) return c.status();
  uint8_t* p = datagram.data() + datagram.size() - kIcrcBytes;
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(*c >> (8 * i));
  return {};
}

uint32_t stored_icrc(std::span<const uint8_t> datagram) {
  if (datagram.size() < kIcrcBytes) return 0;
  const uint8_t* p = datagram.data() + datagram.size() - kIcrcBytes;
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

bool icrc_ok(const Ipv4Flow& flow, std::span<const uint8_t> datagram) {
  Result<uint32_t> c = compute_icrc(flow, datagram);
  return c && *c == stored_icrc(datagram);
}

}  // namespace kbv::sim::wire
