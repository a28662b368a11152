// SPDX-License-Identifier: BSD-3-Clause
// Golden tests for hca/prm/cq.hpp. Expected bytes are worked out by hand from
// Linux 6.1 include/linux/mlx5/mlx5_ifc.h (cqc, create_cq_in, modify_cq_in,
// ...): bit offsets count from the MSB of byte 0 and every dword is big endian.
#include "hca/prm/cq.hpp"
#include "golden.hpp"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace kbv::prm {
namespace {

using golden::expect_only;
using golden::u8;
using Buf = std::vector<std::byte>;

// create_cq_in: cq_context (cqc) at bit 0x80 = byte 16, cq_umem_valid at bit
// 0x2e0 (MSB of byte 92), pas[] at bit 0x880 = byte 272.
// Inside cqc (add 16 for the command byte):
//   dword 0: cqe_sz bits 0x08-0x0a -> 1 << 21; oi bit 0x0e -> 1 << 17;
//            cq_period_mode bits 0x0f-0x10 -> 1 << 15; st bits 0x14-0x17 -> << 8
//   dword 2: page_offset bits 0x54-0x59 -> value << 6 (cqc byte 11)
//   dword 3: log_cq_size bits 0x63-0x67 (low 5 bits of cqc byte 12),
//            uar_page bits 0x68-0x7f (cqc bytes 13-15)
//   dword 4: cq_period bits 0x84-0x8f -> << 16; cq_max_count bits 0x90-0x9f
//   dword 5: c_eqn (c_eqn_or_apu_element) bits 0xa0-0xbf
//   dword 6: log_page_size bits 0xc3-0xc7 (low 5 bits of cqc byte 24)
//   dbr_addr bits 0x1c0-0x1ff (cqc bytes 56-63)
TEST(PrmCq, CreateCqInGolden) {
  Buf b(create_cq_in::kBits / 8 + 2 * 8);
  Ref<create_cq_in> in(b.data());
  in.set(create_cq_in::opcode, 0x400);  // CREATE_CQ
  Ref<cqc> c = in.at(create_cq_in::cq_context);
  ASSERT_EQ(c.data(), b.data() + 16);
  c.set(cqc::cqe_sz, cqc_cqe_sz::k128Bytes);
  c.set(cqc::oi, 1);
  c.set(cqc::cq_period_mode, cq_period_mode::kStartFromCqe);
  c.set(cqc::st, cqc_st::kNotificationRequestArmed);
  c.set(cqc::page_offset, 1);
  c.set(cqc::log_cq_size, 10);
  c.set(cqc::uar_page, 0x000102);
  c.set(cqc::cq_period, 0x123);
  c.set(cqc::cq_max_count, 0x40);
  c.set(cqc::c_eqn, 0x117);  // > 255: needs the 32-bit field
  c.set(cqc::log_page_size, 2);
  c.set(cqc::dbr_addr, 0x0000001122334400ull);
  in.set(create_cq_in::cq_umem_valid, 1);
  in.set(create_cq_in::pas, 0, 0x00000000DEAD0000ull);
  in.set(create_cq_in::pas, 1, 0x00000001BEEF0000ull);
  expect_only(b, {
                     {0, 0x04},                                          // opcode 0x0400
                     {17, 0x22},                                         // cqe_sz=1, oi
                     {18, 0x89},                                         // period mode, st=9
                     {27, 0x40},                                         // page_offset=1
                     {28, 0x0A},                                         // log_cq_size
                     {30, 0x01},  {31, 0x02},                            // uar_page
                     {32, 0x01},  {33, 0x23},                            // cq_period
                     {35, 0x40},                                         // cq_max_count
                     {38, 0x01},  {39, 0x17},                            // c_eqn
                     {40, 0x02},                                         // log_page_size
                     {75, 0x11},  {76, 0x22},  {77, 0x33},  {78, 0x44},  // dbr_addr
                     {92, 0x80},                                         // cq_umem_valid
                     {276, 0xDE}, {277, 0xAD},                           // pas[0]
                     {283, 0x01}, {284, 0xBE}, {285, 0xEF},              // pas[1]
                 });
  EXPECT_EQ(c.get(cqc::c_eqn_or_apu_element), 0x117u);
  // cq_umem_offset bit 0x280 (bytes 80-87), cq_umem_id bit 0x2c0 (88-91).
  in.set(create_cq_in::cq_umem_offset, 0x1000);
  in.set(create_cq_in::cq_umem_id, 0x21);
  EXPECT_EQ(u8(b, 86), 0x10);
  EXPECT_EQ(u8(b, 91), 0x21);
  EXPECT_EQ(u8(b, 92), 0x80);  // cq_umem_valid untouched
  EXPECT_EQ(in.get(create_cq_in::pas, 1), 0x00000001BEEF0000ull);
}

// query_cq_out: status byte 0, syndrome bytes 4-7, cqc at byte 16;
// cqc.status is the high nibble of cqc byte 0; consumer_counter is bits
// 0x148-0x15f (cqc bytes 41-43), producer_counter 0x168-0x17f (bytes 45-47),
// last_notified_index 0x108-0x11f (bytes 33-35).
TEST(PrmCq, QueryCqOutDecode) {
  Buf b(query_cq_out::kBits / 8);
  ASSERT_EQ(b.size(), 272u);
  b[4] = std::byte{0xCA};
  b[7] = std::byte{0xFE};
  b[16] = std::byte{0xA0};       // status = CQ_WRITE_FAIL
  b[18] = std::byte{0x0A};       // st = FIRED
  b[16 + 35] = std::byte{0x07};  // last_notified_index = 7
  b[16 + 41] = std::byte{0x01};  // consumer_counter = 0x010203
  b[16 + 42] = std::byte{0x02};
  b[16 + 43] = std::byte{0x03};
  b[16 + 47] = std::byte{0x09};  // producer_counter = 9
  CRef<query_cq_out> out(b.data());
  EXPECT_EQ(out.get(query_cq_out::status), 0u);
  EXPECT_EQ(out.get(query_cq_out::syndrome), 0xCA0000FEu);
  CRef<cqc> c = out.at(query_cq_out::cq_context);
  EXPECT_EQ(c.get(cqc::status), cqc_status::kCqWriteFail);
  EXPECT_EQ(c.get(cqc::st), cqc_st::kFired);
  EXPECT_EQ(c.get(cqc::last_notified_index), 7u);
  EXPECT_EQ(c.get(cqc::consumer_counter), 0x010203u);
  EXPECT_EQ(c.get(cqc::producer_counter), 9u);
  EXPECT_EQ(c.get(cqc::log_cq_size), 0u);
}

// modify_cq_in (resize): op_mod bytes 6-7, cqn bits 0x48-0x5f (bytes 9-11),
// the field-select union is dword 3 (bytes 12-15), cqc at byte 16, pas at
// byte 272.
TEST(PrmCq, ModifyCqResizeGolden) {
  Buf b(modify_cq_in::kBits / 8 + 8);
  Ref<modify_cq_in> in(b.data());
  in.set(modify_cq_in::opcode, 0x403);  // MODIFY_CQ
  in.set(modify_cq_in::op_mod, modify_cq_op_mod::kResizeCq);
  in.set(modify_cq_in::cqn, 0x000ABC);
  in.set(modify_cq_in::resize_field_select,
         resize_cq_field_select::kLogCqSize | resize_cq_field_select::kLogPageSize);
  in.at(modify_cq_in::cq_context).set(cqc::log_cq_size, 12);
  in.set(modify_cq_in::pas, 0, 0x0000000000001000ull);
  expect_only(b, {{0, 0x04},
                  {1, 0x03},
                  {7, 0x01},
                  {10, 0x0A},
                  {11, 0xBC},
                  {15, 0x05},
                  {28, 0x0C},
                  {278, 0x10}});
  // Both union views read the same dword.
  EXPECT_EQ(in.get(modify_cq_in::modify_field_select), 0x5u);
}

// modify_cq_in (moderation): modify_field_select selects cq_period and
// cq_max_count; destroy_cq_in / create_cq_out carry cqn at bit 0x48.
TEST(PrmCq, ModifyModerationAndCqn) {
  Buf b(modify_cq_in::kBits / 8);
  Ref<modify_cq_in> in(b.data());
  in.set(modify_cq_in::op_mod, modify_cq_op_mod::kModifyCq);
  in.set(modify_cq_in::modify_field_select,
         modify_cq_field_select::kCqPeriod | modify_cq_field_select::kCqMaxCount);
  Ref<cqc> c = in.at(modify_cq_in::cq_context);
  c.set(cqc::cq_period, 0xFFF);
  c.set(cqc::cq_max_count, 0xFFFF);
  EXPECT_EQ(u8(b, 15), 0x03);
  EXPECT_EQ(u8(b, 32), 0x0F);  // cq_period's 12 bits are bits 27..16 of dword 4
  EXPECT_EQ(u8(b, 33), 0xFF);
  EXPECT_EQ(u8(b, 34), 0xFF);
  EXPECT_EQ(u8(b, 35), 0xFF);

  Buf d(16);
  Ref<destroy_cq_in> din(d.data());
  din.set(destroy_cq_in::opcode, 0x401);
  din.set(destroy_cq_in::cqn, 0xFEDCBA);
  expect_only(d, {{0, 0x04}, {1, 0x01}, {9, 0xFE}, {10, 0xDC}, {11, 0xBA}});

  Buf o(16);
  o[11] = std::byte{0x2A};
  EXPECT_EQ(CRef<create_cq_out>(o.data()).get(create_cq_out::cqn), 0x2Au);
}

}  // namespace
}  // namespace kbv::prm
