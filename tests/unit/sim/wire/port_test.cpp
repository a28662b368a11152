// SPDX-License-Identifier: BSD-3-Clause
// src/sim/wire/port: two model ports exchanging RoCEv2 datagrams over
// loopback (127.0.0.N:4791), flow entropy source ports, ICRC and malformed
// drops, receive batching, fault injection on a live port.
#include "sim/wire/port.hpp"

#include "sim/wire/icrc.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <vector>

namespace kbv::sim::wire {
namespace {

using Bytes = std::vector<uint8_t>;

// Opens a port on the first free 127.0.0.N with N from `first` (tests use
// 200+ to stay clear of the model's own instances).
std::unique_ptr<Port> open_port(uint8_t first, FaultConfig faults = {}) {
  for (unsigned n = first; n < 254; ++n) {
    PortConfig c;
    c.host = static_cast<uint8_t>(n);
    c.faults = faults;
    Result<std::unique_ptr<Port>> p = Port::open(c);
    if (p) return std::move(*p);
    EXPECT_EQ(p.status(), KBV_ERR_ALREADY_EXISTS);
  }
  ADD_FAILURE() << "no free loopback address";
  return nullptr;
}

// Polls `p` until `want` packets arrived (or nothing more arrives for a
// second: a failure, not a timing measurement).
std::vector<RxPacket> receive(Port& p, size_t want, std::vector<Bytes>* payloads = nullptr) {
  std::vector<RxPacket> got;
  std::array<RxPacket, 64> batch;
  while (got.size() < want) {
    Result<bool> r = p.wait_readable(1000);
    if (!r || !*r) break;
    Result<size_t> n = p.poll(batch);
    EXPECT_TRUE(n.has_value());
    if (!n) break;
    EXPECT_LE(*n, Port::kRxBatch);
    for (size_t i = 0; i < *n; ++i) {
      got.push_back(batch[i]);
      if (payloads) payloads->emplace_back(batch[i].payload.begin(), batch[i].payload.end());
    }
  }
  return got;
}

uint16_t send_raw(uint32_t dst, const Bytes& d);

PacketHeaders send_only(uint32_t qpn, uint32_t psn) {
  PacketHeaders h;
  h.bth.opcode = opcode::kSendOnly;
  h.bth.dest_qp = qpn;
  h.bth.psn = psn;
  h.bth.ack_req = true;
  return h;
}

TEST(WirePort, AddressesAndGid) {
  EXPECT_EQ(loopback_ip(7), 0x7F000007u);
  const std::array<uint8_t, 16> want = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 127, 0, 0, 7};
  EXPECT_EQ(gid_from_ipv4(loopback_ip(7)), want);
}

TEST(WirePort, EntropySourcePorts) {
  std::set<uint16_t> seen;
  for (uint32_t q = 1; q < 2000; ++q) {
    const uint16_t p = entropy_src_port(q, 0x100 + q);
    EXPECT_GE(p, 0xC000);  // 0xC000 | 14-bit hash
    EXPECT_EQ(p, entropy_src_port(q, 0x100 + q));
    seen.insert(p);
  }
  EXPECT_GT(seen.size(), 1800u);  // spreads flows over the port range
}

TEST(WirePort, OpenRejectsBadConfigAndBusyAddress) {
  PortConfig c;
  c.host = 0;
  EXPECT_EQ(Port::open(c).status(), KBV_ERR_INVALID_ARGUMENT);
  c.host = 255;
  EXPECT_EQ(Port::open(c).status(), KBV_ERR_INVALID_ARGUMENT);
  c.host = 201;
  c.faults.drop = 2;
  EXPECT_EQ(Port::open(c).status(), KBV_ERR_INVALID_ARGUMENT);
  std::unique_ptr<Port> a = open_port(201);
  ASSERT_NE(a, nullptr);
  PortConfig same;
  same.host = static_cast<uint8_t>(a->ip() & 0xFF);
  EXPECT_EQ(Port::open(same).status(), KBV_ERR_ALREADY_EXISTS);
  EXPECT_GE(a->fd(), 0);
}

TEST(WirePort, TwoPortsExchangePackets) {
  std::unique_ptr<Port> a = open_port(202);
  std::unique_ptr<Port> b = open_port(static_cast<uint8_t>((a ? a->ip() & 0xFF : 202) + 1));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const uint16_t sport = entropy_src_port(0x11, 0x22);
  ASSERT_TRUE(a->prepare_src_port(sport).is_ok());

  const Bytes payload = {'h', 'e', 'l', 'l', 'o', '!', '!'};
  ASSERT_TRUE(a->send(b->ip(), sport, send_only(0x22, 0xFFFFFF), payload).is_ok());
  std::vector<Bytes> payloads;
  std::vector<RxPacket> got = receive(*b, 1, &payloads);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].src_ip, a->ip());
  EXPECT_EQ(got[0].src_port, sport);  // the entropy port is the UDP source
  EXPECT_EQ(got[0].headers.bth.opcode, opcode::kSendOnly);
  EXPECT_EQ(got[0].headers.bth.dest_qp, 0x22u);
  EXPECT_EQ(got[0].headers.bth.psn, 0xFFFFFFu);
  EXPECT_EQ(got[0].headers.bth.pad_cnt, 1);
  EXPECT_EQ(payloads[0], payload);
  EXPECT_EQ(got[0].datagram_bytes, 12u + 8u + 4u);

  // The responder answers with an ACK (AETH), from its own entropy port.
  PacketHeaders ack;
  ack.bth.opcode = opcode::kAcknowledge;
  ack.bth.dest_qp = 0x11;
  ack.bth.psn = 0xFFFFFF;
  ack.aeth = Aeth{aeth_ack(kCreditInvalid), 1};
  const uint16_t rport = entropy_src_port(0x22, 0x11);
  ASSERT_TRUE(b->send(a->ip(), rport, ack, {}).is_ok());
  std::vector<RxPacket> back = receive(*a, 1);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].src_port, rport);
  ASSERT_TRUE(back[0].headers.aeth.has_value());
  EXPECT_EQ(back[0].headers.aeth->msn, 1u);
  EXPECT_EQ(back[0].payload.size(), 0u);

  EXPECT_EQ(a->counters().tx_packets, 1u);
  EXPECT_EQ(b->counters().rx_packets, 1u);
  EXPECT_EQ(a->counters().rx_packets, 1u);
  EXPECT_EQ(b->counters().rx_bad_icrc, 0u);
}

