// SPDX-License-Identifier: BSD-3-Clause
//
// The model firmware's object commands (PRM "Resource management"; layouts
// src/hca/prm/{pd,mkey,cq,qpc,qp_cmd,srq,mcg,vport}.hpp from mlx5_ifc.h):
//
//   ALLOC_PD / DEALLOC_PD, ALLOC_ / DEALLOC_TRANSPORT_DOMAIN     pd_cmds.cpp
//   CREATE_ / QUERY_ / DESTROY_MKEY                                mkey_cmds.cpp
//   CREATE_ / DESTROY_ / QUERY_ / MODIFY_CQ                        cq_cmds.cpp
//   CREATE_ / DESTROY_ / QUERY_SRQ, ARM_RQ                         srq_cmds.cpp
//   CREATE_ / DESTROY_ / QUERY_QP                                  qp_cmds.cpp
//   RST2INIT, INIT2INIT, INIT2RTR, RTR2RTS, RTS2RTS, SQERR2RTS,
//   SQD_RTS, 2ERR, 2RST (the IBTA QP state machine)                qp_modify.cpp
//   ATTACH_TO_MCG / DETACH_FROM_MCG                                mcg_cmds.cpp
//   QUERY_VPORT_STATE, QUERY_/MODIFY_NIC_VPORT_CONTEXT,
//   QUERY_HCA_VPORT_CONTEXT / _GID / _PKEY,
//   QUERY_/SET_ROCE_ADDRESS                                        vport_cmds.cpp
//   CREATE_ / DESTROY_UMEM (DEVX user memory; CQ / QP buffers
//   and doorbell records placed in a umem)                         umem_cmds.cpp
//
// Status policy (device.h MLX5_CMD_STAT_*; the kernel's cmd.c maps them to
// errnos, which is how the choices below read to a Linux driver):
//   * a handle that names no object (pd, cqn, qpn, srqn, mkey_index, eqn,
//     uar_page, transport_domain)                       -> BAD_RES_ERR (0x5)
//   * a field value the command does not accept, or a feature the model does
//     not offer (e.g. 128-byte CQEs, XRC, APM, UMR)     -> BAD_PARAM_ERR (0x3)
//   * a size above a cmd_hca_cap limit (log_cq_size > log_max_cq_sz,
//     log_sq_size > log_max_qp_sz, log_sra_max > log_max_ra_req_qp, ...)
//                                                       -> LIM_ERR (0x8)
//   * all 2^log_max_<object> numbers in use            -> NO_RES_ERR (0xF)
//   * destroying an object other objects still use (a PD with MKEYs / QPs /
//     SRQs, a CQ with QPs / SRQs, an SRQ with QPs, a QP attached to a
//     multicast group)                                  -> RES_BUSY (0x6);
//     cmd.c maps it to -EBUSY, which is what the IB core returns for the same
//     case (ib_dealloc_pd / ib_destroy_cq / ib_destroy_qp check usecnt);
//   * a QP command not legal from the QP's state (IBTA Vol 1 10.3.1, the
//     kernel's mlx5_ib optab)                           -> BAD_QP_STATE_ERR (0x10);
//   * MODIFY_CQ resize to fewer entries than the CQEs outstanding
//                                                       -> BAD_SIZE_OUTS_CQES_ERR (0x40);
//   * an input too short for the pas[] / MTT entries the sizes need
//                                                       -> BAD_INP_LEN_ERR (0x50).
// Every check has its own syndrome (sim/fw/syndromes.hpp).
//
// Buffers (CQ, SRQ, QP pas[]) are taken as given: each page address must be
// aligned to the page size, but the memory behind it is checked when the
// engine accesses it, through the IOMMU (as on silicon, where a bad page shows
// up as a CQ error / QP catastrophic event, not as a command failure). The
// same holds for MTT entries of memory keys.
//
// Threading: registration only; handlers run on the firmware thread.
#pragma once

#include "sim/fw/context.hpp"
#include "sim/fw/registry.hpp"

#include <cstdint>
#include <functional>

namespace kbv::sim::fw {

// Adds every command above to `r`; an opcode that already has a handler keeps
// it (CommandRegistry::add refuses duplicates).
void register_object_commands(CommandRegistry& r);

// The same commands for a model whose port is 127.0.0.port_host: every
// handler first binds the port identity (set_port_host) to object tables
// that do not have it yet, so the identity survives what drops the tables
// (function reset, DISABLE_HCA, TEARDOWN_HCA). Use this as the model's
// registrar: FwConfig::registrars.push_back(object_commands(host)).
std::function<void(CommandRegistry&)> object_commands(uint8_t port_host);

// Port hooks for the model (call on the firmware thread, e.g. through a
// task, or while no command executes; the EQE itself is thread-safe):
// the port's IPv4 host number N (address 127.0.0.N, GID 0 ::ffff:127.0.0.N,
// MAC 02:6b:62:76:00:N); resets RoCE address table entry 0.
void set_port_host(FwContext& ctx, uint8_t host);
// Link up / down: QUERY_VPORT_STATE and QUERY_HCA_VPORT_CONTEXT follow it, and
// a port change EQE (type 0x09, sub_type ACTIVE 4 / DOWN 1, port 1; device.h
// mlx5_eqe_port_state) goes to the EQ subscribed to port events, if any.
void set_port_state(FwContext& ctx, bool up);

// Per-family registration (objects.cpp calls them all).
void register_pd_commands(CommandRegistry& r);
void register_mkey_commands(CommandRegistry& r);
void register_cq_commands(CommandRegistry& r);
void register_srq_commands(CommandRegistry& r);
void register_qp_commands(CommandRegistry& r);
void register_qp_modify_commands(CommandRegistry& r);
void register_mcg_commands(CommandRegistry& r);
void register_vport_commands(CommandRegistry& r);
// ACCESS_REG with the port registers (access_reg_cmds.cpp): replaces the
// bring-up handler (HOST_ENDIANNESS only), which it still answers.
void register_access_reg_commands(CommandRegistry& r);

// Port registers (access_reg_cmds.cpp), firmware thread: start PAOS/PTYS
// state and the PPCNT counter baseline (the model calls it at INIT_HCA), and
// whether PAOS admin_status lets the link come up.
void port_regs_init(FwContext& ctx);
bool port_admin_up(FwContext& ctx);

}  // namespace kbv::sim::fw
