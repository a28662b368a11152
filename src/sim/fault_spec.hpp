// SPDX-License-Identifier: BSD-3-Clause
//
// KBV_SIM_FAULTS: fault injection for every model HCA a process creates
// (sim::Model::create reads it, so kbv.h "sim:" devices, the libibverbs layer
// and the LD_PRELOAD model all see it; README "Fault injection").
//
// The spec is a comma-separated list of key=value, parsed strictly: an
// unknown key, a repeated key (cmd_fail excepted), a value that is not
// entirely a number of the right kind or is out of range, or an empty item
// is an error that names the item — never ignored.
//
//   drop=P  reorder=P  dup=P  corrupt=P   wire faults on each port's transmit
//                          side, probabilities in [0, 1] per datagram
//                          (wire/faults.hpp; `duplicate` is a synonym of dup)
//   reorder_depth=K        a reordered datagram goes out after K more (1..64,
//                          default 1)
//   seed=N                 the PRNG seed (decimal or 0x hex, default 1); each
//                          model mixes its name into it (seed_for_model), so
//                          two models of a process differ and a re-run with
//                          the same names repeats the decisions
//   cmd_delay_us=N         every firmware command takes N us longer
//                          (0..10,000,000)
//   cmd_fail=OP[:STATUS[:COUNT]]
//                          the firmware fails commands with opcode OP (PRM
//                          opcode, decimal or 0x hex, < 0x10000) with STATUS
//                          (PRM command status, 1..0xff, default 0x3
//                          BAD_PARAM; syndrome kCmdFailSyndrome), COUNT times
//                          (default: every time); may be given up to 8 times
//   fatal_after_ms=N       the device reports a fatal health syndrome (FW
//                          error 0x1, ext_synd kFatalExtSyndrome) N ms after
//                          its first INIT_HCA (1..86,400,000)
//
// An empty or unset KBV_SIM_FAULTS means no faults.
//
// Threading: pure functions.
#pragma once

#include "sim/wire/faults.hpp"

#include <kbv/status.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kbv::sim {

inline constexpr const char* kFaultsEnv = "KBV_SIM_FAULTS";
inline constexpr uint32_t kCmdFailSyndrome = 0x5eed0001;  // in every injected failure
inline constexpr uint16_t kFatalExtSyndrome = 0x5eed;
inline constexpr size_t kMaxCmdFail = 8;

struct CmdFailSpec {
  uint16_t opcode = 0;
  uint8_t status = 0x3;  // PRM BAD_PARAM
  uint32_t times = ~0u;  // ~0u: every time (fw::Firmware::kForever)
};

struct FaultSpec {
  wire::FaultConfig wire;                  // seed: as given (see seed_for_model)
  std::chrono::microseconds cmd_delay{0};  // added to every command
  std::vector<CmdFailSpec> cmd_fail;
  std::chrono::milliseconds fatal_after{0};  // 0 = never
  bool any() const {
    return wire.enabled() || cmd_delay.count() > 0 || !cmd_fail.empty() || fatal_after.count() > 0;
  }
};

// Parses `spec`. KBV_ERR_INVALID_ARGUMENT with `*error` (when non-null) set
// to a sentence naming the offending item.
Result<FaultSpec> parse_fault_spec(std::string_view spec, std::string* error = nullptr);

// Reads and parses KBV_SIM_FAULTS (unset or empty: a spec with no faults).
// Errors as parse_fault_spec, the message prefixed with the variable's name.
Result<FaultSpec> fault_spec_from_env(std::string* error = nullptr);

// The seed model `name` uses: seed mixed with the FNV-1a hash of the name.
uint64_t seed_for_model(uint64_t seed, std::string_view name);

}  // namespace kbv::sim
