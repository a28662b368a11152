// SPDX-License-Identifier: BSD-3-Clause
//
// The initialization segment: the first 8 KiB of BAR0 (firmware revision,
// command queue address and geometry, command doorbell, initializing flag,
// health buffer, free-running timer, health counter).
//
// Sources:
//   * kernel include/linux/mlx5/device.h, struct mlx5_init_seg and struct
//     health_buffer: the dword/byte layout (byte offset * 8 = bit offset);
//   * kernel include/linux/mlx5/mlx5_ifc.h, struct mlx5_ifc_initial_seg_bits
//     and struct mlx5_ifc_health_buffer_bits: the sub-dword fields, plus the
//     enums MLX5_INITIAL_SEG_NIC_INTERFACE_* and _HEALTH_SYNDROME_*;
//   * drivers/net/ethernet/mellanox/mlx5/core/cmd.c (CMD_IF_REV 5) and
//     health.c (nic_interface is read as (cmdq_addr_l_sz >> 8) & 7);
//   * docs/PRM.md "Initialization segment" (offsets agree with the
//     above; each is pinned below).
//
// Every register is a big-endian dword; the driver reads and writes it with
// 32-bit MMIO (the k*Off constants are the byte offsets for that), and the
// model keeps BAR0 as memory that these field tables describe.
//
// Threading: layouts and constants only.
#pragma once

#include <cstdint>
#include <string_view>

#include "hca/prm/field.hpp"

namespace kbv::prm {

// device.h struct health_buffer; mlx5_ifc.h mlx5_ifc_health_buffer_bits
// (0x200 bits = 64 B). At init_seg byte 0x200.
struct health_buffer {
  static constexpr uint32_t kBits = 0x200;
  using F = Field<health_buffer>;
  static constexpr Array<health_buffer> assert_var{0x0, 32, 5};  // device.h assert_var[5]
  static constexpr F assert_existptr{0x100, 32};                 // device.h assert_exit_ptr
  static constexpr F assert_callra{0x120, 32};
  static constexpr F time{0x160, 32};
  static constexpr F fw_version{0x180, 32};  // device.h fw_ver
  static constexpr F hw_id{0x1a0, 32};
  static constexpr F rfr{0x1c0, 1};  // "reset firmware required": bit 31 of byte 0x38
  static constexpr F valid{0x1c4, 1};
  static constexpr F severity{0x1c5, 3};
  static constexpr F irisc_index{0x1e0, 8};
  static constexpr F synd{0x1e8, 8};
  static constexpr F ext_synd{0x1f0, 16};
};
static_assert(health_buffer::kBits / 8 == 64);
static_assert(health_buffer::fw_version.off / 8 == 0x30);  // docs/PRM.md: 0x230 - 0x200
static_assert(health_buffer::hw_id.off / 8 == 0x34);
static_assert(health_buffer::rfr.off / 8 == 0x38);
static_assert(health_buffer::irisc_index.off / 8 == 0x3c);
static_assert(health_buffer::synd.off / 8 == 0x3d);
static_assert(health_buffer::ext_synd.off / 8 == 0x3e);

// device.h struct mlx5_init_seg (0x2010 B), with the sub-dword fields of
// mlx5_ifc.h mlx5_ifc_initial_seg_bits.
struct init_seg {
  static constexpr uint32_t kBits = 0x2010 * 8;
  using F = Field<init_seg>;

