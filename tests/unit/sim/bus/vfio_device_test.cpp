// SPDX-License-Identifier: BSD-3-Clause
// sim::Kernel device descriptor (src/sim/bus/vfio_device.cpp): info, regions,
// interrupts, reset, config and BAR0 access, mmap, the MMIO trap.
#include "hca/prm/init_seg.hpp"
#include "vfio_fixture.hpp"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace kbv::sim::test {
namespace {

constexpr off_t region(uint32_t index) { return static_cast<off_t>(uint64_t{index} << 40); }

TEST_F(VfioTest, DeviceInfo) {
  open_all();
  vfio_device_info info{};
  info.argsz = sizeof info;
  ASSERT_EQ(k.ioctl(device, VFIO_DEVICE_GET_INFO, &info), 0);
  EXPECT_EQ(info.flags, static_cast<uint32_t>(VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET));
  EXPECT_EQ(info.num_regions, static_cast<uint32_t>(VFIO_PCI_NUM_REGIONS));
  EXPECT_EQ(info.num_irqs, static_cast<uint32_t>(VFIO_PCI_NUM_IRQS));
  info.argsz = 8;
  EXPECT_EQ(err([&] { return k.ioctl(device, VFIO_DEVICE_GET_INFO, &info); }), EINVAL);
  EXPECT_EQ(err([&] { return k.ioctl(device, VFIO_DEVICE_GET_INFO, nullptr); }), EFAULT);
  EXPECT_EQ(err([&] { return k.ioctl(device, VFIO_GROUP_GET_STATUS, &info); }), ENOTTY);
  EXPECT_EQ(err([&] { return k.ioctl(device, VFIO_SET_IOMMU, nullptr); }), ENOTTY);
}

TEST_F(VfioTest, RegionInfo) {
  open_all();
  vfio_region_info r{};
  r.argsz = sizeof r;
  r.index = VFIO_PCI_BAR0_REGION_INDEX;
  ASSERT_EQ(k.ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &r), 0);
  EXPECT_EQ(r.size, 32u << 20);
  EXPECT_EQ(r.offset, 0u);
  EXPECT_TRUE(r.flags & VFIO_REGION_INFO_FLAG_READ);
  EXPECT_TRUE(r.flags & VFIO_REGION_INFO_FLAG_WRITE);
  EXPECT_TRUE(r.flags & VFIO_REGION_INFO_FLAG_MMAP);
  EXPECT_TRUE(r.flags & VFIO_REGION_INFO_FLAG_CAPS);
  EXPECT_EQ(r.cap_offset, 0u);  // no room: argsz tells what is needed
  EXPECT_EQ(r.argsz, sizeof r + sizeof(vfio_info_cap_header));

  std::vector<uint64_t> buf(8);
  auto* big = reinterpret_cast<vfio_region_info*>(buf.data());
  big->argsz = 64;
  big->index = VFIO_PCI_BAR0_REGION_INDEX;
  ASSERT_EQ(k.ioctl(device, VFIO_DEVICE_GET_REGION_INFO, big), 0);
  ASSERT_EQ(big->cap_offset, sizeof(vfio_region_info));
  const auto* h = reinterpret_cast<const vfio_info_cap_header*>(
      reinterpret_cast<const std::byte*>(big) + big->cap_offset);
  EXPECT_EQ(h->id, VFIO_REGION_INFO_CAP_MSIX_MAPPABLE);
  EXPECT_EQ(h->next, 0u);

