// SPDX-License-Identifier: BSD-3-Clause
// kbv-lab: argument parsing (CLI11), the JSON builder, device open and the
// status decoding shared by the subcommands.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <thread>

#include <unistd.h>

#include "hca/prm/field.hpp"
#include "hca/prm/opcodes.hpp"
#include "kbv-lab/lab.hpp"

namespace kbv::lab {

// ---- Json -------------------------------------------------------------------

void Json::sep() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) s_ += ',';
    first_.back() = false;
  }
}
Json& Json::obj() {
  sep();
  s_ += '{';
  first_.push_back(true);
  closers_.push_back('}');
  return *this;
}
Json& Json::arr() {
  sep();
  s_ += '[';
  first_.push_back(true);
  closers_.push_back(']');
  return *this;
}
Json& Json::end() {
  s_ += closers_.back();
  closers_.pop_back();
  first_.pop_back();
  return *this;
}
Json& Json::key(std::string_view k) {
  str(k);
  s_ += ':';
  after_key_ = true;
  return *this;
}
Json& Json::str(std::string_view v) {
  sep();
  s_ += '"';
  for (char ch : v) {
    if (ch == '"' || ch == '\\') {
      s_ += '\\';
      s_ += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      s_ += fmt::format("\\u{:04x}", static_cast<unsigned>(ch));
    } else {
      s_ += ch;
    }
  }
  s_ += '"';
  return *this;
}
Json& Json::num(uint64_t v) {
  sep();
  s_ += std::to_string(v);
  return *this;
}
Json& Json::snum(int64_t v) {
  sep();
  s_ += std::to_string(v);
  return *this;
}
Json& Json::boolean(bool v) {
  sep();
  s_ += v ? "true" : "false";
  return *this;
}

// ---- devices and statuses ---------------------------------------------------------

std::string paint(const Common& c, std::string_view text, bool good) {
  if (!c.color) return std::string(text);
  return fmt::format("\x1b[{}m{}\x1b[0m", good ? "32" : "1;31", text);
}

std::string describe(kbv_status_t st, uint8_t fw_status, uint32_t syndrome) {
  std::string s = fmt::format("{} ({})", kbv_status_name(st), kbv_status_message(st));
  if (fw_status != 0)
    s += fmt::format(", firmware status {:#x} {} syndrome {:#010x}", fw_status,
                     prm::cmd_status_name(fw_status), syndrome);
  return s;
}

std::string model_syndrome(uint16_t opcode, uint32_t syndrome) {
  if (syndrome >> 16 != opcode || (syndrome & 0xffff) == 0) return {};
  return fmt::format("check {} of {} (the model's syndrome scheme, src/sim/fw/syndromes.hpp)",
                     syndrome & 0xffff, prm::opcode_name(opcode));
}

kbv_device_t open_device(const Common& c, kbv_status_t* out_st) {
  kbv_device_t dev = 0;
  kbv_status_t st = kbv_device_open(c.uri.c_str(), nullptr, KBV_EQ_NONE, 0, &dev);
  if (out_st) *out_st = st;
  if (st != KBV_SUCCESS) {
    fmt::print(c.err, "kbv-lab: {}: open failed: {}\n", c.uri, describe(st, 0, 0));
    return 0;
  }
  return dev;
}

void close_device(kbv_device_t dev) {
  if (dev) (void)kbv_device_close(dev, KBV_EQ_NONE, 0);
}

