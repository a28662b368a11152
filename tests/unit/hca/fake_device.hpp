// SPDX-License-Identifier: BSD-3-Clause
//
// A fake PCI function for unit tests of src/hca: BAR0 is ordinary memory, DMA
// memory is host memory with made-up IOVAs, time is a number the test sets.
// The test plays firmware with FakeFw: it reads posted command entries and
// mailbox chains, writes outputs and ownership, and writes EQEs.
//
// Not a model of the HCA (that is src/sim): it only does what a test tells it.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "hca/io/device_io.hpp"
#include "hca/io/reg.hpp"
#include "hca/prm/cmd_hdr.hpp"
#include "hca/prm/cmdq.hpp"
#include "hca/prm/eqe.hpp"
#include "hca/prm/init_seg.hpp"

namespace kbv::hca::test {

struct MmioWrite {
  uint64_t offset;
  uint64_t value;
  unsigned width;
};

class FakeDevice : public DeviceIo, public platform::MmioTrap {
 public:
  static constexpr size_t kBarBytes = 1 << 20;

  explicit FakeDevice(uint32_t log_size = 5, uint32_t log_stride = 6)
      : mem_(static_cast<std::byte*>(std::aligned_alloc(4096, kBarBytes))),
        bar_(mem_, kBarBytes, this),
        geometry_(log_size << 4 | log_stride) {
    std::memset(mem_, 0, kBarBytes);
    set_reg32(prm::init_seg::kFwRevOff, 0x000e0010);  // 16.14
    set_reg32(prm::init_seg::kCmdifRevFwSubOff, prm::kCmdifRev << 16 | 0x1234);
    set_reg32(prm::init_seg::kCmdqAddrLSzOff, geometry_);
  }
  ~FakeDevice() override {
    for (auto& [iova, b] : dma_) std::free(b.va);
    std::free(mem_);
  }

  // ---- DeviceIo
  const platform::Bar& bar0() const override { return bar_; }
  Result<DmaBlock> dma_alloc(size_t size, size_t align) override {
    if (fail_dma) return Status{KBV_ERR_NO_MEMORY};
    const size_t a = align < 64 ? 64 : align;
    next_iova_ = (next_iova_ + a - 1) / a * a;
    const size_t rounded = (size + a - 1) / a * a;
    DmaBlock b{static_cast<std::byte*>(std::aligned_alloc(a, rounded)), next_iova_, size};
    std::memset(b.va, 0, rounded);
    next_iova_ += rounded;
    dma_[b.iova] = b;
    ++dma_allocs;
    return b;
  }
  void dma_free(const DmaBlock& b) override {
    auto it = dma_.find(b.iova);
    ASSERT_NE(it, dma_.end()) << "dma_free of an unknown block";
    EXPECT_EQ(it->second.va, b.va);
    std::free(it->second.va);
    dma_.erase(it);
  }
  Result<int> msix_eventfd(uint32_t vector) override {
    if (eventfds_.count(vector)) return eventfds_[vector];
    return Status{KBV_ERR_NOT_SUPPORTED};
  }
  uint64_t now_ns() const override {
    now += auto_tick;
    return now;
  }
  Status enable_device(uint32_t msix_vectors) override {
    ++enable_calls;
    enabled_vectors = msix_vectors;
    return Status::ok();
  }
  void disable_device() override { ++disable_calls; }

  // ---- MmioTrap: records every store; keeps the geometry readable.
  void on_write(uint64_t offset, uint64_t value, unsigned width) override {
    writes.push_back({offset, value, width});
    if (offset == prm::init_seg::kCmdDbellOff) doorbells.push_back(static_cast<uint32_t>(value));
    if (offset == prm::init_seg::kCmdqAddrHOff) cmdq_iova_h = static_cast<uint32_t>(value);
    if (offset == prm::init_seg::kCmdqAddrLSzOff) {
      cmdq_iova_l = static_cast<uint32_t>(value);
      set_reg32(prm::init_seg::kCmdqAddrLSzOff, geometry_);  // reads return the geometry
    }
  }

  // ---- test side
  std::byte* va(uint64_t iova) {
    auto it = dma_.upper_bound(iova);
    if (it == dma_.begin()) return nullptr;
    --it;
    if (iova >= it->first + it->second.size) return nullptr;
    return it->second.va + (iova - it->first);
  }
  void set_reg32(uint64_t off, uint32_t v) { platform::mmio_write32_be(mem_ + off, v); }
  uint32_t reg32(uint64_t off) const { return platform::mmio_read32_be(mem_ + off); }
  std::byte* bar_mem() { return mem_; }
  size_t live_dma() const { return dma_.size(); }
  uint64_t cmdq_iova() const { return uint64_t{cmdq_iova_h} << 32 | cmdq_iova_l; }
  void set_eventfd(uint32_t vector, int fd) { eventfds_[vector] = fd; }
  // Writes to one register offset, in order.
  std::vector<uint64_t> writes_to(uint64_t off) const {
    std::vector<uint64_t> v;
    for (const MmioWrite& w : writes)
      if (w.offset == off) v.push_back(w.value);
    return v;
  }

  mutable uint64_t now = 1'000'000;
  uint64_t auto_tick = 0;  // added to `now` by every now_ns() call
  bool fail_dma = false;
  size_t dma_allocs = 0;
  int enable_calls = 0, disable_calls = 0;
  uint32_t enabled_vectors = 0;
  std::vector<MmioWrite> writes;
  std::vector<uint32_t> doorbells;
  uint32_t cmdq_iova_h = 0, cmdq_iova_l = 0;

