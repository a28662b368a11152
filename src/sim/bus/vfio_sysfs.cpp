// SPDX-License-Identifier: BSD-3-Clause
// sim::Kernel: the model devices' part of sysfs and the merged listings.
// Formats follow Linux drivers/pci/pci-sysfs.c (vendor/device/subsystem_*:
// "0x%04x\n", class: "0x%06x\n", revision: "0x%02x\n", numa_node: "%d\n",
// config: the binary config space) and the links the driver core creates
// (driver -> ../../../bus/pci/drivers/vfio-pci, iommu_group ->
// ../../../kernel/iommu_groups/<n>, relative to /sys/devices/<bus>/<bdf>).
#include "sim/bus/vfio_kernel.hpp"
#include "sim/bus/vfio_state.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

namespace kbv::sim {
namespace {

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// "/sys/devices/pcifffe:00"
std::string bus_dir() {
  char b[40];
  std::snprintf(b, sizeof b, "/sys/devices/pci%04x:00", Kernel::kDomain);
  return b;
}

constexpr const char* kAttrs[] = {
    "class",     "config",   "device",           "numa_node",        "reset", "resource",
    "resource0", "revision", "subsystem_device", "subsystem_vendor", "vendor"};

// A readable descriptor holding `data` (memfd), positioned at 0.
int content_fd(const void* data, size_t n) {
  const int fd = ::memfd_create("kbv-sim-sysfs", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (::pwrite(fd, data, n, 0) != static_cast<ssize_t>(n)) {
    const int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

}  // namespace

// Splits a model sysfs path into its device and the rest ("" = the device
// directory itself). Recognised roots: /sys/bus/pci/devices/<bdf>,
// /sys/devices/pcifffe:00/<bdf>, /sys/bus/pci/drivers/vfio-pci/<bdf>.
namespace {
struct DevPath {
  std::string bdf;
  std::string rest;
  bool via_link = false;  // the root is itself a symlink to the device
};
bool split_dev_path(const std::string& p, DevPath& out) {
  for (std::string_view root : {std::string_view("/sys/bus/pci/devices/"),
                                std::string_view("/sys/bus/pci/drivers/vfio-pci/")}) {
    if (starts_with(p, root)) {
      const std::string tail = p.substr(root.size());
      const auto slash = tail.find('/');
      out.bdf = tail.substr(0, slash);
      out.rest = slash == std::string::npos ? "" : tail.substr(slash + 1);
      out.via_link = true;
      return true;
    }
  }
  const std::string bus = bus_dir() + "/";
  if (starts_with(p, bus)) {
    const std::string tail = p.substr(bus.size());
    const auto slash = tail.find('/');
    out.bdf = tail.substr(0, slash);
    out.rest = slash == std::string::npos ? "" : tail.substr(slash + 1);
    return true;
  }
  return false;
}
}  // namespace

// /sys/module/<name> of the modules a vfio-pci function needs (Linux:
// kernel/params.c and module.c build one directory per loaded or built-in
// module; DPDK's rte_eal_check_module("vfio") stats it before it touches
// /dev/vfio), present while a model function is bound to vfio-pci.
// vfio's bool parameter enable_unsafe_noiommu_mode (drivers/vfio/vfio_main.c,
// module_param_named(..., S_IRUGO | S_IWUSR)) reads "N\n" (param_get_bool):
// the model's VFIO has an IOMMU.
namespace {
constexpr const char* kVfioModules[] = {"vfio", "vfio_iommu_type1", "vfio_pci"};
constexpr std::string_view kModuleRoot = "/sys/module/";
constexpr std::string_view kNoiommuParam = "parameters/enable_unsafe_noiommu_mode";
enum class ModuleEntry { kNone, kDir, kFile };
// What a path under /sys/module/ is, for the modules above.
ModuleEntry module_entry(const std::string& p) {
  if (!starts_with(p, kModuleRoot)) return ModuleEntry::kNone;
  const std::string tail = p.substr(kModuleRoot.size());
  const auto slash = tail.find('/');
  const std::string name = tail.substr(0, slash);
  const std::string rest = slash == std::string::npos ? "" : tail.substr(slash + 1);
  if (std::none_of(std::begin(kVfioModules), std::end(kVfioModules),
                   [&](const char* m) { return name == m; }))
    return ModuleEntry::kNone;
  if (rest.empty()) return ModuleEntry::kDir;
  if (name != "vfio") return ModuleEntry::kNone;
  if (rest == "parameters") return ModuleEntry::kDir;
  return rest == kNoiommuParam ? ModuleEntry::kFile : ModuleEntry::kNone;
}
}  // namespace

bool Kernel::vfio_modules_loaded() const {
  for (auto& [n, m] : models_)
    if (m->driver == "vfio-pci") return true;
  return false;
}

bool Kernel::owns_path(const char* path) const {
  if (!path) return false;
  const std::string p = normalize(path);
  std::lock_guard lk(mu_);
  if (p == "/dev/vfio/vfio") return true;
  if (p == "/dev/iommu") return iommufd_;
  if (p == "/dev/vfio/devices") return iommufd_ && !models_.empty();
  if (model_by_cdev(p)) return true;
  if (starts_with(p, "/dev/vfio/")) {
    const std::string n = p.substr(10);
    return !n.empty() && n.find_first_not_of("0123456789") == std::string::npos && n.size() < 10 &&
           vfio_group(std::stoi(n)) != nullptr;
  }
  if (p == "/sys/bus/pci/devices" || p == "/sys/kernel/iommu_groups" || p == "/dev/vfio")
    return !models_.empty();  // merged listings
  if (p == bus_dir()) return true;
  if (p == "/proc/self/pagemap") return any_uio();
  if (p == "/sys/module" || module_entry(p) != ModuleEntry::kNone)
    return vfio_modules_loaded();  // /sys/module: merged listing
  DevPath dp;
  if (split_dev_path(p, dp)) return model_by_bdf(dp.bdf) != nullptr;
  constexpr std::string_view kGroups = "/sys/kernel/iommu_groups/";
  if (starts_with(p, kGroups)) {
    const std::string tail = p.substr(kGroups.size());
    const std::string n = tail.substr(0, tail.find('/'));
    return !n.empty() && n.find_first_not_of("0123456789") == std::string::npos && n.size() < 10 &&
           model_by_group(std::stoi(n)) != nullptr;
  }
  return false;
}

int Kernel::sysfs_open(const std::string& path, int flags, bool& handled) {
  const std::string p = normalize(path.c_str());
  DevPath dp;
  handled = false;
  if (const ModuleEntry me = module_entry(p); me != ModuleEntry::kNone && vfio_modules_loaded()) {
    handled = true;
    if (me == ModuleEntry::kDir) {
      errno = EISDIR;
      return -1;
    }
    if ((flags & O_ACCMODE) != O_RDONLY) {  // root may write it on Linux; not modelled
      errno = EACCES;
      return -1;
    }
    return content_fd("N\n", 2);
  }
  if (!split_dev_path(p, dp)) return -1;
  Model* m = model_by_bdf(dp.bdf);
  if (!m) return -1;
  handled = true;
  auto fail = [](int e) {
    errno = e;
    return -1;
  };
  if (dp.rest.empty() || dp.rest.find('/') != std::string::npos) return fail(ENOENT);
  const bool known = std::any_of(std::begin(kAttrs), std::end(kAttrs),
                                 [&](const char* a) { return dp.rest == a; });
  if (!known) return fail(ENOENT);
  auto model_fd = [&](Fd::Kind k) {
    const int fd = reserve_fd(Fd{k, nullptr, m}, (flags & O_CLOEXEC) != 0);
    return fd < 0 ? fail(-fd) : fd;
  };
  // Root may write config (0644) and reset (0200); resource0 is mmap'ed
  // (0600); the others are 0444.
  const int acc = flags & O_ACCMODE;
  if (dp.rest == "config" && acc != O_RDONLY) return model_fd(Fd::kSysConfig);
  if (dp.rest == "resource0") return model_fd(Fd::kSysResource);
  if (dp.rest == "reset") return acc == O_WRONLY ? model_fd(Fd::kSysReset) : fail(EACCES);
  if (acc != O_RDONLY) return fail(EACCES);
  const DeviceConfig& c = m->dev->config();
  char text[32];
  if (dp.rest == "config") {
    std::byte cfg[PciConfig::kSize];
    m->dev->config_read(0, cfg);
    return content_fd(cfg, sizeof cfg);
  } else if (dp.rest == "vendor") {
    std::snprintf(text, sizeof text, "0x%04x\n", c.vendor_id);
  } else if (dp.rest == "device") {
    std::snprintf(text, sizeof text, "0x%04x\n", c.device_id);
  } else if (dp.rest == "subsystem_vendor") {
    std::snprintf(text, sizeof text, "0x%04x\n", c.subsystem_vendor_id);
  } else if (dp.rest == "subsystem_device") {
    std::snprintf(text, sizeof text, "0x%04x\n", c.subsystem_id);
  } else if (dp.rest == "resource") {
    // pci-sysfs resource_show: BAR0 (64-bit memory, prefetchable), then
    // empty resources. Start: a made-up bus address.
    std::string t;
    char line[80];
    const uint64_t start = 0xe0000000ull + (uint64_t{m->slot} << 28);
    std::snprintf(line, sizeof line, "0x%016llx 0x%016llx 0x%016llx\n",
                  static_cast<unsigned long long>(start),
                  static_cast<unsigned long long>(start + c.bar0_size - 1), 0x14220cull);
    t += line;
    for (int i = 1; i < 13; ++i) t += "0x0000000000000000 0x0000000000000000 0x0000000000000000\n";
    return content_fd(t.data(), t.size());
  } else if (dp.rest == "class") {
    std::snprintf(text, sizeof text, "0x%06x\n", c.class_code);
  } else if (dp.rest == "revision") {
    std::snprintf(text, sizeof text, "0x%02x\n", c.revision);
  } else {  // numa_node
    std::snprintf(text, sizeof text, "%d\n", c.numa_node);
  }
  return content_fd(text, std::strlen(text));
}

ssize_t Kernel::sysfs_readlink(const std::string& p, std::string& target, bool& handled) {
  handled = false;
  DevPath dp;
  if (split_dev_path(p, dp)) {
    Model* m = model_by_bdf(dp.bdf);
    if (!m) return -1;
    handled = true;
    if (dp.rest.empty()) {
      if (!dp.via_link) return -EINVAL;  // the real directory
      // /sys/bus/pci/devices/<bdf> -> ../../../devices/pcifffe:00/<bdf>;
      // /sys/bus/pci/drivers/vfio-pci/<bdf> is one level deeper.
      target =
          (starts_with(p, "/sys/bus/pci/drivers/") ? "../../../../devices/" : "../../../devices/") +
          bus_dir().substr(std::strlen("/sys/devices/")) + "/" + m->bdf;
      return 0;
    }
    if (dp.rest == "driver") {
      if (m->driver.empty()) return -ENOENT;
      target = "../../../bus/pci/drivers/" + m->driver;
      return 0;
    }
    if (dp.rest == "iommu_group") {
      if (!m->has_group) return -ENOENT;
      target = "../../../kernel/iommu_groups/" + std::to_string(m->group);
      return 0;
    }
    const bool attr = std::any_of(std::begin(kAttrs), std::end(kAttrs),
                                  [&](const char* a) { return dp.rest == a; });
    return attr ? -EINVAL : -ENOENT;
  }
  constexpr std::string_view kGroups = "/sys/kernel/iommu_groups/";
  if (starts_with(p, kGroups)) {
    // <n>/devices/<bdf> -> ../../../../devices/pcifffe:00/<bdf>
    const std::string tail = p.substr(kGroups.size());
    const auto slash = tail.find('/');
    const std::string n = tail.substr(0, slash);
    if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos)
      return -1;
    Model* m = model_by_group(std::stoi(n));
    if (!m) return -1;
    handled = true;
    const std::string rest = slash == std::string::npos ? "" : tail.substr(slash + 1);
    if (rest == "devices/" + m->bdf) {
      target =
          "../../../../devices/" + bus_dir().substr(std::strlen("/sys/devices/")) + "/" + m->bdf;
      return 0;
    }
    return rest.empty() || rest == "devices" ? -EINVAL : -ENOENT;
  }
  return -1;
}

int Kernel::sysfs_list(const std::string& p, std::vector<std::string>& names, bool& handled) {
  handled = true;
  auto merged = [&](const char* real_dir, std::vector<std::string> extra) {
    std::set<std::string> all(extra.begin(), extra.end());
    std::vector<std::string> r;
    if (real_.list_dir(real_dir, r) == 0) all.insert(r.begin(), r.end());
    names.assign(all.begin(), all.end());
    return 0;
  };
  std::vector<std::string> bdfs, groups;
  std::vector<std::string> vfio_groups;
  for (auto& [n, m] : models_) {
    bdfs.push_back(m->bdf);
    if (m->has_group) groups.push_back(std::to_string(m->group));
    if (vfio_group(m->group)) vfio_groups.push_back(std::to_string(m->group));
  }
  if (p == "/sys/bus/pci/devices") return merged("/sys/bus/pci/devices", bdfs);
  if (vfio_modules_loaded()) {
    if (p == "/sys/module")
      return merged("/sys/module", {std::begin(kVfioModules), std::end(kVfioModules)});
    if (const ModuleEntry me = module_entry(p); me != ModuleEntry::kNone) {
      if (me == ModuleEntry::kFile) return -ENOTDIR;
      names.clear();
      if (p == "/sys/module/vfio") names = {"parameters"};
      if (p == "/sys/module/vfio/parameters") names = {std::string(kNoiommuParam.substr(11))};
      return 0;
    }
  }
  if (p == "/sys/kernel/iommu_groups") return merged("/sys/kernel/iommu_groups", groups);
  if (p == "/dev/vfio") {
    vfio_groups.push_back("vfio");
    if (iommufd_) vfio_groups.push_back("devices");
    return merged("/dev/vfio", vfio_groups);
  }
  if (p == bus_dir()) {
    names = bdfs;
    return 0;
  }
  DevPath dp;
  if (split_dev_path(p, dp) && model_by_bdf(dp.bdf)) {
    Model* m = model_by_bdf(dp.bdf);
    const bool cdev = iommufd_ && m->driver == "vfio-pci" && m->has_group;
    const std::string vdev = "vfio" + std::to_string(m->slot);
    if (dp.rest == "vfio-dev" && cdev) {
      names = {vdev};
      return 0;
    }
    if (dp.rest == "vfio-dev/" + vdev && cdev) {
      names = {"dev"};
      return 0;
    }
    if (!dp.rest.empty()) return dp.rest == "vfio-dev" ? -ENOENT : -ENOTDIR;
    names.assign(std::begin(kAttrs), std::end(kAttrs));
    if (!m->driver.empty()) names.push_back("driver");
    if (m->has_group) names.push_back("iommu_group");
    if (cdev) names.push_back("vfio-dev");
    std::sort(names.begin(), names.end());
    return 0;
  }
  if (p == "/dev/vfio/devices" && iommufd_) {
    names.clear();
    for (auto& [n, m] : models_)
      if (m->driver == "vfio-pci" && m->has_group)
        names.push_back("vfio" + std::to_string(m->slot));
    return 0;
  }
  constexpr std::string_view kGroups = "/sys/kernel/iommu_groups/";
  if (starts_with(p, kGroups)) {
    const std::string tail = p.substr(kGroups.size());
    const auto slash = tail.find('/');
    const std::string n = tail.substr(0, slash);
    if (!n.empty() && n.size() < 10 && n.find_first_not_of("0123456789") == std::string::npos) {
      if (Model* m = model_by_group(std::stoi(n))) {
        const std::string rest = slash == std::string::npos ? "" : tail.substr(slash + 1);
        if (rest.empty()) {
          names = {"devices"};
          return 0;
        }
        if (rest == "devices") {
          names = {m->bdf};
          return 0;
        }
        return rest == "devices/" + m->bdf ? -ENOTDIR : -ENOENT;
      }
    }
  }
  handled = false;
  return -1;
}

int Kernel::stat_path(const char* path, struct ::stat* st, bool follow) {
  if (!path || !st) {
    errno = EFAULT;
    return -1;
  }
  const std::string p = normalize(path);
  enum Kind { kNone, kDir, kFile, kLink, kChr } kind = kNone;
  {
    std::lock_guard lk(mu_);
    constexpr std::string_view kGroups = "/sys/kernel/iommu_groups/";
    DevPath dp;
    auto link_or_dir = [&] { return follow ? kDir : kLink; };
    if (p == "/dev/vfio/vfio" || (p == "/dev/iommu" && iommufd_) || model_by_cdev(p)) {
      kind = kChr;
    } else if (p == "/dev/vfio/devices" && iommufd_) {
      kind = kDir;
    } else if (starts_with(p, "/dev/vfio/")) {
      const std::string n = p.substr(10);
      if (!n.empty() && n.size() < 10 && n.find_first_not_of("0123456789") == std::string::npos &&
          vfio_group(std::stoi(n)))
        kind = kChr;
    } else if (p == "/dev/vfio" || p == "/sys/bus/pci/devices" || p == "/sys/kernel/iommu_groups" ||
               p == bus_dir() || (p == "/sys/module" && vfio_modules_loaded())) {
      kind = kDir;
    } else if (const ModuleEntry me = module_entry(p);
               me != ModuleEntry::kNone && vfio_modules_loaded()) {
      kind = me == ModuleEntry::kDir ? kDir : kFile;
    } else if (split_dev_path(p, dp) && model_by_bdf(dp.bdf)) {
      if (dp.rest.empty())
        kind = dp.via_link ? link_or_dir() : kDir;
      else if ((dp.rest == "driver" && !model_by_bdf(dp.bdf)->driver.empty()) ||
               (dp.rest == "iommu_group" && model_by_bdf(dp.bdf)->has_group))
        kind = link_or_dir();
      else if (iommufd_ && model_by_bdf(dp.bdf)->driver == "vfio-pci" &&
               (dp.rest == "vfio-dev" ||
                dp.rest == "vfio-dev/vfio" + std::to_string(model_by_bdf(dp.bdf)->slot)))
        kind = kDir;
      else if (std::any_of(std::begin(kAttrs), std::end(kAttrs),
                           [&](const char* a) { return dp.rest == a; }))
        kind = kFile;
    } else if (starts_with(p, kGroups)) {
      const std::string tail = p.substr(kGroups.size());
      const auto slash = tail.find('/');
      const std::string n = tail.substr(0, slash);
      if (!n.empty() && n.size() < 10 && n.find_first_not_of("0123456789") == std::string::npos) {
        if (Model* m = model_by_group(std::stoi(n))) {
          const std::string rest = slash == std::string::npos ? "" : tail.substr(slash + 1);
          if (rest.empty() || rest == "devices") kind = kDir;
          if (rest == "devices/" + m->bdf) kind = link_or_dir();
        }
      }
    }
  }
  if (kind == kNone) {
    errno = ENOENT;
    return -1;
  }
  std::memset(st, 0, sizeof *st);
  st->st_nlink = 1;
  st->st_blksize = 4096;
  switch (kind) {
    case kDir: st->st_mode = S_IFDIR | 0755; break;
    case kFile:
      st->st_mode = S_IFREG | 0444;
      st->st_size = 4096;  // sysfs reports a page for attributes
      break;
    case kLink: st->st_mode = S_IFLNK | 0777; break;
    case kChr: st->st_mode = S_IFCHR | 0600; break;
    case kNone: break;
  }
  return 0;
}

ssize_t Kernel::readlink(const char* path, char* buf, size_t size) {
  if (!path || !buf) {
    errno = EFAULT;
    return -1;
  }
  const std::string p = normalize(path);
  std::unique_lock lk(mu_);
  std::string target;
  bool handled = false;
  const ssize_t r = sysfs_readlink(p, target, handled);
  lk.unlock();
  if (!handled) return real_.readlink(path, buf, size);
  if (r < 0) {
    errno = static_cast<int>(-r);
    return -1;
  }
  const size_t n = std::min(size, target.size());  // no NUL, like readlink(2)
  std::memcpy(buf, target.data(), n);
  return static_cast<ssize_t>(n);
}

int Kernel::list_dir(const char* path, std::vector<std::string>& names) {
  if (!path) {
    errno = EFAULT;
    return -1;
  }
  const std::string p = normalize(path);
  std::unique_lock lk(mu_);
  bool handled = false;
  std::vector<std::string> out;
  const int r = sysfs_list(p, out, handled);
  lk.unlock();
  if (!handled) return real_.list_dir(path, names);
  if (r < 0) {
    errno = -r;
    return -1;
  }
  names = std::move(out);
  return 0;
}

}  // namespace kbv::sim
