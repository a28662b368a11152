// SPDX-License-Identifier: BSD-3-Clause
//
// Firmware command opcodes, command status and delivery status values, and the
// op_mod values of the bring-up commands.
//
// Sources (values only; names follow the kernel's without the MLX5_ prefixes):
//   * opcodes: kernel include/linux/mlx5/mlx5_ifc.h, enum MLX5_CMD_OP_*;
//     docs/PRM.md "Opcodes";
//   * command status (mbox_out.status): kernel include/linux/mlx5/device.h,
//     enum MLX5_CMD_STAT_*; docs/PRM.md "Command status";
//   * delivery status (cmd_layout.status_own bits 7:1): kernel
//     drivers/net/ethernet/mellanox/mlx5/core/cmd.c, enum
//     MLX5_CMD_DELIVERY_STAT_*; docs/PRM.md "Delivery status";
//   * QUERY_PAGES / MANAGE_PAGES op_mod: mlx5_ifc.h enums
//     MLX5_QUERY_PAGES_IN_OP_MOD_* and MLX5_MANAGE_PAGES_IN_OP_MOD_*;
//   * QUERY_HCA_CAP / SET_HCA_CAP op_mod: device.h enum mlx5_cap_type and
//     enum mlx5_cap_mode (op_mod = cap_type << 1 | mode);
//   * ACCESS_REG: register ids from include/linux/mlx5/driver.h MLX5_REG_*,
//     op_mod from mlx5_ifc.h MLX5_ACCESS_REGISTER_IN_OP_MOD_*.
//
// Threading: constants and pure functions only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kbv::prm {

// Command opcodes (mbox_in.opcode). The QP state transitions keep the kernel's
// names (RST2INIT_QP ...); "2ERR_QP" and "2RST_QP" cannot start an identifier,
// so they are TO_ERR_QP and TO_RST_QP here (opcode_name still says "2ERR_QP").
enum class Opcode : uint16_t {
  // HCA bring-up and capabilities (0x1xx)
  QUERY_HCA_CAP = 0x100,
  QUERY_ADAPTER = 0x101,
  INIT_HCA = 0x102,
  TEARDOWN_HCA = 0x103,
  ENABLE_HCA = 0x104,
  DISABLE_HCA = 0x105,
  QUERY_PAGES = 0x107,
  MANAGE_PAGES = 0x108,
  SET_HCA_CAP = 0x109,
  QUERY_ISSI = 0x10A,
  SET_ISSI = 0x10B,
  SET_DRIVER_VERSION = 0x10D,
  // memory keys (0x2xx)
  CREATE_MKEY = 0x200,
  QUERY_MKEY = 0x201,
  DESTROY_MKEY = 0x202,
  QUERY_SPECIAL_CONTEXTS = 0x203,
  // event queues (0x3xx)
  CREATE_EQ = 0x301,
  DESTROY_EQ = 0x302,
  QUERY_EQ = 0x303,
  GEN_EQE = 0x304,
  // completion queues (0x4xx)
  CREATE_CQ = 0x400,
  DESTROY_CQ = 0x401,
  QUERY_CQ = 0x402,
  MODIFY_CQ = 0x403,
  // queue pairs (0x5xx)
  CREATE_QP = 0x500,
  DESTROY_QP = 0x501,
  RST2INIT_QP = 0x502,
  INIT2RTR_QP = 0x503,
  RTR2RTS_QP = 0x504,
  RTS2RTS_QP = 0x505,
  SQERR2RTS_QP = 0x506,
  TO_ERR_QP = 0x507,  // MLX5_CMD_OP_2ERR_QP
  TO_RST_QP = 0x50A,  // MLX5_CMD_OP_2RST_QP
  QUERY_QP = 0x50B,
  SQD_RTS_QP = 0x50C,
  MAD_IFC = 0x50D,
  INIT2INIT_QP = 0x50E,
  // shared receive queues (0x7xx)
  CREATE_SRQ = 0x700,
  DESTROY_SRQ = 0x701,
  QUERY_SRQ = 0x702,
  ARM_RQ = 0x703,
  // vports and RoCE addresses (0x75x-0x77x)
  QUERY_VPORT_STATE = 0x750,
  MODIFY_VPORT_STATE = 0x751,
  QUERY_NIC_VPORT_CONTEXT = 0x754,
  MODIFY_NIC_VPORT_CONTEXT = 0x755,
  QUERY_ROCE_ADDRESS = 0x760,
  SET_ROCE_ADDRESS = 0x761,
  QUERY_HCA_VPORT_CONTEXT = 0x762,
  MODIFY_HCA_VPORT_CONTEXT = 0x763,
  QUERY_HCA_VPORT_GID = 0x764,
  QUERY_HCA_VPORT_PKEY = 0x765,
  QUERY_VPORT_COUNTER = 0x770,
  ALLOC_Q_COUNTER = 0x771,
  DEALLOC_Q_COUNTER = 0x772,
  QUERY_Q_COUNTER = 0x773,
  // miscellaneous (0x8xx)
  ALLOC_PD = 0x800,
  DEALLOC_PD = 0x801,
  ALLOC_UAR = 0x802,
  DEALLOC_UAR = 0x803,
  CONFIG_INT_MODERATION = 0x804,
  ACCESS_REG = 0x805,
  ATTACH_TO_MCG = 0x806,
  DETACH_FROM_MCG = 0x807,
  NOP = 0x80D,
  ALLOC_XRCD = 0x80E,
  DEALLOC_XRCD = 0x80F,
  ALLOC_TRANSPORT_DOMAIN = 0x816,
  DEALLOC_TRANSPORT_DOMAIN = 0x817,
  // DEVX user memory (0xaxx)
  CREATE_UMEM = 0xA08,
  DESTROY_UMEM = 0xA0A,
};

