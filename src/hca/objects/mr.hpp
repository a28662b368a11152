// SPDX-License-Identifier: BSD-3-Clause
//
// Mr: a memory region — application memory made reachable by the device
// (platform::DmaContext::register_memory: the pages are pinned and mapped at
// an IOVA through VFIO_IOMMU_MAP_DMA, linux/vfio.h) and an MTT memory key
// over it (CREATE_MKEY, cmd/mkey.hpp) whose lkey/rkey work requests use.
//
// Translation: start_addr is the buffer's virtual address (work requests
// name virtual addresses, as ibv_reg_mr regions do); log_page_size 12; MTT
// entry i is the IOVA of the i-th 4 KiB page of the mapping, with rd_en and
// wr_en (the kernel's MLX5_IB_MTT_PRESENT). The device reads/writes the pages
// only within [addr, addr + length) and with the key's access rights.
//
// Access: local read is always on; MrAccess bits add local write, remote
// read/write, remote atomic. Remote write or atomic without local write is
// refused (KBV_ERR_INVALID_ARGUMENT; IBTA 10.6.3.1). The IOMMU mapping is
// read+write when any write right is given, read-only otherwise.
//
// Errors from create (returned, no callback): KBV_ERR_INVALID_ARGUMENT
// (null/empty buffer, rights), KBV_ERR_INVALID_STATE (Hca not ready),
// KBV_ERR_ACCESS_DENIED when VFIO_IOMMU_MAP_DMA fails with EFAULT (Linux
// pins the pages with FOLL_WRITE when any write right is given: memory the
// process cannot write, or memory not mapped, is refused — rdma-core's
// ibv_reg_mr gives EFAULT), the platform's other registration errors; in the
// callback: firmware statuses
// (unknown pd -> KBV_ERR_FW_BAD_RESOURCE ...). The registration is undone
// whenever the key is not created.
//
// Lifetime: the Mr must outlive its pending destroy; the DmaContext must
// outlive the Mr. Destroying an Mr object whose key still exists logs an
// error and unmaps the memory anyway.
//
// Threading: as Hca (one thread).
#pragma once

#include <kbv/status.hpp>

#include <cstdint>
#include <memory>

#include "hca/cmd/mkey.hpp"
#include "hca/hca.hpp"
#include "platform/dma.hpp"

namespace kbv::hca {

namespace mr_access {
inline constexpr uint32_t kLocalWrite = 1u << 0;
inline constexpr uint32_t kRemoteRead = 1u << 1;
inline constexpr uint32_t kRemoteWrite = 1u << 2;
inline constexpr uint32_t kRemoteAtomic = 1u << 3;
}  // namespace mr_access

class Mr {
 public:
  static Status create(Hca& hca, platform::DmaContext& dma, uint32_t pd, void* addr, size_t length,
                       uint32_t access, cmd::Done<std::unique_ptr<Mr>> done);
  ~Mr();
  Mr(const Mr&) = delete;
  Mr& operator=(const Mr&) = delete;

  uint32_t lkey() const { return mkey_; }
  uint32_t rkey() const { return mkey_; }
  void* addr() const { return reg_.addr(); }
  size_t length() const { return reg_.length(); }
  uint64_t iova() const { return reg_.iova(); }
  uint32_t pd() const { return pd_; }
  uint32_t access() const { return access_; }
  bool alive() const { return alive_; }

  Status query(cmd::Done<cmd::MkeyInfo> done);
  Status destroy(cmd::DoneStatus done);

 private:
  explicit Mr(Hca& hca) : hca_(hca) {}

  Hca& hca_;
  platform::DmaRegistration reg_;
  uint32_t mkey_ = 0;
  uint32_t pd_ = 0;
  uint32_t access_ = 0;
  bool alive_ = false;
  bool busy_ = false;
};

}  // namespace kbv::hca
