// SPDX-License-Identifier: BSD-3-Clause
//
// VfioDevice: one PCI function bound to vfio-pci (a PciBackend,
// backend.hpp), opened through the type1 IOMMU backend (linux/vfio.h; kernel
// Documentation/driver-api/vfio.rst "VFIO Usage Example") or through iommufd
// and the VFIO device cdev (Documentation/userspace-api/iommufd.rst,
// Documentation/driver-api/vfio.rst "VFIO device cdev"; vfio_iommufd.cpp).
// Runs unchanged on silicon (real_sys()) and on the HCA model, whose emulated
// VFIO kernel answers the same calls (sys.hpp).
//
// open(sys, bdf, BackendKind::kIommufd) replaces steps 2-5 below by:
//   a. sysfs: /sys/bus/pci/devices/<bdf>/vfio-dev must hold one "vfioN";
//   b. open /dev/iommu (the iommufd) and /dev/vfio/devices/vfioN;
//   c. VFIO_DEVICE_BIND_IOMMUFD(iommufd) on the cdev -> devid;
//   d. IOMMU_IOAS_ALLOC -> ioas id; VFIO_DEVICE_ATTACH_IOMMUFD_PT(ioas);
//   e. IOMMU_IOAS_IOVA_RANGES (re-issued with the num_iovas the kernel asks
//      for on EMSGSIZE) -> usable ranges and out_iova_alignment;
//   f. VFIO_DEVICE_GET_INFO as step 5.
// dma_map / dma_unmap are then IOMMU_IOAS_MAP (FIXED_IOVA | READABLE |
// WRITEABLE as asked) / IOMMU_IOAS_UNMAP on the iommufd; the rest (regions,
// BAR0, MSI-X, reset) is the same device ioctls on the cdev. Destruction
// closes the cdev (which detaches and unbinds) and then the iommufd (which
// frees the IOAS and every mapping). kVfio (and kAuto) picks iommufd when
// /dev/iommu and the cdev exist (as QEMU and DPDK do), type1 otherwise.
//
// open(sys, bdf) (type1) performs, in order, each step failing with a logged
// message that names the step and the object:
//   1. sysfs: /sys/bus/pci/devices/<bdf>/driver must be vfio-pci, and
//      iommu_group -> group number n.
//   2. container: open /dev/vfio/vfio; VFIO_GET_API_VERSION == VFIO_API_VERSION;
//      VFIO_CHECK_EXTENSION(VFIO_TYPE1v2_IOMMU) > 0.
//   3. group: open /dev/vfio/<n>; VFIO_GROUP_GET_STATUS must have
//      VFIO_GROUP_FLAGS_VIABLE; VFIO_GROUP_SET_CONTAINER(&container_fd);
//      VFIO_SET_IOMMU(VFIO_TYPE1v2_IOMMU).
//   4. VFIO_IOMMU_GET_INFO on the container, re-issued with the returned argsz,
//      walking the capability chain for VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE
//      (usable IOVA ranges), VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL (mapping budget)
//      and iova_pgsizes (smallest IOMMU page). Without
//      the capability (kernels before 5.4) a conservative default is used:
//      [64 KiB, 0xFEDFFFFF] and [0xFEF00000, 2^39 - 1] (skipping the x86 MSI
//      window 0xFEE00000-0xFEEFFFFF; 39 bits is the narrowest common IOMMU
//      address width).
//   5. device: VFIO_GROUP_GET_DEVICE_FD(bdf string); VFIO_DEVICE_GET_INFO
//      (must be VFIO_DEVICE_FLAGS_PCI with the config region and MSI-X IRQ
//      index present).
//   6. regions: VFIO_DEVICE_GET_REGION_INFO for VFIO_PCI_CONFIG_REGION_INDEX
//      (readable + writable) and VFIO_PCI_BAR0_REGION_INDEX (non-empty,
//      VFIO_REGION_INFO_FLAG_MMAP); BAR0 is mmap'ed PROT_READ|PROT_WRITE,
//      MAP_SHARED at the region offset, and wrapped in a Bar with
//      sys.mmio_trap(device_fd, VFIO_PCI_BAR0_REGION_INDEX).
//   7. VFIO_DEVICE_GET_IRQ_INFO for VFIO_PCI_MSIX_IRQ_INDEX (vector count;
//      0 when the index lacks VFIO_IRQ_INFO_EVENTFD).
// Nothing is enabled on the device by open(): bus mastering, MSI-X and reset
// are separate calls, so the driver orders them (docs/PRM.md "Bring-up order").
//
// Integer ioctl arguments (VFIO_CHECK_EXTENSION, VFIO_SET_IOMMU) are passed
// through Sys::ioctl as the integer cast to void*, exactly as the kernel
// receives them; VFIO_GET_API_VERSION and VFIO_DEVICE_RESET pass nullptr.
//
// Destruction undoes open in reverse: MSI-X disabled and its eventfds closed,
// BAR0 unmapped, device fd, group fd (which detaches the group from the
// container) and container fd closed. Every IOVA mapping dies with the
// container, so DmaContext/DmaBuffer objects must be destroyed first.
//
// Errors: an ioctl/open/mmap failure -> Status::from_errno(errno) (e.g.
// ENOENT -> KBV_ERR_NOT_FOUND, EBUSY -> KBV_ERR_BUSY, EPERM/EACCES ->
// KBV_ERR_ACCESS_DENIED); API version mismatch, no type1v2, a non-PCI device,
// BAR0 not mmap-able or no MSI-X -> KBV_ERR_NOT_SUPPORTED; group not viable or
// device not bound to vfio-pci -> KBV_ERR_INVALID_STATE; malformed kernel
// answers (capability chain out of bounds, empty BAR0) -> KBV_ERR_IO.
//
// Threading: open/close, config access, MSI-X and reset are control-path
// calls for one thread at a time. dma_map/dma_unmap may run concurrently from
// any thread. bar0() is immutable after open and may be used from any thread.
#pragma once

