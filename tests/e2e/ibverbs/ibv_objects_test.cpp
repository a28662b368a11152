// SPDX-License-Identifier: BSD-3-Clause
//
// kbv's libibverbs: PD, MR, CQ, QP, SRQ, AH and multicast — rdma-core's
// errno rules and attribute masks (src/ibverbs/pd_mr.cpp, cq.cpp, qp.cpp,
// srq.cpp, ah.cpp), and data between two QPs of one model HCA through
// verbs.h's inline post/poll calls.
#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>
#include <sys/mman.h>

#include <cstring>

#include "ibv_fixture.hpp"

namespace kbv::ibvtest {
namespace {

TEST_F(IbvTest, MrAccessAndIova) {
  std::vector<uint8_t> buf(8192);
  ibv_mr* mr = make_mr(buf);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(mr->addr, buf.data());
  EXPECT_EQ(mr->length, buf.size());
  EXPECT_EQ(mr->pd, pd_);
  EXPECT_EQ(mr->context, ctx_);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd_, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ZERO_BASED),
            nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr_iova(pd_, buf.data(), buf.size(), 0x1000, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  // iova == address works; an optional access flag (relaxed ordering) is
  // dropped as rdma-core drops optional flags a device lacks.
  ibv_mr* m2 = ibv_reg_mr_iova2(pd_, buf.data(), 4096, reinterpret_cast<uintptr_t>(buf.data()),
                                IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
  ASSERT_NE(m2, nullptr) << std::strerror(errno);
  EXPECT_NE(m2->lkey, mr->lkey);
  EXPECT_EQ(ibv_dereg_mr(m2), 0);
  // Remote write without local write: IBTA 10.6.3.1.
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd_, buf.data(), buf.size(), IBV_ACCESS_REMOTE_WRITE), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // rereg: the old MR stays valid.
  errno = 0;
  EXPECT_EQ(
      ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, IBV_ACCESS_LOCAL_WRITE),
      IBV_REREG_MR_ERR_INPUT);
  EXPECT_EQ(errno, EOPNOTSUPP);
  errno = 0;
  EXPECT_EQ(ibv_rereg_mr(mr, 0, nullptr, nullptr, 0, IBV_ACCESS_LOCAL_WRITE),
            IBV_REREG_MR_ERR_INPUT);
  EXPECT_EQ(errno, EINVAL);  // access without IBV_REREG_MR_CHANGE_ACCESS
  errno = 0;
  EXPECT_EQ(ibv_reg_dmabuf_mr(pd_, 0, 4096, 0, 3, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
}

// rdma-core's ibv_reg_mr of memory the process cannot write, with a write
// right: the kernel's pin_user_pages(FOLL_WRITE) fails, ibv_reg_mr returns
// NULL with errno EFAULT. Read-only rights on the same memory work.
TEST_F(IbvTest, ReadOnlyMemoryWithWriteAccessIsEfault) {
  const size_t len = 2 * 4096;
  void* ro = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(ro, MAP_FAILED);
  for (int acc : {int{IBV_ACCESS_LOCAL_WRITE}, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
                  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC}) {
    errno = 0;
    EXPECT_EQ(ibv_reg_mr(pd_, ro, len, acc), nullptr) << acc;
    EXPECT_EQ(errno, EFAULT) << acc;
  }
  ibv_mr* mr = ibv_reg_mr(pd_, ro, len, IBV_ACCESS_REMOTE_READ);
  ASSERT_NE(mr, nullptr) << std::strerror(errno);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  mr = ibv_reg_mr(pd_, ro, len, 0);
  ASSERT_NE(mr, nullptr) << std::strerror(errno);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  ::munmap(ro, len);
}

TEST_F(IbvTest, DestroyWhileUsedIsEbusy) {
  std::vector<uint8_t> buf(4096);
  ibv_pd* pd = ibv_alloc_pd(ctx_);
  ASSERT_NE(pd, nullptr);
  ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(ibv_dealloc_pd(pd), EBUSY);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);

  ibv_cq* cq = make_cq();
  ibv_qp* qp = make_qp(IBV_QPT_RC, cq, cq);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(ibv_destroy_cq(cq), EBUSY);
  EXPECT_EQ(ibv_dealloc_pd(pd_), EBUSY);
  forget_qp(qp);
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
}

TEST_F(IbvTest, CqArguments) {
  ibv_device_attr a{};
  ASSERT_EQ(ibv_query_device(ctx_, &a), 0);
  errno = 0;
  EXPECT_EQ(ibv_create_cq(ctx_, 0, nullptr, nullptr, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(ibv_create_cq(ctx_, a.max_cqe + 1, nullptr, nullptr, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(ibv_create_cq(ctx_, 16, nullptr, nullptr, 1), nullptr);  // one vector
  EXPECT_EQ(errno, EINVAL);
  ibv_cq* cq = make_cq(100);
  ASSERT_NE(cq, nullptr);
  EXPECT_GE(cq->cqe, 100);
  EXPECT_EQ(ibv_resize_cq(cq, 300), 0);
  EXPECT_GE(cq->cqe, 300);
  // ibv_create_cq_ex: a field kbv cannot give (wall-clock timestamps) is
  // EOPNOTSUPP.
  ibv_cq_init_attr_ex x{};
  x.cqe = 16;
  x.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
  errno = 0;
  EXPECT_EQ(ibv_create_cq_ex(ctx_, &x), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  x.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM;
  ibv_cq_ex* cx = ibv_create_cq_ex(ctx_, &x);
  ASSERT_NE(cx, nullptr) << std::strerror(errno);
  EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cx)), 0);
}

// Resizing a CQ that holds completions keeps every one, in order (kbv's
// resize keeps a drained ring only: the library takes them out first). The
// receive CQ is resized once every send was acknowledged, so all receive
// completions are in it (the responder writes a receive CQE before it
// acknowledges the message).
TEST_F(IbvTest, ResizeKeepsOutstandingCompletions) {
  std::vector<uint8_t> buf(4096);
  ibv_mr* mr = make_mr(buf);
  ibv_cq* scq = make_cq(16);
  ibv_cq* rcq = make_cq(8);
  ibv_qp* a = make_qp(IBV_QPT_RC, scq, scq);
  ibv_qp* b = make_qp(IBV_QPT_RC, rcq, rcq);
  ASSERT_TRUE(mr && scq && rcq && a && b);
  ASSERT_EQ(to_init(a), 0);
  ASSERT_EQ(to_init(b), 0);
  ASSERT_EQ(connect(a, b->qp_num), 0);
  ASSERT_EQ(connect(b, a->qp_num), 0);
  constexpr int kN = 6;
  for (int i = 0; i < kN; ++i) {
    ibv_sge sg{reinterpret_cast<uintptr_t>(buf.data()) + 64 * i, 64, mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = static_cast<uint64_t>(100 + i);
    wr.sg_list = &sg;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_recv(b, &wr, &bad), 0);
  }
  for (int i = 0; i < kN; ++i) {
    ibv_sge sg{reinterpret_cast<uintptr_t>(buf.data()) + 2048, 16, mr->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sg;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(a, &wr, &bad), 0);
  }
  for (int i = 0; i < kN; ++i) EXPECT_EQ(poll_one(scq).status, IBV_WC_SUCCESS);
  EXPECT_EQ(poll_one(rcq).wr_id, 100u);  // one read before the resize
  ASSERT_EQ(ibv_resize_cq(rcq, 64), 0);
  EXPECT_GE(rcq->cqe, 64);
  for (uint64_t i = 1; i < kN; ++i) {
    const ibv_wc wc = poll_one(rcq);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV);
    EXPECT_EQ(wc.wr_id, 100 + i);
  }
  ibv_wc extra;
  EXPECT_EQ(ibv_poll_cq(rcq, 1, &extra), 0);
  // A CQ made by ibv_create_cq_ex is not resized.
  ibv_cq_init_attr_ex x{};
  x.cqe = 4;
  x.wc_flags = IBV_WC_STANDARD_FLAGS;
  ibv_cq_ex* cx = ibv_create_cq_ex(ctx_, &x);
  ASSERT_NE(cx, nullptr);
  EXPECT_EQ(ibv_resize_cq(ibv_cq_ex_to_cq(cx), 16), EOPNOTSUPP);  // read by start_poll
  EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cx)), 0);
}

