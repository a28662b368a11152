// SPDX-License-Identifier: BSD-3-Clause
//
// PciDevice: the PCIe function of one model HCA — its identity (config
// space), BAR0 memory with the init segment, MSI-X, reset and the IOMMU
// domain of its group. Implements sim::PciFunction (pci_function.hpp) for the
// model's firmware and engine, plus what the emulated VFIO kernel
// (vfio_kernel.hpp) needs.
//
// Identity defaults (all configurable, DeviceConfig):
//   * 15b3:1017 — Mellanox ConnectX-5 (pci.ids); subsystem 15b3:0007 (a
//     model choice: boards differ in their subsystem ids).
//   * class 0x020000 (Ethernet controller). A ConnectX port reports the class
//     of its link layer: 0x020700 (InfiniBand controller) in IB mode, 0x020000
//     in Ethernet mode. RoCE runs over Ethernet ports, and the model's ports
//     are RoCEv2 (docs/DESIGN.md "Wire"), so the model is an Ethernet function.
//   * BAR0: 32 MiB, 64-bit prefetchable (the size ConnectX-4/5 report).
//   * 64 MSI-X vectors (at most 256: the table lives in one 4 KiB page).
//
// BAR0 (docs/PRM.md "Initialization segment"; kernel device.h mlx5_init_seg; the
// field table is prm/init_seg.hpp). Device registers are big-endian:
//   0x000 fw_rev = minor << 16 | major; 0x004 cmdif_rev << 16 | subminor;
//   0x014 reads log_cmdq_size << 4 | log_cmdq_stride (until the driver
//   writes the queue address there); 0x1FC bit 31 `initializing`, set for
//   init_time after power-on and after each reset; 0x200 health buffer
//   (zero = healthy); 0x1000/0x1004 internal timer (timer_khz ticks since
//   reset); 0x1010 health counter (low 24 bits) bumped every health_period.
//   The timer and counter are refreshed by one shared, sleeping housekeeping
//   thread (housekeeper.hpp): they advance only at that rate.
//   UAR page n at n * 4096; the MSI-X table and PBA in the last two pages.
//   The memory is a memfd, so the VFIO mmap of the device maps the same
//   pages (bar0_fd()).
//
// Writes: every driver store reported through the MmioTrap (bar0_trap()) or a
// 4/8-byte pwrite of the BAR0 region is handed to the write handler, with the
// value in CPU order as MmioTrap defines it (be32toh/be64toh of the bytes now
// at the offset: 1 << slot for a command doorbell). The command doorbell
// (0x18) is consumed: the handler gets the bits found in the register and it
// reads 0 again, so a doorbell is delivered once even when the optional
// poller (dbell_poll, for untrapped drivers) is on; the poller also reports
// changed cmdq_addr_h/_l_sz values. Writes are dropped while memory decoding
// (command bit 1) is off or the device is gone.
//
// Test hooks: set_device_gone() (BAR0 init segment and config space read
// all-ones, no DMA, no MSI-X, counter stops) and inject_health_fatal() (sets
// synd/ext_synd and rfr in the health buffer and stops the counter); reset()
// clears both.
//
// Threading: every method may be called from any thread.
#pragma once

#include "sim/bus/iommu_map.hpp"
#include "sim/bus/pci_config.hpp"
#include "sim/bus/pci_function.hpp"

#include <kbv/status.hpp>

#include "platform/sys.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

namespace kbv::sim {

struct DeviceConfig {
  uint16_t vendor_id = 0x15b3;
  uint16_t device_id = 0x1017;  // ConnectX-5
  uint16_t subsystem_vendor_id = 0x15b3;
  uint16_t subsystem_id = 0x0007;
  uint32_t class_code = 0x020000;  // Ethernet controller (RoCE); 0x020700 = InfiniBand
  uint8_t revision = 0x00;
  int numa_node = -1;  // sysfs numa_node

  uint64_t bar0_size = 32ull << 20;
  uint16_t msix_vectors = 64;

  // Init segment identity (docs/PRM.md; default ConnectX-5 firmware 16.35.2000).
  uint16_t fw_rev_major = 16;
  uint16_t fw_rev_minor = 35;
  uint16_t fw_rev_subminor = 2000;
  uint16_t cmdif_rev = 5;
  uint8_t log_cmdq_size = 5;
  uint8_t log_cmdq_stride = 6;

