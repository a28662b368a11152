// SPDX-License-Identifier: BSD-3-Clause
//
// End to end: IBAL's channel interface (kbv/compat/ib_ci.h) between two
// model HCAs in this process — RC ping-pong and a UD exchange with linked
// WR lists, the completion callback, poll_cq's free/done lists, a failed WR
// handed back, and what kbv answers IB_UNSUPPORTED.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <kbv/compat/ib_ci.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sim/model.hpp"

namespace kbv::ci_test {
namespace {

using namespace std::chrono_literals;

std::atomic<int> g_comp{0};
std::atomic<void*> g_comp_ctx{nullptr};
std::atomic<int> g_port_down{0};

void on_comp(void* ctx) {
  g_comp_ctx = ctx;
  ++g_comp;
}
void on_async(const ib_event_rec_t* r) {
  if (r->type == IB_AE_PORT_DOWN) ++g_port_down;
}

std::string unique_name(const char* tag) {
  static std::atomic<int> n{0};
  return std::string("ci") + tag + std::to_string(getpid() % 100000) + "_" +
         std::to_string(n.fetch_add(1));
}

struct Side {
  std::unique_ptr<sim::Model> model;
  ci_interface_t ci{};
  ib_ca_handle_t ca = nullptr;
  ib_pd_handle_t pd = nullptr;
  ib_cq_handle_t scq = nullptr, rcq = nullptr;
  ib_qp_handle_t qp = nullptr;
  ib_mr_handle_t mr = nullptr;
  net32_t lkey = 0, rkey = 0;
  std::vector<uint8_t> buf = std::vector<uint8_t>(8192);
  ib_gid_t gid{};
  uint32_t qpn = 0;
  int cq_tag = 0;  // the recv CQ's context points here

  void open(const char* tag) {
    auto m = sim::Model::create(unique_name(tag));
    ASSERT_TRUE(m.has_value()) << m.status().to_string();
    model = std::move(*m);
    const std::string uri = "sim:" + model->name();
    ASSERT_EQ(kbv_ci_get_interface(uri.c_str(), &ci), IB_SUCCESS);
    ASSERT_NE(ci.guid, 0u);
    ASSERT_EQ(ci.version, static_cast<uint32_t>(VERBS_VERSION));
    ASSERT_EQ(ci.open_ca(ci.guid, on_comp, on_async, this, &ca), IB_SUCCESS);
    // The port goes ACTIVE a few ms after bring-up; its GID from query_ca.
    const auto until = std::chrono::steady_clock::now() + 5s;
    for (;;) {
      uint32_t size = 0;
      ASSERT_EQ(ci.query_ca(ca, nullptr, &size, nullptr), IB_INSUFFICIENT_MEMORY);
      std::vector<uint64_t> mem(size / 8 + 1);
      auto* a = reinterpret_cast<ib_ca_attr_t*>(mem.data());
      ASSERT_EQ(ci.query_ca(ca, a, &size, nullptr), IB_SUCCESS);
      ASSERT_EQ(a->ca_guid, ci.guid);
      ASSERT_EQ(a->num_ports, 1);
      ASSERT_GE(a->p_port_attr[0].num_gids, 1);
      gid = a->p_port_attr[0].p_gid_table[0];
      if (a->p_port_attr[0].link_state == 4) break;
      ASSERT_LT(std::chrono::steady_clock::now(), until) << "port never active";
      std::this_thread::sleep_for(2ms);
    }
    ASSERT_EQ(ci.allocate_pd(ca, IB_PDT_NORMAL, &pd, nullptr), IB_SUCCESS);
    uint32_t n = 64;
    ASSERT_EQ(ci.create_cq(ca, nullptr, &n, &scq, nullptr), IB_SUCCESS);
    EXPECT_GE(n, 64u);
    n = 64;
    ASSERT_EQ(ci.create_cq(ca, &cq_tag, &n, &rcq, nullptr), IB_SUCCESS);
    ib_mr_create_t mc{buf.data(), buf.size(), IB_AC_LOCAL_WRITE | IB_AC_RDMA_WRITE};
    ASSERT_EQ(ci.register_mr(pd, &mc, &lkey, &rkey, &mr, 0), IB_SUCCESS);
  }

