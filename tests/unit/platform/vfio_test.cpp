// SPDX-License-Identifier: BSD-3-Clause
// VfioDevice against the fake VFIO kernel: open sequence, every failure path
// (right status, no leaked descriptors or mappings), config space, MSI-X,
// reset, DMA map/unmap and the IOVA capability chain.
#include "platform/vfio.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "fake_sys.hpp"

namespace kbv::platform {
namespace {

using test::FakeSys;

bool fd_is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

std::unique_ptr<VfioDevice> open_ok(FakeSys& sys) {
  Result<std::unique_ptr<VfioDevice>> d = VfioDevice::open(sys, FakeSys::kBdf);
  EXPECT_TRUE(d) << d.status().to_string();
  return d ? std::move(*d) : nullptr;
}

TEST(VfioOpen, FollowsTheType1SequenceAndClosesEverything) {
  FakeSys sys;
  {
    std::unique_ptr<VfioDevice> d = open_ok(sys);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(sys.open_fds(), 3);  // container, group, device
    EXPECT_GE(d->container_fd(), 0);
    EXPECT_GE(d->group_fd(), 0);
    EXPECT_GE(d->device_fd(), 0);
    EXPECT_EQ(d->bdf(), FakeSys::kBdf);
    EXPECT_EQ(d->pci().numa_node, 0);

    const std::vector<std::string> want = {"VFIO_GET_API_VERSION",
                                           "VFIO_CHECK_EXTENSION",
                                           "VFIO_GROUP_GET_STATUS",
                                           "VFIO_GROUP_SET_CONTAINER",
                                           "VFIO_SET_IOMMU",
                                           "VFIO_IOMMU_GET_INFO",
                                           "VFIO_IOMMU_GET_INFO",
                                           "VFIO_GROUP_GET_DEVICE_FD",
                                           "VFIO_DEVICE_GET_INFO",
                                           "VFIO_DEVICE_GET_REGION_INFO",
                                           "VFIO_DEVICE_GET_REGION_INFO",
                                           "VFIO_DEVICE_GET_IRQ_INFO"};
    EXPECT_EQ(sys.calls, want);

    EXPECT_TRUE(sys.bar0_mapped);
    EXPECT_EQ(d->bar0().base(), sys.bar0());
    EXPECT_EQ(d->bar0().size(), sys.bar0_size);
    EXPECT_EQ(d->bar0().trap(), &sys.trap);
    EXPECT_EQ(d->config_region().offset, FakeSys::kConfigOffset);
    EXPECT_EQ(d->msix_vector_count(), 8u);
    EXPECT_EQ(d->msix_enabled_count(), 0u);
    EXPECT_EQ(sys.set_irqs_calls, 0);  // open enables nothing

    ASSERT_TRUE(d->iova_ranges_reported());
    ASSERT_EQ(d->iova_ranges().size(), 2u);
    EXPECT_EQ(d->iova_ranges()[1].start, 0x100000000ull);
    EXPECT_EQ(d->iova_ranges()[1].end, 0xFFFFFFFFFFFFull);
    EXPECT_EQ(d->iova_page_size(), 4096u);
    EXPECT_EQ(d->dma_mappings_available_at_open(), 65535);
  }
  EXPECT_EQ(sys.open_fds(), 0);
  EXPECT_FALSE(sys.bar0_mapped);
  EXPECT_EQ(sys.bad_closes, 0);
}

TEST(VfioOpen, BarStoresReachTheTrap) {
  FakeSys sys;
  std::unique_ptr<VfioDevice> d = open_ok(sys);
  ASSERT_NE(d, nullptr);
  d->bar0().write32_be(0x18, 1);
  ASSERT_EQ(sys.trap.writes.size(), 1u);
  EXPECT_EQ(sys.trap.writes[0].offset, 0x18u);
  EXPECT_EQ(sys.bar0()[0x1b], 1);
}

TEST(VfioOpen, WithoutTrapTheBarHasNone) {
  FakeSys sys;
  sys.provide_trap = false;
  std::unique_ptr<VfioDevice> d = open_ok(sys);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->bar0().trap(), nullptr);
}

struct OpenFailure {
  const char* name;
  void (*setup)(FakeSys&);
  kbv_status_t want;
};

class VfioOpenFailure : public ::testing::TestWithParam<OpenFailure> {};

TEST_P(VfioOpenFailure, ReturnsStatusAndLeaksNothing) {
  FakeSys sys;
  GetParam().setup(sys);
  Result<std::unique_ptr<VfioDevice>> d = VfioDevice::open(sys, FakeSys::kBdf);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.status(), GetParam().want) << d.status().to_string();
  EXPECT_EQ(sys.open_fds(), 0);
  EXPECT_FALSE(sys.bar0_mapped);
  EXPECT_EQ(sys.bad_closes, 0);
}

