// SPDX-License-Identifier: BSD-3-Clause
// A model port's RoCEv2 UDP endpoint on loopback. Contract: port.hpp.
#include "sim/wire/port.hpp"

#include "common/log.hpp"
#include "sim/wire/icrc.hpp"

#include <arpa/inet.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kbv::sim::wire {

namespace {

constexpr const char* kLog = "sim.wire";

sockaddr_in make_addr(uint32_t ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(ip);
  a.sin_port = htons(port);
  return a;
}

// A non-blocking UDP socket bound to ip:port, DF set (IP ID 0 on the wire).
Result<int> open_socket(uint32_t ip, uint16_t port, bool reuse, int rcvbuf) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::from_errno(errno);
  int one = 1;
  int pmtu = IP_PMTUDISC_DO;
  if (::setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu) != 0 ||
      (reuse && ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)) {
    int err = errno;
    ::close(fd);
    return Status::from_errno(err);
  }
  if (rcvbuf > 0) {
    // Best effort: SO_RCVBUFFORCE (CAP_NET_ADMIN) goes past
    // net.core.rmem_max; otherwise SO_RCVBUF, capped at rmem_max.
    if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) != 0)
      (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  }
  sockaddr_in a = make_addr(ip, port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    int err = errno;
    ::close(fd);
    return err == EADDRINUSE ? Status{KBV_ERR_ALREADY_EXISTS} : Status::from_errno(err);
  }
  return fd;
}

}  // namespace

std::array<uint8_t, 16> gid_from_ipv4(uint32_t ip) {
  std::array<uint8_t, 16> g{};
  g[10] = 0xFF;
  g[11] = 0xFF;
  be::store32(g.data() + 12, ip);
  return g;
}

uint16_t entropy_src_port(uint32_t src_qpn, uint32_t dst_qpn) {
  uint32_t h = (src_qpn & kQpnMask) * 0x9E3779B1u ^ (dst_qpn & kQpnMask) * 0x85EBCA77u;
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  return static_cast<uint16_t>(0xC000u | (h & 0x3FFFu));
}

Port::Port(const PortConfig& cfg) : cfg_(cfg), ip_(loopback_ip(cfg.host)), faults_(cfg.faults) {}

Result<std::unique_ptr<Port>> Port::open(const PortConfig& cfg) {
  if (cfg.host == 0 || cfg.host == 255) return KBV_ERR_INVALID_ARGUMENT;
  if (Status s = FaultInjector::validate(cfg.faults); !s) return s;
  std::unique_ptr<Port> p(new Port(cfg));
  if (!cfg.pcap_path.empty()) {
    Result<std::unique_ptr<PcapWriter>> w = PcapWriter::open(cfg.pcap_path);
    if (!w) {
      log::warn(kLog, "cannot write {}: {}", cfg.pcap_path, w.status().to_string());
      return w.status();
    }
    p->pcap_ = std::move(*w);
  }
  Result<int> fd = open_socket(p->ip_, kRoceV2UdpPort, false, cfg.rcvbuf_bytes);
  if (!fd) {
    log::warn(kLog, "cannot bind 127.0.0.{}:{}: {}", cfg.host, kRoceV2UdpPort,
              fd.status().to_string());
    return fd.status();
  }
  p->rx_fd_ = *fd;
  Result<int> ctl = open_socket(p->ip_, kLinkCtlUdpPort, false, 0);
  if (!ctl) {
    log::warn(kLog, "cannot bind 127.0.0.{}:{} (link control): {}", cfg.host, kLinkCtlUdpPort,
              ctl.status().to_string());
    return ctl.status();
  }
  p->ctl_fd_ = *ctl;
  p->tx_ring_.assign(kTxBatch * kMaxDatagram, 0);
  p->tx_msgs_.assign(kTxBatch, mmsghdr{});
  p->tx_iov_.assign(kTxBatch, iovec{});
  p->tx_addr_.assign(kTxBatch, sockaddr_in{});
  p->tx_cmsg_.assign(kTxBatch, {});
  p->tx_group_first_.assign(kTxBatch + 1, 0);
  p->gso_ = cfg.gso;
  p->rx_buf_.assign(kRxBatch * kMaxDatagram, 0);
  p->rx_msgs_.assign(kRxBatch, mmsghdr{});
  p->rx_iov_.assign(kRxBatch, iovec{});
  p->rx_addr_.assign(kRxBatch, sockaddr_in{});
  for (size_t i = 0; i < kRxBatch; ++i) {
    p->rx_iov_[i] = {p->rx_buf_.data() + i * kMaxDatagram, kMaxDatagram};
    msghdr& m = p->rx_msgs_[i].msg_hdr;
    m.msg_name = &p->rx_addr_[i];
    m.msg_namelen = sizeof(sockaddr_in);
    m.msg_iov = &p->rx_iov_[i];
    m.msg_iovlen = 1;
  }
  log::debug(kLog, "port 127.0.0.{}:{} open (fd {})", cfg.host, kRoceV2UdpPort, p->rx_fd_);
  return p;
}

