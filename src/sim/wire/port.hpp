// SPDX-License-Identifier: BSD-3-Clause
//
// A model HCA port's RoCEv2 endpoint on loopback (docs/DESIGN.md "The HCA model",
// docs/PRM.md "RoCEv2 wire"): port N owns 127.0.0.N:4791 (GID ::ffff:127.0.0.N)
// and exchanges real RoCEv2 datagrams with other model ports, so a capture on
// `lo` decodes in tshark. 127.0.0.0/8 is all loopback on Linux: nothing needs
// configuring.
//
// Receive: one non-blocking UDP socket bound to 127.0.0.N:4791. fd() is for
// the engine's epoll (EPOLLIN = datagrams waiting); poll() drains up to a
// bounded batch with one recvmmsg(2), checks each datagram's ICRC against the
// sender's address and port (bad -> dropped, rx_bad_icrc), parses it
// (malformed or unsupported opcode -> dropped, rx_malformed) and returns the
// good ones.
//
// Transmit: the UDP source port carries flow entropy (IBTA Annex A17:
// the source port of a RoCEv2 flow is chosen by the sender, for ECMP
// hashing; rxe and ConnectX use 0xC000 | a 14-bit hash). A UDP socket sends
// from its bound port, so the port keeps one extra send-only socket per
// source port, bound to 127.0.0.N:<src_port> with SO_REUSEADDR, created on
// first use (or ahead of time with prepare_src_port(), from the control path
// at QP modify). If that bind fails, or the port already holds
// PortConfig::max_src_ports such sockets (file descriptors are finite), the
// datagram goes out of the 4791 socket instead (counted in
// tx_src_port_fallback): on loopback the source port only matters as
// entropy, since responses go to port 4791. The ICRC is always computed for
// the source port actually used. Sockets use IP_PMTUDISC_DO so the kernel
// emits DF and IP Identification 0 (see icrc.hpp).
//
// Link-level flow control (link_flow.hpp): the port also owns a
// link-control socket bound to 127.0.0.N:kLinkCtlUdpPort. It counts the UC
// and UD datagrams it hands to the kernel per peer and the ones it reads per
// peer, returns credits, and answers probes; may_send() tells the transport
// whether a UC/UD datagram to a peer may go now. ctl_fd() is for the
// engine's epoll; poll_ctl() reads it.
//
// Fault injection (faults.hpp) applies to transmitted datagrams after the
// ICRC is written.
//
// Capture: with PortConfig::pcap_path set, every datagram the port hands to
// the kernel (after fault injection: corrupted bytes, duplicates and
// reordering show as sent) is also appended to that pcap file, framed as
// pcap.hpp describes, for tshark without capture privileges. File I/O on the
// transmit path: a debugging aid, off by default.
//
// Errors: open() -> KBV_ERR_INVALID_ARGUMENT (host 0 or 255, bad fault
// config), KBV_ERR_ALREADY_EXISTS (address in use), the errno mapping of
// other socket or pcap-file errors. send*() -> the build_packet() errors, KBV_ERR_QUEUE_FULL when
// the socket buffer is full (the datagram is lost, like a congested link: the transport's
// retransmission covers it), KBV_ERR_IO for other send errors. poll() -> KBV_ERR_IO for a receive
// error other than "nothing waiting".
//
// Threading: a Port is used by one thread at a time (the engine thread of
// its model). Bring-up (open, prepare_src_port) allocates; send and poll do
// not, except the first send from a new source port.
#pragma once

#include "sim/wire/faults.hpp"
#include "sim/wire/link_flow.hpp"
#include "sim/wire/packet.hpp"
#include "sim/wire/pcap.hpp"

#include <kbv/status.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace kbv::sim::wire {

// 127.0.0.n in host byte order.
constexpr uint32_t loopback_ip(uint8_t n) { return 0x7F000000u | n; }
// The IPv4-mapped IPv6 GID ::ffff:a.b.c.d of an IPv4 address (IBTA Annex A17;
// RFC 4291 2.5.5.2), in wire (network) byte order.
std::array<uint8_t, 16> gid_from_ipv4(uint32_t ip);
// The flow-entropy UDP source port for a QP pair: 0xC000 | 14-bit hash
// (IBTA Annex A17). Deterministic; the same pair always maps to the same
// port.
uint16_t entropy_src_port(uint32_t src_qpn, uint32_t dst_qpn);

