// SPDX-License-Identifier: BSD-3-Clause
//
// Test support for the model's transport (src/sim/engine/transport.hpp)
// driven packet by packet: a started model firmware (ObjFixture) with one RC
// QP in RTS on a PD, a 16-entry CQ and an MTT key over 16 host pages, a
// Transport on its own loopback port that the TEST thread runs (one
// Transport::run() per step; nothing else runs it), and a peer wire::Port
// that sends hand-built RoCEv2 packets to it and collects what it answers.
// Loopback UDP delivers a datagram into the receiver's socket before
// sendto(2) returns, so "send, run once, poll the peer" is deterministic.
//
// The QP comes from the firmware's own commands (CREATE_QP, RST2INIT,
// INIT2RTR, RTR2RTS with fw_obj_support.hpp's attributes: 1 KiB MTU,
// next_rcv_psn 0x111, next_send_psn 0x222, min_rnr_nak 12, ack_timeout 14);
// then its path is pointed at the peer's address and rre / rwe / rae set in
// the QP table (the firmware thread is idle between commands).
//
// Threading: test thread only.
#pragma once

#include "../fw/objects/fw_obj_support.hpp"
#include "engine_support.hpp"

#include "sim/engine/transport.hpp"
#include "sim/wire/headers.hpp"
#include "sim/wire/port.hpp"

#include <infiniband/mlx5dv.h>

#include <chrono>
#include <cstring>
#include <random>
#include <vector>

namespace kbv::sim::engine::test {

using fw::objtest::ObjFixture;
namespace op = wire::opcode;

// One packet the transport sent, copied out of the peer's receive buffer.
struct Sent {
  wire::PacketHeaders h;
  std::vector<uint8_t> payload;
  uint8_t opcode() const { return h.bth.opcode; }
  uint32_t psn() const { return h.bth.psn; }
  uint8_t syndrome() const { return h.aeth ? h.aeth->syndrome : 0xFF; }
};

// A CQE as the engine wrote it (the fields the tests look at).
struct Cqe {
  uint8_t opcode = 0;
  uint8_t syndrome = 0;
  uint16_t wqe_counter = 0;
  uint32_t byte_cnt = 0;
  uint32_t imm = 0;
};

class TransportFixture : public ObjFixture {
 protected:
  static constexpr uint32_t kPeerQpn = 0x123;  // fw_obj_support.hpp modify_cmd remote_qpn
  static constexpr uint32_t kEpsn = 0x111;     // next_rcv_psn
  static constexpr uint32_t kSpsn = 0x222;     // next_send_psn
  static constexpr uint32_t kMtu = 1024;
  static constexpr uint32_t kMemPages = 16;
  static constexpr uint64_t kVa = 0x7000'0000'0000;  // the key's virtual addresses

  void SetUp() override {
    ObjFixture::SetUp();
    if (HasFatalFailure()) return;
    rq_pi_ = sq_pi_ = cq_ci_ = 0;
    // Two free loopback hosts: the transport's and the peer's.
    std::mt19937 rng(std::random_device{}());
    for (int tries = 0; tries < 200 && (!tport_ || !peer_); ++tries) {
      wire::PortConfig c;
      c.host = static_cast<uint8_t>(100 + rng() % 150);
      auto p = wire::Port::open(c);
      if (!p) continue;
      (tport_ ? peer_ : tport_) = std::move(*p);
    }
    ASSERT_TRUE(tport_ && peer_) << "no free 127.0.0.N";
    t_ip_ = tport_->ip();
    const uint32_t peer_ip = peer_->ip();
    t_ = std::make_unique<Transport>(fw_->context(), std::move(tport_));

    pd_ = alloc_pd();
    cqn_ = create_cq(4);
    mem_ = host_->dma().alloc(kMemPages * 4096);
    lkey_ = create_mkey(pd_, kVa, kMemPages * 4096, mem_);
    QpSpec s;
    s.st = prm::qpc_st::kRc;
    s.pd = pd_;
    s.scq = s.rcq = cqn_;
    qpn_ = create_qp(s);
    to_rts(qpn_);
    if (HasFatalFailure()) return;
    fw::Qp* q = qp();
    ASSERT_NE(q, nullptr);
    q->path.rgid =
        fw::ipv4_mapped_gid(127, uint8_t(peer_ip >> 16), uint8_t(peer_ip >> 8), uint8_t(peer_ip));
    q->rre = q->rwe = q->rae = true;
    q->atomic_mode = prm::qpc_atomic_mode::kIbSpec;
  }

