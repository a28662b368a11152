// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-soak: RC between two processes under wire faults, for long runs
// (bench/README.md "Soak"; a 30-second run is the meson test soak_rc_30s).
//
// The process forks: the parent sends, the child receives; each creates its
// own model HCA (sim::Model, so that its engine counters can be read) with
// KBV_SIM_FAULTS applied (default: the 5% drop, 5% reorder, 1%
// duplicate, 0.1% corrupt), opens it through kbv.h and connects one RC QP
// pair (QP numbers, PSNs and GIDs exchanged over a socketpair). The sender
// keeps up to --window SENDs of --size bytes in flight, each carrying its
// sequence number and a pattern derived from it; the receiver checks every
// message: status, length, sequence number (exactly the next one: no loss,
// no duplicate, no reordering) and every payload byte, and reposts.
//
// The run ends after --messages messages or, with --seconds, when the
// sender stops posting after that time (it then tells the receiver the
// total). Each side samples its RSS (VmRSS) once a second after a warm-up
// (the first tenth of the run, at least 2 s) and reports the smallest and
// largest sample; --max-rss-growth-kib bounds their difference. A side that
// sees no progress for --stall-seconds reports a hang. Exit 0 only when
// every check held on both sides.
//
// Output (stdout): "soak <side>: key=value ..." lines and, from the sender,
// "ratio soak_msgs_per_s <rate>"; a progress line on stderr every minute.
#include <kbv/kbv.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "sim/model.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  uint64_t messages = 10'000'000;
  double seconds = 0;  // > 0: time-bounded run
  uint32_t size = 64;
  uint32_t window = 128;
  uint32_t recv_depth = 512;
  double stall_seconds = 30;
  uint64_t max_rss_growth_kib = 0;  // 0: report only
  // QP ack timeout code (4.096 us << code): 16 = 268 ms, so that the 7
  // retries ride out ~2 s of a starved peer on a loaded host (at 12,
  // 16.8 ms, a long run at nice 19 under load 15 ended in RETRY_EXCEEDED).
  uint8_t ack_timeout = 16;
  std::string faults = "drop=0.05,reorder=0.05,dup=0.01,corrupt=0.001,seed=7";
};

struct PeerInfo {
  uint32_t qpn, psn, mtu, gid_index;
  kbv_gid_entry_t gid;
};

struct Side {
  std::unique_ptr<kbv::sim::Model> model;
  kbv_device_t dev = 0;
  kbv_pd_t pd = 0;
  kbv_cq_t cq = 0;
  kbv_qp_t qp = 0;
  kbv_mr_t mr = 0;
  uint32_t lkey = 0;
  std::vector<unsigned char> buf;
  PeerInfo me{};
};

const char* g_side = "?";

[[noreturn]] void die(const char* what, kbv_status_t st = KBV_SUCCESS) {
  std::printf("soak %s: FAIL %s%s%s\n", g_side, what, st ? ": " : "",
              st ? kbv_status_name(st) : "");
  std::fflush(stdout);
  std::_Exit(1);
}

void ck(kbv_status_t st, const char* what) {
  if (st != KBV_SUCCESS) die(what, st);
}

uint64_t rss_kib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  uint64_t v = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmRSS: %" SCNu64, &v) == 1) break;
  std::fclose(f);
  return v;
}

// The byte at offset i of message `seq` (after its 8-byte sequence number).
unsigned char pattern(uint64_t seq, uint32_t i) {
  return static_cast<unsigned char>((seq * 131) ^ (i * 7) ^ (seq >> 8));
}

void full_write(int fd, const void* p, size_t n) {
  if (::write(fd, p, n) != static_cast<ssize_t>(n)) die("socketpair write");
}
void full_read(int fd, void* p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, static_cast<char*>(p) + got, n - got);
    if (r <= 0) die("socketpair read (the peer is gone)");
    got += static_cast<size_t>(r);
  }
}

