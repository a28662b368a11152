// SPDX-License-Identifier: BSD-3-Clause
// Opcode, status and op_mod values against the kernel's mlx5 headers
// (mlx5_ifc.h MLX5_CMD_OP_*, device.h MLX5_CMD_STAT_*, cmd.c
// MLX5_CMD_DELIVERY_STAT_*), and the name tables.
#include "hca/prm/opcodes.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace kbv::prm {
namespace {

// Values as listed in docs/PRM.md "Opcodes" / mlx5_ifc.h.
TEST(PrmOpcodes, ValuesMatchMlx5Ifc) {
  EXPECT_EQ(to_u16(Opcode::QUERY_HCA_CAP), 0x100);
  EXPECT_EQ(to_u16(Opcode::ENABLE_HCA), 0x104);
  EXPECT_EQ(to_u16(Opcode::QUERY_ISSI), 0x10A);
  EXPECT_EQ(to_u16(Opcode::SET_DRIVER_VERSION), 0x10D);
  EXPECT_EQ(to_u16(Opcode::GEN_EQE), 0x304);
  EXPECT_EQ(to_u16(Opcode::TO_ERR_QP), 0x507);
  EXPECT_EQ(to_u16(Opcode::TO_RST_QP), 0x50A);
  EXPECT_EQ(to_u16(Opcode::SQD_RTS_QP), 0x50C);
  EXPECT_EQ(to_u16(Opcode::INIT2INIT_QP), 0x50E);
  EXPECT_EQ(to_u16(Opcode::ARM_RQ), 0x703);
  EXPECT_EQ(to_u16(Opcode::QUERY_HCA_VPORT_PKEY), 0x765);
  EXPECT_EQ(to_u16(Opcode::ACCESS_REG), 0x805);
  EXPECT_EQ(to_u16(Opcode::NOP), 0x80D);
  EXPECT_EQ(to_u16(Opcode::DEALLOC_TRANSPORT_DOMAIN), 0x817);
}

TEST(PrmOpcodes, Names) {
  EXPECT_EQ(opcode_name(0x400), "CREATE_CQ");
  EXPECT_EQ(opcode_name(Opcode::MANAGE_PAGES), "MANAGE_PAGES");
  EXPECT_EQ(opcode_name(0x507), "2ERR_QP");
  EXPECT_EQ(opcode_name(0x50A), "2RST_QP");
  EXPECT_EQ(opcode_name(0x0000), "UNKNOWN");
  EXPECT_EQ(opcode_name(0x106), "UNKNOWN");  // a gap in the 0x1xx range
  EXPECT_EQ(opcode_name(0xFFFF), "UNKNOWN");
  static_assert(opcode_name(0x301) == "CREATE_EQ");  // usable at compile time
}

// The name table has no duplicate opcodes or names, and each name (bar the two
// renamed transitions) is the enumerator's own spelling, so it can be grepped.
TEST(PrmOpcodes, NameTableConsistent) {
  std::set<uint16_t> ops;
  std::set<std::string_view> names;
  for (const OpcodeName& e : kOpcodeNames) {
    EXPECT_TRUE(ops.insert(to_u16(e.op)).second) << "duplicate opcode " << e.name;
    EXPECT_TRUE(names.insert(e.name).second) << "duplicate name " << e.name;
    EXPECT_EQ(opcode_name(to_u16(e.op)), e.name);
  }
  EXPECT_GE(ops.size(), 60u);
}

TEST(PrmOpcodes, CmdStatus) {
  EXPECT_EQ(static_cast<uint8_t>(CmdStatus::BAD_PARAM_ERR), 0x3);
  EXPECT_EQ(static_cast<uint8_t>(CmdStatus::LIM_ERR), 0x8);
  EXPECT_EQ(static_cast<uint8_t>(CmdStatus::NO_RES_ERR), 0xF);
  EXPECT_EQ(static_cast<uint8_t>(CmdStatus::BAD_QP_STATE_ERR), 0x10);
  EXPECT_EQ(static_cast<uint8_t>(CmdStatus::BAD_SIZE_OUTS_CQES_ERR), 0x40);
  EXPECT_EQ(static_cast<uint8_t>(CmdStatus::BAD_OUTP_LEN_ERR), 0x51);
  EXPECT_EQ(cmd_status_name(0x0), "OK");
  EXPECT_EQ(cmd_status_name(0x6), "RES_BUSY");
  EXPECT_EQ(cmd_status_name(0x50), "BAD_INP_LEN_ERR");
  EXPECT_EQ(cmd_status_name(0x7), "UNKNOWN");  // 0x7 is not a status
}

TEST(PrmOpcodes, DeliveryStatus) {
  EXPECT_EQ(static_cast<uint8_t>(DeliveryStatus::SIGNAT_ERR), 0x1);
  EXPECT_EQ(static_cast<uint8_t>(DeliveryStatus::IN_PTR_ALIGN_ERR), 0x5);
  EXPECT_EQ(static_cast<uint8_t>(DeliveryStatus::RES_FLD_NOT_CLR_ERR), 0x9);
  EXPECT_EQ(static_cast<uint8_t>(DeliveryStatus::CMD_DESCR_ERR), 0x10);
  EXPECT_EQ(delivery_status_name(0x2), "TOK_ERR");
  EXPECT_EQ(delivery_status_name(0x10), "CMD_DESCR_ERR");
  EXPECT_EQ(delivery_status_name(0xA), "UNKNOWN");
}

// docs/PRM.md "Bring-up order": QUERY_PAGES op_mod 1 boot / 2 init / 3 regular,
// MANAGE_PAGES 0 cannot give / 1 give / 2 take, QUERY_HCA_CAP op_mod =
// cap_type << 1 | current, RoCE caps = type 4, HOST_ENDIANNESS = 0x7004.
TEST(PrmOpcodes, OpMods) {
  EXPECT_EQ(static_cast<uint16_t>(QueryPagesOpMod::BOOT_PAGES), 1);
  EXPECT_EQ(static_cast<uint16_t>(QueryPagesOpMod::INIT_PAGES), 2);
  EXPECT_EQ(static_cast<uint16_t>(QueryPagesOpMod::REGULAR_PAGES), 3);
  EXPECT_EQ(static_cast<uint16_t>(ManagePagesOpMod::ALLOCATION_FAIL), 0);
  EXPECT_EQ(static_cast<uint16_t>(ManagePagesOpMod::ALLOCATION_SUCCESS), 1);
  EXPECT_EQ(static_cast<uint16_t>(ManagePagesOpMod::HCA_RETURN_PAGES), 2);
  EXPECT_EQ(hca_cap_op_mod(CapType::GENERAL, CapMode::MAX), 0x0);
  EXPECT_EQ(hca_cap_op_mod(CapType::GENERAL, CapMode::CUR), 0x1);
  EXPECT_EQ(hca_cap_op_mod(CapType::ROCE, CapMode::MAX), 0x8);
  EXPECT_EQ(hca_cap_op_mod(CapType::ROCE, CapMode::CUR), 0x9);
  EXPECT_EQ(hca_cap_op_mod(CapType::ATOMIC, CapMode::CUR), 0x7);
  EXPECT_EQ(set_hca_cap_op_mod(CapType::GENERAL), 0x0);
  EXPECT_EQ(set_hca_cap_op_mod(CapType::ROCE), 0x8);
  EXPECT_EQ(static_cast<uint16_t>(RegId::HOST_ENDIANNESS), 0x7004);
  EXPECT_EQ(static_cast<uint16_t>(AccessRegOpMod::WRITE), 0);
  EXPECT_EQ(static_cast<uint16_t>(AccessRegOpMod::READ), 1);
}

}  // namespace
}  // namespace kbv::prm
