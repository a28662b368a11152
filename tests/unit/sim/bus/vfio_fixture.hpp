// SPDX-License-Identifier: BSD-3-Clause
// Shared fixture of the emulated VFIO kernel tests: a private sim::Kernel with
// one model device, and the steps a VFIO driver takes to reach it.
#pragma once

#include "sim/bus/vfio_kernel.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/vfio.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <string>

namespace kbv::sim::test {

class VfioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DeviceConfig cfg;
    cfg.init_time = std::chrono::milliseconds(0);
    cfg.health_period = std::chrono::milliseconds(5);
    auto b = k.add_device("a", cfg);
    ASSERT_TRUE(b.has_value());
    bdf = *b;
    group_path = "/dev/vfio/" + std::to_string(k.iommu_group("a"));
  }

  int open_container() { return k.open("/dev/vfio/vfio", O_RDWR); }
  int open_group() { return k.open(group_path.c_str(), O_RDWR); }
  int set_container(int group, int container) {
    return k.ioctl(group, VFIO_GROUP_SET_CONTAINER, &container);
  }
  int set_iommu(int container, unsigned long type = VFIO_TYPE1v2_IOMMU) {
    return k.ioctl(container, VFIO_SET_IOMMU, reinterpret_cast<void*>(type));
  }
  // container + group + TYPE1v2 + device fd; every step asserted.
  void open_all() {
    container = open_container();
    ASSERT_GE(container, 0);
    group = open_group();
    ASSERT_GE(group, 0);
    ASSERT_EQ(set_container(group, container), 0);
    ASSERT_EQ(set_iommu(container), 0);
    device = k.ioctl(group, VFIO_GROUP_GET_DEVICE_FD, const_cast<char*>(bdf.c_str()));
    ASSERT_GE(device, 0);
  }
  // errno of a call expected to fail with -1.
  template <class F>
  int err(F&& f) {
    errno = 0;
    const auto r = f();
    EXPECT_EQ(r, -1);
    return errno;
  }

  Kernel k;
  std::string bdf;
  std::string group_path;
  int container = -1, group = -1, device = -1;
};

}  // namespace kbv::sim::test
