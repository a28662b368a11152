// SPDX-License-Identifier: BSD-3-Clause
//
// End to end: kbv's libibverbs data path (src/ibverbs/fast_*.cpp) between two
// model HCAs in one process. The kbv objects are made through kbv.h and
// wrapped as src/ibverbs/objects.hpp says (what the control verbs do); the
// test then calls verbs.h's own inline ibv_post_send / ibv_post_recv /
// ibv_post_srq_recv / ibv_poll_cq (through ctx->ops), the ibv_wr_* API and
// the ibv_cq_ex poll API, as an unmodified program would. Checks: chunking
// of lists longer than a chunk, bad_wr on the right WR with the right errno
// (as rdma-core's mlx5 answers), immediate byte order on the wire
// and in ibv_wc, completion fields, data byte for byte.
#include <arpa/inet.h>
#include <errno.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <kbv/kbv.h>

#include <cstring>
#include <memory>
#include <vector>

#include "ibverbs/objects.hpp"
#include "verbs_fixture.hpp"

namespace kbv::test {
namespace {

namespace ib = kbv::ibverbs;

constexpr size_t kBuf = 1 << 20;

struct Side {
  SimDev* d = nullptr;
  ib::Context ctx{};
  ib::Pd pd{};
  ib::Cq cq{};
  ib::Qp qp{};
  ib::Srq srq{};
  ib::Mr mr{};
  uint32_t lkey = 0, rkey = 0;
  std::vector<uint8_t> buf;
  uint64_t addr(size_t off) const { return reinterpret_cast<uint64_t>(buf.data()) + off; }
  ibv_sge sge(size_t off, uint32_t len) const { return {addr(off), len, lkey}; }
  ibv_qp* iqp() { return &qp.qpx.qp_base; }
  ibv_cq* icq() { return ibv_cq_ex_to_cq(&cq.cqx); }
};

void fill(uint8_t* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(seed * 31 + i * 7 + (i >> 8));
}

struct Caps {
  uint32_t send_wr = 64, recv_wr = 64, send_sge = 2, recv_sge = 2, inl = 64;
};

class IbverbsFast : public VerbsE2e {
 protected:
  void setup_side(Side& s, SimDev& d, uint64_t cq_wc_flags = IBV_WC_STANDARD_FLAGS) {
    s.d = &d;
    s.ctx.dev = d.dev;
    ib::mark_extended(s.ctx);
    ib::fill_context_ops(s.ctx);
    ibv_context* ictx = &s.ctx.vctx.context;
    s.pd.pd.context = ictx;
    s.pd.handle = alloc_pd(d);
    s.cq.cqx.context = ictx;
    s.cq.cqx.cqe = 512;
    s.cq.handle = make_cq(d, 512);
    ASSERT_EQ(ib::init_cq_ex_ops(s.cq, cq_wc_flags), 0);
    s.buf.assign(kBuf, 0);
    const uint32_t acc = KBV_ACCESS_LOCAL_WRITE | KBV_ACCESS_REMOTE_WRITE | KBV_ACCESS_REMOTE_READ |
                         KBV_ACCESS_REMOTE_ATOMIC;
    ASSERT_EQ(
        kbv_mr_reg(s.pd.handle, s.buf.data(), s.buf.size(), acc, KBV_EQ_NONE, 0, &s.mr.handle),
        KBV_SUCCESS);
    ASSERT_EQ(kbv_mr_get_keys(s.mr.handle, &s.lkey, &s.rkey), KBV_SUCCESS);
  }

  void make_srq(Side& s, uint32_t max_wr) {
    kbv_srq_attr_t sa{};
    sa.max_wr = max_wr;
    sa.max_sge = 1;
    ASSERT_EQ(kbv_srq_create(s.pd.handle, &sa, KBV_EQ_NONE, 0, &s.srq.handle), KBV_SUCCESS);
    s.srq.srq.context = &s.ctx.vctx.context;
    s.srq.srq.pd = &s.pd.pd;
  }

