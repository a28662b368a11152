// SPDX-License-Identifier: BSD-3-Clause
// DpdkDevice and DpdkHostMemory: a PCI function, its DMA memory and its
// IOMMU mappings as DPDK's EAL owns them (dpdk.hpp).
#include "platform/dpdk.hpp"

#include <linux/vfio.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_interrupts.h>
#include <rte_memory.h>
#include <rte_memzone.h>
#include <rte_vfio.h>
#include <sys/ioctl.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/log.hpp"

namespace kbv::platform {
namespace {

constexpr const char* kLog = "platform/dpdk";
constexpr uint64_t kPage = 4096;

const rte_pci_device* as_rte(const dpdk_abi::RtePciDevice* d) {
  return reinterpret_cast<const rte_pci_device*>(d);
}

const char* kernel_driver_name(dpdk_abi::PciKernelDriver k) {
  switch (k) {
    case dpdk_abi::kKdrvVfio: return "vfio-pci";
    case dpdk_abi::kKdrvUioGeneric: return "uio_pci_generic";
    case dpdk_abi::kKdrvIgbUio: return "igb_uio";
    default: return "";
  }
}

// [va, va+size) lies in memory of DPDK's own heap (memseg lists EAL maps
// into its container at init and on every heap growth), not external memory.
bool in_dpdk_heap(const void* va, uint64_t size) {
  const rte_memseg_list* a = rte_mem_virt2memseg_list(va);
  const rte_memseg_list* b =
      rte_mem_virt2memseg_list(static_cast<const unsigned char*>(va) + size - 1);
  return a != nullptr && a == b && a->external == 0;
}

}  // namespace

// ---- DpdkHostMemory ---------------------------------------------------------------

DpdkHostMemory::~DpdkHostMemory() {
  std::lock_guard lk(mu_);
  if (!zones_.empty())
    log::error(kLog, "{} DMA memzones still reserved at teardown; released", zones_.size());
  for (auto& [va, mz] : zones_) {
    dpdk_bus::count_memzone(-1, -static_cast<int64_t>(mz->len));
    rte_memzone_free(mz);
  }
}

void* DpdkHostMemory::alloc(size_t size, size_t page_size, int numa_node) {
  // Memzone names are process-wide and at most RTE_MEMZONE_NAMESIZE - 1 long.
  static std::atomic<uint64_t> serial{0};
  char name[RTE_MEMZONE_NAMESIZE];
  std::snprintf(name, sizeof name, "kbv_dma_%llu",
                static_cast<unsigned long long>(serial.fetch_add(1, std::memory_order_relaxed)));
  const int socket = numa_node < 0 ? SOCKET_ID_ANY : numa_node;
  const rte_memzone* mz = rte_memzone_reserve_aligned(name, size, socket, RTE_MEMZONE_IOVA_CONTIG,
                                                      static_cast<unsigned>(page_size));
  if (mz == nullptr) {
    log::error(kLog,
               "rte_memzone_reserve_aligned({:#x} bytes, IOVA-contiguous, socket {}) failed: {} "
               "(give EAL more memory: -m or --socket-mem)",
               size, socket, rte_strerror(rte_errno));
    errno = ENOMEM;
    return nullptr;
  }
  std::memset(mz->addr, 0, size);
  std::lock_guard lk(mu_);
  zones_.emplace(mz->addr, mz);
  dpdk_bus::count_memzone(1, static_cast<int64_t>(mz->len));
  log::trace(kLog, "memzone {} va {} iova {:#x} len {:#x}", name, mz->addr, mz->iova, mz->len);
  return mz->addr;
}

void DpdkHostMemory::free(void* p, size_t /*size*/) {
  const rte_memzone* mz = nullptr;
  {
    std::lock_guard lk(mu_);
    auto it = zones_.find(p);
    if (it == zones_.end()) {
      log::error(kLog, "free of {}: not a memzone of this device", p);
      return;
    }
    mz = it->second;
    zones_.erase(it);
  }
  dpdk_bus::count_memzone(-1, -static_cast<int64_t>(mz->len));
  if (int r = rte_memzone_free(mz); r != 0) log::error(kLog, "rte_memzone_free: {}", r);
}

// ---- DpdkDevice -------------------------------------------------------------------

DpdkDevice::DpdkDevice(dpdk_abi::RtePciDevice* dev) : dev_(dev) {
  const rte_pci_addr& a = dev->addr;
  pci_.address = PciAddress{a.domain, a.bus, a.devid, a.function};
  pci_.vendor = dev->id.vendor_id;
  pci_.device = dev->id.device_id;
  pci_.class_code = dev->id.class_id & 0xffffff;
  pci_.numa_node = dev->device.numa_node < 0 ? -1 : dev->device.numa_node;
  pci_.driver = kernel_driver_name(dev->kdrv);
  bar0_ = Bar(dev->mem_resource[0].addr, dev->mem_resource[0].len, nullptr);
}

Result<std::unique_ptr<DpdkDevice>> DpdkDevice::open(std::string_view bdf) {
  Result<dpdk_abi::RtePciDevice*> dev = dpdk_bus::claim(bdf);
  if (!dev) return dev.status();
  std::unique_ptr<DpdkDevice> d(new DpdkDevice(*dev));
  log::info(kLog, "{}: opened through DPDK ({}), BAR0 {} ({:#x} bytes), IOVA mode {}", bdf,
            d->pci_.driver, static_cast<void*>(d->bar0_.base()), d->bar0_.size(),
            rte_eal_iova_mode() == RTE_IOVA_VA ? "VA" : "PA");
  return d;
}

DpdkDevice::~DpdkDevice() {
  std::lock_guard lk(mu_);
  if (!external_.empty())
    log::error(kLog, "{}: {} application mappings left at close; unmapping them", bdf(),
               external_.size());
  for (auto& [key, users] : external_) {
    (void)users;
    rte_vfio_container_dma_unmap(RTE_VFIO_DEFAULT_CONTAINER_FD, key.first, key.first, key.second);
    dpdk_bus::count_external(-1, -static_cast<int64_t>(key.second));
  }
  external_.clear();
  dpdk_bus::release(dev_);
}

Status DpdkDevice::config_read(uint32_t offset, void* buf, size_t len) {
  if (len == 0 || offset >= 4096 || len > 4096 - offset) return KBV_ERR_INVALID_ARGUMENT;
  const int r = rte_pci_read_config(as_rte(dev_), buf, len, offset);
  if (r < 0 || static_cast<size_t>(r) != len) {
    log::error(kLog, "{}: config read at {:#x} ({} bytes): {}", bdf(), offset, len, r);
    return KBV_ERR_IO;
  }
  return Status::ok();
}

Status DpdkDevice::config_write(uint32_t offset, const void* buf, size_t len) {
  if (len == 0 || offset >= 4096 || len > 4096 - offset) return KBV_ERR_INVALID_ARGUMENT;
  const int r = rte_pci_write_config(as_rte(dev_), buf, len, offset);
  if (r < 0 || static_cast<size_t>(r) != len) {
    log::error(kLog, "{}: config write at {:#x} ({} bytes): {}", bdf(), offset, len, r);
    return KBV_ERR_IO;
  }
  return Status::ok();
}

Status DpdkDevice::enable_msix(uint32_t n) {
  log::debug(kLog, "{}: {} MSI-X vectors asked; the interrupt handle is EAL's, kbv polls", bdf(),
             n);
  return KBV_ERR_NOT_SUPPORTED;
}

Status DpdkDevice::reset() {
  if (dev_->kdrv != dpdk_abi::kKdrvVfio) {
    log::error(kLog, "{}: function reset needs VFIO (bound to {})", bdf(), pci_.driver);
    return KBV_ERR_NOT_SUPPORTED;
  }
  // EAL keeps the VFIO device descriptor in the function's interrupt handle
  // (drivers/bus/pci/linux/pci_vfio.c); VFIO_DEVICE_RESET (linux/vfio.h).
  const int fd = rte_intr_dev_fd_get(dev_->intr_handle);
  if (fd < 0 || ::ioctl(fd, VFIO_DEVICE_RESET) != 0) {
    log::error(kLog, "{}: VFIO_DEVICE_RESET: {}", bdf(),
               fd < 0 ? "no VFIO device descriptor" : std::strerror(errno));
    return KBV_ERR_IO;
  }
  return Status::ok();
}

Status DpdkDevice::physical_pages(const void* va, uint64_t size, std::vector<uint64_t>& out) {
  const auto start = reinterpret_cast<uintptr_t>(va);
  if (size == 0 || start % kPage != 0 || size % kPage != 0) return KBV_ERR_INVALID_ARGUMENT;
  const bool heap = in_dpdk_heap(va, size);
  if (!heap && rte_eal_iova_mode() != RTE_IOVA_VA) {
    log::error(kLog,
               "{}: memory at {} is not DPDK's (rte_malloc, mempools, memzones) and EAL runs "
               "with --iova-mode=pa: register DPDK memory",
               bdf(), va);
    return KBV_ERR_NOT_SUPPORTED;
  }
  const size_t first = out.size();
  for (uint64_t off = 0; off < size; off += kPage) {
    const void* p = reinterpret_cast<const void*>(start + off);
    // DPDK's memory: its own IOVA; other memory (IOVA as VA): dma_map maps
    // it at its address.
    const rte_iova_t iova = heap ? rte_mem_virt2iova(p) : static_cast<rte_iova_t>(start + off);
    if (iova == RTE_BAD_IOVA) {
      out.resize(first);
      log::error(kLog, "{}: no IOVA for {} (rte_mem_virt2iova)", bdf(), p);
      return KBV_ERR_IOMMU_FAULT;
    }
    out.push_back(iova);
  }
  return Status::ok();
}

Status DpdkDevice::dma_map(void* va, uint64_t iova, uint64_t size, uint32_t access) {
  (void)access;  // DPDK's container maps read + write
  if (size == 0) return KBV_ERR_INVALID_ARGUMENT;
  if (in_dpdk_heap(va, size)) return Status::ok();  // already in DPDK's container
  const auto v = reinterpret_cast<uint64_t>(va);
  if (rte_eal_iova_mode() != RTE_IOVA_VA || iova != v) return KBV_ERR_NOT_SUPPORTED;
  if (dev_->kdrv != dpdk_abi::kKdrvVfio) {
    log::error(kLog, "{}: application memory at {} needs an IOMMU (bound to {})", bdf(), va,
               pci_.driver);
    return KBV_ERR_NOT_SUPPORTED;
  }
  std::lock_guard lk(mu_);
  auto it = external_.find({iova, size});
  if (it != external_.end()) {
    ++it->second;
    return Status::ok();
  }
  if (rte_vfio_container_dma_map(RTE_VFIO_DEFAULT_CONTAINER_FD, v, iova, size) != 0) {
    const int e = rte_errno;
    log::error(kLog,
               "{}: rte_vfio_container_dma_map({:#x}, {:#x} bytes) into DPDK's container: {} "
               "(an overlapping registration of another span cannot share it)",
               bdf(), v, size, rte_strerror(e));
    return e == EEXIST ? Status(KBV_ERR_ALREADY_EXISTS) : Status(KBV_ERR_IOMMU_FAULT);
  }
  external_.emplace(std::make_pair(iova, size), 1u);
  dpdk_bus::count_external(1, static_cast<int64_t>(size));
  return Status::ok();
}

Status DpdkDevice::dma_unmap(uint64_t iova, uint64_t size) {
  std::lock_guard lk(mu_);
  auto it = external_.find({iova, size});
  if (it == external_.end()) return Status::ok();  // DPDK's memory: stays in its container
  if (--it->second > 0) return Status::ok();
  if (rte_vfio_container_dma_unmap(RTE_VFIO_DEFAULT_CONTAINER_FD, iova, iova, size) != 0) {
    log::error(kLog, "{}: rte_vfio_container_dma_unmap({:#x}, {:#x} bytes): {}", bdf(), iova, size,
               rte_strerror(rte_errno));
    ++it->second;
    return KBV_ERR_IOMMU_FAULT;
  }
  external_.erase(it);
  dpdk_bus::count_external(-1, -static_cast<int64_t>(size));
  return Status::ok();
}

}  // namespace kbv::platform
