// SPDX-License-Identifier: BSD-3-Clause
//
// libFuzzer target: the C API's argument surface (include/kbv/kbv.h,
// include/kbv/eq.h). Each input is a program of calls with fuzzer-chosen
// arguments — handles that are 0, garbage, of another kind, closed (stale)
// or live; NULL or valid output pointers; huge and zero sizes, counts and
// depths; unknown flags, opcodes, states and attribute masks; work-request
// lists with any opcode, flags, SGE count, keys and addresses — made
// synchronously (KBV_EQ_NONE) or on event queues, against one model HCA
// ("sim:", src/sim) opened once for the whole run with zero command latency.
//
// After every input everything the input created is destroyed, every event
// queue drained and destroyed, and the device checked to be as before.
// Invariants (abort on violation; ASan/UBSan/LSan cover crashes, memory
// errors and leaks of host memory):
//   * every call returns a status kbv_status_is_known() names (negative ints
//     from kbv_poll_cq / kbv_eq_poll included);
//   * exactly one request event (KBV_EVENT_REQUEST or KBV_EVENT_COMP_NOTIFY)
//     per call that returned KBV_PENDING on a queue still alive, with its
//     user_data, and no request event that no call asked for; all of them
//     arrive within 20 s of the cleanup (else: a request that never
//     completes, i.e. a hang);
//   * after the cleanup the model's firmware holds the objects it held
//     before the input (PDs, mkeys, CQs, SRQs, QPs, umems, multicast
//     groups) and its IOMMU the same DMA mappings other than 64 KiB ones
//     (no firmware object and no pinned memory leaked; the command queue's
//     mailbox pool keeps the 64 KiB chunks it grew to), no command is in
//     flight or queued, and the device still allocates and frees a PD.
//
// What the program never does, as a caller may not either: pass pointers to
// memory it does not own (output pointers are NULL or big enough; arrays
// are NULL or as long as the count given, or the count is above any limit),
// register memory outside its own arena (addresses are NULL, inside the
// arena — 64 read/write pages, a read-only page, an inaccessible page — or
// a few fixed invalid ones), or close the device the run uses.
//
// Input: a sequence of operations, each one selector byte then its
// arguments as the reader hands them out (missing bytes read as zero).
#include "sim/bus/pci_device.hpp"
#include "sim/fw/firmware.hpp"
#include "sim/fw/objects/tables.hpp"
#include "sim/model.hpp"

#include <kbv/kbv.h>
#include <kbv/log.h>

#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

[[noreturn]] void violated(const char* what, long long a = 0) {
  std::fprintf(stderr, "api_surface invariant violated: %s (%lld)\n", what, a);
  std::abort();
}

// KBV_FUZZ_TRACE=1: every call and its status on stderr (replaying a crash).
const bool g_trace = std::getenv("KBV_FUZZ_TRACE") != nullptr;

void known(int32_t st, const char* call) {
  if (g_trace)
    std::fprintf(stderr, "%s -> %s\n", call, kbv_status_name(static_cast<kbv_status_t>(st)));
  if (!kbv_status_is_known(st)) {
    std::fprintf(stderr, "%s returned unknown status %d\n", call, st);
    violated("unknown status", st);
  }
}

