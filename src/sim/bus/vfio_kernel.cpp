// SPDX-License-Identifier: BSD-3-Clause
// sim::Kernel: registry, descriptors, container/group/IOMMU ioctls of the
// emulated VFIO kernel (vfio_kernel.hpp). Errno choices follow Linux
// drivers/vfio/{container.c,group.c,vfio_iommu_type1.c}.
#include "sim/bus/vfio_kernel.hpp"

#include "common/log.hpp"
#include "sim/bus/vfio_state.hpp"

#include <fcntl.h>
#include <linux/vfio.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>

namespace kbv::sim {
namespace {

constexpr const char* kLog = "sim.vfio";

// Page sizes a VT-d domain supports (4 KiB, 2 MiB, 1 GiB), as type1 reports
// them in vfio_iommu_type1_info.iova_pgsizes.
constexpr uint64_t kIovaPgsizes = (1ull << 12) | (1ull << 21) | (1ull << 30);

// Linux's minsz idiom: offsetofend(struct, member).
#define KBV_OFFSETOFEND(type, member) (offsetof(type, member) + sizeof(((type*)nullptr)->member))

// Read-modify-write of the PCI command register, as the kernel's PCI core does.
void set_command_bits(PciDevice& d, uint16_t set, uint16_t clear) {
  std::byte b[2];
  d.config_read(PciConfig::kCommand, b);
  uint16_t cmd =
      static_cast<uint16_t>(static_cast<uint16_t>(b[0]) | static_cast<uint16_t>(b[1]) << 8);
  cmd = static_cast<uint16_t>((cmd | set) & ~clear);
  b[0] = std::byte(cmd & 0xFF);
  b[1] = std::byte(cmd >> 8);
  d.config_write(PciConfig::kCommand, b);
}

int fail(int err) {
  errno = err;
  return -1;
}

// What Linux's VFIO_IOMMU_MAP_DMA checks when it pins [va, va + size)
// (vfio_iommu_type1.c vfio_pin_pages_remote -> pin_user_pages_remote, with
// FOLL_WRITE when the mapping has IOMMU_WRITE; mm/gup.c check_vma_flags):
// every page must lie in a VMA, readable (VM_READ) and, for a device-
// writable mapping, writable (VM_WRITE) — otherwise EFAULT, whatever the
// pages hold. The VMA permissions are read from /proc/self/maps (the kernel's
// own view of the same flags: "r"/"w" are VM_READ/VM_WRITE), not probed by
// touching the memory: a write probe could fault or race with the
// application's own stores, and a read-only page that happens to be
// resident says nothing about VM_WRITE. The file is read with raw system
// calls into a stack buffer (no allocation, and no interposed open(): the
// preload's open would re-enter this kernel). Lines come sorted by address;
// reading stops past the range. Returns 0 or EFAULT.
int check_user_pages(uintptr_t va, uint64_t size, bool write) {
  const int fd =
      static_cast<int>(::syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC));
  if (fd < 0) return EFAULT;
  const uint64_t end = va + size;
  uint64_t covered = va;  // [va, covered) checked so far
  char buf[4096];
  size_t have = 0;
  bool eof = false;
  int result = EFAULT;
  while (covered < end) {
    char* nl = static_cast<char*>(std::memchr(buf, '\n', have));
    if (nl == nullptr) {
      if (eof || have == sizeof buf) break;  // a line longer than 4 KiB: give up
      const long n = ::syscall(SYS_read, fd, buf + have, sizeof buf - have);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        eof = true;
      else
        have += static_cast<size_t>(n);
      continue;
    }
    *nl = '\0';
    // "start-end perms offset dev inode path": hex addresses, perms "rwxp".
    char* p = buf;
    const uint64_t lo = std::strtoull(p, &p, 16);
    const uint64_t hi = *p == '-' ? std::strtoull(p + 1, &p, 16) : 0;
    const bool r = p[0] == ' ' && p[1] == 'r';
    const bool w = p[0] == ' ' && p[2] == 'w';
    const size_t used = static_cast<size_t>(nl + 1 - buf);
    std::memmove(buf, nl + 1, have - used);
    have -= used;
    if (hi <= covered) continue;  // before the range (or unparsable)
    if (lo > covered) break;      // a hole: not mapped
    if (!r || (write && !w)) break;
    covered = hi;
  }
  if (covered >= end) result = 0;
  ::syscall(SYS_close, fd);
  return result;
}

}  // namespace

