// SPDX-License-Identifier: BSD-3-Clause
// Golden tests for hca/prm/srq.hpp. Expected bytes are worked out by hand from
// Linux 6.1 include/linux/mlx5/mlx5_ifc.h (srqc, create_srq_in, arm_rq_in,
// ...): bit offsets count from the MSB of byte 0 and every dword is big endian.
#include "hca/prm/srq.hpp"
#include "golden.hpp"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace kbv::prm {
namespace {

using golden::expect_only;
using golden::u8;
using Buf = std::vector<std::byte>;

// create_srq_in: srq_context_entry (srqc) at bit 0x80 = byte 16, pas[] at bit
// 0x880 = byte 272. Inside srqc (add 16):
//   state bits 0-3, log_srq_size bits 4-7 (byte 0)
//   rlky bit 0x23 (byte 4 bit 4), log_rq_stride bits 0x25-0x27 (byte 4 bits
//   2..0), xrcd bytes 5-7
//   page_offset bits 0x40-0x45 (byte 8 bits 7..2), cqn bytes 9-11
//   log_page_size bits 0x82-0x87 (byte 16 low 6 bits)
//   pd bytes 25-27; lwm bytes 28-29, wqe_cnt bytes 30-31; dbr_addr bytes 40-47
TEST(PrmSrq, CreateSrqInGolden) {
  Buf b(create_srq_in::kBits / 8 + 8);
  Ref<create_srq_in> in(b.data());
  in.set(create_srq_in::opcode, 0x700);  // CREATE_SRQ
  Ref<srqc> s = in.at(create_srq_in::srq_context_entry);
  ASSERT_EQ(s.data(), b.data() + 16);
  s.set(srqc::state, srqc_state::kGood);
  s.set(srqc::log_srq_size, 10);
  s.set(srqc::rlky, 1);
  s.set(srqc::log_rq_stride, 2);
  s.set(srqc::xrcd, 0x000001);
  s.set(srqc::page_offset, 1);
  s.set(srqc::cqn, 0x000203);
  s.set(srqc::log_page_size, 33);  // 6 bits wide in srqc
  s.set(srqc::pd, 0x000405);
  s.set(srqc::lwm, 0x0010);
  s.set(srqc::wqe_cnt, 0x0102);
  s.set(srqc::dbr_addr, 0x00000000CAFE0040ull);
  in.set(create_srq_in::pas, 0, 0x0000000000200000ull);
  expect_only(b, {
                     {0, 0x07},   // opcode 0x0700
                     {16, 0x0A},  // log_srq_size
                     {20, 0x12},
                     {23, 0x01},  // rlky, stride, xrcd
                     {24, 0x04},
                     {26, 0x02},
                     {27, 0x03},  // page_offset, cqn
                     {32, 0x21},  // log_page_size
                     {42, 0x04},
                     {43, 0x05},  // pd
                     {45, 0x10},
                     {46, 0x01},
                     {47, 0x02},  // lwm, wqe_cnt
                     {60, 0xCA},
                     {61, 0xFE},
                     {63, 0x40},   // dbr_addr
                     {277, 0x20},  // pas[0]
                 });
  EXPECT_EQ(s.get(srqc::log_page_size), 33u);
}

// query_srq_out: srqc at byte 16 (state = high nibble of byte 16, lwm bytes
// 44-45, wqe_cnt bytes 46-47), pas at 272; create_srq_out.srqn bytes 9-11.
TEST(PrmSrq, QueryAndCreateOutDecode) {
  Buf b(query_srq_out::kBits / 8 + 8);
  b[16] = std::byte{0x1C};  // state ERROR, log_srq_size 12
  b[45] = std::byte{0x20};
  b[47] = std::byte{0x05};
  b[279] = std::byte{0x01};
  CRef<query_srq_out> out(b.data());
  CRef<srqc> s = out.at(query_srq_out::srq_context_entry);
  EXPECT_EQ(s.get(srqc::state), srqc_state::kError);
  EXPECT_EQ(s.get(srqc::log_srq_size), 12u);
  EXPECT_EQ(s.get(srqc::lwm), 0x20u);
  EXPECT_EQ(s.get(srqc::wqe_cnt), 5u);
  EXPECT_EQ(out.get(query_srq_out::pas, 0), 1u);

  Buf o(16);
  o[9] = std::byte{0x12};
  o[10] = std::byte{0x34};
  o[11] = std::byte{0x56};
  EXPECT_EQ(CRef<create_srq_out>(o.data()).get(create_srq_out::srqn), 0x123456u);
}

// arm_rq_in: op_mod bytes 6-7 (1 = SRQ), srq_number bits 0x48-0x5f (bytes
// 9-11), lwm bits 0x70-0x7f (bytes 14-15). destroy/query_srq_in: srqn at 0x48.
TEST(PrmSrq, ArmRqAndDestroyGolden) {
  Buf b(16);
  Ref<arm_rq_in> in(b.data());
  in.set(arm_rq_in::opcode, 0x703);  // ARM_RQ
  in.set(arm_rq_in::op_mod, arm_rq_op_mod::kSrq);
  in.set(arm_rq_in::srq_number, 0x00ABCD);
  in.set(arm_rq_in::lwm, 0x0100);
  expect_only(b, {{0, 0x07}, {1, 0x03}, {7, 0x01}, {10, 0xAB}, {11, 0xCD}, {14, 0x01}});

  Buf d(16);
  Ref<destroy_srq_in> din(d.data());
  din.set(destroy_srq_in::opcode, 0x701);
  din.set(destroy_srq_in::srqn, 0x000042);
  expect_only(d, {{0, 0x07}, {1, 0x01}, {11, 0x42}});
  EXPECT_EQ(CRef<query_srq_in>(d.data()).get(query_srq_in::srqn), 0x42u);
}

}  // namespace
}  // namespace kbv::prm
