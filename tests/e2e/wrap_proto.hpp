// SPDX-License-Identifier: BSD-3-Clause
//
// The two-process ring-wrap test (wrap_two_process_test.cpp + wrap_peer.cpp,
// issue 21): both processes open their own model HCA through libkbv's C API
// with rings far smaller than the traffic — a CQ of kWrapCqe entries and
// queues kWrapDepth deep — and run thousands of operations through them, so
// every ring (CQ, SQ, RQ) wraps hundreds of times in each process:
//   1. an RC stream of kRcMessages, message k being SEND_IMM (imm = k),
//      inline SEND, or RDMA_WRITE_IMM (imm = k), in turn (k % 3), of a size
//      that varies with k; the peer checks every one in order, byte for
//      byte, and reposts its receive; the sender keeps its send queue full
//      (RNR retry covers a peer that has not reposted yet);
//   2. a UD ping-pong of kUdRounds: the peer answers every datagram with
//      one carrying the same pattern; both check them.
// Data: fill(seed) of verbs_peer_proto.hpp with seed = k & 0xFF.
#pragma once

#include <cstdint>

#include "verbs_peer_proto.hpp"

namespace kbv::peer {

inline constexpr uint32_t kWrapCqe = 8;
inline constexpr uint32_t kWrapDepth = 4;
inline constexpr uint32_t kRcMessages = 3000;
inline constexpr uint32_t kUdRounds = 400;
inline constexpr uint32_t kSlot = 8192;          // peer: RC receive slot size
inline constexpr size_t kWrapRecvOff = 0;        // peer: kWrapDepth RC receive slots
inline constexpr size_t kWrapUdOff = 65536;      // peer: kWrapDepth UD receive slots
inline constexpr size_t kWrapWriteOff = 131072;  // peer: 8 WRITE_IMM regions of kSlot
inline constexpr size_t kWrapReplyOff = 262144;  // either side: UD send source

enum class WrapOp : uint32_t { kSendImm = 0, kSendInline = 1, kWriteImm = 2 };
inline WrapOp wrap_op(uint32_t k) { return static_cast<WrapOp>(k % 3); }
// Message k's length: 1..kSlot (SEND_IMM, WRITE_IMM) or 1..64 (inline).
inline uint32_t wrap_len(uint32_t k) {
  return wrap_op(k) == WrapOp::kSendInline ? 1 + (k * 7) % 64 : 1 + (k * 2741) % kSlot;
}
inline uint8_t wrap_seed(uint32_t k) { return static_cast<uint8_t>(k & 0xFF); }
// UD round r: 1..512 bytes of seed r.
inline uint32_t ud_len(uint32_t r) { return 1 + (r * 97) % kUdLen; }

}  // namespace kbv::peer