  // The QP as ibv_create_qp(_ex) leaves it: ibv_qp fields, caps, handle,
  // and for send_ops != 0 the ibv_qp_ex functions.
  void make_ib_qp(Side& s, uint32_t type, Caps c, uint64_t send_ops, bool with_srq) {
    kbv_qp_init_attr_t a{};
    a.qp_type = type;
    a.send_cq = s.cq.handle;
    a.recv_cq = s.cq.handle;
    a.srq = with_srq ? s.srq.handle : 0;
    a.cap = {c.send_wr, c.recv_wr, c.send_sge, c.recv_sge, c.inl};
    ASSERT_EQ(kbv_qp_create(s.pd.handle, &a, KBV_EQ_NONE, 0, &s.qp.handle), KBV_SUCCESS);
    ibv_qp& q = s.qp.qpx.qp_base;
    q.context = &s.ctx.vctx.context;
    q.pd = &s.pd.pd;
    q.send_cq = s.icq();
    q.recv_cq = s.icq();
    q.srq = with_srq ? &s.srq.srq : nullptr;
    q.qp_type = static_cast<ibv_qp_type>(type);
    ASSERT_EQ(kbv_qp_get_num(s.qp.handle, &q.qp_num), KBV_SUCCESS);
    s.qp.max_send_wr = c.send_wr;
    s.qp.max_send_sge = c.send_sge;
    s.qp.max_inline_data = c.inl;
    s.qp.qkey = 0x11111111;  // connect() sets this Q_Key
    if (send_ops) {
      ASSERT_EQ(ib::init_qp_ex_ops(s.qp, send_ops), 0);
    }
  }

  void open_pair(uint32_t type, Caps c = {}, uint64_t send_ops = 0, bool srq_b = false) {
    SimDev& da = open_dev();
    SimDev& db = open_dev();
    setup_side(a, da);
    setup_side(b, db);
    if (srq_b) make_srq(b, 64);
    make_ib_qp(a, type, c, send_ops, false);
    make_ib_qp(b, type, c, send_ops, srq_b);
    ASSERT_FALSE(HasFailure());
    ASSERT_EQ(connect(a.qp.handle, type, *b.d, b.qp.qpx.qp_base.qp_num), KBV_SUCCESS);
    ASSERT_EQ(connect(b.qp.handle, type, *a.d, a.qp.qpx.qp_base.qp_num, 200, 100), KBV_SUCCESS);
  }

  // ibv_poll_cq (verbs.h inline, ctx->ops.poll_cq) until n completions.
  static std::vector<ibv_wc> poll_n(ibv_cq* cq, size_t n, int batch = 16,
                                    std::chrono::milliseconds limit = 10000ms) {
    std::vector<ibv_wc> out;
    std::vector<ibv_wc> wc(static_cast<size_t>(batch));
    const auto end = std::chrono::steady_clock::now() + limit;
    while (out.size() < n && std::chrono::steady_clock::now() < end) {
      int k = ibv_poll_cq(cq, batch, wc.data());
      EXPECT_GE(k, 0);
      if (k > 0) {
        out.insert(out.end(), wc.begin(), wc.begin() + k);
        continue;
      }
      std::this_thread::sleep_for(20us);
    }
    return out;
  }

  void close_side(Side& s) {
    if (s.qp.handle) {
      EXPECT_EQ(kbv_qp_destroy(s.qp.handle, KBV_EQ_NONE, 0), KBV_SUCCESS);
    }
    ib::release_qp_ex(s.qp);
    if (s.srq.handle) {
      EXPECT_EQ(kbv_srq_destroy(s.srq.handle, KBV_EQ_NONE, 0), KBV_SUCCESS);
    }
    if (s.cq.handle) {
      EXPECT_EQ(kbv_cq_destroy(s.cq.handle, KBV_EQ_NONE, 0), KBV_SUCCESS);
    }
    if (s.mr.handle) {
      EXPECT_EQ(kbv_mr_dereg(s.mr.handle, KBV_EQ_NONE, 0), KBV_SUCCESS);
    }
    if (s.pd.handle) {
      EXPECT_EQ(kbv_pd_dealloc(s.pd.handle, KBV_EQ_NONE, 0), KBV_SUCCESS);
    }
    s.qp.handle = s.srq.handle = s.cq.handle = s.mr.handle = s.pd.handle = 0;
  }
  void TearDown() override {
    close_side(a);
    close_side(b);
    VerbsE2e::TearDown();
  }
  Side a, b;
};

// A linked list of n WRs over wrs[] (wrs[i].next = &wrs[i+1]).
template <class Wr>
void link(std::vector<Wr>& wrs) {
  for (size_t i = 0; i + 1 < wrs.size(); ++i) wrs[i].next = &wrs[i + 1];
  wrs.back().next = nullptr;
}

TEST_F(IbverbsFast, WriteWithImmCarriesTheImmediateInNetworkOrder) {
  open_pair(KBV_QPT_RC);
  ASSERT_FALSE(HasFailure());
  fill(a.buf.data(), 3000, 1);
  ibv_sge rs = b.sge(0, 64);
  ibv_recv_wr rw{};
  rw.wr_id = 77;
  rw.sg_list = &rs;
  rw.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_recv(b.iqp(), &rw, &rbad), 0);

