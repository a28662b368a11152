// SPDX-License-Identifier: BSD-3-Clause
// VfioDevice: the type1 VFIO backend (see vfio.hpp for the sequence, errors
// and sources).
#include "platform/vfio.hpp"

#include <fcntl.h>
#include <linux/vfio.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.hpp"

namespace kbv::platform {
namespace {

constexpr const char* kComp = "vfio";
constexpr const char* kContainerPath = "/dev/vfio/vfio";

void* int_arg(unsigned long v) { return reinterpret_cast<void*>(static_cast<uintptr_t>(v)); }

// Logs "<step> on <object>: <errno text>" and returns the errno's status.
Status errno_fail(int err, const char* step, const std::string& object) {
  log::error(kComp, "{} on {}: {} (errno {})", step, object, std::strerror(err), err);
  return Status::from_errno(err);
}

// Default usable IOVA space when the kernel does not report ranges (see
// vfio.hpp step 4).
const IovaRange kLegacyRanges[] = {
    {0x10000ull, 0xFEDFFFFFull},
    {0xFEF00000ull, (1ull << 39) - 1},
};

}  // namespace

Result<std::unique_ptr<VfioDevice>> VfioDevice::open(Sys& sys, std::string_view bdf,
                                                     BackendKind kind) {
  if (kind == BackendKind::kUio) return KBV_ERR_INVALID_ARGUMENT;
  Result<PciAddress> addr = PciAddress::parse(bdf);
  if (!addr) {
    log::error(kComp, "'{}' is not a PCI address (expected DDDD:BB:DD.F)", bdf);
    return addr.status();
  }
  // The destructor releases whatever the steps below acquired, so every
  // failure path is leak-free by construction.
  std::unique_ptr<VfioDevice> d(new VfioDevice(sys));
  Result<PciDeviceInfo> info = read_pci_device(sys, *addr);
  if (!info) {
    log::error(kComp, "{}: no such PCI device in sysfs ({})", addr->to_string(),
               info.status().to_string());
    return info.status();
  }
  d->pci_ = std::move(*info);
  if (d->pci_.driver != "vfio-pci") {
    log::error(kComp,
               "{}: {}, not vfio-pci (bind it: write vfio-pci to its driver_override, "
               "then its address to /sys/bus/pci/drivers_probe)",
               d->bdf(),
               d->pci_.driver.empty() ? std::string("not bound to any driver")
                                      : "bound to driver '" + d->pci_.driver + "'");
    return KBV_ERR_INVALID_STATE;
  }
  std::string cdev;
  if (kind == BackendKind::kAuto || kind == BackendKind::kVfio)
    kind =
        iommufd_available(sys, d->bdf(), &cdev) ? BackendKind::kIommufd : BackendKind::kVfioType1;
  d->kind_ = kind;
  if (kind == BackendKind::kIommufd) {
    if (cdev.empty() && !iommufd_available(sys, d->bdf(), &cdev)) {
      log::error(kComp,
                 "{}: no VFIO device cdev with iommufd (needs /dev/iommu and "
                 "/sys/bus/pci/devices/{}/vfio-dev/vfioN: Linux 6.6 or later with "
                 "CONFIG_IOMMUFD and CONFIG_VFIO_DEVICE_CDEV)",
                 d->bdf(), d->bdf());
      return d->pci_.iommu_group < 0 ? KBV_ERR_INVALID_STATE : KBV_ERR_NOT_SUPPORTED;
    }
    if (Status s = d->open_iommufd(cdev); !s) return s;
  } else {
    if (Status s = d->open_type1(); !s) return s;
  }
  if (Status s = d->query_region(VFIO_PCI_CONFIG_REGION_INDEX, d->config_); !s) return s;
  if ((d->config_.flags & (VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE)) !=
          (VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE) ||
      d->config_.size < 64) {
    log::error(kComp, "{}: config region not readable/writable (flags {:#x}, size {:#x})", d->bdf(),
               d->config_.flags, d->config_.size);
    return KBV_ERR_NOT_SUPPORTED;
  }
  if (Status s = d->map_bar0(); !s) return s;
  if (Status s = d->query_msix(); !s) return s;
  log::info(kComp, "{}: opened with {} (BAR0 {:#x} bytes, {} MSI-X vectors, {} IOVA ranges)",
            d->bdf(), backend_name(d->kind_), d->bar0_.size(), d->msix_count_,
            d->iova_ranges_.size());
  return d;
}

Status VfioDevice::open_type1() {
  if (pci_.iommu_group < 0) {
    log::error(kComp, "{}: no iommu_group link in sysfs (IOMMU disabled?)", bdf());
    return KBV_ERR_INVALID_STATE;
  }
  group_path_ = fmt::format("/dev/vfio/{}", pci_.iommu_group);
  if (Status s = open_container(); !s) return s;
  if (Status s = open_group(); !s) return s;
  if (Status s = query_iommu_info(); !s) return s;
  return open_device();
}

Status VfioDevice::open_container() {
  container_fd_ = sys_.open(kContainerPath, O_RDWR);
  if (container_fd_ < 0) {
    const int err = errno;
    container_fd_ = -1;
    return errno_fail(err, "open", kContainerPath);
  }
  const int version = sys_.ioctl(container_fd_, VFIO_GET_API_VERSION, nullptr);
  if (version < 0) return errno_fail(errno, "VFIO_GET_API_VERSION", kContainerPath);
  if (version != VFIO_API_VERSION) {
    log::error(kComp, "VFIO_GET_API_VERSION on {}: version {}, kbv speaks {}", kContainerPath,
               version, VFIO_API_VERSION);
    return KBV_ERR_NOT_SUPPORTED;
  }
  const int ext = sys_.ioctl(container_fd_, VFIO_CHECK_EXTENSION, int_arg(VFIO_TYPE1v2_IOMMU));
  if (ext < 0) return errno_fail(errno, "VFIO_CHECK_EXTENSION(VFIO_TYPE1v2_IOMMU)", kContainerPath);
  if (ext == 0) {
    log::error(kComp,
               "VFIO_CHECK_EXTENSION on {}: type1v2 IOMMU not supported "
               "(is the IOMMU enabled? load vfio_iommu_type1)",
               kContainerPath);
    return KBV_ERR_NOT_SUPPORTED;
  }
  return Status::ok();
}

Status VfioDevice::open_group() {
  group_fd_ = sys_.open(group_path_.c_str(), O_RDWR);
  if (group_fd_ < 0) {
    const int err = errno;
    group_fd_ = -1;
    return errno_fail(err, "open", group_path_);
  }
  vfio_group_status status{};
  status.argsz = sizeof status;
  if (sys_.ioctl(group_fd_, VFIO_GROUP_GET_STATUS, &status) != 0)
    return errno_fail(errno, "VFIO_GROUP_GET_STATUS", group_path_);
  if ((status.flags & VFIO_GROUP_FLAGS_VIABLE) == 0) {
    log::error(kComp,
               "VFIO_GROUP_GET_STATUS on {}: group not viable (all devices in the group "
               "must be bound to vfio-pci)",
               group_path_);
    return KBV_ERR_INVALID_STATE;
  }
  int cfd = container_fd_;
  if (sys_.ioctl(group_fd_, VFIO_GROUP_SET_CONTAINER, &cfd) != 0)
    return errno_fail(errno, "VFIO_GROUP_SET_CONTAINER", group_path_);
  if (sys_.ioctl(container_fd_, VFIO_SET_IOMMU, int_arg(VFIO_TYPE1v2_IOMMU)) != 0)
    return errno_fail(errno, "VFIO_SET_IOMMU(VFIO_TYPE1v2_IOMMU)", kContainerPath);
  return Status::ok();
}

Status VfioDevice::query_iommu_info() {
  // First call with the bare struct; the kernel raises argsz when the
  // capability chain does not fit, then the call is repeated with room for it.
  std::vector<uint64_t> storage((sizeof(vfio_iommu_type1_info) + 7) / 8, 0);
  auto* info = reinterpret_cast<vfio_iommu_type1_info*>(storage.data());
  info->argsz = sizeof(vfio_iommu_type1_info);
  if (sys_.ioctl(container_fd_, VFIO_IOMMU_GET_INFO, info) != 0)
    return errno_fail(errno, "VFIO_IOMMU_GET_INFO", kContainerPath);
  if (info->argsz > sizeof(vfio_iommu_type1_info)) {
    const uint32_t want = info->argsz;
    if (want > (1u << 20)) {
      log::error(kComp, "VFIO_IOMMU_GET_INFO on {}: implausible argsz {}", kContainerPath, want);
      return KBV_ERR_IO;
    }
    storage.assign((want + 7) / 8, 0);
    info = reinterpret_cast<vfio_iommu_type1_info*>(storage.data());
    info->argsz = want;
    if (sys_.ioctl(container_fd_, VFIO_IOMMU_GET_INFO, info) != 0)
      return errno_fail(errno, "VFIO_IOMMU_GET_INFO", kContainerPath);
  }
  const size_t total = std::min<size_t>(info->argsz, storage.size() * 8);
  const auto* bytes = reinterpret_cast<const unsigned char*>(storage.data());

  if ((info->flags & VFIO_IOMMU_INFO_PGSIZES) && info->iova_pgsizes != 0) {
    const uint64_t min_page = info->iova_pgsizes & (~info->iova_pgsizes + 1);  // lowest bit
    iova_page_size_ = min_page < 4096 ? 4096 : min_page;
  }

  iova_ranges_.clear();
  if (info->flags & VFIO_IOMMU_INFO_CAPS) {
    uint32_t off = info->cap_offset;
    for (unsigned hops = 0; off != 0; ++hops) {
      if (hops > 64 || off < sizeof(vfio_iommu_type1_info) || off % 4 != 0 ||
          off + sizeof(vfio_info_cap_header) > total) {
        log::error(kComp, "VFIO_IOMMU_GET_INFO on {}: capability chain malformed at offset {}",
                   kContainerPath, off);
        return KBV_ERR_IO;
      }
      vfio_info_cap_header hdr;
      std::memcpy(&hdr, bytes + off, sizeof hdr);
      if (hdr.id == VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE) {
        vfio_iommu_type1_info_cap_iova_range cap;
        if (off + sizeof cap > total) return KBV_ERR_IO;
        std::memcpy(&cap, bytes + off, sizeof cap);
        const size_t room = (total - off - sizeof cap) / sizeof(vfio_iova_range);
        if (cap.nr_iovas > room) {
          log::error(kComp, "VFIO_IOMMU_GET_INFO on {}: {} IOVA ranges do not fit in argsz {}",
                     kContainerPath, cap.nr_iovas, total);
          return KBV_ERR_IO;
        }
        for (uint32_t i = 0; i < cap.nr_iovas; ++i) {
          vfio_iova_range r;
          std::memcpy(&r, bytes + off + sizeof cap + i * sizeof r, sizeof r);
          if (r.end < r.start) continue;
          iova_ranges_.push_back({r.start, r.end});
        }
        iova_ranges_reported_ = true;
      }
      if (hdr.id == VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL) {
        vfio_iommu_type1_info_dma_avail avail;
        if (off + sizeof avail > total) return KBV_ERR_IO;
        std::memcpy(&avail, bytes + off, sizeof avail);
        dma_avail_ = static_cast<int64_t>(avail.avail);
      }
      if (hdr.next != 0 && hdr.next <= off) {
        log::error(kComp, "VFIO_IOMMU_GET_INFO on {}: capability chain loops at {}", kContainerPath,
                   off);
        return KBV_ERR_IO;
      }
      off = hdr.next;
    }
  }
  if (!iova_ranges_reported_) {
    log::info(kComp, "{}: kernel reports no IOVA ranges; using the conservative default",
              kContainerPath);
    iova_ranges_.assign(std::begin(kLegacyRanges), std::end(kLegacyRanges));
  }
  if (iova_ranges_.empty()) {
    log::error(kComp, "VFIO_IOMMU_GET_INFO on {}: no usable IOVA range", kContainerPath);
    return KBV_ERR_NO_RESOURCES;
  }
  return Status::ok();
}

Status VfioDevice::open_device() {
  const std::string name = bdf();
  const int fd = sys_.ioctl(group_fd_, VFIO_GROUP_GET_DEVICE_FD, const_cast<char*>(name.c_str()));
  if (fd < 0) return errno_fail(errno, "VFIO_GROUP_GET_DEVICE_FD", group_path_ + " (" + name + ")");
  device_fd_ = fd;
  return query_device_info();
}

Status VfioDevice::query_device_info() {
  const std::string name = bdf();
  vfio_device_info info{};
  info.argsz = sizeof info;
  if (sys_.ioctl(device_fd_, VFIO_DEVICE_GET_INFO, &info) != 0)
    return errno_fail(errno, "VFIO_DEVICE_GET_INFO", name);
  device_flags_ = info.flags;
  num_regions_ = info.num_regions;
  num_irqs_ = info.num_irqs;
  if ((info.flags & VFIO_DEVICE_FLAGS_PCI) == 0 || num_regions_ <= VFIO_PCI_CONFIG_REGION_INDEX) {
    log::error(kComp, "VFIO_DEVICE_GET_INFO on {}: not a vfio-pci device (flags {:#x}, {} regions)",
               name, info.flags, num_regions_);
    return KBV_ERR_NOT_SUPPORTED;
  }
  return Status::ok();
}

Status VfioDevice::query_region(uint32_t index, VfioRegion& out) {
  vfio_region_info r{};
  r.argsz = sizeof r;
  r.index = index;
  if (sys_.ioctl(device_fd_, VFIO_DEVICE_GET_REGION_INFO, &r) != 0)
    return errno_fail(errno, "VFIO_DEVICE_GET_REGION_INFO",
                      fmt::format("{} region {}", bdf(), index));
  out.index = index;
  out.flags = r.flags;
  out.size = r.size;
  out.offset = r.offset;
  return Status::ok();
}

Status VfioDevice::map_bar0() {
  if (Status s = query_region(VFIO_PCI_BAR0_REGION_INDEX, bar0_region_); !s) return s;
  if (bar0_region_.size == 0) {
    log::error(kComp, "VFIO_DEVICE_GET_REGION_INFO on {} BAR0: region is empty", bdf());
    return KBV_ERR_IO;
  }
  if ((bar0_region_.flags & VFIO_REGION_INFO_FLAG_MMAP) == 0) {
    log::error(kComp, "VFIO_DEVICE_GET_REGION_INFO on {} BAR0: not mmap-able (flags {:#x})", bdf(),
               bar0_region_.flags);
    return KBV_ERR_NOT_SUPPORTED;
  }
  void* p = sys_.mmap(nullptr, bar0_region_.size, PROT_READ | PROT_WRITE, MAP_SHARED, device_fd_,
                      static_cast<off_t>(bar0_region_.offset));
  if (p == MAP_FAILED || p == nullptr)
    return errno_fail(p == nullptr ? EIO : errno, "mmap", bdf() + " BAR0");
  bar0_map_ = p;
  bar0_ = Bar(p, bar0_region_.size, sys_.mmio_trap(device_fd_, VFIO_PCI_BAR0_REGION_INDEX));
  return Status::ok();
}

Status VfioDevice::query_msix() {
  msix_count_ = 0;
  if (num_irqs_ <= VFIO_PCI_MSIX_IRQ_INDEX) {
    log::warn(kComp, "{}: device reports {} IRQ indexes, no MSI-X", bdf(), num_irqs_);
    return Status::ok();
  }
  vfio_irq_info irq{};
  irq.argsz = sizeof irq;
  irq.index = VFIO_PCI_MSIX_IRQ_INDEX;
  if (sys_.ioctl(device_fd_, VFIO_DEVICE_GET_IRQ_INFO, &irq) != 0)
    return errno_fail(errno, "VFIO_DEVICE_GET_IRQ_INFO(MSI-X)", bdf());
  if ((irq.flags & VFIO_IRQ_INFO_EVENTFD) == 0) {
    log::warn(kComp, "{}: MSI-X cannot signal eventfds (flags {:#x})", bdf(), irq.flags);
    return Status::ok();
  }
  msix_count_ = irq.count;
  return Status::ok();
}

VfioDevice::~VfioDevice() {
  (void)disable_msix();
  if (bar0_map_ != nullptr) {
    if (sys_.munmap(bar0_map_, bar0_region_.size) != 0)
      log::warn(kComp, "munmap of {} BAR0: {}", bdf(), std::strerror(errno));
    bar0_map_ = nullptr;
    bar0_ = Bar();
  }
  if (device_fd_ >= 0) sys_.close(device_fd_);  // a cdev: detaches and unbinds
  if (group_fd_ >= 0) sys_.close(group_fd_);    // detaches the group from the container
  if (container_fd_ >= 0) sys_.close(container_fd_);
  if (iommufd_ >= 0) sys_.close(iommufd_);  // frees the IOAS and its mappings
  device_fd_ = group_fd_ = container_fd_ = iommufd_ = -1;
}

// ---- config space ------------------------------------------------------------

Status VfioDevice::config_read(uint32_t offset, void* buf, size_t len) {
  if (offset > config_.size || len > config_.size - offset) return KBV_ERR_INVALID_ARGUMENT;
  const ssize_t n = sys_.pread(device_fd_, buf, len, static_cast<off_t>(config_.offset + offset));
  if (n < 0) return errno_fail(errno, "pread of config space", bdf());
  if (static_cast<size_t>(n) != len) {
    log::error(kComp, "pread of config space on {}: {} of {} bytes at {:#x}", bdf(), n, len,
               offset);
    return KBV_ERR_IO;
  }
  return Status::ok();
}

Status VfioDevice::config_write(uint32_t offset, const void* buf, size_t len) {
  if (offset > config_.size || len > config_.size - offset) return KBV_ERR_INVALID_ARGUMENT;
  const ssize_t n = sys_.pwrite(device_fd_, buf, len, static_cast<off_t>(config_.offset + offset));
  if (n < 0) return errno_fail(errno, "pwrite of config space", bdf());
  if (static_cast<size_t>(n) != len) {
    log::error(kComp, "pwrite of config space on {}: {} of {} bytes at {:#x}", bdf(), n, len,
               offset);
    return KBV_ERR_IO;
  }
  return Status::ok();
}

// ---- MSI-X -------------------------------------------------------------------

Status VfioDevice::enable_msix(uint32_t n) {
  if (n == 0 || n > msix_count_) {
    log::error(kComp, "{}: cannot enable {} MSI-X vectors (device offers {})", bdf(), n,
               msix_count_);
    return KBV_ERR_INVALID_ARGUMENT;
  }
  if (!msix_fds_.empty()) {
    if (Status s = disable_msix(); !s) return s;
  }
  std::vector<int> fds;
  fds.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) {
      const int err = errno;
      for (int f : fds) ::close(f);
      return errno_fail(err, "eventfd for MSI-X", bdf());
    }
    fds.push_back(fd);
  }
  std::vector<uint64_t> buf((sizeof(vfio_irq_set) + n * sizeof(int32_t) + 7) / 8, 0);
  auto* set = reinterpret_cast<vfio_irq_set*>(buf.data());
  set->argsz = static_cast<uint32_t>(sizeof(vfio_irq_set) + n * sizeof(int32_t));
  set->flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
  set->index = VFIO_PCI_MSIX_IRQ_INDEX;
  set->start = 0;
  set->count = n;
  for (uint32_t i = 0; i < n; ++i) {
    const int32_t fd = fds[i];
    std::memcpy(reinterpret_cast<unsigned char*>(set->data) + i * sizeof fd, &fd, sizeof fd);
  }
  if (sys_.ioctl(device_fd_, VFIO_DEVICE_SET_IRQS, set) != 0) {
    const int err = errno;
    for (int f : fds) ::close(f);
    return errno_fail(err, "VFIO_DEVICE_SET_IRQS(MSI-X enable)", bdf());
  }
  msix_fds_ = std::move(fds);
  log::debug(kComp, "{}: {} MSI-X vectors enabled", bdf(), n);
  return Status::ok();
}

