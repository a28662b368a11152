// SPDX-License-Identifier: BSD-3-Clause
//
// Device transports: how a device URI's scheme reaches a PCI function.
//
// A URI is "<scheme>:<address>" ("vfio:0000:3b:00.0", "sim:a"). A transport
// turns the address into the platform seam (sys.hpp) that reaches the
// function and the function's BDF on that seam; the driver then opens it the
// same way whatever the transport (platform::DeviceHandle::open(sys, bdf)).
// The shape is SPDK's NVMe transports (lib/nvme/nvme_transport.c,
// SPDK_NVME_TRANSPORT_REGISTER): each transport registers itself, the core
// finds it by name and never includes it (docs/STYLE.md "SPDK transports",
// docs/ARCHITECTURE.md).
//
// Transports of kbv:
// - "vfio" (this library, transport.cpp): silicon bound to vfio-pci through
//   real_sys(), over iommufd when the machine offers it, else type1.
// - "iommufd" and "uio" (this library): the same functions through exactly
//   that kernel interface (iommufd: vfio-pci's device cdev; uio:
//   uio_pci_generic without an IOMMU).
// - "dpdk" (libkbv-dpdk.so, src/platform/dpdk_bus.cpp, built when meson
//   finds DPDK): functions found and mapped by DPDK's PCI bus in a process
//   that ran rte_eal_init; the target brings its own backend (open_backend).
//   A DPDK application links libkbv-dpdk.so so that its rte_pci_driver is
//   registered before rte_eal_init probes; otherwise the first find("dpdk")
//   loads it as it loads libkbv-sim.so (and its devices are not probed:
//   the open says so). It is not loaded to list devices (all_transports).
// - "sim" (libkbv-sim.so, src/sim/transport.cpp): model HCAs in this process.
//   libkbv.so carries no model code: the first find("sim") loads
//   libkbv-sim.so.0 with dlopen — from the directory libkbv.so itself was
//   loaded from (dladdr), else by soname through the dynamic loader's search
//   (LD_LIBRARY_PATH, ld.so.cache, default directories) — and its
//   constructor registers the scheme. KBV_SIM_LIBRARY=<path> names the file
//   instead (only it is tried). Programs and tests that link the model
//   themselves (libkbv-sim.so, or the model's static libraries with
//   kbv_sim_transport_dep) have it registered before main().
//
// These declarations are not kbv's public API: libkbv.so exports them in
// the private symbol version KBV_PRIVATE_0 (src/libkbv.map) for libkbv-sim.so
// only; they change with the library.
//
// Threading: register_transport runs from library constructors; find and
// list from any thread (one mutex; loading a library is serialised).
#pragma once

#include <kbv/status.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "platform/sys.hpp"

namespace kbv::platform {

class PciBackend;  // backend.hpp

// The kernel interface that reaches a function (platform/backend.hpp).
enum class BackendKind : uint8_t {
  kAuto,       // by the function's driver: vfio-pci -> kVfio, uio_pci_generic -> kUio
  kVfio,       // vfio-pci: iommufd when /dev/iommu and its vfio-dev/vfioN cdev exist
               // (as QEMU and DPDK choose), else the type1 container
  kVfioType1,  // vfio-pci through /dev/vfio/vfio and the IOMMU group
  kIommufd,    // vfio-pci through /dev/iommu and /dev/vfio/devices/vfioN
  kUio,        // uio_pci_generic: no IOMMU, physical addresses from /proc/self/pagemap
  kDpdk,       // DPDK's PCI bus and memory (its VFIO container or UIO): dpdk.hpp
};

// Opens the backend of a function a transport reaches by other means than
// the kernel interfaces above (DPDK). `bdf` is TransportTarget::bdf.
using BackendOpener = Result<std::unique_ptr<PciBackend>> (*)(std::string_view bdf);

// What opening an address yields.
struct TransportTarget {
  Sys* sys = nullptr;  // the seam that reaches the function (never null on success)
  std::string bdf;     // the function's address on that seam, "dddd:bb:dd.f"
  // Whatever backs the function (a model HCA), shared by the opens of one
  // address; the device holds it until its teardown finished. May be null.
  std::shared_ptr<void> backing;
  // The kernel interface the URI asks for (the model's "sim:" leaves kAuto:
  // whatever driver the model function is bound to).
  BackendKind backend = BackendKind::kAuto;
  // Set by a transport that brings its own backend (dpdk:); DeviceHandle
  // opens the function with it instead of a kernel interface.
  BackendOpener open_backend = nullptr;
};

// One listed device (kbv_get_device_list).
struct TransportDevice {
  std::string uri;  // "<scheme>:<address>"
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  int numa_node = -1;  // -1: unknown
};

struct Transport {
  const char* scheme;  // without the ':', e.g. "vfio"
  bool is_model;       // kbv_device_desc_t.is_sim of its devices
  // Opens `address` (the URI after "<scheme>:"). KBV_ERR_INVALID_ARGUMENT
  // for a malformed address; the transport's own errors otherwise.
  Result<TransportTarget> (*open)(std::string_view address);
  // Appends this transport's devices. `others_found`: devices of hardware
  // transports were listed before (the model lists its default only when
  // there are none).
  void (*list)(std::vector<TransportDevice>& out, bool others_found);
};

// Makes `t` findable by its scheme; `t` must live for the process (a static
// object). A second registration of a scheme is ignored (the first stays).
void register_transport(const Transport& t);

// The transport of `scheme`, loading its library when the scheme has one and
// is not registered yet (see above). KBV_ERR_INVALID_ARGUMENT for a scheme
// kbv does not know; KBV_ERR_NOT_SUPPORTED when its library cannot be loaded
// or does not register the scheme (logged at error with the loader's message).
Result<const Transport*> find_transport(std::string_view scheme);

// Every transport kbv knows (built-in and loadable), loaded as find_transport
// does; hardware transports first. Transports whose library cannot be loaded
// are left out (logged at debug).
std::vector<const Transport*> all_transports();

}  // namespace kbv::platform

// Registers a transport when the library or program that defines it is
// loaded, as SPDK_NVME_TRANSPORT_REGISTER does: a constructor calling
// register_transport(ops). `name` is an identifier (the scheme).
#define KBV_TRANSPORT_REGISTER(name, ops)                                    \
  __attribute__((constructor)) static void kbv_transport_register_##name() { \
    ::kbv::platform::register_transport(ops);                                \
  }