uint32_t wait_link(const Common& c, kbv_device_t dev) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(c.link_wait_ms);
  kbv_port_attr_t p{};
  while (true) {
    if (kbv_port_query(dev, 1, &p, KBV_EQ_NONE, 0) != KBV_SUCCESS) return KBV_PORT_NOP;
    if (p.state == KBV_PORT_ACTIVE || std::chrono::steady_clock::now() >= end) return p.state;
    (void)kbv_device_progress(dev);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

kbv_status_t access_reg(kbv_device_t dev, uint16_t id, uint32_t op, std::vector<std::byte>& img) {
  return kbv_device_access_reg(dev, id, op, 0, img.data(), static_cast<uint32_t>(img.size()),
                               KBV_EQ_NONE, 0);
}

uint64_t get_field(const std::vector<std::byte>& block, const CapField& f) {
  return prm::detail::get_bits(block.data(), f.off, f.width);
}

// ---- the program ----------------------------------------------------------------

int run(int argc, const char* const* argv, std::FILE* out, std::FILE* err) {
  CLI::App app{"kbv-lab: lab bring-up of ConnectX HCAs (and of kbv's model) on kbv"};
  app.require_subcommand(1);
  Common c;
  c.out = out;
  c.err = err;
  std::string set;
  std::string watch;
  uint32_t count = 0;
  uint32_t size = 4096;
  uint32_t wait_ms = 0;
  bool no_color = false;
  const auto common = [&](CLI::App* s) {
    s->add_option("uri", c.uri, "device: vfio:DDDD:BB:DD.F or sim:<name>")->required();
    s->add_flag("--json", c.json, "one JSON object on stdout");
    s->add_flag("--no-color", no_color, "no ANSI colours (default: colours on a terminal)");
    s->add_option("--link-wait", c.link_wait_ms, "ms to wait for the link (default 2000)");
  };
  auto* bringup = app.add_subcommand("bringup", "bring the device up step by step");
  auto* caps = app.add_subcommand("caps", "every capability field, current vs max");
  auto* port = app.add_subcommand("port", "PAOS / PTYS / PMTU; --set up|down");
  auto* counters = app.add_subcommand("counters", "PPCNT counter groups");
  auto* health = app.add_subcommand("health", "the health buffer decoded");
  auto* reset = app.add_subcommand("reset", "FLR through VFIO, then bring-up again");
  auto* selftest = app.add_subcommand("selftest", "RC loopback through every opcode");
  for (CLI::App* s : {bringup, caps, port, counters, health, reset, selftest}) common(s);
  port->add_option("--set", set, "admin status: up or down")->check(CLI::IsMember({"up", "down"}));
  counters->add_option("--watch", watch, "interval: print deltas every N ms / s (e.g. 1s, 200ms)");
  counters->add_option("--count", count, "with --watch: stop after N intervals (0: forever)");
  selftest->add_option("--size", size, "message size in bytes (default 4096)");
  health->add_option("--wait", wait_ms, "ms to keep watching for the firmware to fail");
  try {
    std::vector<std::string> args;
    for (int i = argc - 1; i > 0; --i) args.emplace_back(argv[i]);
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    const int rc = e.get_exit_code();
    if (rc == 0) {
      fmt::print(out, "{}", app.help());
      return 0;
    }
    fmt::print(err, "kbv-lab: {}\n{}", e.what(), app.help());
    return 2;
  }
  c.color = !c.json && !no_color && ::isatty(::fileno(out)) == 1;
  if (bringup->parsed()) return cmd_bringup(c);
  if (caps->parsed()) return cmd_caps(c);
  if (port->parsed()) return cmd_port(c, set);
  if (counters->parsed()) {
    uint32_t ms = 0;
    if (!watch.empty()) {
      const bool secs = watch.ends_with("s") && !watch.ends_with("ms");
      const std::string digits = watch.substr(0, watch.find_first_not_of("0123456789"));
      if (digits.empty()) {
        fmt::print(err, "kbv-lab: --watch {}: want e.g. 1s or 200ms\n", watch);
        return 2;
      }
      ms = static_cast<uint32_t>(std::stoul(digits)) * (secs ? 1000 : 1);
    }
    return cmd_counters(c, ms, count);
  }
  if (health->parsed()) return cmd_health(c, wait_ms);
  if (reset->parsed()) return cmd_reset(c);
  return cmd_selftest(c, size);
}

}  // namespace kbv::lab