TEST(WirePort, FdSignalsEpollIn) {
  std::unique_ptr<Port> a = open_port(218);
  ASSERT_NE(a, nullptr);
  std::unique_ptr<Port> b = open_port(static_cast<uint8_t>((a->ip() & 0xFF) + 1));
  ASSERT_NE(b, nullptr);
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(ep, 0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 77;
  ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, b->fd(), &ev), 0);
  epoll_event out{};
  EXPECT_EQ(::epoll_wait(ep, &out, 1, 0), 0);  // nothing yet
  ASSERT_TRUE(a->send(b->ip(), 0xC500, send_only(4, 1), Bytes{1, 2, 3, 4}).is_ok());
  ASSERT_EQ(::epoll_wait(ep, &out, 1, 1000), 1);
  EXPECT_EQ(out.data.u64, 77u);
  EXPECT_TRUE(out.events & EPOLLIN);
  std::array<RxPacket, 4> batch;
  EXPECT_EQ(*b->poll(batch), 1u);
  EXPECT_EQ(::epoll_wait(ep, &out, 1, 0), 0);  // drained
  ::close(ep);
}

TEST(WirePort, SourcePortSocketsAreCapped) {
  std::unique_ptr<Port> b = open_port(221);
  ASSERT_NE(b, nullptr);
  PortConfig c;
  c.max_src_ports = 2;
  std::unique_ptr<Port> a;
  for (unsigned n = (b->ip() & 0xFF) + 1; n < 254 && !a; ++n) {
    c.host = static_cast<uint8_t>(n);
    Result<std::unique_ptr<Port>> r = Port::open(c);
    if (r) a = std::move(*r);
  }
  ASSERT_NE(a, nullptr);
  for (uint16_t sp : {0xD001, 0xD002, 0xD003}) {
    ASSERT_TRUE(a->send(b->ip(), sp, send_only(6, sp), Bytes{1, 2, 3, 4}).is_ok());
  }
  std::vector<RxPacket> got = receive(*b, 3);
  ASSERT_EQ(got.size(), 3u);
  std::set<uint16_t> ports;
  for (const RxPacket& r : got) {
    ports.insert(r.src_port);
    // The ICRC followed the port actually used: every datagram was accepted.
    if (r.headers.bth.psn == 0xD003) {
      EXPECT_EQ(r.src_port, kRoceV2UdpPort);
    }
  }
  EXPECT_EQ(ports, (std::set<uint16_t>{0xD001, 0xD002, kRoceV2UdpPort}));
  EXPECT_EQ(a->counters().tx_src_port_fallback, 1u);
  EXPECT_EQ(b->counters().rx_bad_icrc, 0u);
  // Datagrams outside [BTH + ICRC, kMaxDatagram] are refused.
  Bytes tiny(15, 0);
  EXPECT_EQ(a->send_datagram(b->ip(), 0xD001, tiny), KBV_ERR_INVALID_ARGUMENT);
  // A short datagram on the wire counts as malformed.
  send_raw(b->ip(), Bytes(10, 0));
  ASSERT_TRUE(*b->wait_readable(1000));
  std::array<RxPacket, 4> batch;
  EXPECT_EQ(*b->poll(batch), 0u);
  EXPECT_EQ(b->counters().rx_malformed, 1u);
}