constexpr uint16_t to_u16(Opcode op) { return static_cast<uint16_t>(op); }

// One row of the opcode name table.
struct OpcodeName {
  Opcode op;
  std::string_view name;
};

// Every Opcode with its kernel name (MLX5_CMD_OP_ removed). Used by
// opcode_name() and by the command tracer; tests check that the table and the
// enum agree.
inline constexpr OpcodeName kOpcodeNames[] = {
    {Opcode::QUERY_HCA_CAP, "QUERY_HCA_CAP"},
    {Opcode::QUERY_ADAPTER, "QUERY_ADAPTER"},
    {Opcode::INIT_HCA, "INIT_HCA"},
    {Opcode::TEARDOWN_HCA, "TEARDOWN_HCA"},
    {Opcode::ENABLE_HCA, "ENABLE_HCA"},
    {Opcode::DISABLE_HCA, "DISABLE_HCA"},
    {Opcode::QUERY_PAGES, "QUERY_PAGES"},
    {Opcode::MANAGE_PAGES, "MANAGE_PAGES"},
    {Opcode::SET_HCA_CAP, "SET_HCA_CAP"},
    {Opcode::QUERY_ISSI, "QUERY_ISSI"},
    {Opcode::SET_ISSI, "SET_ISSI"},
    {Opcode::SET_DRIVER_VERSION, "SET_DRIVER_VERSION"},
    {Opcode::CREATE_MKEY, "CREATE_MKEY"},
    {Opcode::QUERY_MKEY, "QUERY_MKEY"},
    {Opcode::DESTROY_MKEY, "DESTROY_MKEY"},
    {Opcode::QUERY_SPECIAL_CONTEXTS, "QUERY_SPECIAL_CONTEXTS"},
    {Opcode::CREATE_EQ, "CREATE_EQ"},
    {Opcode::DESTROY_EQ, "DESTROY_EQ"},
    {Opcode::QUERY_EQ, "QUERY_EQ"},
    {Opcode::GEN_EQE, "GEN_EQE"},
    {Opcode::CREATE_CQ, "CREATE_CQ"},
    {Opcode::DESTROY_CQ, "DESTROY_CQ"},
    {Opcode::QUERY_CQ, "QUERY_CQ"},
    {Opcode::MODIFY_CQ, "MODIFY_CQ"},
    {Opcode::CREATE_QP, "CREATE_QP"},
    {Opcode::DESTROY_QP, "DESTROY_QP"},
    {Opcode::RST2INIT_QP, "RST2INIT_QP"},
    {Opcode::INIT2RTR_QP, "INIT2RTR_QP"},
    {Opcode::RTR2RTS_QP, "RTR2RTS_QP"},
    {Opcode::RTS2RTS_QP, "RTS2RTS_QP"},
    {Opcode::SQERR2RTS_QP, "SQERR2RTS_QP"},
    {Opcode::TO_ERR_QP, "2ERR_QP"},
    {Opcode::TO_RST_QP, "2RST_QP"},
    {Opcode::QUERY_QP, "QUERY_QP"},
    {Opcode::SQD_RTS_QP, "SQD_RTS_QP"},
    {Opcode::MAD_IFC, "MAD_IFC"},
    {Opcode::INIT2INIT_QP, "INIT2INIT_QP"},
    {Opcode::CREATE_SRQ, "CREATE_SRQ"},
    {Opcode::DESTROY_SRQ, "DESTROY_SRQ"},
    {Opcode::QUERY_SRQ, "QUERY_SRQ"},
    {Opcode::ARM_RQ, "ARM_RQ"},
    {Opcode::QUERY_VPORT_STATE, "QUERY_VPORT_STATE"},
    {Opcode::MODIFY_VPORT_STATE, "MODIFY_VPORT_STATE"},
    {Opcode::QUERY_NIC_VPORT_CONTEXT, "QUERY_NIC_VPORT_CONTEXT"},
    {Opcode::MODIFY_NIC_VPORT_CONTEXT, "MODIFY_NIC_VPORT_CONTEXT"},
    {Opcode::QUERY_ROCE_ADDRESS, "QUERY_ROCE_ADDRESS"},
    {Opcode::SET_ROCE_ADDRESS, "SET_ROCE_ADDRESS"},
    {Opcode::QUERY_HCA_VPORT_CONTEXT, "QUERY_HCA_VPORT_CONTEXT"},
    {Opcode::MODIFY_HCA_VPORT_CONTEXT, "MODIFY_HCA_VPORT_CONTEXT"},
    {Opcode::QUERY_HCA_VPORT_GID, "QUERY_HCA_VPORT_GID"},
    {Opcode::QUERY_HCA_VPORT_PKEY, "QUERY_HCA_VPORT_PKEY"},
    {Opcode::QUERY_VPORT_COUNTER, "QUERY_VPORT_COUNTER"},
    {Opcode::ALLOC_Q_COUNTER, "ALLOC_Q_COUNTER"},
    {Opcode::DEALLOC_Q_COUNTER, "DEALLOC_Q_COUNTER"},
    {Opcode::QUERY_Q_COUNTER, "QUERY_Q_COUNTER"},
    {Opcode::ALLOC_PD, "ALLOC_PD"},
    {Opcode::DEALLOC_PD, "DEALLOC_PD"},
    {Opcode::ALLOC_UAR, "ALLOC_UAR"},
    {Opcode::DEALLOC_UAR, "DEALLOC_UAR"},
    {Opcode::CONFIG_INT_MODERATION, "CONFIG_INT_MODERATION"},
    {Opcode::ACCESS_REG, "ACCESS_REG"},
    {Opcode::ATTACH_TO_MCG, "ATTACH_TO_MCG"},
    {Opcode::DETACH_FROM_MCG, "DETACH_FROM_MCG"},
    {Opcode::NOP, "NOP"},
    {Opcode::ALLOC_XRCD, "ALLOC_XRCD"},
    {Opcode::DEALLOC_XRCD, "DEALLOC_XRCD"},
    {Opcode::ALLOC_TRANSPORT_DOMAIN, "ALLOC_TRANSPORT_DOMAIN"},
    {Opcode::DEALLOC_TRANSPORT_DOMAIN, "DEALLOC_TRANSPORT_DOMAIN"},
    {Opcode::CREATE_UMEM, "CREATE_UMEM"},
    {Opcode::DESTROY_UMEM, "DESTROY_UMEM"},
};

