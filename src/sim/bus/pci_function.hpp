// SPDX-License-Identifier: BSD-3-Clause
//
// The model's PCI function: what the firmware and transport engine of one
// model HCA see of "their" PCIe device. Implemented by the device-identity part
// of src/sim (config space, BAR0 memory, MSI-X, reset, IOMMU); used by the
// firmware (src/sim/fw) and the data-path engine.
//
// BAR0 layout (docs/PRM.md "Initialization segment"): the init segment at 0 (the
// 4 KiB page 0 also holds the health buffer at 0x200; internal timer and
// health counter at 0x1000/0x1010 in page 1), UAR pages at n * 4096.
//
// Threading: every method may be called from any model thread.
#pragma once

#include "sim/bus/iommu.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

namespace kbv::sim {

// The model's BlueFlame register size (cmd_hca_cap.log_bf_reg_size 9: 512 B,
// used in two 256 B halves; prm::uar_bf_offset). Its caps report it
// (fw/caps.cpp); the doorbell poller and the engine find WQE starts by it.
inline constexpr uint32_t kLogBfRegSize = 9;

class PciFunction {
 public:
  virtual ~PciFunction() = default;

  // BAR0 as the model's memory. Device-owned registers (fw_rev, cmdif_rev,
  // initializing, health buffer, health counter) are stored big-endian here,
  // exactly as the driver reads them through its mmap.
  virtual std::span<std::byte> bar0() = 0;

  // The IOMMU of this function's VFIO container.
  virtual Iommu& iommu() = 0;

  // Signal MSI-X vector `vector` (the eventfd the driver registered with
  // VFIO_DEVICE_SET_IRQS; nothing if none is registered or bus mastering /
  // MSI-X is disabled in config space). Returns false when not delivered.
  virtual bool raise_msix(unsigned vector) = 0;

  // Bus master enable (PCI command register bit 2): DMA is refused while clear.
  virtual bool bus_master() const = 0;

  // Called for every driver store into BAR0 (offset, value as stored, width 4
  // or 8) — via the platform's MmioTrap on the model — and also when the
  // model's BAR poller notices a change in the command doorbell (for drivers
  // that write BAR0 without the trap, e.g. under LD_PRELOAD). Set once by the
  // firmware before the device is visible; runs on the writer's thread, so it
  // must only record the write and wake a model thread.
  using WriteHandler = std::function<void(uint64_t offset, uint64_t value, unsigned width)>;
  virtual void set_bar0_write_handler(WriteHandler h) = 0;

  // UAR page `page` is live (ALLOC_UAR) / no longer (DEALLOC_UAR, teardown).
  // A function whose BAR stores are not all trapped (the BAR poller is on,
  // DeviceConfig::dbell_poll) then polls the page's doorbell registers —
  // the CQ doorbell (0x20, 8 bytes), the EQ doorbells (0x40 / 0x48, 4 bytes)
  // and both halves of the four BlueFlame / doorbell registers (0x800 to
  // 0xF00 in steps of 0x100, first 8 bytes)
  // — and hands each store it finds to the write handler once. Silicon
  // latches every store; the poller sees the last store to a register
  // within one poll period, which is what each of these doorbells needs
  // (the newest counter or arm request wins). Default: nothing to do.
  virtual void watch_uar_page(uint32_t page, bool on) {
    (void)page;
    (void)on;
  }

  // The free-running clock (init segment internal_timer; device.h
  // mlx5_init_seg): device_frequency_khz ticks since the function's last
  // reset, read now (the init segment's copy is only refreshed by
  // housekeeping). The engine stamps CQEs with it (mlx5_cqe64 timestamp).
  // Default: 0, a function without a clock.
  virtual uint64_t internal_timer() const { return 0; }

  // Called on VFIO_DEVICE_RESET and on function-level reset: the firmware
  // drops all state and asserts `initializing` for its configured time.
  virtual void set_reset_handler(std::function<void()> h) = 0;
};

}  // namespace kbv::sim
