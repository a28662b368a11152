// SPDX-License-Identifier: BSD-3-Clause
// RecvQueue / SrqQueue (hca/dp/rq.hpp): receive WQE bytes (mlx5dv.h
// mlx5_wqe_data_seg, mlx5_wqe_srq_next_seg; the MLX5_INVALID_LKEY
// terminator as rdma-core mlx5_post_recv writes it), the doorbell record's
// receive counter, wrap-around, queue full, refusals, and the SRQ free list.
#include <infiniband/mlx5dv.h>

#include <cstddef>

#include "dp_fixture.hpp"

namespace kbv::hca::test {
namespace {

using DpRqTest = DpFixture;

void expect_data_seg(const std::byte* p, uint32_t len, uint32_t lkey, uint64_t addr) {
  EXPECT_EQ(be32_at(p, offsetof(mlx5_wqe_data_seg, byte_count)), len);
  EXPECT_EQ(be32_at(p, offsetof(mlx5_wqe_data_seg, lkey)), lkey);
  EXPECT_EQ(be64_at(p, offsetof(mlx5_wqe_data_seg, addr)), addr);
}

TEST_F(DpRqTest, ReceiveWqeTerminatorCounterAndWrap) {
  DmaBlock ring = alloc(4 * 64);
  std::memset(ring.va, 0x77, 4 * 64);
  auto q = RecvQueue::create(
      {.ring = ring.va, .log_wqes = 2, .stride = 64, .dbrec = dbrec(), .max_sge = 4});
  ASSERT_TRUE(q.has_value());
  const Sge two[] = {{0x1000, 10, 0x21}, {0x9000, 0, 0x99}, {0x2000, 20, 0x22}};
  const Sge four[] = {{1, 1, 1}, {2, 2, 2}, {3, 3, 3}, {4, 4, 4}};
  const RecvWr wrs[] = {{.wr_id = 100, .sg = two}, {.wr_id = 101, .sg = four}};
  ASSERT_TRUE(q->post(wrs).is_ok());
  // WQE 0: two data segments (the empty SGE skipped), then the terminator.
  expect_data_seg(ring.va, 10, 0x21, 0x1000);
  expect_data_seg(ring.va + 16, 20, 0x22, 0x2000);
  expect_data_seg(ring.va + 32, 0, MLX5_INVALID_LKEY, 0);
  EXPECT_EQ(ring.va[48], std::byte{0x77});  // after the terminator: untouched
  // WQE 1: full, no terminator.
  for (uint32_t i = 0; i < 4; ++i) expect_data_seg(ring.va + 64 + 16 * i, i + 1, i + 1, i + 1);
  EXPECT_EQ(dbrec_word(0), 2u);
  EXPECT_EQ(dbrec_word(1), 0u);  // the send counter is not the receive queue's

  // Fill: two more fit, the fifth request is refused and not written.
  std::memset(ring.va, 0x77, 64);
  const RecvWr three[] = {{.wr_id = 102}, {.wr_id = 103}, {.wr_id = 104, .sg = two}};
  size_t bad = 9;
  EXPECT_EQ(q->post(three, &bad), KBV_ERR_QUEUE_FULL);
  EXPECT_EQ(bad, 2u);
  EXPECT_EQ(q->outstanding(), 4u);
  EXPECT_EQ(dbrec_word(0), 4u);
  for (size_t i = 0; i < 64; ++i) ASSERT_EQ(ring.va[i], std::byte{0x77}) << i;
  // An empty SGE list: only the terminator.
  expect_data_seg(ring.va + 128, 0, MLX5_INVALID_LKEY, 0);

  // In-order completion, then posting wraps to slot 0.
  EXPECT_EQ(q->complete(), 100u);
  EXPECT_EQ(q->complete(), 101u);
  const RecvWr again{.wr_id = 105, .sg = two};
  ASSERT_TRUE(q->post({&again, 1}).is_ok());
  expect_data_seg(ring.va, 10, 0x21, 0x1000);
  EXPECT_EQ(dbrec_word(0), 5u);
  EXPECT_EQ(q->complete(), 102u);
  EXPECT_EQ(q->complete(), 103u);
  EXPECT_EQ(q->complete(), 105u);
  EXPECT_EQ(q->outstanding(), 0u);
}

TEST_F(DpRqTest, ACompletionWithNothingOutstandingConsumesNothing) {
  DmaBlock ring = alloc(4 * 64);
  auto q = RecvQueue::create(
      {.ring = ring.va, .log_wqes = 2, .stride = 64, .dbrec = dbrec(), .max_sge = 1});
  ASSERT_TRUE(q.has_value());
  const RecvWr one[] = {{.wr_id = 5}};
  ASSERT_TRUE(q->post(one).is_ok());
  EXPECT_EQ(q->complete(), 5u);
  EXPECT_EQ(q->outstanding(), 0u);
  (void)q->complete();  // the device completes a receive that was never posted
  EXPECT_EQ(q->outstanding(), 0u);
  const RecvWr four[] = {{.wr_id = 1}, {.wr_id = 2}, {.wr_id = 3}, {.wr_id = 4}};
  EXPECT_TRUE(q->post(four).is_ok());  // the ring is still all free
}

TEST_F(DpRqTest, TooManySgeAndBadGeometry) {
  DmaBlock ring = alloc(4096);
  auto q = RecvQueue::create(
      {.ring = ring.va, .log_wqes = 3, .stride = 32, .dbrec = dbrec(), .max_sge = 1});
  ASSERT_TRUE(q.has_value());
  std::memset(ring.va, 0x33, 256);
  const Sge two[] = {{1, 1, 1}, {2, 2, 2}};
  const Sge one[] = {{5, 5, 5}};
  const RecvWr wrs[] = {{.wr_id = 1, .sg = one}, {.wr_id = 2, .sg = two}};
  size_t bad = 9;
  EXPECT_EQ(q->post(wrs, &bad), KBV_ERR_TOO_MANY_SGE);
  EXPECT_EQ(bad, 1u);
  EXPECT_EQ(dbrec_word(0), 1u);
  expect_data_seg(ring.va, 5, 5, 5);
  expect_data_seg(ring.va + 16, 0, MLX5_INVALID_LKEY, 0);  // max_sge 1 < stride / 16
  for (size_t i = 32; i < 256; ++i) ASSERT_EQ(ring.va[i], std::byte{0x33}) << i;

  EXPECT_EQ(
      RecvQueue::create({.ring = ring.va, .log_wqes = 3, .stride = 48, .dbrec = dbrec()}).status(),
      KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(RecvQueue::create(
                {.ring = ring.va, .log_wqes = 3, .stride = 32, .dbrec = dbrec(), .max_sge = 3})
                .status(),
            KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(
      RecvQueue::create({.ring = nullptr, .log_wqes = 3, .stride = 32, .dbrec = dbrec()}).status(),
      KBV_ERR_INVALID_ARGUMENT);
  // SRQ: the next segment takes one 16-byte slot.
  EXPECT_EQ(SrqQueue::create(
                {.ring = ring.va, .log_wqes = 3, .stride = 32, .dbrec = dbrec(), .max_sge = 2})
                .status(),
            KBV_ERR_INVALID_ARGUMENT);
}

TEST_F(DpRqTest, SrqFreeListPostAndComplete) {
  DmaBlock ring = alloc(4096);
  std::memset(ring.va, 0x55, 4096);
  auto q = SrqQueue::create(
      {.ring = ring.va, .log_wqes = 2, .stride = 64, .dbrec = dbrec(), .max_sge = 3});
  ASSERT_TRUE(q.has_value());
  // Every WQE's next segment links to the following one (mlx5dv.h
  // mlx5_wqe_srq_next_seg.next_wqe_index at byte 2), the rest zeroed.
  for (uint32_t i = 0; i < 4; ++i) {
    const std::byte* w = ring.va + 64 * i;
    EXPECT_EQ(be16_at(w, offsetof(mlx5_wqe_srq_next_seg, next_wqe_index)), (i + 1) % 4);
    EXPECT_EQ(w[0], std::byte{0});
    EXPECT_EQ(w[offsetof(mlx5_wqe_srq_next_seg, signature)], std::byte{0});
  }
  EXPECT_EQ(q->head(), 0u);
  EXPECT_EQ(q->tail(), 3u);

  const Sge one[] = {{0x100, 7, 0x42}};
  const RecvWr wrs[] = {{.wr_id = 10, .sg = one}, {.wr_id = 11}, {.wr_id = 12}, {.wr_id = 13}};
  size_t bad = 9;
  // Capacity nwqe - 1: the fourth is refused.
  EXPECT_EQ(q->post(wrs, &bad), KBV_ERR_QUEUE_FULL);
  EXPECT_EQ(bad, 3u);
  EXPECT_EQ(dbrec_word(0), 3u);
  expect_data_seg(ring.va + 16, 7, 0x42, 0x100);
  expect_data_seg(ring.va + 32, 0, MLX5_INVALID_LKEY, 0);
  expect_data_seg(ring.va + 64 + 16, 0, MLX5_INVALID_LKEY, 0);
  EXPECT_EQ(ring.va[3 * 64 + 16], std::byte{0x55});  // the sentinel WQE untouched
  EXPECT_EQ(q->head(), 3u);

  // Completing WQE 1 appends it after the tail (3): 3 -> 1.
  EXPECT_EQ(q->complete(1), 11u);
  EXPECT_EQ(be16_at(ring.va + 3 * 64, 2), 1u);
  EXPECT_EQ(q->tail(), 1u);
  // The next post fills WQE 3 and moves head to 1.
  const Sge s2[] = {{0x200, 9, 0x43}};
  const RecvWr w{.wr_id = 14, .sg = s2};
  ASSERT_TRUE(q->post({&w, 1}).is_ok());
  expect_data_seg(ring.va + 3 * 64 + 16, 9, 0x43, 0x200);
  EXPECT_EQ(q->head(), 1u);
  EXPECT_EQ(dbrec_word(0), 4u);
  EXPECT_EQ(q->post({&w, 1}), KBV_ERR_QUEUE_FULL);  // head == tail
  EXPECT_EQ(q->complete(3), 14u);
  EXPECT_EQ(q->complete(0), 10u);
  ASSERT_TRUE(q->post({&w, 1}).is_ok());  // into WQE 1
  expect_data_seg(ring.va + 64 + 16, 9, 0x43, 0x200);
  EXPECT_EQ(q->head(), 3u);
}

}  // namespace
}  // namespace kbv::hca::test