  // 0x000 fw_rev: minor in bits 31:16, major in 15:0.
  static constexpr F fw_rev{0x0, 32};
  static constexpr F fw_rev_minor{0x0, 16};
  static constexpr F fw_rev_major{0x10, 16};
  // 0x004 cmdif_rev_fw_sub: command interface revision 31:16, fw sub-minor 15:0.
  static constexpr F cmdif_rev_fw_sub{0x20, 32};
  static constexpr F cmd_interface_rev{0x20, 16};
  static constexpr F fw_rev_subminor{0x30, 16};
  // 0x010 cmdq_addr_h: command queue IOVA bits 63:32 (cmdq_phy_addr_63_32).
  static constexpr F cmdq_addr_h{0x80, 32};
  // 0x014 cmdq_addr_l_sz. Written: IOVA bits 31:12 (4 KiB aligned) | nic_interface
  // << 8. Read: nic_interface 10:8, log_cmdq_size 7:4, log_cmdq_stride 3:0.
  static constexpr F cmdq_addr_l_sz{0xa0, 32};
  static constexpr F cmdq_phy_addr_31_12{0xa0, 20};
  // mlx5_ifc.h declares nic_interface as 2 bits (9:8) after 2 reserved bits,
  // but its own MLX5_INITIAL_SEG_NIC_INTERFACE_SW_RESET is 7 and the kernel's
  // health.c reads and writes it as 3 bits ((x >> 8) & 7); docs/PRM.md says 10:8.
  // We follow the driver: 3 bits, 10:8.
  static constexpr F nic_interface{0xb5, 3};
  static constexpr F log_cmdq_size{0xb8, 4};
  static constexpr F log_cmdq_stride{0xbc, 4};
  // 0x018 cmd_dbell: write 1 << slot to hand slots to firmware
  // (mlx5_ifc.h command_doorbell_vector).
  static constexpr F cmd_dbell{0xc0, 32};
  // 0x1fc initializing: bit 31 set while firmware initializes.
  static constexpr F initializing{0xfe0, 1};
  static constexpr F fw_reset_supported{0xfe1, 1};  // device.h MLX5_FW_RESET_SUPPORTED_OFFSET 30
  static constexpr F nic_interface_supported{0xfe5, 3};
  static constexpr F embedded_cpu{0xfe8, 1};
  // 0x200 health buffer.
  static constexpr Sub<init_seg, health_buffer> health{0x1000};
  static constexpr F no_dram_nic_offset{0x1200, 32};
  // 0x1000 internal_timer_h/l: free-running clock.
  static constexpr F internal_timer_h{0x8000, 32};
  static constexpr F internal_timer_l{0x8020, 32};
  static constexpr F clear_int{0x807f, 1};  // byte 0x100c bit 0
  // 0x1010: health_syndrome 31:24, health_counter 23:0 (must keep moving).
  static constexpr F health_syndrome{0x8080, 8};
  static constexpr F health_counter{0x8088, 24};
  static constexpr F real_time_h{0x8200, 32};
  static constexpr F real_time_l{0x8220, 32};
  static constexpr F ieee1588_clk{0x10000, 64};
  static constexpr F ieee1588_clk_type{0x10040, 32};
  static constexpr F clr_intx{0x10060, 32};

