// SPDX-License-Identifier: BSD-3-Clause
//
// The system-call seam between kbv's platform code and the kernel.
//
// Every system call the platform layer makes to reach a device — opening
// /dev/vfio/*, the VFIO ioctls, config-space pread/pwrite, mmap of BARs,
// reading sysfs (/sys/bus/pci/devices/<bdf>/...) — goes through a Sys. In
// production it is real_sys(), which calls libc. The HCA model's emulated
// VFIO kernel (src/sim) is another Sys that answers the same calls with the
// same uAPI structures (linux/vfio.h), so the one VFIO backend runs unchanged
// on silicon and on the model (docs/DESIGN.md "Layers").
//
// Conventions are libc's: a call returns what the libc function returns
// (-1 / MAP_FAILED on failure) and sets errno. Descriptors handed out by an
// emulated kernel are real descriptor numbers reserved in this process, so
// they never collide with the application's own.
//
// Threading: a Sys is shared; every method may be called from any thread.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kbv::platform {

// Notification of a store to a mapped device region, delivered after the
// store itself. Silicon sees every MMIO write as a PCIe MemWr TLP; a model
// whose BAR is ordinary memory would miss writes that overwrite each other
// (two doorbells to one register), so on the model the platform's MMIO
// accessors also report each write here. Real VFIO has no trap (nullptr), and
// the accessors' only cost is one predictable branch.
class MmioTrap {
 public:
  virtual ~MmioTrap() = default;
  // offset: byte offset in the region; width: 4 or 8 bytes; value: the value
  // stored, in CPU order as the accessor received it (before byte swapping
  // into the device's big-endian layout, i.e. the same bits the store wrote
  // are readable at `offset`).
  virtual void on_write(uint64_t offset, uint64_t value, unsigned width) = 0;
};

class Sys {
 public:
  virtual ~Sys() = default;

  virtual int open(const char* path, int flags) = 0;
  virtual int close(int fd) = 0;
  virtual int ioctl(int fd, unsigned long request, void* arg) = 0;
  virtual ssize_t read(int fd, void* buf, size_t count) = 0;
  virtual ssize_t pread(int fd, void* buf, size_t count, off_t offset) = 0;
  virtual ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) = 0;
  virtual void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) = 0;
  virtual int munmap(void* addr, size_t length) = 0;
  // readlink(2): no terminating NUL is written, like libc.
  virtual ssize_t readlink(const char* path, char* buf, size_t size) = 0;
  // Names in a directory (no "." or ".."); 0 on success, -1 with errno.
  virtual int list_dir(const char* path, std::vector<std::string>& names) = 0;

  // The model's write trap for a mapped region of a device fd (region index
  // as in VFIO_PCI_BAR0_REGION_INDEX); nullptr on real hardware.
  virtual MmioTrap* mmio_trap(int device_fd, uint32_t region_index) {
    (void)device_fd;
    (void)region_index;
    return nullptr;
  }
};

// The process's real system calls. Never null; lives for the whole process.
Sys& real_sys();

}  // namespace kbv::platform
