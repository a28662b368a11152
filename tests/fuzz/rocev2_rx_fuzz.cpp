// SPDX-License-Identifier: BSD-3-Clause
//
// libFuzzer target: the model HCA's RoCEv2 receive path — whole UDP
// payloads (BTH, DETH/RETH/AtomicETH/AETH/AtomicAckETH/ImmDt, payload, pad,
// ICRC; any opcode, any length) handed to the model's port checks
// (wire::Port::accept: length, ICRC, parse_packet) and then to its transport
// (engine::Transport::receive: responder and requester), as the engine's
// run() does with what recvmmsg(2) returns — without a socket per packet.
//
// The model: a firmware context run synchronously on this thread
// (model_fw.hpp), rebuilt for every input, with nine QPs in different
// states and rights, each on its own CQ:
//   0 RC RTS, remote read/write/atomic   5 RC RST
//   1 RC RTS, no remote rights           6 RC RTS on an SRQ, all rights
//   2 RC RTR, all rights                 7 UC RTS, all rights
//   3 RC INIT                            8 UD RTS (q_key 0x11111111)
//   4 RC ERR (after RTS)
// next_rcv_psn 0x111, next_send_psn 0x222, 1 KiB MTU; every path points at
// a peer wire::Port (opened once) whose socket is drained after each input.
// Keys: MR A (kKeyA, 8 pages at kVaA, every right: the receive buffers and
// the target of remote writes, reads and atomics) and MR B (kKeyB, 1 page
// at kVaB, local and remote read only).
//
// Input: byte 0 configures the model, then records, each a datagram.
//   byte 0: bits 0-3 receive WQEs posted on every RQ and on the SRQ (every
//           fourth one points at MR B, which the device may not write);
//           bit 4 QP 0 has executed a SEND (2 KiB), an RDMA WRITE, an RDMA
//           READ (3 KiB) and two atomics (PSNs 0x222..0x228) awaiting
//           responses; bit 5 CQs of 2 entries (overrun) instead of 16.
//   record: [ctl][len hi][len lo][len bytes of datagram]
//     ctl bits 0-3: QP index 0-8 written into the BTH's DestQP (9-15: as
//           given); bit 4: keep the datagram's ICRC (else a valid one is
//           written for its flow); bit 5: from another address than the
//           peer's; bit 6: one transport pass after it (doorbells, timers,
//           QPs moved to ERR); bit 7: the CQs' consumer indices catch up.
//
// Invariants (abort on violation; ASan/UBSan/LSan cover crashes, overflows
// and leaks): the only device-visible memory that changes is the CQ
// buffers, the EQ buffer and MR A's pages — the QP and SRQ rings and
// doorbell records, MR B (no local or remote write right) and a page
// mapped for DMA but in no key stay byte for byte as the driver wrote them;
// no CQ's producer runs more than its size ahead of its consumer index.
//
// KBV_FUZZ_SEEDS_OUT=DIR: writes the seed corpus (valid packets of every
// opcode the model supports, built with wire::build_packet) to DIR and exits.
#include "model_fw.hpp"

#include "sim/engine/transport.hpp"
#include "sim/wire/headers.hpp"
#include "sim/wire/icrc.hpp"
#include "sim/wire/packet.hpp"
#include "sim/wire/port.hpp"

#include <infiniband/mlx5dv.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <random>
#include <string>

