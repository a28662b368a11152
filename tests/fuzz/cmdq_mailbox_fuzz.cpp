// SPDX-License-Identifier: BSD-3-Clause
//
// libFuzzer target: the model firmware's command transport parsing
// (src/sim/fw/cmdq.hpp fetch_command / post_completion) and the generic
// command checks (registry.hpp CommandRegistry::check, with the model's
// real command table) on arbitrary command-queue entries and mailbox chains.
//
// The input is laid out as device-visible memory: the first 64 bytes are
// the command queue entry (docs/PRM.md "Command queue entry"), the rest fills up
// to kBlocks mailbox blocks (576 B each, 1 KiB apart) mapped right after the
// entry's 4 KiB page. Mailbox pointers in the input that point elsewhere hit
// unmapped IOVAs — exactly the IOMMU faults the model must survive. The
// last input byte carries the checksum flag (bit 0) and the HCA state the
// checks see (bit 1 enabled, bit 2 initialized).
//
// Invariants (each violation aborts, libFuzzer keeps the input):
//   * the delivery status is one the PRM defines (kernel device.h
//     MLX5_CMD_DELIVERY_STAT_*: 0x0-0x9, 0x10);
//   * an accepted command's input is exactly inlen bytes;
//   * its status follows the PRM's generic rules, in their order
//     (registry.hpp): unknown opcode BAD_OP (0x2); inlen below the command's
//     layout BAD_INP_LEN (0x50); outlen below it BAD_OUTP_LEN (0x51); uid
//     != 0 BAD_PARAM (0x3); state BAD_SYS_STATE (0x4) — recomputed here from
//     the command table's sizes, not by calling the same branch;
//   * after the completion: the entry is software's (ownership bit 0) and
//     status_own carries the delivery status; the output lands where the
//     entry says (inline out[16], then 512 data bytes per output block in
//     chain order) and nothing is written outside the output: every byte
//     the firmware changed is the entry's out[16], status_own or (checksum)
//     signature, or an output block's data or its signatures (data past
//     outlen in the last block only ever becomes zero)
//     — tokens, block numbers, next pointers, the input and the entry's
//     other fields stay as the driver wrote them.
#include "hca/prm/cmdq.hpp"
#include "hca/prm/opcodes.hpp"
#include "sim/bus/iommu_map.hpp"
#include "sim/fw/caps.hpp"
#include "sim/fw/cmdq.hpp"
#include "sim/fw/eq.hpp"
#include "sim/fw/hca_cmds.hpp"
#include "sim/fw/objects/objects.hpp"
#include "sim/fw/pages.hpp"
#include "sim/fw/registry.hpp"
#include "sim/fw/uar.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

