// SPDX-License-Identifier: BSD-3-Clause
#include "hca/uar.hpp"

#include "common/log.hpp"
#include "hca/prm/eq.hpp"
#include "hca/prm/uar.hpp"

namespace kbv::hca {

Result<Uar> Uar::at(const platform::Bar& bar, uint32_t index) {
  const uint64_t off = prm::uar_page_offset(index);
  if (!bar.contains(off, prm::kUarPageSize)) {
    log::error("uar", "UAR {} (offset {:#x}) lies outside BAR0 ({:#x} bytes)", index, off,
               bar.size());
    return Status{KBV_ERR_INVALID_ARGUMENT};
  }
  Uar u;
  u.bar_ = &bar;
  u.index_ = index;
  u.offset_ = off;
  return u;
}

void Uar::eq_doorbell(uint32_t eqn, uint32_t ci, bool arm) const {
  bar_->write32_be(offset_ + (arm ? prm::kUarEqDoorbellArmOff : prm::kUarEqDoorbellOff),
                   prm::eq_doorbell_value(ci, eqn));
  // rdma-core mlx5_vfio.c eq_update_ci: udma_to_device_barrier() after the
  // consumer index write.
  platform::udma_to_device_barrier();
}

}  // namespace kbv::hca