#include <kbv/status.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "platform/backend.hpp"
#include "platform/dma_mapper.hpp"
#include "platform/mmio.hpp"
#include "platform/pci.hpp"
#include "platform/sys.hpp"

namespace kbv::platform {

// linux/vfio.h struct vfio_region_info, the parts kbv uses.
struct VfioRegion {
  uint32_t index = 0;
  uint32_t flags = 0;   // VFIO_REGION_INFO_FLAG_*
  uint64_t size = 0;    // bytes
  uint64_t offset = 0;  // file offset of the region in the device fd
};

class VfioDevice final : public PciBackend {
 public:
  // kind: kVfioType1, kIommufd, or kVfio / kAuto (iommufd when available,
  // else type1; see above); kUio -> KBV_ERR_INVALID_ARGUMENT.
  static Result<std::unique_ptr<VfioDevice>> open(Sys& sys, std::string_view bdf,
                                                  BackendKind kind = BackendKind::kVfioType1);
  // True when `bdf` has a VFIO device cdev (sysfs vfio-dev/vfioN) and
  // /dev/iommu opens: what kAuto checks. `cdev` receives "/dev/vfio/devices/vfioN".
  static bool iommufd_available(Sys& sys, std::string_view bdf, std::string* cdev = nullptr);
  ~VfioDevice() override;
  VfioDevice(const VfioDevice&) = delete;
  VfioDevice& operator=(const VfioDevice&) = delete;

  BackendKind kind() const override { return kind_; }
  const PciDeviceInfo& pci() const override { return pci_; }
  Sys& sys() const { return sys_; }
  int container_fd() const { return container_fd_; }  // -1 on iommufd
  int iommufd() const { return iommufd_; }            // -1 on type1
  uint32_t ioas_id() const { return ioas_id_; }       // iommufd: the IOAS; 0 on type1
  int group_fd() const { return group_fd_; }
  int device_fd() const { return device_fd_; }
  uint32_t device_flags() const { return device_flags_; }  // VFIO_DEVICE_FLAGS_*
  const VfioRegion& config_region() const { return config_; }
  const VfioRegion& bar0_region() const { return bar0_region_; }

  // BAR0 (init segment at 0, UAR pages at n * 4096), mapped for the life of
  // the device.
  const Bar& bar0() const override { return bar0_; }

  // ---- PCI configuration space (pread/pwrite at the config region offset) ----
  // [offset, offset+len) must lie inside the config region, else
  // KBV_ERR_INVALID_ARGUMENT; a short transfer is KBV_ERR_IO.
  Status config_read(uint32_t offset, void* buf, size_t len) override;
  Status config_write(uint32_t offset, const void* buf, size_t len) override;