namespace {

using namespace kbv;
using kbv::fuzz::ModelFw;
namespace wire = kbv::sim::wire;
namespace engine = kbv::sim::engine;
namespace qs = prm::qp_state;

constexpr uint64_t kVaA = 0x7000'0000'0000, kVaB = 0x7100'0000'0000;
constexpr uint32_t kPagesA = 8;
constexpr uint8_t kVariantA = 0x42, kVariantB = 0x43;
constexpr unsigned kQps = 9;
// The keys as created on a fresh context (mkey indices 2 and 3; checked).
constexpr uint32_t kKeyA = 2u << 8 | kVariantA, kKeyB = 3u << 8 | kVariantB;

void be32_at(std::byte* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = std::byte(v >> (24 - 8 * i));
}
void be64_at(std::byte* p, uint64_t v) {
  be32_at(p, uint32_t(v >> 32));
  be32_at(p + 4, uint32_t(v));
}
[[noreturn]] void violated(const char* what, uint64_t a = 0) {
  std::fprintf(stderr, "rocev2_rx invariant violated: %s (0x%llx)\n", what,
               static_cast<unsigned long long>(a));
  std::abort();
}

struct Range {
  uint64_t iova, bytes;
};

class Harness {
 public:
  Harness() {
    std::mt19937 rng(std::random_device{}());
    std::unique_ptr<wire::Port> mine;
    for (int tries = 0; tries < 500 && (!mine || !peer_); ++tries) {
      wire::PortConfig c;
      c.host = static_cast<uint8_t>(100 + rng() % 150);
      auto p = wire::Port::open(c);
      if (!p) continue;
      (mine ? peer_ : mine) = std::move(*p);
    }
    if (!mine || !peer_) fuzz::harness_failed("no free 127.0.0.N");
    peer_host_ = static_cast<uint8_t>(peer_->ip());
    mine->set_tx_batching(true);  // flushed by each run_doorbells()/run()
    port_ = mine.get();
    t_ = std::make_unique<engine::Transport>(fw_.context(), std::move(mine));
  }

  int one(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    setup(data[0]);
    snapshot_.assign(fw_.arena(), fw_.arena() + ModelFw::kArenaBytes);
    size_t off = 1;
    while (off + 3 <= size) {
      const uint8_t ctl = data[off];
      const size_t len = std::min<size_t>(size_t{data[off + 1]} << 8 | data[off + 2],
                                          std::min(size - off - 3, wire::kMaxDatagram));
      deliver(ctl, std::span(data + off + 3, len));
      off += 3 + len;
    }
    (void)t_->run(false, false);
    drain_peer();
    check();
    return 0;
  }

  const ModelFw::QpInfo& qp(unsigned i) const { return qps_[i]; }
  uint32_t ip() const { return port_->ip(); }
  uint32_t peer_ip() const { return peer_->ip(); }

