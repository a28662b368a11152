// SPDX-License-Identifier: BSD-3-Clause
// Golden tests for hca/prm/qpc.hpp. Expected bytes are worked out by hand from
// Linux 6.1 include/linux/mlx5/mlx5_ifc.h (ads, qpc): bit offsets count from
// the MSB of byte 0 and every dword is big endian.
#include "hca/prm/qpc.hpp"
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

// ads (44 bytes), RoCEv2 fields:
//   grh bit 0x28 (MSB of byte 5); pkey_index bits 0x10-0x1f (bytes 2-3)
//   ack_timeout bits 0x40-0x44 (byte 8 bits 7..3); src_addr_index byte 9;
//   stat_rate bits 0x54-0x57 (low nibble of byte 10); hop_limit byte 11
//   tclass bits 0x64-0x6b and flow_label 0x6c-0x7f share dword 3 (bytes 12-15)
//   rgid_rip bytes 16-31
//   ecn bits 0x108-0x109, dscp 0x10a-0x10f (byte 33); udp_sport bytes 34-35
//   sl bits 0x124-0x127 (low nibble of byte 36); vhca_port_num byte 37;
//   rmac_47_32 bytes 38-39; rmac_31_0 bytes 40-43
TEST(PrmQpc, AdsGolden) {
  Buf b(ads::kBits / 8);
  ASSERT_EQ(b.size(), 44u);
  Ref<ads> a(b.data());
  a.set(ads::pkey_index, 0x0001);
  a.set(ads::grh, 1);
  a.set(ads::ack_timeout, 14);
  a.set(ads::src_addr_index, 3);
  a.set(ads::stat_rate, 0x7);
  a.set(ads::hop_limit, 64);
  a.set(ads::tclass, 0xAB);
  a.set(ads::flow_label, 0x12345);
  std::array<std::byte, 16> gid{};
  gid[10] = gid[11] = std::byte{0xFF};
  gid[12] = std::byte{127};
  gid[15] = std::byte{2};  // ::ffff:127.0.0.2
  a.set_bytes(ads::rgid_rip, gid);
  a.set(ads::ecn, 2);
  a.set(ads::dscp, 0x2E);
  a.set(ads::udp_sport, 0xC000);
  a.set(ads::sl, 5);
  a.set(ads::vhca_port_num, 1);
  a.set(ads::rmac_47_32, 0x0225);
  a.set(ads::rmac_31_0, 0x90ABCDEF);
  expect_only(b, {{3, 0x01},  {5, 0x80},  {8, 0x70},  {9, 0x03},  {10, 0x07}, {11, 0x40},
                  {12, 0x0A}, {13, 0xB1}, {14, 0x23}, {15, 0x45}, {26, 0xFF}, {27, 0xFF},
                  {28, 0x7F}, {31, 0x02}, {33, 0xAE},  // ecn 2 << 6 | dscp 0x2E
                  {34, 0xC0}, {36, 0x05}, {37, 0x01}, {38, 0x02}, {39, 0x25}, {40, 0x90},
                  {41, 0xAB}, {42, 0xCD}, {43, 0xEF}});
  EXPECT_EQ(a.get(ads::tclass), 0xABu);
  EXPECT_EQ(a.get(ads::flow_label), 0x12345u);
  EXPECT_EQ(a.get(ads::dscp), 0x2Eu);
}

