// SPDX-License-Identifier: BSD-3-Clause
// KBV_SIM_FAULTS parsing. Grammar and semantics: fault_spec.hpp.
#include "sim/fault_spec.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace kbv::sim {

namespace {

// The whole of `v` as an unsigned integer (decimal, or hex after 0x/0X).
bool parse_uint(std::string_view v, uint64_t& out) {
  int base = 10;
  if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
    v.remove_prefix(2);
    base = 16;
  }
  if (v.empty()) return false;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out, base);
  return ec == std::errc{} && p == v.data() + v.size();
}

// The whole of `v` as a probability in [0, 1] (plain decimal notation).
bool parse_probability(std::string_view v, double& out) {
  if (v.empty()) return false;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out, std::chars_format::fixed);
  return ec == std::errc{} && p == v.data() + v.size() && std::isfinite(out) && out >= 0 &&
         out <= 1;
}

// OP[:STATUS[:COUNT]]
bool parse_cmd_fail(std::string_view v, CmdFailSpec& out) {
  std::string_view parts[3];
  size_t n = 0;
  while (true) {
    if (n == 3) return false;
    const size_t c = v.find(':');
    parts[n++] = v.substr(0, c);
    if (c == std::string_view::npos) break;
    v.remove_prefix(c + 1);
  }
  uint64_t x = 0;
  if (!parse_uint(parts[0], x) || x > 0xffff) return false;
  out.opcode = static_cast<uint16_t>(x);
  if (n > 1) {
    if (!parse_uint(parts[1], x) || x == 0 || x > 0xff) return false;
    out.status = static_cast<uint8_t>(x);
  }
  if (n > 2) {
    if (!parse_uint(parts[2], x) || x == 0 || x >= 0xffffffffull) return false;
    out.times = static_cast<uint32_t>(x);
  }
  return true;
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

}  // namespace

Result<FaultSpec> parse_fault_spec(std::string_view spec, std::string* error) {
  FaultSpec out;
  auto fail = [&](std::string msg) -> Result<FaultSpec> {
    if (error) *error = std::move(msg);
    return KBV_ERR_INVALID_ARGUMENT;
  };
  if (spec.empty()) return out;
  std::vector<std::string_view> seen;
  std::string_view rest = spec;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    if (item.empty()) return fail("empty item in " + quoted(spec));
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return fail("item " + quoted(item) + " is not key=value");
    std::string_view key = item.substr(0, eq);
    const std::string_view val = item.substr(eq + 1);
    if (key == "duplicate") key = "dup";
    if (key != "cmd_fail") {
      for (std::string_view k : seen)
        if (k == key) return fail("key " + quoted(key) + " given twice");
      seen.push_back(key);
    }
    uint64_t u = 0;
    if (key == "drop" || key == "reorder" || key == "dup" || key == "corrupt") {
      double p = 0;
      if (!parse_probability(val, p))
        return fail(quoted(item) + ": a probability in [0, 1] (e.g. 0.05) is expected");
      (key == "drop"      ? out.wire.drop
       : key == "reorder" ? out.wire.reorder
       : key == "dup"     ? out.wire.duplicate
                          : out.wire.corrupt) = p;
    } else if (key == "reorder_depth") {
      if (!parse_uint(val, u) || u < 1 || u > 64)
        return fail(quoted(item) + ": an integer in 1..64 is expected");
      out.wire.reorder_depth = static_cast<uint32_t>(u);
    } else if (key == "seed") {
      if (!parse_uint(val, u))
        return fail(quoted(item) + ": an unsigned 64-bit integer is expected");
      out.wire.seed = u;
    } else if (key == "cmd_delay_us") {
      if (!parse_uint(val, u) || u > 10'000'000)
        return fail(quoted(item) + ": microseconds in 0..10000000 are expected");
      out.cmd_delay = std::chrono::microseconds(u);
    } else if (key == "cmd_fail") {
      CmdFailSpec f;
      if (!parse_cmd_fail(val, f))
        return fail(quoted(item) +
                    ": OPCODE[:STATUS[:COUNT]] is expected (opcode < 0x10000, status 1..0xff, "
                    "count >= 1)");
      if (out.cmd_fail.size() == kMaxCmdFail) return fail("more than 8 cmd_fail items");
      out.cmd_fail.push_back(f);
    } else if (key == "fatal_after_ms") {
      if (!parse_uint(val, u) || u < 1 || u > 86'400'000)
        return fail(quoted(item) + ": milliseconds in 1..86400000 are expected");
      out.fatal_after = std::chrono::milliseconds(u);
    } else {
      return fail("unknown key " + quoted(key) +
                  " (known: drop, reorder, dup, corrupt, reorder_depth, seed, cmd_delay_us, "
                  "cmd_fail, fatal_after_ms)");
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

Result<FaultSpec> fault_spec_from_env(std::string* error) {
  const char* env = std::getenv(kFaultsEnv);
  if (env == nullptr) return FaultSpec{};
  std::string why;
  auto r = parse_fault_spec(env, &why);
  if (!r && error) *error = std::string(kFaultsEnv) + "='" + env + "': " + why;
  return r;
}

uint64_t seed_for_model(uint64_t seed, std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64
  for (char c : name) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return seed ^ h;
}

}  // namespace kbv::sim
