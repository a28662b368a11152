// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf's TCP exchange (exchange.hpp).
#include "perf/exchange.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <thread>
#include <utility>
#include <vector>

namespace kbv::perf {

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

template <class T>
bool parse_num(std::string_view s, T& out, int base = 10) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string join_sizes(const std::vector<uint64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{}", i ? "," : "", v[i]);
  return s.empty() ? "-" : s;
}

bool parse_sizes(std::string_view s, std::vector<uint64_t>& out) {
  out.clear();
  if (s == "-") return true;
  for (auto part : split(s, ',')) {
    uint64_t v = 0;
    if (!parse_num(part, v)) return false;
    out.push_back(v);
  }
  return true;
}

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

}  // namespace

std::string encode(const QpInfo& q) {
  std::string gid;
  for (uint8_t b : q.gid) gid += fmt::format("{:02x}", b);
  return fmt::format("QP {:04x}:{:06x}:{:06x}:{:08x}:{:016x}:{:08x}:{:x}:{:012x}:{}", q.lid, q.qpn,
                     q.psn, q.rkey, q.vaddr, q.qkey, q.mtu, q.mac, gid);
}

Result<QpInfo> decode_qp_info(std::string_view line) {
  if (!line.starts_with("QP ")) return KBV_ERR_INVALID_ARGUMENT;
  auto f = split(line.substr(3), ':');
  if (f.size() != 9 || f[8].size() != 32) return KBV_ERR_INVALID_ARGUMENT;
  QpInfo q;
  if (!parse_num(f[0], q.lid, 16) || !parse_num(f[1], q.qpn, 16) || !parse_num(f[2], q.psn, 16) ||
      !parse_num(f[3], q.rkey, 16) || !parse_num(f[4], q.vaddr, 16) ||
      !parse_num(f[5], q.qkey, 16) || !parse_num(f[6], q.mtu, 16) || !parse_num(f[7], q.mac, 16)) {
    return KBV_ERR_INVALID_ARGUMENT;
  }
  if (q.qpn > 0xffffff || q.psn > 0xffffff || q.mac > 0xffffffffffffull) {
    return KBV_ERR_INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < 16; ++i) {
    if (!parse_num(f[8].substr(2 * i, 2), q.gid[i], 16)) return KBV_ERR_INVALID_ARGUMENT;
  }
  return q;
}

std::string encode(const TestParams& p) {
  return fmt::format(
      "PARAMS test={} conn={} atomic={} lat={} bw={} lat_sizes={} bw_sizes={} lat_iters={} "
      "bw_iters={} tx_depth={} inline={} cq_mod={} qps={} no_peak={} mtu={} tos={} duration={} "
      "bidir={}",
      to_string(p.test), to_string(p.connection), to_string(p.atomic), p.lat ? 1 : 0, p.bw ? 1 : 0,
      join_sizes(p.lat_sizes), join_sizes(p.bw_sizes), p.lat_iters, p.bw_iters, p.tx_depth,
      p.inline_size, p.cq_mod, p.num_qps, p.no_peak ? 1 : 0, p.mtu, p.tos, p.duration,
      p.bidir ? 1 : 0);
}

