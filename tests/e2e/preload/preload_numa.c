/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * preload_numa: a program linked with libnuma (Debian libnuma1) run under
 * LD_PRELOAD=libkbv-sim-preload.so. libnuma's constructor (numa_init) lists
 * /sys/devices/system/node with opendir/readdir before the preload's own
 * initialisers may have run, so every piece of preload state it reaches must
 * be usable then (issue 13: it segfaulted). Then the program uses libnuma as
 * an application does and, with model devices configured (KBV_SIM_DEVICES),
 * finds each model function's numa_node through sysfs the way libnuma-aware
 * code does: opendir/readdir of /sys/bus/pci/devices, fopen + fscanf of the
 * attribute. Argument: the number of model devices expected (default 0).
 * Exit 0 on success; each failed check prints a line and makes it 1.
 */
#include <dirent.h>
#include <errno.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char** argv) {
  const int expected = argc > 1 ? atoi(argv[1]) : 0;

  /* libnuma as an application uses it. numa_available() is -1 on a kernel
   * without NUMA support; everything else needs it. */
  if (numa_available() == 0) {
    const int nodes = numa_num_configured_nodes();
    CHECK(nodes >= 1, "numa_num_configured_nodes %d", nodes);
    CHECK(numa_max_node() >= 0, "numa_max_node %d", numa_max_node());
    const int node = numa_node_of_cpu(0);
    CHECK(node >= 0, "numa_node_of_cpu(0) %d", node);
    char* p = numa_alloc_onnode(1 << 20, node < 0 ? 0 : node);
    CHECK(p != NULL, "numa_alloc_onnode");
    if (p) {
      memset(p, 0xA5, 1 << 20);
      CHECK(p[(1 << 20) - 1] == (char)0xA5, "allocated memory");
      numa_free(p, 1 << 20);
    }
  } else {
    printf("numa_available: -1 (no NUMA support in this kernel)\n");
  }

  /* The model functions (domain fffe) in the PCI device listing, each with a
   * numa_node attribute. */
  int found = 0;
  DIR* d = opendir("/sys/bus/pci/devices");
  CHECK(d != NULL, "opendir /sys/bus/pci/devices");
  if (d) {
    struct dirent* e;
    while ((e = readdir(d)) != NULL) {
      if (strncmp(e->d_name, "fffe:", 5) != 0) continue;
      char path[512];
      snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/numa_node", e->d_name);
      FILE* f = fopen(path, "r");
      CHECK(f != NULL, "fopen %s", path);
      if (!f) continue;
      int node = -2;
      CHECK(fscanf(f, "%d", &node) == 1 && node >= -1, "%s holds %d", path, node);
      fclose(f);
      printf("%s numa_node %d\n", e->d_name, node);
      ++found;
    }
    closedir(d);
  }
  CHECK(found == expected, "%d model functions listed, expected %d", found, expected);
  return failures ? 1 : 0;
}
