// SPDX-License-Identifier: BSD-3-Clause
//
// Syndromes the model's firmware writes into mbox_out.syndrome: the one
// table of every check of every command (bring-up and objects).
//
// The PRM gives every failing check of a command a 32-bit syndrome that
// identifies the check (mlx5_ifc.h mbox_out_bits.syndrome; the kernel prints it
// beside the status, cmd.c mlx5_cmd_out_err). Real firmware's values are not
// public, so the model uses its own scheme, stable and documented here:
//
//   syndrome = opcode << 16 | check      for a check inside one command;
//   syndrome = 0x0000'00nn               for the generic dispatch checks below.
//
// Every constant is nonzero and distinct; tests match on them, a driver log
// shows which check refused the command.
//
// Threading: constants only.
#pragma once

#include "hca/prm/opcodes.hpp"

#include <cstdint>

namespace kbv::sim::fw::synd {

constexpr uint32_t at(prm::Opcode op, uint16_t check) {
  return static_cast<uint32_t>(prm::to_u16(op)) << 16 | check;
}

// ---- generic dispatch (firmware.cpp / registry.cpp) ----
inline constexpr uint32_t kUnknownOpcode = 0x01;   // BAD_OP: no handler for the opcode
inline constexpr uint32_t kInputTooShort = 0x02;   // BAD_INPUT_LEN: inlen < the command's minimum
inline constexpr uint32_t kOutputTooShort = 0x03;  // BAD_OUTPUT_LEN: outlen < the minimum
inline constexpr uint32_t kBadOpMod = 0x04;        // BAD_PARAM: op_mod not defined for the opcode
inline constexpr uint32_t kNotEnabled = 0x05;      // BAD_SYS_STATE: before ENABLE_HCA
inline constexpr uint32_t kNotInitialized = 0x06;  // BAD_SYS_STATE: before INIT_HCA
inline constexpr uint32_t kInjected = 0x07;        // default syndrome of an injected failure
inline constexpr uint32_t kBadUid = 0x09;          // BAD_PARAM: uid != 0 (no DEVX user contexts)

// ---- ENABLE_HCA / DISABLE_HCA ----
inline constexpr uint32_t kEnableTwice = at(prm::Opcode::ENABLE_HCA, 1);
inline constexpr uint32_t kEnableFunctionId = at(prm::Opcode::ENABLE_HCA, 2);
inline constexpr uint32_t kDisableNotEnabled = at(prm::Opcode::DISABLE_HCA, 1);
inline constexpr uint32_t kDisableInitialized = at(prm::Opcode::DISABLE_HCA, 2);
inline constexpr uint32_t kDisableFunctionId = at(prm::Opcode::DISABLE_HCA, 3);

// ---- SET_ISSI ----
inline constexpr uint32_t kIssiUnsupported = at(prm::Opcode::SET_ISSI, 1);
inline constexpr uint32_t kIssiAfterInit = at(prm::Opcode::SET_ISSI, 2);

// ---- QUERY_PAGES / MANAGE_PAGES ----
inline constexpr uint32_t kQueryPagesFunctionId = at(prm::Opcode::QUERY_PAGES, 1);
inline constexpr uint32_t kManagePagesFunctionId = at(prm::Opcode::MANAGE_PAGES, 1);
inline constexpr uint32_t kPasTooShort = at(prm::Opcode::MANAGE_PAGES, 2);  // inlen < n pas
inline constexpr uint32_t kPageMisaligned = at(prm::Opcode::MANAGE_PAGES, 3);
inline constexpr uint32_t kPageNotMapped = at(prm::Opcode::MANAGE_PAGES, 4);
inline constexpr uint32_t kPageDuplicate = at(prm::Opcode::MANAGE_PAGES, 5);
inline constexpr uint32_t kPagesLimit = at(prm::Opcode::MANAGE_PAGES, 6);
inline constexpr uint32_t kTakeOutTooShort = at(prm::Opcode::MANAGE_PAGES, 7);

// ---- ACCESS_REG ----
inline constexpr uint32_t kRegUnsupported = at(prm::Opcode::ACCESS_REG, 1);
inline constexpr uint32_t kRegBadEndianness = at(prm::Opcode::ACCESS_REG, 2);
inline constexpr uint32_t kRegDataShort = at(prm::Opcode::ACCESS_REG, 3);
// The port registers (fw/objects/access_reg_cmds.cpp).
inline constexpr uint32_t kRegBadValue = at(prm::Opcode::ACCESS_REG, 4);     // field out of range
inline constexpr uint32_t kRegNotEthernet = at(prm::Opcode::ACCESS_REG, 5);  // PTYS without EN
inline constexpr uint32_t kRegReadOnly = at(prm::Opcode::ACCESS_REG, 6);     // PPCNT write
inline constexpr uint32_t kRegGroup = at(prm::Opcode::ACCESS_REG, 7);  // PPCNT group not counted
inline constexpr uint32_t kRegLocalPort = at(prm::Opcode::ACCESS_REG, 8);  // local_port != 1

// ---- QUERY_HCA_CAP / SET_HCA_CAP ----
inline constexpr uint32_t kCapTypeUnsupported = at(prm::Opcode::QUERY_HCA_CAP, 1);
inline constexpr uint32_t kSetCapTypeUnsupported = at(prm::Opcode::SET_HCA_CAP, 1);
inline constexpr uint32_t kSetCapAfterInit = at(prm::Opcode::SET_HCA_CAP, 2);
inline constexpr uint32_t kSetCapAboveMax = at(prm::Opcode::SET_HCA_CAP, 3);
inline constexpr uint32_t kSetCapBadValue = at(prm::Opcode::SET_HCA_CAP, 4);

// ---- INIT_HCA / TEARDOWN_HCA ----
inline constexpr uint32_t kInitTwice = at(prm::Opcode::INIT_HCA, 1);
// SET_DRIVER_VERSION: a byte that is neither printable ASCII nor NUL padding.
inline constexpr uint32_t kDriverVersionChars = at(prm::Opcode::SET_DRIVER_VERSION, 1);
inline constexpr uint32_t kInitNoBootPages = at(prm::Opcode::INIT_HCA, 2);
inline constexpr uint32_t kInitNoInitPages = at(prm::Opcode::INIT_HCA, 3);
inline constexpr uint32_t kInitIssi = at(prm::Opcode::INIT_HCA, 4);
inline constexpr uint32_t kTeardownProfile = at(prm::Opcode::TEARDOWN_HCA, 1);

// ---- ALLOC_UAR / DEALLOC_UAR ----
inline constexpr uint32_t kUarExhausted = at(prm::Opcode::ALLOC_UAR, 1);
inline constexpr uint32_t kUarOutOfRange = at(prm::Opcode::DEALLOC_UAR, 1);
inline constexpr uint32_t kUarNotAllocated = at(prm::Opcode::DEALLOC_UAR, 2);
inline constexpr uint32_t kUarInUse = at(prm::Opcode::DEALLOC_UAR, 3);
// DEALLOC_UAR of a UAR page that a CQ, QP or SRQ still rings.
inline constexpr uint32_t kUarInUseByObject = at(prm::Opcode::DEALLOC_UAR, 4);

// ---- CREATE_EQ / DESTROY_EQ / QUERY_EQ / GEN_EQE ----
inline constexpr uint32_t kEqExhausted = at(prm::Opcode::CREATE_EQ, 1);
inline constexpr uint32_t kEqLogSize = at(prm::Opcode::CREATE_EQ, 2);
inline constexpr uint32_t kEqUarNotAllocated = at(prm::Opcode::CREATE_EQ, 3);
inline constexpr uint32_t kEqPasTooShort = at(prm::Opcode::CREATE_EQ, 4);
inline constexpr uint32_t kEqPasMisaligned = at(prm::Opcode::CREATE_EQ, 5);
inline constexpr uint32_t kEqPasNotMapped = at(prm::Opcode::CREATE_EQ, 6);
inline constexpr uint32_t kEqPageOffset = at(prm::Opcode::CREATE_EQ, 8);
inline constexpr uint32_t kEqLogPageSize = at(prm::Opcode::CREATE_EQ, 10);
inline constexpr uint32_t kDestroyEqUnknown = at(prm::Opcode::DESTROY_EQ, 1);
// DESTROY_EQ of an EQ that a CQ still reports to.
inline constexpr uint32_t kDestroyEqInUse = at(prm::Opcode::DESTROY_EQ, 2);
inline constexpr uint32_t kQueryEqUnknown = at(prm::Opcode::QUERY_EQ, 1);
inline constexpr uint32_t kGenEqeUnknown = at(prm::Opcode::GEN_EQE, 1);  // no such EQ
inline constexpr uint32_t kGenEqeNotWritten =
    at(prm::Opcode::GEN_EQE, 2);  // EQ full / buffer fault

// ==== object commands (PD, TD, MKEY, CQ, QP, SRQ, MCG, vport / RoCE address,
// umem): fw/objects. The QP state transitions share one set of checks (kQp*),
// numbered from 0x100 and combined with the transition's own opcode by
// qp_synd(); umem placement checks from 0x201. ====

// ---- ALLOC_PD / DEALLOC_PD / transport domains ----
inline constexpr uint32_t kPdExhausted = at(prm::Opcode::ALLOC_PD, 1);
inline constexpr uint32_t kPdUnknown = at(prm::Opcode::DEALLOC_PD, 1);
inline constexpr uint32_t kPdInUse = at(prm::Opcode::DEALLOC_PD, 2);
inline constexpr uint32_t kTdExhausted = at(prm::Opcode::ALLOC_TRANSPORT_DOMAIN, 1);
inline constexpr uint32_t kTdUnknown = at(prm::Opcode::DEALLOC_TRANSPORT_DOMAIN, 1);

// ---- CREATE_MKEY / QUERY_MKEY / DESTROY_MKEY ----
inline constexpr uint32_t kMkeyAccessMode = at(prm::Opcode::CREATE_MKEY, 1);
inline constexpr uint32_t kMkeyPdUnknown = at(prm::Opcode::CREATE_MKEY, 2);
inline constexpr uint32_t kMkeyQpn = at(prm::Opcode::CREATE_MKEY, 3);
inline constexpr uint32_t kMkeyLogPageSize = at(prm::Opcode::CREATE_MKEY, 4);
inline constexpr uint32_t kMkeyUnsupported = at(prm::Opcode::CREATE_MKEY, 5);  // umr/bsf/umem/ODP
inline constexpr uint32_t kMkeyRights = at(prm::Opcode::CREATE_MKEY, 6);       // rw/a without lw
inline constexpr uint32_t kMkeyLength64 = at(prm::Opcode::CREATE_MKEY, 7);
inline constexpr uint32_t kMkeyRange = at(prm::Opcode::CREATE_MKEY, 8);  // start + len wraps
inline constexpr uint32_t kMkeyOctwords = at(prm::Opcode::CREATE_MKEY, 9);
inline constexpr uint32_t kMkeyActualSize = at(prm::Opcode::CREATE_MKEY, 10);
inline constexpr uint32_t kMkeyMttTooShort = at(prm::Opcode::CREATE_MKEY, 11);  // inlen
inline constexpr uint32_t kMkeyMttMisaligned = at(prm::Opcode::CREATE_MKEY, 12);
inline constexpr uint32_t kMkeyExhausted = at(prm::Opcode::CREATE_MKEY, 13);
inline constexpr uint32_t kMkeyTooManyMtts = at(prm::Opcode::CREATE_MKEY, 14);  // model limit
inline constexpr uint32_t kQueryMkeyUnknown = at(prm::Opcode::QUERY_MKEY, 1);
inline constexpr uint32_t kDestroyMkeyUnknown = at(prm::Opcode::DESTROY_MKEY, 1);

// ---- CREATE_CQ / DESTROY_CQ / QUERY_CQ / MODIFY_CQ ----
inline constexpr uint32_t kCqLogSize = at(prm::Opcode::CREATE_CQ, 1);
inline constexpr uint32_t kCqCqeSize = at(prm::Opcode::CREATE_CQ, 2);
inline constexpr uint32_t kCqUarUnknown = at(prm::Opcode::CREATE_CQ, 3);
inline constexpr uint32_t kCqEqnUnknown = at(prm::Opcode::CREATE_CQ, 4);
inline constexpr uint32_t kCqLogPageSize = at(prm::Opcode::CREATE_CQ, 5);
inline constexpr uint32_t kCqPasTooShort = at(prm::Opcode::CREATE_CQ, 6);
inline constexpr uint32_t kCqPasMisaligned = at(prm::Opcode::CREATE_CQ, 7);
inline constexpr uint32_t kCqDbrMisaligned = at(prm::Opcode::CREATE_CQ, 8);
inline constexpr uint32_t kCqUnsupported = at(prm::Opcode::CREATE_CQ, 9);  // cc/comp/umem/apu
inline constexpr uint32_t kCqPeriodMode = at(prm::Opcode::CREATE_CQ, 10);
inline constexpr uint32_t kCqExhausted = at(prm::Opcode::CREATE_CQ, 11);
inline constexpr uint32_t kDestroyCqUnknown = at(prm::Opcode::DESTROY_CQ, 1);
inline constexpr uint32_t kDestroyCqInUse = at(prm::Opcode::DESTROY_CQ, 2);
inline constexpr uint32_t kQueryCqUnknown = at(prm::Opcode::QUERY_CQ, 1);
inline constexpr uint32_t kModifyCqUnknown = at(prm::Opcode::MODIFY_CQ, 1);
inline constexpr uint32_t kModifyCqSelect = at(prm::Opcode::MODIFY_CQ, 2);  // unknown select bits
inline constexpr uint32_t kModifyCqEqnUnknown = at(prm::Opcode::MODIFY_CQ, 3);
inline constexpr uint32_t kResizeCqNoSize =
    at(prm::Opcode::MODIFY_CQ, 4);  // log_cq_size not selected
inline constexpr uint32_t kResizeCqLogSize = at(prm::Opcode::MODIFY_CQ, 5);
inline constexpr uint32_t kResizeCqOutstanding = at(prm::Opcode::MODIFY_CQ, 6);
inline constexpr uint32_t kResizeCqLogPageSize = at(prm::Opcode::MODIFY_CQ, 7);
inline constexpr uint32_t kResizeCqPasTooShort = at(prm::Opcode::MODIFY_CQ, 8);
inline constexpr uint32_t kResizeCqPasMisaligned = at(prm::Opcode::MODIFY_CQ, 9);
inline constexpr uint32_t kModifyCqUmem = at(prm::Opcode::MODIFY_CQ, 10);

// ---- CREATE_SRQ / DESTROY_SRQ / QUERY_SRQ / ARM_RQ ----
inline constexpr uint32_t kSrqLogSize = at(prm::Opcode::CREATE_SRQ, 1);
inline constexpr uint32_t kSrqStride = at(prm::Opcode::CREATE_SRQ, 2);
inline constexpr uint32_t kSrqPdUnknown = at(prm::Opcode::CREATE_SRQ, 3);
inline constexpr uint32_t kSrqCqUnknown = at(prm::Opcode::CREATE_SRQ, 4);
inline constexpr uint32_t kSrqUnsupported = at(prm::Opcode::CREATE_SRQ, 5);  // xrcd/sig/cont/rlky
inline constexpr uint32_t kSrqLogPageSize = at(prm::Opcode::CREATE_SRQ, 6);
inline constexpr uint32_t kSrqPasTooShort = at(prm::Opcode::CREATE_SRQ, 7);
inline constexpr uint32_t kSrqPasMisaligned = at(prm::Opcode::CREATE_SRQ, 8);
inline constexpr uint32_t kSrqDbrMisaligned = at(prm::Opcode::CREATE_SRQ, 9);
inline constexpr uint32_t kSrqLwm = at(prm::Opcode::CREATE_SRQ, 10);
inline constexpr uint32_t kSrqExhausted = at(prm::Opcode::CREATE_SRQ, 11);
inline constexpr uint32_t kDestroySrqUnknown = at(prm::Opcode::DESTROY_SRQ, 1);
inline constexpr uint32_t kDestroySrqInUse = at(prm::Opcode::DESTROY_SRQ, 2);
inline constexpr uint32_t kQuerySrqUnknown = at(prm::Opcode::QUERY_SRQ, 1);
inline constexpr uint32_t kArmRqUnknown = at(prm::Opcode::ARM_RQ, 1);
inline constexpr uint32_t kArmRqLwm = at(prm::Opcode::ARM_RQ, 2);

// ---- CREATE_QP / DESTROY_QP / QUERY_QP ----
inline constexpr uint32_t kQpServiceType = at(prm::Opcode::CREATE_QP, 1);
inline constexpr uint32_t kQpPdUnknown = at(prm::Opcode::CREATE_QP, 2);
inline constexpr uint32_t kQpCqSndUnknown = at(prm::Opcode::CREATE_QP, 3);
inline constexpr uint32_t kQpCqRcvUnknown = at(prm::Opcode::CREATE_QP, 4);
inline constexpr uint32_t kQpLogSqSize = at(prm::Opcode::CREATE_QP, 5);
inline constexpr uint32_t kQpLogRqSize = at(prm::Opcode::CREATE_QP, 6);
inline constexpr uint32_t kQpRqStride = at(prm::Opcode::CREATE_QP, 7);
inline constexpr uint32_t kQpRqType = at(prm::Opcode::CREATE_QP, 8);
inline constexpr uint32_t kQpSrqUnknown = at(prm::Opcode::CREATE_QP, 9);
inline constexpr uint32_t kQpUarUnknown = at(prm::Opcode::CREATE_QP, 10);
inline constexpr uint32_t kQpLogPageSize = at(prm::Opcode::CREATE_QP, 11);
inline constexpr uint32_t kQpPasTooShort = at(prm::Opcode::CREATE_QP, 12);
inline constexpr uint32_t kQpPasMisaligned = at(prm::Opcode::CREATE_QP, 13);
inline constexpr uint32_t kQpDbrMisaligned = at(prm::Opcode::CREATE_QP, 14);
inline constexpr uint32_t kQpUnsupported = at(prm::Opcode::CREATE_QP, 15);  // umem/ece/offloads
inline constexpr uint32_t kQpInputQpn = at(prm::Opcode::CREATE_QP, 16);
inline constexpr uint32_t kQpOptParam = at(prm::Opcode::CREATE_QP, 17);
inline constexpr uint32_t kQpExhausted = at(prm::Opcode::CREATE_QP, 18);
inline constexpr uint32_t kQpRoceDisabled = at(prm::Opcode::CREATE_QP, 19);
inline constexpr uint32_t kQpLogMsgMax = at(prm::Opcode::CREATE_QP, 20);
inline constexpr uint32_t kQpPmState = at(prm::Opcode::CREATE_QP, 21);
inline constexpr uint32_t kQpCounterSet = at(prm::Opcode::CREATE_QP, 22);
inline constexpr uint32_t kQpNoQueues = at(prm::Opcode::CREATE_QP, 23);  // no SQ and no RQ
// qpc.ts_format the caps do not offer (REAL_TIME, or the reserved 3).
inline constexpr uint32_t kQpTsFormat = at(prm::Opcode::CREATE_QP, 24);
inline constexpr uint32_t kDestroyQpUnknown = at(prm::Opcode::DESTROY_QP, 1);
inline constexpr uint32_t kDestroyQpAttached = at(prm::Opcode::DESTROY_QP, 2);
inline constexpr uint32_t kQueryQpUnknown = at(prm::Opcode::QUERY_QP, 1);

// ---- QP state transitions: check numbers, combined with the opcode ----
inline constexpr uint16_t kQpUnknown = 0x101;          // BAD_RESOURCE: no such qpn
inline constexpr uint16_t kQpBadState = 0x102;         // BAD_QP_STATE: not legal from here
inline constexpr uint16_t kQpOptMask = 0x103;          // BAD_PARAM: opt_param_mask bit not allowed
inline constexpr uint16_t kQpAltPath = 0x104;          // BAD_PARAM: APM not supported
inline constexpr uint16_t kQpPort = 0x105;             // BAD_PARAM: vhca_port_num
inline constexpr uint16_t kQpPkeyIndex = 0x106;        // BAD_PARAM: pkey_index >= table size
inline constexpr uint16_t kQpAccessFlags = 0x107;      // BAD_PARAM: rre/rae on UC, any on UD
inline constexpr uint16_t kQpMtu = 0x108;              // BAD_PARAM: mtu not 1..5
inline constexpr uint16_t kQpGrh = 0x109;              // BAD_PARAM: RoCE path without GRH
inline constexpr uint16_t kQpSgidIndex = 0x10a;        // BAD_PARAM: src_addr_index unset
inline constexpr uint16_t kQpRgid = 0x10b;             // BAD_PARAM: zero destination GID
inline constexpr uint16_t kQpRraMax = 0x10c;           // LIM: log_rra_max > cap
inline constexpr uint16_t kQpSraMax = 0x10d;           // LIM: log_sra_max > cap
inline constexpr uint16_t kQpSrqn = 0x10e;             // BAD_RESOURCE: SRQN opt param
inline constexpr uint16_t kQpCqnRcv = 0x10f;           // BAD_RESOURCE: CQN_RCV opt param
inline constexpr uint16_t kQpPmStateParam = 0x110;     // BAD_PARAM: reserved pm_state
inline constexpr uint16_t kQpDbr = 0x111;              // BAD_PARAM: misaligned dbr_addr
inline constexpr uint16_t kQpCounterSetParam = 0x112;  // BAD_RESOURCE: counter set
inline constexpr uint16_t kQpEce = 0x113;              // BAD_PARAM: ece without ece_support
inline constexpr uint16_t kQpMsgMax = 0x114;           // LIM: log_msg_max > cap
inline constexpr uint16_t kQpUdpSport = 0x115;  // BAD_PARAM: udp_sport outside roce_cap range

constexpr uint32_t qp_synd(prm::Opcode op, uint16_t check) { return at(op, check); }

// ---- ATTACH_TO_MCG / DETACH_FROM_MCG ----
inline constexpr uint32_t kMcgQpUnknown = at(prm::Opcode::ATTACH_TO_MCG, 1);
inline constexpr uint32_t kMcgNotUd = at(prm::Opcode::ATTACH_TO_MCG, 2);
inline constexpr uint32_t kMcgNotMulticast = at(prm::Opcode::ATTACH_TO_MCG, 3);
inline constexpr uint32_t kMcgDuplicate = at(prm::Opcode::ATTACH_TO_MCG, 4);
inline constexpr uint32_t kMcgGroupFull = at(prm::Opcode::ATTACH_TO_MCG, 5);
inline constexpr uint32_t kMcgExhausted = at(prm::Opcode::ATTACH_TO_MCG, 6);
inline constexpr uint32_t kDetachQpUnknown = at(prm::Opcode::DETACH_FROM_MCG, 1);
inline constexpr uint32_t kDetachNoGroup = at(prm::Opcode::DETACH_FROM_MCG, 2);
inline constexpr uint32_t kDetachNotMember = at(prm::Opcode::DETACH_FROM_MCG, 3);

// ---- vports and RoCE addresses ----
inline constexpr uint32_t kVportStateOther = at(prm::Opcode::QUERY_VPORT_STATE, 1);
inline constexpr uint32_t kNicVportOther = at(prm::Opcode::QUERY_NIC_VPORT_CONTEXT, 1);
inline constexpr uint32_t kModNicVportOther = at(prm::Opcode::MODIFY_NIC_VPORT_CONTEXT, 1);
inline constexpr uint32_t kModNicVportSelect = at(prm::Opcode::MODIFY_NIC_VPORT_CONTEXT, 2);
inline constexpr uint32_t kModNicVportMtu = at(prm::Opcode::MODIFY_NIC_VPORT_CONTEXT, 3);
inline constexpr uint32_t kHcaVportOther = at(prm::Opcode::QUERY_HCA_VPORT_CONTEXT, 1);
inline constexpr uint32_t kHcaVportPort = at(prm::Opcode::QUERY_HCA_VPORT_CONTEXT, 2);
inline constexpr uint32_t kGidOther = at(prm::Opcode::QUERY_HCA_VPORT_GID, 1);
inline constexpr uint32_t kGidPort = at(prm::Opcode::QUERY_HCA_VPORT_GID, 2);
inline constexpr uint32_t kGidIndex = at(prm::Opcode::QUERY_HCA_VPORT_GID, 3);
inline constexpr uint32_t kGidOutLen = at(prm::Opcode::QUERY_HCA_VPORT_GID, 4);
inline constexpr uint32_t kPkeyOther = at(prm::Opcode::QUERY_HCA_VPORT_PKEY, 1);
inline constexpr uint32_t kPkeyPort = at(prm::Opcode::QUERY_HCA_VPORT_PKEY, 2);
inline constexpr uint32_t kPkeyIndex = at(prm::Opcode::QUERY_HCA_VPORT_PKEY, 3);
inline constexpr uint32_t kPkeyOutLen = at(prm::Opcode::QUERY_HCA_VPORT_PKEY, 4);
inline constexpr uint32_t kQueryRoceIndex = at(prm::Opcode::QUERY_ROCE_ADDRESS, 1);
inline constexpr uint32_t kQueryRocePort = at(prm::Opcode::QUERY_ROCE_ADDRESS, 2);
inline constexpr uint32_t kSetRoceIndex = at(prm::Opcode::SET_ROCE_ADDRESS, 1);
inline constexpr uint32_t kSetRocePort = at(prm::Opcode::SET_ROCE_ADDRESS, 2);
inline constexpr uint32_t kSetRoceVersion = at(prm::Opcode::SET_ROCE_ADDRESS, 3);
inline constexpr uint32_t kSetRoceL3Type = at(prm::Opcode::SET_ROCE_ADDRESS, 4);
inline constexpr uint32_t kSetRoceIpv4Mapped = at(prm::Opcode::SET_ROCE_ADDRESS, 5);

// ---- CREATE_UMEM / DESTROY_UMEM, and umem placement of CQ / QP buffers ----
inline constexpr uint32_t kUmemNoMtt = at(prm::Opcode::CREATE_UMEM, 1);          // num_of_mtt 0
inline constexpr uint32_t kUmemLogPageSize = at(prm::Opcode::CREATE_UMEM, 2);    // > 18
inline constexpr uint32_t kUmemPageOffset = at(prm::Opcode::CREATE_UMEM, 3);     // >= page
inline constexpr uint32_t kUmemMttTooShort = at(prm::Opcode::CREATE_UMEM, 4);    // inlen
inline constexpr uint32_t kUmemMttMisaligned = at(prm::Opcode::CREATE_UMEM, 5);  // not page aligned
inline constexpr uint32_t kUmemNoAccess = at(prm::Opcode::CREATE_UMEM, 6);       // rd_en 0
inline constexpr uint32_t kUmemExhausted = at(prm::Opcode::CREATE_UMEM, 7);      // model limit
inline constexpr uint32_t kUmemTooManyMtts = at(prm::Opcode::CREATE_UMEM, 8);    // model limit
inline constexpr uint32_t kDestroyUmemUnknown = at(prm::Opcode::DESTROY_UMEM, 1);
inline constexpr uint32_t kDestroyUmemInUse = at(prm::Opcode::DESTROY_UMEM, 2);
// A CQ / QP naming a umem: check numbers 0x201.., combined with the opcode.
inline constexpr uint16_t kUmemUnknown = 0x201;   // BAD_RESOURCE: no such umem_id
inline constexpr uint16_t kUmemRange = 0x202;     // BAD_PARAM: buffer / dbr outside the umem
inline constexpr uint16_t kUmemReadOnly = 0x203;  // BAD_PARAM: device writes, no wr_en
inline constexpr uint16_t kUmemDbrAlign = 0x204;  // BAD_PARAM: dbr offset not 8-byte aligned

}  // namespace kbv::sim::fw::synd
