// SPDX-License-Identifier: BSD-3-Clause
// FakeSys: sysfs + emulated VFIO kernel for the platform unit tests.
#include "fake_sys.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace kbv::platform::test {
namespace {

const char* ioctl_name(unsigned long r) {
  switch (r) {
    case VFIO_GET_API_VERSION: return "VFIO_GET_API_VERSION";
    case VFIO_CHECK_EXTENSION: return "VFIO_CHECK_EXTENSION";
    case VFIO_SET_IOMMU: return "VFIO_SET_IOMMU";
    case VFIO_GROUP_GET_STATUS: return "VFIO_GROUP_GET_STATUS";
    case VFIO_GROUP_SET_CONTAINER: return "VFIO_GROUP_SET_CONTAINER";
    case VFIO_GROUP_GET_DEVICE_FD: return "VFIO_GROUP_GET_DEVICE_FD";
    case VFIO_DEVICE_GET_INFO: return "VFIO_DEVICE_GET_INFO";
    case VFIO_DEVICE_GET_REGION_INFO: return "VFIO_DEVICE_GET_REGION_INFO";
    case VFIO_DEVICE_GET_IRQ_INFO: return "VFIO_DEVICE_GET_IRQ_INFO";
    case VFIO_DEVICE_SET_IRQS: return "VFIO_DEVICE_SET_IRQS";
    case VFIO_DEVICE_RESET: return "VFIO_DEVICE_RESET";
    case VFIO_IOMMU_GET_INFO: return "VFIO_IOMMU_GET_INFO";
    case VFIO_IOMMU_MAP_DMA: return "VFIO_IOMMU_MAP_DMA";
    case VFIO_IOMMU_UNMAP_DMA: return "VFIO_IOMMU_UNMAP_DMA";
    default: return "unknown";
  }
}

int fail(int err) {
  errno = err;
  return -1;
}

}  // namespace

FakeSys::FakeSys() : config(256, 0) {
  // Config space: vendor/device, command register clear.
  config[0] = 0xb3;
  config[1] = 0x15;
  config[2] = 0x1b;
  config[3] = 0x10;
  add_pci(kBdf, 0x15b3, 0x101b, 0x020700, 0, "vfio-pci", kGroup);
}

FakeSys::~FakeSys() { std::free(bar0_mem_); }

void FakeSys::add_file(const std::string& path, const std::string& content) {
  files_[path] = content;
}
void FakeSys::add_link(const std::string& path, const std::string& target) {
  links_[path] = target;
}
void FakeSys::remove(const std::string& path) {
  files_.erase(path);
  links_.erase(path);
}

void FakeSys::add_pci(const std::string& bdf, uint16_t vendor, uint16_t device, uint32_t cls,
                      int numa_node, const std::string& driver, int group) {
  const std::string dir = "/sys/bus/pci/devices/" + bdf;
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%04x\n", vendor);
  add_file(dir + "/vendor", buf);
  std::snprintf(buf, sizeof buf, "0x%04x\n", device);
  add_file(dir + "/device", buf);
  std::snprintf(buf, sizeof buf, "0x%06x\n", cls);
  add_file(dir + "/class", buf);
  add_file(dir + "/numa_node", std::to_string(numa_node) + "\n");
  remove(dir + "/driver");
  remove(dir + "/iommu_group");
  if (!driver.empty()) add_link(dir + "/driver", "../../../bus/pci/drivers/" + driver);
  if (group >= 0)
    add_link(dir + "/iommu_group", "../../../kernel/iommu_groups/" + std::to_string(group));
}

FakeSys::Fd* FakeSys::find(int fd, Kind kind) {
  auto it = fds_.find(fd);
  if (it == fds_.end() || it->second.kind != kind) return nullptr;
  return &it->second;
}

int FakeSys::new_fd(Fd f) {
  const int fd = next_fd_++;
  fds_.emplace(fd, std::move(f));
  return fd;
}

int FakeSys::open(const char* path, int /*flags*/) {
  const std::string p = path;
  if (auto it = fail_open.find(p); it != fail_open.end()) return fail(it->second);
  if (p == "/dev/vfio/vfio") return new_fd({Kind::kContainer, {}, 0});
  if (p == "/dev/vfio/" + std::to_string(kGroup)) return new_fd({Kind::kGroup, {}, 0});
  if (auto it = files_.find(p); it != files_.end()) return new_fd({Kind::kFile, it->second, 0});
  return fail(ENOENT);
}

