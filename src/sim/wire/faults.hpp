// SPDX-License-Identifier: BSD-3-Clause
//
// Fault injection on a model port's transmit side (docs/DESIGN.md "The HCA model":
// drop, duplicate, reorder, corrupt), for the transport reliability tests.
//
// Each fault is a probability drawn per transmitted datagram from a seeded
// PRNG (xoshiro256** seeded through splitmix64; both public-domain
// algorithms by Blackman and Vigna), so a run with the same seed and the
// same packet sequence makes the same decisions. For every datagram exactly
// five draws are made, in this order, whatever their outcome: drop,
// corrupt, duplicate, reorder, and the position of the byte to corrupt, so
// enabling one fault does not shift the decisions of another.
//
//   drop       the datagram is not sent.
//   corrupt    one byte is XORed with 0xFF (never BTH byte 4, which the ICRC
//              masks), so the receiver's ICRC check fails.
//   duplicate  the datagram is sent twice, back to back.
//   reorder    the datagram is held back and sent after the next
//              `reorder_depth` datagrams (one datagram held at a time; while
//              one is held the reorder draw is ignored). A dropped datagram
//              still counts toward the depth.
// A dropped datagram is neither corrupted, duplicated nor held; a held
// datagram is not duplicated.
//
// Threading: one injector per port, used by the thread that transmits on
// that port. No allocation after construction (the held and corrupted copies
// live in fixed buffers).
#pragma once

#include "sim/wire/packet.hpp"

#include <array>
#include <cstdint>
#include <span>

namespace kbv::sim::wire {

struct FaultConfig {
  double drop = 0;  // probabilities in [0, 1]
  double duplicate = 0;
  double reorder = 0;
  double corrupt = 0;
  uint32_t reorder_depth = 1;  // k >= 1
  uint64_t seed = 1;
  bool enabled() const { return drop > 0 || duplicate > 0 || reorder > 0 || corrupt > 0; }
};

struct FaultCounters {
  uint64_t seen = 0;  // datagrams submitted
  uint64_t dropped = 0;
  uint64_t duplicated = 0;
  uint64_t reordered = 0;  // datagrams held back
  uint64_t corrupted = 0;
};

// A datagram and where it goes (host byte order). `bytes` is the whole UDP
// payload (BTH .. ICRC).
struct Outgoing {
  uint32_t dst_ip = 0;
  uint16_t src_port = 0;
  std::span<const uint8_t> bytes;
};

// Deterministic PRNG: xoshiro256**, seeded with splitmix64(seed).
class Prng {
 public:
  explicit Prng(uint64_t seed);
  uint64_t next();
  // True with probability p (p <= 0: never, p >= 1: always).
  bool chance(double p);
  // Uniform in [0, n), n > 0.
  uint64_t below(uint64_t n);

 private:
  std::array<uint64_t, 4> s_{};
};

class FaultInjector {
 public:
  // KBV_ERR_INVALID_ARGUMENT (from validate) for probabilities outside [0,1]
  // or reorder_depth 0.
  static Status validate(const FaultConfig& c);
  explicit FaultInjector(const FaultConfig& c);

  // What to send now, in order, for one submitted datagram: 0 to 3 entries.
  // Spans point at the caller's bytes or at the injector's buffers and stay
  // valid until the next call to submit() or flush().
  struct Plan {
    std::array<Outgoing, 3> out;
    size_t n = 0;
  };
  Plan submit(const Outgoing& pkt);
  // Releases a held datagram now (n is 0 or 1), e.g. when the port goes idle
  // or closes.
  Plan flush();
  bool holding() const { return held_len_ != 0; }

  const FaultCounters& counters() const { return counters_; }
  const FaultConfig& config() const { return cfg_; }

 private:
  FaultConfig cfg_;
  Prng prng_;
  FaultCounters counters_;
  std::array<uint8_t, kMaxDatagram> held_{};
  size_t held_len_ = 0;
  Outgoing held_meta_;
  uint32_t held_countdown_ = 0;
  std::array<uint8_t, kMaxDatagram> corrupt_buf_{};
};

}  // namespace kbv::sim::wire
