// SPDX-License-Identifier: BSD-3-Clause
//
// FastTable: lock-free handle -> object lookup for the fast path (kbv.h
// "Fast path": post/poll resolve a QP/CQ/SRQ/AH handle without a lock).
//
// Keyed by the verbs Object handle (request.hpp: generation << 32 | slot +
// 1, slot < 2^24; slots are handed out densely from 0 and reused, so the
// low ones are the live ones). The first kFlat slots are a flat array in
// the table itself (the process's table is static storage: zero pages,
// mapped on first touch), so the fast path's lookup is one load that
// depends on the handle (the entry), then the object (issue 15: the
// two-level table cost a dependent chunk-pointer load on every call).
// Slots from kFlat on live in 4096 chunks of 4096 entries, a chunk
// allocated on first use (control path, under a mutex) and never freed.
// A reader needs only atomic loads: (chunk pointer,) the entry's handle
// (must equal the handle asked for, generation included) and pointer.
// put() publishes the pointer before the handle; erase() clears the handle;
// get() checks the handle before and after reading the pointer, so a lookup
// of a closed handle fails even while its slot is being reused. The pointee's lifetime is the
// caller's: it must outlive its entry plus any lookup racing the erase
// (kbv.h: closing an object while another thread posts to it is a
// programming error).
//
// Threading: get() / get_flat() from any thread, lock-free; put()/erase()
// from any thread (control path).
//
// The process's table of QP/CQ/SRQ/AH handles is fast_handles():
// constant-initialised (constinit, no initialisation guard) and never
// destroyed (a thread may still post or poll while the process exits), so
// the fast path resolves a handle inline, without a call (issue 15).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>

namespace kbv::verbs {

template <class T>
class FastTable {
 public:
  static constexpr uint32_t kFlat = 1u << 16;  // slots in the flat array (1 MiB)
  static constexpr uint32_t kChunkBits = 12;
  static constexpr uint32_t kChunks = 1u << 12;
  static constexpr uint64_t kSlots = uint64_t{1} << 24;  // request.hpp's handle table

  constexpr FastTable() = default;
  ~FastTable() {
    for (auto& c : chunks_) delete c.load(std::memory_order_relaxed);
  }

  // The fast path's lookup: the object of handle h when its slot is in the
  // flat array, else nullptr (a slot beyond it, a stale or invalid handle:
  // the caller then takes its general path, which uses get()).
  [[gnu::always_inline]] T* get_flat(uint64_t h) const {
    const uint32_t idx = static_cast<uint32_t>(h) - 1;  // slot 0 in h means none: wraps
    if (idx >= kFlat) return nullptr;
    return read(flat_[idx], h);
  }

  T* get(uint64_t h) const {
    const Entry* e = find(h);
    return e ? read(*e, h) : nullptr;
  }

  // false when the handle is out of range or memory ran out.
  bool put(uint64_t h, T* p) {
    Entry* e = entry(h, true);
    if (!e) return false;
    e->ptr.store(p, std::memory_order_release);
    e->handle.store(h, std::memory_order_release);
    return true;
  }

  void erase(uint64_t h) {
    Entry* e = entry(h, false);
    if (!e) return;
    uint64_t expect = h;
    e->handle.compare_exchange_strong(expect, 0, std::memory_order_acq_rel);
  }

 private:
  struct Entry {
    std::atomic<uint64_t> handle{0};
    std::atomic<T*> ptr{nullptr};
  };
  struct Chunk {
    std::array<Entry, 1u << kChunkBits> e;
  };

  [[gnu::always_inline]] static T* read(const Entry& e, uint64_t h) {
    if (e.handle.load(std::memory_order_acquire) != h) return nullptr;
    T* p = e.ptr.load(std::memory_order_acquire);
    // The slot may have been erased and reused between the two loads: a
    // pointer stored by a later put() carries (release) the erase before
    // it, so the handle no longer reads h. Generations never repeat, so
    // this second check has no ABA case. A matching handle was published
    // after its pointer, so p is not null.
    if (e.handle.load(std::memory_order_acquire) != h) return nullptr;
    return p;
  }

  // The entry of h's slot (nullptr: out of range, or its chunk not there).
  const Entry* find(uint64_t h) const {
    const uint64_t low = h & 0xffffffffu;
    if (low == 0 || low > kSlots) return nullptr;
    const uint64_t idx = low - 1;
    if (idx < kFlat) return &flat_[idx];
    const uint64_t c_idx = idx - kFlat;
    const Chunk* c = chunks_[c_idx >> kChunkBits].load(std::memory_order_acquire);
    return c ? &c->e[c_idx & ((1u << kChunkBits) - 1)] : nullptr;
  }

  Entry* entry(uint64_t h, bool create) {
    const uint64_t low = h & 0xffffffffu;
    if (low == 0 || low > kSlots) return nullptr;
    const uint64_t idx = low - 1;
    if (idx < kFlat) return &flat_[idx];
    const uint64_t c_idx = idx - kFlat;
    auto& slot = chunks_[c_idx >> kChunkBits];
    Chunk* c = slot.load(std::memory_order_acquire);
    if (!c && create) {
      std::lock_guard lk(mu_);
      c = slot.load(std::memory_order_acquire);
      if (!c) {
        c = new (std::nothrow) Chunk();
        if (!c) return nullptr;
        slot.store(c, std::memory_order_release);
      }
    }
    return c ? &c->e[c_idx & ((1u << kChunkBits) - 1)] : nullptr;
  }

  std::array<Entry, kFlat> flat_{};
  std::array<std::atomic<Chunk*>, kChunks> chunks_{};
  std::mutex mu_;
};
static_assert((FastTable<int>::kSlots - FastTable<int>::kFlat) <=
              uint64_t{FastTable<int>::kChunks} << FastTable<int>::kChunkBits);

// Holds a T constructed at constant initialisation and never destroyed.
template <class T>
union Immortal {
  constexpr Immortal() : value() {}
  constexpr ~Immortal() {}
  T value;
};

struct Base;
// Defined in registry.cpp (which puts and erases entries).
extern constinit Immortal<FastTable<Base>> g_fast_handles;
inline FastTable<Base>& fast_handles() { return g_fast_handles.value; }

}  // namespace kbv::verbs
