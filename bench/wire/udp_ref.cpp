// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-udp-ref: the raw UDP references the HCA model is compared with
// (issue 14; bench/wire/run.sh runs them beside kbv-perf). Two processes
// (this one forks its peer) on loopback addresses, as two model HCAs are.
//
//   kbv-udp-ref pingpong busy|block SIZE ITERS
//       round trip of a SIZE-byte datagram; busy = recv(MSG_DONTWAIT) in a
//       loop, block = blocking recv. Prints `rtt_us <median> <avg>`.
//   kbv-udp-ref stream SIZE SECONDS
//       one process sends SIZE-byte datagrams as fast as sendmmsg (batches of
//       32) takes them, the other receives with recvmmsg; prints what the
//       receiver got: `stream MB_per_s <v> Mpps <v> sent <n> received <n>`.
//       (Loopback drops what the receiver cannot take: the receiver's figure
//       is the rate of the wire, as a sender flooding a slower host sees.)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kIpA = 0x7F0000F1;  // 127.0.0.241 (away from model ports 1..)
constexpr uint32_t kIpB = 0x7F0000F2;
constexpr uint16_t kPort = 24791;
constexpr int kBatch = 32;

sockaddr_in addr(uint32_t ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(ip);
  a.sin_port = htons(port);
  return a;
}

int open_bound(uint32_t ip, uint32_t peer_ip) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int buf = 4 << 20;
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf) != 0)
    (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  int one = 1;
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = addr(ip, kPort);
  sockaddr_in p = addr(peer_ip, kPort);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&p), sizeof p) != 0) {
    std::perror("kbv-udp-ref: bind/connect");
    ::close(fd);
    return -1;
  }
  return fd;
}

ssize_t recv_one(int fd, void* b, size_t n, bool busy) {
  for (;;) {
    ssize_t r = ::recv(fd, b, n, busy ? MSG_DONTWAIT : 0);
    if (r >= 0) return r;
    if (errno != EAGAIN && errno != EINTR) return -1;
  }
}

int pingpong(bool busy, size_t size, uint32_t iters) {
  std::vector<char> b(std::max<size_t>(size, 1));
  int sync[2];
  if (::pipe(sync) != 0) return 1;
  pid_t child = ::fork();
  if (child == 0) {
    int fd = open_bound(kIpB, kIpA);
    char c = 1;
    if (::write(sync[1], &c, 1) != 1 || fd < 0) _exit(1);
    for (uint32_t i = 0; i < iters + 100; ++i) {
      if (recv_one(fd, b.data(), b.size(), busy) < 0) _exit(1);
      if (::send(fd, b.data(), size, 0) < 0) _exit(1);
    }
    _exit(0);
  }
  int fd = open_bound(kIpA, kIpB);
  char c;
  if (fd < 0 || ::read(sync[0], &c, 1) != 1) return 1;
  std::vector<double> us;
  us.reserve(iters);
  for (uint32_t i = 0; i < iters + 100; ++i) {
    const auto t0 = Clock::now();
    if (::send(fd, b.data(), size, 0) < 0) return 1;
    if (recv_one(fd, b.data(), b.size(), busy) < 0) return 1;
    if (i >= 100)
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  int st = 0;
  ::waitpid(child, &st, 0);
  double avg = 0;
  for (double v : us) avg += v;
  avg /= static_cast<double>(us.size());
  std::nth_element(us.begin(), us.begin() + static_cast<long>(us.size() / 2), us.end());
  std::printf("rtt_us %.2f %.2f\n", us[us.size() / 2], avg);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

int stream(size_t size, double seconds) {
  int sync[2], result[2];
  if (::pipe(sync) != 0 || ::pipe(result) != 0) return 1;
  pid_t child = ::fork();
  if (child == 0) {
    // Receiver: counts datagrams until a 1-byte end marker.
    int fd = open_bound(kIpB, kIpA);
    char c = 1;
    if (::write(sync[1], &c, 1) != 1 || fd < 0) _exit(1);
    std::vector<char> buf(size_t{kBatch} * 65536);
    std::vector<mmsghdr> m(kBatch);
    std::vector<iovec> iov(kBatch);
    for (int i = 0; i < kBatch; ++i) {
      iov[i] = {buf.data() + size_t(i) * 65536, 65536};
      m[i].msg_hdr.msg_iov = &iov[i];
      m[i].msg_hdr.msg_iovlen = 1;
    }
    uint64_t pkts = 0, bytes = 0;
    Clock::time_point first{}, last{};
    bool done = false;
    while (!done) {
      int n = ::recvmmsg(fd, m.data(), kBatch, MSG_WAITFORONE, nullptr);
      if (n < 0) _exit(1);
      for (int i = 0; i < n; ++i) {
        if (m[i].msg_len == 1) {
          done = true;
          break;
        }
        if (pkts == 0) first = Clock::now();
        ++pkts;
        bytes += m[i].msg_len;
      }
      last = Clock::now();
    }
    const double s = std::chrono::duration<double>(last - first).count();
    char out[128];
    int len = std::snprintf(out, sizeof out, "%lu %lu %.9f", static_cast<unsigned long>(pkts),
                            static_cast<unsigned long>(bytes), s);
    if (::write(result[1], out, static_cast<size_t>(len)) != len) _exit(1);
    _exit(0);
  }
  int fd = open_bound(kIpA, kIpB);
  char c;
  if (fd < 0 || ::read(sync[0], &c, 1) != 1) return 1;
  std::vector<char> buf(size, 'x');
  std::vector<mmsghdr> m(kBatch);
  iovec iov{buf.data(), size};
  for (auto& h : m) {
    h.msg_hdr.msg_iov = &iov;
    h.msg_hdr.msg_iovlen = 1;
  }
  uint64_t sent = 0;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    int n = ::sendmmsg(fd, m.data(), kBatch, 0);
    if (n > 0) sent += static_cast<uint64_t>(n);
  }
  // End markers (several: one may be dropped).
  for (int i = 0; i < 50; ++i) {
    char e = 0;
    (void)::send(fd, &e, 1, 0);
    ::usleep(1000);
  }
  char out[128] = {};
  ssize_t r = ::read(result[0], out, sizeof out - 1);
  int st = 0;
  ::waitpid(child, &st, 0);
  if (r <= 0) return 1;
  unsigned long pkts = 0, bytes = 0;
  double s = 0;
  if (std::sscanf(out, "%lu %lu %lf", &pkts, &bytes, &s) != 3 || s <= 0) return 1;
  std::printf("stream MB_per_s %.1f Mpps %.4f sent %lu received %lu\n",
              static_cast<double>(bytes) / s / 1e6, static_cast<double>(pkts) / s / 1e6,
              static_cast<unsigned long>(sent), pkts);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "pingpong") == 0) {
    const bool busy = std::strcmp(argv[2], "busy") == 0;
    return pingpong(busy, std::strtoul(argv[3], nullptr, 0),
                    static_cast<uint32_t>(std::strtoul(argv[4], nullptr, 0)));
  }
  if (argc == 4 && std::strcmp(argv[1], "stream") == 0)
    return stream(std::strtoul(argv[2], nullptr, 0), std::strtod(argv[3], nullptr));
  std::fprintf(stderr,
               "usage: kbv-udp-ref pingpong busy|block SIZE ITERS\n"
               "       kbv-udp-ref stream SIZE SECONDS\n");
  return 2;
}
