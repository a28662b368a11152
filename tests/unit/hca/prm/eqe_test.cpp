// SPDX-License-Identifier: BSD-3-Clause
// Golden tests of the EQE and its event data layouts (device.h mlx5_eqe and
// mlx5_eqe_* data structs; mlx5_ifc.h eqe_bits and event_auto_bits members).
#include "hca/prm/eqe.hpp"

#include <gtest/gtest.h>

#include <array>
#include <set>

namespace kbv::prm {
namespace {

using Eqe = std::array<std::byte, kEqeBytes>;
uint8_t u8(const Eqe& b, std::size_t i) { return static_cast<uint8_t>(b[i]); }

// EQE header (device.h): type @1, sub_type @3, signature @62, owner = bit 0 of @63.
// Command completion (mlx5_eqe_cmd): vector = be32 at data+0 = EQE byte 32.
TEST(PrmEqe, CmdEventEncodeGolden) {
  Eqe b{};
  Ref<eqe> e(b.data());
  e.set(eqe::type, to_u8(EventType::CMD));
  e.at(eqe::cmd).set(eqe_cmd::vector, (1u << 31) | (1u << 3));
  e.set(eqe::signature, 0x3C);
  e.set(eqe::owner, 1);
  EXPECT_EQ(u8(b, 1), 0x0A);
  EXPECT_EQ(u8(b, 32), 0x80);
  EXPECT_EQ(u8(b, 35), 0x08);
  EXPECT_EQ(u8(b, 62), 0x3C);
  EXPECT_EQ(u8(b, 63), 0x01);
  EXPECT_EQ(u8(b, 0), 0x00);
  EXPECT_EQ(u8(b, 2), 0x00);
}

// Page request (mlx5_eqe_page_req): function_id be16 @data+2 = byte 34,
// num_pages be32 @data+4 = byte 36, signed.
TEST(PrmEqe, PageRequestGolden) {
  Eqe b{};
  Ref<eqe> e(b.data());
  e.set(eqe::type, to_u8(EventType::PAGE_REQUEST));
  Ref<eqe_page_req> p = e.at(eqe::req_pages);
  p.set(eqe_page_req::function_id, 0x0102);
  p.set(eqe_page_req::num_pages, static_cast<uint32_t>(-5));
  EXPECT_EQ(u8(b, 1), 0x0B);
  EXPECT_EQ(u8(b, 34), 0x01);
  EXPECT_EQ(u8(b, 35), 0x02);
  EXPECT_EQ(u8(b, 36), 0xFF);
  EXPECT_EQ(u8(b, 39), 0xFB);
  EXPECT_EQ(
      static_cast<int32_t>(CRef<eqe>(b.data()).at(eqe::req_pages).get(eqe_page_req::num_pages)),
      -5);
}

// Completion (mlx5_eqe_comp): cqn = low 24 bits of be32 at data+24 = bytes 56..59.
// CQ error (mlx5_eqe_cq_err): cqn low 24 bits of data+0 (bytes 32..35), syndrome
// @data+11 = byte 43.
// QP events (mlx5_eqe_qp_srq): type @data+20 = byte 52, qpn low 24 bits of
// data+24 = bytes 56..59.
// Port change (mlx5_eqe_port_state): port = upper nibble of data+8 = byte 40.
TEST(PrmEqe, DecodeGolden) {
  Eqe b{};
  b[56] = std::byte{0xFF};  // not part of the CQN
  b[57] = std::byte{0x12};
  b[58] = std::byte{0x34};
  b[59] = std::byte{0x56};
  CRef<eqe> e(b.data());
  EXPECT_EQ(e.at(eqe::comp).get(eqe_comp::cqn), 0x123456u);
  EXPECT_EQ(e.at(eqe::qp_srq).get(eqe_qp_srq::qp_srq_n), 0x123456u);

  b[32] = std::byte{0xAA};  // not part of the CQN
  b[33] = std::byte{0x00};
  b[34] = std::byte{0x00};
  b[35] = std::byte{0x2A};
  b[43] = std::byte{0x01};
  EXPECT_EQ(e.at(eqe::cq_err).get(eqe_cq_err::cqn), 0x2Au);
  EXPECT_EQ(e.at(eqe::cq_err).get(eqe_cq_err::syndrome),
            static_cast<uint8_t>(CqErrSyndrome::CQ_OVERRUN));

  b[52] = std::byte{static_cast<uint8_t>(EventQueueType::SQ)};
  EXPECT_EQ(e.at(eqe::qp_srq).get(eqe_qp_srq::type), 2u);

  b[3] = std::byte{static_cast<uint8_t>(PortChangeSubtype::ACTIVE)};
  b[40] = std::byte{0x2F};  // port 2 in the upper nibble; low nibble is not the port
  EXPECT_EQ(e.get(eqe::sub_type), 4u);
  EXPECT_EQ(e.at(eqe::port).get(eqe_port_state::port_num), 2u);

  b[63] = std::byte{0xFE};  // owner bit 0 clear; other bits ignored
  EXPECT_EQ(e.get(eqe::owner), 0u);
}

TEST(PrmEqe, EventValuesAndOwnership) {
  EXPECT_EQ(to_u8(EventType::COMP), 0x00);
  EXPECT_EQ(to_u8(EventType::CQ_ERROR), 0x04);
  EXPECT_EQ(to_u8(EventType::PATH_MIG_FAILED), 0x07);
  EXPECT_EQ(to_u8(EventType::PORT_CHANGE), 0x09);
  EXPECT_EQ(to_u8(EventType::PAGE_REQUEST), 0x0B);
  EXPECT_EQ(to_u8(EventType::SRQ_RQ_LIMIT), 0x14);
  EXPECT_EQ(event_bit(EventType::CMD), 1ull << 10);
  EXPECT_EQ(event_word(EventType::CMD), 0u);
  EXPECT_EQ(event_word(EventType::GENERAL_EVENT), 0u);
  EXPECT_EQ(static_cast<uint8_t>(PortChangeSubtype::DOWN), 1);
  EXPECT_EQ(static_cast<uint8_t>(PortChangeSubtype::INITIALIZED), 5);
  // 8-entry EQ: the first pass (ci 0..7) is software's when owner == 0 after
  // firmware wrote it; the second pass (ci 8..15) when owner == 1.
  EXPECT_FALSE(eqe_is_sw_owned(kEqeOwnerInit, 0, 8));  // initial 1: not yet written
  EXPECT_TRUE(eqe_is_sw_owned(0, 3, 8));
  EXPECT_TRUE(eqe_is_sw_owned(1, 9, 8));
  EXPECT_FALSE(eqe_is_sw_owned(0, 9, 8));
}

// The event-type classifier shared by the driver and the model: every
// type byte, against device.h's MLX5_EVENT_TYPE_* numbers and the union
// member each one's data uses (mlx5_ifc.h event_auto_bits).
TEST(PrmEqe, EventDataClassifiesEveryTypeByte) {
  const std::set<int> qp_srq = {0x01, 0x02, 0x03, 0x05, 0x07, 0x10, 0x11, 0x12, 0x13, 0x14};
  for (int t = 0; t < 256; ++t) {
    SCOPED_TRACE(t);
    const EventData d = event_data(static_cast<uint8_t>(t));
    EventData want = EventData::kOther;
    if (t == 0x00) want = EventData::kComp;
    if (t == 0x04) want = EventData::kCqError;
    if (t == 0x09) want = EventData::kPortState;
    if (t == 0x0a) want = EventData::kCmd;
    if (t == 0x0b) want = EventData::kPageRequest;
    if (qp_srq.count(t)) want = EventData::kQpSrq;
    EXPECT_EQ(d, want);
  }
  // INTERNAL_ERROR (0x08) carries no data the driver reads.
  EXPECT_EQ(event_data(EventType::INTERNAL_ERROR), EventData::kOther);
  static_assert(event_data(EventType::SRQ_RQ_LIMIT) == EventData::kQpSrq);
}

}  // namespace
}  // namespace kbv::prm