  void make_qp(ib_qp_type_t type) {
    ib_qp_create_t c{};
    c.qp_type = type;
    c.sq_depth = 32;
    c.rq_depth = 32;
    c.sq_sge = 2;
    c.rq_sge = 2;
    c.h_sq_cq = scq;
    c.h_rq_cq = rcq;
    c.sq_signaled = 1;
    ib_qp_attr_t a{};
    ASSERT_EQ(ci.create_qp(pd, this, &c, &a, &qp, nullptr), IB_SUCCESS);
    EXPECT_EQ(a.state, static_cast<ib_qp_state_t>(IB_QPS_RESET));
    qpn = ntohl(a.num);
    EXPECT_NE(qpn, 0u);
  }

  ib_av_attr_t av_to(const Side& peer) const {
    ib_av_attr_t av{};
    av.port_num = 1;
    av.grh_valid = 1;
    av.grh.hop_limit = 64;
    av.grh.dest_gid = peer.gid;
    av.conn.path_mtu = 3;  // 1024
    return av;
  }

  void connect(ib_qp_type_t type, const Side& peer) {
    ib_qp_mod_t m{};
    m.req_state = IB_QPS_INIT;
    m.state.init.primary_port = 1;
    m.state.init.qkey = htonl(0x11111111);
    m.state.init.access_ctrl = IB_AC_RDMA_WRITE | IB_AC_LOCAL_WRITE;
    ASSERT_EQ(ci.modify_qp(qp, &m, nullptr, nullptr), IB_SUCCESS);
    m = ib_qp_mod_t{};
    m.req_state = IB_QPS_RTR;
    if (type == IB_QPT_RELIABLE_CONN) {
      m.state.rtr.rq_psn = htonl(200);
      m.state.rtr.dest_qp = htonl(peer.qpn);
      m.state.rtr.primary_av = av_to(peer);
      m.state.rtr.resp_res = 1;
      m.state.rtr.rnr_nak_timeout = 12;
    }
    ASSERT_EQ(ci.modify_qp(qp, &m, nullptr, nullptr), IB_SUCCESS);
    m = ib_qp_mod_t{};
    m.req_state = IB_QPS_RTS;
    m.state.rts.sq_psn = htonl(200);
    m.state.rts.retry_cnt = 7;
    m.state.rts.rnr_retry_cnt = 7;
    m.state.rts.local_ack_timeout = 14;
    m.state.rts.init_depth = 1;
    ib_qp_attr_t a{};
    ASSERT_EQ(ci.modify_qp(qp, &m, &a, nullptr), IB_SUCCESS);
    EXPECT_EQ(a.state, static_cast<ib_qp_state_t>(IB_QPS_RTS));
    EXPECT_EQ(ntohl(a.num), qpn);
    if (type == IB_QPT_RELIABLE_CONN) {
      EXPECT_EQ(ntohl(a.dest_num), peer.qpn);
    }
  }

  // Polls cq through poll_cq with a free list of `free_n` entries until
  // `want` completions came; returns them in order.
  std::vector<ib_wc_t> reap(ib_cq_handle_t cq, size_t want, size_t free_n = 4) {
    std::vector<ib_wc_t> got;
    std::vector<ib_wc_t> pool(free_n);
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (got.size() < want && std::chrono::steady_clock::now() < until) {
      for (size_t i = 0; i < free_n; ++i) pool[i].p_next = i + 1 < free_n ? &pool[i + 1] : nullptr;
      ib_wc_t* free_list = &pool[0];
      ib_wc_t* done = nullptr;
      ib_api_status_t st = ci.poll_cq(cq, &free_list, &done);
      if (st == IB_NOT_FOUND) {
        EXPECT_EQ(done, nullptr);
        EXPECT_EQ(free_list, &pool[0]);  // the whole list comes back
        std::this_thread::sleep_for(50us);
        continue;
      }
      EXPECT_EQ(st, IB_SUCCESS) << kbv_ci_status_str(st);
      size_t n = 0;
      for (ib_wc_t* w = done; w; w = w->p_next, ++n) got.push_back(*w);
      size_t left = 0;
      for (ib_wc_t* w = free_list; w; w = w->p_next) ++left;
      EXPECT_EQ(n + left, free_n);  // every entry is in exactly one list
    }
    return got;
  }