TEST(WirePort, ReceiveIsBatched) {
  std::unique_ptr<Port> a = open_port(205);
  std::unique_ptr<Port> b = open_port(static_cast<uint8_t>((a ? a->ip() & 0xFF : 205) + 1));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const Bytes payload(64, 0x5A);
  for (uint32_t i = 0; i < 40; ++i) {
    ASSERT_TRUE(a->send(b->ip(), 0xC100, send_only(1, i), payload).is_ok());
  }
  std::vector<RxPacket> got = receive(*b, 40);
  ASSERT_EQ(got.size(), 40u);
  std::set<uint32_t> psns;
  for (const RxPacket& r : got) psns.insert(r.headers.bth.psn);
  EXPECT_EQ(psns.size(), 40u);
  EXPECT_EQ(*psns.rbegin(), 39u);
  // A zero-sized output span receives nothing.
  EXPECT_EQ(*b->poll({}), 0u);
}

// Sends raw bytes to `dst` from a plain UDP socket; returns its source port.
uint16_t send_raw(uint32_t dst, const Bytes& d) {
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(dst);
  to.sin_port = htons(4791);
  EXPECT_EQ(::sendto(fd, d.data(), d.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to),
            static_cast<ssize_t>(d.size()));
  sockaddr_in me{};
  socklen_t len = sizeof me;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len);
  ::close(fd);
  return ntohs(me.sin_port);
}

TEST(WirePort, BadIcrcAndMalformedAreDroppedAndCounted) {
  std::unique_ptr<Port> b = open_port(208);
  ASSERT_NE(b, nullptr);
  std::unique_ptr<Port> a = open_port(static_cast<uint8_t>((b->ip() & 0xFF) + 1));
  ASSERT_NE(a, nullptr);
  // A well-formed datagram with a wrong ICRC.
  Bytes d(32);
  size_t n = *build_packet(send_only(3, 0), Bytes{1, 2, 3, 4}, d);
  d.resize(n);
  d.back() ^= 0x01;
  send_raw(b->ip(), d);
  // A datagram with a correct ICRC but an unsupported opcode (0x1F).
  Bytes m = {0x1F, 0, 0xFF, 0xFF, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  // Its ICRC needs the sender's port: send from a socket bound in advance.
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  from.sin_addr.s_addr = htonl(0x7F000001);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from), 0);
  socklen_t len = sizeof from;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&from), &len);
  ASSERT_TRUE(write_icrc(Ipv4Flow{0x7F000001, b->ip(), ntohs(from.sin_port), 4791}, m).is_ok());
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(b->ip());
  to.sin_port = htons(4791);
  ASSERT_EQ(::sendto(fd, m.data(), m.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to),
            static_cast<ssize_t>(m.size()));
  ::close(fd);
  // A datagram larger than kMaxDatagram (truncated by the receive buffer).
  send_raw(b->ip(), Bytes(kMaxDatagram + 100, 0));
  // And one good datagram from a model port.
  ASSERT_TRUE(a->send(b->ip(), 0xC200, send_only(3, 7), Bytes{9, 9, 9, 9}).is_ok());
  // Drain until all three were accounted for (no ordering assumed between
  // the three senders).
  std::vector<RxPacket> got;
  std::array<RxPacket, 8> batch;
  while (got.size() + b->counters().rx_bad_icrc + b->counters().rx_malformed +
             b->counters().rx_truncated <
         4) {
    Result<bool> r = b->wait_readable(1000);
    ASSERT_TRUE(r.has_value());
    ASSERT_TRUE(*r) << "datagrams missing";
    Result<size_t> n = b->poll(batch);
    ASSERT_TRUE(n.has_value());
    got.insert(got.end(), batch.begin(), batch.begin() + static_cast<long>(*n));
  }
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].headers.bth.psn, 7u);
  EXPECT_EQ(b->counters().rx_bad_icrc, 1u);
  EXPECT_EQ(b->counters().rx_malformed, 1u);
  EXPECT_EQ(b->counters().rx_truncated, 1u);
  EXPECT_EQ(b->counters().rx_packets, 1u);
}

