// SPDX-License-Identifier: BSD-3-Clause
//
// A whole RoCEv2 datagram (the UDP payload): BTH, the extension headers its
// opcode carries, payload, pad, ICRC. build_packet() lays one out,
// parse_packet() takes one apart. The ICRC itself depends on the IPv4/UDP
// flow (icrc.hpp): build_packet leaves it zero and the sender fills it with
// write_icrc() once it knows the UDP source port; receivers check icrc_ok()
// before parse_packet().
//
// Layout (IBTA ch. 9, Table 38; rxe_opcode.c): BTH | [DETH] [RETH]
// [AtomicETH] [AETH] [AtomicAckETH] [ImmDt] | payload | PadCnt zero bytes |
// ICRC. Exactly the extension headers opcode_info(bth.opcode)->ext names
// must be present.
//
// Errors:
//   build_packet: KBV_ERR_NOT_SUPPORTED for an opcode opcode_info() does not
//     know; KBV_ERR_INVALID_ARGUMENT when the extension headers given do not
//     match the opcode, when payload is given to an opcode without payload, or
//     a field does not fit; KBV_ERR_BUFFER_TOO_SMALL when `out` is too short.
//   parse_packet: KBV_ERR_NOT_SUPPORTED for an unknown opcode;
//     KBV_ERR_INVALID_ARGUMENT for a datagram shorter than its opcode's
//     headers + ICRC, payload on an opcode without payload, a pad count
//     larger than the payload area, payload + pad not a multiple of 4, or
//     a transport version other than 0.
//
// Threading: pure functions over caller memory. No allocation.
#pragma once

#include "sim/wire/headers.hpp"

#include <kbv/status.hpp>

#include <optional>
#include <span>

namespace kbv::sim::wire {

// The largest datagram the model sends or accepts: 4096-byte path MTU
// payload + the longest header set (BTH+RETH+ImmDt = 32, BTH+AtomicETH = 40)
// + pad + ICRC, rounded up.
inline constexpr size_t kMaxPayload = 4096;
inline constexpr size_t kMaxDatagram = 4096 + 64;

struct PacketHeaders {
  Bth bth;
  std::optional<Deth> deth;
  std::optional<Reth> reth;
  std::optional<AtomicEth> atomic_eth;
  std::optional<Aeth> aeth;
  std::optional<AtomicAckEth> atomic_ack_eth;
  std::optional<ImmDt> immdt;
  friend bool operator==(const PacketHeaders&, const PacketHeaders&) = default;
};

// Bytes the datagram for `payload_len` bytes of payload occupies with the
// headers of `op`; 0 for an unknown opcode.
size_t packet_bytes(uint8_t op, size_t payload_len);

// Writes BTH (pad_cnt taken from the payload length, the given bth.pad_cnt is
// ignored), extension headers, payload, zero pad and a zero ICRC into `out`.
// Returns the datagram length.
Result<size_t> build_packet(const PacketHeaders& h, std::span<const uint8_t> payload,
                            std::span<uint8_t> out);

struct ParsedPacket {
  PacketHeaders headers;
  const OpcodeInfo* info = nullptr;
  std::span<const uint8_t> payload;  // without pad; points into the datagram
};

// Takes a datagram apart (ICRC not checked here: see icrc_ok()).
Result<ParsedPacket> parse_packet(std::span<const uint8_t> datagram);

}  // namespace kbv::sim::wire
