// SPDX-License-Identifier: BSD-3-Clause
// The data path on real driver objects (SendQueue::for_qp, RecvQueue::for_qp,
// SrqQueue::for_srq, CqPoller::for_cq) on the fake device with the scripted
// firmware: the rings and doorbell records each adapter picks, the doorbell
// in the Hca's UAR page, and the Cq's software consumer index.
#include <infiniband/mlx5dv.h>

#include "../objects/obj_fixture.hpp"
#include "dp_fixture.hpp"
#include "hca/objects/qp.hpp"
#include "hca/objects/srq.hpp"
#include "hca/prm/uar.hpp"

namespace kbv::hca::test {
namespace {

using DpObjectsTest = ObjFixture;

TEST_F(DpObjectsTest, AdaptersUseTheObjectsRings) {
  auto cq =
      run<std::unique_ptr<Cq>>([&](auto cb) { return Cq::create(*hca, CqConfig{.cqe = 8}, cb); });
  ASSERT_TRUE(cq.has_value()) << cq.status().to_string();
  QpConfig qc;
  qc.send_cqn = qc.recv_cqn = (*cq)->cqn();
  qc.max_send_wr = 4;
  qc.max_recv_wr = 4;
  qc.max_send_sge = 2;
  qc.max_inline_data = 32;
  auto qp = run<std::unique_ptr<Qp>>([&](auto cb) { return Qp::create(*hca, qc, cb); });
  ASSERT_TRUE(qp.has_value()) << qp.status().to_string();
  Qp& q = **qp;

  auto sq = SendQueue::for_qp(*hca, q, qc);
  ASSERT_TRUE(sq.has_value()) << sq.status().to_string();
  EXPECT_EQ(sq->blocks(), q.sq_blocks());
  auto rq = RecvQueue::for_qp(q, qc.max_recv_sge);
  ASSERT_TRUE(rq.has_value());
  EXPECT_EQ(rq->wqes(), q.rq_wqes());
  EXPECT_EQ(SendQueue::for_qp(*hca, q, qc, prm::kBfRegsPerUar).status(), KBV_ERR_INVALID_ARGUMENT);

  // A send lands at sq_offset of the QP buffer; the record is the QP's.
  const Sge sg[] = {{0x1000, 8, 0x42}};
  const SendWr w{.wr_id = 77, .opcode = WrOpcode::kSend, .flags = send_flags::kSignaled, .sg = sg};
  dev.writes.clear();
  ASSERT_TRUE(sq->post({&w, 1}).is_ok());
  const std::byte* wqe = q.mem().buf() + q.sq_offset();
  EXPECT_EQ(be32_at(wqe, 0), uint32_t{MLX5_OPCODE_SEND});
  EXPECT_EQ(be32_at(wqe, 4), q.qpn() << 8 | 2);
  EXPECT_EQ(be32toh(q.mem().dbrec()[1]), 1u);
  // The doorbell goes to the Hca's UAR page, BlueFlame register 0 (these caps
  // have no BlueFlame: log_bf_reg_size 0, so a plain 64-bit doorbell).
  EXPECT_FALSE(hca->caps().bf);
  const uint64_t bf = prm::uar_page_offset(hca->uar().index()) + prm::kUarBlueflameOff;
  ASSERT_EQ(dev.writes.size(), 1u);
  EXPECT_EQ(dev.writes[0].offset, bf);
  EXPECT_EQ(dev.writes[0].value, be64_at(wqe, 0));

  // A receive lands at the start of the QP buffer; record word 0.
  const RecvWr r{.wr_id = 88, .sg = sg};
  ASSERT_TRUE(rq->post({&r, 1}).is_ok());
  EXPECT_EQ(be32_at(q.mem().buf(), 0), 8u);
  EXPECT_EQ(be32_at(q.mem().buf(), 4), 0x42u);
  EXPECT_EQ(be32toh(q.mem().dbrec()[0]), 1u);

  // Completions from the Cq's ring; the Cq learns the consumer index.
  auto poller = CqPoller::for_cq(**cq);
  ASSERT_TRUE(poller.has_value());
  ASSERT_TRUE(poller->attach(q.qpn(), &*sq, &*rq, nullptr).is_ok());
  std::byte* cqe = (*cq)->mem().buf();
  const uint32_t sop = htobe32(uint32_t{MLX5_OPCODE_SEND} << 24 | q.qpn());
  std::memcpy(cqe + offsetof(mlx5_cqe64, sop_drop_qpn), &sop, 4);
  cqe[offsetof(mlx5_cqe64, op_own)] = std::byte{MLX5_CQE_REQ << 4};
  std::byte* cqe1 = cqe + 64;
  const uint32_t rsop = htobe32(q.qpn());
  const uint32_t len = htobe32(8);
  std::memcpy(cqe1 + offsetof(mlx5_cqe64, sop_drop_qpn), &rsop, 4);
  std::memcpy(cqe1 + offsetof(mlx5_cqe64, byte_cnt), &len, 4);
  cqe1[offsetof(mlx5_cqe64, op_own)] = std::byte{MLX5_CQE_RESP_SEND << 4};
  WorkCompletion wc[4];
  ASSERT_EQ(poller->poll(wc), 2u);
  EXPECT_EQ(wc[0].wr_id, 77u);
  EXPECT_EQ(wc[1].wr_id, 88u);
  EXPECT_EQ(wc[1].byte_len, 8u);
  EXPECT_EQ((*cq)->ci(), 2u);
  EXPECT_EQ(be32toh((*cq)->mem().dbrec()[0]), 2u);

  // An SRQ's ring gets its free list linked.
  auto srq = run<std::unique_ptr<Srq>>(
      [&](auto cb) { return Srq::create(*hca, SrqConfig{.max_wr = 4, .max_sge = 1}, cb); });
  ASSERT_TRUE(srq.has_value());
  auto sq2 = SrqQueue::for_srq(**srq, 1);
  ASSERT_TRUE(sq2.has_value());
  for (uint32_t i = 0; i < (*srq)->nwqe(); ++i)
    EXPECT_EQ(be16_at((*srq)->mem().buf() + i * (*srq)->stride(), 2), (i + 1) % (*srq)->nwqe());

  ASSERT_TRUE(run_status([&](auto cb) { return (*srq)->destroy(cb); }).is_ok());
  ASSERT_TRUE(run_status([&](auto cb) { return q.destroy(cb); }).is_ok());
  ASSERT_TRUE(run_status([&](auto cb) { return (*cq)->destroy(cb); }).is_ok());
  // Objects that are gone are refused.
  EXPECT_EQ(RecvQueue::for_qp(q, 1).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(CqPoller::for_cq(**cq).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(dev.live_dma(), baseline);
}

}  // namespace
}  // namespace kbv::hca::test