int FakeSys::close(int fd) {
  auto it = fds_.find(fd);
  if (it == fds_.end()) {
    ++bad_closes;
    return fail(EBADF);
  }
  if (it->second.kind == Kind::kGroup) group_attached_ = false;
  fds_.erase(it);
  return 0;
}

ssize_t FakeSys::read(int fd, void* buf, size_t count) {
  Fd* f = find(fd, Kind::kFile);
  if (!f) return fail(EBADF);
  const size_t n = std::min(count, f->content.size() - f->pos);
  std::memcpy(buf, f->content.data() + f->pos, n);
  f->pos += n;
  return static_cast<ssize_t>(n);
}

ssize_t FakeSys::pread(int fd, void* buf, size_t count, off_t offset) {
  if (!find(fd, Kind::kDevice)) return fail(EBADF);
  const uint64_t off = static_cast<uint64_t>(offset);
  if (off < kConfigOffset || off - kConfigOffset >= config.size()) return fail(EINVAL);
  const size_t at = off - kConfigOffset;
  const size_t n = std::min(count, config.size() - at);
  std::memcpy(buf, config.data() + at, n);
  return static_cast<ssize_t>(n);
}

ssize_t FakeSys::pwrite(int fd, const void* buf, size_t count, off_t offset) {
  if (!find(fd, Kind::kDevice)) return fail(EBADF);
  const uint64_t off = static_cast<uint64_t>(offset);
  if (off < kConfigOffset || off - kConfigOffset >= config.size()) return fail(EINVAL);
  const size_t at = off - kConfigOffset;
  const size_t n = std::min(count, config.size() - at);
  std::memcpy(config.data() + at, buf, n);
  return static_cast<ssize_t>(n);
}

void* FakeSys::mmap(void* /*addr*/, size_t length, int /*prot*/, int flags, int fd, off_t offset) {
  if (!find(fd, Kind::kDevice)) {
    errno = EBADF;
    return MAP_FAILED;
  }
  if (mmap_fails || offset != 0 || length == 0 || length > bar0_size || !(flags & MAP_SHARED)) {
    errno = EINVAL;
    return MAP_FAILED;
  }
  if (bar0_mapped) {
    errno = EBUSY;
    return MAP_FAILED;
  }
  if (bar0_mem_ == nullptr || bar0_alloc_ < length) {
    std::free(bar0_mem_);
    bar0_alloc_ = (length + 4095) / 4096 * 4096;
    bar0_mem_ = static_cast<unsigned char*>(std::aligned_alloc(4096, bar0_alloc_));
    std::memset(bar0_mem_, 0, bar0_alloc_);
  }
  bar0_mapped = true;
  return bar0_mem_;
}

int FakeSys::munmap(void* addr, size_t /*length*/) {
  if (!bar0_mapped || addr != bar0_mem_) return fail(EINVAL);
  bar0_mapped = false;
  return 0;
}

ssize_t FakeSys::readlink(const char* path, char* buf, size_t size) {
  auto it = links_.find(path);
  if (it == links_.end()) return fail(ENOENT);
  const size_t n = std::min(size, it->second.size());
  std::memcpy(buf, it->second.data(), n);
  return static_cast<ssize_t>(n);
}

int FakeSys::list_dir(const char* path, std::vector<std::string>& names) {
  const std::string prefix = std::string(path) + "/";
  std::set<std::string> seen;
  auto collect = [&](const std::map<std::string, std::string>& m) {
    for (const auto& [p, v] : m) {
      if (p.compare(0, prefix.size(), prefix) != 0) continue;
      const std::string rest = p.substr(prefix.size());
      seen.insert(rest.substr(0, rest.find('/')));
    }
  };
  collect(files_);
  collect(links_);
  if (seen.empty()) return fail(ENOENT);
  names.assign(seen.begin(), seen.end());
  return 0;
}

MmioTrap* FakeSys::mmio_trap(int device_fd, uint32_t region_index) {
  if (!provide_trap || !find(device_fd, Kind::kDevice) ||
      region_index != VFIO_PCI_BAR0_REGION_INDEX)
    return nullptr;
  return &trap;
}

