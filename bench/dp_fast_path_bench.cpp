// SPDX-License-Identifier: BSD-3-Clause
//
// The data path against the PRM's store sequences, in one binary and run
// (issue 15). Three levels per operation, on rings, doorbell records and a
// "BAR" in plain memory (no model: the Bar has no MmioTrap, the branch
// silicon takes), so only software is measured:
//   bare  the sequence the PRM requires and nothing else, written here with
//         the same platform/mmio.hpp accessors and barriers the driver uses
//         (rdma-core providers/mlx5/qp.c _mlx5_post_send / post_send_db,
//         mlx5_post_recv; cq.c mlx5_get_next_cqe / update_cons_index):
//           post: the WQE's 16-byte segments, udma_to_device_barrier(), the
//                 doorbell record store, mmio_wc_start(), the 8-byte
//                 doorbell or the 64-byte BlueFlame copy, mmio_flush_writes();
//           recv: the data segment, udma_to_device_barrier(), the record;
//           poll: the owner-byte check, udma_from_device_barrier(), a
//                 64-byte load of the CQE, the consumer-index record store.
//   hca   hca::SendQueue::post / RecvQueue::post / CqPoller::poll.
//   api   kbv_post_send / kbv_post_recv / kbv_poll_cq on verbs objects built
//         here over the same kind of rings (registered in the handle
//         tables like any object: the handle lookup, state checks and
//         translation are all real).
// Operations: 1-WR post of an RDMA WRITE (BlueFlame copy, and 8-byte
// doorbell), a SEND, a 32-byte inline SEND (BlueFlame); a 32-WR batch of
// WRITEs (one 8-byte doorbell; time per WQE); a 1-SGE receive; polls of 1
// and of 16 CQEs (time per CQE).
//
// Every level reads each request from memory (the pointer is laundered
// through DoNotOptimize every iteration) and records its wr_id, the store
// any verbs provider makes per WQE (rdma-core: sq.wrid, rq.wrid), so the
// bare level does the driver's stores and barriers and nothing else.
//
// Ring room: posts hand the ring back inside the timed loop once a lap
// (one SendQueue::complete of the last WQE per 1024 basic blocks; for
// receives 1024 RecvQueue::complete calls, about 5 instructions per post,
// charged to the hca and api levels only); the bare level has no
// accounting to do. Polls pause the timer every 1024 CQEs, at every level alike, to flip
// the CQEs' owner bits for the next lap (a 1024-CQE rewrite would dwarf a
// poll); the pause's two clock reads add the same small amount to each
// level's time per CQE.
//
// Time: this thread's CPU time (Google Benchmark's default), 7 repetitions
// in random interleaving, medians. After the table it prints, from the
// medians:
//   ratio <op>_api_vs_bare <kbv public API time / bare time>
//   ratio <op>_hca_vs_bare <hca level time / bare time>
//   ns <op>_<level>_vs_bare <its ns per operation> <bare ns per operation>
//   allocs <benchmark> <heap allocations per operation>
// (allocations counted by replacing the global operator new:
// alloc_counter.hpp). --iterations=N fixes every repetition's iteration
// count (for callgrind instruction counts, bench/README.md).
#include <benchmark/benchmark.h>
#include <endian.h>
#include <infiniband/mlx5dv.h>

#include <kbv/kbv.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "alloc_counter.hpp"
#include "hca/dp/cq.hpp"
#include "hca/dp/rq.hpp"
#include "hca/dp/sq.hpp"
#include "hca/prm/qpc.hpp"
#include "platform/mmio.hpp"
#include "verbs/objects.hpp"

namespace {

using namespace kbv;
namespace pf = kbv::platform;
namespace v = kbv::verbs;

constexpr uint32_t kQpn = 0x123;
constexpr uint32_t kLog = 10;  // 1024 basic blocks / receives / CQEs
constexpr uint32_t kN = 1u << kLog;
constexpr uint64_t kBfOffset = 0x1000 + 0x800;  // UAR 1, BlueFlame register 0
constexpr uint32_t kBfReg = 512;                // both halves
constexpr uint32_t kInlineBytes = 32;
constexpr uint32_t kBatch = 32;
constexpr uint32_t kPollMany = 16;

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "dp_fast_path_bench: %s\n", what);
  std::exit(1);
}

