// SPDX-License-Identifier: BSD-3-Clause
//
// MMIO accessors and DMA ordering barriers, each named by the one purpose it
// serves in the mlx5 programming model, plus `Bar`, a view of a mapped device
// region whose stores are also reported to the model's MmioTrap (sys.hpp).
//
// The two parties whose ordering matters are (a) this CPU's stores and loads
// and (b) the HCA, which reaches host memory with PCIe MemRd/MemWr TLPs and
// receives our BAR stores as MemWr TLPs. Every guarantee below is stated
// between those two streams. Ordering between CPU threads is a different
// problem (std::atomic), not solved here.
//
// Memory types involved:
//   - DMA memory (queues, doorbell records, data): ordinary write-back (WB)
//     cacheable host memory; the HCA snoops it coherently.
//   - BAR0 as mapped by vfio-pci: uncached (UC on x86-64, Device-nGnRnE on
//     aarch64; the kernel maps PCI BARs with pgprot_noncached).
//   - A BlueFlame register mapped write-combining (WC on x86-64, Normal-NC on
//     aarch64) where a backend can provide that; vfio-pci's mmap is UC, so on
//     VFIO a BlueFlame copy arrives as ordinary UC stores.
//
// Sources: the PCIe ordering model as described in rdma-core util/mmio.h and
// util/udma_barrier.h (which name each barrier by purpose and state its TLP-level
// effect). Each barrier below compiles to exactly the instruction rdma-core's
// util/udma_barrier.h gives it on x86-64 and on aarch64 (the aarch64 choices
// as of rdma-core 1ec72764, "util/udma_barrier.h: adjust ARMv8 memory
// barriers", 2024: dmb oshst / dmb oshld where dsb st / dsb ld were before),
// and each is used where rdma-core's mlx5 provider uses it (named per
// barrier). tests/unit/platform/mmio_barriers_test.py checks the
// disassembly of each barrier and of the completion poller, natively and in
// the aarch64 cross build (make test-aarch64). Intel SDM vol. 3 section 11.3
// (memory types) and 8.2 (x86 ordering), Arm ARM B2.3 (DMB/DSB, shareability
// domains), docs/PRM.md "Data path" (doorbell record then doorbell;
// BlueFlame halves at UAR+0x800).
//
// Endianness: the HCA's registers are big-endian (docs/PRM.md). The *_be accessors
// take and return CPU-order values and do the swap; `mmio_write32_be(p, 1)`
// puts the 1 in the last byte of the dword, i.e. produces a 4-byte MemWr TLP
// whose byte 3 holds 0x01.
//
// Threading: the free functions are stateless. A Bar is a plain view (copyable);
// concurrent stores to *different* registers are fine, concurrent stores to
// one register are the caller's business (as on silicon). MmioTrap::on_write
// runs on the storing thread.
#pragma once

#include <endian.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "platform/sys.hpp"

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "kbv platform/mmio.hpp: only x86-64 and aarch64 are supported"
#endif

