// SPDX-License-Identifier: BSD-3-Clause
// The dpdk: backend (src/platform/dpdk.hpp, issue 17 clause 3) on DPDK's own
// EAL: rte_eal_init runs unmodified against the model's emulated kernel
// (LD_PRELOAD libkbv-sim-preload.so, KBV_SIM_DEVICES=3: sysfs PCI scan,
// /sys/module/vfio, the type1 VFIO container and group, BAR mmap, DMA maps
// of EAL's memory), with functions 1 and 2 on its allow list and 3 not.
// Bring-up, objects, an RC pair with data, teardown with every memzone and
// container mapping returned (kbv's counters and DPDK's own), and the bad
// inputs: a function DPDK did not probe, an open twice, a malformed address.
//
// `dpdk_test --before-init` instead opens a dpdk: device before
// rte_eal_init: KBV_ERR_INVALID_STATE, nothing reserved or mapped.
#include <kbv/dpdk.h>
#include <kbv/kbv.h>
#include <rte_eal.h>
#include <rte_malloc.h>
#include <rte_memzone.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

constexpr const char* kA = "dpdk:fffe:00:01.0";
constexpr const char* kB = "dpdk:fffe:00:02.0";
constexpr const char* kNotProbed = "dpdk:fffe:00:03.0";

kbv_dpdk_usage_t usage() {
  kbv_dpdk_usage_t u{};
  EXPECT_EQ(kbv_dpdk_get_usage(&u), KBV_SUCCESS);
  return u;
}

// DPDK's own accounting: memzones reserved and heap bytes allocated.
struct DpdkMemory {
  unsigned zones = 0;
  size_t heap_alloc = 0;
  bool operator==(const DpdkMemory&) const = default;
};
DpdkMemory dpdk_memory() {
  DpdkMemory m;
  rte_memzone_walk([](const rte_memzone*, void* arg) { ++*static_cast<unsigned*>(arg); }, &m.zones);
  rte_malloc_socket_stats st{};
  for (int s = 0; s < RTE_MAX_NUMA_NODES; ++s)
    if (rte_malloc_get_socket_stats(s, &st) == 0) m.heap_alloc += st.heap_allocsz_bytes;
  return m;
}

// The port goes ACTIVE a little after bring-up (the model's link-up delay):
// port queries until it is, for at most 5 s (verbs_fixture.hpp does the same).
void wait_port_active(kbv_device_t d, kbv_port_attr_t& port) {
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < end) {
    ASSERT_EQ(kbv_port_query(d, 1, &port, KBV_EQ_NONE, 0), KBV_SUCCESS);
    if (port.state == KBV_PORT_ACTIVE) return;
    std::this_thread::sleep_for(1ms);
  }
  FAIL() << "port never became active";
}

kbv_device_t open_dev(const char* uri) {
  kbv_device_t d = 0;
  EXPECT_EQ(kbv_device_open(uri, nullptr, KBV_EQ_NONE, 0, &d), KBV_SUCCESS) << uri;
  return d;
}

struct Side {
  kbv_device_t dev = 0;
  kbv_pd_t pd = 0;
  kbv_cq_t cq = 0;
  kbv_qp_t qp = 0;
  uint32_t qpn = 0, gid_index = 0, mtu = 0;
  kbv_gid_entry_t gid{};
};

