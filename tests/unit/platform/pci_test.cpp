// SPDX-License-Identifier: BSD-3-Clause
// PCI address parsing and sysfs discovery through a fake Sys.
#include "platform/pci.hpp"

#include <gtest/gtest.h>

#include "fake_sys.hpp"

namespace kbv::platform {
namespace {

using test::FakeSys;

TEST(PciAddress, ParsesAndFormatsCanonicalForm) {
  Result<PciAddress> a = PciAddress::parse("0000:3b:00.1");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->domain, 0u);
  EXPECT_EQ(a->bus, 0x3b);
  EXPECT_EQ(a->device, 0);
  EXPECT_EQ(a->function, 1);
  EXPECT_EQ(a->to_string(), "0000:3b:00.1");

  Result<PciAddress> b = PciAddress::parse("10000:AF:1f.7");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->domain, 0x10000u);
  EXPECT_EQ(b->bus, 0xaf);
  EXPECT_EQ(b->device, 0x1f);
  EXPECT_EQ(b->function, 7);
  EXPECT_EQ(b->to_string(), "10000:af:1f.7");
}

TEST(PciAddress, ShortFormMeansDomainZero) {
  Result<PciAddress> a = PciAddress::parse("3b:00.0");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->to_string(), "0000:3b:00.0");
}

TEST(PciAddress, RejectsMalformed) {
  for (const char* s : {"", "3b", "0000:3b:00", "0000:3b:20.0", "0000:3b:00.8", "0000:3b:00.",
                        "0000:3bb:00.0", "x000:3b:00.0", "0:0:3b:00.0", "0000:3b.00:0",
                        "0000:3b:00.0 ", "vfio:0000:3b:00.0", "0000::00.0"}) {
    EXPECT_EQ(PciAddress::parse(s).status(), KBV_ERR_INVALID_ARGUMENT) << "'" << s << "'";
  }
}

TEST(PciDiscovery, ReadsOneDevice) {
  FakeSys sys;
  Result<PciDeviceInfo> info = read_pci_device(sys, *PciAddress::parse(FakeSys::kBdf));
  ASSERT_TRUE(info);
  EXPECT_EQ(info->vendor, 0x15b3);
  EXPECT_EQ(info->device, 0x101b);
  EXPECT_EQ(info->class_code, 0x020700u);
  EXPECT_EQ(info->numa_node, 0);
  EXPECT_EQ(info->driver, "vfio-pci");
  EXPECT_EQ(info->iommu_group, FakeSys::kGroup);
  EXPECT_TRUE(info->usable_with_vfio());
  EXPECT_EQ(sys.open_fds(), 0);
  EXPECT_EQ(read_pci_device(sys, *PciAddress::parse("0000:99:00.0")).status(), KBV_ERR_NOT_FOUND);
}

TEST(PciDiscovery, MalformedAttributesAreIoErrors) {
  FakeSys sys;
  sys.add_file(std::string("/sys/bus/pci/devices/") + FakeSys::kBdf + "/device", "garbage\n");
  EXPECT_EQ(read_pci_device(sys, *PciAddress::parse(FakeSys::kBdf)).status(), KBV_ERR_IO);
  EXPECT_EQ(sys.open_fds(), 0);
}

class Discovery : public ::testing::Test {
 protected:
  void SetUp() override {
    // FakeSys already holds 0000:3b:00.0 (ConnectX, vfio-pci, group 12, node 0).
    sys.add_pci("0000:3b:00.1", 0x15b3, 0x101b, 0x020000, 0, "mlx5_core", 13);  // kernel driver
    sys.add_pci("0000:5e:00.0", 0x15b3, 0x1017, 0x020000, -1, "", 20);          // unbound
    sys.add_pci("0000:00:1f.0", 0x8086, 0xa1c1, 0x060100, -1, "lpc_ich", 1);    // other vendor
    sys.add_pci("0000:af:00.0", 0x15b3, 0xa2d6, 0x060400, 1, "vfio-pci", 30);   // bridge
    sys.add_pci("0000:d8:00.0", 0x15b3, 0x1021, 0x020000, 1, "vfio-pci", -1);   // no IOMMU group
    sys.add_pci("0000:86:00.0", 0x15b3, 0x1019, 0x020700, 1, "vfio-pci", 40);   // second usable
  }
  FakeSys sys;
};