template <class T>
T* alloc_zero(size_t bytes) {
  void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (!p) die("out of memory");
  std::memset(p, 0, bytes);
  return static_cast<T*>(p);
}

// One level's memory: a send ring, a receive ring, a CQ ring, the QP and
// CQ doorbell records, a 64 KiB "BAR0" and a payload buffer.
struct Mem {
  std::byte* sq = alloc_zero<std::byte>(64 * kN);
  std::byte* rq = alloc_zero<std::byte>(16 * kN);
  std::byte* cq = alloc_zero<std::byte>(64 * kN);
  uint32_t* qp_dbrec = alloc_zero<uint32_t>(64);
  uint32_t* cq_dbrec = alloc_zero<uint32_t>(64);
  unsigned char* bar = alloc_zero<unsigned char>(64 * 1024);
  std::byte* payload = alloc_zero<std::byte>(4096);
  pf::Bar bar0{bar, 64 * 1024, nullptr};
  uint32_t polled = 0;  // CQEs consumed (lap = polled / kN)

  Mem() {
    // Requester CQEs for lap 0 (owner 0): a SEND of kQpn, wqe_counter i.
    for (uint32_t i = 0; i < kN; ++i) {
      auto* c = reinterpret_cast<mlx5_cqe64*>(cq + size_t{i} * 64);
      c->wqe_counter = htobe16(static_cast<uint16_t>(i));
      c->sop_drop_qpn = htobe32(uint32_t{MLX5_OPCODE_SEND} << 24 | kQpn);
      c->op_own = MLX5_CQE_REQ << 4;
    }
  }
  void lap(benchmark::State& st) {
    st.PauseTiming();
    for (uint32_t i = 0; i < kN; ++i)
      reinterpret_cast<mlx5_cqe64*>(cq + size_t{i} * 64)->op_own ^= MLX5_CQE_OWNER_MASK;
    st.ResumeTiming();
  }
};

hca::SqConfig sq_config(Mem& m, bool bf_copy) {
  hca::SqConfig c;
  c.ring = m.sq;
  c.log_blocks = kLog;
  c.dbrec = m.qp_dbrec;
  c.bar = &m.bar0;
  c.bf_offset = kBfOffset;
  c.bf_reg_size = kBfReg;
  c.bf_copy = bf_copy;
  c.qpn = kQpn;
  c.st = prm::qpc_st::kRc;
  c.max_sge = 1;
  c.max_inline = 64;
  return c;
}

hca::RqConfig rq_config(Mem& m) {
  hca::RqConfig c;
  c.ring = m.rq;
  c.log_wqes = kLog;
  c.stride = 16;
  c.dbrec = m.qp_dbrec;
  c.max_sge = 1;
  return c;
}

// ---- the three levels ----------------------------------------------------------

// The bare PRM sequences. Each post reads its request from the caller's
// kbv_send_wr_t / kbv_recv_wr_t in memory (the benchmark launders the
// pointer every iteration, so nothing is hoisted out of the loop) and
// remembers its wr_id, as any verbs provider must to report the completion
// (rdma-core mlx5 qp.c: qp->sq.wrid[idx] / wqe_head[idx], qp->rq.wrid[ind]);
// the stores are the ones the driver makes.
struct Bare {
  explicit Bare(bool) {}
  struct Slot {
    uint64_t wr_id;
    uint32_t next_pc;
  };
  Mem m;
  uint32_t pc = 0, rq_head = 0, ci = 0, bf_cur = 0;
  Slot sq_slots[kN] = {};
  uint64_t rq_wr_ids[kN] = {};

