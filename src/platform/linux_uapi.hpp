// SPDX-License-Identifier: BSD-3-Clause
//
// Linux uAPI that Debian 12's kernel headers (linux-libc-dev 6.1) lack:
// iommufd (include/uapi/linux/iommufd.h, Linux 6.2+) and the VFIO device
// cdev ioctls (include/uapi/linux/vfio.h, Linux 6.6+). Spoken by the
// platform's VFIO backend (vfio_iommufd.cpp) and answered by the model's
// emulated kernel (sim/bus/iommufd.cpp), so both take the layouts from here.
// Every layout is the kernel's, field for field (static_asserts below pin
// sizes and offsets); ioctl numbers are _IO(type, nr) exactly as the kernel
// defines them (the size travels in the structure's first u32, not in the
// ioctl number). Names carry a kbv_ prefix so a newer system header never
// collides.
//
// UIO / no-IOMMU facts used by the UIO backend (uio.hpp) and the model:
//   /proc/self/pagemap (Documentation/admin-guide/mm/pagemap.rst): one
//   64-bit entry per virtual page at offset (va / PAGE_SIZE) * 8; bits 0-54
//   the page frame number when bit 63 (present) is set; PFNs read as 0
//   without CAP_SYS_ADMIN (since Linux 4.2).
#pragma once

#include <linux/ioctl.h>

#include <cstddef>
#include <cstdint>

namespace kbv::platform::uapi {

// ---- include/uapi/linux/iommufd.h ----
inline constexpr unsigned kIommufdType = ';';  // IOMMUFD_TYPE
enum : unsigned {
  kIommufdCmdBase = 0x80,  // IOMMUFD_CMD_BASE
  kIommufdCmdDestroy = kIommufdCmdBase,
  kIommufdCmdIoasAlloc,
  kIommufdCmdIoasAllowIovas,
  kIommufdCmdIoasCopy,
  kIommufdCmdIoasIovaRanges,
  kIommufdCmdIoasMap,
  kIommufdCmdIoasUnmap,
  kIommufdCmdOption,
  kIommufdCmdVfioIoas,
};
inline constexpr unsigned long kIommuDestroy = _IO(kIommufdType, kIommufdCmdDestroy);
inline constexpr unsigned long kIommuIoasAlloc = _IO(kIommufdType, kIommufdCmdIoasAlloc);
inline constexpr unsigned long kIommuIoasIovaRanges = _IO(kIommufdType, kIommufdCmdIoasIovaRanges);
inline constexpr unsigned long kIommuIoasMap = _IO(kIommufdType, kIommufdCmdIoasMap);
inline constexpr unsigned long kIommuIoasUnmap = _IO(kIommufdType, kIommufdCmdIoasUnmap);

struct kbv_iommu_destroy {  // struct iommu_destroy
  uint32_t size;
  uint32_t id;
};
struct kbv_iommu_ioas_alloc {  // struct iommu_ioas_alloc
  uint32_t size;
  uint32_t flags;  // must be 0
  uint32_t out_ioas_id;
};
struct kbv_iommu_iova_range {  // struct iommu_iova_range
  uint64_t start;
  uint64_t last;  // inclusive
};
struct kbv_iommu_ioas_iova_ranges {  // struct iommu_ioas_iova_ranges
  uint32_t size;
  uint32_t ioas_id;
  uint32_t num_iovas;      // in: array length; out: total (EMSGSIZE when too small)
  uint32_t reserved;       // __reserved, must be 0
  uint64_t allowed_iovas;  // user pointer to struct iommu_iova_range[]
  uint64_t out_iova_alignment;
};
// enum iommufd_ioas_map_flags
inline constexpr uint32_t kIommuIoasMapFixedIova = 1u << 0;
inline constexpr uint32_t kIommuIoasMapWriteable = 1u << 1;
inline constexpr uint32_t kIommuIoasMapReadable = 1u << 2;
struct kbv_iommu_ioas_map {  // struct iommu_ioas_map
  uint32_t size;
  uint32_t flags;
  uint32_t ioas_id;
  uint32_t reserved;  // __reserved, must be 0
  uint64_t user_va;
  uint64_t length;
  uint64_t iova;  // in with FIXED_IOVA, else out
};
struct kbv_iommu_ioas_unmap {  // struct iommu_ioas_unmap
  uint32_t size;
  uint32_t ioas_id;
  uint64_t iova;
  uint64_t length;  // in: bytes to unmap; out: bytes unmapped
};

static_assert(sizeof(kbv_iommu_destroy) == 8);
static_assert(sizeof(kbv_iommu_ioas_alloc) == 12);
static_assert(sizeof(kbv_iommu_ioas_iova_ranges) == 32);
static_assert(offsetof(kbv_iommu_ioas_iova_ranges, allowed_iovas) == 16);
static_assert(sizeof(kbv_iommu_ioas_map) == 40);
static_assert(offsetof(kbv_iommu_ioas_map, user_va) == 16);
static_assert(sizeof(kbv_iommu_ioas_unmap) == 24);

// ---- include/uapi/linux/vfio.h, VFIO device cdev (Linux 6.6) ----
inline constexpr unsigned kVfioType = ';';  // VFIO_TYPE
inline constexpr unsigned kVfioBase = 100;  // VFIO_BASE
struct kbv_vfio_device_bind_iommufd {       // struct vfio_device_bind_iommufd
  uint32_t argsz;
  uint32_t flags;  // 0 (VFIO_DEVICE_BIND_FLAG_TOKEN, 6.17, not used)
  int32_t iommufd;
  uint32_t out_devid;
};
inline constexpr unsigned long kVfioDeviceBindIommufd = _IO(kVfioType, kVfioBase + 18);
struct kbv_vfio_device_attach_iommufd_pt {  // struct vfio_device_attach_iommufd_pt
  uint32_t argsz;
  uint32_t flags;  // 0 (VFIO_DEVICE_ATTACH_PASID, 6.13, not used)
  uint32_t pt_id;  // in: IOAS or HWPT id; out: the attached HWPT id
};
inline constexpr unsigned long kVfioDeviceAttachIommufdPt = _IO(kVfioType, kVfioBase + 19);
struct kbv_vfio_device_detach_iommufd_pt {  // struct vfio_device_detach_iommufd_pt
  uint32_t argsz;
  uint32_t flags;
};
inline constexpr unsigned long kVfioDeviceDetachIommufdPt = _IO(kVfioType, kVfioBase + 20);

static_assert(sizeof(kbv_vfio_device_bind_iommufd) == 16);
static_assert(sizeof(kbv_vfio_device_attach_iommufd_pt) == 12);

// ---- /proc/self/pagemap (Documentation/admin-guide/mm/pagemap.rst) ----
inline constexpr uint64_t kPagemapPresent = 1ull << 63;
inline constexpr uint64_t kPagemapPfnMask = (1ull << 55) - 1;

}  // namespace kbv::platform::uapi
