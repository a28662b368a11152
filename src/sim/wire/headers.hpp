// SPDX-License-Identifier: BSD-3-Clause
//
// RoCEv2 transport headers as they appear on the wire, for the HCA model:
// the Base Transport Header and the extension headers RETH, AETH, DETH, ImmDt,
// AtomicETH and AtomicAckETH; the opcode table (which extension headers each
// opcode carries, whether it carries payload); the AETH syndrome encoding, the
// RNR timer and credit tables; 24-bit PSN arithmetic; pad counts.
//
// Sources (facts only): IBTA Vol 1 ch. 9 (header layouts; 9.7.1 PSN;
// 9.7.5 AETH syndrome and credit encoding; Table 45 RNR timer; Table 38
// headers per opcode); Linux drivers/infiniband/sw/rxe
// rxe_hdr.h (field masks: SE 0x80, M 0x40, PadCnt 0x30, TVer 0x0F in BTH byte
// 1; FECN/BECN in the top bits of the DestQP word, AckReq in the top bit of the
// PSN word) and rxe_opcode.c (header set and length per opcode); Linux
// include/rdma/ib_verbs.h enum ib_rnr_timeout (RNR timer codes).
//
// Byte order: every multi-byte field is big-endian on the wire. The structs
// below hold host-order values; encode/decode convert. ImmDt is opaque to the
// transport: `imm` holds the 4 wire bytes read as a big-endian number.
//
// Errors: encode_* return KBV_ERR_BUFFER_TOO_SMALL when the output span is
// shorter than the header and KBV_ERR_INVALID_ARGUMENT when a value does not
// fit its field (e.g. a 25-bit QPN); decode_* return KBV_ERR_INVALID_ARGUMENT
// when the input is shorter than the header (nothing past the span is read).
//
// Threading: pure functions and constant tables; no shared state. No
// allocation: safe on the model's data path.
#pragma once

#include <kbv/status.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace kbv::sim::wire {

// IBTA Annex A17 (RoCEv2): the well-known UDP destination port.
inline constexpr uint16_t kRoceV2UdpPort = 4791;
// The default P_Key: full member of the default partition (IBTA ch. 10).
inline constexpr uint16_t kDefaultPkey = 0xFFFF;

// Header sizes in bytes (IBTA ch. 9; rxe_hdr.h RXE_*_BYTES).
inline constexpr size_t kBthBytes = 12;
inline constexpr size_t kRethBytes = 16;
inline constexpr size_t kAethBytes = 4;
inline constexpr size_t kDethBytes = 8;
inline constexpr size_t kImmDtBytes = 4;
inline constexpr size_t kAtomicEthBytes = 28;
inline constexpr size_t kAtomicAckEthBytes = 8;
inline constexpr size_t kIcrcBytes = 4;

inline constexpr uint32_t kPsnMask = 0x00FFFFFF;  // PSN is 24 bits (IBTA ch. 9, BTH)
inline constexpr uint32_t kQpnMask = 0x00FFFFFF;  // QPNs are 24 bits

// ---- Base Transport Header (IBTA ch. 9, 12 bytes) ---------------------------
// byte 0 OpCode | byte 1 SE(7) M(6) PadCnt(5:4) TVer(3:0) | bytes 2-3 P_Key |
// byte 4 FECN(7) BECN(6) resv6 | bytes 5-7 DestQP | byte 8 AckReq(7) resv7 |
// bytes 9-11 PSN. Reserved bits are sent as 0 and ignored on receive.
struct Bth {
  uint8_t opcode = 0;
  bool se = false;      // solicited event
  bool mig = false;     // MigReq
  uint8_t pad_cnt = 0;  // 0..3 bytes of pad before the ICRC
  uint8_t tver = 0;     // transport header version, 0
  uint16_t pkey = kDefaultPkey;
  bool fecn = false;     // forward ECN (variant: masked in the ICRC)
  bool becn = false;     // backward ECN (variant: masked in the ICRC)
  uint32_t dest_qp = 0;  // 24 bits
  bool ack_req = false;  // A bit
  uint32_t psn = 0;      // 24 bits
  friend bool operator==(const Bth&, const Bth&) = default;
};

// ---- RDMA Extended Transport Header (IBTA ch. 9, 16 bytes) ---------------------
// VA(64) @0, R_Key(32) @8, DMA Length(32) @12.
struct Reth {
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t dma_len = 0;
  friend bool operator==(const Reth&, const Reth&) = default;
};