namespace kbv::platform {

// ---- barriers ----------------------------------------------------------------

// Compiler-only barrier: the compiler may not move memory accesses across it.
inline void compiler_barrier() { asm volatile("" ::: "memory"); }

// "Device-visible memory before doorbell": every store this CPU made to DMA
// memory (WQEs, CQ/EQ consumer updates, command queue entries, mailboxes)
// before this call is visible to the HCA's MemRd TLPs issued because of any
// MMIO store or doorbell-record store made after it.
//   x86-64: stores retire to memory in program order (TSO), and a later UC
//   store is never performed before an earlier WB store; only the compiler
//   has to be stopped from reordering. (Non-temporal stores are not covered:
//   kbv never uses them on DMA memory.)
//   aarch64: "dmb oshst" orders all earlier stores before all later stores
//   for every observer in the outer-shareable domain, which includes the
//   PCIe root complex.
// rdma-core: udma_to_device_barrier(), x86-64 asm volatile("" ::: "memory"),
// aarch64 "dmb oshst". mlx5 uses it before the send doorbell record
// (qp.c post_send_db), the receive and SRQ doorbell records (qp.c
// mlx5_post_recv, srq.c), the command doorbell (mlx5_vfio.c) and after an
// EQ consumer index write (mlx5_vfio.c eq_update_ci).
inline void udma_to_device_barrier() {
#if defined(__x86_64__)
  compiler_barrier();
#else
  asm volatile("dmb oshst" ::: "memory");
#endif
}

// "Write ordering inside DMA memory": the HCA can never observe a later store
// (an ownership/valid bit, a doorbell record) without the earlier ones
// (the entry's body). Same instruction as udma_to_device_barrier(); the
// separate name documents the intent at the point of use. rdma-core:
// udma_ordering_write_barrier() is udma_to_device_barrier().
inline void udma_ordering_write_barrier() { udma_to_device_barrier(); }

// "Read device-written memory after seeing its owner bit": after a load that
// observed an entry handed over by the HCA (CQE/EQE owner bit, command
// status_own), every later load returns data at least as new as the MemWr
// TLPs that preceded the one that set the bit (PCIe keeps posted writes in
// order).
//   x86-64: "lfence" — loads are not reordered with older loads on WB memory
//   anyway, but lfence also stops speculative early loads; it is what
//   rdma-core uses.
//   aarch64: "dmb oshld" orders earlier loads before later loads and stores.
// rdma-core: udma_from_device_barrier(), x86-64 "lfence", aarch64 "dmb
// oshld". mlx5 uses it once per CQE after the owner check (cq.c
// mlx5_get_next_cqe), per EQE (mlx5_vfio.c mlx5_eq_get_eqe) and after a
// command's ownership bit clears (mlx5_vfio.c); the CQ consumer index store
// after a poll batch has no barrier before it (cq.c update_cons_index).
inline void udma_from_device_barrier() {
#if defined(__x86_64__)
  asm volatile("lfence" ::: "memory");
#else
  asm volatile("dmb oshld" ::: "memory");
#endif
}

// "Flush write-combining buffers": after stores to a WC mapping (BlueFlame),
// send them to the device promptly, and never merge a store before this call
// with one after it (two stores to one WC address separated by this call are
// two MemWr TLPs). Also orders the WC stores before any later store.
//   x86-64: "sfence" drains the WC buffers. aarch64: "dsb st" completes all
//   earlier stores before any later instruction executes.
// rdma-core: mmio_flush_writes(), x86-64 "sfence", aarch64 "dsb st". mlx5
// uses it after the BlueFlame copy or send doorbell (qp.c post_send_db) and
// after the CQ arm doorbell (cq.c mlx5_arm_cq).
inline void mmio_flush_writes() {
#if defined(__x86_64__)
  asm volatile("sfence" ::: "memory");
#else
  asm volatile("dsb st" ::: "memory");
#endif
}

// "Begin a write-combining sequence": earlier UC MMIO stores and DMA-memory
// stores (the doorbell record) are ordered before the WC stores that follow,
// which otherwise could overtake them. Implies udma_to_device_barrier().
// rdma-core: mmio_wc_start() is mmio_flush_writes(). mlx5 uses it between
// the send doorbell record and the BlueFlame copy / doorbell (qp.c
// post_send_db) and between the CQ arm record and the CQ doorbell (cq.c
// mlx5_arm_cq).
inline void mmio_wc_start() { mmio_flush_writes(); }

// ---- accessors -----------------------------------------------------------------
// Each accessor is a single-copy-atomic, naturally aligned store or load of
// exactly its width that the compiler may neither elide, merge, split nor
// speculate (volatile + __atomic builtin). `addr` must be aligned to the
// width; misaligned MMIO is undefined on both architectures.
//
// Ordering among accessors to one BAR: on UC/Device memory the CPU keeps them
// in program order and never combines them (x86-64 UC; aarch64
// Device-nGnRnE), so N stores produce N TLPs in order. Ordering against DMA
// memory is NOT implied: use the barriers above.

// One 4-byte MemWr TLP carrying `value` big-endian.
inline void mmio_write32_be(void* addr, uint32_t value) {
  __atomic_store_n(static_cast<volatile uint32_t*>(addr), htobe32(value), __ATOMIC_RELAXED);
}

// One 8-byte MemWr TLP carrying `value` big-endian (the UAR doorbells are
// 64-bit registers that must arrive whole: docs/PRM.md CQ arm / send doorbell).
//   x86-64: a single 8-byte MOV to UC memory is one 8-byte MemWr TLP.
//   aarch64: a single 64-bit STR, single-copy atomic for an aligned
//   doubleword, to Device memory is one 8-byte MemWr TLP.
inline void mmio_write64_be(void* addr, uint64_t value) {
  __atomic_store_n(static_cast<volatile uint64_t*>(addr), htobe64(value), __ATOMIC_RELAXED);
}

// One 4-byte MemRd TLP; the big-endian register value in CPU order. A load
// from a UC/Device mapping is never speculated or served from a cache.
inline uint32_t mmio_read32_be(const void* addr) {
  return be32toh(__atomic_load_n(static_cast<const volatile uint32_t*>(addr), __ATOMIC_RELAXED));
}

// One 8-byte MemRd TLP (e.g. the 64-bit internal timer).
inline uint64_t mmio_read64_be(const void* addr) {
  return be64toh(__atomic_load_n(static_cast<const volatile uint64_t*>(addr), __ATOMIC_RELAXED));
}

// Raw (no swap) 64-bit store, for data already laid out big-endian (WQEs).
inline void mmio_write64_raw(void* addr, uint64_t raw) {
  __atomic_store_n(static_cast<volatile uint64_t*>(addr), raw, __ATOMIC_RELAXED);
}

// BlueFlame copy: 64 bytes from `src` (a WQE's first basic block, already
// big-endian) to the BlueFlame register at `dst`, as eight 8-byte stores in
// ascending address order. Both pointers 8-byte aligned, dst 64-byte aligned.
// On a WC mapping the CPU combines them into (ideally) one 64-byte MemWr TLP;
// on a UC mapping (vfio-pci) they are eight 8-byte TLPs, which the HCA also
// accepts. Bracket with mmio_wc_start() / mmio_flush_writes().
inline void mmio_bf_copy64(void* dst, const void* src) {
  auto* d = static_cast<unsigned char*>(dst);
  auto* s = static_cast<const unsigned char*>(src);
  for (unsigned i = 0; i < 64; i += 8) {
    uint64_t w;
    std::memcpy(&w, s + i, 8);
    mmio_write64_raw(d + i, w);
  }
}

// ---- handover words in DMA memory ---------------------------------------------
// The words that hand a DMA entry between driver and HCA: an owner byte the
// device writes last (CQE op_own, EQE owner, command status_own), and the
// words the device reads before what they cover (doorbell records, command
// status_own). What orders them against the entries on silicon are the
// barriers above. These accessors add nothing to that on a normal build (the
// same single load or store as before them), but under ThreadSanitizer
// (KBV_TSAN) they are acquire loads and release stores: the model device does
// its side of the same words as release stores and acquire loads
// (sim/bus/iommu.hpp dma_copy_*), so TSan sees the PRM's ownership protocol
// as the happens-before it is and checks every access around it.
#if defined(__SANITIZE_THREAD__)
#define KBV_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KBV_TSAN 1
#endif
#endif
#ifndef KBV_TSAN
#define KBV_TSAN 0
#endif

// An owner byte the device writes: one fresh load, never cached or merged.
// Follow a load that shows software ownership with udma_from_device_barrier()
// before reading the entry.
inline uint8_t dma_load_owner(const void* addr) {
  return __atomic_load_n(static_cast<const volatile uint8_t*>(addr),
                         KBV_TSAN ? __ATOMIC_ACQUIRE : __ATOMIC_RELAXED);
}

// An owner byte the driver writes to hand an entry to the device (command
// status_own), after udma_ordering_write_barrier().
inline void dma_store_owner(void* addr, uint8_t value) {
  __atomic_store_n(static_cast<volatile uint8_t*>(addr), value,
                   KBV_TSAN ? __ATOMIC_RELEASE : __ATOMIC_RELAXED);
}

// A doorbell record word (big-endian value `be`), after
// udma_to_device_barrier(). Normal build: the plain volatile store it always
// was (the fast path's code does not change).
inline void dbrec_store(volatile uint32_t* rec, uint32_t be) {
#if KBV_TSAN
  __atomic_store_n(rec, be, __ATOMIC_RELEASE);
#else
  *rec = be;
#endif
}

// ---- Bar -------------------------------------------------------------------------

// A mapped device region (BAR0: init segment + UAR pages), non-owning: the
// backend that mapped it (VfioDevice) unmaps it and must outlive every Bar.
// Offsets are bytes from the start of the region. The accessors do not
// check bounds (the fast path pays for nothing but the trap branch): callers
// validate offsets once, at setup, with contains().
//
// Each store is the accessor above followed by, on the model only,
// trap->on_write(offset, value, width). The value reported is the CPU-order
// value whose big-endian image now sits at `offset` (for write32_be /
// write64_be exactly the `value` argument; for a BlueFlame copy, be64toh of
// each 8-byte chunk), so `be*toh(load(offset)) == value` always holds.
class Bar {
 public:
  Bar() = default;
  Bar(void* base, size_t size, MmioTrap* trap)
      : base_(static_cast<unsigned char*>(base)), size_(size), trap_(trap) {}

