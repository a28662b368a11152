// SPDX-License-Identifier: BSD-3-Clause
//
// End to end: partitions (IBTA 10.9) on two model HCAs — the port's P_Key
// table through kbv_port_query_pkey (QUERY_HCA_VPORT_PKEY), a QP's
// pkey_index choosing the BTH P_Key it sends, and a request whose P_Key
// does not match the receiving QP's dropped and counted (IBTA 10.9.3).
#include <gtest/gtest.h>
#include <kbv/kbv.h>

#include <cstring>
#include <vector>

#include "verbs_fixture.hpp"

namespace kbv::test {
namespace {

struct End {
  SimDev* d = nullptr;
  kbv_pd_t pd = 0;
  kbv_cq_t cq = 0;
  kbv_qp_t qp = 0;
  uint32_t qpn = 0;
  kbv_mr_t mr = 0;
  uint32_t lkey = 0;
  kbv_ah_t ah = 0;
  std::vector<uint8_t> buf = std::vector<uint8_t>(4096);
};

class VerbsPkey : public VerbsE2e {
 protected:
  void open_end(End& e) {
    e.d = &open_dev();
    e.pd = alloc_pd(*e.d);
    e.cq = make_cq(*e.d);
    ASSERT_EQ(
        kbv_mr_reg(e.pd, e.buf.data(), e.buf.size(), KBV_ACCESS_LOCAL_WRITE, KBV_EQ_NONE, 0, &e.mr),
        KBV_SUCCESS);
    ASSERT_EQ(kbv_mr_get_keys(e.mr, &e.lkey, nullptr), KBV_SUCCESS);
    e.qp = make_qp(e.pd, KBV_QPT_UD, e.cq, e.cq);
    ASSERT_EQ(kbv_qp_get_num(e.qp, &e.qpn), KBV_SUCCESS);
  }
  void TearDown() override {
    for (End* e : {&a_, &b_}) {
      if (e->qp) {
        EXPECT_EQ(kbv_qp_destroy(e->qp, KBV_EQ_NONE, 0), KBV_SUCCESS);
      }
      if (e->ah) {
        EXPECT_EQ(kbv_ah_destroy(e->ah, KBV_EQ_NONE, 0), KBV_SUCCESS);
      }
      if (e->cq) {
        EXPECT_EQ(kbv_cq_destroy(e->cq, KBV_EQ_NONE, 0), KBV_SUCCESS);
      }
      if (e->mr) {
        EXPECT_EQ(kbv_mr_dereg(e->mr, KBV_EQ_NONE, 0), KBV_SUCCESS);
      }
      if (e->pd) {
        EXPECT_EQ(kbv_pd_dealloc(e->pd, KBV_EQ_NONE, 0), KBV_SUCCESS);
      }
    }
    VerbsE2e::TearDown();
  }
  // One UD SEND of 64 bytes of `fillb` from a to b.
  void send(uint64_t id, uint8_t fillb) {
    std::memset(a_.buf.data(), fillb, 64);
    kbv_sge_t s{reinterpret_cast<uint64_t>(a_.buf.data()), 64, a_.lkey};
    kbv_send_wr_t w{};
    w.wr_id = id;
    w.opcode = KBV_WR_SEND;
    w.flags = KBV_SEND_SIGNALED;
    w.sg_list = &s;
    w.num_sge = 1;
    w.ah = a_.ah;
    w.remote_qpn = b_.qpn;
    w.remote_qkey = 0x11111111;
    ASSERT_EQ(kbv_post_send(a_.qp, &w, 1, nullptr), KBV_SUCCESS);
    kbv_wc_t wc{};
    const auto until = std::chrono::steady_clock::now() + 10s;
    int n = 0;
    while ((n = kbv_poll_cq(a_.cq, &wc, 1)) == 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(20us);
    ASSERT_EQ(n, 1);
    EXPECT_EQ(wc.status, KBV_SUCCESS);  // UD: sent is done, delivered or not
  }
  // Waits until the receiving model counted `want` violations in all.
  bool wait_violations(uint32_t want) {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (b_.d->model->pkey_violations() < want && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(50us);
    return b_.d->model->pkey_violations() >= want;
  }
  End a_, b_;
};

TEST_F(VerbsPkey, TableQueriesThroughQueryHcaVportPkey) {
  SimDev& d = open_dev();
  uint16_t pk = 1;
  ASSERT_EQ(kbv_port_query_pkey(d.dev, 1, 0, &pk, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(pk, 0xFFFF);  // the default P_Key (IBTA 10.9.1.1)
  ASSERT_EQ(kbv_port_query_pkey(d.dev, 1, 5, &pk, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(pk, 0);  // unset: invalid
  ASSERT_EQ(d.model->set_pkey(5, 0x8123), KBV_SUCCESS);
  ASSERT_EQ(kbv_port_query_pkey(d.dev, 1, 5, &pk, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(pk, 0x8123);
  ASSERT_EQ(d.model->set_pkey(127, 0x0042), KBV_SUCCESS);
  ASSERT_EQ(kbv_port_query_pkey(d.dev, 1, 127, &pk, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(pk, 0x0042);
  EXPECT_EQ(d.model->set_pkey(128, 1), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_port_query_pkey(d.dev, 1, 128, &pk, KBV_EQ_NONE, 0), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_port_query_pkey(d.dev, 2, 0, &pk, KBV_EQ_NONE, 0), KBV_ERR_INVALID_PORT);
  EXPECT_EQ(kbv_port_query_pkey(d.dev, 1, 0, nullptr, KBV_EQ_NONE, 0), KBV_ERR_INVALID_ARGUMENT);
  // Asynchronously: the event's info is the P_Key.
  kbv_eq_t eq = make_eq();
  ASSERT_EQ(kbv_port_query_pkey(d.dev, 1, 5, &pk, eq, 9), KBV_PENDING);
  kbv_event_t ev = wait_event(eq);
  EXPECT_EQ(ev.status, KBV_SUCCESS);
  EXPECT_EQ(ev.info, 0x8123u);
  // A QP's pkey_index must lie in the table.
  kbv_pd_t pd = alloc_pd(d);
  kbv_cq_t cq = make_cq(d);
  kbv_qp_t qp = make_qp(pd, KBV_QPT_UD, cq, cq);
  kbv_qp_attr_t qa{};
  qa.qp_state = KBV_QPS_INIT;
  qa.port_num = 1;
  qa.pkey_index = 128;
  qa.qkey = 1;
  EXPECT_EQ(kbv_qp_modify(qp, &qa, KBV_QP_STATE | KBV_QP_PORT | KBV_QP_PKEY_INDEX | KBV_QP_QKEY,
                          KBV_EQ_NONE, 0),
            KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_qp_destroy(qp, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_cq_destroy(cq, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(pd, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST_F(VerbsPkey, MismatchedRequestIsDroppedAndCounted) {
  ASSERT_NO_FATAL_FAILURE(open_end(a_));
  ASSERT_NO_FATAL_FAILURE(open_end(b_));
  // a's entry 1 is partition 0x0001 (full member); b's entry 1 partition 0x0002.
  ASSERT_EQ(a_.d->model->set_pkey(1, 0x8001), KBV_SUCCESS);
  ASSERT_EQ(b_.d->model->set_pkey(1, 0x8002), KBV_SUCCESS);
  ASSERT_EQ(connect(a_.qp, KBV_QPT_UD, *b_.d, b_.qpn, 100, 200, 1), KBV_SUCCESS);
  ASSERT_EQ(connect(b_.qp, KBV_QPT_UD, *a_.d, a_.qpn, 100, 200, 1), KBV_SUCCESS);
  kbv_qp_attr_t qa{};
  ASSERT_EQ(kbv_qp_query(a_.qp, &qa, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(qa.pkey_index, 1);
  kbv_ah_attr_t aa{};
  std::memcpy(aa.dgid, b_.d->port.gids[0].gid, 16);
  aa.dmac = b_.d->port.gids[0].mac;
  ASSERT_EQ(kbv_ah_create(a_.pd, &aa, KBV_EQ_NONE, 0, &a_.ah), KBV_SUCCESS);
  std::vector<kbv_sge_t> rs(4);
  std::vector<kbv_recv_wr_t> rw(4);
  for (int i = 0; i < 4; ++i) {
    rs[i] = {reinterpret_cast<uint64_t>(b_.buf.data()) + 512u * i, 40 + 64, b_.lkey};
    rw[i] = {static_cast<uint64_t>(i), &rs[i], 1, 0};
  }
  ASSERT_EQ(kbv_post_recv(b_.qp, rw.data(), 4, nullptr), KBV_SUCCESS);
  const uint32_t v0 = b_.d->model->pkey_violations();

  // Different partitions: dropped on b's wire side, counted, no completion.
  ASSERT_NO_FATAL_FAILURE(send(1, 0x11));
  ASSERT_TRUE(wait_violations(v0 + 1));
  // Both limited members of one partition (bit 15 clear on both): dropped too.
  ASSERT_EQ(a_.d->model->set_pkey(1, 0x0002), KBV_SUCCESS);
  ASSERT_EQ(b_.d->model->set_pkey(1, 0x0002), KBV_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(send(2, 0x22));
  ASSERT_TRUE(wait_violations(v0 + 2));
  // A full member and a limited member of one partition: delivered.
  ASSERT_EQ(a_.d->model->set_pkey(1, 0x8002), KBV_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(send(3, 0x33));
  kbv_wc_t wc{};
  const auto until = std::chrono::steady_clock::now() + 10s;
  int n = 0;
  while ((n = kbv_poll_cq(b_.cq, &wc, 1)) == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(20us);
  ASSERT_EQ(n, 1);
  EXPECT_EQ(wc.status, KBV_SUCCESS);
  EXPECT_EQ(wc.wr_id, 0u);  // the first receive: the dropped ones consumed none
  EXPECT_EQ(b_.buf[40], 0x33);
  EXPECT_EQ(b_.buf[40 + 63], 0x33);
  EXPECT_EQ(b_.d->model->pkey_violations(), v0 + 2);
  EXPECT_EQ(kbv_poll_cq(b_.cq, &wc, 1), 0);
}

}  // namespace
}  // namespace kbv::test
