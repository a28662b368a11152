// SPDX-License-Identifier: BSD-3-Clause
#include "sim/fw/pages.hpp"

#include "common/log.hpp"
#include "hca/prm/boot.hpp"
#include "sim/fw/context.hpp"
#include "sim/fw/syndromes.hpp"

#include <algorithm>
#include <limits>

namespace kbv::sim::fw {

using prm::CmdStatus;

// ---- PagePool ------------------------------------------------------------------

int64_t PagePool::regular_target() const {
  const int64_t t = static_cast<int64_t>(boot_) + init_ + extra_;
  return t < 0 ? 0 : t;
}

int32_t PagePool::demand(prm::QueryPagesOpMod stage) const {
  const int64_t held = static_cast<int64_t>(pages_.size());
  int64_t want = 0;
  switch (stage) {
    case prm::QueryPagesOpMod::BOOT_PAGES: want = std::max<int64_t>(0, boot_ - held); break;
    case prm::QueryPagesOpMod::INIT_PAGES:
      want = std::max<int64_t>(0, static_cast<int64_t>(boot_) + init_ - held);
      break;
    case prm::QueryPagesOpMod::REGULAR_PAGES: want = regular_target() - held; break;
  }
  return static_cast<int32_t>(std::clamp<int64_t>(want, std::numeric_limits<int32_t>::min(),
                                                  std::numeric_limits<int32_t>::max()));
}

Outcome PagePool::give(std::span<const uint64_t> iovas, Iommu& iommu) {
  if (pages_.size() + iovas.size() > max_)
    return Outcome::fail(CmdStatus::LIM_ERR, synd::kPagesLimit);
  std::unordered_set<uint64_t> seen;
  for (uint64_t iova : iovas) {
    if (iova % kFwPageSize != 0)
      return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kPageMisaligned);
    if (index_.contains(iova) || !seen.insert(iova).second)
      return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kPageDuplicate);
    // The firmware reads and writes its pages: both permissions are needed.
    if (iommu.translate(iova, kFwPageSize, Iommu::kRead | Iommu::kWrite) == nullptr)
      return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kPageNotMapped);
  }
  for (uint64_t iova : iovas) {
    pages_.push_back(iova);
    index_.insert(iova);
  }
  return Outcome::ok();
}

std::vector<uint64_t> PagePool::take(uint32_t max, bool initialized) {
  const int64_t keep = initialized ? regular_target() : 0;
  const int64_t spare = static_cast<int64_t>(pages_.size()) - keep;
  const std::size_t n =
      spare <= 0 ? 0 : std::min<std::size_t>(max, static_cast<std::size_t>(spare));
  std::vector<uint64_t> out(pages_.end() - static_cast<std::ptrdiff_t>(n), pages_.end());
  pages_.resize(pages_.size() - n);
  for (uint64_t p : out) index_.erase(p);
  return out;
}

void PagePool::refuse() {
  // The driver cannot give what was asked: the demand drops to what is held.
  const int64_t held = static_cast<int64_t>(pages_.size());
  if (regular_target() > held) extra_ = held - boot_ - init_;
}

void PagePool::request(int32_t npages) { extra_ += npages; }

void PagePool::clear() {
  pages_.clear();
  index_.clear();
  extra_ = 0;
}

// ---- commands ------------------------------------------------------------------

namespace {

constexpr uint32_t kPasBytes = 8;

// QUERY_PAGES (mlx5_ifc.h query_pages_in/out): op_mod 1 boot, 2 init, 3 regular.
Outcome query_pages(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  prm::CRef<prm::query_pages_in> in(c.in.data());
  if (in.get(prm::query_pages_in::embedded_cpu_function) != 0 ||
      in.get(prm::query_pages_in::function_id) != 0)
    return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kQueryPagesFunctionId);
  prm::Ref<prm::query_pages_out> o(out.data());
  o.set(prm::query_pages_out::function_id, 0);
  o.set(prm::query_pages_out::num_pages,
        static_cast<uint32_t>(ctx.pages().demand(static_cast<prm::QueryPagesOpMod>(c.op_mod))));
  return Outcome::ok();
}

