// SPDX-License-Identifier: BSD-3-Clause
// src/sim/wire/faults: each fault's effect with fixed seeds; reproducibility;
// independence of the fault draws; configuration checks.
#include "sim/wire/faults.hpp"

#include "sim/wire/icrc.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

namespace kbv::sim::wire {
namespace {

using Bytes = std::vector<uint8_t>;

// Datagram i: a real RC SEND Only with PSN i and a valid ICRC.
const Ipv4Flow kFlow{0x7F000001, 0x7F000002, 0xC001, 4791};

Bytes datagram(uint32_t i) {
  PacketHeaders h;
  h.bth.opcode = opcode::kSendOnly;
  h.bth.psn = i;
  h.bth.dest_qp = 5;
  Bytes payload = {static_cast<uint8_t>(i), static_cast<uint8_t>(i >> 8), 0xAA, 0xBB};
  Bytes out(64);
  size_t n = *build_packet(h, payload, out);
  out.resize(n);
  EXPECT_TRUE(write_icrc(kFlow, out).is_ok());
  return out;
}

uint32_t psn_of(std::span<const uint8_t> d) { return decode_bth(d)->psn; }

// Submits n datagrams (plus a final flush); returns the PSNs sent, in order.
std::vector<uint32_t> run(FaultInjector& inj, uint32_t n, std::vector<Bytes>* sent = nullptr) {
  std::vector<uint32_t> psns;
  auto take = [&](const FaultInjector::Plan& p) {
    for (size_t k = 0; k < p.n; ++k) {
      psns.push_back(psn_of(p.out[k].bytes));
      if (sent) sent->emplace_back(p.out[k].bytes.begin(), p.out[k].bytes.end());
    }
  };
  for (uint32_t i = 0; i < n; ++i) {
    Bytes d = datagram(i);
    take(inj.submit(Outgoing{kFlow.dst_ip, kFlow.src_port, d}));
  }
  take(inj.flush());
  return psns;
}

TEST(WireFaults, NoFaultsPassesEverythingInOrder) {
  FaultInjector inj(FaultConfig{});
  std::vector<uint32_t> psns = run(inj, 100);
  ASSERT_EQ(psns.size(), 100u);
  for (uint32_t i = 0; i < 100; ++i) EXPECT_EQ(psns[i], i);
  EXPECT_EQ(inj.counters().seen, 100u);
  EXPECT_EQ(inj.counters().dropped + inj.counters().duplicated + inj.counters().reordered +
                inj.counters().corrupted,
            0u);
}

TEST(WireFaults, DropAll) {
  FaultConfig c;
  c.drop = 1.0;
  FaultInjector inj(c);
  EXPECT_TRUE(run(inj, 50).empty());
  EXPECT_EQ(inj.counters().dropped, 50u);
}

TEST(WireFaults, DropFractionForSeed) {
  FaultConfig c;
  c.drop = 0.25;
  c.seed = 42;
  FaultInjector inj(c);
  std::vector<uint32_t> psns = run(inj, 2000);
  const uint64_t dropped = inj.counters().dropped;
  EXPECT_EQ(psns.size() + dropped, 2000u);
  // 25% of 2000 = 500; binomial sd ~19: the seed's count lies well inside.
  EXPECT_GT(dropped, 400u);
  EXPECT_LT(dropped, 600u);
  // Survivors keep their order.
  for (size_t i = 1; i < psns.size(); ++i) EXPECT_LT(psns[i - 1], psns[i]);
  // The same seed makes the same decisions; another seed does not.
  FaultInjector again(c);
  EXPECT_EQ(run(again, 2000), psns);
  c.seed = 43;
  FaultInjector other(c);
  EXPECT_NE(run(other, 2000), psns);
}

TEST(WireFaults, DuplicateAll) {
  FaultConfig c;
  c.duplicate = 1.0;
  FaultInjector inj(c);
  std::vector<uint32_t> psns = run(inj, 10);
  ASSERT_EQ(psns.size(), 20u);
  for (uint32_t i = 0; i < 10; ++i) {
    EXPECT_EQ(psns[2 * i], i);
    EXPECT_EQ(psns[2 * i + 1], i);
  }
  EXPECT_EQ(inj.counters().duplicated, 10u);
}

TEST(WireFaults, ReorderHoldsBackByDepth) {
  FaultConfig c;
  c.reorder = 1.0;
  c.reorder_depth = 3;
  FaultInjector inj(c);
  std::vector<uint32_t> psns = run(inj, 8);
  // 0 held, sent after 1,2,3; then 4 held, sent after 5,6,7.
  EXPECT_EQ(psns, (std::vector<uint32_t>{1, 2, 3, 0, 5, 6, 7, 4}));
  EXPECT_EQ(inj.counters().reordered, 2u);
  EXPECT_FALSE(inj.holding());
}

TEST(WireFaults, FlushReleasesHeldDatagram) {
  FaultConfig c;
  c.reorder = 1.0;
  c.reorder_depth = 5;
  FaultInjector inj(c);
  std::vector<uint32_t> psns = run(inj, 2);  // 0 held, 1 sent, flush sends 0
  EXPECT_EQ(psns, (std::vector<uint32_t>{1, 0}));
  EXPECT_EQ(inj.flush().n, 0u);
}

TEST(WireFaults, ReorderFractionForSeed) {
  FaultConfig c;
  c.reorder = 0.1;
  c.reorder_depth = 2;
  c.seed = 7;
  FaultInjector inj(c);
  std::vector<uint32_t> psns = run(inj, 1000);
  ASSERT_EQ(psns.size(), 1000u);  // nothing lost
  EXPECT_EQ(std::set<uint32_t>(psns.begin(), psns.end()).size(), 1000u);
  // Each held datagram appears exactly 2 places later than in order.
  size_t displaced = 0;
  for (size_t pos = 0; pos < psns.size(); ++pos) {
    if (psns[pos] + 2 == pos) ++displaced;
  }
  EXPECT_EQ(displaced, inj.counters().reordered);
  EXPECT_GT(inj.counters().reordered, 50u);
  EXPECT_LT(inj.counters().reordered, 120u);
}

TEST(WireFaults, CorruptFlipsOneByteAndBreaksIcrc) {
  FaultConfig c;
  c.corrupt = 1.0;
  c.seed = 3;
  FaultInjector inj(c);
  std::vector<Bytes> sent;
  std::vector<uint32_t> psns = run(inj, 200, &sent);
  ASSERT_EQ(sent.size(), 200u);
  std::set<size_t> positions;
  for (uint32_t i = 0; i < 200; ++i) {
    const Bytes orig = datagram(i);
    ASSERT_EQ(sent[i].size(), orig.size());
    size_t diffs = 0;
    for (size_t k = 0; k < orig.size(); ++k) {
      if (orig[k] != sent[i][k]) {
        ++diffs;
        positions.insert(k);
        EXPECT_NE(k, 4u);  // the ICRC-masked BTH byte is never chosen
        EXPECT_EQ(orig[k] ^ sent[i][k], 0xFF);
      }
    }
    EXPECT_EQ(diffs, 1u);
    EXPECT_TRUE(icrc_ok(kFlow, orig));
    EXPECT_FALSE(icrc_ok(kFlow, sent[i])) << i;
  }
  EXPECT_EQ(inj.counters().corrupted, 200u);
  EXPECT_GT(positions.size(), 10u);  // spread over the datagram
}

TEST(WireFaults, FaultDrawsAreIndependent) {
  // Adding other faults does not change which datagrams drop.
  FaultConfig a;
  a.drop = 0.3;
  a.seed = 99;
  FaultConfig b = a;
  b.duplicate = 0.5;
  b.reorder = 0.2;
  b.reorder_depth = 2;
  FaultInjector ia(a), ib(b);
  std::vector<uint32_t> pa = run(ia, 500);
  std::vector<uint32_t> pb = run(ib, 500);
  EXPECT_EQ(ia.counters().dropped, ib.counters().dropped);
  EXPECT_GT(ib.counters().reordered, 0u);
  std::set<uint32_t> sa(pa.begin(), pa.end()), sb(pb.begin(), pb.end());
  EXPECT_EQ(sa, sb);
  EXPECT_EQ(pb.size(), pa.size() + ib.counters().duplicated);
  // Corruption (which alters bytes, PSNs included) draws its position every
  // time too: the drop decisions stay the same.
  FaultConfig c = a;
  c.corrupt = 0.5;
  FaultInjector ic(c);
  run(ic, 500);
  EXPECT_EQ(ic.counters().dropped, ia.counters().dropped);
  EXPECT_GT(ic.counters().corrupted, 0u);
}

TEST(WireFaults, ValidateRejectsBadConfig) {
  FaultConfig c;
  EXPECT_TRUE(FaultInjector::validate(c).is_ok());
  c.drop = 1.5;
  EXPECT_EQ(FaultInjector::validate(c), KBV_ERR_INVALID_ARGUMENT);
  c.drop = -0.1;
  EXPECT_EQ(FaultInjector::validate(c), KBV_ERR_INVALID_ARGUMENT);
  c.drop = std::nan("");
  EXPECT_EQ(FaultInjector::validate(c), KBV_ERR_INVALID_ARGUMENT);
  c = {};
  c.reorder_depth = 0;
  EXPECT_EQ(FaultInjector::validate(c), KBV_ERR_INVALID_ARGUMENT);
}

TEST(WireFaults, PrngIsDeterministicAndBounded) {
  Prng a(5), b(5), c(6);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    differs |= x != c.next();
  }
  EXPECT_TRUE(differs);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(a.below(7), 7u);
  EXPECT_FALSE(a.chance(0));
  EXPECT_TRUE(a.chance(1));
}

}  // namespace
}  // namespace kbv::sim::wire
