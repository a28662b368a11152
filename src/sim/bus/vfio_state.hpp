// SPDX-License-Identifier: BSD-3-Clause
// Internal state of sim::Kernel (vfio_kernel.hpp): model devices, VFIO
// containers and descriptors. Shared by vfio_kernel.cpp, vfio_device.cpp and
// vfio_sysfs.cpp only. Guarded by Kernel::mu_.
#pragma once

#include "sim/bus/iommu_map.hpp"
#include "sim/bus/pci_device.hpp"
#include "sim/bus/vfio_kernel.hpp"

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

namespace kbv::sim {

// A VFIO container (/dev/vfio/vfio open): its IOMMU model and groups. Owned by
// its descriptor and by each attached group, like Linux's vfio_container.
struct Kernel::Container {
  bool iommu_set = false;  // VFIO_SET_IOMMU done
  IommuMap maps;           // the container's DMA mappings (bookkeeping)
  std::vector<Model*> groups;
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
  ~Model() { attached.reset(); }
};

struct Kernel::Fd {
  enum Kind { kContainer, kGroup, kDevice } kind;
  std::shared_ptr<Container> container;  // kContainer
  Model* model = nullptr;                // kGroup, kDevice
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
