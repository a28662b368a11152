// SPDX-License-Identifier: BSD-3-Clause
//
// sim::Kernel — the emulated Linux VFIO kernel of the HCA model: a
// platform::Sys (platform/sys.hpp) that owns a registry of model PCI
// functions and answers, for their paths and descriptors, what Linux answers
// for a device bound to vfio-pci; everything else goes to the real system.
//
// Model devices live in PCI domain 0xfffe ("fffe:00:01.0", "fffe:00:02.0",
// ...), which no real machine uses, each alone in IOMMU group
// kGroupBase + slot (65537, 65538, ...), above any real group number.
//
// What it answers (uAPI: linux/vfio.h; sysfs: Documentation/ABI/testing/
// sysfs-bus-pci and the layout Linux builds under /sys):
//   sysfs  /sys/bus/pci/devices/<bdf>/{vendor,device,class,subsystem_vendor,
//          subsystem_device,revision,numa_node,config} (open() returns a
//          readable descriptor with the contents, "0x15b3\n" format; config
//          is the binary config space), the links `driver` ->
//          ../../../bus/pci/drivers/vfio-pci and `iommu_group` ->
//          ../../../kernel/iommu_groups/<n>, the device link itself ->
//          ../../../devices/pcifffe:00/<bdf>; the same under
//          /sys/devices/pcifffe:00/<bdf>; /sys/kernel/iommu_groups/<n>/devices/
//          <bdf>; list_dir of /sys/bus/pci/devices, /sys/kernel/iommu_groups
//          and /dev/vfio merges the model entries into the real listing;
//          while a function is bound to vfio-pci, /sys/module/{vfio,
//          vfio_iommu_type1,vfio_pci} (merged into /sys/module's listing)
//          and /sys/module/vfio/parameters/enable_unsafe_noiommu_mode ("N").
//   /dev/vfio/vfio   a new container per open: VFIO_GET_API_VERSION,
//          VFIO_CHECK_EXTENSION (1 for VFIO_TYPE1_IOMMU and
//          VFIO_TYPE1v2_IOMMU, 0 otherwise), VFIO_SET_IOMMU (TYPE1 or
//          TYPE1v2, ENODEV otherwise; EINVAL without a group or when already
//          set), then VFIO_IOMMU_GET_INFO (page sizes 4K|2M|1G, capability
//          chain IOVA_RANGE + DMA_AVAIL with argsz negotiation),
//          VFIO_IOMMU_MAP_DMA / UNMAP_DMA (type1 rules, iommu_map.hpp: v2's
//          exact unmaps, or v1's whole-mapping unmaps for a TYPE1 container,
//          which DPDK's EAL asks for; ENOTTY before SET_IOMMU).
//   /dev/vfio/<n>    the group (EBUSY when already open): GET_STATUS
//          (VIABLE | CONTAINER_SET), SET_CONTAINER (EBADF/EINVAL/EFAULT),
//          UNSET_CONTAINER (EINVAL when unset, EBUSY while device fds are
//          open), GET_DEVICE_FD by BDF (EINVAL until the container has an
//          IOMMU, ENODEV for another name).
//   device fd  the first open enables the function (memory decoding on) and
//          resets it; the last close disables MSI-X, clears bus mastering and
//          memory decoding and resets it (vfio_pci_core_enable/_disable).
//          GET_INFO (PCI|RESET, 9 regions, 5 irqs), GET_REGION_INFO (BAR0
//          READ|WRITE|MMAP + MSIX_MAPPABLE capability; config 4 KiB
//          READ|WRITE; other BARs and the ROM size 0; VGA EINVAL; region
//          offset = index << 40), GET_IRQ_INFO, SET_IRQS (MSI-X eventfds:
//          DATA_EVENTFD|ACTION_TRIGGER with start/count, fd -1 unassigns,
//          DATA_NONE with count 0 disables, DATA_NONE/BOOL with count > 0
//          triggers; INTx/ERR/REQ triggers accepted but never fired),
//          RESET; pread/pwrite of the config region (read-only fields kept)
//          and BAR0 (EIO while memory decoding is off); mmap of BAR0
//          (MAP_SHARED: the model's own pages; accesses while decoding is off
//          are not blocked, only trapped writes are dropped);
//          mmio_trap(fd, 0) delivers stores to the model's write handler.
// Unknown ioctls give ENOTTY, short argsz EINVAL, a null argument EFAULT,
// descriptors of another kind EINVAL/ENOTTY as Linux does. Descriptors are
// real numbers reserved in the process: eventfds holding 1, so that poll(2)
// and select(2) report them readable and writable as Linux reports a file
// without a poll method (DEFAULT_POLLMASK); close-on-exec as the open flags
// say (device descriptors always, as vfio's get_unused_fd_flags(O_CLOEXEC)).
// Released by close(); dup_fd / forget_fd keep the table right across
// dup(2) family calls.
//
// stat_path answers stat/lstat for the model's paths (rdma-core's mlx5_vfio
// stats the device directory and /dev/vfio/<n> before opening them).
// Not modelled: opening sysfs directories (list them with list_dir), the
// migration/dirty-tracking and vaddr-update interfaces, hot reset, INTx.
//
// Threading: every method may be called from any thread; one lock guards the
// registry and the descriptor table (control path only — DMA and MSI-X go
// straight to the PciDevice).
#pragma once

