// SPDX-License-Identifier: BSD-3-Clause
//
// The firmware's command table: opcode -> handler, and the generic checks the
// firmware applies before any handler runs.
//
// A handler receives the whole command input (the 16 inline bytes and the
// mailbox data, `inlen` bytes, starting with mlx5_ifc.h mbox_in: opcode, uid,
// op_mod) and an output buffer of exactly `outlen` bytes, zero-filled. It
// fills the command-specific part of the output and returns an Outcome (the
// PRM status byte and syndrome); the firmware writes status and syndrome
// into mbox_out itself and, on failure, clears everything after them.
//
// Before a handler runs, the firmware answers on its behalf (PRM "Command
// Interface"; status values mlx5_ifc.h / device.h MLX5_CMD_STAT_*):
// in this order:
//   * no handler for the opcode               -> BAD_OP          (synd::kUnknownOpcode)
//   * inlen  < Handler::min_inlen             -> BAD_INPUT_LEN   (synd::kInputTooShort)
//   * outlen < Handler::min_outlen            -> BAD_OUTPUT_LEN  (synd::kOutputTooShort)
//   * uid != 0 (no DEVX user contexts)        -> BAD_PARAM       (synd::kBadUid)
//   * op_mod not accepted by the handler      -> BAD_PARAM       (synd::kBadOpMod)
//   * state requirement not met               -> BAD_SYS_STATE   (synd::kNotEnabled /
//                                                                 synd::kNotInitialized)
//
// Registration: the Firmware registers the bring-up set at construction;
// further command families register through FwConfig::registrars (or
// Firmware::registry() before start()), e.g.
//
//   void register_cq_commands(kbv::sim::fw::CommandRegistry& r) {
//     r.add(prm::Opcode::CREATE_CQ,
//           Handler::make(min_inlen, min_outlen, Requires::kInitialized, &create_cq));
//   }
//
// Handlers keep their objects in FwContext extensions (context.hpp).
//
// Threading: the registry is filled before the firmware starts and is
// read-only afterwards; handlers run on the firmware thread, one at a time.
#pragma once

#include "hca/prm/opcodes.hpp"

#include <kbv/status.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

namespace kbv::sim::fw {

class FwContext;

// The PRM verdict of one command: mbox_out.status and mbox_out.syndrome.
struct Outcome {
  uint8_t status = 0;  // prm::CmdStatus
  uint32_t syndrome = 0;

  static constexpr Outcome ok() { return {}; }
  static constexpr Outcome fail(prm::CmdStatus s, uint32_t synd) {
    return {static_cast<uint8_t>(s), synd};
  }
  constexpr bool is_ok() const { return status == 0; }
  friend constexpr bool operator==(const Outcome&, const Outcome&) = default;
};

// One decoded command as a handler sees it.
struct Command {
  uint16_t opcode = 0;
  uint16_t op_mod = 0;
  uint16_t uid = 0;
  std::span<const std::byte> in;  // inlen bytes, mbox_in header first
};

// What a command needs of the HCA state (PRM "HCA initialization flow").
enum class Requires : uint8_t {
  kNothing,      // accepted at any time (ENABLE_HCA)
  kEnabled,      // after ENABLE_HCA
  kInitialized,  // after INIT_HCA (and before TEARDOWN_HCA)
};

using HandlerFn = std::function<Outcome(FwContext&, const Command&, std::span<std::byte> out)>;

struct Handler {
  uint32_t min_inlen = 16;   // bytes, mlx5_ifc.h <cmd>_in_bits size (without pas[] tails)
  uint32_t min_outlen = 16;  // bytes, mlx5_ifc.h <cmd>_out_bits size
  Requires state = Requires::kEnabled;
  // The op_mod values the command defines; empty = only 0.
  std::vector<uint16_t> op_mods;
  bool any_op_mod = false;  // op_mod is not interpreted (e.g. NOP)
  HandlerFn fn;

  static Handler make(uint32_t min_inlen, uint32_t min_outlen, Requires state, HandlerFn fn,
                      std::vector<uint16_t> op_mods = {}) {
    Handler h;
    h.min_inlen = min_inlen;
    h.min_outlen = min_outlen;
    h.state = state;
    h.op_mods = std::move(op_mods);
    h.fn = std::move(fn);
    return h;
  }
  // The same, accepting any op_mod (the handler checks it, or it is unused).
  static Handler any_mod(uint32_t min_inlen, uint32_t min_outlen, Requires state, HandlerFn fn) {
    Handler h = make(min_inlen, min_outlen, state, std::move(fn));
    h.any_op_mod = true;
    return h;
  }
};

class CommandRegistry {
 public:
  // KBV_ERR_ALREADY_EXISTS when the opcode has a handler;
  // KBV_ERR_INVALID_ARGUMENT when fn is empty or a minimum length is below
  // 8 bytes of the mbox_in/mbox_out header (opcode..op_mod, status, syndrome).
  Status add(uint16_t opcode, Handler h);
  Status add(prm::Opcode op, Handler h) { return add(prm::to_u16(op), std::move(h)); }
  // Replace (or add) a handler; for tests and fault models.
  Status replace(uint16_t opcode, Handler h);

  const Handler* find(uint16_t opcode) const;
  std::size_t size() const { return table_.size(); }

  // The generic checks above for `cmd` against `h`; Outcome::ok() when the
  // handler may run. `enabled`/`initialized` are the HCA state.
  static Outcome check(const Handler* h, const Command& cmd, std::size_t outlen, bool enabled,
                       bool initialized);

 private:
  std::unordered_map<uint16_t, Handler> table_;
};

}  // namespace kbv::sim::fw
