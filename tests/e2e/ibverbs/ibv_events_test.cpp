// SPDX-License-Identifier: BSD-3-Clause
//
// kbv's libibverbs: completion channels (poll/epoll on the fd, blocking and
// O_NONBLOCK ibv_get_cq_event, acknowledgements) and async events
// (src/ibverbs/cq.cpp, async.cpp) on a model HCA.
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "ibv_fixture.hpp"

namespace kbv::ibvtest {
namespace {

void set_nonblock(int fd) { ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0); }

bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

class IbvEventsTest : public IbvTest {
 protected:
  // An RC QP connected to itself, its CQ on a channel.
  void SetUp() override {
    IbvTest::SetUp();
    ch_ = ibv_create_comp_channel(ctx_);
    ASSERT_NE(ch_, nullptr) << std::strerror(errno);
    buf_.resize(4096);
    mr_ = make_mr(buf_);
    cq_ = make_cq(64, ch_, &cq_tag_);
    qp_ = make_qp(IBV_QPT_RC, cq_, cq_);
    ASSERT_TRUE(mr_ && cq_ && qp_);
    ASSERT_EQ(to_init(qp_), 0);
    ASSERT_EQ(connect(qp_, qp_->qp_num), 0);
  }

  void TearDown() override {
    IbvTest::TearDown();  // destroys the CQ first
    if (ch_) {
      EXPECT_EQ(ibv_destroy_comp_channel(ch_), 0);
    }
  }

  void post_write() {
    ibv_sge s{reinterpret_cast<uintptr_t>(buf_.data()), 64, mr_->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(buf_.data()) + 2048;
    wr.wr.rdma.rkey = mr_->rkey;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(qp_, &wr, &bad), 0);
  }

  ibv_comp_channel* ch_ = nullptr;
  std::vector<uint8_t> buf_;
  ibv_mr* mr_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  int cq_tag_ = 0;
};

TEST_F(IbvEventsTest, ChannelFdPollsReadableOnCompletion) {
  EXPECT_FALSE(readable(ch_->fd, 0));
  ASSERT_EQ(ibv_req_notify_cq(cq_, 0), 0);
  EXPECT_EQ(ibv_req_notify_cq(cq_, 0), 0);  // arming again is harmless
  post_write();
  EXPECT_TRUE(readable(ch_->fd, 10000));
  ibv_cq* ev_cq = nullptr;
  void* ev_ctx = nullptr;
  ASSERT_EQ(ibv_get_cq_event(ch_, &ev_cq, &ev_ctx), 0);
  EXPECT_EQ(ev_cq, cq_);
  EXPECT_EQ(ev_ctx, &cq_tag_);
  ibv_ack_cq_events(cq_, 1);
  EXPECT_EQ(poll_one(cq_).status, IBV_WC_SUCCESS);
  // One event per arm: nothing more waits.
  set_nonblock(ch_->fd);
  errno = 0;
  EXPECT_EQ(ibv_get_cq_event(ch_, &ev_cq, &ev_ctx), -1);
  EXPECT_EQ(errno, EAGAIN);
}

TEST_F(IbvEventsTest, EpollOnChannelFd) {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(ep, 0);
  epoll_event e{};
  e.events = EPOLLIN;
  ASSERT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, ch_->fd, &e), 0);
  EXPECT_EQ(epoll_wait(ep, &e, 1, 0), 0);
  ASSERT_EQ(ibv_req_notify_cq(cq_, 0), 0);
  post_write();
  EXPECT_EQ(epoll_wait(ep, &e, 1, 10000), 1);
  ibv_cq* ev_cq = nullptr;
  void* ev_ctx = nullptr;
  ASSERT_EQ(ibv_get_cq_event(ch_, &ev_cq, &ev_ctx), 0);
  ibv_ack_cq_events(ev_cq, 1);
  EXPECT_EQ(poll_one(cq_).status, IBV_WC_SUCCESS);
  // Drained: the fd is quiet again.
  EXPECT_EQ(epoll_wait(ep, &e, 1, 0), 0);
  close(ep);
}

TEST_F(IbvEventsTest, BlockingGetCqEventReturnsOnTheCompletion) {
  ASSERT_EQ(ibv_req_notify_cq(cq_, 0), 0);
  std::atomic<bool> posted{false}, got{false};
  ibv_cq* ev_cq = nullptr;
  void* ev_ctx = nullptr;
  std::thread waiter([&] {
    const int rc = ibv_get_cq_event(ch_, &ev_cq, &ev_ctx);
    // The call can only have returned because of the completion below.
    EXPECT_TRUE(posted.load());
    EXPECT_EQ(rc, 0);
    got = true;
  });
  EXPECT_FALSE(got.load());
  posted = true;
  post_write();
  waiter.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(ev_cq, cq_);
  ibv_ack_cq_events(cq_, 1);
  EXPECT_EQ(poll_one(cq_).status, IBV_WC_SUCCESS);
}

