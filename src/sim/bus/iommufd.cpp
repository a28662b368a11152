// SPDX-License-Identifier: BSD-3-Clause
// sim::Kernel: iommufd (/dev/iommu) and the VFIO device cdev
// (/dev/vfio/devices/vfioN), and the machine switches tests use (driver
// binding, IOMMU group). Behaviour and errnos follow Linux 6.6+:
//   drivers/iommu/iommufd/main.c    iommufd_fops_ioctl: an unknown command
//        ENOTTY; size below the command's minimum EINVAL; bytes past the
//        kernel's structure must be zero, else E2BIG (copy_struct_from_user);
//        IOMMU_DESTROY of an unknown id ENOENT, of an attached IOAS EBUSY.
//   drivers/iommu/iommufd/ioas.c     IOAS_ALLOC (flags must be 0: EOPNOTSUPP),
//        IOAS_IOVA_RANGES (EMSGSIZE with num_iovas set when the array is too
//        small; out_iova_alignment = PAGE_SIZE), IOAS_MAP (unknown flags or
//        __reserved EOPNOTSUPP; length 0 EINVAL; without FIXED_IOVA the
//        kernel picks the IOVA), IOAS_UNMAP (iova 0 + length U64_MAX unmaps
//        all; a range with nothing mapped, or one that would split a
//        mapping, ENOENT; length out = bytes unmapped).
//   drivers/iommu/iommufd/io_pagetable.c iopt_check_iova: IOVA misaligned or
//        in a reserved range EINVAL, overflow EOVERFLOW, overlap EEXIST; the
//        pages are pinned (unmapped memory EFAULT).
//   drivers/vfio/device_cdev.c        before VFIO_DEVICE_BIND_IOMMUFD every
//        other ioctl, read/write and mmap is EINVAL (access not granted);
//        BIND twice EINVAL, flags EINVAL, a descriptor that is not an
//        iommufd EBADFD (closed: EBADF), the device's group open EBUSY;
//        ATTACH_IOMMUFD_PT of an unknown id ENOENT; close detaches and
//        unbinds (vfio_df_unbind_iommufd) and, for the last user, disables
//        the function as vfio_pci_core_disable does.
// Not modelled: HWPTs (IOMMU_HWPT_ALLOC), IOAS_COPY / ALLOW_IOVAS, options,
// the VFIO compatibility container on /dev/iommu, PASID attach, noiommu.
#include <fcntl.h>
#include <linux/vfio.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "common/log.hpp"
#include "platform/linux_uapi.hpp"
#include "sim/bus/vfio_kernel.hpp"
#include "sim/bus/vfio_state.hpp"

