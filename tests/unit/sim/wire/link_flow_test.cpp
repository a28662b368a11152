// SPDX-License-Identifier: BSD-3-Clause
// src/sim/wire/link_flow: the UC/UD link-level flow control of the model's
// wire — the window, credits, probes that resynchronise counts after loss,
// a replaced sender, an absent peer — first as a state machine with a
// synthetic clock, then on two live ports over loopback.
#include "sim/wire/link_flow.hpp"

#include "sim/wire/port.hpp"

#include <gtest/gtest.h>
#include <poll.h>

#include <array>
#include <memory>

namespace kbv::sim::wire {
namespace {

using Clock = LinkFlow::Clock;
constexpr uint32_t kA = 0x7F0000C8u, kB = 0x7F0000C9u;

// Sends until the window refuses; returns how many went.
uint32_t fill(LinkFlow& f, uint32_t dst, Clock::time_point now) {
  uint32_t n = 0;
  while (f.may_send(dst, now) && n < 10 * LinkFlow::kWindow) {
    f.on_sent(dst);
    ++n;
  }
  return n;
}

// Moves `rx`'s queued messages into `tx` (as the sockets would).
bool deliver(LinkFlow& from, uint32_t from_ip, LinkFlow& to, Clock::time_point now) {
  bool opened = false;
  for (const LinkFlow::Out& o : from.outbox()) {
    uint8_t b[LinkMsg::kBytes];
    o.msg.encode(b);
    std::optional<LinkMsg> m = LinkMsg::decode(b, sizeof b);
    EXPECT_TRUE(m.has_value());
    if (m->type == LinkMsg::Type::kCredit)
      opened = to.on_credit(from_ip, m->count, now) || opened;
    else
      to.on_probe(from_ip, m->count);
  }
  from.outbox().clear();
  return opened;
}

TEST(LinkFlow, OnlyUnacknowledgedTransportsAreCounted) {
  EXPECT_FALSE(flow_controlled(opcode::kRc | opcode::kSendOnly));
  EXPECT_FALSE(flow_controlled(opcode::kAcknowledge));
  EXPECT_FALSE(flow_controlled(opcode::kReadResponseOnly));
  EXPECT_TRUE(flow_controlled(opcode::kUc | opcode::kSendOnly));
  EXPECT_TRUE(flow_controlled(opcode::kUc | opcode::kWriteFirst));
  EXPECT_TRUE(flow_controlled(opcode::kUdSendOnly));
  EXPECT_TRUE(flow_controlled(opcode::kUdSendOnlyImm));
  EXPECT_FALSE(flow_controlled(0x81));  // CNP
  EXPECT_FALSE(flow_controlled(0xA4));  // XRC
}

TEST(LinkFlow, MessagesRoundTripAndJunkIsRejected) {
  uint8_t b[LinkMsg::kBytes];
  LinkMsg{LinkMsg::Type::kProbe, 0x0102030405060708ull}.encode(b);
  std::optional<LinkMsg> m = LinkMsg::decode(b, sizeof b);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->type, LinkMsg::Type::kProbe);
  EXPECT_EQ(m->count, 0x0102030405060708ull);
  EXPECT_EQ(b[0], 'K');
  EXPECT_EQ(b[8], 0x01);  // big-endian count
  EXPECT_FALSE(LinkMsg::decode(b, sizeof b - 1).has_value());
  uint8_t bad[LinkMsg::kBytes];
  std::copy(b, b + sizeof b, bad);
  bad[4] = 3;
  EXPECT_FALSE(LinkMsg::decode(bad, sizeof bad).has_value());
  bad[4] = b[4];
  bad[0] = 'X';
  EXPECT_FALSE(LinkMsg::decode(bad, sizeof bad).has_value());
}

TEST(LinkFlow, WindowBlocksAndCreditsReopenIt) {
  LinkFlow tx, rx;
  const Clock::time_point t0 = Clock::now();
  EXPECT_EQ(fill(tx, kB, t0), LinkFlow::kWindow);
  EXPECT_TRUE(tx.blocked_any());
  EXPECT_EQ(tx.stats().blocked, 1u);
  EXPECT_FALSE(tx.may_send(kB, t0));
  EXPECT_EQ(tx.stats().blocked, 1u);  // one wait, however often it asks
  EXPECT_EQ(tx.deadline(), t0 + LinkFlow::kProbeAfter);
  // Another peer has its own window.
  EXPECT_TRUE(tx.may_send(kA, t0));

  // The receiver reads one datagram short of a report: no credit yet.
  for (uint32_t i = 0; i + 1 < LinkFlow::kReportEvery; ++i) rx.on_received(kA);
  rx.after_rx(false);
  EXPECT_TRUE(rx.outbox().empty());
  rx.on_received(kA);
  rx.after_rx(false);
  ASSERT_EQ(rx.outbox().size(), 1u);
  EXPECT_EQ(rx.outbox()[0].ip, kA);
  EXPECT_EQ(rx.outbox()[0].msg.count, LinkFlow::kReportEvery);
  EXPECT_TRUE(deliver(rx, kB, tx, t0));
  EXPECT_FALSE(tx.blocked_any());
  EXPECT_EQ(tx.deadline(), Clock::time_point::max());
  EXPECT_EQ(fill(tx, kB, t0), LinkFlow::kReportEvery);

  // A stale (smaller) count changes nothing.
  EXPECT_FALSE(tx.on_credit(kB, 1, t0));
  EXPECT_FALSE(tx.may_send(kB, t0));
}

TEST(LinkFlow, ProbeResynchronisesAfterLoss) {
  LinkFlow tx, rx;
  const Clock::time_point t0 = Clock::now();
  ASSERT_EQ(fill(tx, kB, t0), LinkFlow::kWindow);
  // Every datagram was lost: no credit ever comes, the probe clock runs.
  EXPECT_FALSE(tx.tick(t0 + LinkFlow::kProbeAfter / 2));
  EXPECT_TRUE(tx.outbox().empty());
  EXPECT_FALSE(tx.tick(t0 + LinkFlow::kProbeAfter));
  ASSERT_EQ(tx.outbox().size(), 1u);
  EXPECT_EQ(tx.outbox()[0].msg.type, LinkMsg::Type::kProbe);
  EXPECT_EQ(tx.outbox()[0].msg.count, LinkFlow::kWindow);
  EXPECT_EQ(tx.stats().probes_sent, 1u);
  deliver(tx, kA, rx, t0);
  // Not applied while datagrams may still be queued before it.
  rx.after_rx(false);
  EXPECT_TRUE(rx.outbox().empty());
  rx.after_rx(true);
  ASSERT_EQ(rx.outbox().size(), 1u);
  EXPECT_EQ(rx.outbox()[0].msg.type, LinkMsg::Type::kCredit);
  EXPECT_EQ(rx.outbox()[0].msg.count, LinkFlow::kWindow);
  EXPECT_EQ(rx.stats().resyncs, 1u);
  EXPECT_TRUE(deliver(rx, kB, tx, t0 + LinkFlow::kProbeAfter));
  EXPECT_EQ(fill(tx, kB, t0), LinkFlow::kWindow);
}

TEST(LinkFlow, ACountAheadOfTheSenderIsProbed) {
  // The receiver still counts the datagrams of an earlier process at this
  // sender's address.
  LinkFlow tx, rx;
  const Clock::time_point t0 = Clock::now();
  for (uint32_t i = 0; i < 1000; ++i) rx.on_received(kA);
  for (uint32_t i = 0; i < 10; ++i) tx.on_sent(kB);
  rx.after_rx(false);
  EXPECT_FALSE(deliver(rx, kB, tx, t0));
  ASSERT_EQ(tx.outbox().size(), 1u);
  EXPECT_EQ(tx.outbox()[0].msg.type, LinkMsg::Type::kProbe);
  EXPECT_EQ(tx.outbox()[0].msg.count, 10u);
  deliver(tx, kA, rx, t0);
  rx.after_rx(true);
  ASSERT_EQ(rx.outbox().size(), 1u);
  EXPECT_EQ(rx.outbox()[0].msg.count, 10u);
  deliver(rx, kB, tx, t0);
  EXPECT_TRUE(tx.outbox().empty());
  EXPECT_EQ(fill(tx, kB, t0), LinkFlow::kWindow);  // sent 10 + window - 10 acked
}

TEST(LinkFlow, SilentPeerIsMarkedAbsentThenComesBack) {
  LinkFlow tx;
  const Clock::time_point t0 = Clock::now();
  ASSERT_EQ(fill(tx, kB, t0), LinkFlow::kWindow);
  EXPECT_FALSE(tx.tick(t0 + LinkFlow::kPeerTimeout - LinkFlow::kProbeAfter));
  EXPECT_TRUE(tx.tick(t0 + LinkFlow::kPeerTimeout));
  EXPECT_EQ(tx.stats().peers_absent, 1u);
  EXPECT_FALSE(tx.blocked_any());
  // Absent: datagrams go (and are lost, as on a link that is down).
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(tx.may_send(kB, t0 + LinkFlow::kPeerTimeout));
    tx.on_sent(kB);
  }
  // A credit brings it back; its count is far behind, so the window is
  // full again until a probe resynchronises.
  EXPECT_FALSE(tx.on_credit(kB, 0, t0 + LinkFlow::kPeerTimeout));
  EXPECT_FALSE(tx.may_send(kB, t0 + LinkFlow::kPeerTimeout));
}

