// SPDX-License-Identifier: BSD-3-Clause
#include "hca/io/device_io.hpp"

#include <time.h>

#include <bit>
#include <cstring>

namespace kbv::hca {

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

Result<DmaBlock> DbrecPool::alloc(DeviceIo& io) {
  Page* page = nullptr;
  for (Page& p : pages_) {
    if (p.used != ~uint64_t{0}) {
      page = &p;
      break;
    }
  }
  if (page == nullptr) {
    auto b = io.dma_alloc(kPage, kPage);
    if (!b) return b.status();
    pages_.push_back(Page{*b, 0});
    page = &pages_.back();
  }
  const auto i = static_cast<uint32_t>(std::countr_one(page->used));
  page->used |= uint64_t{1} << i;
  DmaBlock rec{page->block.va + size_t{i} * kRecord, page->block.iova + uint64_t{i} * kRecord,
               kRecord};
  std::memset(rec.va, 0, kRecord);
  return rec;
}

void DbrecPool::free(DeviceIo& io, const DmaBlock& rec) {
  for (size_t k = 0; k < pages_.size(); ++k) {
    Page& p = pages_[k];
    if (rec.iova < p.block.iova || rec.iova >= p.block.iova + kPage) continue;
    p.used &= ~(uint64_t{1} << ((rec.iova - p.block.iova) / kRecord));
    if (p.used == 0) {
      io.dma_free(p.block);
      pages_[k] = pages_.back();
      pages_.pop_back();
    }
    return;
  }
}

size_t DbrecPool::records() const {
  size_t n = 0;
  for (const Page& p : pages_) n += static_cast<size_t>(std::popcount(p.used));
  return n;
}

}  // namespace kbv::hca