namespace kbv::sim {
namespace uapi = platform::uapi;
namespace {

constexpr const char* kLog = "sim.iommufd";

// copy_struct_from_user: the caller's `size` bytes into a kernel structure
// of `ksize` bytes: below `minsz` EINVAL, non-zero bytes past ksize E2BIG.
template <class T>
int copy_in(T& out, const void* arg, size_t minsz) {
  if (!arg) return -EFAULT;
  uint32_t usize;
  std::memcpy(&usize, arg, sizeof usize);
  if (usize < minsz) return -EINVAL;
  const auto* b = static_cast<const unsigned char*>(arg);
  for (size_t i = sizeof(T); i < usize; ++i)
    if (b[i] != 0) return -E2BIG;
  out = T{};
  std::memcpy(&out, arg, std::min<size_t>(usize, sizeof(T)));
  return 0;
}

// VFIO structures: argsz >= minsz, else EINVAL.
template <class T>
int copy_vfio(T& out, const void* arg, size_t minsz) {
  if (!arg) return -EFAULT;
  out = T{};
  std::memcpy(&out, arg, minsz);
  if (out.argsz < minsz) return -EINVAL;
  return 0;
}

// Set the command register bits (as vfio_kernel.cpp does for the group path).
void command_bits(PciDevice& d, uint16_t set, uint16_t clear) {
  std::byte b[2];
  d.config_read(PciConfig::kCommand, b);
  uint16_t cmd =
      static_cast<uint16_t>(static_cast<uint16_t>(b[0]) | static_cast<uint16_t>(b[1]) << 8);
  cmd = static_cast<uint16_t>((cmd | set) & ~clear);
  b[0] = std::byte(cmd & 0xFF);
  b[1] = std::byte(cmd >> 8);
  d.config_write(PciConfig::kCommand, b);
}

// Pages behind [va, va+len) exist (pin_user_pages): mincore succeeds.
bool pages_mapped(uint64_t va, uint64_t len) {
  std::vector<unsigned char> vec((len + 4095) / 4096);
  return ::mincore(reinterpret_cast<void*>(va), len, vec.data()) == 0;
}

void detach(Kernel::Ioas& ioas, Kernel::Model& m) {
  std::erase(ioas.attached, &m);
  m.dev->dma_map().clear();
}

}  // namespace

// ---- machine switches --------------------------------------------------------------

void Kernel::set_iommufd(bool on) {
  std::lock_guard lk(mu_);
  iommufd_ = on;
}

bool Kernel::iommufd_enabled() const {
  std::lock_guard lk(mu_);
  return iommufd_;
}

Status Kernel::bind_driver(const std::string& name, const std::string& driver) {
  std::lock_guard lk(mu_);
  auto it = models_.find(name);
  if (it == models_.end()) return KBV_ERR_NOT_FOUND;
  Model& m = *it->second;
  if (m.group_open || m.device_fds > 0) return KBV_ERR_BUSY;
  if (m.container) detach_group(m);
  const bool was_uio = m.driver == "uio_pci_generic";
  m.driver = driver;
  if (was_uio || driver == "uio_pci_generic") uio_attach(m, driver == "uio_pci_generic");
  log::info(kLog, "{}: bound to {}", m.bdf, driver.empty() ? "no driver" : driver);
  return Status::ok();
}

Status Kernel::set_iommu_group(const std::string& name, bool in_group) {
  std::lock_guard lk(mu_);
  auto it = models_.find(name);
  if (it == models_.end()) return KBV_ERR_NOT_FOUND;
  Model& m = *it->second;
  if (m.group_open || m.device_fds > 0) return KBV_ERR_BUSY;
  if (m.container) detach_group(m);
  m.has_group = in_group;
  return Status::ok();
}

uint64_t Kernel::iommufd_mapped_bytes() const {
  std::lock_guard lk(mu_);
  uint64_t total = 0;
  std::vector<const Ioas*> seen;
  for (auto& [fd, f] : fds_) {
    const Ioas* list[8];
    size_t n = 0;
    if (f->kind == Fd::kIommufd)
      for (auto& [id, io] : f->ictx->ioas)
        if (n < 8) list[n++] = io.get();
    if (f->kind == Fd::kCdev && f->ioas) list[n++] = f->ioas.get();
    for (size_t i = 0; i < n; ++i) {
      if (std::find(seen.begin(), seen.end(), list[i]) != seen.end()) continue;
      seen.push_back(list[i]);
      for (const DmaMapping& d : list[i]->maps.mappings()) total += d.size;
    }
  }
  return total;
}

Kernel::Model* Kernel::model_by_cdev(const std::string& p) const {
  constexpr std::string_view kPrefix = "/dev/vfio/devices/vfio";
  if (!iommufd_ || p.compare(0, kPrefix.size(), kPrefix) != 0) return nullptr;
  const std::string n = p.substr(kPrefix.size());
  if (n.empty() || n.size() > 3 || n.find_first_not_of("0123456789") != std::string::npos)
    return nullptr;
  const unsigned slot = static_cast<unsigned>(std::stoul(n));
  for (auto& [name, m] : models_)
    if (m->slot == slot && m->driver == "vfio-pci" && m->has_group) return m.get();
  return nullptr;
}

// ---- /dev/iommu --------------------------------------------------------------------

int Kernel::iommufd_ioctl(Iommufd& ctx, unsigned long req, void* arg) {
  auto find_ioas = [&](uint32_t id) -> Ioas* {
    auto it = ctx.ioas.find(id);
    return it == ctx.ioas.end() ? nullptr : it->second.get();
  };
  switch (req) {
    case uapi::kIommuDestroy: {
      uapi::kbv_iommu_destroy d;
      if (int e = copy_in(d, arg, sizeof d)) return e;
      auto it = ctx.ioas.find(d.id);
      if (it == ctx.ioas.end()) return ctx.devices.count(d.id) ? -EINVAL : -ENOENT;
      if (!it->second->attached.empty()) return -EBUSY;
      ctx.ioas.erase(it);
      return 0;
    }
    case uapi::kIommuIoasAlloc: {
      uapi::kbv_iommu_ioas_alloc a;
      if (int e = copy_in(a, arg, sizeof a)) return e;
      if (a.flags != 0) return -EOPNOTSUPP;
      auto io = std::make_shared<Ioas>();
      io->id = ctx.next_id++;
      a.out_ioas_id = io->id;
      ctx.ioas.emplace(io->id, std::move(io));
      std::memcpy(arg, &a, sizeof a);
      return 0;
    }
    case uapi::kIommuIoasIovaRanges: {
      uapi::kbv_iommu_ioas_iova_ranges q;
      if (int e = copy_in(q, arg, sizeof q)) return e;
      if (q.reserved != 0) return -EOPNOTSUPP;
      Ioas* io = find_ioas(q.ioas_id);
      if (!io) return -ENOENT;
      const auto& ranges = io->maps.ranges();
      const uint32_t room = q.num_iovas;
      q.num_iovas = static_cast<uint32_t>(ranges.size());
      q.out_iova_alignment = IommuMap::kPageSize;
      int rc = 0;
      if (room < ranges.size()) {
        rc = -EMSGSIZE;
      } else {
        for (size_t i = 0; i < ranges.size(); ++i) {
          uapi::kbv_iommu_iova_range r{ranges[i].start, ranges[i].end};
          std::memcpy(
              reinterpret_cast<void*>(static_cast<uintptr_t>(q.allowed_iovas) + i * sizeof r), &r,
              sizeof r);
        }
      }
      std::memcpy(arg, &q, sizeof q);  // num_iovas is returned with EMSGSIZE too
      return rc;
    }
    case uapi::kIommuIoasMap: {
      uapi::kbv_iommu_ioas_map m;
      if (int e = copy_in(m, arg, sizeof m)) return e;
      constexpr uint32_t kKnown =
          uapi::kIommuIoasMapFixedIova | uapi::kIommuIoasMapReadable | uapi::kIommuIoasMapWriteable;
      if ((m.flags & ~kKnown) || m.reserved != 0) return -EOPNOTSUPP;
      Ioas* io = find_ioas(m.ioas_id);
      if (!io) return -ENOENT;
      if (m.length == 0) return -EINVAL;
      if (m.length - 1 > UINT64_MAX - m.user_va) return -EOVERFLOW;
      uint32_t perm = 0;
      if (m.flags & uapi::kIommuIoasMapReadable) perm |= Iommu::kRead;
      if (m.flags & uapi::kIommuIoasMapWriteable) perm |= Iommu::kWrite;
      if ((m.user_va | m.length) % IommuMap::kPageSize) return -EINVAL;
      if (!pages_mapped(m.user_va, m.length)) return -EFAULT;
      if (!(m.flags & uapi::kIommuIoasMapFixedIova)) {
        // The kernel picks: the first gap of the allowed ranges that fits.
        uint64_t pick = 0;
        bool found = false;
        for (const IovaRange& r : io->maps.ranges()) {
          uint64_t at = (r.start + IommuMap::kPageSize - 1) & ~(IommuMap::kPageSize - 1);
          for (const DmaMapping& d : io->maps.mappings()) {
            if (d.iova + d.size <= at) continue;
            if (d.iova >= at + m.length) break;
            at = d.iova + d.size;
          }
          if (at <= r.end && r.end - at >= m.length - 1) {
            pick = at;
            found = true;
            break;
          }
        }
        if (!found) return -ENOSPC;
        m.iova = pick;
      } else {
        if (m.iova % IommuMap::kPageSize) return -EINVAL;
        if (m.length - 1 > UINT64_MAX - m.iova) return -EOVERFLOW;
      }
      void* va = reinterpret_cast<void*>(static_cast<uintptr_t>(m.user_va));
      Status s = io->maps.map(m.iova, va, m.length, perm);
      if (!s)
        return s == KBV_ERR_ALREADY_EXISTS ? -EEXIST
               : s == KBV_ERR_NO_RESOURCES ? -ENOMEM
                                           : -EINVAL;
      for (Model* d : io->attached) (void)d->dev->dma_map().map(m.iova, va, m.length, perm);
      std::memcpy(arg, &m, sizeof m);
      return 0;
    }
    case uapi::kIommuIoasUnmap: {
      uapi::kbv_iommu_ioas_unmap u;
      if (int e = copy_in(u, arg, sizeof u)) return e;
      Ioas* io = find_ioas(u.ioas_id);
      if (!io) return -ENOENT;
      uint64_t done = 0;
      if (u.iova == 0 && u.length == UINT64_MAX) {
        for (const DmaMapping& d : io->maps.mappings()) done += d.size;
        io->maps.clear();
        for (Model* d : io->attached) d->dev->dma_map().clear();
      } else {
        if (u.length == 0) return -EINVAL;
        if (u.length - 1 > UINT64_MAX - u.iova) return -EOVERFLOW;
        const uint64_t last = u.iova + u.length - 1;
        for (const DmaMapping& d : io->maps.mappings()) {
          const uint64_t dl = d.iova + d.size - 1;
          if (dl < u.iova || d.iova > last) continue;
          if (d.iova < u.iova || dl > last) return -ENOENT;  // would split an area
        }
        Status s = io->maps.unmap(u.iova, u.length, &done);
        if (!s) return -EINVAL;
        if (done == 0) return -ENOENT;  // ioas.c: nothing was mapped there
        uint64_t ignored = 0;
        for (Model* d : io->attached) (void)d->dev->dma_map().unmap(u.iova, u.length, &ignored);
      }
      u.length = done;
      std::memcpy(arg, &u, sizeof u);
      return 0;
    }
    default: return -ENOTTY;
  }
}

// ---- /dev/vfio/devices/vfioN ------------------------------------------------------------

int Kernel::cdev_ioctl(Fd& f, unsigned long req, void* arg) {
  Model& m = *f.model;
  if (req == uapi::kVfioDeviceBindIommufd) {
    uapi::kbv_vfio_device_bind_iommufd b;
    if (int e = copy_vfio(b, arg, sizeof b)) return e;
    if (f.bound() || b.flags != 0) return -EINVAL;
    Fd* ifd = find_fd(b.iommufd);
    if (!ifd) return ::fcntl(b.iommufd, F_GETFD) < 0 ? -EBADF : -EBADFD;
    if (ifd->kind != Fd::kIommufd) return -EBADFD;
    if (m.group_open) return -EBUSY;  // vfio_device_block_group
    if (m.cdev_bound) return -EBUSY;  // one bound descriptor per device here
    f.ictx = ifd->ictx;
    f.devid = f.ictx->next_id++;
    f.ictx->devices[f.devid] = &m;
    m.cdev_bound = true;
    if (m.device_fds++ == 0) {
      // vfio_pci_core_enable: memory decoding on, function reset.
      command_bits(*m.dev, PciConfig::kCmdMemory, 0);
      m.dev->reset();
    }
    b.out_devid = f.devid;
    std::memcpy(arg, &b, sizeof b);
    return 0;
  }
  if (!f.bound()) return -EINVAL;  // access not granted before BIND
  if (req == uapi::kVfioDeviceAttachIommufdPt) {
    uapi::kbv_vfio_device_attach_iommufd_pt a;
    if (int e = copy_vfio(a, arg, sizeof a)) return e;
    if (a.flags != 0) return -EINVAL;
    auto it = f.ictx->ioas.find(a.pt_id);
    if (it == f.ictx->ioas.end()) return -ENOENT;
    if (f.ioas) detach(*f.ioas, m);  // a second attach replaces the first
    f.ioas = it->second;
    f.ioas->attached.push_back(&m);
    for (const DmaMapping& d : f.ioas->maps.mappings())
      (void)m.dev->dma_map().map(d.iova, d.vaddr, d.size, d.perm);
    std::memcpy(arg, &a, sizeof a);
    return 0;
  }
  if (req == uapi::kVfioDeviceDetachIommufdPt) {
    uapi::kbv_vfio_device_detach_iommufd_pt d;
    if (int e = copy_vfio(d, arg, sizeof d)) return e;
    if (d.flags != 0) return -EINVAL;
    if (f.ioas) detach(*f.ioas, m);
    f.ioas.reset();
    return 0;
  }
  return device_ioctl(m, req, arg);
}

void Kernel::cdev_release(Fd& f) {
  if (!f.bound()) return;
  Model& m = *f.model;
  if (f.ioas) detach(*f.ioas, m);
  f.ioas.reset();
  f.ictx->devices.erase(f.devid);
  f.ictx.reset();
  m.cdev_bound = false;
  if (--m.device_fds == 0) {
    // vfio_pci_core_close_device -> vfio_pci_core_disable.
    m.dev->disable_msix();
    command_bits(*m.dev, 0, PciConfig::kCmdBusMaster | PciConfig::kCmdMemory);
    m.dev->reset();
  }
}

}  // namespace kbv::sim