 private:
  void setup(uint8_t cfg) {
    fw_.reset();
    allowed_.clear();
    allowed_.push_back({fw_.eq_buf(), 4096});
    const uint32_t pd = fw_.alloc_pd();
    const uint64_t mem_a = fw_.alloc(kPagesA * 4096);
    allowed_.push_back({mem_a, kPagesA * 4096});
    const uint64_t mem_b = fw_.alloc(4096);
    const uint64_t guard = fw_.alloc(4096);
    std::memset(fw_.host(mem_b), 0x5A, 4096);
    std::memset(fw_.host(guard), 0xA5, 4096);
    for (uint32_t i = 0; i < kPagesA * 4096; i += 4) be32_at(fw_.host(mem_a + i), i);
    using prm::mkc;
    const uint32_t a = fw_.create_mkey(pd, kVaA, kPagesA, mem_a,
                                       {mkc::lr, mkc::lw, mkc::rr, mkc::rw, mkc::a}, kVariantA);
    const uint32_t b = fw_.create_mkey(pd, kVaB, 1, mem_b, {mkc::lr, mkc::rr}, kVariantB);
    if (a != kKeyA || b != kKeyB) fuzz::harness_failed("unexpected mkey", a, b);

    const uint32_t log_cq = (cfg & 0x20) ? 1 : 4;
    cqs_.clear();
    for (unsigned i = 0; i <= kQps; ++i) {
      cqs_.push_back(fw_.create_cq(log_cq));
      allowed_.push_back({cqs_.back().buf, 4096});
      allowed_.push_back({cqs_.back().dbr, 64});  // the consumer index (harness-written)
    }
    srq_ = fw_.create_srq(pd, cqs_[kQps].cqn);
    const uint32_t rc = prm::qpc_st::kRc;
    const uint32_t sts[kQps] = {rc, rc, rc, rc, rc, rc, rc, prm::qpc_st::kUc, prm::qpc_st::kUd};
    for (unsigned i = 0; i < kQps; ++i)
      qps_[i] = fw_.create_qp(sts[i], pd, cqs_[i].cqn, i == 6 ? srq_.srqn : 0);
    using prm::Opcode;
    for (unsigned i = 0; i < kQps; ++i) {
      const uint32_t qpn = qps_[i].qpn;
      if (i == 5) continue;  // RST
      fw_.modify(Opcode::RST2INIT_QP, qpn, peer_host_);
      if (i == 3) continue;  // INIT
      fw_.modify(Opcode::INIT2RTR_QP, qpn, peer_host_);
      if (i == 2) continue;  // RTR
      fw_.modify(Opcode::RTR2RTS_QP, qpn, peer_host_);
      if (i == 4) fw_.modify(Opcode::TO_ERR_QP, qpn, peer_host_);
    }
    for (unsigned i = 0; i < kQps; ++i) {
      sim::fw::Qp* q = fw_.tables().qp(qps_[i].qpn);
      if (q == nullptr) fuzz::harness_failed("QP missing", qps_[i].qpn);
      const bool rights = i != 1 && i != 8;
      q->rre = q->rwe = q->rae = rights;
      q->atomic_mode = prm::qpc_atomic_mode::kIbSpec;
    }
    (void)t_->run(false, false);  // QP 4's flush (2ERR) before the input

    const unsigned nrecv = cfg & 0x0F;
    for (unsigned i = 0; i < kQps; ++i)
      if (i != 6)
        for (unsigned k = 0; k < nrecv; ++k) post_recv_wqe(qps_[i].buf + 64 * k, k);
    for (unsigned i = 0; i < kQps; ++i)
      if (i != 6) be32_at(fw_.host(qps_[i].dbr), nrecv);
    for (unsigned k = 0; k < 16; ++k) {
      std::byte* w = fw_.host(srq_.buf + 64 * k);
      // mlx5_wqe_srq_next_seg: next_wqe_index at byte 2 (big-endian).
      w[2] = std::byte(((k + 1) % 16) >> 8);
      w[3] = std::byte((k + 1) % 16);
      if (k < nrecv) post_recv_wqe(srq_.buf + 64 * k + 16, k);
    }
    be32_at(fw_.host(srq_.dbr), nrecv);
    if (cfg & 0x10) post_sends();
  }

  // A receive WQE of one 1 KiB scatter entry (MR A, or MR B every fourth)
  // and the terminating invalid-lkey entry.
  void post_recv_wqe(uint64_t at, unsigned k) {
    std::byte* w = fw_.host(at);
    const bool b = k % 4 == 3;
    be32_at(w + offsetof(mlx5_wqe_data_seg, byte_count), 1024);
    be32_at(w + offsetof(mlx5_wqe_data_seg, lkey), b ? kKeyB : kKeyA);
    be64_at(w + offsetof(mlx5_wqe_data_seg, addr), b ? kVaB : kVaA + 1024 * k);
    be32_at(w + 16 + offsetof(mlx5_wqe_data_seg, lkey), MLX5_INVALID_LKEY);
  }

