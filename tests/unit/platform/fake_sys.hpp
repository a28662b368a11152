// SPDX-License-Identifier: BSD-3-Clause
//
// FakeSys: a hand-written Sys for the platform unit tests. It serves
//   - a small sysfs tree (files with contents, symlinks; list_dir derives
//     directory entries from the paths),
//   - /dev/vfio/vfio (container) and /dev/vfio/<n> (group) descriptors and the
//     VFIO ioctls with the linux/vfio.h structures, including the
//     VFIO_IOMMU_GET_INFO capability chain (VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL
//     first, then VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE) and the argsz-grow
//     protocol,
//   - a device fd with a config-space region (pread/pwrite) and a
//     memory-backed BAR0 (mmap), MSI-X eventfd registration, reset,
//   - type1 DMA map/unmap bookkeeping with the kernel's checks (alignment,
//     IOVA inside the ranges, no overlap, unmap returns the bytes removed),
// and counts every descriptor it hands out so tests can assert no leaks.
// Failures are injected per ioctl request (errno) or per open() path.
#pragma once

#include <linux/vfio.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "platform/iova.hpp"
#include "platform/sys.hpp"

namespace kbv::platform::test {

struct TrapWrite {
  uint64_t offset;
  uint64_t value;
  unsigned width;
};

class RecordingTrap final : public MmioTrap {
 public:
  void on_write(uint64_t offset, uint64_t value, unsigned width) override {
    writes.push_back({offset, value, width});
  }
  std::vector<TrapWrite> writes;
};

struct FakeDmaMapping {
  uint64_t vaddr;
  uint64_t size;
  uint32_t flags;
};

class FakeSys final : public Sys {
 public:
  static constexpr const char* kBdf = "0000:3b:00.0";
  static constexpr int kGroup = 12;
  static constexpr uint64_t kConfigOffset = uint64_t{VFIO_PCI_CONFIG_REGION_INDEX} << 40;

  FakeSys();
  ~FakeSys() override;

  // ---- sysfs ----
  void add_file(const std::string& path, const std::string& content);
  void add_link(const std::string& path, const std::string& target);
  void remove(const std::string& path);
  // A PCI function under /sys/bus/pci/devices/<bdf>; empty driver = unbound,
  // group < 0 = no iommu_group link.
  void add_pci(const std::string& bdf, uint16_t vendor, uint16_t device, uint32_t cls,
               int numa_node, const std::string& driver, int group);

  // ---- VFIO behaviour knobs ----
  int api_version = VFIO_API_VERSION;
  bool type1v2 = true;
  bool viable = true;
  uint32_t device_flags = VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET;
  uint32_t num_regions = VFIO_PCI_NUM_REGIONS;
  uint32_t num_irqs = VFIO_PCI_NUM_IRQS;
  uint32_t bar0_flags =
      VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE | VFIO_REGION_INFO_FLAG_MMAP;
  uint64_t bar0_size = 1u << 20;
  uint32_t config_flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
  uint32_t msix_count = 8;
  uint32_t msix_flags = VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_NORESIZE;
  bool report_iova_caps = true;
  bool corrupt_cap_chain = false;  // cap `next` points back at itself
  std::vector<IovaRange> ranges = {{0x0, 0xFEDFFFFFull}, {0x100000000ull, 0xFFFFFFFFFFFFull}};
  uint64_t iova_pgsizes = 0x40201000ull;  // 4 KiB | 2 MiB | 1 GiB
  uint32_t dma_avail = 65535;
  bool mmap_fails = false;
  bool provide_trap = true;
  uint64_t unmap_short_by = 0;              // UNMAP_DMA reports this many bytes fewer
  std::map<unsigned long, int> fail_ioctl;  // request -> errno
  std::map<std::string, int> fail_open;     // path -> errno

  // ---- observed state ----
  int open_fds() const { return static_cast<int>(fds_.size()); }
  int bad_closes = 0;
  bool bar0_mapped = false;
  int reset_count = 0;
  int set_irqs_calls = 0;
  std::vector<int> msix_fds;               // as last registered
  std::map<uint64_t, FakeDmaMapping> dma;  // iova -> mapping
  std::vector<std::string> calls;          // ioctl names in order
  std::vector<uint8_t> config;             // config space bytes
  unsigned char* bar0() const { return bar0_mem_; }
  RecordingTrap trap;

  // ---- Sys ----
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
  MmioTrap* mmio_trap(int device_fd, uint32_t region_index) override;

 private:
  enum class Kind { kFile, kContainer, kGroup, kDevice };
  struct Fd {
    Kind kind;
    std::string content;  // kFile
    size_t pos = 0;
  };
  Fd* find(int fd, Kind kind);
  int new_fd(Fd f);
  int container_ioctl(unsigned long request, void* arg);
  int group_ioctl(unsigned long request, void* arg);
  int device_ioctl(unsigned long request, void* arg);

  std::map<std::string, std::string> files_;
  std::map<std::string, std::string> links_;
  std::map<int, Fd> fds_;
  int next_fd_ = 1000;
  bool group_attached_ = false;
  bool iommu_set_ = false;
  unsigned char* bar0_mem_ = nullptr;
  size_t bar0_alloc_ = 0;
};

}  // namespace kbv::platform::test