Kernel::Kernel(platform::Sys& real) : real_(real) {}

Kernel::~Kernel() {
  std::lock_guard lk(mu_);
  for (auto& [fd, f] : fds_) ::close(fd);
  fds_.clear();
  for (auto& [name, m] : models_) m->container.reset();
}

Kernel& Kernel::instance() {
  static Kernel* k = new Kernel;  // never destroyed: devices outlive static destructors
  return *k;
}

// ---- registry ----------------------------------------------------------------------

void Kernel::set_attach(Attach a) {
  std::lock_guard lk(mu_);
  attach_ = std::move(a);
}

Result<std::string> Kernel::add_device(const std::string& name, const DeviceConfig& cfg) {
  std::lock_guard lk(mu_);
  if (name.empty() || name.find('/') != std::string::npos) return KBV_ERR_INVALID_ARGUMENT;
  if (models_.count(name)) return KBV_ERR_ALREADY_EXISTS;
  unsigned slot = 0;
  for (unsigned s = 1; s < 32 && slot == 0; ++s) {  // PCI device number: 5 bits
    bool used = false;
    for (auto& [n, m] : models_) used |= m->slot == s;
    if (!used) slot = s;
  }
  if (slot == 0) return KBV_ERR_NO_RESOURCES;
  auto dev = PciDevice::create(cfg);
  if (!dev) return dev.status();
  auto m = std::make_unique<Model>();
  m->name = name;
  m->slot = slot;
  char bdf[32];
  std::snprintf(bdf, sizeof bdf, "%04x:00:%02x.0", kDomain, slot);
  m->bdf = bdf;
  m->group = kGroupBase + static_cast<int>(slot);
  m->dev = std::move(*dev);
  if (attach_) m->attached = attach_(name, *m->dev);
  log::info(kLog, "model device '{}' at {} (iommu group {})", name, m->bdf, m->group);
  std::string out = m->bdf;
  models_.emplace(name, std::move(m));
  return out;
}

Status Kernel::remove_device(const std::string& name) {
  std::lock_guard lk(mu_);
  auto it = models_.find(name);
  if (it == models_.end()) return KBV_ERR_NOT_FOUND;
  Model& m = *it->second;
  if (m.group_open || m.device_fds > 0) return KBV_ERR_BUSY;
  if (m.container) detach_group(m);
  models_.erase(it);
  return Status::ok();
}

PciDevice* Kernel::device(const std::string& name) {
  std::lock_guard lk(mu_);
  auto it = models_.find(name);
  return it == models_.end() ? nullptr : it->second->dev.get();
}

Result<std::string> Kernel::bdf(const std::string& name) const {
  std::lock_guard lk(mu_);
  auto it = models_.find(name);
  if (it == models_.end()) return KBV_ERR_NOT_FOUND;
  return it->second->bdf;
}

int Kernel::iommu_group(const std::string& name) const {
  std::lock_guard lk(mu_);
  auto it = models_.find(name);
  return it == models_.end() ? -1 : it->second->group;
}

std::vector<std::string> Kernel::device_names() const {
  std::lock_guard lk(mu_);
  std::vector<std::string> v;
  for (auto& [n, m] : models_) v.push_back(n);
  return v;
}

Result<std::string> Kernel::resolve(std::string_view uri) const {
  constexpr std::string_view kScheme = "sim:";
  if (uri.substr(0, kScheme.size()) != kScheme) return KBV_ERR_INVALID_ARGUMENT;
  return bdf(std::string(uri.substr(kScheme.size())));
}

Kernel::Model* Kernel::model_by_bdf(std::string_view bdf) const {
  for (auto& [n, m] : models_)
    if (m->bdf == bdf) return m.get();
  return nullptr;
}

Kernel::Model* Kernel::model_by_group(int group) const {
  for (auto& [n, m] : models_)
    if (m->group == group && m->has_group) return m.get();
  return nullptr;
}

Kernel::Model* Kernel::vfio_group(int group) const {
  Model* m = model_by_group(group);
  return m && m->driver == "vfio-pci" ? m : nullptr;
}

