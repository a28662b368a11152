// SPDX-License-Identifier: BSD-3-Clause
//
// Test support for the model's data-path front end (src/sim/engine): host
// memory mapped in an IommuMap, a QP / SRQ / CQ whose rings live in it, and
// big-endian writers for hand-built WQEs (layouts: rdma-core mlx5dv.h).
//
// Threading: test thread only.
#pragma once

#include "sim/bus/iommu_map.hpp"
#include "sim/fw/objects/tables.hpp"

#include <gtest/gtest.h>
#include <infiniband/mlx5dv.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

namespace kbv::sim::engine::test {

inline void be32_at(std::byte* p, uint32_t v) {
  p[0] = std::byte(v >> 24);
  p[1] = std::byte(v >> 16);
  p[2] = std::byte(v >> 8);
  p[3] = std::byte(v);
}
inline void be64_at(std::byte* p, uint64_t v) {
  be32_at(p, uint32_t(v >> 32));
  be32_at(p + 4, uint32_t(v));
}
inline uint32_t rd32(const std::byte* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// kPages pages of host memory mapped read/write at kIova.
class HostMem {
 public:
  static constexpr uint64_t kIova = 0x100000;
  static constexpr std::size_t kPages = 32;
  static constexpr std::size_t kBytes = kPages * 4096;

  HostMem() : mem_(static_cast<std::byte*>(std::aligned_alloc(4096, kBytes)), &std::free) {
    std::memset(mem_.get(), 0, kBytes);
    EXPECT_TRUE(iommu.map(kIova, mem_.get(), kBytes, Iommu::kRead | Iommu::kWrite).is_ok());
  }
  std::byte* at(uint64_t iova) { return mem_.get() + (iova - kIova); }

  IommuMap iommu;

 private:
  std::unique_ptr<std::byte, decltype(&std::free)> mem_;
};

// A QP whose RQ (4 x 64 B) and SQ (4 basic blocks) share page 0 of `mem`:
// RQ at kIova, SQ at kIova + 256.
inline fw::Qp make_qp(uint32_t st, uint32_t qpn = 0x123) {
  fw::Qp qp;
  qp.qpn = qpn;
  qp.st = st;
  qp.pd = 1;
  qp.log_sq_size = 2;
  qp.log_rq_size = 2;
  qp.log_rq_stride = 2;
  qp.buf.log_page_size = 0;
  qp.buf.pas = {HostMem::kIova};
  qp.rq_bytes = 256;
  qp.sq_offset = 256;
  qp.sq_bytes = 256;
  qp.log_msg_max = 30;
  return qp;
}

// Writes `bytes` into the SQ of make_qp starting at basic block `bb`,
// wrapping at the ring end as a driver does.
inline void put_sq(HostMem& m, const fw::Qp& qp, uint32_t bb, std::span<const std::byte> bytes) {
  const uint64_t ring = uint64_t{64} << qp.log_sq_size;
  uint64_t pos = (bb & ((1u << qp.log_sq_size) - 1)) * 64;
  for (std::byte b : bytes) {
    *m.at(HostMem::kIova + qp.sq_offset + pos) = b;
    pos = (pos + 1) % ring;
  }
}

// A WQE image under construction: ctrl at 0, segments appended.
struct WqeBuilder {
  std::byte b[1024]{};
  std::size_t len = sizeof(mlx5_wqe_ctrl_seg);

  WqeBuilder& ctrl(uint8_t opcode, uint16_t idx, uint32_t qpn, uint8_t fm_ce_se = 0,
                   uint32_t imm = 0, uint8_t opmod = 0) {
    be32_at(b + offsetof(mlx5_wqe_ctrl_seg, opmod_idx_opcode),
            uint32_t{opmod} << 24 | uint32_t{idx} << 8 | opcode);
    b[offsetof(mlx5_wqe_ctrl_seg, fm_ce_se)] = std::byte(fm_ce_se);
    be32_at(b + offsetof(mlx5_wqe_ctrl_seg, imm), imm);
    qpn_ = qpn;
    return *this;
  }
  WqeBuilder& raddr(uint64_t va, uint32_t rkey) {
    be64_at(b + len + offsetof(mlx5_wqe_raddr_seg, raddr), va);
    be32_at(b + len + offsetof(mlx5_wqe_raddr_seg, rkey), rkey);
    len += sizeof(mlx5_wqe_raddr_seg);
    return *this;
  }
  WqeBuilder& atomic(uint64_t swap_add, uint64_t compare) {
    be64_at(b + len + offsetof(mlx5_wqe_atomic_seg, swap_add), swap_add);
    be64_at(b + len + offsetof(mlx5_wqe_atomic_seg, compare), compare);
    len += sizeof(mlx5_wqe_atomic_seg);
    return *this;
  }
  WqeBuilder& datagram(uint32_t qkey, uint32_t dqpn, uint8_t last_gid_byte) {
    std::byte* a = b + len;
    be32_at(a + offsetof(mlx5_wqe_av, key.qkey.qkey), qkey);
    be32_at(a + offsetof(mlx5_wqe_av, dqp_dct), MLX5_EXTENDED_UD_AV | dqpn);
    a[offsetof(mlx5_wqe_av, hop_limit)] = std::byte(64);
    a[offsetof(mlx5_wqe_av, rmac) + 5] = std::byte(0x42);
    a[offsetof(mlx5_wqe_av, rgid) + 15] = std::byte(last_gid_byte);
    len += sizeof(mlx5_wqe_datagram_seg);
    return *this;
  }
  WqeBuilder& data(uint32_t byte_count, uint32_t lkey, uint64_t addr) {
    be32_at(b + len + offsetof(mlx5_wqe_data_seg, byte_count), byte_count);
    be32_at(b + len + offsetof(mlx5_wqe_data_seg, lkey), lkey);
    be64_at(b + len + offsetof(mlx5_wqe_data_seg, addr), addr);
    len += sizeof(mlx5_wqe_data_seg);
    return *this;
  }
  WqeBuilder& inl(std::span<const std::byte> bytes) {
    be32_at(b + len, MLX5_INLINE_SEG | uint32_t(bytes.size()));
    std::memcpy(b + len + 4, bytes.data(), bytes.size());
    len += (4 + bytes.size() + 15) / 16 * 16;
    return *this;
  }
  // Sets ds from the segments appended (or `ds_override`) and returns the bytes.
  std::span<const std::byte> done(int ds_override = -1) {
    const uint32_t ds = ds_override >= 0 ? uint32_t(ds_override) : uint32_t((len + 15) / 16);
    be32_at(b + offsetof(mlx5_wqe_ctrl_seg, qpn_ds), qpn_ << 8 | ds);
    return {b, (len + 15) / 16 * 16};
  }

 private:
  uint32_t qpn_ = 0;
};

}  // namespace kbv::sim::engine::test
