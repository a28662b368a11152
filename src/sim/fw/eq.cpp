// SPDX-License-Identifier: BSD-3-Clause
#include "sim/fw/eq.hpp"

#include "common/log.hpp"

#include <cstring>

namespace kbv::sim::fw {

namespace {
constexpr const char* kLog = "sim.fw.eq";
constexpr uint32_t kMaxEqn = 256;         // eqn is 8 bits in the EQ doorbell
constexpr uint32_t kCiMask = 0xFFFFFF;    // doorbell ci is 24 bits
constexpr uint64_t kBasePageSize = 4096;  // log_page_size is relative to 4 KiB
}  // namespace

EqTable::EqTable(PciFunction& pci, uint32_t max_eqs)
    : pci_(pci),
      max_eqs_(max_eqs > kMaxEqn ? kMaxEqn : max_eqs),
      eqs_(max_eqs_),
      db_(new Doorbell[kMaxEqn]) {}

std::optional<uint32_t> EqTable::create(EqParams p) {
  std::lock_guard lock(mu_);
  for (uint32_t n = 0; n < max_eqs_; ++n) {
    if (eqs_[n].valid) continue;
    eqs_[n] = Eq{};
    eqs_[n].valid = true;
    eqs_[n].p = std::move(p);
    db_[n].ci.store(0, std::memory_order_relaxed);
    db_[n].arm.store(false, std::memory_order_relaxed);
    return n;
  }
  return std::nullopt;
}

bool EqTable::destroy(uint32_t eqn) {
  std::lock_guard lock(mu_);
  if (eqn >= max_eqs_ || !eqs_[eqn].valid) return false;
  eqs_[eqn] = Eq{};
  db_[eqn].arm.store(false, std::memory_order_relaxed);
  return true;
}

std::optional<EqSnapshot> EqTable::query(uint32_t eqn) const {
  std::lock_guard lock(mu_);
  if (eqn >= max_eqs_ || !eqs_[eqn].valid) return std::nullopt;
  const Eq& e = eqs_[eqn];
  return EqSnapshot{e.p, e.pi, ci_of(eqn), e.armed, e.overruns};
}

bool EqTable::exists(uint32_t eqn) const {
  std::lock_guard lock(mu_);
  return eqn < max_eqs_ && eqs_[eqn].valid;
}

bool EqTable::uses_uar(uint32_t uar_page) const {
  std::lock_guard lock(mu_);
  for (const Eq& e : eqs_)
    if (e.valid && e.p.uar_page == uar_page) return true;
  return false;
}

bool EqTable::subscribed(prm::EventType t) const {
  std::lock_guard lock(mu_);
  for (const Eq& e : eqs_)
    if (e.valid && (e.p.event_bitmask[prm::event_word(t)] & prm::event_bit(t))) return true;
  return false;
}

Status EqTable::post_event(prm::EventType type, uint8_t sub_type, std::span<const std::byte> data) {
  std::lock_guard lock(mu_);
  for (uint32_t n = 0; n < max_eqs_; ++n) {
    Eq& e = eqs_[n];
    if (e.valid && (e.p.event_bitmask[prm::event_word(type)] & prm::event_bit(type)))
      return write_eqe_locked(n, e, type, sub_type, data);
  }
  return KBV_ERR_NOT_FOUND;
}

Status EqTable::post_to(uint32_t eqn, prm::EventType type, uint8_t sub_type,
                        std::span<const std::byte> data) {
  std::lock_guard lock(mu_);
  if (eqn >= max_eqs_ || !eqs_[eqn].valid) return KBV_ERR_NOT_FOUND;
  return write_eqe_locked(eqn, eqs_[eqn], type, sub_type, data);
}

Status EqTable::write_eqe_locked(uint32_t eqn, Eq& eq, prm::EventType type, uint8_t sub_type,
                                 std::span<const std::byte> data) {
  const uint32_t nent = 1u << eq.p.log_eq_size;
  const uint32_t ci = ci_of(eqn);
  if (((eq.pi - ci) & kCiMask) >= nent) {
    ++eq.overruns;
    overruns_.fetch_add(1, std::memory_order_relaxed);
    log::error(kLog, "EQ {} overrun: pi {} ci {} size {}; event type {:#x} dropped", eqn, eq.pi, ci,
               nent, prm::to_u8(type));
    return KBV_ERR_OVERFLOW;
  }
  std::array<std::byte, prm::kEqeBytes> img{};
  prm::Ref<prm::eqe> e(img.data());
  e.set(prm::eqe::type, prm::to_u8(type));
  e.set(prm::eqe::sub_type, sub_type);
  e.set_bytes(prm::eqe::data, data);
  e.set(prm::eqe::owner, (eq.pi >> eq.p.log_eq_size) & 1);

  const uint64_t page_size = kBasePageSize << eq.p.log_page_size;
  const uint64_t off = static_cast<uint64_t>(eq.pi & (nent - 1)) * prm::kEqeBytes;
  const uint64_t page = off / page_size;
  if (page >= eq.p.pas.size()) return KBV_ERR_INTERNAL;  // CREATE_EQ checked the pas count
  const uint64_t iova = eq.p.pas[page] + off % page_size;
  Iommu& mmu = pci_.iommu();
  const auto body = std::span<const std::byte>(img).first(prm::kEqeBytes - 1);
  if (Status s = mmu.dma_write(iova, body); !s) {
    log::error(kLog, "EQ {}: EQE write at iova {:#x} faulted", eqn, iova);
    return s;
  }
  std::atomic_thread_fence(std::memory_order_release);
  if (Status s = mmu.dma_write(iova + prm::kEqeBytes - 1, std::span(&img[prm::kEqeBytes - 1], 1));
      !s)
    return s;
  ++eq.pi;
  if (eq.armed) {
    eq.armed = false;
    pci_.raise_msix(eq.p.intr);
  }
  return Status::ok();
}

bool EqTable::record_doorbell(uint32_t uar_page, uint32_t value, bool arm) {
  const uint32_t eqn = value >> 24;
  Doorbell& d = db_[eqn];
  d.uar.store(uar_page, std::memory_order_relaxed);
  d.ci.store(value & kCiMask, std::memory_order_release);
  if (!arm) return false;
  d.arm.store(true, std::memory_order_release);
  return true;
}

void EqTable::apply_doorbells() {
  std::lock_guard lock(mu_);
  for (uint32_t n = 0; n < max_eqs_; ++n) {
    if (!db_[n].arm.exchange(false, std::memory_order_acq_rel)) continue;
    Eq& e = eqs_[n];
    if (!e.valid) {
      log::warn(kLog, "arm doorbell for EQ {} which does not exist: ignored", n);
      continue;
    }
    const uint32_t uar = db_[n].uar.load(std::memory_order_relaxed);
    if (uar != e.p.uar_page) {
      log::warn(kLog, "arm doorbell for EQ {} on UAR page {}, but the EQ uses page {}: ignored", n,
                uar, e.p.uar_page);
      continue;
    }
    if (((e.pi - ci_of(n)) & kCiMask) != 0) {
      // EQEs past ci already: interrupt at once.
      pci_.raise_msix(e.p.intr);
    } else {
      e.armed = true;
    }
  }
}

void EqTable::clear() {
  std::lock_guard lock(mu_);
  for (uint32_t n = 0; n < max_eqs_; ++n) eqs_[n] = Eq{};
  for (uint32_t n = 0; n < kMaxEqn; ++n) {
    db_[n].arm.store(false, std::memory_order_relaxed);
    db_[n].ci.store(0, std::memory_order_relaxed);
  }
}

}  // namespace kbv::sim::fw
