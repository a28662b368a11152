// SPDX-License-Identifier: BSD-3-Clause
//
// The driver's fast path (src/hca dp_sq / dp_rq / dp_cq) in isolation:
// WQE building + doorbell record + BlueFlame / doorbell write, receive
// posting, and CQE polling, with rings, doorbell records and a "BAR" in
// plain memory (no MMIO trap: the branch silicon takes). Each benchmark
// also reports `allocs`, heap allocations per iteration, counted by
// replacing the global operator new (alloc_counter.hpp): the fast path must make none
// (docs/DESIGN.md "The fast path").
//
// CQEs are written here the way the device writes them (rdma-core
// mlx5dv.h struct mlx5_cqe64: wqe_counter, sop_drop_qpn, op_own with the
// owner bit of the lap), so poll() does its real work.
#include <benchmark/benchmark.h>
#include <endian.h>
#include <infiniband/mlx5dv.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "alloc_counter.hpp"
#include "hca/dp_cq.hpp"
#include "hca/dp_rq.hpp"
#include "hca/dp_sq.hpp"
#include "hca/prm/qpc.hpp"

namespace {

using namespace kbv;
using namespace kbv::hca;

constexpr uint32_t kQpn = 0x123;
constexpr uint32_t kLogBlocks = 10;  // 1024 basic blocks
constexpr uint32_t kLogCqe = 12;     // 4096 CQEs

struct Memory {
  std::vector<std::byte> bar = std::vector<std::byte>(64 * 1024);
  alignas(64) std::byte sq[64 << kLogBlocks]{};
  alignas(64) std::byte rq[64 * 1024]{};
  alignas(64) std::byte cq[64 << kLogCqe]{};
  alignas(64) uint32_t qp_dbrec[2]{};
  alignas(64) uint32_t cq_dbrec[2]{};
  alignas(64) std::byte payload[4096]{};
  platform::Bar bar0{bar.data(), bar.size(), nullptr};
};

SendQueue make_sq(Memory& m, bool bf_copy) {
  SqConfig c;
  c.ring = m.sq;
  c.log_blocks = kLogBlocks;
  c.dbrec = m.qp_dbrec;
  c.bar = &m.bar0;
  c.bf_offset = 0x1000 + 0x800;
  c.bf_reg_size = 512;
  c.bf_copy = bf_copy;
  c.qpn = kQpn;
  c.st = prm::qpc_st::kRc;
  c.max_sge = 4;
  c.max_inline = 64;
  auto sq = SendQueue::create(c);
  if (!sq) std::abort();  // benchmark setup only
  return std::move(*sq);
}

// Writes a requester CQE for the WQE at wqe_counter into CQE slot pi.
void device_cqe(Memory& m, uint32_t pi, uint16_t wqe_counter) {
  auto* cqe = reinterpret_cast<mlx5_cqe64*>(m.cq + size_t{pi & ((1u << kLogCqe) - 1)} * 64);
  cqe->wqe_counter = htobe16(wqe_counter);
  cqe->sop_drop_qpn = htobe32(uint32_t{MLX5_OPCODE_SEND} << 24 | kQpn);
  cqe->byte_cnt = 0;
  const uint8_t owner = (pi >> kLogCqe) & 1;
  cqe->op_own = static_cast<uint8_t>(MLX5_CQE_REQ << 4 | owner);
}

// One signalled 64-byte SEND per iteration (BlueFlame copy: a single small
// post), completion polled back.
void BM_PostSendPollOne(benchmark::State& state) {
  auto* m = new Memory;
  SendQueue sq = make_sq(*m, true);
  for (uint32_t i = 0; i < (1u << kLogCqe); ++i)
    reinterpret_cast<mlx5_cqe64*>(m->cq + size_t{i} * 64)->op_own = 0xF0;
  auto cp = CqPoller::create({m->cq, 1u << kLogCqe, m->cq_dbrec, 7});
  if (!cp || !cp->attach(kQpn, &sq, nullptr, nullptr).is_ok()) std::abort();
  Sge sge{reinterpret_cast<uintptr_t>(m->payload), 64, 0x100};
  SendWr wr;
  wr.opcode = WrOpcode::kSend;
  wr.flags = send_flags::kSignaled;
  wr.sg = std::span(&sge, 1);
  WorkCompletion wc[4];
  uint32_t pi = 0;
  const uint64_t a0 = kbv::bench::allocations();
  for (auto _ : state) {
    const uint32_t pc = sq.pc();
    if (!sq.post(std::span(&wr, 1)).is_ok()) state.SkipWithError("post failed");
    device_cqe(*m, pi++, static_cast<uint16_t>(pc));
    benchmark::DoNotOptimize(cp->poll(wc));
  }
  state.counters["allocs"] = benchmark::Counter(static_cast<double>(kbv::bench::allocations() - a0),
                                                benchmark::Counter::kAvgIterations);
  delete m;
}
BENCHMARK(BM_PostSendPollOne);

// A batch of `n` SENDs per post (one doorbell), then n completions polled.
void BM_PostSendBatch(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  auto* m = new Memory;
  SendQueue sq = make_sq(*m, true);
  for (uint32_t i = 0; i < (1u << kLogCqe); ++i)
    reinterpret_cast<mlx5_cqe64*>(m->cq + size_t{i} * 64)->op_own = 0xF0;
  auto cp = CqPoller::create({m->cq, 1u << kLogCqe, m->cq_dbrec, 7});
  if (!cp || !cp->attach(kQpn, &sq, nullptr, nullptr).is_ok()) std::abort();
  Sge sge{reinterpret_cast<uintptr_t>(m->payload), 256, 0x100};
  std::vector<SendWr> wrs(n);
  for (auto& w : wrs) {
    w.opcode = WrOpcode::kSend;
    w.flags = send_flags::kSignaled;
    w.sg = std::span(&sge, 1);
  }
  std::vector<WorkCompletion> wc(n);
  uint32_t pi = 0;
  const uint64_t a0 = kbv::bench::allocations();
  for (auto _ : state) {
    const uint32_t pc0 = sq.pc();
    if (!sq.post(wrs).is_ok()) state.SkipWithError("post failed");
    for (uint32_t i = 0; i < n; ++i) device_cqe(*m, pi++, static_cast<uint16_t>(pc0 + i));
    size_t got = 0;
    while (got < n) got += cp->poll(std::span(wc).subspan(got));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * n);
  state.counters["allocs"] = benchmark::Counter(static_cast<double>(kbv::bench::allocations() - a0),
                                                benchmark::Counter::kAvgIterations);
  delete m;
}
BENCHMARK(BM_PostSendBatch)->Arg(8)->Arg(32);

// Receive posting: one 1-SGE receive per iteration, the device consuming it.
void BM_PostRecv(benchmark::State& state) {
  auto* m = new Memory;
  RqConfig c;
  c.ring = m->rq;
  c.log_wqes = 10;
  c.stride = 64;
  c.dbrec = m->qp_dbrec;
  c.max_sge = 4;
  auto rq = RecvQueue::create(c);
  if (!rq) std::abort();
  Sge sge{reinterpret_cast<uintptr_t>(m->payload), 4096, 0x100};
  RecvWr wr;
  wr.sg = std::span(&sge, 1);
  const uint64_t a0 = kbv::bench::allocations();
  for (auto _ : state) {
    if (!rq->post(std::span(&wr, 1)).is_ok()) state.SkipWithError("post failed");
    benchmark::DoNotOptimize(rq->complete());
  }
  state.counters["allocs"] = benchmark::Counter(static_cast<double>(kbv::bench::allocations() - a0),
                                                benchmark::Counter::kAvgIterations);
  delete m;
}
BENCHMARK(BM_PostRecv);

}  // namespace
BENCHMARK_MAIN();
