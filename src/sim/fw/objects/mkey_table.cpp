// SPDX-License-Identifier: BSD-3-Clause
#include "sim/fw/objects/mkey_table.hpp"

#include "hca/prm/mkey.hpp"

namespace kbv::sim::fw {

namespace {
// Device reads for these rights, device writes for those (atomics do both).
constexpr uint32_t kNeedsRead =
    mkey_access::kLocalRead | mkey_access::kRemoteRead | mkey_access::kRemoteAtomic;
constexpr uint32_t kNeedsWrite =
    mkey_access::kLocalWrite | mkey_access::kRemoteWrite | mkey_access::kRemoteAtomic;
}  // namespace

std::optional<uint32_t> MkeyTable::insert(Mkey m, uint64_t max) {
  // Indexes [2, 2 + max), within the 24-bit space; at most max live keys.
  const uint64_t space = IndexAllocator::kNumberSpace;
  const uint64_t limit = max < space - kFirstIndex ? max + kFirstIndex : space;
  if (keys_.size() >= max || keys_.size() >= limit - kFirstIndex) return std::nullopt;
  if (next_ >= limit) next_ = kFirstIndex;
  // A free index exists below limit: the search ends within one cycle.
  while (keys_.count(next_) != 0) next_ = next_ + 1 >= limit ? kFirstIndex : next_ + 1;
  const uint32_t idx = next_;
  next_ = next_ + 1 >= limit ? kFirstIndex : next_ + 1;
  m.index = idx;
  keys_.emplace(idx, std::move(m));
  return idx;
}

const Mkey* MkeyTable::find(uint32_t index) const {
  auto it = keys_.find(index);
  return it == keys_.end() ? nullptr : &it->second;
}

bool MkeyTable::erase(uint32_t index) { return keys_.erase(index) != 0; }

uint32_t MkeyTable::count_pd(uint32_t pd) const {
  uint32_t n = 0;
  for (const auto& [i, k] : keys_) n += k.pd == pd ? 1 : 0;
  return n;
}

void MkeyTable::clear() {
  keys_.clear();
  next_ = kFirstIndex;
}

TranslateResult MkeyTable::translate(uint32_t key, uint64_t va, uint64_t len, uint32_t rights,
                                     uint32_t pd, std::span<IovaRange> out) const {
  const Mkey* m = find(prm::mkey_to_index(key));
  if (m == nullptr || m->variant != (key & 0xFF) || m->free) return {MkeyFault::kInvalidKey, 0};
  if (m->pd != pd) return {MkeyFault::kPdMismatch, 0};
  if ((rights & ~m->rights) != 0) return {MkeyFault::kAccess, 0};
  if (len == 0) return {};

  // Bounds: va >= start and va + len <= start + len(region), without overflow.
  if (va < m->start_addr) return {MkeyFault::kOutOfBounds, 0};
  const uint64_t off = va - m->start_addr;
  if (m->length64) {
    if (len - 1 > ~uint64_t{0} - va) return {MkeyFault::kOutOfBounds, 0};
  } else if (off > m->len || len > m->len - off) {
    return {MkeyFault::kOutOfBounds, 0};
  }

  if (m->access_mode == prm::mkc_access_mode::kPa) {
    if (out.empty()) return {MkeyFault::kTooManyRanges, 0};
    out[0] = {va, len};
    return {MkeyFault::kNone, 1};
  }

  // MTT: entry i maps the page that starts at (start_addr rounded down to the
  // page size) + i * page (PRM "MKC": translation pages of log_page_size).
  const bool need_rd = (rights & kNeedsRead) != 0;
  const bool need_wr = (rights & kNeedsWrite) != 0;
  const uint64_t page = uint64_t{1} << m->log_page_size;
  const uint64_t base = m->start_addr & ~(page - 1);
  uint64_t pos = va - base;
  uint64_t left = len;
  uint32_t n = 0;
  while (left > 0) {
    const uint64_t i = pos >> m->log_page_size;
    if (i >= m->mtt.size()) return {MkeyFault::kMttNotPresent, n};
    const MttEntry& e = m->mtt[i];
    if ((need_rd && !e.rd_en) || (need_wr && !e.wr_en)) return {MkeyFault::kMttNotPresent, n};
    const uint64_t in_page = pos & (page - 1);
    const uint64_t chunk = left < page - in_page ? left : page - in_page;
    const uint64_t iova = e.iova + in_page;
    if (n > 0 && out[n - 1].iova + out[n - 1].len == iova) {
      out[n - 1].len += chunk;
    } else {
      if (n == out.size()) return {MkeyFault::kTooManyRanges, n};
      out[n++] = {iova, chunk};
    }
    pos += chunk;
    left -= chunk;
  }
  return {MkeyFault::kNone, n};
}

}  // namespace kbv::sim::fw
