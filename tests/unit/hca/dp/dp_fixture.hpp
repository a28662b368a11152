// SPDX-License-Identifier: BSD-3-Clause
// Shared setup of the data-path tests (dp/sq_test, dp/rq_test, dp/cq_test):
// rings and doorbell records in the fake device's DMA memory, BAR0 as
// memory, and big-endian readers for golden-byte checks.
#pragma once

#include <endian.h>

#include <cstring>

#include "../fake_device.hpp"
#include "hca/dp/cq.hpp"
#include "hca/dp/rq.hpp"
#include "hca/dp/sq.hpp"
#include "hca/prm/qpc.hpp"

namespace kbv::hca::test {

inline uint32_t be32_at(const std::byte* p, size_t off) {
  uint32_t v;
  std::memcpy(&v, p + off, 4);
  return be32toh(v);
}
inline uint16_t be16_at(const std::byte* p, size_t off) {
  uint16_t v;
  std::memcpy(&v, p + off, 2);
  return be16toh(v);
}
inline uint64_t be64_at(const std::byte* p, size_t off) {
  uint64_t v;
  std::memcpy(&v, p + off, 8);
  return be64toh(v);
}

class DpFixture : public ::testing::Test {
 public:
  // UAR page 1, first BlueFlame register (512 B: halves of 256 B).
  static constexpr uint64_t kBf = 0x1000 + 0x800;
  static constexpr uint32_t kBfSize = 512;
  static constexpr uint32_t kQpn = 0x12345;

 protected:
  DmaBlock alloc(size_t bytes) {
    auto b = dev.dma_alloc(bytes, 4096);
    EXPECT_TRUE(b.has_value());
    blocks.push_back(*b);
    return *b;
  }
  void TearDown() override {
    for (const DmaBlock& b : blocks) dev.dma_free(b);
  }
  volatile uint32_t* dbrec() {
    if (!dbr.valid()) dbr = alloc(64);
    return reinterpret_cast<volatile uint32_t*>(dbr.va);
  }
  uint32_t dbrec_word(int i) { return be32toh(dbrec()[i]); }

  SqConfig sq_config(uint32_t st, uint32_t log_blocks, uint32_t max_sge = 4,
                     uint32_t max_inline = 64) {
    sq_ring = alloc(size_t{64} << log_blocks);
    SqConfig c;
    c.ring = sq_ring.va;
    c.log_blocks = log_blocks;
    c.dbrec = dbrec();
    c.bar = &dev.bar0();
    c.bf_offset = kBf;
    c.bf_reg_size = kBfSize;
    c.bf_copy = true;
    c.qpn = kQpn;
    c.st = st;
    c.max_sge = max_sge;
    c.max_inline = max_inline;
    return c;
  }
  // Byte `off` of basic block `bb` of the send ring.
  const std::byte* sq_bb(uint32_t bb) const { return sq_ring.va + size_t{bb} * 64; }

  FakeDevice dev;
  std::vector<DmaBlock> blocks;
  DmaBlock dbr, sq_ring;
};

}  // namespace kbv::hca::test
