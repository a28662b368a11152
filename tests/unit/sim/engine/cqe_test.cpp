// SPDX-License-Identifier: BSD-3-Clause
//
// src/sim/engine/cqe.hpp: CQE bytes (rdma-core mlx5dv.h mlx5_cqe64 /
// mlx5_err_cqe offsets), the owner bit over two ring wraps read the way a
// driver polls, overrun against the doorbell record's consumer index, and
// arming (any / solicited, sequence numbers) producing exactly one EQE.
#include "sim/engine/cqe.hpp"
#include "engine_support.hpp"
#include "hca/prm/cq.hpp"

#include <vector>

namespace kbv::sim::engine {
namespace {

using test::HostMem;
using test::rd32;

constexpr uint64_t kRing = HostMem::kIova + 0x2000;
constexpr uint64_t kDbr = HostMem::kIova + 0x3000;
constexpr uint32_t kCqn = 0x2a;
constexpr uint32_t kEqn = 3;

struct Recorder : CqEventSink {
  struct Ev {
    bool error;
    uint32_t eqn_or_synd;
    uint32_t cqn;
  };
  std::vector<Ev> events;
  Status completion(uint32_t eqn, uint32_t cqn) override {
    events.push_back({false, eqn, cqn});
    return Status::ok();
  }
  Status cq_error(uint32_t cqn, prm::CqErrSyndrome s) override {
    events.push_back({true, static_cast<uint32_t>(s), cqn});
    return Status::ok();
  }
  std::size_t completions() const {
    std::size_t n = 0;
    for (const Ev& e : events) n += !e.error;
    return n;
  }
};

class CqeTest : public ::testing::Test {
 protected:
  CqeTest() {
    cq_.cqn = kCqn;
    cq_.log_cq_size = 2;  // 4 CQEs
    cq_.c_eqn = kEqn;
    cq_.buf.pas = {kRing};
    cq_.dbr_addr = kDbr;
    // A new CQ buffer is filled with op_own 0xF0 (invalid, owner 0; docs/PRM.md).
    for (uint32_t i = 0; i < 4; ++i) *mem_.at(kRing + i * 64 + 63) = std::byte{0xF0};
  }
  const std::byte* cqe(uint32_t slot) { return mem_.at(kRing + slot * 64); }
  void consume(uint32_t ci) { test::be32_at(mem_.at(kDbr), ci & 0xffffff); }
  void set_arm_word(uint32_t w) { test::be32_at(mem_.at(kDbr + 4), w); }
  // The driver's poll check (docs/PRM.md): the CQE at ci is software's when its
  // opcode is not INVALID and owner == ((ci & n) != 0).
  bool sw_owned(uint32_t ci) {
    const uint8_t op_own = uint8_t(cqe(ci & 3)[63]);
    return (op_own >> 4) != MLX5_CQE_INVALID && (op_own & 1) == ((ci & 4) != 0);
  }
  Status write(CqeFields f) { return write_cqe(mem_.iommu, cq_, notify_, f, sink_); }
  static CqeFields req(uint16_t counter, bool solicited = false) {
    CqeFields f;
    f.opcode = MLX5_CQE_REQ;
    f.qpn = 0x345;
    f.wqe_opcode = MLX5_OPCODE_SEND;
    f.wqe_counter = counter;
    f.byte_cnt = 1000;
    f.solicited = solicited;
    return f;
  }

