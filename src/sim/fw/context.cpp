// SPDX-License-Identifier: BSD-3-Clause
#include "sim/fw/context.hpp"

namespace kbv::sim::fw {

FwContext::FwContext(PciFunction& pci, const FwConfig& cfg)
    : pci_(pci),
      cfg_(cfg),
      caps_(cfg.cmdif_checksum),
      pages_(cfg.boot_pages, cfg.init_pages, cfg.max_pages),
      uars_(cfg.first_uar, cfg.num_uars),
      eqs_(pci, 1u << kLogMaxEq) {}

void FwContext::teardown() {
  hca_.initialized = false;
  ext_.clear();
  eqs_.clear();
  uars_.clear();
}

void FwContext::reset() {
  teardown();
  hca_ = HcaState{};
  caps_.reset();
  pages_.clear();
}

}  // namespace kbv::sim::fw
