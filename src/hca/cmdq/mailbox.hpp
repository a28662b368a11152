// SPDX-License-Identifier: BSD-3-Clause
//
// MailboxPool: DMA blocks for command mailbox chains (docs/PRM.md "Command queue
// entry": 576-byte blocks, 512 data bytes, next pointer @0x230, block number
// @0x238, token @0x23D; layout prm::cmd_prot_block, device.h
// mlx5_cmd_prot_block).
//
// Blocks are carved 1 KiB apart out of 64 KiB DMA chunks: the queue entry
// keeps mailbox pointer bits 63:9 and a block's next pointer bits 63:10
// (prm::kCmdEntryMailboxAlign / kMailboxNextAlign), so 1 KiB alignment
// satisfies both. The pool grows a chunk at a time on demand (control path:
// allocation is allowed) and returns every chunk to the DeviceIo when it is
// destroyed.
//
// Errors: KBV_ERR_NO_MEMORY (or the DeviceIo's error) when a chunk cannot be
// allocated.
//
// Threading: single-threaded (owned by one CmdQueue).
#pragma once

#include <kbv/status.hpp>

#include <cstdint>
#include <span>
#include <vector>

#include "hca/io/device_io.hpp"

namespace kbv::hca {

struct MailboxBlock {
  std::byte* va = nullptr;  // 576 bytes (prm::cmd_prot_block)
  uint64_t iova = 0;        // 1 KiB aligned
};

class MailboxPool {
 public:
  static constexpr uint32_t kBlockStride = 1024;
  static constexpr uint32_t kChunkBytes = 64 * 1024;

  explicit MailboxPool(DeviceIo& io) : io_(io) {}
  ~MailboxPool();
  MailboxPool(const MailboxPool&) = delete;
  MailboxPool& operator=(const MailboxPool&) = delete;

  // A chain of n blocks (n may be 0: empty chain), each zeroed, linked by
  // next pointers (0 in the last), numbered 0..n-1 and stamped with `token`.
  Status alloc_chain(uint32_t n, uint8_t token, std::vector<MailboxBlock>& chain);
  // Returns the blocks of a chain (the vector is cleared).
  void free_chain(std::vector<MailboxBlock>& chain);

  // Copies `src` into the data areas of the chain, 512 bytes per block.
  static void write_data(std::span<const MailboxBlock> chain, std::span<const std::byte> src);
  // Copies the data areas of the chain into `dst` (dst.size() <= 512 * n).
  static void read_data(std::span<const MailboxBlock> chain, std::span<std::byte> dst);

  size_t free_blocks() const { return free_.size(); }
  size_t total_blocks() const { return chunks_.size() * (kChunkBytes / kBlockStride); }

 private:
  Status grow();

  DeviceIo& io_;
  std::vector<DmaBlock> chunks_;
  std::vector<MailboxBlock> free_;
};

}  // namespace kbv::hca
