// SPDX-License-Identifier: BSD-3-Clause
//
// The function slots of a context kbv's libibverbs fills (async.hpp
// fill_verbs_ops). verbs_context slots left NULL make verbs.h's inline
// callers fail with EOPNOTSUPP themselves (verbs_get_ctx_op), which is
// rdma-core's answer for a verb a device lacks.
#include "ibverbs/async.hpp"

namespace kbv::ibverbs {

void fill_verbs_ops(Context& ctx) {
  fill_context_ops(ctx);  // data path (fast_post.cpp)
  fill_query_ops(ctx);
  fill_cq_ops(ctx);
  fill_qp_ops(ctx);
}

}  // namespace kbv::ibverbs
