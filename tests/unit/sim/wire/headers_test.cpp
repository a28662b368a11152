// SPDX-License-Identifier: BSD-3-Clause
// src/sim/wire/headers: golden bytes (offsets from IBTA Vol 1 ch. 9 and
// Linux rxe_hdr.h), short-input rejection, opcode table (IBTA Table 38,
// rxe_opcode.c), AETH syndromes (IBTA 9.7.5), RNR timer (IBTA Table 45),
// PSN wraparound (IBTA 9.7.1), pad counts.
#include "sim/wire/headers.hpp"

#include <gtest/gtest.h>

#include <array>
#include <set>
#include <vector>

namespace kbv::sim::wire {
namespace {

using Bytes = std::vector<uint8_t>;

template <class H>
Bytes enc(const H& h, size_t n) {
  Bytes b(n, 0xEE);
  EXPECT_TRUE(encode(h, b).is_ok());
  return b;
}

TEST(WireHeaders, BthGoldenBytes) {
  Bth h;
  h.opcode = 0x0A;  // RC RDMA WRITE Only
  h.se = true;
  h.mig = false;
  h.pad_cnt = 2;
  h.tver = 0;
  h.pkey = 0xFFFF;
  h.fecn = true;
  h.dest_qp = 0x123456;
  h.ack_req = true;
  h.psn = 0xABCDEF;
  // byte 0 opcode; byte 1 SE(0x80) M(0x40) PadCnt(0x30) TVer(0x0F);
  // 2-3 P_Key; 4 FECN(0x80) BECN(0x40); 5-7 DestQP; 8 AckReq(0x80); 9-11 PSN.
  const Bytes want = {0x0A, 0xA0, 0xFF, 0xFF, 0x80, 0x12, 0x34, 0x56, 0x80, 0xAB, 0xCD, 0xEF};
  EXPECT_EQ(enc(h, kBthBytes), want);
  Result<Bth> d = decode_bth(want);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(*d, h);

  Bth m;
  m.opcode = 0x64;
  m.mig = true;
  m.becn = true;
  m.tver = 0xF;
  m.pkey = 0x8001;
  m.dest_qp = 0xFFFFFF;
  m.psn = 0;
  const Bytes want2 = {0x64, 0x4F, 0x80, 0x01, 0x40, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(enc(m, kBthBytes), want2);
  EXPECT_EQ(*decode_bth(want2), m);
}

TEST(WireHeaders, BthReservedBitsIgnoredOnDecode) {
  // resv6 in byte 4 and resv7 in byte 8 set: fields still decode.
  const Bytes b = {0x11, 0x00, 0xFF, 0xFF, 0x3F, 0x00, 0x00, 0x07, 0x7F, 0x00, 0x00, 0x09};
  Result<Bth> d = decode_bth(b);
  ASSERT_TRUE(d.has_value());
  EXPECT_FALSE(d->fecn);
  EXPECT_FALSE(d->becn);
  EXPECT_EQ(d->dest_qp, 7u);
  EXPECT_FALSE(d->ack_req);
  EXPECT_EQ(d->psn, 9u);
}

TEST(WireHeaders, BthRejectsOutOfRangeFields) {
  std::array<uint8_t, kBthBytes> out{};
  Bth h;
  h.dest_qp = 0x1000000;
  EXPECT_EQ(encode(h, out), KBV_ERR_INVALID_ARGUMENT);
  h = {};
  h.psn = 0x1000000;
  EXPECT_EQ(encode(h, out), KBV_ERR_INVALID_ARGUMENT);
  h = {};
  h.pad_cnt = 4;
  EXPECT_EQ(encode(h, out), KBV_ERR_INVALID_ARGUMENT);
  h = {};
  h.tver = 16;
  EXPECT_EQ(encode(h, out), KBV_ERR_INVALID_ARGUMENT);
  std::array<uint8_t, kBthBytes - 1> small{};
  EXPECT_EQ(encode(Bth{}, small), KBV_ERR_BUFFER_TOO_SMALL);
}

TEST(WireHeaders, RethGoldenBytes) {
  // VA @0 (8), R_Key @8 (4), DMA Length @12 (4): IBTA ch. 9, rxe_reth.
  const Reth h{0x0102030405060708ull, 0xA1B2C3D4, 0x00001000};
  const Bytes want = {1, 2, 3, 4, 5, 6, 7, 8, 0xA1, 0xB2, 0xC3, 0xD4, 0, 0, 0x10, 0};
  EXPECT_EQ(enc(h, kRethBytes), want);
  EXPECT_EQ(*decode_reth(want), h);
}

TEST(WireHeaders, AethGoldenBytes) {
  // Syndrome @0, MSN @1 (24 bits): IBTA ch. 9, AETH.
  const Aeth h{aeth_nak(NakCode::kRemoteAccessError), 0x00BEEF};
  const Bytes want = {0x62, 0x00, 0xBE, 0xEF};
  EXPECT_EQ(enc(h, kAethBytes), want);
  EXPECT_EQ(*decode_aeth(want), h);
  std::array<uint8_t, kAethBytes> out{};
  EXPECT_EQ(encode(Aeth{0, 0x1000000}, out), KBV_ERR_INVALID_ARGUMENT);
}

TEST(WireHeaders, DethGoldenBytes) {
  // Q_Key @0, reserved @4, SrcQP @5: IBTA ch. 9, rxe_deth (sqp low 24 bits).
  const Deth h{0x80010000, 0x000001};
  const Bytes want = {0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01};
  EXPECT_EQ(enc(h, kDethBytes), want);
  EXPECT_EQ(*decode_deth(want), h);
  // A set reserved byte is ignored.
  const Bytes resv = {0x11, 0x11, 0x11, 0x11, 0xFF, 0x00, 0x00, 0x02};
  EXPECT_EQ(*decode_deth(resv), (Deth{0x11111111, 2}));
}

TEST(WireHeaders, ImmDtAndAtomicGoldenBytes) {
  EXPECT_EQ(enc(ImmDt{0xDEADBEEF}, kImmDtBytes), (Bytes{0xDE, 0xAD, 0xBE, 0xEF}));
  // AtomicETH: VA @0, R_Key @8, Swap/Add @12, Compare @20 (IBTA ch. 9;
  // rxe_atmeth is __packed, 28 bytes).
  const AtomicEth a{0x1111111122222222ull, 0x33333333, 0x4444444455555555ull,
                    0x6666666677777777ull};
  const Bytes want = {0x11, 0x11, 0x11, 0x11, 0x22, 0x22, 0x22, 0x22, 0x33, 0x33,
                      0x33, 0x33, 0x44, 0x44, 0x44, 0x44, 0x55, 0x55, 0x55, 0x55,
                      0x66, 0x66, 0x66, 0x66, 0x77, 0x77, 0x77, 0x77};
  EXPECT_EQ(enc(a, kAtomicEthBytes), want);
  EXPECT_EQ(*decode_atomic_eth(want), a);
  const AtomicAckEth ack{0x0123456789ABCDEFull};
  const Bytes ack_want = {0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF};
  EXPECT_EQ(enc(ack, kAtomicAckEthBytes), ack_want);
  EXPECT_EQ(*decode_atomic_ack_eth(ack_want), ack);
}

TEST(WireHeaders, ShortInputsRejectedWithoutOverread) {
  // Each decoder gets one byte less than its header, in a buffer whose next
  // byte exists but lies outside the span.
  std::array<uint8_t, 64> buf{};
  auto cut = [&](size_t n) { return std::span<const uint8_t>(buf.data(), n); };
  EXPECT_EQ(decode_bth(cut(kBthBytes - 1)).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(decode_reth(cut(kRethBytes - 1)).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(decode_aeth(cut(kAethBytes - 1)).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(decode_deth(cut(kDethBytes - 1)).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(decode_immdt(cut(kImmDtBytes - 1)).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(decode_atomic_eth(cut(kAtomicEthBytes - 1)).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(decode_atomic_ack_eth(cut(kAtomicAckEthBytes - 1)).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(decode_bth(cut(0)).status(), KBV_ERR_INVALID_ARGUMENT);
  std::array<uint8_t, kRethBytes - 1> small{};
  EXPECT_EQ(encode(Reth{}, small), KBV_ERR_BUFFER_TOO_SMALL);
  std::array<uint8_t, kAtomicEthBytes - 1> small2{};
  EXPECT_EQ(encode(AtomicEth{}, small2), KBV_ERR_BUFFER_TOO_SMALL);
}

TEST(WireHeaders, OpcodeTableMatchesIbtaTable38) {
  struct Row {
    uint8_t op;
    uint8_t ext;
    bool payload;
    size_t hdr;  // rxe_opcode.c .length
  };
  const Row rows[] = {
      {0x00, 0, true, 12},
      {0x03, kExtImmDt, true, 16},
      {0x04, 0, true, 12},
      {0x05, kExtImmDt, true, 16},
      {0x06, kExtReth, true, 28},
      {0x07, 0, true, 12},
      {0x09, kExtImmDt, true, 16},
      {0x0A, kExtReth, true, 28},
      {0x0B, kExtReth | kExtImmDt, true, 32},
      {0x0C, kExtReth, false, 28},
      {0x0D, kExtAeth, true, 16},
      {0x0E, 0, true, 12},
      {0x0F, kExtAeth, true, 16},
      {0x10, kExtAeth, true, 16},
      {0x11, kExtAeth, false, 16},
      {0x12, kExtAeth | kExtAtomicAckEth, false, 24},
      {0x13, kExtAtomicEth, false, 40},
      {0x14, kExtAtomicEth, false, 40},
      {0x26, kExtReth, true, 28},
      {0x2B, kExtReth | kExtImmDt, true, 32},
      {0x64, kExtDeth, true, 20},
      {0x65, kExtDeth | kExtImmDt, true, 24},
  };
  for (const Row& r : rows) {
    const OpcodeInfo* i = opcode_info(r.op);
    ASSERT_NE(i, nullptr) << std::hex << int(r.op);
    EXPECT_EQ(i->ext, r.ext) << std::hex << int(r.op);
    EXPECT_EQ(i->payload, r.payload) << std::hex << int(r.op);
    EXPECT_EQ(i->hdr_bytes, r.hdr) << std::hex << int(r.op);
  }
}

TEST(WireHeaders, OpcodeTableProperties) {
  size_t supported = 0;
  for (int op = 0; op < 256; ++op) {
    const OpcodeInfo* i = opcode_info(static_cast<uint8_t>(op));
    if (i == nullptr) continue;
    ++supported;
    const Transport t = transport_of(static_cast<uint8_t>(op));
    EXPECT_TRUE(t == Transport::kRc || t == Transport::kUc || t == Transport::kUd) << op;
    EXPECT_EQ(i->hdr_bytes, kBthBytes + ext_bytes(i->ext)) << op;
    // Only UD carries DETH; UC has no READ, ACK or atomics.
    EXPECT_EQ((i->ext & kExtDeth) != 0, t == Transport::kUd) << op;
    if (t == Transport::kUc) {
      EXPECT_TRUE(i->operation == Operation::kSend || i->operation == Operation::kWrite) << op;
    }
    // RETH starts a WRITE message and is the READ request; never elsewhere.
    const bool reth = (i->ext & kExtReth) != 0;
    const bool starts_write = i->operation == Operation::kWrite &&
                              (i->position == Position::kFirst || i->position == Position::kOnly);
    EXPECT_EQ(reth, starts_write || i->operation == Operation::kReadRequest) << op;
    // ImmDt only on the last/only packet of a SEND or WRITE.
    if (i->ext & kExtImmDt) {
      EXPECT_TRUE(i->position == Position::kLast || i->position == Position::kOnly) << op;
    }
    // Same operation number in RC and UC means the same header set.
    if (t == Transport::kUc) {
      const OpcodeInfo* rc = opcode_info(static_cast<uint8_t>(op & 0x1F));
      ASSERT_NE(rc, nullptr);
      EXPECT_EQ(rc->ext, i->ext);
      EXPECT_EQ(rc->payload, i->payload);
    }
  }
  EXPECT_EQ(supported, 21u + 12u + 2u);
  // Unsupported: RC 0x15..0x1F (reserved, SEND with Invalidate, FLUSH), RD
  // 0x40.., UD other than SEND Only, CNP 0x81, XRC 0xA0...
  for (uint8_t op : {0x15, 0x16, 0x17, 0x1C, 0x2C, 0x40, 0x60, 0x66, 0x81, 0xA4, 0xFF}) {
    EXPECT_EQ(opcode_info(op), nullptr) << std::hex << int(op);
  }
}

TEST(WireHeaders, MakeOpcodeInvertsTheTable) {
  for (int op = 0; op < 256; ++op) {
    const OpcodeInfo* i = opcode_info(static_cast<uint8_t>(op));
    if (i == nullptr) continue;
    Result<uint8_t> back = make_opcode(transport_of(static_cast<uint8_t>(op)), i->operation,
                                       i->position, (i->ext & kExtImmDt) != 0);
    ASSERT_TRUE(back.has_value()) << op;
    EXPECT_EQ(*back, op);
  }
  EXPECT_EQ(*make_opcode(Transport::kRc, Operation::kWrite, Position::kLast, true), 0x09);
  EXPECT_EQ(*make_opcode(Transport::kUc, Operation::kSend, Position::kOnly, false), 0x24);
  EXPECT_EQ(*make_opcode(Transport::kUd, Operation::kSend, Position::kOnly, true), 0x65);
  EXPECT_EQ(make_opcode(Transport::kUc, Operation::kReadRequest, Position::kOnly, false).status(),
            KBV_ERR_NOT_SUPPORTED);
  EXPECT_EQ(make_opcode(Transport::kUd, Operation::kWrite, Position::kOnly, false).status(),
            KBV_ERR_NOT_SUPPORTED);
  EXPECT_EQ(make_opcode(Transport::kUd, Operation::kSend, Position::kFirst, false).status(),
            KBV_ERR_NOT_SUPPORTED);
  EXPECT_EQ(make_opcode(Transport::kRc, Operation::kSend, Position::kFirst, true).status(),
            KBV_ERR_NOT_SUPPORTED);
  EXPECT_EQ(make_opcode(Transport::kRd, Operation::kSend, Position::kOnly, false).status(),
            KBV_ERR_NOT_SUPPORTED);
}

TEST(WireHeaders, Segmentation) {
  EXPECT_EQ(ib_mtu_bytes(1), 256u);
  EXPECT_EQ(ib_mtu_bytes(3), 1024u);
  EXPECT_EQ(ib_mtu_bytes(5), 4096u);
  EXPECT_EQ(ib_mtu_bytes(0), 0u);
  EXPECT_EQ(ib_mtu_bytes(6), 0u);
  EXPECT_EQ(packet_count(0, 1024), 1u);
  EXPECT_EQ(packet_count(1, 1024), 1u);
  EXPECT_EQ(packet_count(1024, 1024), 1u);
  EXPECT_EQ(packet_count(1025, 1024), 2u);
  EXPECT_EQ(packet_count(1ull << 31, 4096), 1u << 19);
  EXPECT_EQ(position_of(0, 1), Position::kOnly);
  EXPECT_EQ(position_of(0, 3), Position::kFirst);
  EXPECT_EQ(position_of(1, 3), Position::kMiddle);
  EXPECT_EQ(position_of(2, 3), Position::kLast);
  EXPECT_EQ(position_of(1, 2), Position::kLast);
}

TEST(WireHeaders, AethSyndromes) {
  EXPECT_EQ(aeth_ack(0x1F), 0x1F);
  EXPECT_EQ(aeth_type(aeth_ack(5)), AethType::kAck);
  EXPECT_EQ(aeth_value(aeth_ack(5)), 5);
  EXPECT_EQ(aeth_rnr_nak(14), 0x2E);
  EXPECT_EQ(aeth_type(0x2E), AethType::kRnrNak);
  EXPECT_EQ(aeth_value(0x2E), 14);
  // NAK codes 0..4 -> 0x60..0x64 (IBTA 9.7.5 AETH syndrome encoding).
  EXPECT_EQ(aeth_nak(NakCode::kPsnSequenceError), 0x60);
  EXPECT_EQ(aeth_nak(NakCode::kInvalidRequest), 0x61);
  EXPECT_EQ(aeth_nak(NakCode::kRemoteAccessError), 0x62);
  EXPECT_EQ(aeth_nak(NakCode::kRemoteOperationalError), 0x63);
  EXPECT_EQ(aeth_nak(NakCode::kInvalidRdRequest), 0x64);
  EXPECT_EQ(aeth_type(0x61), AethType::kNak);
  EXPECT_EQ(aeth_type(0x40), AethType::kReserved);
  // Values wider than 5 bits do not leak into the type bits.
  EXPECT_EQ(aeth_type(aeth_rnr_nak(0xFF)), AethType::kRnrNak);
  EXPECT_EQ(aeth_type(aeth_ack(0xFF)), AethType::kAck);
}

TEST(WireHeaders, CreditTable) {
  EXPECT_EQ(credit_count(0), 0);
  EXPECT_EQ(credit_count(4), 4);
  EXPECT_EQ(credit_count(5), 6);
  EXPECT_EQ(credit_count(30), 32768);
  EXPECT_EQ(credit_count(kCreditInvalid), -1);
  for (uint8_t c = 1; c < 31; ++c) EXPECT_GT(credit_count(c), credit_count(c - 1)) << int(c);
}

TEST(WireHeaders, RnrTimerTable) {
  // IBTA Table 45 spot values (ms in the spec): 0 -> 655.36, 1 -> 0.01,
  // 12 -> 0.64, 18 -> 5.12, 31 -> 491.52.
  EXPECT_EQ(rnr_timer_usec(0), 655360u);
  EXPECT_EQ(rnr_timer_usec(1), 10u);
  EXPECT_EQ(rnr_timer_usec(12), 640u);
  EXPECT_EQ(rnr_timer_usec(18), 5120u);
  EXPECT_EQ(rnr_timer_usec(31), 491520u);
  for (uint8_t c = 2; c < 32; ++c) EXPECT_GT(rnr_timer_usec(c), rnr_timer_usec(c - 1)) << int(c);
  EXPECT_GT(rnr_timer_usec(0), rnr_timer_usec(31));
  EXPECT_EQ(rnr_timer_code_for_usec(0), 1);
  EXPECT_EQ(rnr_timer_code_for_usec(10), 1);
  EXPECT_EQ(rnr_timer_code_for_usec(11), 2);
  EXPECT_EQ(rnr_timer_code_for_usec(640), 12);
  EXPECT_EQ(rnr_timer_code_for_usec(641), 13);
  EXPECT_EQ(rnr_timer_code_for_usec(491520), 31);
  EXPECT_EQ(rnr_timer_code_for_usec(491521), 0);
  for (uint8_t c = 1; c < 32; ++c) EXPECT_EQ(rnr_timer_code_for_usec(rnr_timer_usec(c)), c);
}

TEST(WireHeaders, PsnWraparound) {
  EXPECT_EQ(psn_add(0xFFFFFF, 1), 0u);
  EXPECT_EQ(psn_add(0xFFFFFE, 5), 3u);
  EXPECT_EQ(psn_add(2, -3), 0xFFFFFFu);
  EXPECT_EQ(psn_diff(0, 0xFFFFFF), 1);
  EXPECT_EQ(psn_diff(0xFFFFFF, 0), -1);
  EXPECT_EQ(psn_diff(5, 5), 0);
  EXPECT_TRUE(psn_lt(0xFFFFF0, 0x000010));  // across the wrap
  EXPECT_TRUE(psn_gt(0x000010, 0xFFFFF0));
  EXPECT_TRUE(psn_le(7, 7));
  EXPECT_TRUE(psn_ge(7, 7));
  // Half the space ahead is "later", the other half "earlier" (IBTA 9.7.1).
  EXPECT_EQ(psn_diff(0x7FFFFF, 0), 0x7FFFFF);
  EXPECT_EQ(psn_diff(0x800000, 0), -0x800000);
  EXPECT_TRUE(psn_gt(0x7FFFFF, 0));
  EXPECT_TRUE(psn_lt(0x800000, 0));
  // Antisymmetry over a sample of pairs.
  for (uint32_t a : {0u, 1u, 0x7FFFFEu, 0x800001u, 0xFFFFFFu}) {
    for (uint32_t b : {0u, 3u, 0x400000u, 0xFFFFFDu}) {
      if (psn_diff(a, b) != -0x800000) {
        EXPECT_EQ(psn_diff(a, b), -psn_diff(b, a)) << a << " " << b;
      }
      EXPECT_EQ(psn_add(b, psn_diff(a, b)), a);
    }
  }
}

TEST(WireHeaders, PadCount) {
  EXPECT_EQ(pad_count(0), 0);
  EXPECT_EQ(pad_count(1), 3);
  EXPECT_EQ(pad_count(2), 2);
  EXPECT_EQ(pad_count(3), 1);
  EXPECT_EQ(pad_count(4), 0);
  EXPECT_EQ(pad_count(4097), 3);
  for (size_t n = 0; n < 64; ++n) EXPECT_EQ((n + pad_count(n)) % 4, 0u);
}

}  // namespace
}  // namespace kbv::sim::wire
