// SPDX-License-Identifier: BSD-3-Clause
//
// CREATE_EQ 0x301, DESTROY_EQ 0x302, QUERY_EQ 0x303 (hca/prm/eq.hpp from
// mlx5_ifc.h eqc / create_eq_in/out / destroy_eq_in / query_eq_in/out).
//
// Threading: as CmdQueue.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "hca/cmd/exec.hpp"
#include "hca/prm/eqe.hpp"

namespace kbv::hca::cmd {

struct CreateEqAttr {
  uint32_t log_eq_size = 0;                 // log2 of the number of 64-B EQEs
  uint32_t uar = 0;                         // UAR page whose doorbell arms the EQ (eqc.uar_page)
  uint32_t intr = 0;                        // MSI-X vector (eqc.intr)
  uint32_t log_page_size = 0;               // log2(page size / 4 KiB) of pas[]
  std::array<uint64_t, 4> event_bitmask{};  // word t/64 bit t%64 = event type t
  std::vector<uint64_t> pas;                // page IOVAs of the EQ buffer
  // Adds event type t to the bitmask.
  CreateEqAttr& event(prm::EventType t) {
    event_bitmask[prm::event_word(t)] |= prm::event_bit(t);
    return *this;
  }
};
// Result: the EQN.
Status create_eq(CmdQueue& q, const CreateEqAttr& a, Done<uint32_t> done);
Status destroy_eq(CmdQueue& q, uint32_t eqn, DoneStatus done);

struct EqInfo {
  uint32_t status = 0;  // prm::EqcStatus
  uint32_t st = 0;      // prm::EqcSt
  uint32_t log_eq_size = 0;
  uint32_t uar_page = 0;
  uint32_t intr = 0;
  uint32_t consumer_counter = 0;
  uint32_t producer_counter = 0;
  uint64_t event_bitmask = 0;  // types 0..63
};
Status query_eq(CmdQueue& q, uint32_t eqn, Done<EqInfo> done);

}  // namespace kbv::hca::cmd
