// SPDX-License-Identifier: BSD-3-Clause
//
// A pcap file writer for model RoCEv2 traffic, on libpcap (Debian
// libpcap0.8, loaded with dlopen at the first open(), so programs that never
// capture do not load it): pcap_open_dead(DLT_EN10MB, 65535) + pcap_dump_fopen +
// pcap_dump. Each datagram is framed as Ethernet II (EtherType 0x0800) + IPv4
// + UDP exactly as the loopback kernel would send it (icrc.hpp
// build_ipv4_udp_header), so tshark/Wireshark decode the InfiniBand headers
// (UDP port 4791) and the ICRC covers the same IPv4/UDP fields the receiver
// uses. No capture privileges are needed.
//
// Format (written by libpcap, pcap-savefile(5)): the classic file format —
// 24-byte header (magic 0xA1B2C3D4 in host byte order, microsecond
// timestamps, version 2.4, snaplen 65535, LINKTYPE_ETHERNET 1), then per
// packet a 16-byte record header (ts_sec, ts_usec, incl_len, orig_len) and
// the frame.
//
// Errors: open -> KBV_ERR_NOT_SUPPORTED when libpcap cannot be loaded; the errno of fopen mapped by
// Status::from_errno (e.g. KBV_ERR_NOT_FOUND for a missing directory), KBV_ERR_IO when libpcap
// cannot write the file header, KBV_ERR_NO_MEMORY when it cannot allocate; write -> KBV_ERR_IO once
// the stream has an error (libpcap's pcap_dump returns nothing: the stream's error flag is read
// after it), KBV_ERR_INVALID_ARGUMENT for a datagram larger than kMaxDatagram,
// KBV_ERR_INVALID_STATE after close(); close -> KBV_ERR_IO when the final
// flush fails or any earlier write did.
//
// Threading: one writer per thread. Control/diagnostic path: not for the
// data path.
#pragma once

#include "sim/wire/icrc.hpp"

#include <kbv/status.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

// libpcap's handle types (pcap/pcap.h), declared here so users of this header
// do not take in libpcap's macros.
struct pcap;
struct pcap_dumper;

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
  PcapWriter(struct pcap* dead, struct pcap_dumper* dumper);
  struct pcap* dead_;           // pcap_open_dead: link type and snaplen only
  struct pcap_dumper* dumper_;  // nullptr once closed
  std::vector<uint8_t> frame_;  // Ethernet + IPv4 + UDP + datagram, reused
};

}  // namespace kbv::sim::wire