  std::byte* wqe(uint32_t bb) { return m.sq + (size_t{bb & (kN - 1)} << 6); }
  void ctrl(std::byte* w, uint8_t opcode, uint32_t ds, const kbv_send_wr_t& wr) {
    mlx5_wqe_ctrl_seg c{};
    c.opmod_idx_opcode = htobe32((pc & 0xFFFF) << 8 | opcode);
    c.qpn_ds = htobe32(kQpn << 8 | ds);
    c.fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE;
    std::memcpy(w, &c, 16);
    sq_slots[pc & (kN - 1)] = Slot{wr.wr_id, pc + 1};
    ++pc;
  }
  void data(std::byte* at, const kbv_sge_t& s) {
    mlx5_wqe_data_seg d;
    d.byte_count = htobe32(s.length);
    d.lkey = htobe32(s.lkey);
    d.addr = htobe64(s.addr);
    std::memcpy(at, &d, 16);
  }
  void write(const kbv_send_wr_t& wr) {
    std::byte* w = wqe(pc);
    mlx5_wqe_raddr_seg r{};
    r.raddr = htobe64(wr.remote_addr);
    r.rkey = htobe32(wr.rkey);
    std::memcpy(w + 16, &r, 16);
    data(w + 32, wr.sg_list[0]);
    ctrl(w, MLX5_OPCODE_RDMA_WRITE, 3, wr);
  }
  void send(const kbv_send_wr_t& wr) {
    std::byte* w = wqe(pc);
    data(w + 16, wr.sg_list[0]);
    ctrl(w, MLX5_OPCODE_SEND, 2, wr);
  }
  void send_inline(const kbv_send_wr_t& wr) {
    std::byte* w = wqe(pc);
    const uint32_t hdr = htobe32(kInlineBytes | MLX5_INLINE_SEG);
    std::memcpy(w + 16, &hdr, 4);
    std::memcpy(w + 20, reinterpret_cast<const void*>(wr.sg_list[0].addr), kInlineBytes);
    std::memset(w + 20 + kInlineBytes, 0, 64 - 20 - kInlineBytes);
    ctrl(w, MLX5_OPCODE_SEND, 4, wr);
  }
  // rdma-core post_send_db: barrier, record, WC start, BlueFlame copy of
  // the one WQE or the 8-byte doorbell, flush, next half.
  void doorbell(uint32_t last, bool bf) {
    pf::udma_to_device_barrier();
    m.qp_dbrec[1] = htobe32(pc & 0xFFFF);
    pf::mmio_wc_start();
    if (bf) {
      pf::mmio_bf_copy64(m.bar + kBfOffset + bf_cur, wqe(last));
    } else {
      uint64_t w;
      std::memcpy(&w, wqe(last), 8);
      pf::mmio_write64_raw(m.bar + kBfOffset + bf_cur, w);
    }
    pf::mmio_flush_writes();
    bf_cur ^= kBfReg / 2;
  }
  void recv(const kbv_recv_wr_t& wr) {
    data(m.rq + size_t{rq_head & (kN - 1)} * 16, wr.sg_list[0]);
    rq_wr_ids[rq_head & (kN - 1)] = wr.wr_id;
    ++rq_head;
    pf::udma_to_device_barrier();
    m.qp_dbrec[0] = htobe32(rq_head & 0xFFFF);
  }
  size_t poll(uint32_t k) {
    uint32_t got = 0;
    for (; got < k; ++got) {
      const std::byte* p = m.cq + size_t{ci & (kN - 1)} * 64;
      const auto op_own = static_cast<uint8_t>(
          __atomic_load_n(reinterpret_cast<const volatile uint8_t*>(p + 63), __ATOMIC_RELAXED));
      if ((op_own >> 4) == MLX5_CQE_INVALID || (op_own & MLX5_CQE_OWNER_MASK) != ((ci & kN) != 0))
        break;
      ++ci;
      pf::udma_from_device_barrier();
      mlx5_cqe64 cqe;
      std::memcpy(&cqe, p, 64);
      benchmark::DoNotOptimize(cqe);
    }
    if (got) {
      pf::compiler_barrier();
      m.cq_dbrec[0] = htobe32(ci & 0xFFFFFF);
    }
    return got;
  }
};

// hca::SendQueue / RecvQueue / CqPoller.
struct Hca {
  Mem m;
  hca::SendQueue sq;
  hca::RecvQueue rq;
  hca::CqPoller cp;