  void close() {
    if (!ca) return;
    if (qp) {
      EXPECT_EQ(ci.destroy_qp(qp, 0), IB_SUCCESS);
    }
    if (mr) {
      EXPECT_EQ(ci.deregister_mr(mr), IB_SUCCESS);
    }
    if (scq) {
      EXPECT_EQ(ci.destroy_cq(scq), IB_SUCCESS);
    }
    if (rcq) {
      EXPECT_EQ(ci.destroy_cq(rcq), IB_SUCCESS);
    }
    if (pd) {
      EXPECT_EQ(ci.deallocate_pd(pd), IB_SUCCESS);
    }
    EXPECT_EQ(ci.close_ca(ca), IB_SUCCESS);
    EXPECT_EQ(kbv_ci_release_interface(&ci), IB_SUCCESS);
    ca = nullptr;
    model.reset();
  }
  ~Side() { close(); }
};

class Ci : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(a_.open("a"));
    ASSERT_NO_FATAL_FAILURE(b_.open("b"));
  }
  Side a_, b_;
};

TEST_F(Ci, RcPingPongWithLinkedListsCallbackAndPollLists) {
  ASSERT_NO_FATAL_FAILURE(a_.make_qp(IB_QPT_RELIABLE_CONN));
  ASSERT_NO_FATAL_FAILURE(b_.make_qp(IB_QPT_RELIABLE_CONN));
  ASSERT_NO_FATAL_FAILURE(a_.connect(IB_QPT_RELIABLE_CONN, b_));
  ASSERT_NO_FATAL_FAILURE(b_.connect(IB_QPT_RELIABLE_CONN, a_));

  // b: three receives in one linked list; the completion callback armed.
  constexpr int kN = 3, kLen = 100;
  ib_local_ds_t rds[kN];
  ib_recv_wr_t rwr[kN];
  for (int i = 0; i < kN; ++i) {
    rds[i] = {reinterpret_cast<uintptr_t>(b_.buf.data()) + 1024u * i, 1024, b_.lkey};
    rwr[i] = {i + 1 < kN ? &rwr[i + 1] : nullptr, 500u + i, 1, &rds[i]};
  }
  ib_recv_wr_t* rfailed = &rwr[0];
  ASSERT_EQ(b_.ci.post_recv(b_.qp, &rwr[0], &rfailed), IB_SUCCESS);
  EXPECT_EQ(rfailed, nullptr);
  const int comps_before = g_comp.load();
  ASSERT_EQ(b_.ci.enable_cq_notify(b_.rcq, 0), IB_SUCCESS);

  // a: three SENDs (the last with immediate data) in one linked list.
  ib_local_ds_t sds[kN];
  ib_send_wr_t swr[kN]{};
  for (int i = 0; i < kN; ++i) {
    std::memset(a_.buf.data() + 1024 * i, 0x40 + i, kLen);
    sds[i] = {reinterpret_cast<uintptr_t>(a_.buf.data()) + 1024u * i, kLen, a_.lkey};
    swr[i].wr_id = 100u + i;
    swr[i].p_next = i + 1 < kN ? &swr[i + 1] : nullptr;
    swr[i].ds_array = &sds[i];
    swr[i].num_ds = 1;
    swr[i].wr_type = WR_SEND;
    swr[i].send_opt = IB_SEND_OPT_SIGNALED;
  }
  swr[kN - 1].send_opt |= IB_SEND_OPT_IMMEDIATE;
  swr[kN - 1].immediate_data = htonl(0xabcd1234);
  ib_send_wr_t* sfailed = &swr[0];
  ASSERT_EQ(a_.ci.post_send(a_.qp, &swr[0], &sfailed), IB_SUCCESS);
  EXPECT_EQ(sfailed, nullptr);

  // The callback names the CQ's context.
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (g_comp.load() == comps_before && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(100us);
  ASSERT_GT(g_comp.load(), comps_before);
  EXPECT_EQ(g_comp_ctx.load(), &b_.cq_tag);

  // Receives through a 2-entry free list: two calls at least, in order.
  auto rc = b_.reap(b_.rcq, kN, 2);
  ASSERT_EQ(rc.size(), static_cast<size_t>(kN));
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(rc[i].status, IB_WCS_SUCCESS);
    EXPECT_EQ(rc[i].wc_type, IB_WC_RECV);
    EXPECT_EQ(rc[i].wr_id, 500u + i);
    EXPECT_EQ(rc[i].length, static_cast<uint32_t>(kLen));
    EXPECT_EQ(b_.buf[1024 * i], 0x40 + i);
    EXPECT_EQ(b_.buf[1024 * i + kLen - 1], 0x40 + i);
  }
  EXPECT_FALSE(rc[0].recv.conn.recv_opt & IB_RECV_OPT_IMMEDIATE);
  EXPECT_TRUE(rc[kN - 1].recv.conn.recv_opt & IB_RECV_OPT_IMMEDIATE);
  EXPECT_EQ(ntohl(rc[kN - 1].recv.conn.immediate_data), 0xabcd1234u);
  auto sc = a_.reap(a_.scq, kN);
  ASSERT_EQ(sc.size(), static_cast<size_t>(kN));
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(sc[i].wr_id, 100u + i);
    EXPECT_EQ(sc[i].wc_type, IB_WC_SEND);
    EXPECT_EQ(sc[i].status, IB_WCS_SUCCESS);
  }

  // Pong: b answers with an RDMA WRITE into a's buffer, peeked then polled.
  std::memset(b_.buf.data() + 4096, 0x7e, 64);
  ib_local_ds_t wds{reinterpret_cast<uintptr_t>(b_.buf.data()) + 4096, 64, b_.lkey};
  ib_send_wr_t w{};
  w.wr_id = 900;
  w.ds_array = &wds;
  w.num_ds = 1;
  w.wr_type = WR_RDMA_WRITE;
  w.send_opt = IB_SEND_OPT_SIGNALED;
  w.dgrm_or_ops.remote_ops.vaddr = reinterpret_cast<uintptr_t>(a_.buf.data()) + 6144;
  w.dgrm_or_ops.remote_ops.rkey = a_.rkey;
  ASSERT_EQ(b_.ci.post_send(b_.qp, &w, nullptr), IB_SUCCESS);
  uint32_t peeked = 0;
  const auto until2 = std::chrono::steady_clock::now() + 10s;
  while (peeked == 0 && std::chrono::steady_clock::now() < until2) {
    ASSERT_EQ(b_.ci.peek_cq(b_.scq, &peeked), IB_SUCCESS);
    if (peeked == 0) std::this_thread::sleep_for(50us);
  }
  ASSERT_EQ(peeked, 1u);
  auto wc = b_.reap(b_.scq, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 900u);
  EXPECT_EQ(wc[0].wc_type, IB_WC_RDMA_WRITE);
  EXPECT_EQ(a_.buf[6144], 0x7e);
  EXPECT_EQ(a_.buf[6144 + 63], 0x7e);
  // Nothing left: IB_NOT_FOUND, the free list untouched.
  ib_wc_t one{};
  ib_wc_t* fl = &one;
  ib_wc_t* dl = reinterpret_cast<ib_wc_t*>(&fl);
  EXPECT_EQ(b_.ci.poll_cq(b_.scq, &fl, &dl), IB_NOT_FOUND);
  EXPECT_EQ(fl, &one);
  EXPECT_EQ(dl, nullptr);
}

