// SPDX-License-Identifier: BSD-3-Clause
//
// Fixture for the tests of kbv's libibverbs control path (src/ibverbs): the
// test programs link build/src/ibverbs/libibverbs.so.1 and call it through
// rdma-core's infiniband/verbs.h, as an unmodified program does, on the
// model HCA "sim:0" of this process (KBV_SIM_DEVICES unset: kbv.h
// "Devices").
#pragma once

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

namespace kbv::ibvtest {

// The RoCE v2 GID index of every model HCA (src/ibverbs/query.cpp).
inline constexpr int kGidIndex = 0;

class IbvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    list_ = ibv_get_device_list(&num_);
    ASSERT_NE(list_, nullptr);
    ASSERT_GE(num_, 1);
    ctx_ = ibv_open_device(list_[0]);
    ASSERT_NE(ctx_, nullptr) << std::strerror(errno);
    pd_ = ibv_alloc_pd(ctx_);
    ASSERT_NE(pd_, nullptr) << std::strerror(errno);
    ASSERT_EQ(ibv_query_gid(ctx_, 1, kGidIndex, &gid_), 0);
  }

  void TearDown() override {
    for (auto* q : qps_) EXPECT_EQ(ibv_destroy_qp(q), 0);
    for (auto* c : cqs_) EXPECT_EQ(ibv_destroy_cq(c), 0);
    for (auto* m : mrs_) EXPECT_EQ(ibv_dereg_mr(m), 0);
    if (pd_) {
      EXPECT_EQ(ibv_dealloc_pd(pd_), 0);
    }
    if (ctx_) {
      EXPECT_EQ(ibv_close_device(ctx_), 0);
    }
    if (list_) ibv_free_device_list(list_);
  }

  ibv_cq* make_cq(int cqe = 64, ibv_comp_channel* ch = nullptr, void* cq_context = nullptr) {
    ibv_cq* cq = ibv_create_cq(ctx_, cqe, cq_context, ch, 0);
    EXPECT_NE(cq, nullptr) << std::strerror(errno);
    if (cq) cqs_.push_back(cq);
    return cq;
  }

  ibv_mr* make_mr(std::vector<uint8_t>& buf, int access = IBV_ACCESS_LOCAL_WRITE |
                                                          IBV_ACCESS_REMOTE_WRITE |
                                                          IBV_ACCESS_REMOTE_READ) {
    ibv_mr* mr = ibv_reg_mr(pd_, buf.data(), buf.size(), access);
    EXPECT_NE(mr, nullptr) << std::strerror(errno);
    if (mr) mrs_.push_back(mr);
    return mr;
  }

  ibv_qp* make_qp(ibv_qp_type type, ibv_cq* scq, ibv_cq* rcq, ibv_srq* srq = nullptr) {
    ibv_qp_init_attr a{};
    a.send_cq = scq;
    a.recv_cq = rcq;
    a.srq = srq;
    a.qp_type = type;
    a.cap = ibv_qp_cap{16, 16, 1, 1, 0};
    ibv_qp* qp = ibv_create_qp(pd_, &a);
    EXPECT_NE(qp, nullptr) << std::strerror(errno);
    if (qp) qps_.push_back(qp);
    return qp;
  }

  // Drops qp from the list TearDown destroys (the test destroys it itself).
  void forget_qp(ibv_qp* qp) { std::erase(qps_, qp); }
  void forget_cq(ibv_cq* cq) { std::erase(cqs_, cq); }

  int to_init(ibv_qp* qp) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if (qp->qp_type == IBV_QPT_UD) {
      a.qkey = 0x11111111;
      mask |= IBV_QP_QKEY;
    } else {
      a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
      mask |= IBV_QP_ACCESS_FLAGS;
    }
    return ibv_modify_qp(qp, &a, mask);
  }

  // RC/UC: INIT -> RTR -> RTS towards remote_qpn on this device's GID.
  int connect(ibv_qp* qp, uint32_t remote_qpn) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = remote_qpn;
    a.rq_psn = 0x123;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = gid_;
    a.ah_attr.grh.sgid_index = kGidIndex;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = 1;
    int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    if (qp->qp_type == IBV_QPT_RC) {
      a.max_dest_rd_atomic = 1;
      a.min_rnr_timer = 12;
      mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
    if (int e = ibv_modify_qp(qp, &a, mask); e != 0) return e;
    ibv_qp_attr r{};
    r.qp_state = IBV_QPS_RTS;
    r.sq_psn = 0x123;
    mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (qp->qp_type == IBV_QPT_RC) {
      r.timeout = 14;
      r.retry_cnt = 7;
      r.rnr_retry = 7;
      r.max_rd_atomic = 1;
      mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    }
    return ibv_modify_qp(qp, &r, mask);
  }

  // Polls cq until one completion arrives (the model completes work on its
  // own threads: a spin on the completion, no sleeping). The bound only turns
  // a lost completion into a failure instead of a hang.
  ibv_wc poll_one(ibv_cq* cq) {
    ibv_wc wc{};
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < give_up) {
      const int n = ibv_poll_cq(cq, 1, &wc);
      if (n != 0) {
        EXPECT_EQ(n, 1);
        return wc;
      }
    }
    ADD_FAILURE() << "no completion";
    wc.status = IBV_WC_GENERAL_ERR;
    return wc;
  }

  ibv_device** list_ = nullptr;
  int num_ = 0;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_gid gid_{};
  std::vector<ibv_qp*> qps_;
  std::vector<ibv_cq*> cqs_;
  std::vector<ibv_mr*> mrs_;
};

}  // namespace kbv::ibvtest
