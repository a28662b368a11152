// SPDX-License-Identifier: BSD-3-Clause
// sim::Model's port (ModelConfig::port_host, faults, pcap_path) and engine
// counters at creation: an explicit 127.0.0.N that is taken is refused with
// nothing left behind, automatic numbers never collide, a bad fault
// configuration is refused, the pcap file is created.
#include "sim/model.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace kbv::sim {
namespace {

TEST(SimModelPort, ATakenExplicitHostIsRefusedAndTheNameStaysFree) {
  auto a = Model::create("model-port-a");
  ASSERT_TRUE(a.has_value()) << a.status().to_string();
  ModelConfig c;
  c.port_host = (*a)->port_host();
  auto b = Model::create("model-port-b", c);
  EXPECT_EQ(b.status(), KBV_ERR_ALREADY_EXISTS);
  // Nothing of the refused model remains: its name can be used again.
  auto b2 = Model::create("model-port-b");
  ASSERT_TRUE(b2.has_value()) << b2.status().to_string();
  EXPECT_NE((*b2)->port_host(), (*a)->port_host());
  const engine::EngineStats s = (*b2)->engine_stats();
  EXPECT_EQ(s.tx_packets, 0u);
  EXPECT_EQ(s.rx_packets, 0u);
}

TEST(SimModelPort, AutomaticHostsAreDistinct) {
  auto a = Model::create("model-port-c");
  auto b = Model::create("model-port-d");
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_NE((*a)->port_host(), (*b)->port_host());
  EXPECT_GE((*a)->port_host(), 1);
  EXPECT_LE((*a)->port_host(), 199);
}

TEST(SimModelPort, BadFaultConfigIsRefused) {
  ModelConfig c;
  c.faults.drop = 1.5;
  EXPECT_EQ(Model::create("model-port-e", c).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(Model::create("model-port-e").has_value()) << "nothing left behind";
}

TEST(SimModelPort, PcapPathCreatesTheCaptureFile) {
  char path[] = "/tmp/kbv-model-pcap-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  {
    ModelConfig c;
    c.pcap_path = path;
    auto m = Model::create("model-port-f", c);
    ASSERT_TRUE(m.has_value()) << m.status().to_string();
  }
  std::FILE* f = std::fopen(path, "rb");
  ASSERT_NE(f, nullptr);
  unsigned char hdr[24] = {};
  EXPECT_EQ(std::fread(hdr, 1, sizeof hdr, f), sizeof hdr) << "the pcap file header";
  std::fclose(f);
  ::unlink(path);
}

}  // namespace
}  // namespace kbv::sim
