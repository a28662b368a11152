// SPDX-License-Identifier: BSD-3-Clause
//
// The object events the data-path engine raises, as EQEs through the
// firmware's EQ writer (sim/fw/eq.hpp; layouts prm/eqe.hpp from device.h
// mlx5_eqe_comp / mlx5_eqe_cq_err / mlx5_eqe_qp_srq):
//   * completion (type 0x00) to the CQ's EQ (cqc.c_eqn), data cqn;
//   * CQ error (0x04): data cqn and syndrome (overrun / access violation);
//   * QP and SRQ events (0x01-0x03, 0x05, 0x07, 0x10-0x14): data type and
//     the QP / SRQ number.
// Errors and queue events go to the EQ subscribed to their type (CREATE_EQ
// event_bitmask); none subscribed: KBV_ERR_NOT_FOUND (the event is lost, as
// on silicon). The state changes that go with them (QP to ERR, SRQ limit
// disarmed, CQ status) are the engine's, in the object tables.
//
// Threading: any thread (EqTable is thread-safe); the values come from the
// caller, no table is read.
#pragma once

#include "hca/prm/eqe.hpp"
#include "sim/fw/eq.hpp"

#include <kbv/status.hpp>

#include <cstdint>

namespace kbv::sim::fw {

Status post_completion_event(EqTable& eqs, uint32_t eqn, uint32_t cqn);
Status post_cq_error(EqTable& eqs, uint32_t cqn, prm::CqErrSyndrome syndrome);
// type must be a QP / SRQ event type (see above), else KBV_ERR_INVALID_ARGUMENT.
Status post_queue_event(EqTable& eqs, prm::EventType type, uint32_t number,
                        prm::EventQueueType queue = prm::EventQueueType::QP);

}  // namespace kbv::sim::fw