Port::~Port() {
  (void)flush_faults();
  (void)flush_tx();
  for (auto& [port, fd] : tx_fds_) {
    if (fd >= 0) ::close(fd);
  }
  if (rx_fd_ >= 0) ::close(rx_fd_);
  if (ctl_fd_ >= 0) ::close(ctl_fd_);
}

Result<int> Port::tx_socket(uint16_t src_port, uint16_t& actual) {
  actual = src_port;
  if (src_port == kRoceV2UdpPort) return rx_fd_;
  auto it = tx_fds_.find(src_port);
  if (it == tx_fds_.end()) {
    if (Status s = prepare_src_port(src_port); !s) return s;
    it = tx_fds_.find(src_port);
  }
  if (it->second < 0) {
    actual = kRoceV2UdpPort;
    return rx_fd_;
  }
  return it->second;
}

uint64_t Port::rcvbuf_bytes() const {
  int v = 0;
  socklen_t len = sizeof v;
  if (::getsockopt(rx_fd_, SOL_SOCKET, SO_RCVBUF, &v, &len) != 0 || v < 0) return 0;
  return static_cast<uint64_t>(v);
}

Status Port::prepare_src_port(uint16_t src_port) {
  if (src_port == 0) return KBV_ERR_INVALID_ARGUMENT;
  if (src_port == kRoceV2UdpPort || tx_fds_.count(src_port) != 0) return {};
  size_t open_fds = 0;
  for (const auto& [port, fd] : tx_fds_) open_fds += fd >= 0 ? 1 : 0;
  if (open_fds >= cfg_.max_src_ports) {
    log::debug(kLog, "127.0.0.{}: {} source-port sockets open; port {} sends from {}", cfg_.host,
               open_fds, src_port, kRoceV2UdpPort);
    tx_fds_.emplace(src_port, -1);
    return {};
  }
  Result<int> fd = open_socket(ip_, src_port, true, 0);
  if (!fd) {
    if (fd.status() != KBV_ERR_ALREADY_EXISTS) return fd.status();
    log::warn(kLog, "127.0.0.{}:{} in use; that flow sends from port {}", cfg_.host, src_port,
              kRoceV2UdpPort);
    tx_fds_.emplace(src_port, -1);
    return {};
  }
  tx_fds_.emplace(src_port, *fd);
  return {};
}

Status Port::send(uint32_t dst_ip, uint16_t src_port, const PacketHeaders& h,
                  std::span<const uint8_t> payload) {
  Result<size_t> n = build_packet(h, payload, tx_buf_);
  if (!n) return n.status();
  return send_datagram(dst_ip, src_port, {tx_buf_.data(), *n});
}

