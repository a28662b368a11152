// SPDX-License-Identifier: BSD-3-Clause
//
// QUERY_PAGES 0x107 and MANAGE_PAGES 0x108 (hca/prm/boot.hpp, mlx5_ifc.h
// query_pages_in/out, manage_pages_in/out; docs/PRM.md "Bring-up order" 5 and 8,
// run-time page requests). Page bookkeeping is PageManager's (pages.hpp);
// these only encode and decode.
//
// Threading: as CmdQueue.
#pragma once

#include <cstdint>
#include <vector>

#include "hca/cmd/exec.hpp"

namespace kbv::hca::cmd {

struct PagesQuery {
  uint16_t function_id = 0;
  int32_t num_pages = 0;  // > 0: firmware wants this many; < 0: it has pages to return
};
Status query_pages(CmdQueue& q, prm::QueryPagesOpMod which, Done<PagesQuery> done,
                   SubmitOptions opts = {});

// MANAGE_PAGES op_mod ALLOCATION_SUCCESS: gives the 4 KiB-aligned page IOVAs.
Status manage_pages_give(CmdQueue& q, uint16_t function_id, const std::vector<uint64_t>& pas,
                         DoneStatus done, SubmitOptions opts = {});
// MANAGE_PAGES op_mod ALLOCATION_FAIL: tells firmware the driver cannot give
// `npages` (it stops waiting for them).
Status manage_pages_cannot_give(CmdQueue& q, uint16_t function_id, uint32_t npages, DoneStatus done,
                                SubmitOptions opts = {});
// MANAGE_PAGES op_mod HCA_RETURN_PAGES: asks up to `npages` back; the result
// is the list of IOVAs firmware returned (possibly fewer, possibly none).
Status manage_pages_take(CmdQueue& q, uint16_t function_id, uint32_t npages,
                         Done<std::vector<uint64_t>> done, SubmitOptions opts = {});

}  // namespace kbv::hca::cmd