// The kernel name of a raw opcode ("CREATE_CQ"), or "UNKNOWN".
constexpr std::string_view opcode_name(uint16_t op) {
  for (const OpcodeName& e : kOpcodeNames)
    if (to_u16(e.op) == op) return e.name;
  return "UNKNOWN";
}
constexpr std::string_view opcode_name(Opcode op) { return opcode_name(to_u16(op)); }

// Command return status: mbox_out.status, byte 0 of every command output
// (device.h MLX5_CMD_STAT_*).
enum class CmdStatus : uint8_t {
  OK = 0x0,
  INT_ERR = 0x1,            // internal error
  BAD_OP_ERR = 0x2,         // bad opcode
  BAD_PARAM_ERR = 0x3,      // bad parameter
  BAD_SYS_STATE_ERR = 0x4,  // bad system state
  BAD_RES_ERR = 0x5,        // bad resource
  RES_BUSY = 0x6,           // resource busy
  LIM_ERR = 0x8,            // exceeds limits
  BAD_RES_STATE_ERR = 0x9,  // bad resource state
  IX_ERR = 0xA,             // bad index
  NO_RES_ERR = 0xF,         // no resources
  BAD_QP_STATE_ERR = 0x10,
  BAD_PKT_ERR = 0x30,
  BAD_SIZE_OUTS_CQES_ERR = 0x40,  // bad size: too many outstanding CQEs
  BAD_INP_LEN_ERR = 0x50,         // bad input length
  BAD_OUTP_LEN_ERR = 0x51,        // bad output length
};

