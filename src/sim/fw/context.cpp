// SPDX-License-Identifier: BSD-3-Clause
#include "sim/fw/context.hpp"

#include "hca/prm/uar.hpp"

#include <algorithm>

namespace kbv::sim::fw {

namespace {
// UAR indices must name pages inside BAR0.
uint32_t uar_count(PciFunction& pci, const FwConfig& cfg) {
  const uint64_t pages = pci.bar0().size() / prm::kUarPageSize;
  if (pages <= cfg.first_uar) return 0;
  return static_cast<uint32_t>(std::min<uint64_t>(cfg.num_uars, pages - cfg.first_uar));
}
}  // namespace

FwContext::FwContext(PciFunction& pci, const FwConfig& cfg)
    : pci_(pci),
      cfg_(cfg),
      caps_(cfg.cmdif_checksum),
      pages_(cfg.boot_pages, cfg.init_pages, cfg.max_pages),
      uars_(cfg.first_uar, uar_count(pci, cfg)),
      eqs_(pci, 1u << kLogMaxEq) {}

void FwContext::teardown() {
  ++epoch_;
  hca_.initialized = false;
  ext_.clear();
  eqs_.clear();
  for (uint32_t i = uars_.first(); i < uars_.first() + uars_.count(); ++i)
    if (uars_.is_allocated(i)) pci_.watch_uar_page(i, false);
  uars_.clear();
}

void FwContext::reset() {
  teardown();
  hca_ = HcaState{};
  caps_.reset();
  pages_.clear();
}

}  // namespace kbv::sim::fw
