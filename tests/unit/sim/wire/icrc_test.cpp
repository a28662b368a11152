// SPDX-License-Identifier: BSD-3-Clause
// src/sim/wire/icrc: CRC-32 check value, the rxe seed, ICRC known answers
// (one computed outside kbv, one computed here bit by bit from the
// definition in IBTA Annex A17 / rxe_icrc.c), and the masking rules.
#include "sim/wire/icrc.hpp"

#include "sim/wire/headers.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string_view>
#include <vector>

namespace kbv::sim::wire {
namespace {

using Bytes = std::vector<uint8_t>;

// Bit-at-a-time reflected CRC-32 register update (poly 0xEDB88320): the
// textbook definition, independent of the slice-by-8 tables under test.
uint32_t bitwise_crc(uint32_t reg, const Bytes& data) {
  for (uint8_t b : data) {
    reg ^= b;
    for (int i = 0; i < 8; ++i) reg = (reg >> 1) ^ ((reg & 1) ? 0xEDB88320u : 0);
  }
  return reg;
}

Bytes ascii(std::string_view s) { return Bytes(s.begin(), s.end()); }

// An RC SEND Only datagram: BTH(dest_qp 0x11, AckReq, PSN 0x100) + "kbv!" +
// 4 ICRC bytes (zero).
Bytes send_only_datagram() {
  return {0x04, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x11, 0x80, 0x00,
          0x01, 0x00, 'k',  'b',  'v',  '!',  0,    0,    0,    0};
}

const Ipv4Flow kFlow{0x7F000001, 0x7F000002, 0xC000, 4791};

TEST(WireIcrc, Crc32CheckValue) {
  // The CRC-32 catalogue check value for "123456789".
  EXPECT_EQ(crc32(ascii("123456789")), 0xCBF43926u);
  EXPECT_EQ(crc32({}), 0u);
  // crc32_update agrees with the bitwise definition for every length 0..40
  // (the 8-byte loops and the tails) and for a long buffer.
  Bytes d;
  for (int i = 0; i < 300; ++i) d.push_back(static_cast<uint8_t>(i * 37 + 11));
  for (size_t n = 0; n <= 40; ++n) {
    Bytes part(d.begin(), d.begin() + static_cast<long>(n));
    EXPECT_EQ(crc32_update(0x12345678u, part), bitwise_crc(0x12345678u, part)) << n;
  }
  EXPECT_EQ(crc32_update(~0u, d), bitwise_crc(~0u, d));
  // Whichever path crc32_update takes on this build and CPU (ISA-L's
  // carry-less multiply folding for longer buffers, the Armv8 CRC32
  // instructions, or the tables): every length up to 300, every start
  // offset 0..15 (unaligned loads), and a 4 KiB payload.
  for (size_t off = 0; off < 16; ++off) {
    for (size_t n = 40; off + n <= d.size(); ++n) {
      Bytes part(d.begin() + static_cast<long>(off), d.begin() + static_cast<long>(off + n));
      ASSERT_EQ(crc32_update(0x9ABCDEF0u, part), bitwise_crc(0x9ABCDEF0u, part)) << off << " " << n;
    }
  }
  Bytes big;
  for (int i = 0; i < 4096 + 28; ++i) big.push_back(static_cast<uint8_t>(i * 131 + (i >> 8)));
  EXPECT_EQ(crc32_update(~0u, big), bitwise_crc(~0u, big));
}

TEST(WireIcrc, TableFallbackMatchesTheDefinition) {
  // crc32_update_table: what crc32_update runs without ISA-L and without
  // the Armv8 CRC32 instructions; checked here on every build. Every length
  // 0..300 at every start offset 0..7 (the 8-byte loop, the tail, unaligned
  // loads) and a 4 KiB payload.
  Bytes d;
  for (int i = 0; i < 308; ++i) d.push_back(static_cast<uint8_t>(i * 37 + 11));
  for (size_t off = 0; off < 8; ++off) {
    for (size_t n = 0; n <= 300; ++n) {
      Bytes part(d.begin() + static_cast<long>(off), d.begin() + static_cast<long>(off + n));
      ASSERT_EQ(crc32_update_table(0x9ABCDEF0u, part), bitwise_crc(0x9ABCDEF0u, part))
          << off << " " << n;
    }
  }
  Bytes big;
  for (int i = 0; i < 4096 + 28; ++i) big.push_back(static_cast<uint8_t>(i * 131 + (i >> 8)));
  EXPECT_EQ(crc32_update_table(~0u, big), bitwise_crc(~0u, big));
  EXPECT_EQ(~crc32_update_table(~0u, ascii("123456789")), 0xCBF43926u);
}

TEST(WireIcrc, SeedIsEightBytesOfOnesAfterPreset) {
  // rxe_icrc.c: "the result of computing a CRC with a seed of 0xffffffff and
  // 8 bytes of 0xff representing a masked LRH".
  const Bytes lrh(8, 0xFF);
  EXPECT_EQ(bitwise_crc(0xFFFFFFFFu, lrh), kIcrcSeed);
  EXPECT_EQ(crc32_update(0xFFFFFFFFu, lrh), kIcrcSeed);
}

TEST(WireIcrc, KnownAnswerComputedOutsideKbv) {
  // Value from Python: zlib.crc32(b'\xff'*8 + masked IPv4 header + masked UDP
  // header + masked BTH + b'kbv!') for 127.0.0.1:49152 -> 127.0.0.2:4791,
  // IPv4 total length 48, ID 0, DF; UDP length 28.
  const Bytes d = send_only_datagram();
  Result<uint32_t> c = compute_icrc(kFlow, d);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(*c, 0x4C61441Bu);
  Bytes w = d;
  ASSERT_TRUE(write_icrc(kFlow, w).is_ok());
  // Sent least significant byte first.
  EXPECT_EQ(Bytes(w.end() - 4, w.end()), (Bytes{0x1B, 0x44, 0x61, 0x4C}));
  EXPECT_TRUE(icrc_ok(kFlow, w));
}

// The ICRC from the definition, over a whole IPv4 packet laid out by hand.
uint32_t icrc_by_definition(const Bytes& ip_packet) {
  Bytes m(8, 0xFF);  // masked LRH stand-in
  Bytes hdr(ip_packet.begin(), ip_packet.begin() + 40);
  hdr[1] = 0xFF;             // IPv4 TOS
  hdr[8] = 0xFF;             // TTL
  hdr[10] = hdr[11] = 0xFF;  // header checksum
  hdr[26] = hdr[27] = 0xFF;  // UDP checksum
  hdr[28 + 4] = 0xFF;        // BTH FECN/BECN/resv6
  m.insert(m.end(), hdr.begin(), hdr.end());
  m.insert(m.end(), ip_packet.begin() + 40, ip_packet.end() - 4);
  return ~bitwise_crc(0xFFFFFFFFu, m);
}

Bytes ip_packet(const Ipv4Flow& f, const Bytes& datagram, uint8_t tos, uint8_t ttl,
                uint16_t ip_csum, uint16_t udp_csum) {
  const size_t total = 28 + datagram.size();
  Bytes p = {0x45,
             tos,
             static_cast<uint8_t>(total >> 8),
             static_cast<uint8_t>(total),
             0x00,
             0x00,  // Identification 0
             0x40,
             0x00,  // DF
             ttl,
             17,
             static_cast<uint8_t>(ip_csum >> 8),
             static_cast<uint8_t>(ip_csum),
             static_cast<uint8_t>(f.src_ip >> 24),
             static_cast<uint8_t>(f.src_ip >> 16),
             static_cast<uint8_t>(f.src_ip >> 8),
             static_cast<uint8_t>(f.src_ip),
             static_cast<uint8_t>(f.dst_ip >> 24),
             static_cast<uint8_t>(f.dst_ip >> 16),
             static_cast<uint8_t>(f.dst_ip >> 8),
             static_cast<uint8_t>(f.dst_ip),
             static_cast<uint8_t>(f.src_port >> 8),
             static_cast<uint8_t>(f.src_port),
             static_cast<uint8_t>(f.dst_port >> 8),
             static_cast<uint8_t>(f.dst_port),
             static_cast<uint8_t>((total - 20) >> 8),
             static_cast<uint8_t>(total - 20),
             static_cast<uint8_t>(udp_csum >> 8),
             static_cast<uint8_t>(udp_csum)};
  p.insert(p.end(), datagram.begin(), datagram.end());
  return p;
}

TEST(WireIcrc, MatchesStepByStepDefinition) {
  // An RDMA WRITE Only with a 7-byte payload + 1 pad byte, FECN set.
  Bytes d = {0x0A, 0x10, 0x80, 0x01, 0x80, 0x00, 0x12, 0x34, 0x80, 0xFE, 0xDC, 0xBA,
             // RETH
             0, 0, 0, 0, 0x10, 0x00, 0x20, 0x00, 0xAB, 0xCD, 0x00, 0x01, 0, 0, 0, 7,
             // payload + pad
             1, 2, 3, 4, 5, 6, 7, 0,
             // ICRC
             0, 0, 0, 0};
  const Ipv4Flow f{0x7F0000C9, 0x7F0000CA, 0xE123, 4791};
  const uint32_t want = icrc_by_definition(ip_packet(f, d, 0, 64, 0x1234, 0));
  EXPECT_EQ(*compute_icrc(f, d), want);
  EXPECT_EQ(*compute_icrc_ipv4(ip_packet(f, d, 0, 64, 0x1234, 0)), want);
}

TEST(WireIcrc, VariantFieldsDoNotChangeIt) {
  const Bytes d = send_only_datagram();
  const uint32_t base = *compute_icrc_ipv4(ip_packet(kFlow, d, 0, 64, 0, 0));
  EXPECT_EQ(base, *compute_icrc(kFlow, d));
  EXPECT_EQ(*compute_icrc_ipv4(ip_packet(kFlow, d, 0xB8, 64, 0, 0)), base);    // TOS/DSCP
  EXPECT_EQ(*compute_icrc_ipv4(ip_packet(kFlow, d, 0, 1, 0, 0)), base);        // TTL
  EXPECT_EQ(*compute_icrc_ipv4(ip_packet(kFlow, d, 0, 64, 0xBEEF, 0)), base);  // IP csum
  EXPECT_EQ(*compute_icrc_ipv4(ip_packet(kFlow, d, 0, 64, 0, 0x5A5A)), base);  // UDP csum
  Bytes ecn = d;
  ecn[4] = 0xC0;  // FECN + BECN
  EXPECT_EQ(*compute_icrc(kFlow, ecn), base);
  ecn[4] = 0x3F;  // reserved bits
  EXPECT_EQ(*compute_icrc(kFlow, ecn), base);
  // The stored ICRC bytes themselves are not covered.
  Bytes icrc_changed = d;
  icrc_changed.back() = 0x77;
  EXPECT_EQ(*compute_icrc(kFlow, icrc_changed), base);
}

TEST(WireIcrc, InvariantFieldsChangeIt) {
  const Bytes d = send_only_datagram();
  const uint32_t base = *compute_icrc(kFlow, d);
  for (size_t i = 0; i + 4 < d.size(); ++i) {
    if (i == 4) continue;  // the masked BTH byte
    Bytes x = d;
    x[i] ^= 0x01;
    EXPECT_NE(*compute_icrc(kFlow, x), base) << "byte " << i;
  }
  Ipv4Flow f = kFlow;
  f.src_ip = 0x7F000003;
  EXPECT_NE(*compute_icrc(f, d), base);
  f = kFlow;
  f.dst_ip = 0x7F000003;
  EXPECT_NE(*compute_icrc(f, d), base);
  f = kFlow;
  f.src_port = 0xC001;
  EXPECT_NE(*compute_icrc(f, d), base);
  // The IP Identification is invariant too: a packet with ID 1 differs.
  Bytes p = ip_packet(kFlow, d, 0, 64, 0, 0);
  p[5] = 1;
  EXPECT_NE(*compute_icrc_ipv4(p), base);
}

TEST(WireIcrc, BuiltHeaderIsValidIpv4) {
  std::array<uint8_t, 28> h{};
  build_ipv4_udp_header(kFlow, 20, 0, 64, h);
  // Header checksum: the one's-complement sum over the header is 0xFFFF.
  uint32_t sum = 0;
  for (size_t i = 0; i < 20; i += 2) sum += uint32_t{h[i]} << 8 | h[i + 1];
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  EXPECT_EQ(sum, 0xFFFFu);
  EXPECT_EQ(h[2] << 8 | h[3], 48);    // total length
  EXPECT_EQ(h[6], 0x40);              // DF
  EXPECT_EQ(h[24] << 8 | h[25], 28);  // UDP length
  EXPECT_EQ(h[22] << 8 | h[23], 4791);
  Bytes full(h.begin(), h.end());
  const Bytes d = send_only_datagram();
  full.insert(full.end(), d.begin(), d.end());
  EXPECT_EQ(*compute_icrc_ipv4(full), 0x4C61441Bu);
}

TEST(WireIcrc, ShortOrNonUdpInputsRejected) {
  Bytes tiny(15, 0);
  EXPECT_EQ(compute_icrc(kFlow, tiny).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_FALSE(icrc_ok(kFlow, tiny));
  EXPECT_EQ(write_icrc(kFlow, std::span<uint8_t>(tiny)), KBV_ERR_INVALID_ARGUMENT);
  Bytes p = ip_packet(kFlow, send_only_datagram(), 0, 64, 0, 0);
  EXPECT_TRUE(compute_icrc_ipv4(p).has_value());
  Bytes tcp = p;
  tcp[9] = 6;
  EXPECT_EQ(compute_icrc_ipv4(tcp).status(), KBV_ERR_INVALID_ARGUMENT);
  Bytes opts = p;
  opts[0] = 0x46;  // IHL 6: options are not supported
  EXPECT_EQ(compute_icrc_ipv4(opts).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(compute_icrc_ipv4(std::span<const uint8_t>(p.data(), 43)).status(),
            KBV_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace kbv::sim::wire
