// SPDX-License-Identifier: BSD-3-Clause
#include "hca/objects/mr.hpp"

#include "common/log.hpp"

namespace kbv::hca {

namespace {
constexpr const char* kLog = "hca.mr";
constexpr uint32_t kLogPage = 12;
}  // namespace

Status Mr::create(Hca& hca, platform::DmaContext& dma, uint32_t pd, void* addr, size_t length,
                  uint32_t access, cmd::Done<std::unique_ptr<Mr>> done) {
  using namespace mr_access;  // NOLINT
  if (!done || addr == nullptr || length == 0) return Status{KBV_ERR_INVALID_ARGUMENT};
  if ((access & (kRemoteWrite | kRemoteAtomic)) && !(access & kLocalWrite))
    return Status{KBV_ERR_INVALID_ARGUMENT};
  if (!hca.ready()) return Status{KBV_ERR_INVALID_STATE};
  const bool writes = (access & (kLocalWrite | kRemoteWrite | kRemoteAtomic)) != 0;
  auto reg = dma.register_memory(addr, length,
                                 writes ? platform::kDmaReadWrite : platform::kDmaDeviceRead);
  if (!reg) {
    if (reg.status() != KBV_ERR_IOMMU_FAULT) return reg.status();
    // EFAULT from VFIO_IOMMU_MAP_DMA: the kernel could not pin the pages.
    log::error(kLog, "{} bytes at {}: the pages cannot be pinned for device {} (not mapped{})",
               length, addr, writes ? "writes" : "reads",
               writes ? ", or not writable by this process" : "");
    return Status{KBV_ERR_ACCESS_DENIED};
  }
  std::unique_ptr<Mr> mr(new Mr(hca));
  mr->reg_ = std::move(*reg);
  mr->pd_ = pd;
  mr->access_ = access;

  cmd::MkeyAttr a;
  a.access_mode = prm::mkc_access_mode::kMtt;
  a.pd = pd;
  a.start_addr = reinterpret_cast<uintptr_t>(addr);
  a.len = length;
  a.log_page_size = kLogPage;
  a.lr = true;
  a.lw = access & kLocalWrite;
  a.rr = access & kRemoteRead;
  a.rw = access & kRemoteWrite;
  a.a = access & kRemoteAtomic;
  a.mkey_7_0 = hca.next_mkey_variant();
  const size_t pages = mr->reg_.mapped_size() >> kLogPage;
  a.mtt.resize(pages);
  for (size_t i = 0; i < pages; ++i) a.mtt[i] = mr->reg_.page_iova(i);  // 4 KiB pages (kLogPage)
  a.mtt_rd_en = true;
  a.mtt_wr_en = true;  // page present (MLX5_IB_MTT_PRESENT); rights are the key's
  Mr* raw = mr.release();
  Status s;
  try {
    s = cmd::create_mkey(hca.cmdq(), a, [raw, done](Result<uint32_t> r) {
      std::unique_ptr<Mr> m(raw);
      if (!r) {
        done(r.status());  // ~Mr unmaps the registration
        return;
      }
      m->mkey_ = *r;
      m->alive_ = true;
      log::debug(kLog, "mr key {:#x}: {} bytes at iova {:#x}", m->mkey_, m->length(), m->iova());
      done(std::move(m));
    });
  } catch (...) {  // allocation failure: nothing was submitted
    delete raw;
    throw;
  }
  if (s != KBV_PENDING) delete raw;
  return s;
}

Mr::~Mr() {
  if (alive_) log::error(kLog, "mr key {:#x} freed while the device still owns it", mkey_);
}

Status Mr::query(cmd::Done<cmd::MkeyInfo> done) {
  if (!alive_) return Status{KBV_ERR_INVALID_HANDLE};
  return cmd::query_mkey(hca_.cmdq(), mkey_, std::move(done));
}

Status Mr::destroy(cmd::DoneStatus done) {
  if (!done) return Status{KBV_ERR_INVALID_ARGUMENT};
  if (!alive_) return Status{KBV_ERR_INVALID_HANDLE};
  if (busy_) return Status{KBV_ERR_BUSY};
  Status s = cmd::destroy_mkey(hca_.cmdq(), mkey_, [this, done](Status st) {
    busy_ = false;
    if (st.is_ok()) {
      alive_ = false;
      reg_.reset();
    }
    done(st);
  });
  if (s == KBV_PENDING) busy_ = true;
  return s;
}

}  // namespace kbv::hca
