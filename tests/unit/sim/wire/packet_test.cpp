// SPDX-License-Identifier: BSD-3-Clause
// src/sim/wire/packet: datagram layout (header order of IBTA Table 38),
// round trips for every supported opcode, malformed datagrams rejected.
#include "sim/wire/packet.hpp"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace kbv::sim::wire {
namespace {

using Bytes = std::vector<uint8_t>;

// Headers for `op` with every extension header it needs, distinct values.
PacketHeaders headers_for(uint8_t op) {
  PacketHeaders h;
  h.bth.opcode = op;
  h.bth.dest_qp = 0x00ABCD;
  h.bth.psn = 0xFFFFFE;
  h.bth.ack_req = true;
  const OpcodeInfo* i = opcode_info(op);
  if (i->ext & kExtDeth) h.deth = Deth{0x11223344, 0x000042};
  if (i->ext & kExtReth) h.reth = Reth{0x00007F0012340000ull, 0x1234, 4096};
  if (i->ext & kExtAtomicEth) h.atomic_eth = AtomicEth{0x1000, 0x77, 5, 9};
  if (i->ext & kExtAeth) h.aeth = Aeth{aeth_ack(kCreditInvalid), 0x000123};
  if (i->ext & kExtAtomicAckEth) h.atomic_ack_eth = AtomicAckEth{0xFEEDFACECAFEBEEFull};
  if (i->ext & kExtImmDt) h.immdt = ImmDt{0xA5A5A5A5};
  return h;
}

TEST(WirePacket, WriteOnlyImmLayout) {
  PacketHeaders h = headers_for(opcode::kWriteOnlyImm);
  const Bytes payload = {1, 2, 3, 4, 5};
  std::array<uint8_t, 128> out{};
  Result<size_t> n = build_packet(h, payload, out);
  ASSERT_TRUE(n.has_value());
  // BTH 12 + RETH 16 + ImmDt 4 + payload 5 + pad 3 + ICRC 4.
  EXPECT_EQ(*n, 44u);
  EXPECT_EQ(packet_bytes(opcode::kWriteOnlyImm, 5), 44u);
  EXPECT_EQ(out[0], 0x0B);
  EXPECT_EQ(out[1], 0x30);        // PadCnt 3 from the payload length
  EXPECT_EQ(out[12 + 12], 0x00);  // RETH DMA length @12 = 4096
  EXPECT_EQ(out[12 + 14], 0x10);
  EXPECT_EQ(out[28], 0xA5);  // ImmDt right after RETH
  EXPECT_EQ(Bytes(out.begin() + 32, out.begin() + 37), payload);
  EXPECT_EQ(Bytes(out.begin() + 37, out.begin() + 44), Bytes(7, 0));  // pad + ICRC zero
}

TEST(WirePacket, AtomicAckAndUdLayouts) {
  std::array<uint8_t, 128> out{};
  PacketHeaders a = headers_for(opcode::kAtomicAcknowledge);
  ASSERT_EQ(*build_packet(a, {}, out), 28u);
  EXPECT_EQ(out[12], 0x1F);  // AETH syndrome first
  EXPECT_EQ(out[16], 0xFE);  // then AtomicAckETH
  EXPECT_EQ(out[23], 0xEF);

  PacketHeaders u = headers_for(opcode::kUdSendOnlyImm);
  const Bytes payload = {9, 9, 9, 9};
  ASSERT_EQ(*build_packet(u, payload, out), 32u);
  EXPECT_EQ(out[12], 0x11);  // DETH Q_Key
  EXPECT_EQ(out[19], 0x42);  // DETH SrcQP low byte
  EXPECT_EQ(out[20], 0xA5);  // ImmDt after DETH
  EXPECT_EQ(out[24], 9);
}

TEST(WirePacket, RoundTripEveryOpcode) {
  std::array<uint8_t, kMaxDatagram> out{};
  size_t tested = 0;
  for (int op = 0; op < 256; ++op) {
    const OpcodeInfo* i = opcode_info(static_cast<uint8_t>(op));
    if (i == nullptr) continue;
    for (size_t len : {0, 1, 2, 3, 4, 5, 255, 4096}) {
      if (!i->payload && len != 0) continue;
      Bytes payload(len);
      for (size_t k = 0; k < len; ++k) payload[k] = static_cast<uint8_t>(k * 7 + op);
      PacketHeaders h = headers_for(static_cast<uint8_t>(op));
      Result<size_t> n = build_packet(h, payload, out);
      ASSERT_TRUE(n.has_value()) << op << " " << len;
      EXPECT_EQ(*n % 4, 0u);
      Result<ParsedPacket> p = parse_packet({out.data(), *n});
      ASSERT_TRUE(p.has_value()) << op << " " << len;
      h.bth.pad_cnt = pad_count(len);
      EXPECT_EQ(p->headers, h) << op;
      EXPECT_EQ(p->info, i);
      EXPECT_EQ(Bytes(p->payload.begin(), p->payload.end()), payload) << op << " " << len;
      ++tested;
    }
  }
  EXPECT_GT(tested, 100u);
}

TEST(WirePacket, BuildRejectsMismatchedHeaders) {
  std::array<uint8_t, 256> out{};
  PacketHeaders h = headers_for(opcode::kWriteOnly);
  h.reth.reset();  // WRITE Only needs RETH
  EXPECT_EQ(build_packet(h, {}, out).status(), KBV_ERR_INVALID_ARGUMENT);
  h = headers_for(opcode::kSendOnly);
  h.immdt = ImmDt{1};  // SEND Only has no ImmDt
  EXPECT_EQ(build_packet(h, {}, out).status(), KBV_ERR_INVALID_ARGUMENT);
  const Bytes payload = {1};
  h = headers_for(opcode::kAcknowledge);
  EXPECT_EQ(build_packet(h, payload, out).status(), KBV_ERR_INVALID_ARGUMENT);
  h = headers_for(opcode::kReadRequest);
  EXPECT_EQ(build_packet(h, payload, out).status(), KBV_ERR_INVALID_ARGUMENT);
  h.bth.opcode = 0x17;  // SEND Only with Invalidate: not supported
  h.reth.reset();
  EXPECT_EQ(build_packet(h, {}, out).status(), KBV_ERR_NOT_SUPPORTED);
  h = headers_for(opcode::kSendOnly);
  h.bth.dest_qp = 0x1000000;
  EXPECT_EQ(build_packet(h, {}, out).status(), KBV_ERR_INVALID_ARGUMENT);
  h = headers_for(opcode::kSendOnly);
  std::array<uint8_t, 19> small{};
  EXPECT_EQ(build_packet(h, Bytes{1, 2, 3, 4}, small).status(), KBV_ERR_BUFFER_TOO_SMALL);
  Bytes big(kMaxPayload + 1);
  std::array<uint8_t, kMaxDatagram + 64> huge{};
  EXPECT_EQ(build_packet(h, big, huge).status(), KBV_ERR_INVALID_ARGUMENT);
}

Bytes built(uint8_t op, const Bytes& payload) {
  std::array<uint8_t, 256> out{};
  size_t n = *build_packet(headers_for(op), payload, out);
  return Bytes(out.begin(), out.begin() + static_cast<long>(n));
}

TEST(WirePacket, ParseRejectsMalformed) {
  // Shorter than BTH + ICRC.
  EXPECT_EQ(parse_packet(Bytes(15, 0)).status(), KBV_ERR_INVALID_ARGUMENT);
  // Unknown opcode.
  Bytes d = built(opcode::kSendOnly, {1, 2, 3, 4});
  d[0] = 0x1F;
  EXPECT_EQ(parse_packet(d).status(), KBV_ERR_NOT_SUPPORTED);
  // Truncated extension header: a READ request cut inside its RETH.
  Bytes r = built(opcode::kReadRequest, {});
  for (size_t n = 16; n < r.size(); ++n) {
    EXPECT_EQ(parse_packet({r.data(), n}).status(), KBV_ERR_INVALID_ARGUMENT) << n;
  }
  // Payload on an opcode without payload.
  Bytes ack = built(opcode::kAcknowledge, {});
  ack.insert(ack.begin() + 16, {0, 0, 0, 0});
  EXPECT_EQ(parse_packet(ack).status(), KBV_ERR_INVALID_ARGUMENT);
  // Pad count larger than the payload area.
  Bytes p = built(opcode::kSendOnly, {});
  p[1] = 0x30;
  EXPECT_EQ(parse_packet(p).status(), KBV_ERR_INVALID_ARGUMENT);
  // Payload + pad not a multiple of 4.
  Bytes odd = built(opcode::kSendOnly, {1, 2, 3, 4});
  odd.insert(odd.begin() + 12, 0xAA);
  EXPECT_EQ(parse_packet(odd).status(), KBV_ERR_INVALID_ARGUMENT);
  // Transport version other than 0 (IBTA ch. 9, BTH TVer).
  Bytes tv = built(opcode::kSendOnly, {1, 2, 3, 4});
  tv[1] |= 0x01;
  EXPECT_EQ(parse_packet(tv).status(), KBV_ERR_INVALID_ARGUMENT);
  // The pad bytes are excluded from the payload.
  Bytes ok = built(opcode::kSendOnly, {1, 2, 3, 4, 5});
  Result<ParsedPacket> pp = parse_packet(ok);
  ASSERT_TRUE(pp.has_value());
  EXPECT_EQ(pp->payload.size(), 5u);
  EXPECT_EQ(pp->headers.bth.pad_cnt, 3);
}

}  // namespace
}  // namespace kbv::sim::wire
