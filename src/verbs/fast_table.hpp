// SPDX-License-Identifier: BSD-3-Clause
//
// FastTable: lock-free handle -> object lookup for the fast path (kbv.h
// "Fast path": post/poll resolve a QP/CQ/SRQ/AH handle without a lock).
//
// Keyed by the verbs Object handle (request.hpp: generation << 32 | slot +
// 1, slot < 2^24). Two levels: 4096 chunks of 4096 entries, a chunk
// allocated on first use (control path, under a mutex) and never freed, so
// a reader needs only atomic loads: chunk pointer, then the entry's handle
// (must equal the handle asked for, generation included) and pointer.
// put() publishes the pointer before the handle; erase() clears the handle;
// get() checks the handle before and after reading the pointer, so a lookup
// of a closed handle fails even while its slot is being reused. The pointee's lifetime is the
// caller's: it must outlive its entry plus any lookup racing the erase
// (kbv.h: closing an object while another thread posts to it is a
// programming error).
//
// Threading: get() from any thread, lock-free; put()/erase() from any
// thread (control path).
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

namespace kbv::verbs {

template <class T>
class FastTable {
 public:
  static constexpr uint32_t kChunkBits = 12;
  static constexpr uint32_t kChunks = 1u << 12;

  constexpr FastTable() = default;
  ~FastTable() {
    for (auto& c : chunks_) delete c.load(std::memory_order_relaxed);
  }

  T* get(uint64_t h) const {
    const uint64_t low = h & 0xffffffffu;
    if (low == 0 || low > (uint64_t{kChunks} << kChunkBits)) return nullptr;
    const uint64_t idx = low - 1;
    const Chunk* c = chunks_[idx >> kChunkBits].load(std::memory_order_acquire);
    if (!c) return nullptr;
    const Entry& e = c->e[idx & ((1u << kChunkBits) - 1)];
    if (e.handle.load(std::memory_order_acquire) != h) return nullptr;
    T* p = e.ptr.load(std::memory_order_acquire);
    // The slot may have been erased and reused between the two loads: a
    // pointer stored by a later put() carries (release) the erase before
    // it, so the handle no longer reads h. Generations never repeat, so
    // this second check has no ABA case.
    if (e.handle.load(std::memory_order_acquire) != h) return nullptr;
    return p;
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

  Entry* entry(uint64_t h, bool create) {
    const uint64_t low = h & 0xffffffffu;
    if (low == 0 || low > (uint64_t{kChunks} << kChunkBits)) return nullptr;
    const uint64_t idx = low - 1;
    auto& slot = chunks_[idx >> kChunkBits];
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
    return c ? &c->e[idx & ((1u << kChunkBits) - 1)] : nullptr;
  }

  std::array<std::atomic<Chunk*>, kChunks> chunks_{};
  std::mutex mu_;
};

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
