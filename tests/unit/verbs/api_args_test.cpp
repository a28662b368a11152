// SPDX-License-Identifier: BSD-3-Clause
// include/kbv/kbv.h argument validation without a device: every call with
// an invalid, stale or wrong-kind handle, or a missing output, returns its
// specific status (never crashes); the additions to EventQueue (abandon) and
// Object (two-step finalization) the API is built on.
#include <gtest/gtest.h>
#include <kbv/kbv.h>

#include "verbs/event_queue.hpp"
#include "verbs/request.hpp"

namespace kbv::verbs {
namespace {

constexpr uint64_t kBogus = 0x0000000500000003ull;  // never issued

TEST(KbvApiArgs, InvalidHandlesEverywhere) {
  EXPECT_EQ(kbv_api_version(), KBV_API_VERSION);
  kbv_eq_t eq = 0;
  ASSERT_EQ(kbv_eq_create(8, &eq), KBV_SUCCESS);
  for (uint64_t h : {uint64_t{0}, kBogus, uint64_t{eq}}) {  // an EQ handle is no object
    kbv_device_attr_t da;
    kbv_port_attr_t pa;
    kbv_device_stats_t ds;
    uint64_t out = 1;
    int fd = 0;
    EXPECT_EQ(kbv_device_close(h, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_device_query(h, &da, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_port_query(h, 1, &pa, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_device_get_stats(h, &ds), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_device_progress(h), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_device_start_progress_thread(h), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_device_stop_progress_thread(h), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_device_get_fd(h, &fd), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_pd_alloc(h, KBV_EQ_NONE, 0, &out), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_pd_dealloc(h, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
    char buf[16];
    EXPECT_EQ(kbv_mr_reg(h, buf, sizeof buf, 0, KBV_EQ_NONE, 0, &out), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_mr_dereg(h, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
    uint32_t k;
    EXPECT_EQ(kbv_mr_get_keys(h, &k, &k), KBV_ERR_INVALID_HANDLE);
    kbv_cq_attr_t ca{};
    ca.cqe = 4;
    EXPECT_EQ(kbv_cq_create(h, &ca, KBV_EQ_NONE, 0, &out), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_cq_resize(h, 8, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_cq_destroy(h, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_cq_arm(h, 0, eq, 1), KBV_ERR_INVALID_HANDLE);
    kbv_srq_attr_t sa{};
    sa.max_wr = sa.max_sge = 1;
    EXPECT_EQ(kbv_srq_create(h, &sa, KBV_EQ_NONE, 0, &out), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_srq_arm(h, 1, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_srq_destroy(h, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
    kbv_ah_attr_t aa{};
    EXPECT_EQ(kbv_ah_create(h, &aa, KBV_EQ_NONE, 0, &out), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_ah_destroy(h, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
    kbv_qp_init_attr_t qa{};
    qa.qp_type = KBV_QPT_RC;
    EXPECT_EQ(kbv_qp_create(h, &qa, KBV_EQ_NONE, 0, &out), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_qp_destroy(h, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_qp_get_num(h, &k), KBV_ERR_INVALID_HANDLE);
    kbv_qp_attr_t qx{};
    EXPECT_EQ(kbv_qp_modify(h, &qx, KBV_QP_STATE, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_qp_query(h, &qx, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
    const uint8_t g[16] = {0xff};
    EXPECT_EQ(kbv_qp_attach_mcast(h, g, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_qp_detach_mcast(h, g, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
    kbv_send_wr_t sw{};
    kbv_recv_wr_t rw{};
    kbv_wc_t wc;
    uint32_t bad;
    EXPECT_EQ(kbv_post_send(h, &sw, 1, &bad), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_post_recv(h, &rw, 1, &bad), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_post_srq_recv(h, &rw, 1, &bad), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(kbv_poll_cq(h, &wc, 1), KBV_ERR_INVALID_HANDLE);
    EXPECT_EQ(out, 0u) << "an output handle is cleared or untouched-as-0 on failure";
    out = 1;
  }
  uint32_t n = 0;
  EXPECT_EQ(kbv_cancel_object(kBogus, &n), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_eq_destroy(eq), KBV_SUCCESS);
}

TEST(KbvApiArgs, MissingOutputs) {
  EXPECT_EQ(kbv_get_device_list(nullptr, 0, nullptr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_device_open("sim:x", nullptr, KBV_EQ_NONE, 0, nullptr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_pd_alloc(kBogus, KBV_EQ_NONE, 0, nullptr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_mr_reg(kBogus, nullptr, 0, 0, KBV_EQ_NONE, 0, nullptr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_cq_create(kBogus, nullptr, KBV_EQ_NONE, 0, nullptr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_qp_create(kBogus, nullptr, KBV_EQ_NONE, 0, nullptr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_ah_create(kBogus, nullptr, KBV_EQ_NONE, 0, nullptr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_srq_create(kBogus, nullptr, KBV_EQ_NONE, 0, nullptr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_qp_get_num(kBogus, nullptr), KBV_ERR_INVALID_ARGUMENT);
}

TEST(EventQueueAbandon, WithdrawsABegunRequestWithoutAnEvent) {
  auto eq = *EventQueue::create(1);
  auto t = eq->begin(5, KBV_EVENT_REQUEST, 0);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(eq->begin(6, KBV_EVENT_REQUEST, 0).status(), KBV_ERR_QUEUE_FULL);
  EXPECT_EQ(EventQueue::abandon(*t), KBV_SUCCESS);
  kbv_event_t ev;
  EXPECT_EQ(eq->poll(&ev, 1), 0u);
  // Its room and its user_data are free again.
  auto t2 = eq->begin(5, KBV_EVENT_REQUEST, 0);
  ASSERT_TRUE(t2.has_value());
  EXPECT_EQ(EventQueue::abandon(*t), KBV_ERR_NOT_FOUND) << "an old ticket names nothing";
  EXPECT_EQ(EventQueue::complete(*t2, KBV_SUCCESS, 0, 0), KBV_SUCCESS);
  EXPECT_EQ(EventQueue::abandon(*t2), KBV_ERR_NOT_FOUND) << "already completed";
  EXPECT_EQ(eq->poll(&ev, 1), 1u);
}

TEST(ObjectDeferredFinal, CloseCompletesOnlyAfterFinishFinal) {
  auto eq = *EventQueue::create(4);
  int started = 0;
  std::shared_ptr<Object> o;
  o = Object::create_deferred([&] { ++started; });
  ASSERT_TRUE(o);
  const uint64_t h = o->handle();
  ASSERT_EQ(o->close(eq, 9), KBV_PENDING);
  EXPECT_EQ(started, 1);
  kbv_event_t ev;
  EXPECT_EQ(eq->poll(&ev, 1), 0u) << "destroy still running";
  EXPECT_EQ(Object::from_handle(h), o);
  EXPECT_TRUE(o->closing());
  o->finish_final();
  ASSERT_EQ(eq->poll(&ev, 1), 1u);
  EXPECT_EQ(ev.user_data, 9u);
  EXPECT_EQ(ev.status, KBV_SUCCESS);
  EXPECT_EQ(ev.object, h);
  EXPECT_EQ(Object::from_handle(h), nullptr);
}

}  // namespace
}  // namespace kbv::verbs
