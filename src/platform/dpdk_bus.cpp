// SPDX-License-Identifier: BSD-3-Clause
// kbv's rte_pci_driver "kbv_mlx5", the functions it probed, the "dpdk"
// device transport and kbv_dpdk_get_usage (dpdk.hpp, include/kbv/dpdk.h).
#include <kbv/dpdk.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_version.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "common/log.hpp"
#include "platform/dpdk.hpp"
#include "platform/pci.hpp"
#include "platform/transport.hpp"

namespace kbv::platform {
namespace {

constexpr const char* kLog = "platform/dpdk";
constexpr const char* kDriverName = "kbv_mlx5";

// ConnectX-4 and later mlx5 functions: rdma-core providers/mlx5/mlx5.c
// mlx5_hca_table (0x1011 Connect-IB .. 0x1021 ConnectX-7, BlueField
// 0xa2d2/0xa2d3/0xa2d6/0xa2dc), vendor 0x15b3, any subsystem and class.
constexpr uint16_t kDeviceIds[] = {0x1011, 0x1012, 0x1013, 0x1014, 0x1015, 0x1016, 0x1017,
                                   0x1018, 0x1019, 0x101a, 0x101b, 0x101c, 0x101d, 0x101e,
                                   0x101f, 0x1021, 0xa2d2, 0xa2d3, 0xa2d6, 0xa2dc};
constexpr size_t kIds = sizeof kDeviceIds / sizeof kDeviceIds[0];

struct IdTable {
  rte_pci_id ids[kIds + 1];  // ends with vendor_id 0
  constexpr IdTable() : ids{} {
    for (size_t i = 0; i < kIds; ++i)
      ids[i] = {RTE_CLASS_ANY_ID, kPciVendorMellanox, kDeviceIds[i], RTE_PCI_ANY_ID,
                RTE_PCI_ANY_ID};
  }
};
constexpr IdTable kIdTable;

struct Probed {
  dpdk_abi::RtePciDevice* dev = nullptr;
  bool open = false;
};

struct State {
  std::mutex mu;
  std::map<std::string, Probed> probed;  // by BDF
  bool registered = false;
  bool registered_after_init = false;  // registered once EAL had probed already
  kbv_dpdk_usage_t usage{};
};
State& state() {
  static State* s = new State();  // used from DPDK's constructors and exit paths
  return *s;
}

std::string bdf_of(const dpdk_abi::RtePciDevice* d) {
  return PciAddress{d->addr.domain, d->addr.bus, d->addr.devid, d->addr.function}.to_string();
}

bool eal_initialised() {
  // Both are set by rte_eal_init only: the IOVA mode is RTE_IOVA_DC (0)
  // and the lcore count 0 before it.
  return rte_eal_iova_mode() != RTE_IOVA_DC && rte_lcore_count() > 0;
}

// rte_pci_driver.probe: EAL mapped the function (NEED_MAPPING) before this.
int probe(dpdk_abi::RtePciDriver*, dpdk_abi::RtePciDevice* dev) {
  const std::string bdf = bdf_of(dev);
  // Network-class functions only (kbv's own discovery: pci.hpp).
  if (((dev->id.class_id >> 16) & 0xff) != 0x02) {
    log::info(kLog, "{}: class {:#08x} is not a network function; left to other drivers", bdf,
              dev->id.class_id);
    return 1;
  }
  if (dev->mem_resource[0].addr == nullptr || dev->mem_resource[0].len == 0) {
    log::error(kLog, "{}: EAL did not map BAR0", bdf);
    return -1;
  }
  State& s = state();
  std::lock_guard lk(s.mu);
  s.probed[bdf] = Probed{dev, false};
  ++s.usage.devices_probed;
  log::info(kLog, "{}: probed by {} (BAR0 {} bytes at {})", bdf, kDriverName,
            dev->mem_resource[0].len, dev->mem_resource[0].addr);
  return 0;
}

// rte_pci_driver.remove (hot unplug, rte_eal_cleanup): refused while kbv
// has the function open — close the kbv device first.
int remove(dpdk_abi::RtePciDevice* dev) {
  const std::string bdf = bdf_of(dev);
  State& s = state();
  std::lock_guard lk(s.mu);
  auto it = s.probed.find(bdf);
  if (it == s.probed.end()) return 0;
  if (it->second.open) {
    log::error(kLog, "{}: DPDK removes it while kbv has it open (close the device first)", bdf);
    return -EBUSY;
  }
  s.probed.erase(it);
  --s.usage.devices_probed;
  return 0;
}

dpdk_abi::RtePciDriver g_driver = {
    .next = {},
    .driver = {.next = {}, .name = kDriverName, .alias = nullptr},
    .probe = probe,
    .remove = remove,
    .dma_map = nullptr,
    .dma_unmap = nullptr,
    .id_table = kIdTable.ids,
    .drv_flags = dpdk_abi::kDrvNeedMapping,
};

// DPDK 22.11 (ABI DPDK_23) only: the layouts of dpdk_abi.hpp.
bool abi_matches() {
  const char* v = rte_version();  // "DPDK 22.11.11"
  return v && std::strncmp(v, "DPDK 22.11", 10) == 0;
}

// The library's constructor: as RTE_PMD_REGISTER_PCI does, before main()
// and so before rte_eal_init's bus probe (and ahead of DPDK's plugins).
__attribute__((constructor)) void register_driver() {
  if (!abi_matches()) return;  // the open says why
  State& s = state();
  s.registered_after_init = eal_initialised();
  rte_pci_register(&g_driver);
  s.registered = true;
}

// ---- the "dpdk" transport ----

Result<std::unique_ptr<PciBackend>> open_backend(std::string_view bdf) {
  Result<std::unique_ptr<DpdkDevice>> d = DpdkDevice::open(bdf);
  if (!d) return d.status();
  return std::unique_ptr<PciBackend>(std::move(*d));
}

Result<TransportTarget> dpdk_open(std::string_view address) {
  Result<PciAddress> addr = PciAddress::parse(address);
  if (!addr) {
    log::error(kLog, "dpdk:{}: not a PCI address (expected DDDD:BB:DD.F)", address);
    return KBV_ERR_INVALID_ARGUMENT;
  }
  const std::string bdf = addr->to_string();
  // Checked now, so that the open fails before anything else; the backend
  // claims it when it opens.
  if (Result<dpdk_abi::RtePciDevice*> d = dpdk_bus::claim(bdf, false); !d) return d.status();
  TransportTarget t{&real_sys(), bdf, nullptr, BackendKind::kDpdk};
  t.open_backend = open_backend;
  return t;
}

void dpdk_list(std::vector<TransportDevice>& out, bool) {
  State& s = state();
  std::lock_guard lk(s.mu);
  for (auto& [bdf, p] : s.probed)
    out.push_back({"dpdk:" + bdf, p.dev->id.vendor_id, p.dev->id.device_id,
                   p.dev->device.numa_node < 0 ? -1 : p.dev->device.numa_node});
}

const Transport kDpdk{"dpdk", false, dpdk_open, dpdk_list};

}  // namespace

KBV_TRANSPORT_REGISTER(dpdk, kDpdk)

namespace dpdk_bus {

Result<dpdk_abi::RtePciDevice*> claim(std::string_view bdf, bool take) {
  if (!abi_matches()) {
    log::error(kLog, "dpdk:{}: kbv's DPDK backend is built for DPDK 22.11, this is {}", bdf,
               rte_version());
    return KBV_ERR_NOT_SUPPORTED;
  }
  if (!eal_initialised()) {
    log::error(kLog,
               "dpdk:{}: DPDK's EAL is not initialised: call rte_eal_init (with the function "
               "on its allow list, -a {}) before opening a dpdk: device",
               bdf, bdf);
    return KBV_ERR_INVALID_STATE;
  }
  State& s = state();
  std::lock_guard lk(s.mu);
  auto it = s.probed.find(std::string(bdf));
  if (it == s.probed.end()) {
    if (s.registered_after_init)
      log::error(kLog,
                 "dpdk:{}: not probed: kbv's DPDK driver was registered after rte_eal_init "
                 "(link libkbv-dpdk.so into the application)",
                 bdf);
    else
      log::error(kLog,
                 "dpdk:{}: not probed by DPDK for kbv ({}): is it on EAL's allow list (-a {}), "
                 "bound to vfio-pci (or uio_pci_generic), a ConnectX-4 or later, and not "
                 "claimed by another DPDK driver?",
                 bdf, kDriverName, bdf);
    return KBV_ERR_NOT_FOUND;
  }
  if (it->second.open) {
    log::error(kLog, "dpdk:{}: already open", bdf);
    return KBV_ERR_BUSY;
  }
  if (take) {
    it->second.open = true;
    ++s.usage.devices_open;
  }
  return it->second.dev;
}

void release(dpdk_abi::RtePciDevice* dev) {
  State& s = state();
  std::lock_guard lk(s.mu);
  auto it = s.probed.find(bdf_of(dev));
  if (it == s.probed.end() || !it->second.open) return;
  it->second.open = false;
  --s.usage.devices_open;
}

void count_memzone(int64_t zones, int64_t bytes) {
  State& s = state();
  std::lock_guard lk(s.mu);
  s.usage.memzones = static_cast<uint32_t>(s.usage.memzones + zones);
  s.usage.memzone_bytes =
      static_cast<uint64_t>(static_cast<int64_t>(s.usage.memzone_bytes) + bytes);
}

void count_external(int64_t maps, int64_t bytes) {
  State& s = state();
  std::lock_guard lk(s.mu);
  s.usage.external_maps = static_cast<uint32_t>(s.usage.external_maps + maps);
  s.usage.external_bytes =
      static_cast<uint64_t>(static_cast<int64_t>(s.usage.external_bytes) + bytes);
}

}  // namespace dpdk_bus
}  // namespace kbv::platform

extern "C" __attribute__((visibility("default"))) kbv_status_t kbv_dpdk_get_usage(
    kbv_dpdk_usage_t* out) {
  if (out == nullptr) return KBV_ERR_INVALID_ARGUMENT;
  kbv::platform::State& s = kbv::platform::state();
  std::lock_guard lk(s.mu);
  *out = s.usage;
  return KBV_SUCCESS;
}
