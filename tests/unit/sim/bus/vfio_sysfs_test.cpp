// SPDX-License-Identifier: BSD-3-Clause
// sim::Kernel sysfs answers (src/sim/bus/vfio_sysfs.cpp): attribute files, links,
// directory listings merged with the real system's.
#include "vfio_fixture.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

namespace kbv::sim::test {
namespace {

std::string read_attr(Kernel& k, const std::string& path) {
  const int fd = k.open(path.c_str(), O_RDONLY);
  if (fd < 0) return "<open failed>";
  char buf[64] = {};
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  k.close(fd);
  return n < 0 ? "<read failed>" : std::string(buf, static_cast<size_t>(n));
}

std::string link(Kernel& k, const std::string& path) {
  char buf[256];
  const ssize_t n = k.readlink(path.c_str(), buf, sizeof buf);
  return n < 0 ? "<error>" : std::string(buf, static_cast<size_t>(n));
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST_F(VfioTest, SysfsAttributes) {
  const std::string dev = "/sys/bus/pci/devices/" + bdf + "/";
  EXPECT_EQ(read_attr(k, dev + "vendor"), "0x15b3\n");
  EXPECT_EQ(read_attr(k, dev + "device"), "0x1017\n");
  EXPECT_EQ(read_attr(k, dev + "class"), "0x020000\n");
  EXPECT_EQ(read_attr(k, dev + "subsystem_vendor"), "0x15b3\n");
  EXPECT_EQ(read_attr(k, dev + "subsystem_device"), "0x0007\n");
  EXPECT_EQ(read_attr(k, dev + "numa_node"), "-1\n");
  EXPECT_EQ(read_attr(k, "/sys/devices/pcifffe:00/" + bdf + "/vendor"), "0x15b3\n");
  EXPECT_EQ(read_attr(k, "/sys/bus/pci/devices//" + bdf + "/vendor/"), "0x15b3\n");
  const int cfg = k.open((dev + "config").c_str(), O_RDONLY);
  ASSERT_GE(cfg, 0);
  uint8_t hdr[4];
  ASSERT_EQ(::read(cfg, hdr, 4), 4);
  EXPECT_EQ(hdr[0], 0xb3);
  EXPECT_EQ(hdr[1], 0x15);
  k.close(cfg);
  EXPECT_EQ(err([&] { return k.open((dev + "vendor").c_str(), O_WRONLY); }), EACCES);
  EXPECT_EQ(err([&] { return k.open((dev + "nonesuch").c_str(), O_RDONLY); }), ENOENT);
  EXPECT_EQ(err([&] { return k.open("/sys/bus/pci/devices/fffe:00:1f.0/vendor", O_RDONLY); }),
            ENOENT);  // not a model device: the real sysfs has none either
}

TEST_F(VfioTest, SysfsLinks) {
  const std::string dev = "/sys/bus/pci/devices/" + bdf;
  const int g = k.iommu_group("a");
  EXPECT_EQ(link(k, dev + "/driver"), "../../../bus/pci/drivers/vfio-pci");
  EXPECT_EQ(link(k, dev + "/iommu_group"), "../../../kernel/iommu_groups/" + std::to_string(g));
  EXPECT_EQ(link(k, dev), "../../../devices/pcifffe:00/" + bdf);
  EXPECT_EQ(link(k, "/sys/kernel/iommu_groups/" + std::to_string(g) + "/devices/" + bdf),
            "../../../../devices/pcifffe:00/" + bdf);
  char small[8];
  ASSERT_EQ(k.readlink((dev + "/driver").c_str(), small, sizeof small), 8);  // truncated, no NUL
  EXPECT_EQ(std::string(small, 8), "../../..");
  EXPECT_EQ(err([&] {
              char b[8];
              return k.readlink((dev + "/vendor").c_str(), b, sizeof b);
            }),
            EINVAL);  // not a link
  EXPECT_EQ(err([&] {
              char b[8];
              return k.readlink((dev + "/nope").c_str(), b, sizeof b);
            }),
            ENOENT);
}

TEST_F(VfioTest, SysfsListings) {
  std::vector<std::string> names;
  ASSERT_EQ(k.list_dir("/sys/bus/pci/devices", names), 0);
  EXPECT_TRUE(contains(names, bdf));
  const std::string g = std::to_string(k.iommu_group("a"));
  ASSERT_EQ(k.list_dir("/sys/kernel/iommu_groups", names), 0);
  EXPECT_TRUE(contains(names, g));
  ASSERT_EQ(k.list_dir(("/sys/kernel/iommu_groups/" + g + "/devices").c_str(), names), 0);
  EXPECT_EQ(names, std::vector<std::string>{bdf});
  ASSERT_EQ(k.list_dir(("/sys/bus/pci/devices/" + bdf).c_str(), names), 0);
  EXPECT_TRUE(contains(names, "vendor"));
  EXPECT_TRUE(contains(names, "iommu_group"));
  EXPECT_TRUE(contains(names, "driver"));
  ASSERT_EQ(k.list_dir("/dev/vfio", names), 0);
  EXPECT_TRUE(contains(names, g));
  EXPECT_TRUE(contains(names, "vfio"));
  EXPECT_EQ(
      err([&] { return k.list_dir(("/sys/bus/pci/devices/" + bdf + "/vendor").c_str(), names); }),
      ENOTDIR);
  // Paths that are not the model's go to the real system.
  ASSERT_EQ(k.list_dir("/proc/self/fd", names), 0);
  EXPECT_FALSE(names.empty());
  EXPECT_EQ(err([&] { return k.list_dir("/nonexistent-kbv-dir", names); }), ENOENT);
}

TEST_F(VfioTest, OwnsPath) {
  EXPECT_TRUE(k.owns_path("/dev/vfio/vfio"));
  EXPECT_TRUE(k.owns_path(group_path.c_str()));
  EXPECT_FALSE(k.owns_path("/dev/vfio/1"));
  EXPECT_TRUE(k.owns_path(("/sys/bus/pci/devices/" + bdf + "/iommu_group").c_str()));
  EXPECT_FALSE(k.owns_path("/sys/bus/pci/devices/0000:00:00.0/vendor"));
  EXPECT_TRUE(k.owns_path("/sys/bus/pci/devices"));
  EXPECT_FALSE(k.owns_path("/etc/passwd"));
  EXPECT_TRUE(k.owns_path("/sys/module/vfio"));
  EXPECT_TRUE(k.owns_path("/sys/module/vfio_pci"));
  EXPECT_FALSE(k.owns_path("/sys/module/vfio_pci/parameters"));
  EXPECT_FALSE(k.owns_path("/sys/module/kvm"));
}

// The vfio modules' sysfs directories (DPDK's rte_eal_check_module stats
// /sys/module/vfio) while a function is bound to vfio-pci, and vfio's
// noiommu parameter ("N": the model has an IOMMU).
TEST_F(VfioTest, SysfsModules) {
  struct ::stat st;
  ASSERT_EQ(k.stat_path("/sys/module/vfio", &st, true), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  ASSERT_EQ(k.stat_path("/sys/module/vfio_iommu_type1", &st, true), 0);
  const char* param = "/sys/module/vfio/parameters/enable_unsafe_noiommu_mode";
  ASSERT_EQ(k.stat_path(param, &st, true), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  const int fd = k.open(param, O_RDONLY);
  ASSERT_GE(fd, 0);
  char c[4] = {};
  EXPECT_EQ(k.read(fd, c, sizeof c), 2);
  EXPECT_STREQ(c, "N\n");
  k.close(fd);
  EXPECT_EQ(err([&] { return k.open(param, O_WRONLY); }), EACCES);
  std::vector<std::string> names;
  ASSERT_EQ(k.list_dir("/sys/module", names), 0);
  EXPECT_NE(std::find(names.begin(), names.end(), "vfio_pci"), names.end());
  ASSERT_EQ(k.list_dir("/sys/module/vfio/parameters", names), 0);
  EXPECT_EQ(names, std::vector<std::string>{"enable_unsafe_noiommu_mode"});
  // No function on vfio-pci: no vfio modules.
  ASSERT_TRUE(k.bind_driver("a", "").is_ok());
  EXPECT_FALSE(k.owns_path("/sys/module/vfio"));
  EXPECT_EQ(err([&] { return k.stat_path("/sys/module/vfio", &st, true); }), ENOENT);
}

}  // namespace
}  // namespace kbv::sim::test

namespace kbv::sim::test {
namespace {

TEST_F(VfioTest, StatPath) {
  struct ::stat st;
  const std::string dev = "/sys/bus/pci/devices/" + bdf;
  ASSERT_EQ(k.stat_path(dev.c_str(), &st, true), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  ASSERT_EQ(k.stat_path(dev.c_str(), &st, false), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));  // /sys/bus/pci/devices/<bdf> is a link
  ASSERT_EQ(k.stat_path(("/sys/devices/pcifffe:00/" + bdf).c_str(), &st, false), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  ASSERT_EQ(k.stat_path((dev + "/vendor").c_str(), &st, true), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0444u);
  ASSERT_EQ(k.stat_path((dev + "/iommu_group").c_str(), &st, false), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  ASSERT_EQ(k.stat_path(group_path.c_str(), &st, true), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  ASSERT_EQ(k.stat_path("/dev/vfio/vfio", &st, true), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  const std::string g = "/sys/kernel/iommu_groups/" + std::to_string(k.iommu_group("a"));
  ASSERT_EQ(k.stat_path((g + "/devices").c_str(), &st, true), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(err([&] { return k.stat_path((dev + "/nope").c_str(), &st, true); }), ENOENT);
  EXPECT_EQ(err([&] { return k.stat_path("/dev/vfio/1", &st, true); }), ENOENT);
  EXPECT_EQ(err([&] { return k.stat_path(nullptr, &st, true); }), EFAULT);
}

}  // namespace
}  // namespace kbv::sim::test