  static hca::SendQueue make_sq(Mem& m, bool bf) {
    auto r = hca::SendQueue::create(sq_config(m, bf));
    if (!r) die("SendQueue::create");
    return std::move(*r);
  }
  static hca::RecvQueue make_rq(Mem& m) {
    auto r = hca::RecvQueue::create(rq_config(m));
    if (!r) die("RecvQueue::create");
    return std::move(*r);
  }
  static hca::CqPoller make_cp(Mem& m) {
    auto r = hca::CqPoller::create({m.cq, kN, m.cq_dbrec, 7});
    if (!r) die("CqPoller::create");
    return std::move(*r);
  }
  explicit Hca(bool bf) : sq(make_sq(m, bf)), rq(make_rq(m)), cp(make_cp(m)) {
    if (!cp.attach(kQpn, &sq, &rq, nullptr).is_ok()) die("attach");
  }
};

// A verbs QP and CQ (the objects behind kbv_qp_t / kbv_cq_t) over
// in-memory rings, registered like any object; never closed.
struct Api {
  Mem m;
  std::shared_ptr<v::QpImpl> qp;
  std::shared_ptr<v::CqImpl> cq;
  kbv_qp_t qh = 0;
  kbv_cq_t ch = 0;

  explicit Api(bool bf) {
    auto dev = std::make_shared<v::DeviceImpl>();
    dev->set_state(v::State::kReady);
    qp = std::make_shared<v::QpImpl>();
    qp->dev = dev;
    qp->type = KBV_QPT_RC;
    // As QpImpl::build_queues and CqImpl::rebuild_poller do (with their
    // fast-path gate bits).
    qp->sq.emplace(Hca::make_sq(m, bf));
    qp->rq.emplace(Hca::make_rq(m));
    qp->gate_clear(v::gate::kNoSq | v::gate::kNoRq);
    cq = std::make_shared<v::CqImpl>();
    cq->dev = dev;
    cq->poller.emplace(Hca::make_cp(m));
    cq->gate_clear(v::gate::kNoPoller);
    if (!cq->poller->attach(kQpn, &*qp->sq, &*qp->rq, nullptr).is_ok()) die("attach");
    if (!v::register_object(qp) || !v::register_object(cq)) die("register");
    qp->set_qp_state(KBV_QPS_RTS);
    qp->set_state(v::State::kReady);
    cq->set_state(v::State::kReady);
    // The objects are as a created QP in RTS and CQ are: the public calls'
    // straight lines are open (else this would time their general paths).
    if (!qp->gate_open(v::Kind::kQp, v::gate::kSend | v::gate::kRecv) ||
        !cq->gate_open(v::Kind::kCq, v::gate::kPoll))
      die("fast-path gate closed");
    qh = qp->handle();
    ch = cq->handle();
    // Kept for the process's life (the benchmark never closes them).
    new std::shared_ptr<v::QpImpl>(qp);
    new std::shared_ptr<v::CqImpl>(cq);
  }
};

// Four instances of each level per process, built on first use (outside
// timing): posts with BlueFlame copies, posts with 8-byte doorbells,
// receives + polls of one, polls of many (polls move the send ring's tail;
// each poll benchmark keeps its ring's laps whole).
enum Use { kPostBf, kPostDb, kPoll1, kPollN };
template <class T>
T& level(Use u) {
  static T* const inst[4] = {new T(true), new T(false), new T(true), new T(true)};
  return *inst[u];
}

// ---- work requests ---------------------------------------------------------------

enum class Op { kWrite, kSend, kSendInline };

struct Wrs {
  hca::Sge sge{};
  hca::SendWr hwr[kBatch];
  kbv_sge_t ksge{};
  kbv_send_wr_t kwr[kBatch]{};
  uint8_t inline_bytes[kInlineBytes]{};
  hca::Sge inl{};
  kbv_sge_t kinl{};

