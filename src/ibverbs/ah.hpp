// SPDX-License-Identifier: BSD-3-Clause
//
// Address vectors of kbv's libibverbs (RoCE v2): ibv_ah_attr <-> kbv_ah_attr,
// shared by ibv_create_ah and ibv_modify_qp's IBV_QP_AV.
#pragma once

#include <infiniband/verbs.h>

#include <kbv/kbv.h>

namespace kbv::ibverbs {

// ibv_ah_attr -> kbv_ah_attr for ctx's device. RoCE needs the GRH
// (is_global; the port sets IBV_QPF_GRH_REQUIRED): without it EINVAL. The
// next-hop MAC is resolved from the destination GID (ah.cpp). 0 or an errno.
int to_kbv_ah(ibv_context* ctx, const ibv_ah_attr& in, kbv_ah_attr_t* out);
// kbv_ah_attr -> ibv_ah_attr (ibv_query_qp).
void from_kbv_ah(const kbv_ah_attr_t& in, ibv_ah_attr* out);

}  // namespace kbv::ibverbs
