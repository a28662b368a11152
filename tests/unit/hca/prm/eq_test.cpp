// SPDX-License-Identifier: BSD-3-Clause
// Golden tests of the EQ layouts (mlx5_ifc.h eqc, create_eq_in/out,
// destroy_eq_in, query_eq_out, gen_eqe_in) and the EQ doorbell value.
#include "hca/prm/eq.hpp"
#include "golden.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "hca/prm/opcodes.hpp"

namespace kbv::prm {
namespace {

using Buf = golden::Bytes;

// create_eq_in: eq_context_entry at bit 0x80 = byte 16. Inside eqc:
//   log_eq_size bits 0x63..0x67 -> eqc byte 12 bits 4:0 -> byte 16+12 = 28;
//   uar_page bits 0x68..0x7f    -> eqc bytes 13-15      -> bytes 29-31;
//   intr bits 0xb4..0xbf        -> eqc byte 22 bits 3:0, byte 23 -> bytes 38-39;
//   log_page_size bits 0xc3..0xc7 -> eqc byte 24 bits 4:0 -> byte 40;
//   st bits 0x14..0x17          -> eqc byte 2 bits 3:0  -> byte 18.
// event_bitmask[i] = be64 at bit 0x2c0 + 64 i = byte 88 + 8 i; bit n of word 0
// is in byte 95 - n / 8. pas[i] = be64 at byte 272 + 8 i.
TEST(PrmEq, CreateEqInGolden) {
  Buf b(create_eq_in_len(2));
  EXPECT_EQ(b.b.size(), 288u);
  Ref<create_eq_in> in(b.data());
  in.set(create_eq_in::opcode, to_u16(Opcode::CREATE_EQ));
  in.set(create_eq_in::uid, 0);
  Ref<eqc> ctx = in.at(create_eq_in::eq_context_entry);
  ctx.set(eqc::log_eq_size, 7);
  ctx.set(eqc::uar_page, 0x000123);
  ctx.set(eqc::intr, 0xABC);
  ctx.set(eqc::log_page_size, 0);
  ctx.set(eqc::st, static_cast<uint8_t>(EqcSt::ARMED));
  const uint64_t mask = event_bit(EventType::CMD) | event_bit(EventType::PAGE_REQUEST) |
                        event_bit(EventType::PORT_CHANGE);
  in.set(create_eq_in::event_bitmask, 0, mask);
  in.set(create_eq_in::pas, 0, 0x00000000CAFE0000ull);
  in.set(create_eq_in::pas, 1, 0x00000001CAFE1000ull);

  EXPECT_EQ(b[0], 0x03);
  EXPECT_EQ(b[1], 0x01);
  EXPECT_EQ(b[28], 0x07);
  EXPECT_EQ(b[29], 0x00);
  EXPECT_EQ(b[30], 0x01);
  EXPECT_EQ(b[31], 0x23);
  EXPECT_EQ(b[38], 0x0A);
  EXPECT_EQ(b[39], 0xBC);
  EXPECT_EQ(b[18], 0x09);
  // Types 0x9, 0xa, 0xb: bits 9-11 of word 0 -> byte 94 = 0b00001110.
  EXPECT_EQ(b[94], 0x0E);
  EXPECT_EQ(b[95], 0x00);
  EXPECT_EQ(b[88], 0x00);
  EXPECT_EQ(b[272 + 4], 0xCA);
  EXPECT_EQ(b[272 + 5], 0xFE);
  EXPECT_EQ(b[280 + 3], 0x01);
  EXPECT_EQ(b[280 + 6], 0x10);
  for (std::size_t i = 96; i < 272; ++i) ASSERT_EQ(b[i], 0) << "byte " << i;
}

// create_eq_out / destroy_eq_in / query_eq_in: eq_number bits 0x58..0x5f = byte 11.
// gen_eqe_in: eq_number at byte 11, the EQE at byte 16.
TEST(PrmEq, EqNumberGolden) {
  Buf out(create_eq_out::kBits / 8);
  out.put(11, 0x05);
  out.put(10, 0xFF);  // reserved: not part of eq_number
  EXPECT_EQ(CRef<create_eq_out>(out.data()).get(create_eq_out::eq_number), 5u);

  Buf d(destroy_eq_in::kBits / 8);
  Ref<destroy_eq_in> di(d.data());
  di.set(destroy_eq_in::opcode, to_u16(Opcode::DESTROY_EQ));
  di.set(destroy_eq_in::eq_number, 0x12);
  EXPECT_EQ(d[1], 0x02);
  EXPECT_EQ(d[11], 0x12);

  Buf g(gen_eqe_in::kBits / 8);
  Ref<gen_eqe_in> gi(g.data());
  gi.set(gen_eqe_in::opcode, to_u16(Opcode::GEN_EQE));
  gi.set(gen_eqe_in::eq_number, 3);
  Ref<eqe> e(gi.bytes(gen_eqe_in::eqe).data());
  e.set(eqe::type, to_u8(EventType::PORT_CHANGE));
  e.set(eqe::sub_type, static_cast<uint8_t>(PortChangeSubtype::DOWN));
  e.at(eqe::port).set(eqe_port_state::port_num, 1);
  EXPECT_EQ(g[1], 0x04);
  EXPECT_EQ(g[11], 0x03);
  EXPECT_EQ(g[16 + 1], 0x09);
  EXPECT_EQ(g[16 + 3], 0x01);
  EXPECT_EQ(g[16 + 32 + 8], 0x10);
}

// query_eq_out decode: eqc at byte 16; consumer_counter = low 24 bits of eqc
// dword 10 (bytes 56-59 of the output), producer_counter of dword 11 (60-63);
// event_bitmask = be64 at byte 88.
TEST(PrmEq, QueryEqOutDecodeGolden) {
  Buf b(query_eq_out::kBits / 8);
  b.put(16 + 40, 0xFF);  // reserved byte above consumer_counter
  b.put(16 + 41, 0x00), b.put(16 + 42, 0x01), b.put(16 + 43, 0x00);
  b.put(16 + 45, 0x00), b.put(16 + 46, 0x01), b.put(16 + 47, 0x07);
  b.put(16 + 0, 0xA0);  // status EQ_WRITE_FAILURE in bits 31:28
  b.put(95, 0x01);
  CRef<query_eq_out> q(b.data());
  CRef<eqc> ctx = q.at(query_eq_out::eq_context_entry);
  EXPECT_EQ(ctx.get(eqc::consumer_counter), 0x100u);
  EXPECT_EQ(ctx.get(eqc::producer_counter), 0x107u);
  EXPECT_EQ(ctx.get(eqc::status), static_cast<uint8_t>(EqcStatus::EQ_WRITE_FAILURE));
  EXPECT_EQ(q.get(query_eq_out::event_bitmask), 1u);
}

// docs/PRM.md: the doorbell value is (ci & 0xffffff) | eqn << 24, written at UAR +
// 0x40 (arm) or + 0x48 (update only).
TEST(PrmEq, Doorbell) {
  EXPECT_EQ(eq_doorbell_value(0x1234567, 5), 0x05234567u);
  EXPECT_EQ(eq_doorbell_value(0, 0xFF), 0xFF000000u);
  EXPECT_EQ(kEqDoorbellArmOff, 0x40u);
  EXPECT_EQ(kEqDoorbellUpdateOff, 0x48u);
  EXPECT_EQ(kNumSpareEqe, 0x80u);
}

}  // namespace
}  // namespace kbv::prm