class Reader {
 public:
  Reader(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  bool more() const { return off_ < n_; }
  uint8_t u8() { return off_ < n_ ? d_[off_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | u8() << 8); }
  uint32_t u32() { return u16() | uint32_t{u16()} << 16; }
  uint64_t u64() { return u32() | uint64_t{u32()} << 32; }
  void bytes(void* out, size_t n) {
    auto* o = static_cast<uint8_t*>(out);
    for (size_t i = 0; i < n; ++i) o[i] = u8();
  }
  // A size: small, around a power of two, or any 32-bit value.
  uint32_t size32() {
    const uint8_t k = u8();
    switch (k % 4) {
      case 0: return k >> 2;
      case 1: return (1u << ((k >> 2) % 32)) + static_cast<uint32_t>(int8_t(u8()) % 4);
      default: return u32();
    }
  }

 private:
  const uint8_t* d_;
  size_t n_;
  size_t off_ = 0;
};

enum Kind : uint8_t { kPd, kMr, kCq, kSrq, kAh, kQp, kKinds };

constexpr size_t kRwPages = 64;
constexpr size_t kPage = 4096;

struct FwCounts {
  size_t pds, mkeys, cqs, srqs, qps, umems, mcgs, dma_maps;
  // Not compared: pages given to the firmware (MANAGE_PAGES; the firmware
  // may keep what it asked for) and 64 KiB mappings — the command queue's
  // mailbox pool grows in 64 KiB chunks to the largest command seen and
  // keeps them (hca/cmdq/mailbox.hpp), so those are counted apart.
  size_t fw_pages, dma_maps_64k;
  bool same_objects(const FwCounts& o) const {
    return pds == o.pds && mkeys == o.mkeys && cqs == o.cqs && srqs == o.srqs && qps == o.qps &&
           umems == o.umems && mcgs == o.mcgs && dma_maps == o.dma_maps;
  }
};

class Harness {
 public:
  Harness() {
    setenv("KBV_SIM_DEVICES", "", 1);  // guid: probes find no other device
    name_ = "fuzzapi-" + std::to_string(::getpid());
    kbv::sim::ModelConfig cfg;
    cfg.faults_from_env = false;
    cfg.fw.cmd_latency = std::chrono::nanoseconds(0);
    cfg.link_up_delay = std::chrono::nanoseconds(0);
    auto m = kbv::sim::Model::create(name_, cfg);
    if (!m) violated("model create");
    model_ = std::move(*m);
    const std::string uri = "sim:" + name_;
    if (kbv_device_open(uri.c_str(), nullptr, KBV_EQ_NONE, 0, &dev_) != KBV_SUCCESS)
      violated("device open");
    if (kbv_port_query(dev_, 1, &port0_, KBV_EQ_NONE, 0) != KBV_SUCCESS) violated("port query");
    void* p = mmap(nullptr, (kRwPages + 2) * kPage, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) violated("mmap");
    arena_ = static_cast<uint8_t*>(p);
    if (mprotect(arena_ + kRwPages * kPage, kPage, PROT_READ) != 0 ||
        mprotect(arena_ + (kRwPages + 1) * kPage, kPage, PROT_NONE) != 0)
      violated("mprotect");
    baseline_ = counts();
  }

  int one(const uint8_t* data, size_t size) {
    Reader in(data, size);
    for (int ops = 0; in.more() && ops < 64; ++ops) op(in);
    cleanup();
    return 0;
  }

 private:
  // ---- choices ----
  uint64_t any_handle(Reader& in) {
    const uint8_t b = in.u8();
    switch (b % 8) {
      case 0: return 0;
      case 1: return in.u64();
      case 2: return dev_;
      case 3: return eqs_.empty() ? 0 : eqs_[in.u8() % eqs_.size()];
      default: {
        std::vector<uint64_t> all;
        for (const auto& v : made_) all.insert(all.end(), v.begin(), v.end());
        return all.empty() ? dev_ : all[in.u8() % all.size()];
      }
    }
  }
  uint64_t handle(Reader& in, Kind k) {
    const uint8_t b = in.u8();
    if (b % 8 < 2 || made_[k].empty())
      return b % 8 == 0 ? any_handle(in) : in.u64() & 0xFFFFFFFF0000000Full;
    return made_[k][in.u8() % made_[k].size()];
  }
  kbv_device_t device(Reader& in) {
    const uint8_t b = in.u8();
    return b % 8 == 0 ? any_handle(in) : dev_;
  }
  // The event queue of a control call: synchronous mostly, else one of
  // ours or a bad handle.
  kbv_eq_t eq(Reader& in) {
    const uint8_t b = in.u8();
    switch (b % 6) {
      case 0:
      case 1: return eqs_.empty() ? KBV_EQ_NONE : eqs_[in.u8() % eqs_.size()];
      case 2: return any_handle(in);
      default: return KBV_EQ_NONE;
    }
  }
  uint64_t user_data(Reader& in) { return in.u8() % 4 == 0 ? in.u8() % 4 : ++next_ud_; }
  // A place for a result: NULL sometimes.
  template <class T>
  T* out(Reader& in, T* p) {
    return in.u8() % 8 == 0 ? nullptr : p;
  }
  // An address in this process for registration: NULL, in the arena (read/
  // write, read-only or inaccessible pages), or a fixed invalid one.
  void* mem_addr(Reader& in) {
    const uint8_t b = in.u8();
    switch (b % 8) {
      case 0: return nullptr;
      case 1: {
        // Never mapped in a Linux process: the null page, a kernel and a
        // non-canonical address, an odd one.
        static const uintptr_t kBad[] = {1, 0x1000, 0xFFFFFFFFFFFFF000ull, 0x0000800000000000ull};
        return reinterpret_cast<void*>(kBad[in.u8() % 4]);
      }
      case 2: return arena_ + kRwPages * kPage + in.u16() % (2 * kPage);
      default: return arena_ + in.u32() % (kRwPages * kPage);
    }
  }