TEST_F(Ci, FailedWrIsReturnedAndTheOnesBeforeItArePosted) {
  ASSERT_NO_FATAL_FAILURE(a_.make_qp(IB_QPT_RELIABLE_CONN));
  ASSERT_NO_FATAL_FAILURE(b_.make_qp(IB_QPT_RELIABLE_CONN));
  ASSERT_NO_FATAL_FAILURE(a_.connect(IB_QPT_RELIABLE_CONN, b_));
  ASSERT_NO_FATAL_FAILURE(b_.connect(IB_QPT_RELIABLE_CONN, a_));
  ib_local_ds_t ds{reinterpret_cast<uintptr_t>(a_.buf.data()), 8, a_.lkey};
  ib_send_wr_t w[3]{};
  for (int i = 0; i < 3; ++i) {
    w[i].wr_id = 10u + i;
    w[i].p_next = i < 2 ? &w[i + 1] : nullptr;
    w[i].ds_array = &ds;
    w[i].num_ds = 1;
    w[i].wr_type = WR_RDMA_WRITE;
    w[i].send_opt = IB_SEND_OPT_SIGNALED;
    w[i].dgrm_or_ops.remote_ops.vaddr = reinterpret_cast<uintptr_t>(b_.buf.data());
    w[i].dgrm_or_ops.remote_ops.rkey = b_.rkey;
  }
  w[1].wr_type = WR_LSO;  // kbv cannot post it
  ib_send_wr_t* failed = nullptr;
  EXPECT_EQ(a_.ci.post_send(a_.qp, &w[0], &failed), IB_INVALID_WR_TYPE);
  EXPECT_EQ(failed, &w[1]);
  auto c = a_.reap(a_.scq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].wr_id, 10u);  // the one before it was posted, the one after not

  // An SGE list longer than the QP's (sq_sge 2): kbv refuses it at its index.
  ib_local_ds_t three[3] = {ds, ds, ds};
  w[0].wr_type = WR_RDMA_WRITE;
  w[1].wr_type = WR_RDMA_WRITE;
  w[1].ds_array = three;
  w[1].num_ds = 3;
  failed = nullptr;
  EXPECT_EQ(a_.ci.post_send(a_.qp, &w[0], &failed), IB_INVALID_MAX_SGE);
  EXPECT_EQ(failed, &w[1]);
  c = a_.reap(a_.scq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].wr_id, 10u);

  // A receive list with a bad SGE pointer.
  ib_recv_wr_t r[2] = {{&r[1], 1, 1, &ds}, {nullptr, 2, 1, nullptr}};
  ib_recv_wr_t* rf = nullptr;
  EXPECT_EQ(a_.ci.post_recv(a_.qp, &r[0], &rf), IB_INVALID_PARAMETER);
  EXPECT_EQ(rf, &r[1]);
}

