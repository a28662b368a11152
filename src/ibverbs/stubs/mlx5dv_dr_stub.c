// SPDX-License-Identifier: BSD-3-Clause
//
// kbv's stub libmlx5.so.1, part 2: the direct-rule steering calls of
// mlx5dv.h (mlx5dv_dr_*, mlx5dv_dump_dr_*; man page mlx5dv_dr_flow.3 and
// mlx5dv_dump.3 of rdma-core v44.0). kbv has no steering: the create calls
// return NULL with errno = EOPNOTSUPP, the others EOPNOTSUPP ("0 on success,
// or the value of errno on failure"), the void setters do nothing. The rest
// of the library, and why it exists, is in mlx5dv_stub.c.
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// The arguments are the prototypes' (mlx5dv.h); a stub uses none of them.
#pragma GCC diagnostic ignored "-Wunused-parameter"

/* ---- MLX5_1.10 ---- */

struct mlx5dv_dr_action* mlx5dv_dr_action_create_dest_ibv_qp(struct ibv_qp* ibqp) {
  errno = EOPNOTSUPP;
  return NULL;
}

struct mlx5dv_dr_action* mlx5dv_dr_action_create_dest_table(struct mlx5dv_dr_table* table) {
  errno = EOPNOTSUPP;
  return NULL;
}

struct mlx5dv_dr_action* mlx5dv_dr_action_create_dest_vport(struct mlx5dv_dr_domain* domain,
                                                            uint32_t vport) {
  errno = EOPNOTSUPP;
  return NULL;
}

struct mlx5dv_dr_action* mlx5dv_dr_action_create_drop(void) {
  errno = EOPNOTSUPP;
  return NULL;
}

struct mlx5dv_dr_action* mlx5dv_dr_action_create_flow_counter(struct mlx5dv_devx_obj* devx_obj,
                                                              uint32_t offset) {
  errno = EOPNOTSUPP;
  return NULL;
}

struct mlx5dv_dr_action* mlx5dv_dr_action_create_modify_header(struct mlx5dv_dr_domain* domain,
                                                               uint32_t flags, size_t actions_sz,
                                                               __be64* actions) {
  errno = EOPNOTSUPP;
  return NULL;
}

struct mlx5dv_dr_action* mlx5dv_dr_action_create_packet_reformat(
    struct mlx5dv_dr_domain* domain, uint32_t flags,
    enum mlx5_ib_uapi_flow_action_packet_reformat_type reformat_type, size_t data_sz, void* data) {
  errno = EOPNOTSUPP;
  return NULL;
}

struct mlx5dv_dr_action* mlx5dv_dr_action_create_tag(uint32_t tag_value) {
  errno = EOPNOTSUPP;
  return NULL;
}

int mlx5dv_dr_action_destroy(struct mlx5dv_dr_action* action) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

struct mlx5dv_dr_domain* mlx5dv_dr_domain_create(struct ibv_context* ctx,
                                                 enum mlx5dv_dr_domain_type type) {
  errno = EOPNOTSUPP;
  return NULL;
}

int mlx5dv_dr_domain_destroy(struct mlx5dv_dr_domain* domain) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

int mlx5dv_dr_domain_sync(struct mlx5dv_dr_domain* domain, uint32_t flags) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

struct mlx5dv_dr_matcher* mlx5dv_dr_matcher_create(struct mlx5dv_dr_table* table, uint16_t priority,
                                                   uint8_t match_criteria_enable,
                                                   struct mlx5dv_flow_match_parameters* mask) {
  errno = EOPNOTSUPP;
  return NULL;
}

int mlx5dv_dr_matcher_destroy(struct mlx5dv_dr_matcher* matcher) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

struct mlx5dv_dr_rule* mlx5dv_dr_rule_create(struct mlx5dv_dr_matcher* matcher,
                                             struct mlx5dv_flow_match_parameters* value,
                                             size_t num_actions,
                                             struct mlx5dv_dr_action** actions) {
  errno = EOPNOTSUPP;
  return NULL;
}

int mlx5dv_dr_rule_destroy(struct mlx5dv_dr_rule* rule) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

struct mlx5dv_dr_table* mlx5dv_dr_table_create(struct mlx5dv_dr_domain* domain, uint32_t level) {
  errno = EOPNOTSUPP;
  return NULL;
}

int mlx5dv_dr_table_destroy(struct mlx5dv_dr_table* table) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

/* ---- MLX5_1.12 ---- */