  // Bookkeeping for a call that may complete later on `q`.
  // A synchronous close of an object with children returns KBV_PENDING
  // (kbv.h "Close"): `close` says the call is one.
  void submitted(kbv_status_t st, kbv_eq_t q, uint64_t ud, const char* call, bool close = false) {
    known(st, call);
    if (st == KBV_PENDING) {
      if (q == KBV_EQ_NONE) {
        if (!close) violated("KBV_PENDING from a synchronous call");
        return;
      }
      auto it = outstanding_.find(q);
      if (it == outstanding_.end()) violated("KBV_PENDING on a queue that is not ours");
      if (!it->second.insert(ud).second) violated("two requests in flight with one user_data");
    }
  }
  void created(Kind k, kbv_status_t st, uint64_t h) {
    if ((st == KBV_SUCCESS || st == KBV_PENDING) && h != 0) made_[k].push_back(h);
  }

  // ---- one operation ----
  void op(Reader& in) {
    const uint8_t sel = in.u8();
    kbv_eq_t q = eq(in);
    const uint64_t ud = user_data(in);
    switch (sel % 36) {
      case 0: {
        kbv_pd_t h = 0;
        kbv_status_t st = kbv_pd_alloc(device(in), q, ud, out(in, &h));
        submitted(st, q, ud, "pd_alloc");
        created(kPd, st, h);
        break;
      }
      case 1: submitted(kbv_pd_dealloc(handle(in, kPd), q, ud), q, ud, "pd_dealloc", true); break;
      case 2: {
        kbv_mr_t h = 0;
        const kbv_pd_t pd = handle(in, kPd);
        void* a = mem_addr(in);
        const size_t len = in.u8() % 4 == 0 ? in.u64() : in.size32();
        const uint32_t acc = in.u8() % 4 == 0 ? in.u32() : in.u8() % 16;
        kbv_status_t st = kbv_mr_reg(pd, a, len, acc, q, ud, out(in, &h));
        submitted(st, q, ud, "mr_reg");
        created(kMr, st, h);
        break;
      }
      case 3: submitted(kbv_mr_dereg(handle(in, kMr), q, ud), q, ud, "mr_dereg", true); break;
      case 4: {
        uint32_t l = 0, r = 0;
        const kbv_mr_t mr = handle(in, kMr);
        known(kbv_mr_get_keys(mr, out(in, &l), out(in, &r)), "mr_get_keys");
        if (l) lkeys_.push_back(l);
        if (r) lkeys_.push_back(r);
        break;
      }
      case 5: {
        kbv_cq_attr_t a{};
        a.cqe = in.size32();
        a.flags = in.u8() % 8 == 0 ? in.u32() : 0;
        a.event_eq = in.u8() % 4 == 0 ? eq(in) : 0;
        kbv_cq_t h = 0;
        kbv_status_t st = kbv_cq_create(device(in), out(in, &a), q, ud, out(in, &h));
        if (g_trace) std::fprintf(stderr, "cq_create cqe %u\n", a.cqe);
        submitted(st, q, ud, "cq_create");
        created(kCq, st, h);
        break;
      }
      case 6:
        submitted(kbv_cq_resize(handle(in, kCq), in.size32(), q, ud), q, ud, "cq_resize");
        break;
      case 7: submitted(kbv_cq_destroy(handle(in, kCq), q, ud), q, ud, "cq_destroy", true); break;
      case 8: {
        const kbv_cq_t cq = handle(in, kCq);
        submitted(kbv_cq_arm(cq, in.u8() % 3, q, ud), q, ud, "cq_arm");
        break;
      }
      case 9: {
        kbv_srq_attr_t a{};
        a.max_wr = in.size32();
        a.max_sge = in.size32();
        a.srq_limit = in.size32();
        a.reserved = in.u8() % 8 == 0 ? in.u32() : 0;
        a.event_eq = in.u8() % 4 == 0 ? eq(in) : 0;
        kbv_srq_t h = 0;
        kbv_status_t st = kbv_srq_create(handle(in, kPd), out(in, &a), q, ud, out(in, &h));
        submitted(st, q, ud, "srq_create");
        created(kSrq, st, h);
        break;
      }
      case 10:
        submitted(kbv_srq_arm(handle(in, kSrq), in.size32(), q, ud), q, ud, "srq_arm");
        break;
      case 11:
        submitted(kbv_srq_destroy(handle(in, kSrq), q, ud), q, ud, "srq_destroy", true);
        break;
      case 12: {
        kbv_ah_attr_t a{};
        in.bytes(&a, sizeof a);
        kbv_ah_t h = 0;
        kbv_status_t st = kbv_ah_create(handle(in, kPd), out(in, &a), q, ud, out(in, &h));
        submitted(st, q, ud, "ah_create");
        created(kAh, st, h);
        break;
      }
      case 13: submitted(kbv_ah_destroy(handle(in, kAh), q, ud), q, ud, "ah_destroy", true); break;
      case 14: {
        kbv_qp_init_attr_t a{};
        const uint8_t t = in.u8();
        a.qp_type = t % 8 == 0 ? in.u32() : 2 + t % 3;
        a.sq_sig_all = in.u8() % 4 == 0 ? in.u32() : in.u8() % 2;
        a.send_cq = handle(in, kCq);
        a.recv_cq = in.u8() % 2 ? a.send_cq : handle(in, kCq);
        a.srq = in.u8() % 3 == 0 ? handle(in, kSrq) : 0;
        a.cap = {in.size32(), in.size32(), in.size32(), in.size32(), in.size32()};
        a.event_eq = in.u8() % 4 == 0 ? eq(in) : 0;
        kbv_qp_t h = 0;
        kbv_status_t st = kbv_qp_create(handle(in, kPd), out(in, &a), q, ud, out(in, &h));
        submitted(st, q, ud, "qp_create");
        created(kQp, st, h);
        break;
      }
      case 15: submitted(kbv_qp_destroy(handle(in, kQp), q, ud), q, ud, "qp_destroy", true); break;
      case 16: {
        uint32_t n = 0;
        const kbv_qp_t qp = handle(in, kQp);
        known(kbv_qp_get_num(qp, out(in, &n)), "qp_get_num");
        if (n) qpns_.push_back(n);
        break;
      }
      case 17: qp_modify(in, q, ud); break;
      case 18: {
        kbv_qp_t qp = handle(in, kQp);
        submitted(kbv_qp_query(qp, out(in, &qp_attr_), q, ud), q, ud, "qp_query");
        break;
      }
      case 19:
      case 20: {
        std::array<uint8_t, 16> gid{};
        in.bytes(gid.data(), gid.size());
        if (in.u8() % 2) gid[0] = 0xFF;
        const kbv_qp_t qp = handle(in, kQp);
        const uint8_t* g = in.u8() % 8 == 0 ? nullptr : gid.data();
        submitted(
            sel % 36 == 19 ? kbv_qp_attach_mcast(qp, g, q, ud) : kbv_qp_detach_mcast(qp, g, q, ud),
            q, ud, "mcast");
        break;
      }
      case 21:
      case 22: post_send(in); break;
      case 23: post_recv(in, false); break;
      case 24: post_recv(in, true); break;
      case 25: {
        const kbv_cq_t cq = handle(in, kCq);
        const uint8_t b = in.u8();
        const uint32_t n = b % 4 == 0 ? in.u32() : b % 65;
        int r = kbv_poll_cq(cq, b % 4 == 0 ? nullptr : wcs_.data(), n);
        if (r < 0) known(r, "poll_cq");
        if (r > 0 && static_cast<uint32_t>(r) > n) violated("poll_cq returned more than asked", r);
        break;
      }
      case 26:
        submitted(kbv_device_query(device(in), out(in, &dev_attr_), q, ud), q, ud, "device_query");
        break;
      case 27: {
        const kbv_device_t d = device(in);
        const uint32_t port = in.u8() % 4 == 0 ? in.u32() : in.u8() % 3;
        submitted(kbv_port_query(d, port, out(in, &port_attr_), q, ud), q, ud, "port_query");
        break;
      }
      case 28: {
        const kbv_device_t d = device(in);
        const uint32_t port = in.u8() % 4 == 0 ? in.u32() : in.u8() % 3;
        if (in.u8() % 2) {
          const uint32_t idx = in.size32();
          submitted(kbv_port_query_pkey(d, port, idx, out(in, &pkey_), q, ud), q, ud, "pkey");
        } else {
          const uint8_t b = in.u8();
          const uint32_t n = b % 4 == 0 ? in.u32() : in.u16() % (pkeys_.size() + 1);
          submitted(
              kbv_port_query_pkey_table(d, port, b % 4 == 0 ? nullptr : pkeys_.data(), n, q, ud), q,
              ud, "pkey_table");
        }
        break;
      }
      case 29: {
        const kbv_device_t d = device(in);
        switch (in.u8() % 6) {
          case 0: {
            kbv_device_stats_t s;
            known(kbv_device_get_stats(d, out(in, &s)), "get_stats");
            break;
          }
          case 1: {
            uint64_t t;
            uint32_t f;
            known(kbv_device_read_clock(d, out(in, &t), out(in, &f)), "read_clock");
            break;
          }
          case 2: {
            int r = kbv_device_progress(d);
            if (r < 0) known(r, "progress");
            break;
          }
          case 3: {
            int fd;
            known(kbv_device_get_fd(d, out(in, &fd)), "get_fd");
            break;
          }
          case 4: known(kbv_device_start_progress_thread(d), "start_progress"); break;
          default: known(kbv_device_stop_progress_thread(d), "stop_progress"); break;
        }
        break;
      }
      case 30: {
        const uint8_t b = in.u8();
        const uint32_t depth = b % 4 == 0 ? in.u32() : 1 + b % 16;
        kbv_eq_t h = 0;
        kbv_status_t st = kbv_eq_create(depth, out(in, &h));
        known(st, "eq_create");
        if (st == KBV_SUCCESS) {
          eqs_.push_back(h);
          outstanding_[h];
        }
        break;
      }
      case 31: {
        const kbv_eq_t e = any_handle(in);
        if (kbv_eq_destroy(e) == KBV_SUCCESS) forget_eq(e);
        break;
      }
      case 32: {
        const kbv_eq_t e = eqs_.empty() ? any_handle(in) : eqs_[in.u8() % eqs_.size()];
        const uint8_t b = in.u8();
        const uint32_t n = b % 4 == 0 ? in.u32() : b % 65;
        int r = kbv_eq_poll(e, b % 4 == 0 ? nullptr : events_.data(), n);
        if (r < 0) known(r, "eq_poll");
        if (r > 0 && static_cast<uint32_t>(r) > n) violated("eq_poll returned more than asked", r);
        for (int i = 0; i < r; ++i) on_event(e, events_[i]);
        break;
      }
      case 33: {
        const kbv_eq_t e = in.u8() % 2 ? any_handle(in) : q;
        switch (in.u8() % 4) {
          case 0: known(kbv_eq_cancel(e, in.u8() % 2 ? ud : next_ud_), "eq_cancel"); break;
          case 1: {
            uint32_t c;
            known(kbv_eq_cancel_object(e, any_handle(in), out(in, &c)), "eq_cancel_object");
            break;
          }
          case 2: {
            uint64_t lost;
            known(kbv_eq_get_lost(e, out(in, &lost)), "eq_get_lost");
            break;
          }
          default: {
            int fd;
            known(kbv_eq_get_fd(e, out(in, &fd)), "eq_get_fd");
            break;
          }
        }
        break;
      }
      case 34: {
        uint32_t c;
        known(kbv_cancel_object(any_handle(in), out(in, &c)), "cancel_object");
        break;
      }
      default: devices(in, q, ud); break;
    }
  }