Result<TestParams> decode_params(std::string_view line) {
  if (!line.starts_with("PARAMS ")) return KBV_ERR_INVALID_ARGUMENT;
  std::map<std::string_view, std::string_view> kv;
  for (auto field : split(line.substr(7), ' ')) {
    auto eq = field.find('=');
    if (eq == std::string_view::npos) return KBV_ERR_INVALID_ARGUMENT;
    kv[field.substr(0, eq)] = field.substr(eq + 1);
  }
  static constexpr std::string_view kKeys[] = {
      "test",     "conn",      "atomic",   "lat",      "bw",       "lat_sizes",
      "bw_sizes", "lat_iters", "bw_iters", "tx_depth", "inline",   "cq_mod",
      "qps",      "no_peak",   "mtu",      "tos",      "duration", "bidir"};
  if (kv.size() != std::size(kKeys)) return KBV_ERR_INVALID_ARGUMENT;
  for (auto k : kKeys) {
    if (!kv.contains(k)) return KBV_ERR_INVALID_ARGUMENT;
  }
  TestParams p;
  bool found = false;
  for (Test t : {Test::kWrite, Test::kSend, Test::kRead, Test::kAtomic}) {
    if (kv["test"] == to_string(t)) p.test = t, found = true;
  }
  if (!found) return KBV_ERR_INVALID_ARGUMENT;
  if (kv["conn"] == "RC") {
    p.connection = Connection::kRc;
  } else if (kv["conn"] == "UC") {
    p.connection = Connection::kUc;
  } else if (kv["conn"] == "UD") {
    p.connection = Connection::kUd;
  } else {
    return KBV_ERR_INVALID_ARGUMENT;
  }
  if (kv["atomic"] == to_string(AtomicType::kFetchAndAdd)) {
    p.atomic = AtomicType::kFetchAndAdd;
  } else if (kv["atomic"] == to_string(AtomicType::kCompareAndSwap)) {
    p.atomic = AtomicType::kCompareAndSwap;
  } else {
    return KBV_ERR_INVALID_ARGUMENT;
  }
  const auto flag = [&](std::string_view k, bool& out) {
    if (kv[k] != "0" && kv[k] != "1") return false;
    out = kv[k] == "1";
    return true;
  };
  if (!flag("lat", p.lat) || !flag("bw", p.bw) || !flag("no_peak", p.no_peak) ||
      !flag("bidir", p.bidir) || !parse_sizes(kv["lat_sizes"], p.lat_sizes) ||
      !parse_sizes(kv["bw_sizes"], p.bw_sizes) || !parse_num(kv["lat_iters"], p.lat_iters) ||
      !parse_num(kv["bw_iters"], p.bw_iters) || !parse_num(kv["tx_depth"], p.tx_depth) ||
      !parse_num(kv["inline"], p.inline_size) || !parse_num(kv["cq_mod"], p.cq_mod) ||
      !parse_num(kv["qps"], p.num_qps) || !parse_num(kv["mtu"], p.mtu) ||
      !parse_num(kv["tos"], p.tos) || !parse_num(kv["duration"], p.duration)) {
    return KBV_ERR_INVALID_ARGUMENT;
  }
  if (validate(p)) return KBV_ERR_INVALID_ARGUMENT;
  return p;
}

Channel::~Channel() {
  if (fd_ >= 0) ::close(fd_);
}

Channel::Channel(Channel&& o) noexcept : fd_(std::exchange(o.fd_, -1)), buf_(std::move(o.buf_)) {}

Channel& Channel::operator=(Channel&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    buf_ = std::move(o.buf_);
  }
  return *this;
}

Result<Channel> Channel::connect(const std::string& host, uint16_t port,
                                 std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &res) != 0 || res == nullptr) {
    return KBV_ERR_NOT_FOUND;
  }
  Status last = KBV_ERR_TIMEOUT;
  while (true) {
    int fd = ::socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
    if (fd < 0) {
      last = Status::from_errno(errno);
      break;
    }
    if (::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
      int one = 1;
      (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::freeaddrinfo(res);
      return Channel(fd);
    }
    ::close(fd);
    if (Clock::now() >= deadline) {
      last = KBV_ERR_TIMEOUT;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // server still starting
  }
  ::freeaddrinfo(res);
  return last;
}

Status Channel::send_line(std::string_view line) {
  if (fd_ < 0) return KBV_ERR_INVALID_HANDLE;
  if (line.size() + 1 > kMaxLine || line.find('\n') != std::string_view::npos) {
    return KBV_ERR_INVALID_ARGUMENT;
  }
  std::string msg(line);
  msg += '\n';
  size_t off = 0;
  while (off < msg.size()) {
    ssize_t n = ::send(fd_, msg.data() + off, msg.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return KBV_ERR_IO;
    }
    off += static_cast<size_t>(n);
  }
  return Status::ok();
}

Result<std::string> Channel::recv_line(std::chrono::milliseconds timeout) {
  if (fd_ < 0) return KBV_ERR_INVALID_HANDLE;
  const auto deadline = Clock::now() + timeout;
  while (true) {
    size_t nl = buf_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      return line;
    }
    if (buf_.size() >= kMaxLine) return KBV_ERR_INVALID_ARGUMENT;
    pollfd pfd{fd_, POLLIN, 0};
    int r = ::poll(&pfd, 1, remaining_ms(deadline));
    if (r < 0) {
      if (errno == EINTR) continue;
      return KBV_ERR_IO;
    }
    if (r == 0) return KBV_ERR_TIMEOUT;
    char tmp[1024];
    ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return KBV_ERR_IO;
    }
    if (n == 0) return KBV_ERR_IO;  // the peer closed
    buf_.append(tmp, static_cast<size_t>(n));
  }
}

