// SPDX-License-Identifier: BSD-3-Clause
// PciDevice (src/sim/bus/pci_device.cpp): BAR0 init segment values, the
// initializing bit, health counter, write delivery, bus-master DMA check,
// MSI-X delivery, reset and the device-gone / health-fatal hooks.
#include "sim/bus/pci_device.hpp"

#include "hca/prm/init_seg.hpp"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace kbv::sim {
namespace {

using namespace std::chrono_literals;
using prm::init_seg;

// 32-bit MMIO as a driver does it (one atomic access, big-endian register).
uint32_t be32(std::span<std::byte> bar, uint32_t off) {
  return __builtin_bswap32(std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(bar.data() + off))
                               .load(std::memory_order_acquire));
}
void put_be32(std::span<std::byte> bar, uint32_t off, uint32_t v) {
  std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(bar.data() + off))
      .store(__builtin_bswap32(v), std::memory_order_release);
}

DeviceConfig quick() {
  DeviceConfig c;
  c.init_time = 0ns;
  c.health_period = 2ms;
  return c;
}

std::unique_ptr<PciDevice> make(const DeviceConfig& c) {
  auto r = PciDevice::create(c);
  EXPECT_TRUE(r.has_value());
  return r ? std::move(*r) : nullptr;
}

bool wait_for(auto pred, std::chrono::milliseconds limit = 500ms) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return pred();
}

void enable_bus_master(PciDevice& d) {
  const uint16_t cmd = PciConfig::kCmdMemory | PciConfig::kCmdBusMaster;
  std::array<std::byte, 2> b{std::byte(cmd & 0xFF), std::byte(cmd >> 8)};
  d.config_write(PciConfig::kCommand, b);
}

TEST(SimPciDevice, RejectsBadConfig) {
  DeviceConfig c;
  c.bar0_size = 3 << 20;
  EXPECT_EQ(PciDevice::create(c).status(), KBV_ERR_INVALID_ARGUMENT);
  c = DeviceConfig{};
  c.msix_vectors = 0;
  EXPECT_EQ(PciDevice::create(c).status(), KBV_ERR_INVALID_ARGUMENT);
  c = DeviceConfig{};
  c.log_cmdq_size = 6;
  EXPECT_EQ(PciDevice::create(c).status(), KBV_ERR_INVALID_ARGUMENT);
}

TEST(SimPciDevice, InitSegmentValues) {
  DeviceConfig c = quick();
  c.init_time = 1s;  // stays set for this test
  auto d = make(c);
  auto bar = d->bar0();
  ASSERT_EQ(bar.size(), 32u << 20);
  EXPECT_EQ(be32(bar, init_seg::kFwRevOff), 35u << 16 | 16u);  // 16.35
  EXPECT_EQ(be32(bar, init_seg::kCmdifRevFwSubOff) >> 16, 5u);
  EXPECT_EQ(be32(bar, init_seg::kCmdifRevFwSubOff) & 0xFFFF, 2000u);
  const uint32_t l = be32(bar, init_seg::kCmdqAddrLSzOff);
  EXPECT_EQ(l >> 4 & 0xF, 5u);
  EXPECT_EQ(l & 0xF, 6u);
  EXPECT_EQ(be32(bar, init_seg::kInitializingOff) >> 31, 1u);
  EXPECT_TRUE(d->initializing());
  for (uint32_t off = init_seg::kHealthOff; off < init_seg::kHealthOff + 64; off += 4)
    EXPECT_EQ(be32(bar, off), 0u) << off;
  // Through the prm field table as a driver would read it.
  prm::CRef<init_seg> seg(bar.data());
  EXPECT_EQ(seg.get(init_seg::fw_rev_major), 16u);
  EXPECT_EQ(seg.get(init_seg::fw_rev_minor), 35u);
  EXPECT_EQ(seg.get(init_seg::cmd_interface_rev), prm::kCmdifRev);
  EXPECT_EQ(seg.get(init_seg::log_cmdq_size), 5u);
  EXPECT_EQ(seg.get(init_seg::log_cmdq_stride), 6u);
}

TEST(SimPciDevice, InitializingClearsAfterConfiguredTime) {
  DeviceConfig c = quick();
  c.init_time = 20ms;
  // t0 before the device exists: its init_time runs from power-on, inside
  // make(), which may itself take longer than the margin (a loaded host,
  // ThreadSanitizer).
  const auto t0 = std::chrono::steady_clock::now();
  auto d = make(c);
  EXPECT_TRUE(d->initializing());
  ASSERT_TRUE(wait_for([&] { return !d->initializing(); }));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms);
  EXPECT_EQ(be32(d->bar0(), init_seg::kInitializingOff), 0u);
}