namespace {

constexpr uint64_t kEntryIova = 0x10000;  // 4 KiB page holding the entry
// Mailbox blocks follow at kEntryIova + 0x1000, 1 KiB apart.
constexpr std::size_t kBlocks = 8;
constexpr std::size_t kArea = 4096 + kBlocks * 1024;
// Entry and block layouts (kernel device.h mlx5_cmd_layout /
// mlx5_cmd_prot_block).
constexpr std::size_t kOutOff = 0x20, kSigOff = 0x3D, kStatusOwnOff = 0x3F;
constexpr std::size_t kBlockData = 512, kCtrlSigOff = 574, kBlockSigOff = 575;

[[noreturn]] void violated(const char* what) {
  std::fprintf(stderr, "cmdq_mailbox invariant violated: %s\n", what);
  std::abort();
}

const kbv::sim::fw::CommandRegistry& registry() {
  static const auto* r = [] {
    auto* x = new kbv::sim::fw::CommandRegistry;
    kbv::sim::fw::register_hca_commands(*x);
    kbv::sim::fw::register_cap_commands(*x);
    kbv::sim::fw::register_eq_commands(*x);
    kbv::sim::fw::register_page_commands(*x);
    kbv::sim::fw::register_uar_commands(*x);
    kbv::sim::fw::register_object_commands(*x);
    return x;
  }();
  return *r;
}

uint32_t be32(const std::byte* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace kbv::sim;
  alignas(4096) static std::byte mem[kArea];
  alignas(4096) static std::byte before[kArea];
  std::memset(mem, 0, sizeof mem);
  std::memcpy(mem, data, size < 64 ? size : 64);
  if (size > 64) {
    // Spread the rest over the mailbox blocks: 576 B into each 1 KiB slot.
    std::size_t off = 64;
    for (std::size_t b = 0; b < kBlocks && off < size; ++b) {
      std::size_t n = size - off < 576 ? size - off : 576;
      std::memcpy(mem + 4096 + b * 1024, data + off, n);
      off += n;
    }
  }
  const uint8_t flags = size > 0 ? data[size - 1] : 0;
  const bool checksum = flags & 1;
  const bool enabled = flags & 2, initialized = flags & 4;
  std::memcpy(before, mem, sizeof mem);

  IommuMap iommu;
  if (!iommu.map(kEntryIova, mem, kArea, Iommu::kRead | Iommu::kWrite).is_ok()) std::abort();

  fw::SlotCommand cmd;
  kbv::Status st = fw::fetch_command(iommu, kEntryIova, 0, checksum, cmd);
  if (!st.is_ok() || !cmd.owned) {
    if (std::memcmp(mem, before, sizeof mem) != 0) violated("fetch_command wrote memory");
    return 0;
  }
  const uint8_t d = cmd.delivery;
  if (!(d <= 0x9 || d == 0x10)) violated("delivery status not defined by the PRM");

  std::vector<std::byte> out(d == 0 ? cmd.outlen : 0);
  if (d == 0) {
    if (cmd.in.size() != cmd.inlen) violated("accepted input is not inlen bytes");
    fw::Command c;
    c.in = cmd.in;
    // The mbox_in header (opcode, uid, op_mod), zero past a short input.
    std::byte in[8]{};
    std::memcpy(in, cmd.in.data(), std::min<std::size_t>(8, cmd.in.size()));
    c.opcode = static_cast<uint16_t>(be32(in) >> 16);
    c.uid = static_cast<uint16_t>(be32(in));
    c.op_mod = static_cast<uint16_t>(be32(in + 4));
    const fw::Handler* h = registry().find(c.opcode);
    const fw::Outcome got = fw::CommandRegistry::check(h, c, cmd.outlen, enabled, initialized);
    // The PRM's generic rules in order; op_mod (handler-specific) and state
    // are accepted as check() reports them when the earlier rules pass.
    uint8_t want = 0xFF;
    if (h == nullptr)
      want = 0x2;
    else if (cmd.inlen < h->min_inlen)
      want = 0x50;
    else if (cmd.outlen < h->min_outlen)
      want = 0x51;
    else if (c.uid != 0)
      want = 0x3;
    if (want != 0xFF && got.status != want) violated("status does not follow the PRM rule");
    if (want == 0xFF && !(got.status == 0 || got.status == 0x3 || got.status == 0x4))
      violated("status outside the generic checks' set");
    if (want == 0xFF && got.status == 0x4 && enabled && initialized)
      violated("BAD_SYS_STATE on an initialized HCA");
    if (got.status != 0 && got.syndrome == 0) violated("failure without a syndrome");
    // The answer the firmware would write: status, syndrome, then a pattern.
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::byte(0xA5 ^ (i * 7));
    if (out.size() >= 8) {
      out[0] = std::byte(got.status);
      for (int k = 0; k < 4; ++k) out[4 + k] = std::byte(got.syndrome >> (24 - 8 * k));
    }
  }
  // Answer it: the output scatter must be safe for any chain the entry named.
  st = fw::post_completion(iommu, cmd, out, checksum);

  // Bytes the completion may change.
  std::vector<bool> may(kArea, false);
  for (std::size_t i = 0; i < 16; ++i) may[kOutOff + i] = d == 0;
  may[kStatusOwnOff] = true;
  may[kSigOff] = checksum;
  bool distinct = true;
  std::set<uint64_t> seen;
  if (d == 0) {
    for (std::size_t k = 0; k < cmd.out_blocks.size(); ++k) {
      const uint64_t b = cmd.out_blocks[k];
      if (!seen.insert(b).second) distinct = false;
      if (b < kEntryIova || b + 576 > kEntryIova + kArea) continue;  // unmapped: faults
      const std::size_t base = static_cast<std::size_t>(b - kEntryIova);
      if (base < 64) distinct = false;  // overlaps the entry
      const std::size_t first = 16 + k * kBlockData;
      const std::size_t n =
          cmd.outlen > first ? std::min<std::size_t>(kBlockData, cmd.outlen - first) : 0;
      // The block's whole data area: the model pads the last block's data
      // past outlen with zeros (checked below).
      (void)n;
      for (std::size_t i = 0; i < kBlockData; ++i) may[base + i] = true;
      may[base + kCtrlSigOff] = may[base + kBlockSigOff] = checksum;
    }
  }
  for (std::size_t i = 0; i < kArea; ++i)
    if (mem[i] != before[i] && !may[i]) {
      std::fprintf(stderr, "offset %#zx: %#x -> %#x (delivery %u, outlen %u, %zu out blocks)\n", i,
                   unsigned(before[i]), unsigned(mem[i]), d, cmd.outlen, cmd.out_blocks.size());
      violated("a byte outside the output was written");
    }
  if (st.is_ok()) {
    const uint8_t so = uint8_t(mem[kStatusOwnOff]);
    if (so & 1) violated("the entry is still owned by hardware after the completion");
    if ((so >> 1) != d) violated("status_own does not carry the delivery status");
    if (d == 0 && distinct) {
      for (std::size_t i = 0; i < 16 && i < out.size(); ++i)
        if (mem[kOutOff + i] != out[i]) violated("inline output differs");
      for (std::size_t k = 0; k < cmd.out_blocks.size(); ++k) {
        const uint64_t b = cmd.out_blocks[k];
        if (b < kEntryIova || b + 576 > kEntryIova + kArea) continue;
        const std::size_t base = static_cast<std::size_t>(b - kEntryIova);
        const std::size_t first = 16 + k * kBlockData;
        for (std::size_t i = 0; i < kBlockData; ++i) {
          if (first + i < out.size() && mem[base + i] != out[first + i])
            violated("mailbox output differs");
          if (first + i >= out.size() && mem[base + i] != before[base + i] &&
              mem[base + i] != std::byte{0})
            violated("a mailbox byte past outlen holds something other than zero");
        }
      }
    }
  }
  return 0;
}
