// SPDX-License-Identifier: BSD-3-Clause
// RoCEv2 ICRC. Definition and sources: icrc.hpp; the CRC-32 itself: crc32.cpp.
#include "sim/wire/icrc.hpp"

#include "sim/wire/headers.hpp"

#include <cstring>

namespace kbv::sim::wire {

namespace {

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

}  // namespace

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
