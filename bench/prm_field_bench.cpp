// SPDX-License-Identifier: BSD-3-Clause
// Cost of the PRM field accessor used to build every command (cmd_hdr fields).
#include "hca/prm/cmd_hdr.hpp"

#include <benchmark/benchmark.h>

#include <array>

namespace {

using namespace kbv::prm;

void BM_SetGetHeader(benchmark::State& state) {
  std::array<std::byte, 16> buf{};
  uint32_t op = 0x400;
  for (auto _ : state) {
    Ref<mbox_in> in(buf.data());
    in.set(mbox_in::opcode, op);
    in.set(mbox_in::op_mod, op & 0xF);
    benchmark::DoNotOptimize(in.get(mbox_in::opcode));
    benchmark::ClobberMemory();
    ++op;
  }
}
BENCHMARK(BM_SetGetHeader);

}  // namespace

BENCHMARK_MAIN();
