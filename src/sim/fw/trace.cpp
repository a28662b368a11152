// SPDX-License-Identifier: BSD-3-Clause
#include "sim/fw/trace.hpp"

#include "common/log.hpp"
#include "hca/prm/opcodes.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

namespace kbv::sim::fw {

bool CmdTrace::env_enabled() {
  const char* v = std::getenv("KBV_SIM_CMD_TRACE");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

std::vector<std::string> CmdTrace::hexdump(std::string_view prefix, std::span<const std::byte> b) {
  std::vector<std::string> lines;
  constexpr std::size_t kRow = 16;
  bool folded = false;
  for (std::size_t off = 0; off < b.size(); off += kRow) {
    const std::size_t n = std::min(kRow, b.size() - off);
    // Fold a full row equal to the previous one (not the last row).
    if (off > 0 && n == kRow && off + kRow < b.size() &&
        std::memcmp(b.data() + off, b.data() + off - kRow, kRow) == 0) {
      if (!folded) lines.push_back(fmt::format("{} *", prefix));
      folded = true;
      continue;
    }
    folded = false;
    std::string line = fmt::format("{} {:04x}:", prefix, off);
    for (std::size_t i = 0; i < n; ++i)
      line += fmt::format(" {:02x}", static_cast<unsigned>(b[off + i]));
    lines.push_back(std::move(line));
  }
  return lines;
}

void CmdTrace::emit(std::string_view line) const {
  const std::string full = prefix_ + std::string(line);
  if (sink_) {
    sink_(full);
    return;
  }
  log::detail::emit(KBV_LOG_INFO, "sim.fw.cmd", full);
}

void CmdTrace::record(unsigned slot, uint16_t opcode, uint16_t op_mod, uint8_t delivery, Outcome o,
                      std::span<const std::byte> in, std::span<const std::byte> out) const {
  if (!enabled()) return;
  const std::string_view name = prm::opcode_name(opcode);
  if (delivery != 0) {
    emit(fmt::format("slot {} {} ({:#x}) op_mod {:#x} inlen {} -> delivery {} ({:#x})", slot, name,
                     opcode, op_mod, in.size(), prm::delivery_status_name(delivery), delivery));
  } else {
    emit(fmt::format(
        "slot {} {} ({:#x}) op_mod {:#x} inlen {} outlen {} -> {} ({:#x}) syndrome {:#x}", slot,
        name, opcode, op_mod, in.size(), out.size(), prm::cmd_status_name(o.status), o.status,
        o.syndrome));
  }
  for (const std::string& l : hexdump("  in ", in)) emit(l);
  if (delivery == 0)
    for (const std::string& l : hexdump("  out", out)) emit(l);
}

}  // namespace kbv::sim::fw