void setup(Side& s, const char* name, size_t bytes, uint32_t send_wr, uint32_t recv_wr,
           uint32_t psn) {
  auto m = kbv::sim::Model::create(name);
  if (!m) die("model creation (is KBV_SIM_FAULTS well formed?)");
  s.model = std::move(*m);
  const std::string uri = std::string("sim:") + name;
  ck(kbv_device_open(uri.c_str(), nullptr, KBV_EQ_NONE, 0, &s.dev), "kbv_device_open");
  kbv_port_attr_t port;
  // The port trains after bring-up: wait until it is active (bounded).
  const auto until = Clock::now() + std::chrono::seconds(30);
  do {
    ck(kbv_port_query(s.dev, 1, &port, KBV_EQ_NONE, 0), "kbv_port_query");
  } while (port.state != KBV_PORT_ACTIVE && Clock::now() < until);
  if (port.state != KBV_PORT_ACTIVE) die("the port never became active");
  for (uint32_t i = 0; i < port.gid_count; ++i) {
    if (port.gids[i].type == KBV_GID_TYPE_ROCE_V2) {
      s.me.gid_index = i;
      break;
    }
  }
  s.me.gid = port.gids[s.me.gid_index];
  s.me.mtu = port.active_mtu;
  s.me.psn = psn;
  ck(kbv_pd_alloc(s.dev, KBV_EQ_NONE, 0, &s.pd), "kbv_pd_alloc");
  kbv_cq_attr_t ca{};
  ca.cqe = send_wr + recv_wr + 16;
  ck(kbv_cq_create(s.dev, &ca, KBV_EQ_NONE, 0, &s.cq), "kbv_cq_create");
  s.buf.assign(bytes, 0);
  ck(kbv_mr_reg(s.pd, s.buf.data(), s.buf.size(), KBV_ACCESS_LOCAL_WRITE, KBV_EQ_NONE, 0, &s.mr),
     "kbv_mr_reg");
  uint32_t rkey = 0;
  ck(kbv_mr_get_keys(s.mr, &s.lkey, &rkey), "kbv_mr_get_keys");
  kbv_qp_init_attr_t qa{};
  qa.qp_type = KBV_QPT_RC;
  qa.send_cq = s.cq;
  qa.recv_cq = s.cq;
  qa.cap.max_send_wr = send_wr;
  qa.cap.max_recv_wr = recv_wr;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  ck(kbv_qp_create(s.pd, &qa, KBV_EQ_NONE, 0, &s.qp), "kbv_qp_create");
  ck(kbv_qp_get_num(s.qp, &s.me.qpn), "kbv_qp_get_num");
}

void connect(Side& s, const PeerInfo& peer, uint8_t ack_timeout) {
  kbv_qp_attr_t a{};
  a.qp_state = KBV_QPS_INIT;
  a.port_num = 1;
  ck(kbv_qp_modify(s.qp, &a, KBV_QP_STATE | KBV_QP_PKEY_INDEX | KBV_QP_PORT | KBV_QP_ACCESS_FLAGS,
                   KBV_EQ_NONE, 0),
     "INIT");
  a = {};
  a.qp_state = KBV_QPS_RTR;
  a.path_mtu = std::min(s.me.mtu, peer.mtu);
  a.dest_qp_num = peer.qpn;
  a.rq_psn = peer.psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 1;  // 0.01 ms: the receiver reposts fast
  std::memcpy(a.ah_attr.dgid, peer.gid.gid, 16);
  a.ah_attr.dmac = peer.gid.mac;
  a.ah_attr.sgid_index = static_cast<uint8_t>(s.me.gid_index);
  a.ah_attr.port_num = 1;
  ck(kbv_qp_modify(s.qp, &a,
                   KBV_QP_STATE | KBV_QP_AV | KBV_QP_PATH_MTU | KBV_QP_DEST_QPN | KBV_QP_RQ_PSN |
                       KBV_QP_MAX_DEST_RD_ATOMIC | KBV_QP_MIN_RNR_TIMER,
                   KBV_EQ_NONE, 0),
     "RTR");
  a = {};
  a.qp_state = KBV_QPS_RTS;
  a.sq_psn = s.me.psn;
  a.timeout = ack_timeout;
  a.retry_cnt = 7;  // with 5% loss 8 losses of one PSN in a row are ~4e-11 likely
  a.rnr_retry = 7;  // infinite
  a.max_rd_atomic = 1;
  ck(kbv_qp_modify(s.qp, &a,
                   KBV_QP_STATE | KBV_QP_SQ_PSN | KBV_QP_TIMEOUT | KBV_QP_RETRY_CNT |
                       KBV_QP_RNR_RETRY | KBV_QP_MAX_QP_RD_ATOMIC,
                   KBV_EQ_NONE, 0),
     "RTS");
}

void teardown(Side& s) {
  if (s.qp) (void)kbv_qp_destroy(s.qp, KBV_EQ_NONE, 0);
  if (s.mr) (void)kbv_mr_dereg(s.mr, KBV_EQ_NONE, 0);
  if (s.cq) (void)kbv_cq_destroy(s.cq, KBV_EQ_NONE, 0);
  if (s.pd) (void)kbv_pd_dealloc(s.pd, KBV_EQ_NONE, 0);
  if (s.dev) (void)kbv_device_close(s.dev, KBV_EQ_NONE, 0);
  s.model.reset();
}

// RSS samples once a second after the warm-up.
struct RssWatch {
  Clock::time_point warm, next;
  uint64_t lo = UINT64_MAX, hi = 0;
  explicit RssWatch(double warm_s)
      : warm(Clock::now() +
             std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(warm_s))),
        next(warm) {}
  void tick(Clock::time_point now) {
    if (now < next) return;
    next = now + std::chrono::seconds(1);
    const uint64_t r = rss_kib();
    lo = std::min(lo, r);
    hi = std::max(hi, r);
  }
  uint64_t growth() const { return hi >= lo && lo != UINT64_MAX ? hi - lo : 0; }
};