 private:
  std::byte* mem_;
  platform::Bar bar_;
  uint32_t geometry_;
  uint64_t next_iova_ = 0x10000000;
  std::map<uint64_t, DmaBlock> dma_;
  std::map<uint32_t, int> eventfds_;
};

// The test's firmware side of the command queue.
class FakeFw {
 public:
  explicit FakeFw(FakeDevice& dev, uint32_t log_stride = 6) : dev_(dev), log_stride_(log_stride) {}

  std::byte* entry(uint32_t slot) {
    std::byte* q = dev_.va(dev_.cmdq_iova());
    EXPECT_NE(q, nullptr);
    return q + (size_t{slot} << log_stride_);
  }
  prm::Ref<prm::cmd_layout> ent(uint32_t slot) { return prm::Ref<prm::cmd_layout>(entry(slot)); }
  bool hw_owned(uint32_t slot) { return ent(slot).get(prm::cmd_layout::ownership) == 1; }

  // Slots rung since the last call, in doorbell order.
  std::vector<uint32_t> rung() {
    std::vector<uint32_t> v;
    for (uint32_t d : dev_.doorbells)
      for (uint32_t i = 0; i < 32; ++i)
        if (d & (1u << i)) v.push_back(i);
    dev_.doorbells.clear();
    return v;
  }

  // Walks a mailbox chain, checking block numbers and tokens.
  std::vector<std::byte*> chain(uint64_t iova, uint32_t nblocks, uint8_t token) {
    std::vector<std::byte*> blocks;
    for (uint32_t i = 0; i < nblocks; ++i) {
      EXPECT_NE(iova, 0u) << "chain ends early at block " << i;
      EXPECT_EQ(iova % 1024, 0u);
      std::byte* b = dev_.va(iova);
      if (!b) return blocks;
      prm::CRef<prm::cmd_prot_block> r(b);
      EXPECT_EQ(r.get(prm::cmd_prot_block::block_num), i);
      EXPECT_EQ(r.get(prm::cmd_prot_block::token), token);
      blocks.push_back(b);
      iova = r.get(prm::cmd_prot_block::next);
    }
    EXPECT_EQ(iova, 0u) << "chain longer than expected";
    return blocks;
  }

  // The whole input of a posted command (inline + mailboxes).
  std::vector<std::byte> input(uint32_t slot) {
    auto e = ent(slot);
    const uint32_t len = static_cast<uint32_t>(e.get(prm::cmd_layout::inlen));
    std::vector<std::byte> in(len);
    std::memcpy(in.data(), e.bytes(prm::cmd_layout::in).data(), std::min<uint32_t>(16, len));
    auto blocks = chain(e.get(prm::cmd_layout::in_ptr), prm::mailbox_blocks(len),
                        static_cast<uint8_t>(e.get(prm::cmd_layout::token)));
    for (size_t i = 0; i < blocks.size(); ++i) {
      const size_t off = 16 + i * 512;
      std::memcpy(in.data() + off, blocks[i], std::min<size_t>(512, len - off));
    }
    return in;
  }
  uint16_t opcode(uint32_t slot) {
    auto in = input(slot);
    return static_cast<uint16_t>(prm::CRef<prm::mbox_in>(in.data()).get(prm::mbox_in::opcode));
  }
  uint16_t op_mod(uint32_t slot) {
    auto in = input(slot);
    return static_cast<uint16_t>(prm::CRef<prm::mbox_in>(in.data()).get(prm::mbox_in::op_mod));
  }
  uint32_t outlen(uint32_t slot) {
    return static_cast<uint32_t>(ent(slot).get(prm::cmd_layout::outlen));
  }

  // Writes `out` (padded with zeros to the entry's outlen) and hands the slot
  // back. Status byte and syndrome are whatever `out` holds.
  void complete(uint32_t slot, std::vector<std::byte> out, uint8_t delivery = 0) {
    auto e = ent(slot);
    const uint32_t len = outlen(slot);
    out.resize(len);
    e.set_bytes(prm::cmd_layout::out, std::span<const std::byte>(out).first(16));
    auto blocks = chain(e.get(prm::cmd_layout::out_ptr), prm::mailbox_blocks(len),
                        static_cast<uint8_t>(e.get(prm::cmd_layout::token)));
    for (size_t i = 0; i < blocks.size(); ++i) {
      const size_t off = 16 + i * 512;
      std::memcpy(blocks[i], out.data() + off, std::min<size_t>(512, len - off));
    }
    e.set(prm::cmd_layout::status_own, static_cast<uint8_t>(delivery << 1));
  }
  // A success output with no payload beyond the header (fields zero).
  void ok(uint32_t slot) { complete(slot, std::vector<std::byte>(16)); }
  void fail(uint32_t slot, uint8_t status, uint32_t syndrome) {
    std::vector<std::byte> out(16);
    prm::Ref<prm::mbox_out> o(out.data());
    o.set(prm::mbox_out::status, status);
    o.set(prm::mbox_out::syndrome, syndrome);
    complete(slot, out);
  }

 private:
  FakeDevice& dev_;
  uint32_t log_stride_;
};

// A command input of `len` bytes with the given opcode / op_mod and a byte
// pattern after the header (byte i = i * 7 + 3), for encoding tests.
inline std::vector<std::byte> make_input(uint16_t opcode, uint16_t op_mod, size_t len) {
  std::vector<std::byte> in(len);
  for (size_t i = 8; i < len; ++i) in[i] = static_cast<std::byte>(i * 7 + 3);
  prm::Ref<prm::mbox_in> h(in.data());
  h.set(prm::mbox_in::opcode, opcode);
  h.set(prm::mbox_in::uid, 0);
  h.set(prm::mbox_in::op_mod, op_mod);
  return in;
}

}  // namespace kbv::hca::test
