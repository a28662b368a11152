// SPDX-License-Identifier: BSD-3-Clause
// Device transports (transport.hpp): the registry, the loader of transport
// libraries (libkbv-sim.so), and the built-in "vfio" transport.
#include "platform/transport.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common/log.hpp"
#include "platform/pci.hpp"

#ifndef KBV_SIM_SONAME
#error "KBV_SIM_SONAME (the model library's soname) comes from src/platform/meson.build"
#endif
#ifndef KBV_DPDK_SONAME
#error "KBV_DPDK_SONAME (the DPDK backend's soname) comes from src/platform/meson.build"
#endif

namespace kbv::platform {
namespace {
constexpr const char* kLog = "platform/transport";

struct Registry {
  std::mutex mu;                       // guards list
  std::vector<const Transport*> list;  // in registration order
  std::mutex load_mu;                  // serialises loading (dlopen runs constructors
                                       // that take `mu`, so never under it)
};
Registry& registry() {
  static Registry* r = new Registry();  // outlives static destruction
  return *r;
}

const Transport* lookup(std::string_view scheme) {
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  for (const Transport* t : r.list)
    if (scheme == t->scheme) return t;
  return nullptr;
}

// Schemes whose transport lives in a library of its own.
struct Loadable {
  const char* scheme;
  const char* soname;  // dlopen'ed beside this library, then by soname
  const char* env;     // names the file instead (only it is tried)
  bool listed;         // loaded by all_transports() to list its devices
};
constexpr Loadable kLoadable[] = {
    {"sim", KBV_SIM_SONAME, "KBV_SIM_LIBRARY", true},
    // DPDK's libraries are not brought into every program that lists
    // devices: only a dpdk: URI loads it (a DPDK application links it).
    {"dpdk", KBV_DPDK_SONAME, "KBV_DPDK_LIBRARY", false},
};

const Loadable* loadable(std::string_view scheme) {
  for (const Loadable& l : kLoadable)
    if (scheme == l.scheme) return &l;
  return nullptr;
}

// The directory this code was loaded from, when it is libkbv.so ("" when
// it is linked into a program: a transport library there would bring a
// second libkbv.so with it, so nothing is loaded; such programs link the
// transport themselves).
std::string own_library_dir(bool& in_libkbv) {
  Dl_info info{};
  in_libkbv = false;
  if (::dladdr(reinterpret_cast<void*>(&registry), &info) == 0 || !info.dli_fname) return {};
  std::string_view path(info.dli_fname);
  const size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  in_libkbv = base.starts_with("libkbv.so");
  if (!in_libkbv || slash == std::string_view::npos) return {};
  return std::string(path.substr(0, slash));
}

// Loads l's library (its constructor registers the scheme). Never unloaded.
// Failures are logged at error, or at debug when `quiet`.
Status load(const Loadable& l, bool quiet) {
  const kbv_log_level_t level = quiet ? KBV_LOG_DEBUG : KBV_LOG_ERROR;
  std::lock_guard lk(registry().load_mu);
  if (lookup(l.scheme)) return KBV_SUCCESS;
  bool in_libkbv = false;
  const std::string dir = own_library_dir(in_libkbv);
  if (!in_libkbv) {
    log::write(level, kLog,
               "{}: devices need the transport of {}, which this program does not link (it "
               "links kbv's layers statically: add kbv_sim_transport_dep, or link libkbv.so)",
               l.scheme, l.soname);
    return KBV_ERR_NOT_SUPPORTED;
  }
  std::vector<std::string> tried;
  if (const char* f = std::getenv(l.env); f && *f) {
    tried.emplace_back(f);
  } else {
    if (!dir.empty()) tried.push_back(dir + "/" + l.soname);
    tried.emplace_back(l.soname);  // the loader's search path
  }
  std::string errors;
  for (const std::string& path : tried) {
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
    if (!h) {
      const char* e = ::dlerror();
      errors += fmt::format("{}{}", errors.empty() ? "" : "; ", e ? e : path.c_str());
      continue;
    }
    if (lookup(l.scheme)) {
      log::debug(kLog, "{}: transport loaded from {}", l.scheme, path);
      return KBV_SUCCESS;
    }
    errors += fmt::format("{}{}: loaded but registers no '{}' transport",
                          errors.empty() ? "" : "; ", path, l.scheme);
  }
  log::write(level, kLog, "{}: devices need {} (set {} to its path): {}", l.scheme, l.soname, l.env,
             errors);
  return KBV_ERR_NOT_SUPPORTED;
}

// ---- the built-in transports: silicon through real_sys() ----
Result<TransportTarget> pci_target(std::string_view address, BackendKind backend) {
  auto addr = PciAddress::parse(address);
  if (!addr) return KBV_ERR_INVALID_ARGUMENT;
  return TransportTarget{&real_sys(), addr->to_string(), nullptr, backend};
}
Result<TransportTarget> vfio_open(std::string_view a) { return pci_target(a, BackendKind::kVfio); }
Result<TransportTarget> iommufd_open(std::string_view a) {
  return pci_target(a, BackendKind::kIommufd);
}
Result<TransportTarget> uio_open(std::string_view a) { return pci_target(a, BackendKind::kUio); }

// ConnectX functions bound to `driver`, as "<scheme>:<bdf>".
void list_bound(std::vector<TransportDevice>& out, const char* scheme, const char* driver) {
  auto hw = discover_mlx5_devices(real_sys(), false);
  if (!hw) return;  // an unreadable sysfs lists no devices (kbv.h)
  for (const auto& p : *hw)
    if (p.driver == driver)
      out.push_back(
          {std::string(scheme) + ":" + p.address.to_string(), p.vendor, p.device, p.numa_node});
}
void vfio_list(std::vector<TransportDevice>& out, bool /*others_found*/) {
  auto hw = discover_mlx5_devices(real_sys(), true);
  if (!hw) return;  // an unreadable sysfs lists no vfio devices (kbv.h)
  for (const auto& p : *hw)
    out.push_back({"vfio:" + p.address.to_string(), p.vendor, p.device, p.numa_node});
}
// iommufd devices are vfio-pci devices: listed once, as vfio: (which picks
// iommufd by itself when it can).
void iommufd_list(std::vector<TransportDevice>&, bool) {}
void uio_list(std::vector<TransportDevice>& out, bool) {
  list_bound(out, "uio", "uio_pci_generic");
}

const Transport kVfio{"vfio", false, vfio_open, vfio_list};
const Transport kIommufd{"iommufd", false, iommufd_open, iommufd_list};
const Transport kUio{"uio", false, uio_open, uio_list};
}  // namespace

// In this file, not a file of its own: anything that finds a transport links
// the registration (a static library drops unreferenced objects).
KBV_TRANSPORT_REGISTER(vfio, kVfio)
KBV_TRANSPORT_REGISTER(iommufd, kIommufd)
KBV_TRANSPORT_REGISTER(uio, kUio)

void register_transport(const Transport& t) {
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  for (const Transport* e : r.list)
    if (std::strcmp(e->scheme, t.scheme) == 0) return;
  r.list.push_back(&t);
}

Result<const Transport*> find_transport(std::string_view scheme) {
  if (const Transport* t = lookup(scheme)) return t;
  const Loadable* l = loadable(scheme);
  if (!l) return KBV_ERR_INVALID_ARGUMENT;
  Status st = load(*l, false);
  if (st.is_error()) return st;
  return lookup(scheme);
}

std::vector<const Transport*> all_transports() {
  for (const Loadable& l : kLoadable) {
    if (!l.listed || lookup(l.scheme)) continue;
    // Quietly: a program on silicon without the model library lists silicon.
    (void)load(l, true);
  }
  std::vector<const Transport*> v;
  {
    Registry& r = registry();
    std::lock_guard lk(r.mu);
    v = r.list;
  }
  std::stable_partition(v.begin(), v.end(), [](const Transport* t) { return !t->is_model; });
  return v;
}

}  // namespace kbv::platform
