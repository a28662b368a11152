// SPDX-License-Identifier: BSD-3-Clause
//
// Event queues of the model firmware: the EQ table (CREATE_EQ / DESTROY_EQ /
// QUERY_EQ), the EQE writer and the EQ doorbells.
//
// EQE writer (docs/PRM.md "Event queues"; device.h mlx5_eqe, prm/eqe.hpp): the
// producer writes entry pi & (n-1) with owner bit = (pi >> log_eq_size) & 1,
// so software, which initialises every owner byte to 1, sees entry ci as its
// own when (owner & 1) == ((ci & n) != 0). The 63 bytes before the owner byte
// are written first, then (release) the owner byte. A full EQ (pi - ci == n,
// ci as last written to the doorbell) drops the event, counts an overrun and
// logs it (silicon would raise an EQ overrun error).
//
// Doorbells (docs/PRM.md "EQ doorbell"): a 32-bit write of (ci & 0xFFFFFF) |
// eqn << 24 to UAR page `uar_page` of the EQ, offset 0x40 (update ci and
// arm) or 0x48 (update ci only). An armed EQ raises its MSI-X vector (eqc
// intr) on the next EQE and disarms; arming an EQ that already holds EQEs
// past ci raises the vector at once. The write handler only records a
// doorbell (record_doorbell, lock-free); the firmware thread applies arms
// (apply_doorbells).
//
// Event routing: post_event() writes to the lowest-numbered EQ whose event
// bitmask has the type (create_eq_in.event_bitmask, bit n = type n);
// post_to() writes to a named EQ (completion events name their CQ's EQ).
//
// Threading: every method may be called from any thread (one mutex guards
// the table; record_doorbell takes no lock).
#pragma once

#include "hca/prm/eqe.hpp"
#include "sim/bus/pci_function.hpp"
#include "sim/fw/registry.hpp"

#include <kbv/status.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

namespace kbv::sim::fw {

// Everything CREATE_EQ establishes (mlx5_ifc.h eqc_bits, create_eq_in_bits).
struct EqParams {
  uint32_t log_eq_size = 0;                 // 1 << log_eq_size entries of 64 B
  uint32_t uar_page = 0;                    // UAR index whose 0x40/0x48 doorbells serve this EQ
  uint32_t intr = 0;                        // MSI-X vector
  uint32_t log_page_size = 0;               // page size = 4 KiB << log_page_size
  std::array<uint64_t, 4> event_bitmask{};  // bit n of the 256 = event type n
  std::vector<uint64_t> pas;                // page IOVAs of the EQ buffer
};

// What QUERY_EQ reports.
struct EqSnapshot {
  EqParams params;
  uint32_t pi = 0;  // producer counter (entries written)
  uint32_t ci = 0;  // consumer counter (last doorbell)
  bool armed = false;
  uint64_t overruns = 0;
};

class EqTable {
 public:
  // At most max_eqs EQs, numbered 0..max_eqs-1 (max_eqs <= 256: eqn is 8 bits
  // in the doorbell).
  EqTable(PciFunction& pci, uint32_t max_eqs);

  std::optional<uint32_t> create(EqParams p);  // nullopt when all EQ numbers are in use
  bool destroy(uint32_t eqn);
  std::optional<EqSnapshot> query(uint32_t eqn) const;
  bool exists(uint32_t eqn) const;
  bool uses_uar(uint32_t uar_page) const;
  bool subscribed(prm::EventType t) const;
  uint32_t max_eqs() const { return max_eqs_; }

  // Write an EQE. `data` is the 28-byte event data (eqe.data). Returns
  // KBV_ERR_NOT_FOUND (no such EQ / no subscriber), KBV_ERR_OVERFLOW (EQ
  // full: dropped), KBV_ERR_IOMMU_FAULT (buffer not mapped).
  Status post_event(prm::EventType type, uint8_t sub_type, std::span<const std::byte> data);
  Status post_to(uint32_t eqn, prm::EventType type, uint8_t sub_type,
                 std::span<const std::byte> data);

  // From the BAR0 write handler: a 32-bit doorbell `value` written to UAR
  // page `uar_page`; arm = offset 0x40. Returns true when the firmware thread
  // must run apply_doorbells().
  bool record_doorbell(uint32_t uar_page, uint32_t value, bool arm);
  // Firmware thread: apply recorded arm requests, raising MSI-X where due.
  void apply_doorbells();

  void clear();
  uint64_t overruns() const { return overruns_.load(std::memory_order_relaxed); }

 private:
  struct Eq {
    bool valid = false;
    EqParams p;
    uint32_t pi = 0;
    bool armed = false;
    uint64_t overruns = 0;
  };
  struct Doorbell {
    std::atomic<uint32_t> ci{0};
    std::atomic<uint32_t> uar{0};
    std::atomic<bool> arm{false};
  };
  Status write_eqe_locked(uint32_t eqn, Eq& eq, prm::EventType type, uint8_t sub_type,
                          std::span<const std::byte> data);
  uint32_t ci_of(uint32_t eqn) const { return db_[eqn].ci.load(std::memory_order_acquire); }

  PciFunction& pci_;
  const uint32_t max_eqs_;
  mutable std::mutex mu_;
  std::vector<Eq> eqs_;
  std::unique_ptr<Doorbell[]> db_;  // indexed by eqn, 256 entries
  std::atomic<uint64_t> overruns_{0};
};

// CREATE_EQ, DESTROY_EQ, QUERY_EQ, GEN_EQE (eq_cmds.cpp).
void register_eq_commands(CommandRegistry& r);

}  // namespace kbv::sim::fw