  // QP 0 (RC RTS): SEND 2 KiB, RDMA WRITE 1 KiB, RDMA READ 3 KiB, CMP_SWP,
  // FETCH_ADD, every one signalled; executed and transmitted to the peer.
  void post_sends() {
    const ModelFw::QpInfo& q = qps_[0];
    std::byte* sq = fw_.host(q.buf + q.sq_off);
    uint16_t idx = 0;
    auto wqe = [&](uint8_t opcode, uint32_t len, uint64_t laddr, bool raddr, bool atomic) {
      std::byte* w = sq + 64 * idx;
      size_t n = sizeof(mlx5_wqe_ctrl_seg);
      if (raddr) {
        be64_at(w + n + offsetof(mlx5_wqe_raddr_seg, raddr), 0x9000'0000'0000 + 64 * idx);
        be32_at(w + n + offsetof(mlx5_wqe_raddr_seg, rkey), 0x777);
        n += sizeof(mlx5_wqe_raddr_seg);
      }
      if (atomic) {
        be64_at(w + n + offsetof(mlx5_wqe_atomic_seg, swap_add), 5);
        be64_at(w + n + offsetof(mlx5_wqe_atomic_seg, compare), 0);
        n += sizeof(mlx5_wqe_atomic_seg);
      }
      be32_at(w + n + offsetof(mlx5_wqe_data_seg, byte_count), len);
      be32_at(w + n + offsetof(mlx5_wqe_data_seg, lkey), kKeyA);
      be64_at(w + n + offsetof(mlx5_wqe_data_seg, addr), laddr);
      n += sizeof(mlx5_wqe_data_seg);
      be32_at(w + offsetof(mlx5_wqe_ctrl_seg, opmod_idx_opcode), uint32_t{idx} << 8 | opcode);
      be32_at(w + offsetof(mlx5_wqe_ctrl_seg, qpn_ds), q.qpn << 8 | uint32_t(n / 16));
      w[offsetof(mlx5_wqe_ctrl_seg, fm_ce_se)] = std::byte(MLX5_WQE_CTRL_CQ_UPDATE);
      ++idx;
    };
    wqe(MLX5_OPCODE_SEND, 2048, kVaA, false, false);
    wqe(MLX5_OPCODE_RDMA_WRITE, 1024, kVaA + 4096, true, false);
    wqe(MLX5_OPCODE_RDMA_READ, 3072, kVaA + 8192, true, false);
    wqe(MLX5_OPCODE_ATOMIC_CS, 8, kVaA + 16384, true, true);
    wqe(MLX5_OPCODE_ATOMIC_FA, 8, kVaA + 16392, true, true);
    be32_at(fw_.host(q.dbr) + 4, idx);
    t_->record_sq(q.qpn);
    (void)t_->run_doorbells();
    drain_peer();
  }

  void deliver(uint8_t ctl, std::span<const uint8_t> in) {
    std::memcpy(buf_.data(), in.data(), in.size());
    std::span<uint8_t> d(buf_.data(), in.size());
    const unsigned target = ctl & 0x0F;
    if (target < kQps && d.size() >= wire::kBthBytes) {
      const uint32_t qpn = qps_[target].qpn;
      d[5] = uint8_t(qpn >> 16);
      d[6] = uint8_t(qpn >> 8);
      d[7] = uint8_t(qpn);
    }
    const uint32_t src = (ctl & 0x20) ? wire::loopback_ip(uint8_t(peer_host_ ^ 1)) : peer_->ip();
    const uint16_t sport = 0xC001;
    if (!(ctl & 0x10) && d.size() >= wire::kBthBytes + wire::kIcrcBytes)
      (void)wire::write_icrc(wire::Ipv4Flow{src, port_->ip(), sport, wire::kRoceV2UdpPort}, d);
    wire::RxPacket p;
    if (port_->accept(d, src, sport, p)) t_->receive(std::span(&p, 1));
    if (ctl & 0x40) (void)t_->run(false, false);
    if (ctl & 0x80) consume_cqes();
  }

  void consume_cqes() {
    for (const ModelFw::CqInfo& c : cqs_)
      if (const sim::fw::Cq* cq = fw_.tables().cq(c.cqn))
        be32_at(fw_.host(c.dbr), cq->producer_counter & 0xFFFFFF);
  }

  void drain_peer() {
    std::array<wire::RxPacket, wire::Port::kRxBatch> rx;
    for (;;) {
      Result<size_t> n = peer_->poll(rx);
      if (!n || *n == 0) break;
    }
  }