TEST(LinkFlow, APeerThatAnswersIsNotTimedOut) {
  LinkFlow tx;
  const Clock::time_point t0 = Clock::now();
  ASSERT_EQ(fill(tx, kB, t0), LinkFlow::kWindow);
  // A credit that does not open the window restarts the peer's timeout.
  const Clock::time_point t1 = t0 + LinkFlow::kPeerTimeout / 2;
  EXPECT_FALSE(tx.on_credit(kB, 0, t1));
  EXPECT_FALSE(tx.tick(t0 + LinkFlow::kPeerTimeout));
  EXPECT_EQ(tx.stats().peers_absent, 0u);
  EXPECT_TRUE(tx.tick(t1 + LinkFlow::kPeerTimeout));
}

// ---- two live ports ----

std::unique_ptr<Port> open_port(uint8_t first) {
  for (unsigned n = first; n < 254; ++n) {
    PortConfig c;
    c.host = static_cast<uint8_t>(n);
    Result<std::unique_ptr<Port>> p = Port::open(c);
    if (p) return std::move(*p);
    EXPECT_EQ(p.status(), KBV_ERR_ALREADY_EXISTS);
  }
  ADD_FAILURE() << "no free loopback address";
  return nullptr;
}

PacketHeaders ud_send(uint32_t qpn, uint32_t psn) {
  PacketHeaders h;
  h.bth.opcode = opcode::kUdSendOnly;
  h.bth.dest_qp = qpn;
  h.bth.psn = psn;
  h.deth = Deth{0x11111111u, 5};
  return h;
}