TEST_F(Ci, UdExchangeThroughAnAddressVector) {
  ASSERT_NO_FATAL_FAILURE(a_.make_qp(IB_QPT_UNRELIABLE_DGRM));
  ASSERT_NO_FATAL_FAILURE(b_.make_qp(IB_QPT_UNRELIABLE_DGRM));
  ASSERT_NO_FATAL_FAILURE(a_.connect(IB_QPT_UNRELIABLE_DGRM, b_));
  ASSERT_NO_FATAL_FAILURE(b_.connect(IB_QPT_UNRELIABLE_DGRM, a_));
  // b receives into 40 bytes of GRH + payload, two WRs linked.
  ib_local_ds_t rds[2] = {{reinterpret_cast<uintptr_t>(b_.buf.data()), 40 + 256, b_.lkey},
                          {reinterpret_cast<uintptr_t>(b_.buf.data()) + 1024, 40 + 256, b_.lkey}};
  ib_recv_wr_t r[2] = {{&r[1], 1, 1, &rds[0]}, {nullptr, 2, 1, &rds[1]}};
  ASSERT_EQ(b_.ci.post_recv(b_.qp, &r[0], nullptr), IB_SUCCESS);
  ib_av_attr_t avattr = a_.av_to(b_);
  ib_av_handle_t av = nullptr;
  ASSERT_EQ(a_.ci.create_av(a_.pd, &avattr, &av, nullptr), IB_SUCCESS);
  ib_av_attr_t back{};
  ib_pd_handle_t pd_back = nullptr;
  ASSERT_EQ(a_.ci.query_av(av, &back, &pd_back, nullptr), IB_SUCCESS);
  EXPECT_EQ(pd_back, a_.pd);
  EXPECT_EQ(std::memcmp(back.grh.dest_gid.raw, b_.gid.raw, 16), 0);
  ib_local_ds_t sds[2];
  ib_send_wr_t s[2]{};
  for (int i = 0; i < 2; ++i) {
    std::memset(a_.buf.data() + 2048 * i, 0x21 + i, 200);
    sds[i] = {reinterpret_cast<uintptr_t>(a_.buf.data()) + 2048u * i, 200, a_.lkey};
    s[i].wr_id = 70u + i;
    s[i].p_next = i == 0 ? &s[1] : nullptr;
    s[i].ds_array = &sds[i];
    s[i].num_ds = 1;
    s[i].wr_type = WR_SEND;
    s[i].send_opt = IB_SEND_OPT_SIGNALED;
    s[i].dgrm_or_ops.ud.h_av = av;
    s[i].dgrm_or_ops.ud.remote_qp = htonl(b_.qpn);
    s[i].dgrm_or_ops.ud.remote_qkey = htonl(0x11111111);
  }
  ASSERT_EQ(a_.ci.post_send(a_.qp, &s[0], nullptr), IB_SUCCESS);
  auto rc = b_.reap(b_.rcq, 2);
  ASSERT_EQ(rc.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(rc[i].status, IB_WCS_SUCCESS);
    EXPECT_EQ(rc[i].wr_id, 1u + i);
    EXPECT_EQ(rc[i].length, 240u);  // GRH + payload
    EXPECT_TRUE(rc[i].recv.ud.recv_opt & IB_RECV_OPT_GRH_VALID);
    EXPECT_EQ(ntohl(rc[i].recv.ud.remote_qp), a_.qpn);
    EXPECT_EQ(b_.buf[1024 * i + 40], 0x21 + i);
    EXPECT_EQ(b_.buf[1024 * i + 40 + 199], 0x21 + i);
  }
  EXPECT_EQ(a_.reap(a_.scq, 2).size(), 2u);
  // An AV handle that was destroyed: the WR is handed back.
  ASSERT_EQ(a_.ci.destroy_av(av), IB_SUCCESS);
  ib_send_wr_t* failed = nullptr;
  s[0].p_next = nullptr;
  EXPECT_EQ(a_.ci.post_send(a_.qp, &s[0], &failed), IB_INVALID_AV_HANDLE);
  EXPECT_EQ(failed, &s[0]);
}