  void qp_modify(Reader& in, kbv_eq_t q, uint64_t ud) {
    kbv_qp_attr_t a{};
    if (in.u8() % 4 == 0) {
      in.bytes(&a, sizeof a);
    } else {
      // Mostly sensible attributes, so transitions get far: the QP loops
      // to itself or to a fuzz-chosen QPN.
      a.qp_state = in.u8() % 8;
      a.cur_qp_state = in.u8() % 8;
      a.path_mtu = 1 + in.u8() % 6;
      a.qkey = in.u32();
      a.rq_psn = in.u32() & 0xFFFFFF;
      a.sq_psn = in.u32() & 0xFFFFFF;
      a.dest_qp_num = qpns_.empty() || in.u8() % 4 == 0 ? in.u32() : qpns_[in.u8() % qpns_.size()];
      a.qp_access_flags = in.u8() % 16;
      std::memcpy(a.ah_attr.dgid, port0_.gids[0].gid, 16);
      a.ah_attr.dmac = port0_.gids[0].mac;
      a.ah_attr.hop_limit = 64;
      a.ah_attr.sgid_index = in.u8() % 4 == 0 ? in.u8() : 0;
      a.port_num = static_cast<uint8_t>(in.u8() % 4 == 0 ? in.u8() : 1);
      a.max_rd_atomic = in.u8() % 20;
      a.max_dest_rd_atomic = in.u8() % 20;
      a.min_rnr_timer = in.u8() % 40;
      a.timeout = in.u8() % 40;
      a.retry_cnt = in.u8() % 10;
      a.rnr_retry = in.u8() % 10;
      a.pkey_index = in.u8() % 4 == 0 ? in.u16() : 0;
    }
    const uint32_t mask = in.u8() % 4 == 0 ? in.u32() : in.u32() & 0x13BFFB;
    const kbv_qp_t qp = handle(in, kQp);
    submitted(kbv_qp_modify(qp, out(in, &a), mask, q, ud), q, ud, "qp_modify");
  }