  void check() {
    const std::byte* now = fw_.arena();
    // The gaps between the writable ranges, each compared with memcmp (a
    // byte loop here would be instrumented compares and dominate the run).
    std::sort(allowed_.begin(), allowed_.end(),
              [](const Range& x, const Range& y) { return x.iova < y.iova; });
    uint64_t at = ModelFw::kArenaIova;
    auto same = [&](uint64_t from, uint64_t to) {
      const size_t o = from - ModelFw::kArenaIova;
      if (to <= from || std::memcmp(now + o, snapshot_.data() + o, to - from) == 0) return;
      for (size_t i = o; i < to - ModelFw::kArenaIova; ++i)
        if (now[i] != snapshot_[i])
          violated("device wrote memory outside a writable region", ModelFw::kArenaIova + i);
    };
    for (const Range& r : allowed_) {
      same(at, r.iova);
      at = std::max(at, r.iova + r.bytes);
    }
    same(at, ModelFw::kArenaIova + ModelFw::kArenaBytes);
    for (const ModelFw::CqInfo& c : cqs_) {
      const sim::fw::Cq* cq = fw_.tables().cq(c.cqn);
      if (cq == nullptr) continue;
      uint32_t ci = 0;
      for (int k = 0; k < 4; ++k) ci = ci << 8 | uint32_t(now[c.dbr - ModelFw::kArenaIova + k]);
      const uint32_t ahead = (cq->producer_counter - ci) & 0xFFFFFF;
      if (ahead > (1u << c.log_size)) violated("CQ producer beyond the ring", ahead);
    }
  }

