// SPDX-License-Identifier: BSD-3-Clause
//
// The firmware side of the command transport: reading one command queue entry
// and its mailbox chains through the IOMMU, validating them, gathering the
// input, and scattering the output back with the delivery status.
//
// Layouts: src/hca/prm/cmdq.hpp (device.h mlx5_cmd_layout and
// mlx5_cmd_prot_block; mlx5_ifc.h cmd_queue_entry_bits / cmd_if_box_bits).
// Checks, in order, each answered with a delivery status in status_own bits
// 7:1 (cmd.c MLX5_CMD_DELIVERY_STAT_*; prm::DeliveryStatus) and no execution:
//   * type != 7 (PCI command transport)                      -> CMD_DESCR_ERR
//   * entry signature, when cmdif_checksum is on             -> SIGNAT_ERR
//   * inlen < 8 (no room for opcode and op_mod) or > kMaxMsg  -> IN_LENGTH_ERR
//   * outlen < 8 (no room for status and syndrome) or > kMaxMsg -> OUT_LENGTH_ERR
//   * input/output mailbox pointer not 512-B aligned
//     (entry keeps bits 63:9), a next pointer not 1 KiB aligned
//     (block keeps bits 63:10)                               -> IN/OUT_PTR_ALIGN_ERR
//   * a block's block_num != its position (from 0)           -> BAD_BLK_NUM_ERR
//   * a block's token != the entry's token                   -> TOK_ERR
//   * a block's signatures, when cmdif_checksum is on
//     (ctrl_sig: XOR of bytes 0x200..0x23E is 0xFF; sig: XOR of the whole
//     576 B is 0xFF — the kernel's verify_block_sig)          -> SIGNAT_ERR
//   * a mailbox block not mapped in the IOMMU (DMA fault)    -> FW_ERR
// The model's choices where the PRM gives no rule: the length limits above,
// and FW_ERR for a mailbox DMA fault. A fault reading the entry itself cannot
// be reported in the entry: the slot stays owned by firmware (the driver times
// out, as on silicon), the fault is counted by the IOMMU and logged.
//
// Threading: functions of their arguments; called on the firmware thread.
#pragma once

#include "sim/bus/iommu.hpp"

#include <kbv/status.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace kbv::sim::fw {

// Largest input or output the model accepts (bytes): 16 MiB, above the
// largest message the kernel's command interface builds.
inline constexpr uint32_t kMaxMsg = 16u << 20;

// One command taken from a slot.
struct SlotCommand {
  unsigned slot = 0;
  uint64_t entry_iova = 0;
  uint8_t token = 0;
  uint32_t inlen = 0;
  uint32_t outlen = 0;
  bool owned = false;                // status_own ownership bit was set (firmware's)
  uint8_t delivery = 0;              // prm::DeliveryStatus; nonzero: not executed
  std::vector<std::byte> in;         // inlen bytes when delivery == 0
  std::vector<uint64_t> out_blocks;  // IOVAs of the output mailbox blocks
};

// Reads the entry at entry_iova and, when it is owned by firmware (cmd.owned;
// nothing else is done otherwise) and its transport is valid, the input
// chain (into cmd.in) and the output chain's block addresses. Returns
// KBV_ERR_IOMMU_FAULT only when the entry itself could not be read; every
// other problem is reported in cmd.delivery.
Status fetch_command(Iommu& iommu, uint64_t entry_iova, unsigned slot, bool checksum,
                     SlotCommand& cmd);

// Writes the output (out must be cmd.outlen bytes; ignored when cmd.delivery
// is nonzero) into the entry's inline out[] and the output blocks, then the
// status_own byte: delivery status << 1, ownership cleared (written last).
// With checksum on, each written block gets fresh ctrl_sig and sig.
// KBV_ERR_IOMMU_FAULT when a write faulted (the entry may stay owned).
Status post_completion(Iommu& iommu, const SlotCommand& cmd, std::span<const std::byte> out,
                       bool checksum);

// XOR of a byte range (the signature primitive, cmd.c xor8_buf).
uint8_t xor8(std::span<const std::byte> b);

}  // namespace kbv::sim::fw
