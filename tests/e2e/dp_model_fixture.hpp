// SPDX-License-Identifier: BSD-3-Clause
//
// Fixture of the in-process data-path tests of the model's transport engine
// (dp_model_*_test.cpp): two model HCAs `a` and `b` brought up by kbv's
// driver (dp_harness.hpp), a registered buffer and a CQ on each, and helpers
// to make connected RC / UC pairs and post work requests.
//
// Threading: the test thread drives both drivers; the models' engines run on
// their firmware threads.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "dp_harness.hpp"
#include "hca/prm/qpc.hpp"

namespace kbv::e2e {

using hca::WcOpcode;
using hca::WrOpcode;
namespace sf = hca::send_flags;

class DpModel : public ::testing::Test {
 protected:
  static constexpr size_t kBuf = 1 << 20;

  struct Side {
    std::unique_ptr<DpNode> node;
    std::unique_ptr<DpBuffer> buf;
    std::unique_ptr<DpCq> cq;
  };

  // Opens both sides (models created with cfg_a / cfg_b).
  void open(sim::ModelConfig cfg_a = {}, sim::ModelConfig cfg_b = {}) {
    static std::atomic<int> n{0};
    const int id = n++;
    for (auto [s, cfg, tag] : {std::tuple{&a, &cfg_a, "a"}, std::tuple{&b, &cfg_b, "b"}}) {
      auto r = open_node(std::string("dp-model-") + tag + std::to_string(id), *cfg);
      ASSERT_TRUE(r.has_value()) << r.status().to_string();
      s->node = std::move(*r);
      using namespace hca::mr_access;
      auto br =
          reg_buffer(*s->node, kBuf, kLocalWrite | kRemoteRead | kRemoteWrite | kRemoteAtomic);
      ASSERT_TRUE(br.has_value()) << br.status().to_string();
      s->buf = std::move(*br);
      auto cr = make_cq(*s->node, 1024);
      ASSERT_TRUE(cr.has_value()) << cr.status().to_string();
      s->cq = std::move(*cr);
    }
  }

  // A connected pair: qa on a, qb on b.
  void pair(uint32_t st, const ConnectOptions& o = {}, const QpOptions& qo = {}) {
    QpOptions x = qo;
    x.st = st;
    auto ra = make_qp(*a.node, *a.cq, *a.cq, x);
    ASSERT_TRUE(ra.has_value()) << ra.status().to_string();
    auto rb = make_qp(*b.node, *b.cq, *b.cq, x);
    ASSERT_TRUE(rb.has_value()) << rb.status().to_string();
    qa = std::move(*ra);
    qb = std::move(*rb);
    Status s = connect_pair(*qa, *qb, o);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
  }

  static Status post_recv(DpQp& q, uint64_t wr_id, hca::Sge sge) {
    hca::RecvWr w;
    w.wr_id = wr_id;
    w.sg = std::span(&sge, 1);
    return q.rq->post(std::span(&w, 1));
  }
  static Status post_send(DpQp& q, hca::SendWr w, hca::Sge sge) {
    w.sg = std::span(&sge, 1);
    return q.sq->post(std::span(&w, 1));
  }
  static hca::SendWr wr(uint64_t id, WrOpcode op, uint32_t flags = sf::kSignaled) {
    hca::SendWr w;
    w.wr_id = id;
    w.opcode = op;
    w.flags = flags;
    return w;
  }
  hca::cmd::QpInfo query(DpQp& q) {
    auto r = q.node->sync<hca::cmd::QpInfo>([&](auto cb) { return q.qp->query(cb); });
    EXPECT_TRUE(r.has_value()) << r.status().to_string();
    return r ? *r : hca::cmd::QpInfo{};
  }
  // Drives the node's driver (events) for `ms`.
  static void pump_events(DpNode& n, int ms) {
    (void)n.poll_until([] { return false; }, uint64_t(ms) * 1'000'000);
  }

  void TearDown() override {
    for (auto* q : {&qa, &qb})
      if (*q) (void)destroy_qp(**q);
    qa.reset();
    qb.reset();
    for (Side* s : {&a, &b}) {
      if (!s->node) continue;
      if (s->cq) (void)s->node->sync_status([&](auto cb) { return s->cq->cq->destroy(cb); });
      s->cq.reset();
      if (s->buf) (void)dereg_buffer(*s->node, *s->buf);
      s->buf.reset();
      (void)close_node(*s->node);
      s->node.reset();
    }
  }

  Side a, b;
  std::unique_ptr<DpQp> qa, qb;
};

}  // namespace kbv::e2e