// ---- ACK Extended Transport Header (IBTA ch. 9, 4 bytes) ----------------------
// Syndrome(8) @0, MSN(24) @1.
struct Aeth {
  uint8_t syndrome = 0;
  uint32_t msn = 0;  // 24 bits
  friend bool operator==(const Aeth&, const Aeth&) = default;
};

// ---- Datagram Extended Transport Header (IBTA ch. 9, 8 bytes) -----------------
// Q_Key(32) @0, resv8 @4, SrcQP(24) @5.
struct Deth {
  uint32_t qkey = 0;
  uint32_t src_qp = 0;  // 24 bits
  friend bool operator==(const Deth&, const Deth&) = default;
};

// ---- Immediate Data Extended Transport Header (IBTA ch. 9, 4 bytes) -----------
struct ImmDt {
  uint32_t imm = 0;
  friend bool operator==(const ImmDt&, const ImmDt&) = default;
};

// ---- Atomic Extended Transport Header (IBTA ch. 9, 28 bytes) ------------------
// VA(64) @0, R_Key(32) @8, Swap/Add Data(64) @12, Compare Data(64) @20.
// rxe_hdr.h struct rxe_atmeth is __packed for the same reason: the 64-bit
// fields after R_Key are not 8-byte aligned.
struct AtomicEth {
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint64_t swap_add = 0;
  uint64_t compare = 0;
  friend bool operator==(const AtomicEth&, const AtomicEth&) = default;
};

// ---- Atomic Acknowledge Extended Transport Header (IBTA ch. 9, 8 bytes) -------
struct AtomicAckEth {
  uint64_t orig = 0;  // the original remote data
  friend bool operator==(const AtomicAckEth&, const AtomicAckEth&) = default;
};

Status encode(const Bth& h, std::span<uint8_t> out);
Status encode(const Reth& h, std::span<uint8_t> out);
Status encode(const Aeth& h, std::span<uint8_t> out);
Status encode(const Deth& h, std::span<uint8_t> out);
Status encode(const ImmDt& h, std::span<uint8_t> out);
Status encode(const AtomicEth& h, std::span<uint8_t> out);
Status encode(const AtomicAckEth& h, std::span<uint8_t> out);

Result<Bth> decode_bth(std::span<const uint8_t> in);
Result<Reth> decode_reth(std::span<const uint8_t> in);
Result<Aeth> decode_aeth(std::span<const uint8_t> in);
Result<Deth> decode_deth(std::span<const uint8_t> in);
Result<ImmDt> decode_immdt(std::span<const uint8_t> in);
Result<AtomicEth> decode_atomic_eth(std::span<const uint8_t> in);
Result<AtomicAckEth> decode_atomic_ack_eth(std::span<const uint8_t> in);

// ---- Opcodes (IBTA ch. 9 BTH OpCode; docs/PRM.md "RoCEv2 wire") ---------------------
// OpCode[7:5] is the transport service, OpCode[4:0] the operation.
namespace opcode {
inline constexpr uint8_t kRc = 0x00, kUc = 0x20, kUd = 0x60;
inline constexpr uint8_t kSendFirst = 0x00;
inline constexpr uint8_t kSendMiddle = 0x01;
inline constexpr uint8_t kSendLast = 0x02;
inline constexpr uint8_t kSendLastImm = 0x03;
inline constexpr uint8_t kSendOnly = 0x04;
inline constexpr uint8_t kSendOnlyImm = 0x05;
inline constexpr uint8_t kWriteFirst = 0x06;
inline constexpr uint8_t kWriteMiddle = 0x07;
inline constexpr uint8_t kWriteLast = 0x08;
inline constexpr uint8_t kWriteLastImm = 0x09;
inline constexpr uint8_t kWriteOnly = 0x0A;
inline constexpr uint8_t kWriteOnlyImm = 0x0B;
inline constexpr uint8_t kReadRequest = 0x0C;
inline constexpr uint8_t kReadResponseFirst = 0x0D;
inline constexpr uint8_t kReadResponseMiddle = 0x0E;
inline constexpr uint8_t kReadResponseLast = 0x0F;
inline constexpr uint8_t kReadResponseOnly = 0x10;
inline constexpr uint8_t kAcknowledge = 0x11;
inline constexpr uint8_t kAtomicAcknowledge = 0x12;
inline constexpr uint8_t kCompareSwap = 0x13;
inline constexpr uint8_t kFetchAdd = 0x14;
// Full opcodes for UD (OpCode[7:5] = 011: 011 00100 / 011 00101).
inline constexpr uint8_t kUdSendOnly = 0x64;
inline constexpr uint8_t kUdSendOnlyImm = 0x65;
}  // namespace opcode

