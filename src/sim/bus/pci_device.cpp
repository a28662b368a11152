// SPDX-License-Identifier: BSD-3-Clause
// PciDevice: identity, BAR0 init segment, MSI-X and reset of a model HCA
// function (see pci_device.hpp).
#include "sim/bus/pci_device.hpp"

#include "common/log.hpp"
#include "hca/prm/init_seg.hpp"
#include "hca/prm/uar.hpp"
#include "sim/bus/housekeeper.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

namespace kbv::sim {
namespace {

constexpr const char* kLog = "sim.pci";
using prm::init_seg;
// Pages of BAR0 that hold the init segment (0..0x2010, device.h mlx5_init_seg).
constexpr uint64_t kInitSegBytes = 0x3000;
// UAR pages (docs/PRM.md "UAR page", hca/prm/uar.hpp): the doorbell
// registers a driver stores to, with their widths — CQ doorbell (sn | cmd |
// ci, cqn), EQ doorbells (arm / update ci), and both halves of each of the
// page's four BlueFlame registers (a control segment's first 8 bytes at
// 0x800/0x900, 0xA00/0xB00, 0xC00/0xD00, 0xE00/0xF00: device.h
// MLX5_BFREGS_PER_UAR 4; a driver picks a register per QP, as kbv's does
// with qpn % 4 and rdma-core's mlx5 with its bfreg allocation, and
// alternates the halves per BlueFlame post).
constexpr uint64_t kUarPageBytes = prm::kUarPageSize;
constexpr auto kUarDoorbells = [] {
  std::array<std::pair<uint32_t, unsigned>, 3 + 2 * prm::kBfRegsPerUar> t{};
  t[0] = {prm::kUarCqDoorbellOff, 8};
  t[1] = {prm::kUarEqDoorbellArmOff, 4};
  t[2] = {prm::kUarEqDoorbellOff, 4};
  for (uint32_t k = 0; k < prm::kBfRegsPerUar; ++k) {
    const uint32_t bf = prm::uar_bf_offset(k, kLogBfRegSize);
    t[3 + 2 * k] = {bf, 8};
    t[4 + 2 * k] = {bf + prm::uar_bf_half_size(kLogBfRegSize), 8};
  }
  return t;
}();
static_assert(kUarDoorbells.back().first == 0xF00);

}  // namespace

Result<std::unique_ptr<PciDevice>> PciDevice::create(const DeviceConfig& cfg) {
  const uint64_t sz = cfg.bar0_size;
  if (sz < 0x4000 || (sz & (sz - 1)) != 0 || sz > (1ull << 32)) {
    log::error(kLog, "BAR0 size {:#x}: must be a power of two in [16 KiB, 4 GiB]", sz);
    return KBV_ERR_INVALID_ARGUMENT;
  }
  if (cfg.msix_vectors == 0 || cfg.msix_vectors > 256) {
    log::error(kLog, "{} MSI-X vectors: must be 1..256", cfg.msix_vectors);
    return KBV_ERR_INVALID_ARGUMENT;
  }
  if (!prm::cmdq_geometry_valid(cfg.log_cmdq_size, cfg.log_cmdq_stride) ||
      cfg.log_cmdq_stride < 6) {
    log::error(kLog, "bad command queue geometry {}/{}", cfg.log_cmdq_size, cfg.log_cmdq_stride);
    return KBV_ERR_INVALID_ARGUMENT;
  }
  const int fd = ::memfd_create("kbv-sim-bar0", MFD_CLOEXEC);
  if (fd < 0) return Status::from_errno(errno);
  if (::ftruncate(fd, static_cast<off_t>(sz)) != 0) {
    const int e = errno;
    ::close(fd);
    return Status::from_errno(e);
  }
  void* p = ::mmap(nullptr, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    ::close(fd);
    return Status::from_errno(e);
  }
  std::unique_ptr<PciDevice> d(new PciDevice(cfg, fd, static_cast<std::byte*>(p)));
  Housekeeper::instance().add(d.get());
  return d;
}

PciDevice::PciDevice(const DeviceConfig& cfg, int fd, std::byte* bar0)
    : cfg_(cfg),
      bar0_fd_(fd),
      bar0_(bar0),
      pci_cfg_(PciIdentity{cfg.vendor_id, cfg.device_id, cfg.subsystem_vendor_id, cfg.subsystem_id,
                           cfg.class_code, cfg.revision, cfg.bar0_size, cfg.msix_vectors}),
      msix_fds_(new int[cfg.msix_vectors]) {
  for (unsigned i = 0; i < cfg_.msix_vectors; ++i) msix_fds_[i] = -1;
  std::lock_guard lk(mu_);
  init_bar0();
}

PciDevice::~PciDevice() {
  Housekeeper::instance().remove(this);
  for (unsigned i = 0; i < cfg_.msix_vectors; ++i)
    if (msix_fds_[i] >= 0) ::close(msix_fds_[i]);
  ::munmap(bar0_, cfg_.bar0_size);
  ::close(bar0_fd_);
}

// ---- BAR0 registers --------------------------------------------------------

void PciDevice::store_be32(uint32_t off, uint32_t v) {
  std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(bar0_ + off))
      .store(__builtin_bswap32(v), std::memory_order_release);
}

