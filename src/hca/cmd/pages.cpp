// SPDX-License-Identifier: BSD-3-Clause
#include "hca/cmd/pages.hpp"

#include "common/log.hpp"
#include "hca/prm/boot.hpp"

namespace kbv::hca::cmd {

using namespace prm;  // NOLINT

Status query_pages(CmdQueue& q, QueryPagesOpMod which, Done<PagesQuery> done, SubmitOptions opts) {
  auto in = make_in(Opcode::QUERY_PAGES, static_cast<uint16_t>(which), query_pages_in::kBits / 8);
  return exec<PagesQuery>(
      q, in, query_pages_out::kBits / 8,
      [](std::span<const std::byte> out) -> Result<PagesQuery> {
        CRef<query_pages_out> o(out.data());
        PagesQuery p;
        p.function_id = static_cast<uint16_t>(o.get(query_pages_out::function_id));
        p.num_pages =
            static_cast<int32_t>(static_cast<uint32_t>(o.get(query_pages_out::num_pages)));
        return p;
      },
      std::move(done), opts);
}

Status manage_pages_give(CmdQueue& q, uint16_t function_id, const std::vector<uint64_t>& pas,
                         DoneStatus done, SubmitOptions opts) {
  if (pas.empty()) return Status{KBV_ERR_INVALID_ARGUMENT};
  const uint32_t n = static_cast<uint32_t>(pas.size());
  auto in =
      make_in(Opcode::MANAGE_PAGES, static_cast<uint16_t>(ManagePagesOpMod::ALLOCATION_SUCCESS),
              manage_pages_len(n));
  Ref<manage_pages_in> r(in.data());
  r.set(manage_pages_in::function_id, function_id);
  r.set(manage_pages_in::input_num_entries, n);
  for (uint32_t i = 0; i < n; ++i) {
    if (pas[i] % kAdapterPageSize != 0) return Status{KBV_ERR_INVALID_ARGUMENT};
    r.set(manage_pages_in::pas, i, pas[i]);
  }
  return exec_status(q, in, manage_pages_out::kBits / 8, std::move(done), opts);
}

Status manage_pages_cannot_give(CmdQueue& q, uint16_t function_id, uint32_t npages, DoneStatus done,
                                SubmitOptions opts) {
  auto in = make_in(Opcode::MANAGE_PAGES, static_cast<uint16_t>(ManagePagesOpMod::ALLOCATION_FAIL),
                    manage_pages_in::kBits / 8);
  Ref<manage_pages_in> r(in.data());
  r.set(manage_pages_in::function_id, function_id);
  r.set(manage_pages_in::input_num_entries, npages);
  return exec_status(q, in, manage_pages_out::kBits / 8, std::move(done), opts);
}

Status manage_pages_take(CmdQueue& q, uint16_t function_id, uint32_t npages,
                         Done<std::vector<uint64_t>> done, SubmitOptions opts) {
  if (npages == 0) return Status{KBV_ERR_INVALID_ARGUMENT};
  auto in = make_in(Opcode::MANAGE_PAGES, static_cast<uint16_t>(ManagePagesOpMod::HCA_RETURN_PAGES),
                    manage_pages_in::kBits / 8);
  Ref<manage_pages_in> r(in.data());
  r.set(manage_pages_in::function_id, function_id);
  r.set(manage_pages_in::input_num_entries, npages);
  return exec<std::vector<uint64_t>>(
      q, in, manage_pages_len(npages),
      [npages](std::span<const std::byte> out) -> Result<std::vector<uint64_t>> {
        CRef<manage_pages_out> o(out.data());
        const uint32_t n = static_cast<uint32_t>(o.get(manage_pages_out::output_num_entries));
        if (n > npages) {
          log::error("pages", "MANAGE_PAGES take: firmware returned {} entries for {} asked", n,
                     npages);
          return Status{KBV_ERR_INTERNAL};
        }
        std::vector<uint64_t> pas(n);
        for (uint32_t i = 0; i < n; ++i) pas[i] = o.get(manage_pages_out::pas, i);
        return pas;
      },
      std::move(done), opts);
}

}  // namespace kbv::hca::cmd