// The kernel name of a command status byte ("BAD_PARAM_ERR"), or "UNKNOWN".
constexpr std::string_view cmd_status_name(uint8_t s) {
  switch (static_cast<CmdStatus>(s)) {
    case CmdStatus::OK: return "OK";
    case CmdStatus::INT_ERR: return "INT_ERR";
    case CmdStatus::BAD_OP_ERR: return "BAD_OP_ERR";
    case CmdStatus::BAD_PARAM_ERR: return "BAD_PARAM_ERR";
    case CmdStatus::BAD_SYS_STATE_ERR: return "BAD_SYS_STATE_ERR";
    case CmdStatus::BAD_RES_ERR: return "BAD_RES_ERR";
    case CmdStatus::RES_BUSY: return "RES_BUSY";
    case CmdStatus::LIM_ERR: return "LIM_ERR";
    case CmdStatus::BAD_RES_STATE_ERR: return "BAD_RES_STATE_ERR";
    case CmdStatus::IX_ERR: return "IX_ERR";
    case CmdStatus::NO_RES_ERR: return "NO_RES_ERR";
    case CmdStatus::BAD_QP_STATE_ERR: return "BAD_QP_STATE_ERR";
    case CmdStatus::BAD_PKT_ERR: return "BAD_PKT_ERR";
    case CmdStatus::BAD_SIZE_OUTS_CQES_ERR: return "BAD_SIZE_OUTS_CQES_ERR";
    case CmdStatus::BAD_INP_LEN_ERR: return "BAD_INP_LEN_ERR";
    case CmdStatus::BAD_OUTP_LEN_ERR: return "BAD_OUTP_LEN_ERR";
  }
  return "UNKNOWN";
}

// Command delivery status: bits 7:1 of the queue entry's status_own byte (the
// value after >> 1), reported by the command transport before the command
// runs (cmd.c MLX5_CMD_DELIVERY_STAT_*).
enum class DeliveryStatus : uint8_t {
  OK = 0x0,
  SIGNAT_ERR = 0x1,           // bad signature
  TOK_ERR = 0x2,              // bad token
  BAD_BLK_NUM_ERR = 0x3,      // bad mailbox block number
  OUT_PTR_ALIGN_ERR = 0x4,    // output mailbox pointer misaligned
  IN_PTR_ALIGN_ERR = 0x5,     // input mailbox pointer misaligned
  FW_ERR = 0x6,               // firmware internal error
  IN_LENGTH_ERR = 0x7,        // bad input length
  OUT_LENGTH_ERR = 0x8,       // bad output length
  RES_FLD_NOT_CLR_ERR = 0x9,  // reserved field not zero
  CMD_DESCR_ERR = 0x10,       // bad command type (queue entry descriptor)
};