  Wrs(Mem& m, Op op) {
    sge = {reinterpret_cast<uintptr_t>(m.payload), 64, 0x100};
    ksge = {sge.addr, sge.length, sge.lkey};
    inl = {reinterpret_cast<uintptr_t>(inline_bytes), kInlineBytes, 0};
    kinl = {inl.addr, inl.length, 0};
    for (uint32_t i = 0; i < kBatch; ++i) {
      hca::SendWr& h = hwr[i];
      kbv_send_wr_t& k = kwr[i];
      h.wr_id = k.wr_id = i;
      h.flags = k.flags = hca::send_flags::kSignaled;
      h.sg = std::span<const hca::Sge>(&sge, 1);
      k.sg_list = &ksge;
      k.num_sge = 1;
      switch (op) {
        case Op::kWrite:
          h.opcode = hca::WrOpcode::kRdmaWrite;
          k.opcode = KBV_WR_RDMA_WRITE;
          h.remote_addr = k.remote_addr = 0x10000;
          h.rkey = k.rkey = 0x200;
          break;
        case Op::kSend:
          h.opcode = hca::WrOpcode::kSend;
          k.opcode = KBV_WR_SEND;
          break;
        case Op::kSendInline:
          h.opcode = hca::WrOpcode::kSend;
          k.opcode = KBV_WR_SEND;
          h.flags = k.flags = hca::send_flags::kSignaled | hca::send_flags::kInline;
          h.sg = std::span<const hca::Sge>(&inl, 1);
          k.sg_list = &kinl;
          break;
      }
    }
  }
};

// ---- benchmarks --------------------------------------------------------------------

void count_allocs(benchmark::State& st, uint64_t a0, uint64_t ops_per_iter) {
  st.counters["allocs"] = benchmark::Counter(
      static_cast<double>(bench::allocations() - a0) / static_cast<double>(ops_per_iter),
      benchmark::Counter::kAvgIterations);
}

// Send ring room for `bbs` more basic blocks (hca / api): completes every
// WQE posted, inside the timed loop (one call per ring lap, a few
// instructions, no pause: pausing the CPU-time timer costs two clock
// system calls, about 1 ns per post at 1024 posts a lap, which the bare
// level, with no ring accounting, would not pay).
[[gnu::always_inline]] inline void sq_room(hca::SendQueue& sq, uint32_t bbs) {
  if (sq.free_blocks() < bbs) [[unlikely]]
    (void)sq.complete(static_cast<uint16_t>(sq.pc() - 1));
}

// The request pointer, opaque again each iteration (and memory clobbered):
// every level reads the request from memory, as it would an application's.
template <class T>
const T* launder(const T* p) {
  benchmark::DoNotOptimize(p);
  return p;
}

void BM_Post(benchmark::State& st, int lvl, Op op, bool bf, uint32_t n) {
  const uint64_t a0 = bench::allocations();
  if (lvl == 0) {
    Bare& b = level<Bare>(bf ? kPostBf : kPostDb);
    Wrs w(b.m, op);
    for (auto _ : st) {
      const kbv_send_wr_t* wr = launder(w.kwr);
      for (uint32_t i = 0; i < n; ++i) {
        if (op == Op::kWrite)
          b.write(wr[i]);
        else if (op == Op::kSend)
          b.send(wr[i]);
        else
          b.send_inline(wr[i]);
      }
      b.doorbell(b.pc - 1, bf && n == 1);
    }
  } else if (lvl == 1) {
    Hca& h = level<Hca>(bf ? kPostBf : kPostDb);
    Wrs w(h.m, op);
    for (auto _ : st) {
      sq_room(h.sq, n);
      const hca::SendWr* wr = launder(w.hwr);
      if (h.sq.post(wr, n, nullptr) != KBV_SUCCESS) [[unlikely]]
        die("post");
    }
  } else {
    Api& a = level<Api>(bf ? kPostBf : kPostDb);
    Wrs w(a.m, op);
    for (auto _ : st) {
      sq_room(*a.qp->sq, n);
      if (kbv_post_send(a.qh, launder(w.kwr), n, nullptr) != KBV_SUCCESS) [[unlikely]]
        die("kbv_post_send");
    }
  }
  st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * n);
  count_allocs(st, a0, n);
}