  ibv_sge s = a.sge(0, 3000);
  ibv_send_wr w{};
  w.wr_id = 5;
  w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  w.send_flags = IBV_SEND_SIGNALED;
  w.sg_list = &s;
  w.num_sge = 1;
  w.imm_data = htonl(0xdeadbeef);
  w.wr.rdma.remote_addr = b.addr(8192);
  w.wr.rdma.rkey = b.rkey;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a.iqp(), &w, &bad), 0);

  auto sc = poll_n(a.icq(), 1);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, IBV_WC_SUCCESS) << static_cast<int>(sc[0].status);
  EXPECT_EQ(sc[0].wr_id, 5u);
  EXPECT_EQ(sc[0].opcode, IBV_WC_RDMA_WRITE);
  // rdma-core mlx5 handle_good_req: the requester's completion of a
  // *_WITH_IMM says so too.
  EXPECT_TRUE(sc[0].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(sc[0].qp_num, a.qp.qpx.qp_base.qp_num);

  auto rc = poll_n(b.icq(), 1);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, IBV_WC_SUCCESS) << static_cast<int>(rc[0].status);
  EXPECT_EQ(rc[0].wr_id, 77u);
  EXPECT_EQ(rc[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_EQ(rc[0].byte_len, 3000u);
  EXPECT_TRUE(rc[0].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(ntohl(rc[0].imm_data), 0xdeadbeefu);
  EXPECT_EQ(rc[0].qp_num, b.qp.qpx.qp_base.qp_num);
  EXPECT_EQ(std::memcmp(b.buf.data() + 8192, a.buf.data(), 3000), 0);
}

TEST_F(IbverbsFast, ListsLongerThanAChunkPostInOrder) {
  open_pair(KBV_QPT_RC);
  ASSERT_FALSE(HasFailure());
  constexpr int kN = 40;  // 16 + 16 + 8
  fill(a.buf.data(), kN * 64, 2);
  std::vector<ibv_sge> sg(kN);
  std::vector<ibv_send_wr> w(kN);
  for (int i = 0; i < kN; ++i) {
    sg[i] = a.sge(i * 64, 64);
    w[i] = ibv_send_wr{};
    w[i].wr_id = 1000 + i;
    w[i].opcode = IBV_WR_RDMA_WRITE;
    w[i].send_flags = IBV_SEND_SIGNALED;
    w[i].sg_list = &sg[i];
    w[i].num_sge = 1;
    w[i].wr.rdma.remote_addr = b.addr(i * 64);
    w[i].wr.rdma.rkey = b.rkey;
  }
  link(w);
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a.iqp(), w.data(), &bad), 0);
  EXPECT_EQ(bad, nullptr);
  auto wc = poll_n(a.icq(), kN, 64);  // one ibv_poll_cq may return more than a chunk
  ASSERT_EQ(wc.size(), static_cast<size_t>(kN));
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(wc[i].wr_id, 1000u + i);
    EXPECT_EQ(wc[i].status, IBV_WC_SUCCESS);
  }
  EXPECT_EQ(std::memcmp(b.buf.data(), a.buf.data(), kN * 64), 0);
}

// A WR the conversion refuses (opcode kbv lacks) in the third chunk: the 37
// before it are posted, bad_wr is it, EINVAL; the ones after are not posted.
TEST_F(IbverbsFast, BadWrIsTheFirstRefusedWr) {
  open_pair(KBV_QPT_RC);
  ASSERT_FALSE(HasFailure());
  constexpr int kN = 40, kBad = 37;
  std::vector<ibv_sge> sg(kN);
  std::vector<ibv_send_wr> w(kN);
  for (int i = 0; i < kN; ++i) {
    sg[i] = a.sge(i * 8, 8);
    w[i] = ibv_send_wr{};
    w[i].wr_id = i;
    w[i].opcode = IBV_WR_RDMA_WRITE;
    w[i].send_flags = IBV_SEND_SIGNALED;
    w[i].sg_list = &sg[i];
    w[i].num_sge = 1;
    w[i].wr.rdma.remote_addr = b.addr(i * 8);
    w[i].wr.rdma.rkey = b.rkey;
  }
  w[kBad].opcode = IBV_WR_SEND_WITH_INV;
  link(w);
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a.iqp(), w.data(), &bad), EINVAL);
  EXPECT_EQ(bad, &w[kBad]);
  auto wc = poll_n(a.icq(), kBad);
  ASSERT_EQ(wc.size(), static_cast<size_t>(kBad));
  EXPECT_EQ(wc.back().wr_id, kBad - 1u);

  // A WR kbv itself refuses (more SGEs than max_send_sge 2) in the second
  // chunk: the WRs of that chunk before it were posted; ENOMEM, as mlx5's
  // _mlx5_post_send answers "max gs exceeded".
  constexpr int kBad2 = 20;
  w[kBad].opcode = IBV_WR_RDMA_WRITE;
  ibv_sge three[3] = {a.sge(0, 8), a.sge(8, 8), a.sge(16, 8)};
  w[kBad2].sg_list = three;
  w[kBad2].num_sge = 3;
  bad = nullptr;
  EXPECT_EQ(ibv_post_send(a.iqp(), w.data(), &bad), ENOMEM);
  EXPECT_EQ(bad, &w[kBad2]);
  wc = poll_n(a.icq(), kBad2);
  ASSERT_EQ(wc.size(), static_cast<size_t>(kBad2));
  EXPECT_EQ(wc.back().wr_id, kBad2 - 1u);
  EXPECT_EQ(poll_n(a.icq(), 1, 16, 50ms).size(), 0u);  // nothing after bad_wr went out
}