  // ---- MSI-X (VFIO_PCI_MSIX_IRQ_INDEX) ----
  // Vectors the device offers; 0 when MSI-X cannot signal eventfds.
  uint32_t msix_vector_count() const override { return msix_count_; }
  // Creates `n` eventfds (EFD_CLOEXEC | EFD_NONBLOCK, created with libc
  // eventfd(2): they are ordinary kernel eventfds on the model too) and
  // attaches them to vectors 0..n-1 with VFIO_DEVICE_SET_IRQS
  // (DATA_EVENTFD | ACTION_TRIGGER, start 0, count n). n == 0 or n > count ->
  // KBV_ERR_INVALID_ARGUMENT. If MSI-X is already enabled it is disabled
  // first (vfio-pci cannot resize an enabled MSI-X set).
  Status enable_msix(uint32_t n) override;
  // VFIO_DEVICE_SET_IRQS (DATA_NONE | ACTION_TRIGGER, count 0) and close the
  // eventfds. A no-op when not enabled.
  Status disable_msix() override;
  uint32_t msix_enabled_count() const override { return static_cast<uint32_t>(msix_fds_.size()); }
  // The eventfd of vector v (read(2) it to consume interrupts); -1 when none.
  int msix_eventfd(uint32_t v) const override { return v < msix_fds_.size() ? msix_fds_[v] : -1; }

  // ---- reset ----
  // VFIO_DEVICE_RESET (function-level reset); KBV_ERR_NOT_SUPPORTED when the
  // device lacks VFIO_DEVICE_FLAGS_RESET. BAR0 stays mapped and the IOMMU
  // mappings and MSI-X eventfds stay in place; the function's own state
  // (firmware, queues) is lost. Linux saves and restores config space around
  // the reset (pci_reset_function), but the driver should still call
  // enable_bus_master() again before the next bring-up rather than rely on it.
  Status reset() override;

  // ---- DmaMapper: VFIO_IOMMU_MAP_DMA / VFIO_IOMMU_UNMAP_DMA on the container,
  // IOMMU_IOAS_MAP / IOMMU_IOAS_UNMAP on the iommufd ----
  Status dma_map(void* va, uint64_t iova, uint64_t size, uint32_t access) override;
  Status dma_unmap(uint64_t iova, uint64_t size) override;
  std::vector<IovaRange> iova_ranges() const override { return iova_ranges_; }
  uint64_t iova_page_size() const override { return iova_page_size_; }
  // True when the ranges came from the kernel's capability, false when the
  // built-in default was used.
  bool iova_ranges_reported() const { return iova_ranges_reported_; }
  // How many more DMA mappings the container accepted at open
  // (VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL; vfio_iommu_type1's dma_entry_limit,
  // 65535 by default); -1 when the kernel does not say. Every DmaBuffer,
  // PagePool block and DmaRegistration is one mapping.
  int64_t dma_mappings_available_at_open() const { return dma_avail_; }

 private:
  explicit VfioDevice(Sys& sys) : sys_(sys) {}
  Status open_type1();
  Status open_iommufd(const std::string& cdev);  // vfio_iommufd.cpp
  Status query_ioas_ranges();                    // vfio_iommufd.cpp
  Status ioas_map(void* va, uint64_t iova, uint64_t size, uint32_t access);
  Status ioas_unmap(uint64_t iova, uint64_t size);
  Status query_device_info();
  Status open_container();
  Status open_group();
  Status query_iommu_info();
  Status open_device();
  Status query_region(uint32_t index, VfioRegion& out);
  Status map_bar0();
  Status query_msix();

  Sys& sys_;
  BackendKind kind_ = BackendKind::kVfioType1;
  std::string cdev_path_;  // iommufd: /dev/vfio/devices/vfioN
  int iommufd_ = -1;
  uint32_t ioas_id_ = 0;
  PciDeviceInfo pci_;
  std::string group_path_;
  int container_fd_ = -1;
  int group_fd_ = -1;
  int device_fd_ = -1;
  uint32_t device_flags_ = 0;
  uint32_t num_regions_ = 0;
  uint32_t num_irqs_ = 0;
  VfioRegion config_;
  VfioRegion bar0_region_;
  void* bar0_map_ = nullptr;
  Bar bar0_;
  uint32_t msix_count_ = 0;
  std::vector<int> msix_fds_;
  std::vector<IovaRange> iova_ranges_;
  uint64_t iova_page_size_ = 4096;
  bool iova_ranges_reported_ = false;
  int64_t dma_avail_ = -1;
};

}  // namespace kbv::platform