double warmup_of(const Options& o) { return o.seconds > 0 ? std::max(2.0, o.seconds / 10) : 2.0; }

void report_rss(const RssWatch& w, const Options& o) {
  std::printf("soak %s: rss_kib_min=%" PRIu64 " rss_kib_max=%" PRIu64 " rss_growth_kib=%" PRIu64
              "\n",
              g_side, w.lo == UINT64_MAX ? 0 : w.lo, w.hi, w.growth());
  if (o.max_rss_growth_kib && w.growth() > o.max_rss_growth_kib) die("RSS grew beyond the bound");
}

void report_engine(const Side& s) {
  const auto e = s.model->engine_stats();
  std::printf("soak %s: tx_packets=%" PRIu64 " rx_packets=%" PRIu64 " retransmits=%" PRIu64
              " timeouts=%" PRIu64 " naks_sent=%" PRIu64 " duplicates=%" PRIu64
              " out_of_sequence=%" PRIu64 " rx_bad_icrc=%" PRIu64 " fault_dropped=%" PRIu64
              " fault_reordered=%" PRIu64 " fault_duplicated=%" PRIu64 " fault_corrupted=%" PRIu64
              "\n",
              g_side, e.tx_packets, e.rx_packets, e.retransmits, e.timeouts, e.naks_sent,
              e.duplicates, e.out_of_sequence, e.rx_bad_icrc, e.fault_dropped, e.fault_reordered,
              e.fault_duplicated, e.fault_corrupted);
}

int receiver(const Options& o, int sock) {
  g_side = "receiver";
  Side s;
  setup(s, "soak-rx", size_t{o.recv_depth} * o.size, 1, o.recv_depth, 0x2000);
  full_write(sock, &s.me, sizeof s.me);
  PeerInfo peer;
  full_read(sock, &peer, sizeof peer);
  connect(s, peer, o.ack_timeout);
  auto post = [&](uint32_t slot) {
    kbv_sge_t sge{reinterpret_cast<uint64_t>(s.buf.data() + size_t{slot} * o.size), o.size, s.lkey};
    kbv_recv_wr_t w{};
    w.wr_id = slot;
    w.sg_list = &sge;
    w.num_sge = 1;
    ck(kbv_post_recv(s.qp, &w, 1, nullptr), "kbv_post_recv");
  };
  for (uint32_t i = 0; i < o.recv_depth; ++i) post(i);
  const char ready = 'r';
  full_write(sock, &ready, 1);
  uint64_t expected = 0, total = o.seconds > 0 ? UINT64_MAX : o.messages;
  RssWatch rss(warmup_of(o));
  auto last = Clock::now();
  kbv_wc_t wc[32];
  while (expected < total) {
    const int n = kbv_poll_cq(s.cq, wc, 32);
    if (n < 0) die("kbv_poll_cq", static_cast<kbv_status_t>(n));
    const auto now = Clock::now();
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != KBV_SUCCESS)
        die("receive completion", static_cast<kbv_status_t>(wc[i].status));
      if (wc[i].opcode != KBV_WC_RECV || wc[i].byte_len != o.size) die("receive opcode or length");
      const unsigned char* m = s.buf.data() + size_t{wc[i].wr_id} * o.size;
      uint64_t seq;
      std::memcpy(&seq, m, 8);
      if (seq != expected) {
        std::printf("soak receiver: FAIL message %" PRIu64 " arrived where %" PRIu64
                    " was expected (lost, duplicated or reordered)\n",
                    seq, expected);
        return 1;
      }
      for (uint32_t b = 8; b < o.size; ++b)
        if (m[b] != pattern(seq, b)) die("payload differs from what was sent");
      ++expected;
      post(static_cast<uint32_t>(wc[i].wr_id));
    }
    if (n > 0) last = now;
    rss.tick(now);
    if (total == UINT64_MAX) {
      // Time-bounded: the sender says how many it sent once it stops.
      struct timeval tv {};
      fd_set fds;
      FD_ZERO(&fds);
      FD_SET(sock, &fds);
      if (n == 0 && ::select(sock + 1, &fds, nullptr, nullptr, &tv) == 1)
        full_read(sock, &total, 8);
    }
    if (std::chrono::duration<double>(now - last).count() > o.stall_seconds)
      die("no message for the stall bound (hang)");
  }
  std::printf("soak receiver: messages=%" PRIu64
              " in_order_exactly_once=yes payload_verified=yes\n",
              expected);
  report_rss(rss, o);
  report_engine(s);
  const char done = 'd';
  full_write(sock, &done, 1);
  teardown(s);
  return 0;
}