enum class Transport : uint8_t { kRc = 0, kUc = 1, kRd = 2, kUd = 3 };
inline constexpr Transport transport_of(uint8_t op) { return static_cast<Transport>(op >> 5); }

// The operation a packet belongs to and its place in a multi-packet message.
enum class Operation : uint8_t {
  kSend,
  kWrite,
  kReadRequest,
  kReadResponse,
  kAcknowledge,
  kAtomicAcknowledge,
  kCompareSwap,
  kFetchAdd,
};
enum class Position : uint8_t { kFirst, kMiddle, kLast, kOnly };

// Extension-header bits of OpcodeInfo::ext. On the wire the headers follow the
// BTH in this order: DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt
// (IBTA Table 38; no opcode kbv supports carries both DETH and RETH).
enum Ext : uint8_t {
  kExtDeth = 1u << 0,
  kExtReth = 1u << 1,
  kExtAtomicEth = 1u << 2,
  kExtAeth = 1u << 3,
  kExtAtomicAckEth = 1u << 4,
  kExtImmDt = 1u << 5,
};

struct OpcodeInfo {
  const char* name;  // IBTA name, e.g. "RC RDMA WRITE Only with Immediate"
  uint8_t ext;       // Ext bits
  bool payload;      // the packet may carry payload
  Operation operation;
  Position position;
  uint8_t hdr_bytes;  // BTH + extension headers (no payload, pad, ICRC)
};

// The table entry for `op`, or nullptr when kbv does not support the opcode
// (RD, XRC, CNP, SEND with Invalidate, FLUSH and reserved values). Supported:
// RC 0x00-0x14, UC 0x20-0x2B (SEND and RDMA WRITE), UD 0x64 and 0x65.
const OpcodeInfo* opcode_info(uint8_t op);

// Size of each extension header named by Ext bits, summed.
constexpr size_t ext_bytes(uint8_t ext) {
  return ((ext & kExtDeth) ? kDethBytes : 0) + ((ext & kExtReth) ? kRethBytes : 0) +
         ((ext & kExtAtomicEth) ? kAtomicEthBytes : 0) + ((ext & kExtAeth) ? kAethBytes : 0) +
         ((ext & kExtAtomicAckEth) ? kAtomicAckEthBytes : 0) +
         ((ext & kExtImmDt) ? kImmDtBytes : 0);
}

// The opcode for a packet of `op` at `pos` on transport `t`, with ImmDt when
// with_imm (only the last/only packet of a SEND or RDMA WRITE carries it).
// KBV_ERR_NOT_SUPPORTED when the table has no such opcode (e.g. a UC READ,
// a UD WRITE, ImmDt on a first packet).
Result<uint8_t> make_opcode(Transport t, Operation op, Position pos, bool with_imm);

// ---- Segmentation (IBTA ch. 9: messages are split at the path MTU) ---------
// Path MTU encoding of IBTA / PRM qpc.mtu: 1 = 256, 2 = 512, 3 = 1024,
// 4 = 2048, 5 = 4096 bytes; 0 for any other code.
constexpr uint32_t ib_mtu_bytes(uint8_t code) {
  return (code >= 1 && code <= 5) ? 256u << (code - 1) : 0;
}
// Packets a message of `len` bytes takes at `mtu` bytes of payload per
// packet: at least 1 (a zero-length message is one packet). mtu must be > 0.
constexpr uint32_t packet_count(uint64_t len, uint32_t mtu) {
  return len == 0 ? 1 : static_cast<uint32_t>((len + mtu - 1) / mtu);
}
// Position of packet `index` (0-based) of a `count`-packet message.
constexpr Position position_of(uint32_t index, uint32_t count) {
  if (count <= 1) return Position::kOnly;
  if (index == 0) return Position::kFirst;
  return index + 1 == count ? Position::kLast : Position::kMiddle;
}

