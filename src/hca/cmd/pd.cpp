// SPDX-License-Identifier: BSD-3-Clause
#include "hca/cmd/pd.hpp"

#include "hca/prm/pd.hpp"

namespace kbv::hca::cmd {

using namespace prm;  // NOLINT

Status alloc_pd(CmdQueue& q, Done<uint32_t> done) {
  auto in = make_in(Opcode::ALLOC_PD, 0, alloc_pd_in::kBits / 8);
  return exec<uint32_t>(
      q, in, alloc_pd_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<uint32_t> {
        return static_cast<uint32_t>(CRef<alloc_pd_out>(out.data()).get(alloc_pd_out::pd));
      },
      std::move(done));
}

Status dealloc_pd(CmdQueue& q, uint32_t pd, DoneStatus done) {
  if (!fits(dealloc_pd_in::pd, pd)) return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::DEALLOC_PD, 0, dealloc_pd_in::kBits / 8);
  Ref<dealloc_pd_in>(in.data()).set(dealloc_pd_in::pd, pd);
  return exec_status(q, in, dealloc_pd_out::kBits / 8, std::move(done));
}

Status alloc_transport_domain(CmdQueue& q, Done<uint32_t> done) {
  auto in = make_in(Opcode::ALLOC_TRANSPORT_DOMAIN, 0, alloc_transport_domain_in::kBits / 8);
  return exec<uint32_t>(
      q, in, alloc_transport_domain_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<uint32_t> {
        return static_cast<uint32_t>(CRef<alloc_transport_domain_out>(out.data())
                                         .get(alloc_transport_domain_out::transport_domain));
      },
      std::move(done));
}

Status dealloc_transport_domain(CmdQueue& q, uint32_t td, DoneStatus done) {
  if (!fits(dealloc_transport_domain_in::transport_domain, td))
    return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::DEALLOC_TRANSPORT_DOMAIN, 0, dealloc_transport_domain_in::kBits / 8);
  Ref<dealloc_transport_domain_in>(in.data()).set(dealloc_transport_domain_in::transport_domain,
                                                  td);
  return exec_status(q, in, dealloc_transport_domain_out::kBits / 8, std::move(done));
}

}  // namespace kbv::hca::cmd