std::string dev_path(const char* leaf) {
  return std::string("/sys/bus/pci/devices/") + FakeSys::kBdf + "/" + leaf;
}

const OpenFailure kFailures[] = {
    {"NotInSysfs", [](FakeSys& s) { s.remove(dev_path("vendor")); }, KBV_ERR_NOT_FOUND},
    {"BoundToKernelDriver",
     [](FakeSys& s) { s.add_pci(FakeSys::kBdf, 0x15b3, 0x101b, 0x020000, 0, "mlx5_core", 12); },
     KBV_ERR_INVALID_STATE},
    {"Unbound", [](FakeSys& s) { s.remove(dev_path("driver")); }, KBV_ERR_INVALID_STATE},
    {"NoIommuGroup", [](FakeSys& s) { s.remove(dev_path("iommu_group")); }, KBV_ERR_INVALID_STATE},
    {"NoVfioModule", [](FakeSys& s) { s.fail_open["/dev/vfio/vfio"] = ENOENT; }, KBV_ERR_NOT_FOUND},
    {"ApiVersionMismatch", [](FakeSys& s) { s.api_version = 1; }, KBV_ERR_NOT_SUPPORTED},
    {"ApiVersionIoctlFails", [](FakeSys& s) { s.fail_ioctl[VFIO_GET_API_VERSION] = ENOTTY; },
     KBV_ERR_NOT_SUPPORTED},
    {"NoType1v2", [](FakeSys& s) { s.type1v2 = false; }, KBV_ERR_NOT_SUPPORTED},
    {"GroupBusy", [](FakeSys& s) { s.fail_open["/dev/vfio/12"] = EBUSY; }, KBV_ERR_BUSY},
    {"GroupPermission", [](FakeSys& s) { s.fail_open["/dev/vfio/12"] = EACCES; },
     KBV_ERR_ACCESS_DENIED},
    {"GroupStatusFails", [](FakeSys& s) { s.fail_ioctl[VFIO_GROUP_GET_STATUS] = EINVAL; },
     KBV_ERR_INVALID_ARGUMENT},
    {"GroupNotViable", [](FakeSys& s) { s.viable = false; }, KBV_ERR_INVALID_STATE},
    {"SetContainerFails", [](FakeSys& s) { s.fail_ioctl[VFIO_GROUP_SET_CONTAINER] = EBUSY; },
     KBV_ERR_BUSY},
    {"SetIommuFails", [](FakeSys& s) { s.fail_ioctl[VFIO_SET_IOMMU] = EPERM; },
     KBV_ERR_ACCESS_DENIED},
    {"IommuInfoFails", [](FakeSys& s) { s.fail_ioctl[VFIO_IOMMU_GET_INFO] = EINVAL; },
     KBV_ERR_INVALID_ARGUMENT},
    {"CapChainLoops", [](FakeSys& s) { s.corrupt_cap_chain = true; }, KBV_ERR_IO},
    {"NoUsableIova", [](FakeSys& s) { s.ranges.clear(); }, KBV_ERR_NO_RESOURCES},
    {"GetDeviceFdFails", [](FakeSys& s) { s.fail_ioctl[VFIO_GROUP_GET_DEVICE_FD] = ENODEV; },
     KBV_ERR_DEVICE_REMOVED},
    {"DeviceInfoFails", [](FakeSys& s) { s.fail_ioctl[VFIO_DEVICE_GET_INFO] = EFAULT; },
     KBV_ERR_IOMMU_FAULT},
    {"NotPciDevice", [](FakeSys& s) { s.device_flags = VFIO_DEVICE_FLAGS_PLATFORM; },
     KBV_ERR_NOT_SUPPORTED},
    {"TooFewRegions", [](FakeSys& s) { s.num_regions = 1; }, KBV_ERR_NOT_SUPPORTED},
    {"RegionInfoFails", [](FakeSys& s) { s.fail_ioctl[VFIO_DEVICE_GET_REGION_INFO] = EINVAL; },
     KBV_ERR_INVALID_ARGUMENT},
    {"ConfigNotWritable", [](FakeSys& s) { s.config_flags = VFIO_REGION_INFO_FLAG_READ; },
     KBV_ERR_NOT_SUPPORTED},
    {"Bar0Empty", [](FakeSys& s) { s.bar0_size = 0; }, KBV_ERR_IO},
    {"Bar0NotMmapable",
     [](FakeSys& s) { s.bar0_flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE; },
     KBV_ERR_NOT_SUPPORTED},
    {"Bar0MmapFails", [](FakeSys& s) { s.mmap_fails = true; }, KBV_ERR_INVALID_ARGUMENT},
    {"IrqInfoFails", [](FakeSys& s) { s.fail_ioctl[VFIO_DEVICE_GET_IRQ_INFO] = EIO; }, KBV_ERR_IO},
};

