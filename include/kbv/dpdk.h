/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kbv/dpdk.h — kbv inside a DPDK application (libkbv-dpdk.so; built when
 * meson finds DPDK 22.11, option -Ddpdk). README "Backends".
 *
 * A DPDK application links libkbv-dpdk.so (pkg-config kbv-dpdk) besides
 * libkbv.so: its constructor registers kbv's rte_pci_driver "kbv_mlx5" for
 * the ConnectX-4 and later device ids, so that rte_eal_init maps and probes
 * the application's ConnectX functions (bound to vfio-pci, or
 * uio_pci_generic with --iova-mode=pa, and on EAL's allow list) for kbv.
 * After rte_eal_init, kbv_device_open("dpdk:DDDD:BB:DD.F", ...) drives a
 * probed function with DPDK's mapping of BAR0, DMA memory from DPDK
 * memzones and DPDK's VFIO container (src/platform/dpdk.hpp has every step
 * and error). Open devices before rte_eal_cleanup and close them before it.
 *
 * Errors of kbv_device_open for dpdk: URIs: EAL not initialised ->
 * KBV_ERR_INVALID_STATE; the function not probed by kbv's driver ->
 * KBV_ERR_NOT_FOUND; already open -> KBV_ERR_BUSY; a DPDK other than
 * 22.11 -> KBV_ERR_NOT_SUPPORTED; each logged with what to do.
 *
 * Threading: kbv_dpdk_get_usage from any thread.
 */
#ifndef KBV_DPDK_H
#define KBV_DPDK_H

#include <kbv/status.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What kbv holds of DPDK's resources now. */
typedef struct kbv_dpdk_usage {
  uint32_t devices_probed; /* functions kbv's rte_pci_driver holds */
  uint32_t devices_open;   /* of those, open as dpdk: devices */
  uint32_t memzones;       /* memzones reserved for kbv's DMA memory */
  uint32_t external_maps;  /* application buffers kbv mapped into DPDK's VFIO container */
  uint64_t memzone_bytes;  /* bytes of those memzones */
  uint64_t external_bytes; /* bytes of those mappings */
} kbv_dpdk_usage_t;

/* Fills *out. KBV_ERR_INVALID_ARGUMENT for a null out. */
kbv_status_t kbv_dpdk_get_usage(kbv_dpdk_usage_t* out);

#ifdef __cplusplus
}
#endif

#endif /* KBV_DPDK_H */
