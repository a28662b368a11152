// SPDX-License-Identifier: BSD-3-Clause
//
// sim::Model — one complete model HCA: a PCI function registered in the
// emulated VFIO kernel (vfio_kernel.hpp) with its firmware (fw/firmware.hpp)
// running, ready for a driver to open as "vfio:<bdf>" through
// Kernel::instance() — or as "sim:<name>".
//
// A driver reaches it exactly as it reaches silicon: platform::DeviceHandle::
// open(sim::Kernel::instance(), model.bdf()) and the same bring-up.
//
// Threading: create/destroy from one thread; the accessors from any thread.
// Destroy a Model only after its driver closed the device (the firmware
// abandons in-flight commands when it stops).
#pragma once

#include "sim/bus/pci_device.hpp"
#include "sim/bus/vfio_kernel.hpp"
#include "sim/engine/engine.hpp"
#include "sim/fault_spec.hpp"
#include "sim/fw/config.hpp"
#include "sim/fw/firmware.hpp"
#include "sim/wire/faults.hpp"

#include <kbv/status.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace kbv::sim {

struct ModelConfig {
  DeviceConfig device;  // PCI identity, BAR0, init segment, timings
  fw::FwConfig fw;      // firmware timing, pages, limits, trace
  // The port's IPv4 host number N: address 127.0.0.N, GID ::ffff:127.0.0.N.
  // 0 = the first N in 1..199 (from this process's next unused number on)
  // whose 127.0.0.N:4791 bind succeeds, so models of several processes
  // coexist; 127.0.0.200 and above are left to tests.
  uint8_t port_host = 0;
  // Wire faults on the port's transmit side (drop / duplicate / reorder /
  // corrupt, seeded; wire/faults.hpp) and an optional pcap file of every
  // datagram sent (wire/port.hpp).
  wire::FaultConfig faults;
  std::string pcap_path;
  // Apply KBV_SIM_FAULTS (fault_spec.hpp) on top of the above: its wire keys
  // replace `faults` (seeded with seed_for_model), cmd_delay_us adds to
  // fw.cmd_latency, cmd_fail and fatal_after_ms are installed in the firmware.
  // A malformed spec fails create() with KBV_ERR_INVALID_ARGUMENT (logged
  // with the offending item). Tests that need exact faults set false.
  bool faults_from_env = true;
  // Apply KBV_SIM_INIT_MS (init_time_from_env) to device.init_time; a test
  // that sets device.init_time itself sets false (the test setup's value
  // would replace it).
  bool init_time_from_env = true;
  // The port goes ACTIVE this long after INIT_HCA (link training), with a
  // port-change EQE (type 0x09, sub_type ACTIVE) to the EQ subscribed to
  // port events — by then a driver has created its async EQ.
  std::chrono::nanoseconds link_up_delay = std::chrono::milliseconds(5);
};

// KBV_SIM_INIT_MS=<ms>, 0..120000: how long a model function's
// `initializing` stays set after power-on and after each reset
// (DeviceConfig::init_time; default 1 s). Unset: cfg is left as it is. A
// malformed or out-of-range value is KBV_ERR_INVALID_ARGUMENT (*why says
// so). The meson test setup sets 10 ms, so the suites do not wait a
// second at every device open; tests of the timing itself set it.
inline constexpr const char* kInitTimeEnv = "KBV_SIM_INIT_MS";
Status init_time_from_env(DeviceConfig& cfg, std::string* why = nullptr);

class Model {
 public:
  // Registers device `name` (unique) in Kernel::instance(), opens its port
  // (wire::Port) and starts its firmware with every command family (bring-up
  // and objects) registered and the data-path engine (engine/engine.hpp) on
  // the firmware thread. KBV_ERR_ALREADY_EXISTS for a taken name or a taken
  // explicit port_host; KBV_ERR_NO_RESOURCES when no 127.0.0.N (N <= 199) is
  // free; KBV_ERR_INVALID_ARGUMENT for a malformed KBV_SIM_FAULTS (when
  // cfg.faults_from_env) or KBV_SIM_INIT_MS (cfg.init_time_from_env); the errors of
  // Kernel::add_device, wire::Port::open and Firmware::start otherwise (nothing is left behind).
  static Result<std::unique_ptr<Model>> create(const std::string& name, ModelConfig cfg = {});
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const std::string& name() const { return name_; }
  // "fffe:00:NN.0": what the driver opens through Kernel::instance().
  const std::string& bdf() const { return bdf_; }
  uint8_t port_host() const { return port_host_; }
  // The wire faults the port applies (ModelConfig::faults, or KBV_SIM_FAULTS's).
  const wire::FaultConfig& fault_config() const { return faults_; }
  // The data-path engine's counters (a consistent-enough snapshot of
  // monotonic counters; any thread).
  engine::EngineStats engine_stats() const { return engine_->stats(); }
  PciDevice& device() { return *device_; }
  fw::Firmware& firmware() { return *fw_; }
  // Test hook: take the port's link down or up (a port-change EQE DOWN /
  // ACTIVE when the state changes and the HCA is initialized). Asynchronous:
  // it runs on the firmware thread.
  void set_link(bool up);

  // Test hook: set entry `index` (< 128) of the port's P_Key table (as a
  // subnet manager does; entry 0 starts as the default 0xFFFF, the others
  // as 0). QUERY_HCA_VPORT_PKEY reports it and QPs whose pkey_index is
  // `index` send and accept it from their next packet on (IBTA 10.9).
  // Synchronous: returns once the firmware thread applied it.
  // KBV_ERR_INVALID_ARGUMENT for an index out of the table.
  Status set_pkey(uint32_t index, uint16_t pkey);
  // Requests dropped for a P_Key mismatch so far (the port's
  // pkey_violation_counter, not saturated).
  uint32_t pkey_violations() const;

  // The seam the driver must use to reach this model.
  static platform::Sys& sys() { return Kernel::instance(); }

 private:
  Model() = default;
  std::string name_;
  std::string bdf_;
  uint8_t port_host_ = 0;
  wire::FaultConfig faults_;
  PciDevice* device_ = nullptr;  // owned by the kernel registry
  std::unique_ptr<fw::Firmware> fw_;
  std::unique_ptr<engine::Engine> engine_;  // runs on the firmware thread
};

}  // namespace kbv::sim