  // `initializing` (init segment 0x1FC bit 31) stays set this long after
  // power-on and after each function reset: the firmware's
  // (re-)initialisation. 1 s by default, silicon's order ("up to about 1 s
  // per function", issue 22): inside the bound drivers poll it with —
  // Linux's mlx5_core FW_INIT 2 s once the command queue address is written
  // (lib/tout.c; 120 s, FW_PRE_INIT, before), rdma-core's mlx5_vfio and kbv
  // FW_PRE_INIT_TIMEOUT_MILI 120 s, every 2 ms (FW_INIT_WAIT_MS). vfio-pci
  // resets a function when it is opened, so every open of a model device
  // waits this long. Models take KBV_SIM_INIT_MS instead when it is set
  // (sim/model.hpp; the test setup uses 10 ms).
  std::chrono::nanoseconds init_time = std::chrono::seconds(1);
  // Health counter bump / timer refresh period.
  std::chrono::nanoseconds health_period = std::chrono::milliseconds(50);
  // Internal timer frequency (device_frequency_khz); default 1 GHz = ns.
  uint64_t timer_khz = 1000000;
  // Poll BAR0 at this period for stores that were not trapped (drivers that
  // write the mapped BAR directly): a changed cmdq_addr_h / cmdq_addr_l_sz is
  // reported as a write of its new value, then new command doorbell bits,
  // then the doorbell registers of the watched UAR pages
  // (PciFunction::watch_uar_page). 0 = off.
  std::chrono::nanoseconds dbell_poll = std::chrono::nanoseconds(0);
};

class PciDevice final : public PciFunction {
 public:
  // Fails with KBV_ERR_INVALID_ARGUMENT for a bad config (BAR size not a
  // power of two or < 16 KiB, 0 or > 256 vectors) and KBV_ERR_NO_MEMORY when
  // the BAR memory cannot be created.
  static Result<std::unique_ptr<PciDevice>> create(const DeviceConfig& cfg);
  ~PciDevice() override;
  PciDevice(const PciDevice&) = delete;
  PciDevice& operator=(const PciDevice&) = delete;

  // ---- PciFunction ----
  std::span<std::byte> bar0() override { return {bar0_, cfg_.bar0_size}; }
  Iommu& iommu() override { return bus_iommu_; }
  bool raise_msix(unsigned vector) override;
  bool bus_master() const override;
  // Both setters return only when no call of the previous handler is still
  // running (on any thread), so its owner may then be destroyed. Must not be
  // called from inside a handler.
  void set_bar0_write_handler(WriteHandler h) override;
  void set_reset_handler(std::function<void()> h) override;
  // timer_khz ticks since the last reset, exact (the init segment's
  // internal_timer copy is refreshed every health_period and never runs
  // ahead of this). 0 while the device is gone.
  uint64_t internal_timer() const override;

  const DeviceConfig& config() const { return cfg_; }

  // ---- config space (VFIO config region) ----
  // Reads past the end read 0xFF; writes change only the writable bits.
  void config_read(uint32_t off, std::span<std::byte> dst) const;
  void config_write(uint32_t off, std::span<const std::byte> src);

  // ---- BAR0 ----
  int bar0_fd() const { return bar0_fd_; }  // memfd backing BAR0 (mmap offset 0 = BAR0 0)
  platform::MmioTrap& bar0_trap() { return trap_; }
  // Memory space enable (PCI command register bit 1).
  bool memory_enabled() const;
  // A driver store into BAR0 (trap or pwrite), value in CPU order (MmioTrap):
  // delivered to the write handler; dropped while memory decoding is off or
  // the device is gone.
  void on_bar0_write(uint64_t offset, uint64_t value, unsigned width);

  // ---- IOMMU domain of this function's group (filled by the VFIO kernel) ----
  IommuMap& dma_map() { return dma_map_; }

  // ---- MSI-X (VFIO_DEVICE_SET_IRQS) ----
  unsigned msix_count() const { return cfg_.msix_vectors; }
  bool msix_enabled() const { return msix_enabled_.load(std::memory_order_acquire); }
  // Enables MSI-X in config space (as vfio-pci does on the first trigger).
  void enable_msix();
  // Assigns (fd >= 0: a dup of this eventfd is kept) or unassigns (fd < 0)
  // vector `v`. Fails with KBV_ERR_INVALID_ARGUMENT for v out of range and
  // with the errno's status when fd cannot be duplicated.
  Status set_msix_eventfd(unsigned v, int fd);
  bool msix_assigned(unsigned v) const;
  // Unassigns every vector and clears MSI-X enable.
  void disable_msix();

  // Watched UAR pages (PciFunction): with the poller on, each doorbell
  // register of a watched page holds all-ones between stores (no store a
  // driver makes there is all-ones: EQ numbers stay below 255, CQ and QP
  // numbers below 2^24); the poller exchanges each register with all-ones
  // and delivers what it found, a trapped store to one is delivered once.
  void watch_uar_page(uint32_t page, bool on) override;

  // ---- reset (VFIO_DEVICE_RESET, function-level reset) ----
  // Re-initializes BAR0 (init segment, initializing for init_time, health
  // cleared), clears the test hooks, then calls the reset handler. Config
  // space and MSI-X assignments are kept (vfio-pci saves and restores them
  // around the reset).
  void reset();

