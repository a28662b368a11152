// SPDX-License-Identifier: BSD-3-Clause
//
// The driver-side DPDK structures kbv's DPDK backend (dpdk.hpp) needs and
// Debian's libdpdk-dev 22.11 does not install: DPDK installs its "driver
// SDK" headers (bus_pci_driver.h, dev_driver.h) only when built with
// -Denable_driver_sdk=true, which Debian's package is not. kbv declares the
// layouts itself, as it declares the PRM's, each offset pinned below.
//
// Source (facts, not code): DPDK v22.11 (ABI version DPDK_23, every 22.11.x
// stable release), drivers/bus/pci/bus_pci_driver.h (struct rte_pci_device,
// struct rte_pci_driver, enum rte_pci_kernel_driver, RTE_PCI_DRV_* flags,
// RTE_PMD_REGISTER_PCI -> rte_pci_register) and lib/eal/include/
// dev_driver.h (struct rte_driver, struct rte_device); x86_64 and aarch64
// (LP64) layouts. The public parts they embed (rte_pci_addr, rte_pci_id,
// rte_mem_resource) come from DPDK's installed headers (rte_pci.h,
// rte_dev.h). Another ABI version has other layouts: dpdk_bus.cpp checks
// rte_version() is 22.11 before it registers anything.
//
// rte_pci_register / rte_pci_unregister are exported by librte_bus_pci.so.23
// in its INTERNAL symbol version (for drivers); declared here.
#pragma once

#include <rte_bus_pci.h>
#include <rte_dev.h>
#include <rte_pci.h>
#include <sys/queue.h>

#include <cstddef>
#include <cstdint>

namespace kbv::platform::dpdk_abi {

// enum rte_pci_kernel_driver: the kernel driver the function is bound to.
enum PciKernelDriver : int {
  kKdrvUnknown = 0,
  kKdrvIgbUio = 1,
  kKdrvVfio = 2,
  kKdrvUioGeneric = 3,
  kKdrvNicUio = 4,
  kKdrvNone = 5,
};

// RTE_PCI_DRV_NEED_MAPPING: EAL maps the BARs (mem_resource) before probe.
inline constexpr uint32_t kDrvNeedMapping = 0x0001;
// PCI_MAX_RESOURCE, PCI_PRI_STR_SIZE (rte_pci.h: "XXXXXXXX:XX:XX.X").
inline constexpr int kMaxResource = 6;
inline constexpr int kPriStrSize = 17;

struct RteDriver {  // struct rte_driver
  TAILQ_ENTRY(RteDriver) next;
  const char* name;
  const char* alias;
};

struct RteDevice {  // struct rte_device
  TAILQ_ENTRY(RteDevice) next;
  const char* name;
  const char* bus_info;
  const RteDriver* driver;  // assigned after probing
  const void* bus;          // const struct rte_bus *
  int numa_node;            // SOCKET_ID_ANY (-1) when unknown
  struct rte_devargs* devargs;
};

struct RtePciDriver;

struct RtePciDevice {  // struct rte_pci_device
  TAILQ_ENTRY(RtePciDevice) next;
  RteDevice device;
  struct rte_pci_addr addr;
  struct rte_pci_id id;
  struct rte_mem_resource mem_resource[kMaxResource];  // BARs, mapped by EAL
  struct rte_intr_handle* intr_handle;                 // VFIO: its device descriptor
  RtePciDriver* driver;
  uint16_t max_vfs;
  PciKernelDriver kdrv;
  char name[kPriStrSize + 1];
  char* bus_info;
  struct rte_intr_handle* vfio_req_intr_handle;
};

using PciProbe = int(RtePciDriver*, RtePciDevice*);
using PciRemove = int(RtePciDevice*);
using PciDmaMap = int(RtePciDevice*, void*, uint64_t, size_t);

struct RtePciDriver {  // struct rte_pci_driver
  TAILQ_ENTRY(RtePciDriver) next;
  RteDriver driver;
  PciProbe* probe;     // 0: taken; > 0: not this driver's; < 0: error
  PciRemove* remove;   // 0: released
  PciDmaMap* dma_map;  // device-specific DMA mapping (nullptr: the IOMMU's)
  PciDmaMap* dma_unmap;
  const struct rte_pci_id* id_table;  // ends with vendor_id 0
  uint32_t drv_flags;                 // RTE_PCI_DRV_*
};

// The offsets DPDK 22.11 has on LP64 (computed from its headers).
static_assert(sizeof(struct rte_pci_addr) == 8 && sizeof(struct rte_pci_id) == 12 &&
              sizeof(struct rte_mem_resource) == 24);
static_assert(offsetof(RteDriver, name) == 16 && sizeof(RteDriver) == 32);
static_assert(offsetof(RteDevice, name) == 16 && offsetof(RteDevice, driver) == 32 &&
              offsetof(RteDevice, numa_node) == 48 && sizeof(RteDevice) == 64);
static_assert(offsetof(RtePciDevice, device) == 16 && offsetof(RtePciDevice, addr) == 80 &&
              offsetof(RtePciDevice, id) == 88 && offsetof(RtePciDevice, mem_resource) == 104 &&
              offsetof(RtePciDevice, intr_handle) == 248 && offsetof(RtePciDevice, driver) == 256 &&
              offsetof(RtePciDevice, kdrv) == 268 && offsetof(RtePciDevice, name) == 272 &&
              offsetof(RtePciDevice, vfio_req_intr_handle) == 304 && sizeof(RtePciDevice) == 312);
static_assert(offsetof(RtePciDriver, driver) == 16 && offsetof(RtePciDriver, probe) == 48 &&
              offsetof(RtePciDriver, remove) == 56 && offsetof(RtePciDriver, id_table) == 80 &&
              offsetof(RtePciDriver, drv_flags) == 88 && sizeof(RtePciDriver) == 96);

}  // namespace kbv::platform::dpdk_abi

extern "C" {
// drivers/bus/pci/pci_common.c: appends to the PCI bus's driver list (what
// RTE_PMD_REGISTER_PCI's constructor calls) / removes from it.
void rte_pci_register(kbv::platform::dpdk_abi::RtePciDriver* driver);
void rte_pci_unregister(kbv::platform::dpdk_abi::RtePciDriver* driver);
}