// ---- AETH syndrome (IBTA 9.7.5, AETH) ----------------------------------
// bits 7 reserved(0) | 6:5 type | 4:0 value.
// type 00 ACK (value: credit count code), 01 RNR NAK (value: timer code),
// 10 reserved, 11 NAK (value: NAK code).
enum class AethType : uint8_t { kAck = 0, kRnrNak = 1, kReserved = 2, kNak = 3 };
enum class NakCode : uint8_t {
  kPsnSequenceError = 0,
  kInvalidRequest = 1,
  kRemoteAccessError = 2,
  kRemoteOperationalError = 3,
  kInvalidRdRequest = 4,
};
// Credit code 31: "invalid" (end-to-end credits not used).
inline constexpr uint8_t kCreditInvalid = 0x1F;

constexpr uint8_t aeth_ack(uint8_t credit_code) { return static_cast<uint8_t>(credit_code & 0x1F); }
constexpr uint8_t aeth_rnr_nak(uint8_t timer_code) {
  return static_cast<uint8_t>(0x20 | (timer_code & 0x1F));
}
constexpr uint8_t aeth_nak(NakCode c) {
  return static_cast<uint8_t>(0x60 | (static_cast<uint8_t>(c) & 0x1F));
}
constexpr AethType aeth_type(uint8_t syndrome) {
  return static_cast<AethType>((syndrome >> 5) & 3);
}
constexpr uint8_t aeth_value(uint8_t syndrome) { return syndrome & 0x1F; }

// IBTA Table 45 (ib_verbs.h enum ib_rnr_timeout): RNR NAK timer code ->
// microseconds. Code 0 is the longest (655.36 ms); 1..31 grow from 10 us.
uint32_t rnr_timer_usec(uint8_t timer_code);
// The smallest timer code whose delay is >= usec (codes 1..31 ordered by
// delay, then code 0); 0 (655.36 ms) when usec exceeds 491.52 ms.
uint8_t rnr_timer_code_for_usec(uint32_t usec);
// IBTA credit count encoding (ch. 9, AETH): credit code -> number of receive WQEs; kCreditInvalid
// -> -1.
int32_t credit_count(uint8_t credit_code);

// ---- PSN arithmetic (IBTA 9.7.1: 24-bit sequence space, modulo 2^24) ---------
constexpr uint32_t psn_add(uint32_t psn, int32_t n) {
  return (psn + static_cast<uint32_t>(n)) & kPsnMask;
}
// Signed distance a - b in the 24-bit space, in [-2^23, 2^23).
constexpr int32_t psn_diff(uint32_t a, uint32_t b) {
  uint32_t d = (a - b) & kPsnMask;
  return (d & 0x800000) ? static_cast<int32_t>(d) - 0x1000000 : static_cast<int32_t>(d);
}
constexpr bool psn_lt(uint32_t a, uint32_t b) { return psn_diff(a, b) < 0; }
constexpr bool psn_le(uint32_t a, uint32_t b) { return psn_diff(a, b) <= 0; }
constexpr bool psn_gt(uint32_t a, uint32_t b) { return psn_diff(a, b) > 0; }
constexpr bool psn_ge(uint32_t a, uint32_t b) { return psn_diff(a, b) >= 0; }

// ---- Pad (IBTA ch. 9: PadCnt makes payload + pad a multiple of 4 bytes) -------
constexpr uint8_t pad_count(size_t payload_len) {
  return static_cast<uint8_t>((4 - (payload_len & 3)) & 3);
}

// ---- Big-endian byte helpers (bounds are the caller's job) -------------------
namespace be {
inline uint16_t load16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
inline uint32_t load24(const uint8_t* p) {
  return uint32_t{p[0]} << 16 | uint32_t{p[1]} << 8 | p[2];
}
inline uint32_t load32(const uint8_t* p) { return uint32_t{p[0]} << 24 | load24(p + 1); }
inline uint64_t load64(const uint8_t* p) { return uint64_t{load32(p)} << 32 | load32(p + 4); }
inline void store16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void store24(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 16);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v);
}
inline void store32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  store24(p + 1, v);
}
inline void store64(uint8_t* p, uint64_t v) {
  store32(p, static_cast<uint32_t>(v >> 32));
  store32(p + 4, static_cast<uint32_t>(v));
}
}  // namespace be

}  // namespace kbv::sim::wire