// ---- descriptors -------------------------------------------------------------------

int Kernel::reserve_fd(Fd f, bool cloexec) {
  // A real descriptor number, so it never collides with the application's;
  // counter 1: always readable and writable, like a file without poll.
  const int fd = ::eventfd(1, cloexec ? EFD_CLOEXEC : 0);
  if (fd < 0) return -errno;
  fds_[fd] = std::make_shared<Fd>(std::move(f));
  return fd;
}

int Kernel::dup_fd(int oldfd, int newfd, int flags, int min_fd) {
  std::lock_guard lk(mu_);
  auto it = fds_.find(oldfd);
  if (it == fds_.end()) return fail(EBADF);
  std::shared_ptr<Fd> file = it->second;
  int fd;
  if (newfd < 0) {
    fd = ::fcntl(oldfd, (flags & O_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, min_fd);
    if (fd < 0) return -1;
  } else {
    if (newfd == oldfd) {
      if (flags != -1) return fail(EINVAL);  // dup3: same numbers
      return newfd;                          // dup2: nothing to do
    }
    // What `newfd` referred to is closed by dup2/dup3 (atomically on Linux);
    // the model's state of it goes with it.
    auto prev = fds_.find(newfd);
    std::shared_ptr<Fd> old_file;
    if (prev != fds_.end()) {
      old_file = std::move(prev->second);
      fds_.erase(prev);
    }
    fd = ::dup3(oldfd, newfd, flags == -1 ? 0 : (flags & O_CLOEXEC));
    if (fd < 0) {
      const int e = errno;
      if (old_file) fds_[newfd] = std::move(old_file);  // nothing happened
      errno = e;
      return -1;
    }
    if (old_file && old_file.use_count() == 1) release_file(*old_file);
  }
  fds_[fd] = std::move(file);
  return fd;
}

void Kernel::forget_fd(int fd) {
  std::lock_guard lk(mu_);
  auto it = fds_.find(fd);
  if (it == fds_.end()) return;
  std::shared_ptr<Fd> f = std::move(it->second);
  fds_.erase(it);
  if (f.use_count() == 1) release_file(*f);
}

char Kernel::fd_kind(int fd, std::string* path) const {
  std::lock_guard lk(mu_);
  auto it = fds_.find(fd);
  if (it == fds_.end()) return 0;
  const Fd& f = *it->second;
  switch (f.kind) {
    case Fd::kContainer:
      if (path) *path = "/dev/vfio/vfio";
      return 'C';
    case Fd::kGroup:
      if (path) *path = "/dev/vfio/" + std::to_string(f.model->group);
      return 'G';
    case Fd::kDevice: return 'D';
    case Fd::kIommufd:
      if (path) *path = "/dev/iommu";
      return 'I';
    case Fd::kCdev:
      if (path) *path = "/dev/vfio/devices/vfio" + std::to_string(f.model->slot);
      return 'V';
    case Fd::kSysConfig:
    case Fd::kSysResource:
    case Fd::kSysReset: return 'S';
    case Fd::kPagemap: return 'P';
  }
  return 0;
}

Kernel::Fd* Kernel::find_fd(int fd) {
  auto it = fds_.find(fd);
  return it == fds_.end() ? nullptr : it->second.get();
}

bool Kernel::owns_fd(int fd) const {
  std::lock_guard lk(mu_);
  return fds_.count(fd) != 0;
}

namespace {
// "/dev/vfio/<n>" -> n, else -1.
int group_number(const std::string& p) {
  constexpr std::string_view kPrefix = "/dev/vfio/";
  if (p.compare(0, kPrefix.size(), kPrefix) != 0) return -1;
  const std::string rest = p.substr(kPrefix.size());
  if (rest.empty() || rest.size() > 9 || rest.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  return std::stoi(rest);
}
}  // namespace

int Kernel::open(const char* path, int flags) {
  if (!path) return fail(EFAULT);
  const std::string p = normalize(path);
  std::unique_lock lk(mu_);
  if (p == "/dev/vfio/vfio") {
    // container.c vfio_fops_open: every open is a new container.
    const int fd = reserve_fd(Fd{Fd::kContainer, std::make_shared<Container>(), nullptr},
                              (flags & O_CLOEXEC) != 0);
    return fd < 0 ? fail(-fd) : fd;
  }
  if (p == "/proc/self/pagemap" && any_uio()) {
    if ((flags & O_ACCMODE) != O_RDONLY) return fail(EACCES);  // 0444
    const int fd = reserve_fd(Fd{Fd::kPagemap, nullptr, nullptr}, (flags & O_CLOEXEC) != 0);
    return fd < 0 ? fail(-fd) : fd;
  }
  if (p == "/dev/iommu" && iommufd_) {
    // iommufd/main.c iommufd_fops_open: every open is a new context.
    const int fd = reserve_fd(Fd{Fd::kIommufd, nullptr, nullptr, std::make_shared<Iommufd>()},
                              (flags & O_CLOEXEC) != 0);
    return fd < 0 ? fail(-fd) : fd;
  }
  if (Model* m = model_by_cdev(p)) {
    // vfio_device_fops_cdev_open: a descriptor per open, usable after BIND.
    const int fd = reserve_fd(Fd{Fd::kCdev, nullptr, m}, (flags & O_CLOEXEC) != 0);
    return fd < 0 ? fail(-fd) : fd;
  }
  if (const int g = group_number(p); g >= 0) {
    if (Model* m = vfio_group(g)) {
      // group.c vfio_group_fops_open: one open file per group; EBUSY while
      // a cdev of its device is bound (vfio_group_fops_open:
      // cdev_device_open_cnt).
      if (m->group_open || m->cdev_bound) return fail(EBUSY);
      const int fd = reserve_fd(Fd{Fd::kGroup, nullptr, m}, (flags & O_CLOEXEC) != 0);
      if (fd < 0) return fail(-fd);
      m->group_open = true;
      return fd;
    }
  }
  bool handled = false;
  const int r = sysfs_open(p, flags, handled);
  if (handled) return r;
  lk.unlock();
  return real_.open(path, flags);
}

int Kernel::close(int fd) {
  std::unique_lock lk(mu_);
  auto it = fds_.find(fd);
  if (it == fds_.end()) {
    lk.unlock();
    return real_.close(fd);
  }
  std::shared_ptr<Fd> f = std::move(it->second);
  fds_.erase(it);
  if (f.use_count() == 1) release_file(*f);  // else a dup of it is still open
  lk.unlock();
  return ::close(fd);
}

void Kernel::release_file(Fd& file) {
  Fd* f = &file;
  if (f->kind == Fd::kGroup) {
    // Device descriptors hold the group's open file (container.c
    // vfio_group_use_container: get_file(group->opened_file)): the group is
    // released - reopenable, container dropped - only with the last of them.
    Model& m = *f->model;
    if (m.device_fds == 0) {
      m.group_open = false;
      if (m.container) detach_group(m);
    } else {
      m.group_release_pending = true;
    }
  } else if (f->kind == Fd::kCdev) {
    cdev_release(*f);
  } else if (f->kind == Fd::kDevice) {
    Model& m = *f->model;
    --m.device_fds;
    if (m.device_fds == 0) {
      // vfio_pci_core_close_device -> vfio_pci_core_disable: interrupts off,
      // bus mastering off, function reset.
      m.dev->disable_msix();
      set_command_bits(*m.dev, 0, PciConfig::kCmdBusMaster | PciConfig::kCmdMemory);
      m.dev->reset();
      if (m.group_release_pending) {
        m.group_release_pending = false;
        m.group_open = false;
        if (m.container) detach_group(m);
      }
    }
  }
}

void Kernel::detach_group(Model& m) {
  std::shared_ptr<Container> c = std::move(m.container);
  std::erase(c->groups, &m);
  m.dev->dma_map().clear();
  if (c->groups.empty()) {
    // container.c __vfio_group_unset_container: the last group out releases
    // the IOMMU driver and with it every mapping.
    c->iommu_set = false;
    c->v2 = true;
    c->maps.clear();
  }
}

// ---- ioctl ---------------------------------------------------------------------------

int Kernel::ioctl(int fd, unsigned long request, void* arg) {
  std::unique_lock lk(mu_);
  Fd* f = find_fd(fd);
  if (!f) {
    lk.unlock();
    return real_.ioctl(fd, request, arg);
  }
  int r;
  switch (f->kind) {
    case Fd::kContainer: r = container_ioctl(*f, request, arg); break;
    case Fd::kGroup: r = group_ioctl(*f->model, request, arg); break;
    case Fd::kDevice: r = device_ioctl(*f->model, request, arg); break;
    case Fd::kIommufd: r = iommufd_ioctl(*f->ictx, request, arg); break;
    case Fd::kCdev: r = cdev_ioctl(*f, request, arg); break;
    default: r = -ENOTTY;
  }
  return r < 0 ? fail(-r) : r;
}

int Kernel::container_ioctl(Fd& f, unsigned long req, void* arg) {
  Container& c = *f.container;
  const auto value = reinterpret_cast<uintptr_t>(arg);  // these pass the value itself
  switch (req) {
    case VFIO_GET_API_VERSION: return VFIO_API_VERSION;
    // vfio_iommu_type1_check_extension: the type1 driver offers both.
    case VFIO_CHECK_EXTENSION:
      return value == VFIO_TYPE1_IOMMU || value == VFIO_TYPE1v2_IOMMU ? 1 : 0;
    case VFIO_SET_IOMMU:
      // container.c vfio_ioctl_set_iommu: needs a group, only once.
      if (c.groups.empty() || c.iommu_set) return -EINVAL;
      if (value != VFIO_TYPE1_IOMMU && value != VFIO_TYPE1v2_IOMMU)
        return -ENODEV;  // no driver offers it
      c.iommu_set = true;
      c.v2 = value == VFIO_TYPE1v2_IOMMU;  // vfio_iommu_type1_open: iommu->v2
      return 0;
    default:
      // Everything else goes to the IOMMU driver; none yet: ENOTTY.
      if (!c.iommu_set) return -ENOTTY;
      return iommu_ioctl(c, req, arg);
  }
}

int Kernel::iommu_ioctl(Container& c, unsigned long req, void* arg) {
  switch (req) {
    case VFIO_CHECK_EXTENSION: {
      const auto ext = reinterpret_cast<uintptr_t>(arg);
      return ext == VFIO_TYPE1_IOMMU || ext == VFIO_TYPE1v2_IOMMU;
    }
    case VFIO_IOMMU_GET_INFO: {
      if (!arg) return -EFAULT;
      vfio_iommu_type1_info info{};
      const size_t minsz = KBV_OFFSETOFEND(vfio_iommu_type1_info, iova_pgsizes);
      std::memcpy(&info, arg, minsz);
      if (info.argsz < minsz) return -EINVAL;
      info.flags = VFIO_IOMMU_INFO_PGSIZES;
      info.iova_pgsizes = kIovaPgsizes;
      size_t outsz = minsz;
      const size_t capsz = KBV_OFFSETOFEND(vfio_iommu_type1_info, cap_offset);
      if (info.argsz >= capsz) {
        outsz = capsz;
        // Capability chain (vfio_info_cap_add: each entry 8-byte aligned,
        // `next` is an offset from the start of the info buffer).
        const auto& ranges = c.maps.ranges();
        const size_t iova_sz =
            sizeof(vfio_iommu_type1_info_cap_iova_range) + ranges.size() * sizeof(vfio_iova_range);
        const size_t iova_al = (iova_sz + 7) & ~size_t{7};
        const size_t avail_sz = sizeof(vfio_iommu_type1_info_dma_avail);
        const size_t avail_al = (avail_sz + 7) & ~size_t{7};
        const size_t need = sizeof(info) + iova_al + avail_al;
        info.flags |= VFIO_IOMMU_INFO_CAPS;
        if (info.argsz < need) {
          info.argsz = static_cast<uint32_t>(need);  // tell the caller what to allocate
          info.cap_offset = 0;
        } else {
          auto* base = static_cast<std::byte*>(arg);
          std::vector<std::byte> caps(iova_al + avail_al);
          auto* ir = reinterpret_cast<vfio_iommu_type1_info_cap_iova_range*>(caps.data());
          ir->header.id = VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE;
          ir->header.version = 1;
          ir->header.next = static_cast<uint32_t>(sizeof(info) + iova_al);
          ir->nr_iovas = static_cast<uint32_t>(ranges.size());
          for (size_t i = 0; i < ranges.size(); ++i) {
            vfio_iova_range r{ranges[i].start, ranges[i].end};
            std::memcpy(caps.data() + sizeof(*ir) + i * sizeof r, &r, sizeof r);
          }
          vfio_iommu_type1_info_dma_avail av{};
          av.header.id = VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL;
          av.header.version = 1;
          av.header.next = 0;
          av.avail = c.maps.available();
          std::memcpy(caps.data() + iova_al, &av, sizeof av);
          std::memcpy(base + sizeof(info), caps.data(), caps.size());
          info.cap_offset = sizeof(info);
        }
      }
      std::memcpy(arg, &info, outsz);
      return 0;
    }
    case VFIO_IOMMU_MAP_DMA: {
      if (!arg) return -EFAULT;
      vfio_iommu_type1_dma_map map{};
      const size_t minsz = KBV_OFFSETOFEND(vfio_iommu_type1_dma_map, size);
      std::memcpy(&map, arg, minsz);
      if (map.argsz < minsz || (map.flags & ~(VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE)))
        return -EINVAL;  // VFIO_DMA_MAP_FLAG_VADDR: VFIO_UPDATE_VADDR is not offered
      uint32_t perm = 0;
      if (map.flags & VFIO_DMA_MAP_FLAG_READ) perm |= Iommu::kRead;
      if (map.flags & VFIO_DMA_MAP_FLAG_WRITE) perm |= Iommu::kWrite;
      void* va = reinterpret_cast<void*>(static_cast<uintptr_t>(map.vaddr));
      if (perm != 0 && map.size != 0 && !(map.vaddr & 0xFFF) && !(map.size & 0xFFF)) {
        // Linux pins the pages; memory that is not mapped fails with EFAULT.
        std::vector<unsigned char> vec((map.size + 4095) / 4096);
        if (::mincore(va, map.size, vec.data()) != 0) return errno == ENOMEM ? -EFAULT : -EINVAL;
        // And, as pin_user_pages with FOLL_WRITE, a device-writable mapping
        // of memory the process cannot write (PROT_READ, a read-only file
        // mapping) fails with EFAULT (check_user_pages).
        if (int e = check_user_pages(map.vaddr, map.size, (perm & Iommu::kWrite) != 0)) return -e;
      }
      Status s = c.maps.map(map.iova, va, map.size, perm);
      if (!s) return -errno_of(s);
      for (Model* m : c.groups) (void)m->dev->dma_map().map(map.iova, va, map.size, perm);
      return 0;
    }
    case VFIO_IOMMU_UNMAP_DMA: {
      if (!arg) return -EFAULT;
      vfio_iommu_type1_dma_unmap unmap{};
      const size_t minsz = KBV_OFFSETOFEND(vfio_iommu_type1_dma_unmap, size);
      std::memcpy(&unmap, arg, minsz);
      if (unmap.argsz < minsz || (unmap.flags & ~VFIO_DMA_UNMAP_FLAG_ALL)) return -EINVAL;
      uint64_t done = 0;
      if (unmap.flags & VFIO_DMA_UNMAP_FLAG_ALL) {
        if (unmap.iova != 0 || unmap.size != 0) return -EINVAL;
        for (const DmaMapping& d : c.maps.mappings()) done += d.size;
        c.maps.clear();
        for (Model* m : c.groups) m->dev->dma_map().clear();
      } else if (!c.v2) {
        std::vector<DmaMapping> removed;
        Status s = c.maps.unmap_v1(unmap.iova, unmap.size, &done, &removed);
        if (!s) return -errno_of(s);
        uint64_t ignored = 0;
        for (Model* m : c.groups)
          for (const DmaMapping& d : removed)
            (void)m->dev->dma_map().unmap(d.iova, d.size, &ignored);
      } else {
        Status s = c.maps.unmap(unmap.iova, unmap.size, &done);
        if (!s) return -errno_of(s);
        uint64_t ignored = 0;
        for (Model* m : c.groups) (void)m->dev->dma_map().unmap(unmap.iova, unmap.size, &ignored);
      }
      unmap.size = done;
      std::memcpy(arg, &unmap, minsz);
      return 0;
    }
    default: return -ENOTTY;
  }
}

int Kernel::group_ioctl(Model& m, unsigned long req, void* arg) {
  switch (req) {
    case VFIO_GROUP_GET_STATUS: {
      if (!arg) return -EFAULT;
      vfio_group_status st{};
      const size_t minsz = KBV_OFFSETOFEND(vfio_group_status, flags);
      std::memcpy(&st, arg, minsz);
      if (st.argsz < minsz) return -EINVAL;
      st.flags = VFIO_GROUP_FLAGS_VIABLE;  // the group has only this vfio-pci device
      if (m.container) st.flags |= VFIO_GROUP_FLAGS_CONTAINER_SET;
      std::memcpy(arg, &st, minsz);
      return 0;
    }
    case VFIO_GROUP_SET_CONTAINER: {
      if (!arg) return -EFAULT;
      int cfd;
      std::memcpy(&cfd, arg, sizeof cfd);
      if (m.container) return -EINVAL;  // group.c: already has a container
      Fd* cf = find_fd(cfd);
      if (!cf) return ::fcntl(cfd, F_GETFD) < 0 ? -EBADF : -EINVAL;  // not a container
      if (cf->kind != Fd::kContainer) return -EINVAL;
      m.container = cf->container;
      m.container->groups.push_back(&m);
      // The group's domain gets the container's existing mappings.
      for (const DmaMapping& d : m.container->maps.mappings())
        (void)m.dev->dma_map().map(d.iova, d.vaddr, d.size, d.perm);
      return 0;
    }
    case VFIO_GROUP_UNSET_CONTAINER:
      if (!m.container) return -EINVAL;
      if (m.device_fds > 0) return -EBUSY;
      detach_group(m);
      return 0;
    case VFIO_GROUP_GET_DEVICE_FD: {
      if (!arg) return -EFAULT;
      const char* name = static_cast<const char*>(arg);
      // group.c: a device is only handed out once the container has an IOMMU.
      if (!m.container || !m.container->iommu_set) return -EINVAL;
      if (std::strncmp(name, m.bdf.c_str(), m.bdf.size() + 1) != 0) return -ENODEV;
      const int fd = reserve_fd(Fd{Fd::kDevice, nullptr, &m});
      if (fd < 0) return fd;
      if (m.device_fds++ == 0) {
        // vfio_pci_core_enable: pci_enable_device (memory decoding on), then
        // a function reset, so every open starts from a freshly reset device.
        set_command_bits(*m.dev, PciConfig::kCmdMemory, 0);
        m.dev->reset();
      }
      return fd;
    }
    default: return -ENOTTY;
  }
}

// ---- read/write/mmap: device regions (vfio_device.cpp) ---------------------------------

ssize_t Kernel::read(int fd, void* buf, size_t count) {
  {
    std::lock_guard lk(mu_);
    if (find_fd(fd)) return fail(EINVAL);  // use pread at a region offset
  }
  return real_.read(fd, buf, count);
}

ssize_t Kernel::pread(int fd, void* buf, size_t count, off_t offset) {
  std::unique_lock lk(mu_);
  Fd* f = find_fd(fd);
  if (!f) {
    lk.unlock();
    return real_.pread(fd, buf, count, offset);
  }
  if (f->kind == Fd::kPagemap) {
    const ssize_t r = pagemap_read(buf, count, offset);
    return r < 0 ? fail(static_cast<int>(-r)) : r;
  }
  if (f->kind == Fd::kSysConfig) {
    // sysfs config: offsets are register offsets (pci_read_config); past the end reads 0 bytes.
    if (offset >= static_cast<off_t>(PciConfig::kSize)) return 0;
    count = std::min<size_t>(count, PciConfig::kSize - static_cast<size_t>(offset));
    const ssize_t r = region_rw(*f->model, buf, count,
                                static_cast<off_t>((uint64_t{VFIO_PCI_CONFIG_REGION_INDEX} << 40) +
                                                   static_cast<uint64_t>(offset)),
                                false);
    return r < 0 ? fail(static_cast<int>(-r)) : r;
  }
  if (f->kind != Fd::kDevice && !f->bound()) return fail(EINVAL);
  const ssize_t r = region_rw(*f->model, buf, count, offset, false);
  return r < 0 ? fail(static_cast<int>(-r)) : r;
}

ssize_t Kernel::pwrite(int fd, const void* buf, size_t count, off_t offset) {
  std::unique_lock lk(mu_);
  Fd* f = find_fd(fd);
  if (!f) {
    lk.unlock();
    return real_.pwrite(fd, buf, count, offset);
  }
  if (f->kind == Fd::kSysConfig) {
    if (offset >= static_cast<off_t>(PciConfig::kSize)) return 0;
    count = std::min<size_t>(count, PciConfig::kSize - static_cast<size_t>(offset));
    const ssize_t r = region_rw(*f->model, const_cast<void*>(buf), count,
                                static_cast<off_t>((uint64_t{VFIO_PCI_CONFIG_REGION_INDEX} << 40) +
                                                   static_cast<uint64_t>(offset)),
                                true);
    return r < 0 ? fail(static_cast<int>(-r)) : r;
  }
  if (f->kind == Fd::kSysReset) {
    // pci-sysfs reset_store: "1" resets the function (pci_reset_function).
    if (count == 0 || static_cast<const char*>(buf)[0] != '1') return fail(EINVAL);
    f->model->dev->reset();
    return static_cast<ssize_t>(count);
  }
  if (f->kind != Fd::kDevice && !f->bound()) return fail(EINVAL);
  const ssize_t r = region_rw(*f->model, const_cast<void*>(buf), count, offset, true);
  return r < 0 ? fail(static_cast<int>(-r)) : r;
}

void* Kernel::mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  std::unique_lock lk(mu_);
  if (fd == -1 && (flags & MAP_ANONYMOUS) && (flags & MAP_HUGETLB) && addr == nullptr)
    return huge_mmap(length);  // the model machine's hugetlbfs pool
  Fd* f = find_fd(fd);
  if (!f) {
    lk.unlock();
    return real_.mmap(addr, length, prot, flags, fd, offset);
  }
  auto bad = [](int e) {
    errno = e;
    return MAP_FAILED;
  };
  if (f->kind == Fd::kSysResource) {
    // pci_mmap_resource: shared, page aligned, inside the BAR.
    PciDevice& d = *f->model->dev;
    const uint64_t pos = static_cast<uint64_t>(offset);
    if (length == 0 || (flags & MAP_SHARED) == 0 || (pos & 0xFFF) ||
        pos + length > d.config().bar0_size)
      return bad(EINVAL);
    const int memfd = d.bar0_fd();
    lk.unlock();
    return ::mmap(addr, length, prot, flags, memfd, offset);
  }
  if (f->kind == Fd::kCdev && !f->bound()) return bad(EINVAL);             // before BIND
  if (f->kind != Fd::kDevice && f->kind != Fd::kCdev) return bad(ENODEV);  // no mmap op
  PciDevice& d = *f->model->dev;
  const uint64_t index = static_cast<uint64_t>(offset) >> 40;
  const uint64_t pos = static_cast<uint64_t>(offset) & ((1ull << 40) - 1);
  // vfio_pci_core_mmap: BARs only, shared, page aligned, inside the BAR.
  if (index != VFIO_PCI_BAR0_REGION_INDEX || length == 0) return bad(EINVAL);
  if ((flags & MAP_SHARED) == 0 || (pos & 0xFFF) || pos + length > d.config().bar0_size)
    return bad(EINVAL);
  const int memfd = d.bar0_fd();
  lk.unlock();
  // The same pages as the model's BAR0 (a second mapping of its memfd).
  return ::mmap(addr, length, prot, flags, memfd, static_cast<off_t>(pos));
}

int Kernel::munmap(void* addr, size_t length) {
  {
    std::lock_guard lk(mu_);
    if (huge_munmap(addr, length)) return 0;
  }
  return real_.munmap(addr, length);
}

platform::MmioTrap* Kernel::mmio_trap(int device_fd, uint32_t region_index) {
  std::unique_lock lk(mu_);
  Fd* f = find_fd(device_fd);
  if (!f) {
    lk.unlock();
    return real_.mmio_trap(device_fd, region_index);
  }
  if (f->kind == Fd::kSysResource && region_index == 0) return &f->model->dev->bar0_trap();
  if ((f->kind != Fd::kDevice && !f->bound()) || region_index != VFIO_PCI_BAR0_REGION_INDEX)
    return nullptr;
  return &f->model->dev->bar0_trap();
}

}  // namespace kbv::sim