TEST(SimPciDevice, HealthCounterAndTimerMove) {
  auto d = make(quick());
  ASSERT_TRUE(wait_for([&] { return d->health_counter() >= 1; }));
  const uint32_t c1 = d->health_counter();
  const uint64_t t1 = uint64_t{be32(d->bar0(), init_seg::kInternalTimerHOff)} << 32 |
                      be32(d->bar0(), init_seg::kInternalTimerLOff);
  ASSERT_TRUE(wait_for([&] { return d->health_counter() > c1 + 1; }));
  const uint64_t t2 = uint64_t{be32(d->bar0(), init_seg::kInternalTimerHOff)} << 32 |
                      be32(d->bar0(), init_seg::kInternalTimerLOff);
  EXPECT_GT(t2, t1);
  EXPECT_EQ(be32(d->bar0(), init_seg::kHealthCounterOff) >> 24, 0u);  // no syndrome
}

TEST(SimPciDevice, HealthFatalStopsCounterAndSetsSyndrome) {
  auto d = make(quick());
  ASSERT_TRUE(wait_for([&] { return d->health_counter() >= 1; }));
  d->inject_health_fatal(0x8, 0x1234);
  auto bar = d->bar0();
  EXPECT_EQ(be32(bar, init_seg::kHealthRfrOff) >> 31, 1u);
  EXPECT_EQ(static_cast<uint8_t>(bar[init_seg::kHealthSyndOff]), 0x8);
  prm::CRef<prm::health_buffer> hb(bar.data() + init_seg::kHealthOff);
  EXPECT_EQ(hb.get(prm::health_buffer::synd), 0x8u);
  EXPECT_EQ(hb.get(prm::health_buffer::ext_synd), 0x1234u);
  EXPECT_EQ(hb.get(prm::health_buffer::rfr), 1u);
  // inject_health_fatal() and the tick hold the device's lock: no tick in
  // flight lands after it. Ten ticks driven here (housekeep() with times
  // ten periods apart): the counter stays, the internal timer goes on.
  auto timer = [&] {
    return uint64_t{be32(d->bar0(), init_seg::kInternalTimerHOff)} << 32 |
           be32(d->bar0(), init_seg::kInternalTimerLOff);
  };
  const uint32_t c = d->health_counter();
  const uint64_t t0 = timer();
  const auto now = std::chrono::steady_clock::now();
  for (int i = 1; i <= 10; ++i) (void)d->housekeep(now + i * 10 * 2ms);
  EXPECT_EQ(d->health_counter(), c);
  EXPECT_GT(timer(), t0);
  d->reset();
  EXPECT_EQ(hb.get(prm::health_buffer::synd), 0u);
  EXPECT_TRUE(wait_for([&] { return d->health_counter() >= 2; }));
}

TEST(SimPciDevice, DeviceGoneReadsAllOnes) {
  auto d = make(quick());
  enable_bus_master(*d);
  d->set_device_gone(true);
  EXPECT_EQ(be32(d->bar0(), init_seg::kFwRevOff), prm::kDeviceGone);
  std::array<std::byte, 4> id{};
  d->config_read(0, id);
  for (auto b : id) EXPECT_EQ(b, std::byte{0xFF});
  EXPECT_FALSE(d->bus_master());
  std::array<std::byte, 4> buf{};
  EXPECT_EQ(d->iommu().dma_read(0x1000, buf), KBV_ERR_IOMMU_FAULT);
  d->reset();
  EXPECT_FALSE(d->device_gone());
  EXPECT_EQ(be32(d->bar0(), init_seg::kFwRevOff), 35u << 16 | 16u);
}

