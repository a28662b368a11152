// SPDX-License-Identifier: BSD-3-Clause
#include "sim/fw/cmdq.hpp"

#include "common/log.hpp"
#include "hca/prm/cmdq.hpp"
#include "hca/prm/opcodes.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>

namespace kbv::sim::fw {

namespace {

using prm::cmd_layout;
using prm::cmd_prot_block;
using prm::DeliveryStatus;

constexpr const char* kLog = "sim.fw.cmdq";

// The kernel's verify_block_sig ranges: the control part is bytes
// 0x200..0x23E (reserved, next, block_num, token, ctrl_sig), the whole block
// bytes 0..0x23F.
constexpr std::size_t kCtrlBegin = prm::kMailboxDataBytes;             // 0x200
constexpr std::size_t kCtrlSigOff = cmd_prot_block::ctrl_sig.off / 8;  // 0x23E
constexpr std::size_t kSigOff = cmd_prot_block::sig.off / 8;           // 0x23F
constexpr std::size_t kEntrySigOff = cmd_layout::sig.off / 8;          // 0x3D
constexpr std::size_t kStatusOwnOff = cmd_layout::status_own.off / 8;  // 0x3F

uint8_t d(DeliveryStatus s) { return static_cast<uint8_t>(s); }

bool block_sigs_ok(std::span<const std::byte> blk) {
  return xor8(blk.subspan(kCtrlBegin, kCtrlSigOff + 1 - kCtrlBegin)) == 0xFF && xor8(blk) == 0xFF;
}

void set_block_sigs(std::span<std::byte> blk) {
  blk[kCtrlSigOff] =
      std::byte{static_cast<uint8_t>(~xor8(blk.subspan(kCtrlBegin, kCtrlSigOff - kCtrlBegin)))};
  blk[kSigOff] = std::byte{static_cast<uint8_t>(~xor8(blk.subspan(0, kSigOff)))};
}

// Walks a chain of `n` blocks from `first`, checking alignment, block numbers,
// tokens and (optionally) signatures. Copies the data of each block into
// `data` (when non-null) and records the block IOVAs in `iovas` (when
// non-null). Returns the delivery status.
uint8_t walk_chain(Iommu& iommu, uint64_t first, uint32_t n, uint8_t token, bool checksum,
                   bool input, std::vector<std::byte>* data, std::vector<uint64_t>* iovas) {
  const uint8_t align_err =
      input ? d(DeliveryStatus::IN_PTR_ALIGN_ERR) : d(DeliveryStatus::OUT_PTR_ALIGN_ERR);
  // The entry keeps pointer bits 63:9 (mlx5_ifc.h input/output_mailbox_pointer_31_9).
  if (first % prm::kCmdEntryMailboxAlign != 0) return align_err;
  std::array<std::byte, prm::kMailboxBlockBytes> blk{};
  uint64_t iova = first;
  for (uint32_t i = 0; i < n; ++i) {
    if (!iommu.dma_read(iova, blk)) {
      log::warn(kLog, "{} mailbox block {} at iova {:#x}: IOMMU fault", input ? "input" : "output",
                i, iova);
      return d(DeliveryStatus::FW_ERR);
    }
    prm::CRef<cmd_prot_block> b(blk.data());
    if (b.get(cmd_prot_block::block_num) != i) return d(DeliveryStatus::BAD_BLK_NUM_ERR);
    if (b.get(cmd_prot_block::token) != token) return d(DeliveryStatus::TOK_ERR);
    if (checksum && input && !block_sigs_ok(blk)) return d(DeliveryStatus::SIGNAT_ERR);
    if (data) {
      auto src = b.bytes(cmd_prot_block::data);
      data->insert(data->end(), src.begin(), src.end());
    }
    if (iovas) iovas->push_back(iova);
    if (i + 1 < n) {
      const uint64_t next = b.get(cmd_prot_block::next);
      // A block keeps next bits 63:10 (mlx5_ifc.h cmd_if_box next_pointer_31_10).
      if (next % prm::kMailboxNextAlign != 0) return align_err;
      iova = next;
    }
  }
  return 0;
}

}  // namespace

uint8_t xor8(std::span<const std::byte> b) {
  uint8_t x = 0;
  for (std::byte v : b) x ^= static_cast<uint8_t>(v);
  return x;
}

Status fetch_command(Iommu& iommu, uint64_t entry_iova, unsigned slot, bool checksum,
                     SlotCommand& cmd) {
  cmd = SlotCommand{};
  cmd.slot = slot;
  cmd.entry_iova = entry_iova;
  std::array<std::byte, prm::kCmdEntryBytes> ent{};
  if (Status s = iommu.dma_read(entry_iova, ent); !s) {
    log::error(kLog, "slot {}: queue entry at iova {:#x} not readable (IOMMU fault)", slot,
               entry_iova);
    return s;
  }
  prm::CRef<cmd_layout> e(ent.data());
  cmd.token = static_cast<uint8_t>(e.get(cmd_layout::token));
  cmd.inlen = static_cast<uint32_t>(e.get(cmd_layout::inlen));
  cmd.outlen = static_cast<uint32_t>(e.get(cmd_layout::outlen));
  cmd.owned = e.get(cmd_layout::ownership) == prm::kCmdOwnerHw;
  if (!cmd.owned) return Status::ok();

  if (e.get(cmd_layout::type) != prm::kCmdTypePcie) {
    cmd.delivery = d(DeliveryStatus::CMD_DESCR_ERR);
    return Status::ok();
  }
  // The driver computes the entry signature with ownership already set
  // (cmd.c set_signature after status_own = CMD_OWNER_HW): XOR of all 64 B is 0xFF.
  if (checksum && xor8(ent) != 0xFF) {
    cmd.delivery = d(DeliveryStatus::SIGNAT_ERR);
    return Status::ok();
  }
  if (cmd.inlen < 8 || cmd.inlen > kMaxMsg) {
    cmd.delivery = d(DeliveryStatus::IN_LENGTH_ERR);
    return Status::ok();
  }
  if (cmd.outlen < 8 || cmd.outlen > kMaxMsg) {
    cmd.delivery = d(DeliveryStatus::OUT_LENGTH_ERR);
    return Status::ok();
  }

  cmd.in.reserve(16 + prm::mailbox_blocks(cmd.inlen) * prm::kMailboxDataBytes);
  auto inl = e.bytes(cmd_layout::in);
  cmd.in.assign(inl.begin(), inl.end());
  if (uint32_t n = prm::mailbox_blocks(cmd.inlen); n > 0) {
    cmd.delivery = walk_chain(iommu, e.get(cmd_layout::in_ptr), n, cmd.token, checksum, true,
                              &cmd.in, nullptr);
    if (cmd.delivery != 0) return Status::ok();
  }
  cmd.in.resize(cmd.inlen);
  if (uint32_t n = prm::mailbox_blocks(cmd.outlen); n > 0) {
    cmd.delivery = walk_chain(iommu, e.get(cmd_layout::out_ptr), n, cmd.token, checksum, false,
                              nullptr, &cmd.out_blocks);
  }
  return Status::ok();
}

Status post_completion(Iommu& iommu, const SlotCommand& cmd, std::span<const std::byte> out,
                       bool checksum) {
  Status st = Status::ok();
  if (cmd.delivery == 0) {
    // Output blocks first, then the inline part, then status_own.
    std::array<std::byte, prm::kMailboxBlockBytes> blk{};
    for (std::size_t i = 0; i < cmd.out_blocks.size(); ++i) {
      const std::size_t off = prm::kCmdInlineBytes + i * prm::kMailboxDataBytes;
      const std::size_t n =
          off < out.size() ? std::min<std::size_t>(prm::kMailboxDataBytes, out.size() - off) : 0;
      if (checksum) {
        if (Status s = iommu.dma_read(cmd.out_blocks[i], blk); !s) return s;
        std::memset(blk.data(), 0, prm::kMailboxDataBytes);
        if (n) std::memcpy(blk.data(), out.data() + off, n);
        set_block_sigs(blk);
        if (Status s = iommu.dma_write(cmd.out_blocks[i], blk); !s) return s;
      } else {
        std::memset(blk.data(), 0, prm::kMailboxDataBytes);
        if (n) std::memcpy(blk.data(), out.data() + off, n);
        if (Status s = iommu.dma_write(
                cmd.out_blocks[i], std::span<const std::byte>(blk.data(), prm::kMailboxDataBytes));
            !s)
          return s;
      }
    }
    std::array<std::byte, prm::kCmdInlineBytes> inl{};
    std::memcpy(inl.data(), out.data(), std::min<std::size_t>(inl.size(), out.size()));
    st = iommu.dma_write(cmd.entry_iova + cmd_layout::out.byte_off(), inl);
    if (!st) return st;
  }
  const std::byte status_own{static_cast<uint8_t>(cmd.delivery << 1 | prm::kCmdOwnerSw)};
  if (checksum) {
    // The driver verifies that the completed entry XORs to 0xFF (cmd.c
    // verify_signature), so the signature covers the final status_own.
    std::array<std::byte, prm::kCmdEntryBytes> ent{};
    if (Status s = iommu.dma_read(cmd.entry_iova, ent); !s) return s;
    ent[kStatusOwnOff] = status_own;
    ent[kEntrySigOff] = std::byte{0};
    const std::byte sig{static_cast<uint8_t>(~xor8(ent))};
    if (Status s = iommu.dma_write(cmd.entry_iova + kEntrySigOff, std::span(&sig, 1)); !s) return s;
  }
  std::atomic_thread_fence(std::memory_order_release);
  return iommu.dma_write(cmd.entry_iova + kStatusOwnOff, std::span(&status_own, 1));
}

}  // namespace kbv::sim::fw