struct mlx5dv_dr_action* mlx5dv_dr_action_create_flow_meter(
    struct mlx5dv_dr_flow_meter_attr* attr) {
  errno = EOPNOTSUPP;
  return NULL;
}

int mlx5dv_dr_action_modify_flow_meter(struct mlx5dv_dr_action* action,
                                       struct mlx5dv_dr_flow_meter_attr* attr,
                                       __be64 modify_field_select) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

int mlx5dv_dump_dr_domain(FILE* fout, struct mlx5dv_dr_domain* domain) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

int mlx5dv_dump_dr_matcher(FILE* fout, struct mlx5dv_dr_matcher* matcher) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

int mlx5dv_dump_dr_rule(FILE* fout, struct mlx5dv_dr_rule* rule) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

int mlx5dv_dump_dr_table(FILE* fout, struct mlx5dv_dr_table* table) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

/* ---- MLX5_1.14 ---- */

struct mlx5dv_dr_action* mlx5dv_dr_action_create_default_miss(void) {
  errno = EOPNOTSUPP;
  return NULL;
}

void mlx5dv_dr_domain_set_reclaim_device_memory(struct mlx5dv_dr_domain* dmn, bool enable) {}

int mlx5dv_modify_qp_lag_port(struct ibv_qp* qp, uint8_t port_num) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

/* ---- MLX5_1.15 ---- */

struct mlx5dv_dr_action* mlx5dv_dr_action_create_dest_devx_tir(struct mlx5dv_devx_obj* devx_obj) {
  errno = EOPNOTSUPP;
  return NULL;
}

/* ---- MLX5_1.16 ---- */

struct mlx5dv_dr_action* mlx5dv_dr_action_create_dest_array(
    struct mlx5dv_dr_domain* domain, size_t num_dest, struct mlx5dv_dr_action_dest_attr** dests) {
  errno = EOPNOTSUPP;
  return NULL;
}

struct mlx5dv_dr_action* mlx5dv_dr_action_create_flow_sampler(
    struct mlx5dv_dr_flow_sampler_attr* attr) {
  errno = EOPNOTSUPP;
  return NULL;
}

/* ---- MLX5_1.17 ---- */

struct mlx5dv_dr_action* mlx5dv_dr_action_create_aso(struct mlx5dv_dr_domain* domain,
                                                     struct mlx5dv_devx_obj* devx_obj,
                                                     uint32_t offset, uint32_t flags,
                                                     uint8_t return_reg_c) {
  errno = EOPNOTSUPP;
  return NULL;
}

struct mlx5dv_dr_action* mlx5dv_dr_action_create_pop_vlan(void) {
  errno = EOPNOTSUPP;
  return NULL;
}

struct mlx5dv_dr_action* mlx5dv_dr_action_create_push_vlan(struct mlx5dv_dr_domain* domain,
                                                           __be32 vlan_hdr) {
  errno = EOPNOTSUPP;
  return NULL;
}

int mlx5dv_dr_action_modify_aso(struct mlx5dv_dr_action* action, uint32_t offset, uint32_t flags,
                                uint8_t return_reg_c) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

/* ---- MLX5_1.20 ---- */

void mlx5dv_dr_domain_allow_duplicate_rules(struct mlx5dv_dr_domain* domain, bool allow) {}

int mlx5dv_map_ah_to_qp(struct ibv_ah* ah, uint32_t qp_num) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

/* ---- MLX5_1.21 ---- */

struct mlx5dv_dr_action* mlx5dv_dr_action_create_dest_ib_port(struct mlx5dv_dr_domain* domain,
                                                              uint32_t ib_port) {
  errno = EOPNOTSUPP;
  return NULL;
}

int mlx5dv_dr_matcher_set_layout(struct mlx5dv_dr_matcher* matcher,
                                 struct mlx5dv_dr_matcher_layout* layout) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

/* ---- MLX5_1.22 ---- */

int mlx5dv_dr_aso_other_domain_link(struct mlx5dv_devx_obj* devx_obj,
                                    struct mlx5dv_dr_domain* peer_dmn, struct mlx5dv_dr_domain* dmn,
                                    uint32_t flags, uint8_t return_reg_c) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

int mlx5dv_dr_aso_other_domain_unlink(struct mlx5dv_devx_obj* devx_obj,
                                      struct mlx5dv_dr_domain* dmn) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

/* ---- MLX5_1.24 ---- */

struct mlx5dv_dr_action* mlx5dv_dr_action_create_dest_root_table(struct mlx5dv_dr_table* table,
                                                                 uint16_t priority) {
  errno = EOPNOTSUPP;
  return NULL;
}
