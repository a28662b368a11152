// SPDX-License-Identifier: BSD-3-Clause
//
// Link-level flow control for the unreliable transports of the model's wire
// (docs/DESIGN.md "The HCA model", "Link-level flow control").
//
// Why: the model's wire is a UDP socket per port, and a UDP socket drops
// datagrams when its receive buffer is full. Silicon never drops for that
// reason on one link: InfiniBand has credit-based link flow control (IBTA
// vol. 1 7.9: the receiver grants credits for the buffer it has, the
// sender never sends beyond them) and RoCE runs on a lossless (PFC, IEEE
// 802.1Qbb) fabric that pauses the sender. RC recovers a loss by
// retransmission (and the engine bounds its unacknowledged PSNs, see
// engine/transport.hpp), but UC and UD have nothing to recover with: a
// perftest UC or UD SEND bandwidth run whose receiver model was descheduled
// for a few ms lost messages and its server waited for them forever.
//
// What: each port counts, per peer address, the UC and UD datagrams it
// hands to the kernel for that peer (the BTH opcode's transport bits, IBTA
// 9.2, say which; RC traffic is not counted). A receiver counts the UC/UD
// datagrams it reads from each peer and returns a CREDIT message carrying
// that count, in the sender's numbering, every kReportEvery datagrams. A
// sender keeps at most kWindow datagrams per peer beyond the last count it
// was given: the transport then holds the QP (its WQEs wait in the send
// queue, as behind a paused link) until credit returns.
//
// Loss (fault injection, or a datagram that was in the socket when its
// receiver was replaced) would leave the counts apart forever. As IB's
// flow-control packets carry the sender's FCTBS (total blocks sent) for the
// receiver to resynchronise on, a sender that stays blocked for kProbeAfter
// sends a PROBE carrying its own count; the receiver, once it has read
// every datagram queued before that probe, takes the probe's count as its
// own and answers with a CREDIT. A count from a receiver that is ahead of
// the sender (the sender process was replaced) also gets a PROBE back.
//
// A peer that answers nothing for kPeerTimeout while the sender is blocked
// (no model at that address, or a process that died) is marked absent and
// no longer holds the sender: its datagrams go out and are lost, as on a
// link that is down. Any message from it makes it present again.
//
// The messages (LinkMsg) travel between ports' link-control sockets
// (127.0.0.N:kLinkCtlUdpPort), not on the RoCEv2 port: on silicon these are
// link-layer frames (IB flow-control packets, Ethernet MAC control frames)
// below the transport, and a capture of UDP 4791 shows only RoCEv2.
//
// This class is the state machine alone (no sockets, no clock of its own):
// Port feeds it and sends what it returns. Threading: one thread at a time
// (the port's). Allocation: one map node per peer, on first contact.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace kbv::sim::wire {

// UDP port of the model's link-control sockets (one per model port).
inline constexpr uint16_t kLinkCtlUdpPort = 4792;

// True if a datagram whose first byte (the BTH opcode) is `opcode` belongs to
// a transport without acknowledgements: UC (0x20-0x3F) or UD (0x60-0x7F)
// (IBTA 9.2 table 38, the opcode's top three bits).
constexpr bool flow_controlled(uint8_t opcode) {
  return (opcode >> 5) == 0x1 || (opcode >> 5) == 0x3;
}

// A link-control message (16 bytes on the wire, big-endian fields).
struct LinkMsg {
  enum class Type : uint8_t { kCredit = 1, kProbe = 2 };
  static constexpr uint32_t kMagic = 0x4B42564Cu;  // "KBVL"
  static constexpr size_t kBytes = 16;
  Type type = Type::kCredit;
  uint64_t count = 0;  // CREDIT: datagrams received; PROBE: datagrams sent

  void encode(uint8_t out[kBytes]) const;
  // Empty for anything that is not a well-formed LinkMsg.
  static std::optional<LinkMsg> decode(const uint8_t* p, size_t n);
};

class LinkFlow {
 public:
  using Clock = std::chrono::steady_clock;
  // Datagrams a sender may have outstanding per peer (at 4096-byte MTU,
  // 512 KiB: a quarter of the default receive buffer's truesize, see
  // PortConfig::rcvbuf_bytes, so four peers fit beside the RC budget).
  static constexpr uint32_t kWindow = 64;
  static constexpr uint32_t kReportEvery = kWindow / 4;
  static constexpr auto kProbeAfter = std::chrono::milliseconds(1);
  static constexpr auto kPeerTimeout = std::chrono::milliseconds(200);

  struct Out {  // a message to send to `ip`
    uint32_t ip;
    LinkMsg msg;
  };

  // ---- sender ----
  // May one more flow-controlled datagram go to `dst` now? False: blocked
  // (the first refusal starts the probe clock).
  bool may_send(uint32_t dst, Clock::time_point now);
  // One flow-controlled datagram to `dst` was handed to the kernel.
  void on_sent(uint32_t dst);
  // A CREDIT from `src`. Returns true if a blocked window opened (the caller
  // resumes what it held). May queue a PROBE (a count ahead of ours).
  bool on_credit(uint32_t src, uint64_t count, Clock::time_point now);
  // Probes due and peers timed out at `now`; returns true if a peer was
  // marked absent (what waited on it may go).
  bool tick(Clock::time_point now);
  // The next time tick() has something to do (max(): nothing).
  Clock::time_point deadline() const;
  bool blocked_any() const { return blocked_ != 0; }

  // ---- receiver ----
  // One flow-controlled datagram from `src` was read from the socket.
  void on_received(uint32_t src);
  // A PROBE from `src`: applied at the next drained().
  void on_probe(uint32_t src, uint64_t sent);
  // After a read from the data socket. `empty`: the socket had nothing more
  // queued, so every datagram sent before a pending probe has been read:
  // probes are applied and answered. Credits due are queued either way.
  void after_rx(bool empty);

  // Messages to send (the caller sends and clears them).
  std::vector<Out>& outbox() { return out_; }

  // Counters (statistics, tests).
  struct Stats {
    uint64_t blocked = 0;  // may_send refusals that started a wait
    uint64_t probes_sent = 0;
    uint64_t credits_sent = 0;
    uint64_t resyncs = 0;       // probes applied (counts that were apart)
    uint64_t peers_absent = 0;  // peers that timed out
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Tx {
    uint64_t sent = 0;
    uint64_t acked = 0;
    bool absent = false;
    Clock::time_point blocked_since = Clock::time_point::max();
    Clock::time_point probe_at = Clock::time_point::max();
  };
  struct Rx {
    uint64_t count = 0;
    uint64_t reported = 0;
    bool probe_pending = false;
    uint64_t probe_count = 0;
  };
  void probe(uint32_t dst, Tx& t, Clock::time_point now);
  void unblock(Tx& t);

  std::unordered_map<uint32_t, Tx> tx_;
  std::unordered_map<uint32_t, Rx> rx_;
  uint32_t blocked_ = 0;  // peers with blocked_since set
  uint32_t probes_pending_ = 0;
  std::vector<Out> out_;
  Stats stats_;
};

}  // namespace kbv::sim::wire
