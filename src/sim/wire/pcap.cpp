// SPDX-License-Identifier: BSD-3-Clause
// pcap writer for model RoCEv2 traffic. Format: pcap.hpp.
#include "sim/wire/pcap.hpp"

#include "sim/wire/headers.hpp"
#include "sim/wire/packet.hpp"

#include <array>
#include <cerrno>
#include <cstring>

namespace kbv::sim::wire {

namespace {

constexpr size_t kEthBytes = 14;
constexpr size_t kL2L3Bytes = kEthBytes + kIpv4HeaderBytes + kUdpHeaderBytes;

template <class T>
void put_host(uint8_t*& p, T v) {
  std::memcpy(p, &v, sizeof v);
  p += sizeof v;
}

// Locally administered MACs whose last byte is the IPv4 host byte.
void put_mac(uint8_t* p, uint32_t ip) {
  const uint8_t mac[6] = {0x02, 0x00, 0x7F, 0x00, 0x00, static_cast<uint8_t>(ip)};
  std::memcpy(p, mac, 6);
}

}  // namespace

Result<std::unique_ptr<PcapWriter>> PcapWriter::open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return Status::from_errno(errno);
  std::unique_ptr<PcapWriter> w(new PcapWriter(f));
  uint8_t hdr[24];
  uint8_t* p = hdr;
  put_host<uint32_t>(p, 0xA1B2C3D4u);  // magic (microsecond timestamps)
  put_host<uint16_t>(p, 2);            // version major
  put_host<uint16_t>(p, 4);            // version minor
  put_host<int32_t>(p, 0);             // thiszone
  put_host<uint32_t>(p, 0);            // sigfigs
  put_host<uint32_t>(p, 65535);        // snaplen
  put_host<uint32_t>(p, 1);            // LINKTYPE_ETHERNET
  if (std::fwrite(hdr, 1, sizeof hdr, f) != sizeof hdr) return KBV_ERR_IO;
  return w;
}

PcapWriter::~PcapWriter() { (void)close(); }

Status PcapWriter::write(const Ipv4Flow& flow, std::span<const uint8_t> datagram, uint64_t ts_usec,
                         uint8_t tos, uint8_t ttl) {
  if (f_ == nullptr) return KBV_ERR_INVALID_STATE;
  if (datagram.size() > kMaxDatagram) return KBV_ERR_INVALID_ARGUMENT;
  std::array<uint8_t, 16 + kL2L3Bytes> head{};
  uint8_t* p = head.data();
  const uint32_t frame = static_cast<uint32_t>(kL2L3Bytes + datagram.size());
  put_host<uint32_t>(p, static_cast<uint32_t>(ts_usec / 1000000));
  put_host<uint32_t>(p, static_cast<uint32_t>(ts_usec % 1000000));
  put_host<uint32_t>(p, frame);
  put_host<uint32_t>(p, frame);
  put_mac(p, flow.dst_ip);
  put_mac(p + 6, flow.src_ip);
  be::store16(p + 12, 0x0800);  // EtherType IPv4
  p += kEthBytes;
  build_ipv4_udp_header(flow, datagram.size(), tos, ttl,
                        std::span<uint8_t, kIpv4HeaderBytes + kUdpHeaderBytes>(p, 28));
  if (std::fwrite(head.data(), 1, head.size(), f_) != head.size() ||
      std::fwrite(datagram.data(), 1, datagram.size(), f_) != datagram.size()) {
    return KBV_ERR_IO;
  }
  return {};
}

Status PcapWriter::close() {
  if (f_ == nullptr) return {};
  const int rc = std::fclose(f_);
  f_ = nullptr;
  return rc == 0 ? Status{} : Status{KBV_ERR_IO};
}

}  // namespace kbv::sim::wire
