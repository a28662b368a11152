// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-lab: the lab bring-up tool (issue 22), on the public API only
// (kbv/kbv.h, kbv/lab.h) plus the PRM layout tables (src/hca/prm: the
// registers' and capabilities' field offsets, the opcode and status names)
// to decode what the device returns.
//
//   kbv-lab bringup  URI            each bring-up command: status, syndrome, time, PRM reference
//   kbv-lab caps     URI            every capability field, current vs max
//   kbv-lab port     URI [--set up|down]   PAOS / PTYS / PMTU
//   kbv-lab counters URI [--watch 1s] [--count N]   PPCNT groups, deltas per interval
//   kbv-lab health   URI [--wait MS]  the health buffer decoded (--wait: watch for a failure)
//   kbv-lab reset    URI            FLR through VFIO, bring-up again, timings
//   kbv-lab selftest URI            RC loopback through every opcode, data checked
// Every subcommand takes --json (one JSON object on stdout) and exits 0 on
// success, 1 when the device said no (the reason is printed), 2 on a usage
// error.
//
// The subcommands live in a static library so tests can run them in-process
// against model HCAs they created (with faults); tools/kbv-lab/main.cpp is the
// program.
//
// Threading: run() from one thread at a time.
#pragma once

#include <kbv/lab.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kbv::lab {

// Runs kbv-lab with argv (argv[0] is the program name); output to out,
// diagnostics to err. Returns the exit status.
int run(int argc, const char* const* argv, std::FILE* out, std::FILE* err);

// ---- shared by the subcommands (common.cpp) ----

// A small JSON text builder: values are appended in order; commas and
// quoting are handled here.
class Json {
 public:
  Json& obj();
  Json& arr();
  Json& end();  // closes the innermost object or array
  Json& key(std::string_view k);
  Json& str(std::string_view v);
  Json& num(uint64_t v);
  Json& snum(int64_t v);
  Json& boolean(bool v);
  template <class T>
  Json& kv(std::string_view k, T v) {
    key(k);
    if constexpr (std::is_same_v<T, bool>)
      return boolean(v);
    else if constexpr (std::is_convertible_v<T, std::string_view>)
      return str(v);
    else if constexpr (std::is_signed_v<T>)
      return snum(v);
    else
      return num(v);
  }
  const std::string& text() const { return s_; }

 private:
  void sep();
  std::string s_;
  std::vector<bool> first_;
  std::vector<char> closers_;
  bool after_key_ = false;
};

struct Common {
  std::string uri;
  bool json = false;
  uint32_t link_wait_ms = 2000;
  bool color = false;  // text on a terminal (and not --no-color): ANSI colours
  std::FILE* out = stdout;
  std::FILE* err = stderr;
};

// `text` in green (good) or red (bad) when c.color; as is otherwise.
std::string paint(const Common& c, std::string_view text, bool good);
// Opens uri synchronously; on failure prints the decoded reason and returns 0.
kbv_device_t open_device(const Common& c, kbv_status_t* st = nullptr);
void close_device(kbv_device_t dev);
// Waits up to c.link_wait_ms for port 1 to be ACTIVE (a port trains its
// link after INIT_HCA). Returns its state.
uint32_t wait_link(const Common& c, kbv_device_t dev);
// "KBV_ERR_FW_BAD_PARAM (firmware: bad parameter)" plus, for firmware
// statuses, "status 0x3 BAD_PARAM syndrome 0x...".
std::string describe(kbv_status_t st, uint8_t fw_status, uint32_t syndrome);
// The model's syndrome scheme (src/sim/fw/syndromes.hpp: opcode << 16 |
// check): "check 3 of ACCESS_REG", or empty when it does not match.
std::string model_syndrome(uint16_t opcode, uint32_t syndrome);
// Reads one register (image in/out); the status.
kbv_status_t access_reg(kbv_device_t dev, uint16_t id, uint32_t op, std::vector<std::byte>& img);

// ---- capability field tables (cap_fields.cpp) ----
struct CapField {
  const char* name;
  uint32_t off;    // bit offset (mlx5_ifc.h)
  uint32_t width;  // bits
};
const std::vector<CapField>& general_cap_fields();
const std::vector<CapField>& roce_cap_fields();
const std::vector<CapField>& atomic_cap_fields();
uint64_t get_field(const std::vector<std::byte>& block, const CapField& f);

// ---- subcommands ----
int cmd_bringup(const Common& c);
int cmd_caps(const Common& c);
int cmd_port(const Common& c, const std::string& set);
int cmd_counters(const Common& c, uint32_t watch_ms, uint32_t count);
int cmd_health(const Common& c, uint32_t wait_ms);
int cmd_reset(const Common& c);
int cmd_selftest(const Common& c, uint32_t size);

}  // namespace kbv::lab