Status Port::send_datagram(uint32_t dst_ip, uint16_t src_port, std::span<uint8_t> datagram) {
  if (datagram.size() < kBthBytes + kIcrcBytes || datagram.size() > kMaxDatagram) {
    return KBV_ERR_INVALID_ARGUMENT;
  }
  uint16_t actual = 0;
  Result<int> fd = tx_socket(src_port, actual);
  if (!fd) return fd.status();
  if (actual != src_port) ++counters_.tx_src_port_fallback;
  if (Status s = write_icrc(Ipv4Flow{ip_, dst_ip, actual, kRoceV2UdpPort}, datagram); !s) {
    return s;
  }
  Outgoing o{dst_ip, actual, datagram};
  if (!cfg_.faults.enabled()) return send_one(o);
  FaultInjector::Plan plan = faults_.submit(o);
  Status first;
  for (size_t i = 0; i < plan.n; ++i) {
    Status s = send_one(plan.out[i]);
    if (!s && first) first = s;
  }
  return first;
}

Status Port::flush_faults() {
  FaultInjector::Plan plan = faults_.flush();
  Status first;
  for (size_t i = 0; i < plan.n; ++i) {
    Status s = send_one(plan.out[i]);
    if (!s && first) first = s;
  }
  return first;
}

Status Port::send_one(const Outgoing& o) {
  uint16_t actual = 0;
  Result<int> fd = tx_socket(o.src_port, actual);
  if (!fd) return fd.status();
  sockaddr_in to = make_addr(o.dst_ip, kRoceV2UdpPort);
  if (tx_batching_) {
    if (tx_n_ != 0 && (tx_fd_ != *fd || tx_n_ == kTxBatch)) (void)flush_tx();
    uint8_t* slot = tx_ring_.data() + tx_n_ * kMaxDatagram;
    std::memcpy(slot, o.bytes.data(), o.bytes.size());
    tx_iov_[tx_n_] = {slot, o.bytes.size()};
    tx_addr_[tx_n_] = to;
    tx_msgs_[tx_n_].msg_len = 0;
    tx_fd_ = *fd;
    ++tx_n_;
  } else {
    ssize_t n = ::sendto(*fd, o.bytes.data(), o.bytes.size(), MSG_DONTWAIT,
                         reinterpret_cast<sockaddr*>(&to), sizeof to);
    if (n < 0) {
      int err = errno;
      ++counters_.tx_errors;
      if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) return KBV_ERR_QUEUE_FULL;
      log::debug(kLog, "sendto 0x{:08x}: {}", o.dst_ip, std::strerror(err));
      return KBV_ERR_IO;
    }
    note_sent(o.dst_ip, o.bytes[0]);
  }
  ++counters_.tx_packets;
  counters_.tx_bytes += o.bytes.size();
  if (pcap_) {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    const uint64_t usec =
        static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
    if (Status s = pcap_->write(Ipv4Flow{ip_, o.dst_ip, o.src_port, kRoceV2UdpPort}, o.bytes, usec);
        !s) {
      log::warn(kLog, "pcap write failed ({}); capture stopped", s.name());
      pcap_.reset();
    }
  }
  return {};
}

size_t Port::group_tx() {
  // Runs of queued datagrams to one address, of one size (the last of a run
  // may be shorter), become one UDP GSO send each (UDP_SEGMENT = that size):
  // the kernel cuts the run into exactly these datagrams again, so what
  // the receiver gets is unchanged; the stack is crossed once per run.
  size_t groups = 0;
  for (size_t i = 0; i < tx_n_;) {
    const size_t seg = tx_iov_[i].iov_len;
    size_t k = 1, bytes = seg;
    while (gso_ && seg >= kGsoMinSeg && i + k < tx_n_ && k < kGsoMaxSegs &&
           tx_iov_[i + k].iov_len <= seg && bytes + tx_iov_[i + k].iov_len <= kGsoMaxBytes &&
           tx_addr_[i + k].sin_addr.s_addr == tx_addr_[i].sin_addr.s_addr &&
           tx_addr_[i + k].sin_port == tx_addr_[i].sin_port) {
      bytes += tx_iov_[i + k].iov_len;
      ++k;
      if (tx_iov_[i + k - 1].iov_len < seg) break;  // a shorter one ends the run
    }
    msghdr& m = tx_msgs_[groups].msg_hdr;
    m.msg_name = &tx_addr_[i];
    m.msg_namelen = sizeof(sockaddr_in);
    m.msg_iov = &tx_iov_[i];
    m.msg_iovlen = k;
    m.msg_control = nullptr;
    m.msg_controllen = 0;
    if (k > 1) {
      m.msg_control = tx_cmsg_[groups].data();
      m.msg_controllen = CMSG_SPACE(sizeof(uint16_t));
      cmsghdr* c = CMSG_FIRSTHDR(&m);
      c->cmsg_level = SOL_UDP;
      c->cmsg_type = UDP_SEGMENT;
      c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
      const uint16_t gso_size = static_cast<uint16_t>(seg);
      std::memcpy(CMSG_DATA(c), &gso_size, sizeof gso_size);
    }
    tx_msgs_[groups].msg_len = 0;
    tx_group_first_[groups] = i;
    ++groups;
    i += k;
  }
  tx_group_first_[groups] = tx_n_;
  return groups;
}