#include "platform/sys.hpp"
#include "sim/bus/pci_device.hpp"

#include <kbv/status.hpp>

#include <sys/stat.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kbv::sim {

class Kernel final : public platform::Sys {
 public:
  static constexpr unsigned kDomain = 0xfffe;
  static constexpr int kGroupBase = 65536;

  // `real` answers every path and descriptor that is not the model's.
  explicit Kernel(platform::Sys& real = platform::real_sys());
  ~Kernel() override;
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  // The process-wide instance ("sim:<name>" devices); never destroyed.
  static Kernel& instance();

  // What runs "inside" a new device (typically its firmware: construct a
  // sim::fw::Firmware on `dev`, start it, return it). Called by add_device
  // before the device becomes visible; the returned object lives with the
  // device and is destroyed before it (remove_device, ~Kernel). Returning
  // nullptr attaches nothing. Set it before adding devices.
  using Attach = std::function<std::shared_ptr<void>(const std::string& name, PciDevice& dev)>;
  void set_attach(Attach a);

  // Creates model device `name` (unique, non-empty, no '/') in the first free
  // slot (at most 31 devices) and returns its BDF.
  Result<std::string> add_device(const std::string& name, const DeviceConfig& cfg = {});
  // KBV_ERR_NOT_FOUND, or KBV_ERR_BUSY while its group or device is open.
  Status remove_device(const std::string& name);
  // The device, its BDF and IOMMU group; nullptr / NOT_FOUND / -1 if none.
  // The pointer stays valid until remove_device(name).
  PciDevice* device(const std::string& name);
  Result<std::string> bdf(const std::string& name) const;
  int iommu_group(const std::string& name) const;
  std::vector<std::string> device_names() const;
  // "sim:<name>" -> the device's BDF.
  Result<std::string> resolve(std::string_view uri) const;

  // ---- the machine around the functions (tests of the backends) ----
  // /dev/iommu and each vfio-pci function's cdev /dev/vfio/devices/vfio<slot>
  // (sysfs <bdf>/vfio-dev/vfio<slot>) exist: a Linux 6.6+ kernel with
  // CONFIG_IOMMUFD and CONFIG_VFIO_DEVICE_CDEV (iommufd.cpp). Off by default.
  void set_iommufd(bool on);
  bool iommufd_enabled() const;
  // Rebinds function `name` to `driver` ("vfio-pci", "uio_pci_generic",
  // another name such as "mlx5_core", or "" for none): sysfs `driver`
  // follows, and only vfio-pci functions have /dev/vfio files.
  // KBV_ERR_NOT_FOUND, KBV_ERR_BUSY while it is open.
  Status bind_driver(const std::string& name, const std::string& driver);
  // Puts the function in its IOMMU group or takes it out (IOMMU off): no
  // sysfs iommu_group link, no /dev/vfio group or cdev. Same errors.
  Status set_iommu_group(const std::string& name, bool in_group);
  // Live DMA mappings (bytes) of iommufd IOASes in this process.
  uint64_t iommufd_mapped_bytes() const;
  // The machine's 2 MiB huge page pool (hugetlbfs): anonymous MAP_HUGETLB
  // mmaps through this Sys take 2 MiB-aligned pages from it (ENOMEM when it
  // is short, as Linux without reserved huge pages); munmap returns them.
  // Default 0. (uio.cpp)
  void set_huge_pages(size_t n);
  size_t huge_pages_free() const;
  // Model descriptors open now (every kind): a closed device leaves none.
  size_t descriptors() const;

  // Whether a path / descriptor is answered by the model (LD_PRELOAD routing).
  bool owns_path(const char* path) const;
  bool owns_fd(int fd) const;

  // Descriptor duplication (dup(2), dup2/dup3, fcntl F_DUPFD / F_DUPFD_CLOEXEC
  // of a model descriptor): the new number refers to the same open file —
  // the same container, or holds the group / device open until the last of
  // its descriptors closes, as Linux's struct file reference does.
  //   dup_fd(old, -1, flags, min)  the lowest free number >= min (dup, F_DUPFD;
  //                                flags O_CLOEXEC for F_DUPFD_CLOEXEC)
  //   dup_fd(old, new, flags, 0)   exactly `new` (dup2 / dup3), closing what
  //                                `new` was (a model descriptor is released)
  // Returns the new descriptor or -1 with errno (EBADF: `old` not open;
  // EINVAL: dup3 with old == new; the real system's errors).
  int dup_fd(int oldfd, int newfd, int flags, int min_fd);
  // Forgets model descriptor `fd` without closing the number (the caller is
  // about to reuse it, e.g. dup2 of a real descriptor onto it): the open file
  // is released if this was its last descriptor. No-op for other numbers.
  void forget_fd(int fd);
  // What a descriptor is: 'C' container, 'G' group, 'D' device, 0 not the
  // model's; `path` receives the /dev path of a container / group.
  char fd_kind(int fd, std::string* path = nullptr) const;