TEST(SimPciDevice, ResetReinitializesAndCallsHandler) {
  DeviceConfig c = quick();
  c.init_time = 30ms;
  auto d = make(c);
  ASSERT_TRUE(wait_for([&] { return !d->initializing(); }));
  auto bar = d->bar0();
  put_be32(bar, init_seg::kCmdqAddrHOff, 0x12);
  put_be32(bar, init_seg::kCmdqAddrLSzOff, 0x34000);
  put_be32(bar, 5 * 4096 + 0x20, 0xAABBCCDD);  // a UAR page
  enable_bus_master(*d);
  int calls = 0;
  d->set_reset_handler([&] {
    ++calls;
    EXPECT_TRUE(d->initializing());  // BAR0 is re-initialized first
  });
  d->reset();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(be32(bar, init_seg::kCmdqAddrHOff), 0u);
  EXPECT_EQ(be32(bar, init_seg::kCmdqAddrLSzOff), 5u << 4 | 6u);
  EXPECT_EQ(be32(bar, 5 * 4096 + 0x20), 0u);
  EXPECT_TRUE(d->initializing());
  EXPECT_TRUE(d->bus_master());  // config space survives (vfio-pci restores it)
  EXPECT_TRUE(wait_for([&] { return !d->initializing(); }));
}

void set_command(PciDevice& d, uint16_t cmd) {
  std::array<std::byte, 2> b{std::byte(cmd & 0xFF), std::byte(cmd >> 8)};
  d.config_write(PciConfig::kCommand, b);
}

TEST(SimPciDevice, WritesDroppedWhileMemoryDecodingOff) {
  auto d = make(quick());
  int calls = 0;
  d->set_bar0_write_handler([&](uint64_t, uint64_t, unsigned) { ++calls; });
  d->bar0_trap().on_write(0x3040, 1, 4);
  EXPECT_EQ(calls, 0);  // command register is 0 after power-on
  set_command(*d, PciConfig::kCmdMemory);
  EXPECT_TRUE(d->memory_enabled());
  d->bar0_trap().on_write(0x3040, 1, 4);
  EXPECT_EQ(calls, 1);
}

TEST(SimPciDevice, WritesAreDeliveredAndDoorbellConsumedOnce) {
  auto d = make(quick());
  set_command(*d, PciConfig::kCmdMemory);
  std::vector<std::array<uint64_t, 3>> seen;
  d->set_bar0_write_handler([&](uint64_t off, uint64_t v, unsigned w) {
    seen.push_back({off, v, w});
  });
  auto bar = d->bar0();
  put_be32(bar, init_seg::kCmdDbellOff, 1u << 3);  // what a driver's write32_be stores
  // The trap reports the CPU-order value (platform/sys.hpp MmioTrap).
  d->bar0_trap().on_write(init_seg::kCmdDbellOff, 1u << 3, 4);
  d->bar0_trap().on_write(init_seg::kCmdDbellOff, 1u << 3, 4);  // nothing new in memory
  d->bar0_trap().on_write(0x3040, 0x1122334455667788ull, 8);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0][0], init_seg::kCmdDbellOff);
  EXPECT_EQ(seen[0][1], 1u << 3);  // slot bits, CPU order
  EXPECT_EQ(seen[0][2], 4u);
  EXPECT_EQ(be32(bar, init_seg::kCmdDbellOff), 0u);
  EXPECT_EQ(seen[1][0], 0x3040u);
  EXPECT_EQ(seen[1][1], 0x1122334455667788ull);
  EXPECT_EQ(seen[1][2], 8u);
}

// Clearing a handler returns only after a call already running elsewhere has
// finished: the firmware may then be destroyed safely.
TEST(SimPciDevice, ReplacingHandlerWaitsForCallsInFlight) {
  auto d = make(quick());
  set_command(*d, PciConfig::kCmdMemory);
  std::atomic<bool> entered{false}, finished{false};
  d->set_bar0_write_handler([&](uint64_t, uint64_t, unsigned) {
    entered = true;
    std::this_thread::sleep_for(20ms);
    finished = true;
  });
  std::thread writer([&] { d->bar0_trap().on_write(0x3040, 1, 4); });
  ASSERT_TRUE(wait_for([&] { return entered.load(); }));
  d->set_bar0_write_handler(nullptr);
  EXPECT_TRUE(finished.load());
  writer.join();
  std::atomic<int> calls{0};
  std::atomic<bool> reset_done{false};
  d->set_reset_handler([&] {
    ++calls;
    std::this_thread::sleep_for(20ms);
    reset_done = true;
  });
  std::thread resetter([&] { d->reset(); });
  ASSERT_TRUE(wait_for([&] { return calls.load() > 0; }));
  d->set_reset_handler(nullptr);  // waits for the running reset handler
  EXPECT_TRUE(reset_done.load());
  resetter.join();
  d->reset();
  EXPECT_EQ(calls.load(), 1);  // cleared: not called again
}