// Receive ring room (hca / api): the ring handed back once a lap, inside
// the timed loop (RecvQueue::complete inlines to a counter update).
[[gnu::always_inline]] inline void rq_room(hca::RecvQueue& rq) {
  if (rq.outstanding() < rq.wqes()) [[likely]]
    return;
  while (rq.outstanding()) (void)rq.complete();
}

void BM_Recv(benchmark::State& st, int lvl) {
  const uint64_t a0 = bench::allocations();
  Mem& m = lvl == 0   ? level<Bare>(kPoll1).m
           : lvl == 1 ? level<Hca>(kPoll1).m
                      : level<Api>(kPoll1).m;
  const kbv_sge_t s{reinterpret_cast<uintptr_t>(m.payload), 4096, 0x100};
  kbv_recv_wr_t wr{};
  wr.wr_id = 7;
  wr.sg_list = &s;
  wr.num_sge = 1;
  if (lvl == 0) {
    Bare& b = level<Bare>(kPoll1);
    for (auto _ : st) b.recv(*launder(&wr));
  } else if (lvl == 1) {
    Hca& h = level<Hca>(kPoll1);
    hca::RecvWr hwr;
    hwr.wr_id = 7;
    hwr.sg = std::span<const hca::Sge>(reinterpret_cast<const hca::Sge*>(&s), 1);
    for (auto _ : st) {
      rq_room(h.rq);
      if (!h.rq.post(std::span<const hca::RecvWr>(launder(&hwr), 1)).is_ok()) [[unlikely]]
        die("recv post");
    }
  } else {
    Api& a = level<Api>(kPoll1);
    for (auto _ : st) {
      rq_room(*a.qp->rq);
      if (kbv_post_recv(a.qh, launder(&wr), 1, nullptr) != KBV_SUCCESS) [[unlikely]]
        die("kbv_post_recv");
    }
  }
  st.SetItemsProcessed(static_cast<int64_t>(st.iterations()));
  count_allocs(st, a0, 1);
}

template <class F>
void poll_loop(benchmark::State& st, Mem& m, uint32_t k, F&& poll) {
  for (auto _ : st) {
    if ((m.polled & (kN - 1)) == 0 && m.polled != 0) m.lap(st);
    const size_t got = poll();
    if (got != k) [[unlikely]] {
      std::fprintf(stderr, "poll of %u gave %zd after %u\n", k, static_cast<ssize_t>(got),
                   m.polled);
      die("poll came short");
    }
    m.polled += k;
  }
}

void BM_Poll(benchmark::State& st, int lvl, uint32_t k) {
  const uint64_t a0 = bench::allocations();
  if (lvl == 0) {
    Bare& b = level<Bare>(k == 1 ? kPoll1 : kPollN);
    poll_loop(st, b.m, k, [&] { return b.poll(k); });
  } else if (lvl == 1) {
    Hca& h = level<Hca>(k == 1 ? kPoll1 : kPollN);
    hca::WorkCompletion wc[kPollMany];
    poll_loop(st, h.m, k, [&] {
      const size_t got = h.cp.poll(wc, k);
      benchmark::DoNotOptimize(wc);
      return got;
    });
  } else {
    Api& a = level<Api>(k == 1 ? kPoll1 : kPollN);
    kbv_wc_t wc[kPollMany];
    poll_loop(st, a.m, k, [&] {
      const int got = kbv_poll_cq(a.ch, wc, k);
      benchmark::DoNotOptimize(wc);
      return static_cast<size_t>(got);
    });
  }
  st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * k);
  count_allocs(st, a0, k);
}

const char* const kLevel[] = {"bare", "hca", "api"};

// name -> per-operation times (ns, CPU), medians.
struct Collect : benchmark::ConsoleReporter {
  std::map<std::string, double> median;  // "<op>/<level>" -> ns per operation
  std::map<std::string, double> allocs;  // mean over the repetitions

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      std::string name = r.run_name.function_name;
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median") {
        auto it = r.counters.find("ops");
        const double per = it == r.counters.end() ? 1.0 : it->second.value;
        median[name] = r.GetAdjustedCPUTime() / per;
      }
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "mean") {
        auto it = r.counters.find("allocs");
        if (it != r.counters.end()) allocs[name] = it->second.value;
      }
    }
  }
};

