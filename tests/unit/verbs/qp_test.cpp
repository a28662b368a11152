// SPDX-License-Identifier: BSD-3-Clause
// src/verbs/qp.cpp: creation checks, the IBTA state machine (10.3.1, the
// attr_mask each transition requires and allows), attribute range checks,
// the state kbv reports after each transition, and multicast on UD only.
#include <gtest/gtest.h>
#include <kbv/kbv.h>

#include <cstring>
#include <vector>

#include "model_fixture.hpp"

namespace kbv::test {
namespace {

class VerbsQp : public ModelDevice {
 protected:
  void SetUp() override {
    ModelDevice::SetUp();
    pd_ = pd();
    cq_ = cq();
  }
  void TearDown() override {
    for (kbv_qp_t q : qps_) (void)kbv_qp_destroy(q, KBV_EQ_NONE, 0);
    (void)kbv_cq_destroy(cq_, KBV_EQ_NONE, 0);
    (void)kbv_pd_dealloc(pd_, KBV_EQ_NONE, 0);
    ModelDevice::TearDown();
  }
  kbv_qp_t make(uint32_t type) {
    kbv_qp_init_attr_t a = qp_attr(type, cq_, cq_);
    kbv_qp_t q = 0;
    EXPECT_EQ(kbv_qp_create(pd_, &a, KBV_EQ_NONE, 0, &q), KBV_SUCCESS);
    qps_.push_back(q);
    return q;
  }
  static kbv_status_t modify(kbv_qp_t q, const kbv_qp_attr_t& a, uint32_t mask) {
    return kbv_qp_modify(q, &a, mask, KBV_EQ_NONE, 0);
  }
  static uint32_t state_of(kbv_qp_t q) {
    kbv_qp_attr_t out{};
    EXPECT_EQ(kbv_qp_query(q, &out, KBV_EQ_NONE, 0), KBV_SUCCESS);
    return out.qp_state;
  }
  static constexpr uint32_t kInitMask =
      KBV_QP_STATE | KBV_QP_PORT | KBV_QP_PKEY_INDEX | KBV_QP_ACCESS_FLAGS;
  static kbv_qp_attr_t init_attr() {
    kbv_qp_attr_t a{};
    a.qp_state = KBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = KBV_ACCESS_REMOTE_READ;
    return a;
  }