  r = {};
  r.argsz = sizeof r;
  r.index = VFIO_PCI_CONFIG_REGION_INDEX;
  ASSERT_EQ(k.ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &r), 0);
  EXPECT_EQ(r.size, 4096u);
  EXPECT_EQ(r.offset, uint64_t{VFIO_PCI_CONFIG_REGION_INDEX} << 40);
  EXPECT_EQ(r.flags,
            static_cast<uint32_t>(VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE));
  for (uint32_t i : {1u, 2u, 3u, 4u, 5u, 6u}) {
    r = {};
    r.argsz = sizeof r;
    r.index = i;
    ASSERT_EQ(k.ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &r), 0) << i;
    EXPECT_EQ(r.size, 0u) << i;
    EXPECT_EQ(r.offset, uint64_t{i} << 40);
  }
  r = {};
  r.argsz = sizeof r;
  r.index = VFIO_PCI_VGA_REGION_INDEX;
  EXPECT_EQ(err([&] { return k.ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &r); }), EINVAL);
  r.index = VFIO_PCI_NUM_REGIONS;
  EXPECT_EQ(err([&] { return k.ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &r); }), EINVAL);
  r.index = 0;
  r.argsz = 16;
  EXPECT_EQ(err([&] { return k.ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &r); }), EINVAL);
}

TEST_F(VfioTest, IrqInfo) {
  open_all();
  vfio_irq_info i{};
  i.argsz = sizeof i;
  i.index = VFIO_PCI_MSIX_IRQ_INDEX;
  ASSERT_EQ(k.ioctl(device, VFIO_DEVICE_GET_IRQ_INFO, &i), 0);
  EXPECT_EQ(i.count, 64u);
  EXPECT_TRUE(i.flags & VFIO_IRQ_INFO_EVENTFD);
  i.index = VFIO_PCI_MSI_IRQ_INDEX;
  ASSERT_EQ(k.ioctl(device, VFIO_DEVICE_GET_IRQ_INFO, &i), 0);
  EXPECT_EQ(i.count, 0u);
  i.index = VFIO_PCI_INTX_IRQ_INDEX;
  ASSERT_EQ(k.ioctl(device, VFIO_DEVICE_GET_IRQ_INFO, &i), 0);
  EXPECT_EQ(i.count, 1u);
  EXPECT_TRUE(i.flags & VFIO_IRQ_INFO_MASKABLE);
  i.index = VFIO_PCI_NUM_IRQS;
  EXPECT_EQ(err([&] { return k.ioctl(device, VFIO_DEVICE_GET_IRQ_INFO, &i); }), EINVAL);
  i.index = 0;
  i.argsz = 4;
  EXPECT_EQ(err([&] { return k.ioctl(device, VFIO_DEVICE_GET_IRQ_INFO, &i); }), EINVAL);
}

// A vfio_irq_set with `n` eventfds.
std::vector<uint32_t> irq_set(uint32_t flags, uint32_t index, uint32_t start,
                              std::vector<int32_t> fds, uint32_t count) {
  std::vector<uint32_t> b(5 + fds.size());
  auto* s = reinterpret_cast<vfio_irq_set*>(b.data());
  s->argsz = static_cast<uint32_t>(sizeof(vfio_irq_set) + fds.size() * 4);
  s->flags = flags;
  s->index = index;
  s->start = start;
  s->count = count;
  if (!fds.empty()) std::memcpy(s->data, fds.data(), fds.size() * 4);
  return b;
}

