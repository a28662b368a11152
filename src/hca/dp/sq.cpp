// SPDX-License-Identifier: BSD-3-Clause
#include "hca/dp/sq.hpp"

#include <endian.h>

#include <algorithm>
#include <cstring>

#include "common/log.hpp"
#include "hca/dp/sq_post.hpp"
#include "hca/dp/wqe.hpp"
#include "hca/hca.hpp"
#include "hca/objects/qp.hpp"
#include "hca/prm/qpc.hpp"
#include "hca/prm/uar.hpp"

namespace kbv::hca {

namespace {
constexpr const char* kLog = "hca.sq";
namespace st = prm::qpc_st;
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
  q.bar_ = *cfg.bar;
  q.mask_ = (1u << cfg.log_blocks) - 1;
  q.ring_mask_ = (size_t{64} << cfg.log_blocks) - 1;
  q.bf_half_ = cfg.bf_reg_size / 2;
  q.ce_all_ = cfg.sig_all ? MLX5_WQE_CTRL_CQ_UPDATE : 0;
  // sq_post.hpp allowed(): UC sends and RDMA writes, RC all but the atomics.
  q.simple_ops_ = cfg.max_sge == 0    ? 0
                  : cfg.st == st::kRc ? 0b0011111
                  : cfg.st == st::kUc ? 0b0001111
                                      : 0;
  q.bf_one_ = cfg.bf_copy && 64 <= q.bf_half_;
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

void SendQueue::put_wrapped_inline(size_t start, const Sge* sg, size_t n, uint32_t total) {
  // At most 63 units in a WQE (sq.hpp create()), so the segment fits.
  alignas(16) std::byte seg[64 * 16];
  const uint32_t bytes = wqe::inline_seg_units(total) * 16;
  wqe::set_inline_data_seg(seg, sg, n, total);
  for (uint32_t off = 0; off < bytes; off += 16)
    std::memcpy(cfg_.ring + ((start + off) & ring_mask_), seg + off, 16);
}

void SendQueue::refused(size_t i, kbv_status_t st) const {
  log::debug(kLog, "qp {:#x}: work request {} refused: {}", cfg_.qpn, i, Status{st}.to_string());
}

kbv_status_t SendQueue::post_rc(const SendWr* wrs, size_t n, size_t* bad_index) {
  return post_wrs<st::kRc>(SendWrFields{}, wrs, n, bad_index);
}
kbv_status_t SendQueue::post_uc(const SendWr* wrs, size_t n, size_t* bad_index) {
  return post_wrs<st::kUc>(SendWrFields{}, wrs, n, bad_index);
}
kbv_status_t SendQueue::post_ud(const SendWr* wrs, size_t n, size_t* bad_index) {
  return post_wrs<st::kUd>(SendWrFields{}, wrs, n, bad_index);
}

}  // namespace kbv::hca
