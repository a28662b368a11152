// SPDX-License-Identifier: BSD-3-Clause
//
// EventQueue: the driver's side of one mlx5 EQ (docs/PRM.md "Event queues").
//
// The buffer is 1 << log_nent 64-byte EQEs (prm::eqe) in DMA memory, listed
// to CREATE_EQ as 4 KiB pages (create_attr()); every owner byte starts at 1
// (prm::kEqeOwnerInit). Entry ci & (nent - 1) is software's when
// (owner & 1) == ((ci & nent) != 0) (prm::eqe_is_sw_owned). poll() hands
// each software-owned EQE to a handler in order, updates the consumer index
// in the doorbell (UAR+0x48) at least every prm::kNumSpareEqe (0x80) entries
// and, when it consumed anything, writes the final index with re-arm
// (UAR+0x40), so the EQ raises its MSI-X vector for the next event.
//
// An EQ is created in two steps so that the CREATE_EQ command stays
// asynchronous: alloc() (buffer), cmd::create_eq(create_attr(...)), then
// bind(eqn, uar) and arm() once the command completed. The owner of the EQ
// (Hca) destroys it with DESTROY_EQ before the buffer is freed.
//
// Sleeping: eventfd() is the platform's eventfd for the EQ's MSI-X vector
// (DeviceIo::msix_eventfd); after arm(), an application may poll(2) it and
// call poll() when it becomes readable.
//
// Threading: one thread polls an EQ; the handler runs on it.
#pragma once

#include <kbv/status.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include "hca/cmd/eq.hpp"
#include "hca/io/device_io.hpp"
#include "hca/prm/eq.hpp"
#include "hca/prm/eqe.hpp"
#include "hca/uar.hpp"

namespace kbv::hca {

class EventQueue {
 public:
  // log_nent: 1..prm::eqc::log_eq_size max; nent must exceed kNumSpareEqe
  // for the update rule to make sense, so log_nent >= 8 is typical.
  static Result<std::unique_ptr<EventQueue>> alloc(DeviceIo& io, uint32_t log_nent,
                                                   uint32_t vector);
  ~EventQueue();
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  // CREATE_EQ attributes for this buffer: log size, 4 KiB pages, vector,
  // the UAR that will carry its doorbell. Add events with attr.event(...).
  cmd::CreateEqAttr create_attr(uint32_t uar) const;
  // Makes the EQ live after CREATE_EQ returned `eqn`.
  void bind(uint32_t eqn, const Uar& uar);
  bool bound() const { return bound_; }
  // Doorbell with re-arm at the current consumer index.
  void arm();

  // Consumes up to `budget` EQEs: handler(prm::CRef<prm::eqe>) for each.
  // Returns the number consumed. Does nothing before bind().
  template <class H>
  uint32_t poll(H&& handler, uint32_t budget = UINT32_MAX);

  uint32_t eqn() const { return eqn_; }
  uint32_t ci() const { return ci_; }
  uint32_t nent() const { return nent_; }
  uint32_t vector() const { return vector_; }
  uint64_t events() const { return events_; }
  // The eventfd of the EQ's vector, or the DeviceIo's error.
  Result<int> eventfd() const { return io_.msix_eventfd(vector_); }

 private:
  EventQueue(DeviceIo& io, DmaBlock buf, uint32_t log_nent, uint32_t vector)
      : io_(io), buf_(buf), log_nent_(log_nent), nent_(1u << log_nent), vector_(vector) {}
  const std::byte* entry(uint32_t ci) const {
    return buf_.va + size_t{ci & (nent_ - 1)} * prm::kEqeBytes;
  }
  uint8_t owner_byte(uint32_t ci) const {
    // The device writes this byte; load it once per check, never cached.
    return platform::dma_load_owner(entry(ci) + prm::eqe::owner.off / 8);
  }

  DeviceIo& io_;
  DmaBlock buf_;
  uint32_t log_nent_;
  uint32_t nent_;
  uint32_t vector_;
  uint32_t eqn_ = 0;
  Uar uar_;
  bool bound_ = false;
  uint32_t ci_ = 0;
  uint64_t events_ = 0;  // EQEs consumed, total
};

template <class H>
uint32_t EventQueue::poll(H&& handler, uint32_t budget) {
  if (!bound_) return 0;
  uint32_t n = 0;
  uint32_t since_update = 0;
  while (n < budget && prm::eqe_is_sw_owned(owner_byte(ci_), ci_, nent_)) {
    // The owner bit was seen: read the rest of the EQE only after it.
    platform::udma_from_device_barrier();
    handler(prm::CRef<prm::eqe>(entry(ci_)));
    ++ci_;
    ++n;
    if (++since_update == prm::kNumSpareEqe) {
      uar_.eq_doorbell(eqn_, ci_, /*arm=*/false);
      since_update = 0;
    }
  }
  if (n) {
    events_ += n;
    uar_.eq_doorbell(eqn_, ci_, /*arm=*/true);
  }
  return n;
}

}  // namespace kbv::hca
