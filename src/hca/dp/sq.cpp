// SPDX-License-Identifier: BSD-3-Clause
#include "hca/dp/sq.hpp"

#include <endian.h>

#include <algorithm>
#include <cstring>

#include "common/log.hpp"
#include "hca/hca.hpp"
#include "hca/objects/qp.hpp"
#include "hca/prm/qpc.hpp"
#include "hca/prm/uar.hpp"

namespace kbv::hca {

namespace {
constexpr const char* kLog = "hca.sq";
namespace st = prm::qpc_st;

static_assert(sizeof(mlx5_wqe_ctrl_seg) == 16, "mlx5dv.h control segment");
static_assert(sizeof(mlx5_wqe_raddr_seg) == 16, "mlx5dv.h remote address segment");
static_assert(sizeof(mlx5_wqe_atomic_seg) == 16, "mlx5dv.h atomic segment");
static_assert(sizeof(mlx5_wqe_datagram_seg) == 48, "mlx5dv.h datagram segment");
static_assert(sizeof(mlx5_wqe_data_seg) == 16, "mlx5dv.h data segment");
static_assert(MLX5_SEND_WQE_BB == 64);

constexpr uint8_t mlx5_opcode(WrOpcode op) {
  switch (op) {
    case WrOpcode::kSend: return MLX5_OPCODE_SEND;
    case WrOpcode::kSendImm: return MLX5_OPCODE_SEND_IMM;
    case WrOpcode::kRdmaWrite: return MLX5_OPCODE_RDMA_WRITE;
    case WrOpcode::kRdmaWriteImm: return MLX5_OPCODE_RDMA_WRITE_IMM;
    case WrOpcode::kRdmaRead: return MLX5_OPCODE_RDMA_READ;
    case WrOpcode::kAtomicCs: return MLX5_OPCODE_ATOMIC_CS;
    case WrOpcode::kAtomicFa: return MLX5_OPCODE_ATOMIC_FA;
  }
  return MLX5_OPCODE_NOP;
}

// Opcodes each transport allows (IBTA 9.7 / 10.2.2 table of operations per
// service type: UD sends only; UC sends and RDMA writes; RC everything).
template <uint32_t St>
constexpr bool allowed(WrOpcode op) {
  switch (op) {
    case WrOpcode::kSend:
    case WrOpcode::kSendImm: return true;
    case WrOpcode::kRdmaWrite:
    case WrOpcode::kRdmaWriteImm: return St != st::kUd;
    case WrOpcode::kRdmaRead:
    case WrOpcode::kAtomicCs:
    case WrOpcode::kAtomicFa: return St == st::kRc;
  }
  return false;
}

constexpr bool is_atomic(WrOpcode op) {
  return op == WrOpcode::kAtomicCs || op == WrOpcode::kAtomicFa;
}
constexpr bool has_raddr(WrOpcode op) {
  return op == WrOpcode::kRdmaWrite || op == WrOpcode::kRdmaWriteImm || op == WrOpcode::kRdmaRead ||
         is_atomic(op);
}
constexpr bool has_imm(WrOpcode op) {
  return op == WrOpcode::kSendImm || op == WrOpcode::kRdmaWriteImm;
}
}  // namespace

Result<SendQueue> SendQueue::create(const SqConfig& cfg) {
  if (cfg.ring == nullptr || cfg.dbrec == nullptr || cfg.bar == nullptr)
    return Status{KBV_ERR_INVALID_ARGUMENT};
  if (cfg.log_blocks > 16 || cfg.qpn > 0xFFFFFF) return Status{KBV_ERR_INVALID_ARGUMENT};
  // A register of 2^n >= 16 bytes (two halves of >= 8), 8-byte aligned;
  // 64-byte aligned when whole WQEs are copied into it.
  const uint32_t reg = cfg.bf_reg_size;
  if (reg != 0 && (reg < 16 || (reg & (reg - 1)) != 0)) return Status{KBV_ERR_INVALID_ARGUMENT};
  if (!cfg.bar->contains(cfg.bf_offset, reg ? reg : 8) || (cfg.bf_offset & 7) != 0 ||
      (cfg.bf_copy && (cfg.bf_offset & 63) != 0))
    return Status{KBV_ERR_INVALID_ARGUMENT};
  // The largest WQE this queue can build: qpn_ds carries its size in 6 bits
  // (mlx5dv.h MLX5_WQE_CTRL_DS_MASK 0x3f), and it must fit in the ring.
  const uint64_t seg = cfg.st == st::kUd ? 3 : cfg.st == st::kRc ? 2 : 1;
  const uint64_t data = std::max<uint64_t>({cfg.max_sge, (4ull + cfg.max_inline + 15) / 16, 1});
  const uint64_t max_ds = 1 + seg + data;
  if (max_ds > 0x3F || (max_ds * 16 + 63) / 64 > (1ull << cfg.log_blocks))
    return Status{KBV_ERR_LIMIT_EXCEEDED};
  SendQueue q;
  switch (cfg.st) {
    case st::kRc: q.kind_ = Kind::kRc; break;
    case st::kUc: q.kind_ = Kind::kUc; break;
    case st::kUd: q.kind_ = Kind::kUd; break;
    default: return Status{KBV_ERR_NOT_SUPPORTED};
  }
  q.cfg_ = cfg;
  q.mask_ = (1u << cfg.log_blocks) - 1;
  q.ring_mask_ = (size_t{64} << cfg.log_blocks) - 1;
  q.bf_half_ = cfg.bf_reg_size / 2;
  q.slots_.assign(size_t{1} << cfg.log_blocks, Slot{0, 0});
  return q;
}

Result<SendQueue> SendQueue::for_qp(Hca& hca, const Qp& qp, const QpConfig& qp_cfg,
                                    uint32_t bf_index, bool sig_all) {
  if (!qp.alive() || bf_index >= prm::kBfRegsPerUar) return Status{KBV_ERR_INVALID_ARGUMENT};
  const HcaCaps& caps = hca.caps();
  SqConfig c;
  c.ring = qp.mem().buf() + qp.sq_offset();
  c.log_blocks = qp.sq_log();
  c.dbrec = qp.mem().dbrec();
  c.bar = &hca.io().bar0();
  // rdma-core mlx5 (bf_reg_size = 1 << log_bf_reg_size, each register used
  // in two halves) and kernel MLX5_BF_OFFSET: register i at UAR + 0x800 + i * size.
  if (caps.log_bf_reg_size > 11) return Status{KBV_ERR_INVALID_ARGUMENT};  // > 2 KiB: not a UAR's
  const uint32_t reg = caps.log_bf_reg_size ? 1u << caps.log_bf_reg_size : 0;
  c.bf_reg_size = reg;
  c.bf_offset = hca.uar().bar_offset() + prm::kUarBlueflameOff + uint64_t{bf_index} * reg;
  c.bf_copy = caps.bf;
  c.qpn = qp.qpn();
  c.st = qp.st();
  c.max_sge = qp_cfg.max_send_sge;
  c.max_inline = qp_cfg.max_inline_data;
  c.sig_all = sig_all;
  return create(c);
}

template <uint32_t St>
[[gnu::always_inline]] inline kbv_status_t SendQueue::check(const SendWr& wr, uint32_t* ds) const {
  const WrOpcode op = wr.opcode;
  if (!allowed<St>(op)) return KBV_ERR_INVALID_WR_TYPE;
  if (wr.sg.size() > cfg_.max_sge) return KBV_ERR_TOO_MANY_SGE;
  uint32_t n = 1;  // control segment
  if constexpr (St == st::kUd) {
    if (wr.ah == nullptr || wr.remote_qpn > 0xFFFFFF) return KBV_ERR_INVALID_ARGUMENT;
    n += 3;  // datagram segment
  }
  if (has_raddr(op)) ++n;
  if (is_atomic(op)) {
    // IBTA 9.4.5: an atomic operates on 8 bytes; the local SGE receives the
    // original value.
    if ((wr.flags & send_flags::kInline) || wr.sg.size() != 1 || wr.sg[0].length != 8)
      return KBV_ERR_INVALID_ARGUMENT;
    *ds = n + 2;  // atomic segment + one data segment
    return KBV_SUCCESS;
  }
  if (wr.flags & send_flags::kInline) {
    if (op == WrOpcode::kRdmaRead) return KBV_ERR_INVALID_ARGUMENT;
    uint64_t total = 0;
    for (const Sge& s : wr.sg) {
      if (s.length != 0 && s.addr == 0) return KBV_ERR_INVALID_ARGUMENT;
      total += s.length;
    }
    if (total > cfg_.max_inline) return KBV_ERR_INLINE_TOO_LARGE;
    if (total) n += static_cast<uint32_t>((4 + total + 15) / 16);
  } else {
    for (const Sge& s : wr.sg) n += s.length != 0;
  }
  *ds = n;
  return KBV_SUCCESS;
}

template <uint32_t St>
[[gnu::always_inline]] inline void SendQueue::build(const SendWr& wr, uint32_t ds) {
  const WrOpcode op = wr.opcode;
  const uint32_t pc = pc_;
  uint32_t u = 1;
  if constexpr (St == st::kUd) {
    // rdma-core qp.c set_datagram_seg: the Ah's AV with the request's
    // destination QPN and Q_Key.
    mlx5_wqe_av av = wr.ah->av;
    av.dqp_dct = htobe32(wr.remote_qpn | MLX5_EXTENDED_UD_AV);
    av.key.qkey.qkey = htobe32(wr.q_key);
    const auto* p = reinterpret_cast<const std::byte*>(&av);
    for (uint32_t k = 0; k < 3; ++k) std::memcpy(unit(pc, u++), p + 16 * k, 16);
  }
  if (has_raddr(op)) {
    mlx5_wqe_raddr_seg r{};
    r.raddr = htobe64(wr.remote_addr);
    r.rkey = htobe32(wr.rkey);
    std::memcpy(unit(pc, u++), &r, 16);
  }
  if (is_atomic(op)) {
    mlx5_wqe_atomic_seg a{};
    if (op == WrOpcode::kAtomicCs) {
      a.swap_add = htobe64(wr.swap);
      a.compare = htobe64(wr.compare_add);
    } else {
      a.swap_add = htobe64(wr.compare_add);
    }
    std::memcpy(unit(pc, u++), &a, 16);
  }
  if ((wr.flags & send_flags::kInline) && !is_atomic(op)) {
    uint32_t total = 0;
    for (const Sge& s : wr.sg) total += s.length;
    if (total) {
      // Header + bytes + zero pad to 16 B, written across the ring end.
      const uint32_t bytes = (4 + total + 15) / 16 * 16;
      const size_t start = ((size_t{pc} << 6) + (size_t{u} << 4)) & ring_mask_;
      const size_t ring = ring_mask_ + 1;
      // Copies len bytes from src (nullptr: zeros) to byte `off` of the
      // inline segment, continuing at the ring start past the ring end.
      auto put = [&](size_t off, const void* src, size_t len) {
        size_t pos = (start + off) & ring_mask_;
        const auto* s = static_cast<const std::byte*>(src);
        while (len) {
          const size_t chunk = std::min(len, ring - pos);
          if (s != nullptr) {
            std::memcpy(cfg_.ring + pos, s, chunk);
            s += chunk;
          } else {
            std::memset(cfg_.ring + pos, 0, chunk);
          }
          len -= chunk;
          pos = 0;
        }
      };
      const uint32_t hdr = htobe32(total | MLX5_INLINE_SEG);
      put(0, &hdr, 4);
      size_t off = 4;
      for (const Sge& s : wr.sg) {
        put(off, reinterpret_cast<const void*>(static_cast<uintptr_t>(s.addr)), s.length);
        off += s.length;
      }
      put(off, nullptr, bytes - off);
    }
  } else {
    for (const Sge& s : wr.sg) {
      if (s.length == 0) continue;
      mlx5_wqe_data_seg d;
      d.byte_count = htobe32(s.length);
      d.lkey = htobe32(s.lkey);
      d.addr = htobe64(s.addr);
      std::memcpy(unit(pc, u++), &d, 16);
    }
  }
  // The control segment goes last (the doorbell is what publishes the WQE;
  // this order only keeps a half-built WQE from looking complete in a dump).
  mlx5_wqe_ctrl_seg c{};
  c.opmod_idx_opcode = htobe32((pc & 0xFFFF) << 8 | mlx5_opcode(op));
  c.qpn_ds = htobe32(cfg_.qpn << 8 | ds);
  uint8_t f = 0;
  if ((wr.flags & send_flags::kSignaled) || cfg_.sig_all) f |= MLX5_WQE_CTRL_CQ_UPDATE;
  if (wr.flags & send_flags::kSolicited) f |= MLX5_WQE_CTRL_SOLICITED;
  if (wr.flags & send_flags::kFence) f |= MLX5_WQE_CTRL_FENCE;
  c.fm_ce_se = f;
  if (has_imm(op)) c.imm = htobe32(wr.imm);
  std::memcpy(unit(pc, 0), &c, 16);
}

[[gnu::always_inline]] inline void SendQueue::ring_doorbell(uint32_t first_pc, uint32_t n,
                                                            uint32_t last_pc) {
  // WQEs before the record the device may read because of it.
  platform::udma_to_device_barrier();
  cfg_.dbrec[1] = htobe32(pc_ & 0xFFFF);
  // Record (and WQEs) before the UAR write; also opens the WC sequence.
  platform::mmio_wc_start();
  const uint64_t reg = cfg_.bf_offset + bf_cur_;
  const uint32_t bytes = (pc_ - first_pc) * 64;
  if (n == 1 && cfg_.bf_copy && bytes <= bf_half_) {
    // BlueFlame: the whole WQE through the register (rdma-core mlx5_bf_copy).
    for (uint32_t k = 0; k < bytes / 64; ++k)
      cfg_.bar->bf_copy64(reg + 64 * k, unit(first_pc + k, 0));
  } else {
    // The first 8 bytes of the last control segment (big-endian in memory):
    // opmod_idx_opcode, qpn_ds.
    const auto* c = reinterpret_cast<const uint32_t*>(unit(last_pc, 0));
    cfg_.bar->write64_be(reg, uint64_t{be32toh(c[0])} << 32 | be32toh(c[1]));
  }
  platform::mmio_flush_writes();
  bf_cur_ ^= bf_half_;
}

void SendQueue::refused(size_t i, kbv_status_t st) const {
  log::debug(kLog, "qp {:#x}: work request {} refused: {}", cfg_.qpn, i, Status{st}.to_string());
}

template <uint32_t St>
[[gnu::always_inline]] inline kbv_status_t SendQueue::post_impl(const SendWr* wrs, size_t n,
                                                                size_t* bad_index) {
  const uint32_t first = pc_;
  uint32_t last = pc_;
  kbv_status_t result = KBV_SUCCESS;
  size_t i = 0;
  for (; i < n; ++i) {
    const SendWr& wr = wrs[i];
    uint32_t ds = 0;
    kbv_status_t s = check<St>(wr, &ds);
    const uint32_t bbs = (ds * 16 + 63) / 64;
    if (s == KBV_SUCCESS && (pc_ - tail_) + bbs > mask_ + 1) s = KBV_ERR_QUEUE_FULL;
    if (s != KBV_SUCCESS) [[unlikely]] {
      if (bad_index) *bad_index = i;
      refused(i, s);
      result = s;
      break;
    }
    build<St>(wr, ds);
    slots_[pc_ & mask_] = Slot{wr.wr_id, pc_ + bbs};
    last = pc_;
    pc_ += bbs;
  }
  if (i) ring_doorbell(first, static_cast<uint32_t>(i), last);
  return result;
}

kbv_status_t SendQueue::post_rc(const SendWr* wrs, size_t n, size_t* bad_index) {
  return post_impl<st::kRc>(wrs, n, bad_index);
}
kbv_status_t SendQueue::post_uc(const SendWr* wrs, size_t n, size_t* bad_index) {
  return post_impl<st::kUc>(wrs, n, bad_index);
}
kbv_status_t SendQueue::post_ud(const SendWr* wrs, size_t n, size_t* bad_index) {
  return post_impl<st::kUd>(wrs, n, bad_index);
}

}  // namespace kbv::hca
