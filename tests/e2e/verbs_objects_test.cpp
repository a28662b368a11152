// SPDX-License-Identifier: BSD-3-Clause
//
// End to end: PD, MR, CQ, SRQ, AH and QP verbs of include/kbv/kbv.h on
// model HCAs — life cycles, the QP state machine toward a peer on a second
// HCA, queries, multicast, and the specific status of every bad request
// (invalid handles, wrong kinds, wrong states, limits, oversize SGE lists and
// inline data, use after close).
#include <gtest/gtest.h>
#include <kbv/kbv.h>

#include <cstring>
#include <vector>

#include "verbs_fixture.hpp"

namespace kbv::test {
namespace {

TEST_F(VerbsE2e, PdAndMrLifeCycleAndArguments) {
  SimDev& d = open_dev();
  kbv_pd_t pd = alloc_pd(d);
  ASSERT_NE(pd, 0u);
  std::vector<uint8_t> buf(3 * 4096 + 100);
  kbv_mr_t mr = 0;
  const uint32_t acc = KBV_ACCESS_LOCAL_WRITE | KBV_ACCESS_REMOTE_READ | KBV_ACCESS_REMOTE_WRITE;
  ASSERT_EQ(kbv_mr_reg(pd, buf.data() + 40, buf.size() - 40, acc, KBV_EQ_NONE, 0, &mr),
            KBV_SUCCESS);
  uint32_t lkey = 0, rkey = 0;
  ASSERT_EQ(kbv_mr_get_keys(mr, &lkey, &rkey), KBV_SUCCESS);
  EXPECT_NE(lkey, 0u);
  EXPECT_EQ(lkey, rkey);

  // Bad requests: each a specific status, nothing created.
  kbv_mr_t bad = 0;
  EXPECT_EQ(kbv_mr_reg(pd, nullptr, 10, 0, KBV_EQ_NONE, 0, &bad), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_mr_reg(pd, buf.data(), 0, 0, KBV_EQ_NONE, 0, &bad), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_mr_reg(pd, buf.data(), 10, 0x100, KBV_EQ_NONE, 0, &bad), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_mr_reg(pd, buf.data(), 10, KBV_ACCESS_REMOTE_WRITE, KBV_EQ_NONE, 0, &bad),
            KBV_ERR_INVALID_ARGUMENT);  // IBTA 10.6.3.1
  EXPECT_EQ(kbv_mr_reg(pd, buf.data(), 10, 0, KBV_EQ_NONE, 0, nullptr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_mr_reg(d.dev, buf.data(), 10, 0, KBV_EQ_NONE, 0, &bad),
            KBV_ERR_INVALID_HANDLE);  // a device is not a PD
  EXPECT_EQ(kbv_mr_reg(pd + (1ull << 32), buf.data(), 10, 0, KBV_EQ_NONE, 0, &bad),
            KBV_ERR_INVALID_HANDLE);  // wrong generation
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(kbv_pd_alloc(d.dev, KBV_EQ_NONE, 0, nullptr), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_pd_alloc(0, KBV_EQ_NONE, 0, &bad), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_pd_alloc(d.dev, 12345, 0, &bad), KBV_ERR_INVALID_HANDLE);  // bad eq

  ASSERT_EQ(kbv_mr_dereg(mr, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_mr_get_keys(mr, &lkey, &rkey), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_mr_dereg(mr, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
  ASSERT_EQ(kbv_pd_dealloc(pd, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(pd, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_mr_reg(pd, buf.data(), 10, 0, KBV_EQ_NONE, 0, &bad), KBV_ERR_INVALID_HANDLE);
}

TEST_F(VerbsE2e, ClosingAParentFirstFinishesWithItsLastChild) {
  SimDev& d = open_dev();
  kbv_eq_t eq = make_eq();
  kbv_pd_t pd = alloc_pd(d);
  std::vector<uint8_t> buf(4096);
  kbv_mr_t mr = 0;
  ASSERT_EQ(kbv_mr_reg(pd, buf.data(), buf.size(), 0, KBV_EQ_NONE, 0, &mr), KBV_SUCCESS);
  // The PD's close waits for the MR; the handle is gone at once.
  ASSERT_EQ(kbv_pd_dealloc(pd, eq, 1), KBV_PENDING);
  kbv_mr_t mr2 = 0;
  EXPECT_EQ(kbv_mr_reg(pd, buf.data(), 10, 0, KBV_EQ_NONE, 0, &mr2), KBV_ERR_INVALID_HANDLE);
  kbv_event_t ev;
  EXPECT_TRUE(wait_until(
                  eq, [&] { return false; }, std::chrono::milliseconds(30)) == false);
  EXPECT_EQ(kbv_eq_poll(eq, &ev, 1), 0);  // not yet
  ASSERT_EQ(kbv_mr_dereg(mr, KBV_EQ_NONE, 0), KBV_SUCCESS);
  ev = wait_event(eq);
  EXPECT_EQ(ev.user_data, 1u);
  EXPECT_EQ(ev.status, KBV_SUCCESS);
  EXPECT_EQ(ev.object, pd);

  // Synchronous close of a parent with a child: PENDING, no event; it
  // finishes when the child goes.
  pd = alloc_pd(d);
  ASSERT_EQ(kbv_mr_reg(pd, buf.data(), buf.size(), 0, KBV_EQ_NONE, 0, &mr), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(pd, KBV_EQ_NONE, 0), KBV_PENDING);
  EXPECT_EQ(kbv_mr_dereg(mr, KBV_EQ_NONE, 0), KBV_SUCCESS);
  // The device closes synchronously: nothing is left on it.
  EXPECT_EQ(kbv_device_close(d.dev, KBV_EQ_NONE, 0), KBV_SUCCESS);
  d.dev = 0;
}

TEST_F(VerbsE2e, CqCreateResizeArmDestroy) {
  SimDev& d = open_dev();
  kbv_eq_t eq = make_eq();
  kbv_cq_t cq = make_cq(d, 100);
  ASSERT_NE(cq, 0u);
  kbv_wc_t wc[4];
  EXPECT_EQ(kbv_poll_cq(cq, wc, 4), 0);
  EXPECT_EQ(kbv_poll_cq(cq, nullptr, 4), KBV_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(kbv_cq_resize(cq, 1000, eq, 5), KBV_PENDING);
  kbv_event_t ev = wait_event(eq);
  EXPECT_EQ(ev.status, KBV_SUCCESS);
  EXPECT_EQ(ev.info, 1024u);
  EXPECT_EQ(kbv_poll_cq(cq, wc, 4), 0);
  EXPECT_EQ(kbv_cq_resize(cq, 0, KBV_EQ_NONE, 0), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_cq_resize(cq, 1u << 30, KBV_EQ_NONE, 0), KBV_ERR_LIMIT_EXCEEDED);

  // Arming: one request at a time; re-arming cancels the previous one.
  EXPECT_EQ(kbv_cq_arm(cq, 0, KBV_EQ_NONE, 0), KBV_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(kbv_cq_arm(cq, 0, eq, 10), KBV_PENDING);
  ASSERT_EQ(kbv_cq_arm(cq, 1, eq, 11), KBV_PENDING);
  ev = wait_event(eq);
  EXPECT_EQ(ev.type, static_cast<uint32_t>(KBV_EVENT_COMP_NOTIFY));
  EXPECT_EQ(ev.user_data, 10u);
  EXPECT_EQ(ev.status, KBV_ERR_CANCELLED);
  // Destroying the CQ cancels the armed request first, then completes.
  ASSERT_EQ(kbv_cq_destroy(cq, eq, 12), KBV_PENDING);
  auto evs = wait_events(eq, 2);
  ASSERT_EQ(evs.size(), 2u);
  EXPECT_EQ(evs[0].user_data, 11u);
  EXPECT_EQ(evs[0].status, KBV_ERR_CANCELLED);
  EXPECT_EQ(evs[1].user_data, 12u);
  EXPECT_EQ(evs[1].status, KBV_SUCCESS);
  EXPECT_EQ(kbv_poll_cq(cq, wc, 4), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_cq_arm(cq, 0, eq, 13), KBV_ERR_INVALID_HANDLE);

  kbv_cq_attr_t a{};
  kbv_cq_t bad = 0;
  EXPECT_EQ(kbv_cq_create(d.dev, &a, KBV_EQ_NONE, 0, &bad), KBV_ERR_INVALID_ARGUMENT);
  a.cqe = 1u << 30;
  EXPECT_EQ(kbv_cq_create(d.dev, &a, KBV_EQ_NONE, 0, &bad), KBV_ERR_LIMIT_EXCEEDED);
  EXPECT_EQ(kbv_cq_create(d.dev, nullptr, KBV_EQ_NONE, 0, &bad), KBV_ERR_INVALID_ARGUMENT);
}

TEST_F(VerbsE2e, QpStateMachineTowardAPeerAndQuery) {
  SimDev& a = open_dev();
  SimDev& b = open_dev();
  kbv_pd_t pa = alloc_pd(a), pb = alloc_pd(b);
  kbv_cq_t ca = make_cq(a), cb = make_cq(b);
  kbv_qp_t qa = make_qp(pa, KBV_QPT_RC, ca, ca), qb = make_qp(pb, KBV_QPT_RC, cb, cb);
  uint32_t na = 0, nb = 0;
  ASSERT_EQ(kbv_qp_get_num(qa, &na), KBV_SUCCESS);
  ASSERT_EQ(kbv_qp_get_num(qb, &nb), KBV_SUCCESS);
  EXPECT_NE(na, 0u);

  kbv_qp_attr_t q{};
  ASSERT_EQ(kbv_qp_query(qa, &q, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(q.qp_state, static_cast<uint32_t>(KBV_QPS_RESET));
  EXPECT_EQ(q.cap.max_send_sge, 2u);

  // Posting before RTS / RTR: wrong state.
  kbv_send_wr_t wr{};
  wr.opcode = KBV_WR_SEND;
  uint32_t bad = 99;
  EXPECT_EQ(kbv_post_send(qa, &wr, 1, &bad), KBV_ERR_INVALID_QP_STATE);
  kbv_recv_wr_t rwr{};
  EXPECT_EQ(kbv_post_recv(qa, &rwr, 1, &bad), KBV_ERR_INVALID_QP_STATE);

  // Illegal transitions and missing attributes.
  kbv_qp_attr_t x{};
  x.qp_state = KBV_QPS_RTS;
  EXPECT_EQ(kbv_qp_modify(qa, &x, KBV_QP_STATE, KBV_EQ_NONE, 0), KBV_ERR_INVALID_QP_STATE);
  x.qp_state = KBV_QPS_INIT;
  EXPECT_EQ(kbv_qp_modify(qa, &x, KBV_QP_STATE, KBV_EQ_NONE, 0), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_qp_modify(qa, &x, 0, KBV_EQ_NONE, 0), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_qp_modify(qa, &x, KBV_QP_STATE | (1u << 30), KBV_EQ_NONE, 0),
            KBV_ERR_INVALID_ARGUMENT);
  x.port_num = 2;
  EXPECT_EQ(
      kbv_qp_modify(qa, &x, KBV_QP_STATE | KBV_QP_PORT | KBV_QP_PKEY_INDEX | KBV_QP_ACCESS_FLAGS,
                    KBV_EQ_NONE, 0),
      KBV_ERR_INVALID_PORT);
  x.cur_qp_state = KBV_QPS_RTR;
  EXPECT_EQ(kbv_qp_modify(qa, &x, KBV_QP_STATE | KBV_QP_CUR_STATE, KBV_EQ_NONE, 0),
            KBV_ERR_INVALID_QP_STATE);

  ASSERT_EQ(connect(qa, KBV_QPT_RC, b, nb, 100, 200), KBV_SUCCESS);
  ASSERT_EQ(connect(qb, KBV_QPT_RC, a, na, 200, 100), KBV_SUCCESS);
  ASSERT_EQ(kbv_qp_query(qa, &q, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(q.qp_state, static_cast<uint32_t>(KBV_QPS_RTS));
  EXPECT_EQ(q.dest_qp_num, nb);
  EXPECT_EQ(q.sq_psn, 100u);
  EXPECT_EQ(q.rq_psn, 200u);
  EXPECT_EQ(q.path_mtu, static_cast<uint32_t>(KBV_MTU_1024));
  EXPECT_EQ(q.retry_cnt, 7u);
  EXPECT_EQ(q.timeout, 14u);
  EXPECT_EQ(std::memcmp(q.ah_attr.dgid, b.port.gids[0].gid, 16), 0);
  EXPECT_EQ(q.qp_access_flags & KBV_ACCESS_REMOTE_WRITE, KBV_ACCESS_REMOTE_WRITE);

  // Send-queue checks in RTS: SGE list and inline size limits, opcodes.
  std::vector<uint8_t> data(256);
  kbv_sge_t sg[3] = {{reinterpret_cast<uint64_t>(data.data()), 8, 0},
                     {reinterpret_cast<uint64_t>(data.data()) + 8, 8, 0},
                     {reinterpret_cast<uint64_t>(data.data()) + 16, 8, 0}};
  wr.sg_list = sg;
  wr.num_sge = 3;
  EXPECT_EQ(kbv_post_send(qa, &wr, 1, &bad), KBV_ERR_TOO_MANY_SGE);
  EXPECT_EQ(bad, 0u);
  kbv_sge_t big{reinterpret_cast<uint64_t>(data.data()), 200, 0};
  wr.sg_list = &big;
  wr.num_sge = 1;
  wr.flags = KBV_SEND_INLINE;
  EXPECT_EQ(kbv_post_send(qa, &wr, 1, &bad), KBV_ERR_INLINE_TOO_LARGE);
  wr.opcode = 99;
  EXPECT_EQ(kbv_post_send(qa, &wr, 1, &bad), KBV_ERR_INVALID_ARGUMENT);
  wr.opcode = KBV_WR_SEND;
  wr.flags = 0x100;
  EXPECT_EQ(kbv_post_send(qa, &wr, 1, &bad), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_post_send(qa, nullptr, 1, &bad), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_post_send(qa, nullptr, 0, &bad), KBV_SUCCESS);
  rwr.sg_list = sg;
  rwr.num_sge = 3;
  EXPECT_EQ(kbv_post_recv(qa, &rwr, 1, &bad), KBV_ERR_TOO_MANY_SGE);
  // A batch stops at the first bad request; *bad_index names it.
  kbv_recv_wr_t rws[3] = {{1, sg, 1, 0}, {2, sg, 1, 0}, {3, nullptr, 1, 0}};
  EXPECT_EQ(kbv_post_recv(qa, rws, 3, &bad), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bad, 2u);

  // A batch larger than the send queue: the requests that fit are posted,
  // *bad_index names the first that did not (unsignalled zero-length
  // writes, so nothing completes into the CQ).
  std::vector<kbv_send_wr_t> many(500);
  for (size_t i = 0; i < many.size(); ++i) {
    many[i] = {};
    many[i].wr_id = i;
    many[i].opcode = KBV_WR_RDMA_WRITE;
  }
  bad = 0;
  EXPECT_EQ(kbv_post_send(qa, many.data(), 500, &bad), KBV_ERR_QUEUE_FULL);
  EXPECT_GE(bad, 32u);  // at least max_send_wr fit
  EXPECT_LT(bad, 500u);

  // To ERR and back to RESET, then INIT again.
  x = {};
  x.qp_state = KBV_QPS_ERR;
  ASSERT_EQ(kbv_qp_modify(qa, &x, KBV_QP_STATE, KBV_EQ_NONE, 0), KBV_SUCCESS);
  x.qp_state = KBV_QPS_RESET;
  ASSERT_EQ(kbv_qp_modify(qa, &x, KBV_QP_STATE, KBV_EQ_NONE, 0), KBV_SUCCESS);
  ASSERT_EQ(kbv_qp_query(qa, &q, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(q.qp_state, static_cast<uint32_t>(KBV_QPS_RESET));

  // A CQ in use by a QP: its destroy completes only after the QP's.
  kbv_eq_t eq = make_eq();
  ASSERT_EQ(kbv_cq_destroy(ca, eq, 1), KBV_PENDING);
  ASSERT_EQ(kbv_qp_destroy(qa, eq, 2), KBV_PENDING);
  auto evs = wait_events(eq, 2);
  ASSERT_EQ(evs.size(), 2u);
  EXPECT_EQ(evs[0].user_data, 2u);
  EXPECT_EQ(evs[1].user_data, 1u);
  EXPECT_EQ(kbv_post_send(qa, &wr, 1, &bad), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_qp_query(qa, &q, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_qp_destroy(qb, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_cq_destroy(cb, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(pa, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(pb, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST_F(VerbsE2e, FirmwareRefusalCarriesStatusAndSyndrome) {
  SimDev& a = open_dev();
  SimDev& b = open_dev();
  kbv_eq_t eq = make_eq();
  kbv_pd_t pd = alloc_pd(a);
  kbv_cq_t cq = make_cq(a);
  kbv_qp_t qp = make_qp(pd, KBV_QPT_RC, cq, cq);
  kbv_qp_attr_t x{};
  x.qp_state = KBV_QPS_INIT;
  x.port_num = 1;
  ASSERT_EQ(
      kbv_qp_modify(qp, &x, KBV_QP_STATE | KBV_QP_PORT | KBV_QP_PKEY_INDEX | KBV_QP_ACCESS_FLAGS,
                    KBV_EQ_NONE, 0),
      KBV_SUCCESS);
  // A path from a GID index that holds no address: firmware says BAD_PARAM.
  x.qp_state = KBV_QPS_RTR;
  x.path_mtu = KBV_MTU_1024;
  x.dest_qp_num = 0x123;
  std::memcpy(x.ah_attr.dgid, b.port.gids[0].gid, 16);
  x.ah_attr.dmac = b.port.gids[0].mac;
  x.ah_attr.sgid_index = 7;
  const uint32_t m = KBV_QP_STATE | KBV_QP_AV | KBV_QP_PATH_MTU | KBV_QP_DEST_QPN | KBV_QP_RQ_PSN |
                     KBV_QP_MAX_DEST_RD_ATOMIC | KBV_QP_MIN_RNR_TIMER;
  ASSERT_EQ(kbv_qp_modify(qp, &x, m, eq, 1), KBV_PENDING);
  kbv_event_t ev = wait_event(eq);
  EXPECT_EQ(ev.status, KBV_ERR_FW_BAD_PARAM);
  EXPECT_EQ(ev.fw_status, 0x3u);  // mlx5_ifc.h MLX5_CMD_STAT_BAD_PARAM_ERR
  EXPECT_NE(ev.syndrome, 0u);
  EXPECT_EQ(ev.object, qp);
  // The QP stayed in INIT; the same call synchronously returns the status.
  EXPECT_EQ(kbv_qp_modify(qp, &x, m, KBV_EQ_NONE, 0), KBV_ERR_FW_BAD_PARAM);
  uint8_t fw = 0;
  uint32_t syn = 0;
  kbv_last_fw_error(&fw, &syn);
  EXPECT_EQ(fw, 0x3u);
  EXPECT_EQ(syn, ev.syndrome);
  kbv_qp_attr_t q{};
  ASSERT_EQ(kbv_qp_query(qp, &q, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(q.qp_state, static_cast<uint32_t>(KBV_QPS_INIT));
  kbv_last_fw_error(&fw, &syn);  // the query succeeded: cleared
  EXPECT_EQ(fw, 0u);
  EXPECT_EQ(syn, 0u);
  EXPECT_EQ(kbv_qp_destroy(qp, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_cq_destroy(cq, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(pd, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST_F(VerbsE2e, QpCreateArgumentsAreChecked) {
  SimDev& d = open_dev();
  SimDev& other = open_dev();
  kbv_pd_t pd = alloc_pd(d);
  kbv_cq_t cq = make_cq(d);
  kbv_cq_t ocq = make_cq(other);
  kbv_qp_init_attr_t a{};
  a.qp_type = KBV_QPT_RC;
  a.send_cq = a.recv_cq = cq;
  a.cap = {8, 8, 1, 1, 0};
  kbv_qp_t qp = 0;
  EXPECT_EQ(kbv_qp_create(pd, nullptr, KBV_EQ_NONE, 0, &qp), KBV_ERR_INVALID_ARGUMENT);
  a.qp_type = 7;
  EXPECT_EQ(kbv_qp_create(pd, &a, KBV_EQ_NONE, 0, &qp), KBV_ERR_INVALID_ARGUMENT);
  a.qp_type = KBV_QPT_RC;
  a.send_cq = 0;
  EXPECT_EQ(kbv_qp_create(pd, &a, KBV_EQ_NONE, 0, &qp), KBV_ERR_INVALID_ARGUMENT);
  a.send_cq = ocq;  // another device's CQ
  EXPECT_EQ(kbv_qp_create(pd, &a, KBV_EQ_NONE, 0, &qp), KBV_ERR_INVALID_HANDLE);
  a.send_cq = pd;  // not a CQ
  EXPECT_EQ(kbv_qp_create(pd, &a, KBV_EQ_NONE, 0, &qp), KBV_ERR_INVALID_HANDLE);
  a.send_cq = cq;
  a.cap.max_send_wr = 1u << 30;
  EXPECT_EQ(kbv_qp_create(pd, &a, KBV_EQ_NONE, 0, &qp), KBV_ERR_LIMIT_EXCEEDED);
  a.cap.max_send_wr = 8;
  a.cap.max_send_sge = 200;  // a WQE above 63 x 16 bytes
  EXPECT_EQ(kbv_qp_create(pd, &a, KBV_EQ_NONE, 0, &qp), KBV_ERR_LIMIT_EXCEEDED);
  EXPECT_EQ(qp, 0u);
  a.cap.max_send_sge = 1;
  ASSERT_EQ(kbv_qp_create(pd, &a, KBV_EQ_NONE, 0, &qp), KBV_SUCCESS);
  // Multicast is for UD QPs; a unicast GID is refused.
  const uint8_t mgid[16] = {0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  const uint8_t ugid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
  EXPECT_EQ(kbv_qp_attach_mcast(qp, mgid, KBV_EQ_NONE, 0), KBV_ERR_NOT_SUPPORTED);
  EXPECT_EQ(kbv_qp_destroy(qp, KBV_EQ_NONE, 0), KBV_SUCCESS);
  kbv_qp_t ud = make_qp(pd, KBV_QPT_UD, cq, cq);
  EXPECT_EQ(kbv_qp_attach_mcast(ud, ugid, KBV_EQ_NONE, 0), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kbv_qp_attach_mcast(ud, nullptr, KBV_EQ_NONE, 0), KBV_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(kbv_qp_attach_mcast(ud, mgid, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_qp_detach_mcast(ud, mgid, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_qp_destroy(ud, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_cq_destroy(cq, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_cq_destroy(ocq, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(pd, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

TEST_F(VerbsE2e, SrqAndAhLifeCycles) {
  SimDev& d = open_dev();
  kbv_pd_t pd = alloc_pd(d);
  kbv_srq_attr_t sa{};
  sa.max_wr = 15;
  sa.max_sge = 2;
  kbv_srq_t srq = 0;
  ASSERT_EQ(kbv_srq_create(pd, &sa, KBV_EQ_NONE, 0, &srq), KBV_SUCCESS);
  EXPECT_EQ(kbv_srq_arm(srq, 4, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_srq_arm(srq, 0, KBV_EQ_NONE, 0), KBV_ERR_INVALID_ARGUMENT);
  std::vector<uint8_t> buf(1024);
  kbv_mr_t mr = 0;
  ASSERT_EQ(kbv_mr_reg(pd, buf.data(), buf.size(), KBV_ACCESS_LOCAL_WRITE, KBV_EQ_NONE, 0, &mr),
            KBV_SUCCESS);
  uint32_t lkey = 0;
  ASSERT_EQ(kbv_mr_get_keys(mr, &lkey, nullptr), KBV_SUCCESS);
  kbv_sge_t sg{reinterpret_cast<uint64_t>(buf.data()), 64, lkey};
  std::vector<kbv_recv_wr_t> rw(16, kbv_recv_wr_t{0, &sg, 1, 0});
  uint32_t bad = 0;
  // 15 fit; the 16th finds the queue full.
  EXPECT_EQ(kbv_post_srq_recv(srq, rw.data(), 16, &bad), KBV_ERR_QUEUE_FULL);
  EXPECT_EQ(bad, 15u);
  kbv_sge_t sgs[3] = {sg, sg, sg};
  kbv_recv_wr_t three{0, sgs, 3, 0};
  EXPECT_EQ(kbv_post_srq_recv(srq, &three, 1, &bad), KBV_ERR_TOO_MANY_SGE);
  // A QP receiving from the SRQ has no receive queue of its own.
  kbv_cq_t cq = make_cq(d);
  kbv_qp_t qp = make_qp(pd, KBV_QPT_RC, cq, cq, srq);
  kbv_qp_attr_t x{};
  x.qp_state = KBV_QPS_INIT;
  x.port_num = 1;
  ASSERT_EQ(
      kbv_qp_modify(qp, &x, KBV_QP_STATE | KBV_QP_PORT | KBV_QP_PKEY_INDEX | KBV_QP_ACCESS_FLAGS,
                    KBV_EQ_NONE, 0),
      KBV_SUCCESS);
  EXPECT_EQ(kbv_post_recv(qp, &rw[0], 1, &bad), KBV_ERR_INVALID_ARGUMENT);

  kbv_ah_attr_t aa{};
  std::memcpy(aa.dgid, d.port.gids[0].gid, 16);
  aa.dmac = d.port.gids[0].mac;
  kbv_ah_t ah = 0;
  ASSERT_EQ(kbv_ah_create(pd, &aa, KBV_EQ_NONE, 0, &ah), KBV_SUCCESS);
  aa.sl = 9;
  kbv_ah_t bad_ah = 0;
  EXPECT_EQ(kbv_ah_create(pd, &aa, KBV_EQ_NONE, 0, &bad_ah), KBV_ERR_INVALID_ARGUMENT);
  aa.sl = 0;
  aa.port_num = 3;
  EXPECT_EQ(kbv_ah_create(pd, &aa, KBV_EQ_NONE, 0, &bad_ah), KBV_ERR_INVALID_PORT);
  EXPECT_EQ(kbv_ah_destroy(ah, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_ah_destroy(ah, KBV_EQ_NONE, 0), KBV_ERR_INVALID_HANDLE);

  EXPECT_EQ(kbv_qp_destroy(qp, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_srq_destroy(srq, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_post_srq_recv(srq, rw.data(), 1, &bad), KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(kbv_cq_destroy(cq, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_mr_dereg(mr, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(pd, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

// kbv_post_send's own checks (kbv.h): a QP in INIT or RTR refuses sends
// (receives are allowed from INIT on), an opcode past KBV_WR_ATOMIC_FA is an
// invalid argument, and a UD send with another device's address handle an
// invalid handle; nothing is posted in each case.
TEST_F(VerbsE2e, PostSendRefusesInitRtrBadOpcodeAndAForeignAh) {
  SimDev& a = open_dev();
  SimDev& b = open_dev();
  kbv_pd_t pa = alloc_pd(a), pb = alloc_pd(b);
  kbv_cq_t ca = make_cq(a);
  kbv_qp_t rc = make_qp(pa, KBV_QPT_RC, ca, ca);
  kbv_qp_t ud = make_qp(pa, KBV_QPT_UD, ca, ca);
  uint32_t rcn = 0, udn = 0;
  ASSERT_EQ(kbv_qp_get_num(rc, &rcn), KBV_SUCCESS);
  ASSERT_EQ(kbv_qp_get_num(ud, &udn), KBV_SUCCESS);
  std::vector<uint8_t> mem(64);
  kbv_mr_t mr = 0;
  ASSERT_EQ(kbv_mr_reg(pa, mem.data(), mem.size(), KBV_ACCESS_LOCAL_WRITE, KBV_EQ_NONE, 0, &mr),
            KBV_SUCCESS);
  uint32_t lkey = 0, rkey = 0;
  ASSERT_EQ(kbv_mr_get_keys(mr, &lkey, &rkey), KBV_SUCCESS);
  kbv_sge_t sge{reinterpret_cast<uint64_t>(mem.data()), 8, lkey};
  kbv_send_wr_t wr{};
  wr.opcode = KBV_WR_SEND;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  kbv_recv_wr_t rwr{1, &sge, 1, 0};
  uint32_t bad = 99;

  kbv_qp_attr_t x{};
  x.qp_state = KBV_QPS_INIT;
  x.port_num = 1;
  x.qp_access_flags = KBV_ACCESS_REMOTE_WRITE;
  ASSERT_EQ(
      kbv_qp_modify(rc, &x, KBV_QP_STATE | KBV_QP_PORT | KBV_QP_PKEY_INDEX | KBV_QP_ACCESS_FLAGS,
                    KBV_EQ_NONE, 0),
      KBV_SUCCESS);
  EXPECT_EQ(kbv_post_send(rc, &wr, 1, &bad), KBV_ERR_INVALID_QP_STATE);
  EXPECT_EQ(kbv_post_recv(rc, &rwr, 1, &bad), KBV_SUCCESS);
  x.qp_state = KBV_QPS_RTR;
  x.path_mtu = KBV_MTU_1024;
  x.dest_qp_num = rcn;
  x.max_dest_rd_atomic = 1;
  x.min_rnr_timer = 12;
  std::memcpy(x.ah_attr.dgid, a.port.gids[0].gid, 16);
  x.ah_attr.dmac = a.port.gids[0].mac;
  ASSERT_EQ(kbv_qp_modify(rc, &x,
                          KBV_QP_STATE | KBV_QP_AV | KBV_QP_PATH_MTU | KBV_QP_DEST_QPN |
                              KBV_QP_RQ_PSN | KBV_QP_MAX_DEST_RD_ATOMIC | KBV_QP_MIN_RNR_TIMER,
                          KBV_EQ_NONE, 0),
            KBV_SUCCESS);
  EXPECT_EQ(kbv_post_send(rc, &wr, 1, &bad), KBV_ERR_INVALID_QP_STATE);
  EXPECT_EQ(bad, 0u);

  // UD in RTS: opcode and address handle checks.
  ASSERT_EQ(connect(ud, KBV_QPT_UD, b, 1), KBV_SUCCESS);
  kbv_ah_attr_t h{};
  std::memcpy(h.dgid, b.port.gids[0].gid, 16);
  h.dmac = b.port.gids[0].mac;
  kbv_ah_t mine = 0, foreign = 0;
  ASSERT_EQ(kbv_ah_create(pa, &h, KBV_EQ_NONE, 0, &mine), KBV_SUCCESS);
  ASSERT_EQ(kbv_ah_create(pb, &h, KBV_EQ_NONE, 0, &foreign), KBV_SUCCESS);
  wr.remote_qpn = 1;
  wr.remote_qkey = 0x11111111;
  wr.ah = foreign;
  EXPECT_EQ(kbv_post_send(ud, &wr, 1, &bad), KBV_ERR_INVALID_HANDLE);
  wr.ah = mine;
  wr.opcode = KBV_WR_ATOMIC_FA + 1;
  EXPECT_EQ(kbv_post_send(ud, &wr, 1, &bad), KBV_ERR_INVALID_ARGUMENT);
  wr.opcode = KBV_WR_SEND;
  EXPECT_EQ(kbv_post_send(ud, &wr, 1, &bad), KBV_SUCCESS);  // the same request, valid

  EXPECT_EQ(kbv_ah_destroy(mine, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_ah_destroy(foreign, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_qp_destroy(ud, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_qp_destroy(rc, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_cq_destroy(ca, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_mr_dereg(mr, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(pa, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(pb, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

}  // namespace
}  // namespace kbv::test
