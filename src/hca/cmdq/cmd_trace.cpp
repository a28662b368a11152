// SPDX-License-Identifier: BSD-3-Clause
#include "hca/cmdq/cmd_trace.hpp"

#include "common/log.hpp"
#include "hca/prm/opcodes.hpp"

#include <atomic>
#include <memory>
#include <mutex>

namespace kbv::hca {

namespace {
constexpr const char* kLog = "cmd";

struct Observer {
  std::atomic<bool> on{false};
  std::mutex mu;
  std::shared_ptr<const std::function<void(const CmdCompletion&)>> fn;
};
Observer& observer() {
  static Observer* o = new Observer();  // never destroyed: safe during exit
  return *o;
}
}  // namespace

void set_cmd_observer(std::function<void(const CmdCompletion&)> fn) {
  Observer& o = observer();
  std::lock_guard lk(o.mu);
  o.fn = fn ? std::make_shared<const std::function<void(const CmdCompletion&)>>(std::move(fn))
            : nullptr;
  o.on.store(o.fn != nullptr, std::memory_order_release);
}

std::string hex_dump(std::span<const std::byte> bytes) {
  std::string s;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i % 16 == 0) s += fmt::format("{}{:04x}:", i ? "\n" : "", i);
    s += fmt::format(" {:02x}", static_cast<unsigned>(bytes[i]));
  }
  return s;
}

void trace_cmd_input(uint32_t slot, uint8_t token, std::span<const std::byte> in) {
  if (!log::enabled(KBV_LOG_TRACE)) return;
  log::trace(kLog, "slot {} token {:#04x} input ({} bytes):\n{}", slot, token, in.size(),
             hex_dump(in));
}

void trace_cmd_completion(uint32_t slot, const CmdCompletion& c) {
  if (Observer& o = observer(); o.on.load(std::memory_order_acquire)) {
    std::shared_ptr<const std::function<void(const CmdCompletion&)>> fn;
    {
      std::lock_guard lk(o.mu);
      fn = o.fn;
    }
    if (fn) (*fn)(c);
  }
  if (!log::enabled(KBV_LOG_DEBUG)) return;
  if (c.delivery_status != 0) {
    log::debug(kLog, "{} ({:#x}) op_mod {:#x} slot {}: delivery status {:#x} ({}), {} us",
               prm::opcode_name(c.opcode), c.opcode, c.op_mod, slot, c.delivery_status,
               prm::delivery_status_name(c.delivery_status), c.latency_ns / 1000);
  } else {
    log::debug(kLog, "{} ({:#x}) op_mod {:#x} slot {}: status {:#x} ({}) syndrome {:#x}, {} us",
               prm::opcode_name(c.opcode), c.opcode, c.op_mod, slot, c.status.fw_status(),
               prm::cmd_status_name(c.status.fw_status()), c.status.syndrome(),
               c.latency_ns / 1000);
  }
  if (log::enabled(KBV_LOG_TRACE) && !c.out.empty())
    log::trace(kLog, "slot {} output ({} bytes):\n{}", slot, c.out.size(), hex_dump(c.out));
}

}  // namespace kbv::hca