// More WRs than the send queue holds: ENOMEM, bad_wr = the first that did not
// fit, the ones before it complete.
TEST_F(IbverbsFast, FullSendQueueIsEnomemAtTheFirstWrThatDoesNotFit) {
  Caps c;
  c.send_wr = 32;
  open_pair(KBV_QPT_RC, c);
  ASSERT_FALSE(HasFailure());
  constexpr int kN = 200;  // above any rounding of 32
  std::vector<ibv_sge> sg(kN);
  std::vector<ibv_send_wr> w(kN);
  for (int i = 0; i < kN; ++i) {
    sg[i] = a.sge(i * 8, 8);
    w[i] = ibv_send_wr{};
    w[i].wr_id = i;
    w[i].opcode = IBV_WR_RDMA_WRITE;
    w[i].send_flags = IBV_SEND_SIGNALED;
    w[i].sg_list = &sg[i];
    w[i].num_sge = 1;
    w[i].wr.rdma.remote_addr = b.addr(i * 8);
    w[i].wr.rdma.rkey = b.rkey;
  }
  link(w);
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a.iqp(), w.data(), &bad), ENOMEM);
  ASSERT_NE(bad, nullptr);
  const ptrdiff_t posted = bad - w.data();
  EXPECT_GE(posted, 32);
  EXPECT_LT(posted, kN);
  auto wc = poll_n(a.icq(), static_cast<size_t>(posted), 64);
  ASSERT_EQ(wc.size(), static_cast<size_t>(posted));
  for (ptrdiff_t i = 0; i < posted; ++i) EXPECT_EQ(wc[i].wr_id, static_cast<uint64_t>(i));
  // The rest posts once there is room again.
  bad = nullptr;
  ibv_send_wr& rest = w[posted];
  w[posted + 8].next = nullptr;
  EXPECT_EQ(ibv_post_send(a.iqp(), &rest, &bad), 0);
  EXPECT_EQ(poll_n(a.icq(), 9).size(), 9u);
}

TEST_F(IbverbsFast, RecvListsChunkAndSendImmArrivesInOrder) {
  open_pair(KBV_QPT_RC);
  ASSERT_FALSE(HasFailure());
  constexpr int kN = 20;
  std::vector<ibv_sge> rs(kN);
  std::vector<ibv_recv_wr> rw(kN);
  for (int i = 0; i < kN; ++i) {
    rs[i] = b.sge(i * 256, 256);
    rw[i] = ibv_recv_wr{};
    rw[i].wr_id = 500 + i;
    rw[i].sg_list = &rs[i];
    rw[i].num_sge = 1;
  }
  link(rw);
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_recv(b.iqp(), rw.data(), &rbad), 0);

  fill(a.buf.data(), kN * 100, 3);
  std::vector<ibv_sge> sg(kN);
  std::vector<ibv_send_wr> w(kN);
  for (int i = 0; i < kN; ++i) {
    sg[i] = a.sge(i * 100, 100);
    w[i] = ibv_send_wr{};
    w[i].wr_id = i;
    w[i].opcode = IBV_WR_SEND_WITH_IMM;
    w[i].imm_data = htonl(0x01020300u + i);
    w[i].sg_list = &sg[i];
    w[i].num_sge = 1;
  }
  w[kN - 1].send_flags = IBV_SEND_SIGNALED;  // unsignaled ones complete with it
  link(w);
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a.iqp(), w.data(), &bad), 0);
  auto sc = poll_n(a.icq(), 1);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].wr_id, kN - 1u);
  EXPECT_EQ(sc[0].opcode, IBV_WC_SEND);
  auto rc = poll_n(b.icq(), kN);
  ASSERT_EQ(rc.size(), static_cast<size_t>(kN));
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(rc[i].wr_id, 500u + i);
    EXPECT_EQ(rc[i].opcode, IBV_WC_RECV);
    EXPECT_EQ(rc[i].byte_len, 100u);
    EXPECT_EQ(rc[i].imm_data, htonl(0x01020300u + i));
    EXPECT_EQ(std::memcmp(b.buf.data() + i * 256, a.buf.data() + i * 100, 100), 0) << i;
  }

  // A receive WR with a NULL list in the second chunk.
  rw[18].sg_list = nullptr;
  rbad = nullptr;
  EXPECT_EQ(ibv_post_recv(b.iqp(), rw.data(), &rbad), EINVAL);
  EXPECT_EQ(rbad, &rw[18]);
}