TEST_F(VfioTest, MsixEventfdsSignalledByRaiseMsix) {
  open_all();
  PciDevice* dev = k.device("a");
  const uint16_t cmd = PciConfig::kCmdMemory | PciConfig::kCmdBusMaster;
  ASSERT_EQ(k.pwrite(device, &cmd, 2, region(VFIO_PCI_CONFIG_REGION_INDEX) + 4), 2);
  const int e0 = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  const int e1 = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  const uint32_t trig = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
  auto s = irq_set(trig, VFIO_PCI_MSIX_IRQ_INDEX, 0, {e0, e1}, 2);
  ASSERT_EQ(k.ioctl(device, VFIO_DEVICE_SET_IRQS, s.data()), 0);
  EXPECT_TRUE(dev->msix_enabled());
  uint16_t ctl = 0;
  ASSERT_EQ(
      k.pread(device, &ctl, 2, region(VFIO_PCI_CONFIG_REGION_INDEX) + PciConfig::kMsixCap + 2), 2);
  EXPECT_TRUE(ctl & PciConfig::kMsixCtlEnable);
  EXPECT_TRUE(dev->raise_msix(1));
  uint64_t v = 0;
  EXPECT_EQ(::read(e0, &v, 8), -1);  // vector 0 not raised
  ASSERT_EQ(::read(e1, &v, 8), 8);
  EXPECT_EQ(v, 1u);
  // Unassign vector 1 with fd -1: no more signals.
  s = irq_set(trig, VFIO_PCI_MSIX_IRQ_INDEX, 1, {-1}, 1);
  ASSERT_EQ(k.ioctl(device, VFIO_DEVICE_SET_IRQS, s.data()), 0);
  EXPECT_FALSE(dev->raise_msix(1));
  EXPECT_EQ(::read(e1, &v, 8), -1);
  // Loopback trigger (DATA_NONE, count 1) fires vector 0.
  s = irq_set(VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_PCI_MSIX_IRQ_INDEX, 0, {},
              1);
  ASSERT_EQ(k.ioctl(device, VFIO_DEVICE_SET_IRQS, s.data()), 0);
  ASSERT_EQ(::read(e0, &v, 8), 8);
  // DATA_NONE with count 0 disables MSI-X.
  s = irq_set(VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_PCI_MSIX_IRQ_INDEX, 0, {},
              0);
  ASSERT_EQ(k.ioctl(device, VFIO_DEVICE_SET_IRQS, s.data()), 0);
  EXPECT_FALSE(dev->msix_enabled());
  EXPECT_FALSE(dev->raise_msix(0));
  ::close(e0);
  ::close(e1);
}

TEST_F(VfioTest, SetIrqsErrors) {
  open_all();
  const int e = ::eventfd(0, EFD_CLOEXEC);
  const uint32_t trig = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
  auto call = [&](std::vector<uint32_t> s) {
    return err([&] { return k.ioctl(device, VFIO_DEVICE_SET_IRQS, s.data()); });
  };
  EXPECT_EQ(call(irq_set(trig, VFIO_PCI_MSIX_IRQ_INDEX, 64, {e}, 1)), EINVAL);  // past table
  EXPECT_EQ(call(irq_set(trig, VFIO_PCI_MSI_IRQ_INDEX, 0, {e}, 1)), EINVAL);    // no MSI
  EXPECT_EQ(call(irq_set(trig, 9, 0, {e}, 1)), EINVAL);
  EXPECT_EQ(
      call(irq_set(VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_DATA_BOOL | VFIO_IRQ_SET_ACTION_TRIGGER,
                   VFIO_PCI_MSIX_IRQ_INDEX, 0, {e}, 1)),
      EINVAL);                                                 // two data types
  auto s = irq_set(trig, VFIO_PCI_MSIX_IRQ_INDEX, 0, {e}, 2);  // argsz too small for 2
  EXPECT_EQ(call(s), EINVAL);
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  EXPECT_EQ(call(irq_set(trig, VFIO_PCI_MSIX_IRQ_INDEX, 0, {devnull}, 1)), EINVAL);  // no eventfd
  ::close(devnull);
  EXPECT_EQ(call(irq_set(trig, VFIO_PCI_MSIX_IRQ_INDEX, 0, {devnull}, 1)), EBADF);
  EXPECT_EQ(call(irq_set(VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_MASK, VFIO_PCI_MSIX_IRQ_INDEX,
                         0, {}, 1)),
            ENOTTY);  // MSI-X masking is not exported
  EXPECT_EQ(call(irq_set(VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER,
                         VFIO_PCI_MSIX_IRQ_INDEX, 0, {}, 1)),
            EINVAL);  // trigger while MSI-X is off
  EXPECT_FALSE(k.device("a")->msix_enabled());
  EXPECT_EQ(err([&] { return k.ioctl(device, VFIO_DEVICE_SET_IRQS, nullptr); }), EFAULT);
  ::close(e);
}

