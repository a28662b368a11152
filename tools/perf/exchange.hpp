// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf's out-of-band channel: a TCP connection over which the two sides
// exchange their test parameters and QP information before the test and
// synchronise around it, as perftest's ctx_hand_shake does
// (linux-rdma/perftest src/perftest_communication.c: each side sends its
// lid, qpn, psn, rkey, vaddr and GID as one fixed text message and reads the
// peer's).
//
// Messages are text lines ending in '\n' (at most kMaxLine bytes), so a
// capture of the exchange is readable:
//   PARAMS test=write conn=RC atomic=FETCH_AND_ADD lat=1 bw=1 lat_sizes=2,4
//          bw_sizes=65536 lat_iters=1000 bw_iters=5000 tx_depth=128 inline=0
//          cq_mod=100 qps=1 no_peak=0 mtu=0 tos=256 duration=0 bidir=0 (one line)
//   QP <lid>:<qpn>:<psn>:<rkey>:<vaddr>:<qkey>:<mtu>:<mac>:<gid>   (hex fields)
//   SYNC <tag>                                               (barrier)
//   END <n>        (-D) the client ran n iterations per QP; after the loop
//   SENT           (UC/UD SEND bandwidth, iterations) the client is done
//   RESULT <tag> <text>                                      (verification)
//
// A Channel is used from one thread at a time. Every call that waits has a
// timeout and returns KBV_ERR_TIMEOUT when it passes, KBV_ERR_IO when the
// peer closes or the socket fails, KBV_ERR_INVALID_ARGUMENT for a malformed
// message.
#pragma once

#include <kbv/status.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "perf/options.hpp"

namespace kbv::perf {

inline constexpr size_t kMaxLine = 4096;
inline constexpr size_t kExchangeChunk = 64;  // QP lines sent before reading the peer's

// What one side tells the other about one of its QPs and its buffer.
struct QpInfo {
  uint16_t lid = 0;    // 0 on RoCE
  uint32_t qpn = 0;    // 24 bits
  uint32_t psn = 0;    // 24 bits: the first PSN this side sends with
  uint32_t rkey = 0;   // of the buffer the peer may access
  uint64_t vaddr = 0;  // start of that buffer
  uint32_t qkey = 0;   // UD: the Q_Key the QP accepts
  uint32_t mtu = 0;    // the port's active MTU (kbv_mtu_t code); both sides use the lower one
  uint64_t mac = 0;    // RoCE: the MAC of the GID below (48 bits), the peer's next hop
  std::array<uint8_t, 16> gid{};  // the port GID (RoCEv2: ::ffff:a.b.c.d)

  friend bool operator==(const QpInfo&, const QpInfo&) = default;
};

// Text that came from the peer, made safe to print on a terminal: bytes
// outside printable ASCII (control characters such as ESC, DEL, and bytes
// >= 0x80) and the backslash become \xNN, so a peer cannot send escape
// sequences to this side's terminal. At most `max` input bytes ("..." after).
std::string escape_peer_text(std::string_view s, size_t max = 512);

std::string encode(const QpInfo& q);  // "QP ..." without '\n'
Result<QpInfo> decode_qp_info(std::string_view line);
std::string encode(const TestParams& p);                  // "PARAMS ..." without '\n'
Result<TestParams> decode_params(std::string_view line);  // also validate()s them

class Channel {
 public:
  Channel() = default;
  explicit Channel(int fd) : fd_(fd) {}
  ~Channel();
  Channel(Channel&& o) noexcept;
  Channel& operator=(Channel&& o) noexcept;
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // Client: connect to host:port, retrying until timeout (the server may
  // still be starting).
  static Result<Channel> connect(const std::string& host, uint16_t port,
                                 std::chrono::milliseconds timeout);

  int fd() const { return fd_; }
  Status send_line(std::string_view line);  // adds '\n'; line has none
  Result<std::string> recv_line(std::chrono::milliseconds timeout);

  // Send ours, then read theirs (both sides may call it at once: the lines are
  // small enough never to block on the socket buffer).
  Result<QpInfo> exchange(const QpInfo& mine, std::chrono::milliseconds timeout);
  // The QP information of every QP, in chunks of kExchangeChunk lines (both
  // sides call it with as many QPs); peers gets the peer's, in order.
  Status exchange_all(std::span<const QpInfo> mine, std::vector<QpInfo>& peers,
                      std::chrono::milliseconds timeout);
  // Both sides reach the same tag before either goes on.
  Status sync(std::string_view tag, std::chrono::milliseconds timeout);
  // Non-blocking: true when the peer closed the connection or it failed
  // (end of stream or a socket error seen by poll(2) and a peeking recv).
  // Lines already received stay readable; nothing is consumed.
  bool peer_closed() const;

 private:
  int fd_ = -1;
  std::string buf_;  // bytes received beyond the last line returned
};

class Listener {
 public:
  Listener() = default;
  ~Listener();
  Listener(Listener&& o) noexcept;
  Listener& operator=(Listener&& o) noexcept;
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Listens on bind_addr:port (SO_REUSEADDR); bind_addr is a dotted IPv4
  // address, empty for all addresses (0.0.0.0); port 0 picks a free one.
  // KBV_ERR_INVALID_ARGUMENT for an address that does not parse; the
  // bind(2)/listen(2) errno as a status otherwise.
  static Result<Listener> listen(uint16_t port, const std::string& bind_addr = {});
  uint16_t port() const { return port_; }
  Result<Channel> accept(std::chrono::milliseconds timeout);

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

}  // namespace kbv::perf
