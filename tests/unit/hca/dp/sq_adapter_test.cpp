// SPDX-License-Identifier: BSD-3-Clause
// The post loops' field adapters and the common-shape send build
// (hca/dp/sq_post.hpp, rq.hpp): a caller's own request type builds the same
// WQE bytes as SendWr / RecvWr; its prepare() refusal stops the batch with
// the index, like the queue's own checks; the straight-line build of the
// common shape (1 SGE, no inline/atomic, RC/UC) writes what the general
// composition writes, and its edges (zero length, max_sge 0, flags,
// immediate, sig_all) hold.
#include <infiniband/mlx5dv.h>

#include <cstddef>
#include <vector>

#include "dp_fixture.hpp"
#include "hca/dp/sq_post.hpp"

namespace kbv::hca::test {
namespace {

namespace st = prm::qpc_st;

using DpAdapterTest = DpFixture;

// A request type of the caller's own, fields in another order.
struct MyWr {
  uint32_t rkey;
  uint64_t raddr;
  const Sge* list;
  uint32_t count;
  uint64_t id;
  bool poison;  // prepare() refuses it
};
struct MyFields {
  using Wr = MyWr;
  mutable int prepared = 0;
  template <bool Ud>
  kbv_status_t prepare(const Wr& w, const Ah**) const {
    ++prepared;
    return w.poison ? KBV_ERR_INVALID_ARGUMENT : KBV_SUCCESS;
  }
  static uint64_t wr_id(const Wr& w) { return w.id; }
  static uint32_t opcode(const Wr&) { return static_cast<uint32_t>(WrOpcode::kRdmaWrite); }
  static uint32_t flags(const Wr&) { return send_flags::kSignaled; }
  static const Sge* sg(const Wr& w) { return w.list; }
  static size_t num_sge(const Wr& w) { return w.count; }
  static uint32_t imm(const Wr&) { return 0; }
  static uint64_t remote_addr(const Wr& w) { return w.raddr; }
  static uint32_t rkey(const Wr& w) { return w.rkey; }
  static uint64_t compare_add(const Wr&) { return 0; }
  static uint64_t swap(const Wr&) { return 0; }
  static uint32_t remote_qpn(const Wr&) { return 0; }
  static uint32_t q_key(const Wr&) { return 0; }
};

std::vector<std::byte> bytes(const std::byte* p, size_t n) { return {p, p + n}; }

TEST_F(DpAdapterTest, OwnRequestTypeBuildsTheSameWqeAndRefusesInOrder) {
  auto mine = SendQueue::create(sq_config(st::kRc, 3));
  ASSERT_TRUE(mine.has_value());
  const DmaBlock mine_ring = sq_ring;
  auto ref = SendQueue::create(sq_config(st::kRc, 3));
  ASSERT_TRUE(ref.has_value());
  const Sge sg2[] = {{0x1000, 100, 7}, {0x2000, 200, 8}};
  const MyWr good{
      .rkey = 0x99, .raddr = 0xABC000, .list = sg2, .count = 2, .id = 11, .poison = false};
  MyWr bad = good;
  bad.poison = true;
  std::memset(mine_ring.va, 0x5A, 512);
  const MyWr batch[] = {good, bad, good};
  MyFields f;
  size_t bad_index = 99;
  EXPECT_EQ(mine->post(f, batch, 3, &bad_index), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bad_index, 1u);
  EXPECT_EQ(f.prepared, 2);  // nothing after the refused one is read
  EXPECT_EQ(mine->pc(), 1u);
  for (size_t i = 64; i < 512; ++i) ASSERT_EQ(mine_ring.va[i], std::byte{0x5A}) << i;
  // The same request as a SendWr, on a queue of its own: same bytes.
  const SendWr w{.wr_id = 11,
                 .opcode = WrOpcode::kRdmaWrite,
                 .flags = send_flags::kSignaled,
                 .sg = sg2,
                 .remote_addr = 0xABC000,
                 .rkey = 0x99};
  ASSERT_TRUE(ref->post({&w, 1}).is_ok());
  EXPECT_EQ(bytes(mine_ring.va, 64), bytes(sq_ring.va, 64));
  EXPECT_EQ(mine->complete(0), 11u);
}

// The common shape's straight-line build against the general composition:
// a WRITE with one SGE, and the same WRITE with a second, empty SGE (which
// takes the general path and skips the empty entry), write the same WQE.
TEST_F(DpAdapterTest, CommonShapeMatchesTheGeneralBuild) {
  for (const uint32_t flags :
       {0u, send_flags::kSignaled, send_flags::kSolicited | send_flags::kFence,
        send_flags::kSignaled | send_flags::kSolicited}) {
    for (const WrOpcode op : {WrOpcode::kSend, WrOpcode::kSendImm, WrOpcode::kRdmaWrite,
                              WrOpcode::kRdmaWriteImm, WrOpcode::kRdmaRead}) {
      auto q = SendQueue::create(sq_config(st::kRc, 3));
      ASSERT_TRUE(q.has_value());
      const Sge one[] = {{0x4000, 64, 0x33}};
      const Sge two[] = {{0x4000, 64, 0x33}, {0x5000, 0, 0x44}};
      SendWr w{.wr_id = 1,
               .opcode = op,
               .flags = flags,
               .sg = one,
               .imm = 0x12345678,
               .remote_addr = 0x8000,
               .rkey = 0x55};
      ASSERT_TRUE(q->post({&w, 1}).is_ok());
      w.sg = two;
      ASSERT_TRUE(q->post({&w, 1}).is_ok());
      auto a = bytes(sq_bb(0), 64), b = bytes(sq_bb(1), 64);
      // Only the wqe_index differs.
      EXPECT_EQ(be32_at(sq_bb(0), 0) & 0xFF, be32_at(sq_bb(1), 0) & 0xFF);
      EXPECT_EQ(be32_at(sq_bb(1), 0) >> 8, 1u);
      for (size_t i = 0; i < 4; ++i) a[i] = b[i] = std::byte{0};
      EXPECT_EQ(a, b) << "opcode " << static_cast<int>(op) << " flags " << flags;
    }
  }
}

// Inline data: one entry (the common shape when it fits one basic block)
// against the same bytes gathered from two entries (the general path).
TEST_F(DpAdapterTest, CommonShapeInlineMatchesTheGeneralBuild) {
  std::vector<uint8_t> data(64);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(0xA0 + i);
  const auto at = reinterpret_cast<uintptr_t>(data.data());
  for (const WrOpcode op : {WrOpcode::kSend, WrOpcode::kRdmaWriteImm}) {
    for (const uint32_t len : {1u, 11u, 12u, 13u, 27u, 28u, 29u, 44u, 45u, 60u}) {
      auto q = SendQueue::create(sq_config(st::kRc, 4, 4, 64));
      ASSERT_TRUE(q.has_value());
      std::memset(sq_ring.va, 0x5A, 64 * 16);
      const Sge one[] = {{at, len, 0}};
      const Sge two[] = {{at, len / 2, 0}, {at + len / 2, len - len / 2, 0}};
      SendWr w{.wr_id = 1,
               .opcode = op,
               .flags = send_flags::kInline | send_flags::kSignaled,
               .sg = one,
               .imm = 0x0BADCAFE,
               .remote_addr = 0x8000,
               .rkey = 0x55};
      ASSERT_TRUE(q->post({&w, 1}).is_ok());
      const uint32_t second = q->pc();
      w.sg = two;
      ASSERT_TRUE(q->post({&w, 1}).is_ok());
      const uint32_t bbs = q->pc() - second;
      ASSERT_EQ(second, bbs);
      auto a = bytes(sq_bb(0), 64 * bbs), b = bytes(sq_bb(second), 64 * bbs);
      EXPECT_EQ(be32_at(sq_bb(second), 0) >> 8, second);
      for (size_t i = 0; i < 4; ++i) a[i] = b[i] = std::byte{0};
      EXPECT_EQ(a, b) << "opcode " << static_cast<int>(op) << " len " << len;
    }
  }
}

TEST_F(DpAdapterTest, CommonShapeEdges) {
  // sig_all: every WQE asks for a CQE; the immediate of WRITE_IMM.
  SqConfig c = sq_config(st::kUc, 3);
  c.sig_all = true;
  auto q = SendQueue::create(c);
  ASSERT_TRUE(q.has_value());
  const Sge empty[] = {{0x4000, 0, 0x33}};
  const SendWr w{.wr_id = 3,
                 .opcode = WrOpcode::kRdmaWriteImm,
                 .flags = send_flags::kSolicited,
                 .sg = empty,
                 .imm = 0xA1B2C3D4,
                 .remote_addr = 0x8000,
                 .rkey = 0x55};
  std::memset(sq_ring.va, 0x5A, 64);
  ASSERT_TRUE(q->post({&w, 1}).is_ok());
  const std::byte* p = sq_bb(0);
  // A zero-length SGE has no data segment: control + remote address.
  EXPECT_EQ(be32_at(p, offsetof(mlx5_wqe_ctrl_seg, qpn_ds)), kQpn << 8 | 2);
  EXPECT_EQ(static_cast<uint8_t>(p[offsetof(mlx5_wqe_ctrl_seg, fm_ce_se)]),
            MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_SOLICITED);
  EXPECT_EQ(be32_at(p, offsetof(mlx5_wqe_ctrl_seg, imm)), 0xA1B2C3D4u);
  EXPECT_EQ(be64_at(p + 16, offsetof(mlx5_wqe_raddr_seg, raddr)), 0x8000u);
  for (size_t i = 32; i < 64; ++i) EXPECT_EQ(p[i], std::byte{0x5A}) << i;
  // UC refuses READ before the common shape is taken.
  SendWr rd = w;
  rd.opcode = WrOpcode::kRdmaRead;
  EXPECT_EQ(q->post({&rd, 1}), KBV_ERR_INVALID_WR_TYPE);
  // A queue created for no SGE refuses a one-SGE request.
  auto none = SendQueue::create(sq_config(st::kRc, 3, /*max_sge=*/0));
  ASSERT_TRUE(none.has_value());
  size_t bad = 9;
  EXPECT_EQ(none->post({&w, 1}, &bad), KBV_ERR_TOO_MANY_SGE);
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(none->pc(), 0u);
}

// Receives through an adapter: prepare() refusals and the 1-SGE branch's
// terminator.
struct MyRecv {
  uint64_t id;
  const Sge* list;
  uint32_t count;
};
struct MyRecvFields {
  using Wr = MyRecv;
  kbv_status_t prepare(const Wr& w) const {
    return w.count != 0 && w.list == nullptr ? KBV_ERR_INVALID_ARGUMENT : KBV_SUCCESS;
  }
  static uint64_t wr_id(const Wr& w) { return w.id; }
  static const Sge* sg(const Wr& w) { return w.list; }
  static size_t num_sge(const Wr& w) { return w.count; }
};

TEST_F(DpAdapterTest, RecvThroughAnAdapter) {
  DmaBlock ring = alloc(32 * 8);
  auto q = RecvQueue::create(
      RqConfig{.ring = ring.va, .log_wqes = 3, .stride = 32, .dbrec = dbrec(), .max_sge = 2});
  ASSERT_TRUE(q.has_value());
  std::memset(ring.va, 0x5A, 32 * 8);
  const Sge zero[] = {{0x1000, 0, 5}};
  const Sge one[] = {{0x2000, 64, 6}};
  const MyRecv wrs[] = {{1, one, 1}, {2, zero, 1}, {3, nullptr, 1}, {4, one, 1}};
  size_t bad = 99;
  EXPECT_EQ(q->post(MyRecvFields{}, wrs, 4, &bad), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bad, 2u);
  EXPECT_EQ(q->head(), 2u);
  EXPECT_EQ(dbrec_word(0), 2u);
  // WQE 0: the data segment, then the terminator (slot of two).
  EXPECT_EQ(be32_at(ring.va, 0), 64u);
  EXPECT_EQ(be32_at(ring.va, 4), 6u);
  EXPECT_EQ(be64_at(ring.va, 8), 0x2000u);
  EXPECT_EQ(be32_at(ring.va, 16), 0u);
  EXPECT_EQ(be32_at(ring.va, 20), uint32_t{MLX5_INVALID_LKEY});
  // WQE 1: a zero-length entry is skipped, the terminator comes first.
  EXPECT_EQ(be32_at(ring.va + 32, 0), 0u);
  EXPECT_EQ(be32_at(ring.va + 32, 4), uint32_t{MLX5_INVALID_LKEY});
  for (size_t i = 48; i < 64; ++i) EXPECT_EQ(ring.va[i], std::byte{0x5A}) << i;
  for (size_t i = 64; i < 256; ++i) ASSERT_EQ(ring.va[i], std::byte{0x5A}) << i;
  EXPECT_EQ(q->complete(), 1u);
  EXPECT_EQ(q->complete(), 2u);
}

}  // namespace
}  // namespace kbv::hca::test
