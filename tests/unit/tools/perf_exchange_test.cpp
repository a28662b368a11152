// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf's TCP exchange: message encodings round-trip, malformed messages
// are refused, and two channels over loopback TCP exchange and synchronise.
#include "perf/exchange.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <thread>

namespace kbv::perf {
namespace {

using namespace std::chrono_literals;

QpInfo sample_qp() {
  QpInfo q;
  q.lid = 0;
  q.qpn = 0xabcdef;
  q.psn = 0x123456;
  q.rkey = 0xdeadbeef;
  q.vaddr = 0x00007f0012345000ull;
  q.qkey = 0x11111111;
  q.mtu = 3;
  q.mac = 0x02000000abcdull;
  q.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 2};
  return q;
}

TEST(PerfExchange, QpInfoRoundTrips) {
  const QpInfo q = sample_qp();
  const std::string line = encode(q);
  EXPECT_EQ(line,
            "QP 0000:abcdef:123456:deadbeef:00007f0012345000:11111111:3:02000000abcd:"
            "00000000000000000000ffff7f000002");
  auto back = decode_qp_info(line);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, q);
}

TEST(PerfExchange, MalformedQpInfoRefused) {
  std::string good = encode(sample_qp());
  for (const std::string& bad :
       {std::string("QP"), std::string("XX") + good.substr(2), good.substr(0, good.size() - 1),
        good + ":00",
        std::string("QP 0000:1abcdef:123456:deadbeef:0:0:0:0:") + std::string(32, '0'),
        std::string("QP 0000:zz:123456:deadbeef:0:0:0:0:") + std::string(32, '0'),
        std::string("QP 0000:1:2:3:4:5:6:1000000000000:") + std::string(32, '0')}) {
    auto r = decode_qp_info(bad);
    EXPECT_FALSE(r) << bad;
    EXPECT_EQ(r.status(), KBV_ERR_INVALID_ARGUMENT);
  }
}

TEST(PerfExchange, ParamsRoundTrip) {
  TestParams p;
  p.test = perf::Test::kSend;
  p.connection = Connection::kUd;
  p.lat_sizes = {2, 4, 8};
  p.bw = false;
  p.lat_iters = 55;
  p.tx_depth = 32;
  p.inline_size = 64;
  p.cq_mod = 4;
  p.num_qps = 2;
  p.no_peak = true;
  auto back = decode_params(encode(p));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->test, perf::Test::kSend);
  EXPECT_EQ(back->connection, Connection::kUd);
  EXPECT_EQ(back->lat_sizes, p.lat_sizes);
  EXPECT_TRUE(back->bw_sizes.empty());
  EXPECT_FALSE(back->bw);
  EXPECT_EQ(back->lat_iters, 55u);
  EXPECT_EQ(back->tx_depth, 32u);
  EXPECT_EQ(back->inline_size, 64u);
  EXPECT_EQ(back->cq_mod, 4u);
  EXPECT_EQ(back->num_qps, 2u);
  EXPECT_TRUE(back->no_peak);
}

TEST(PerfExchange, InvalidParamsRefused) {
  TestParams p;
  p.lat_sizes = {2};
  p.bw_sizes = {65536};
  std::string line = encode(p);
  EXPECT_TRUE(decode_params(line));
  // A UD write is not a test: the server refuses what the client may not ask.
  std::string ud = line;
  ud.replace(ud.find("conn=RC"), 7, "conn=UD");
  EXPECT_FALSE(decode_params(ud));
  std::string missing = line.substr(0, line.rfind(' '));
  EXPECT_FALSE(decode_params(missing));
  EXPECT_FALSE(decode_params(line + " extra=1"));
  std::string badnum = line;
  badnum.replace(badnum.find("qps=1"), 5, "qps=x");
  EXPECT_FALSE(decode_params(badnum));
}

TEST(PerfExchange, TwoSidesOverTcp) {
  auto l = Listener::listen(0);
  ASSERT_TRUE(l) << kbv_status_name(l.status().code());
  const uint16_t port = l->port();
  ASSERT_NE(port, 0);
  QpInfo server_seen, client_seen;
  std::thread server([&] {
    auto ch = l->accept(5s);
    ASSERT_TRUE(ch);
    auto line = ch->recv_line(5s);
    ASSERT_TRUE(line);
    EXPECT_TRUE(decode_params(*line));
    QpInfo mine = sample_qp();
    mine.qpn = 0x10;
    auto peer = ch->exchange(mine, 5s);
    ASSERT_TRUE(peer);
    server_seen = *peer;
    EXPECT_TRUE(ch->sync("done", 5s));
  });
  auto ch = Channel::connect("127.0.0.1", port, 5s);
  ASSERT_TRUE(ch);
  TestParams p;
  p.lat_sizes = {2};
  p.bw_sizes = {4096};
  ASSERT_TRUE(ch->send_line(encode(p)));
  QpInfo mine = sample_qp();
  mine.qpn = 0x20;
  auto peer = ch->exchange(mine, 5s);
  ASSERT_TRUE(peer);
  client_seen = *peer;
  EXPECT_TRUE(ch->sync("done", 5s));
  server.join();
  EXPECT_EQ(server_seen.qpn, 0x20u);
  EXPECT_EQ(client_seen.qpn, 0x10u);
}

TEST(PerfExchange, TimeoutsAndClosedPeer) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  Channel a(sv[0]), b(sv[1]);
  auto r = a.recv_line(20ms);
  EXPECT_EQ(r.status(), KBV_ERR_TIMEOUT);
  ASSERT_TRUE(b.send_line("SYNC other"));
  EXPECT_EQ(a.sync("mine", 1s), KBV_ERR_INVALID_STATE);  // tags differ
  EXPECT_EQ(a.send_line("two\nlines"), KBV_ERR_INVALID_ARGUMENT);
  b = Channel();  // closes
  EXPECT_EQ(a.recv_line(1s).status(), KBV_ERR_IO);
  auto l = Listener::listen(0);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->accept(20ms).status(), KBV_ERR_TIMEOUT);
}

}  // namespace
}  // namespace kbv::perf
