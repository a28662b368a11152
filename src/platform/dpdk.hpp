// SPDX-License-Identifier: BSD-3-Clause
//
// The DPDK environment backend (URI "dpdk:DDDD:BB:DD.F", issue 17): kbv
// inside a DPDK application, on the PCI function, memory and IOMMU that
// DPDK's EAL already owns. Built into libkbv-dpdk.so when meson finds DPDK
// (option -Ddpdk=auto|enabled|disabled; Debian libdpdk-dev 22.11).
//
// How the pieces come from DPDK (22.11, ABI DPDK_23):
//   PCI function  kbv's rte_pci_driver "kbv_mlx5" (dpdk_bus.cpp), registered
//                 by libkbv-dpdk.so's constructor — before rte_eal_init, so
//                 it is ahead of DPDK's own mlx5 drivers loaded as plugins —
//                 for the ConnectX-4 and later ids with
//                 RTE_PCI_DRV_NEED_MAPPING: EAL's PCI bus scans sysfs, maps
//                 the function through its VFIO container (or UIO) and probes
//                 it; the probe keeps the rte_pci_device. BAR0 is
//                 mem_resource[0].addr/len, config space is
//                 rte_pci_read_config / rte_pci_write_config.
//   DMA memory    DpdkHostMemory: rte_memzone_reserve_aligned(...,
//                 RTE_MEMZONE_IOVA_CONTIG, align) — memory EAL has already
//                 mapped into its VFIO container (or, with UIO, memory at
//                 physical addresses); device addresses are
//                 rte_mem_virt2iova. The DmaContext takes it like UIO's
//                 memory (addresses_are_physical(): the addresses are
//                 DPDK's, not IOVAs kbv picks).
//   Registrations (memory regions): memory of DPDK's heap (rte_malloc,
//                 mempools, memzones) is already mapped: device addresses
//                 from rte_mem_virt2iova per page, nothing is mapped again.
//                 Other memory (malloc, the stack) is mapped into DPDK's own
//                 VFIO container with rte_vfio_container_dma_map(
//                 RTE_VFIO_DEFAULT_CONTAINER_FD, va, iova = va, len) — IOVA
//                 as VA only (--iova-mode=va); the same span registered
//                 again shares the mapping, an overlapping other span is
//                 KBV_ERR_ALREADY_EXISTS (the type1 IOMMU refuses it).
//                 In --iova-mode=pa it is KBV_ERR_NOT_SUPPORTED: register
//                 DPDK memory.
//   Interrupts    none: the function's interrupt handle is EAL's; kbv polls
//                 its EQs (msix_vector_count() 0), as on UIO.
//   Reset         VFIO_DEVICE_RESET on the VFIO device descriptor EAL keeps
//                 in the function's interrupt handle (rte_intr_dev_fd_get);
//                 KBV_ERR_NOT_SUPPORTED for a UIO-bound function.
// No second VFIO container, no sysfs or /dev/vfio access by kbv: every
// system call is DPDK's.
//
// Errors at open (DpdkDevice::open, via the dpdk: transport):
//   EAL not initialised (rte_eal_init not run or failed) ->
//     KBV_ERR_INVALID_STATE; a function kbv's driver did not probe (not on
//     EAL's allow list, not bound to vfio-pci / uio_pci_generic, claimed by
//     another DPDK driver, or kbv's driver registered after rte_eal_init)
//     -> KBV_ERR_NOT_FOUND; already open -> KBV_ERR_BUSY; a DPDK other
//     than 22.11 -> KBV_ERR_NOT_SUPPORTED. Each with a logged message; a
//     failed open leaves nothing mapped or reserved.
//
// Threading: DPDK's own rules — rte_memzone and rte_vfio calls from any
// thread of an initialised EAL (EAL locks); kbv's tables take a mutex.
#pragma once

#include <kbv/status.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "platform/backend.hpp"
#include "platform/dma.hpp"
#include "platform/dpdk_abi.hpp"

struct rte_memzone;

namespace kbv::platform {

// DMA memory from DPDK memzones (see above). alloc(size, page_size, node):
// one IOVA-contiguous memzone of `size` bytes aligned to page_size on
// `node` (-1: any socket), zeroed; nullptr with errno ENOMEM when DPDK has
// no such memory (EAL's -m / --socket-mem too small). free() releases the
// memzone. Counted for kbv_dpdk_get_usage.
class DpdkHostMemory final : public HostMemory {
 public:
  ~DpdkHostMemory() override;
  void* alloc(size_t size, size_t page_size, int numa_node) override;
  void free(void* p, size_t size) override;

 private:
  std::mutex mu_;
  std::map<void*, const rte_memzone*> zones_;
};

class DpdkDevice final : public PciBackend {
 public:
  // `bdf` "dddd:bb:dd.f"; errors above.
  static Result<std::unique_ptr<DpdkDevice>> open(std::string_view bdf);
  ~DpdkDevice() override;
  DpdkDevice(const DpdkDevice&) = delete;
  DpdkDevice& operator=(const DpdkDevice&) = delete;

  BackendKind kind() const override { return BackendKind::kDpdk; }
  const PciDeviceInfo& pci() const override { return pci_; }
  const Bar& bar0() const override { return bar0_; }
  Status config_read(uint32_t offset, void* buf, size_t len) override;
  Status config_write(uint32_t offset, const void* buf, size_t len) override;
  uint32_t msix_vector_count() const override { return 0; }
  Status enable_msix(uint32_t n) override;
  Status disable_msix() override { return Status::ok(); }  // never enabled
  uint32_t msix_enabled_count() const override { return 0; }
  int msix_eventfd(uint32_t) const override { return -1; }
  Status reset() override;
  HostMemory* host_memory() override { return &host_; }

  // DmaMapper (see above)
  Status dma_map(void* va, uint64_t iova, uint64_t size, uint32_t access) override;
  Status dma_unmap(uint64_t iova, uint64_t size) override;
  std::vector<IovaRange> iova_ranges() const override { return {}; }
  uint64_t iova_page_size() const override { return 4096; }
  bool addresses_are_physical() const override { return true; }
  Status physical_pages(const void* va, uint64_t size, std::vector<uint64_t>& out) override;

 private:
  explicit DpdkDevice(dpdk_abi::RtePciDevice* dev);
  dpdk_abi::RtePciDevice* dev_;
  PciDeviceInfo pci_;
  Bar bar0_;
  DpdkHostMemory host_;
  std::mutex mu_;
  // Application memory mapped into DPDK's container: (iova, size) -> users.
  std::map<std::pair<uint64_t, uint64_t>, uint32_t> external_;
};

// dpdk_bus.cpp: kbv's rte_pci_driver and what it probed.
namespace dpdk_bus {
// The probed function `bdf`, marked open when `take`; errors as
// DpdkDevice::open.
Result<dpdk_abi::RtePciDevice*> claim(std::string_view bdf, bool take = true);
// Marks it closed again.
void release(dpdk_abi::RtePciDevice* dev);
// Usage counters (kbv_dpdk_get_usage, include/kbv/dpdk.h).
void count_memzone(int64_t zones, int64_t bytes);
void count_external(int64_t maps, int64_t bytes);
}  // namespace dpdk_bus

}  // namespace kbv::platform