struct PortConfig {
  uint8_t host = 1;  // N of 127.0.0.N, 1..254
  FaultConfig faults;
  int rcvbuf_bytes = 4 << 20;    // SO_RCVBUF request (SO_RCVBUFFORCE when allowed,
                                 // else capped by net.core.rmem_max)
  uint32_t max_src_ports = 256;  // entropy send sockets kept open at most
  std::string pcap_path;         // non-empty: write transmitted datagrams here
  // Transmit batching hands runs of equal-size datagrams to one address to
  // the kernel as one UDP GSO send (UDP_SEGMENT): the receiver gets the same
  // datagrams, the sending stack is crossed once per run. A capture on `lo`
  // then shows each run as one large datagram (the kernel cuts it up on
  // receive): set false for captures (pcap_path files are per datagram
  // either way).
  bool gso = true;
};

struct PortCounters {
  uint64_t tx_packets = 0;  // datagrams handed to the kernel
  uint64_t tx_bytes = 0;
  uint64_t tx_errors = 0;  // sendto failures (socket buffer full included)
  uint64_t tx_src_port_fallback = 0;
  uint64_t rx_packets = 0;  // good datagrams returned by poll()
  uint64_t rx_bytes = 0;
  uint64_t rx_bad_icrc = 0;   // checked first, before the headers are parsed
  uint64_t rx_malformed = 0;  // short, bad layout or unsupported opcode
                              // (datagrams under BTH + ICRC bytes included)
  uint64_t rx_truncated = 0;  // larger than kMaxDatagram
};

struct RxPacket {
  PacketHeaders headers;
  const OpcodeInfo* info = nullptr;
  std::span<const uint8_t> payload;  // into the port's receive buffer
  uint32_t src_ip = 0;               // host byte order
  uint16_t src_port = 0;             // the sender's flow entropy
  uint16_t datagram_bytes = 0;
};

class Port {
 public:
  static constexpr size_t kRxBatch = 32;

  static Result<std::unique_ptr<Port>> open(const PortConfig& cfg);
  ~Port();
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;

  int fd() const { return rx_fd_; }
  int ctl_fd() const { return ctl_fd_; }
  uint32_t ip() const { return ip_; }
  // The receive buffer the kernel granted (getsockopt SO_RCVBUF: bytes of
  // skb truesize, twice the request; socket(7)).
  uint64_t rcvbuf_bytes() const;
  std::array<uint8_t, 16> gid() const { return gid_from_ipv4(ip_); }

  // Creates the send socket for src_port now (control path).
  Status prepare_src_port(uint16_t src_port);

  // Builds BTH + extension headers + payload + pad + ICRC and sends it to
  // dst_ip:4791 from src_port.
  Status send(uint32_t dst_ip, uint16_t src_port, const PacketHeaders& h,
              std::span<const uint8_t> payload);
  // Sends a datagram laid out by build_packet(): writes its ICRC in place,
  // then applies faults and sends.
  Status send_datagram(uint32_t dst_ip, uint16_t src_port, std::span<uint8_t> datagram);
  // Sends a held (reordered) datagram now, if any.
  Status flush_faults();
  // Transmit batching (the engine turns it on; off by default): datagrams
  // are queued (copied) and handed to the kernel by sendmmsg(2) — runs of
  // equal-size datagrams to one address as one UDP GSO message each
  // (PortConfig::gso) — one call per run of up to kTxBatch datagrams
  // leaving from the same socket, when
  // the queue fills, when the socket changes and at flush_tx(). The caller
  // must call flush_tx() before it waits for anything. Send errors of a
  // queued datagram are reported by flush_tx() (the datagram is lost, as
  // with send*()); counters count datagrams handed to the kernel.
  void set_tx_batching(bool on) { tx_batching_ = on; }
  Status flush_tx();

