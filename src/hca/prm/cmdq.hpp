// SPDX-License-Identifier: BSD-3-Clause
//
// The command queue: its 64-byte entries (one per slot, at slot <<
// log_cmdq_stride in the 4 KiB queue page) and the 576-byte mailbox blocks
// that carry input/output beyond the 16 inline bytes.
//
// Sources:
//   * kernel include/linux/mlx5/device.h: struct mlx5_cmd_layout and struct
//     mlx5_cmd_prot_block (byte layouts; byte offset * 8 = bit offset),
//     MLX5_MAX_COMMANDS, MLX5_CMD_DATA_BLOCK_SIZE, MLX5_PCI_CMD_XPORT;
//   * kernel include/linux/mlx5/mlx5_ifc.h: struct
//     mlx5_ifc_cmd_queue_entry_bits and struct mlx5_ifc_cmd_if_box_bits (the
//     same layouts in bits: status is 7 bits above the ownership bit; entry
//     mailbox pointers carry bits 63:9, a block's next pointer bits 63:10);
//   * include/linux/mlx5/driver.h CMD_OWNER_SW/HW;
//   * docs/PRM.md "Command queue entry" (offsets agree; pinned below).
//
// Threading: layouts and constants only. Ownership hand-off (write the entry,
// then status_own, barrier, doorbell) is the driver's business (src/hca/cmdq).
#pragma once

#include <cstdint>

#include "hca/prm/field.hpp"

namespace kbv::prm {

// device.h struct mlx5_cmd_layout; mlx5_ifc.h cmd_queue_entry_bits (64 B).
struct cmd_layout {
  static constexpr uint32_t kBits = 0x200;
  using F = Field<cmd_layout>;
  static constexpr F type{0x0, 8};                      // kCmdTypePcie (7)
  static constexpr F inlen{0x20, 32};                   // input length in bytes, inline 16 included
  static constexpr F in_ptr{0x40, 64};                  // IOVA of the first input mailbox block
  static constexpr Bytes<cmd_layout> in{0x80, 16 * 8};  // first 16 input bytes
  static constexpr Bytes<cmd_layout> out{0x100, 16 * 8};  // first 16 output bytes
  static constexpr F out_ptr{0x180, 64};                  // IOVA of the first output mailbox block
  static constexpr F outlen{0x1c0, 32};  // output length in bytes, inline 16 included
  static constexpr F token{0x1e0, 8};    // echoed in every mailbox block
  static constexpr F sig{0x1e8, 8};      // entry signature (cmdif_checksum only)
  static constexpr F status_own{0x1f8, 8};
  static constexpr F status{0x1f8, 7};     // delivery status (DeliveryStatus, opcodes.hpp)
  static constexpr F ownership{0x1ff, 1};  // kCmdOwnerHw while firmware owns the slot
};
static_assert(cmd_layout::kBits / 8 == 64);
static_assert(cmd_layout::inlen.off / 8 == 0x04);
static_assert(cmd_layout::in_ptr.off / 8 == 0x08);
static_assert(cmd_layout::in.byte_off() == 0x10 && cmd_layout::in.size() == 16);
static_assert(cmd_layout::out.byte_off() == 0x20 && cmd_layout::out.size() == 16);
static_assert(cmd_layout::out_ptr.off / 8 == 0x30);
static_assert(cmd_layout::outlen.off / 8 == 0x38);
static_assert(cmd_layout::token.off / 8 == 0x3c);
static_assert(cmd_layout::sig.off / 8 == 0x3d);
static_assert(cmd_layout::status_own.off / 8 == 0x3f);
static_assert(cmd_layout::ownership.end() == cmd_layout::kBits);

// device.h struct mlx5_cmd_prot_block; mlx5_ifc.h cmd_if_box_bits (576 B).
struct cmd_prot_block {
  static constexpr uint32_t kBits = 0x240 * 8;
  using F = Field<cmd_prot_block>;
  static constexpr Bytes<cmd_prot_block> data{0x0, 512 * 8};
  static constexpr F next{0x1180, 64};       // IOVA of the next block, 0 in the last
  static constexpr F block_num{0x11c0, 32};  // 0, 1, 2 ... along the chain
  static constexpr F token{0x11e8, 8};       // the entry's token
  static constexpr F ctrl_sig{0x11f0, 8};    // signature of the control part
  static constexpr F sig{0x11f8, 8};         // signature of the whole block
};
static_assert(cmd_prot_block::kBits / 8 == 576);
static_assert(cmd_prot_block::data.size() == 512);
static_assert(cmd_prot_block::next.off / 8 == 0x230);
static_assert(cmd_prot_block::block_num.off / 8 == 0x238);
static_assert(cmd_prot_block::token.off / 8 == 0x23d);
static_assert(cmd_prot_block::ctrl_sig.off / 8 == 0x23e);
static_assert(cmd_prot_block::sig.off / 8 == 0x23f);

inline constexpr uint32_t kCmdEntryBytes = cmd_layout::kBits / 8;           // 64
inline constexpr uint32_t kCmdInlineBytes = 16;                             // in[] / out[]
inline constexpr uint32_t kMailboxBlockBytes = cmd_prot_block::kBits / 8;   // 576
inline constexpr uint32_t kMailboxDataBytes = cmd_prot_block::data.size();  // 512
inline constexpr uint32_t kCmdTypePcie = 7;   // MLX5_PCI_CMD_XPORT: PCI command transport
inline constexpr uint32_t kMaxCommands = 32;  // MLX5_MAX_COMMANDS: slots at most
inline constexpr uint8_t kCmdOwnerSw = 0x0;   // driver.h CMD_OWNER_SW
inline constexpr uint8_t kCmdOwnerHw = 0x1;   // driver.h CMD_OWNER_HW: bit 0 of status_own
// Alignment of mailbox pointers: the queue entry keeps IOVA bits 63:9
// (input/output_mailbox_pointer_31_9), a block's next pointer bits 63:10
// (next_pointer_31_10). Allocating every block 1 KiB aligned satisfies both.
inline constexpr uint32_t kCmdEntryMailboxAlign = 512;
inline constexpr uint32_t kMailboxNextAlign = 1024;

// Delivery status carried in a status_own byte (bits 7:1).
constexpr uint8_t delivery_status_of(uint8_t status_own) {
  return static_cast<uint8_t>(status_own >> 1);
}
// Number of mailbox blocks for a message of len bytes (docs/PRM.md: bytes beyond
// the first 16 are carried in ceil((len - 16) / 512) chained blocks).
constexpr uint32_t mailbox_blocks(uint32_t len) {
  return len <= kCmdInlineBytes
             ? 0
             : (len - kCmdInlineBytes + kMailboxDataBytes - 1) / kMailboxDataBytes;
}

}  // namespace kbv::prm
