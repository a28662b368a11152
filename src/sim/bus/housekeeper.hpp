// SPDX-License-Identifier: BSD-3-Clause
//
// Housekeeper: one thread shared by every model PciDevice of the process,
// doing the device-side work that must happen without a driver access: the
// health counter and internal timer that keep moving, the `initializing`
// bit that clears after its time, the optional doorbell poll. It sleeps
// until the earliest time any device is due (PciDevice::housekeep), so it
// costs nothing between ticks (health_period, 50 ms by default).
//
// The thread starts with the first device and lives for the process (the
// object is never destroyed, so it is safe during exit).
//
// Threading: add/remove/wake from any thread; housekeep() runs on the
// housekeeping thread with the registry lock held, so a device that returned
// from remove() is never touched again.
#pragma once

namespace kbv::sim {

class PciDevice;

class Housekeeper {
 public:
  static Housekeeper& instance();

  void add(PciDevice* d);
  void remove(PciDevice* d);
  // Re-evaluate deadlines now (a device was reset or reconfigured). Must not
  // be called with a PciDevice's lock held.
  void wake();

 private:
  Housekeeper();
  struct State;
  State* s_;
};

}  // namespace kbv::sim