  // Scatter/gather entries: addresses in the arena or anywhere (a key
  // guards them), keys from the MRs made or any value.
  void sges(Reader& in, uint32_t n, bool readable) {
    for (uint32_t i = 0; i < n && i < sg_.size(); ++i) {
      kbv_sge_t& s = sg_[i];
      const uint8_t b = in.u8();
      s.length = b % 4 == 0 ? in.u32() : in.u16() % 9000;
      s.lkey = !lkeys_.empty() && b % 3 ? lkeys_[in.u8() % lkeys_.size()] : in.u32();
      if (readable) {
        // Inline data is read by the CPU: inside the read/write pages (a
        // length past them must be refused before the copy: it exceeds
        // every inline limit).
        const uint32_t off = in.u32() % (kRwPages * kPage);
        s.addr = reinterpret_cast<uintptr_t>(arena_ + off);
        if (s.length <= 0x10000 && off + s.length > kRwPages * kPage)
          s.length = static_cast<uint32_t>(kRwPages * kPage - off);
      } else {
        s.addr = b % 8 == 0 ? in.u64()
                            : reinterpret_cast<uintptr_t>(arena_) + in.u32() % (kRwPages * kPage);
      }
    }
  }
  // A count for an array of `cap`: within it, or any value (the call must
  // refuse a count above its limits before reading the array).
  uint32_t count(Reader& in, size_t cap) {
    const uint8_t b = in.u8();
    return b % 8 == 0 ? in.u32() | 0x10000u : static_cast<uint32_t>(b % (cap + 1));
  }