TEST_F(VfioTest, ConfigRegionReadWrite) {
  open_all();
  const off_t cfg = region(VFIO_PCI_CONFIG_REGION_INDEX);
  uint32_t id = 0;
  ASSERT_EQ(k.pread(device, &id, 4, cfg), 4);
  EXPECT_EQ(id, 0x101715b3u);
  const uint32_t junk = 0x12345678;
  ASSERT_EQ(k.pwrite(device, &junk, 4, cfg), 4);  // read-only: ignored
  ASSERT_EQ(k.pread(device, &id, 4, cfg), 4);
  EXPECT_EQ(id, 0x101715b3u);
  uint16_t cmd = PciConfig::kCmdMemory | PciConfig::kCmdBusMaster;
  ASSERT_EQ(k.pwrite(device, &cmd, 2, cfg + 4), 2);
  EXPECT_TRUE(k.device("a")->bus_master());
  uint8_t b = 0;
  EXPECT_EQ(err([&] { return k.pread(device, &b, 1, cfg + 4096); }), EINVAL);
  EXPECT_EQ(err([&] { return k.pread(device, &b, 1, region(VFIO_PCI_BAR2_REGION_INDEX)); }),
            EINVAL);
  EXPECT_EQ(err([&] { return k.pread(container, &b, 1, 0); }), EINVAL);
}

TEST_F(VfioTest, Bar0PreadPwriteAndMmapShareMemory) {
  open_all();
  PciDevice* dev = k.device("a");
  uint32_t v = 0;
  ASSERT_EQ(k.pread(device, &v, 4, region(0) + 4), 4);
  EXPECT_EQ(__builtin_bswap32(v) >> 16, 5u);  // cmdif revision
  void* p = k.mmap(nullptr, 32 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, device, region(0));
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_NE(p, dev->bar0().data());  // a mapping of its own...
  auto* bar = static_cast<volatile uint32_t*>(p);
  EXPECT_EQ(__builtin_bswap32(bar[1]) >> 16, 5u);
  bar[0x3000 / 4] = 0xCAFEF00D;  // ...of the same memory
  uint32_t stored;
  std::memcpy(&stored, dev->bar0().data() + 0x3000, 4);
  EXPECT_EQ(stored, 0xCAFEF00Du);
  EXPECT_EQ(k.munmap(p, 32 << 20), 0);
  // Writes through pwrite reach the handler.
  std::vector<std::pair<uint64_t, uint64_t>> seen;
  dev->set_bar0_write_handler(
      [&](uint64_t off, uint64_t val, unsigned) { seen.emplace_back(off, val); });
  const uint32_t dbell = __builtin_bswap32(1u << 2);  // big-endian register image
  ASSERT_EQ(k.pwrite(device, &dbell, 4, region(0) + 0x18), 4);
  const uint64_t uar = __builtin_bswap64(0x0102030405060708ull);
  ASSERT_EQ(k.pwrite(device, &uar, 8, region(0) + 0x3020), 8);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (std::pair<uint64_t, uint64_t>{0x18, 1u << 2}));  // CPU order
  EXPECT_EQ(seen[1], (std::pair<uint64_t, uint64_t>{0x3020, 0x0102030405060708ull}));
  EXPECT_EQ(err([&] { return k.pread(device, &v, 8, region(0) + (32 << 20) - 4); }), EINVAL);
  // Memory decoding off: BAR access through the fd fails with EIO, trapped
  // stores are dropped.
  uint16_t cmd = 0;
  ASSERT_EQ(k.pwrite(device, &cmd, 2, region(VFIO_PCI_CONFIG_REGION_INDEX) + PciConfig::kCommand),
            2);
  EXPECT_EQ(err([&] { return k.pread(device, &v, 4, region(0) + 4); }), EIO);
  EXPECT_EQ(err([&] { return k.pwrite(device, &dbell, 4, region(0) + 0x18); }), EIO);
  k.mmio_trap(device, VFIO_PCI_BAR0_REGION_INDEX)->on_write(0x3020, 1, 4);
  EXPECT_EQ(seen.size(), 2u);
}