TEST_F(IbvEventsTest, ChannelInUseIsEbusyAndRefcounted) {
  EXPECT_EQ(ibv_destroy_comp_channel(ch_), EBUSY);  // the CQ uses it
  EXPECT_EQ(ch_->refcnt, 1);
  ASSERT_EQ(ibv_req_notify_cq(cq_, 0), 0);
  post_write();
  ibv_cq* ev_cq = nullptr;
  void* ev_ctx = nullptr;
  ASSERT_EQ(ibv_get_cq_event(ch_, &ev_cq, &ev_ctx), 0);
  EXPECT_EQ(poll_one(cq_).status, IBV_WC_SUCCESS);
  // ibv_destroy_cq returns once the event is acknowledged (rdma-core waits).
  std::atomic<bool> acked{false};
  std::thread acker([&] {
    acked = true;
    ibv_ack_cq_events(cq_, 1);
  });
  forget_qp(qp_);
  ASSERT_EQ(ibv_destroy_qp(qp_), 0);
  forget_cq(cq_);
  ASSERT_EQ(ibv_destroy_cq(cq_), 0);
  EXPECT_TRUE(acked.load());
  acker.join();
  EXPECT_EQ(ch_->refcnt, 0);
}

TEST_F(IbvTest, AsyncFdNonBlockingWhenEmpty) {
  set_nonblock(ctx_->async_fd);
  // Nothing happened on the device: no event waits (the open's own link-up
  // is not reported, as a kernel driver had the port up before).
  EXPECT_FALSE(readable(ctx_->async_fd, 0));
  ibv_async_event ev{};
  errno = 0;
  EXPECT_EQ(ibv_get_async_event(ctx_, &ev), -1);
  EXPECT_EQ(errno, EAGAIN);
}

// A CQ overrun is an async event on the CQ (IBV_EVENT_CQ_ERR, element.cq);
// the CQ's destroy counts the acknowledgement.
TEST_F(IbvTest, CqOverrunIsAnAsyncEvent) {
  std::vector<uint8_t> buf(4096);
  ibv_mr* mr = make_mr(buf);
  ibv_cq* small = ibv_create_cq(ctx_, 1, nullptr, nullptr, 0);
  ASSERT_NE(small, nullptr);
  ibv_cq* rcq = make_cq();
  ibv_qp* qp = make_qp(IBV_QPT_RC, small, rcq);
  ASSERT_TRUE(mr && qp);
  ASSERT_EQ(to_init(qp), 0);
  ASSERT_EQ(connect(qp, qp->qp_num), 0);
  // More signalled completions than the CQ holds, none polled.
  const int n = small->cqe + 4;
  for (int i = 0; i < n; ++i) {
    ibv_sge sg{reinterpret_cast<uintptr_t>(buf.data()), 8, mr->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sg;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(buf.data()) + 1024;
    wr.wr.rdma.rkey = mr->rkey;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(qp, &wr, &bad), 0);
  }
  ibv_async_event ev{};
  do {
    ASSERT_EQ(ibv_get_async_event(ctx_, &ev), 0);                     // blocks until it arrives
    if (ev.event_type != IBV_EVENT_CQ_ERR) ibv_ack_async_event(&ev);  // e.g. the QP's error
  } while (ev.event_type != IBV_EVENT_CQ_ERR);
  EXPECT_EQ(ev.element.cq, small);
  ibv_ack_async_event(&ev);
  EXPECT_EQ(small->async_events_completed, 1u);
  forget_qp(qp);
  ASSERT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_cq(small), 0);
}

// IBTA 10.2.9.4: the SRQ limit event fires once when fewer WQEs than the
// limit remain; the limit then reads 0.
TEST_F(IbvTest, SrqLimitReachedIsAnAsyncEvent) {
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 16;
  sa.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(pd_, &sa);
  ASSERT_NE(srq, nullptr);
  std::vector<uint8_t> buf(8192);
  ibv_mr* mr = make_mr(buf);
  ibv_cq* cq = make_cq();
  ibv_qp* rq = make_qp(IBV_QPT_RC, cq, cq, srq);
  ibv_qp* sq = make_qp(IBV_QPT_RC, cq, cq);
  ASSERT_TRUE(mr && cq && rq && sq);
  ASSERT_EQ(to_init(rq), 0);
  ASSERT_EQ(to_init(sq), 0);
  ASSERT_EQ(connect(rq, sq->qp_num), 0);
  ASSERT_EQ(connect(sq, rq->qp_num), 0);
  constexpr int kPosted = 6;
  for (int i = 0; i < kPosted; ++i) {
    ibv_sge s{reinterpret_cast<uintptr_t>(buf.data()) + 64 * i, 64, mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = static_cast<uint64_t>(i);
    wr.sg_list = &s;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_srq_recv(srq, &wr, &bad), 0);
  }
  ibv_srq_attr lim{};
  lim.srq_limit = 4;
  ASSERT_EQ(ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT), 0);
  // Three sends leave 3 < 4 receives.
  for (int i = 0; i < 3; ++i) {
    ibv_sge s{reinterpret_cast<uintptr_t>(buf.data()) + 4096, 16, mr->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(sq, &wr, &bad), 0);
  }
  for (int i = 0; i < 6; ++i) EXPECT_EQ(poll_one(cq).status, IBV_WC_SUCCESS);
  ibv_async_event ev{};
  ASSERT_EQ(ibv_get_async_event(ctx_, &ev), 0);  // blocks until it arrives
  EXPECT_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
  EXPECT_EQ(ev.element.srq, srq);
  ibv_ack_async_event(&ev);
  ibv_srq_attr q{};
  ASSERT_EQ(ibv_query_srq(srq, &q), 0);
  EXPECT_EQ(q.srq_limit, 0u);
  forget_qp(rq);
  ASSERT_EQ(ibv_destroy_qp(rq), 0);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);  // its event was acknowledged: no wait
}

}  // namespace
}  // namespace kbv::ibvtest
