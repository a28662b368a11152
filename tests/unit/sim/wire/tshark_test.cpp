// SPDX-License-Identifier: BSD-3-Clause
// Cross-check with Wireshark: packets built by src/sim/wire, written to a
// pcap (Ethernet/IPv4/UDP framing from pcap.hpp), must decode in tshark with
// the same BTH opcode, DestQP, PSN, RETH VA/R_Key/DMA length, AETH syndrome
// and MSN, DETH and AtomicETH fields, without malformed-packet errors.
//
// tshark 4.0 (packet-infiniband.c) shows the ICRC but does not check it: the
// test checks the ICRC tshark displays (read big-endian, so byte-swapped
// relative to the CRC value) against a CRC computed here bit by bit from the
// frame bytes in the file, with the masking of IBTA Annex A17 / rxe_icrc.c.
//
// Skipped when tshark is not installed (Debian package "tshark").
#include "sim/wire/icrc.hpp"
#include "sim/wire/packet.hpp"
#include "sim/wire/pcap.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace kbv::sim::wire {
namespace {

using Bytes = std::vector<uint8_t>;

std::string find_tshark() {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    std::string p = dir + "/tshark";
    if (!dir.empty() && ::access(p.c_str(), X_OK) == 0) return p;
  }
  return {};
}

std::string run(const std::string& cmd) {
  std::string out;
  std::FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  ::pclose(f);
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> v;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      v.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  v.push_back(cur);
  return v;
}

uint64_t num(const std::string& s) { return std::stoull(s, nullptr, 0); }

uint32_t bitwise_crc(uint32_t reg, const Bytes& data) {
  for (uint8_t b : data) {
    reg ^= b;
    for (int i = 0; i < 8; ++i) reg = (reg >> 1) ^ ((reg & 1) ? 0xEDB88320u : 0);
  }
  return reg;
}