// Waits (poll(2), up to a second: a failure bound, not a measurement) for
// `fd` to be readable.
bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 1000) == 1;
}

// Reads everything queued on `p`'s data socket; returns the count.
size_t drain(Port& p) {
  std::array<RxPacket, Port::kRxBatch> batch;
  size_t total = 0;
  for (;;) {
    Result<size_t> n = p.poll(batch);
    EXPECT_TRUE(n.has_value());
    if (!n || *n == 0) return total;
    total += *n;
  }
}

TEST(LinkFlowPort, ReceiverThatDoesNotReadHoldsTheSenderAndLosesNothing) {
  std::unique_ptr<Port> a = open_port(210);
  ASSERT_NE(a, nullptr);
  std::unique_ptr<Port> b = open_port(static_cast<uint8_t>((a->ip() & 0xFF) + 1));
  ASSERT_NE(b, nullptr);
  EXPECT_GE(a->ctl_fd(), 0);
  const std::array<uint8_t, 1024> payload{};
  size_t sent = 0, received = 0;
  for (int round = 0; round < 4; ++round) {
    // B reads nothing while A sends as much as its window allows.
    while (a->may_send(b->ip())) {
      ASSERT_TRUE(a->send(b->ip(), 0xC001, ud_send(7, static_cast<uint32_t>(sent)), payload));
      ++sent;
      ASSERT_LE(sent, static_cast<size_t>(round + 1) * 2 * LinkFlow::kWindow)
          << "the window never closed";
    }
    EXPECT_EQ(sent, received + LinkFlow::kWindow);
    // B drains its socket: its credits reach A, which may send again.
    received += drain(*b);
    EXPECT_EQ(received, sent);
    ASSERT_TRUE(readable(a->ctl_fd()));
    EXPECT_TRUE(a->poll_ctl());
    EXPECT_TRUE(a->may_send(b->ip()));
  }
  EXPECT_EQ(b->counters().rx_packets, sent);
  EXPECT_GE(b->link_stats().credits_sent, 4u);
  // RC datagrams are not counted: they never close the window.
  for (uint32_t i = 0; i < 2 * LinkFlow::kWindow; ++i) {
    PacketHeaders h = ud_send(7, i);
    h.bth.opcode = opcode::kSendOnly;
    h.deth.reset();
    ASSERT_TRUE(a->send(b->ip(), 0xC001, h, payload));
    EXPECT_TRUE(a->may_send(b->ip()));
    if (i % 32 == 31) drain(*b);
  }
}

TEST(LinkFlowPort, LostDatagramsAreRecoveredByAProbe) {
  std::unique_ptr<Port> a = open_port(220);
  ASSERT_NE(a, nullptr);
  std::unique_ptr<Port> b = open_port(static_cast<uint8_t>((a->ip() & 0xFF) + 1));
  ASSERT_NE(b, nullptr);
  const std::array<uint8_t, 64> payload{};
  uint32_t sent = 0;
  while (a->may_send(b->ip())) {
    ASSERT_TRUE(a->send(b->ip(), 0xC002, ud_send(7, sent), payload));
    ++sent;
  }
  // B is replaced: the new port at its address never saw those datagrams.
  const uint8_t host = static_cast<uint8_t>(b->ip() & 0xFF);
  b.reset();
  PortConfig c;
  c.host = host;
  Result<std::unique_ptr<Port>> nb = Port::open(c);
  ASSERT_TRUE(nb.has_value());
  b = std::move(*nb);
  // A's probe (due kProbeAfter after it blocked) resynchronises B's count.
  const Clock::time_point later = Clock::now() + LinkFlow::kProbeAfter;
  EXPECT_FALSE(a->link_tick(later));
  EXPECT_EQ(a->link_stats().probes_sent, 1u);
  ASSERT_TRUE(readable(b->ctl_fd()));
  (void)b->poll_ctl();  // the data socket is empty: applied and answered now
  ASSERT_TRUE(readable(a->ctl_fd()));
  EXPECT_TRUE(a->poll_ctl());
  EXPECT_EQ(b->link_stats().resyncs, 1u);
  EXPECT_TRUE(a->may_send(b->ip()));
}

}  // namespace
}  // namespace kbv::sim::wire
