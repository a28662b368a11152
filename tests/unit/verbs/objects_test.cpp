// SPDX-License-Identifier: BSD-3-Clause
// src/verbs/objects.cpp: PD, MR, CQ, SRQ and AH argument checks against the
// device's limits, and object lifetime: a handle stops resolving at its
// close, a parent closed before its children finishes with the last child
// (kbv.h "Close").
#include <gtest/gtest.h>
#include <kbv/kbv.h>

#include <cstring>
#include <vector>

#include "model_fixture.hpp"

namespace kbv::test {
namespace {

using VerbsObjects = ModelDevice;

TEST_F(VerbsObjects, MemoryRegionArguments) {
  kbv_pd_t p = pd();
  std::vector<char> buf(4096);
  kbv_mr_t mr = 0;
  EXPECT_EQ(kbv_mr_reg(p, nullptr, 64, 0, KBV_EQ_NONE, 0, &mr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_mr_reg(p, buf.data(), 0, 0, KBV_EQ_NONE, 0, &mr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_mr_reg(p, buf.data(), 64, 1u << 9, KBV_EQ_NONE, 0, &mr), KBV_ERR_INVALID_ARGUMENT);
  // IBTA 10.6.3.1: remote write and atomic need local write.
  EXPECT_EQ(kbv_mr_reg(p, buf.data(), 64, KBV_ACCESS_REMOTE_WRITE, KBV_EQ_NONE, 0, &mr),
            KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_mr_reg(p, buf.data(), 64, KBV_ACCESS_REMOTE_ATOMIC, KBV_EQ_NONE, 0, &mr),
            KBV_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(kbv_mr_reg(p, buf.data(), buf.size(), KBV_ACCESS_REMOTE_READ, KBV_EQ_NONE, 0, &mr),
            KBV_SUCCESS);
  uint32_t lkey = 0, rkey = 0;
  ASSERT_EQ(kbv_mr_get_keys(mr, &lkey, &rkey), KBV_SUCCESS);
  kbv_mr_t mr2 = 0;
  ASSERT_EQ(kbv_mr_reg(p, buf.data(), 64, KBV_ACCESS_LOCAL_WRITE | KBV_ACCESS_REMOTE_WRITE,
                       KBV_EQ_NONE, 0, &mr2),
            KBV_SUCCESS);
  uint32_t lkey2 = 0, rkey2 = 0;
  ASSERT_EQ(kbv_mr_get_keys(mr2, &lkey2, &rkey2), KBV_SUCCESS);
  EXPECT_NE(lkey, lkey2);  // two memory keys
  EXPECT_EQ(kbv_mr_dereg(mr2, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_mr_get_keys(mr2, &lkey2, &rkey2), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_mr_dereg(mr, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(p, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST_F(VerbsObjects, AParentClosedFirstFinishesWithItsLastChild) {
  kbv_pd_t p = pd();
  std::vector<char> buf(256);
  kbv_mr_t mr = 0;
  ASSERT_EQ(kbv_mr_reg(p, buf.data(), buf.size(), 0, KBV_EQ_NONE, 0, &mr), KBV_SUCCESS);
  // The PD still has an MR: the synchronous close is pending, the handle is gone.
  EXPECT_EQ(kbv_pd_dealloc(p, KBV_EQ_NONE, 0), KBV_PENDING);
  kbv_mr_t mr2 = 0;
  EXPECT_EQ(kbv_mr_reg(p, buf.data(), 64, 0, KBV_EQ_NONE, 0, &mr2), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_pd_dealloc(p, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
  // The child keeps working until it is closed.
  uint32_t lkey = 0, rkey = 0;
  EXPECT_EQ(kbv_mr_get_keys(mr, &lkey, &rkey), KBV_SUCCESS);
  EXPECT_EQ(kbv_mr_dereg(mr, KBV_EQ_NONE, 0), KBV_SUCCESS);

  // A CQ closed under a QP: the QP keeps it; a new QP cannot name it.
  kbv_pd_t p2 = pd();
  kbv_cq_t c = cq();
  kbv_qp_init_attr_t qa = qp_attr(KBV_QPT_RC, c, c);
  kbv_qp_t qp = 0;
  ASSERT_EQ(kbv_qp_create(p2, &qa, KBV_EQ_NONE, 0, &qp), KBV_SUCCESS);
  EXPECT_EQ(kbv_cq_destroy(c, KBV_EQ_NONE, 0), KBV_PENDING);
  kbv_qp_t qp2 = 0;
  EXPECT_EQ(kbv_qp_create(p2, &qa, KBV_EQ_NONE, 0, &qp2), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_qp_destroy(qp, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(p2, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST_F(VerbsObjects, AnAsyncCloseWithChildrenCompletesWhenTheyAreGone) {
  kbv_eq_t eq = 0;
  ASSERT_EQ(kbv_eq_create(16, &eq), KBV_SUCCESS);
  kbv_pd_t p = pd();
  std::vector<char> buf(256);
  kbv_mr_t mr = 0;
  ASSERT_EQ(kbv_mr_reg(p, buf.data(), buf.size(), 0, KBV_EQ_NONE, 0, &mr), KBV_SUCCESS);
  ASSERT_EQ(kbv_pd_dealloc(p, eq, 0x9d), KBV_PENDING);
  kbv_event_t ev{};
  // Nothing completes while the MR lives (bounded look: the queue stays empty).
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(kbv_eq_poll(eq, &ev, 1), 0);
  ASSERT_EQ(kbv_mr_dereg(mr, eq, 0x3e), KBV_PENDING);
  std::vector<uint64_t> seen;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(next_event(eq, ev));
    EXPECT_EQ(ev.status, KBV_SUCCESS);
    seen.push_back(ev.user_data);
  }
  // The child's close completes before its parent's.
  EXPECT_EQ(seen, (std::vector<uint64_t>{0x3e, 0x9d}));
  EXPECT_EQ(kbv_eq_destroy(eq), KBV_SUCCESS);
}

TEST_F(VerbsObjects, QueueSizesAgainstTheDeviceLimits) {
  kbv_cq_attr_t a{};
  kbv_cq_t c = 0;
  EXPECT_EQ(kbv_cq_create(dev_, &a, KBV_EQ_NONE, 0, &c), KBV_ERR_INVALID_ARGUMENT);  // cqe 0
  a.cqe = attr_.max_cqe + 1;
  EXPECT_EQ(kbv_cq_create(dev_, &a, KBV_EQ_NONE, 0, &c), KBV_ERR_LIMIT_EXCEEDED);
  c = cq(4);
  EXPECT_EQ(kbv_cq_resize(c, 0, KBV_EQ_NONE, 0), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_cq_resize(c, attr_.max_cqe + 1, KBV_EQ_NONE, 0), KBV_ERR_LIMIT_EXCEEDED);
  EXPECT_EQ(kbv_cq_resize(c, 64, KBV_EQ_NONE, 0), KBV_SUCCESS);
  // Arming needs an event queue for its notification.
  EXPECT_EQ(kbv_cq_arm(c, 0, KBV_EQ_NONE, 0), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_cq_destroy(c, KBV_EQ_NONE, 0), KBV_SUCCESS);

  kbv_pd_t p = pd();
  kbv_srq_attr_t s{};
  kbv_srq_t srq = 0;
  s.max_wr = 0;
  s.max_sge = 1;
  EXPECT_EQ(kbv_srq_create(p, &s, KBV_EQ_NONE, 0, &srq), KBV_ERR_INVALID_ARGUMENT);
  s.max_wr = attr_.max_srq_wr + 1;
  EXPECT_EQ(kbv_srq_create(p, &s, KBV_EQ_NONE, 0, &srq), KBV_ERR_LIMIT_EXCEEDED);
  s.max_wr = 16;
  s.srq_limit = 17;  // above the queue
  EXPECT_EQ(kbv_srq_create(p, &s, KBV_EQ_NONE, 0, &srq), KBV_ERR_INVALID_ARGUMENT);
  s.srq_limit = 0;
  ASSERT_EQ(kbv_srq_create(p, &s, KBV_EQ_NONE, 0, &srq), KBV_SUCCESS);
  EXPECT_EQ(kbv_srq_arm(srq, 0, KBV_EQ_NONE, 0), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_srq_destroy(srq, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(p, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST_F(VerbsObjects, AddressHandleArguments) {
  wait_port_active();
  kbv_pd_t p = pd();
  kbv_ah_attr_t a{};
  std::memcpy(a.dgid, port_.gids[0].gid, 16);
  a.dmac = port_.gids[0].mac;
  kbv_ah_t ah = 0;
  a.port_num = static_cast<uint8_t>(attr_.phys_port_cnt + 1);
  EXPECT_EQ(kbv_ah_create(p, &a, KBV_EQ_NONE, 0, &ah), KBV_ERR_INVALID_PORT);
  a.port_num = 1;
  a.flow_label = 1u << 20;  // 20 bits
  EXPECT_EQ(kbv_ah_create(p, &a, KBV_EQ_NONE, 0, &ah), KBV_ERR_INVALID_ARGUMENT);
  a.flow_label = 0;
  a.sl = 8;
  EXPECT_EQ(kbv_ah_create(p, &a, KBV_EQ_NONE, 0, &ah), KBV_ERR_INVALID_ARGUMENT);
  a.sl = 0;
  ASSERT_EQ(kbv_ah_create(p, &a, KBV_EQ_NONE, 0, &ah), KBV_SUCCESS);
  EXPECT_EQ(kbv_ah_destroy(ah, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(p, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

}  // namespace
}  // namespace kbv::test
