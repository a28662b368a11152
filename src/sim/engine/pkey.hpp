// SPDX-License-Identifier: BSD-3-Clause
//
// Partitions in the engine (IBTA 10.9): the P_Key a QP's packets carry in
// their BTH — the port table's entry at the QP's pkey_index (qpc
// primary_address_path.pkey_index; tables.hpp PortState::pkeys) — and the
// check a received request passes (IBTA 10.9.3 "P_Key matching").
#pragma once

#include <cstdint>

#include "sim/fw/objects/tables.hpp"

namespace kbv::sim::engine {

// The P_Key of q's packets (0, an invalid P_Key, for an entry never set).
inline uint16_t qp_pkey(const fw::PortState& port, const fw::Qp& q) {
  return port.pkey(q.path.pkey_index);
}

// IBTA 10.9.3: two P_Keys match when their base (low 15 bits) is equal and
// not 0, and at least one of them is a full member (bit 15 set).
inline bool pkey_match(uint16_t a, uint16_t b) {
  constexpr uint16_t kBase = 0x7FFF, kFull = 0x8000;
  return (a & kBase) != 0 && (a & kBase) == (b & kBase) && ((a | b) & kFull) != 0;
}

}  // namespace kbv::sim::engine