uint32_t PciDevice::load_be32(uint32_t off) const {
  return __builtin_bswap32(std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(bar0_ + off))
                               .load(std::memory_order_acquire));
}

// Dword stores: other model threads may be reading these registers.
void PciDevice::fill_init_seg(uint32_t v) {
  for (uint64_t off = 0; off < kInitSegBytes; off += 4)
    std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(bar0_ + off))
        .store(v, std::memory_order_release);
}

void PciDevice::init_bar0() {
  // The init segment pages read as a freshly reset device's; UAR pages and
  // the MSI-X table are zeroed too (a reset loses all of them).
  fill_init_seg(0);
  // The rest of the BAR: give the pages back (a hole in the memfd reads as
  // zero) instead of touching all of it; fall back to memset.
  if (::fallocate(bar0_fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  static_cast<off_t>(kInitSegBytes),
                  static_cast<off_t>(cfg_.bar0_size - kInitSegBytes)) != 0)
    std::memset(bar0_ + kInitSegBytes, 0, cfg_.bar0_size - kInitSegBytes);
  // docs/PRM.md / device.h mlx5_init_seg: fw_rev = minor 31:16 | major 15:0.
  store_be32(init_seg::kFwRevOff, uint32_t{cfg_.fw_rev_minor} << 16 | cfg_.fw_rev_major);
  store_be32(init_seg::kCmdifRevFwSubOff, uint32_t{cfg_.cmdif_rev} << 16 | cfg_.fw_rev_subminor);
  // Read value of cmdq_addr_l_sz: log_cmdq_size 7:4, log_cmdq_stride 3:0.
  store_be32(init_seg::kCmdqAddrLSzOff,
             uint32_t{cfg_.log_cmdq_size} << 4 | (cfg_.log_cmdq_stride & 0xF));
  const auto now = std::chrono::steady_clock::now();
  reset_at_ns_.store(
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count(),
      std::memory_order_release);
  init_done_at_ = now + cfg_.init_time;
  init_pending_ = cfg_.init_time.count() > 0;
  store_be32(init_seg::kInitializingOff, init_pending_ ? prm::kInitializingBit : 0);
  counter_ = 0;
  next_health_ = now + cfg_.health_period;
  next_poll_ = now + cfg_.dbell_poll;
  polled_addr_[0] = load_be32(init_seg::kCmdqAddrHOff);
  polled_addr_[1] = load_be32(init_seg::kCmdqAddrLSzOff);
  fatal_.store(false, std::memory_order_release);
  gone_.store(false, std::memory_order_release);
}