  void TearDown() override {
    t_.reset();
    peer_.reset();
    ObjFixture::TearDown();
  }

  fw::Qp* qp() { return tables().qp(qpn_); }
  std::byte* mem(uint64_t off = 0) { return host_->dma().host(mem_) + off; }
  uint64_t va(uint64_t off = 0) const { return kVa + off; }

  // CREATE_MKEY: an MTT key with every right over `bytes` at iova (contiguous).
  uint32_t create_mkey(uint32_t pd, uint64_t va, uint64_t bytes, uint64_t iova) {
    const uint32_t pages = static_cast<uint32_t>(bytes / 4096);
    const uint32_t octwords = (pages + 1) / 2;
    auto in = fw::objtest::cmd<prm::create_mkey_in>(prm::Opcode::CREATE_MKEY, 0, 16 * octwords);
    prm::Ref<prm::create_mkey_in> c(in.data());
    auto k = c.at(prm::create_mkey_in::memory_key_mkey_entry);
    prm::set_access_mode(k, prm::mkc_access_mode::kMtt);
    for (auto f : {prm::mkc::lr, prm::mkc::lw, prm::mkc::rr, prm::mkc::rw, prm::mkc::a})
      k.set(f, 1);
    k.set(prm::mkc::qpn, 0xFFFFFF);
    k.set(prm::mkc::mkey_7_0, 0x42);
    k.set(prm::mkc::pd, pd);
    k.set(prm::mkc::start_addr, va);
    k.set(prm::mkc::len, bytes);
    k.set(prm::mkc::log_page_size, 12);
    k.set(prm::mkc::translations_octword_size, octwords);
    c.set(prm::create_mkey_in::translations_octword_actual_size, octwords);
    for (uint32_t i = 0; i < pages; ++i)
      c.set(prm::create_mkey_in::mtt_array, i, prm::mtt_entry(iova + 4096u * i, true, true));
    fw::objtest::Reply r = exec(in, 16);
    EXPECT_EQ(r.status(), 0);
    return fw::objtest::field(r, prm::create_mkey_out::mkey_index) << 8 | 0x42;
  }

  // ---- the peer's side of the wire ----
  void send(const wire::PacketHeaders& h, std::span<const uint8_t> payload = {}) {
    ASSERT_TRUE(peer_->send(t_ip_, 0xC001, h, payload).is_ok());
  }
  static wire::PacketHeaders req(uint8_t opcode, uint32_t psn, bool ack_req = false) {
    wire::PacketHeaders h;
    h.bth.opcode = opcode;
    h.bth.dest_qp = 0;  // set by the caller's fixture (qpn_)
    h.bth.psn = psn & wire::kPsnMask;
    h.bth.ack_req = ack_req;
    return h;
  }
  wire::PacketHeaders to_qp(wire::PacketHeaders h) const {
    h.bth.dest_qp = qpn_;
    return h;
  }
  // A SEND / WRITE packet of `len` pattern bytes (seed) to the QP.
  void send_pkt(uint8_t opcode, uint32_t psn, uint32_t len, uint8_t seed, bool ack_req = false,
                std::optional<wire::Reth> reth = {}) {
    wire::PacketHeaders h = to_qp(req(opcode, psn, ack_req));
    h.reth = reth;
    std::vector<uint8_t> p(len);
    for (uint32_t i = 0; i < len; ++i) p[i] = uint8_t(seed + i * 3);
    send(h, p);
  }
  // One pass of the transport; returns what it sent to the peer.
  std::vector<Sent> step() {
    (void)t_->run(true);
    return collect();
  }
  std::vector<Sent> collect() {
    std::vector<Sent> out;
    std::array<wire::RxPacket, wire::Port::kRxBatch> rx;
    for (;;) {
      Result<size_t> n = peer_->poll(rx);
      EXPECT_TRUE(n.has_value());
      if (!n || *n == 0) break;
      for (size_t i = 0; i < *n; ++i)
        out.push_back(Sent{rx[i].headers, {rx[i].payload.begin(), rx[i].payload.end()}});
    }
    return out;
  }
  // Runs the transport until it sent something or `limit` passed (timers).
  std::vector<Sent> step_until_sent(std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    std::vector<Sent> got;
    while (got.empty() && std::chrono::steady_clock::now() < end) got = step();
    return got;
  }