  // Receives up to min(out.size(), kRxBatch) datagrams without blocking and
  // returns how many good packets were stored in `out` (0: nothing waiting
  // or all dropped). Payload spans stay valid until the next poll().
  Result<size_t> poll(std::span<RxPacket> out);
  // The checks poll() applies to each datagram it reads (`d` is the UDP
  // payload from src_ip:src_port, host byte order): length, ICRC for that
  // flow to this port, parse_packet(). true: `out` describes it (payload
  // points into `d`) and rx_packets/rx_bytes count it; false: dropped and
  // counted (rx_malformed, rx_bad_icrc). Public for poll() and for harnesses
  // that feed datagrams without a socket (tests/fuzz/rocev2_rx_fuzz.cpp).
  bool accept(std::span<const uint8_t> d, uint32_t src_ip, uint16_t src_port, RxPacket& out);
  // Waits up to timeout_ms for datagrams (poll(2) on fd()); true if readable.
  // A convenience for tests and simple loops; engines use fd() with epoll.
  Result<bool> wait_readable(int timeout_ms) const;

  // ---- link-level flow control (link_flow.hpp) ----
  // May a UC/UD datagram go to dst_ip now? False: the peer's window is
  // full; the caller holds the QP until poll_ctl() or link_tick() returns
  // true.
  bool may_send(uint32_t dst_ip) { return flow_.may_send(dst_ip, LinkFlow::Clock::now()); }
  // Reads the link-control socket (credits, probes) without blocking and
  // sends the answers; true if a blocked window opened.
  bool poll_ctl();
  // Probes due and peers timed out at `now`; true if a window opened.
  bool link_tick(LinkFlow::Clock::time_point now);
  // When link_tick() next has work (max(): none).
  LinkFlow::Clock::time_point link_deadline() const { return flow_.deadline(); }
  const LinkFlow::Stats& link_stats() const { return flow_.stats(); }

  const PortCounters& counters() const { return counters_; }
  const FaultCounters& fault_counters() const { return faults_.counters(); }

 private:
  explicit Port(const PortConfig& cfg);
  Status send_one(const Outgoing& o);
  // The socket sending from src_port (creating it), and the port it really
  // sends from (src_port, or 4791 after a fallback).
  Result<int> tx_socket(uint16_t src_port, uint16_t& actual);
  // A datagram with first byte `opcode` went to dst_ip (flow control count).
  void note_sent(uint32_t dst_ip, uint8_t opcode) {
    if (flow_controlled(opcode)) flow_.on_sent(dst_ip);
  }
  // Sends LinkFlow's queued messages on the link-control socket.
  void send_link_msgs();

  static constexpr size_t kTxBatch = 64;
  // A GSO send: at most this many datagrams (a 64 KiB message at a 4096
  // MTU) and UDP payload bytes (IPv4 total length limit, 65535 - 28).
  static constexpr size_t kGsoMaxSegs = 16;
  static constexpr size_t kGsoMaxBytes = 65507;
  static constexpr size_t kGsoMinSeg = 1024;  // smaller datagrams: one message each
  // Fills tx_msgs_ with one message per run of the queue (see PortConfig::gso).
  size_t group_tx();

  PortConfig cfg_;
  uint32_t ip_;
  bool tx_batching_ = false;
  int tx_fd_ = -1;                // the socket the queued datagrams leave from
  size_t tx_n_ = 0;               // datagrams queued
  std::vector<uint8_t> tx_ring_;  // kTxBatch * kMaxDatagram
  std::vector<mmsghdr> tx_msgs_;
  std::vector<iovec> tx_iov_;
  std::vector<sockaddr_in> tx_addr_;
  std::vector<std::array<uint8_t, CMSG_SPACE(sizeof(uint16_t))>> tx_cmsg_;  // UDP_SEGMENT
  std::vector<size_t> tx_group_first_;  // queue index of each message's first datagram
  bool gso_ = true;
  int rx_fd_ = -1;
  int ctl_fd_ = -1;
  LinkFlow flow_;
  std::unordered_map<uint16_t, int> tx_fds_;  // src port -> socket (-1: fallback)
  std::unique_ptr<PcapWriter> pcap_;
  FaultInjector faults_;
  PortCounters counters_;
  std::array<uint8_t, kMaxDatagram> tx_buf_{};
  std::vector<uint8_t> rx_buf_;  // kRxBatch * kMaxDatagram
  std::vector<mmsghdr> rx_msgs_;
  std::vector<iovec> rx_iov_;
  std::vector<sockaddr_in> rx_addr_;
};

}  // namespace kbv::sim::wire
