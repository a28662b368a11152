// SPDX-License-Identifier: BSD-3-Clause
//
// A capture of the model's RoCEv2 traffic (ModelConfig::pcap_path) decodes
// in tshark: RC SEND, RDMA WRITE with immediate, RDMA READ and both atomics
// from one side, with the PSNs in sequence and nothing malformed. Skipped
// when tshark is not installed (Debian package "tshark").
#include "dp_model_fixture.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace kbv::e2e {
namespace {

std::string run(const std::string& cmd) {
  std::string out;
  if (std::FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    ::pclose(p);
  }
  return out;
}

TEST_F(DpModel, CaptureOfRcTrafficDecodesInTshark) {
  if (::access("/usr/bin/tshark", X_OK) != 0) GTEST_SKIP() << "tshark not installed";
  const std::string path =
      testing::TempDir() + "kbv_dp_capture_" + std::to_string(::getpid()) + ".pcap";
  sim::ModelConfig ca;
  ca.pcap_path = path;
  open(ca, {});
  ConnectOptions o;
  o.ack_timeout = 18;  // 1 s: nothing is resent, the capture holds each request once
  pair(prm::qpc_st::kRc, o);
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(post_recv(*qb, 1, b.buf->sge(0, 4096)).is_ok());
  ASSERT_TRUE(post_recv(*qb, 2, b.buf->sge(4096, 4096)).is_ok());
  std::vector<hca::SendWr> w;
  hca::Sge s8 = a.buf->sge(0, 8), s100 = a.buf->sge(64, 100);
  w.push_back(wr(1, WrOpcode::kSend));
  w.back().sg = std::span(&s100, 1);
  w.push_back(wr(2, WrOpcode::kRdmaWriteImm));
  w.back().sg = std::span(&s100, 1);
  w.back().remote_addr = b.buf->addr(8192);
  w.back().rkey = b.buf->rkey();
  w.back().imm = 7;
  w.push_back(wr(3, WrOpcode::kRdmaRead));
  w.back().sg = std::span(&s100, 1);
  w.back().remote_addr = b.buf->addr(8192);
  w.back().rkey = b.buf->rkey();
  w.push_back(wr(4, WrOpcode::kAtomicCs));
  w.back().sg = std::span(&s8, 1);
  w.back().remote_addr = b.buf->addr(16384);
  w.back().rkey = b.buf->rkey();
  w.push_back(wr(5, WrOpcode::kAtomicFa));
  w.back().sg = std::span(&s8, 1);
  w.back().remote_addr = b.buf->addr(16384);
  w.back().rkey = b.buf->rkey();
  w.back().compare_add = 1;
  ASSERT_TRUE(qa->sq->post(w).is_ok());
  ASSERT_EQ(poll_cq(*a.cq, 5).size(), 5u);
  const uint32_t b_qpn = qb->qpn();
  TearDown();  // closes the models: the capture file is complete

  const std::string out =
      run("/usr/bin/tshark -n -r " + path +
          " --disable-protocol rpcordma -T fields -E separator='|' -E occurrence=f"
          " -e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn"
          " -e _ws.malformed 2>/dev/null");
  std::remove(path.c_str());
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) lines.push_back(l);
  // a sends: SEND only, WRITE only with immediate, READ request, CMP&SWAP,
  // FETCH&ADD (PSNs 0xFFFF00.. from connect_pair; the READ takes one PSN per
  // 1 KiB response packet, here one).
  const unsigned opcodes[5] = {0x04, 0x0B, 0x0C, 0x13, 0x14};
  ASSERT_EQ(lines.size(), 5u) << out;
  for (size_t i = 0; i < 5; ++i) {
    std::vector<std::string> f;
    std::istringstream ls(lines[i]);
    for (std::string x; std::getline(ls, x, '|');) f.push_back(x);
    f.resize(4);
    EXPECT_EQ(std::strtoul(f[0].c_str(), nullptr, 0), opcodes[i]) << lines[i];
    EXPECT_EQ(std::strtoul(f[1].c_str(), nullptr, 0), b_qpn) << lines[i];
    EXPECT_EQ(std::strtoul(f[2].c_str(), nullptr, 0), 0xFFFF00u + i) << lines[i];
    EXPECT_TRUE(f[3].empty()) << "malformed: " << lines[i];
  }
}

}  // namespace
}  // namespace kbv::e2e
