// SPDX-License-Identifier: BSD-3-Clause
// sim::Kernel (src/sim/bus/vfio_kernel.cpp): registry, descriptors, container,
// group and type1 IOMMU ioctls — success paths and the errnos Linux gives.
#include "sim/bus/vfio_kernel.hpp"

#include "vfio_fixture.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace kbv::sim::test {
namespace {

TEST(SimKernelRegistry, AddRemoveResolve) {
  Kernel k;
  auto a = k.add_device("x");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(*a, "fffe:00:01.0");
  auto b = k.add_device("y");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(*b, "fffe:00:02.0");
  EXPECT_EQ(k.add_device("x").status(), KBV_ERR_ALREADY_EXISTS);
  EXPECT_EQ(k.add_device("").status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(k.iommu_group("x"), Kernel::kGroupBase + 1);
  EXPECT_EQ(*k.resolve("sim:y"), "fffe:00:02.0");
  EXPECT_EQ(k.resolve("sim:z").status(), KBV_ERR_NOT_FOUND);
  EXPECT_EQ(k.resolve("vfio:0000:3b:00.0").status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_NE(k.device("x"), nullptr);
  EXPECT_EQ(k.device_names(), (std::vector<std::string>{"x", "y"}));
  ASSERT_TRUE(k.remove_device("x").is_ok());
  EXPECT_EQ(k.device("x"), nullptr);
  EXPECT_EQ(k.remove_device("x"), KBV_ERR_NOT_FOUND);
  auto c = k.add_device("z");  // reuses the free slot
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(*c, "fffe:00:01.0");
}

TEST_F(VfioTest, RemoveDeviceBusyWhileGroupOpen) {
  const int g = open_group();
  ASSERT_GE(g, 0);
  EXPECT_EQ(k.remove_device("a"), KBV_ERR_BUSY);
  EXPECT_EQ(k.close(g), 0);
  EXPECT_TRUE(k.remove_device("a").is_ok());
}

TEST_F(VfioTest, DescriptorsAreRealAndReleased) {
  const int c = open_container();
  ASSERT_GE(c, 0);
  EXPECT_TRUE(k.owns_fd(c));
  EXPECT_GE(::fcntl(c, F_GETFD), 0);  // a real descriptor number
  const int other = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  EXPECT_NE(other, c);
  EXPECT_EQ(k.close(c), 0);
  EXPECT_FALSE(k.owns_fd(c));
  EXPECT_EQ(k.close(other), 0);  // forwarded to the real close
  EXPECT_EQ(err([&] { return k.close(other); }), EBADF);
}

TEST_F(VfioTest, ContainerApiAndExtensions) {
  const int c = open_container();
  ASSERT_GE(c, 0);
  EXPECT_EQ(k.ioctl(c, VFIO_GET_API_VERSION, nullptr), VFIO_API_VERSION);
  EXPECT_EQ(k.ioctl(c, VFIO_CHECK_EXTENSION, reinterpret_cast<void*>(VFIO_TYPE1v2_IOMMU)), 1);
  // The type1 driver offers v1 too (DPDK's EAL sets it).
  EXPECT_EQ(k.ioctl(c, VFIO_CHECK_EXTENSION, reinterpret_cast<void*>(VFIO_TYPE1_IOMMU)), 1);
  EXPECT_EQ(k.ioctl(c, VFIO_CHECK_EXTENSION, reinterpret_cast<void*>(VFIO_NOIOMMU_IOMMU)), 0);
  EXPECT_EQ(err([&] { return k.ioctl(c, VFIO_GROUP_GET_STATUS, nullptr); }), ENOTTY);
  EXPECT_EQ(err([&] { return k.ioctl(c, VFIO_DEVICE_RESET, nullptr); }), ENOTTY);
  EXPECT_EQ(k.close(c), 0);
}

TEST_F(VfioTest, SetIommuNeedsGroupAndType1) {
  const int c = open_container();
  EXPECT_EQ(err([&] { return set_iommu(c); }), EINVAL);  // no group yet
  const int g = open_group();
  ASSERT_EQ(set_container(g, c), 0);
  EXPECT_EQ(err([&] { return set_iommu(c, VFIO_SPAPR_TCE_IOMMU); }), ENODEV);
  EXPECT_EQ(err([&] { return set_iommu(c, VFIO_NOIOMMU_IOMMU); }), ENODEV);
  EXPECT_EQ(set_iommu(c), 0);
  EXPECT_EQ(err([&] { return set_iommu(c); }), EINVAL);  // already set
  k.close(g);
  k.close(c);
}

TEST_F(VfioTest, IommuIoctlsBeforeSetIommuAreNotty) {
  const int c = open_container();
  vfio_iommu_type1_info info{};
  info.argsz = sizeof info;
  EXPECT_EQ(err([&] { return k.ioctl(c, VFIO_IOMMU_GET_INFO, &info); }), ENOTTY);
  vfio_iommu_type1_dma_map map{};
  map.argsz = sizeof map;
  EXPECT_EQ(err([&] { return k.ioctl(c, VFIO_IOMMU_MAP_DMA, &map); }), ENOTTY);
  k.close(c);
}

TEST_F(VfioTest, GroupOpenTwiceIsBusyAndUnknownGroupIsReal) {
  const int g = open_group();
  ASSERT_GE(g, 0);
  EXPECT_EQ(err([&] { return open_group(); }), EBUSY);
  k.close(g);
  const int g2 = open_group();
  EXPECT_GE(g2, 0);
  k.close(g2);
  // A group number the model does not own is forwarded to the real system.
  EXPECT_EQ(err([&] { return k.open("/dev/vfio/999999", O_RDWR); }), ENOENT);
}

TEST_F(VfioTest, GroupStatusAndContainerLifecycle) {
  const int c = open_container();
  const int g = open_group();
  vfio_group_status st{};
  st.argsz = sizeof st;
  ASSERT_EQ(k.ioctl(g, VFIO_GROUP_GET_STATUS, &st), 0);
  EXPECT_EQ(st.flags, static_cast<uint32_t>(VFIO_GROUP_FLAGS_VIABLE));
  st.argsz = 4;
  EXPECT_EQ(err([&] { return k.ioctl(g, VFIO_GROUP_GET_STATUS, &st); }), EINVAL);
  EXPECT_EQ(err([&] { return k.ioctl(g, VFIO_GROUP_GET_STATUS, nullptr); }), EFAULT);
  EXPECT_EQ(err([&] { return k.ioctl(g, VFIO_GROUP_UNSET_CONTAINER, nullptr); }), EINVAL);
  ASSERT_EQ(set_container(g, c), 0);
  st.argsz = sizeof st;
  ASSERT_EQ(k.ioctl(g, VFIO_GROUP_GET_STATUS, &st), 0);
  EXPECT_EQ(st.flags,
            static_cast<uint32_t>(VFIO_GROUP_FLAGS_VIABLE | VFIO_GROUP_FLAGS_CONTAINER_SET));
  EXPECT_EQ(err([&] { return set_container(g, c); }), EINVAL);  // double attach
  EXPECT_EQ(k.ioctl(g, VFIO_GROUP_UNSET_CONTAINER, nullptr), 0);
  ASSERT_EQ(k.ioctl(g, VFIO_GROUP_GET_STATUS, &st), 0);
  EXPECT_EQ(st.flags, static_cast<uint32_t>(VFIO_GROUP_FLAGS_VIABLE));
  k.close(g);
  k.close(c);
}

TEST_F(VfioTest, SetContainerRejectsBadDescriptors) {
  const int g = open_group();
  const int closed = ::dup(0);
  ::close(closed);
  EXPECT_EQ(err([&] { return set_container(g, closed); }), EBADF);
  const int real = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  EXPECT_EQ(err([&] { return set_container(g, real); }), EINVAL);
  EXPECT_EQ(err([&] { return set_container(g, g); }), EINVAL);  // a group is no container
  EXPECT_EQ(err([&] { return k.ioctl(g, VFIO_GROUP_SET_CONTAINER, nullptr); }), EFAULT);
  ::close(real);
  k.close(g);
}

TEST_F(VfioTest, GetDeviceFdRules) {
  const int c = open_container();
  const int g = open_group();
  char* name = const_cast<char*>(bdf.c_str());
  EXPECT_EQ(err([&] { return k.ioctl(g, VFIO_GROUP_GET_DEVICE_FD, name); }), EINVAL);
  ASSERT_EQ(set_container(g, c), 0);
  EXPECT_EQ(err([&] { return k.ioctl(g, VFIO_GROUP_GET_DEVICE_FD, name); }), EINVAL);  // no IOMMU
  ASSERT_EQ(set_iommu(c), 0);
  char other[] = "fffe:00:09.0";
  EXPECT_EQ(err([&] { return k.ioctl(g, VFIO_GROUP_GET_DEVICE_FD, other); }), ENODEV);
  EXPECT_EQ(err([&] { return k.ioctl(g, VFIO_GROUP_GET_DEVICE_FD, nullptr); }), EFAULT);
  const int d = k.ioctl(g, VFIO_GROUP_GET_DEVICE_FD, name);
  ASSERT_GE(d, 0);
  EXPECT_TRUE(k.owns_fd(d));
  EXPECT_EQ(err([&] { return k.ioctl(g, VFIO_GROUP_UNSET_CONTAINER, nullptr); }), EBUSY);
  EXPECT_EQ(err([&] { return k.ioctl(g, 0x3B99, nullptr); }), ENOTTY);
  EXPECT_EQ(k.close(d), 0);
  EXPECT_EQ(k.ioctl(g, VFIO_GROUP_UNSET_CONTAINER, nullptr), 0);
  k.close(g);
  k.close(c);
}

TEST_F(VfioTest, IommuGetInfoArgszNegotiation) {
  open_all();
  vfio_iommu_type1_info small{};
  small.argsz = sizeof small;
  ASSERT_EQ(k.ioctl(container, VFIO_IOMMU_GET_INFO, &small), 0);
  EXPECT_TRUE(small.flags & VFIO_IOMMU_INFO_PGSIZES);
  EXPECT_TRUE(small.flags & VFIO_IOMMU_INFO_CAPS);
  EXPECT_EQ(small.iova_pgsizes & 0x1000, 0x1000u);
  EXPECT_EQ(small.cap_offset, 0u);
  ASSERT_GT(small.argsz, sizeof small);  // the size the chain needs

  std::vector<uint64_t> storage((small.argsz + 7) / 8);
  auto* info = reinterpret_cast<vfio_iommu_type1_info*>(storage.data());
  info->argsz = small.argsz;
  ASSERT_EQ(k.ioctl(container, VFIO_IOMMU_GET_INFO, info), 0);
  ASSERT_NE(info->cap_offset, 0u);
  const auto* base = reinterpret_cast<const std::byte*>(info);
  bool saw_range = false, saw_avail = false;
  for (uint32_t off = info->cap_offset; off != 0;) {
    ASSERT_LT(off, info->argsz);
    const auto* h = reinterpret_cast<const vfio_info_cap_header*>(base + off);
    if (h->id == VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE) {
      const auto* r = reinterpret_cast<const vfio_iommu_type1_info_cap_iova_range*>(h);
      ASSERT_EQ(r->nr_iovas, 2u);
      EXPECT_EQ(r->iova_ranges[0].start, 0u);
      EXPECT_EQ(r->iova_ranges[0].end, 0xFEDFFFFFu);
      EXPECT_EQ(r->iova_ranges[1].start, 0xFEF00000u);
      EXPECT_EQ(r->iova_ranges[1].end, (1ull << 48) - 1);
      saw_range = true;
    } else if (h->id == VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL) {
      EXPECT_EQ(reinterpret_cast<const vfio_iommu_type1_info_dma_avail*>(h)->avail, 65535u);
      saw_avail = true;
    }
    off = h->next;
  }
  EXPECT_TRUE(saw_range);
  EXPECT_TRUE(saw_avail);

  vfio_iommu_type1_info tiny{};
  tiny.argsz = 8;
  EXPECT_EQ(err([&] { return k.ioctl(container, VFIO_IOMMU_GET_INFO, &tiny); }), EINVAL);
}

TEST_F(VfioTest, MapUnmapDmaReachesTheDevice) {
  open_all();
  PciDevice* dev = k.device("a");
  void* mem = ::mmap(nullptr, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  std::memset(mem, 0x77, 2 * 4096);
  vfio_iommu_type1_dma_map map{};
  map.argsz = sizeof map;
  map.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
  map.vaddr = reinterpret_cast<uintptr_t>(mem);
  map.iova = 0x200000;
  map.size = 2 * 4096;
  ASSERT_EQ(k.ioctl(container, VFIO_IOMMU_MAP_DMA, &map), 0);
  EXPECT_EQ(err([&] { return k.ioctl(container, VFIO_IOMMU_MAP_DMA, &map); }), EEXIST);
  EXPECT_EQ(dev->dma_map().translate(0x200010, 8, Iommu::kRead), static_cast<std::byte*>(mem) + 16);

  vfio_iommu_type1_dma_unmap unmap{};
  unmap.argsz = sizeof unmap;
  unmap.iova = 0x200000;
  unmap.size = 4096;  // would split the mapping
  // By pointer: clang refuses to capture a struct with a flexible array
  // member (vfio_iommu_type1_dma_unmap's data[]) in a lambda.
  auto* unmap_p = &unmap;
  EXPECT_EQ(err([&] { return k.ioctl(container, VFIO_IOMMU_UNMAP_DMA, unmap_p); }), EINVAL);
  unmap.size = 2 * 4096;
  ASSERT_EQ(k.ioctl(container, VFIO_IOMMU_UNMAP_DMA, &unmap), 0);
  EXPECT_EQ(unmap.size, 2u * 4096);
  EXPECT_EQ(dev->dma_map().translate(0x200010, 8, Iommu::kRead), nullptr);
  ::munmap(mem, 2 * 4096);
}

TEST_F(VfioTest, MapDmaErrors) {
  open_all();
  void* mem = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  vfio_iommu_type1_dma_map map{};
  map.argsz = sizeof map;
  map.flags = VFIO_DMA_MAP_FLAG_READ;
  map.vaddr = reinterpret_cast<uintptr_t>(mem);
  map.iova = 0x1000;
  map.size = 4096;
  auto map_err = [&](vfio_iommu_type1_dma_map m) {
    return err([&] { return k.ioctl(container, VFIO_IOMMU_MAP_DMA, &m); });
  };
  vfio_iommu_type1_dma_map m = map;
  m.argsz = 8;
  EXPECT_EQ(map_err(m), EINVAL);
  m = map;
  m.flags = 0;
  EXPECT_EQ(map_err(m), EINVAL);  // no permission
  m = map;
  m.flags |= 1u << 7;
  EXPECT_EQ(map_err(m), EINVAL);  // unknown flag
  m = map;
  m.iova = 0x1800;
  EXPECT_EQ(map_err(m), EINVAL);  // misaligned
  m = map;
  m.iova = 0xFEE00000;
  EXPECT_EQ(map_err(m), EINVAL);  // reserved MSI window
  ::munmap(mem, 4096);
  EXPECT_EQ(map_err(map), EFAULT);  // vaddr no longer mapped
  EXPECT_EQ(err([&] { return k.ioctl(container, VFIO_IOMMU_MAP_DMA, nullptr); }), EFAULT);
}

// Linux pins the pages of a device-writable mapping with FOLL_WRITE:
// memory the process cannot write fails with EFAULT (check_vma_flags), and
// memory it cannot read fails for any mapping; a read-only mapping of
// PROT_READ memory is fine.
TEST_F(VfioTest, MapDmaChecksPagePermissions) {
  open_all();
  auto* mem = static_cast<std::byte*>(
      ::mmap(nullptr, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(mem, MAP_FAILED);
  mem[0] = std::byte{1};  // resident or not makes no difference
  ASSERT_EQ(::mprotect(mem + 4096, 4096, PROT_READ), 0);
  ASSERT_EQ(::mprotect(mem + 2 * 4096, 4096, PROT_NONE), 0);
  auto map_at = [&](size_t off, uint64_t size, uint32_t flags, uint64_t iova) {
    vfio_iommu_type1_dma_map m{};
    m.argsz = sizeof m;
    m.flags = flags;
    m.vaddr = reinterpret_cast<uintptr_t>(mem + off);
    m.iova = iova;
    m.size = size;
    errno = 0;
    return k.ioctl(container, VFIO_IOMMU_MAP_DMA, &m) == 0 ? 0 : errno;  // 0 or the errno
  };
  constexpr uint32_t kRW = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
  EXPECT_EQ(map_at(4096, 4096, kRW, 0x10000), EFAULT);                      // PROT_READ, write
  EXPECT_EQ(map_at(4096, 4096, VFIO_DMA_MAP_FLAG_WRITE, 0x10000), EFAULT);  // write only
  EXPECT_EQ(map_at(0, 2 * 4096, kRW, 0x10000), EFAULT);  // writable page, then a read-only one
  EXPECT_EQ(map_at(2 * 4096, 4096, VFIO_DMA_MAP_FLAG_READ, 0x10000), EFAULT);  // PROT_NONE
  EXPECT_EQ(map_at(0, 3 * 4096, VFIO_DMA_MAP_FLAG_READ, 0x10000), EFAULT);
  // Nothing was mapped by the failures.
  EXPECT_EQ(map_at(0, 4096, kRW, 0x10000), 0);
  EXPECT_EQ(map_at(0, 2 * 4096, VFIO_DMA_MAP_FLAG_READ, 0x20000), 0);  // read-only is fine
  ASSERT_EQ(::mprotect(mem + 4096, 4096, PROT_READ | PROT_WRITE), 0);
  EXPECT_EQ(map_at(4096, 4096, kRW, 0x30000), 0);  // writable again
  ::munmap(mem, 3 * 4096);
}

// A VFIO_TYPE1_IOMMU (v1) container, as DPDK's EAL sets one up: an unmap
// covering a mapping's first IOVA removes all of it, one starting inside a
// mapping succeeds with 0 bytes (vfio_dma_do_unmap's v1 compatibility).
TEST_F(VfioTest, Type1v1UnmapsWholeMappings) {
  container = open_container();
  group = open_group();
  ASSERT_EQ(set_container(group, container), 0);
  ASSERT_EQ(set_iommu(container, VFIO_TYPE1_IOMMU), 0);
  PciDevice* dev = k.device("a");
  void* mem = ::mmap(nullptr, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  std::memset(mem, 0, 4 * 4096);
  vfio_iommu_type1_dma_map map{};
  map.argsz = sizeof map;
  map.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
  map.vaddr = reinterpret_cast<uintptr_t>(mem);
  map.iova = 0x400000;
  map.size = 4 * 4096;
  ASSERT_EQ(k.ioctl(container, VFIO_IOMMU_MAP_DMA, &map), 0);
  vfio_iommu_type1_dma_unmap unmap{};
  unmap.argsz = sizeof unmap;
  unmap.iova = 0x401000;  // inside: nothing unmapped, no error (v2: EINVAL)
  unmap.size = 4096;
  ASSERT_EQ(k.ioctl(container, VFIO_IOMMU_UNMAP_DMA, &unmap), 0);
  EXPECT_EQ(unmap.size, 0u);
  EXPECT_NE(dev->dma_map().translate(0x401000, 8, Iommu::kRead), nullptr);
  unmap.iova = 0x400000;  // the first page only: the whole mapping goes
  unmap.size = 4096;
  ASSERT_EQ(k.ioctl(container, VFIO_IOMMU_UNMAP_DMA, &unmap), 0);
  EXPECT_EQ(unmap.size, 4u * 4096);
  EXPECT_EQ(dev->dma_map().translate(0x403000, 8, Iommu::kRead), nullptr);
  k.close(group);
  k.close(container);
  ::munmap(mem, 4 * 4096);
}

TEST_F(VfioTest, UnmapAllAndLateGroupGetsMappings) {
  open_all();
  void* mem = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  vfio_iommu_type1_dma_map map{};
  map.argsz = sizeof map;
  map.flags = VFIO_DMA_MAP_FLAG_READ;
  map.vaddr = reinterpret_cast<uintptr_t>(mem);
  map.iova = 0x1000;
  map.size = 4096;
  ASSERT_EQ(k.ioctl(container, VFIO_IOMMU_MAP_DMA, &map), 0);
  // A second device's group joins the container and sees the mapping.
  ASSERT_TRUE(k.add_device("b").has_value());
  const std::string g2path = "/dev/vfio/" + std::to_string(k.iommu_group("b"));
  const int g2 = k.open(g2path.c_str(), O_RDWR);
  ASSERT_EQ(set_container(g2, container), 0);
  EXPECT_NE(k.device("b")->dma_map().translate(0x1000, 4, Iommu::kRead), nullptr);
  vfio_iommu_type1_dma_unmap unmap{};
  unmap.argsz = sizeof unmap;
  unmap.flags = VFIO_DMA_UNMAP_FLAG_ALL;
  ASSERT_EQ(k.ioctl(container, VFIO_IOMMU_UNMAP_DMA, &unmap), 0);
  EXPECT_EQ(unmap.size, 4096u);
  EXPECT_EQ(k.device("b")->dma_map().translate(0x1000, 4, Iommu::kRead), nullptr);
  EXPECT_EQ(k.device("a")->dma_map().translate(0x1000, 4, Iommu::kRead), nullptr);
  k.close(g2);
  ::munmap(mem, 4096);
}

TEST_F(VfioTest, ClosingGroupAndDeviceDetachesAndClearsDma) {
  open_all();
  void* mem = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  vfio_iommu_type1_dma_map map{};
  map.argsz = sizeof map;
  map.flags = VFIO_DMA_MAP_FLAG_READ;
  map.vaddr = reinterpret_cast<uintptr_t>(mem);
  map.iova = 0x1000;
  map.size = 4096;
  ASSERT_EQ(k.ioctl(container, VFIO_IOMMU_MAP_DMA, &map), 0);
  EXPECT_EQ(k.close(container), 0);  // the group still holds the container
  EXPECT_NE(k.device("a")->dma_map().translate(0x1000, 4, Iommu::kRead), nullptr);
  EXPECT_EQ(k.close(group), 0);  // the device fd still holds it
  EXPECT_NE(k.device("a")->dma_map().translate(0x1000, 4, Iommu::kRead), nullptr);
  EXPECT_EQ(err([&] { return open_group(); }), EBUSY);  // still held open by the device fd
  EXPECT_EQ(k.remove_device("a"), KBV_ERR_BUSY);
  EXPECT_EQ(k.close(device), 0);  // last user: detached, domain cleared
  EXPECT_EQ(k.device("a")->dma_map().translate(0x1000, 4, Iommu::kRead), nullptr);
  const int g = open_group();  // released: can be opened again, without a container
  ASSERT_GE(g, 0);
  vfio_group_status st{};
  st.argsz = sizeof st;
  ASSERT_EQ(k.ioctl(g, VFIO_GROUP_GET_STATUS, &st), 0);
  EXPECT_EQ(st.flags, static_cast<uint32_t>(VFIO_GROUP_FLAGS_VIABLE));
  EXPECT_EQ(k.close(g), 0);
  EXPECT_TRUE(k.remove_device("a").is_ok());
  ::munmap(mem, 4096);
}

}  // namespace
}  // namespace kbv::sim::test

namespace kbv::sim::test {
namespace {

TEST(SimKernelRegistry, AttachLivesWithTheDevice) {
  Kernel k;
  struct Probe {
    explicit Probe(int* alive) : alive_(alive) { ++*alive_; }
    ~Probe() { --*alive_; }
    int* alive_;
  };
  int alive = 0;
  std::vector<std::string> seen;
  k.set_attach([&](const std::string& name, PciDevice& dev) -> std::shared_ptr<void> {
    seen.push_back(name);
    EXPECT_EQ(dev.config().device_id, 0x1017);
    return std::make_shared<Probe>(&alive);
  });
  ASSERT_TRUE(k.add_device("p").has_value());
  ASSERT_TRUE(k.add_device("q").has_value());
  EXPECT_EQ(seen, (std::vector<std::string>{"p", "q"}));
  EXPECT_EQ(alive, 2);
  ASSERT_TRUE(k.remove_device("p").is_ok());
  EXPECT_EQ(alive, 1);
  k.set_attach(nullptr);
  ASSERT_TRUE(k.add_device("r").has_value());
  EXPECT_EQ(alive, 1);
}

}  // namespace
}  // namespace kbv::sim::test

namespace kbv::sim::test {
namespace {

// Four threads each drive their own device through the whole VFIO sequence
// many times while sharing one Kernel: no deadlock, no lost descriptor, every
// step succeeds, and every descriptor is released at the end.
TEST(SimKernelConcurrency, ParallelOpenMapCloseCycles) {
  Kernel k;
  constexpr int kThreads = 4, kRounds = 25;
  std::vector<std::string> bdfs;
  for (int t = 0; t < kThreads; ++t) {
    DeviceConfig cfg;
    cfg.init_time = std::chrono::milliseconds(0);
    auto b = k.add_device("c" + std::to_string(t), cfg);
    ASSERT_TRUE(b.has_value());
    bdfs.push_back(*b);
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string name = "c" + std::to_string(t);
      const std::string gpath = "/dev/vfio/" + std::to_string(k.iommu_group(name));
      void* mem = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      for (int r = 0; r < kRounds; ++r) {
        int c = k.open("/dev/vfio/vfio", O_RDWR);
        int g = k.open(gpath.c_str(), O_RDWR);
        bool ok = c >= 0 && g >= 0 && k.ioctl(g, VFIO_GROUP_SET_CONTAINER, &c) == 0 &&
                  k.ioctl(c, VFIO_SET_IOMMU, reinterpret_cast<void*>(VFIO_TYPE1v2_IOMMU)) == 0;
        int d = ok ? k.ioctl(g, VFIO_GROUP_GET_DEVICE_FD, const_cast<char*>(bdfs[t].c_str())) : -1;
        ok = ok && d >= 0;
        vfio_iommu_type1_dma_map map{};
        map.argsz = sizeof map;
        map.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
        map.vaddr = reinterpret_cast<uintptr_t>(mem);
        map.iova = 0x100000;
        map.size = 4096;
        ok = ok && k.ioctl(c, VFIO_IOMMU_MAP_DMA, &map) == 0;
        ok = ok && k.device(name)->dma_map().translate(0x100000, 8, Iommu::kRead) != nullptr;
        ok = ok && k.ioctl(d, VFIO_DEVICE_RESET, nullptr) == 0;
        if (d >= 0) ok = k.close(d) == 0 && ok;
        if (g >= 0) ok = k.close(g) == 0 && ok;
        if (c >= 0) ok = k.close(c) == 0 && ok;
        if (!ok) failures.fetch_add(1);
      }
      ::munmap(mem, 4096);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  for (int t = 0; t < kThreads; ++t) {
    // Everything released: the devices can be removed, their domains are empty.
    EXPECT_EQ(k.device("c" + std::to_string(t))->dma_map().mappings().size(), 0u);
    EXPECT_TRUE(k.remove_device("c" + std::to_string(t)).is_ok());
  }
}

}  // namespace
}  // namespace kbv::sim::test
