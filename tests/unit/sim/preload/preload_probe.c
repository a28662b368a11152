/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * preload_probe: an unmodified VFIO program (libc + linux/vfio.h only) run
 * under LD_PRELOAD=libkbv-sim-preload.so with KBV_SIM_DEVICES=2. It finds a
 * Mellanox function bound to vfio-pci in sysfs, follows its iommu_group link,
 * opens the container, group and device, maps BAR0 and checks the init
 * segment's command interface revision (5, docs/PRM.md) — the steps rdma-core's
 * providers/mlx5/mlx5_vfio.c takes. Then, as a driver's first command, it
 * maps a command queue page with VFIO_IOMMU_MAP_DMA, enables bus mastering,
 * waits for `initializing` to clear, writes the queue address and runs
 * ENABLE_HCA (opcode 0x104) through slot 0 (docs/PRM.md "Command queue entry";
 * mlx5_ifc.h enable_hca_in/out are 16 bytes each). Exit 0 on success; each
 * failed check prints a line and makes the exit status 1.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/vfio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                           \
  do {                                                             \
    if (!(cond)) {                                                 \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);         \
      fprintf(stderr, __VA_ARGS__);                                \
      fprintf(stderr, " (errno %d %s)\n", errno, strerror(errno)); \
      failures++;                                                  \
    }                                                              \
  } while (0)

static uint32_t be32(uint32_t v) { return __builtin_bswap32(v); }

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ENABLE_HCA through command queue slot 0; returns 0 when it completed OK. */
static int run_enable_hca(int container, int device, off_t cfg_off, volatile uint32_t* regs) {
  /* Bus master + memory space (PCI command register bits 2 and 1). */
  uint16_t cmd = 0;
  CHECK(pread(device, &cmd, 2, cfg_off + 4) == 2, "read command register");
  cmd |= 0x6;
  CHECK(pwrite(device, &cmd, 2, cfg_off + 4) == 2, "enable bus master");

  /* Wait for `initializing` (0x1FC bit 31) to clear. */
  double until = now_s() + 5.0;
  while ((be32(regs[0x1FC / 4]) >> 31) && now_s() < until) usleep(1000);
  CHECK(!(be32(regs[0x1FC / 4]) >> 31), "device still initializing");

  const uint32_t l_sz = be32(regs[0x14 / 4]);
  const unsigned log_stride = l_sz & 0xF;
  CHECK((l_sz >> 4 & 0xF) <= 5 && log_stride >= 6, "cmdq geometry %#x", l_sz);

  /* One page for the queue, mapped for device read/write at IOVA 0x10000. */
  uint8_t* q = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(q != MAP_FAILED, "mmap queue page");
  if (q == MAP_FAILED) return -1;
  memset(q, 0, 4096);
  struct vfio_iommu_type1_dma_map map = {.argsz = sizeof map,
                                         .flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
                                         .vaddr = (uintptr_t)q,
                                         .iova = 0x10000,
                                         .size = 4096};
  CHECK(ioctl(container, VFIO_IOMMU_MAP_DMA, &map) == 0, "MAP_DMA");

  regs[0x10 / 4] = be32(0);       /* cmdq_addr_h */
  regs[0x14 / 4] = be32(0x10000); /* cmdq_addr_l_sz: low address bits */

  /* Slot 0 entry: type 7, lengths, inline ENABLE_HCA input, token, ownership. */
  volatile uint8_t* e = q;
  e[0x00] = 7;
  *(volatile uint32_t*)(e + 0x04) = be32(16);
  *(volatile uint32_t*)(e + 0x38) = be32(16);
  e[0x10] = 0x01; /* opcode 0x104, big-endian */
  e[0x11] = 0x04;
  e[0x3C] = 0x5A; /* token */
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  e[0x3F] = 1; /* owned by firmware */
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  regs[0x18 / 4] = be32(1u << 0); /* cmd_dbell */

  until = now_s() + 5.0;
  while ((e[0x3F] & 1) && now_s() < until) usleep(200);
  CHECK(!(e[0x3F] & 1), "ENABLE_HCA not completed (status_own %#x)", e[0x3F]);
  CHECK((e[0x3F] >> 1) == 0, "delivery status %#x", e[0x3F] >> 1);
  CHECK(e[0x20] == 0, "ENABLE_HCA status %#x", e[0x20]);
  CHECK(e[0x3C] == 0x5A, "token kept");

  struct vfio_iommu_type1_dma_unmap unmap = {.argsz = sizeof unmap, .iova = 0x10000, .size = 4096};
  CHECK(ioctl(container, VFIO_IOMMU_UNMAP_DMA, &unmap) == 0 && unmap.size == 4096, "UNMAP_DMA");
  munmap(q, 4096);
  return 0;
}