TEST_F(VfioTest, MmapErrors) {
  open_all();
  auto errno_of = [&](size_t len, int flags, int fd, off_t off) {
    errno = 0;
    EXPECT_EQ(k.mmap(nullptr, len, PROT_READ, flags, fd, off), MAP_FAILED);
    return errno;
  };
  EXPECT_EQ(errno_of(4096, MAP_PRIVATE, device, region(0)), EINVAL);  // must be shared
  EXPECT_EQ(errno_of(4096, MAP_SHARED, device, region(VFIO_PCI_CONFIG_REGION_INDEX)), EINVAL);
  EXPECT_EQ(errno_of(64 << 20, MAP_SHARED, device, region(0)), EINVAL);  // past the BAR
  EXPECT_EQ(errno_of(4096, MAP_SHARED, device, region(0) + 100), EINVAL);
  EXPECT_EQ(errno_of(4096, MAP_SHARED, group, 0), ENODEV);
}

TEST_F(VfioTest, MmioTrapForwardsToHandler) {
  open_all();
  std::vector<std::pair<uint64_t, uint64_t>> seen;
  k.device("a")->set_bar0_write_handler(
      [&](uint64_t off, uint64_t v, unsigned) { seen.emplace_back(off, v); });
  platform::MmioTrap* t = k.mmio_trap(device, VFIO_PCI_BAR0_REGION_INDEX);
  ASSERT_NE(t, nullptr);
  t->on_write(0x2020, 42, 8);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], (std::pair<uint64_t, uint64_t>{0x2020, 42}));
  EXPECT_EQ(k.mmio_trap(device, VFIO_PCI_CONFIG_REGION_INDEX), nullptr);
  EXPECT_EQ(k.mmio_trap(group, 0), nullptr);
  EXPECT_EQ(k.mmio_trap(0, 0), nullptr);  // not the model's: real VFIO has no trap
}

TEST_F(VfioTest, DeviceResetReinitializes) {
  open_all();
  PciDevice* dev = k.device("a");
  int resets = 0;
  dev->set_reset_handler([&] { ++resets; });
  dev->inject_health_fatal(0x1, 0);
  ASSERT_EQ(k.ioctl(device, VFIO_DEVICE_RESET, nullptr), 0);
  EXPECT_EQ(resets, 1);
  EXPECT_EQ(dev->bar0()[prm::init_seg::kHealthSyndOff], std::byte{0});
}

}  // namespace
}  // namespace kbv::sim::test

namespace kbv::sim::test {
namespace {

TEST_F(VfioTest, FirstOpenEnablesAndResetsLastCloseDisables) {
  PciDevice* dev = k.device("a");
  int resets = 0;
  dev->set_reset_handler([&] { ++resets; });
  open_all();
  EXPECT_EQ(resets, 1);  // vfio_pci_core_enable resets the function
  uint16_t cmd = 0;
  ASSERT_EQ(k.pread(device, &cmd, 2, region(VFIO_PCI_CONFIG_REGION_INDEX) + PciConfig::kCommand),
            2);
  EXPECT_EQ(cmd, PciConfig::kCmdMemory);  // memory decoding on, bus mastering left to the driver
  cmd |= PciConfig::kCmdBusMaster;
  ASSERT_EQ(k.pwrite(device, &cmd, 2, region(VFIO_PCI_CONFIG_REGION_INDEX) + PciConfig::kCommand),
            2);
  const int e = ::eventfd(0, EFD_CLOEXEC);
  auto s = irq_set(VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_PCI_MSIX_IRQ_INDEX,
                   0, {e}, 1);
  ASSERT_EQ(k.ioctl(device, VFIO_DEVICE_SET_IRQS, s.data()), 0);
  // A second descriptor of the same device does not reset it again.
  const int d2 = k.ioctl(group, VFIO_GROUP_GET_DEVICE_FD, const_cast<char*>(bdf.c_str()));
  ASSERT_GE(d2, 0);
  EXPECT_EQ(resets, 1);
  EXPECT_EQ(k.close(d2), 0);
  EXPECT_TRUE(dev->bus_master());
  EXPECT_EQ(k.close(device), 0);  // the last one: disabled and reset
  EXPECT_EQ(resets, 2);
  EXPECT_FALSE(dev->bus_master());
  EXPECT_FALSE(dev->msix_enabled());
  EXPECT_FALSE(dev->raise_msix(0));
  ::close(e);
}

}  // namespace
}  // namespace kbv::sim::test
