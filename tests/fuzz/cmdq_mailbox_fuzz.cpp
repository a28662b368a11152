// SPDX-License-Identifier: BSD-3-Clause
//
// libFuzzer target: the model firmware's command transport parsing
// (src/sim/fw/cmdq.hpp fetch_command / post_completion) and the generic
// command checks (registry.hpp CommandRegistry::check) on arbitrary
// command-queue entries and mailbox chains.
//
// The input is laid out as device-visible memory: the first 64 bytes are
// the command queue entry (docs/PRM.md "Command queue entry"), the rest fills up
// to kBlocks mailbox blocks (576 B each, 1 KiB apart) mapped right after the
// entry's 4 KiB page. Mailbox pointers in the input that point elsewhere hit
// unmapped IOVAs — exactly the IOMMU faults the model must survive. The
// checksum flag comes from the last input byte.
//
// Invariants checked: no crash or sanitizer report; an accepted command's
// input is exactly inlen bytes.
#include "sim/bus/iommu_map.hpp"
#include "sim/fw/cmdq.hpp"
#include "sim/fw/registry.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr uint64_t kEntryIova = 0x10000;  // 4 KiB page holding the entry
// Mailbox blocks follow at kEntryIova + 0x1000, 1 KiB apart.
constexpr std::size_t kBlocks = 8;
constexpr std::size_t kArea = 4096 + kBlocks * 1024;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace kbv::sim;
  alignas(4096) static std::byte mem[kArea];
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
  const bool checksum = size > 0 && (data[size - 1] & 1);

  IommuMap iommu;
  if (!iommu.map(kEntryIova, mem, kArea, Iommu::kRead | Iommu::kWrite).is_ok()) std::abort();

  fw::SlotCommand cmd;
  kbv::Status st = fw::fetch_command(iommu, kEntryIova, 0, checksum, cmd);
  if (!st.is_ok() || !cmd.owned) return 0;
  if (cmd.delivery == 0) {
    if (cmd.in.size() != cmd.inlen) std::abort();
    fw::Command c;
    c.in = cmd.in;
    c.opcode = static_cast<uint16_t>((static_cast<unsigned>(cmd.in[0]) << 8) |
                                     static_cast<unsigned>(cmd.in[1]));
    fw::CommandRegistry reg;
    (void)fw::CommandRegistry::check(reg.find(c.opcode), c, cmd.outlen, true, true);
  }
  // Answer it: the output scatter must be safe for any chain the entry named.
  std::vector<std::byte> out(cmd.delivery == 0 ? cmd.outlen : 0);
  (void)fw::post_completion(iommu, cmd, out, checksum);
  return 0;
}