TEST(WirePort, CapturesTransmittedDatagramsToPcap) {
  const std::string path =
      testing::TempDir() + "kbv_wire_port_" + std::to_string(::getpid()) + ".pcap";
  std::unique_ptr<Port> b = open_port(215);
  ASSERT_NE(b, nullptr);
  uint64_t sent_bytes = 0;
  {
    PortConfig c;
    c.host = static_cast<uint8_t>((b->ip() & 0xFF) + 1);
    c.pcap_path = path;
    Result<std::unique_ptr<Port>> a = Port::open(c);
    ASSERT_TRUE(a.has_value()) << a.status().to_string();
    for (uint32_t i = 0; i < 3; ++i) {
      ASSERT_TRUE((*a)->send(b->ip(), 0xC400, send_only(2, i), Bytes{1, 2, 3, 4, 5}).is_ok());
    }
    sent_bytes = (*a)->counters().tx_bytes;
  }  // closing the port closes the file
  std::ifstream f(path, std::ios::binary);
  Bytes file((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::remove(path.c_str());
  // 24-byte file header, then per datagram 16 + 14 + 20 + 8 bytes of framing.
  EXPECT_EQ(file.size(), 24 + 3 * (16 + 42) + sent_bytes);
  EXPECT_EQ(receive(*b, 3).size(), 3u);
  PortConfig bad;
  bad.host = 216;
  bad.pcap_path = "/nonexistent-dir/x.pcap";
  EXPECT_EQ(Port::open(bad).status(), KBV_ERR_NOT_FOUND);
}

TEST(WirePort, FaultsOnALivePort) {
  FaultConfig f;
  f.drop = 0.2;
  f.corrupt = 0.2;
  f.duplicate = 0.2;
  f.reorder = 0.1;
  f.reorder_depth = 2;
  f.seed = 1234;
  std::unique_ptr<Port> a = open_port(211, f);
  ASSERT_NE(a, nullptr);
  std::unique_ptr<Port> b = open_port(static_cast<uint8_t>((a->ip() & 0xFF) + 1));
  ASSERT_NE(b, nullptr);
  constexpr uint32_t kN = 200;
  for (uint32_t i = 0; i < kN; ++i) {
    ASSERT_TRUE(a->send(b->ip(), 0xC300, send_only(1, i), Bytes{1, 2, 3, 4}).is_ok());
  }
  ASSERT_TRUE(a->flush_faults().is_ok());  // a datagram may still be held back
  const FaultCounters& fc = a->fault_counters();
  EXPECT_EQ(fc.seen, kN);
  EXPECT_GT(fc.dropped, 0u);
  EXPECT_GT(fc.corrupted, 0u);
  EXPECT_GT(fc.duplicated, 0u);
  EXPECT_GT(fc.reordered, 0u);
  // Every datagram that left A: survivors and their duplicates.
  EXPECT_EQ(a->counters().tx_packets, kN - fc.dropped + fc.duplicated);
  // Drain until every datagram A sent was either received or dropped for
  // its ICRC.
  uint64_t from_a = 0;
  std::array<RxPacket, 32> batch;
  while (from_a + b->counters().rx_bad_icrc < a->counters().tx_packets) {
    Result<bool> r = b->wait_readable(1000);
    ASSERT_TRUE(r.has_value());
    ASSERT_TRUE(*r) << "datagrams missing";
    Result<size_t> n = b->poll(batch);
    ASSERT_TRUE(n.has_value());
    from_a += *n;
  }
  // Corrupted datagrams (and their duplicates) fail the ICRC at B; the rest
  // arrive.
  EXPECT_EQ(from_a + b->counters().rx_bad_icrc, a->counters().tx_packets);
  EXPECT_GE(b->counters().rx_bad_icrc, fc.corrupted);
  EXPECT_EQ(b->counters().rx_malformed, 0u);
}

}  // namespace
}  // namespace kbv::sim::wire