TEST_F(IbverbsFast, SrqReceivesThroughPostSrqRecv) {
  open_pair(KBV_QPT_RC, Caps{}, 0, true);
  ASSERT_FALSE(HasFailure());
  constexpr int kN = 18;
  std::vector<ibv_sge> rs(kN);
  std::vector<ibv_recv_wr> rw(kN);
  for (int i = 0; i < kN; ++i) {
    rs[i] = b.sge(i * 128, 128);
    rw[i] = ibv_recv_wr{};
    rw[i].wr_id = 900 + i;
    rw[i].sg_list = &rs[i];
    rw[i].num_sge = 1;
  }
  link(rw);
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_srq_recv(&b.srq.srq, rw.data(), &rbad), 0);
  // A QP with an SRQ takes no receives of its own.
  EXPECT_EQ(ibv_post_recv(b.iqp(), rw.data(), &rbad), EINVAL);
  EXPECT_EQ(rbad, &rw[0]);

  fill(a.buf.data(), 64, 4);
  ibv_sge s = a.sge(0, 64);
  ibv_send_wr w{};
  w.opcode = IBV_WR_SEND;
  w.send_flags = IBV_SEND_SIGNALED;
  w.sg_list = &s;
  w.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a.iqp(), &w, &bad), 0);
  auto rc = poll_n(b.icq(), 1);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].wr_id, 900u);
  EXPECT_EQ(rc[0].byte_len, 64u);
  EXPECT_EQ(std::memcmp(b.buf.data(), a.buf.data(), 64), 0);
}