TEST_F(IbvTest, QpTypesAndCaps) {
  ibv_cq* cq = make_cq();
  ibv_qp_init_attr a{};
  a.send_cq = cq;
  a.recv_cq = cq;
  a.qp_type = IBV_QPT_XRC_SEND;
  a.cap = ibv_qp_cap{4, 4, 1, 1, 0};
  errno = 0;
  EXPECT_EQ(ibv_create_qp(pd_, &a), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ibv_device_attr d{};
  ASSERT_EQ(ibv_query_device(ctx_, &d), 0);
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = static_cast<uint32_t>(d.max_qp_wr) + 1;
  errno = 0;
  EXPECT_EQ(ibv_create_qp(pd_, &a), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // The caps the QP got are written back (at least what was asked).
  a.cap = ibv_qp_cap{10, 5, 1, 1, 32};
  ibv_qp* qp = ibv_create_qp(pd_, &a);
  ASSERT_NE(qp, nullptr) << std::strerror(errno);
  qps_.push_back(qp);
  EXPECT_GE(a.cap.max_send_wr, 10u);
  EXPECT_GE(a.cap.max_recv_wr, 5u);
  EXPECT_GE(a.cap.max_inline_data, 32u);
  EXPECT_EQ(qp->state, IBV_QPS_RESET);
  EXPECT_EQ(qp->qp_type, IBV_QPT_RC);
  EXPECT_NE(qp->qp_num, 0u);
  // No ibv_qp_ex for a QP created without send_ops_flags.
  EXPECT_EQ(ibv_qp_to_qp_ex(qp), nullptr);
}

TEST_F(IbvTest, ModifyQpMasksAndTransitions) {
  ibv_cq* cq = make_cq();
  ibv_qp* qp = make_qp(IBV_QPT_RC, cq, cq);
  ASSERT_NE(qp, nullptr);
  ibv_qp_attr a{};
  // RESET -> RTR is not a transition (IBTA 10.3.1).
  a.qp_state = IBV_QPS_RTR;
  EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
  // RESET -> INIT without the port (required): EINVAL.
  a.qp_state = IBV_QPS_INIT;
  a.qp_access_flags = 0;
  EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS), EINVAL);
  // Alternate path (APM): not supported.
  EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_ALT_PATH), EOPNOTSUPP);
  EXPECT_EQ(qp->state, IBV_QPS_RESET);
  ASSERT_EQ(to_init(qp), 0);
  EXPECT_EQ(qp->state, IBV_QPS_INIT);
  // RoCE needs the GRH: an address vector without it is EINVAL.
  ibv_qp_attr r{};
  r.qp_state = IBV_QPS_RTR;
  r.path_mtu = IBV_MTU_1024;
  r.dest_qp_num = qp->qp_num;
  r.max_dest_rd_atomic = 1;
  r.min_rnr_timer = 12;
  r.ah_attr.port_num = 1;
  EXPECT_EQ(ibv_modify_qp(qp, &r,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                              IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
            EINVAL);
  ASSERT_EQ(connect(qp, qp->qp_num), 0);  // to itself
  EXPECT_EQ(qp->state, IBV_QPS_RTS);
  ibv_qp_attr q{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(qp, &q, IBV_QP_STATE, &init), 0);
  EXPECT_EQ(q.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(q.sq_psn, 0x123u);
  EXPECT_EQ(q.dest_qp_num, qp->qp_num);
  EXPECT_EQ(q.path_mtu, IBV_MTU_1024);
  EXPECT_EQ(q.ah_attr.is_global, 1);
  EXPECT_EQ(std::memcmp(q.ah_attr.grh.dgid.raw, gid_.raw, 16), 0);
  EXPECT_EQ(q.timeout, 14);
  EXPECT_EQ(init.send_cq, cq);
  EXPECT_EQ(init.qp_type, IBV_QPT_RC);
  EXPECT_GE(init.cap.max_send_wr, 16u);
  // any -> ERR -> RESET.
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_ERR;
  EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
  a.qp_state = IBV_QPS_RESET;
  EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
  EXPECT_EQ(qp->state, IBV_QPS_RESET);
}

TEST_F(IbvTest, RcSendWithImmediateAndWrite) {
  std::vector<uint8_t> src(4096), dst(4096);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
  ibv_mr* smr = make_mr(src);
  ibv_mr* dmr = make_mr(dst);
  ibv_cq* scq = make_cq();
  ibv_cq* rcq = make_cq();
  ibv_qp* a = make_qp(IBV_QPT_RC, scq, scq);
  ibv_qp* b = make_qp(IBV_QPT_RC, rcq, rcq);
  ASSERT_TRUE(smr && dmr && a && b);
  ASSERT_EQ(to_init(a), 0);
  ASSERT_EQ(to_init(b), 0);
  ASSERT_EQ(connect(a, b->qp_num), 0);
  ASSERT_EQ(connect(b, a->qp_num), 0);

  ibv_sge rs{reinterpret_cast<uintptr_t>(dst.data()), 1024, dmr->lkey};
  ibv_recv_wr rwr{};
  rwr.wr_id = 77;
  rwr.sg_list = &rs;
  rwr.num_sge = 1;
  ibv_recv_wr* bad_r = nullptr;
  ASSERT_EQ(ibv_post_recv(b, &rwr, &bad_r), 0);

  ibv_sge ss{reinterpret_cast<uintptr_t>(src.data()), 1024, smr->lkey};
  ibv_send_wr swr{};
  swr.wr_id = 5;
  swr.sg_list = &ss;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_SEND_WITH_IMM;
  swr.send_flags = IBV_SEND_SIGNALED;
  swr.imm_data = htonl(0x12345678);
  ibv_send_wr* bad_s = nullptr;
  ASSERT_EQ(ibv_post_send(a, &swr, &bad_s), 0);
  ibv_wc wc = poll_one(scq);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(wc.wr_id, 5u);
  EXPECT_EQ(wc.opcode, IBV_WC_SEND);
  EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);  // mlx5 handle_good_req
  wc = poll_one(rcq);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(wc.wr_id, 77u);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV);
  EXPECT_EQ(wc.byte_len, 1024u);
  EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(ntohl(wc.imm_data), 0x12345678u);  // network order at the ABI
  EXPECT_EQ(wc.qp_num, b->qp_num);
  EXPECT_EQ(std::memcmp(dst.data(), src.data(), 1024), 0);

  // RDMA WRITE into the second half.
  ibv_sge ws{reinterpret_cast<uintptr_t>(src.data()) + 1024, 2048, smr->lkey};
  swr = ibv_send_wr{};
  swr.wr_id = 6;
  swr.sg_list = &ws;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_RDMA_WRITE;
  swr.send_flags = IBV_SEND_SIGNALED;
  swr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(dst.data()) + 2048;
  swr.wr.rdma.rkey = dmr->rkey;
  ASSERT_EQ(ibv_post_send(a, &swr, &bad_s), 0);
  wc = poll_one(scq);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(std::memcmp(dst.data() + 2048, src.data() + 1024, 2048), 0);
}

