// SPDX-License-Identifier: BSD-3-Clause
// src/sim/wire/pcap: the classic pcap layout (pcap-savefile(5), written by
// libpcap) and the Ethernet/IPv4/UDP framing around a model datagram, read
// back byte by byte; write errors and oversized datagrams.
#include "sim/wire/pcap.hpp"

#include "sim/wire/packet.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace kbv::sim::wire {
namespace {

using Bytes = std::vector<uint8_t>;

uint32_t le32(const Bytes& d, size_t off) {
  uint32_t v;
  std::memcpy(&v, d.data() + off, 4);  // written in host order, read back the same way
  return v;
}

TEST(WirePcap, WritesClassicPcapWithEthernetFraming) {
  const std::string path =
      testing::TempDir() + "kbv_wire_pcap_" + std::to_string(::getpid()) + ".pcap";
  const Ipv4Flow flow{0x7F000005, 0x7F000006, 0xC0DE, 4791};
  PacketHeaders h;
  h.bth.opcode = opcode::kSendOnly;
  h.bth.dest_qp = 0x33;
  Bytes d(64);
  d.resize(*build_packet(h, Bytes{1, 2, 3, 4, 5}, d));
  ASSERT_TRUE(write_icrc(flow, d).is_ok());
  {
    Result<std::unique_ptr<PcapWriter>> w = PcapWriter::open(path);
    ASSERT_TRUE(w.has_value());
    ASSERT_TRUE((*w)->write(flow, d, 1500000, 0x02, 17).is_ok());
    ASSERT_TRUE((*w)->write(flow, d, 2000001).is_ok());
    ASSERT_TRUE((*w)->close().is_ok());
    EXPECT_EQ((*w)->write(flow, d, 0), KBV_ERR_INVALID_STATE);
  }
  std::ifstream f(path, std::ios::binary);
  Bytes file((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::remove(path.c_str());

  const size_t frame = 14 + 20 + 8 + d.size();
  ASSERT_EQ(file.size(), 24 + 2 * (16 + frame));
  EXPECT_EQ(le32(file, 0), 0xA1B2C3D4u);  // magic, microsecond resolution
  EXPECT_EQ(file[4] | file[5] << 8, 2);   // version 2.4 (host order)
  EXPECT_EQ(file[6] | file[7] << 8, 4);
  EXPECT_EQ(le32(file, 20), 1u);  // LINKTYPE_ETHERNET
  // Record 1: ts 1.500000, lengths.
  EXPECT_EQ(le32(file, 24), 1u);
  EXPECT_EQ(le32(file, 28), 500000u);
  EXPECT_EQ(le32(file, 32), frame);
  EXPECT_EQ(le32(file, 36), frame);
  const size_t eth = 40;
  EXPECT_EQ(file[eth + 12], 0x08);  // EtherType IPv4
  EXPECT_EQ(file[eth + 13], 0x00);
  EXPECT_EQ(file[eth + 5], 0x06);   // destination MAC ends in the host byte
  EXPECT_EQ(file[eth + 11], 0x05);  // source MAC
  const size_t ip = eth + 14;
  EXPECT_EQ(file[ip], 0x45);
  EXPECT_EQ(file[ip + 1], 0x02);   // TOS as given
  EXPECT_EQ(file[ip + 8], 17);     // TTL as given
  EXPECT_EQ(file[ip + 9], 17);     // UDP
  EXPECT_EQ(file[ip + 20], 0xC0);  // UDP source port 0xC0DE
  EXPECT_EQ(file[ip + 21], 0xDE);
  EXPECT_EQ(file[ip + 22] << 8 | file[ip + 23], 4791);
  EXPECT_EQ(Bytes(file.begin() + static_cast<long>(ip + 28),
                  file.begin() + static_cast<long>(ip + 28 + d.size())),
            d);
  // The IPv4 packet as written verifies against the datagram's ICRC.
  Bytes ippkt(file.begin() + static_cast<long>(ip),
              file.begin() + static_cast<long>(ip + 28 + d.size()));
  EXPECT_EQ(*compute_icrc_ipv4(ippkt), stored_icrc(d));
  // Record 2: ts 2.000001 and the default TTL 64.
  const size_t r2 = 24 + 16 + frame;
  EXPECT_EQ(le32(file, r2), 2u);
  EXPECT_EQ(le32(file, r2 + 4), 1u);
  EXPECT_EQ(file[r2 + 16 + 14 + 8], 64);
}

TEST(WirePcap, OpenFailsForBadPath) {
  EXPECT_EQ(PcapWriter::open("/nonexistent-dir/x.pcap").status(), KBV_ERR_NOT_FOUND);
}

// A device that refuses every write (/dev/full: ENOSPC): libpcap's buffered
// stream fails once its buffer is flushed; write and close report it.
TEST(WirePcap, WriteErrorsAreReported) {
  Result<std::unique_ptr<PcapWriter>> w = PcapWriter::open("/dev/full");
  ASSERT_TRUE(w.has_value());
  const Ipv4Flow flow{0x7F000005, 0x7F000006, 0xC0DE, 4791};
  const Bytes d(kMaxDatagram, 0xAB);
  Status s;
  for (int i = 0; i < 64 && s.is_ok(); ++i) s = (*w)->write(flow, d, static_cast<uint64_t>(i));
  EXPECT_EQ(s, KBV_ERR_IO);  // 64 frames of 4 KiB overrun any stdio buffer
  EXPECT_EQ((*w)->close(), KBV_ERR_IO);
  EXPECT_EQ((*w)->write(flow, d, 0), KBV_ERR_INVALID_STATE);
}

TEST(WirePcap, RefusesOversizedDatagram) {
  const std::string path =
      testing::TempDir() + "kbv_wire_pcap_big_" + std::to_string(::getpid()) + ".pcap";
  Result<std::unique_ptr<PcapWriter>> w = PcapWriter::open(path);
  ASSERT_TRUE(w.has_value());
  const Ipv4Flow flow{0x7F000005, 0x7F000006, 0xC0DE, 4791};
  EXPECT_EQ((*w)->write(flow, Bytes(kMaxDatagram + 1), 0), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE((*w)->close().is_ok());
  std::ifstream f(path, std::ios::binary);
  Bytes file((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::remove(path.c_str());
  EXPECT_EQ(file.size(), 24u);  // the file header only
}

}  // namespace
}  // namespace kbv::sim::wire
