// SPDX-License-Identifier: BSD-3-Clause
// Golden tests for hca/prm/qp_cmd.hpp. Expected bytes are worked out by hand
// from Linux 6.1 include/linux/mlx5/mlx5_ifc.h (create_qp_in, init2rtr_qp_in,
// rtr2rts_qp_in, query_qp_out, qp_2rst_in, ...; qpc and ads nested inside):
// bit offsets count from the MSB of byte 0 and every dword is big endian.
#include "hca/prm/qp_cmd.hpp"
#include "golden.hpp"

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <vector>

namespace kbv::prm {
namespace {

using golden::expect_only;
using golden::u8;
using Buf = std::vector<std::byte>;

// create_qp_in: input_qpn bits 0x48-0x5f (bytes 9-11), opt_param_mask bit
// 0x80 (bytes 16-19), ece 0xa0 (bytes 20-23), qpc at bit 0xc0 = byte 24,
// wq_umem_valid bit 0x860 (MSB of byte 268), pas[] at bit 0x880 = byte 272.
// qpc bytes (see qpc_test): st 1, pd 5-7, log_rq_size/stride 9, log_sq_size
// 10 (bits 6..3), uar_page 13-15, cqn_snd 125-127, cqn_rcv 157-159, dbr_addr
// 160-167 -> command bytes 24 + n.
TEST(PrmQpCmd, CreateQpInGolden) {
  Buf b(create_qp_in::kBits / 8 + 2 * 8);
  Ref<create_qp_in> in(b.data());
  in.set(create_qp_in::opcode, 0x500);  // CREATE_QP
  in.set(create_qp_in::uid, 0x0007);
  in.set(create_qp_in::opt_param_mask, 0x01020304);
  in.set(create_qp_in::ece, 0x0A0B0C0D);
  Ref<qpc> q = in.at(create_qp_in::qpc);
  ASSERT_EQ(q.data(), b.data() + 24);
  q.set(qpc::st, qpc_st::kUd);
  q.set(qpc::pd, 0x000033);
  q.set(qpc::log_rq_size, 4);
  q.set(qpc::log_rq_stride, 2);
  q.set(qpc::log_sq_size, 5);
  q.set(qpc::uar_page, 0x000044);
  q.set(qpc::cqn_snd, 0x000055);
  q.set(qpc::cqn_rcv, 0x000066);
  q.set(qpc::dbr_addr, 0x0000000000077000ull);
  in.set(create_qp_in::wq_umem_valid, 0);
  in.set(create_qp_in::pas, 0, 0x0000000000100000ull);
  in.set(create_qp_in::pas, 1, 0x0000000000101000ull);
  expect_only(b, {
                     {0, 0x05},   {3, 0x07},                            // opcode, uid
                     {16, 0x01},  {17, 0x02},  {18, 0x03}, {19, 0x04},  // opt_param_mask
                     {20, 0x0A},  {21, 0x0B},  {22, 0x0C}, {23, 0x0D},  // ece
                     {25, 0x02},                                        // qpc.st = UD
                     {31, 0x33},                                        // qpc.pd
                     {33, 0x22},                                        // rq size 4, stride 2
                     {34, 0x28},                                        // log_sq_size 5
                     {39, 0x44},                                        // uar_page
                     {151, 0x55},                                       // cqn_snd
                     {183, 0x66},                                       // cqn_rcv
                     {189, 0x07}, {190, 0x70},                          // dbr_addr
                     {277, 0x10},                                       // pas[0]
                     {285, 0x10}, {286, 0x10},                          // pas[1]
                 });
  // The umem fields (later mlx5_ifc.h): wq_umem_offset bit 0x800 (bytes
  // 256-263), wq_umem_id bit 0x840 (bytes 264-267), wq_umem_valid MSB of 268.
  in.set(create_qp_in::wq_umem_offset, 0x0102030405060708ull);
  in.set(create_qp_in::wq_umem_id, 0x0A0B0C0D);
  in.set(create_qp_in::wq_umem_valid, 1);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(u8(b, 256 + i), i + 1);
  EXPECT_EQ(u8(b, 264), 0x0A);
  EXPECT_EQ(u8(b, 267), 0x0D);
  EXPECT_EQ(u8(b, 268), 0x80);
  EXPECT_EQ(u8(b, 269), 0x00);

  Buf o(16);
  o[9] = std::byte{0x00};
  o[10] = std::byte{0x01};
  o[11] = std::byte{0x23};
  o[15] = std::byte{0x01};
  CRef<create_qp_out> out(o.data());
  EXPECT_EQ(out.get(create_qp_out::qpn), 0x123u);
  EXPECT_EQ(out.get(create_qp_out::ece), 1u);
}

// init2rtr_qp_in: qpn bytes 9-11, opt_param_mask bytes 16-19, qpc at byte 24,
// qpc.primary_address_path at qpc bit 0xc0 -> command byte 48. ads bytes:
// src_addr_index 9, hop_limit 11, rgid_rip 16-31, udp_sport 34-35,
// vhca_port_num 37, rmac_47_32 38-39, rmac_31_0 40-43 -> command 48 + n.
// qpc: mtu (byte 8 bits 7..5) -> 32, remote_qpn 21-23 -> 45-47,
// log_rra_max (byte 145 bits 7..5) -> 169, min_rnr_nak (byte 148) -> 172,
// next_rcv_psn 149-151 -> 173-175.
TEST(PrmQpCmd, Init2RtrRoceGolden) {
  Buf b(init2rtr_qp_in::kBits / 8);
  ASSERT_EQ(b.size(), 272u);
  Ref<init2rtr_qp_in> in(b.data());
  in.set(init2rtr_qp_in::opcode, 0x503);
  in.set(init2rtr_qp_in::qpn, 0x000123);
  in.set(init2rtr_qp_in::opt_param_mask, qp_optpar::kRre | qp_optpar::kRwe);
  Ref<qpc> q = in.at(init2rtr_qp_in::qpc);
  q.set(qpc::mtu, qpc_mtu::k1kBytes);
  q.set(qpc::remote_qpn, 0x000456);
  q.set(qpc::log_rra_max, 2);
  q.set(qpc::min_rnr_nak, 0x1F);
  q.set(qpc::next_rcv_psn, 0x00ABCD);
  Ref<ads> a = q.at(qpc::primary_address_path);
  ASSERT_EQ(a.data(), b.data() + 48);
  a.set(ads::src_addr_index, 1);
  a.set(ads::hop_limit, 0x40);
  std::array<std::byte, 16> gid{};
  gid[10] = gid[11] = std::byte{0xFF};
  gid[12] = std::byte{127};
  gid[15] = std::byte{3};
  a.set_bytes(ads::rgid_rip, gid);
  a.set(ads::udp_sport, 0xD00D);
  a.set(ads::vhca_port_num, 1);
  a.set(ads::rmac_47_32, 0x0000);
  a.set(ads::rmac_31_0, 0x00000001);
  expect_only(b, {
                     {0, 0x05},   {1, 0x03},   {10, 0x01}, {11, 0x23},  // opcode, qpn
                     {19, 0x0A},                                        // RRE | RWE
                     {32, 0x60},                                        // mtu 3 << 5
                     {46, 0x04},  {47, 0x56},                           // remote_qpn
                     {57, 0x01},  {59, 0x40},                           // src_addr_index, hop_limit
                     {74, 0xFF},  {75, 0xFF},  {76, 0x7F}, {79, 0x03},  // rgid_rip
                     {82, 0xD0},  {83, 0x0D},                           // udp_sport
                     {85, 0x01},                                        // vhca_port_num
                     {91, 0x01},                                        // rmac_31_0
                     {169, 0x40},                                       // log_rra_max 2 << 5
                     {172, 0x1F},                                       // min_rnr_nak
                     {174, 0xAB}, {175, 0xCD},                          // next_rcv_psn
                 });
  EXPECT_EQ(std::to_integer<uint8_t>(CRef<ads>(a).bytes(ads::rgid_rip)[12]), 127);
}

// rtr2rts_qp_in: qpc.next_send_psn bytes 121-123 -> 145-147; log_sra_max
// (byte 113 bits 7..5) and retry_count (byte 113 bits 2..0) -> 137;
// rnr_retry (byte 114 bits 7..5) -> 138; ads.ack_timeout (ads byte 8 bits
// 7..3) of the primary path -> 24 + 24 + 8 = 56.
TEST(PrmQpCmd, Rtr2RtsGolden) {
  Buf b(rtr2rts_qp_in::kBits / 8);
  Ref<rtr2rts_qp_in> in(b.data());
  in.set(rtr2rts_qp_in::opcode, 0x504);
  in.set(rtr2rts_qp_in::qpn, 0x000001);
  Ref<qpc> q = in.at(rtr2rts_qp_in::qpc);
  q.set(qpc::next_send_psn, 0xFFFFFF);
  q.set(qpc::log_sra_max, 1);
  q.set(qpc::retry_count, 7);
  q.set(qpc::rnr_retry, 7);
  q.at(qpc::primary_address_path).set(ads::ack_timeout, 18);
  expect_only(b, {{0, 0x05},
                  {1, 0x04},
                  {11, 0x01},
                  {56, 0x90},  // 18 << 3
                  {137, 0x27},
                  {138, 0xE0},
                  {145, 0xFF},
                  {146, 0xFF},
                  {147, 0xFF}});
}

// query_qp_out: status byte 0, opt_param_mask bytes 16-19, qpc at byte 24
// (state = high nibble of byte 24), pas[0] at byte 272.
TEST(PrmQpCmd, QueryQpOutDecode) {
  Buf b(query_qp_out::kBits / 8 + 8);
  b[19] = std::byte{0x80};
  b[24] = std::byte{0x40};        // state SQER
  b[24 + 168] = std::byte{0x11};  // q_key MSB
  b[279] = std::byte{0x01};
  CRef<query_qp_out> out(b.data());
  EXPECT_EQ(out.get(query_qp_out::status), 0u);
  EXPECT_EQ(out.get(query_qp_out::opt_param_mask), qp_optpar::kPrimaryAddrPath);
  CRef<qpc> q = out.at(query_qp_out::qpc);
  EXPECT_EQ(q.get(qpc::state), qp_state::kSqer);
  EXPECT_EQ(q.get(qpc::q_key), 0x11000000u);
  EXPECT_EQ(out.get(query_qp_out::pas, 0), 1u);

  Buf qi(16);
  Ref<query_qp_in> in(qi.data());
  in.set(query_qp_in::opcode, 0x50B);
  in.set(query_qp_in::qpn, 0x00ABCD);
  expect_only(qi, {{0, 0x05}, {1, 0x0B}, {10, 0xAB}, {11, 0xCD}});
}

// The short transitions: qp_2rst_in / qp_2err_in / destroy_qp_in carry only
// the qpn at bit 0x48; sqd2rts_qp_in and sqerr2rts_qp_in have no ece but the
// same opt_param_mask (byte 16) and qpc (byte 24) positions.
TEST(PrmQpCmd, ShortTransitions) {
  Buf b(16);
  Ref<qp_2rst_in> rst(b.data());
  rst.set(qp_2rst_in::opcode, 0x50A);
  rst.set(qp_2rst_in::qpn, 0x000777);
  expect_only(b, {{0, 0x05}, {1, 0x0A}, {10, 0x07}, {11, 0x77}});
  EXPECT_EQ(CRef<qp_2err_in>(b.data()).get(qp_2err_in::qpn), 0x777u);
  EXPECT_EQ(CRef<destroy_qp_in>(b.data()).get(destroy_qp_in::qpn), 0x777u);

  Buf s(sqd2rts_qp_in::kBits / 8);
  Ref<sqd2rts_qp_in> sqd(s.data());
  sqd.set(sqd2rts_qp_in::opt_param_mask, qp_optpar::kRetryCount);
  sqd.at(sqd2rts_qp_in::qpc).set(qpc::retry_count, 3);
  expect_only(s, {{18, 0x10}, {137, 0x03}});
  static_assert(sqerr2rts_qp_in::kBits == sqd2rts_qp_in::kBits);
  static_assert(rts2rts_qp_in::ece.off == 0xa0 && init2init_qp_in::ece.off == 0xa0);
}

}  // namespace
}  // namespace kbv::prm
