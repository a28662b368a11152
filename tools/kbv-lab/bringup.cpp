// SPDX-License-Identifier: BSD-3-Clause
// kbv-lab bringup URI: opens the device with the command observer installed
// and prints every bring-up command as it completed — the step it belongs
// to, opcode, op_mod, status, syndrome, time — with the PRM / mlx5_ifc.h
// reference of the step (docs/PRM.md "Bring-up order"; src/hca/bringup.hpp).
// The driver stops at the first failure; so does the listing, with the
// decoded reason. Then the device is closed again (its teardown is not
// listed).
#include <fmt/format.h>

#include <chrono>

#include "hca/prm/opcodes.hpp"
#include "kbv-lab/lab.hpp"

namespace kbv::lab {

namespace {

struct Step {
  std::string_view name;
  std::string_view ref;
};

// The bring-up step a command belongs to (src/hca/bringup.hpp order).
Step step_of(uint16_t opcode, uint16_t op_mod) {
  switch (opcode) {
    case 0x104: return {"enable HCA", "docs/PRM.md bring-up 3; mlx5_ifc.h enable_hca_in/out"};
    case 0x10A:
      return {"query ISSI", "docs/PRM.md bring-up 4; mlx5_ifc.h query_issi_out.supported_issi"};
    case 0x10B: return {"set ISSI 1", "docs/PRM.md bring-up 4; mlx5_ifc.h set_issi_in"};
    case 0x107:
      return {op_mod == 1   ? "boot pages: how many"
              : op_mod == 2 ? "init pages: how many"
                            : "regular pages: how many",
              "docs/PRM.md bring-up 5/8; mlx5_ifc.h query_pages_in (op_mod 1 boot, 2 init)"};
    case 0x108:
      return {op_mod == 1 ? "give pages" : "pages (take / cannot give)",
              "docs/PRM.md bring-up 5/8; mlx5_ifc.h manage_pages_in.pas[]"};
    case 0x805:
      return {"host endianness",
              "docs/PRM.md bring-up 6; mlx5_ifc.h access_register_in, "
              "register_host_endianness (0x7004)"};
    case 0x100: {
      const uint16_t type = op_mod >> 1;
      const bool cur = op_mod & 1;
      if (type == 4) return {"RoCE caps", "docs/PRM.md bring-up 7; mlx5_ifc.h roce_cap_bits"};
      return {cur ? "general caps (current)" : "general caps (max)",
              "docs/PRM.md bring-up 7; mlx5_ifc.h query_hca_cap_out, cmd_hca_cap_bits"};
    }
    case 0x109:
      return {"set caps (cmdif_checksum off, 4 KiB UAR pages)",
              "docs/PRM.md bring-up 7; mlx5_ifc.h set_hca_cap_in"};
    case 0x102: return {"INIT_HCA", "docs/PRM.md bring-up 9; mlx5_ifc.h init_hca_in"};
    case 0x10D: return {"driver version", "mlx5_ifc.h set_driver_version_in"};
    case 0x755:
      return {"enable RoCE (roce_en)",
              "docs/PRM.md bring-up 10; mlx5_ifc.h modify_nic_vport_context_in"};
    case 0x802: return {"allocate UAR", "docs/PRM.md bring-up 11; mlx5_ifc.h alloc_uar_out"};
    case 0x301:
      return {"create EQ",
              "docs/PRM.md bring-up 11, \"Event queues\"; mlx5_ifc.h create_eq_in, eqc"};
    case 0x750:
      return {"port state (reported as an event)",
              "kbv.h KBV_EVENT_PORT_STATE; mlx5_ifc.h query_vport_state_out.state"};
    default: return {"", "mlx5_ifc.h"};
  }
}

struct Seen {
  std::vector<kbv_cmd_record_t> recs;
};

void observe(const kbv_cmd_record_t* r, void* ctx) { static_cast<Seen*>(ctx)->recs.push_back(*r); }

}  // namespace

int cmd_bringup(const Common& c) {
  Seen seen;
  (void)kbv_set_cmd_observer(observe, &seen);
  const auto t0 = std::chrono::steady_clock::now();
  kbv_device_t dev = 0;
  const kbv_status_t st = kbv_device_open(c.uri.c_str(), nullptr, KBV_EQ_NONE, 0, &dev);
  const auto t1 = std::chrono::steady_clock::now();
  (void)kbv_set_cmd_observer(nullptr, nullptr);
  const uint64_t total_us =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count());
  uint64_t cmd_us = 0;
  for (const auto& r : seen.recs) cmd_us += r.latency_ns / 1000;