  unsigned char* base() const { return base_; }
  size_t size() const { return size_; }
  MmioTrap* trap() const { return trap_; }
  bool mapped() const { return base_ != nullptr; }
  // True when `len` bytes at `offset` lie inside the region.
  bool contains(uint64_t offset, uint64_t len) const {
    return offset <= size_ && len <= size_ - offset;
  }

  void write32_be(uint64_t offset, uint32_t value) const {
    mmio_write32_be(base_ + offset, value);
    if (trap_) [[unlikely]]
      trap_->on_write(offset, value, 4);
  }
  void write64_be(uint64_t offset, uint64_t value) const {
    mmio_write64_be(base_ + offset, value);
    if (trap_) [[unlikely]]
      trap_->on_write(offset, value, 8);
  }
  uint32_t read32_be(uint64_t offset) const { return mmio_read32_be(base_ + offset); }
  uint64_t read64_be(uint64_t offset) const { return mmio_read64_be(base_ + offset); }

  // 64-byte BlueFlame copy to `offset` (64-byte aligned); on the model the
  // trap sees eight 8-byte writes in ascending order.
  void bf_copy64(uint64_t offset, const void* src) const {
    mmio_bf_copy64(base_ + offset, src);
    if (trap_) [[unlikely]] {
      for (unsigned i = 0; i < 64; i += 8) {
        uint64_t w;
        std::memcpy(&w, static_cast<const unsigned char*>(src) + i, 8);
        trap_->on_write(offset + i, be64toh(w), 8);
      }
    }
  }

 private:
  unsigned char* base_ = nullptr;
  size_t size_ = 0;
  MmioTrap* trap_ = nullptr;
};

}  // namespace kbv::platform