// The ibv_wr_* API on RC: write, send with immediate (inline), read and both
// atomics in one batch; data and completions checked.
TEST_F(IbverbsFast, WrApiBatchOnRc) {
  const uint64_t ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND_WITH_IMM |
                       IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
  open_pair(KBV_QPT_RC, Caps{}, ops);
  ASSERT_FALSE(HasFailure());
  ibv_qp_ex* x = ibv_qp_to_qp_ex(a.iqp());
  ASSERT_EQ(x, &a.qp.qpx);

  ibv_sge rs = b.sge(4096, 64);
  ibv_recv_wr rw{};
  rw.wr_id = 3;
  rw.sg_list = &rs;
  rw.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_recv(b.iqp(), &rw, &rbad), 0);

  fill(a.buf.data(), 1000, 5);
  fill(b.buf.data() + 20000, 500, 6);
  uint64_t* counter = reinterpret_cast<uint64_t*>(b.buf.data() + 30000);
  *counter = 40;
  char msg[32] = "inline, reused after the call";

  ibv_wr_start(x);
  x->wr_id = 1;
  x->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(x, b.rkey, b.addr(0));
  ibv_wr_set_sge(x, a.lkey, a.addr(0), 1000);
  x->wr_id = 2;
  ibv_wr_send_imm(x, htonl(0xcafe0001));
  ibv_wr_set_inline_data(x, msg, sizeof msg);
  std::memset(msg, 0, sizeof msg);  // copied when set (rdma-core semantics)
  x->wr_id = 3;
  ibv_wr_rdma_read(x, b.rkey, b.addr(20000));
  ibv_sge two[2] = {a.sge(50000, 200), a.sge(50200, 300)};
  ibv_wr_set_sge_list(x, 2, two);
  x->wr_id = 4;
  ibv_wr_atomic_fetch_add(x, b.rkey, b.addr(30000), 2);
  ibv_wr_set_sge(x, a.lkey, a.addr(60000), 8);
  x->wr_id = 5;
  ibv_wr_atomic_cmp_swp(x, b.rkey, b.addr(30000), 42, 99);
  ibv_wr_set_sge(x, a.lkey, a.addr(60008), 8);
  ASSERT_EQ(ibv_wr_complete(x), 0);

  auto sc = poll_n(a.icq(), 5);
  ASSERT_EQ(sc.size(), 5u);
  const ibv_wc_opcode want[5] = {IBV_WC_RDMA_WRITE, IBV_WC_SEND, IBV_WC_RDMA_READ, IBV_WC_FETCH_ADD,
                                 IBV_WC_COMP_SWAP};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(sc[i].status, IBV_WC_SUCCESS) << i << " " << static_cast<int>(sc[i].status);
    EXPECT_EQ(sc[i].wr_id, i + 1u);
    EXPECT_EQ(sc[i].opcode, want[i]) << i;
  }
  EXPECT_EQ(sc[2].byte_len, 500u);
  EXPECT_EQ(std::memcmp(b.buf.data(), a.buf.data(), 1000), 0);
  EXPECT_EQ(std::memcmp(a.buf.data() + 50000, b.buf.data() + 20000, 500), 0);
  uint64_t fa_old = 0, cs_old = 0;
  std::memcpy(&fa_old, a.buf.data() + 60000, 8);
  std::memcpy(&cs_old, a.buf.data() + 60008, 8);
  EXPECT_EQ(fa_old, 40u);
  EXPECT_EQ(cs_old, 42u);
  EXPECT_EQ(*counter, 99u);

  auto rc = poll_n(b.icq(), 1);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].imm_data, htonl(0xcafe0001));
  EXPECT_EQ(rc[0].byte_len, sizeof msg);
  EXPECT_STREQ(reinterpret_cast<char*>(b.buf.data() + 4096), "inline, reused after the call");

  // Abort drops the batch: nothing is sent.
  ibv_wr_start(x);
  x->wr_id = 9;
  ibv_wr_rdma_write(x, b.rkey, b.addr(0));
  ibv_wr_set_sge(x, a.lkey, a.addr(0), 8);
  ibv_wr_abort(x);
  EXPECT_EQ(poll_n(a.icq(), 1, 16, 50ms).size(), 0u);
}

