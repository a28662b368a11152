// SPDX-License-Identifier: BSD-3-Clause
// VfioDevice over iommufd and the VFIO device cdev (vfio.hpp steps a-f).
// Sources: Documentation/userspace-api/iommufd.rst, Documentation/driver-api/
// vfio.rst "VFIO device cdev" and its example, include/uapi/linux/iommufd.h
// and vfio.h (layouts in linux_uapi.hpp); QEMU hw/vfio/iommufd.c and DPDK
// lib/eal/linux/eal_vfio.c choose the cdev when /dev/iommu and
// vfio-dev/vfioN exist.
#include <fcntl.h>
#include <linux/vfio.h>

#include <cerrno>
#include <cstring>

#include "common/log.hpp"
#include "platform/linux_uapi.hpp"
#include "platform/vfio.hpp"

namespace kbv::platform {
namespace {

constexpr const char* kComp = "vfio";
constexpr const char* kIommuPath = "/dev/iommu";

Status errno_fail(int err, const char* step, const std::string& object) {
  log::error(kComp, "{} on {}: {} (errno {})", step, object, std::strerror(err), err);
  return Status::from_errno(err);
}

}  // namespace

bool VfioDevice::iommufd_available(Sys& sys, std::string_view bdf, std::string* cdev) {
  std::vector<std::string> names;
  const std::string dir = fmt::format("/sys/bus/pci/devices/{}/vfio-dev", bdf);
  if (sys.list_dir(dir.c_str(), names) != 0) return false;
  std::string found;
  for (const std::string& n : names)
    if (n.size() > 4 && n.compare(0, 4, "vfio") == 0 &&
        n.find_first_not_of("0123456789", 4) == std::string::npos)
      found = n;
  if (found.empty()) return false;
  const int fd = sys.open(kIommuPath, O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  sys.close(fd);
  if (cdev) *cdev = "/dev/vfio/devices/" + found;
  return true;
}

Status VfioDevice::open_iommufd(const std::string& cdev) {
  cdev_path_ = cdev;
  iommufd_ = sys_.open(kIommuPath, O_RDWR | O_CLOEXEC);
  if (iommufd_ < 0) {
    const int err = errno;
    iommufd_ = -1;
    return errno_fail(err, "open", kIommuPath);
  }
  const int fd = sys_.open(cdev_path_.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return errno_fail(errno, "open", cdev_path_);
  device_fd_ = fd;

  uapi::kbv_vfio_device_bind_iommufd bind{};
  bind.argsz = sizeof bind;
  bind.iommufd = iommufd_;
  if (sys_.ioctl(device_fd_, uapi::kVfioDeviceBindIommufd, &bind) != 0) {
    const int err = errno;
    if (err == EBUSY)
      log::error(kComp, "{}: the device is in use through its VFIO group (/dev/vfio/{})", bdf(),
                 pci_.iommu_group);
    return errno_fail(err, "VFIO_DEVICE_BIND_IOMMUFD", cdev_path_);
  }
  uapi::kbv_iommu_ioas_alloc alloc{};
  alloc.size = sizeof alloc;
  if (sys_.ioctl(iommufd_, uapi::kIommuIoasAlloc, &alloc) != 0)
    return errno_fail(errno, "IOMMU_IOAS_ALLOC", kIommuPath);
  ioas_id_ = alloc.out_ioas_id;
  uapi::kbv_vfio_device_attach_iommufd_pt attach{};
  attach.argsz = sizeof attach;
  attach.pt_id = ioas_id_;
  if (sys_.ioctl(device_fd_, uapi::kVfioDeviceAttachIommufdPt, &attach) != 0)
    return errno_fail(errno, "VFIO_DEVICE_ATTACH_IOMMUFD_PT",
                      fmt::format("{} (ioas {})", cdev_path_, ioas_id_));
  // The ranges narrow with each attached device: query after the attach.
  if (Status s = query_ioas_ranges(); !s) return s;
  return query_device_info();
}

Status VfioDevice::query_ioas_ranges() {
  std::vector<uapi::kbv_iommu_iova_range> ranges(4);
  uapi::kbv_iommu_ioas_iova_ranges q{};
  for (int attempt = 0;; ++attempt) {
    q = {};
    q.size = sizeof q;
    q.ioas_id = ioas_id_;
    q.num_iovas = static_cast<uint32_t>(ranges.size());
    q.allowed_iovas = reinterpret_cast<uintptr_t>(ranges.data());
    if (sys_.ioctl(iommufd_, uapi::kIommuIoasIovaRanges, &q) == 0) break;
    const int err = errno;
    // EMSGSIZE: num_iovas now says how many there are; ask again with room.
    if (err != EMSGSIZE || attempt > 2 || q.num_iovas > 4096)
      return errno_fail(err, "IOMMU_IOAS_IOVA_RANGES", kIommuPath);
    ranges.resize(q.num_iovas);
  }
  iova_ranges_.clear();
  for (uint32_t i = 0; i < q.num_iovas && i < ranges.size(); ++i)
    if (ranges[i].last >= ranges[i].start)
      iova_ranges_.push_back({ranges[i].start, ranges[i].last});
  iova_ranges_reported_ = true;
  // out_iova_alignment: 1 means any; never above the CPU page size.
  iova_page_size_ = q.out_iova_alignment < 4096 ? 4096 : q.out_iova_alignment;
  if ((iova_page_size_ & (iova_page_size_ - 1)) != 0) {
    log::error(kComp, "IOMMU_IOAS_IOVA_RANGES on {}: alignment {:#x} is not a power of two",
               kIommuPath, q.out_iova_alignment);
    return KBV_ERR_IO;
  }
  if (iova_ranges_.empty()) {
    log::error(kComp, "IOMMU_IOAS_IOVA_RANGES on {}: no usable IOVA range", kIommuPath);
    return KBV_ERR_NO_RESOURCES;
  }
  return Status::ok();
}

Status VfioDevice::ioas_map(void* va, uint64_t iova, uint64_t size, uint32_t access) {
  uapi::kbv_iommu_ioas_map m{};
  m.size = sizeof m;
  m.flags = uapi::kIommuIoasMapFixedIova |
            ((access & kDmaDeviceRead) ? uapi::kIommuIoasMapReadable : 0) |
            ((access & kDmaDeviceWrite) ? uapi::kIommuIoasMapWriteable : 0);
  m.ioas_id = ioas_id_;
  m.user_va = reinterpret_cast<uintptr_t>(va);
  m.length = size;
  m.iova = iova;
  if (sys_.ioctl(iommufd_, uapi::kIommuIoasMap, &m) != 0)
    return errno_fail(
        errno, "IOMMU_IOAS_MAP",
        fmt::format("{} (ioas {}, iova {:#x}, size {:#x})", kIommuPath, ioas_id_, iova, size));
  log::trace(kComp, "ioas {}: mapped va {} -> iova {:#x} size {:#x}", ioas_id_, va, iova, size);
  return Status::ok();
}

Status VfioDevice::ioas_unmap(uint64_t iova, uint64_t size) {
  uapi::kbv_iommu_ioas_unmap u{};
  u.size = sizeof u;
  u.ioas_id = ioas_id_;
  u.iova = iova;
  u.length = size;
  if (sys_.ioctl(iommufd_, uapi::kIommuIoasUnmap, &u) != 0)
    return errno_fail(
        errno, "IOMMU_IOAS_UNMAP",
        fmt::format("{} (ioas {}, iova {:#x}, size {:#x})", kIommuPath, ioas_id_, iova, size));
  if (u.length != size) {
    log::error(kComp, "IOMMU_IOAS_UNMAP on {}: unmapped {:#x} of {:#x} bytes at iova {:#x}",
               kIommuPath, u.length, size, iova);
    return KBV_ERR_IO;
  }
  return Status::ok();
}

}  // namespace kbv::platform
