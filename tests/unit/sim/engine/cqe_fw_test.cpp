// SPDX-License-Identifier: BSD-3-Clause
//
// src/sim/engine/cqe.hpp on a CQ the model firmware created (CREATE_CQ
// through the command queue, fw_obj_support.hpp): the writer uses the
// table's buffer pages and doorbell record, and an armed CQ's completion
// reaches the CQ's EQ as one EQE through EqCqEvents.
#include "../fw/objects/fw_obj_support.hpp"

#include "hca/prm/eqe.hpp"
#include "sim/engine/cqe.hpp"

#include <infiniband/mlx5dv.h>

namespace kbv::sim::fw::objtest {
namespace {

class EngineCqeFwTest : public ObjFixture {};

TEST_F(EngineCqeFwTest, ArmedCqOnAFirmwareCqRaisesOneCompletionEqe) {
  const uint32_t cqn = create_cq(2);
  Cq* cq = tables().cq(cqn);
  ASSERT_NE(cq, nullptr);
  FwContext& ctx = fw_->context();
  engine::CqNotify notify;
  engine::EqCqEvents sink(ctx.eqs());
  auto snap = ctx.eqs().query(eqn_);
  ASSERT_TRUE(snap.has_value());
  const uint32_t eq_pi = snap->pi;

  ASSERT_TRUE(engine::arm_cq(*cq, notify, 0, sink).is_ok());
  engine::CqeFields f;
  f.opcode = MLX5_CQE_REQ;
  f.qpn = 0x99;
  f.wqe_opcode = MLX5_OPCODE_RDMA_WRITE;
  f.wqe_counter = 3;
  ASSERT_TRUE(engine::write_cqe(ctx.iommu(), *cq, notify, f, sink).is_ok());
  ASSERT_TRUE(engine::write_cqe(ctx.iommu(), *cq, notify, f, sink).is_ok());

  // The CQE landed in the first page the driver gave CREATE_CQ.
  const std::byte* c = host_->dma().host(cq->buf.pas[0]);
  EXPECT_EQ(uint8_t(c[offsetof(mlx5_cqe64, op_own)]), MLX5_CQE_REQ << 4);
  EXPECT_EQ(uint8_t(c[offsetof(mlx5_cqe64, wqe_counter) + 1]), 3);
  EXPECT_EQ(cq->producer_counter, 2u);

  // Exactly one completion EQE, naming the CQ.
  snap = ctx.eqs().query(eqn_);
  ASSERT_TRUE(snap.has_value());
  ASSERT_EQ(snap->pi, eq_pi + 1);
  const uint32_t nent = 1u << snap->params.log_eq_size;
  prm::CRef<prm::eqe> e(host_->dma().host(snap->params.pas[0]) + 64 * (eq_pi & (nent - 1)));
  EXPECT_EQ(e.get(prm::eqe::type), prm::to_u8(prm::EventType::COMP));
  EXPECT_EQ(prm::CRef<prm::eqe_comp>(e.bytes(prm::eqe::data).data()).get(prm::eqe_comp::cqn), cqn);
}

}  // namespace
}  // namespace kbv::sim::fw::objtest