TEST(SimPciDevice, PollerDeliversUntrappedWritesInOrder) {
  DeviceConfig c = quick();
  c.dbell_poll = 1ms;
  auto d = make(c);
  std::mutex mu;
  std::vector<std::pair<uint64_t, uint64_t>> seen;
  d->set_bar0_write_handler([&](uint64_t off, uint64_t v, unsigned) {
    std::lock_guard lk(mu);
    seen.emplace_back(off, v);
  });
  auto count = [&] {
    std::lock_guard lk(mu);
    return seen.size();
  };
  // A driver writing the mapped BAR directly: address high, low, doorbell.
  put_be32(d->bar0(), init_seg::kCmdqAddrHOff, 0x1);
  put_be32(d->bar0(), init_seg::kCmdqAddrLSzOff, 0x23456000);
  put_be32(d->bar0(), init_seg::kCmdDbellOff, 1u << 7);
  ASSERT_TRUE(wait_for([&] { return count() >= 3; }));
  // Nothing more: each change is reported once, however often the poller
  // looks (ten polls driven here, dbell_poll apart).
  const auto now = std::chrono::steady_clock::now();
  for (int i = 1; i <= 10; ++i) (void)d->housekeep(now + i * 1ms);
  std::lock_guard lk(mu);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], (std::pair<uint64_t, uint64_t>{init_seg::kCmdqAddrHOff, 0x1}));
  EXPECT_EQ(seen[1], (std::pair<uint64_t, uint64_t>{init_seg::kCmdqAddrLSzOff, 0x23456000}));
  EXPECT_EQ(seen[2], (std::pair<uint64_t, uint64_t>{init_seg::kCmdDbellOff, 1u << 7}));
  EXPECT_EQ(be32(d->bar0(), init_seg::kCmdDbellOff), 0u);
}