int sender(const Options& o, int sock) {
  g_side = "sender";
  Side s;
  setup(s, "soak-tx", size_t{o.window} * o.size, o.window, 1, 0x1000);
  PeerInfo peer;
  full_read(sock, &peer, sizeof peer);
  full_write(sock, &s.me, sizeof s.me);
  connect(s, peer, o.ack_timeout);
  char ready;
  full_read(sock, &ready, 1);
  const auto t0 = Clock::now();
  const auto stop_at =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  uint64_t posted = 0, completed = 0, limit = o.seconds > 0 ? UINT64_MAX : o.messages;
  RssWatch rss(warmup_of(o));
  auto last = Clock::now();
  auto next_progress = t0 + std::chrono::seconds(60);
  kbv_wc_t wc[32];
  while (completed < limit) {
    while (posted < limit && posted - completed < o.window) {
      const uint32_t slot = static_cast<uint32_t>(posted % o.window);
      unsigned char* m = s.buf.data() + size_t{slot} * o.size;
      std::memcpy(m, &posted, 8);
      for (uint32_t b = 8; b < o.size; ++b) m[b] = pattern(posted, b);
      kbv_sge_t sge{reinterpret_cast<uint64_t>(m), o.size, s.lkey};
      kbv_send_wr_t w{};
      w.wr_id = posted;
      w.opcode = KBV_WR_SEND;
      w.flags = KBV_SEND_SIGNALED;
      w.sg_list = &sge;
      w.num_sge = 1;
      ck(kbv_post_send(s.qp, &w, 1, nullptr), "kbv_post_send");
      ++posted;
    }
    const int n = kbv_poll_cq(s.cq, wc, 32);
    if (n < 0) die("kbv_poll_cq", static_cast<kbv_status_t>(n));
    const auto now = Clock::now();
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != KBV_SUCCESS)
        die("send completion", static_cast<kbv_status_t>(wc[i].status));
      if (wc[i].wr_id != completed) die("send completions out of order");
      ++completed;
    }
    if (n > 0) last = now;
    rss.tick(now);
    if (now >= next_progress) {  // a long run says how far it is (stderr)
      next_progress = now + std::chrono::seconds(60);
      std::fprintf(stderr,
                   "soak sender: %.0f s, %" PRIu64 " messages completed, rss %" PRIu64 " KiB\n",
                   std::chrono::duration<double>(now - t0).count(), completed, rss_kib());
    }
    if (o.seconds > 0 && limit == UINT64_MAX && now >= stop_at) {
      limit = posted;  // stop posting; drain what is in flight
      full_write(sock, &limit, 8);
    }
    if (std::chrono::duration<double>(now - last).count() > o.stall_seconds)
      die("no completion for the stall bound (hang)");
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  char done;
  full_read(sock, &done, 1);  // the receiver checked everything
  std::printf("soak sender: messages=%" PRIu64 " size=%u window=%u seconds=%.1f faults=%s\n",
              completed, o.size, o.window, secs, o.faults.c_str());
  report_rss(rss, o);
  report_engine(s);
  std::printf("ratio soak_msgs_per_s %.0f\n", completed / secs);
  teardown(s);
  return 0;
}

void usage() {
  std::fprintf(stderr,
               "usage: kbv-soak [--messages N | --seconds S] [--size B (>= 8)] [--window W]\n"
               "                [--faults SPEC] [--ack-timeout CODE] [--stall-seconds S]\n"
               "                [--max-rss-growth-kib K]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage();
    const char* v = argv[++i];
    if (a == "--messages")
      o.messages = std::strtoull(v, nullptr, 10);
    else if (a == "--seconds")
      o.seconds = std::atof(v);
    else if (a == "--size")
      o.size = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
    else if (a == "--window")
      o.window = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
    else if (a == "--faults")
      o.faults = v;
    else if (a == "--stall-seconds")
      o.stall_seconds = std::atof(v);
    else if (a == "--max-rss-growth-kib")
      o.max_rss_growth_kib = std::strtoull(v, nullptr, 10);
    else
      usage();
  }
  if (o.size < 8 || o.size > 4096 || o.window == 0 || o.window > 1024 || o.messages == 0) usage();
  setenv("KBV_SIM_FAULTS", o.faults.c_str(), 1);
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 1;
  std::fflush(stdout);
  const pid_t child = ::fork();
  if (child < 0) return 1;
  if (child == 0) {
    ::close(sv[0]);
    const int rc = receiver(o, sv[1]);
    std::fflush(stdout);
    std::_Exit(rc);
  }
  ::close(sv[1]);
  const int rc = sender(o, sv[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  const bool child_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::printf("soak: %s\n", rc == 0 && child_ok ? "PASS" : "FAIL");
  return rc == 0 && child_ok ? 0 : 1;
}