  void post_send(Reader& in) {
    const kbv_qp_t qp = handle(in, kQp);
    const uint32_t n = count(in, send_wrs_.size());
    for (size_t i = 0; i < send_wrs_.size() && i < n; ++i) {
      kbv_send_wr_t& w = send_wrs_[i];
      w = kbv_send_wr_t{};
      w.wr_id = in.u64();
      const uint8_t o = in.u8();
      w.opcode = o % 16 == 15 ? in.u32() : o % 8;
      const uint8_t f = in.u8();
      w.flags = f % 16 == 15 ? in.u32() : f % 16;
      const bool inl = (w.flags & KBV_SEND_INLINE) != 0;
      w.num_sge = count(in, sg_.size());
      sges(in, w.num_sge, inl);
      w.sg_list = in.u8() % 16 == 0 ? nullptr : sg_.data();
      w.imm = in.u32();
      w.remote_addr = in.u64();
      w.rkey = !lkeys_.empty() && in.u8() % 2 ? lkeys_[in.u8() % lkeys_.size()] : in.u32();
      w.compare_add = in.u64();
      w.swap = in.u64();
      w.ah = handle(in, kAh);
      w.remote_qpn = qpns_.empty() || in.u8() % 4 == 0 ? in.u32() : qpns_[in.u8() % qpns_.size()];
      w.remote_qkey = in.u32();
    }
    uint32_t bad = 0;
    const kbv_send_wr_t* list = in.u8() % 16 == 0 ? nullptr : send_wrs_.data();
    known(kbv_post_send(qp, list, n, out(in, &bad)), "post_send");
  }

  void post_recv(Reader& in, bool srq) {
    const uint64_t h = handle(in, srq ? kSrq : kQp);
    const uint32_t n = count(in, recv_wrs_.size());
    for (size_t i = 0; i < recv_wrs_.size() && i < n; ++i) {
      kbv_recv_wr_t& w = recv_wrs_[i];
      w = kbv_recv_wr_t{};
      w.wr_id = in.u64();
      w.num_sge = count(in, sg_.size());
      sges(in, w.num_sge, false);
      w.sg_list = in.u8() % 16 == 0 ? nullptr : sg_.data();
      w.reserved = in.u8() % 8 == 0 ? in.u32() : 0;
    }
    uint32_t bad = 0;
    const kbv_recv_wr_t* list = in.u8() % 16 == 0 ? nullptr : recv_wrs_.data();
    known(srq ? kbv_post_srq_recv(h, list, n, out(in, &bad))
              : kbv_post_recv(h, list, n, out(in, &bad)),
          "post_recv");
  }