Status VfioDevice::disable_msix() {
  if (msix_fds_.empty()) return Status::ok();
  vfio_irq_set set{};
  set.argsz = sizeof set;
  set.flags = VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER;
  set.index = VFIO_PCI_MSIX_IRQ_INDEX;
  set.start = 0;
  set.count = 0;
  Status st = Status::ok();
  if (sys_.ioctl(device_fd_, VFIO_DEVICE_SET_IRQS, &set) != 0)
    st = errno_fail(errno, "VFIO_DEVICE_SET_IRQS(MSI-X disable)", bdf());
  // The eventfds are closed either way: after a failed disable the kernel
  // still holds its own references, so closing ours leaks nothing.
  for (int f : msix_fds_) ::close(f);
  msix_fds_.clear();
  return st;
}

// ---- reset -------------------------------------------------------------------

Status VfioDevice::reset() {
  if ((device_flags_ & VFIO_DEVICE_FLAGS_RESET) == 0) {
    log::error(kComp, "{}: device does not support VFIO_DEVICE_RESET", bdf());
    return KBV_ERR_NOT_SUPPORTED;
  }
  if (sys_.ioctl(device_fd_, VFIO_DEVICE_RESET, nullptr) != 0)
    return errno_fail(errno, "VFIO_DEVICE_RESET", bdf());
  return Status::ok();
}