  // ---- receive WQEs (RQ at the start of the QP buffer, 64-byte stride) ----
  void post_recv(uint64_t off, uint32_t len, uint32_t lkey = 0) {
    fw::Qp* q = qp();
    const uint64_t stride = uint64_t{16} << q->log_rq_stride;
    std::byte* w =
        host_->dma().host(q->buf.pas[0]) + (rq_pi_ & ((1u << q->log_rq_size) - 1)) * stride;
    std::memset(w, 0, stride);
    be32_at(w + offsetof(mlx5_wqe_data_seg, byte_count), len);
    be32_at(w + offsetof(mlx5_wqe_data_seg, lkey), lkey ? lkey : lkey_);
    be64_at(w + offsetof(mlx5_wqe_data_seg, addr), va(off));
    be32_at(w + 16 + offsetof(mlx5_wqe_data_seg, lkey), MLX5_INVALID_LKEY);
    ++rq_pi_;
    be32_at(host_->dma().host(q->dbr_addr), rq_pi_ & 0xFFFF);
  }

  // ---- send WQEs (SQ after the RQ) and the doorbell ----
  void post_send(WqeBuilder& b) {
    fw::Qp* q = qp();
    auto bytes = b.done();
    const uint32_t nbb = static_cast<uint32_t>((bytes.size() + 63) / 64);
    const uint64_t ring = uint64_t{64} << q->log_sq_size;
    std::byte* base = host_->dma().host(q->buf.pas[0]) + q->sq_offset;
    uint64_t pos = (sq_pi_ & ((1u << q->log_sq_size) - 1)) * 64;
    for (std::byte x : bytes) {
      base[pos] = x;
      pos = (pos + 1) % ring;
    }
    sq_pi_ += nbb;
    be32_at(host_->dma().host(q->dbr_addr) + 4, sq_pi_ & 0xFFFF);
    t_->record_sq(qpn_);
  }
  uint16_t sq_index() const { return static_cast<uint16_t>(sq_pi_); }

  // CQEs the engine wrote since the last call (the consumer index follows).
  std::vector<Cqe> cqes() {
    fw::Cq* cq = tables().cq(cqn_);
    std::vector<Cqe> out;
    const uint32_t n = 1u << cq->log_cq_size;
    for (; cq_ci_ != cq->producer_counter; ++cq_ci_) {
      const std::byte* c = host_->dma().host(cq->buf.pas[0]) + 64 * (cq_ci_ & (n - 1));
      Cqe e;
      e.opcode = uint8_t(c[offsetof(mlx5_cqe64, op_own)]) >> 4;
      e.syndrome = uint8_t(c[offsetof(mlx5_err_cqe, syndrome)]);
      e.wqe_counter = uint16_t(uint16_t(c[offsetof(mlx5_cqe64, wqe_counter)]) << 8 |
                               uint16_t(c[offsetof(mlx5_cqe64, wqe_counter) + 1]));
      e.byte_cnt = rd32(c + offsetof(mlx5_cqe64, byte_cnt));
      e.imm = rd32(c + offsetof(mlx5_cqe64, imm_inval_pkey));
      out.push_back(e);
    }
    be32_at(host_->dma().host(cq->dbr_addr), cq_ci_ & 0xFFFFFF);
    return out;
  }

  const Counters& counters() { return t_->counters(); }

  std::unique_ptr<wire::Port> tport_, peer_;
  std::unique_ptr<Transport> t_;
  uint32_t t_ip_ = 0;
  uint32_t pd_ = 0, cqn_ = 0, qpn_ = 0, lkey_ = 0;
  uint64_t mem_ = 0;
  uint32_t rq_pi_ = 0, sq_pi_ = 0, cq_ci_ = 0;
};

}  // namespace kbv::sim::engine::test