// ibv_wr_set_ud_addr on UD: the AH, QPN and the QP's own Q_Key (bit 31).
TEST_F(IbverbsFast, WrApiOnUdWithAnAddressHandle) {
  open_pair(KBV_QPT_UD, Caps{}, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
  ASSERT_FALSE(HasFailure());
  kbv_ah_attr_t aa{};
  std::memcpy(aa.dgid, b.d->port.gids[0].gid, 16);
  aa.dmac = b.d->port.gids[0].mac;
  ib::Ah ah{};
  ASSERT_EQ(kbv_ah_create(a.pd.handle, &aa, KBV_EQ_NONE, 0, &ah.handle), KBV_SUCCESS);
  ah.ah.context = &a.ctx.vctx.context;
  ah.ah.pd = &a.pd.pd;

  ibv_sge rs = b.sge(0, 40 + 256);
  ibv_recv_wr rw{};
  rw.wr_id = 11;
  rw.sg_list = &rs;
  rw.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_recv(b.iqp(), &rw, &rbad), 0);

  fill(a.buf.data(), 200, 7);
  ibv_qp_ex* x = ibv_qp_to_qp_ex(a.iqp());
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->wr_rdma_write, nullptr);  // not on UD (mlx5's table)
  ibv_wr_start(x);
  x->wr_id = 12;
  x->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_send_imm(x, htonl(0x00abcdef));
  ibv_wr_set_ud_addr(x, &ah.ah, b.qp.qpx.qp_base.qp_num, 0x80000000u);
  ibv_wr_set_sge(x, a.lkey, a.addr(0), 200);
  ASSERT_EQ(ibv_wr_complete(x), 0);

  auto sc = poll_n(a.icq(), 1);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, IBV_WC_SUCCESS) << static_cast<int>(sc[0].status);
  auto rc = poll_n(b.icq(), 1);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, IBV_WC_SUCCESS) << static_cast<int>(rc[0].status);
  EXPECT_EQ(rc[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(rc[0].byte_len, 40u + 200u);
  EXPECT_EQ(rc[0].src_qp, a.qp.qpx.qp_base.qp_num);
  EXPECT_TRUE(rc[0].wc_flags & IBV_WC_GRH);
  EXPECT_TRUE(rc[0].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(rc[0].imm_data, htonl(0x00abcdef));
  EXPECT_EQ(rc[0].sl, 2);  // RoCE v2 over IPv4: mlx5 reports the l3 type there
  EXPECT_EQ(std::memcmp(b.buf.data() + 40, a.buf.data(), 200), 0);
  EXPECT_EQ(kbv_ah_destroy(ah.handle, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

// ibv_cq_ex: ENOENT on an empty CQ; the readers give what ibv_wc gives.
TEST_F(IbverbsFast, CqExPollsOneAtATime) {
  open_pair(KBV_QPT_RC);
  ASSERT_FALSE(HasFailure());
  ibv_cq_ex* cx = &b.cq.cqx;
  ibv_poll_cq_attr pa{};
  EXPECT_EQ(ibv_start_poll(cx, &pa), ENOENT);
  pa.comp_mask = 1;
  EXPECT_EQ(ibv_start_poll(cx, &pa), EINVAL);
  pa.comp_mask = 0;

  std::vector<ibv_sge> rs(3);
  std::vector<ibv_recv_wr> rw(3);
  for (int i = 0; i < 3; ++i) {
    rs[i] = b.sge(i * 128, 128);
    rw[i] = ibv_recv_wr{};
    rw[i].wr_id = 70 + i;
    rw[i].sg_list = &rs[i];
    rw[i].num_sge = 1;
  }
  link(rw);
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_recv(b.iqp(), rw.data(), &rbad), 0);
  std::vector<ibv_sge> sg(3);
  std::vector<ibv_send_wr> w(3);
  for (int i = 0; i < 3; ++i) {
    sg[i] = a.sge(0, 10u + i);
    w[i] = ibv_send_wr{};
    w[i].opcode = IBV_WR_SEND_WITH_IMM;
    w[i].imm_data = htonl(0x100u + i);
    w[i].sg_list = &sg[i];
    w[i].num_sge = 1;
  }
  w[2].send_flags = IBV_SEND_SIGNALED;
  link(w);
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a.iqp(), w.data(), &bad), 0);

  const auto end = std::chrono::steady_clock::now() + 10s;
  int rc = ENOENT;
  while ((rc = ibv_start_poll(cx, &pa)) == ENOENT && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(20us);
  ASSERT_EQ(rc, 0);
  int got = 0;
  do {
    EXPECT_EQ(cx->status, IBV_WC_SUCCESS);
    EXPECT_EQ(cx->wr_id, 70u + got);
    EXPECT_EQ(ibv_wc_read_opcode(cx), IBV_WC_RECV);
    EXPECT_EQ(ibv_wc_read_byte_len(cx), 10u + got);
    EXPECT_EQ(ibv_wc_read_imm_data(cx), htonl(0x100u + got));
    EXPECT_EQ(ibv_wc_read_wc_flags(cx), static_cast<unsigned>(IBV_WC_WITH_IMM));
    EXPECT_EQ(ibv_wc_read_qp_num(cx), b.qp.qpx.qp_base.qp_num);
    EXPECT_EQ(ibv_wc_read_slid(cx), 0u);
    EXPECT_EQ(ibv_wc_read_dlid_path_bits(cx), 0);
    EXPECT_EQ(ibv_wc_read_vendor_err(cx), 0u);
    ++got;
    if (got == 3) break;
    while ((rc = ibv_next_poll(cx)) == ENOENT && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(20us);
  } while (rc == 0);
  ibv_end_poll(cx);
  EXPECT_EQ(got, 3);
  EXPECT_EQ(ibv_start_poll(cx, &pa), ENOENT);
}

// Error completions: a WRITE with a wrong rkey fails with the status and
// vendor error of the CQE; the next WR flushes.
TEST_F(IbverbsFast, ErrorCompletionsMapToIbvStatuses) {
  open_pair(KBV_QPT_RC);
  ASSERT_FALSE(HasFailure());
  std::vector<ibv_sge> sg(2, a.sge(0, 8));
  std::vector<ibv_send_wr> w(2);
  for (int i = 0; i < 2; ++i) {
    w[i] = ibv_send_wr{};
    w[i].wr_id = 60 + i;
    w[i].opcode = IBV_WR_RDMA_WRITE;
    w[i].send_flags = IBV_SEND_SIGNALED;
    w[i].sg_list = &sg[i];
    w[i].num_sge = 1;
    w[i].wr.rdma.remote_addr = b.addr(0);
    w[i].wr.rdma.rkey = b.rkey ^ 0x5500;
  }
  link(w);
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a.iqp(), w.data(), &bad), 0);
  auto wc = poll_n(a.icq(), 2);
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].wr_id, 60u);
  EXPECT_EQ(wc[0].status, IBV_WC_REM_ACCESS_ERR) << static_cast<int>(wc[0].status);
  EXPECT_EQ(wc[1].wr_id, 61u);
  EXPECT_EQ(wc[1].status, IBV_WC_WR_FLUSH_ERR) << static_cast<int>(wc[1].status);
}