void make_side(Side& s, const char* uri) {
  s.dev = open_dev(uri);
  ASSERT_NE(s.dev, 0u);
  kbv_port_attr_t port{};
  ASSERT_NO_FATAL_FAILURE(wait_port_active(s.dev, port));
  for (uint32_t i = 0; i < port.gid_count; ++i)
    if (port.gids[i].type == KBV_GID_TYPE_ROCE_V2) {
      s.gid_index = i;
      break;
    }
  s.gid = port.gids[s.gid_index];
  s.mtu = port.active_mtu;
  ASSERT_EQ(kbv_pd_alloc(s.dev, KBV_EQ_NONE, 0, &s.pd), KBV_SUCCESS);
  kbv_cq_attr_t ca{};
  ca.cqe = 64;
  ASSERT_EQ(kbv_cq_create(s.dev, &ca, KBV_EQ_NONE, 0, &s.cq), KBV_SUCCESS);
  kbv_qp_init_attr_t qa{};
  qa.qp_type = KBV_QPT_RC;
  qa.send_cq = s.cq;
  qa.recv_cq = s.cq;
  qa.cap.max_send_wr = 16;
  qa.cap.max_recv_wr = 16;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  ASSERT_EQ(kbv_qp_create(s.pd, &qa, KBV_EQ_NONE, 0, &s.qp), KBV_SUCCESS);
  ASSERT_EQ(kbv_qp_get_num(s.qp, &s.qpn), KBV_SUCCESS);
}

// RESET -> INIT -> RTR -> RTS towards `peer` (IBTA 10.3.1).
void connect(Side& s, const Side& peer) {
  kbv_qp_attr_t a{};
  a.qp_state = KBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = KBV_ACCESS_REMOTE_WRITE | KBV_ACCESS_REMOTE_READ;
  ASSERT_EQ(
      kbv_qp_modify(s.qp, &a, KBV_QP_STATE | KBV_QP_PKEY_INDEX | KBV_QP_PORT | KBV_QP_ACCESS_FLAGS,
                    KBV_EQ_NONE, 0),
      KBV_SUCCESS);
  a = {};
  a.qp_state = KBV_QPS_RTR;
  a.path_mtu = std::min(s.mtu, peer.mtu);
  a.dest_qp_num = peer.qpn;
  a.rq_psn = 0x100;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  std::memcpy(a.ah_attr.dgid, peer.gid.gid, 16);
  a.ah_attr.dmac = peer.gid.mac;
  a.ah_attr.sgid_index = static_cast<uint8_t>(s.gid_index);
  a.ah_attr.port_num = 1;
  ASSERT_EQ(kbv_qp_modify(s.qp, &a,
                          KBV_QP_STATE | KBV_QP_AV | KBV_QP_PATH_MTU | KBV_QP_DEST_QPN |
                              KBV_QP_RQ_PSN | KBV_QP_MAX_DEST_RD_ATOMIC | KBV_QP_MIN_RNR_TIMER,
                          KBV_EQ_NONE, 0),
            KBV_SUCCESS);
  a = {};
  a.qp_state = KBV_QPS_RTS;
  a.sq_psn = 0x100;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  ASSERT_EQ(kbv_qp_modify(s.qp, &a,
                          KBV_QP_STATE | KBV_QP_SQ_PSN | KBV_QP_TIMEOUT | KBV_QP_RETRY_CNT |
                              KBV_QP_RNR_RETRY | KBV_QP_MAX_QP_RD_ATOMIC,
                          KBV_EQ_NONE, 0),
            KBV_SUCCESS);
}

void close_side(Side& s) {
  if (s.qp) {
    EXPECT_EQ(kbv_qp_destroy(s.qp, KBV_EQ_NONE, 0), KBV_SUCCESS);
  }
  if (s.cq) {
    EXPECT_EQ(kbv_cq_destroy(s.cq, KBV_EQ_NONE, 0), KBV_SUCCESS);
  }
  if (s.pd) {
    EXPECT_EQ(kbv_pd_dealloc(s.pd, KBV_EQ_NONE, 0), KBV_SUCCESS);
  }
  if (s.dev) {
    EXPECT_EQ(kbv_device_close(s.dev, KBV_EQ_NONE, 0), KBV_SUCCESS);
  }
  s = {};
}

// The next completion of `cq` (bounded by polls, not time).
kbv_wc_t next_wc(kbv_cq_t cq) {
  kbv_wc_t wc{};
  for (uint64_t i = 0; i < 400'000'000ull; ++i) {
    const int n = kbv_poll_cq(cq, &wc, 1);
    EXPECT_GE(n, 0);
    if (n != 0) return wc;
  }
  ADD_FAILURE() << "no completion";
  wc.status = KBV_ERR_TIMEOUT;
  return wc;
}

