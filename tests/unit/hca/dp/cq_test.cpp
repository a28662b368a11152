// SPDX-License-Identifier: BSD-3-Clause
// CqPoller (hca/dp/cq.hpp) with hand-built CQEs (offsets from rdma-core
// mlx5dv.h struct mlx5_cqe64 / mlx5_err_cqe; opcodes MLX5_CQE_*, syndromes
// MLX5_CQE_SYNDROME_*): every requester and responder opcode, every error
// syndrome with the vendor syndrome kept, the owner-bit rule across ring
// laps and the 24-bit consumer index wrap, the consumer index record once
// per poll, and CQEs the poller cannot match.
#include <infiniband/mlx5dv.h>

#include <cstddef>

#include "dp_fixture.hpp"

namespace kbv::hca::test {
namespace {

namespace st = prm::qpc_st;

struct CqeSpec {
  uint8_t opcode = MLX5_CQE_REQ;
  uint32_t qpn = DpFixture::kQpn;
  uint8_t s_opcode = 0;  // sop_drop_qpn >> 24 (requester: the WQE's opcode)
  uint16_t wqe_counter = 0;
  uint32_t byte_cnt = 0;
  uint32_t imm = 0;
  uint32_t flags_rqpn = 0;
  uint8_t syndrome = 0, vendor = 0;
  uint64_t timestamp = 0;
};

class DpCqTest : public DpFixture {
 protected:
  static constexpr uint32_t kNcqe = 4;

  void SetUp() override {
    cq_ring = alloc(kNcqe * 64);
    for (uint32_t i = 0; i < kNcqe; ++i) cq_ring.va[i * 64 + 63] = std::byte{0xF0};
    cq_dbrec = reinterpret_cast<volatile uint32_t*>(alloc(64).va);
  }
  CqRing ring() { return CqRing{cq_ring.va, kNcqe, cq_dbrec, 0x88}; }
  // Writes a CQE for consumer index `ci` with the owner bit of its lap.
  void put(uint32_t ci, const CqeSpec& s) {
    std::byte* p = cq_ring.va + (ci % kNcqe) * 64;
    std::memset(p, 0, 64);
    auto w32 = [&](size_t off, uint32_t v) {
      v = htobe32(v);
      std::memcpy(p + off, &v, 4);
    };
    w32(offsetof(mlx5_cqe64, flags_rqpn), s.flags_rqpn);
    w32(offsetof(mlx5_cqe64, imm_inval_pkey), s.imm);
    w32(offsetof(mlx5_cqe64, byte_cnt), s.byte_cnt);
    const uint64_t ts = htobe64(s.timestamp);
    std::memcpy(p + offsetof(mlx5_cqe64, timestamp), &ts, 8);
    w32(offsetof(mlx5_cqe64, sop_drop_qpn), uint32_t{s.s_opcode} << 24 | s.qpn);
    const uint16_t wc = htobe16(s.wqe_counter);
    std::memcpy(p + offsetof(mlx5_cqe64, wqe_counter), &wc, 2);
    // Error CQEs carry their syndromes where good ones end the timestamp.
    if (s.opcode == MLX5_CQE_REQ_ERR || s.opcode == MLX5_CQE_RESP_ERR) {
      p[offsetof(mlx5_err_cqe, syndrome)] = std::byte{s.syndrome};
      p[offsetof(mlx5_err_cqe, vendor_err_synd)] = std::byte{s.vendor};
    }
    p[offsetof(mlx5_cqe64, op_own)] =
        static_cast<std::byte>(s.opcode << 4 | ((ci & kNcqe) ? 1 : 0));
  }
  uint32_t cq_ci_record() const { return be32toh(cq_dbrec[0]); }

