// SPDX-License-Identifier: BSD-3-Clause
//
// kbv's libibverbs: devices, contexts, queries, strings, fork, the 1.0 ABI
// (src/ibverbs/device.cpp, query.cpp, strings.cpp, fork.cpp, compat_1_0.c)
// on model HCAs, through rdma-core's verbs.h.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <endian.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "ibv_fixture.hpp"

// IBVERBS_PRIVATE_34 (rdma-core driver.h; ibv_devinfo imports it).
extern "C" int ibv_query_gid_type(ibv_context*, uint8_t, unsigned int, int*);
// rdma-core's internal headers declare these (librdmacm imports them).
extern "C" const char* ibv_get_sysfs_path(void);
extern "C" int ibv_read_sysfs_file(const char*, const char*, char*, size_t);

namespace kbv::ibvtest {
namespace {

TEST(IbvDevices, NamedMlx5InKbvOrder) {
  ASSERT_EQ(setenv("KBV_SIM_DEVICES", "a,b", 1), 0);
  int n = -1;
  ibv_device** l = ibv_get_device_list(&n);
  ASSERT_NE(l, nullptr);
  ASSERT_EQ(n, 2);
  EXPECT_STREQ(ibv_get_device_name(l[0]), "mlx5_0");
  EXPECT_STREQ(ibv_get_device_name(l[1]), "mlx5_1");
  EXPECT_EQ(l[2], nullptr);
  EXPECT_EQ(ibv_get_device_index(l[1]), 1);
  EXPECT_EQ(l[0]->node_type, IBV_NODE_CA);
  EXPECT_EQ(l[0]->transport_type, IBV_TRANSPORT_IB);
  // The GUID of a device nobody opened (opened for the read), and the one
  // ibv_query_device reports, agree.
  const __be64 guid = ibv_get_device_guid(l[1]);
  EXPECT_NE(guid, 0u);
  ibv_device* keep = l[1];
  ibv_free_device_list(l);
  // A device stays usable after the list is freed.
  ibv_context* ctx = ibv_open_device(keep);
  ASSERT_NE(ctx, nullptr);
  ibv_device_attr attr{};
  ASSERT_EQ(ibv_query_device(ctx, &attr), 0);
  EXPECT_EQ(attr.node_guid, guid);
  // The second model device has the next loopback address.
  ibv_gid gid{};
  ASSERT_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);
  EXPECT_EQ(gid.raw[10], 0xff);
  EXPECT_EQ(gid.raw[12], 127);
  EXPECT_EQ(ibv_close_device(ctx), 0);
  ASSERT_EQ(unsetenv("KBV_SIM_DEVICES"), 0);
}

TEST_F(IbvTest, ContextIsExtendedWithItsSize) {
  verbs_context* v = verbs_get_ctx(ctx_);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->sz, sizeof(verbs_context));
  EXPECT_NE(verbs_get_ctx_op(ctx_, query_device_ex), nullptr);
  EXPECT_NE(verbs_get_ctx_op(ctx_, query_port), nullptr);
  EXPECT_NE(verbs_get_ctx_op(ctx_, create_qp_ex), nullptr);
  EXPECT_NE(verbs_get_ctx_op(ctx_, create_cq_ex), nullptr);
  // What kbv lacks stays empty: verbs.h answers EOPNOTSUPP itself.
  ibv_td_init_attr td{};
  errno = 0;
  EXPECT_EQ(ibv_alloc_td(ctx_, &td), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(ctx_->num_comp_vectors, 1);
  EXPECT_GE(ctx_->async_fd, 0);
}

// A second context on the same device shares the kbv device; closing a
// context with objects left destroys them (as uverbs does), so the device
// opens again afterwards.
TEST_F(IbvTest, TwoContextsAndCloseWithLeftovers) {
  ibv_context* c2 = ibv_open_device(list_[0]);
  ASSERT_NE(c2, nullptr) << std::strerror(errno);
  ibv_pd* pd = ibv_alloc_pd(c2);
  ASSERT_NE(pd, nullptr);
  std::vector<uint8_t> buf(4096);
  ASSERT_NE(ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE), nullptr);
  ibv_cq* cq = ibv_create_cq(c2, 16, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = cq;
  qa.qp_type = IBV_QPT_RC;
  qa.cap = ibv_qp_cap{4, 4, 1, 1, 0};
  ASSERT_NE(ibv_create_qp(pd, &qa), nullptr);
  EXPECT_EQ(ibv_close_device(c2), 0);  // QP, CQ, MR, PD go with it
  ibv_device_attr a{};
  EXPECT_EQ(ibv_query_device(ctx_, &a), 0);  // the first context is unaffected

  // All contexts closed with objects left: the HCA is released and opens
  // again.
  ibv_pd* left = ibv_alloc_pd(ctx_);
  ASSERT_NE(left, nullptr);
  EXPECT_EQ(ibv_dealloc_pd(pd_), 0);
  pd_ = nullptr;
  EXPECT_EQ(ibv_close_device(ctx_), 0);
  ctx_ = ibv_open_device(list_[0]);
  ASSERT_NE(ctx_, nullptr) << std::strerror(errno);
  pd_ = ibv_alloc_pd(ctx_);
  ASSERT_NE(pd_, nullptr);
}

TEST_F(IbvTest, QueryDeviceAndEx) {
  ibv_device_attr a{};
  ASSERT_EQ(ibv_query_device(ctx_, &a), 0);
  EXPECT_EQ(a.vendor_id, 0x15b3u);
  EXPECT_EQ(a.phys_port_cnt, 1);
  EXPECT_GT(a.max_qp_wr, 0);
  EXPECT_GT(a.max_sge, 0);
  EXPECT_EQ(a.atomic_cap, IBV_ATOMIC_HCA);
  EXPECT_NE(std::string(a.fw_ver), "");
  ibv_device_attr_ex x{};
  ASSERT_EQ(ibv_query_device_ex(ctx_, nullptr, &x), 0);
  EXPECT_EQ(x.orig_attr.max_qp, a.max_qp);
  EXPECT_EQ(x.phys_port_cnt_ex, 1u);
  // Completion timestamps as the kernel's mlx5_ib reports them: the model's
  // clock is 1 GHz (device_frequency_khz 1000000).
  EXPECT_EQ(x.completion_timestamp_mask, 0x7FFFFFFFFFFFFFFFull);
  EXPECT_EQ(x.hca_core_clock, 1000000u);
  ibv_query_device_ex_input in{};
  in.comp_mask = 1;
  EXPECT_EQ(ibv_query_device_ex(ctx_, &in, &x), EINVAL);
}

TEST_F(IbvTest, QueryPortEthernetActive) {
  ibv_port_attr p{};
  ASSERT_EQ(ibv_query_port(ctx_, 1, &p), 0);
  EXPECT_EQ(p.state, IBV_PORT_ACTIVE);  // the open waited for the link
  EXPECT_EQ(p.link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_GE(p.active_mtu, IBV_MTU_1024);
  EXPECT_GT(p.gid_tbl_len, 0);
  EXPECT_EQ(p.pkey_tbl_len, 128);  // the model port's P_Key table
  EXPECT_EQ(p.active_width, 2);    // 4X
  EXPECT_EQ(p.active_speed, 32);   // 25 Gb/s lanes
  EXPECT_TRUE(p.flags & IBV_QPF_GRH_REQUIRED);
  EXPECT_EQ(ibv_query_port(ctx_, 2, &p), EINVAL);
  EXPECT_EQ(ibv_query_port(ctx_, 0, &p), EINVAL);
}

TEST_F(IbvTest, RoceV2GidAtIndexZero) {
  // ::ffff:127.0.0.N
  static const uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  EXPECT_EQ(std::memcmp(gid_.raw, kPrefix, 12), 0);
  EXPECT_EQ(gid_.raw[12], 127);
  int type = -1;
  ASSERT_EQ(ibv_query_gid_type(ctx_, 1, kGidIndex, &type), 0);
  EXPECT_EQ(type, 1);  // rdma-core's sysfs numbering: RoCE v2 = 1
  ibv_gid_entry e{};
  ASSERT_EQ(ibv_query_gid_ex(ctx_, 1, kGidIndex, &e, 0), 0);
  EXPECT_EQ(e.gid_type, IBV_GID_TYPE_ROCE_V2);  // the public enum: 2
  EXPECT_EQ(std::memcmp(e.gid.raw, gid_.raw, 16), 0);
  EXPECT_EQ(e.port_num, 1u);
  EXPECT_NE(e.ndev_ifindex, 0u);
  // An empty entry: ENODATA from the _ex call; a zero GID and type 0 from
  // the old calls (rdma-core keeps that behaviour).
  EXPECT_EQ(ibv_query_gid_ex(ctx_, 1, 1, &e, 0), ENODATA);
  ibv_gid z{};
  z.raw[0] = 1;
  ASSERT_EQ(ibv_query_gid(ctx_, 1, 1, &z), 0);
  EXPECT_EQ(z.global.subnet_prefix | z.global.interface_id, 0u);
  ASSERT_EQ(ibv_query_gid_type(ctx_, 1, 1, &type), 0);
  EXPECT_EQ(type, 0);
  // Errors: flags, index past the table, bad port.
  EXPECT_EQ(ibv_query_gid_ex(ctx_, 1, 0, &e, 1), EINVAL);
  ibv_port_attr p{};
  ASSERT_EQ(ibv_query_port(ctx_, 1, &p), 0);
  EXPECT_EQ(ibv_query_gid_ex(ctx_, 1, static_cast<uint32_t>(p.gid_tbl_len), &e, 0), EINVAL);
  errno = 0;
  EXPECT_EQ(ibv_query_gid(ctx_, 1, p.gid_tbl_len, &z), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(ibv_query_gid_ex(ctx_, 3, 0, &e, 0), EINVAL);
}

TEST_F(IbvTest, GidTable) {
  ibv_gid_entry t[4]{};
  EXPECT_EQ(ibv_query_gid_table(ctx_, t, 4, 0), 1);
  EXPECT_EQ(t[0].gid_index, 0u);
  EXPECT_EQ(t[0].gid_type, IBV_GID_TYPE_ROCE_V2);
  EXPECT_EQ(ibv_query_gid_table(ctx_, t, 0, 0), -EINVAL);  // no room for the valid entry
  EXPECT_EQ(ibv_query_gid_table(ctx_, t, 4, 1), -EINVAL);
}

TEST_F(IbvTest, PkeyTableOfThePort) {
  // The model port's table (QUERY_HCA_VPORT_PKEY): 128 entries, entry 0
  // the default P_Key, the others unset (0).
  ibv_port_attr p{};
  ASSERT_EQ(ibv_query_port(ctx_, 1, &p), 0);
  EXPECT_EQ(p.pkey_tbl_len, 128);
  __be16 pkey = 0;
  ASSERT_EQ(ibv_query_pkey(ctx_, 1, 0, &pkey), 0);
  EXPECT_EQ(be16toh(pkey), 0xffff);
  ASSERT_EQ(ibv_query_pkey(ctx_, 1, 127, &pkey), 0);
  EXPECT_EQ(be16toh(pkey), 0);
  errno = 0;
  EXPECT_EQ(ibv_query_pkey(ctx_, 1, 128, &pkey), -1);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(ibv_query_pkey(ctx_, 2, 0, &pkey), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(ibv_get_pkey_index(ctx_, 1, htobe16(0xffff)), 0);
  EXPECT_EQ(ibv_get_pkey_index(ctx_, 1, htobe16(0x8001)), -1);
}

TEST(IbvStrings, AsRdmaCore) {
  EXPECT_STREQ(ibv_wc_status_str(IBV_WC_SUCCESS), "success");
  EXPECT_STREQ(ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR), "Work Request Flushed Error");
  EXPECT_STREQ(ibv_wc_status_str(static_cast<ibv_wc_status>(99)), "unknown");
  EXPECT_STREQ(ibv_event_type_str(IBV_EVENT_SRQ_LIMIT_REACHED), "SRQ limit reached");
  EXPECT_STREQ(ibv_event_type_str(static_cast<ibv_event_type>(-1)), "unknown");
  EXPECT_STREQ(ibv_port_state_str(IBV_PORT_ACTIVE), "active");
  EXPECT_STREQ(ibv_node_type_str(IBV_NODE_CA), "InfiniBand channel adapter");
  EXPECT_STREQ(ibv_node_type_str(static_cast<ibv_node_type>(0)), "unknown");
  EXPECT_EQ(ibv_rate_to_mult(IBV_RATE_40_GBPS), 16);
  EXPECT_EQ(ibv_rate_to_mult(IBV_RATE_25_GBPS), -1);
  EXPECT_EQ(mult_to_ibv_rate(16), IBV_RATE_40_GBPS);
  EXPECT_EQ(ibv_rate_to_mbps(IBV_RATE_100_GBPS), 103125);
  EXPECT_EQ(mbps_to_ibv_rate(25781), IBV_RATE_25_GBPS);
  EXPECT_EQ(mbps_to_ibv_rate(1), IBV_RATE_MAX);
}

// VM_DONTCOPY ("dc" in /proc/self/smaps VmFlags) of the mapping holding p.
bool dontcopy(const void* p) {
  FILE* f = std::fopen("/proc/self/smaps", "re");
  if (!f) return false;
  char line[512];
  bool in = false, dc = false;
  const auto a = reinterpret_cast<uintptr_t>(p);
  while (std::fgets(line, sizeof line, f)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
        std::strchr(line, '-') < std::strchr(line, ' ')) {
      in = a >= lo && a < hi;
      continue;
    }
    if (in && std::strncmp(line, "VmFlags:", 8) == 0) {
      dc = std::strstr(line, " dc") != nullptr;
      break;
    }
  }
  std::fclose(f);
  return dc;
}

// After ibv_fork_init, registered pages are kept out of fork children;
// overlapping registrations are counted (a page shared by two MRs stays
// DONTFORK until both are gone).
TEST_F(IbvTest, ForkRangesCounted) {
  ASSERT_EQ(ibv_fork_init(), 0);
  EXPECT_EQ(ibv_is_fork_initialized(), IBV_FORK_ENABLED);
  const size_t pg = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto* m = static_cast<uint8_t*>(
      mmap(nullptr, 3 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(m, MAP_FAILED);
  ibv_mr* a = ibv_reg_mr(pd_, m, 2 * pg, IBV_ACCESS_LOCAL_WRITE);
  ibv_mr* b = ibv_reg_mr(pd_, m + pg, 2 * pg, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(dontcopy(m));
  EXPECT_TRUE(dontcopy(m + 2 * pg));
  ASSERT_EQ(ibv_dereg_mr(a), 0);
  EXPECT_FALSE(dontcopy(m));
  EXPECT_TRUE(dontcopy(m + pg));  // still under b
  ASSERT_EQ(ibv_dereg_mr(b), 0);
  EXPECT_FALSE(dontcopy(m + pg));
  EXPECT_FALSE(dontcopy(m + 2 * pg));
  munmap(m, 3 * pg);
}

TEST(IbvAbi, OldVersionsFailAndDefaultsWork) {
  void* h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(h, nullptr);
  using GetList = ibv_device** (*)(int*);
  auto v10 = reinterpret_cast<GetList>(dlvsym(h, "ibv_get_device_list", "IBVERBS_1.0"));
  auto v11 = reinterpret_cast<GetList>(dlvsym(h, "ibv_get_device_list", "IBVERBS_1.1"));
  ASSERT_NE(v10, nullptr);
  ASSERT_NE(v11, nullptr);
  EXPECT_NE(reinterpret_cast<void*>(v10), reinterpret_cast<void*>(v11));
  errno = 0;
  int n = -1;
  EXPECT_EQ(v10(&n), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ibv_device** l = v11(&n);
  ASSERT_NE(l, nullptr);
  EXPECT_GE(n, 1);
  ibv_free_device_list(l);
  // A private uverbs command: EOPNOTSUPP.
  using Cmd = int (*)();
  auto cmd = reinterpret_cast<Cmd>(dlvsym(h, "ibv_cmd_alloc_pd", "IBVERBS_PRIVATE_34"));
  ASSERT_NE(cmd, nullptr);
  EXPECT_EQ(cmd(), EOPNOTSUPP);
  dlclose(h);
}

TEST(IbvSysfs, ReadsFilesUnderTheSysfsPath) {
  char buf[64] = {};
  const char* sys = ibv_get_sysfs_path();
  EXPECT_STREQ(sys, std::getenv("SYSFS_PATH") ? std::getenv("SYSFS_PATH") : "/sys");
  // A file that does not exist: -1 with errno (no kbv device has sysfs).
  errno = 0;
  EXPECT_EQ(ibv_read_sysfs_file("/sys/class/infiniband/mlx5_0", "no_such_file", buf, sizeof buf),
            -1);
  EXPECT_EQ(errno, ENOENT);
}

}  // namespace
}  // namespace kbv::ibvtest