  // platform::Sys
  int open(const char* path, int flags) override;
  int close(int fd) override;
  int ioctl(int fd, unsigned long request, void* arg) override;
  ssize_t read(int fd, void* buf, size_t count) override;
  ssize_t pread(int fd, void* buf, size_t count, off_t offset) override;
  ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) override;
  void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) override;
  int munmap(void* addr, size_t length) override;
  ssize_t readlink(const char* path, char* buf, size_t size) override;
  int list_dir(const char* path, std::vector<std::string>& names) override;
  platform::MmioTrap* mmio_trap(int device_fd, uint32_t region_index) override;

  // stat(2) / lstat(2) (follow = false) of a path the model owns: directories,
  // attribute files (0444, 4096 bytes as sysfs reports), links and the
  // /dev/vfio character devices. Other paths: -1 with ENOENT (the caller
  // asks the real system for those; see owns_path).
  int stat_path(const char* path, struct ::stat* st, bool follow);

  // Internal state (vfio_kernel.cpp, vfio_device.cpp, vfio_sysfs.cpp).
  struct Model;
  struct Container;
  struct Fd;
  struct Ioas;
  struct Iommufd;

 private:
  // Each returns the ioctl result or -errno; the caller sets errno.
  int container_ioctl(Fd& f, unsigned long req, void* arg);
  int iommu_ioctl(Container& c, unsigned long req, void* arg);
  int group_ioctl(Model& m, unsigned long req, void* arg);
  int device_ioctl(Model& m, unsigned long req, void* arg);
  int set_irqs(Model& m, void* arg);
  int iommufd_ioctl(Iommufd& ctx, unsigned long req, void* arg);  // iommufd.cpp
  int cdev_ioctl(Fd& f, unsigned long req, void* arg);            // iommufd.cpp
  void cdev_release(Fd& f);                                       // iommufd.cpp
  Model* vfio_group(int group) const;  // /dev/vfio/<group> of a vfio-pci function
  // No-IOMMU view (uio.cpp): pagemap answers and the physical address space
  // every uio_pci_generic function sees; mu_ held.
  ssize_t pagemap_read(void* buf, size_t count, off_t offset);
  void uio_attach(Model& m, bool on);
  bool any_uio() const;
  // A function is bound to vfio-pci: /sys/module/vfio* exist (vfio_sysfs.cpp).
  bool vfio_modules_loaded() const;
  void* huge_mmap(size_t length);               // MAP_FAILED + errno when the pool is short
  bool huge_munmap(void* addr, size_t length);  // false: not a pool mapping
  Model* model_by_cdev(const std::string& path) const;
  ssize_t region_rw(Model& m, void* buf, size_t count, off_t offset, bool write);
  void detach_group(Model& m);                // mu_ held
  int reserve_fd(Fd f, bool cloexec = true);  // mu_ held; -errno on failure
  Fd* find_fd(int fd);                        // mu_ held
  // The last descriptor of an open file went away (mu_ held).
  void release_file(Fd& f);

  // sysfs (vfio_sysfs.cpp); mu_ held. A path that belongs to the model's
  // part of sysfs gets an answer; `handled` false means "not ours".
  Model* model_by_bdf(std::string_view bdf) const;
  Model* model_by_group(int group) const;
  int sysfs_open(const std::string& path, int flags, bool& handled);
  ssize_t sysfs_readlink(const std::string& path, std::string& target, bool& handled);
  int sysfs_list(const std::string& path, std::vector<std::string>& names, bool& handled);

  platform::Sys& real_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Model>> models_;  // by name
  Attach attach_;
  std::unordered_map<int, std::shared_ptr<Fd>> fds_;  // dup'ed numbers share the Fd
  bool iommufd_ = false;
  // No-IOMMU physical address space (uio.cpp).
  std::map<uint64_t, uint64_t> phys_chunks_;  // 2 MiB VA chunk -> its physical base
  uint64_t next_phys_top_ = 0;                // chunks are handed out downwards
  std::map<uint64_t, uint64_t> phys_pages_;   // VA page -> physical page, reported so far
  size_t huge_total_ = 0, huge_used_ = 0;
  std::map<uintptr_t, size_t> huge_maps_;  // start -> length
};

}  // namespace kbv::sim
