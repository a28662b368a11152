// SPDX-License-Identifier: BSD-3-Clause
//
// UioDevice: one PCI function bound to uio_pci_generic, without an IOMMU
// (a PciBackend, backend.hpp) — the "--iova-mode=pa" view DPDK uses on
// such machines (DPDK lib/eal/linux/eal_memory.c rte_mem_virt2phy,
// drivers/bus/pci/linux/pci_uio.c). The device reaches host memory at its
// physical address and can reach all of it: open() logs one warning saying
// so, at warn level even when KBV_LOG_LEVEL filters warnings out.
//
// open(sys, bdf), each step failing with a logged message naming it:
//   1. sysfs: /sys/bus/pci/devices/<bdf>/driver must be uio_pci_generic
//      (else KBV_ERR_INVALID_STATE, with how to bind it);
//   2. config space: /sys/bus/pci/devices/<bdf>/config opened O_RDWR
//      (pread/pwrite at the register offset; writing needs root);
//   3. BAR0: its size from sysfs `resource` (line 0: "start end flags",
//      drivers/pci/pci-sysfs.c resource_show), `resource0` opened O_RDWR
//      and mmap'ed MAP_SHARED at offset 0 (pci_mmap_resource);
//   4. /proc/self/pagemap opened, and one resident page translated: PFNs
//      read as 0 without CAP_SYS_ADMIN -> KBV_ERR_ACCESS_DENIED.
// Bus mastering is enabled by the driver through config space
// (PciBackend::enable_bus_master), as uio_pci_generic leaves it off.
//
// DMA (DmaMapper): addresses_are_physical(); physical_pages() reads one
// pagemap entry per 4 KiB page (bit 63 present, bits 0-54 PFN;
// Documentation/admin-guide/mm/pagemap.rst), a page not present ->
// KBV_ERR_IOMMU_FAULT; dma_map pins the pages with mlock(2) (counted per
// page, so overlapping registrations stay pinned until the last goes),
// dma_unmap unpins. Huge pages do not move, so their physical addresses
// stay valid while pinned; DmaContext takes all driver memory from them.
//
// Interrupts: uio_pci_generic offers only INTx through /dev/uioN, which an
// mlx5 function does not use for its EQs: msix_vector_count() is 0 and the
// driver polls its EQs (kbv_device_get_fd's descriptor never becomes
// readable: documented in the README backend table); enable_msix ->
// KBV_ERR_NOT_SUPPORTED. reset(): writes "1" to sysfs `reset`
// (pci-sysfs reset_store, a function-level reset).
//
// Destruction: BAR0 unmapped, descriptors closed; every DMA page must have
// been unpinned (DmaContext destroyed) before.
//
// Threading: as PciBackend (dma_map/dma_unmap take an internal lock).
#pragma once

#include <kbv/status.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "platform/backend.hpp"
#include "platform/sys.hpp"

namespace kbv::platform {

class UioDevice final : public PciBackend {
 public:
  static constexpr uint32_t kConfigSize = 4096;  // PCIe extended config space

  static Result<std::unique_ptr<UioDevice>> open(Sys& sys, std::string_view bdf);
  ~UioDevice() override;
  UioDevice(const UioDevice&) = delete;
  UioDevice& operator=(const UioDevice&) = delete;

  BackendKind kind() const override { return BackendKind::kUio; }
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

  // DmaMapper
  Status dma_map(void* va, uint64_t iova, uint64_t size, uint32_t access) override;
  Status dma_unmap(uint64_t iova, uint64_t size) override;
  std::vector<IovaRange> iova_ranges() const override;
  uint64_t iova_page_size() const override { return 4096; }
  bool addresses_are_physical() const override { return true; }
  Status physical_pages(const void* va, uint64_t size, std::vector<uint64_t>& out) override;

  // Pages pinned now (diagnostics and tests).
  size_t pinned_pages() const;

 private:
  explicit UioDevice(Sys& sys) : sys_(sys) {}
  std::string sysfs(const char* attr) const;
  Status map_bar0();

  Sys& sys_;
  PciDeviceInfo pci_;
  int config_fd_ = -1;
  int resource0_fd_ = -1;
  int pagemap_fd_ = -1;
  void* bar0_map_ = nullptr;
  uint64_t bar0_size_ = 0;
  Bar bar0_;
  mutable std::mutex mu_;
  std::map<uintptr_t, uint32_t> pins_;                            // 4 KiB page -> pin count
  std::multimap<std::pair<uint64_t, uint64_t>, uintptr_t> maps_;  // (iova, size) -> va
};

}  // namespace kbv::platform
