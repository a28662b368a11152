// SPDX-License-Identifier: BSD-3-Clause
// Ah (hca/objects/ah.hpp): the 48-byte mlx5_wqe_av of a RoCE UD address handle,
// byte by byte (offsets of mlx5dv.h struct mlx5_wqe_av worked out by hand).
#include "hca/objects/ah.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace kbv::hca {
namespace {

TEST(Ah, RoceAddressVectorBytes) {
  HcaCaps caps;
  RoceDest d;
  d.dgid = ipv4_mapped_gid(127, 0, 0, 3);
  d.sgid_index = 1;
  d.dmac = 0x026b62760003ull;
  d.hop_limit = 64;
  d.tclass = 0x10;
  d.flow_label = 0xABCDE;
  d.sl = 3;
  d.udp_sport = 0xC123;
  auto ah = Ah::make(caps, d, 0x123456, 0x80010000);
  ASSERT_TRUE(ah.has_value());
  uint8_t b[48];
  std::memcpy(b, &ah->av, 48);
  EXPECT_EQ(b[0], 0x80);  // Q_Key
  EXPECT_EQ(b[2], 0x00);
  EXPECT_EQ(b[1], 0x01);
  EXPECT_EQ(b[8], 0x80);  // MLX5_EXTENDED_UD_AV | remote QPN
  EXPECT_EQ(b[9], 0x12);
  EXPECT_EQ(b[11], 0x56);
  EXPECT_EQ(b[12], 3 << 1);  // sl
  EXPECT_EQ(b[14], 0xC1);    // udp_sport
  EXPECT_EQ(b[15], 0x23);
  EXPECT_EQ(b[20], 0x02);  // rmac
  EXPECT_EQ(b[25], 0x03);
  EXPECT_EQ(b[26], 0x10);         // tclass
  EXPECT_EQ(b[27], 64);           // hop_limit
  EXPECT_EQ(b[28], 0x40 | 0x00);  // GRH bit 30, sgid_index 1 << 20 -> byte 29 high nibble
  EXPECT_EQ(b[29], 0x1A);
  EXPECT_EQ(b[30], 0xBC);
  EXPECT_EQ(b[31], 0xDE);
  EXPECT_EQ(b[32 + 10], 0xff);
  EXPECT_EQ(b[32 + 15], 3);
  EXPECT_EQ(ah->remote_qpn, 0x123456u);
}

TEST(Ah, RefusesWideValues) {
  HcaCaps caps;
  RoceDest d;
  EXPECT_EQ(Ah::make(caps, d, 1u << 24, 0).status(), KBV_ERR_INVALID_ARGUMENT);
  d.sl = 8;
  EXPECT_EQ(Ah::make(caps, d, 1, 0).status(), KBV_ERR_INVALID_ARGUMENT);
  d.sl = 0;
  d.flow_label = 1u << 20;
  EXPECT_EQ(Ah::make(caps, d, 1, 0).status(), KBV_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace kbv::hca
