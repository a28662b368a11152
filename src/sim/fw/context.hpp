// SPDX-License-Identifier: BSD-3-Clause
//
// FwContext: the device state a command handler works on — the PCI function
// (BAR0, IOMMU, MSI-X), the HCA life-cycle state, capabilities, firmware
// pages, UARs and EQs, plus extension slots where further command families
// (CQ/QP/MKEY/... in their own files) keep their object tables:
//
//   struct CqTable : kbv::sim::fw::Extension { ... };
//   CqTable& cqs = ctx.ext<CqTable>();   // created on first use
//
// A function reset (VFIO_DEVICE_RESET / FLR) or DISABLE_HCA drops every
// extension (reset()), as silicon forgets all objects.
//
// Threading: handlers run on the firmware thread one at a time, so the state
// here needs no locking for them; EqTable and UarTable::is_allocated() are
// also safe from other model threads (the data-path engine posts completion
// EQEs through eqs()).
#pragma once

#include "sim/bus/pci_function.hpp"
#include "sim/fw/caps.hpp"
#include "sim/fw/config.hpp"
#include "sim/fw/eq.hpp"
#include "sim/fw/pages.hpp"
#include "sim/fw/uar.hpp"
#include "sim/fw/wire_counters.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <typeindex>
#include <unordered_map>

namespace kbv::sim::fw {

// Base of per-firmware state owned by a command family.
class Extension {
 public:
  virtual ~Extension() = default;
  // Whether objects of this family still reference EQ `eqn` (a CQ's c_eqn)
  // or UAR page `uar` (a CQ's, QP's or SRQ's uar_page): DESTROY_EQ and
  // DEALLOC_UAR are refused while they do (BAD_RES_STATE), as firmware
  // keeps a resource alive while others point at it.
  virtual bool references_eq(uint32_t eqn) const {
    (void)eqn;
    return false;
  }
  virtual bool references_uar(uint32_t uar) const {
    (void)uar;
    return false;
  }
};

// The HCA life cycle (PRM "HCA initialization flow"; the commands that move it).
struct HcaState {
  bool enabled = false;         // ENABLE_HCA .. DISABLE_HCA
  bool initialized = false;     // INIT_HCA .. TEARDOWN_HCA
  uint16_t issi = 0;            // SET_ISSI (0 until set)
  uint8_t host_endianness = 0;  // ACCESS_REG HOST_ENDIANNESS (he byte)
  std::string driver_version;   // SET_DRIVER_VERSION (diagnostics only)
};

class FwContext {
 public:
  FwContext(PciFunction& pci, const FwConfig& cfg);

  PciFunction& pci() { return pci_; }
  Iommu& iommu() { return pci_.iommu(); }
  const FwConfig& config() const { return cfg_; }

  HcaState& hca() { return hca_; }
  Caps& caps() { return caps_; }
  PagePool& pages() { return pages_; }
  UarTable& uars() { return uars_; }
  EqTable& eqs() { return eqs_; }

  // Device-side timers: run `task` on the firmware thread after `delay`.
  // Tasks still pending at a function reset, DISABLE_HCA or TEARDOWN_HCA are
  // dropped (the device forgets them). Set up by the Firmware; without one
  // (unit tests of handlers) tasks are dropped.
  using Task = std::function<void()>;
  using Scheduler = std::function<void(std::chrono::nanoseconds, Task)>;
  void schedule(std::chrono::nanoseconds delay, Task task) {
    if (scheduler_) scheduler_(delay, std::move(task));
  }
  void set_scheduler(Scheduler s) { scheduler_ = std::move(s); }
  // Incremented by teardown()/reset(): a scheduled task compares it to the
  // value it was scheduled under and does nothing when they differ.
  uint64_t epoch() const { return epoch_; }

  // The port's wire counters (PPCNT): the source is installed by the
  // data-path engine and survives reset(); without one, zeros. Firmware thread.
  using WireCountersFn = std::function<WireCounters()>;
  void set_wire_counters(WireCountersFn f) { wire_counters_ = std::move(f); }
  WireCounters wire_counters() const { return wire_counters_ ? wire_counters_() : WireCounters{}; }

  // True when any extension's objects reference the EQ / UAR page.
  bool eq_referenced(uint32_t eqn) const {
    for (const auto& [type, e] : ext_)
      if (e && e->references_eq(eqn)) return true;
    return false;
  }
  bool uar_referenced(uint32_t uar) const {
    for (const auto& [type, e] : ext_)
      if (e && e->references_uar(uar)) return true;
    return false;
  }

  template <class T>
  T& ext() {
    static_assert(std::is_base_of_v<Extension, T>, "extensions derive from fw::Extension");
    auto& slot = ext_[std::type_index(typeid(T))];
    if (!slot) slot = std::make_unique<T>();
    return static_cast<T&>(*slot);
  }

  // Forget everything (function reset): HCA state, caps to defaults, pages,
  // UARs, EQs, extensions.
  void reset();
  // DISABLE_HCA: the same as reset() (the function loses its resources).
  void disable() { reset(); }
  // TEARDOWN_HCA: not initialized any more; EQs, UARs and extensions are
  // destroyed; caps, pages and the enabled state stay.
  void teardown();

 private:
  PciFunction& pci_;
  const FwConfig& cfg_;
  HcaState hca_;
  Caps caps_;
  PagePool pages_;
  UarTable uars_;
  EqTable eqs_;
  Scheduler scheduler_;
  WireCountersFn wire_counters_;
  uint64_t epoch_ = 0;
  std::unordered_map<std::type_index, std::unique_ptr<Extension>> ext_;
};

}  // namespace kbv::sim::fw
