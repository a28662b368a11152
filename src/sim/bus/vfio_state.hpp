// SPDX-License-Identifier: BSD-3-Clause
// Internal state of sim::Kernel (vfio_kernel.hpp): model devices, VFIO
// containers and descriptors. Shared by vfio_kernel.cpp, vfio_device.cpp and
// vfio_sysfs.cpp only. Guarded by Kernel::mu_.
#pragma once

#include "sim/bus/iommu_map.hpp"
#include "sim/bus/pci_device.hpp"
#include "sim/bus/vfio_kernel.hpp"

#include <cerrno>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kbv::sim {

// A VFIO container (/dev/vfio/vfio open): its IOMMU model and groups. Owned by
// its descriptor and by each attached group, like Linux's vfio_container.
struct Kernel::Container {
  bool iommu_set = false;  // VFIO_SET_IOMMU done
  bool v2 = true;          // VFIO_TYPE1v2_IOMMU (false: VFIO_TYPE1_IOMMU's v1 unmaps)
  IommuMap maps;           // the container's DMA mappings (bookkeeping)
  std::vector<Model*> groups;
};

// An iommufd IO address space (IOMMU_IOAS_ALLOC): its mappings and the
// devices attached to it (VFIO_DEVICE_ATTACH_IOMMUFD_PT), whose own IOMMU
// view follows every map and unmap. Owned by its iommufd and by each
// attached device descriptor.
struct Kernel::Ioas {
  uint32_t id = 0;
  IommuMap maps;
  std::vector<Model*> attached;
};

// An open /dev/iommu: its objects by ID (one ID space for IOASes and
// bound devices, as iommufd's xarray).
struct Kernel::Iommufd {
  uint32_t next_id = 1;
  std::map<uint32_t, std::shared_ptr<Ioas>> ioas;
  std::map<uint32_t, Model*> devices;  // devid -> bound device
};

// One model function, alone in its IOMMU group.
struct Kernel::Model {
  std::string name;
  std::string bdf;  // "fffe:00:01.0"
  unsigned slot = 0;
  int group = 0;
  std::unique_ptr<PciDevice> dev;
  bool group_open = false;               // /dev/vfio/<group> is open (or held by a device fd)
  bool group_release_pending = false;    // group fd closed while device fds were open
  std::shared_ptr<Container> container;  // VFIO_GROUP_SET_CONTAINER
  int device_fds = 0;                    // open VFIO_GROUP_GET_DEVICE_FD descriptors
  std::shared_ptr<void> attached;        // Kernel::Attach result; destroyed before dev
  std::string driver = "vfio-pci";       // the bound driver ("" = none; Kernel::bind_driver)
  bool has_group = true;                 // in an IOMMU group (Kernel::set_iommu_group)
  bool cdev_bound = false;               // VFIO_DEVICE_BIND_IOMMUFD done on its cdev
  ~Model() { attached.reset(); }
};

struct Kernel::Fd {
  // kSysConfig / kSysResource / kSysReset: sysfs config (opened for
  // writing), resource0, reset of a function; kPagemap: /proc/self/pagemap.
  enum Kind {
    kContainer,
    kGroup,
    kDevice,
    kIommufd,
    kCdev,
    kSysConfig,
    kSysResource,
    kSysReset,
    kPagemap
  } kind;
  std::shared_ptr<Container> container;  // kContainer
  Model* model = nullptr;                // kGroup, kDevice, kCdev, kSys*
  std::shared_ptr<Iommufd> ictx = {};    // kIommufd; kCdev once bound
  uint32_t devid = 0;                    // kCdev once bound
  std::shared_ptr<Ioas> ioas = {};       // kCdev once attached
  bool bound() const { return kind == kCdev && ictx != nullptr; }
};

// Collapses "//" and drops a trailing "/" (not of "/"): sysfs and /dev paths
// are compared in this form.
inline std::string normalize(const char* path) {
  std::string out;
  for (const char* p = path; *p; ++p) {
    if (*p == '/' && !out.empty() && out.back() == '/') continue;
    out.push_back(*p);
  }
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

// Model errno convention inside the kernel: handlers return -errno.
inline int errno_of(Status s) {
  switch (s.code()) {
    case KBV_ERR_ALREADY_EXISTS: return EEXIST;
    case KBV_ERR_NO_RESOURCES: return ENOSPC;
    case KBV_ERR_NOT_FOUND: return ENOENT;
    case KBV_ERR_BUSY: return EBUSY;
    default: return EINVAL;
  }
}

}  // namespace kbv::sim
