// SPDX-License-Identifier: BSD-3-Clause
#include "sim/fw/uar.hpp"

#include "hca/prm/uar.hpp"
#include "sim/fw/context.hpp"
#include "sim/fw/syndromes.hpp"

namespace kbv::sim::fw {

using prm::CmdStatus;

UarTable::UarTable(uint32_t first, uint32_t count)
    : first_(first), count_(count), map_(new std::atomic<bool>[count == 0 ? 1 : count]) {
  clear();
}

std::optional<uint32_t> UarTable::alloc() {
  for (uint32_t i = 0; i < count_; ++i) {
    if (map_[i].load(std::memory_order_relaxed)) continue;
    map_[i].store(true, std::memory_order_release);
    ++used_;
    return first_ + i;
  }
  return std::nullopt;
}

Outcome UarTable::free(uint32_t index) {
  if (!in_range(index)) return Outcome::fail(CmdStatus::IX_ERR, synd::kUarOutOfRange);
  if (!map_[index - first_].load(std::memory_order_relaxed))
    return Outcome::fail(CmdStatus::BAD_RES_ERR, synd::kUarNotAllocated);
  map_[index - first_].store(false, std::memory_order_release);
  --used_;
  return Outcome::ok();
}

bool UarTable::is_allocated(uint32_t index) const {
  return in_range(index) && map_[index - first_].load(std::memory_order_acquire);
}

void UarTable::clear() {
  for (uint32_t i = 0; i < count_; ++i) map_[i].store(false, std::memory_order_relaxed);
  used_ = 0;
}

namespace {

// ALLOC_UAR (mlx5_ifc.h alloc_uar_in/out).
Outcome alloc_uar(FwContext& ctx, const Command&, std::span<std::byte> out) {
  std::optional<uint32_t> idx = ctx.uars().alloc();
  if (!idx) return Outcome::fail(CmdStatus::NO_RES_ERR, synd::kUarExhausted);
  ctx.pci().watch_uar_page(*idx, true);  // its doorbells are live now
  prm::Ref<prm::alloc_uar_out>(out.data()).set(prm::alloc_uar_out::uar, *idx);
  return Outcome::ok();
}

// DEALLOC_UAR (mlx5_ifc.h dealloc_uar_in): not while an EQ rings on it.
Outcome dealloc_uar(FwContext& ctx, const Command& c, std::span<std::byte>) {
  const uint32_t idx = static_cast<uint32_t>(
      prm::CRef<prm::dealloc_uar_in>(c.in.data()).get(prm::dealloc_uar_in::uar));
  if (ctx.uars().is_allocated(idx) && ctx.eqs().uses_uar(idx))
    return Outcome::fail(CmdStatus::BAD_RES_STATE_ERR, synd::kUarInUse);
  if (ctx.uars().is_allocated(idx) && ctx.uar_referenced(idx))
    return Outcome::fail(CmdStatus::BAD_RES_STATE_ERR, synd::kUarInUseByObject);
  Outcome o = ctx.uars().free(idx);
  if (o.is_ok()) ctx.pci().watch_uar_page(idx, false);
  return o;
}

}  // namespace

void register_uar_commands(CommandRegistry& r) {
  (void)r.add(prm::Opcode::ALLOC_UAR,
              Handler::make(prm::alloc_uar_in::kBits / 8, prm::alloc_uar_out::kBits / 8,
                            Requires::kInitialized, alloc_uar));
  (void)r.add(prm::Opcode::DEALLOC_UAR,
              Handler::make(prm::dealloc_uar_in::kBits / 8, prm::dealloc_uar_out::kBits / 8,
                            Requires::kInitialized, dealloc_uar));
}

}  // namespace kbv::sim::fw