  ModelFw fw_;
  std::unique_ptr<wire::Port> peer_;
  wire::Port* port_ = nullptr;
  std::unique_ptr<engine::Transport> t_;
  uint8_t peer_host_ = 0;
  std::array<ModelFw::QpInfo, kQps> qps_{};
  std::vector<ModelFw::CqInfo> cqs_;
  ModelFw::SrqInfo srq_;
  std::vector<Range> allowed_;
  std::vector<std::byte> snapshot_;
  std::array<uint8_t, wire::kMaxDatagram> buf_{};
};

Harness* harness = nullptr;

// ---- seed corpus ----
struct Seed {
  std::string name;
  std::vector<uint8_t> bytes;
};

void add_packet(std::vector<uint8_t>& out, uint8_t ctl, const wire::PacketHeaders& h,
                uint32_t payload_len) {
  std::vector<uint8_t> payload(payload_len);
  for (uint32_t i = 0; i < payload_len; ++i) payload[i] = uint8_t(i * 7 + 1);
  std::array<uint8_t, wire::kMaxDatagram> d{};
  Result<size_t> n = wire::build_packet(h, payload, d);
  if (!n) fuzz::harness_failed("build_packet", h.bth.opcode);
  out.push_back(ctl);
  out.push_back(uint8_t(*n >> 8));
  out.push_back(uint8_t(*n));
  out.insert(out.end(), d.begin(), d.begin() + static_cast<long>(*n));
}

wire::PacketHeaders hdr(uint8_t op, uint32_t psn, bool ack_req = false) {
  wire::PacketHeaders h;
  h.bth.opcode = op;
  h.bth.psn = psn & wire::kPsnMask;
  h.bth.ack_req = ack_req;
  const wire::OpcodeInfo* info = wire::opcode_info(op);
  if (info->ext & wire::kExtDeth) h.deth = wire::Deth{0x11111111, 0x123};
  if (info->ext & wire::kExtReth) h.reth = wire::Reth{kVaA, kKeyA, 0};
  if (info->ext & wire::kExtAtomicEth) h.atomic_eth = wire::AtomicEth{kVaA + 64, kKeyA, 3, 0};
  if (info->ext & wire::kExtAeth) h.aeth = wire::Aeth{0, 0};
  if (info->ext & wire::kExtAtomicAckEth) h.atomic_ack_eth = wire::AtomicAckEth{0};
  if (info->ext & wire::kExtImmDt) h.immdt = wire::ImmDt{0xABCD};
  return h;
}

std::vector<Seed> make_seeds() {
  namespace op = wire::opcode;
  std::vector<Seed> seeds;
  auto seed = [&](std::string name, uint8_t cfg) {
    seeds.push_back({std::move(name), {cfg}});
    return &seeds.back().bytes;
  };
  // One packet of every supported opcode, to a QP that accepts it.
  for (unsigned o = 0; o < 256; ++o) {
    const wire::OpcodeInfo* info = wire::opcode_info(uint8_t(o));
    if (info == nullptr) continue;
    const auto t = wire::transport_of(uint8_t(o));
    const uint8_t qp = t == wire::Transport::kUd ? 8 : t == wire::Transport::kUc ? 7 : 0;
    const bool response = info->operation == wire::Operation::kAcknowledge ||
                          info->operation == wire::Operation::kAtomicAcknowledge ||
                          info->operation == wire::Operation::kReadResponse;
    std::vector<uint8_t>* s = seed("op_" + std::to_string(o), response ? 0x14 : 0x04);
    wire::PacketHeaders h = hdr(uint8_t(o), response ? 0x222 : 0x111, true);
    uint32_t len = 0;
    if (info->payload)
      len = (info->position == wire::Position::kFirst || info->position == wire::Position::kMiddle)
                ? 1024
                : 100;
    if (h.reth) h.reth->dma_len = info->operation == wire::Operation::kReadRequest ? 512 : len;
    add_packet(*s, uint8_t(0x40 | qp), h, len);
  }
  // Multi-packet messages and the requester's whole exchange.
  {
    auto* s = seed("rc_send_3_packets", 0x04);
    add_packet(*s, 0, hdr(op::kSendFirst, 0x111), 1024);
    add_packet(*s, 0, hdr(op::kSendMiddle, 0x112), 1024);
    add_packet(*s, 0x40, hdr(op::kSendLastImm, 0x113, true), 10);
  }
  {
    auto* s = seed("rc_write_2_packets_srq", 0x04);
    wire::PacketHeaders f = hdr(op::kWriteFirst, 0x111);
    f.reth->dma_len = 1500;
    add_packet(*s, 6, f, 1024);
    add_packet(*s, 6, hdr(op::kWriteLastImm, 0x112, true), 476);
  }
  {
    auto* s = seed("uc_write_then_send", 0x02);
    wire::PacketHeaders f = hdr(op::kUc | op::kWriteFirst, 0x111);
    f.reth->dma_len = 2048;
    add_packet(*s, 7, f, 1024);
    add_packet(*s, 7, hdr(op::kUc | op::kWriteLast, 0x112), 1024);
    add_packet(*s, 7, hdr(op::kUc | op::kSendOnlyImm, 0x113), 64);
  }
  {
    auto* s = seed("requester_responses", 0x11);
    wire::PacketHeaders a = hdr(op::kAcknowledge, 0x223);  // SEND (2 packets) + WRITE
    a.aeth->msn = 2;
    add_packet(*s, 0, a, 0);
    for (uint32_t k = 0; k < 3; ++k) {
      const uint8_t o = k == 0   ? op::kReadResponseFirst
                        : k == 1 ? op::kReadResponseMiddle
                                 : op::kReadResponseLast;
      wire::PacketHeaders r = hdr(o, 0x225 + k);
      if (r.aeth) r.aeth->msn = 3;
      add_packet(*s, 0, r, 1024);
    }
    wire::PacketHeaders c = hdr(op::kAtomicAcknowledge, 0x228);
    c.aeth->msn = 4;
    add_packet(*s, 0, c, 0);
    c.bth.psn = 0x229;
    c.aeth->msn = 5;
    add_packet(*s, 0xC0, c, 0);
  }
  {
    auto* s = seed("requester_nak_then_rnr", 0x11);
    wire::PacketHeaders n = hdr(op::kAcknowledge, 0x222);
    n.aeth->syndrome = 0x60;  // NAK PSN sequence error
    add_packet(*s, 0x40, n, 0);
    n.aeth->syndrome = 0x20 | 12;  // RNR NAK
    add_packet(*s, 0x40, n, 0);
  }
  {
    auto* s = seed("rc_to_every_qp", 0x23);
    for (uint8_t q = 0; q < kQps; ++q) add_packet(*s, q, hdr(op::kSendOnly, 0x111, true), 32);
  }
  return seeds;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("KBV_FUZZ_SEEDS_OUT")) {
    for (const Seed& s : make_seeds()) {
      const std::string path = std::string(dir) + "/" + s.name;
      std::FILE* f = std::fopen(path.c_str(), "wb");
      if (f == nullptr || std::fwrite(s.bytes.data(), 1, s.bytes.size(), f) != s.bytes.size())
        fuzz::harness_failed("cannot write a seed");
      std::fclose(f);
    }
    std::exit(0);
  }
  harness = new Harness();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return harness->one(data, size);
}
