// SPDX-License-Identifier: BSD-3-Clause
//
// End to end: the C++ API (include/kbv/kbv.hpp) on model HCAs — RAII
// owners closing in their destructors, kbv::Result errors, std::span
// arguments, asynchronous creation with kbv::Async, release().
#include <gtest/gtest.h>
#include <kbv/kbv.hpp>

#include <thread>

#include "verbs_fixture.hpp"

namespace kbv::test {
namespace {

TEST_F(VerbsE2e, CxxOwnersCreateAndCloseInOrder) {
  const std::string uri = "sim:" + unique_name("cxx");
  auto dev = kbv::Device::open(uri);
  ASSERT_TRUE(dev.has_value()) << dev.status().to_string();
  auto attr = dev->query();
  ASSERT_TRUE(attr.has_value());
  EXPECT_EQ(std::string(attr->uri), uri);
  auto stats = dev->stats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_GT(stats->cmds_completed, 0u);
  uint64_t mr_handle = 0;
  {
    auto pd = dev->alloc_pd();
    ASSERT_TRUE(pd.has_value());
    std::vector<std::byte> buf(8192);
    auto mr = pd->reg_mr(std::span<std::byte>(buf), KBV_ACCESS_LOCAL_WRITE);
    ASSERT_TRUE(mr.has_value());
    EXPECT_NE(mr->lkey(), 0u);
    mr_handle = mr->handle();
    auto cq = dev->create_cq({.cqe = 32, .flags = 0, .event_eq = 0});
    ASSERT_TRUE(cq.has_value());
    kbv_wc_t wc[4];
    auto n = cq->poll(wc);
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(*n, 0u);
    kbv_qp_init_attr_t qa{};
    qa.qp_type = KBV_QPT_RC;
    qa.send_cq = qa.recv_cq = cq->handle();
    qa.cap = {8, 8, 1, 1, 0};
    auto qp = pd->create_qp(qa);
    ASSERT_TRUE(qp.has_value());
    auto num = qp->num();
    ASSERT_TRUE(num.has_value());
    EXPECT_NE(*num, 0u);
    auto q = qp->query();
    ASSERT_TRUE(q.has_value());
    EXPECT_EQ(q->qp_state, static_cast<uint32_t>(KBV_QPS_RESET));
    // Errors come back as values.
    auto bad = pd->reg_mr(nullptr, 0, 0);
    EXPECT_FALSE(bad.has_value());
    EXPECT_EQ(bad.status(), KBV_ERR_INVALID_ARGUMENT);
    kbv_qp_attr_t x{};
    x.qp_state = KBV_QPS_RTS;
    EXPECT_EQ(qp->modify(x, KBV_QP_STATE), KBV_ERR_INVALID_QP_STATE);
    // Leaving the scope destroys qp, cq, mr, pd (reverse declaration order).
  }
  EXPECT_EQ(kbv_mr_get_keys(mr_handle, nullptr, nullptr), KBV_ERR_INVALID_HANDLE);
  EXPECT_TRUE(dev->close().is_ok());
  EXPECT_FALSE(*dev);
  EXPECT_TRUE(dev->close().is_ok()) << "nothing owned: nothing to do";
}

TEST_F(VerbsE2e, CxxAsyncCreationAndRelease) {
  auto eq = kbv::EventQueue::create(64);
  ASSERT_TRUE(eq.has_value());
  const std::string uri = "sim:" + unique_name("cxxa");
  auto events = kbv::EventQueue::create(16);  // port events apart from the requests
  ASSERT_TRUE(events.has_value());
  kbv_device_open_attr_t oa{};
  oa.event_eq = events->handle();
  auto dev = kbv::Device::open(uri, &oa, {eq->handle(), 1});
  ASSERT_TRUE(dev.has_value());
  EXPECT_NE(dev->handle(), 0u);
  kbv_event_t ev{};
  auto wait = [&] {
    const auto end = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < end) {
      auto n = eq->poll(std::span<kbv_event_t>(&ev, 1));
      // Requests only: the device's port-state event shares the queue.
      if (n && *n == 1 && ev.type == KBV_EVENT_REQUEST) return true;
      std::this_thread::sleep_for(20us);
    }
    return false;
  };
  ASSERT_TRUE(wait());
  EXPECT_EQ(ev.user_data, 1u);
  EXPECT_EQ(ev.status, KBV_SUCCESS);
  auto pd = dev->alloc_pd({eq->handle(), 2});
  ASSERT_TRUE(pd.has_value());
  ASSERT_TRUE(wait());
  EXPECT_EQ(ev.user_data, 2u);
  EXPECT_EQ(ev.object, pd->handle());
  // release(): the handle is the caller's to close through the C API.
  const uint64_t raw = pd->release();
  EXPECT_FALSE(*pd);
  EXPECT_EQ(kbv_pd_dealloc(raw, KBV_EQ_NONE, 0), KBV_SUCCESS);
  // A refused asynchronous close keeps the object owned.
  EXPECT_EQ(dev->close({0xbad00001, 3}), KBV_ERR_INVALID_HANDLE);
  EXPECT_TRUE(*dev);
  EXPECT_TRUE(dev->close({eq->handle(), 3}).is_pending());
  EXPECT_FALSE(*dev);
  ASSERT_TRUE(wait());
  EXPECT_EQ(ev.user_data, 3u);
  EXPECT_EQ(ev.status, KBV_SUCCESS);
}

}  // namespace
}  // namespace kbv::test
