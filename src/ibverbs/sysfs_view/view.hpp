// SPDX-License-Identifier: BSD-3-Clause
//
// The sysfs view of kbv's libibverbs devices (internal to
// libkbv-ibverbs-sysfs.so, see interpose.cpp): what the kernel's RDMA core
// would show for kbv's mlx5_<i> devices, for programs that read sysfs beside
// libibverbs (UCX 1.13: uct_ib_device_get_locality, uct_ib_device_query,
// uct_ib_device_query_gid_info, uct_ib_device_get_roce_ndev_name,
// uct_ib_device_is_accessible).
//
// Every answer comes from kbv's own libibverbs and libkbv in this process
// (dlopen'ed on first use), so it agrees with what the ABI reports:
//   /sys/class/infiniband                          directory
//   /sys/class/infiniband/<ibdev>                  -> <fn>/infiniband/<ibdev>
//     node_type                                    "1: CA"
//     device                                       -> <fn>
//     ports/<p>/link_layer                         "Ethernet" (ibv_query_port)
//     ports/<p>/gids/<i>                           the GID, as the kernel's %pI6
//     ports/<p>/gid_attrs/types/<i>                "RoCE v2" / "IB/RoCE v1"
//     ports/<p>/gid_attrs/ndevs/<i>                if_indextoname(ndev_ifindex)
//       (i < gid_tbl_len; an empty entry's file exists and its read fails
//       with EINVAL, as the kernel's show_port_gid_attr does)
//   /dev/infiniband/uverbs<i>                      character device 231:(192+i)
//                                                  (stat/access; open: ENXIO,
//                                                  kbv needs no kernel uverbs)
// <fn> is the PCI function: for a "vfio:<bdf>" device the real
// /sys/bus/pci/devices/<bdf> (its own files are the kernel's); for a model
// device "/sys/devices/virtual/kbv/sim:<name>" with the model's identity
// (sim/bus/pci_device.hpp DeviceConfig, sim/bus/pci_config.cpp LnkSta):
//   vendor, device, subsystem_vendor, subsystem_device, class (kbv_device_desc_t),
//   numa_node (-1), local_cpus (the online CPUs: no NUMA node, as
//   cpumask_of_node(-1)), current_link_speed "8.0 GT/s PCIe",
//   current_link_width "16", max_link_speed, max_link_width.
// Directories can be stat'ed, not listed or opened.
//
// Threading: any thread; one lock guards the device table, filled once.
#pragma once

#include <sys/types.h>

#include <string>

namespace kbv::ibverbs::sysfs_view {

enum class Kind {
  kNone,      // not in the view: the real file system answers
  kDir,       // a directory (lstat: a symlink when `link`)
  kFile,      // a readable attribute with `content`
  kNoData,    // an attribute whose read fails with EINVAL (empty GID entry)
  kCharDev,   // /dev/infiniband/uverbs<i>, `rdev`
  kRedirect,  // a file of a real PCI function: `real_path`
};

struct Node {
  Kind kind = Kind::kNone;
  bool link = false;      // the path itself is a symlink (class entries, "device")
  std::string content;    // kFile
  std::string real_path;  // kRedirect; for kDir/kFile the canonical path (realpath)
  dev_t rdev = 0;         // kCharDev
};

// Looks `path` (absolute) up. Cheap for paths outside the view's prefixes
// (no device is touched); the first look-up inside them loads the device
// table, a GID file the port's GID table (opening the device through
// libibverbs). Never throws.
Node lookup(const char* path);

// True while the calling thread is inside the view's own calls into
// libibverbs/libkbv: the interposers then pass everything through.
bool busy();

}  // namespace kbv::ibverbs::sysfs_view
