// SPDX-License-Identifier: BSD-3-Clause
// UioDevice: uio_pci_generic without an IOMMU (see uio.hpp for the steps,
// errors and sources).
#include "platform/uio.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "common/log.hpp"
#include "platform/linux_uapi.hpp"

namespace kbv::platform {
namespace {

constexpr const char* kComp = "uio";
constexpr uint64_t kPage = 4096;

Status errno_fail(int err, const char* step, const std::string& object) {
  log::error(kComp, "{} on {}: {} (errno {})", step, object, std::strerror(err), err);
  return Status::from_errno(err);
}

}  // namespace

std::string UioDevice::sysfs(const char* attr) const {
  return fmt::format("/sys/bus/pci/devices/{}/{}", bdf(), attr);
}

Result<std::unique_ptr<UioDevice>> UioDevice::open(Sys& sys, std::string_view bdf) {
  Result<PciAddress> addr = PciAddress::parse(bdf);
  if (!addr) {
    log::error(kComp, "'{}' is not a PCI address (expected DDDD:BB:DD.F)", bdf);
    return addr.status();
  }
  std::unique_ptr<UioDevice> d(new UioDevice(sys));
  Result<PciDeviceInfo> info = read_pci_device(sys, *addr);
  if (!info) {
    log::error(kComp, "{}: no such PCI device in sysfs ({})", addr->to_string(),
               info.status().to_string());
    return info.status();
  }
  d->pci_ = std::move(*info);
  if (d->pci_.driver != "uio_pci_generic") {
    log::error(kComp,
               "{}: {}, not uio_pci_generic (modprobe uio_pci_generic; write "
               "uio_pci_generic to its driver_override, then its address to "
               "/sys/bus/pci/drivers_probe)",
               d->bdf(),
               d->pci_.driver.empty() ? std::string("not bound to any driver")
                                      : "bound to driver '" + d->pci_.driver + "'");
    return KBV_ERR_INVALID_STATE;
  }
  // A safety notice, shown at warn level whatever KBV_LOG_LEVEL filters
  // (through the application's log handler when it set one).
  log::detail::emit(KBV_LOG_WARN, kComp,
                    fmt::format("{}: opened through UIO without an IOMMU: the device can read "
                                "and write ALL of this machine's memory, not only kbv's buffers "
                                "(bind it to vfio-pci where an IOMMU is available)",
                                d->bdf()));
  const std::string cfg = d->sysfs("config");
  d->config_fd_ = sys.open(cfg.c_str(), O_RDWR | O_CLOEXEC);
  if (d->config_fd_ < 0) {
    const int err = errno;
    d->config_fd_ = -1;
    return errno_fail(err, "open", cfg);
  }
  if (Status s = d->map_bar0(); !s) return s;
  d->pagemap_fd_ = sys.open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (d->pagemap_fd_ < 0) {
    const int err = errno;
    d->pagemap_fd_ = -1;
    return errno_fail(err, "open", "/proc/self/pagemap");
  }
  // A resident page of our own: its PFN must be visible.
  static thread_local uint64_t probe[kPage / 8];
  probe[0] = 1;
  std::vector<uint64_t> pa;
  const auto page = reinterpret_cast<uintptr_t>(probe) & ~(kPage - 1);
  const Status ps = d->physical_pages(reinterpret_cast<void*>(page), kPage, pa);
  if (!ps) return ps;
  log::info(kComp, "{}: opened with uio (BAR0 {:#x} bytes, no interrupts: EQs are polled)",
            d->bdf(), d->bar0_size_);
  return d;
}

Status UioDevice::map_bar0() {
  // resource: one "0x%016llx 0x%016llx 0x%016llx\n" line per resource.
  const std::string res = sysfs("resource");
  const int fd = sys_.open(res.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_fail(errno, "open", res);
  char text[256] = {};
  const ssize_t n = sys_.pread(fd, text, sizeof text - 1, 0);
  const int rerr = errno;
  sys_.close(fd);
  if (n < 0) return errno_fail(rerr, "read", res);
  uint64_t start = 0, end = 0, flags = 0;
  if (std::sscanf(text, "%" SCNx64 " %" SCNx64 " %" SCNx64, &start, &end, &flags) != 3 ||
      end <= start) {
    log::error(kComp, "{}: BAR0 is empty or unreadable in {}", bdf(), res);
    return KBV_ERR_NOT_SUPPORTED;
  }
  bar0_size_ = end - start + 1;
  const std::string r0 = sysfs("resource0");
  resource0_fd_ = sys_.open(r0.c_str(), O_RDWR | O_CLOEXEC);
  if (resource0_fd_ < 0) {
    const int err = errno;
    resource0_fd_ = -1;
    return errno_fail(err, "open", r0);
  }
  void* p = sys_.mmap(nullptr, bar0_size_, PROT_READ | PROT_WRITE, MAP_SHARED, resource0_fd_, 0);
  if (p == MAP_FAILED || p == nullptr) return errno_fail(p ? errno : EIO, "mmap", r0);
  bar0_map_ = p;
  bar0_ = Bar(p, bar0_size_, sys_.mmio_trap(resource0_fd_, 0));
  return Status::ok();
}

UioDevice::~UioDevice() {
  {
    std::lock_guard lk(mu_);
    if (!pins_.empty())
      log::error(kComp, "{}: closed with {} DMA pages still pinned", bdf(), pins_.size());
  }
  if (bar0_map_ != nullptr && sys_.munmap(bar0_map_, bar0_size_) != 0)
    log::warn(kComp, "munmap of {} BAR0: {}", bdf(), std::strerror(errno));
  bar0_ = Bar();
  for (int fd : {resource0_fd_, config_fd_, pagemap_fd_})
    if (fd >= 0) sys_.close(fd);
}

Status UioDevice::config_read(uint32_t offset, void* buf, size_t len) {
  if (offset > kConfigSize || len > kConfigSize - offset) return KBV_ERR_INVALID_ARGUMENT;
  const ssize_t n = sys_.pread(config_fd_, buf, len, offset);
  if (n < 0) return errno_fail(errno, "pread of config space", bdf());
  if (static_cast<size_t>(n) != len) return KBV_ERR_IO;
  return Status::ok();
}

Status UioDevice::config_write(uint32_t offset, const void* buf, size_t len) {
  if (offset > kConfigSize || len > kConfigSize - offset) return KBV_ERR_INVALID_ARGUMENT;
  const ssize_t n = sys_.pwrite(config_fd_, buf, len, offset);
  if (n < 0) return errno_fail(errno, "pwrite of config space", bdf());
  if (static_cast<size_t>(n) != len) return KBV_ERR_IO;
  return Status::ok();
}

Status UioDevice::enable_msix(uint32_t n) {
  log::error(kComp, "{}: uio_pci_generic offers no MSI-X ({} vectors asked); EQs are polled", bdf(),
             n);
  return KBV_ERR_NOT_SUPPORTED;
}

Status UioDevice::reset() {
  const std::string path = sysfs("reset");
  const int fd = sys_.open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno_fail(errno, "open", path);
  const ssize_t n = sys_.pwrite(fd, "1", 1, 0);
  const int err = errno;
  sys_.close(fd);
  if (n != 1) return errno_fail(n < 0 ? err : EIO, "write", path);
  return Status::ok();
}

std::vector<IovaRange> UioDevice::iova_ranges() const {
  return {{kPage, (1ull << 52) - 1}};  // physical addresses (x86-64: at most 52 bits)
}

Status UioDevice::physical_pages(const void* va, uint64_t size, std::vector<uint64_t>& out) {
  const auto start = reinterpret_cast<uintptr_t>(va);
  if (size == 0 || (start | size) % kPage != 0) return KBV_ERR_INVALID_ARGUMENT;
  const size_t pages = size / kPage;
  std::vector<uint64_t> entries(pages);
  const off_t off = static_cast<off_t>(start / kPage * 8);
  const ssize_t n = sys_.pread(pagemap_fd_, entries.data(), pages * 8, off);
  if (n < 0) return errno_fail(errno, "pread", "/proc/self/pagemap");
  if (static_cast<size_t>(n) != pages * 8) return KBV_ERR_IO;
  out.reserve(out.size() + pages);
  for (size_t i = 0; i < pages; ++i) {
    const uint64_t e = entries[i];
    if ((e & uapi::kPagemapPresent) == 0) {
      log::error(kComp, "{}: page {:#x} is not resident: no physical address", bdf(),
                 start + i * kPage);
      return KBV_ERR_IOMMU_FAULT;
    }
    const uint64_t pfn = e & uapi::kPagemapPfnMask;
    if (pfn == 0) {
      log::error(kComp,
                 "/proc/self/pagemap hides physical addresses: UIO DMA needs CAP_SYS_ADMIN "
                 "(run as root)");
      return KBV_ERR_ACCESS_DENIED;
    }
    out.push_back(pfn * kPage);
  }
  return Status::ok();
}

Status UioDevice::dma_map(void* va, uint64_t iova, uint64_t size, uint32_t access) {
  const auto start = reinterpret_cast<uintptr_t>(va);
  if (size == 0 || (start | size) % kPage != 0 || (access & kDmaReadWrite) == 0)
    return KBV_ERR_INVALID_ARGUMENT;
  std::lock_guard lk(mu_);
  for (uintptr_t p = start; p < start + size; p += kPage) {
    if (pins_[p]++ != 0) continue;
    if (::mlock(reinterpret_cast<void*>(p), kPage) != 0) {
      const int err = errno;
      for (uintptr_t q = start; q <= p; q += kPage)
        if (--pins_[q] == 0) {
          if (q != p) (void)::munlock(reinterpret_cast<void*>(q), kPage);
          pins_.erase(q);
        }
      return errno_fail(err, "mlock", fmt::format("{:#x} (+{:#x})", start, size));
    }
  }
  maps_.emplace(std::make_pair(iova, size), start);
  return Status::ok();
}

Status UioDevice::dma_unmap(uint64_t iova, uint64_t size) {
  std::lock_guard lk(mu_);
  auto it = maps_.find(std::make_pair(iova, size));
  if (it == maps_.end()) return KBV_ERR_INVALID_ARGUMENT;
  const uintptr_t start = it->second;
  maps_.erase(it);
  for (uintptr_t p = start; p < start + size; p += kPage) {
    auto pin = pins_.find(p);
    if (pin == pins_.end() || --pin->second != 0) continue;
    (void)::munlock(reinterpret_cast<void*>(p), kPage);
    pins_.erase(pin);
  }
  return Status::ok();
}

size_t UioDevice::pinned_pages() const {
  std::lock_guard lk(mu_);
  return pins_.size();
}

}  // namespace kbv::platform