TEST_F(Discovery, ListsOnlyVfioBoundConnectXFunctions) {
  Result<std::vector<PciDeviceInfo>> devs = discover_mlx5_devices(sys);
  ASSERT_TRUE(devs);
  ASSERT_EQ(devs->size(), 2u);
  EXPECT_EQ((*devs)[0].address.to_string(), "0000:3b:00.0");
  EXPECT_EQ((*devs)[1].address.to_string(), "0000:86:00.0");
  EXPECT_EQ((*devs)[1].numa_node, 1);
  EXPECT_EQ((*devs)[1].iommu_group, 40);
  EXPECT_EQ(sys.open_fds(), 0);
}

TEST_F(Discovery, CanIncludeUnusableConnectXFunctions) {
  Result<std::vector<PciDeviceInfo>> devs = discover_mlx5_devices(sys, false);
  ASSERT_TRUE(devs);
  std::vector<std::string> names;
  for (const auto& d : *devs) names.push_back(d.address.to_string());
  EXPECT_EQ(names, (std::vector<std::string>{"0000:3b:00.0", "0000:3b:00.1", "0000:5e:00.0",
                                             "0000:86:00.0", "0000:d8:00.0"}));
  EXPECT_EQ((*devs)[1].driver, "mlx5_core");
  EXPECT_FALSE((*devs)[1].usable_with_vfio());
  EXPECT_EQ((*devs)[2].driver, "");
  EXPECT_EQ((*devs)[2].numa_node, -1);
  EXPECT_EQ((*devs)[4].iommu_group, -1);
  EXPECT_FALSE((*devs)[4].usable_with_vfio());
}

TEST_F(Discovery, SkipsUnreadableDevicesAndNonAddresses) {
  sys.add_file("/sys/bus/pci/devices/not-an-address/vendor", "0x15b3\n");
  sys.remove("/sys/bus/pci/devices/0000:86:00.0/class");
  Result<std::vector<PciDeviceInfo>> devs = discover_mlx5_devices(sys);
  ASSERT_TRUE(devs);
  ASSERT_EQ(devs->size(), 1u);
  EXPECT_EQ((*devs)[0].address.to_string(), "0000:3b:00.0");
}

TEST(PciDiscoveryErrors, MissingSysfsIsNotFound) {
  FakeSys sys;
  sys.remove(std::string("/sys/bus/pci/devices/") + FakeSys::kBdf + "/vendor");
  sys.remove(std::string("/sys/bus/pci/devices/") + FakeSys::kBdf + "/device");
  sys.remove(std::string("/sys/bus/pci/devices/") + FakeSys::kBdf + "/class");
  sys.remove(std::string("/sys/bus/pci/devices/") + FakeSys::kBdf + "/numa_node");
  sys.remove(std::string("/sys/bus/pci/devices/") + FakeSys::kBdf + "/driver");
  sys.remove(std::string("/sys/bus/pci/devices/") + FakeSys::kBdf + "/iommu_group");
  EXPECT_EQ(discover_mlx5_devices(sys).status(), KBV_ERR_NOT_FOUND);
}

}  // namespace
}  // namespace kbv::platform

namespace kbv::platform {
namespace {

// The real sysfs of the build machine: discovery must work (or report a
// missing /sys/bus/pci in a container) and every entry it returns must be a
// usable ConnectX function. No hardware is required: an empty list passes.
TEST(PciDiscoveryRealSys, ScansTheRealSysfs) {
  Result<std::vector<PciDeviceInfo>> devs = discover_mlx5_devices(real_sys());
  if (!devs) {
    EXPECT_EQ(devs.status(), KBV_ERR_NOT_FOUND) << devs.status().to_string();
    return;
  }
  for (const PciDeviceInfo& d : *devs) {
    EXPECT_EQ(d.vendor, kPciVendorMellanox);
    EXPECT_TRUE(d.usable_with_vfio());
  }
}

}  // namespace
}  // namespace kbv::platform