// MANAGE_PAGES (mlx5_ifc.h manage_pages_in/out): op_mod 0 cannot give,
// 1 give (input_num_entries pas[] in the input), 2 take (up to
// input_num_entries pages returned in the output pas[]).
Outcome manage_pages(FwContext& ctx, const Command& c, std::span<std::byte> out) {
  prm::CRef<prm::manage_pages_in> in(c.in.data());
  if (in.get(prm::manage_pages_in::embedded_cpu_function) != 0 ||
      in.get(prm::manage_pages_in::function_id) != 0)
    return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kManagePagesFunctionId);
  const uint32_t n = static_cast<uint32_t>(in.get(prm::manage_pages_in::input_num_entries));
  constexpr uint32_t kHdr = prm::manage_pages_in::kBits / 8;
  switch (static_cast<prm::ManagePagesOpMod>(c.op_mod)) {
    case prm::ManagePagesOpMod::ALLOCATION_FAIL: ctx.pages().refuse(); return Outcome::ok();
    case prm::ManagePagesOpMod::ALLOCATION_SUCCESS: {
      if (static_cast<uint64_t>(kHdr) + static_cast<uint64_t>(n) * kPasBytes > c.in.size())
        return Outcome::fail(CmdStatus::BAD_INP_LEN_ERR, synd::kPasTooShort);
      std::vector<uint64_t> iovas(n);
      for (uint32_t i = 0; i < n; ++i) iovas[i] = in.get(prm::manage_pages_in::pas, i);
      return ctx.pages().give(iovas, ctx.iommu());
    }
    case prm::ManagePagesOpMod::HCA_RETURN_PAGES: {
      if (static_cast<uint64_t>(kHdr) + static_cast<uint64_t>(n) * kPasBytes > out.size())
        return Outcome::fail(CmdStatus::BAD_OUTP_LEN_ERR, synd::kTakeOutTooShort);
      const std::vector<uint64_t> pages = ctx.pages().take(n, ctx.hca().initialized);
      prm::Ref<prm::manage_pages_out> o(out.data());
      o.set(prm::manage_pages_out::output_num_entries, pages.size());
      for (uint32_t i = 0; i < pages.size(); ++i) o.set(prm::manage_pages_out::pas, i, pages[i]);
      return Outcome::ok();
    }
  }
  return Outcome::fail(CmdStatus::BAD_PARAM_ERR, synd::kBadOpMod);
}

}  // namespace

void register_page_commands(CommandRegistry& r) {
  auto u16 = [](auto v) { return static_cast<uint16_t>(v); };
  (void)r.add(prm::Opcode::QUERY_PAGES,
              Handler::make(prm::query_pages_in::kBits / 8, prm::query_pages_out::kBits / 8,
                            Requires::kEnabled, query_pages,
                            std::vector<uint16_t>{u16(prm::QueryPagesOpMod::BOOT_PAGES),
                                                  u16(prm::QueryPagesOpMod::INIT_PAGES),
                                                  u16(prm::QueryPagesOpMod::REGULAR_PAGES)}));
  (void)r.add(prm::Opcode::MANAGE_PAGES,
              Handler::make(prm::manage_pages_in::kBits / 8, prm::manage_pages_out::kBits / 8,
                            Requires::kEnabled, manage_pages,
                            std::vector<uint16_t>{u16(prm::ManagePagesOpMod::ALLOCATION_FAIL),
                                                  u16(prm::ManagePagesOpMod::ALLOCATION_SUCCESS),
                                                  u16(prm::ManagePagesOpMod::HCA_RETURN_PAGES)}));
}

}  // namespace kbv::sim::fw
