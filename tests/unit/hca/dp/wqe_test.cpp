// SPDX-License-Identifier: BSD-3-Clause
// The WQE segment setters (hca/dp/wqe.hpp): golden bytes of each segment at
// the rdma-core mlx5dv.h offsets (values big-endian, reserved bytes zero,
// nothing written outside the segment), and the small copy inline data uses.
#include "hca/dp/wqe.hpp"

#include <gtest/gtest.h>
#include <infiniband/mlx5dv.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <vector>

#include "dp_fixture.hpp"
#include "hca/dp/sq.hpp"

namespace kbv::hca::test {
namespace {

// 16 bytes of segment between two guard units of 0xEE.
struct Unit {
  std::array<std::byte, 48> b;
  Unit() { b.fill(std::byte{0xEE}); }
  std::byte* seg() { return b.data() + 16; }
  void expect_guards() const {
    for (size_t i = 0; i < 16; ++i) {
      EXPECT_EQ(b[i], std::byte{0xEE}) << i;
      EXPECT_EQ(b[32 + i], std::byte{0xEE}) << 32 + i;
    }
  }
};

TEST(WqeSegments, ControlSegment) {
  Unit u;
  wqe::set_ctrl_seg(u.seg(), 0x1ABCD, MLX5_OPCODE_RDMA_WRITE_IMM, 0x654321, 5,
                    MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_FENCE, 0xCAFEF00D);
  const std::byte* p = u.seg();
  // wqe_index keeps its low 16 bits; opmod 0.
  EXPECT_EQ(be32_at(p, offsetof(mlx5_wqe_ctrl_seg, opmod_idx_opcode)),
            0xABCDu << 8 | MLX5_OPCODE_RDMA_WRITE_IMM);
  EXPECT_EQ(be32_at(p, offsetof(mlx5_wqe_ctrl_seg, qpn_ds)), 0x654321u << 8 | 5);
  EXPECT_EQ(p[offsetof(mlx5_wqe_ctrl_seg, signature)], std::byte{0});
  EXPECT_EQ(p[offsetof(mlx5_wqe_ctrl_seg, signature) + 1], std::byte{0});
  EXPECT_EQ(p[offsetof(mlx5_wqe_ctrl_seg, signature) + 2], std::byte{0});
  EXPECT_EQ(static_cast<uint8_t>(p[offsetof(mlx5_wqe_ctrl_seg, fm_ce_se)]),
            MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_FENCE);
  EXPECT_EQ(be32_at(p, offsetof(mlx5_wqe_ctrl_seg, imm)), 0xCAFEF00Du);
  u.expect_guards();
}

TEST(WqeSegments, RemoteAddressSegment) {
  Unit u;
  wqe::set_raddr_seg(u.seg(), 0x0102030405060708ull, 0xA0B0C0D0);
  EXPECT_EQ(be64_at(u.seg(), offsetof(mlx5_wqe_raddr_seg, raddr)), 0x0102030405060708ull);
  EXPECT_EQ(be32_at(u.seg(), offsetof(mlx5_wqe_raddr_seg, rkey)), 0xA0B0C0D0u);
  EXPECT_EQ(be32_at(u.seg(), offsetof(mlx5_wqe_raddr_seg, reserved)), 0u);
  u.expect_guards();
}

TEST(WqeSegments, AtomicSegmentCompareSwapAndFetchAdd) {
  Unit cs;
  wqe::set_atomic_seg(cs.seg(), true, /*swap=*/0x1111222233334444ull,
                      /*compare_add=*/0x5555666677778888ull);
  EXPECT_EQ(be64_at(cs.seg(), offsetof(mlx5_wqe_atomic_seg, swap_add)), 0x1111222233334444ull);
  EXPECT_EQ(be64_at(cs.seg(), offsetof(mlx5_wqe_atomic_seg, compare)), 0x5555666677778888ull);
  cs.expect_guards();
  Unit fa;
  wqe::set_atomic_seg(fa.seg(), false, /*swap=*/0x1111222233334444ull, /*compare_add=*/42);
  EXPECT_EQ(be64_at(fa.seg(), offsetof(mlx5_wqe_atomic_seg, swap_add)), 42u);
  EXPECT_EQ(be64_at(fa.seg(), offsetof(mlx5_wqe_atomic_seg, compare)), 0u);
  fa.expect_guards();
}

TEST(WqeSegments, DatagramSegmentTakesTheAvAndSetsQpnAndQkey) {
  mlx5_wqe_av av;
  std::memset(&av, 0x5A, sizeof av);
  mlx5_wqe_datagram_seg d;
  wqe::set_datagram_seg(&d, av, 0xABCDEF, 0x11223344);
  const auto* p = reinterpret_cast<const std::byte*>(&d);
  EXPECT_EQ(be32_at(p, offsetof(mlx5_wqe_av, dqp_dct)), 0xABCDEFu | MLX5_EXTENDED_UD_AV);
  EXPECT_EQ(be32_at(p, offsetof(mlx5_wqe_av, key)), 0x11223344u);
  // Everything else is the AH's AV.
  for (size_t i = 0; i < sizeof d; ++i) {
    if (i >= offsetof(mlx5_wqe_av, dqp_dct) && i < offsetof(mlx5_wqe_av, dqp_dct) + 4) continue;
    if (i < 4) continue;  // key.qkey.qkey
    EXPECT_EQ(p[i], std::byte{0x5A}) << i;
  }
}

TEST(WqeSegments, DataPointerAndEndSegments) {
  Unit d;
  wqe::set_data_ptr_seg(d.seg(), 0xFEDCBA9876543210ull, 0x12345, 0x777);
  EXPECT_EQ(be32_at(d.seg(), offsetof(mlx5_wqe_data_seg, byte_count)), 0x12345u);
  EXPECT_EQ(be32_at(d.seg(), offsetof(mlx5_wqe_data_seg, lkey)), 0x777u);
  EXPECT_EQ(be64_at(d.seg(), offsetof(mlx5_wqe_data_seg, addr)), 0xFEDCBA9876543210ull);
  d.expect_guards();
  Unit e;
  wqe::set_data_ptr_end_seg(e.seg());
  EXPECT_EQ(be32_at(e.seg(), offsetof(mlx5_wqe_data_seg, byte_count)), 0u);
  EXPECT_EQ(be32_at(e.seg(), offsetof(mlx5_wqe_data_seg, lkey)), uint32_t{MLX5_INVALID_LKEY});
  EXPECT_EQ(be64_at(e.seg(), offsetof(mlx5_wqe_data_seg, addr)), 0u);
  e.expect_guards();
}

// Inline segments of every total from 1 to 70 bytes gathered from two
// entries: header, bytes, zero padding to the unit, nothing past it.
TEST(WqeSegments, InlineSegmentHeaderBytesAndPadding) {
  std::vector<uint8_t> src(80);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i + 1);
  for (uint32_t total = 1; total <= 70; ++total) {
    const uint32_t first = total / 3;
    const Sge sg[2] = {{reinterpret_cast<uintptr_t>(src.data()), first, 0},
                       {reinterpret_cast<uintptr_t>(src.data() + first), total - first, 0}};
    std::array<std::byte, 128> seg;
    seg.fill(std::byte{0xEE});
    wqe::set_inline_data_seg(seg.data(), sg, 2, total);
    const uint32_t units = wqe::inline_seg_units(total);
    ASSERT_EQ(units, (4 + total + 15) / 16);
    EXPECT_EQ(be32_at(seg.data(), 0), total | MLX5_INLINE_SEG) << total;
    for (uint32_t i = 0; i < total; ++i)
      ASSERT_EQ(static_cast<uint8_t>(seg[4 + i]), src[i]) << total << " byte " << i;
    for (uint32_t i = 4 + total; i < units * 16; ++i)
      ASSERT_EQ(seg[i], std::byte{0}) << total << " pad " << i;
    for (uint32_t i = units * 16; i < seg.size(); ++i)
      ASSERT_EQ(seg[i], std::byte{0xEE}) << total << " past " << i;
  }
  EXPECT_EQ(wqe::inline_seg_units(0), 0u);
}

TEST(WqeSegments, CopySmallEverySizeStaysInBounds) {
  std::array<std::byte, 200> src, dst;
  for (size_t i = 0; i < src.size(); ++i) src[i] = std::byte(i * 7 + 3);
  for (size_t n = 0; n <= 150; ++n) {
    dst.fill(std::byte{0xEE});
    wqe::copy_small(dst.data() + 8, src.data() + 5, n);
    for (size_t i = 0; i < 8; ++i) ASSERT_EQ(dst[i], std::byte{0xEE}) << n;
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(dst[8 + i], src[5 + i]) << n << " " << i;
    for (size_t i = 8 + n; i < dst.size(); ++i) ASSERT_EQ(dst[i], std::byte{0xEE}) << n;
  }
}

}  // namespace
}  // namespace kbv::hca::test