Status Port::flush_tx() {
  if (tx_n_ == 0) return {};
  Status st;
  size_t groups = group_tx();
  size_t done = 0;
  while (done < groups) {
    const int k = ::sendmmsg(tx_fd_, tx_msgs_.data() + done, static_cast<unsigned>(groups - done),
                             MSG_DONTWAIT);
    if (k > 0) {
      for (size_t j = tx_group_first_[done]; j < tx_group_first_[done + static_cast<size_t>(k)];
           ++j)
        note_sent(ntohl(tx_addr_[j].sin_addr.s_addr), *static_cast<uint8_t*>(tx_iov_[j].iov_base));
      done += static_cast<size_t>(k);
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    const int err = k < 0 ? errno : EIO;
    const size_t first = tx_group_first_[done], n = tx_group_first_[done + 1] - first;
    if (n > 1 && (err == EIO || err == EINVAL || err == ENOPROTOOPT || err == EOPNOTSUPP)) {
      // No UDP GSO here: send the rest one datagram per message from now on.
      log::debug(kLog, "UDP GSO refused ({}): off", std::strerror(err));
      gso_ = false;
      const size_t rest = first;
      std::memmove(tx_iov_.data(), tx_iov_.data() + rest, (tx_n_ - rest) * sizeof(iovec));
      std::memmove(tx_addr_.data(), tx_addr_.data() + rest, (tx_n_ - rest) * sizeof(sockaddr_in));
      tx_n_ -= rest;
      groups = group_tx();
      done = 0;
      continue;
    }
    // The first message of the rest failed: its datagrams are lost (as with
    // sendto); the others are tried again.
    counters_.tx_errors += n;
    counters_.tx_packets -= n;
    for (size_t j = first; j < first + n; ++j) counters_.tx_bytes -= tx_iov_[j].iov_len;
    if (st) {
      st = (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) ? Status{KBV_ERR_QUEUE_FULL}
                                                                   : Status{KBV_ERR_IO};
      if (st == KBV_ERR_IO) log::debug(kLog, "sendmmsg: {}", std::strerror(err));
    }
    ++done;
  }
  tx_n_ = 0;
  return st;
}

bool Port::accept(std::span<const uint8_t> d, uint32_t src_ip, uint16_t src_port, RxPacket& r) {
  if (d.size() < kBthBytes + kIcrcBytes) {
    ++counters_.rx_malformed;
    return false;
  }
  if (!icrc_ok(Ipv4Flow{src_ip, ip_, src_port, kRoceV2UdpPort}, d)) {
    ++counters_.rx_bad_icrc;
    log::trace(kLog, "drop: bad ICRC from 0x{:08x}:{} ({} bytes)", src_ip, src_port, d.size());
    return false;
  }
  Result<ParsedPacket> p = parse_packet(d);
  if (!p) {
    ++counters_.rx_malformed;
    log::trace(kLog, "drop: malformed datagram from 0x{:08x}:{}: {}", src_ip, src_port,
               p.status().name());
    return false;
  }
  r.headers = p->headers;
  r.info = p->info;
  r.payload = p->payload;
  r.src_ip = src_ip;
  r.src_port = src_port;
  r.datagram_bytes = static_cast<uint16_t>(d.size());
  ++counters_.rx_packets;
  counters_.rx_bytes += d.size();
  return true;
}

Result<size_t> Port::poll(std::span<RxPacket> out) {
  const size_t want = std::min(out.size(), kRxBatch);
  if (want == 0) return size_t{0};
  for (size_t i = 0; i < want; ++i) {
    rx_msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
    rx_msgs_[i].msg_hdr.msg_flags = 0;
    rx_msgs_[i].msg_len = 0;
  }
  int got = ::recvmmsg(rx_fd_, rx_msgs_.data(), static_cast<unsigned>(want), MSG_DONTWAIT, nullptr);
  if (got < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return size_t{0};
    return Status::from_errno(errno);
  }
  size_t good = 0;
  for (int i = 0; i < got; ++i) {
    const mmsghdr& m = rx_msgs_[i];
    if (m.msg_len > 0 && flow_controlled(rx_buf_[static_cast<size_t>(i) * kMaxDatagram]))
      flow_.on_received(ntohl(rx_addr_[i].sin_addr.s_addr));
    if (m.msg_hdr.msg_flags & MSG_TRUNC) {
      ++counters_.rx_truncated;
      continue;
    }
    std::span<const uint8_t> d(rx_buf_.data() + static_cast<size_t>(i) * kMaxDatagram, m.msg_len);
    if (accept(d, ntohl(rx_addr_[i].sin_addr.s_addr), ntohs(rx_addr_[i].sin_port), out[good]))
      ++good;
  }
  // Fewer than asked for: the socket is empty (as of this call).
  flow_.after_rx(static_cast<size_t>(got) < want);
  if (!flow_.outbox().empty()) send_link_msgs();
  return good;
}

bool Port::poll_ctl() {
  const LinkFlow::Clock::time_point now = LinkFlow::Clock::now();
  bool opened = false, probed = false;
  for (;;) {
    uint8_t b[LinkMsg::kBytes + 1];
    sockaddr_in from{};
    socklen_t len = sizeof from;
    const ssize_t n =
        ::recvfrom(ctl_fd_, b, sizeof b, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &len);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;  // EAGAIN: drained (other errors: nothing more to read now)
    }
    const std::optional<LinkMsg> m = LinkMsg::decode(b, static_cast<size_t>(n));
    if (!m) continue;
    const uint32_t src = ntohl(from.sin_addr.s_addr);
    if (m->type == LinkMsg::Type::kCredit) {
      opened = flow_.on_credit(src, m->count, now) || opened;
    } else {
      flow_.on_probe(src, m->count);
      probed = true;
    }
  }
  if (probed) {
    // A probe applies once every datagram sent before it has been read. On
    // loopback a datagram is queued at the receiver before sendto returns,
    // so an empty data socket now means none is still to come.
    int queued = 0;
    if (::ioctl(rx_fd_, FIONREAD, &queued) == 0 && queued == 0) flow_.after_rx(true);
  }
  if (!flow_.outbox().empty()) send_link_msgs();
  return opened;
}

bool Port::link_tick(LinkFlow::Clock::time_point now) {
  const bool opened = flow_.tick(now);
  if (!flow_.outbox().empty()) send_link_msgs();
  return opened;
}

void Port::send_link_msgs() {
  for (const LinkFlow::Out& o : flow_.outbox()) {
    uint8_t b[LinkMsg::kBytes];
    o.msg.encode(b);
    const sockaddr_in to = make_addr(o.ip, kLinkCtlUdpPort);
    // Lost on error (a full socket buffer): a blocked sender probes again.
    (void)::sendto(ctl_fd_, b, sizeof b, MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&to),
                   sizeof to);
  }
  flow_.outbox().clear();
}

Result<bool> Port::wait_readable(int timeout_ms) const {
  pollfd p{rx_fd_, POLLIN, 0};
  int n = ::poll(&p, 1, timeout_ms);
  if (n < 0) return errno == EINTR ? Result<bool>(false) : Result<bool>(Status::from_errno(errno));
  return n > 0;
}

}  // namespace kbv::sim::wire
