// SPDX-License-Identifier: BSD-3-Clause
// Housekeeper: the shared, sleeping device-side tick thread (housekeeper.hpp).
#include "sim/bus/housekeeper.hpp"

#include "sim/bus/pci_device.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace kbv::sim {

struct Housekeeper::State {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<PciDevice*> devices;
  bool started = false;
  bool kick = false;
};

Housekeeper::Housekeeper() : s_(new State) {}

Housekeeper& Housekeeper::instance() {
  // Never destroyed: the thread may still run while the process exits.
  static Housekeeper* hk = new Housekeeper;
  return *hk;
}

void Housekeeper::add(PciDevice* d) {
  std::unique_lock lk(s_->mu);
  s_->devices.push_back(d);
  s_->kick = true;
  if (!s_->started) {
    s_->started = true;
    State* s = s_;
    std::thread([s] {
      std::unique_lock l(s->mu);
      for (;;) {
        const auto now = std::chrono::steady_clock::now();
        auto next = now + std::chrono::seconds(1);
        for (PciDevice* dev : s->devices) next = std::min(next, dev->housekeep(now));
        s->kick = false;
        s->cv.wait_until(l, next, [s] { return s->kick; });
      }
    }).detach();
  }
  lk.unlock();
  s_->cv.notify_all();
}

void Housekeeper::remove(PciDevice* d) {
  std::lock_guard lk(s_->mu);
  s_->devices.erase(std::remove(s_->devices.begin(), s_->devices.end(), d), s_->devices.end());
}

void Housekeeper::wake() {
  {
    std::lock_guard lk(s_->mu);
    s_->kick = true;
  }
  s_->cv.notify_all();
}

}  // namespace kbv::sim