int FakeSys::ioctl(int fd, unsigned long request, void* arg) {
  calls.push_back(ioctl_name(request));
  if (auto it = fail_ioctl.find(request); it != fail_ioctl.end()) return fail(it->second);
  auto it = fds_.find(fd);
  if (it == fds_.end()) return fail(EBADF);
  switch (it->second.kind) {
    case Kind::kContainer: return container_ioctl(request, arg);
    case Kind::kGroup: return group_ioctl(request, arg);
    case Kind::kDevice: return device_ioctl(request, arg);
    default: return fail(ENOTTY);
  }
}

int FakeSys::container_ioctl(unsigned long request, void* arg) {
  switch (request) {
    case VFIO_GET_API_VERSION: return api_version;
    case VFIO_CHECK_EXTENSION:
      return reinterpret_cast<uintptr_t>(arg) == VFIO_TYPE1v2_IOMMU && type1v2 ? 1 : 0;
    case VFIO_SET_IOMMU:
      if (!group_attached_ || reinterpret_cast<uintptr_t>(arg) != VFIO_TYPE1v2_IOMMU)
        return fail(EINVAL);
      iommu_set_ = true;
      return 0;
    case VFIO_IOMMU_GET_INFO: {
      if (!iommu_set_) return fail(EINVAL);
      auto* info = static_cast<vfio_iommu_type1_info*>(arg);
      const uint32_t given = info->argsz;
      if (given < offsetof(vfio_iommu_type1_info, cap_offset) + 4) return fail(EINVAL);
      // Chain: the DMA-available capability, then the IOVA range capability.
      const uint32_t dummy_off = sizeof(vfio_iommu_type1_info);
      const uint32_t dummy_len = sizeof(vfio_iommu_type1_info_dma_avail) + 4;  // 8-aligned
      const uint32_t range_off = dummy_off + dummy_len;
      const uint32_t range_len = sizeof(vfio_iommu_type1_info_cap_iova_range) +
                                 static_cast<uint32_t>(ranges.size() * sizeof(vfio_iova_range));
      const uint32_t need = range_off + range_len;
      info->flags = VFIO_IOMMU_INFO_PGSIZES;
      info->iova_pgsizes = iova_pgsizes;
      info->cap_offset = 0;
      if (!report_iova_caps) {
        info->argsz = sizeof(vfio_iommu_type1_info);
        return 0;
      }
      info->flags |= VFIO_IOMMU_INFO_CAPS;
      if (given < need) {
        info->argsz = need;  // the caller must retry with room for the chain
        return 0;
      }
      auto* base = reinterpret_cast<unsigned char*>(info);
      // The "dummy" is the DMA-available capability (avail = dma_avail).
      vfio_iommu_type1_info_dma_avail dummy{};
      dummy.header = {VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL, 1, range_off};
      dummy.avail = dma_avail;
      std::memcpy(base + dummy_off, &dummy, sizeof dummy);
      vfio_iommu_type1_info_cap_iova_range cap{};
      cap.header.id = VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE;
      cap.header.version = 1;
      cap.header.next = corrupt_cap_chain ? dummy_off : 0;
      cap.nr_iovas = static_cast<uint32_t>(ranges.size());
      std::memcpy(base + range_off, &cap, sizeof cap);
      for (size_t i = 0; i < ranges.size(); ++i) {
        vfio_iova_range r{ranges[i].start, ranges[i].end};
        std::memcpy(base + range_off + sizeof cap + i * sizeof r, &r, sizeof r);
      }
      info->cap_offset = dummy_off;
      info->argsz = need;
      return 0;
    }
    case VFIO_IOMMU_MAP_DMA: {
      if (!iommu_set_) return fail(EINVAL);
      auto* m = static_cast<vfio_iommu_type1_dma_map*>(arg);
      if (m->argsz < sizeof *m || m->size == 0 || (m->vaddr | m->iova | m->size) % 4096 != 0)
        return fail(EINVAL);
      bool inside = false;
      for (const IovaRange& r : ranges)
        inside |= m->iova >= r.start && m->iova + m->size - 1 <= r.end;
      if (!inside) return fail(EINVAL);
      auto next = dma.lower_bound(m->iova);
      if (next != dma.end() && next->first < m->iova + m->size) return fail(EEXIST);
      if (next != dma.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second.size > m->iova) return fail(EEXIST);
      }
      dma[m->iova] = {m->vaddr, m->size, m->flags};
      return 0;
    }
    case VFIO_IOMMU_UNMAP_DMA: {
      auto* u = static_cast<vfio_iommu_type1_dma_unmap*>(arg);
      if (u->argsz < sizeof *u) return fail(EINVAL);
      uint64_t removed = 0;
      for (auto i = dma.lower_bound(u->iova); i != dma.end() && i->first < u->iova + u->size;) {
        if (i->first + i->second.size > u->iova + u->size) return fail(EINVAL);  // bisects
        removed += i->second.size;
        i = dma.erase(i);
      }
      u->size = removed - std::min(removed, unmap_short_by);
      return 0;
    }
    default: return fail(ENOTTY);
  }
}

