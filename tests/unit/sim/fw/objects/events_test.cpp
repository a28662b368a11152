// SPDX-License-Identifier: BSD-3-Clause
// Object events through the EQ writer (src/sim/fw/objects/events.cpp).
#include "fw_obj_support.hpp"

#include "hca/prm/eqe.hpp"
#include "sim/fw/objects/events.hpp"

namespace kbv::sim::fw::objtest {
namespace {

class EventsTest : public ObjFixture {
 protected:
  // An EQ of 64 entries subscribed to `types`; returns its buffer IOVA.
  uint64_t subscribed_eq(std::initializer_list<prm::EventType> types, uint32_t* eqn) {
    const uint64_t buf = host_->dma().alloc(4096);
    for (int i = 0; i < 64; ++i) host_->dma().host(buf)[i * 64 + 63] = std::byte{1};
    auto in = cmd<prm::create_eq_in>(Opcode::CREATE_EQ, 0, 8);
    prm::Ref<prm::create_eq_in> c(in.data());
    c.at(prm::create_eq_in::eq_context_entry).set(prm::eqc::log_eq_size, 6);
    c.at(prm::create_eq_in::eq_context_entry).set(prm::eqc::uar_page, uar_);
    for (prm::EventType t : types)
      c.set(prm::create_eq_in::event_bitmask, prm::event_word(t),
            c.get(prm::create_eq_in::event_bitmask, prm::event_word(t)) | prm::event_bit(t));
    c.set(prm::create_eq_in::pas, 0, buf);
    Reply r = exec(in, 16);
    EXPECT_EQ(r.status(), 0);
    *eqn = field(r, prm::create_eq_out::eq_number);
    return buf;
  }
  prm::CRef<prm::eqe> eqe(uint64_t buf, uint32_t i) {
    return prm::CRef<prm::eqe>(host_->dma().host(buf) + 64 * i);
  }
};

TEST_F(EventsTest, CompletionGoesToTheNamedEq) {
  uint32_t eqn = 0;
  const uint64_t buf = subscribed_eq({}, &eqn);
  ASSERT_TRUE(post_completion_event(fw_->context().eqs(), eqn, 0x1234).is_ok());
  auto e = eqe(buf, 0);
  EXPECT_EQ(e.get(prm::eqe::owner), 0u);
  EXPECT_EQ(e.get(prm::eqe::type), prm::to_u8(prm::EventType::COMP));
  EXPECT_EQ(prm::CRef<prm::eqe_comp>(e.bytes(prm::eqe::data).data()).get(prm::eqe_comp::cqn),
            0x1234u);
  EXPECT_EQ(post_completion_event(fw_->context().eqs(), eqn + 10, 1).code(), KBV_ERR_NOT_FOUND);
}

TEST_F(EventsTest, CqErrorAndQueueEventsGoToSubscribers) {
  // Nobody subscribed yet: the event is lost.
  EXPECT_EQ(post_cq_error(fw_->context().eqs(), 5, prm::CqErrSyndrome::CQ_OVERRUN).code(),
            KBV_ERR_NOT_FOUND);
  uint32_t eqn = 0;
  const uint64_t buf = subscribed_eq(
      {prm::EventType::CQ_ERROR, prm::EventType::WQ_ACCESS_ERROR, prm::EventType::SRQ_RQ_LIMIT},
      &eqn);
  EqTable& eqs = fw_->context().eqs();
  ASSERT_TRUE(post_cq_error(eqs, 5, prm::CqErrSyndrome::CQ_ACCESS_VIOLATION_ERROR).is_ok());
  ASSERT_TRUE(post_queue_event(eqs, prm::EventType::WQ_ACCESS_ERROR, 0x77).is_ok());
  ASSERT_TRUE(post_queue_event(eqs, prm::EventType::SRQ_RQ_LIMIT, 9).is_ok());
  EXPECT_EQ(post_queue_event(eqs, prm::EventType::CMD, 1).code(), KBV_ERR_INVALID_ARGUMENT);

  auto e0 = eqe(buf, 0);
  EXPECT_EQ(e0.get(prm::eqe::type), prm::to_u8(prm::EventType::CQ_ERROR));
  prm::CRef<prm::eqe_cq_err> ce(e0.bytes(prm::eqe::data).data());
  EXPECT_EQ(ce.get(prm::eqe_cq_err::cqn), 5u);
  EXPECT_EQ(ce.get(prm::eqe_cq_err::syndrome),
            static_cast<uint8_t>(prm::CqErrSyndrome::CQ_ACCESS_VIOLATION_ERROR));
  auto e1 = eqe(buf, 1);
  EXPECT_EQ(e1.get(prm::eqe::type), prm::to_u8(prm::EventType::WQ_ACCESS_ERROR));
  prm::CRef<prm::eqe_qp_srq> qe(e1.bytes(prm::eqe::data).data());
  EXPECT_EQ(qe.get(prm::eqe_qp_srq::qp_srq_n), 0x77u);
  EXPECT_EQ(qe.get(prm::eqe_qp_srq::type), static_cast<uint8_t>(prm::EventQueueType::QP));
  auto e2 = eqe(buf, 2);
  EXPECT_EQ(e2.get(prm::eqe::type), prm::to_u8(prm::EventType::SRQ_RQ_LIMIT));
  EXPECT_EQ(
      prm::CRef<prm::eqe_qp_srq>(e2.bytes(prm::eqe::data).data()).get(prm::eqe_qp_srq::qp_srq_n),
      9u);
}

}  // namespace
}  // namespace kbv::sim::fw::objtest