  // ---- test hooks ----
  void set_device_gone(bool gone);
  bool device_gone() const { return gone_.load(std::memory_order_acquire); }
  void inject_health_fatal(uint8_t synd, uint16_t ext_synd);
  // A firmware assert as the health buffer shows it (device.h health_buffer):
  // inject_health_fatal(synd, ext_synd) plus assert_var[0..4], the assert's
  // return address (assert_callra), the iRISC that asserted (irisc_index),
  // fw_version (= the init segment's fw_rev dword) and hw_id (the PCI
  // device id).
  struct HealthAssert {
    uint8_t synd = 0x1;  // FW error
    uint16_t ext_synd = 0;
    uint8_t irisc_index = 0;
    uint32_t assert_callra = 0;
    std::array<uint32_t, 5> assert_var{};
  };
  void inject_health_assert(const HealthAssert& a);
  bool initializing() const;
  uint32_t health_counter() const;  // the low 24 bits as the driver reads them

  // Housekeeping tick (housekeeper.hpp): advances the timer and counter,
  // clears `initializing`, polls the doorbell; returns when it is next due.
  std::chrono::steady_clock::time_point housekeep(std::chrono::steady_clock::time_point now);

 private:
  class Trap final : public platform::MmioTrap {
   public:
    explicit Trap(PciDevice& d) : d_(d) {}
    void on_write(uint64_t offset, uint64_t value, unsigned width) override {
      d_.on_bar0_write(offset, value, width);
    }

   private:
    PciDevice& d_;
  };
  // The function's view of the IOMMU: refuses DMA while bus mastering is off
  // (PCI command bit 2) or the device is gone, then asks the domain.
  class BusIommu final : public Iommu {
   public:
    explicit BusIommu(PciDevice& d) : d_(d) {}
    Status map(uint64_t iova, void* vaddr, uint64_t size, uint32_t perm) override {
      return d_.dma_map_.map(iova, vaddr, size, perm);
    }
    Status unmap(uint64_t iova, uint64_t size, uint64_t* unmapped) override {
      return d_.dma_map_.unmap(iova, size, unmapped);
    }
    Status dma_read(uint64_t iova, std::span<std::byte> dst) override;
    Status dma_write(uint64_t iova, std::span<const std::byte> src) override;
    std::byte* translate(uint64_t iova, uint64_t len, uint32_t perm) override;
    uint64_t fault_count() const override { return d_.dma_map_.fault_count(); }

   private:
    PciDevice& d_;
  };

  PciDevice(const DeviceConfig& cfg, int fd, std::byte* bar0);
  void init_bar0();  // caller holds mu_
  uint64_t timer_at(std::chrono::steady_clock::time_point now) const;
  void fill_init_seg(uint32_t v);
  void store_be32(uint32_t off, uint32_t v);
  uint32_t load_be32(uint32_t off) const;
  void deliver(uint64_t offset, uint64_t value, unsigned width);
  // The doorbell register of a watched UAR page at `offset`, 0 if none;
  // caller holds mu_.
  unsigned watched_width(uint64_t offset) const;
  // Exchanges the register with all-ones; the bytes found, in CPU order.
  uint64_t take_register(uint64_t offset, unsigned width);

  const DeviceConfig cfg_;
  const int bar0_fd_;
  std::byte* const bar0_;
  Trap trap_{*this};
  BusIommu bus_iommu_{*this};
  IommuMap dma_map_;

  mutable std::mutex mu_;  // config space, reset, housekeeping state
  PciConfig pci_cfg_;
  std::atomic<uint16_t> command_{0};  // mirror of the command register
  std::atomic<bool> gone_{false};
  std::atomic<bool> fatal_{false};
  std::atomic<int64_t> reset_at_ns_{0};  // steady_clock ns of the last reset (the timer's 0)
  std::chrono::steady_clock::time_point init_done_at_;
  std::chrono::steady_clock::time_point next_health_;
  std::chrono::steady_clock::time_point next_poll_;
  uint32_t polled_addr_[2] = {0, 0};    // cmdq_addr_h / _l_sz as the poller last saw them
  std::vector<uint32_t> watched_uars_;  // UAR pages whose doorbells the poller reads
  bool init_pending_ = false;
  uint32_t counter_ = 0;

  mutable std::shared_mutex irq_mu_;  // MSI-X vector table (raise_msix is shared)
  std::unique_ptr<int[]> msix_fds_;   // dup'ed eventfds, -1 = unassigned
  std::atomic<bool> msix_enabled_{false};

  // Handlers. Replacing one waits until no call of the old one is running,
  // so an owner that cleared its handler may be destroyed right after.
  std::mutex handler_mu_;                      // serialises set_bar0_write_handler
  std::unique_ptr<WriteHandler> write_owned_;  // the current write handler
  std::atomic<WriteHandler*> write_handler_{nullptr};
  std::atomic<int> write_calls_{0};  // write handler calls in progress
  std::mutex reset_call_mu_;         // held while the reset handler runs / is replaced
  std::function<void()> reset_handler_;
};

}  // namespace kbv::sim