bool Channel::peer_closed() const {
  if (fd_ < 0) return true;
  pollfd pfd{fd_, POLLIN | POLLRDHUP, 0};
  if (::poll(&pfd, 1, 0) <= 0) return false;
  if (pfd.revents & (POLLERR | POLLHUP | POLLRDHUP)) return true;
  if (!(pfd.revents & POLLIN)) return false;
  char c;
  const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

std::string escape_peer_text(std::string_view s, size_t max) {
  std::string out;
  const size_t n = s.size() < max ? s.size() : max;
  out.reserve(n + 8);
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (n < s.size()) out += "...";
  return out;
}

Result<QpInfo> Channel::exchange(const QpInfo& mine, std::chrono::milliseconds timeout) {
  if (Status s = send_line(encode(mine)); !s) return s;
  auto line = recv_line(timeout);
  if (!line) return line.status();
  return decode_qp_info(*line);
}

Status Channel::exchange_all(std::span<const QpInfo> mine, std::vector<QpInfo>& peers,
                             std::chrono::milliseconds timeout) {
  // Chunks of kExchangeChunk lines each way: both sides send a chunk before
  // reading one, and a chunk (under 8 KiB) always fits the socket buffer.
  peers.clear();
  peers.reserve(mine.size());
  for (size_t at = 0; at < mine.size(); at += kExchangeChunk) {
    const size_t n = std::min(kExchangeChunk, mine.size() - at);
    for (size_t i = 0; i < n; ++i) {
      if (Status s = send_line(encode(mine[at + i])); !s) return s;
    }
    for (size_t i = 0; i < n; ++i) {
      auto line = recv_line(timeout);
      if (!line) return line.status();
      auto q = decode_qp_info(*line);
      if (!q) return q.status();
      peers.push_back(*q);
    }
  }
  return Status::ok();
}

Status Channel::sync(std::string_view tag, std::chrono::milliseconds timeout) {
  if (tag.find_first_of(" \n") != std::string_view::npos) return KBV_ERR_INVALID_ARGUMENT;
  const std::string mine = fmt::format("SYNC {}", tag);
  if (Status s = send_line(mine); !s) return s;
  auto line = recv_line(timeout);
  if (!line) return line.status();
  return *line == mine ? Status::ok() : Status{KBV_ERR_INVALID_STATE};
}

Listener::~Listener() {
  if (fd_ >= 0) ::close(fd_);
}

Listener::Listener(Listener&& o) noexcept : fd_(std::exchange(o.fd_, -1)), port_(o.port_) {}

Listener& Listener::operator=(Listener&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    port_ = o.port_;
  }
  return *this;
}

Result<Listener> Listener::listen(uint16_t port, const std::string& bind_addr) {
  Listener l;
  in_addr addr{htonl(INADDR_ANY)};
  if (!bind_addr.empty() && ::inet_pton(AF_INET, bind_addr.c_str(), &addr) != 1) {
    return KBV_ERR_INVALID_ARGUMENT;
  }
  l.fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l.fd_ < 0) return Status::from_errno(errno);
  int one = 1;
  (void)::setsockopt(l.fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr = addr;
  a.sin_port = htons(port);
  if (::bind(l.fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(l.fd_, 1) != 0) {
    return Status::from_errno(errno);
  }
  socklen_t len = sizeof a;
  if (::getsockname(l.fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return Status::from_errno(errno);
  }
  l.port_ = ntohs(a.sin_port);
  return l;
}

Result<Channel> Listener::accept(std::chrono::milliseconds timeout) {
  if (fd_ < 0) return KBV_ERR_INVALID_HANDLE;
  const auto deadline = Clock::now() + timeout;
  while (true) {
    pollfd pfd{fd_, POLLIN, 0};
    int r = ::poll(&pfd, 1, remaining_ms(deadline));
    if (r < 0) {
      if (errno == EINTR) continue;
      return KBV_ERR_IO;
    }
    if (r == 0) return KBV_ERR_TIMEOUT;
    int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return KBV_ERR_IO;
    }
    int one = 1;
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return Channel(fd);
  }
}

}  // namespace kbv::perf
