// SPDX-License-Identifier: BSD-3-Clause
// RoCEv2 transport headers: encode/decode, opcode table, AETH/RNR/credit
// tables. Layouts and sources: headers.hpp.
#include "sim/wire/headers.hpp"

namespace kbv::sim::wire {

namespace {

Status check_out(std::span<uint8_t> out, size_t n) {
  return out.size() < n ? Status{KBV_ERR_BUFFER_TOO_SMALL} : Status{};
}

bool short_input(std::span<const uint8_t> in, size_t n) { return in.size() < n; }

}  // namespace

// BTH byte 1: SE bit 7, M bit 6, PadCnt bits 5:4, TVer bits 3:0 (rxe_hdr.h
// BTH_SE_MASK 0x80, BTH_MIG_MASK 0x40, BTH_PAD_MASK 0x30, BTH_TVER_MASK 0x0f).
// Byte 4: FECN bit 7, BECN bit 6 (BTH_FECN_MASK/BTH_BECN_MASK in the QPN
// word). Byte 8: AckReq bit 7 (BTH_ACK_MASK in the PSN word).
Status encode(const Bth& h, std::span<uint8_t> out) {
  if (Status s = check_out(out, kBthBytes); !s) return s;
  if (h.pad_cnt > 3 || h.tver > 0xF || h.dest_qp > kQpnMask || h.psn > kPsnMask) {
    return KBV_ERR_INVALID_ARGUMENT;
  }
  uint8_t* p = out.data();
  p[0] = h.opcode;
  p[1] = static_cast<uint8_t>((h.se ? 0x80 : 0) | (h.mig ? 0x40 : 0) | (h.pad_cnt << 4) | h.tver);
  be::store16(p + 2, h.pkey);
  p[4] = static_cast<uint8_t>((h.fecn ? 0x80 : 0) | (h.becn ? 0x40 : 0));
  be::store24(p + 5, h.dest_qp);
  p[8] = h.ack_req ? 0x80 : 0;
  be::store24(p + 9, h.psn);
  return {};
}

Result<Bth> decode_bth(std::span<const uint8_t> in) {
  if (short_input(in, kBthBytes)) return KBV_ERR_INVALID_ARGUMENT;
  const uint8_t* p = in.data();
  Bth h;
  h.opcode = p[0];
  h.se = (p[1] & 0x80) != 0;
  h.mig = (p[1] & 0x40) != 0;
  h.pad_cnt = static_cast<uint8_t>((p[1] >> 4) & 3);
  h.tver = p[1] & 0xF;
  h.pkey = be::load16(p + 2);
  h.fecn = (p[4] & 0x80) != 0;
  h.becn = (p[4] & 0x40) != 0;
  h.dest_qp = be::load24(p + 5);
  h.ack_req = (p[8] & 0x80) != 0;
  h.psn = be::load24(p + 9);
  return h;
}

Status encode(const Reth& h, std::span<uint8_t> out) {
  if (Status s = check_out(out, kRethBytes); !s) return s;
  be::store64(out.data(), h.va);
  be::store32(out.data() + 8, h.rkey);
  be::store32(out.data() + 12, h.dma_len);
  return {};
}

Result<Reth> decode_reth(std::span<const uint8_t> in) {
  if (short_input(in, kRethBytes)) return KBV_ERR_INVALID_ARGUMENT;
  return Reth{be::load64(in.data()), be::load32(in.data() + 8), be::load32(in.data() + 12)};
}

Status encode(const Aeth& h, std::span<uint8_t> out) {
  if (Status s = check_out(out, kAethBytes); !s) return s;
  if (h.msn > 0xFFFFFF) return KBV_ERR_INVALID_ARGUMENT;
  out[0] = h.syndrome;
  be::store24(out.data() + 1, h.msn);
  return {};
}

Result<Aeth> decode_aeth(std::span<const uint8_t> in) {
  if (short_input(in, kAethBytes)) return KBV_ERR_INVALID_ARGUMENT;
  return Aeth{in[0], be::load24(in.data() + 1)};
}

Status encode(const Deth& h, std::span<uint8_t> out) {
  if (Status s = check_out(out, kDethBytes); !s) return s;
  if (h.src_qp > kQpnMask) return KBV_ERR_INVALID_ARGUMENT;
  be::store32(out.data(), h.qkey);
  out[4] = 0;  // reserved
  be::store24(out.data() + 5, h.src_qp);
  return {};
}

Result<Deth> decode_deth(std::span<const uint8_t> in) {
  if (short_input(in, kDethBytes)) return KBV_ERR_INVALID_ARGUMENT;
  return Deth{be::load32(in.data()), be::load24(in.data() + 5)};
}

Status encode(const ImmDt& h, std::span<uint8_t> out) {
  if (Status s = check_out(out, kImmDtBytes); !s) return s;
  be::store32(out.data(), h.imm);
  return {};
}

Result<ImmDt> decode_immdt(std::span<const uint8_t> in) {
  if (short_input(in, kImmDtBytes)) return KBV_ERR_INVALID_ARGUMENT;
  return ImmDt{be::load32(in.data())};
}

Status encode(const AtomicEth& h, std::span<uint8_t> out) {
  if (Status s = check_out(out, kAtomicEthBytes); !s) return s;
  be::store64(out.data(), h.va);
  be::store32(out.data() + 8, h.rkey);
  be::store64(out.data() + 12, h.swap_add);
  be::store64(out.data() + 20, h.compare);
  return {};
}

Result<AtomicEth> decode_atomic_eth(std::span<const uint8_t> in) {
  if (short_input(in, kAtomicEthBytes)) return KBV_ERR_INVALID_ARGUMENT;
  return AtomicEth{be::load64(in.data()), be::load32(in.data() + 8), be::load64(in.data() + 12),
                   be::load64(in.data() + 20)};
}

Status encode(const AtomicAckEth& h, std::span<uint8_t> out) {
  if (Status s = check_out(out, kAtomicAckEthBytes); !s) return s;
  be::store64(out.data(), h.orig);
  return {};
}

Result<AtomicAckEth> decode_atomic_ack_eth(std::span<const uint8_t> in) {
  if (short_input(in, kAtomicAckEthBytes)) return KBV_ERR_INVALID_ARGUMENT;
  return AtomicAckEth{be::load64(in.data())};
}

// ---- opcode table -------------------------------------------------------------

namespace {

constexpr OpcodeInfo op(const char* name, uint8_t ext, bool payload, Operation o, Position p) {
  return OpcodeInfo{name, ext, payload, o, p, static_cast<uint8_t>(kBthBytes + ext_bytes(ext))};
}

using O = Operation;
using P = Position;

// IBTA Table 38 / rxe_opcode.c: the RC and UC operations 0x00-0x14 (UC has
// SEND and RDMA WRITE only, 0x00-0x0B). Index = OpCode[4:0].
constexpr std::array<OpcodeInfo, 0x15> kRcTable = {{
    op("RC SEND First", 0, true, O::kSend, P::kFirst),
    op("RC SEND Middle", 0, true, O::kSend, P::kMiddle),
    op("RC SEND Last", 0, true, O::kSend, P::kLast),
    op("RC SEND Last with Immediate", kExtImmDt, true, O::kSend, P::kLast),
    op("RC SEND Only", 0, true, O::kSend, P::kOnly),
    op("RC SEND Only with Immediate", kExtImmDt, true, O::kSend, P::kOnly),
    op("RC RDMA WRITE First", kExtReth, true, O::kWrite, P::kFirst),
    op("RC RDMA WRITE Middle", 0, true, O::kWrite, P::kMiddle),
    op("RC RDMA WRITE Last", 0, true, O::kWrite, P::kLast),
    op("RC RDMA WRITE Last with Immediate", kExtImmDt, true, O::kWrite, P::kLast),
    op("RC RDMA WRITE Only", kExtReth, true, O::kWrite, P::kOnly),
    op("RC RDMA WRITE Only with Immediate", kExtReth | kExtImmDt, true, O::kWrite, P::kOnly),
    op("RC RDMA READ Request", kExtReth, false, O::kReadRequest, P::kOnly),
    op("RC RDMA READ response First", kExtAeth, true, O::kReadResponse, P::kFirst),
    op("RC RDMA READ response Middle", 0, true, O::kReadResponse, P::kMiddle),
    op("RC RDMA READ response Last", kExtAeth, true, O::kReadResponse, P::kLast),
    op("RC RDMA READ response Only", kExtAeth, true, O::kReadResponse, P::kOnly),
    op("RC Acknowledge", kExtAeth, false, O::kAcknowledge, P::kOnly),
    op("RC ATOMIC Acknowledge", kExtAeth | kExtAtomicAckEth, false, O::kAtomicAcknowledge,
       P::kOnly),
    op("RC CmpSwap", kExtAtomicEth, false, O::kCompareSwap, P::kOnly),
    op("RC FetchAdd", kExtAtomicEth, false, O::kFetchAdd, P::kOnly),
}};

constexpr std::array<OpcodeInfo, 0x0C> kUcTable = {{
    op("UC SEND First", 0, true, O::kSend, P::kFirst),
    op("UC SEND Middle", 0, true, O::kSend, P::kMiddle),
    op("UC SEND Last", 0, true, O::kSend, P::kLast),
    op("UC SEND Last with Immediate", kExtImmDt, true, O::kSend, P::kLast),
    op("UC SEND Only", 0, true, O::kSend, P::kOnly),
    op("UC SEND Only with Immediate", kExtImmDt, true, O::kSend, P::kOnly),
    op("UC RDMA WRITE First", kExtReth, true, O::kWrite, P::kFirst),
    op("UC RDMA WRITE Middle", 0, true, O::kWrite, P::kMiddle),
    op("UC RDMA WRITE Last", 0, true, O::kWrite, P::kLast),
    op("UC RDMA WRITE Last with Immediate", kExtImmDt, true, O::kWrite, P::kLast),
    op("UC RDMA WRITE Only", kExtReth, true, O::kWrite, P::kOnly),
    op("UC RDMA WRITE Only with Immediate", kExtReth | kExtImmDt, true, O::kWrite, P::kOnly),
}};

constexpr OpcodeInfo kUdSendOnly = op("UD SEND Only", kExtDeth, true, O::kSend, P::kOnly);
constexpr OpcodeInfo kUdSendOnlyImm =
    op("UD SEND Only with Immediate", kExtDeth | kExtImmDt, true, O::kSend, P::kOnly);

// rxe_opcode.c lengths: e.g. RDMA WRITE Only with Immediate = BTH+RETH+ImmDt
// = 32 bytes, ATOMIC Acknowledge = BTH+AETH+AtomicAckETH = 24, CmpSwap = 40.
static_assert(kRcTable[opcode::kWriteOnlyImm].hdr_bytes == 32);
static_assert(kRcTable[opcode::kAtomicAcknowledge].hdr_bytes == 24);
static_assert(kRcTable[opcode::kCompareSwap].hdr_bytes == 40);
static_assert(kUdSendOnlyImm.hdr_bytes == 24);

}  // namespace

const OpcodeInfo* opcode_info(uint8_t op) {
  const uint8_t low = op & 0x1F;
  switch (transport_of(op)) {
    case Transport::kRc: return low < kRcTable.size() ? &kRcTable[low] : nullptr;
    case Transport::kUc: return low < kUcTable.size() ? &kUcTable[low] : nullptr;
    case Transport::kUd:
      if (op == opcode::kUdSendOnly) return &kUdSendOnly;
      if (op == opcode::kUdSendOnlyImm) return &kUdSendOnlyImm;
      return nullptr;
    default: return nullptr;  // RD, CNP, XRC, manufacturer-specific: unsupported
  }
}

Result<uint8_t> make_opcode(Transport t, Operation op, Position pos, bool with_imm) {
  auto match = [&](const OpcodeInfo& i) {
    return i.operation == op && i.position == pos && ((i.ext & kExtImmDt) != 0) == with_imm;
  };
  switch (t) {
    case Transport::kRc:
      for (size_t k = 0; k < kRcTable.size(); ++k) {
        if (match(kRcTable[k])) return static_cast<uint8_t>(opcode::kRc | k);
      }
      break;
    case Transport::kUc:
      for (size_t k = 0; k < kUcTable.size(); ++k) {
        if (match(kUcTable[k])) return static_cast<uint8_t>(opcode::kUc | k);
      }
      break;
    case Transport::kUd:
      if (match(kUdSendOnly)) return opcode::kUdSendOnly;
      if (match(kUdSendOnlyImm)) return opcode::kUdSendOnlyImm;
      break;
    default: break;
  }
  return KBV_ERR_NOT_SUPPORTED;
}

// ---- AETH tables ----------------------------------------------------------------

namespace {

// IBTA Table 45, in microseconds (ib_verbs.h IB_RNR_TIMER_655_36 = 0,
// IB_RNR_TIMER_000_01 = 1, ... IB_RNR_TIMER_491_52 = 31; values in ms there).
constexpr std::array<uint32_t, 32> kRnrUsec = {
    655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,    320,
    480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240,  15360,
    20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

// IBTA credit count encoding (ch. 9, AETH); code 31 is "invalid".
constexpr std::array<int32_t, 32> kCredits = {
    0,   1,   2,   3,   4,    6,    8,    12,   16,   24,   32,   48,    64,    96,    128,   192,
    256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, -1,
};

}  // namespace

uint32_t rnr_timer_usec(uint8_t timer_code) { return kRnrUsec[timer_code & 0x1F]; }

uint8_t rnr_timer_code_for_usec(uint32_t usec) {
  for (uint8_t c = 1; c < 32; ++c) {
    if (kRnrUsec[c] >= usec) return c;
  }
  return 0;
}

int32_t credit_count(uint8_t credit_code) { return kCredits[credit_code & 0x1F]; }

}  // namespace kbv::sim::wire