  // Device discovery and open with hostile URIs (never another model: a
  // "sim:" name is ours — KBV_ERR_BUSY — or an invalid one).
  void devices(Reader& in, kbv_eq_t q, uint64_t ud) {
    const uint8_t b = in.u8();
    if (b % 4 == 0) {
      std::array<kbv_device_desc_t, 4> list{};
      uint32_t cnt = 0;
      const uint8_t m = in.u8();
      const uint32_t max = m % 4 == 0 ? in.u32() : m % 5;
      known(kbv_get_device_list(m % 4 == 0 ? nullptr : list.data(), max, out(in, &cnt)),
            "get_device_list");
      return;
    }
    if (b % 4 == 1) {
      // Close: never our device.
      kbv_device_t d = any_handle(in);
      if (d == dev_) d ^= 0x100000000ull;
      submitted(kbv_device_close(d, q, ud), q, ud, "device_close", true);
      return;
    }
    static const char* const kSchemes[] = {"sim:", "vfio:", "guid:0x", "", "sim", "vfio:0000:"};
    std::string uri = kSchemes[in.u8() % 6];
    const uint8_t len = in.u8() % 80;
    for (uint8_t i = 0; i < len; ++i) {
      char c = static_cast<char>(in.u8());
      if (c == 0) c = '/';
      uri.push_back(c);
    }
    if (uri.rfind("sim:", 0) == 0) {
      const uint8_t k = in.u8() % 3;
      if (k == 0)
        uri = "sim:" + name_;
      else if (k == 1)
        uri += "/";
      else
        uri.append(80, 'x');
    }
    kbv_device_open_attr_t a{};
    in.bytes(&a, sizeof a);
    a.flags &= ~KBV_OPEN_PROGRESS_THREAD;
    kbv_device_t d = 0;
    kbv_status_t st = kbv_device_open(in.u8() % 8 == 0 ? nullptr : uri.c_str(),
                                      in.u8() % 2 ? &a : nullptr, q, ud, out(in, &d));
    submitted(st, q, ud, "device_open");
    if (st == KBV_SUCCESS) {
      std::fprintf(stderr, "device_open(\"%s\") opened a device\n", uri.c_str());
      violated("a hostile URI opened a device");
    }
    if (st == KBV_PENDING && d != 0) opens_.push_back(d);  // its event says how it ended
  }

  // ---- events ----
  void on_event(kbv_eq_t e, const kbv_event_t& ev) {
    if (ev.type != KBV_EVENT_REQUEST && ev.type != KBV_EVENT_COMP_NOTIFY) return;
    known(ev.status, "event status");
    auto it = outstanding_.find(e);
    if (it == outstanding_.end()) return;
    if (it->second.erase(ev.user_data) == 0) {
      std::fprintf(stderr, "event type %u status %s user_data %llu\n", ev.type,
                   kbv_status_name(static_cast<kbv_status_t>(ev.status)),
                   static_cast<unsigned long long>(ev.user_data));
      violated("a request event no call asked for (or a second one)");
    }
  }
  void forget_eq(kbv_eq_t e) {
    outstanding_.erase(e);
    for (size_t i = 0; i < eqs_.size(); ++i)
      if (eqs_[i] == e) {
        eqs_.erase(eqs_.begin() + static_cast<long>(i));
        break;
      }
  }
  bool drain() {
    bool any = false;
    for (kbv_eq_t e : eqs_) {
      int r;
      while ((r = kbv_eq_poll(e, events_.data(), static_cast<uint32_t>(events_.size()))) > 0) {
        any = true;
        for (int i = 0; i < r; ++i) on_event(e, events_[i]);
      }
    }
    return any;
  }
  size_t in_flight() const {
    size_t n = 0;
    for (const auto& [e, s] : outstanding_) n += s.size();
    return n;
  }