constexpr std::string_view delivery_status_name(uint8_t s) {
  switch (static_cast<DeliveryStatus>(s)) {
    case DeliveryStatus::OK: return "OK";
    case DeliveryStatus::SIGNAT_ERR: return "SIGNAT_ERR";
    case DeliveryStatus::TOK_ERR: return "TOK_ERR";
    case DeliveryStatus::BAD_BLK_NUM_ERR: return "BAD_BLK_NUM_ERR";
    case DeliveryStatus::OUT_PTR_ALIGN_ERR: return "OUT_PTR_ALIGN_ERR";
    case DeliveryStatus::IN_PTR_ALIGN_ERR: return "IN_PTR_ALIGN_ERR";
    case DeliveryStatus::FW_ERR: return "FW_ERR";
    case DeliveryStatus::IN_LENGTH_ERR: return "IN_LENGTH_ERR";
    case DeliveryStatus::OUT_LENGTH_ERR: return "OUT_LENGTH_ERR";
    case DeliveryStatus::RES_FLD_NOT_CLR_ERR: return "RES_FLD_NOT_CLR_ERR";
    case DeliveryStatus::CMD_DESCR_ERR: return "CMD_DESCR_ERR";
  }
  return "UNKNOWN";
}

// QUERY_PAGES op_mod: which page pool firmware is asked about
// (mlx5_ifc.h MLX5_QUERY_PAGES_IN_OP_MOD_*).
enum class QueryPagesOpMod : uint16_t {
  BOOT_PAGES = 0x1,     // before INIT_HCA (after SET_ISSI)
  INIT_PAGES = 0x2,     // after SET_HCA_CAP, before INIT_HCA
  REGULAR_PAGES = 0x3,  // after INIT_HCA (page-request events)
};

// MANAGE_PAGES op_mod (mlx5_ifc.h MLX5_MANAGE_PAGES_IN_OP_MOD_*).
enum class ManagePagesOpMod : uint16_t {
  ALLOCATION_FAIL = 0x0,     // driver cannot give the requested pages
  ALLOCATION_SUCCESS = 0x1,  // driver gives pages (pas[] in the input)
  HCA_RETURN_PAGES = 0x2,    // driver takes pages back (pas[] in the output)
};

// Capability types: QUERY_HCA_CAP / SET_HCA_CAP op_mod bits 15:1
// (device.h enum mlx5_cap_type; mlx5_ifc.h MLX5_SET_HCA_CAP_OP_MOD_*).
enum class CapType : uint16_t {
  GENERAL = 0x0,  // cmd_hca_cap
  ETHERNET_OFFLOADS = 0x1,
  ODP = 0x2,
  ATOMIC = 0x3,  // atomic_caps
  ROCE = 0x4,    // roce_cap
  GENERAL_2 = 0x20,
};

// Capability mode: QUERY_HCA_CAP op_mod bit 0 (device.h enum mlx5_cap_mode).
enum class CapMode : uint16_t {
  MAX = 0,  // HCA_CAP_OPMOD_GET_MAX: what the device supports
  CUR = 1,  // HCA_CAP_OPMOD_GET_CUR: what is currently set
};

// op_mod of QUERY_HCA_CAP: cap_type << 1 | mode. SET_HCA_CAP takes
// cap_type << 1 (mode 0).
constexpr uint16_t hca_cap_op_mod(CapType t, CapMode m) {
  return static_cast<uint16_t>(static_cast<uint16_t>(t) << 1 | static_cast<uint16_t>(m));
}
constexpr uint16_t set_hca_cap_op_mod(CapType t) { return hca_cap_op_mod(t, CapMode::MAX); }

// ACCESS_REG register ids (access_register_in.register_id; driver.h MLX5_REG_*).
enum class RegId : uint16_t {
  PCAP = 0x5001,
  PMTU = 0x5003,
  PTYS = 0x5004,
  PAOS = 0x5006,
  PPCNT = 0x5008,
  PPLM = 0x5023,
  PDDR = 0x5031,
  NODE_DESC = 0x6001,
  HOST_ENDIANNESS = 0x7004,
  MCIA = 0x9014,
};

// ACCESS_REG op_mod (mlx5_ifc.h MLX5_ACCESS_REGISTER_IN_OP_MOD_*).
enum class AccessRegOpMod : uint16_t {
  WRITE = 0x0,
  READ = 0x1,
};

// TEARDOWN_HCA profile (mlx5_ifc.h MLX5_TEARDOWN_HCA_IN_PROFILE_*).
enum class TeardownProfile : uint16_t {
  GRACEFUL_CLOSE = 0x0,
  FORCE_CLOSE = 0x1,
  PREPARE_FAST_TEARDOWN = 0x2,
};

}  // namespace kbv::prm