  DmaBlock cq_ring;
  volatile uint32_t* cq_dbrec = nullptr;
};

TEST_F(DpCqTest, RequesterCompletionsFindTheirWrIds) {
  auto sq = SendQueue::create(sq_config(st::kRc, 4));
  ASSERT_TRUE(sq.has_value());
  const Sge sg[] = {{0x10, 8, 1}};
  const SendWr wrs[] = {
      {.wr_id = 0xA0, .opcode = WrOpcode::kSend, .sg = sg},
      {.wr_id = 0xA1, .opcode = WrOpcode::kRdmaRead, .flags = send_flags::kSignaled, .sg = sg},
      {.wr_id = 0xA2, .opcode = WrOpcode::kAtomicFa, .flags = send_flags::kSignaled, .sg = sg},
      {.wr_id = 0xA3, .opcode = WrOpcode::kRdmaWriteImm, .flags = send_flags::kSignaled, .sg = sg},
  };
  ASSERT_TRUE(sq->post(wrs).is_ok());
  auto p = CqPoller::create(ring());
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(p->attach(kQpn, &*sq, nullptr, nullptr).is_ok());
  EXPECT_EQ(p->attach(kQpn, &*sq, nullptr, nullptr), KBV_ERR_ALREADY_EXISTS);

  put(0, {.s_opcode = MLX5_OPCODE_RDMA_READ, .wqe_counter = 1, .byte_cnt = 8});
  put(1, {.s_opcode = MLX5_OPCODE_ATOMIC_FA, .wqe_counter = 2});
  put(2, {.s_opcode = MLX5_OPCODE_RDMA_WRITE_IMM, .wqe_counter = 3, .byte_cnt = 0x55});
  WorkCompletion wc[8];
  ASSERT_EQ(p->poll(wc), 3u);
  EXPECT_EQ(wc[0].wr_id, 0xA1u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRdmaRead);
  EXPECT_EQ(wc[0].byte_len, 8u);
  EXPECT_EQ(wc[0].status, KBV_SUCCESS);
  EXPECT_EQ(wc[0].qpn, kQpn);
  EXPECT_EQ(wc[1].wr_id, 0xA2u);
  EXPECT_EQ(wc[1].opcode, WcOpcode::kAtomicFa);
  EXPECT_EQ(wc[1].byte_len, 8u);
  EXPECT_EQ(wc[2].wr_id, 0xA3u);
  EXPECT_EQ(wc[2].opcode, WcOpcode::kRdmaWrite);
  EXPECT_EQ(wc[2].byte_len, 0u);      // only READ reports a length
  EXPECT_EQ(sq->free_blocks(), 16u);  // the unsignaled SEND freed with them
  EXPECT_EQ(cq_ci_record(), 3u);
  EXPECT_EQ(p->ci(), 3u);
  // Nothing new: no completion, the record keeps its value.
  cq_dbrec[0] = htobe32(0xDEAD);
  EXPECT_EQ(p->poll(wc), 0u);
  EXPECT_EQ(cq_ci_record(), 0xDEADu);

  // Send and CS opcodes.
  ASSERT_TRUE(sq->post({wrs, 1}).is_ok());
  const SendWr cs{.wr_id = 0xA4, .opcode = WrOpcode::kAtomicCs, .sg = sg};
  ASSERT_TRUE(sq->post({&cs, 1}).is_ok());
  put(3, {.s_opcode = MLX5_OPCODE_SEND, .wqe_counter = 4});
  put(4, {.s_opcode = MLX5_OPCODE_ATOMIC_CS, .wqe_counter = 5});
  ASSERT_EQ(p->poll(wc), 2u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kSend);
  EXPECT_EQ(wc[0].wr_id, 0xA0u);
  EXPECT_EQ(wc[1].opcode, WcOpcode::kAtomicCs);
  EXPECT_EQ(wc[1].wr_id, 0xA4u);
  EXPECT_EQ(cq_ci_record(), 5u);
}

// poll(out, ts, max): each completion's CQE timestamp (big-endian, byte
// 48), also for a CQE whose QP is not attached; the plain poll reads none.
TEST_F(DpCqTest, TimestampsComeFromTheCqe) {
  auto sq = SendQueue::create(sq_config(st::kRc, 4));
  ASSERT_TRUE(sq.has_value());
  const Sge sg[] = {{0x10, 8, 1}};
  const SendWr wrs[] = {
      {.wr_id = 0xB0, .opcode = WrOpcode::kSend, .flags = send_flags::kSignaled, .sg = sg},
      {.wr_id = 0xB1, .opcode = WrOpcode::kSend, .flags = send_flags::kSignaled, .sg = sg},
      {.wr_id = 0xB2, .opcode = WrOpcode::kSend, .flags = send_flags::kSignaled, .sg = sg},
  };
  ASSERT_TRUE(sq->post(wrs).is_ok());
  auto p = CqPoller::create(ring());
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(p->attach(kQpn, &*sq, nullptr, nullptr).is_ok());
  put(0, {.s_opcode = MLX5_OPCODE_SEND, .wqe_counter = 0, .timestamp = 0x0102030405060708});
  put(1, {.qpn = 0x777, .s_opcode = MLX5_OPCODE_SEND, .timestamp = 0x1111});  // not attached
  put(2, {.s_opcode = MLX5_OPCODE_SEND, .wqe_counter = 1, .timestamp = 0x8000000000000001});
  WorkCompletion wc[4];
  uint64_t ts[4] = {};
  ASSERT_EQ(p->poll(wc, ts, 4), 3u);
  EXPECT_EQ(wc[0].wr_id, 0xB0u);
  EXPECT_EQ(ts[0], 0x0102030405060708u);
  EXPECT_EQ(wc[1].status, KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(ts[1], 0x1111u);
  EXPECT_EQ(wc[2].wr_id, 0xB1u);
  EXPECT_EQ(ts[2], 0x8000000000000001u);
  EXPECT_EQ(cq_ci_record(), 3u);
  put(3, {.s_opcode = MLX5_OPCODE_SEND, .wqe_counter = 2, .timestamp = 42});
  ASSERT_EQ(p->poll(wc, 4), 1u);  // the plain poll: same completion, no timestamp
  EXPECT_EQ(wc[0].wr_id, 0xB2u);
}

TEST_F(DpCqTest, ResponderCompletions) {
  DmaBlock rring = alloc(4096);
  auto rq = RecvQueue::create(
      {.ring = rring.va, .log_wqes = 3, .stride = 32, .dbrec = dbrec(), .max_sge = 2});
  ASSERT_TRUE(rq.has_value());
  const RecvWr r[] = {{.wr_id = 1}, {.wr_id = 2}, {.wr_id = 3}, {.wr_id = 4}};
  ASSERT_TRUE(rq->post(r).is_ok());
  auto p = CqPoller::create(ring());
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(p->attach(kQpn, nullptr, &*rq, nullptr).is_ok());

  // GRH in the buffer (bits 29:28 = 1), RoCE v2 over IPv6 (bits 25:24 = 1).
  put(0, {.opcode = MLX5_CQE_RESP_SEND,
          .byte_cnt = 1000,
          .flags_rqpn = 0x10000000 | 0x01000000 | 0x4321});
  put(1, {.opcode = MLX5_CQE_RESP_SEND_IMM, .byte_cnt = 4, .imm = 0xFEEDF00D});
  put(2, {.opcode = MLX5_CQE_RESP_WR_IMM, .byte_cnt = 4096, .imm = 0x12345678});
  WorkCompletion wc[4];
  ASSERT_EQ(p->poll(wc), 3u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(wc[0].byte_len, 1000u);
  EXPECT_EQ(wc[0].src_qp, 0x4321u);
  EXPECT_EQ(wc[0].flags, wc_flags::kGrh);
  EXPECT_EQ(wc[0].l3_type, wc_l3::kIpv6);
  EXPECT_EQ(wc[1].l3_type, 0u) << "no GRH, no network header type";
  EXPECT_EQ(wc[1].wr_id, 2u);
  EXPECT_EQ(wc[1].opcode, WcOpcode::kRecv);
  EXPECT_EQ(wc[1].flags, wc_flags::kImm);
  EXPECT_EQ(wc[1].imm, 0xFEEDF00Du);
  EXPECT_EQ(wc[2].wr_id, 3u);
  EXPECT_EQ(wc[2].opcode, WcOpcode::kRecvRdmaImm);
  EXPECT_EQ(wc[2].byte_len, 4096u);
  EXPECT_EQ(wc[2].imm, 0x12345678u);
  EXPECT_EQ(rq->outstanding(), 1u);
  // SEND with invalidate consumes a receive too; the rkey comes in imm.
  put(3, {.opcode = MLX5_CQE_RESP_SEND_INV, .byte_cnt = 12, .imm = 0xABCD});
  // A receive CQE with nothing posted is reported, not invented.
  put(4, {.opcode = MLX5_CQE_RESP_SEND});
  ASSERT_EQ(p->poll(wc), 2u);
  EXPECT_EQ(wc[0].wr_id, 4u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(wc[0].flags, wc_flags::kInv);
  EXPECT_EQ(wc[0].imm, 0xABCDu);
  EXPECT_EQ(wc[0].byte_len, 12u);
  EXPECT_EQ(wc[1].status, KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(rq->outstanding(), 0u);
}

TEST_F(DpCqTest, SrqResponderUsesWqeCounter) {
  DmaBlock sring = alloc(4096);
  auto srq = SrqQueue::create(
      {.ring = sring.va, .log_wqes = 3, .stride = 32, .dbrec = dbrec(), .max_sge = 1});
  ASSERT_TRUE(srq.has_value());
  const RecvWr r[] = {{.wr_id = 50}, {.wr_id = 51}, {.wr_id = 52}};
  ASSERT_TRUE(srq->post(r).is_ok());
  auto p = CqPoller::create(ring());
  ASSERT_TRUE(p.has_value());
  // A QP receives from its RQ or from an SRQ, never both.
  DmaBlock rring = alloc(4096);
  auto rq = RecvQueue::create({.ring = rring.va, .log_wqes = 1, .stride = 16, .dbrec = dbrec()});
  ASSERT_TRUE(rq.has_value());
  EXPECT_EQ(p->attach(7, nullptr, &*rq, &*srq), KBV_ERR_INVALID_ARGUMENT);
  ASSERT_TRUE(p->attach(7, nullptr, nullptr, &*srq).is_ok());
  put(0, {.opcode = MLX5_CQE_RESP_SEND, .qpn = 7, .wqe_counter = 2, .byte_cnt = 3});
  put(1, {.opcode = MLX5_CQE_RESP_ERR, .qpn = 7, .wqe_counter = 0, .syndrome = 0x05});
  WorkCompletion wc[2];
  ASSERT_EQ(p->poll(wc), 2u);
  EXPECT_EQ(wc[0].wr_id, 52u);
  EXPECT_EQ(wc[0].qpn, 7u);
  EXPECT_EQ(wc[1].wr_id, 50u);
  EXPECT_EQ(wc[1].status, KBV_ERR_WR_FLUSHED);
  EXPECT_EQ(srq->tail(), 0u);  // WQEs 2 then 0 went back to the free list
}

TEST_F(DpCqTest, EveryErrorSyndrome) {
  auto sq = SendQueue::create(sq_config(st::kRc, 6));
  ASSERT_TRUE(sq.has_value());
  auto p = CqPoller::create(ring());
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(p->attach(kQpn, &*sq, nullptr, nullptr).is_ok());
  // docs/PRM.md "Data path" error syndromes -> status.h statuses.
  const struct {
    uint8_t syndrome;
    kbv_status_t want;
  } cases[] = {
      {MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, KBV_ERR_LOCAL_LENGTH},
      {MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, KBV_ERR_LOCAL_QP_OPERATION},
      {MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, KBV_ERR_LOCAL_PROTECTION},
      {MLX5_CQE_SYNDROME_WR_FLUSH_ERR, KBV_ERR_WR_FLUSHED},
      {MLX5_CQE_SYNDROME_MW_BIND_ERR, KBV_ERR_MW_BIND},
      {MLX5_CQE_SYNDROME_BAD_RESP_ERR, KBV_ERR_BAD_RESPONSE},
      {MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR, KBV_ERR_LOCAL_ACCESS},
      {MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, KBV_ERR_REMOTE_INVALID_REQUEST},
      {MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, KBV_ERR_REMOTE_ACCESS},
      {MLX5_CQE_SYNDROME_REMOTE_OP_ERR, KBV_ERR_REMOTE_OPERATION},
      {MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, KBV_ERR_RETRY_EXCEEDED},
      {MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR, KBV_ERR_RNR_RETRY_EXCEEDED},
      {MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR, KBV_ERR_REMOTE_ABORTED},
      {0x7E, KBV_ERR_WC_UNKNOWN},
  };
  uint32_t ci = 0;
  for (const auto& tc : cases) {
    const SendWr w{.wr_id = 0x500u + tc.syndrome, .opcode = WrOpcode::kRdmaWrite};
    ASSERT_TRUE(sq->post({&w, 1}).is_ok());
    put(ci, {.opcode = MLX5_CQE_REQ_ERR,
             .s_opcode = MLX5_OPCODE_RDMA_WRITE,
             .wqe_counter = static_cast<uint16_t>(sq->pc() - 1),
             .syndrome = tc.syndrome,
             .vendor = static_cast<uint8_t>(0x80 | tc.syndrome)});
    WorkCompletion wc[2];
    ASSERT_EQ(p->poll(wc), 1u) << int{tc.syndrome};
    ++ci;
    EXPECT_EQ(wc[0].status, tc.want) << int{tc.syndrome};
    EXPECT_EQ(wc[0].syndrome, tc.syndrome);
    EXPECT_EQ(wc[0].vendor_err, 0x80 | tc.syndrome);
    EXPECT_EQ(wc[0].wr_id, 0x500u + tc.syndrome);
    EXPECT_EQ(wc[0].opcode, WcOpcode::kRdmaWrite);
    EXPECT_EQ(sq->free_blocks(), 64u);
    EXPECT_EQ(cq_ci_record(), ci);
  }
}

TEST_F(DpCqTest, OwnerBitLapsAndConsumerIndexWrap) {
  auto sq = SendQueue::create(sq_config(st::kRc, 8));
  ASSERT_TRUE(sq.has_value());
  const SendWr w{.wr_id = 0, .opcode = WrOpcode::kSend};
  std::vector<SendWr> many(12, w);
  for (size_t i = 0; i < many.size(); ++i) many[i].wr_id = 1000 + i;
  ASSERT_TRUE(sq->post(many).is_ok());
  // Start just below the 24-bit wrap: ci 0xFFFFFE is in an odd lap of 4.
  auto p = CqPoller::create(ring(), 0xFFFFFE);
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(p->attach(kQpn, &*sq, nullptr, nullptr).is_ok());
  WorkCompletion wc[8];
  // An entry with the previous lap's owner bit is not software's.
  put(0xFFFFFE + kNcqe, {.s_opcode = MLX5_OPCODE_SEND, .wqe_counter = 0});
  EXPECT_EQ(p->poll(wc), 0u);
  put(0xFFFFFE, {.s_opcode = MLX5_OPCODE_SEND, .wqe_counter = 0});
  put(0xFFFFFF, {.s_opcode = MLX5_OPCODE_SEND, .wqe_counter = 1});
  put(0x1000000, {.s_opcode = MLX5_OPCODE_SEND, .wqe_counter = 2});
  // out.size() bounds the batch; the record follows what was consumed.
  ASSERT_EQ(p->poll({wc, 2}), 2u);
  EXPECT_EQ(wc[0].wr_id, 1000u);
  EXPECT_EQ(wc[1].wr_id, 1001u);
  EXPECT_EQ(cq_ci_record(), 0u);  // 0x1000000 & 0xFFFFFF
  EXPECT_EQ(p->ci(), 0u);
  ASSERT_EQ(p->poll(wc), 1u);
  EXPECT_EQ(wc[0].wr_id, 1002u);
  EXPECT_EQ(cq_ci_record(), 1u);
  // Full laps: entries of the current lap only; opcode 15 is never valid.
  for (uint32_t lap = 0; lap < 3; ++lap) {
    const uint32_t base = 0x1000001 + lap * 3;
    for (uint32_t i = 0; i < 3; ++i)
      put(base + i,
          {.s_opcode = MLX5_OPCODE_SEND, .wqe_counter = static_cast<uint16_t>(3 + lap * 3 + i)});
    ASSERT_EQ(p->poll(wc), 3u) << lap;
    EXPECT_EQ(wc[2].wr_id, 1000u + 5 + lap * 3);
    EXPECT_EQ(cq_ci_record(), 1u + 3 * (lap + 1));
  }
  put(0x100000A, {.opcode = MLX5_CQE_INVALID});
  EXPECT_EQ(p->poll(wc), 0u);
  EXPECT_EQ(sq->free_blocks(), 256u);
}

TEST_F(DpCqTest, UnmatchedCqesAreReportedNotDropped) {
  auto p = CqPoller::create(ring());
  ASSERT_TRUE(p.has_value());
  auto sq = SendQueue::create(sq_config(st::kRc, 2));
  ASSERT_TRUE(sq.has_value());
  ASSERT_TRUE(p->attach(kQpn, &*sq, nullptr, nullptr).is_ok());
  put(0, {.qpn = 0x999});                  // QP not attached
  put(1, {.opcode = MLX5_CQE_RESIZE_CQ});  // unsupported opcode
  put(2, {.opcode = MLX5_CQE_RESP_SEND});  // no receive queue attached
  WorkCompletion wc[4];
  ASSERT_EQ(p->poll(wc), 3u);
  EXPECT_EQ(wc[0].status, KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(wc[0].qpn, 0x999u);
  EXPECT_EQ(wc[1].status, KBV_ERR_WC_UNKNOWN);
  EXPECT_EQ(wc[1].opcode, WcOpcode::kUnknown);
  EXPECT_EQ(wc[2].status, KBV_ERR_INVALID_HANDLE);
  EXPECT_EQ(cq_ci_record(), 3u);
  // Detached: its CQEs no longer match.
  ASSERT_TRUE(p->detach(kQpn).is_ok());
  EXPECT_EQ(p->detach(kQpn), KBV_ERR_NOT_FOUND);
  put(3, {});
  ASSERT_EQ(p->poll(wc), 1u);
  EXPECT_EQ(wc[0].status, KBV_ERR_INVALID_HANDLE);
  // Bad rings are refused.
  EXPECT_EQ(CqPoller::create({cq_ring.va, 3, cq_dbrec, 1}).status(), KBV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(CqPoller::create({nullptr, 4, cq_dbrec, 1}).status(), KBV_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace kbv::hca::test
