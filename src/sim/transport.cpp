// SPDX-License-Identifier: BSD-3-Clause
// The "sim" device transport (platform/transport.hpp): "sim:<name>" is a
// model HCA (model.hpp) in this process, created on first open and shared by
// the opens of one name. Lives in libkbv-sim.so, which registers it when
// loaded (libkbv.so loads it on the first "sim:" URI); programs that link
// the model's static libraries get it through kbv_sim_transport_dep.
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/log.hpp"
#include "platform/transport.hpp"
#include "sim/model.hpp"

namespace kbv::sim {
namespace {
constexpr const char* kLog = "sim.transport";
constexpr size_t kNameMax = 31;  // kbv_device_desc_t.uri holds "sim:" + name

// Names: 1..31 characters, no '/' (sysfs paths) and no ',' (KBV_SIM_DEVICES).
bool valid_name(std::string_view n) {
  return !n.empty() && n.size() <= kNameMax && n.find('/') == std::string_view::npos &&
         n.find(',') == std::string_view::npos;
}

// The models this transport created, by name.
struct Models {
  std::mutex mu;
  std::unordered_map<std::string, std::weak_ptr<Model>> by_name;
};
Models& models() {
  static Models* m = new Models();  // outlives static destruction
  return *m;
}

// The model named `name`: one this transport created (still open), one the
// application created in this process (Model::create; then nothing is held),
// or a new one.
Result<platform::TransportTarget> open(std::string_view address) {
  if (!valid_name(address)) return KBV_ERR_INVALID_ARGUMENT;
  const std::string name(address);
  Models& s = models();
  std::lock_guard lk(s.mu);
  if (auto m = s.by_name[name].lock()) return platform::TransportTarget{&Model::sys(), m->bdf(), m};
  if (auto bdf = Kernel::instance().bdf(name))
    return platform::TransportTarget{&Model::sys(), *bdf, nullptr};
  // The model's threads are the HCA, not the program: they start with every
  // CPU allowed whatever the caller is bound to (threads inherit the
  // creator's affinity; mpirun binds each rank to one core, and a rank's
  // HCA then ran on the core its busy-polling thread spins on: MPI over UCX
  // 8 B median 38 -> 17 us on 2 cores).
  cpu_set_t bound;
  bool widened = false;
  if (::sched_getaffinity(0, sizeof bound, &bound) == 0) {
    cpu_set_t all;
    CPU_ZERO(&all);
    const long n = ::sysconf(_SC_NPROCESSORS_CONF);
    for (long c = 0; c < n && c < CPU_SETSIZE; ++c) CPU_SET(c, &all);
    widened = ::sched_setaffinity(0, sizeof all, &all) == 0;
  }
  auto m = Model::create(name);
  if (widened) (void)::sched_setaffinity(0, sizeof bound, &bound);
  if (!m) {
    // Said here, where the cause is known: programs above the verbs (MPI
    // ranks through UCX and libibverbs) only see the device missing.
    log::error(
        kLog, "sim:{}: the model HCA cannot be created: {}{}", name, m.status().to_string(),
        m.status() == KBV_ERR_NO_RESOURCES ? " (no free 127.0.0.N, N <= 199, for its port)" : "");
    return m.status();
  }
  std::shared_ptr<Model> sp(std::move(*m));
  s.by_name[name] = sp;
  return platform::TransportTarget{&Model::sys(), sp->bdf(), sp};
}

// KBV_SIM_DEVICES=<name>[,<name>...] lists those models; unset, "sim:0"
// when no hardware was listed.
void list(std::vector<platform::TransportDevice>& out, bool others_found) {
  std::vector<std::string> names;
  if (const char* env = std::getenv("KBV_SIM_DEVICES")) {
    std::string_view v(env);
    while (!v.empty()) {
      const size_t c = v.find(',');
      std::string_view n = v.substr(0, c);
      if (valid_name(n)) names.emplace_back(n);
      v = c == std::string_view::npos ? std::string_view{} : v.substr(c + 1);
    }
  } else if (!others_found) {
    names.emplace_back("0");
  }
  const DeviceConfig def;  // the model's default PCI identity (bus/pci_device.hpp)
  for (const auto& n : names) out.push_back({"sim:" + n, def.vendor_id, def.device_id, -1});
}

const platform::Transport kSim{"sim", true, open, list};
}  // namespace
}  // namespace kbv::sim

KBV_TRANSPORT_REGISTER(sim, kbv::sim::kSim)
