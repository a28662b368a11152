// SPDX-License-Identifier: BSD-3-Clause
//
// A device for fuzzing the driver's side (src/hca) without gtest: BAR0 is
// ordinary memory, DMA memory is host memory with made-up IOVAs, time is a
// number the fuzzer advances. HostileFw plays firmware: it answers the
// command queue with plausible outputs (enough for bring-up: the byte
// offsets of mlx5_ifc.h, as tests/unit/hca/scripted_fw.hpp) that the fuzz
// input may replace, corrupt or withhold, and writes EQEs of its choosing
// into the EQs the driver created.
//
// Everything the driver reads from the device goes through here, so a crash
// or sanitizer report while the driver handles it is a driver bug.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "hca/io/device_io.hpp"
#include "hca/prm/init_seg.hpp"

namespace kbv::fuzz {

class HostileDevice : public hca::DeviceIo, public platform::MmioTrap {
 public:
  static constexpr size_t kBarBytes = 1 << 16;  // init segment, health, UAR pages 0..15
  static constexpr size_t kMaxDmaBytes = 64u << 20;

  HostileDevice()
      : mem_(static_cast<std::byte*>(std::aligned_alloc(4096, kBarBytes))),
        bar_(mem_, kBarBytes, this) {
    std::memset(mem_, 0, kBarBytes);
    set_reg32(prm::init_seg::kFwRevOff, 0x000e0010);
    set_reg32(prm::init_seg::kCmdifRevFwSubOff, prm::kCmdifRev << 16 | 0x1234);
    set_reg32(prm::init_seg::kCmdqAddrLSzOff, kGeometry);
  }
  ~HostileDevice() override {
    for (auto& [iova, b] : dma_) std::free(b.va);
    std::free(mem_);
  }

  const platform::Bar& bar0() const override { return bar_; }
  Result<hca::DmaBlock> dma_alloc(size_t size, size_t align) override {
    const size_t a = align < 64 ? 64 : align;
    // A driver that believes the device's page demands would exhaust the
    // host: the "host" refuses beyond kMaxDmaBytes, as a real IOMMU mapping
    // limit would.
    if (size == 0 || size > kMaxDmaBytes || dma_bytes_ + size > kMaxDmaBytes)
      return Status{KBV_ERR_NO_MEMORY};
    next_iova_ = (next_iova_ + a - 1) / a * a;
    const size_t rounded = (size + a - 1) / a * a;
    hca::DmaBlock b{static_cast<std::byte*>(std::aligned_alloc(a, rounded)), next_iova_, size};
    if (!b.va) return Status{KBV_ERR_NO_MEMORY};
    std::memset(b.va, 0, rounded);
    next_iova_ += rounded;
    dma_[b.iova] = b;
    dma_bytes_ += size;
    return b;
  }
  void dma_free(const hca::DmaBlock& b) override {
    auto it = dma_.find(b.iova);
    if (it == dma_.end() || it->second.va != b.va) std::abort();  // a driver bug
    dma_bytes_ -= it->second.size;
    std::free(it->second.va);
    dma_.erase(it);
  }
  Result<int> msix_eventfd(uint32_t) override { return Status{KBV_ERR_NOT_SUPPORTED}; }
  uint64_t now_ns() const override { return now; }
  Status enable_device(uint32_t) override { return Status::ok(); }
  void disable_device() override {}

  void on_write(uint64_t offset, uint64_t value, unsigned) override {
    if (offset == prm::init_seg::kCmdDbellOff) doorbells |= static_cast<uint32_t>(value);
    if (offset == prm::init_seg::kCmdqAddrHOff) cmdq_h = static_cast<uint32_t>(value);
    if (offset == prm::init_seg::kCmdqAddrLSzOff) {
      cmdq_l = static_cast<uint32_t>(value) & ~0xFFFu;
      set_reg32(prm::init_seg::kCmdqAddrLSzOff, kGeometry);
    }
  }

  // Host address of [iova, iova + len) inside one DMA block, or null.
  std::byte* va(uint64_t iova, size_t len = 1) {
    auto it = dma_.upper_bound(iova);
    if (it == dma_.begin()) return nullptr;
    --it;
    if (iova < it->first || iova - it->first + len > it->second.size) return nullptr;
    return it->second.va + (iova - it->first);
  }
  void set_reg32(uint64_t off, uint32_t v) { platform::mmio_write32_be(mem_ + off, v); }
  std::byte* bar_mem() { return mem_; }
  size_t live_dma() const { return dma_.size(); }
  // Prints the blocks still allocated (for a leak report).
  void dump_dma() const {
    for (const auto& [iova, b] : dma_)
      std::fprintf(stderr, "  live DMA block iova %#llx, %zu bytes\n",
                   static_cast<unsigned long long>(iova), b.size);
  }
  uint64_t cmdq_iova() const { return uint64_t{cmdq_h} << 32 | cmdq_l; }

  static constexpr uint32_t kGeometry = 5u << 4 | 6u;  // 32 slots of 64 bytes
  mutable uint64_t now = 1'000'000;
  uint32_t doorbells = 0;
  uint32_t cmdq_h = 0, cmdq_l = 0;

 private:
  std::byte* mem_;
  platform::Bar bar_;
  uint64_t next_iova_ = 0x10000000;
  size_t dma_bytes_ = 0;
  std::map<uint64_t, hca::DmaBlock> dma_;
};

// Big-endian helpers on a byte vector (bounds-checked: a short output is
// the fuzzer's business, never an overflow here).
inline uint32_t be32_at(const std::vector<std::byte>& v, size_t i) {
  if (i + 4 > v.size()) return 0;
  return uint32_t(v[i]) << 24 | uint32_t(v[i + 1]) << 16 | uint32_t(v[i + 2]) << 8 |
         uint32_t(v[i + 3]);
}
inline void put32_at(std::vector<std::byte>& v, size_t i, uint32_t x) {
  if (i + 4 > v.size()) return;
  for (int k = 0; k < 4; ++k) v[i + k] = static_cast<std::byte>(x >> (24 - 8 * k));
}
inline void put32_mem(std::byte* p, uint32_t x) {
  for (int k = 0; k < 4; ++k) p[k] = static_cast<std::byte>(x >> (24 - 8 * k));
}

}  // namespace kbv::fuzz
