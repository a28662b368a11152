// SPDX-License-Identifier: BSD-3-Clause
// Golden tests for hca/prm/mkey.hpp. Expected bytes are worked out by hand from
// Linux 6.1 include/linux/mlx5/mlx5_ifc.h (mkc, create_mkey_in, mtt, ...):
// bit offsets count from the MSB of byte 0 and every dword is big endian.
#include "hca/prm/mkey.hpp"
#include "golden.hpp"

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <vector>

namespace kbv::prm {
namespace {

using golden::u8;
std::vector<std::byte> zeroed(std::size_t n) { return std::vector<std::byte>(n); }

// create_mkey_in: opcode at byte 0; memory_key_mkey_entry (mkc) at bit 0x80 =
// byte 16; translations_octword_actual_size at bit 0x300 = byte 96;
// klm_pas_mtt at bit 0x880 = byte 272.
TEST(PrmMkey, CreateMkeyInGolden) {
  auto b = zeroed(create_mkey_in::kBits / 8 + 2 * 8);  // two MTT entries
  ASSERT_EQ(b.size(), 288u);
  Ref<create_mkey_in> in(b.data());
  in.set(create_mkey_in::opcode, 0x200);  // CREATE_MKEY
  Ref<mkc> c = in.at(create_mkey_in::memory_key_mkey_entry);
  ASSERT_EQ(c.data(), b.data() + 16);
  set_access_mode(c, mkc_access_mode::kMtt);
  // mkc dword 0: a/rw/rr/lw/lr are bits 0x11..0x15 -> values 0x4000, 0x2000,
  // 0x1000, 0x800, 0x400; access_mode_1_0 is bits 0x16-0x17 -> mode << 8.
  c.set(mkc::a, 1);
  c.set(mkc::rw, 1);
  c.set(mkc::rr, 1);
  c.set(mkc::lw, 1);
  c.set(mkc::lr, 1);
  // mkc dword 1: qpn bits 0x20-0x37 (bytes 4-6 of mkc), mkey_7_0 byte 7.
  c.set(mkc::qpn, 0xFFFFFF);
  c.set(mkc::mkey_7_0, 0x5A);
  // mkc dword 3: length64 bit 0x60 (MSB of mkc byte 12), pd bits 0x68-0x7f.
  c.set(mkc::length64, 1);
  c.set(mkc::pd, 0x001234);
  // start_addr bit 0x80 (mkc byte 16), len bit 0xc0 (mkc byte 24).
  c.set(mkc::start_addr, 0x00007F0011223000ull);
  c.set(mkc::len, 0x0000000000200000ull);
  // translations_octword_size bit 0x1a0 = mkc byte 52; log_page_size is the
  // low 5 bits of mkc dword 14 (bits 0x1db-0x1df) = low bits of mkc byte 59.
  c.set(mkc::translations_octword_size, 1);
  c.set(mkc::log_page_size, 12);
  in.set(create_mkey_in::translations_octword_actual_size, 1);
  // MTT 0 at byte 272, MTT 1 at byte 280 (8-byte big-endian entries).
  in.set(create_mkey_in::mtt_array, 0, mtt_entry(0x123456000ull, true, true));
  in.set(create_mkey_in::mtt_array, 1, mtt_entry(0xABCDEF000ull, true, false));

  // Every non-zero byte of the command; all other bytes must stay zero.
  const std::map<std::size_t, uint8_t> want = {
      {0, 0x02},                                                        // opcode 0x0200
      {18, 0x7D},                                                       // a rw rr lw lr, MTT
      {20, 0xFF},  {21, 0xFF},  {22, 0xFF},  {23, 0x5A},                // qpn, mkey_7_0
      {28, 0x80},  {30, 0x12},  {31, 0x34},                             // length64, pd
      {34, 0x7F},  {36, 0x11},  {37, 0x22},  {38, 0x30},                // start_addr
      {45, 0x20},                                                       // len 2 MiB
      {71, 0x01},                                                       // translations_octword_size
      {75, 0x0C},                                                       // log_page_size 12
      {99, 0x01},                                                       // ..._actual_size
      {275, 0x01}, {276, 0x23}, {277, 0x45}, {278, 0x60}, {279, 0x03},  // MTT 0 rd+wr
      {283, 0x0A}, {284, 0xBC}, {285, 0xDE}, {286, 0xF0}, {287, 0x01},  // MTT 1 rd
  };
  golden::expect_only(b, want);
  EXPECT_EQ(c.get(mkc::pd), 0x1234u);
  EXPECT_EQ(c.get(mkc::start_addr), 0x00007F0011223000ull);
  EXPECT_EQ(get_access_mode(c), mkc_access_mode::kMtt);
}

// Decode: the same buffer read back through the tables, and the 5-bit mode
// split across access_mode_4_2 / access_mode_1_0.
TEST(PrmMkey, MkcDecodeAndAccessModeSplit) {
  auto b = zeroed(mkc::kBits / 8);
  Ref<mkc> c(b.data());
  set_access_mode(c, mkc_access_mode::kSwIcm);  // 4: access_mode_4_2 = 1
  // access_mode_4_2 is bits 3..5 -> 1 << 26 in dword 0 -> byte 0 = 0x04.
  EXPECT_EQ(u8(b, 0), 0x04);
  EXPECT_EQ(u8(b, 2), 0x00);
  EXPECT_EQ(get_access_mode(c), mkc_access_mode::kSwIcm);
  set_access_mode(c, mkc_access_mode::kKsm);  // 3: access_mode_1_0 = 3
  EXPECT_EQ(u8(b, 0), 0x00);
  EXPECT_EQ(u8(b, 2), 0x03);
  EXPECT_EQ(get_access_mode(c), mkc_access_mode::kKsm);

  b[0] = std::byte{0x40};       // free: bit 1
  b[2] = std::byte{0x81};       // umr_en (bit 0x10) + access_mode_1_0 = 1
  b[56 + 3] = std::byte{0x15};  // log_page_size = 21 (2 MiB)
  CRef<mkc> r(b.data());
  EXPECT_EQ(r.get(mkc::free), 1u);
  EXPECT_EQ(r.get(mkc::umr_en), 1u);
  EXPECT_EQ(r.get(mkc::a), 0u);
  EXPECT_EQ(get_access_mode(r), mkc_access_mode::kMtt);
  EXPECT_EQ(r.get(mkc::log_page_size), 21u);
}

// mtt entry: ptag_63_32 dword 0, ptag_31_8 bits 0x20-0x37, wr_en bit 0x3e,
// rd_en bit 0x3f; the element view of klm_pas_mtt (32-bit units, so MTT i is
// element 2*i) agrees with mtt_array.
TEST(PrmMkey, MttEntryLayout) {
  auto b = zeroed(create_mkey_in::kBits / 8 + 16);
  Ref<create_mkey_in> in(b.data());
  Ref<mtt> m = in.elem<mtt>(create_mkey_in::klm_pas_mtt, 2);  // MTT 1
  ASSERT_EQ(m.data(), b.data() + 280);
  m.set(mtt::ptag_63_32, 0x00000001);
  m.set(mtt::ptag_31_8, 0x234567);
  m.set(mtt::wr_en, 0);
  m.set(mtt::rd_en, 1);
  EXPECT_EQ(in.get(create_mkey_in::mtt_array, 1), mtt_entry(0x123456700ull, true, false));
  EXPECT_EQ(u8(b, 287), 0x01);
  EXPECT_EQ(in.get(create_mkey_in::klm_pas_mtt, 2), 0x00000001u);
  EXPECT_EQ(in.get(create_mkey_in::klm_pas_mtt, 3), 0x23456701u);
}

// create_mkey_out: mkey_index bits 0x48-0x5f (bytes 9-11); the lkey is
// mkey_index << 8 | mkey_7_0 (driver.h mlx5_idx_to_mkey).
TEST(PrmMkey, CreateMkeyOutAndKeyNumbering) {
  auto b = zeroed(16);
  b[9] = std::byte{0x00};
  b[10] = std::byte{0x01};
  b[11] = std::byte{0x02};
  CRef<create_mkey_out> out(b.data());
  const uint32_t idx = static_cast<uint32_t>(out.get(create_mkey_out::mkey_index));
  EXPECT_EQ(idx, 0x102u);
  EXPECT_EQ(mkey_from_index(idx, 0x5A), 0x1025Au);
  EXPECT_EQ(mkey_to_index(0x1025A), 0x102u);

  auto d = zeroed(16);
  Ref<destroy_mkey_in> din(d.data());
  din.set(destroy_mkey_in::opcode, 0x202);
  din.set(destroy_mkey_in::mkey_index, 0x102);
  EXPECT_EQ(u8(d, 0), 0x02);
  EXPECT_EQ(u8(d, 1), 0x02);
  EXPECT_EQ(u8(d, 10), 0x01);
  EXPECT_EQ(u8(d, 11), 0x02);
}

// query_mkey_out: mkc at byte 16, first translation octword at byte 272
// (bit 0x880), second at byte 288 (bit 0x900); query_mkey_in.pg_access is
// the MSB of dword 3 (bit 0x60).
TEST(PrmMkey, QueryMkeyGolden) {
  auto q = zeroed(16);
  Ref<query_mkey_in> qin(q.data());
  qin.set(query_mkey_in::opcode, 0x201);
  qin.set(query_mkey_in::mkey_index, 0xABCDEF);
  qin.set(query_mkey_in::pg_access, 1);
  EXPECT_EQ(u8(q, 1), 0x01);
  EXPECT_EQ(u8(q, 9), 0xAB);
  EXPECT_EQ(u8(q, 12), 0x80);

  auto b = zeroed(query_mkey_out::kBits / 8);
  ASSERT_EQ(b.size(), 304u);
  b[16 + 7] = std::byte{0x77};   // mkc.mkey_7_0
  b[16 + 31] = std::byte{0x99};  // low byte of mkc.len
  b[272] = std::byte{0x11};
  b[288 + 15] = std::byte{0x22};
  CRef<query_mkey_out> out(b.data());
  CRef<mkc> c = out.at(query_mkey_out::memory_key_mkey_entry);
  EXPECT_EQ(c.get(mkc::mkey_7_0), 0x77u);
  EXPECT_EQ(c.get(mkc::len), 0x99u);
  EXPECT_EQ(static_cast<uint8_t>(out.bytes(query_mkey_out::bsf0_klm0_pas_mtt0_1)[0]), 0x11);
  EXPECT_EQ(static_cast<uint8_t>(out.bytes(query_mkey_out::bsf1_klm1_pas_mtt2_3)[15]), 0x22);
  EXPECT_EQ(out.bytes(query_mkey_out::bsf1_klm1_pas_mtt2_3).size(), 16u);
}

}  // namespace
}  // namespace kbv::prm
