// SPDX-License-Identifier: BSD-3-Clause
//
// Command tracing for lab bring-up (docs/DESIGN.md "Command tracing"): every
// completion is logged at debug level under component "cmd" with opcode
// name, op_mod, status, syndrome and latency; at trace level the raw input
// (on posting) and output (on completion) are dumped as hex, 16 bytes a line.
// Enable with KBV_LOG_LEVEL=debug / trace. Costs one relaxed atomic load per
// command when disabled.
//
// Threading: stateless; safe from any thread (log.hpp serializes output).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "hca/cmdq/cmdq.hpp"

namespace kbv::hca {

void trace_cmd_input(uint32_t slot, uint8_t token, std::span<const std::byte> in);
void trace_cmd_completion(uint32_t slot, const CmdCompletion& c);

// A process-wide observer of every command completion of every CmdQueue
// (kbv_set_cmd_observer, kbv-lab bringup): called from
// trace_cmd_completion, on the thread driving the queue. Empty = none.
// Installing it is thread-safe; an observer being replaced may still run
// once on another thread.
void set_cmd_observer(std::function<void(const CmdCompletion&)> fn);

// "0000: 01 04 00 00 ..." lines (16 bytes per line, offset prefix).
std::string hex_dump(std::span<const std::byte> bytes);

}  // namespace kbv::hca