// The doorbell registers of UAR pages the firmware watches (ALLOC_UAR), for
// drivers whose stores are not trapped: each store found is delivered once
// with its width, including an all-zero EQ doorbell (eqn 0, ci 0); a store to
// an unwatched page is not; a trapped store to a watched register is
// delivered by the trap only.
TEST(SimPciDevice, PollerDeliversWatchedUarDoorbells) {
  DeviceConfig c = quick();
  c.dbell_poll = 1ms;
  auto d = make(c);
  struct Seen {
    uint64_t off, v;
    unsigned w;
  };
  std::mutex mu;
  std::vector<Seen> seen;
  d->set_bar0_write_handler([&](uint64_t off, uint64_t v, unsigned w) {
    std::lock_guard lk(mu);
    seen.push_back({off, v, w});
  });
  auto has = [&](uint64_t off) {
    std::lock_guard lk(mu);
    for (const Seen& s : seen)
      if (s.off == off) return true;
    return false;
  };
  auto put_be64 = [&](uint64_t off, uint64_t v) {
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(d->bar0().data() + off))
        .store(__builtin_bswap64(v), std::memory_order_release);
  };
  constexpr uint64_t kPage = 5 * 4096, kOther = 6 * 4096;
  d->watch_uar_page(5, true);
  put_be32(d->bar0(), kPage + 0x40, 0);              // EQ 0 arm, ci 0
  put_be64(kPage + 0x800, 0x0000010A'00000703ull);   // SQ doorbell, qpn 7
  put_be64(kOther + 0x800, 0x0000020A'00000803ull);  // unwatched page
  ASSERT_TRUE(wait_for([&] { return has(kPage + 0x40) && has(kPage + 0x800); }));
  // A trapped store to a watched register: memory holds it, the trap reports it.
  put_be64(kPage + 0x20, 0x10000005'00000009ull);
  d->bar0_trap().on_write(kPage + 0x20, 0x10000005'00000009ull, 8);
  put_be64(kPage + 0x900, 0x0000030A'00000703ull);  // a last untrapped store
  ASSERT_TRUE(wait_for([&] { return has(kPage + 0x900); }));
  std::lock_guard lk(mu);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].off, kPage + 0x40);
  EXPECT_EQ(seen[0].v, 0u);
  EXPECT_EQ(seen[0].w, 4u);
  EXPECT_EQ(seen[1].off, kPage + 0x800);
  EXPECT_EQ(seen[1].v, 0x0000010A'00000703ull);
  EXPECT_EQ(seen[1].w, 8u);
  EXPECT_EQ(seen[2].off, kPage + 0x20);  // the trapped store, once
  EXPECT_EQ(seen[2].v, 0x10000005'00000009ull);
  EXPECT_EQ(seen[3].off, kPage + 0x900);
}

// Every BlueFlame register of a watched page, both halves (MLX5_BFREGS_PER_UAR
// 4: 0x800 .. 0xF00): a driver posting on register k != 0 is heard too.
TEST(SimPciDevice, PollerWatchesEveryBlueFlameRegister) {
  DeviceConfig c = quick();
  c.dbell_poll = 1ms;
  auto d = make(c);
  std::mutex mu;
  std::vector<uint64_t> seen;
  d->set_bar0_write_handler([&](uint64_t off, uint64_t, unsigned w) {
    std::lock_guard lk(mu);
    if (w == 8) seen.push_back(off);
  });
  constexpr uint64_t kPage = 7 * 4096;
  d->watch_uar_page(7, true);
  for (uint64_t off = 0x800; off <= 0xF00; off += 0x100)
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(d->bar0().data() + kPage + off))
        .store(__builtin_bswap64(0x0000010A'00000003ull | (off << 8)), std::memory_order_release);
  ASSERT_TRUE(wait_for([&] {
    std::lock_guard lk(mu);
    return seen.size() >= 8;
  }));
  std::lock_guard lk(mu);
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(seen.size(), 8u);
  for (unsigned i = 0; i < 8; ++i) EXPECT_EQ(seen[i], kPage + 0x800 + i * 0x100);
}

TEST(SimPciDevice, DmaNeedsBusMaster) {
  auto d = make(quick());
  void* mem = std::aligned_alloc(4096, 4096);
  std::memset(mem, 0x5A, 4096);
  ASSERT_TRUE(d->dma_map().map(0x100000, mem, 4096, Iommu::kRead | Iommu::kWrite).is_ok());
  std::array<std::byte, 8> buf{};
  EXPECT_EQ(d->iommu().dma_read(0x100000, buf), KBV_ERR_IOMMU_FAULT);
  EXPECT_EQ(d->iommu().translate(0x100000, 8, Iommu::kRead), nullptr);
  EXPECT_EQ(d->iommu().fault_count(), 2u);
  enable_bus_master(*d);
  EXPECT_TRUE(d->iommu().dma_read(0x100000, buf).is_ok());
  EXPECT_EQ(buf[0], std::byte{0x5A});
  EXPECT_EQ(d->iommu().translate(0x100000, 8, Iommu::kRead), static_cast<std::byte*>(mem));
  uint64_t n = 0;
  ASSERT_TRUE(d->dma_map().unmap(0x100000, 4096, &n).is_ok());
  std::free(mem);
}

TEST(SimPciDevice, MsixSignalledOnlyWhenAssignedAndEnabled) {
  auto d = make(quick());
  const int efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(efd, 0);
  enable_bus_master(*d);
  ASSERT_TRUE(d->set_msix_eventfd(3, efd).is_ok());
  EXPECT_FALSE(d->raise_msix(3));  // MSI-X not enabled yet
  d->enable_msix();
  EXPECT_TRUE(d->raise_msix(3));
  EXPECT_TRUE(d->raise_msix(3));
  EXPECT_FALSE(d->raise_msix(2));   // unassigned
  EXPECT_FALSE(d->raise_msix(64));  // out of range
  uint64_t v = 0;
  ASSERT_EQ(::read(efd, &v, 8), 8);
  EXPECT_EQ(v, 2u);
  ASSERT_TRUE(d->set_msix_eventfd(3, -1).is_ok());
  EXPECT_FALSE(d->raise_msix(3));
  EXPECT_EQ(::read(efd, &v, 8), -1);  // nothing more signalled
  ASSERT_TRUE(d->set_msix_eventfd(3, efd).is_ok());
  d->disable_msix();
  EXPECT_FALSE(d->msix_assigned(3));
  EXPECT_FALSE(d->raise_msix(3));
  EXPECT_EQ(d->set_msix_eventfd(64, efd), KBV_ERR_INVALID_ARGUMENT);
  ::close(efd);
}

TEST(SimPciDevice, MsixNotDeliveredWithoutBusMaster) {
  auto d = make(quick());
  const int efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_TRUE(d->set_msix_eventfd(0, efd).is_ok());
  d->enable_msix();
  EXPECT_FALSE(d->raise_msix(0));
  enable_bus_master(*d);
  EXPECT_TRUE(d->raise_msix(0));
  ::close(efd);
}

}  // namespace
}  // namespace kbv::sim
