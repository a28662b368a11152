// SPDX-License-Identifier: BSD-3-Clause
//
// Binding kbv's definitions to rdma-core's symbol versions (libibverbs.map).
//
// A symbol the map lists under one node is defined under its own name and
// the version script gives it that node. A symbol listed under two nodes
// (IBVERBS_1.0 and IBVERBS_1.1: the 1.0 ABI of 2006 kept as a compat
// symbol) is defined as kbv_<name> and bound with .symver to
// <name>@@IBVERBS_1.1 (the default a program links against), as rdma-core's
// LATEST_SYMVER_FUNC does; compat_1_0.cpp binds the old <name>@IBVERBS_1.0.
// The same is done for names verbs.h defines as macros or static inline
// functions (ibv_query_port, ibv_reg_mr, ibv_reg_mr_iova,
// ibv_query_device_ex), which a definition under the plain name would clash
// with.
//
// KBV_IBV_DEFAULT(name, node) also checks that kbv_<name> has exactly the
// type verbs.h declares for <name>.
#pragma once

#include <type_traits>

#define KBV_IBV_STR_(x) #x
#define KBV_IBV_STR(x) KBV_IBV_STR_(x)

// Binds kbv_<name> to <name>@@<node> (the default version).
#define KBV_IBV_DEFAULT(name, node)                                     \
  static_assert(std::is_same_v<decltype(&name), decltype(&kbv_##name)>, \
                "kbv_" #name " must have verbs.h's type");              \
  __asm__(".symver kbv_" #name ", " #name "@@" node)

// Binds impl to <name>@<node> (an old, non-default version).
#define KBV_IBV_COMPAT(impl, name, node) __asm__(".symver " #impl ", " #name "@" node)