  // Byte offsets of the dword registers, for 32-bit MMIO.
  static constexpr uint32_t kFwRevOff = 0x000;
  static constexpr uint32_t kCmdifRevFwSubOff = 0x004;
  static constexpr uint32_t kCmdqAddrHOff = 0x010;
  static constexpr uint32_t kCmdqAddrLSzOff = 0x014;
  static constexpr uint32_t kCmdDbellOff = 0x018;
  static constexpr uint32_t kInitializingOff = 0x1fc;
  static constexpr uint32_t kHealthOff = 0x200;
  static constexpr uint32_t kHealthFwVerOff = 0x230;
  static constexpr uint32_t kHealthHwIdOff = 0x234;
  static constexpr uint32_t kHealthRfrOff = 0x238;
  static constexpr uint32_t kHealthIriscIndexOff = 0x23c;  // u8
  static constexpr uint32_t kHealthSyndOff = 0x23d;        // u8
  static constexpr uint32_t kHealthExtSyndOff = 0x23e;     // be16
  static constexpr uint32_t kInternalTimerHOff = 0x1000;
  static constexpr uint32_t kInternalTimerLOff = 0x1004;
  static constexpr uint32_t kHealthCounterOff = 0x1010;
  static constexpr uint32_t kRealTimeHOff = 0x1040;
  static constexpr uint32_t kRealTimeLOff = 0x1044;
  static constexpr uint32_t kIeee1588ClkOff = 0x2000;
  static constexpr uint32_t kClrIntxOff = 0x200c;
};
static_assert(init_seg::kBits / 8 == 0x2010);
static_assert(init_seg::fw_rev.off / 8 == init_seg::kFwRevOff);
static_assert(init_seg::cmdif_rev_fw_sub.off / 8 == init_seg::kCmdifRevFwSubOff);
static_assert(init_seg::cmdq_addr_h.off / 8 == init_seg::kCmdqAddrHOff);
static_assert(init_seg::cmdq_addr_l_sz.off / 8 == init_seg::kCmdqAddrLSzOff);
static_assert(init_seg::log_cmdq_stride.end() == init_seg::cmdq_addr_l_sz.end());
static_assert(init_seg::cmd_dbell.off / 8 == init_seg::kCmdDbellOff);
static_assert(init_seg::initializing.off / 8 == init_seg::kInitializingOff);
static_assert(init_seg::health.off / 8 == init_seg::kHealthOff);
static_assert(init_seg::health.end() / 8 == 0x240);
static_assert(init_seg::kHealthOff + health_buffer::fw_version.off / 8 ==
              init_seg::kHealthFwVerOff);
static_assert(init_seg::kHealthOff + health_buffer::hw_id.off / 8 == init_seg::kHealthHwIdOff);
static_assert(init_seg::kHealthOff + health_buffer::rfr.off / 8 == init_seg::kHealthRfrOff);
static_assert(init_seg::kHealthOff + health_buffer::irisc_index.off / 8 ==
              init_seg::kHealthIriscIndexOff);
static_assert(init_seg::kHealthOff + health_buffer::synd.off / 8 == init_seg::kHealthSyndOff);
static_assert(init_seg::kHealthOff + health_buffer::ext_synd.off / 8 ==
              init_seg::kHealthExtSyndOff);
static_assert(init_seg::internal_timer_h.off / 8 == init_seg::kInternalTimerHOff);
static_assert(init_seg::internal_timer_l.off / 8 == init_seg::kInternalTimerLOff);
static_assert(init_seg::health_syndrome.off / 8 == init_seg::kHealthCounterOff);
static_assert(init_seg::health_counter.end() / 8 == init_seg::kHealthCounterOff + 4);
static_assert(init_seg::real_time_h.off / 8 == init_seg::kRealTimeHOff);
static_assert(init_seg::real_time_l.off / 8 == init_seg::kRealTimeLOff);
static_assert(init_seg::ieee1588_clk.off / 8 == init_seg::kIeee1588ClkOff);
static_assert(init_seg::clr_intx.off / 8 == init_seg::kClrIntxOff);

// Command interface revision the driver speaks (cmd.c CMD_IF_REV; docs/PRM.md: "must
// be 5"): init_seg.cmd_interface_rev.
inline constexpr uint32_t kCmdifRev = 5;
// Raw-dword forms of the flags above.
inline constexpr uint32_t kInitializingBit = 1u << 31;      // of the dword at 0x1fc
inline constexpr uint32_t kFwResetSupportedBit = 1u << 30;  // of the dword at 0x1fc
inline constexpr uint32_t kHealthRfrBit = 1u << 31;         // of the dword at 0x238
inline constexpr uint32_t kNicInterfaceShift = 8;           // device.h MLX5_NIC_IFC_OFFSET
inline constexpr uint32_t kNicInterfaceMask = 0x7;
inline constexpr uint32_t kHealthCounterMask = 0xFFFFFF;
// A function that fell off the bus reads all-ones (health.c sensor_pci_not_working).
inline constexpr uint32_t kDeviceGone = 0xFFFFFFFF;

// Command queue geometry limits (docs/PRM.md: 1 << log_size <= 32 and
// log_size + log_stride <= 12, i.e. the queue fits one 4 KiB page).
inline constexpr uint32_t kMaxLogCmdqSize = 5;
inline constexpr uint32_t kCmdqPageShift = 12;
constexpr bool cmdq_geometry_valid(uint32_t log_size, uint32_t log_stride) {
  return log_size <= kMaxLogCmdqSize && log_size + log_stride <= kCmdqPageShift;
}

// init_seg.nic_interface (mlx5_ifc.h MLX5_INITIAL_SEG_NIC_INTERFACE_*).
enum class NicInterface : uint8_t {
  FULL_DRIVER = 0x0,
  DISABLED = 0x1,
  NO_DRAM_NIC = 0x2,
  SW_RESET = 0x7,  // written by the driver to request a firmware reset
};

// health_buffer.synd (mlx5_ifc.h MLX5_INITIAL_SEG_HEALTH_SYNDROME_*; the same
// values as health.c MLX5_HEALTH_SYNDR_* and docs/PRM.md). 0 = healthy.
enum class HealthSyndrome : uint8_t {
  FW_INTERNAL_ERR = 0x1,
  DEAD_IRISC = 0x7,    // iRISC not responding
  HW_FATAL_ERR = 0x8,  // unrecoverable hardware error
  FW_CRC_ERR = 0x9,
  ICM_FETCH_PCI_ERR = 0xa,
  ICM_PAGE_ERR = 0xb,  // health.c / docs/PRM.md: "HW fatal error"
  ASYNCHRONOUS_EQ_BUF_OVERRUN = 0xc,
  EQ_IN_ERR = 0xd,
  EQ_INV = 0xe,  // invalid EQ referenced
  FFSER_ERR = 0xf,
  HIGH_TEMP_ERR = 0x10,
};

constexpr std::string_view health_syndrome_name(uint8_t s) {
  switch (static_cast<HealthSyndrome>(s)) {
    case HealthSyndrome::FW_INTERNAL_ERR: return "firmware internal error";
    case HealthSyndrome::DEAD_IRISC: return "iRISC not responding";
    case HealthSyndrome::HW_FATAL_ERR: return "unrecoverable hardware error";
    case HealthSyndrome::FW_CRC_ERR: return "firmware CRC error";
    case HealthSyndrome::ICM_FETCH_PCI_ERR: return "ICM fetch PCI error";
    case HealthSyndrome::ICM_PAGE_ERR: return "HW fatal error (ICM page)";
    case HealthSyndrome::ASYNCHRONOUS_EQ_BUF_OVERRUN: return "async EQ buffer overrun";
    case HealthSyndrome::EQ_IN_ERR: return "EQ error";
    case HealthSyndrome::EQ_INV: return "invalid EQ referenced";
    case HealthSyndrome::FFSER_ERR: return "FFSER error";
    case HealthSyndrome::HIGH_TEMP_ERR: return "high temperature";
  }
  return s == 0 ? "no error" : "unrecognized error";
}

}  // namespace kbv::prm
