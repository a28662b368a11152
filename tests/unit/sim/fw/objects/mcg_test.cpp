// SPDX-License-Identifier: BSD-3-Clause
// ATTACH_TO_MCG / DETACH_FROM_MCG (src/sim/fw/objects/mcg_cmds.cpp).
#include "fw_obj_support.hpp"

namespace kbv::sim::fw::objtest {
namespace {

class McgTest : public ObjFixture {
 protected:
  Reply mcg(Opcode op, uint32_t qpn, const Gid& g) {
    auto in = cmd<prm::attach_to_mcg_in>(op);
    prm::Ref<prm::attach_to_mcg_in> a(in.data());
    a.set(prm::attach_to_mcg_in::qpn, qpn);
    a.set_bytes(prm::attach_to_mcg_in::multicast_gid, std::as_bytes(std::span(g)));
    return exec(in, 16);
  }
  Reply attach(uint32_t qpn, const Gid& g) { return mcg(Opcode::ATTACH_TO_MCG, qpn, g); }
  Reply detach(uint32_t qpn, const Gid& g) { return mcg(Opcode::DETACH_FROM_MCG, qpn, g); }
  static void expect(const Reply& r, CmdStatus s, uint32_t synd) {
    EXPECT_EQ(r.status(), st(s));
    EXPECT_EQ(r.syndrome(), synd);
  }
  const Gid v4_group_ = ipv4_mapped_gid(239, 1, 2, 3);
  const Gid v6_group_ = {0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x42};
};

TEST_F(McgTest, AttachDetachMembership) {
  QpSpec s = spec(prm::qpc_st::kUd);
  const uint32_t a = create_qp(s);
  const uint32_t b = create_qp(s);
  ASSERT_EQ(attach(a, v4_group_).status(), 0);
  ASSERT_EQ(attach(b, v4_group_).status(), 0);
  ASSERT_EQ(attach(a, v6_group_).status(), 0);
  EXPECT_EQ(tables().mcgs.at(v4_group_), (std::vector<uint32_t>{a, b}));
  EXPECT_EQ(tables().qp(a)->mcg_count, 2u);
  expect(attach(a, v4_group_), CmdStatus::BAD_PARAM_ERR, synd::kMcgDuplicate);

  // An attached QP cannot be destroyed.
  expect(destroy_qp(a), CmdStatus::RES_BUSY, synd::kDestroyQpAttached);
  ASSERT_EQ(detach(a, v4_group_).status(), 0);
  ASSERT_EQ(detach(a, v6_group_).status(), 0);
  EXPECT_EQ(tables().mcgs.count(v6_group_), 0u);  // last member gone
  EXPECT_EQ(destroy_qp(a).status(), 0);
  expect(detach(b, v6_group_), CmdStatus::BAD_RES_ERR, synd::kDetachNoGroup);
  const uint32_t c = create_qp(s);
  expect(detach(c, v4_group_), CmdStatus::BAD_RES_ERR, synd::kDetachNotMember);
  expect(detach(0x999, v4_group_), CmdStatus::BAD_RES_ERR, synd::kDetachQpUnknown);
}

TEST_F(McgTest, Refusals) {
  const uint32_t ud = create_qp(spec(prm::qpc_st::kUd));
  const uint32_t rc = create_qp(spec(prm::qpc_st::kRc));
  expect(attach(0x999, v4_group_), CmdStatus::BAD_RES_ERR, synd::kMcgQpUnknown);
  expect(attach(rc, v4_group_), CmdStatus::BAD_PARAM_ERR, synd::kMcgNotUd);
  expect(attach(ud, ipv4_mapped_gid(10, 0, 0, 1)), CmdStatus::BAD_PARAM_ERR,
         synd::kMcgNotMulticast);
  expect(attach(ud, Gid{}), CmdStatus::BAD_PARAM_ERR, synd::kMcgNotMulticast);
}

TEST_F(McgTest, GroupAndTableLimits) {
  auto caps = prm::Ref<prm::cmd_hca_cap>(fw_->context().caps().cur(0).data());
  caps.set(prm::cmd_hca_cap::max_qp_mcg, 1);
  caps.set(prm::cmd_hca_cap::log_max_mcg, 0);  // one group
  QpSpec s = spec(prm::qpc_st::kUd);
  const uint32_t a = create_qp(s);
  const uint32_t b = create_qp(s);
  ASSERT_EQ(attach(a, v4_group_).status(), 0);
  expect(attach(b, v4_group_), CmdStatus::LIM_ERR, synd::kMcgGroupFull);
  expect(attach(a, v6_group_), CmdStatus::NO_RES_ERR, synd::kMcgExhausted);
}

}  // namespace
}  // namespace kbv::sim::fw::objtest