  kbv_pd_t pd_ = 0;
  kbv_cq_t cq_ = 0;
  std::vector<kbv_qp_t> qps_;
};

TEST_F(VerbsQp, CreateChecks) {
  kbv_qp_init_attr_t a = qp_attr(KBV_QPT_RC, cq_, cq_);
  kbv_qp_t q = 0;
  EXPECT_EQ(kbv_qp_create(pd_, nullptr, KBV_EQ_NONE, 0, &q), KBV_ERR_INVALID_ARGUMENT);
  a.qp_type = 99;
  EXPECT_EQ(kbv_qp_create(pd_, &a, KBV_EQ_NONE, 0, &q), KBV_ERR_INVALID_ARGUMENT);
  a.qp_type = KBV_QPT_RC;
  a.cap.max_send_wr = 0;
  EXPECT_EQ(kbv_qp_create(pd_, &a, KBV_EQ_NONE, 0, &q), KBV_ERR_INVALID_ARGUMENT);
  a.cap.max_send_wr = attr_.max_qp_wr + 1;
  EXPECT_EQ(kbv_qp_create(pd_, &a, KBV_EQ_NONE, 0, &q), KBV_ERR_LIMIT_EXCEEDED);
  a.cap.max_send_wr = 8;
  a.send_cq = 0;
  EXPECT_EQ(kbv_qp_create(pd_, &a, KBV_EQ_NONE, 0, &q), KBV_ERR_INVALID_ARGUMENT);
  a.send_cq = pd_;  // a handle of another kind
  EXPECT_EQ(kbv_qp_create(pd_, &a, KBV_EQ_NONE, 0, &q), KBV_ERR_INVALID_HANDLE);
  a.send_cq = cq_;
  a.sq_sig_all = 2;
  EXPECT_EQ(kbv_qp_create(pd_, &a, KBV_EQ_NONE, 0, &q), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(q, KBV_HANDLE_NONE);
  q = make(KBV_QPT_RC);
  uint32_t qpn = 0;
  EXPECT_EQ(kbv_qp_get_num(q, &qpn), KBV_SUCCESS);
  EXPECT_NE(qpn, 0u);
  EXPECT_LE(qpn, 0xFFFFFFu);
  EXPECT_EQ(kbv_qp_get_num(q, nullptr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(state_of(q), static_cast<uint32_t>(KBV_QPS_RESET));
}

TEST_F(VerbsQp, TransitionsRequireTheirAttributes) {
  kbv_qp_t q = make(KBV_QPT_RC);
  kbv_qp_attr_t a = init_attr();
  // KBV_QP_STATE is always required; unknown mask bits are refused.
  EXPECT_EQ(modify(q, a, kInitMask & ~KBV_QP_STATE), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(modify(q, a, kInitMask | (1u << 30)), KBV_ERR_INVALID_ARGUMENT);
  // RESET -> INIT on RC needs the port, the P_Key index and the access flags...
  EXPECT_EQ(modify(q, a, kInitMask & ~KBV_QP_ACCESS_FLAGS), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(modify(q, a, kInitMask & ~KBV_QP_PORT), KBV_ERR_INVALID_ARGUMENT);
  // ... and takes nothing else (the Q_Key is UD's).
  EXPECT_EQ(modify(q, a, kInitMask | KBV_QP_QKEY), KBV_ERR_INVALID_ARGUMENT);
  // RESET -> RTR / RTS skip states.
  a.qp_state = KBV_QPS_RTS;
  EXPECT_EQ(modify(q, a, KBV_QP_STATE), KBV_ERR_INVALID_QP_STATE);
  EXPECT_EQ(state_of(q), static_cast<uint32_t>(KBV_QPS_RESET));  // refusals change nothing
  a = init_attr();
  a.port_num = 0;
  EXPECT_EQ(modify(q, a, kInitMask), KBV_ERR_INVALID_PORT);
  a.port_num = 1;
  a.qp_access_flags = 1u << 6;
  EXPECT_EQ(modify(q, a, kInitMask), KBV_ERR_INVALID_ARGUMENT);
  a.qp_access_flags = KBV_ACCESS_REMOTE_READ;
  ASSERT_EQ(modify(q, a, kInitMask), KBV_SUCCESS);
  EXPECT_EQ(state_of(q), static_cast<uint32_t>(KBV_QPS_INIT));
  // INIT -> INIT takes them as optional.
  ASSERT_EQ(modify(q, a, KBV_QP_STATE), KBV_SUCCESS);
  // INIT -> RTS skips RTR; RTS -> SQD is not supported.
  a.qp_state = KBV_QPS_RTS;
  EXPECT_EQ(modify(q, a, KBV_QP_STATE | KBV_QP_SQ_PSN), KBV_ERR_INVALID_QP_STATE);
  a.qp_state = KBV_QPS_SQD;
  EXPECT_EQ(modify(q, a, KBV_QP_STATE), KBV_ERR_NOT_SUPPORTED);
  // Any state -> ERR -> RESET, then INIT again.
  a.qp_state = KBV_QPS_ERR;
  ASSERT_EQ(modify(q, a, KBV_QP_STATE), KBV_SUCCESS);
  EXPECT_EQ(state_of(q), static_cast<uint32_t>(KBV_QPS_ERR));
  a.qp_state = KBV_QPS_RESET;
  ASSERT_EQ(modify(q, a, KBV_QP_STATE), KBV_SUCCESS);
  EXPECT_EQ(state_of(q), static_cast<uint32_t>(KBV_QPS_RESET));
  a = init_attr();
  EXPECT_EQ(modify(q, a, kInitMask), KBV_SUCCESS);
  a.qp_state = 99;
  EXPECT_EQ(modify(q, a, KBV_QP_STATE), KBV_ERR_INVALID_ARGUMENT);
}

TEST_F(VerbsQp, RcConnectsToItselfThroughRtrAndRts) {
  wait_port_active();
  kbv_qp_t q = make(KBV_QPT_RC);
  uint32_t qpn = 0;
  ASSERT_EQ(kbv_qp_get_num(q, &qpn), KBV_SUCCESS);
  kbv_qp_attr_t a = init_attr();
  ASSERT_EQ(modify(q, a, kInitMask), KBV_SUCCESS);
  a.qp_state = KBV_QPS_RTR;
  a.path_mtu = KBV_MTU_1024;
  a.dest_qp_num = qpn;
  a.rq_psn = 5;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  std::memcpy(a.ah_attr.dgid, port_.gids[0].gid, 16);
  a.ah_attr.dmac = port_.gids[0].mac;
  const uint32_t rtr = KBV_QP_STATE | KBV_QP_AV | KBV_QP_PATH_MTU | KBV_QP_DEST_QPN |
                       KBV_QP_RQ_PSN | KBV_QP_MAX_DEST_RD_ATOMIC | KBV_QP_MIN_RNR_TIMER;
  // RC's RTR needs the responder's resources and RNR timer.
  EXPECT_EQ(modify(q, a, rtr & ~KBV_QP_MIN_RNR_TIMER), KBV_ERR_INVALID_ARGUMENT);
  // 24-bit PSNs and QPNs, MTU 256..4096, RNR timer 0..31.
  a.rq_psn = 1u << 24;
  EXPECT_EQ(modify(q, a, rtr), KBV_ERR_INVALID_ARGUMENT);
  a.rq_psn = 5;
  a.dest_qp_num = 1u << 24;
  EXPECT_EQ(modify(q, a, rtr), KBV_ERR_INVALID_ARGUMENT);
  a.dest_qp_num = qpn;
  a.path_mtu = KBV_MTU_4096 + 1;
  EXPECT_EQ(modify(q, a, rtr), KBV_ERR_INVALID_ARGUMENT);
  a.path_mtu = KBV_MTU_1024;
  a.min_rnr_timer = 32;
  EXPECT_EQ(modify(q, a, rtr), KBV_ERR_INVALID_ARGUMENT);
  a.min_rnr_timer = 12;
  a.max_dest_rd_atomic = attr_.max_qp_rd_atom + 1;
  EXPECT_EQ(modify(q, a, rtr), KBV_ERR_LIMIT_EXCEEDED);
  a.max_dest_rd_atomic = 1;
  ASSERT_EQ(modify(q, a, rtr), KBV_SUCCESS);
  EXPECT_EQ(state_of(q), static_cast<uint32_t>(KBV_QPS_RTR));

  a.qp_state = KBV_QPS_RTS;
  a.sq_psn = 5;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  const uint32_t rts = KBV_QP_STATE | KBV_QP_SQ_PSN | KBV_QP_TIMEOUT | KBV_QP_RETRY_CNT |
                       KBV_QP_RNR_RETRY | KBV_QP_MAX_QP_RD_ATOMIC;
  a.retry_cnt = 8;
  EXPECT_EQ(modify(q, a, rts), KBV_ERR_INVALID_ARGUMENT);
  a.retry_cnt = 7;
  a.timeout = 32;
  EXPECT_EQ(modify(q, a, rts), KBV_ERR_INVALID_ARGUMENT);
  a.timeout = 14;
  EXPECT_EQ(modify(q, a, rts & ~KBV_QP_TIMEOUT), KBV_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(modify(q, a, rts), KBV_SUCCESS);
  kbv_qp_attr_t out{};
  ASSERT_EQ(kbv_qp_query(q, &out, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(out.qp_state, static_cast<uint32_t>(KBV_QPS_RTS));
  EXPECT_EQ(out.dest_qp_num, qpn);
  EXPECT_EQ(out.path_mtu, static_cast<uint32_t>(KBV_MTU_1024));
  // RTS -> RTS takes only optional attributes.
  a.qp_state = KBV_QPS_RTS;
  EXPECT_EQ(modify(q, a, KBV_QP_STATE | KBV_QP_SQ_PSN), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(modify(q, a, KBV_QP_STATE | KBV_QP_MIN_RNR_TIMER), KBV_SUCCESS);
}

TEST_F(VerbsQp, UdTakesAQkeyAndMulticast) {
  kbv_qp_t ud = make(KBV_QPT_UD);
  kbv_qp_attr_t a{};
  a.qp_state = KBV_QPS_INIT;
  a.port_num = 1;
  a.qkey = 0x11111111;
  const uint32_t m = KBV_QP_STATE | KBV_QP_PORT | KBV_QP_PKEY_INDEX | KBV_QP_QKEY;
  EXPECT_EQ(modify(ud, a, (m & ~KBV_QP_QKEY) | KBV_QP_ACCESS_FLAGS), KBV_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(modify(ud, a, m), KBV_SUCCESS);
  a.qp_state = KBV_QPS_RTR;
  ASSERT_EQ(modify(ud, a, KBV_QP_STATE), KBV_SUCCESS);  // UD's RTR needs no path
  a.qp_state = KBV_QPS_RTS;
  a.sq_psn = 0;
  ASSERT_EQ(modify(ud, a, KBV_QP_STATE | KBV_QP_SQ_PSN), KBV_SUCCESS);

  uint8_t mgid[16] = {0xff, 0x0e};  // a multicast GID: first byte 0xff
  mgid[15] = 1;
  uint8_t ucast[16] = {0xfe, 0x80};
  EXPECT_EQ(kbv_qp_attach_mcast(ud, ucast, KBV_EQ_NONE, 0), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_qp_attach_mcast(ud, nullptr, KBV_EQ_NONE, 0), KBV_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(kbv_qp_attach_mcast(ud, mgid, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_qp_detach_mcast(ud, mgid, KBV_EQ_NONE, 0), KBV_SUCCESS);
  kbv_qp_t rc = make(KBV_QPT_RC);
  EXPECT_EQ(kbv_qp_attach_mcast(rc, mgid, KBV_EQ_NONE, 0), KBV_ERR_NOT_SUPPORTED);
}

TEST_F(VerbsQp, DestroyedHandleStopsResolving) {
  kbv_qp_t q = make(KBV_QPT_UC);
  qps_.clear();
  ASSERT_EQ(kbv_qp_destroy(q, KBV_EQ_NONE, 0), KBV_SUCCESS);
  uint32_t qpn = 0;
  EXPECT_EQ(kbv_qp_get_num(q, &qpn), KBV_ERR_INVALID_HANDLE);
  kbv_qp_attr_t a = init_attr();
  EXPECT_EQ(modify(q, a, kInitMask), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_qp_destroy(q, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
}

}  // namespace
}  // namespace kbv::test
