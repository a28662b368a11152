// SPDX-License-Identifier: BSD-3-Clause
//
// Qp: a queue pair of the mlx5 driver (RC, UC or UD) — its work queue
// buffer (receive queue first, then the send queue, as the kernel's mlx5_ib
// lays it out and create_qp_in.pas[] describes it), its doorbell record
// ([0] receive counter, [1] send counter), the firmware QP (CREATE_QP,
// cmd/qp.hpp), every state transition (modify), multicast membership, and
// the RoCEv2 address path built from a destination GID.
//
// Sizes (docs/PRM.md "Data path": 64-byte WQE basic blocks):
//   send WQE = control segment 16 B + (UD: datagram segment 48 B; RC: remote
//   address 16 B + atomic 16 B; UC: remote address 16 B) + max(16 B per SGE,
//   inline: 4 B header + max_inline_data rounded to 16), in whole 64-byte
//   basic blocks; log_sq_size = log2ceil(max_send_wr * blocks per WQE);
//   receive WQE stride = 2^log2ceil(16 B * max_recv_sge), log_rq_size =
//   log2ceil(max_recv_wr). With an SRQ (or max_recv_wr == 0) there is no own
//   receive queue (rq_type SRQ / zero-length).
//   Refused before the command with KBV_ERR_LIMIT_EXCEEDED: a send WQE above
//   caps.max_wqe_sz_sq or 1008 B (63 16-B units, the control segment's ds
//   field), a receive stride above caps.max_wqe_sz_rq, a queue
//   above 2^caps.log_max_qp_sz.
//
// State: state() is the driver's view, updated when a transition succeeds
// (IBTA 10.3.1); firmware is the authority (query()). An illegal transition
// completes with KBV_ERR_INVALID_QP_STATE (firmware BAD_QP_STATE).
//
// RoCEv2 address path (roce_path): rgid_rip = the destination GID (for IPv4
// the IPv4-mapped ::ffff:a.b.c.d, IBTA Annex A17), src_addr_index = the
// local GID index, grh = 1, rmac = the next hop's MAC (the caller resolves it:
// ARP/ND on a host, QUERY_ROCE_ADDRESS of the peer on the model), hop_limit,
// tclass, flow_label, sl; udp_sport = the RoCEv2 flow-entropy source port
// derived from the QP pair when not given (the kernel's rdma_calc_flow_label
// + rdma_flow_label_to_udp_sport: 0xC000 | 14 folded bits), folded into
// roce_cap's [r_roce_min_src_udp_port, r_roce_max_src_udp_port] when the
// device advertises a range.
//
// Lifetime as Cq (the object outlives its pending commands; destroy first:
// firmware refuses to destroy a QP still attached to a group, KBV_ERR_BUSY).
// Threading: as Hca (one thread).
#pragma once

#include <kbv/status.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>

#include "hca/cmd/qp.hpp"
#include "hca/hca.hpp"
#include "hca/objects/cq.hpp"

namespace kbv::hca {

using Gid = std::array<uint8_t, 16>;

// ::ffff:a.b.c.d (RFC 4291 2.5.5.2; RoCEv2 GIDs of IPv4 addresses).
constexpr Gid ipv4_mapped_gid(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
}
constexpr bool is_ipv4_mapped(const Gid& g) {
  for (int i = 0; i < 10; ++i)
    if (g[i] != 0) return false;
  return g[10] == 0xff && g[11] == 0xff;
}

// Where a RoCEv2 path (QP address path or UD address handle) leads.
struct RoceDest {
  Gid dgid{};
  uint8_t sgid_index = 0;
  uint64_t dmac = 0;  // next-hop MAC, 48 bits
  uint8_t port = 1;
  uint8_t hop_limit = 64;
  uint8_t tclass = 0;
  uint32_t flow_label = 0;
  uint8_t sl = 0;
  uint16_t udp_sport = 0;  // 0: derived from the QPNs
};

// RoCEv2 UDP source port for a QP pair (see above).
uint16_t roce_udp_sport(const HcaCaps& caps, uint32_t lqpn, uint32_t rqpn);
// The primary address path toward `d` for local QP lqpn talking to rqpn.
cmd::AddressPath roce_path(const HcaCaps& caps, const RoceDest& d, uint32_t lqpn, uint32_t rqpn);

struct QpConfig {
  uint32_t st = prm::qpc_st::kRc;
  uint32_t pd = 0;
  uint32_t send_cqn = 0;
  uint32_t recv_cqn = 0;
  std::optional<uint32_t> srqn;  // receive from this SRQ
  uint32_t max_send_wr = 64;
  uint32_t max_recv_wr = 64;
  uint32_t max_send_sge = 1;
  uint32_t max_recv_sge = 1;
  uint32_t max_inline_data = 0;
  uint32_t user_index = 0;
};

class Qp {
 public:
  static constexpr uint32_t kBasicBlock = 64;

  static Status create(Hca& hca, const QpConfig& cfg, cmd::Done<std::unique_ptr<Qp>> done);
  ~Qp();
  Qp(const Qp&) = delete;
  Qp& operator=(const Qp&) = delete;

  uint32_t qpn() const { return qpn_; }
  uint32_t st() const { return st_; }
  uint32_t state() const { return state_; }  // prm::qp_state, driver's view
  bool alive() const { return alive_; }
  const QueueMem& mem() const { return mem_; }
  uint32_t sq_blocks() const { return sq_log_ ? 1u << sq_log_ : 0; }
  uint32_t sq_log() const { return sq_log_; }
  uint32_t wqe_blocks() const { return wqe_blocks_; }  // basic blocks per send WQE
  uint32_t rq_wqes() const { return has_rq_ ? 1u << rq_log_ : 0; }
  uint32_t rq_log() const { return rq_log_; }
  uint32_t rq_stride() const { return has_rq_ ? 16u << rq_log_stride_ : 0; }
  uint64_t sq_offset() const { return sq_offset_; }  // bytes into mem().buf()

  // Any transition (cmd/qp.hpp for what each carries).
  Status modify(cmd::QpTransition t, const cmd::QpAttr& a, uint32_t opt_param_mask,
                cmd::DoneStatus done);
  Status query(cmd::Done<cmd::QpInfo> done);
  Status attach_mcast(const Gid& mgid, cmd::DoneStatus done);
  Status detach_mcast(const Gid& mgid, cmd::DoneStatus done);
  Status destroy(cmd::DoneStatus done);

 private:
  explicit Qp(Hca& hca) : hca_(hca) {}

  Hca& hca_;
  QueueMem mem_;
  uint32_t qpn_ = 0;
  uint32_t st_ = 0;
  uint32_t state_ = prm::qp_state::kRst;
  uint32_t sq_log_ = 0, wqe_blocks_ = 0;
  bool has_rq_ = false;
  uint32_t rq_log_ = 0, rq_log_stride_ = 0;
  uint64_t sq_offset_ = 0;
  bool alive_ = false;
  bool busy_ = false;  // destroy pending
};

}  // namespace kbv::hca
