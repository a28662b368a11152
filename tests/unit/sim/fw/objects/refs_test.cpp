// SPDX-License-Identifier: BSD-3-Clause
// DESTROY_EQ and DEALLOC_UAR are refused (BAD_RES_STATE) while a CQ still
// reports to the EQ or a CQ/QP still rings the UAR page
// (fw::Extension::references_eq / references_uar on the object tables).
#include "fw_obj_support.hpp"
#include "hca/prm/eq.hpp"
#include "hca/prm/uar.hpp"
#include "sim/fw/syndromes.hpp"

#include <gtest/gtest.h>

namespace kbv::sim::fw {
namespace {

using prm::CmdStatus;
using prm::Opcode;

class ObjRefs : public objtest::ObjFixture {
 protected:
  objtest::Reply destroy_eq(uint32_t eqn) {
    auto in = objtest::cmd<prm::destroy_eq_in>(Opcode::DESTROY_EQ);
    prm::Ref<prm::destroy_eq_in>(in.data()).set(prm::destroy_eq_in::eq_number, eqn);
    return exec(in, 16);
  }
  objtest::Reply dealloc_uar(uint32_t uar) {
    auto in = objtest::cmd<prm::dealloc_uar_in>(Opcode::DEALLOC_UAR);
    prm::Ref<prm::dealloc_uar_in>(in.data()).set(prm::dealloc_uar_in::uar, uar);
    return exec(in, 16);
  }
};

TEST_F(ObjRefs, EqWithACqCannotBeDestroyed) {
  const uint32_t cqn = create_cq();
  objtest::Reply r = destroy_eq(eqn_);
  EXPECT_EQ(r.status(), static_cast<uint8_t>(CmdStatus::BAD_RES_STATE_ERR));
  EXPECT_EQ(r.syndrome(), synd::kDestroyEqInUse);
  ASSERT_EQ(destroy_cq(cqn).status(), 0);
  EXPECT_EQ(destroy_eq(eqn_).status(), 0);  // free once the CQ is gone
}

TEST_F(ObjRefs, UarRungByACqCannotBeDeallocated) {
  const uint32_t cqn = create_cq();
  ASSERT_EQ(destroy_eq(eqn_).status(), static_cast<uint8_t>(CmdStatus::BAD_RES_STATE_ERR));
  ASSERT_EQ(destroy_cq(cqn).status(), 0);
  ASSERT_EQ(destroy_eq(eqn_).status(), 0);
  // Another CQ on the same UAR page keeps it alive even with no EQ on it.
  eqn_ = create_eq();
  const uint32_t cq2 = create_cq();
  ASSERT_EQ(destroy_eq(eqn_).status(), static_cast<uint8_t>(CmdStatus::BAD_RES_STATE_ERR));
  objtest::Reply r = dealloc_uar(uar_);
  EXPECT_EQ(r.status(), static_cast<uint8_t>(CmdStatus::BAD_RES_STATE_ERR));
  ASSERT_EQ(destroy_cq(cq2).status(), 0);
}

}  // namespace
}  // namespace kbv::sim::fw
