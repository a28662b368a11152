// SPDX-License-Identifier: BSD-3-Clause
// QUERY_HCA_CAP / SET_HCA_CAP encodings and HcaCaps parsing.
#include "hca/cmd/caps.hpp"

#include "../cmd_harness.hpp"
#include "hca/prm/hca_cap.hpp"

namespace kbv::hca::cmd {
namespace {

using test::CmdHarness;
using CapsCmdTest = CmdHarness;

TEST_F(CapsCmdTest, QueryGeneralCurrentAndParse) {
  Result<std::vector<std::byte>> got{Status{KBV_PENDING}};
  ASSERT_EQ(query_hca_cap(*cmdq, prm::CapType::GENERAL, prm::CapMode::CUR,
                          [&](Result<std::vector<std::byte>> r) { got = r; }),
            KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 0), 0x100u);
  EXPECT_EQ(be16(in, 6), 1u);  // GENERAL << 1 | CUR
  ASSERT_EQ(outlen(), 16u + 4096u);
  std::vector<std::byte> out(16 + 4096);
  // cmd_hca_cap (mlx5_ifc.h): log_max_qp = low 5 bits of byte 0x13,
  // num_ports = byte 0x37, cmdif_checksum = bits 15:14 of dword 0x40,
  // roce = bit 2 of byte 0x43, log_max_pd = low 5 bits of byte 0x65.
  out[16 + 0x13] = std::byte{0x12};
  out[16 + 0x37] = std::byte{2};
  out[16 + 0x42] = std::byte{0xC0};
  out[16 + 0x43] = std::byte{0x04};
  out[16 + 0x65] = std::byte{0x17};
  answer(out);
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->size(), 4096u);
  HcaCaps caps;
  caps.parse_general(*got);
  EXPECT_EQ(caps.log_max_qp, 0x12u);
  EXPECT_EQ(caps.num_ports, 2u);
  EXPECT_EQ(caps.cmdif_checksum, 3u);
  EXPECT_TRUE(caps.roce);
  EXPECT_EQ(caps.log_max_pd, 0x17u);
}

TEST_F(CapsCmdTest, QueryRoceMaxAndParse) {
  Result<std::vector<std::byte>> got{Status{KBV_PENDING}};
  ASSERT_EQ(query_hca_cap(*cmdq, prm::CapType::ROCE, prm::CapMode::MAX,
                          [&](Result<std::vector<std::byte>> r) { got = r; }),
            KBV_PENDING);
  auto in = posted();
  EXPECT_EQ(be16(in, 6), 8u);  // ROCE (4) << 1 | MAX
  std::vector<std::byte> out(16 + 4096);
  out[16 + 0x13] = std::byte{0x04};  // roce_version: v2
  out[16 + 0x16] = std::byte{0x12};  // r_roce_dest_udp_port 4791 = 0x12b7
  out[16 + 0x17] = std::byte{0xb7};
  answer(out);
  ASSERT_TRUE(got.has_value());
  HcaCaps caps;
  caps.parse_roce(*got);
  EXPECT_EQ(caps.roce_version, prm::kRoceVersion2Cap);
  EXPECT_EQ(caps.r_roce_dest_udp_port, 4791u);
}

TEST_F(CapsCmdTest, SetHcaCapCarriesTheBlock) {
  std::vector<std::byte> block(4096);
  block[0] = std::byte{0x5a};
  block[4095] = std::byte{0xa5};
  Status st{KBV_PENDING};
  ASSERT_EQ(set_hca_cap(*cmdq, prm::CapType::GENERAL, block, [&](Status s) { st = s; }),
            KBV_PENDING);
  auto in = posted();
  ASSERT_EQ(in.size(), 16u + 4096u);
  EXPECT_EQ(be16(in, 0), 0x109u);
  EXPECT_EQ(be16(in, 6), 0u);
  EXPECT_EQ(u8(in, 16), 0x5au);
  EXPECT_EQ(u8(in, 16 + 4095), 0xa5u);
  answer_ok();
  EXPECT_TRUE(st.is_ok());
  block.resize(100);
  EXPECT_EQ(set_hca_cap(*cmdq, prm::CapType::GENERAL, block, [](Status) {}),
            KBV_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace kbv::hca::cmd