int FakeSys::group_ioctl(unsigned long request, void* arg) {
  switch (request) {
    case VFIO_GROUP_GET_STATUS: {
      auto* s = static_cast<vfio_group_status*>(arg);
      if (s->argsz < sizeof *s) return fail(EINVAL);
      s->flags = (viable ? VFIO_GROUP_FLAGS_VIABLE : 0) |
                 (group_attached_ ? VFIO_GROUP_FLAGS_CONTAINER_SET : 0);
      return 0;
    }
    case VFIO_GROUP_SET_CONTAINER: {
      const int cfd = *static_cast<int*>(arg);
      if (!find(cfd, Kind::kContainer) || !viable) return fail(EINVAL);
      group_attached_ = true;
      return 0;
    }
    case VFIO_GROUP_GET_DEVICE_FD: {
      if (!group_attached_ || !iommu_set_) return fail(EINVAL);
      if (std::strcmp(static_cast<const char*>(arg), kBdf) != 0) return fail(ENODEV);
      return new_fd({Kind::kDevice, {}, 0});
    }
    default: return fail(ENOTTY);
  }
}

int FakeSys::device_ioctl(unsigned long request, void* arg) {
  switch (request) {
    case VFIO_DEVICE_GET_INFO: {
      auto* i = static_cast<vfio_device_info*>(arg);
      if (i->argsz < offsetof(vfio_device_info, num_irqs) + 4) return fail(EINVAL);
      i->flags = device_flags;
      i->num_regions = num_regions;
      i->num_irqs = num_irqs;
      return 0;
    }
    case VFIO_DEVICE_GET_REGION_INFO: {
      auto* r = static_cast<vfio_region_info*>(arg);
      if (r->argsz < sizeof *r || r->index >= num_regions) return fail(EINVAL);
      r->flags = 0;
      r->size = 0;
      r->offset = uint64_t{r->index} << 40;
      r->cap_offset = 0;
      if (r->index == VFIO_PCI_BAR0_REGION_INDEX) {
        r->flags = bar0_flags;
        r->size = bar0_size;
      } else if (r->index == VFIO_PCI_CONFIG_REGION_INDEX) {
        r->flags = config_flags;
        r->size = config.size();
      }
      return 0;
    }
    case VFIO_DEVICE_GET_IRQ_INFO: {
      auto* q = static_cast<vfio_irq_info*>(arg);
      if (q->argsz < sizeof *q || q->index >= num_irqs) return fail(EINVAL);
      q->flags = q->index == VFIO_PCI_MSIX_IRQ_INDEX ? msix_flags : 0;
      q->count = q->index == VFIO_PCI_MSIX_IRQ_INDEX ? msix_count : 0;
      return 0;
    }
    case VFIO_DEVICE_SET_IRQS: {
      ++set_irqs_calls;
      auto* s = static_cast<vfio_irq_set*>(arg);
      if (s->argsz < sizeof *s || s->index != VFIO_PCI_MSIX_IRQ_INDEX ||
          !(s->flags & VFIO_IRQ_SET_ACTION_TRIGGER))
        return fail(EINVAL);
      if (s->flags & VFIO_IRQ_SET_DATA_NONE) {
        if (s->count != 0) return fail(EINVAL);
        msix_fds.clear();
        return 0;
      }
      if (!(s->flags & VFIO_IRQ_SET_DATA_EVENTFD) || s->start != 0 || s->count == 0 ||
          s->count > msix_count || s->argsz < sizeof *s + s->count * sizeof(int32_t))
        return fail(EINVAL);
      msix_fds.resize(s->count);
      std::memcpy(msix_fds.data(), s->data, s->count * sizeof(int32_t));
      return 0;
    }
    case VFIO_DEVICE_RESET:
      if (!(device_flags & VFIO_DEVICE_FLAGS_RESET)) return fail(ENOTTY);
      ++reset_count;
      return 0;
    default: return fail(ENOTTY);
  }
}

}  // namespace kbv::platform::test
