// SPDX-License-Identifier: BSD-3-Clause
//
// Configuration of one model firmware instance: timing, concurrency, page
// demands and limits, checksum default, UAR range, trace, extra commands. Fixed at Firmware
// construction; the timing and fault hooks can also be changed at run time (firmware.hpp).
//
// Threading: a value type; copied into the Firmware.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kbv::sim::fw {

class CommandRegistry;
class FwContext;

struct FwConfig {
  // The init segment (fw_rev, cmdif_rev, command queue geometry,
  // `initializing`, health) belongs to the PCI function (sim/bus/pci_device.hpp
  // DeviceConfig); the firmware reads the queue geometry from BAR0 0x14 when
  // it starts and after every reset.

  // ---- timing ----
  // Execution time of every command (from pickup to completion).
  std::chrono::nanoseconds cmd_latency = std::chrono::microseconds(40);
  // Commands executing at once; further rung slots wait for a free unit.
  unsigned max_concurrent = 8;
  // Fallback for drivers whose BAR writes are not trapped: every interval the
  // firmware reads all queue entries and picks up slots whose ownership bit
  // is set. Zero disables the scan.
  std::chrono::nanoseconds scan_interval = std::chrono::milliseconds(50);

  // ---- pages (QUERY_PAGES answers, in 4 KiB pages) ----
  uint32_t boot_pages = 16;
  uint32_t init_pages = 32;
  uint32_t max_pages = 1u << 18;  // the most pages the firmware accepts (1 GiB)

  // ---- command interface ----
  // cmdif_checksum capability after reset: 0 = signatures not checked (what
  // drivers expect at boot; they may enable it with SET_HCA_CAP).
  bool cmdif_checksum = false;

  // ---- UARs ----
  // UAR indices handed out by ALLOC_UAR: [first_uar, first_uar + num_uars),
  // bounded by the BAR0 size. Pages 0 and 1 hold the init segment, health
  // buffer, internal timer and health counter (device.h mlx5_init_seg), so
  // the first UAR is page 2.
  uint32_t first_uar = 2;
  uint32_t num_uars = 126;

  // ---- command trace ----
  // Log every command (opcode, op_mod, status, syndrome, raw bytes). The
  // default comes from the environment: KBV_SIM_CMD_TRACE=1.
  bool trace = false;
  bool trace_from_env = true;
  // The device every trace line names (a model sets "<bdf> sim:<name>").
  std::string trace_device;

  // ---- more commands ----
  // Called once at construction with the firmware's registry, after the
  // bring-up commands are registered: the object commands (CQ/QP/MKEY/...)
  // add their handlers here.
  std::vector<std::function<void(CommandRegistry&)>> registrars;

  // ---- life-cycle hooks ----
  // Run on the firmware thread right after INIT_HCA succeeded, e.g. to bring
  // the port up after a link-training delay (sim::Model does: the port goes
  // ACTIVE with a port-change EQE, ModelConfig::link_up_delay later).
  std::vector<std::function<void(FwContext&)>> on_init_hca;
};

}  // namespace kbv::sim::fw
