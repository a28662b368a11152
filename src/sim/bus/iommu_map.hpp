// SPDX-License-Identifier: BSD-3-Clause
//
// IommuMap: the model's concrete IOMMU (implements sim::Iommu, iommu.hpp).
//
// An interval map IOVA -> host virtual address with read/write permission,
// with the semantics of the Linux type1 IOMMU driver in its v2 flavour
// (drivers/vfio/vfio_iommu_type1.c, uAPI linux/vfio.h
// vfio_iommu_type1_dma_map/unmap):
//   * map: iova, vaddr and size aligned to the smallest page size (4 KiB),
//     size > 0, no wrap-around, at least one of read/write; the whole range
//     inside one advertised IOVA range (VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE);
//     no overlap with an existing mapping (Linux: EEXIST); at most
//     `max_mappings` mappings (Linux: dma_entry_limit, default 65535; ENOSPC).
//   * unmap (v2): removes every mapping that lies inside [iova, iova+size);
//     a request that would split a mapping is refused (Linux: EINVAL); an
//     empty range unmaps nothing and succeeds with 0 bytes.
//   * unmap_v1 (a VFIO_TYPE1_IOMMU container, as DPDK's EAL sets up): the
//     v1 compatibility of vfio_dma_do_unmap — a request covering the first
//     IOVA of a mapping removes the whole mapping (even past the range's
//     end), one that starts inside a mapping leaves that mapping and
//     reports 0 bytes for it; never EINVAL for bisection.
//   * DMA: a read/write/translate that touches an unmapped byte or lacks the
//     permission is a fault: counted, logged (iova, length, direction) and
//     returned as KBV_ERR_IOMMU_FAULT; nothing is transferred.
//
// Default IOVA ranges are those an x86 VT-d domain with a 48-bit aperture
// reports: everything below 2^48 except the interrupt (MSI) window
// 0xFEE00000..0xFEEFFFFF, which the kernel reserves (IOMMU_RESV_MSI).
//
// Threading: any method from any thread. Map/unmap take an exclusive lock,
// DMA a shared lock held for the copy, so an unmap returns only after every
// DMA into the range has finished (the caller may then free the memory).
#pragma once

#include "sim/bus/iommu.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <shared_mutex>
#include <vector>

namespace kbv::sim {

struct IovaRange {
  uint64_t start;  // first IOVA
  uint64_t end;    // last IOVA (inclusive), as in struct vfio_iova_range
};

struct DmaMapping {
  uint64_t iova;
  std::byte* vaddr;
  uint64_t size;
  uint32_t perm;  // Iommu::kRead | Iommu::kWrite
};

enum class DmaDir { kRead, kWrite };

class IommuMap final : public Iommu {
 public:
  static constexpr uint64_t kPageSize = 4096;
  static constexpr uint32_t kDefaultMaxMappings = 65535;  // type1 dma_entry_limit

  IommuMap();
  explicit IommuMap(std::vector<IovaRange> ranges, uint32_t max_mappings = kDefaultMaxMappings);

  // The x86 default ranges described above.
  static std::vector<IovaRange> default_ranges();

  // Iommu
  Status map(uint64_t iova, void* vaddr, uint64_t size, uint32_t perm) override;
  Status unmap(uint64_t iova, uint64_t size, uint64_t* unmapped) override;
  // v1 semantics (above); `removed` receives the mappings taken out.
  Status unmap_v1(uint64_t iova, uint64_t size, uint64_t* unmapped,
                  std::vector<DmaMapping>* removed);
  Status dma_read(uint64_t iova, std::span<std::byte> dst) override;
  Status dma_write(uint64_t iova, std::span<const std::byte> src) override;
  std::byte* translate(uint64_t iova, uint64_t len, uint32_t perm) override;
  uint64_t fault_count() const override { return faults_.load(std::memory_order_relaxed); }

  // Removes every mapping (group detached from its container).
  void clear();
  // Snapshot of the mappings, in IOVA order (replayed when a group attaches).
  std::vector<DmaMapping> mappings() const;
  const std::vector<IovaRange>& ranges() const { return ranges_; }
  uint32_t max_mappings() const { return max_mappings_; }
  // Mappings still available (VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL).
  uint32_t available() const;

  // Counts and logs a fault found by a caller (e.g. bus mastering disabled);
  // returns KBV_ERR_IOMMU_FAULT.
  Status fault(uint64_t iova, uint64_t len, DmaDir dir, const char* why);

  // The last fault, for diagnostics and tests.
  struct FaultInfo {
    uint64_t iova = 0;
    uint64_t len = 0;
    DmaDir dir = DmaDir::kRead;
  };
  FaultInfo last_fault() const;

 private:
  // Calls fn(host pointer, length) for each piece of [iova, iova+len) in
  // order; false (no call made) if any byte is unmapped or lacks perm.
  // Caller holds mu_ (shared or exclusive).
  template <class Fn>
  bool walk(uint64_t iova, uint64_t len, uint32_t perm, Fn&& fn) const;

  const std::vector<IovaRange> ranges_;
  const uint32_t max_mappings_;
  mutable std::shared_mutex mu_;
  std::map<uint64_t, DmaMapping> maps_;  // keyed by iova
  std::atomic<uint64_t> faults_{0};
  std::atomic<uint64_t> last_iova_{0};
  std::atomic<uint64_t> last_len_{0};
  std::atomic<int> last_dir_{0};
};

}  // namespace kbv::sim
