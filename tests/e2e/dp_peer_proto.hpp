// SPDX-License-Identifier: BSD-3-Clause
//
// The control conversation of the two-process data-path test
// (dp_two_process_test.cpp <-> dp_peer.cpp) over a socketpair: fixed-size
// messages written and read whole. Only the data path crosses the RoCEv2
// wire; this channel carries what an application exchanges out of band
// (perftest's ctx_hand_shake role) and the peer's verdicts.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kbv::e2e::proto {

// Layout of the peer's registered buffer (both sides use the same).
inline constexpr size_t kBufBytes = 256 * 1024;
inline constexpr size_t kRecvOff = 0;  // receive slots, kRecvSlot bytes each
inline constexpr size_t kRecvSlot = 16 * 1024;
inline constexpr uint32_t kRecvSlots = 8;
inline constexpr size_t kWriteOff = 128 * 1024;    // RDMA WRITE target
inline constexpr size_t kReadOff = 160 * 1024;     // RDMA READ source (pattern kReadSeed)
inline constexpr size_t kAtomicOff = 192 * 1024;   // two 8-byte counters
inline constexpr size_t kUdOff = 208 * 1024;       // UD receive slots (GRH + payload)
inline constexpr size_t kUcOff = 224 * 1024;       // UC receive slot
inline constexpr size_t kUcWriteOff = 232 * 1024;  // UC RDMA WRITE target
inline constexpr uint32_t kReadSeed = 77;

// Message sizes and seeds the requester (test) uses; the peer checks them.
inline constexpr uint32_t kSendBytes = 5000;  // several 1 KiB packets
inline constexpr uint32_t kSendSeed = 11;
inline constexpr uint32_t kSendImmBytes = 300;
inline constexpr uint32_t kSendImmSeed = 12;
inline constexpr uint32_t kImm = 0xC0FFEE01;
inline constexpr uint32_t kInlineBytes = 40;
inline constexpr uint32_t kInlineSeed = 13;
inline constexpr uint32_t kWriteBytes = 20000;
inline constexpr uint32_t kWriteSeed = 14;
inline constexpr uint32_t kWriteImmBytes = 3000;
inline constexpr uint32_t kWriteImmSeed = 15;
inline constexpr uint32_t kWriteImm = 0xABCD0002;
inline constexpr uint32_t kReadBytes = 9000;
inline constexpr uint64_t kCsInitial = 0x1111222233334444ull;
inline constexpr uint64_t kCsSwap = 0x5555666677778888ull;
inline constexpr uint64_t kFaInitial = 1000;
inline constexpr uint64_t kFaAdd = 234;
inline constexpr uint32_t kBackBytes = 2500;  // the peer's SEND back
inline constexpr uint32_t kBackSeed = 21;
inline constexpr uint32_t kUdQkey = 0x11110000;
inline constexpr uint32_t kUdBytes = 512;
inline constexpr uint32_t kUdSeed = 31;
inline constexpr uint32_t kUcSendBytes = 3000;  // three packets, SEND with immediate
inline constexpr uint32_t kUcSendSeed = 41;
inline constexpr uint32_t kUcImm = 0x0C0C0C01;
inline constexpr uint32_t kUcWriteBytes = 5000;  // five packets, RDMA WRITE with immediate
inline constexpr uint32_t kUcWriteSeed = 42;
inline constexpr uint32_t kUcWriteImm = 0x0C0C0C02;

struct Hello {
  uint8_t gid[16];
  uint64_t mac;
  uint32_t rc_qpn;
  uint32_t rc_psn;
  uint32_t ud_qpn;
  uint32_t uc_qpn;
  uint32_t uc_psn;
  uint32_t rkey;
  uint64_t addr;  // the registered buffer's address (the key's start)
};

enum Cmd : uint32_t {
  kCheckRc = 1,  // poll the RC receives, check the data, send back
  kCheckUd = 2,  // poll the UD receives and check them
  kQuit = 3,
  kCheckUc = 4,  // poll the UC receives (SEND_IMM, RDMA WRITE_IMM) and check them
};

struct Verdict {
  uint32_t ok;  // 1 = every check passed
  char what[252];
};

inline bool write_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = ::write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}
inline bool read_all(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t r = ::read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

}  // namespace kbv::e2e::proto
