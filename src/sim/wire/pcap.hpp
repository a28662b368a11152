// SPDX-License-Identifier: BSD-3-Clause
//
// A minimal pcap file writer for model RoCEv2 traffic: each datagram is
// framed as Ethernet II (EtherType 0x0800) + IPv4 + UDP exactly as the
// loopback kernel would send it (icrc.hpp build_ipv4_udp_header), so
// tshark/Wireshark decode the InfiniBand headers (UDP port 4791) and the ICRC
// covers the same IPv4/UDP fields the receiver uses. No capture privileges
// are needed.
//
// Format: the classic libpcap file format (pcap-savefile(5)): 24-byte global
// header (magic 0xA1B2C3D4 in host byte order, version 2.4, snaplen 65535,
// LINKTYPE_ETHERNET 1), then per packet a 16-byte record header (ts_sec,
// ts_usec, incl_len, orig_len) and the frame.
//
// Errors: open -> the errno of fopen mapped by Status::from_errno (e.g.
// KBV_ERR_NOT_FOUND for a missing directory); write -> KBV_ERR_IO on a short
// write, KBV_ERR_INVALID_ARGUMENT for a datagram larger than kMaxDatagram,
// KBV_ERR_INVALID_STATE after close().
//
// Threading: one writer per thread. Control/diagnostic path: not for the
// data path.
#pragma once

#include "sim/wire/icrc.hpp"

#include <kbv/status.hpp>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>

namespace kbv::sim::wire {

class PcapWriter {
 public:
  static Result<std::unique_ptr<PcapWriter>> open(const std::string& path);
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  // Appends one frame carrying `datagram` (BTH .. ICRC) on `flow`. The record
  // timestamp is ts_usec microseconds (tests pass a counter, keeping files
  // reproducible).
  Status write(const Ipv4Flow& flow, std::span<const uint8_t> datagram, uint64_t ts_usec,
               uint8_t tos = 0, uint8_t ttl = 64);
  // Flushes and closes; further writes fail.
  Status close();

 private:
  explicit PcapWriter(std::FILE* f) : f_(f) {}
  std::FILE* f_;
};

}  // namespace kbv::sim::wire
