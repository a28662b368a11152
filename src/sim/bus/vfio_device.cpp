// SPDX-License-Identifier: BSD-3-Clause
// sim::Kernel: the vfio-pci device descriptor — info, regions, interrupts,
// reset, config/BAR access. Behaviour and errnos follow Linux
// drivers/vfio/pci/{vfio_pci_core.c,vfio_pci_intrs.c,vfio_pci_rdwr.c} and
// drivers/vfio/vfio_main.c (vfio_set_irqs_validate_and_prepare).
#include "common/log.hpp"
#include "sim/bus/vfio_kernel.hpp"
#include "sim/bus/vfio_state.hpp"

#include <fcntl.h>
#include <linux/vfio.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <vector>

namespace kbv::sim {
namespace {

#define KBV_OFFSETOFEND(type, member) (offsetof(type, member) + sizeof(((type*)nullptr)->member))

constexpr uint64_t kRegionShift = 40;  // vfio-pci: VFIO_PCI_OFFSET_SHIFT

// Interrupt count per index (vfio_pci_get_irq_count): INTx 1 (pin A), MSI 0
// (no MSI capability), MSI-X the table size, ERR 1 (PCIe), REQ 1.
uint32_t irq_count(const PciDevice& d, uint32_t index) {
  switch (index) {
    case VFIO_PCI_INTX_IRQ_INDEX: return 1;
    case VFIO_PCI_MSI_IRQ_INDEX: return 0;
    case VFIO_PCI_MSIX_IRQ_INDEX: return d.msix_count();
    case VFIO_PCI_ERR_IRQ_INDEX: return 1;
    case VFIO_PCI_REQ_IRQ_INDEX: return 1;
    default: return 0;
  }
}

// EBADF for a closed descriptor, EINVAL for one that is not an eventfd
// (eventfd_ctx_fdget).
int check_eventfd(int fd) {
  if (::fcntl(fd, F_GETFD) < 0) return -EBADF;
  char link[64];
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(path.c_str(), link, sizeof link - 1);
  if (n < 0) return -EBADF;
  link[n] = '\0';
  return std::strcmp(link, "anon_inode:[eventfd]") == 0 ? 0 : -EINVAL;
}

}  // namespace

int Kernel::device_ioctl(Model& m, unsigned long req, void* arg) {
  PciDevice& d = *m.dev;
  switch (req) {
    case VFIO_DEVICE_GET_INFO: {
      if (!arg) return -EFAULT;
      vfio_device_info info{};
      const size_t minsz = KBV_OFFSETOFEND(vfio_device_info, num_irqs);
      std::memcpy(&info, arg, minsz);
      if (info.argsz < minsz) return -EINVAL;
      info.flags = VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET;
      info.num_regions = VFIO_PCI_NUM_REGIONS;
      info.num_irqs = VFIO_PCI_NUM_IRQS;
      std::memcpy(arg, &info, minsz);
      return 0;
    }
    case VFIO_DEVICE_GET_REGION_INFO: {
      if (!arg) return -EFAULT;
      vfio_region_info info{};
      const size_t minsz = KBV_OFFSETOFEND(vfio_region_info, offset);
      std::memcpy(&info, arg, minsz);
      if (info.argsz < minsz) return -EINVAL;
      if (info.index >= VFIO_PCI_NUM_REGIONS) return -EINVAL;
      info.offset = static_cast<uint64_t>(info.index) << kRegionShift;
      info.size = 0;
      info.flags = 0;
      info.cap_offset = 0;
      bool msix_cap = false;
      switch (info.index) {
        case VFIO_PCI_CONFIG_REGION_INDEX:
          info.size = PciConfig::kSize;
          info.flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
          break;
        case VFIO_PCI_BAR0_REGION_INDEX:
          info.size = d.config().bar0_size;
          info.flags =
              VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE | VFIO_REGION_INFO_FLAG_MMAP;
          msix_cap = true;  // the MSI-X table lives in BAR0 and may be mapped
          break;
        case VFIO_PCI_VGA_REGION_INDEX: return -EINVAL;  // not a VGA device
        default: break;  // BAR1 (upper half of BAR0), BAR2-5, ROM: size 0
      }
      if (msix_cap) {
        const size_t need = sizeof(info) + sizeof(vfio_info_cap_header);
        info.flags |= VFIO_REGION_INFO_FLAG_CAPS;
        if (info.argsz < need) {
          info.argsz = static_cast<uint32_t>(need);
        } else {
          vfio_info_cap_header h{};
          h.id = VFIO_REGION_INFO_CAP_MSIX_MAPPABLE;
          h.version = 1;
          h.next = 0;
          std::memcpy(static_cast<std::byte*>(arg) + sizeof(info), &h, sizeof h);
          info.cap_offset = sizeof(info);
        }
      }
      std::memcpy(arg, &info, minsz);
      return 0;
    }
    case VFIO_DEVICE_GET_IRQ_INFO: {
      if (!arg) return -EFAULT;
      vfio_irq_info info{};
      const size_t minsz = KBV_OFFSETOFEND(vfio_irq_info, count);
      std::memcpy(&info, arg, minsz);
      if (info.argsz < minsz || info.index >= VFIO_PCI_NUM_IRQS) return -EINVAL;
      info.flags = VFIO_IRQ_INFO_EVENTFD;
      info.count = irq_count(d, info.index);
      if (info.index == VFIO_PCI_INTX_IRQ_INDEX)
        info.flags |= VFIO_IRQ_INFO_MASKABLE | VFIO_IRQ_INFO_AUTOMASKED;
      else if (info.index != VFIO_PCI_MSIX_IRQ_INDEX)
        info.flags |= VFIO_IRQ_INFO_NORESIZE;  // MSI-X vectors can be added (dynamic MSI-X)
      std::memcpy(arg, &info, minsz);
      return 0;
    }
    case VFIO_DEVICE_SET_IRQS: return set_irqs(m, arg);
    case VFIO_DEVICE_RESET:
      log::info("sim.vfio", "{}: VFIO_DEVICE_RESET", m.bdf);
      d.reset();
      return 0;
    default: return -ENOTTY;
  }
}

int Kernel::set_irqs(Model& m, void* arg) {
  if (!arg) return -EFAULT;
  PciDevice& d = *m.dev;
  vfio_irq_set hdr{};
  const size_t minsz = KBV_OFFSETOFEND(vfio_irq_set, count);
  std::memcpy(&hdr, arg, minsz);
  // vfio_set_irqs_validate_and_prepare.
  if (hdr.argsz < minsz || hdr.index >= VFIO_PCI_NUM_IRQS || hdr.count >= UINT32_MAX - hdr.start ||
      (hdr.flags & ~(VFIO_IRQ_SET_DATA_TYPE_MASK | VFIO_IRQ_SET_ACTION_TYPE_MASK)))
    return -EINVAL;
  size_t elem = 0;
  switch (hdr.flags & VFIO_IRQ_SET_DATA_TYPE_MASK) {
    case VFIO_IRQ_SET_DATA_NONE: break;
    case VFIO_IRQ_SET_DATA_BOOL: elem = 1; break;
    case VFIO_IRQ_SET_DATA_EVENTFD: elem = sizeof(int32_t); break;
    default: return -EINVAL;
  }
  const uint32_t action = hdr.flags & VFIO_IRQ_SET_ACTION_TYPE_MASK;
  if (action != VFIO_IRQ_SET_ACTION_MASK && action != VFIO_IRQ_SET_ACTION_UNMASK &&
      action != VFIO_IRQ_SET_ACTION_TRIGGER)
    return -EINVAL;
  const uint32_t max = irq_count(d, hdr.index);
  if (max == 0 || hdr.start >= max || hdr.start + hdr.count > max) return -EINVAL;
  if (elem != 0 && hdr.argsz - minsz < hdr.count * elem) return -EINVAL;
  const auto* data = static_cast<const std::byte*>(arg) + minsz;

  if (hdr.index != VFIO_PCI_MSIX_IRQ_INDEX) {
    // INTx / ERR / REQ: accepted so drivers that register them work; the
    // model never raises them. MSI has no vectors (rejected above).
    if (hdr.index != VFIO_PCI_INTX_IRQ_INDEX && action != VFIO_IRQ_SET_ACTION_TRIGGER)
      return -ENOTTY;
    if (elem == sizeof(int32_t)) {
      for (uint32_t i = 0; i < hdr.count; ++i) {
        int32_t fd;
        std::memcpy(&fd, data + i * elem, sizeof fd);
        if (fd >= 0)
          if (const int e = check_eventfd(fd); e < 0) return e;
      }
    }
    return 0;
  }

  // MSI-X (vfio_pci_set_msi_trigger); masking is not exported: ENOTTY.
  if (action != VFIO_IRQ_SET_ACTION_TRIGGER) return -ENOTTY;
  const uint32_t dtype = hdr.flags & VFIO_IRQ_SET_DATA_TYPE_MASK;
  if (d.msix_enabled() && hdr.count == 0 && dtype == VFIO_IRQ_SET_DATA_NONE) {
    d.disable_msix();
    return 0;
  }
  if (dtype == VFIO_IRQ_SET_DATA_EVENTFD) {
    std::vector<int32_t> fds(hdr.count);
    if (hdr.count) std::memcpy(fds.data(), data, hdr.count * sizeof(int32_t));
    for (uint32_t i = 0; i < hdr.count; ++i) {
      if (fds[i] < 0) continue;
      if (const int e = check_eventfd(fds[i]); e < 0) return e;
    }
    const bool was_enabled = d.msix_enabled();
    if (!was_enabled) d.enable_msix();
    for (uint32_t i = 0; i < hdr.count; ++i) {
      Status s = d.set_msix_eventfd(hdr.start + i, fds[i]);
      if (!s) {
        // Unwind this block, as vfio_msi_set_block does.
        for (uint32_t j = 0; j < i; ++j) (void)d.set_msix_eventfd(hdr.start + j, -1);
        if (!was_enabled) d.disable_msix();
        return -kbv_status_to_errno(s.code());
      }
    }
    return 0;
  }
  if (!d.msix_enabled()) return -EINVAL;
  // DATA_NONE / DATA_BOOL with count > 0: fire the vectors (loopback test).
  for (uint32_t i = 0; i < hdr.count; ++i) {
    const bool fire = dtype == VFIO_IRQ_SET_DATA_NONE || data[i] != std::byte{0};
    if (fire) (void)d.raise_msix(hdr.start + i);
  }
  return 0;
}

ssize_t Kernel::region_rw(Model& m, void* buf, size_t count, off_t offset, bool write) {
  PciDevice& d = *m.dev;
  const uint64_t index = static_cast<uint64_t>(offset) >> kRegionShift;
  const uint64_t pos = static_cast<uint64_t>(offset) & ((1ull << kRegionShift) - 1);
  if (!buf && count) return -EFAULT;
  if (index == VFIO_PCI_CONFIG_REGION_INDEX) {
    if (pos >= PciConfig::kSize) return -EINVAL;
    const size_t n = std::min<size_t>(count, PciConfig::kSize - pos);
    if (write)
      d.config_write(static_cast<uint32_t>(pos), {static_cast<const std::byte*>(buf), n});
    else
      d.config_read(static_cast<uint32_t>(pos), {static_cast<std::byte*>(buf), n});
    return static_cast<ssize_t>(n);
  }
  if (index == VFIO_PCI_BAR0_REGION_INDEX) {
    const uint64_t size = d.config().bar0_size;
    if (pos >= size || count > size - pos) return -EINVAL;
    // vfio_pci_core_do_io_rw: no BAR access while memory decoding is off.
    if (!d.memory_enabled()) return -EIO;
    std::byte* p = d.bar0().data() + pos;
    if (!write) {
      std::memcpy(buf, p, count);
      return static_cast<ssize_t>(count);
    }
    std::memcpy(p, buf, count);
    // A 4- or 8-byte store is a register write the firmware must see; the
    // value goes in CPU order, as the MMIO trap reports it (device registers
    // are big-endian).
    if (count == 4) {
      uint32_t v;
      std::memcpy(&v, buf, 4);
      d.on_bar0_write(pos, __builtin_bswap32(v), 4);
    } else if (count == 8) {
      uint64_t v;
      std::memcpy(&v, buf, 8);
      d.on_bar0_write(pos, __builtin_bswap64(v), 8);
    }
    return static_cast<ssize_t>(count);
  }
  return -EINVAL;  // regions of size 0
}

}  // namespace kbv::sim
