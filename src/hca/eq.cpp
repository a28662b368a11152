// SPDX-License-Identifier: BSD-3-Clause
#include "hca/eq.hpp"

#include <cstring>

#include "common/log.hpp"
#include "hca/prm/boot.hpp"

namespace kbv::hca {

Result<std::unique_ptr<EventQueue>> EventQueue::alloc(DeviceIo& io, uint32_t log_nent,
                                                      uint32_t vector) {
  if (log_nent < 1 || !prm::fits(prm::eqc::log_eq_size, log_nent) || log_nent > 22 ||
      !prm::fits(prm::eqc::intr, vector))
    return Status{KBV_ERR_INVALID_ARGUMENT};
  const size_t bytes = (size_t{1} << log_nent) * prm::kEqeBytes;
  const size_t rounded =
      (bytes + prm::kAdapterPageSize - 1) / prm::kAdapterPageSize * prm::kAdapterPageSize;
  Result<DmaBlock> buf = io.dma_alloc(rounded, prm::kAdapterPageSize);
  if (!buf) return buf.status();
  // docs/PRM.md: software initialises every owner byte to 1.
  for (size_t i = 0; i < (size_t{1} << log_nent); ++i)
    buf->va[i * prm::kEqeBytes + prm::eqe::owner.off / 8] = std::byte{prm::kEqeOwnerInit};
  return std::unique_ptr<EventQueue>(new EventQueue(io, *buf, log_nent, vector));
}

EventQueue::~EventQueue() { io_.dma_free(buf_); }

cmd::CreateEqAttr EventQueue::create_attr(uint32_t uar) const {
  cmd::CreateEqAttr a;
  a.log_eq_size = log_nent_;
  a.uar = uar;
  a.intr = vector_;
  a.log_page_size = 0;  // 4 KiB pages
  for (size_t off = 0; off < buf_.size; off += prm::kAdapterPageSize)
    a.pas.push_back(buf_.iova + off);
  return a;
}

void EventQueue::bind(uint32_t eqn, const Uar& uar) {
  eqn_ = eqn;
  uar_ = uar;
  bound_ = true;
  log::debug("eq", "EQ {} bound: {} entries, vector {}, UAR {}", eqn, nent_, vector_, uar.index());
}

void EventQueue::arm() {
  if (bound_) uar_.eq_doorbell(eqn_, ci_, /*arm=*/true);
}

}  // namespace kbv::hca
