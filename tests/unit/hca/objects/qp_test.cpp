// SPDX-License-Identifier: BSD-3-Clause
// Qp (hca/objects/qp.hpp) on the fake device: WQ geometry from the attributes and
// caps, the driver's state after transitions, memory on failure; the RoCEv2
// path and UDP source port helpers.
#include "hca/objects/qp.hpp"

#include "obj_fixture.hpp"

namespace kbv::hca::test {
namespace {

using QpTest = ObjFixture;
namespace qs = prm::qp_state;

TEST_F(QpTest, GeometryFromAttributes) {
  QpConfig c;
  c.st = prm::qpc_st::kUd;
  c.max_send_wr = 10;
  c.max_send_sge = 3;  // 16 + 48 + 48 = 112 bytes -> 2 basic blocks
  c.max_recv_wr = 5;
  c.max_recv_sge = 3;  // 48 -> stride 64
  auto qp = run<std::unique_ptr<Qp>>([&](auto cb) { return Qp::create(*hca, c, cb); });
  ASSERT_TRUE(qp.has_value()) << qp.status().to_string();
  Qp& q = **qp;
  EXPECT_EQ(q.wqe_blocks(), 2u);
  EXPECT_EQ(q.sq_blocks(), 32u);  // 20 blocks -> 32
  EXPECT_EQ(q.rq_wqes(), 8u);
  EXPECT_EQ(q.rq_stride(), 64u);
  EXPECT_EQ(q.sq_offset(), 8u * 64);
  EXPECT_EQ(q.mem().size(), 4096u);  // 512 + 2048 bytes in one page
  EXPECT_EQ(q.state(), qs::kRst);

  cmd::QpAttr a;
  ASSERT_TRUE(run_status([&](auto cb) {
                return q.modify(cmd::QpTransition::kRst2Init, a, 0, cb);
              }).is_ok());
  EXPECT_EQ(q.state(), qs::kInit);
  ASSERT_TRUE(
      run_status([&](auto cb) { return q.modify(cmd::QpTransition::kToErr, a, 0, cb); }).is_ok());
  EXPECT_EQ(q.state(), qs::kErr);
  // A refused transition leaves the driver's state alone.
  sfw.fail_opcode = 0x50A;
  sfw.fail_status = 0x10;
  EXPECT_EQ(run_status([&](auto cb) { return q.modify(cmd::QpTransition::kToRst, a, 0, cb); }),
            KBV_ERR_INVALID_QP_STATE);
  EXPECT_EQ(q.state(), qs::kErr);
  sfw.fail_opcode = 0;

  ASSERT_TRUE(run_status([&](auto cb) { return q.destroy(cb); }).is_ok());
  EXPECT_EQ(dev.live_dma(), baseline);
}

TEST_F(QpTest, LimitsAndFailures) {
  QpConfig c;
  c.max_send_sge = 40;  // 16 + 32 + 640 > max_wqe_sz_sq 512
  EXPECT_EQ(Qp::create(*hca, c, [](Result<std::unique_ptr<Qp>>) {}), KBV_ERR_LIMIT_EXCEEDED);
  c.max_send_sge = 1;
  c.max_recv_sge = 32;  // stride 512 > max_wqe_sz_rq 256
  EXPECT_EQ(Qp::create(*hca, c, [](Result<std::unique_ptr<Qp>>) {}), KBV_ERR_LIMIT_EXCEEDED);
  c.max_recv_sge = 1;
  c.max_send_wr = 1u << 16;  // > 2^log_max_qp_sz
  EXPECT_EQ(Qp::create(*hca, c, [](Result<std::unique_ptr<Qp>>) {}), KBV_ERR_LIMIT_EXCEEDED);
  c.max_send_wr = 8;
  c.st = prm::qpc_st::kXrc;
  EXPECT_EQ(Qp::create(*hca, c, [](Result<std::unique_ptr<Qp>>) {}), KBV_ERR_NOT_SUPPORTED);
  c.st = prm::qpc_st::kRc;
  sfw.fail_opcode = 0x500;
  sfw.fail_status = 0x5;
  auto qp = run<std::unique_ptr<Qp>>([&](auto cb) { return Qp::create(*hca, c, cb); });
  EXPECT_EQ(qp.status(), KBV_ERR_FW_BAD_RESOURCE);
  EXPECT_EQ(dev.live_dma(), baseline);
  EXPECT_EQ(sfw.opcodes().back(), 0x500u);
}

TEST_F(QpTest, SrqQpHasNoOwnReceiveQueue) {
  QpConfig c;
  c.srqn = 3;
  c.max_send_wr = 4;
  auto qp = run<std::unique_ptr<Qp>>([&](auto cb) { return Qp::create(*hca, c, cb); });
  ASSERT_TRUE(qp.has_value());
  EXPECT_EQ((*qp)->rq_wqes(), 0u);
  EXPECT_EQ((*qp)->sq_offset(), 0u);
  ASSERT_TRUE(run_status([&](auto cb) { return (*qp)->destroy(cb); }).is_ok());
}

TEST(RocePath, FromAnIpv4MappedGid) {
  HcaCaps caps;
  RoceDest d;
  d.dgid = ipv4_mapped_gid(127, 0, 0, 9);
  d.sgid_index = 2;
  d.dmac = 0x026b62760009ull;
  d.hop_limit = 17;
  d.flow_label = 0x12345;
  EXPECT_TRUE(is_ipv4_mapped(d.dgid));
  EXPECT_FALSE(is_ipv4_mapped(Gid{0xfe, 0x80}));
  cmd::AddressPath p = roce_path(caps, d, 0x10, 0x20);
  EXPECT_TRUE(p.grh);
  EXPECT_EQ(p.src_addr_index, 2u);
  EXPECT_EQ(p.rgid[10], 0xffu);
  EXPECT_EQ(p.rgid[15], 9u);
  EXPECT_EQ(p.rmac, 0x026b62760009ull);
  EXPECT_EQ(p.hop_limit, 17u);
  EXPECT_EQ(p.flow_label, 0x12345u);
  EXPECT_EQ(p.vhca_port_num, 1u);
  EXPECT_EQ(p.udp_sport, roce_udp_sport(caps, 0x10, 0x20));
  // rdma_calc_flow_label(0x10, 0x20) = 0x200; sport = 0xC000 | 0x200.
  EXPECT_EQ(roce_udp_sport(caps, 0x10, 0x20), 0xC200u);
  d.udp_sport = 50000;
  EXPECT_EQ(roce_path(caps, d, 1, 2).udp_sport, 50000u);
  // Folded into the device's advertised range.
  caps.r_roce_min_src_udp_port = 0x1000;
  caps.r_roce_max_src_udp_port = 0x10FF;
  const uint16_t s = roce_udp_sport(caps, 0x10, 0x20);
  EXPECT_GE(s, 0x1000u);
  EXPECT_LE(s, 0x10FFu);
}

}  // namespace
}  // namespace kbv::hca::test