// Frames of a classic pcap file (24-byte header, 16-byte record headers).
std::vector<Bytes> read_pcap_frames(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  Bytes d((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<Bytes> frames;
  size_t off = 24;
  while (off + 16 <= d.size()) {
    uint32_t incl = d[off + 8] | d[off + 9] << 8 | d[off + 10] << 16 | uint32_t{d[off + 11]} << 24;
    off += 16;
    if (off + incl > d.size()) break;
    frames.emplace_back(d.begin() + static_cast<long>(off),
                        d.begin() + static_cast<long>(off + incl));
    off += incl;
  }
  return frames;
}

// ICRC of an Ethernet frame by the definition: CRC-32 over 8 x 0xFF, the
// IPv4+UDP+BTH with TOS, TTL, IP checksum, UDP checksum and BTH byte 4 set
// to ones, then the rest up to the ICRC.
uint32_t icrc_of_frame(const Bytes& frame) {
  Bytes ip(frame.begin() + 14, frame.end());
  Bytes m(8, 0xFF);
  Bytes h(ip.begin(), ip.begin() + 40);
  h[1] = h[8] = h[10] = h[11] = h[26] = h[27] = h[32] = 0xFF;
  m.insert(m.end(), h.begin(), h.end());
  m.insert(m.end(), ip.begin() + 40, ip.end() - 4);
  return ~bitwise_crc(~0u, m);
}

uint32_t bswap(uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0xFF00) | ((v << 8) & 0xFF0000) | (v << 24);
}

struct Case {
  PacketHeaders h;
  Bytes payload;
};

std::vector<Case> cases() {
  std::vector<Case> v;
  Case w;
  w.h.bth.opcode = opcode::kWriteOnly;
  w.h.bth.dest_qp = 0x000123;
  w.h.bth.psn = 0x00ABCD;
  w.h.bth.ack_req = true;
  w.h.reth = Reth{0x00007F0012345678ull, 0xCAFEF00D, 3};
  w.payload = {0, 0, 0};
  v.push_back(w);
  Case rnr;
  rnr.h.bth.opcode = opcode::kAcknowledge;
  rnr.h.bth.dest_qp = 0x000456;
  rnr.h.bth.psn = 0xFFFFFF;
  rnr.h.aeth = Aeth{aeth_rnr_nak(14), 0x000777};
  v.push_back(rnr);
  Case rd;
  rd.h.bth.opcode = opcode::kReadRequest;
  rd.h.bth.dest_qp = 0x00BEEF;
  rd.h.bth.psn = 1;
  rd.h.reth = Reth{0x1000, 0x42, 8192};
  v.push_back(rd);
  Case nak;
  nak.h.bth.opcode = opcode::kAcknowledge;
  nak.h.bth.dest_qp = 0x000456;
  nak.h.bth.psn = 7;
  nak.h.bth.becn = true;
  nak.h.aeth = Aeth{aeth_nak(NakCode::kRemoteAccessError), 0x000001};
  v.push_back(nak);
  Case cas;
  cas.h.bth.opcode = opcode::kCompareSwap;
  cas.h.bth.dest_qp = 0x000009;
  cas.h.bth.psn = 0x800000;
  cas.h.atomic_eth = AtomicEth{0x2000, 0x99, 0x1111, 0x2222};
  v.push_back(cas);
  Case ud;
  ud.h.bth.opcode = opcode::kUdSendOnly;
  ud.h.bth.dest_qp = 0x000077;
  ud.h.bth.psn = 42;
  ud.h.deth = Deth{0x80010000, 0x000005};
  ud.payload = Bytes(8, 0);
  v.push_back(ud);
  return v;
}

TEST(WireTshark, DecodesModelPackets) {
  const std::string tshark = find_tshark();
  if (tshark.empty()) GTEST_SKIP() << "tshark not installed (apt-get install tshark)";

  const std::string path =
      testing::TempDir() + "kbv_wire_tshark_" + std::to_string(::getpid()) + ".pcap";
  const std::vector<Case> cs = cases();
  std::vector<Bytes> sent;
  {
    Result<std::unique_ptr<PcapWriter>> w = PcapWriter::open(path);
    ASSERT_TRUE(w.has_value());
    uint64_t ts = 0;
    for (size_t i = 0; i < cs.size(); ++i) {
      const Ipv4Flow flow{0x7F000001, 0x7F000002, static_cast<uint16_t>(0xC000 + i), 4791};
      Bytes d(kMaxDatagram);
      Result<size_t> n = build_packet(cs[i].h, cs[i].payload, d);
      ASSERT_TRUE(n.has_value());
      d.resize(*n);
      ASSERT_TRUE(write_icrc(flow, d).is_ok());
      ASSERT_TRUE((*w)->write(flow, d, ts += 1000, 0, 64).is_ok());
      sent.push_back(d);
    }
    ASSERT_TRUE((*w)->close().is_ok());
  }

  // The frames in the file carry valid ICRCs by the definition.
  const std::vector<Bytes> frames = read_pcap_frames(path);
  ASSERT_EQ(frames.size(), cs.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(icrc_of_frame(frames[i]), stored_icrc(sent[i])) << i;
  }

  const std::string cmd = tshark + " -n -r " + path +
                          " --disable-protocol rpcordma -T fields -E separator='|'"
                          " -E occurrence=f"
                          " -e infiniband.bth.opcode -e infiniband.bth.destqp"
                          " -e infiniband.bth.psn -e infiniband.reth.va"
                          " -e infiniband.reth.r_key -e infiniband.reth.dmalen"
                          " -e infiniband.aeth.syndrome -e infiniband.aeth.msn"
                          " -e infiniband.deth.q_key -e infiniband.deth.srcqp"
                          " -e infiniband.atomiceth.swapdt -e infiniband.atomiceth.cmpdt"
                          " -e infiniband.invariant.crc -e _ws.malformed -e udp.dstport"
                          " 2>/dev/null";
  const std::vector<std::string> lines = split(run(cmd), '\n');
  std::remove(path.c_str());
  ASSERT_GE(lines.size(), cs.size()) << "tshark printed nothing";
  size_t icrc_checked = 0;
  for (size_t i = 0; i < cs.size(); ++i) {
    const std::vector<std::string> f = split(lines[i], '|');
    ASSERT_EQ(f.size(), 15u) << lines[i];
    const PacketHeaders& h = cs[i].h;
    EXPECT_EQ(num(f[0]), h.bth.opcode) << lines[i];
    EXPECT_EQ(num(f[1]), h.bth.dest_qp) << lines[i];
    EXPECT_EQ(num(f[2]), h.bth.psn) << lines[i];
    if (h.reth) {
      EXPECT_EQ(num(f[3]), h.reth->va) << lines[i];
      EXPECT_EQ(num(f[4]), h.reth->rkey) << lines[i];
      EXPECT_EQ(num(f[5]), h.reth->dma_len) << lines[i];
    }
    if (h.aeth) {
      EXPECT_EQ(num(f[6]), h.aeth->syndrome) << lines[i];
      EXPECT_EQ(num(f[7]), h.aeth->msn) << lines[i];
    }
    if (h.deth) {
      EXPECT_EQ(num(f[8]), h.deth->qkey) << lines[i];
      EXPECT_EQ(num(f[9]), h.deth->src_qp) << lines[i];
    }
    if (h.atomic_eth) {
      EXPECT_EQ(num(f[10]), h.atomic_eth->swap_add) << lines[i];
      EXPECT_EQ(num(f[11]), h.atomic_eth->compare) << lines[i];
    }
    // tshark shows the ICRC when it is the only thing after the headers.
    if (!f[12].empty()) {
      EXPECT_EQ(num(f[12]), bswap(icrc_of_frame(frames[i]))) << lines[i];
      ++icrc_checked;
    }
    EXPECT_TRUE(f[13].empty()) << "malformed: " << lines[i];
    EXPECT_EQ(num(f[14]), 4791u);
  }
  EXPECT_GE(icrc_checked, 3u);  // the ACK, NAK, READ request and CmpSwap at least
}

}  // namespace
}  // namespace kbv::sim::wire