class Dpdk : public ::testing::Test {
 protected:
  void SetUp() override { before_ = dpdk_memory(); }
  // Every memzone and mapping kbv took is back, by kbv's counters and by
  // DPDK's own (memzones, heap bytes).
  void TearDown() override {
    const kbv_dpdk_usage_t u = usage();
    EXPECT_EQ(u.devices_open, 0u);
    EXPECT_EQ(u.memzones, 0u);
    EXPECT_EQ(u.memzone_bytes, 0u);
    EXPECT_EQ(u.external_maps, 0u);
    EXPECT_EQ(u.external_bytes, 0u);
    EXPECT_EQ(u.devices_probed, 2u);
    const DpdkMemory after = dpdk_memory();
    EXPECT_EQ(after.zones, before_.zones);
    EXPECT_EQ(after.heap_alloc, before_.heap_alloc);
  }
  DpdkMemory before_;
};

TEST_F(Dpdk, ListsTheProbedFunctions) {
  std::vector<kbv_device_desc_t> list(64);
  uint32_t n = 0;
  ASSERT_EQ(kbv_get_device_list(list.data(), static_cast<uint32_t>(list.size()), &n), KBV_SUCCESS);
  std::vector<std::string> dpdk;
  for (uint32_t i = 0; i < std::min<uint32_t>(n, 64); ++i)
    if (std::string(list[i].uri).starts_with("dpdk:")) dpdk.emplace_back(list[i].uri);
  EXPECT_EQ(dpdk, (std::vector<std::string>{kA, kB}));
}