  // ---- end of input ----
  void cleanup() {
    known(kbv_device_stop_progress_thread(dev_), "stop_progress");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    // Children first; a create still in flight may refuse its destroy
    // (INVALID_STATE) until its event: drain and go round again.
    static const Kind kOrder[] = {kQp, kAh, kSrq, kMr, kCq, kPd};
    for (;;) {
      drain();
      bool left = false;
      for (Kind k : kOrder) {
        std::vector<uint64_t> keep;
        for (uint64_t h : made_[k]) {
          kbv_status_t st = destroy(k, h);
          known(st, "destroy");
          if (st == KBV_ERR_INVALID_STATE || st == KBV_ERR_DEVICE_NOT_READY || st == KBV_ERR_BUSY) {
            keep.push_back(h);
            left = true;
          }
        }
        made_[k] = std::move(keep);
      }
      if (!left && in_flight() == 0) break;
      (void)kbv_device_progress(dev_);
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "%zu requests in flight, objects left: %d\n", in_flight(), left);
        violated("a request or a destroy never completed", static_cast<long long>(in_flight()));
      }
    }
    // A hostile open that went asynchronous must have failed.
    for (kbv_device_t d : opens_)
      if (kbv_device_close(d, KBV_EQ_NONE, 0) == KBV_SUCCESS)
        violated("a hostile URI opened a device (asynchronously)");
    opens_.clear();
    for (kbv_eq_t e : eqs_) known(kbv_eq_destroy(e), "eq_destroy");
    eqs_.clear();
    outstanding_.clear();
    lkeys_.clear();
    qpns_.clear();
    // The device as before: nothing in flight, the firmware's objects and
    // the IOMMU's mappings as at the start, and it still works.
    kbv_device_stats_t s{};
    for (;;) {
      if (kbv_device_get_stats(dev_, &s) != KBV_SUCCESS) violated("get_stats");
      if (s.cmds_in_flight == 0 && s.cmds_queued == 0) break;
      (void)kbv_device_progress(dev_);
      if (std::chrono::steady_clock::now() > deadline) violated("commands left in flight");
    }
    const FwCounts c = counts();
    if (!c.same_objects(baseline_)) {
      std::fprintf(
          stderr,
          "firmware objects now/before: pd %zu/%zu mkey %zu/%zu cq %zu/%zu srq %zu/%zu "
          "qp %zu/%zu umem %zu/%zu mcg %zu/%zu dma maps %zu/%zu (64 KiB: %zu/%zu) fw pages "
          "%zu/%zu\n",
          c.pds, baseline_.pds, c.mkeys, baseline_.mkeys, c.cqs, baseline_.cqs, c.srqs,
          baseline_.srqs, c.qps, baseline_.qps, c.umems, baseline_.umems, c.mcgs, baseline_.mcgs,
          c.dma_maps, baseline_.dma_maps, c.dma_maps_64k, baseline_.dma_maps_64k, c.fw_pages,
          baseline_.fw_pages);
      violated("a firmware object or DMA mapping leaked");
    }
    kbv_pd_t pd = 0;
    if (kbv_pd_alloc(dev_, KBV_EQ_NONE, 0, &pd) != KBV_SUCCESS ||
        kbv_pd_dealloc(pd, KBV_EQ_NONE, 0) != KBV_SUCCESS)
      violated("the device stopped working");
  }

  kbv_status_t destroy(Kind k, uint64_t h) {
    switch (k) {
      case kPd: return kbv_pd_dealloc(h, KBV_EQ_NONE, 0);
      case kMr: return kbv_mr_dereg(h, KBV_EQ_NONE, 0);
      case kCq: return kbv_cq_destroy(h, KBV_EQ_NONE, 0);
      case kSrq: return kbv_srq_destroy(h, KBV_EQ_NONE, 0);
      case kAh: return kbv_ah_destroy(h, KBV_EQ_NONE, 0);
      default: return kbv_qp_destroy(h, KBV_EQ_NONE, 0);
    }
  }

  // The model's object tables, read on its firmware thread.
  FwCounts counts() {
    kbv::sim::fw::Firmware& f = model_->firmware();
    std::promise<FwCounts> p;
    f.post([&] {
      auto& t = kbv::sim::fw::objects(f.context());
      p.set_value(FwCounts{t.pds.size(), t.mkeys.size(), t.cqs.size(), t.srqs.size(), t.qps.size(),
                           t.umems.size(), t.mcgs.size(), 0, f.context().pages().held(), 0});
    });
    FwCounts c = p.get_future().get();
    for (const kbv::sim::DmaMapping& m : model_->device().dma_map().mappings())
      ++(m.size == 64 * 1024 ? c.dma_maps_64k : c.dma_maps);
    return c;
  }

  std::string name_;
  std::unique_ptr<kbv::sim::Model> model_;
  kbv_device_t dev_ = 0;
  uint8_t* arena_ = nullptr;
  FwCounts baseline_{};
  std::array<std::vector<uint64_t>, kKinds> made_;
  std::vector<kbv_eq_t> eqs_;
  std::vector<kbv_device_t> opens_;
  std::map<kbv_eq_t, std::set<uint64_t>> outstanding_;
  std::vector<uint32_t> lkeys_, qpns_;
  uint64_t next_ud_ = 100;
  // Results of asynchronous calls are written until their event: these
  // outlive every input.
  kbv_qp_attr_t qp_attr_{};
  kbv_device_attr_t dev_attr_{};
  kbv_port_attr_t port_attr_{};
  kbv_port_attr_t port0_{};  // port 1 at open: the loop-back path of qp_modify
  uint16_t pkey_ = 0;
  std::array<uint16_t, 4096> pkeys_{};
  std::array<kbv_sge_t, 64> sg_{};
  std::array<kbv_send_wr_t, 8> send_wrs_{};
  std::array<kbv_recv_wr_t, 8> recv_wrs_{};
  std::array<kbv_wc_t, 64> wcs_{};
  std::array<kbv_event_t, 64> events_{};
};

Harness* harness = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The driver logs every refused call: dropped (KBV_FUZZ_LOG=1 keeps it).
  if (std::getenv("KBV_FUZZ_LOG") == nullptr)
    kbv_log_set_handler([](void*, kbv_log_level_t, const char*, const char*) {}, nullptr);
  harness = new Harness();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return harness->one(data, size);
}