TEST_F(Ci, WhatKbvCannotDoIsUnsupportedAndHandlesAreChecked) {
  ci_interface_t& ci = a_.ci;
  net32_t rkey = 0;
  ib_mw_handle_t mw = nullptr;
  EXPECT_EQ(ci.create_mw(a_.pd, &rkey, &mw, nullptr), IB_UNSUPPORTED);
  EXPECT_EQ(ci.bind_mw(nullptr, nullptr, nullptr, nullptr), IB_UNSUPPORTED);
  ib_phys_range_t range{0x1000, 4096};
  ib_phys_create_t pc{4096, 1, &range, 0, 4096, IB_AC_LOCAL_WRITE};
  uint64_t va = 0;
  net32_t lk = 0;
  ib_mr_handle_t mr = nullptr;
  EXPECT_EQ(ci.register_pmr(a_.pd, &pc, &va, &lk, &rkey, &mr, 0), IB_UNSUPPORTED);
  EXPECT_EQ(ci.modify_pmr(a_.mr, IB_MR_MOD_ACCESS, &pc, &va, &lk, &rkey, nullptr, 0),
            IB_UNSUPPORTED);
  ib_mad_t in{}, out{};
  EXPECT_EQ(ci.local_mad(a_.ca, 1, &in, &out), IB_UNSUPPORTED);
  EXPECT_EQ(ci.enable_ncomp_cq_notify(a_.rcq, 2), IB_UNSUPPORTED);
  ib_qp_create_t qc{};
  ib_qp_handle_t qp = nullptr;
  EXPECT_EQ(ci.create_spl_qp(a_.pd, 1, nullptr, &qc, nullptr, &qp), IB_UNSUPPORTED);
  ib_ci_op_t op{};
  EXPECT_EQ(ci.vendor_call(a_.ca, nullptr, 0, &op, nullptr), IB_UNSUPPORTED);
  ib_ca_handle_t um = nullptr;
  EXPECT_EQ(ci.um_open_ca(a_.ca, nullptr, &um), IB_UNSUPPORTED);
  EXPECT_EQ(ci.modify_ca(a_.ca, 1, 1, nullptr), IB_UNSUPPORTED);
  uint32_t in_data = 7;
  ci_umv_buf_t umv{0, 0, sizeof in_data, 0, &in_data};
  ib_pd_handle_t pd = nullptr;
  EXPECT_EQ(ci.allocate_pd(a_.ca, IB_PDT_NORMAL, &pd, &umv), IB_UNSUPPORTED);
  ci_umv_buf_t empty{0, 0, 0, 99, nullptr};
  ASSERT_EQ(ci.allocate_pd(a_.ca, IB_PDT_NORMAL, &pd, &empty), IB_SUCCESS);
  EXPECT_EQ(empty.output_size, 0u);
  // Busy parents, stale handles, a second open of the CA.
  EXPECT_EQ(ci.deallocate_pd(a_.pd), IB_RESOURCE_BUSY);  // its MR
  EXPECT_EQ(ci.close_ca(a_.ca), IB_RESOURCE_BUSY);
  EXPECT_EQ(ci.deallocate_pd(pd), IB_SUCCESS);
  EXPECT_EQ(ci.deallocate_pd(pd), IB_INVALID_PD_HANDLE);
  ib_ca_handle_t again = nullptr;
  EXPECT_EQ(ci.open_ca(ci.guid, on_comp, on_async, nullptr, &again), IB_RESOURCE_BUSY);
  EXPECT_EQ(ci.open_ca(ci.guid, nullptr, on_async, nullptr, &again), IB_INVALID_PARAMETER);
  uint32_t sz = 0;
  EXPECT_EQ(ci.query_cq(reinterpret_cast<ib_cq_handle_t>(&sz), &sz, nullptr), IB_INVALID_CQ_HANDLE);
  // MR query, modify (new keys), shared region.
  ib_mr_attr_t q{};
  ASSERT_EQ(ci.query_mr(a_.mr, &q), IB_SUCCESS);
  EXPECT_EQ(q.local_lb, reinterpret_cast<uintptr_t>(a_.buf.data()));
  EXPECT_EQ(q.local_ub, q.local_lb + a_.buf.size() - 1);
  EXPECT_EQ(q.lkey, a_.lkey);
  ib_mr_create_t mc{nullptr, 0, IB_AC_LOCAL_WRITE};
  net32_t nl = 0, nr = 0;
  ASSERT_EQ(ci.modify_mr(a_.mr, IB_MR_MOD_ACCESS, &mc, &nl, &nr, nullptr, 0), IB_SUCCESS);
  ASSERT_EQ(ci.query_mr(a_.mr, &q), IB_SUCCESS);
  EXPECT_EQ(q.lkey, nl);
  EXPECT_EQ(q.access_ctrl, static_cast<ib_access_t>(IB_AC_LOCAL_WRITE));
  EXPECT_EQ(q.remote_ub, 0u);
  a_.lkey = nl;
  uint64_t sva = reinterpret_cast<uintptr_t>(a_.buf.data());
  ib_mr_handle_t smr = nullptr;
  ASSERT_EQ(ci.register_smr(a_.mr, a_.pd, IB_AC_LOCAL_WRITE, &sva, &nl, &nr, &smr, 0), IB_SUCCESS);
  EXPECT_NE(nl, a_.lkey);
  EXPECT_EQ(ci.deregister_mr(smr), IB_SUCCESS);
  // CQ size, resize.
  ASSERT_EQ(ci.query_cq(a_.scq, &sz, nullptr), IB_SUCCESS);
  EXPECT_EQ(sz, 64u);
  sz = 100;
  ASSERT_EQ(ci.resize_cq(a_.scq, &sz, nullptr), IB_SUCCESS);
  EXPECT_EQ(sz, 128u);
  EXPECT_EQ(std::string(kbv_ci_status_str(IB_INVALID_QP_STATE)), "IB_INVALID_QP_STATE");
  EXPECT_EQ(std::string(kbv_ci_status_str(static_cast<ib_api_status_t>(999))), "IB_UNKNOWN_ERROR");
}

