// SPDX-License-Identifier: BSD-3-Clause
//
// src/sim/engine/wqe.hpp: send and receive WQEs parsed from hand-built bytes
// (segment offsets from rdma-core mlx5dv.h via offsetof), every malformed
// case rejected with its CQE syndrome, wrap-around across the SQ end.
#include "sim/engine/wqe.hpp"
#include "engine_support.hpp"

#include <array>
#include <memory>

namespace kbv::sim::engine {
namespace {

using test::HostMem;
using test::WqeBuilder;
constexpr uint32_t kQpn = 0x123;
constexpr uint32_t kRc = prm::qpc_st::kRc;
constexpr uint32_t kUc = prm::qpc_st::kUc;
constexpr uint32_t kUd = prm::qpc_st::kUd;

class WqeTest : public ::testing::Test {
 protected:
  WqeStatus post_and_parse(const fw::Qp& qp, uint16_t idx, std::span<const std::byte> w) {
    test::put_sq(mem_, qp, idx, w);
    return parse_send_wqe(mem_.iommu, qp, idx, out_.get());
  }
  HostMem mem_;
  std::unique_ptr<ParsedWqe> out_ = std::make_unique<ParsedWqe>();
};

TEST_F(WqeTest, RdmaWriteWithImmAndFlags) {
  fw::Qp qp = test::make_qp(kRc);
  WqeBuilder b;
  b.ctrl(MLX5_OPCODE_RDMA_WRITE_IMM, 1, kQpn,
         MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_SOLICITED | MLX5_WQE_CTRL_FENCE, 0xA1B2C3D4)
      .raddr(0x1122334455667788, 0xabcd01)
      .data(100, 0x501, 0x200000)
      .data(28, 0x601, 0x300000);
  WqeStatus s = post_and_parse(qp, 1, b.done());
  ASSERT_TRUE(s.ok()) << int(s.vendor);
  const ParsedWqe& w = *out_;
  EXPECT_EQ(w.opcode, MLX5_OPCODE_RDMA_WRITE_IMM);
  EXPECT_EQ(w.wqe_index, 1);
  EXPECT_EQ(w.ds, 4u);
  EXPECT_EQ(w.wqebbs, 1u);
  EXPECT_TRUE(w.cqe_req);
  EXPECT_TRUE(w.solicited);
  EXPECT_TRUE(w.fence);
  EXPECT_EQ(w.imm, 0xA1B2C3D4u);
  EXPECT_EQ(w.raddr, 0x1122334455667788u);
  EXPECT_EQ(w.rkey, 0xabcd01u);
  ASSERT_EQ(w.num_sge, 2u);
  EXPECT_EQ(w.sge[0].byte_count, 100u);
  EXPECT_EQ(w.sge[0].lkey, 0x501u);
  EXPECT_EQ(w.sge[0].addr, 0x200000u);
  EXPECT_EQ(w.sge[1].addr, 0x300000u);
  EXPECT_EQ(w.length, 128u);
  EXPECT_FALSE(w.is_inline);
}

TEST_F(WqeTest, SendVariantsOnEveryServiceType) {
  for (uint32_t st : {kRc, kUc}) {
    for (uint8_t op : {uint8_t{MLX5_OPCODE_SEND}, uint8_t{MLX5_OPCODE_SEND_IMM},
                       uint8_t{MLX5_OPCODE_RDMA_WRITE}}) {
      fw::Qp qp = test::make_qp(st);
      WqeBuilder b;
      b.ctrl(op, 0, kQpn, 0, 7);
      if (op == MLX5_OPCODE_RDMA_WRITE) b.raddr(0x1000, 5);
      b.data(64, 0x700, 0x4000);
      WqeStatus s = post_and_parse(qp, 0, b.done());
      ASSERT_TRUE(s.ok()) << "st " << st << " op " << int(op);
      EXPECT_EQ(out_->opcode, op);
      EXPECT_EQ(out_->length, 64u);
      EXPECT_FALSE(out_->cqe_req);
    }
  }
}

TEST_F(WqeTest, UdSendCarriesTheAddressVector) {
  fw::Qp qp = test::make_qp(kUd);
  WqeBuilder b;
  b.ctrl(MLX5_OPCODE_SEND_IMM, 2, kQpn, MLX5_WQE_CTRL_CQ_UPDATE, 9)
      .datagram(0x11111111, 0x456, 0x07)
      .data(256, 0x900, 0x8000);
  ASSERT_TRUE(post_and_parse(qp, 2, b.done()).ok());
  const UdAv& av = out_->av;
  EXPECT_EQ(av.qkey, 0x11111111u);
  EXPECT_EQ(av.dqpn, 0x456u);
  EXPECT_TRUE(av.extended);
  EXPECT_EQ(av.hop_limit, 64);
  EXPECT_EQ(av.rmac[5], 0x42);
  EXPECT_EQ(av.rgid[15], 0x07);
  EXPECT_EQ(out_->ds, 1u + 3u + 1u);  // ctrl + 48-byte datagram + data
  EXPECT_EQ(out_->wqebbs, 2u);
  EXPECT_EQ(out_->length, 256u);
}

TEST_F(WqeTest, RdmaReadAndAtomics) {
  fw::Qp qp = test::make_qp(kRc);
  WqeBuilder r;
  r.ctrl(MLX5_OPCODE_RDMA_READ, 0, kQpn).raddr(0xA000, 0x77).data(4096, 0x88, 0xB000);
  ASSERT_TRUE(post_and_parse(qp, 0, r.done()).ok());
  EXPECT_EQ(out_->rkey, 0x77u);
  EXPECT_EQ(out_->length, 4096u);

  WqeBuilder cs;
  cs.ctrl(MLX5_OPCODE_ATOMIC_CS, 1, kQpn)
      .raddr(0xC000, 0x99)
      .atomic(0x5555, 0x3333)
      .data(8, 0x88, 0xD000);
  ASSERT_TRUE(post_and_parse(qp, 1, cs.done()).ok());
  EXPECT_EQ(out_->swap_add, 0x5555u);
  EXPECT_EQ(out_->compare, 0x3333u);
  EXPECT_EQ(out_->raddr, 0xC000u);

  WqeBuilder fa;
  fa.ctrl(MLX5_OPCODE_ATOMIC_FA, 2, kQpn).raddr(0xC008, 0x99).atomic(1, 0).data(8, 0x88, 0xD008);
  ASSERT_TRUE(post_and_parse(qp, 2, fa.done()).ok());
  EXPECT_EQ(out_->swap_add, 1u);
}

TEST_F(WqeTest, InlineDataAndNop) {
  fw::Qp qp = test::make_qp(kRc);
  std::array<std::byte, 40> payload;
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = std::byte(i + 1);
  WqeBuilder b;
  b.ctrl(MLX5_OPCODE_SEND, 0, kQpn).inl(payload);
  ASSERT_TRUE(post_and_parse(qp, 0, b.done()).ok());
  EXPECT_TRUE(out_->is_inline);
  ASSERT_EQ(out_->inline_len, 40u);
  EXPECT_EQ(out_->length, 40u);
  EXPECT_EQ(out_->num_sge, 0u);
  EXPECT_EQ(std::memcmp(out_->inline_data.data(), payload.data(), 40), 0);
  EXPECT_EQ(out_->ds, 1u + 3u);  // 4 + 40 bytes padded to 48

  WqeBuilder nop;
  nop.ctrl(MLX5_OPCODE_NOP, 3, kQpn, MLX5_WQE_CTRL_CQ_UPDATE);
  ASSERT_TRUE(post_and_parse(qp, 3, nop.done()).ok());
  EXPECT_EQ(out_->opcode, MLX5_OPCODE_NOP);
  EXPECT_TRUE(out_->cqe_req);
  EXPECT_EQ(out_->length, 0u);
}

TEST_F(WqeTest, ReservedDsBitsAreIgnored) {
  // qpn_ds bits 7:6 are outside MLX5_WQE_CTRL_DS_MASK (0x3f): ds 0x42 is 2.
  fw::Qp qp = test::make_qp(kRc);
  WqeBuilder b;
  b.ctrl(MLX5_OPCODE_SEND, 0, kQpn).data(8, 1, 0x10);
  ASSERT_TRUE(post_and_parse(qp, 0, b.done(0x42)).ok());
  EXPECT_EQ(out_->ds, 2u);
  EXPECT_EQ(out_->num_sge, 1u);
}

TEST_F(WqeTest, ZeroByteCountMeansTwoGiB) {
  fw::Qp qp = test::make_qp(kRc);
  qp.log_msg_max = 31;
  WqeBuilder b;
  b.ctrl(MLX5_OPCODE_SEND, 0, kQpn).data(0, 1, 0);
  ASSERT_TRUE(post_and_parse(qp, 0, b.done()).ok());
  EXPECT_EQ(out_->sge[0].byte_count, 0x80000000u);
}

TEST_F(WqeTest, WqeWrapsAcrossTheRingEnd) {
  fw::Qp qp = test::make_qp(kRc);
  // Index 7 = slot 3 (last of 4): 2 basic blocks, the second is slot 0.
  std::array<std::byte, 64> payload;
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = std::byte(0x80 + i);
  WqeBuilder b;
  b.ctrl(MLX5_OPCODE_RDMA_WRITE, 7, kQpn).raddr(0xE000, 0x42).inl(payload);
  auto bytes = b.done();
  ASSERT_GT(bytes.size(), 64u);
  ASSERT_TRUE(post_and_parse(qp, 7, bytes).ok());
  EXPECT_EQ(out_->wqebbs, 2u);
  EXPECT_EQ(out_->rkey, 0x42u);
  ASSERT_EQ(out_->inline_len, 64u);
  EXPECT_EQ(std::memcmp(out_->inline_data.data(), payload.data(), 64), 0);
  // Slot 0 of the ring really holds the tail of the WQE.
  EXPECT_EQ(*mem_.at(HostMem::kIova + qp.sq_offset), bytes[64]);
}

TEST_F(WqeTest, MalformedWqesAreRejectedWithTheirSyndrome) {
  const uint8_t kQpOp = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
  const uint8_t kLen = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
  std::array<std::byte, 32> small{};
  struct Case {
    const char* name;
    uint32_t st;
    uint8_t syndrome;
    WqeVendor vendor;
    void (*build)(WqeBuilder&, std::span<const std::byte>, uint16_t idx);
    int ds = -1;
  };
  const Case cases[] = {
      {"index mismatch", kRc, kQpOp, WqeVendor::kBadIndex,
       [](WqeBuilder& b, auto, uint16_t idx) {
         b.ctrl(MLX5_OPCODE_SEND, uint16_t(idx + 1), kQpn).data(8, 1, 0);
       }},
      {"qpn mismatch", kRc, kQpOp, WqeVendor::kBadQpn,
       [](WqeBuilder& b, auto, uint16_t idx) {
         b.ctrl(MLX5_OPCODE_SEND, idx, kQpn + 1).data(8, 1, 0);
       }},
      {"ds zero", kRc, kQpOp, WqeVendor::kBadDs,
       [](WqeBuilder& b, auto, uint16_t idx) { b.ctrl(MLX5_OPCODE_SEND, idx, kQpn); }, 0},
      {"ds beyond ring", kRc, kQpOp, WqeVendor::kBadDs,
       [](WqeBuilder& b, auto, uint16_t idx) { b.ctrl(MLX5_OPCODE_SEND, idx, kQpn); }, 17},
      {"unknown opcode", kRc, kQpOp, WqeVendor::kBadOpcode,
       [](WqeBuilder& b, auto, uint16_t idx) { b.ctrl(0x3f, idx, kQpn).data(8, 1, 0); }},
      {"read on UC", kUc, kQpOp, WqeVendor::kBadOpcode,
       [](WqeBuilder& b, auto, uint16_t idx) {
         b.ctrl(MLX5_OPCODE_RDMA_READ, idx, kQpn).raddr(0, 1).data(8, 1, 0);
       }},
      {"atomic on UC", kUc, kQpOp, WqeVendor::kBadOpcode,
       [](WqeBuilder& b, auto, uint16_t idx) {
         b.ctrl(MLX5_OPCODE_ATOMIC_FA, idx, kQpn).raddr(0, 1).atomic(1, 0).data(8, 1, 0);
       }},
      {"write on UD", kUd, kQpOp, WqeVendor::kBadOpcode,
       [](WqeBuilder& b, auto, uint16_t idx) {
         b.ctrl(MLX5_OPCODE_RDMA_WRITE, idx, kQpn).raddr(0, 1).data(8, 1, 0);
       }},
      {"nonzero opmod", kRc, kQpOp, WqeVendor::kBadOpmod,
       [](WqeBuilder& b, auto, uint16_t idx) {
         b.ctrl(MLX5_OPCODE_SEND, idx, kQpn, 0, 0, 1).data(8, 1, 0);
       }},
      {"write without raddr", kRc, kQpOp, WqeVendor::kTruncated,
       [](WqeBuilder& b, auto, uint16_t idx) { b.ctrl(MLX5_OPCODE_RDMA_WRITE, idx, kQpn); }, 1},
      {"UD without datagram", kUd, kQpOp, WqeVendor::kTruncated,
       [](WqeBuilder& b, auto, uint16_t idx) {
         b.ctrl(MLX5_OPCODE_SEND, idx, kQpn).data(8, 1, 0);
       }},
      {"atomic without atomic seg", kRc, kQpOp, WqeVendor::kTruncated,
       [](WqeBuilder& b, auto, uint16_t idx) {
         b.ctrl(MLX5_OPCODE_ATOMIC_CS, idx, kQpn).raddr(0, 1);
       }},
      {"atomic length 16", kRc, kLen, WqeVendor::kAtomicLength,
       [](WqeBuilder& b, auto, uint16_t idx) {
         b.ctrl(MLX5_OPCODE_ATOMIC_CS, idx, kQpn).raddr(0, 1).atomic(1, 2).data(16, 1, 0);
       }},
      {"atomic two sges", kRc, kLen, WqeVendor::kAtomicLength,
       [](WqeBuilder& b, auto, uint16_t idx) {
         b.ctrl(MLX5_OPCODE_ATOMIC_CS, idx, kQpn)
             .raddr(0, 1)
             .atomic(1, 2)
             .data(8, 1, 0)
             .data(8, 1, 8);
       }},
      {"inline in read", kRc, kQpOp, WqeVendor::kInlineNotAllowed,
       [](WqeBuilder& b, std::span<const std::byte> p, uint16_t idx) {
         b.ctrl(MLX5_OPCODE_RDMA_READ, idx, kQpn).raddr(0, 1).inl(p);
       }},
      {"pointer after inline", kRc, kQpOp, WqeVendor::kMixedInline,
       [](WqeBuilder& b, std::span<const std::byte> p, uint16_t idx) {
         b.ctrl(MLX5_OPCODE_SEND, idx, kQpn).inl(p).data(8, 1, 0);
       }},
      {"inline after pointer", kRc, kQpOp, WqeVendor::kMixedInline,
       [](WqeBuilder& b, std::span<const std::byte> p, uint16_t idx) {
         b.ctrl(MLX5_OPCODE_SEND, idx, kQpn).data(8, 1, 0).inl(p);
       }},
      {"inline beyond ds", kRc, kLen, WqeVendor::kInlineOverrun,
       [](WqeBuilder& b, std::span<const std::byte> p, uint16_t idx) {
         b.ctrl(MLX5_OPCODE_SEND, idx, kQpn).inl(p);
       },
       2},
      {"datagram cut by ds", kUd, kQpOp, WqeVendor::kTruncated,
       [](WqeBuilder& b, auto, uint16_t idx) {
         b.ctrl(MLX5_OPCODE_SEND, idx, kQpn).datagram(1, 2, 3).data(8, 1, 0);
       },
       3},
      {"message too long", kRc, kLen, WqeVendor::kMsgTooLong,
       [](WqeBuilder& b, auto, uint16_t idx) {
         b.ctrl(MLX5_OPCODE_SEND, idx, kQpn).data(0x40000000, 1, 0).data(1, 1, 0);
       }},
  };
  uint16_t idx = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    fw::Qp qp = test::make_qp(c.st);
    std::memset(mem_.at(HostMem::kIova + qp.sq_offset), 0, 256);
    WqeBuilder b;
    c.build(b, small, idx);
    WqeStatus s = post_and_parse(qp, idx, b.done(c.ds));
    EXPECT_EQ(s.syndrome, c.syndrome);
    EXPECT_EQ(s.vendor, c.vendor);
    ++idx;
  }
}

TEST_F(WqeTest, UnmappedRingIsAFetchFaultNotACrash) {
  fw::Qp qp = test::make_qp(kRc);
  qp.buf.pas = {0x7000000};  // never mapped
  const uint64_t faults = mem_.iommu.fault_count();
  WqeStatus s = parse_send_wqe(mem_.iommu, qp, 0, out_.get());
  EXPECT_EQ(s.syndrome, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
  EXPECT_EQ(s.vendor, WqeVendor::kFetchFault);
  EXPECT_GT(mem_.iommu.fault_count(), faults);

  fw::Qp nosq = test::make_qp(kRc);
  nosq.no_sq = true;
  EXPECT_EQ(parse_send_wqe(mem_.iommu, nosq, 0, out_.get()).vendor, WqeVendor::kRingGeometry);
}

TEST_F(WqeTest, ReceiveWqeStopsAtTheInvalidLkey) {
  fw::Qp qp = test::make_qp(kRc);
  // RQ slot 1 (index 5 wraps to 1), stride 64: two data segments then 0x100.
  std::byte* w = mem_.at(HostMem::kIova + 64);
  WqeBuilder b;
  b.len = 0;
  b.data(100, 0x11, 0x1000).data(200, 0x22, 0x2000).data(0, MLX5_INVALID_LKEY, 0).data(5, 5, 5);
  std::memcpy(w, b.b, 64);
  std::unique_ptr<ParsedRecv> r = std::make_unique<ParsedRecv>();
  ASSERT_TRUE(parse_recv_wqe(mem_.iommu, qp, 5, r.get()).ok());
  ASSERT_EQ(r->num_sge, 2u);
  EXPECT_EQ(r->sge[1].lkey, 0x22u);
  EXPECT_EQ(r->length, 300u);

  // Full stride: four segments, no terminator.
  b.len = 0;
  b.data(1, 1, 0).data(2, 1, 0).data(3, 1, 0).data(4, 1, 0);
  std::memcpy(w, b.b, 64);
  ASSERT_TRUE(parse_recv_wqe(mem_.iommu, qp, 1, r.get()).ok());
  EXPECT_EQ(r->num_sge, 4u);
  EXPECT_EQ(r->length, 10u);

  fw::Qp srq_qp = qp;
  srq_qp.rq_type = prm::qpc_rq_type::kSrqRq;
  EXPECT_EQ(parse_recv_wqe(mem_.iommu, srq_qp, 0, r.get()).vendor, WqeVendor::kRingGeometry);
}

TEST_F(WqeTest, SrqWqeHasItsNextSegment) {
  fw::Srq srq;
  srq.log_srq_size = 3;
  srq.log_rq_stride = 2;  // 64 B
  srq.buf.pas = {HostMem::kIova + 4096};
  std::byte* w = mem_.at(HostMem::kIova + 4096 + 2 * 64);
  test::be32_at(w, 7);  // next_wqe_index (16 bits at offset 2)
  WqeBuilder b;
  b.len = 0;
  b.data(64, 0x33, 0x9000).data(0, MLX5_INVALID_LKEY, 0);
  std::memcpy(w + sizeof(mlx5_wqe_srq_next_seg), b.b, 32);
  std::unique_ptr<ParsedRecv> r = std::make_unique<ParsedRecv>();
  ASSERT_TRUE(parse_srq_wqe(mem_.iommu, srq, 10, r.get()).ok());  // 10 & 7 = slot 2
  EXPECT_EQ(r->next_wqe_index, 7);
  ASSERT_EQ(r->num_sge, 1u);
  EXPECT_EQ(r->sge[0].lkey, 0x33u);
  EXPECT_EQ(r->length, 64u);
}

}  // namespace
}  // namespace kbv::sim::engine