INSTANTIATE_TEST_SUITE_P(AllSteps, VfioOpenFailure, ::testing::ValuesIn(kFailures),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(VfioOpen, RejectsBadAddress) {
  FakeSys sys;
  EXPECT_EQ(VfioDevice::open(sys, "not-a-bdf").status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(sys.open_fds(), 0);
}

TEST(VfioIommuInfo, DefaultRangesWhenKernelReportsNone) {
  FakeSys sys;
  sys.report_iova_caps = false;
  std::unique_ptr<VfioDevice> d = open_ok(sys);
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->iova_ranges_reported());
  EXPECT_EQ(d->dma_mappings_available_at_open(), -1);
  ASSERT_EQ(d->iova_ranges().size(), 2u);
  // The default never covers IOVA 0 nor the x86 MSI window.
  for (const IovaRange& r : d->iova_ranges()) {
    EXPECT_GT(r.start, 0u);
    EXPECT_FALSE(r.start <= 0xFEE00000ull && 0xFEE00000ull <= r.end);
  }
}

TEST(VfioIommuInfo, SmallestIommuPageFromPgsizes) {
  FakeSys sys;
  sys.iova_pgsizes = (1ull << 16) | (1ull << 29);  // 64 KiB | 512 MiB
  std::unique_ptr<VfioDevice> d = open_ok(sys);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->iova_page_size(), 1u << 16);
}

