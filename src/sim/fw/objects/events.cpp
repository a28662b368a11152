// SPDX-License-Identifier: BSD-3-Clause
#include "sim/fw/objects/events.hpp"

#include <array>

namespace kbv::sim::fw {

namespace {
using Data = std::array<std::byte, prm::kEqeDataBits / 8>;
using prm::EventType;
}  // namespace

Status post_completion_event(EqTable& eqs, uint32_t eqn, uint32_t cqn) {
  Data d{};
  prm::Ref<prm::eqe_comp>(d.data()).set(prm::eqe_comp::cqn, cqn);
  return eqs.post_to(eqn, EventType::COMP, 0, d);
}

Status post_cq_error(EqTable& eqs, uint32_t cqn, prm::CqErrSyndrome syndrome) {
  Data d{};
  prm::Ref<prm::eqe_cq_err> e(d.data());
  e.set(prm::eqe_cq_err::cqn, cqn);
  e.set(prm::eqe_cq_err::syndrome, static_cast<uint8_t>(syndrome));
  return eqs.post_event(EventType::CQ_ERROR, 0, d);
}

Status post_queue_event(EqTable& eqs, EventType type, uint32_t number, prm::EventQueueType queue) {
  if (prm::event_data(type) != prm::EventData::kQpSrq) return KBV_ERR_INVALID_ARGUMENT;
  Data d{};
  prm::Ref<prm::eqe_qp_srq> e(d.data());
  e.set(prm::eqe_qp_srq::type, static_cast<uint8_t>(queue));
  e.set(prm::eqe_qp_srq::qp_srq_n, number);
  return eqs.post_event(type, 0, d);
}

}  // namespace kbv::sim::fw