TEST_F(IbvTest, UdAddressHandleAndReplyFromWc) {
  std::vector<uint8_t> sbuf(256), rbuf(256 + 40);
  for (size_t i = 0; i < sbuf.size(); ++i) sbuf[i] = static_cast<uint8_t>(255 - i);
  ibv_mr* smr = make_mr(sbuf, IBV_ACCESS_LOCAL_WRITE);
  ibv_mr* rmr = make_mr(rbuf, IBV_ACCESS_LOCAL_WRITE);
  ibv_cq* scq = make_cq();
  ibv_cq* rcq = make_cq();
  ibv_qp* s = make_qp(IBV_QPT_UD, scq, scq);
  ibv_qp* r = make_qp(IBV_QPT_UD, rcq, rcq);
  ASSERT_TRUE(smr && rmr && s && r);
  for (ibv_qp* q : {s, r}) {
    ASSERT_EQ(to_init(q), 0);
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    ASSERT_EQ(ibv_modify_qp(q, &a, IBV_QP_STATE), 0);
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 1;
    ASSERT_EQ(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
  }
  ibv_ah_attr aa{};
  aa.is_global = 0;
  aa.port_num = 1;
  errno = 0;
  EXPECT_EQ(ibv_create_ah(pd_, &aa), nullptr);  // RoCE: GRH required
  EXPECT_EQ(errno, EINVAL);
  aa.is_global = 1;
  aa.grh.dgid = gid_;
  aa.grh.sgid_index = kGidIndex;
  aa.grh.hop_limit = 64;
  aa.grh.sgid_index = 200;  // not in the table
  errno = 0;
  EXPECT_EQ(ibv_create_ah(pd_, &aa), nullptr);
  EXPECT_EQ(errno, EINVAL);
  aa.grh.sgid_index = kGidIndex;
  ibv_ah* ah = ibv_create_ah(pd_, &aa);
  ASSERT_NE(ah, nullptr) << std::strerror(errno);

  ibv_sge rs{reinterpret_cast<uintptr_t>(rbuf.data()), static_cast<uint32_t>(rbuf.size()),
             rmr->lkey};
  ibv_recv_wr rwr{};
  rwr.sg_list = &rs;
  rwr.num_sge = 1;
  ibv_recv_wr* bad_r = nullptr;
  ASSERT_EQ(ibv_post_recv(r, &rwr, &bad_r), 0);
  ibv_sge ss{reinterpret_cast<uintptr_t>(sbuf.data()), static_cast<uint32_t>(sbuf.size()),
             smr->lkey};
  ibv_send_wr swr{};
  swr.sg_list = &ss;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_SEND;
  swr.send_flags = IBV_SEND_SIGNALED;
  swr.wr.ud.ah = ah;
  swr.wr.ud.remote_qpn = r->qp_num;
  swr.wr.ud.remote_qkey = 0x11111111;
  ibv_send_wr* bad_s = nullptr;
  ASSERT_EQ(ibv_post_send(s, &swr, &bad_s), 0);
  EXPECT_EQ(poll_one(scq).status, IBV_WC_SUCCESS);
  ibv_wc wc = poll_one(rcq);
  ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
  EXPECT_EQ(wc.src_qp, s->qp_num);
  EXPECT_EQ(std::memcmp(rbuf.data() + 40, sbuf.data(), sbuf.size()), 0);

  // The reply's address from the completion and its GRH (RoCE v2 over IPv4:
  // the IPv4 header in the last 20 bytes).
  ibv_ah_attr back{};
  ASSERT_EQ(ibv_init_ah_from_wc(ctx_, 1, &wc, reinterpret_cast<ibv_grh*>(rbuf.data()), &back), 0)
      << std::strerror(errno);
  EXPECT_EQ(back.is_global, 1);
  EXPECT_EQ(std::memcmp(back.grh.dgid.raw, gid_.raw, 16), 0);
  EXPECT_EQ(back.grh.sgid_index, kGidIndex);
  EXPECT_EQ(back.port_num, 1);
  ibv_ah* reply = ibv_create_ah_from_wc(pd_, &wc, reinterpret_cast<ibv_grh*>(rbuf.data()), 1);
  ASSERT_NE(reply, nullptr) << std::strerror(errno);
  EXPECT_EQ(ibv_destroy_ah(reply), 0);
  EXPECT_EQ(ibv_destroy_ah(ah), 0);

  // Multicast on UD: attach, a second attach of the group is refused or
  // accepted as the device does, detach; RC QPs cannot join.
  ibv_gid mgid{};
  mgid.raw[10] = mgid.raw[11] = 0xff;
  mgid.raw[12] = 239;
  mgid.raw[15] = 1;
  EXPECT_EQ(ibv_attach_mcast(r, &mgid, 0), 0);
  EXPECT_EQ(ibv_detach_mcast(r, &mgid, 0), 0);
}

TEST_F(IbvTest, SrqCreateQueryModify) {
  ibv_srq_init_attr a{};
  a.attr.max_wr = 32;
  a.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(pd_, &a);
  ASSERT_NE(srq, nullptr) << std::strerror(errno);
  ibv_srq_attr q{};
  ASSERT_EQ(ibv_query_srq(srq, &q), 0);
  EXPECT_GE(q.max_wr, 32u);
  EXPECT_EQ(q.srq_limit, 0u);
  ibv_srq_attr m{};
  m.srq_limit = 4;
  EXPECT_EQ(ibv_modify_srq(srq, &m, IBV_SRQ_LIMIT), 0);
  ASSERT_EQ(ibv_query_srq(srq, &q), 0);
  EXPECT_EQ(q.srq_limit, 4u);
  m.max_wr = 64;
  EXPECT_EQ(ibv_modify_srq(srq, &m, IBV_SRQ_MAX_WR), EINVAL);  // no resize
  m.srq_limit = 1000;
  EXPECT_EQ(ibv_modify_srq(srq, &m, IBV_SRQ_LIMIT), EINVAL);
  ibv_cq* cq = make_cq();
  ibv_qp* qp = make_qp(IBV_QPT_RC, cq, cq, srq);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(ibv_destroy_srq(srq), EBUSY);
  forget_qp(qp);
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
  a.attr.max_wr = 0;
  errno = 0;
  EXPECT_EQ(ibv_create_srq(pd_, &a), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

}  // namespace
}  // namespace kbv::ibvtest
