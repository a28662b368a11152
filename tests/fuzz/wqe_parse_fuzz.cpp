// SPDX-License-Identifier: BSD-3-Clause
//
// libFuzzer target: the model's WQE parsing (src/sim/engine/wqe.hpp
// parse_send_wqe / parse_recv_bytes) on a fuzz-controlled SQ ring.
//
// Input layout: an 8-byte header, then the ring contents.
//   [0] service type (RC / UC / UD = byte % 3)
//   [1] log_sq_size (byte % 5: 1..16 basic blocks of 64 B)
//   [2..3] the WQE index parsed first (big-endian); [2..3] + 1..3 follow
//   [4..6] the QP number (24 bits)
//   [7] log_msg_max (byte % 32); bit 7: also parse the ring as an SRQ WQE
// The ring (up to 1 KiB) is mapped in an IommuMap; indices wrap across its
// end, and a WQE that claims more than the ring is rejected, never read
// beyond it.
//
// Invariants checked (abort on violation): no crash or sanitizer report; a
// parsed WQE has ds * 16 <= kMaxSendWqeBytes, num_sge <= kMaxSge,
// inline_len <= kMaxInline and < ds * 16, inline and pointer data not both,
// and length equal to its parts; a receive WQE's num_sge fits its stride.
#include "sim/bus/iommu_map.hpp"
#include "sim/engine/wqe.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace {

constexpr uint64_t kRingIova = 0x200000;
constexpr std::size_t kHeader = 8;

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace kbv::sim;
  using namespace kbv::sim::engine;
  if (size < kHeader) return 0;
  alignas(4096) static std::byte ring[4096];
  static std::unique_ptr<ParsedWqe> out = std::make_unique<ParsedWqe>();
  static std::unique_ptr<ParsedRecv> recv = std::make_unique<ParsedRecv>();
  std::memset(ring, 0, sizeof ring);

  const uint32_t sts[] = {kbv::prm::qpc_st::kRc, kbv::prm::qpc_st::kUc, kbv::prm::qpc_st::kUd};
  fw::Qp qp;
  qp.st = sts[data[0] % 3];
  qp.log_sq_size = data[1] % 5;
  const uint16_t first = static_cast<uint16_t>(data[2] << 8 | data[3]);
  qp.qpn = uint32_t{data[4]} << 16 | uint32_t{data[5]} << 8 | data[6];
  qp.log_msg_max = data[7] % 32;
  const bool srq = (data[7] & 0x80) != 0;
  const uint64_t ring_bytes = uint64_t{64} << qp.log_sq_size;
  qp.buf.pas = {kRingIova};
  qp.sq_offset = 0;
  qp.sq_bytes = ring_bytes;
  const std::size_t body = size - kHeader < ring_bytes ? size - kHeader : ring_bytes;
  std::memcpy(ring, data + kHeader, body);

  IommuMap iommu;
  // Map only the ring's page; the rest of the address space faults.
  if (!iommu.map(kRingIova, ring, sizeof ring, Iommu::kRead).is_ok()) std::abort();

  for (uint16_t k = 0; k < 4; ++k) {
    const uint16_t idx = static_cast<uint16_t>(first + k);
    WqeStatus s = parse_send_wqe(iommu, qp, idx, out.get());
    if (!s.ok()) {
      check(s.vendor != WqeVendor::kNone);
      continue;
    }
    const ParsedWqe& w = *out;
    check(w.wqe_index == idx);
    check(w.ds >= 1 && w.ds * 16 <= kMaxSendWqeBytes && w.ds * 16 <= ring_bytes);
    check(w.num_sge <= kMaxSge);
    check(w.inline_len <= kMaxInline && w.inline_len < w.ds * 16);
    check(!(w.is_inline && w.num_sge != 0));
    uint64_t sum = 0;
    for (uint32_t i = 0; i < w.num_sge; ++i) sum += w.sge[i].byte_count;
    check(w.length == (w.is_inline ? w.inline_len : sum));
  }

  // The same bytes as one receive WQE (stride up to 512 B).
  const std::size_t stride = ring_bytes < kMaxRecvWqeBytes ? ring_bytes : kMaxRecvWqeBytes;
  WqeStatus r = parse_recv_bytes(std::span<const std::byte>(ring, stride), srq, recv.get());
  if (r.ok()) check(recv->num_sge * 16 <= stride);
  return 0;
}