// qpc (232 bytes). Worked out from mlx5_ifc.h qpc:
//   dword 0: state bits 0-3 (high nibble of byte 0), st bits 8-15 (byte 1),
//            pm_state bits 0x13-0x14 (byte 2 bits 4..3)
//   dword 1: pd bytes 5-7
//   dword 2: mtu bits 0x40-0x42 and log_msg_max 0x43-0x47 (byte 8),
//            log_rq_size 0x49-0x4c and log_rq_stride 0x4d-0x4f (byte 9),
//            no_sq 0x50 and log_sq_size 0x51-0x54 (byte 10), rlky 0x5b
//   dword 3: counter_set_id byte 12, uar_page bytes 13-15
//   dword 4: user_index bytes 17-19; dword 5: log_page_size (low 5 bits of
//            byte 20), remote_qpn bytes 21-23
//   primary_address_path at bit 0xc0 = byte 24 (so ads byte n is qpc 24+n),
//   secondary_address_path at bit 0x220 = byte 68
//   log_ack_req_freq 0x380 (byte 112 high nibble); log_sra_max 0x388-0x38a
//   (byte 113 bits 7..5), retry_count 0x38d-0x38f (byte 113 bits 2..0),
//   rnr_retry 0x390-0x392 (byte 114 bits 7..5)
//   next_send_psn bytes 121-123, cqn_snd 125-127, last_acked_psn 137-139
//   log_rra_max 0x488-0x48a (byte 145 bits 7..5), atomic_mode 0x48c-0x48f
//   (byte 145 low nibble), rre/rwe/rae bits 0x490-0x492 (byte 146 bits 7..5)
//   min_rnr_nak 0x4a3-0x4a7 (byte 148 low 5 bits), next_rcv_psn 149-151
//   cqn_rcv 157-159, dbr_addr 160-167, q_key 168-171
//   rq_type 0x565-0x567 (byte 172 low 3 bits), srqn_rmpn_xrqn 173-175
TEST(PrmQpc, QpcGolden) {
  Buf b(qpc::kBits / 8);
  ASSERT_EQ(b.size(), 232u);
  Ref<qpc> q(b.data());
  q.set(qpc::state, qp_state::kRts);
  q.set(qpc::st, qpc_st::kUd);
  q.set(qpc::pm_state, qpc_pm_state::kMigrated);
  q.set(qpc::pd, 0x000042);
  q.set(qpc::mtu, qpc_mtu::k4kBytes);
  q.set(qpc::log_msg_max, 30);
  q.set(qpc::log_rq_size, 5);
  q.set(qpc::log_rq_stride, 2);
  q.set(qpc::log_sq_size, 6);
  q.set(qpc::rlky, 1);
  q.set(qpc::counter_set_id, 0x11);
  q.set(qpc::uar_page, 0x000203);
  q.set(qpc::user_index, 0x000405);
  q.set(qpc::log_page_size, 1);
  q.set(qpc::remote_qpn, 0x000607);
  q.at(qpc::primary_address_path).set(ads::vhca_port_num, 1);   // ads byte 37
  q.at(qpc::secondary_address_path).set(ads::hop_limit, 0xFF);  // ads byte 11
  q.set(qpc::log_ack_req_freq, 0x3);
  q.set(qpc::log_sra_max, 4);
  q.set(qpc::retry_count, 7);
  q.set(qpc::rnr_retry, 6);
  q.set(qpc::next_send_psn, 0xABCDEF);
  q.set(qpc::cqn_snd, 0x000008);
  q.set(qpc::last_acked_psn, 0x000009);
  q.set(qpc::log_rra_max, 3);
  q.set(qpc::atomic_mode, qpc_atomic_mode::kIbSpec);
  q.set(qpc::rre, 1);
  q.set(qpc::rwe, 1);
  q.set(qpc::rae, 1);
  q.set(qpc::min_rnr_nak, 12);
  q.set(qpc::next_rcv_psn, 0x123456);
  q.set(qpc::cqn_rcv, 0x00000A);
  q.set(qpc::dbr_addr, 0x0000000100002000ull);
  q.set(qpc::q_key, 0x80010000);
  q.set(qpc::rq_type, qpc_rq_type::kSrqRq);
  q.set(qpc::srqn_rmpn_xrqn, 0x00000B);
  expect_only(b, {
                     {0, 0x30},   {1, 0x02},   {2, 0x18},   {7, 0x42},   {8, 0xBE},   {9, 0x2A},
                     {10, 0x30},  {11, 0x10},  {12, 0x11},  {14, 0x02},  {15, 0x03},  {18, 0x04},
                     {19, 0x05},  {20, 0x01},  {22, 0x06},  {23, 0x07},  {61, 0x01},  {79, 0xFF},
                     {112, 0x30}, {113, 0x87}, {114, 0xC0}, {121, 0xAB}, {122, 0xCD}, {123, 0xEF},
                     {127, 0x08}, {139, 0x09}, {145, 0x61}, {146, 0xE0}, {148, 0x0C}, {149, 0x12},
                     {150, 0x34}, {151, 0x56}, {159, 0x0A}, {163, 0x01}, {166, 0x20}, {168, 0x80},
                     {169, 0x01}, {172, 0x01}, {175, 0x0B},
                 });
}

// Decode of QUERY_QP-style counters and a transition-style read back.
//   rmsn 0x588 (bytes 177-179), hw_sq_wqebb_counter 0x5a0 (180-181),
//   sw_sq_wqebb_counter 0x5b0 (182-183), hw_rq_counter 0x5c0 (184-187),
//   sw_rq_counter 0x5e0 (188-191).
TEST(PrmQpc, QpcDecodeCounters) {
  Buf b(qpc::kBits / 8);
  b[0] = std::byte{0x60};  // state = ERR
  b[179] = std::byte{0x21};
  b[180] = std::byte{0x01};
  b[181] = std::byte{0x02};
  b[183] = std::byte{0x03};
  b[187] = std::byte{0x04};
  b[188] = std::byte{0x80};
  CRef<qpc> q(b.data());
  EXPECT_EQ(q.get(qpc::state), qp_state::kErr);
  EXPECT_EQ(q.get(qpc::rmsn), 0x21u);
  EXPECT_EQ(q.get(qpc::hw_sq_wqebb_counter), 0x0102u);
  EXPECT_EQ(q.get(qpc::sw_sq_wqebb_counter), 0x0003u);
  EXPECT_EQ(q.get(qpc::hw_rq_counter), 0x4u);
  EXPECT_EQ(q.get(qpc::sw_rq_counter), 0x80000000u);
  EXPECT_EQ(q.get(qpc::st), qpc_st::kRc);
}

TEST(PrmQpc, Constants) {
  EXPECT_EQ(mtu_bytes(qpc_mtu::k1kBytes), 1024u);
  EXPECT_EQ(mtu_bytes(qpc_mtu::k2kBytes), 2048u);
  EXPECT_EQ(mtu_bytes(0), 0u);
  EXPECT_EQ(mtu_bytes(qpc_mtu::kRawEthernetQp), 0u);
  EXPECT_EQ(qp_optpar::kPrimaryAddrPath, 0x80u);
  EXPECT_EQ(qp_optpar::kAckTimeout, 0x4000u);
  EXPECT_EQ(qp_state::kSqd, 5u);
}

}  // namespace
}  // namespace kbv::prm
