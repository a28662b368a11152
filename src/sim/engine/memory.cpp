// SPDX-License-Identifier: BSD-3-Clause
#include "sim/engine/memory.hpp"

#include <infiniband/mlx5dv.h>

#include <array>

namespace kbv::sim::engine {

namespace {

constexpr std::size_t kRanges = 16;  // IOVA pieces per translate call

uint8_t key_synd(bool local) {
  return local ? MLX5_CQE_SYNDROME_LOCAL_PROT_ERR : MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
}

// Translates [va, va + len) piecewise and calls io(iova, at, n) for each
// IOVA range (at = byte offset into the access).
template <class Io>
AccessStatus key_walk(const fw::MkeyTable& keys, uint32_t pd, uint32_t key, uint64_t va,
                      uint64_t len, uint32_t rights, bool local, Io&& io) {
  AccessStatus r;
  if (len == 0) {
    // Still checks key, PD and rights (MkeyTable::translate len 0).
    std::array<fw::IovaRange, 1> none{};
    fw::TranslateResult t = keys.translate(key, va, 0, rights, pd, none);
    if (!t.ok()) {
      r.syndrome = key_synd(local);
      r.mkey = t.fault;
    }
    return r;
  }
  std::array<fw::IovaRange, kRanges> ranges{};
  uint64_t at = 0;
  uint64_t chunk = len;
  while (at < len) {
    const uint64_t want = chunk < len - at ? chunk : len - at;
    fw::TranslateResult t = keys.translate(key, va + at, want, rights, pd, ranges);
    if (t.fault == fw::MkeyFault::kTooManyRanges && want > 1) {
      chunk = want / 2;
      continue;
    }
    if (!t.ok()) {
      r.syndrome = key_synd(local);
      r.mkey = t.fault;
      return r;
    }
    uint64_t off = 0;
    for (uint32_t i = 0; i < t.ranges; ++i) {
      if (!io(ranges[i].iova, at + off, ranges[i].len).is_ok()) {
        r.syndrome = key_synd(local);
        r.iommu = true;
        return r;
      }
      off += ranges[i].len;
      r.done += ranges[i].len;
    }
    at += want;
    chunk = len;  // try the rest whole again
  }
  return r;
}

// Walks the SGE list from `offset`, calling seg(sge, off_in_sge, at, n).
template <class Seg>
AccessStatus sge_walk(std::span<const Sge> sges, uint64_t offset, uint64_t len, Seg&& seg) {
  AccessStatus r;
  uint64_t at = 0;
  for (const Sge& s : sges) {
    if (at == len) break;
    if (offset >= s.byte_count) {
      offset -= s.byte_count;
      continue;
    }
    const uint64_t avail = s.byte_count - offset;
    const uint64_t n = avail < len - at ? avail : len - at;
    AccessStatus a = seg(s, offset, at, n);
    r.done += a.done;
    if (!a.ok()) {
      r.syndrome = a.syndrome;
      r.mkey = a.mkey;
      r.iommu = a.iommu;
      return r;
    }
    offset = 0;
    at += n;
  }
  if (at < len) r.syndrome = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
  return r;
}

}  // namespace

AccessStatus key_read(Iommu& iommu, const fw::MkeyTable& keys, uint32_t pd, uint32_t key,
                      uint64_t va, uint32_t rights, bool local, std::span<std::byte> dst) {
  return key_walk(keys, pd, key, va, dst.size(), rights, local,
                  [&](uint64_t iova, uint64_t at, uint64_t n) {
                    return iommu.dma_read(iova, dst.subspan(at, n));
                  });
}

AccessStatus key_write(Iommu& iommu, const fw::MkeyTable& keys, uint32_t pd, uint32_t key,
                       uint64_t va, uint32_t rights, bool local, std::span<const std::byte> src) {
  return key_walk(keys, pd, key, va, src.size(), rights, local,
                  [&](uint64_t iova, uint64_t at, uint64_t n) {
                    return iommu.dma_write(iova, src.subspan(at, n));
                  });
}

AccessStatus gather(Iommu& iommu, const fw::MkeyTable& keys, uint32_t pd, std::span<const Sge> sges,
                    uint64_t offset, std::span<std::byte> dst) {
  return sge_walk(sges, offset, dst.size(),
                  [&](const Sge& s, uint64_t off, uint64_t at, uint64_t n) {
                    return key_read(iommu, keys, pd, s.lkey, s.addr + off,
                                    fw::mkey_access::kLocalRead, true, dst.subspan(at, n));
                  });
}

AccessStatus scatter(Iommu& iommu, const fw::MkeyTable& keys, uint32_t pd,
                     std::span<const Sge> sges, uint64_t offset, std::span<const std::byte> src) {
  return sge_walk(sges, offset, src.size(),
                  [&](const Sge& s, uint64_t off, uint64_t at, uint64_t n) {
                    return key_write(iommu, keys, pd, s.lkey, s.addr + off,
                                     fw::mkey_access::kLocalWrite, true, src.subspan(at, n));
                  });
}

AccessStatus remote_read(Iommu& iommu, const fw::MkeyTable& keys, uint32_t pd, uint32_t rkey,
                         uint64_t va, std::span<std::byte> dst) {
  return key_read(iommu, keys, pd, rkey, va, fw::mkey_access::kRemoteRead, false, dst);
}

AccessStatus remote_write(Iommu& iommu, const fw::MkeyTable& keys, uint32_t pd, uint32_t rkey,
                          uint64_t va, std::span<const std::byte> src) {
  return key_write(iommu, keys, pd, rkey, va, fw::mkey_access::kRemoteWrite, false, src);
}

}  // namespace kbv::sim::engine