// --iterations=N (ours, not Google Benchmark's): every repetition runs
// exactly N iterations, for instruction counts that do not depend on the
// machine's load (valgrind --tool=callgrind at two values of N: the
// difference over 7 * their difference is the instructions per iteration).
int64_t g_fixed_iterations = 0;

void register_all() {
  struct PostCase {
    const char* name;
    Op op;
    bool bf;
    uint32_t n;
  };
  static const PostCase posts[] = {
      {"post_write_bf", Op::kWrite, true, 1},
      {"post_write_db", Op::kWrite, false, 1},
      {"post_send_bf", Op::kSend, true, 1},
      {"post_send_inline_bf", Op::kSendInline, true, 1},
      {"post_write_batch32", Op::kWrite, false, kBatch},
  };
  // The "ops" counter (operations per iteration) turns the median into a
  // time per operation (Collect).
  auto common = [](benchmark::internal::Benchmark* b) {
    b->Repetitions(7)->ReportAggregatesOnly(true);
    if (g_fixed_iterations > 0)
      b->Iterations(g_fixed_iterations);
    else
      b->MinTime(0.05);
  };
  for (const PostCase& p : posts) {
    for (int l = 0; l < 3; ++l) {
      const std::string name = std::string(p.name) + "/" + kLevel[l];
      auto* b = benchmark::RegisterBenchmark(name.c_str(), [p, l](benchmark::State& st) {
        BM_Post(st, l, p.op, p.bf, p.n);
        st.counters["ops"] = p.n;
      });
      common(b);
    }
  }
  for (int l = 0; l < 3; ++l) {
    const std::string name = std::string("post_recv/") + kLevel[l];
    common(benchmark::RegisterBenchmark(name.c_str(), [l](benchmark::State& st) {
      BM_Recv(st, l);
      st.counters["ops"] = 1;
    }));
  }
  for (uint32_t k : {1u, kPollMany}) {
    for (int l = 0; l < 3; ++l) {
      const std::string name = "poll_" + std::to_string(k) + "/" + kLevel[l];
      common(benchmark::RegisterBenchmark(name.c_str(), [k, l](benchmark::State& st) {
        BM_Poll(st, l, k);
        st.counters["ops"] = k;
      }));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Default: random interleaving of the repetitions (a loaded machine's
  // drift spreads over every level alike); flags given on the command line
  // come later and win.
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--iterations=", 13) == 0)
      g_fixed_iterations = std::strtoll(argv[i] + 13, nullptr, 10);
    else
      args.push_back(argv[i]);
  }
  static char interleave[] = "--benchmark_enable_random_interleaving=true";
  args.insert(args.begin() + 1, interleave);
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  register_all();
  // Every level's instances exist before anything is timed or counted.
  for (Use u : {kPostBf, kPostDb, kPoll1, kPollN}) {
    (void)level<Bare>(u);
    (void)level<Hca>(u);
    (void)level<Api>(u);
  }
  Collect rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  // The console reporter may leave a colour reset without a newline: the
  // ratio lines start on lines of their own.
  std::fflush(stdout);
  std::printf("\n");
  for (const auto& [name, t] : rep.median) {
    const auto slash = name.find('/');
    if (slash == std::string::npos || name.substr(slash + 1) == "bare") continue;
    const std::string op = name.substr(0, slash);
    auto bare = rep.median.find(op + "/bare");
    if (bare == rep.median.end() || bare->second <= 0) continue;
    const std::string lvl = name.substr(slash + 1);
    std::printf("ratio %s_%s_vs_bare %.2f\n", op.c_str(), lvl.c_str(), t / bare->second);
    std::printf("ns %s_%s_vs_bare %.2f %.2f\n", op.c_str(), lvl.c_str(), t, bare->second);
  }
  for (const auto& [name, a] : rep.allocs) std::printf("allocs %s %.3f\n", name.c_str(), a);
  benchmark::Shutdown();
  return 0;
}