TEST_F(Ci, PortDownIsAnAsyncEvent) {
  const int before = g_port_down.load();
  a_.model->set_link(false);
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (g_port_down.load() == before && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(200us);
  EXPECT_GT(g_port_down.load(), before);
  a_.model->set_link(true);
}

TEST(CiInterface, ArgumentsAndOpenByGuid) {
  ci_interface_t ci{};
  EXPECT_EQ(kbv_ci_get_interface(nullptr, &ci), IB_INVALID_PARAMETER);
  EXPECT_EQ(kbv_ci_get_interface("sim:x", nullptr), IB_INVALID_PARAMETER);
  EXPECT_EQ(kbv_ci_get_interface("nosuch:x", &ci), IB_INVALID_PARAMETER);
  EXPECT_EQ(kbv_ci_release_interface(nullptr), IB_INVALID_PARAMETER);
  // The interface of a model, dropped; open_ca by its GUID then finds the
  // HCA by node GUID among the listed devices.
  auto m = sim::Model::create(unique_name("g"));
  ASSERT_TRUE(m.has_value());
  const std::string uri = "sim:" + (*m)->name();
  ASSERT_EQ(kbv_ci_get_interface(uri.c_str(), &ci), IB_SUCCESS);
  const net64_t guid = ci.guid;
  ASSERT_EQ(kbv_ci_release_interface(&ci), IB_SUCCESS);
  EXPECT_EQ(kbv_ci_release_interface(&ci), IB_NOT_FOUND);
  ::setenv("KBV_SIM_DEVICES", (*m)->name().c_str(), 1);
  ib_ca_handle_t ca = nullptr;
  ASSERT_EQ(ci.open_ca(guid, on_comp, on_async, nullptr, &ca), IB_SUCCESS);
  ::unsetenv("KBV_SIM_DEVICES");
  uint32_t size = 0;
  EXPECT_EQ(ci.query_ca(ca, nullptr, &size, nullptr), IB_INSUFFICIENT_MEMORY);
  EXPECT_GT(size, sizeof(ib_ca_attr_t));
  // The port's P_Key table (QUERY_HCA_VPORT_PKEY).
  ASSERT_EQ((*m)->set_pkey(2, 0x8077), KBV_SUCCESS);
  std::vector<uint64_t> mem(size / 8 + 1);
  auto* a = reinterpret_cast<ib_ca_attr_t*>(mem.data());
  ASSERT_EQ(ci.query_ca(ca, a, &size, nullptr), IB_SUCCESS);
  EXPECT_EQ(a->max_pkeys, 128u);
  ASSERT_EQ(a->p_port_attr[0].num_pkeys, 128);
  EXPECT_EQ(ntohs(a->p_port_attr[0].p_pkey_table[0]), 0xffff);
  EXPECT_EQ(ntohs(a->p_port_attr[0].p_pkey_table[2]), 0x8077);
  EXPECT_EQ(ntohs(a->p_port_attr[0].p_pkey_table[3]), 0);
  EXPECT_EQ(ci.close_ca(ca), IB_SUCCESS);
  EXPECT_EQ(ci.close_ca(ca), IB_INVALID_CA_HANDLE);
}

}  // namespace
}  // namespace kbv::ci_test