  // The failing command, if one failed: the first with a non-success status.
  const kbv_cmd_record_t* failed = nullptr;
  for (const auto& r : seen.recs)
    if (r.status != KBV_SUCCESS) {
      failed = &r;
      break;
    }
  if (c.json) {
    Json j;
    j.obj().kv("uri", c.uri).kv("ok", st == KBV_SUCCESS).kv("status", kbv_status_name(st));
    j.key("steps").arr();
    for (size_t i = 0; i < seen.recs.size(); ++i) {
      const auto& r = seen.recs[i];
      const Step s = step_of(r.opcode, r.op_mod);
      j.obj()
          .kv("index", static_cast<uint64_t>(i + 1))
          .kv("step", s.name)
          .kv("opcode", static_cast<uint64_t>(r.opcode))
          .kv("command", prm::opcode_name(r.opcode))
          .kv("op_mod", static_cast<uint64_t>(r.op_mod))
          .kv("status", kbv_status_name(r.status))
          .kv("fw_status", static_cast<uint64_t>(r.fw_status))
          .kv("fw_status_name", prm::cmd_status_name(r.fw_status))
          .kv("syndrome", static_cast<uint64_t>(r.syndrome))
          .kv("delivery_status", static_cast<uint64_t>(r.delivery_status))
          .kv("time_us", r.latency_ns / 1000)
          .kv("ref", s.ref)
          .end();
      if (&r == failed) break;
    }
    j.end();
    if (st != KBV_SUCCESS) {
      j.key("failure")
          .obj()
          .kv("status", kbv_status_name(st))
          .kv("message", kbv_status_message(st));
      if (failed) {
        j.kv("command", prm::opcode_name(failed->opcode))
            .kv("fw_status_name", prm::cmd_status_name(failed->fw_status))
            .kv("syndrome", static_cast<uint64_t>(failed->syndrome))
            .kv("model_check", model_syndrome(failed->opcode, failed->syndrome));
      }
      j.end();
    }
    j.kv("total_us", total_us).kv("waiting_us", total_us > cmd_us ? total_us - cmd_us : 0);
    j.end();
    fmt::print(c.out, "{}\n", j.text());
  } else {
    fmt::print(c.out, "bring-up of {} ({} commands)\n", c.uri, seen.recs.size());
    for (size_t i = 0; i < seen.recs.size(); ++i) {
      const auto& r = seen.recs[i];
      const Step s = step_of(r.opcode, r.op_mod);
      fmt::print(
          c.out, "{:3} {:<44} {:<26} op_mod {:#06x}  {} synd {:#010x} {:>7} us  {}\n", i + 1,
          s.name.empty() ? prm::opcode_name(r.opcode) : s.name,
          fmt::format("{} ({:#x})", prm::opcode_name(r.opcode), r.opcode), r.op_mod,
          paint(c,
                fmt::format("{:<16}", r.status == KBV_SUCCESS ? std::string_view("ok")
                                                              : prm::cmd_status_name(r.fw_status)),
                r.status == KBV_SUCCESS),
          r.syndrome, r.latency_ns / 1000, s.ref);
      if (&r == failed) break;
    }
    fmt::print(c.out,
               "total {} us ({} us in commands; the rest waiting for `initializing`, "
               "page supply and the driver)\n",
               total_us, cmd_us);
    if (st == KBV_SUCCESS) {
      fmt::print(c.out, "{}\n", paint(c, "bring-up OK", true));
    } else {
      fmt::print(c.out, "{}: {}\n", paint(c, "bring-up FAILED", false),
                 failed ? describe(st, failed->fw_status, failed->syndrome) : describe(st, 0, 0));
      if (failed) {
        fmt::print(c.out, "  at {} ({:#x}) op_mod {:#x}: {}\n", prm::opcode_name(failed->opcode),
                   failed->opcode, failed->op_mod, step_of(failed->opcode, failed->op_mod).ref);
        if (std::string m = model_syndrome(failed->opcode, failed->syndrome); !m.empty())
          fmt::print(c.out, "  syndrome: {}\n", m);
      }
    }
  }
  if (st == KBV_SUCCESS) close_device(dev);
  return st == KBV_SUCCESS ? 0 : 1;
}

}  // namespace kbv::lab