// ---- DMA mapping ---------------------------------------------------------------

Status VfioDevice::dma_map(void* va, uint64_t iova, uint64_t size, uint32_t access) {
  const uint64_t page = iova_page_size_;
  if (size == 0 || (reinterpret_cast<uintptr_t>(va) | iova | size) % page != 0 ||
      (access & kDmaReadWrite) == 0)
    return KBV_ERR_INVALID_ARGUMENT;
  if (kind_ == BackendKind::kIommufd) return ioas_map(va, iova, size, access);
  vfio_iommu_type1_dma_map m{};
  m.argsz = sizeof m;
  m.flags = ((access & kDmaDeviceRead) ? VFIO_DMA_MAP_FLAG_READ : 0) |
            ((access & kDmaDeviceWrite) ? VFIO_DMA_MAP_FLAG_WRITE : 0);
  m.vaddr = reinterpret_cast<uintptr_t>(va);
  m.iova = iova;
  m.size = size;
  if (sys_.ioctl(container_fd_, VFIO_IOMMU_MAP_DMA, &m) != 0)
    return errno_fail(errno, "VFIO_IOMMU_MAP_DMA",
                      fmt::format("{} (iova {:#x}, size {:#x})", kContainerPath, iova, size));
  log::trace(kComp, "mapped va {} -> iova {:#x} size {:#x}", va, iova, size);
  return Status::ok();
}

Status VfioDevice::dma_unmap(uint64_t iova, uint64_t size) {
  if (kind_ == BackendKind::kIommufd) return ioas_unmap(iova, size);
  vfio_iommu_type1_dma_unmap u{};
  u.argsz = sizeof u;
  u.flags = 0;
  u.iova = iova;
  u.size = size;
  if (sys_.ioctl(container_fd_, VFIO_IOMMU_UNMAP_DMA, &u) != 0)
    return errno_fail(errno, "VFIO_IOMMU_UNMAP_DMA",
                      fmt::format("{} (iova {:#x}, size {:#x})", kContainerPath, iova, size));
  if (u.size != size) {
    log::error(kComp, "VFIO_IOMMU_UNMAP_DMA on {}: unmapped {:#x} of {:#x} bytes at iova {:#x}",
               kContainerPath, u.size, size, iova);
    return KBV_ERR_IO;
  }
  return Status::ok();
}

}  // namespace kbv::platform