// The errnos rdma-core's mlx5 gives for a QP not ready (_mlx5_post_send:
// ENOMEM before RTS; mlx5_post_recv: EINVAL in RESET;
// mlx5_send_wr_complete_error: EINVAL) and for a receive with too many SGEs
// (EINVAL); bad_wr is the first WR.
TEST_F(IbverbsFast, NotReadyQpsAnswerAsMlx5) {
  SimDev& da = open_dev();
  setup_side(a, da);
  make_ib_qp(a, KBV_QPT_RC, Caps{}, IBV_QP_EX_WITH_SEND, false);
  ASSERT_FALSE(HasFailure());
  ibv_sge s = a.sge(0, 8);
  ibv_send_wr w{};
  w.opcode = IBV_WR_SEND;
  w.sg_list = &s;
  w.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a.iqp(), &w, &bad), ENOMEM);  // RESET
  EXPECT_EQ(bad, &w);
  ibv_recv_wr r{};
  r.sg_list = &s;
  r.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  EXPECT_EQ(ibv_post_recv(a.iqp(), &r, &rbad), EINVAL);  // RESET
  EXPECT_EQ(rbad, &r);
  ibv_qp_ex* x = ibv_qp_to_qp_ex(a.iqp());
  ASSERT_NE(x, nullptr);
  ibv_wr_start(x);
  ibv_wr_send(x);
  ibv_wr_set_sge(x, a.lkey, a.addr(0), 8);
  EXPECT_EQ(ibv_wr_complete(x), EINVAL);

  kbv_qp_attr_t at{};
  at.qp_state = KBV_QPS_INIT;
  at.port_num = 1;
  ASSERT_EQ(kbv_qp_modify(a.qp.handle, &at,
                          KBV_QP_STATE | KBV_QP_PORT | KBV_QP_PKEY_INDEX | KBV_QP_ACCESS_FLAGS,
                          KBV_EQ_NONE, 0),
            KBV_SUCCESS);
  EXPECT_EQ(ibv_post_send(a.iqp(), &w, &bad), ENOMEM);  // INIT
  ibv_sge three[3] = {a.sge(0, 8), a.sge(8, 8), a.sge(16, 8)};
  r.sg_list = three;
  r.num_sge = 3;  // max_recv_sge 2
  EXPECT_EQ(ibv_post_recv(a.iqp(), &r, &rbad), EINVAL);
  r.sg_list = &s;
  r.num_sge = 1;
  EXPECT_EQ(ibv_post_recv(a.iqp(), &r, &rbad), 0);  // INIT takes receives
}

// ibv_wr_* on UD: a WR without ibv_wr_set_ud_addr fails the whole batch
// (nothing is sent, not even the WRs before it).
TEST_F(IbverbsFast, WrApiOnUdRefusesAWrWithoutAddressWhole) {
  open_pair(KBV_QPT_UD, Caps{}, IBV_QP_EX_WITH_SEND);
  ASSERT_FALSE(HasFailure());
  kbv_ah_attr_t aa{};
  std::memcpy(aa.dgid, b.d->port.gids[0].gid, 16);
  aa.dmac = b.d->port.gids[0].mac;
  ib::Ah ah{};
  ASSERT_EQ(kbv_ah_create(a.pd.handle, &aa, KBV_EQ_NONE, 0, &ah.handle), KBV_SUCCESS);
  ibv_qp_ex* x = ibv_qp_to_qp_ex(a.iqp());
  ASSERT_NE(x, nullptr);
  ibv_wr_start(x);
  x->wr_id = 1;
  x->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_send(x);
  ibv_wr_set_ud_addr(x, &ah.ah, b.qp.qpx.qp_base.qp_num, 0x11111111);
  ibv_wr_set_sge(x, a.lkey, a.addr(0), 16);
  x->wr_id = 2;
  ibv_wr_send(x);  // no address
  ibv_wr_set_sge(x, a.lkey, a.addr(0), 16);
  EXPECT_EQ(ibv_wr_complete(x), EINVAL);
  EXPECT_EQ(poll_n(a.icq(), 1, 16, 50ms).size(), 0u);
  EXPECT_EQ(kbv_ah_destroy(ah.handle, KBV_EQ_NONE, 0), KBV_SUCCESS);
}

}  // namespace
}  // namespace kbv::test
