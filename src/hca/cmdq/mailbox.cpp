// SPDX-License-Identifier: BSD-3-Clause
#include "hca/cmdq/mailbox.hpp"

#include <algorithm>
#include <cstring>

#include "common/log.hpp"
#include "hca/prm/cmdq.hpp"

namespace kbv::hca {

using prm::cmd_prot_block;

static_assert(MailboxPool::kBlockStride >= prm::kMailboxBlockBytes);
static_assert(MailboxPool::kBlockStride % prm::kMailboxNextAlign == 0);
static_assert(MailboxPool::kBlockStride % prm::kCmdEntryMailboxAlign == 0);

MailboxPool::~MailboxPool() {
  for (const DmaBlock& c : chunks_) io_.dma_free(c);
}

Status MailboxPool::grow() {
  Result<DmaBlock> c = io_.dma_alloc(kChunkBytes, 4096);
  if (!c) {
    log::error("cmdq", "mailbox pool: cannot allocate a {} byte DMA chunk: {}", kChunkBytes,
               c.status().to_string());
    return c.status();
  }
  chunks_.push_back(*c);
  // Hand out low addresses first (free_ is used as a stack).
  for (uint32_t off = kChunkBytes; off >= kBlockStride; off -= kBlockStride) {
    const uint32_t o = off - kBlockStride;
    free_.push_back({c->va + o, c->iova + o});
  }
  return Status::ok();
}

Status MailboxPool::alloc_chain(uint32_t n, uint8_t token, std::vector<MailboxBlock>& chain) {
  chain.clear();
  while (free_.size() < n) {
    Status s = grow();
    if (!s) return s;
  }
  chain.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    chain.push_back(free_.back());
    free_.pop_back();
  }
  for (uint32_t i = 0; i < n; ++i) {
    std::memset(chain[i].va, 0, prm::kMailboxBlockBytes);
    prm::Ref<cmd_prot_block> b(chain[i].va);
    b.set(cmd_prot_block::next, i + 1 < n ? chain[i + 1].iova : 0);
    b.set(cmd_prot_block::block_num, i);
    b.set(cmd_prot_block::token, token);
  }
  return Status::ok();
}

void MailboxPool::free_chain(std::vector<MailboxBlock>& chain) {
  for (const MailboxBlock& b : chain) free_.push_back(b);
  chain.clear();
}

void MailboxPool::write_data(std::span<const MailboxBlock> chain, std::span<const std::byte> src) {
  size_t done = 0;
  for (const MailboxBlock& b : chain) {
    if (done >= src.size()) break;
    const size_t n = std::min<size_t>(prm::kMailboxDataBytes, src.size() - done);
    prm::Ref<cmd_prot_block>(b.va).set_bytes(cmd_prot_block::data, src.subspan(done, n));
    done += n;
  }
}

void MailboxPool::read_data(std::span<const MailboxBlock> chain, std::span<std::byte> dst) {
  size_t done = 0;
  for (const MailboxBlock& b : chain) {
    if (done >= dst.size()) break;
    const size_t n = std::min<size_t>(prm::kMailboxDataBytes, dst.size() - done);
    std::span<const std::byte> d = prm::CRef<cmd_prot_block>(b.va).bytes(cmd_prot_block::data);
    std::memcpy(dst.data() + done, d.data(), n);
    done += n;
  }
}

}  // namespace kbv::hca