std::chrono::steady_clock::time_point PciDevice::housekeep(
    std::chrono::steady_clock::time_point now) {
  std::unique_lock lk(mu_);
  const bool gone = gone_.load(std::memory_order_acquire);
  if (!gone && init_pending_ && now >= init_done_at_) {
    init_pending_ = false;
    store_be32(init_seg::kInitializingOff, 0);
  }
  if (now >= next_health_) {
    if (!gone) {
      const uint64_t ticks = timer_at(now);
      store_be32(init_seg::kInternalTimerHOff, static_cast<uint32_t>(ticks >> 32));
      store_be32(init_seg::kInternalTimerLOff, static_cast<uint32_t>(ticks));
      if (!fatal_.load(std::memory_order_acquire)) {
        counter_ = (counter_ + 1) & prm::kHealthCounterMask;
        store_be32(init_seg::kHealthCounterOff, counter_);
      }
    }
    next_health_ = now + cfg_.health_period;
  }
  auto next = next_health_;
  if (init_pending_) next = std::min(next, init_done_at_);
  uint32_t raw = 0;
  std::array<std::pair<uint32_t, uint32_t>, 2> addr_writes{};  // (offset, value) of changed regs
  unsigned n_addr = 0;
  struct UarWrite {
    uint64_t offset, value;
    unsigned width;
  };
  std::vector<UarWrite> uar_writes;
  if (cfg_.dbell_poll.count() > 0) {
    if (now >= next_poll_) {
      if (!gone) {
        // Untrapped stores to the queue address registers first (the driver
        // writes them before the first doorbell), then the doorbell itself.
        for (unsigned i = 0; i < 2; ++i) {
          const uint32_t off = i == 0 ? init_seg::kCmdqAddrHOff : init_seg::kCmdqAddrLSzOff;
          const uint32_t v = load_be32(off);
          if (v != polled_addr_[i]) {
            polled_addr_[i] = v;
            addr_writes[n_addr++] = {off, v};
          }
        }
        raw =
            std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(bar0_ + init_seg::kCmdDbellOff))
                .exchange(0, std::memory_order_acq_rel);
        for (const uint32_t page : watched_uars_) {
          for (const auto& [off, width] : kUarDoorbells) {
            const uint64_t at = uint64_t{page} * kUarPageBytes + off;
            const uint64_t ones = width == 8 ? ~uint64_t{0} : 0xFFFFFFFFu;
            const uint64_t v = take_register(at, width);
            if (v != ones) uar_writes.push_back({at, v, width});
          }
        }
      }
      next_poll_ = now + cfg_.dbell_poll;
    }
    next = std::min(next, next_poll_);
  }
  lk.unlock();
  for (unsigned i = 0; i < n_addr; ++i) deliver(addr_writes[i].first, addr_writes[i].second, 4);
  if (raw != 0) deliver(init_seg::kCmdDbellOff, __builtin_bswap32(raw), 4);
  for (const UarWrite& w : uar_writes) deliver(w.offset, w.value, w.width);
  return next;
}

// ---- watched UAR pages ----------------------------------------------------------

void PciDevice::watch_uar_page(uint32_t page, bool on) {
  if (cfg_.dbell_poll.count() <= 0) return;  // every store is trapped
  if (uint64_t{page + 1} * kUarPageBytes > cfg_.bar0_size || page < 2) return;
  std::lock_guard lk(mu_);
  auto it = std::find(watched_uars_.begin(), watched_uars_.end(), page);
  if (!on) {
    if (it != watched_uars_.end()) watched_uars_.erase(it);
    return;
  }
  if (it != watched_uars_.end()) return;
  for (const auto& [off, width] : kUarDoorbells)
    (void)take_register(uint64_t{page} * kUarPageBytes + off, width);  // all-ones: "no store"
  watched_uars_.push_back(page);
}

unsigned PciDevice::watched_width(uint64_t offset) const {
  const uint64_t page = offset / kUarPageBytes;
  if (std::find(watched_uars_.begin(), watched_uars_.end(), page) == watched_uars_.end()) return 0;
  for (const auto& [off, width] : kUarDoorbells)
    if (offset % kUarPageBytes == off) return width;
  return 0;
}

uint64_t PciDevice::take_register(uint64_t offset, unsigned width) {
  std::byte* p = bar0_ + offset;
  if (width == 8)
    return __builtin_bswap64(std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(p))
                                 .exchange(~uint64_t{0}, std::memory_order_acq_rel));
  return __builtin_bswap32(std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(p))
                               .exchange(0xFFFFFFFFu, std::memory_order_acq_rel));
}

// ---- writes -----------------------------------------------------------------