static int read_attr(const char* bdf, const char* attr, char* out, size_t n) {
  char path[256];
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%.63s/%.63s", bdf, attr);
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  ssize_t r = read(fd, out, n - 1);
  close(fd);
  if (r < 0) return -1;
  out[r] = '\0';
  return 0;
}

int main(void) {
  /* 1. Find a 15b3 device in sysfs. */
  char bdf[64] = "";
  int models = 0;
  DIR* d = opendir("/sys/bus/pci/devices");
  CHECK(d != NULL, "opendir /sys/bus/pci/devices");
  if (!d) return 1;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    char vendor[32];
    if (e->d_name[0] == '.') continue;
    if (read_attr(e->d_name, "vendor", vendor, sizeof vendor) == 0 &&
        strcmp(vendor, "0x15b3\n") == 0 && strncmp(e->d_name, "fffe:", 5) == 0) {
      if (!bdf[0]) snprintf(bdf, sizeof bdf, "%.63s", e->d_name);
      models++;
    }
  }
  closedir(d);
  CHECK(models == 2, "expected 2 model devices, found %d", models);
  if (!bdf[0]) return 1;

  /* stdio reads sysfs too (DPDK's eal_parse_sysfs_value does). */
  char path[256];
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/device", bdf);
  FILE* fp = fopen(path, "r");
  CHECK(fp != NULL, "fopen %s", path);
  if (fp) {
    unsigned long dev_id = 0;
    CHECK(fscanf(fp, "%lx", &dev_id) == 1 && dev_id == 0x1017, "device id %#lx", dev_id);
    fclose(fp);
  }

  char driver[256];
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/driver", bdf);
  ssize_t n = readlink(path, driver, sizeof driver - 1);
  CHECK(n > 0, "readlink driver");
  if (n > 0) {
    driver[n] = '\0';
    CHECK(strcmp(strrchr(driver, '/') + 1, "vfio-pci") == 0, "driver is %s", driver);
  }

  /* rdma-core's mlx5_vfio stats the device directory and the group node. */
  struct stat sb;
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/", bdf);
  CHECK(stat(path, &sb) == 0 && S_ISDIR(sb.st_mode), "stat %s", path);
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s", bdf);
  CHECK(lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode), "lstat %s", path);

  /* 2. iommu_group link -> group number. */
  char link[256];
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/iommu_group", bdf);
  n = readlink(path, link, sizeof link - 1);
  CHECK(n > 0, "readlink iommu_group");
  if (n <= 0) return 1;
  link[n] = '\0';
  int group_no = atoi(strrchr(link, '/') + 1);
  CHECK(group_no > 0, "group number from %s", link);

  /* The group lists the device. */
  snprintf(path, sizeof path, "/sys/kernel/iommu_groups/%d/devices", group_no);
  d = opendir(path);
  CHECK(d != NULL, "opendir %s", path);
  int listed = 0;
  while (d && (e = readdir(d)) != NULL) listed += strcmp(e->d_name, bdf) == 0;
  if (d) closedir(d);
  CHECK(listed == 1, "group %d lists %s", group_no, bdf);

  /* 3. Container, group, IOMMU, device. */
  int container = open("/dev/vfio/vfio", O_RDWR);
  CHECK(container >= 0, "open /dev/vfio/vfio");
  CHECK(ioctl(container, VFIO_GET_API_VERSION) == VFIO_API_VERSION, "API version");
  CHECK(ioctl(container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) == 1, "TYPE1v2");
  snprintf(path, sizeof path, "/dev/vfio/%d", group_no);
  CHECK(stat(path, &sb) == 0 && S_ISCHR(sb.st_mode), "stat %s", path);
  CHECK(access("/dev/vfio/vfio", R_OK | W_OK) == 0, "access /dev/vfio/vfio");
  int group = open(path, O_RDWR);
  CHECK(group >= 0, "open %s", path);
  struct vfio_group_status st = {.argsz = sizeof st};
  CHECK(ioctl(group, VFIO_GROUP_GET_STATUS, &st) == 0, "GROUP_GET_STATUS");
  CHECK(st.flags & VFIO_GROUP_FLAGS_VIABLE, "group viable");
  CHECK(ioctl(group, VFIO_GROUP_SET_CONTAINER, &container) == 0, "SET_CONTAINER");
  CHECK(ioctl(container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU) == 0, "SET_IOMMU");
  int device = ioctl(group, VFIO_GROUP_GET_DEVICE_FD, bdf);
  CHECK(device >= 0, "GET_DEVICE_FD %s", bdf);
  if (device < 0) return 1;
  struct vfio_device_info info = {.argsz = sizeof info};
  CHECK(ioctl(device, VFIO_DEVICE_GET_INFO, &info) == 0, "DEVICE_GET_INFO");
  CHECK(info.flags & VFIO_DEVICE_FLAGS_PCI, "PCI device");

  /* 4. Config space through pread: vendor 0x15b3. */
  struct vfio_region_info cfg = {.argsz = sizeof cfg, .index = VFIO_PCI_CONFIG_REGION_INDEX};
  CHECK(ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &cfg) == 0, "config region info");
  uint16_t vendor = 0;
  CHECK(pread(device, &vendor, 2, (off_t)cfg.offset) == 2, "pread config");
  CHECK(vendor == 0x15b3, "vendor %#x", vendor);

  /* 5. BAR0: region info, mmap, cmdif revision at 0x4 (big-endian, bits 31:16). */
  struct vfio_region_info bar = {.argsz = sizeof bar, .index = VFIO_PCI_BAR0_REGION_INDEX};
  CHECK(ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &bar) == 0, "BAR0 region info");
  CHECK(bar.flags & VFIO_REGION_INFO_FLAG_MMAP, "BAR0 mmappable");
  CHECK(bar.size >= 0x2000, "BAR0 size %llu", (unsigned long long)bar.size);
  void* p = mmap(NULL, bar.size, PROT_READ | PROT_WRITE, MAP_SHARED, device, (off_t)bar.offset);
  CHECK(p != MAP_FAILED, "mmap BAR0");
  if (p != MAP_FAILED) {
    volatile uint32_t* regs = p;
    uint32_t cmdif = __builtin_bswap32(regs[1]) >> 16;
    CHECK(cmdif == 5, "cmdif revision %u", cmdif);
    const char* fw = getenv("KBV_SIM_FIRMWARE");
    if (!(fw && strcmp(fw, "0") == 0)) run_enable_hca(container, device, (off_t)cfg.offset, regs);
    munmap(p, bar.size);
  }

  CHECK(close(device) == 0, "close device");
  CHECK(close(group) == 0, "close group");
  CHECK(close(container) == 0, "close container");
  if (failures == 0) printf("preload_probe: ok (%s, group %d)\n", bdf, group_no);
  return failures == 0 ? 0 : 1;
}