// Bring-up through DPDK's mapping and memory; the device answers queries;
// its DMA memory is DPDK memzones while open and none after.
TEST_F(Dpdk, BringUpAndQuery) {
  kbv_device_t d = open_dev(kA);
  ASSERT_NE(d, 0u);
  kbv_dpdk_usage_t u = usage();
  EXPECT_EQ(u.devices_open, 1u);
  EXPECT_GT(u.memzones, 0u);
  EXPECT_GE(u.memzone_bytes, 2u << 20);
  EXPECT_GT(dpdk_memory().zones, before_.zones);
  kbv_device_attr_t attr{};
  ASSERT_EQ(kbv_device_query(d, &attr, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(attr.vendor_id, 0x15b3u);
  EXPECT_GT(attr.max_qp, 0u);
  kbv_port_attr_t port{};
  wait_port_active(d, port);
  ASSERT_EQ(kbv_device_close(d, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

// PD, CQ, QP and memory regions on DPDK memory (rte_malloc: nothing mapped
// again) and on other memory (mapped into DPDK's container, shared by a
// second registration of the same span).
TEST_F(Dpdk, Objects) {
  Side s;
  make_side(s, kA);
  if (HasFatalFailure()) return close_side(s);
  void* heap = rte_zmalloc("kbv-test", 3 * 4096, 4096);
  ASSERT_NE(heap, nullptr);
  std::vector<uint8_t> other(5 * 4096);
  const uint32_t acc = KBV_ACCESS_LOCAL_WRITE | KBV_ACCESS_REMOTE_WRITE;
  kbv_mr_t m1 = 0, m2 = 0, m3 = 0;
  ASSERT_EQ(kbv_mr_reg(s.pd, heap, 3 * 4096, acc, KBV_EQ_NONE, 0, &m1), KBV_SUCCESS);
  EXPECT_EQ(usage().external_maps, 0u);
  ASSERT_EQ(kbv_mr_reg(s.pd, other.data(), other.size(), acc, KBV_EQ_NONE, 0, &m2), KBV_SUCCESS);
  EXPECT_EQ(usage().external_maps, 1u);
  ASSERT_EQ(kbv_mr_reg(s.pd, other.data(), other.size(), acc, KBV_EQ_NONE, 0, &m3), KBV_SUCCESS);
  EXPECT_EQ(usage().external_maps, 1u);
  EXPECT_EQ(kbv_mr_dereg(m2, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(usage().external_maps, 1u);
  EXPECT_EQ(kbv_mr_dereg(m3, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(usage().external_maps, 0u);
  EXPECT_EQ(kbv_mr_dereg(m1, KBV_EQ_NONE, 0), KBV_SUCCESS);
  close_side(s);
  rte_free(heap);
}

// Two functions, an RC pair: a SEND of 3000 bytes from DPDK memory into
// application memory and an RDMA WRITE of 5000 bytes the other way, every
// byte checked.
TEST_F(Dpdk, RcPairWithData) {
  Side a, b;
  make_side(a, kA);
  make_side(b, kB);
  if (!HasFatalFailure()) connect(a, b);
  if (!HasFatalFailure()) connect(b, a);
  if (HasFatalFailure()) {
    close_side(a);
    return close_side(b);
  }
  constexpr size_t kLen = 1 << 14;
  auto* abuf = static_cast<uint8_t*>(rte_zmalloc("kbv-test-a", kLen, 4096));
  ASSERT_NE(abuf, nullptr);
  std::vector<uint8_t> bbuf(kLen);
  const uint32_t acc = KBV_ACCESS_LOCAL_WRITE | KBV_ACCESS_REMOTE_WRITE | KBV_ACCESS_REMOTE_READ;
  kbv_mr_t ma = 0, mb = 0;
  ASSERT_EQ(kbv_mr_reg(a.pd, abuf, kLen, acc, KBV_EQ_NONE, 0, &ma), KBV_SUCCESS);
  ASSERT_EQ(kbv_mr_reg(b.pd, bbuf.data(), kLen, acc, KBV_EQ_NONE, 0, &mb), KBV_SUCCESS);
  uint32_t la, ra, lb, rb;
  ASSERT_EQ(kbv_mr_get_keys(ma, &la, &ra), KBV_SUCCESS);
  ASSERT_EQ(kbv_mr_get_keys(mb, &lb, &rb), KBV_SUCCESS);

  // SEND a -> b.
  for (size_t i = 0; i < 3000; ++i) abuf[i] = static_cast<uint8_t>(i * 7 + 1);
  kbv_sge_t rsge{reinterpret_cast<uintptr_t>(bbuf.data()), 4096, lb};
  kbv_recv_wr_t rwr{};
  rwr.wr_id = 11;
  rwr.sg_list = &rsge;
  rwr.num_sge = 1;
  ASSERT_EQ(kbv_post_recv(b.qp, &rwr, 1, nullptr), KBV_SUCCESS);
  kbv_sge_t ssge{reinterpret_cast<uintptr_t>(abuf), 3000, la};
  kbv_send_wr_t swr{};
  swr.wr_id = 12;
  swr.opcode = KBV_WR_SEND;
  swr.flags = KBV_SEND_SIGNALED;
  swr.sg_list = &ssge;
  swr.num_sge = 1;
  ASSERT_EQ(kbv_post_send(a.qp, &swr, 1, nullptr), KBV_SUCCESS);
  kbv_wc_t wc = next_wc(a.cq);
  EXPECT_EQ(wc.status, KBV_SUCCESS);
  EXPECT_EQ(wc.wr_id, 12u);
  wc = next_wc(b.cq);
  ASSERT_EQ(wc.status, KBV_SUCCESS);
  EXPECT_EQ(wc.wr_id, 11u);
  EXPECT_EQ(wc.opcode, KBV_WC_RECV);
  EXPECT_EQ(wc.byte_len, 3000u);
  EXPECT_EQ(std::memcmp(bbuf.data(), abuf, 3000), 0);

  // RDMA WRITE b -> a.
  for (size_t i = 0; i < 5000; ++i) bbuf[8192 + i] = static_cast<uint8_t>(i * 13 + 5);
  kbv_sge_t wsge{reinterpret_cast<uintptr_t>(bbuf.data() + 8192), 5000, lb};
  kbv_send_wr_t wwr{};
  wwr.wr_id = 21;
  wwr.opcode = KBV_WR_RDMA_WRITE;
  wwr.flags = KBV_SEND_SIGNALED;
  wwr.sg_list = &wsge;
  wwr.num_sge = 1;
  wwr.remote_addr = reinterpret_cast<uintptr_t>(abuf + 4096);
  wwr.rkey = ra;
  ASSERT_EQ(kbv_post_send(b.qp, &wwr, 1, nullptr), KBV_SUCCESS);
  wc = next_wc(b.cq);
  ASSERT_EQ(wc.status, KBV_SUCCESS);
  EXPECT_EQ(wc.wr_id, 21u);
  EXPECT_EQ(std::memcmp(abuf + 4096, bbuf.data() + 8192, 5000), 0);

  EXPECT_EQ(kbv_mr_dereg(ma, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_mr_dereg(mb, KBV_EQ_NONE, 0), KBV_SUCCESS);
  close_side(a);
  close_side(b);
  rte_free(abuf);
}

// Bad input: a function EAL did not probe (not on its allow list), an open
// of an open function, a malformed address — each refused, nothing taken.
TEST_F(Dpdk, BadInput) {
  kbv_device_t d = 0;
  EXPECT_EQ(kbv_device_open(kNotProbed, nullptr, KBV_EQ_NONE, 0, &d), KBV_ERR_NOT_FOUND);
  EXPECT_EQ(kbv_device_open("dpdk:fffe:00", nullptr, KBV_EQ_NONE, 0, &d), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(usage().memzones, 0u);
  kbv_device_t a = open_dev(kA);
  ASSERT_NE(a, 0u);
  EXPECT_EQ(kbv_device_open(kA, nullptr, KBV_EQ_NONE, 0, &d), KBV_ERR_BUSY);
  EXPECT_EQ(usage().devices_open, 1u);
  ASSERT_EQ(kbv_device_close(a, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

// `--before-init`: no EAL yet.
int before_init() {
  kbv_device_t d = 0;
  const kbv_status_t st = kbv_device_open(kA, nullptr, KBV_EQ_NONE, 0, &d);
  kbv_dpdk_usage_t u{};
  kbv_dpdk_get_usage(&u);
  std::printf("open before rte_eal_init: %s; memzones %u, mappings %u, probed %u\n",
              kbv_status_name(st), u.memzones, u.external_maps, u.devices_probed);
  return st == KBV_ERR_INVALID_STATE && u.memzones == 0 && u.external_maps == 0 &&
                 u.devices_probed == 0 && u.devices_open == 0
             ? 0
             : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--before-init") == 0) return before_init();
  ::testing::InitGoogleTest(&argc, argv);
  // EAL as a DPDK application on the model starts it: no huge pages, IOVA
  // as VA (the emulated type1 IOMMU), no shared files or telemetry socket,
  // functions 1 and 2 allowed, 3 left out.
  const char* eal[] = {"dpdk_test",
                       "--no-huge",
                       "-m",
                       "128",
                       "--iova-mode=va",
                       "--no-shconf",
                       "--no-telemetry",
                       "-l",
                       "0",
                       "-a",
                       "fffe:00:01.0",
                       "-a",
                       "fffe:00:02.0",
                       "--log-level=lib.eal:notice"};
  std::vector<char*> args;
  for (const char* a : eal) args.push_back(const_cast<char*>(a));
  if (rte_eal_init(static_cast<int>(args.size()), args.data()) < 0) {
    std::fprintf(stderr, "rte_eal_init failed\n");
    return 1;
  }
  const int r = RUN_ALL_TESTS();
  rte_eal_cleanup();
  return r;
}