void PciDevice::set_bar0_write_handler(WriteHandler h) {
  std::lock_guard lk(handler_mu_);
  std::unique_ptr<WriteHandler> next = h ? std::make_unique<WriteHandler>(std::move(h)) : nullptr;
  write_handler_.store(next.get(), std::memory_order_seq_cst);
  // Quiescence: a caller that loaded the old pointer incremented write_calls_
  // first (both seq_cst), so it is counted here until its call returns.
  while (write_calls_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  write_owned_ = std::move(next);  // the old handler is destroyed here
}

void PciDevice::set_reset_handler(std::function<void()> h) {
  std::lock_guard call(reset_call_mu_);  // waits for a reset handler call in progress
  std::lock_guard lk(mu_);
  reset_handler_ = std::move(h);
}

void PciDevice::deliver(uint64_t offset, uint64_t value, unsigned width) {
  write_calls_.fetch_add(1, std::memory_order_seq_cst);
  if (WriteHandler* h = write_handler_.load(std::memory_order_seq_cst)) (*h)(offset, value, width);
  write_calls_.fetch_sub(1, std::memory_order_release);
}

bool PciDevice::memory_enabled() const {
  return command_.load(std::memory_order_acquire) & PciConfig::kCmdMemory;
}

void PciDevice::on_bar0_write(uint64_t offset, uint64_t value, unsigned width) {
  // A device that left the bus, or whose memory decoding is off, never sees
  // the write (PCI: the request is not claimed).
  if (gone_.load(std::memory_order_acquire) || !memory_enabled()) return;
  if (offset == init_seg::kCmdDbellOff && width == 4) {
    // Consume the doorbell: deliver what is in the register (the trapped
    // store plus anything not yet polled) exactly once, in CPU order like
    // every trapped value (platform/sys.hpp MmioTrap).
    const uint32_t raw =
        std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(bar0_ + init_seg::kCmdDbellOff))
            .exchange(0, std::memory_order_acq_rel);
    if (raw != 0) deliver(offset, __builtin_bswap32(raw), width);
    return;
  }
  if (cfg_.dbell_poll.count() > 0) {
    // A trapped store to a polled doorbell register: delivered now, and the
    // register set back to "no store" so the poller does not deliver it again.
    std::unique_lock lk(mu_);
    if (const unsigned w = watched_width(offset); w == width) (void)take_register(offset, w);
  }
  deliver(offset, value, width);
}

// ---- config space -------------------------------------------------------------

void PciDevice::config_read(uint32_t off, std::span<std::byte> dst) const {
  if (gone_.load(std::memory_order_acquire)) {
    std::memset(dst.data(), 0xFF, dst.size());
    return;
  }
  std::lock_guard lk(mu_);
  pci_cfg_.read(off, dst);
}

void PciDevice::config_write(uint32_t off, std::span<const std::byte> src) {
  if (gone_.load(std::memory_order_acquire)) return;
  std::lock_guard lk(mu_);
  pci_cfg_.write(off, src);
  command_.store(pci_cfg_.command(), std::memory_order_release);
}

bool PciDevice::bus_master() const {
  return (command_.load(std::memory_order_acquire) & PciConfig::kCmdBusMaster) &&
         !gone_.load(std::memory_order_acquire);
}

// ---- DMA through the function ---------------------------------------------------

Status PciDevice::BusIommu::dma_read(uint64_t iova, std::span<std::byte> dst) {
  if (!d_.bus_master())
    return d_.dma_map_.fault(iova, dst.size(), DmaDir::kRead, "bus mastering disabled");
  return d_.dma_map_.dma_read(iova, dst);
}

Status PciDevice::BusIommu::dma_write(uint64_t iova, std::span<const std::byte> src) {
  if (!d_.bus_master())
    return d_.dma_map_.fault(iova, src.size(), DmaDir::kWrite, "bus mastering disabled");
  return d_.dma_map_.dma_write(iova, src);
}

std::byte* PciDevice::BusIommu::translate(uint64_t iova, uint64_t len, uint32_t perm) {
  if (!d_.bus_master()) {
    (void)d_.dma_map_.fault(iova, len, (perm & kWrite) ? DmaDir::kWrite : DmaDir::kRead,
                            "bus mastering disabled");
    return nullptr;
  }
  return d_.dma_map_.translate(iova, len, perm);
}

// ---- MSI-X ------------------------------------------------------------------------

bool PciDevice::raise_msix(unsigned vector) {
  if (vector >= cfg_.msix_vectors || !msix_enabled() || !bus_master()) return false;
  std::shared_lock lk(irq_mu_);
  const int fd = msix_fds_[vector];
  if (fd < 0) return false;
  const uint64_t one = 1;
  return ::write(fd, &one, sizeof one) == static_cast<ssize_t>(sizeof one);
}

void PciDevice::enable_msix() {
  {
    std::lock_guard lk(mu_);
    pci_cfg_.set_msix_enabled(true);
  }
  msix_enabled_.store(true, std::memory_order_release);
}

