// SPDX-License-Identifier: BSD-3-Clause
//
// Command trace of the model firmware: one record per executed command —
// slot, opcode name and value, op_mod, delivery status, command status and
// syndrome, and the raw input and output as a hex dump (16 bytes a line,
// repeated lines folded into "*" as hexdump(1) does).
//
// Enabled per Firmware (FwConfig::trace) or for every model in the process by
// KBV_SIM_CMD_TRACE=1 in the environment. Lines go to the sink, by default
// kbv's log handler at info level, component "sim.fw.cmd" (emitted whatever
// KBV_LOG_LEVEL says: asking for the trace is asking to see it).
//
// Every line starts with the device the record is from, when the firmware
// has one (FwConfig::trace_device; a model: its PCI address and name), so the
// interleaved trace of several HCAs reads per device (grep the address):
//   [fffe:00:01.0 sim:0] slot 0 ENABLE_HCA (0x104) op_mod 0x0 inlen 16 outlen 16 -> OK (0x0)
//   syndrome 0x0 [fffe:00:01.0 sim:0]   in  0000: 01 04 00 00 00 00 00 00 00 00 00 00 00 00 00 00
//   [fffe:00:01.0 sim:0]   out 0000: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
//
// Threading: record() is called on the firmware thread; the sink must be
// thread-safe if shared between models.
#pragma once

#include "sim/fw/registry.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kbv::sim::fw {

class CmdTrace {
 public:
  using Sink = std::function<void(std::string_view line)>;

  // True when KBV_SIM_CMD_TRACE is set to a value other than "" or "0".
  static bool env_enabled();

  explicit CmdTrace(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  void set_enabled(bool on) { enabled_.store(on, std::memory_order_relaxed); }
  // Set before start() or while no command is in flight.
  void set_sink(Sink s) { sink_ = std::move(s); }
  // The device label each line starts with ("" = none); set like the sink.
  void set_device(std::string label) { prefix_ = label.empty() ? "" : "[" + label + "] "; }

  // A command that was executed (delivery == 0) or refused by the transport
  // (delivery != 0: no status, no output).
  void record(unsigned slot, uint16_t opcode, uint16_t op_mod, uint8_t delivery, Outcome o,
              std::span<const std::byte> in, std::span<const std::byte> out) const;

  // The hex dump lines of `b`, each prefixed by `prefix` (exposed for tests).
  static std::vector<std::string> hexdump(std::string_view prefix, std::span<const std::byte> b);

 private:
  void emit(std::string_view line) const;

  std::atomic<bool> enabled_;
  Sink sink_;
  std::string prefix_;  // "[<device>] " or empty
};

}  // namespace kbv::sim::fw
