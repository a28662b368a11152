// SPDX-License-Identifier: BSD-3-Clause
// PCI address parsing and sysfs discovery of ConnectX functions (pci.hpp).
#include "platform/pci.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <tuple>

#include "common/log.hpp"

namespace kbv::platform {
namespace {

// Parses exactly `s` as hex (no prefix), at most max_digits digits.
bool parse_hex(std::string_view s, size_t max_digits, uint32_t& out) {
  if (s.empty() || s.size() > max_digits) return false;
  uint32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || p != s.data() + s.size()) return false;
  out = v;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

// Small sysfs attribute read through the seam; -errno on failure.
int read_attr(Sys& sys, const std::string& path, std::string& out) {
  const int fd = sys.open(path.c_str(), O_RDONLY);
  if (fd < 0) return -errno;
  char buf[128];
  const ssize_t n = sys.read(fd, buf, sizeof buf);
  const int err = errno;
  sys.close(fd);
  if (n < 0) return -err;
  out.assign(buf, static_cast<size_t>(n));
  return 0;
}

bool parse_hex_attr(const std::string& text, uint32_t& out) {
  std::string_view v = trim(text);
  if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) v.remove_prefix(2);
  return parse_hex(v, 8, out);
}

bool read_hex_attr(Sys& sys, const std::string& path, uint32_t& out) {
  std::string s;
  return read_attr(sys, path, s) == 0 && parse_hex_attr(s, out);
}

// Target of a symlink through the seam; empty when it does not exist.
std::string read_link(Sys& sys, const std::string& path) {
  char buf[512];
  const ssize_t n = sys.readlink(path.c_str(), buf, sizeof buf);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof buf) return {};
  return std::string(buf, static_cast<size_t>(n));
}

std::string_view basename(std::string_view p) {
  while (!p.empty() && p.back() == '/') p.remove_suffix(1);
  const size_t slash = p.rfind('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

}  // namespace

Result<PciAddress> PciAddress::parse(std::string_view s) {
  // [domain:]bus:device.function
  const size_t colons = static_cast<size_t>(std::count(s.begin(), s.end(), ':'));
  const size_t dot = s.rfind('.');
  if (colons < 1 || colons > 2 || dot == std::string_view::npos) return KBV_ERR_INVALID_ARGUMENT;
  const size_t c2 = s.rfind(':');
  if (c2 > dot) return KBV_ERR_INVALID_ARGUMENT;
  const size_t c1 = colons == 2 ? s.find(':') : std::string_view::npos;
  const std::string_view dom = colons == 2 ? s.substr(0, c1) : std::string_view("0");
  const std::string_view bus = colons == 2 ? s.substr(c1 + 1, c2 - c1 - 1) : s.substr(0, c2);
  const std::string_view dev = s.substr(c2 + 1, dot - c2 - 1);
  const std::string_view fn = s.substr(dot + 1);
  uint32_t d = 0, b = 0, dv = 0, f = 0;
  if (!parse_hex(dom, 8, d) || !parse_hex(bus, 2, b) || !parse_hex(dev, 2, dv) ||
      !parse_hex(fn, 1, f) || dv > 0x1f || f > 7)
    return KBV_ERR_INVALID_ARGUMENT;
  PciAddress a;
  a.domain = d;
  a.bus = static_cast<uint8_t>(b);
  a.device = static_cast<uint8_t>(dv);
  a.function = static_cast<uint8_t>(f);
  return a;
}

std::string PciAddress::to_string() const {
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, device, function);
}

Result<PciDeviceInfo> read_pci_device(Sys& sys, const PciAddress& addr) {
  const std::string dir = std::string(kSysfsPciDevices) + "/" + addr.to_string();
  PciDeviceInfo info;
  info.address = addr;
  uint32_t vendor = 0, device = 0, cls = 0;
  std::string vendor_text;
  const int verr = read_attr(sys, dir + "/vendor", vendor_text);
  if (verr == -ENOENT) return KBV_ERR_NOT_FOUND;
  if (verr != 0 || !parse_hex_attr(vendor_text, vendor) ||
      !read_hex_attr(sys, dir + "/device", device) || !read_hex_attr(sys, dir + "/class", cls) ||
      vendor > 0xffff || device > 0xffff) {
    log::warn("pci", "{}: vendor/device/class attributes unreadable or malformed",
              addr.to_string());
    return KBV_ERR_IO;
  }
  info.vendor = static_cast<uint16_t>(vendor);
  info.device = static_cast<uint16_t>(device);
  info.class_code = cls & 0xffffff;

  std::string numa;
  if (read_attr(sys, dir + "/numa_node", numa) == 0) {
    const std::string_view v = trim(numa);
    int n = -1;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec == std::errc() && p == v.data() + v.size() && n >= -1) info.numa_node = n;
  }

  info.driver = std::string(basename(read_link(sys, dir + "/driver")));

  const std::string group = read_link(sys, dir + "/iommu_group");
  if (!group.empty()) {
    const std::string_view g = basename(group);
    int n = -1;
    auto [p, ec] = std::from_chars(g.data(), g.data() + g.size(), n);
    if (ec == std::errc() && p == g.data() + g.size() && n >= 0) info.iommu_group = n;
  }
  return info;
}

Result<std::vector<PciDeviceInfo>> discover_mlx5_devices(Sys& sys, bool only_vfio_usable) {
  std::vector<std::string> names;
  if (sys.list_dir(kSysfsPciDevices, names) != 0) {
    const int err = errno;
    log::error("pci", "cannot list {}: errno {}", kSysfsPciDevices, err);
    return Status::from_errno(err);
  }
  std::vector<PciDeviceInfo> out;
  for (const std::string& name : names) {
    Result<PciAddress> addr = PciAddress::parse(name);
    if (!addr) {
      log::debug("pci", "skipping {}: not a PCI address", name);
      continue;
    }
    Result<PciDeviceInfo> info = read_pci_device(sys, *addr);
    if (!info) {
      log::warn("pci", "skipping {}: {}", name, info.status().to_string());
      continue;
    }
    if (info->vendor != kPciVendorMellanox) continue;
    if ((info->class_code >> 16) != 0x02) {
      log::debug("pci", "skipping {}: class {:#08x} is not a network controller", name,
                 info->class_code);
      continue;
    }
    if (!info->usable_with_vfio()) {
      log::info("pci", "{} ({:04x}:{:04x}): driver '{}', iommu group {}{}", name, info->vendor,
                info->device, info->driver.empty() ? "none" : info->driver, info->iommu_group,
                only_vfio_usable ? " — not usable (bind it to vfio-pci)" : "");
      if (only_vfio_usable) continue;
    }
    out.push_back(std::move(*info));
  }
  std::sort(out.begin(), out.end(), [](const PciDeviceInfo& a, const PciDeviceInfo& b) {
    const auto& x = a.address;
    const auto& y = b.address;
    return std::tie(x.domain, x.bus, x.device, x.function) <
           std::tie(y.domain, y.bus, y.device, y.function);
  });
  return out;
}

}  // namespace kbv::platform