Status PciDevice::set_msix_eventfd(unsigned v, int fd) {
  if (v >= cfg_.msix_vectors) return KBV_ERR_INVALID_ARGUMENT;
  int dup = -1;
  if (fd >= 0) {
    dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) return Status::from_errno(errno);
  }
  int old;
  {
    std::unique_lock lk(irq_mu_);
    old = msix_fds_[v];
    msix_fds_[v] = dup;
  }
  if (old >= 0) ::close(old);
  return Status::ok();
}

bool PciDevice::msix_assigned(unsigned v) const {
  if (v >= cfg_.msix_vectors) return false;
  std::shared_lock lk(irq_mu_);
  return msix_fds_[v] >= 0;
}

void PciDevice::disable_msix() {
  for (unsigned v = 0; v < cfg_.msix_vectors; ++v) (void)set_msix_eventfd(v, -1);
  msix_enabled_.store(false, std::memory_order_release);
  std::lock_guard lk(mu_);
  pci_cfg_.set_msix_enabled(false);
}

// ---- reset and test hooks ---------------------------------------------------------

void PciDevice::reset() {
  std::lock_guard call(reset_call_mu_);  // set_reset_handler waits for this call
  std::function<void()> handler;
  {
    std::lock_guard lk(mu_);
    init_bar0();
    watched_uars_.clear();  // a reset forgets every UAR allocation
    handler = reset_handler_;
  }
  log::info(kLog, "function reset");
  Housekeeper::instance().wake();
  if (handler) handler();
}

void PciDevice::set_device_gone(bool gone) {
  std::lock_guard lk(mu_);
  gone_.store(gone, std::memory_order_release);
  // A function that left the bus reads all-ones (health.c sensor_pci_not_working).
  if (gone) fill_init_seg(0xFFFFFFFFu);
  log::warn(kLog, "test hook: device {}", gone ? "gone" : "back (needs reset)");
}

void PciDevice::inject_health_fatal(uint8_t synd, uint16_t ext_synd) {
  std::lock_guard lk(mu_);
  fatal_.store(true, std::memory_order_release);
  // Health buffer (prm/init_seg.hpp health_buffer): rfr bit 31 of 0x238;
  // irisc_index 0x23C, synd 0x23D, ext_synd 0x23E in one dword.
  store_be32(init_seg::kHealthRfrOff, prm::kHealthRfrBit);
  store_be32(init_seg::kHealthIriscIndexOff, uint32_t{synd} << 16 | ext_synd);
  log::warn(kLog, "test hook: health fatal synd {:#x} ({}) ext_synd {:#x}", synd,
            prm::health_syndrome_name(synd), ext_synd);
}

void PciDevice::inject_health_assert(const HealthAssert& a) {
  {
    std::lock_guard lk(mu_);
    using prm::health_buffer;
    for (uint32_t i = 0; i < a.assert_var.size(); ++i)
      store_be32(init_seg::kHealthOff + health_buffer::assert_var.byte_off(i), a.assert_var[i]);
    store_be32(init_seg::kHealthOff + health_buffer::assert_callra.off / 8, a.assert_callra);
    store_be32(init_seg::kHealthFwVerOff, load_be32(init_seg::kFwRevOff));
    store_be32(init_seg::kHealthHwIdOff, cfg_.device_id);
  }
  inject_health_fatal(a.synd, a.ext_synd);
  std::lock_guard lk(mu_);
  const uint32_t dw = load_be32(init_seg::kHealthIriscIndexOff);
  store_be32(init_seg::kHealthIriscIndexOff, (dw & 0x00FFFFFFu) | uint32_t{a.irisc_index} << 24);
}

uint64_t PciDevice::timer_at(std::chrono::steady_clock::time_point now) const {
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() -
      reset_at_ns_.load(std::memory_order_acquire);
  if (ns <= 0) return 0;
  return static_cast<uint64_t>(static_cast<unsigned __int128>(ns) * cfg_.timer_khz / 1000000);
}

uint64_t PciDevice::internal_timer() const {
  if (gone_.load(std::memory_order_acquire)) return 0;
  return timer_at(std::chrono::steady_clock::now());
}

bool PciDevice::initializing() const {
  return load_be32(init_seg::kInitializingOff) & prm::kInitializingBit;
}

uint32_t PciDevice::health_counter() const {
  return load_be32(init_seg::kHealthCounterOff) & prm::kHealthCounterMask;
}

}  // namespace kbv::sim