  HostMem mem_;
  fw::Cq cq_;
  CqNotify notify_;
  Recorder sink_;
};

TEST_F(CqeTest, ResponderAndRequesterBytes) {
  CqeFields f;
  f.opcode = MLX5_CQE_RESP_SEND_IMM;
  f.qpn = 0xabcdef;
  f.wqe_counter = 0x1234;
  f.byte_cnt = 0x10203;
  f.imm = 0xdeadbeef;
  f.srqn_uidx = 0x77;
  f.flags_rqpn = 0x456;
  f.solicited = true;
  f.timestamp = 0x0102030405060708;
  ASSERT_TRUE(write(f).is_ok());
  const std::byte* c = cqe(0);
  // mlx5_cqe64 timestamp: 64 bits big-endian at byte 48.
  EXPECT_EQ(rd32(c + offsetof(mlx5_cqe64, timestamp)), 0x01020304u);
  EXPECT_EQ(rd32(c + offsetof(mlx5_cqe64, timestamp) + 4), 0x05060708u);
  EXPECT_EQ(rd32(c + offsetof(mlx5_cqe64, byte_cnt)), 0x10203u);
  EXPECT_EQ(rd32(c + offsetof(mlx5_cqe64, imm_inval_pkey)), 0xdeadbeefu);
  EXPECT_EQ(rd32(c + offsetof(mlx5_cqe64, srqn_uidx)), 0x77u);
  EXPECT_EQ(rd32(c + offsetof(mlx5_cqe64, flags_rqpn)), 0x456u);
  EXPECT_EQ(rd32(c + offsetof(mlx5_cqe64, sop_drop_qpn)), 0xabcdefu);
  EXPECT_EQ(uint8_t(c[offsetof(mlx5_cqe64, wqe_counter)]), 0x12);
  EXPECT_EQ(uint8_t(c[offsetof(mlx5_cqe64, wqe_counter) + 1]), 0x34);
  // opcode 3 in 7:4, solicited bit 1, owner 0 on the first pass.
  EXPECT_EQ(uint8_t(c[63]), MLX5_CQE_RESP_SEND_IMM << 4 | 0x2);
  EXPECT_EQ(cq_.producer_counter, 1u);

  ASSERT_TRUE(write(req(9)).is_ok());
  c = cqe(1);
  // Requester: the WQE opcode in sop_drop_qpn 31:24 (rdma-core cq.c reads it there).
  EXPECT_EQ(rd32(c + offsetof(mlx5_cqe64, sop_drop_qpn)), uint32_t{MLX5_OPCODE_SEND} << 24 | 0x345);
  EXPECT_EQ(uint8_t(c[63]), MLX5_CQE_REQ << 4);
}

TEST_F(CqeTest, ErrorCqeCarriesSyndromes) {
  CqeFields f;
  f.opcode = MLX5_CQE_REQ_ERR;
  f.qpn = 0x345;
  f.wqe_opcode = MLX5_OPCODE_RDMA_WRITE;
  f.wqe_counter = 5;
  f.syndrome = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
  f.vendor_syndrome = 0x88;
  ASSERT_TRUE(write(f).is_ok());
  const std::byte* c = cqe(0);
  EXPECT_EQ(uint8_t(c[offsetof(mlx5_err_cqe, syndrome)]), MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
  EXPECT_EQ(uint8_t(c[offsetof(mlx5_err_cqe, vendor_err_synd)]), 0x88);
  EXPECT_EQ(rd32(c + offsetof(mlx5_err_cqe, s_wqe_opcode_qpn)),
            uint32_t{MLX5_OPCODE_RDMA_WRITE} << 24 | 0x345);
  EXPECT_EQ(uint8_t(c[63]) >> 4, MLX5_CQE_REQ_ERR);
}

TEST_F(CqeTest, OwnerBitOverTwoRingWraps) {
  for (uint32_t i = 0; i < 12; ++i) {  // three passes over 4 entries
    EXPECT_FALSE(sw_owned(i)) << i;    // not yet written
    ASSERT_TRUE(write(req(uint16_t(i))).is_ok()) << i;
    EXPECT_TRUE(sw_owned(i)) << i;
    EXPECT_EQ(uint8_t(cqe(i & 3)[63]) & 1, (i >> 2) & 1) << i;
    EXPECT_EQ(uint8_t(cqe(i & 3)[offsetof(mlx5_cqe64, wqe_counter) + 1]), i);
    consume(i + 1);
  }
  EXPECT_EQ(cq_.producer_counter, 12u);
  EXPECT_TRUE(sink_.events.empty());
}

TEST_F(CqeTest, OverrunRaisesOneCqErrorInsteadOfOverwriting) {
  for (uint16_t i = 0; i < 4; ++i) ASSERT_TRUE(write(req(i)).is_ok());
  EXPECT_EQ(write(req(4)).code(), KBV_ERR_OVERFLOW);
  ASSERT_EQ(sink_.events.size(), 1u);
  EXPECT_TRUE(sink_.events[0].error);
  EXPECT_EQ(sink_.events[0].eqn_or_synd, uint32_t(prm::CqErrSyndrome::CQ_OVERRUN));
  EXPECT_EQ(sink_.events[0].cqn, kCqn);
  EXPECT_EQ(cq_.status, prm::cqc_status::kCqOverflow);
  EXPECT_EQ(uint8_t(cqe(0)[offsetof(mlx5_cqe64, wqe_counter) + 1]), 0);  // not overwritten
  // The CQ stays in error: later CQEs are dropped, no second event.
  consume(4);
  EXPECT_EQ(write(req(5)).code(), KBV_ERR_OVERFLOW);
  EXPECT_EQ(sink_.events.size(), 1u);
}

TEST_F(CqeTest, OverrunIgnoreOverwrites) {
  cq_.oi = true;
  for (uint16_t i = 0; i < 5; ++i) ASSERT_TRUE(write(req(i)).is_ok());
  EXPECT_EQ(uint8_t(cqe(0)[offsetof(mlx5_cqe64, wqe_counter) + 1]), 4);
  EXPECT_TRUE(sink_.events.empty());
}

TEST_F(CqeTest, UnmappedRingIsAnAccessViolation) {
  cq_.buf.pas = {0x50000000};
  EXPECT_EQ(write(req(0)).code(), KBV_ERR_IOMMU_FAULT);
  ASSERT_EQ(sink_.events.size(), 1u);
  EXPECT_EQ(sink_.events[0].eqn_or_synd, uint32_t(prm::CqErrSyndrome::CQ_ACCESS_VIOLATION_ERROR));
  EXPECT_EQ(cq_.status, prm::cqc_status::kCqWriteFail);
  EXPECT_EQ(cq_.producer_counter, 0u);
}

TEST_F(CqeTest, ArmAnyFiresExactlyOncePerSequenceNumber) {
  ASSERT_TRUE(arm_cq(cq_, notify_, 0u << 28 | MLX5_CQ_DB_REQ_NOT | 0, sink_).is_ok());
  EXPECT_EQ(cq_.st, prm::cqc_st::kNotificationRequestArmed);
  EXPECT_EQ(sink_.completions(), 0u);
  ASSERT_TRUE(write(req(0)).is_ok());
  ASSERT_EQ(sink_.completions(), 1u);
  EXPECT_EQ(sink_.events[0].eqn_or_synd, kEqn);
  EXPECT_EQ(sink_.events[0].cqn, kCqn);
  EXPECT_EQ(cq_.st, prm::cqc_st::kFired);
  ASSERT_TRUE(write(req(1)).is_ok());
  EXPECT_EQ(sink_.completions(), 1u);  // fired: no second event
  consume(2);
  // The same request again (sn 0 already fired) is stale and ignored.
  ASSERT_TRUE(arm_cq(cq_, notify_, 0u << 28 | 2, sink_).is_ok());
  ASSERT_TRUE(write(req(2)).is_ok());
  EXPECT_EQ(sink_.completions(), 1u);
  consume(3);
  // sn 1: armed again; fires on the next CQE only.
  ASSERT_TRUE(arm_cq(cq_, notify_, 1u << 28 | 3, sink_).is_ok());
  EXPECT_EQ(sink_.completions(), 1u);
  ASSERT_TRUE(write(req(3)).is_ok());
  EXPECT_EQ(sink_.completions(), 2u);
}

TEST_F(CqeTest, ArmWithCqesBeyondTheConsumerIndexFiresAtOnce) {
  ASSERT_TRUE(write(req(0)).is_ok());
  ASSERT_TRUE(write(req(1)).is_ok());
  consume(1);
  ASSERT_TRUE(arm_cq(cq_, notify_, 1, sink_).is_ok());  // ci 1 < pi 2
  EXPECT_EQ(sink_.completions(), 1u);
  EXPECT_EQ(cq_.st, prm::cqc_st::kFired);
  // Armed at ci == pi (sn 1): nothing pending, no event.
  ASSERT_TRUE(arm_cq(cq_, notify_, 1u << 28 | 2, sink_).is_ok());
  EXPECT_EQ(sink_.completions(), 1u);
}

TEST_F(CqeTest, ArmSolicitedWaitsForASolicitedOrErrorCqe) {
  ASSERT_TRUE(arm_cq(cq_, notify_, MLX5_CQ_DB_REQ_NOT_SOL, sink_).is_ok());
  EXPECT_EQ(cq_.st, prm::cqc_st::kSolicitedNotificationRequestArmed);
  ASSERT_TRUE(write(req(0)).is_ok());
  EXPECT_EQ(sink_.completions(), 0u);
  ASSERT_TRUE(write(req(1, true)).is_ok());
  EXPECT_EQ(sink_.completions(), 1u);
  consume(2);
  // sn 1 solicited: an error CQE also meets it.
  ASSERT_TRUE(arm_cq(cq_, notify_, 1u << 28 | MLX5_CQ_DB_REQ_NOT_SOL | 2, sink_).is_ok());
  CqeFields e = req(2);
  e.opcode = MLX5_CQE_RESP_ERR;
  e.syndrome = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
  ASSERT_TRUE(write(e).is_ok());
  EXPECT_EQ(sink_.completions(), 2u);
  // Unconsumed CQEs that are not solicited do not fire a solicited arm.
  consume(2);
  ASSERT_TRUE(write(req(3)).is_ok());
  ASSERT_TRUE(arm_cq(cq_, notify_, 2u << 28 | MLX5_CQ_DB_REQ_NOT_SOL | 3, sink_).is_ok());
  EXPECT_EQ(sink_.completions(), 2u);
}

TEST_F(CqeTest, DoorbellRecordAndUarDoorbell) {
  // UAR+0x20 as a driver writes it: big-endian arm word, then big-endian cqn.
  std::array<std::byte, 8> db{};
  test::be32_at(db.data(), 2u << 28 | MLX5_CQ_DB_REQ_NOT_SOL | 0x10);
  test::be32_at(db.data() + 4, kCqn);
  CqDoorbell d = decode_cq_doorbell(db);
  EXPECT_EQ(d.cqn, kCqn);
  EXPECT_EQ(d.word >> 28, 2u);
  EXPECT_EQ(d.word & 0xffffff, 0x10u);
  EXPECT_NE(d.word & MLX5_CQ_DB_REQ_NOT_SOL, 0u);

  set_arm_word(0u << 28 | MLX5_CQ_DB_REQ_NOT);
  ASSERT_TRUE(arm_cq_from_dbrec(mem_.iommu, cq_, notify_, sink_).is_ok());
  EXPECT_EQ(cq_.st, prm::cqc_st::kNotificationRequestArmed);
  ASSERT_TRUE(write(req(0)).is_ok());
  EXPECT_EQ(sink_.completions(), 1u);

  cq_.dbr_addr = 0x60000000;  // unmapped
  EXPECT_EQ(arm_cq_from_dbrec(mem_.iommu, cq_, notify_, sink_).code(), KBV_ERR_IOMMU_FAULT);
}

}  // namespace
}  // namespace kbv::sim::engine
