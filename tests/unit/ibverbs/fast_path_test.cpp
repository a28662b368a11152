// SPDX-License-Identifier: BSD-3-Clause
// The conversion rules of kbv's libibverbs data path (src/ibverbs/fast_path.hpp):
// ibv_send_wr / ibv_recv_wr -> kbv WRs, kbv_wc_t -> ibv_wc, post errnos, and
// the ibv_cq_ex / ibv_qp_ex function tables the init calls fill.
#include <arpa/inet.h>
#include <errno.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <kbv/kbv.h>

#include <cstring>

#include "ibverbs/fast_path.hpp"
#include "ibverbs/objects.hpp"

namespace kbv::ibverbs {
namespace {

Qp make_qp(ibv_qp_type type) {
  Qp qp{};
  qp.qpx.qp_base.qp_type = type;
  qp.handle = 0x1234;
  qp.max_send_wr = 4;
  qp.max_send_sge = 2;
  qp.max_inline_data = 32;
  return qp;
}

TEST(IbverbsSendWr, RdmaWriteWithImmCarriesImmInCpuOrder) {
  Qp qp = make_qp(IBV_QPT_RC);
  ibv_sge sg[2] = {{0x1000, 64, 7}, {0x2000, 0, 7}};
  ibv_send_wr w{};
  w.wr_id = 99;
  w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  w.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_FENCE;
  w.sg_list = sg;
  w.num_sge = 2;
  w.imm_data = htonl(0x11223344);
  w.wr.rdma.remote_addr = 0xabcdef;
  w.wr.rdma.rkey = 0x55;
  kbv_send_wr_t k{};
  ASSERT_EQ(to_kbv_send_wr(qp, w, k), 0);
  EXPECT_EQ(k.wr_id, 99u);
  EXPECT_EQ(k.opcode, static_cast<uint32_t>(KBV_WR_RDMA_WRITE_IMM));
  EXPECT_EQ(k.flags, KBV_SEND_SIGNALED | KBV_SEND_SOLICITED | KBV_SEND_FENCE);
  EXPECT_EQ(k.imm, 0x11223344u);  // network order in, CPU order out
  EXPECT_EQ(k.remote_addr, 0xabcdefu);
  EXPECT_EQ(k.rkey, 0x55u);
  // The program's SGE list is read in place.
  EXPECT_EQ(static_cast<const void*>(k.sg_list), static_cast<const void*>(sg));
  EXPECT_EQ(k.num_sge, 2u);
  EXPECT_EQ(k.sg_list[0].addr, 0x1000u);
  EXPECT_EQ(k.sg_list[0].length, 64u);
  EXPECT_EQ(k.sg_list[0].lkey, 7u);
  EXPECT_EQ(k.ah, KBV_HANDLE_NONE);
}

TEST(IbverbsSendWr, OpcodesMap) {
  Qp qp = make_qp(IBV_QPT_RC);
  const struct {
    ibv_wr_opcode ib;
    int kbv;
  } table[] = {
      {IBV_WR_SEND, KBV_WR_SEND},
      {IBV_WR_SEND_WITH_IMM, KBV_WR_SEND_IMM},
      {IBV_WR_RDMA_WRITE, KBV_WR_RDMA_WRITE},
      {IBV_WR_RDMA_WRITE_WITH_IMM, KBV_WR_RDMA_WRITE_IMM},
      {IBV_WR_RDMA_READ, KBV_WR_RDMA_READ},
      {IBV_WR_ATOMIC_CMP_AND_SWP, KBV_WR_ATOMIC_CS},
      {IBV_WR_ATOMIC_FETCH_AND_ADD, KBV_WR_ATOMIC_FA},
  };
  for (const auto& t : table) {
    ibv_send_wr w{};
    w.opcode = t.ib;
    kbv_send_wr_t k{};
    ASSERT_EQ(to_kbv_send_wr(qp, w, k), 0) << t.ib;
    EXPECT_EQ(k.opcode, static_cast<uint32_t>(t.kbv)) << t.ib;
  }
}

TEST(IbverbsSendWr, AtomicsTakeTheAtomicUnion) {
  Qp qp = make_qp(IBV_QPT_RC);
  ibv_send_wr w{};
  w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
  w.wr.atomic.remote_addr = 0x8000;
  w.wr.atomic.rkey = 3;
  w.wr.atomic.compare_add = 10;
  w.wr.atomic.swap = 20;
  kbv_send_wr_t k{};
  ASSERT_EQ(to_kbv_send_wr(qp, w, k), 0);
  EXPECT_EQ(k.remote_addr, 0x8000u);
  EXPECT_EQ(k.rkey, 3u);
  EXPECT_EQ(k.compare_add, 10u);
  EXPECT_EQ(k.swap, 20u);
}

TEST(IbverbsSendWr, WhatKbvLacksIsEinval) {
  Qp qp = make_qp(IBV_QPT_RC);
  kbv_send_wr_t k{};
  for (unsigned op :
       {unsigned{IBV_WR_LOCAL_INV}, unsigned{IBV_WR_BIND_MW}, unsigned{IBV_WR_SEND_WITH_INV},
        unsigned{IBV_WR_TSO}, unsigned{IBV_WR_DRIVER1}, 77u, 0xffffffffu}) {
    ibv_send_wr w{};
    std::memcpy(&w.opcode, &op, sizeof op);  // as a C program may store it
    EXPECT_EQ(to_kbv_send_wr(qp, w, k), EINVAL) << op;
  }
  ibv_send_wr w{};
  w.opcode = IBV_WR_SEND;
  w.send_flags = IBV_SEND_IP_CSUM;
  EXPECT_EQ(to_kbv_send_wr(qp, w, k), EINVAL);
  w.send_flags = 0;
  w.num_sge = 1;  // sg_list NULL
  EXPECT_EQ(to_kbv_send_wr(qp, w, k), EINVAL);
  w.num_sge = -1;
  EXPECT_EQ(to_kbv_send_wr(qp, w, k), EINVAL);
}

TEST(IbverbsSendWr, UdTakesAhQpnAndTheQpsQkeyWhenBit31IsSet) {
  Qp qp = make_qp(IBV_QPT_UD);
  qp.qkey = 0x11111111;
  Ah ah{};
  ah.handle = 0x77;
  ibv_send_wr w{};
  w.opcode = IBV_WR_SEND_WITH_IMM;
  w.imm_data = htonl(5);
  w.wr.ud.ah = &ah.ah;
  w.wr.ud.remote_qpn = 0xabc;
  w.wr.ud.remote_qkey = 0x22;
  kbv_send_wr_t k{};
  ASSERT_EQ(to_kbv_send_wr(qp, w, k), 0);
  EXPECT_EQ(k.ah, 0x77u);
  EXPECT_EQ(k.remote_qpn, 0xabcu);
  EXPECT_EQ(k.remote_qkey, 0x22u);
  EXPECT_EQ(k.imm, 5u);
  w.wr.ud.remote_qkey = 0x80000000u;  // IBTA o10-7.1: use the QP's Q_Key
  ASSERT_EQ(to_kbv_send_wr(qp, w, k), 0);
  EXPECT_EQ(k.remote_qkey, 0x11111111u);
  w.wr.ud.ah = nullptr;
  EXPECT_EQ(to_kbv_send_wr(qp, w, k), EINVAL);
}

TEST(IbverbsRecvWr, Converts) {
  ibv_sge sg{0x3000, 128, 9};
  ibv_recv_wr w{};
  w.wr_id = 5;
  w.sg_list = &sg;
  w.num_sge = 1;
  kbv_recv_wr_t k{};
  ASSERT_EQ(to_kbv_recv_wr(w, k), 0);
  EXPECT_EQ(k.wr_id, 5u);
  EXPECT_EQ(k.num_sge, 1u);
  EXPECT_EQ(k.sg_list[0].addr, 0x3000u);
  w.sg_list = nullptr;
  EXPECT_EQ(to_kbv_recv_wr(w, k), EINVAL);
}

// As rdma-core's mlx5: receives ENOMEM only for a full queue; sends also for
// too many SGEs, too much inline data, a QP not in RTS (_mlx5_post_send).
TEST(IbverbsPostErrno, FullQueueIsEnomemBadWrIsEinval) {
  EXPECT_EQ(post_errno(KBV_ERR_QUEUE_FULL), ENOMEM);
  for (kbv_status_t s : {KBV_ERR_INVALID_ARGUMENT, KBV_ERR_INVALID_HANDLE, KBV_ERR_INVALID_STATE,
                         KBV_ERR_INVALID_QP_STATE, KBV_ERR_INVALID_WR_TYPE, KBV_ERR_TOO_MANY_SGE,
                         KBV_ERR_INLINE_TOO_LARGE})
    EXPECT_EQ(post_errno(s), EINVAL) << kbv_status_name(s);
  EXPECT_EQ(post_errno(KBV_ERR_DEVICE_FATAL), EIO);
  EXPECT_EQ(post_errno(KBV_ERR_DEVICE_REMOVED), ENODEV);
  for (kbv_status_t s : {KBV_ERR_QUEUE_FULL, KBV_ERR_TOO_MANY_SGE, KBV_ERR_INLINE_TOO_LARGE,
                         KBV_ERR_INVALID_QP_STATE})
    EXPECT_EQ(send_errno(s), ENOMEM) << kbv_status_name(s);
  for (kbv_status_t s : {KBV_ERR_INVALID_ARGUMENT, KBV_ERR_INVALID_HANDLE, KBV_ERR_INVALID_WR_TYPE})
    EXPECT_EQ(send_errno(s), EINVAL) << kbv_status_name(s);
}

TEST(IbverbsWc, RecvWithImmIsNetworkOrderWithRoceFieldsAsMlx5) {
  kbv_wc_t k{};
  k.wr_id = 42;
  k.status = KBV_SUCCESS;
  k.opcode = KBV_WC_RECV_RDMA_WITH_IMM;
  k.byte_len = 4096;
  k.imm = 0xa1b2c3d4;
  k.flags = KBV_WC_WITH_IMM;
  k.qp_num = 0x100;
  k.src_qp = 0x200;
  ibv_wc w;
  std::memset(&w, 0xff, sizeof w);
  to_ibv_wc(k, w);
  EXPECT_EQ(w.wr_id, 42u);
  EXPECT_EQ(w.status, IBV_WC_SUCCESS);
  EXPECT_EQ(w.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_EQ(w.byte_len, 4096u);
  EXPECT_EQ(w.imm_data, htonl(0xa1b2c3d4));
  EXPECT_EQ(w.wc_flags, static_cast<unsigned>(IBV_WC_WITH_IMM));
  EXPECT_EQ(w.qp_num, 0x100u);
  EXPECT_EQ(w.src_qp, 0x200u);
  EXPECT_EQ(w.slid, 0);
  EXPECT_EQ(w.sl, 0);
  EXPECT_EQ(w.dlid_path_bits, 0);
  // mlx5 handle_responder: pkey_index = imm_inval_pkey & 0xffff.
  EXPECT_EQ(w.pkey_index, 0xc3d4);
  EXPECT_EQ(w.vendor_err, 0u);
}

TEST(IbverbsWc, UdRecvWithGrhReportsTheL3TypeAsSl) {
  kbv_wc_t k{};
  k.opcode = KBV_WC_RECV;
  k.flags = KBV_WC_WITH_GRH;
  k.network_hdr_type = KBV_WC_NETWORK_IPV4;
  k.src_qp = 0xabcdef;
  ibv_wc w{};
  to_ibv_wc(k, w);
  EXPECT_EQ(w.opcode, IBV_WC_RECV);
  EXPECT_EQ(w.wc_flags, static_cast<unsigned>(IBV_WC_GRH));
  EXPECT_EQ(w.src_qp, 0xabcdefu);
  EXPECT_EQ(w.sl, 2);  // flags_rqpn bits 27:24, the RoCE l3 type (IPv4 = 2)
  EXPECT_EQ(w.pkey_index, 0);
}

TEST(IbverbsWc, SendWithInvalidateGivesTheRkeyInCpuOrder) {
  kbv_wc_t k{};
  k.opcode = KBV_WC_RECV;
  k.flags = KBV_WC_WITH_INV;
  k.imm = 0x1234;
  ibv_wc w{};
  to_ibv_wc(k, w);
  EXPECT_EQ(w.wc_flags, static_cast<unsigned>(IBV_WC_WITH_INV));
  EXPECT_EQ(w.invalidated_rkey, 0x1234u);
}

TEST(IbverbsWc, SendSideCompletionsLeaveTheReceiveFieldsZero) {
  kbv_wc_t k{};
  k.opcode = KBV_WC_RDMA_READ;
  k.byte_len = 100;
  k.src_qp = 7;  // not meaningful on a requester completion
  ibv_wc w;
  std::memset(&w, 0xff, sizeof w);
  to_ibv_wc(k, w);
  EXPECT_EQ(w.opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(w.byte_len, 100u);
  EXPECT_EQ(w.src_qp, 0u);
  EXPECT_EQ(w.wc_flags, 0u);
  EXPECT_EQ(w.pkey_index, 0);
}

TEST(IbverbsWc, OpcodesAndStatusesMap) {
  EXPECT_EQ(wc_opcode(KBV_WC_SEND), IBV_WC_SEND);
  EXPECT_EQ(wc_opcode(KBV_WC_RDMA_WRITE), IBV_WC_RDMA_WRITE);
  EXPECT_EQ(wc_opcode(KBV_WC_RDMA_READ), IBV_WC_RDMA_READ);
  EXPECT_EQ(wc_opcode(KBV_WC_ATOMIC_CS), IBV_WC_COMP_SWAP);
  EXPECT_EQ(wc_opcode(KBV_WC_ATOMIC_FA), IBV_WC_FETCH_ADD);
  EXPECT_EQ(wc_opcode(KBV_WC_RECV), IBV_WC_RECV);
  EXPECT_EQ(wc_opcode(KBV_WC_RECV_RDMA_WITH_IMM), IBV_WC_RECV_RDMA_WITH_IMM);
  const struct {
    kbv_status_t k;
    ibv_wc_status ib;
  } table[] = {
      {KBV_SUCCESS, IBV_WC_SUCCESS},
      {KBV_ERR_LOCAL_LENGTH, IBV_WC_LOC_LEN_ERR},
      {KBV_ERR_LOCAL_QP_OPERATION, IBV_WC_LOC_QP_OP_ERR},
      {KBV_ERR_LOCAL_PROTECTION, IBV_WC_LOC_PROT_ERR},
      {KBV_ERR_WR_FLUSHED, IBV_WC_WR_FLUSH_ERR},
      {KBV_ERR_MW_BIND, IBV_WC_MW_BIND_ERR},
      {KBV_ERR_BAD_RESPONSE, IBV_WC_BAD_RESP_ERR},
      {KBV_ERR_LOCAL_ACCESS, IBV_WC_LOC_ACCESS_ERR},
      {KBV_ERR_REMOTE_INVALID_REQUEST, IBV_WC_REM_INV_REQ_ERR},
      {KBV_ERR_REMOTE_ACCESS, IBV_WC_REM_ACCESS_ERR},
      {KBV_ERR_REMOTE_OPERATION, IBV_WC_REM_OP_ERR},
      {KBV_ERR_RETRY_EXCEEDED, IBV_WC_RETRY_EXC_ERR},
      {KBV_ERR_RNR_RETRY_EXCEEDED, IBV_WC_RNR_RETRY_EXC_ERR},
      {KBV_ERR_REMOTE_ABORTED, IBV_WC_REM_ABORT_ERR},
      {KBV_ERR_WC_UNKNOWN, IBV_WC_GENERAL_ERR},
      {KBV_ERR_INVALID_HANDLE, IBV_WC_GENERAL_ERR},
  };
  for (const auto& t : table) EXPECT_EQ(wc_status(t.k), t.ib) << kbv_status_name(t.k);
  kbv_wc_t k{};
  k.status = KBV_ERR_REMOTE_ACCESS;
  k.vendor_err = 0x88;
  ibv_wc w{};
  to_ibv_wc(k, w);
  EXPECT_EQ(w.status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(w.vendor_err, 0x88u);
}

TEST(IbverbsCqEx, StandardFlagsAndTimestampsFillTheReadersOthersAreRefused) {
  Cq cq{};
  ASSERT_EQ(init_cq_ex_ops(cq, IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM), 0);
  EXPECT_NE(cq.cqx.start_poll, nullptr);
  EXPECT_NE(cq.cqx.next_poll, nullptr);
  EXPECT_NE(cq.cqx.end_poll, nullptr);
  EXPECT_NE(cq.cqx.read_opcode, nullptr);
  EXPECT_NE(cq.cqx.read_wc_flags, nullptr);
  EXPECT_NE(cq.cqx.read_byte_len, nullptr);
  EXPECT_NE(cq.cqx.read_qp_num, nullptr);
  EXPECT_EQ(cq.cqx.read_imm_data, nullptr);  // not asked for
  EXPECT_EQ(cq.cqx.read_completion_ts, nullptr);
  ASSERT_EQ(init_cq_ex_ops(cq, IBV_WC_STANDARD_FLAGS), 0);
  EXPECT_NE(cq.cqx.read_imm_data, nullptr);
  EXPECT_NE(cq.cqx.read_src_qp, nullptr);
  EXPECT_NE(cq.cqx.read_slid, nullptr);
  EXPECT_NE(cq.cqx.read_sl, nullptr);
  EXPECT_NE(cq.cqx.read_dlid_path_bits, nullptr);
  EXPECT_EQ(cq.cqx.read_completion_ts, nullptr);
  const auto plain_start = cq.cqx.start_poll;
  // Completion timestamps: the reader, and the timestamped poll functions
  // (kbv_poll_cq_ts) instead of the plain ones.
  ASSERT_EQ(
      init_cq_ex_ops(cq, uint64_t{IBV_WC_STANDARD_FLAGS} | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP), 0);
  ASSERT_NE(cq.cqx.read_completion_ts, nullptr);
  EXPECT_NE(cq.cqx.start_poll, plain_start);
  cq.cur_ts = 0x0123456789ABCDEFull;
  EXPECT_EQ(ibv_wc_read_completion_ts(&cq.cqx), 0x0123456789ABCDEFull);
  for (uint64_t f :
       {uint64_t{IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK}, uint64_t{IBV_WC_EX_WITH_CVLAN},
        uint64_t{IBV_WC_EX_WITH_FLOW_TAG}, uint64_t{IBV_WC_EX_WITH_TM_INFO}})
    EXPECT_EQ(init_cq_ex_ops(cq, IBV_WC_STANDARD_FLAGS | f), EOPNOTSUPP) << f;
  // ibv_cq_ex_to_cq is a cast: the CQ is the same object either way.
  EXPECT_EQ(to_cq(ibv_cq_ex_to_cq(&cq.cqx)), &cq);
}

TEST(IbverbsQpEx, BuildersFollowTheQpTypeAsMlx5) {
  Qp rc = make_qp(IBV_QPT_RC);
  ASSERT_EQ(init_qp_ex_ops(rc, IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD), 0);
  EXPECT_EQ(ibv_qp_to_qp_ex(&rc.qpx.qp_base), &rc.qpx);
  EXPECT_NE(rc.qpx.wr_rdma_read, nullptr);
  EXPECT_NE(rc.qpx.wr_atomic_cmp_swp, nullptr);
  EXPECT_EQ(rc.qpx.wr_set_ud_addr, nullptr);
  release_qp_ex(rc);
  EXPECT_EQ(ibv_qp_to_qp_ex(&rc.qpx.qp_base), nullptr);

  Qp uc = make_qp(IBV_QPT_UC);
  EXPECT_EQ(init_qp_ex_ops(uc, IBV_QP_EX_WITH_RDMA_READ), EOPNOTSUPP);
  ASSERT_EQ(init_qp_ex_ops(uc, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM), 0);
  EXPECT_EQ(uc.qpx.wr_rdma_read, nullptr);
  EXPECT_NE(uc.qpx.wr_rdma_write_imm, nullptr);
  release_qp_ex(uc);

  Qp ud = make_qp(IBV_QPT_UD);
  EXPECT_EQ(init_qp_ex_ops(ud, IBV_QP_EX_WITH_RDMA_WRITE), EOPNOTSUPP);
  EXPECT_EQ(init_qp_ex_ops(ud, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD), EOPNOTSUPP);
  ASSERT_EQ(init_qp_ex_ops(ud, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM), 0);
  EXPECT_NE(ud.qpx.wr_set_ud_addr, nullptr);
  EXPECT_EQ(ud.qpx.wr_rdma_write, nullptr);
  release_qp_ex(ud);

  // A QP created without IBV_QP_INIT_ATTR_SEND_OPS_FLAGS has no qp_ex.
  Qp plain = make_qp(IBV_QPT_RC);
  EXPECT_EQ(ibv_qp_to_qp_ex(&plain.qpx.qp_base), nullptr);
}

// Errors the wr_* calls record are returned by wr_complete, which then posts
// nothing (these never reach kbv_post_send: the handle is not a real QP).
TEST(IbverbsQpEx, RecordedErrorsFailTheWholeBatch) {
  Qp qp = make_qp(IBV_QPT_RC);
  ASSERT_EQ(init_qp_ex_ops(qp, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV), 0);
  ibv_qp_ex* x = &qp.qpx;
  char big[64] = {};
  ibv_sge three[3] = {{1, 1, 1}, {2, 1, 1}, {3, 1, 1}};

  ibv_wr_start(x);
  ibv_wr_send(x);
  ibv_wr_set_inline_data(x, big, sizeof big);  // above max_inline_data 32
  EXPECT_EQ(ibv_wr_complete(x), ENOMEM);

  ibv_wr_start(x);
  ibv_wr_send(x);
  ibv_wr_set_sge_list(x, 3, three);  // above max_send_sge 2
  EXPECT_EQ(ibv_wr_complete(x), ENOMEM);

  ibv_wr_start(x);
  for (int i = 0; i < 5; ++i) {  // max_send_wr 4
    ibv_wr_send(x);
    ibv_wr_set_sge(x, 1, 0x1000, 8);
  }
  EXPECT_EQ(ibv_wr_complete(x), ENOMEM);

  ibv_wr_start(x);
  ibv_wr_set_sge(x, 1, 0x1000, 8);  // no WR begun
  EXPECT_EQ(ibv_wr_complete(x), EINVAL);

  ibv_wr_start(x);
  ibv_wr_send_inv(x, 0x55);  // kbv has no send-with-invalidate WQE
  ibv_wr_set_sge(x, 1, 0x1000, 8);
  EXPECT_EQ(ibv_wr_complete(x), EOPNOTSUPP);

  ibv_wr_start(x);
  x->wr_flags = IBV_SEND_IP_CSUM;
  ibv_wr_send(x);
  EXPECT_EQ(ibv_wr_complete(x), EINVAL);
  x->wr_flags = 0;

  // An aborted batch leaves nothing behind; an empty batch completes.
  ibv_wr_start(x);
  ibv_wr_send(x);
  ibv_wr_set_inline_data(x, big, sizeof big);
  ibv_wr_abort(x);
  ibv_wr_start(x);
  EXPECT_EQ(ibv_wr_complete(x), 0);
  release_qp_ex(qp);
}

}  // namespace
}  // namespace kbv::ibverbs