TEST(VfioConfig, ReadWriteAndBusMaster) {
  FakeSys sys;
  std::unique_ptr<VfioDevice> d = open_ok(sys);
  ASSERT_NE(d, nullptr);
  Result<uint16_t> vendor = d->config_read16(0);
  ASSERT_TRUE(vendor);
  EXPECT_EQ(*vendor, 0x15b3);
  sys.config[4] = 0x40;  // an unrelated command bit stays set
  ASSERT_TRUE(d->enable_bus_master());
  EXPECT_EQ(sys.config[4], 0x40 | 0x06);
  ASSERT_TRUE(d->disable_bus_master());
  EXPECT_EQ(sys.config[4], 0x40 | 0x02);
  EXPECT_EQ(d->config_write16(0x3c, 0xbeef), Status::ok());
  EXPECT_EQ(sys.config[0x3c], 0xef);
  EXPECT_EQ(sys.config[0x3d], 0xbe);
  unsigned char buf[4];
  EXPECT_EQ(d->config_read(255, buf, 2), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(d->config_read(0x1000, buf, 1), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(d->config_write(0xffffffffu, buf, 4), KBV_ERR_INVALID_ARGUMENT);
}

TEST(VfioMsix, EnableCreatesEventfdsAndDisableClosesThem) {
  FakeSys sys;
  std::vector<int> fds;
  {
    std::unique_ptr<VfioDevice> d = open_ok(sys);
    ASSERT_NE(d, nullptr);
    ASSERT_TRUE(d->enable_msix(3));
    ASSERT_EQ(d->msix_enabled_count(), 3u);
    ASSERT_EQ(sys.msix_fds.size(), 3u);
    for (uint32_t v = 0; v < 3; ++v) {
      EXPECT_EQ(sys.msix_fds[v], d->msix_eventfd(v));
      EXPECT_TRUE(fd_is_open(d->msix_eventfd(v)));
    }
    EXPECT_EQ(d->msix_eventfd(3), -1);
    // The registered fd is a live eventfd: a "vector" fired by the device
    // (here: written by the test, as the model does) is readable.
    const uint64_t one = 1;
    ASSERT_EQ(::write(sys.msix_fds[1], &one, sizeof one), 8);
    uint64_t got = 0;
    ASSERT_EQ(::read(d->msix_eventfd(1), &got, sizeof got), 8);
    EXPECT_EQ(got, 1u);

    fds = sys.msix_fds;
    ASSERT_TRUE(d->disable_msix());
    EXPECT_TRUE(sys.msix_fds.empty());
    EXPECT_EQ(d->msix_enabled_count(), 0u);
    for (int fd : fds) EXPECT_FALSE(fd_is_open(fd));

    // Re-enable with a different count, then let the destructor clean up.
    ASSERT_TRUE(d->enable_msix(2));
    ASSERT_TRUE(d->enable_msix(4));  // disables the 2 first
    EXPECT_EQ(sys.msix_fds.size(), 4u);
    fds = sys.msix_fds;
  }
  EXPECT_TRUE(sys.msix_fds.empty());
  for (int fd : fds) EXPECT_FALSE(fd_is_open(fd));
  EXPECT_EQ(sys.open_fds(), 0);
}

TEST(VfioMsix, BadCountsAndIoctlFailureLeakNothing) {
  FakeSys sys;
  std::unique_ptr<VfioDevice> d = open_ok(sys);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->enable_msix(0), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(d->enable_msix(9), KBV_ERR_INVALID_ARGUMENT);
  // Probe which descriptor number the next eventfd gets, then check the
  // failed enable closed all it created.
  const int probe = ::eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(probe, 0);
  ::close(probe);
  sys.fail_ioctl[VFIO_DEVICE_SET_IRQS] = EINVAL;
  EXPECT_EQ(d->enable_msix(2), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(d->msix_enabled_count(), 0u);
  EXPECT_FALSE(fd_is_open(probe));
  EXPECT_FALSE(fd_is_open(probe + 1));
}

TEST(VfioMsix, DeviceWithoutEventfdMsixOffersNoVectors) {
  FakeSys sys;
  sys.msix_flags = 0;
  std::unique_ptr<VfioDevice> d = open_ok(sys);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->msix_vector_count(), 0u);
  EXPECT_EQ(d->enable_msix(1), KBV_ERR_INVALID_ARGUMENT);
}

TEST(VfioReset, ResetWhenSupported) {
  FakeSys sys;
  std::unique_ptr<VfioDevice> d = open_ok(sys);
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(d->reset());
  EXPECT_EQ(sys.reset_count, 1);
  EXPECT_TRUE(sys.bar0_mapped);
  sys.fail_ioctl[VFIO_DEVICE_RESET] = EIO;
  EXPECT_EQ(d->reset(), KBV_ERR_IO);
}

TEST(VfioReset, UnsupportedResetIsAnError) {
  FakeSys sys;
  sys.device_flags = VFIO_DEVICE_FLAGS_PCI;
  std::unique_ptr<VfioDevice> d = open_ok(sys);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->reset(), KBV_ERR_NOT_SUPPORTED);
  EXPECT_EQ(sys.reset_count, 0);
}

TEST(VfioDma, MapAndUnmap) {
  FakeSys sys;
  std::unique_ptr<VfioDevice> d = open_ok(sys);
  ASSERT_NE(d, nullptr);
  void* mem = std::aligned_alloc(4096, 8192);
  ASSERT_NE(mem, nullptr);
  ASSERT_TRUE(d->dma_map(mem, 0x100000000ull, 8192, kDmaReadWrite));
  ASSERT_EQ(sys.dma.count(0x100000000ull), 1u);
  EXPECT_EQ(sys.dma[0x100000000ull].vaddr, reinterpret_cast<uintptr_t>(mem));
  EXPECT_EQ(sys.dma[0x100000000ull].flags, VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE);
  // Overlap and out-of-range are the kernel's errors, passed through.
  EXPECT_EQ(d->dma_map(mem, 0x100001000ull, 4096, kDmaDeviceRead), KBV_ERR_ALREADY_EXISTS);
  EXPECT_EQ(d->dma_map(mem, 0xFF000000ull, 4096, kDmaDeviceRead), KBV_ERR_INVALID_ARGUMENT);
  // Misaligned or empty requests never reach the kernel.
  EXPECT_EQ(d->dma_map(static_cast<char*>(mem) + 8, 0x200000000ull, 4096, kDmaReadWrite),
            KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(d->dma_map(mem, 0x200000000ull, 0, kDmaReadWrite), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(d->dma_map(mem, 0x200000000ull, 4096, 0), KBV_ERR_INVALID_ARGUMENT);
  ASSERT_TRUE(d->dma_map(mem, 0x200000000ull, 4096, kDmaDeviceRead));
  EXPECT_EQ(sys.dma[0x200000000ull].flags, VFIO_DMA_MAP_FLAG_READ);

  ASSERT_TRUE(d->dma_unmap(0x100000000ull, 8192));
  EXPECT_EQ(sys.dma.count(0x100000000ull), 0u);
  // Nothing there any more: the kernel unmaps 0 bytes, which is an error.
  EXPECT_EQ(d->dma_unmap(0x100000000ull, 8192), KBV_ERR_IO);
  sys.unmap_short_by = 4096;
  EXPECT_EQ(d->dma_unmap(0x200000000ull, 4096), KBV_ERR_IO);
  std::free(mem);
}

}  // namespace
}  // namespace kbv::platform

namespace kbv::platform {
namespace {

// On the build machine (no HCA bound to vfio-pci) opening a function that is
// not a vfio-pci device fails cleanly with an error status.
TEST(VfioRealSys, OpeningANonVfioFunctionFails) {
  Result<std::unique_ptr<VfioDevice>> d = VfioDevice::open(real_sys(), "ffff:ff:1f.7");
  ASSERT_FALSE(d);
  EXPECT_EQ(d.status(), KBV_ERR_NOT_FOUND);
}

}  // namespace
}  // namespace kbv::platform
