// SPDX-License-Identifier: BSD-3-Clause
// RoCEv2 datagram build/parse. Layout and errors: packet.hpp.
#include "sim/wire/packet.hpp"

#include <cstring>

namespace kbv::sim::wire {

namespace {

uint8_t present_ext(const PacketHeaders& h) {
  return static_cast<uint8_t>((h.deth ? kExtDeth : 0) | (h.reth ? kExtReth : 0) |
                              (h.atomic_eth ? kExtAtomicEth : 0) | (h.aeth ? kExtAeth : 0) |
                              (h.atomic_ack_eth ? kExtAtomicAckEth : 0) |
                              (h.immdt ? kExtImmDt : 0));
}

template <class H>
Status put(const std::optional<H>& h, std::span<uint8_t> out, size_t& off, size_t n) {
  if (!h) return {};
  Status s = encode(*h, out.subspan(off, n));
  off += n;
  return s;
}

template <class H, class Dec>
Status get(bool present, std::optional<H>& h, std::span<const uint8_t> in, size_t& off, size_t n,
           Dec dec) {
  if (!present) return {};
  Result<H> r = dec(in.subspan(off, n));
  if (!r) return r.status();
  h = *r;
  off += n;
  return {};
}

}  // namespace

size_t packet_bytes(uint8_t op, size_t payload_len) {
  const OpcodeInfo* info = opcode_info(op);
  if (info == nullptr) return 0;
  return info->hdr_bytes + payload_len + pad_count(payload_len) + kIcrcBytes;
}

Result<size_t> build_packet(const PacketHeaders& h, std::span<const uint8_t> payload,
                            std::span<uint8_t> out) {
  const OpcodeInfo* info = opcode_info(h.bth.opcode);
  if (info == nullptr) return KBV_ERR_NOT_SUPPORTED;
  if (present_ext(h) != info->ext) return KBV_ERR_INVALID_ARGUMENT;
  if (!info->payload && !payload.empty()) return KBV_ERR_INVALID_ARGUMENT;
  if (payload.size() > kMaxPayload) return KBV_ERR_INVALID_ARGUMENT;
  const size_t total = packet_bytes(h.bth.opcode, payload.size());
  if (out.size() < total) return KBV_ERR_BUFFER_TOO_SMALL;

  Bth bth = h.bth;
  bth.pad_cnt = pad_count(payload.size());
  if (Status s = encode(bth, out); !s) return s;
  size_t off = kBthBytes;
  // Order of IBTA Table 38 (see Ext in headers.hpp).
  if (Status s = put(h.deth, out, off, kDethBytes); !s) return s;
  if (Status s = put(h.reth, out, off, kRethBytes); !s) return s;
  if (Status s = put(h.atomic_eth, out, off, kAtomicEthBytes); !s) return s;
  if (Status s = put(h.aeth, out, off, kAethBytes); !s) return s;
  if (Status s = put(h.atomic_ack_eth, out, off, kAtomicAckEthBytes); !s) return s;
  if (Status s = put(h.immdt, out, off, kImmDtBytes); !s) return s;
  if (!payload.empty()) std::memcpy(out.data() + off, payload.data(), payload.size());
  off += payload.size();
  std::memset(out.data() + off, 0, bth.pad_cnt + kIcrcBytes);  // pad + ICRC placeholder
  return total;
}

Result<ParsedPacket> parse_packet(std::span<const uint8_t> datagram) {
  if (datagram.size() < kBthBytes + kIcrcBytes) return KBV_ERR_INVALID_ARGUMENT;
  Result<Bth> bth = decode_bth(datagram);
  if (!bth) return bth.status();
  if (bth->tver != 0) return KBV_ERR_INVALID_ARGUMENT;  // only TVer 0 is defined (IBTA ch. 9, BTH)
  const OpcodeInfo* info = opcode_info(bth->opcode);
  if (info == nullptr) return KBV_ERR_NOT_SUPPORTED;
  if (datagram.size() < info->hdr_bytes + kIcrcBytes) return KBV_ERR_INVALID_ARGUMENT;

  ParsedPacket p;
  p.info = info;
  p.headers.bth = *bth;
  const uint8_t ext = info->ext;
  size_t off = kBthBytes;
  Status s = get(ext & kExtDeth, p.headers.deth, datagram, off, kDethBytes, decode_deth);
  if (s) s = get(ext & kExtReth, p.headers.reth, datagram, off, kRethBytes, decode_reth);
  if (s) {
    s = get(ext & kExtAtomicEth, p.headers.atomic_eth, datagram, off, kAtomicEthBytes,
            decode_atomic_eth);
  }
  if (s) s = get(ext & kExtAeth, p.headers.aeth, datagram, off, kAethBytes, decode_aeth);
  if (s) {
    s = get(ext & kExtAtomicAckEth, p.headers.atomic_ack_eth, datagram, off, kAtomicAckEthBytes,
            decode_atomic_ack_eth);
  }
  if (s) s = get(ext & kExtImmDt, p.headers.immdt, datagram, off, kImmDtBytes, decode_immdt);
  if (!s) return s;

  const size_t area = datagram.size() - off - kIcrcBytes;  // payload + pad
  if (bth->pad_cnt > area) return KBV_ERR_INVALID_ARGUMENT;
  if (!info->payload && area != 0) return KBV_ERR_INVALID_ARGUMENT;
  // BTH PadCnt (IBTA ch. 9): payload + pad is a whole number of 4-byte words.
  if ((area & 3) != 0) return KBV_ERR_INVALID_ARGUMENT;
  p.payload = datagram.subspan(off, area - bth->pad_cnt);
  return p;
}

}  // namespace kbv::sim::wire
