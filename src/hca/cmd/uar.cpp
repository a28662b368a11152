// SPDX-License-Identifier: BSD-3-Clause
#include "hca/cmd/uar.hpp"

#include "hca/prm/uar.hpp"

namespace kbv::hca::cmd {

using namespace prm;  // NOLINT

Status alloc_uar(CmdQueue& q, Done<uint32_t> done) {
  auto in = make_in(Opcode::ALLOC_UAR, 0, alloc_uar_in::kBits / 8);
  return exec<uint32_t>(
      q, in, alloc_uar_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<uint32_t> {
        return static_cast<uint32_t>(CRef<alloc_uar_out>(out.data()).get(alloc_uar_out::uar));
      },
      std::move(done));
}

Status dealloc_uar(CmdQueue& q, uint32_t uar, DoneStatus done) {
  auto in = make_in(Opcode::DEALLOC_UAR, 0, dealloc_uar_in::kBits / 8);
  Ref<dealloc_uar_in>(in.data()).set(dealloc_uar_in::uar, uar);
  return exec_status(q, in, dealloc_uar_out::kBits / 8, std::move(done));
}

}  // namespace kbv::hca::cmd
