// SPDX-License-Identifier: BSD-3-Clause
#include "sim/engine/wqe.hpp"

#include <infiniband/mlx5dv.h>

#include <cstddef>
#include <cstring>

namespace kbv::sim::engine {

namespace {

uint32_t be32(const std::byte* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}
uint64_t be64(const std::byte* p) { return uint64_t{be32(p)} << 32 | be32(p + 4); }
uint16_t be16(const std::byte* p) { return uint16_t(uint16_t(p[0]) << 8 | uint16_t(p[1])); }

constexpr WqeStatus fail(uint8_t synd, WqeVendor v) { return WqeStatus{synd, v}; }
constexpr WqeStatus qp_op(WqeVendor v) { return fail(MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, v); }
constexpr WqeStatus length_err(WqeVendor v) { return fail(MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, v); }

// PRM "Data Segment": byte_count 0 stands for 2^31 bytes.
uint32_t seg_bytes(uint32_t bc) { return bc == 0 ? 0x80000000u : bc; }

void read_data_seg(const std::byte* p, Sge* s) {
  s->byte_count = seg_bytes(be32(p + offsetof(mlx5_wqe_data_seg, byte_count)));
  s->lkey = be32(p + offsetof(mlx5_wqe_data_seg, lkey));
  s->addr = be64(p + offsetof(mlx5_wqe_data_seg, addr));
}

// Opcodes a service type accepts (IBTA 3.7.2 / Table 9: UC has no READ or
// atomics, UD only SEND).
bool opcode_allowed(uint8_t op, uint32_t st) {
  switch (op) {
    case MLX5_OPCODE_NOP:
    case MLX5_OPCODE_SEND:
    case MLX5_OPCODE_SEND_IMM: return true;
    case MLX5_OPCODE_RDMA_WRITE:
    case MLX5_OPCODE_RDMA_WRITE_IMM: return st == prm::qpc_st::kRc || st == prm::qpc_st::kUc;
    case MLX5_OPCODE_RDMA_READ:
    case MLX5_OPCODE_ATOMIC_CS:
    case MLX5_OPCODE_ATOMIC_FA: return st == prm::qpc_st::kRc;
    default: return false;
  }
}

}  // namespace

bool buffer_iova(const fw::WqBuffer& buf, uint64_t off, uint64_t* iova) {
  const uint64_t pb = buf.page_bytes();
  const uint64_t abs = buf.offset_bytes() + off;
  if (abs < off) return false;
  const uint64_t page = abs / pb;
  if (page >= buf.pas.size()) return false;
  *iova = buf.pas[page] + abs % pb;
  return true;
}

namespace {
template <class Fn>
Status buffer_walk(const fw::WqBuffer& buf, uint64_t off, uint64_t len, Fn&& fn) {
  const uint64_t pb = buf.page_bytes();
  uint64_t done = 0;
  while (done < len) {
    uint64_t iova = 0;
    if (!buffer_iova(buf, off + done, &iova)) return KBV_ERR_INVALID_ARGUMENT;
    const uint64_t in_page = pb - (buf.offset_bytes() + off + done) % pb;
    const uint64_t n = in_page < len - done ? in_page : len - done;
    Status st = fn(iova, done, n);
    if (!st.is_ok()) return st;
    done += n;
  }
  return Status::ok();
}
}  // namespace

Status ring_read(Iommu& iommu, const fw::WqBuffer& buf, uint64_t ring_off, uint64_t ring_bytes,
                 uint64_t pos, std::span<std::byte> dst) {
  if (ring_bytes == 0 || dst.size() > ring_bytes) return KBV_ERR_INVALID_ARGUMENT;
  pos %= ring_bytes;
  uint64_t done = 0;
  while (done < dst.size()) {
    const uint64_t run =
        ring_bytes - pos < dst.size() - done ? ring_bytes - pos : dst.size() - done;
    Status st = buffer_walk(buf, ring_off + pos, run, [&](uint64_t iova, uint64_t at, uint64_t n) {
      return iommu.dma_read(iova, dst.subspan(done + at, n));
    });
    if (!st.is_ok()) return st;
    done += run;
    pos = 0;
  }
  return Status::ok();
}

Status buffer_write(Iommu& iommu, const fw::WqBuffer& buf, uint64_t off,
                    std::span<const std::byte> src) {
  return buffer_walk(buf, off, src.size(), [&](uint64_t iova, uint64_t at, uint64_t n) {
    return iommu.dma_write(iova, src.subspan(at, n));
  });
}

WqeStatus parse_send_bytes(std::span<const std::byte> wqe, uint32_t st, uint32_t qpn,
                           uint16_t wqe_index, uint32_t log_msg_max, ParsedWqe* out) {
  if (wqe.size() < sizeof(mlx5_wqe_ctrl_seg)) return qp_op(WqeVendor::kBadDs);
  const std::byte* c = wqe.data();
  const uint32_t oio = be32(c + offsetof(mlx5_wqe_ctrl_seg, opmod_idx_opcode));
  const uint32_t qd = be32(c + offsetof(mlx5_wqe_ctrl_seg, qpn_ds));
  const uint8_t fm = static_cast<uint8_t>(c[offsetof(mlx5_wqe_ctrl_seg, fm_ce_se)]);
  out->opcode = static_cast<uint8_t>(oio & 0xff);
  out->wqe_index = static_cast<uint16_t>(oio >> 8);
  out->opmod = static_cast<uint8_t>(oio >> 24);
  out->ds = qd & 0x3f;  // 6 bits: kernel include/linux/mlx5/qp.h MLX5_WQE_CTRL_DS_MASK
  out->wqebbs = (out->ds + 3) / 4;
  out->fence = (fm & MLX5_WQE_CTRL_FENCE) != 0;
  out->cqe_req = (fm & MLX5_WQE_CTRL_CQ_UPDATE) != 0;
  out->solicited = (fm & MLX5_WQE_CTRL_SOLICITED) != 0;
  out->imm = be32(c + offsetof(mlx5_wqe_ctrl_seg, imm));
  out->raddr = out->swap_add = out->compare = 0;
  out->rkey = 0;
  out->num_sge = 0;
  out->is_inline = false;
  out->inline_len = 0;
  out->length = 0;
  out->av = UdAv{};

  if (out->wqe_index != wqe_index) return qp_op(WqeVendor::kBadIndex);
  if ((qd >> 8) != (qpn & 0xffffff)) return qp_op(WqeVendor::kBadQpn);
  // Bits 7:6 of qpn_ds are reserved and ignored, as the kernel's WQE readers
  // mask them (mlx5_ib odp.c).
  if (out->ds == 0 || out->ds * 16u > kMaxSendWqeBytes || out->ds * 16u > wqe.size())
    return qp_op(WqeVendor::kBadDs);
  if (!opcode_allowed(out->opcode, st)) return qp_op(WqeVendor::kBadOpcode);
  if (out->opmod != 0) return qp_op(WqeVendor::kBadOpmod);
  if (out->opcode == MLX5_OPCODE_NOP) return {};

  const std::size_t end = out->ds * 16u;
  std::size_t at = sizeof(mlx5_wqe_ctrl_seg);
  auto need = [&](std::size_t n) { return at + n <= end; };

  if (st == prm::qpc_st::kUd) {
    if (!need(sizeof(mlx5_wqe_datagram_seg))) return qp_op(WqeVendor::kTruncated);
    const std::byte* a = c + at;
    out->av.qkey = be32(a + offsetof(mlx5_wqe_av, key.qkey.qkey));
    const uint32_t dqp = be32(a + offsetof(mlx5_wqe_av, dqp_dct));
    out->av.dqpn = dqp & 0xffffff;
    out->av.extended = (dqp & MLX5_EXTENDED_UD_AV) != 0;
    out->av.stat_rate_sl = static_cast<uint8_t>(a[offsetof(mlx5_wqe_av, stat_rate_sl)]);
    out->av.fl_mlid = static_cast<uint8_t>(a[offsetof(mlx5_wqe_av, fl_mlid)]);
    std::memcpy(out->av.rmac.data(), a + offsetof(mlx5_wqe_av, rmac), 6);
    out->av.tclass = static_cast<uint8_t>(a[offsetof(mlx5_wqe_av, tclass)]);
    out->av.hop_limit = static_cast<uint8_t>(a[offsetof(mlx5_wqe_av, hop_limit)]);
    out->av.grh_gid_fl = be32(a + offsetof(mlx5_wqe_av, grh_gid_fl));
    std::memcpy(out->av.rgid.data(), a + offsetof(mlx5_wqe_av, rgid), 16);
    at += sizeof(mlx5_wqe_datagram_seg);
  }

  const bool atomic = out->opcode == MLX5_OPCODE_ATOMIC_CS || out->opcode == MLX5_OPCODE_ATOMIC_FA;
  const bool rdma = out->opcode == MLX5_OPCODE_RDMA_WRITE ||
                    out->opcode == MLX5_OPCODE_RDMA_WRITE_IMM ||
                    out->opcode == MLX5_OPCODE_RDMA_READ;
  if (rdma || atomic) {
    if (!need(sizeof(mlx5_wqe_raddr_seg))) return qp_op(WqeVendor::kTruncated);
    out->raddr = be64(c + at + offsetof(mlx5_wqe_raddr_seg, raddr));
    out->rkey = be32(c + at + offsetof(mlx5_wqe_raddr_seg, rkey));
    at += sizeof(mlx5_wqe_raddr_seg);
  }
  if (atomic) {
    if (!need(sizeof(mlx5_wqe_atomic_seg))) return qp_op(WqeVendor::kTruncated);
    out->swap_add = be64(c + at + offsetof(mlx5_wqe_atomic_seg, swap_add));
    out->compare = be64(c + at + offsetof(mlx5_wqe_atomic_seg, compare));
    at += sizeof(mlx5_wqe_atomic_seg);
  }

  // Data: pointer segments or inline segments (not both).
  bool saw_ptr = false;
  while (at < end) {
    const uint32_t bc = be32(c + at);
    if (bc & MLX5_INLINE_SEG) {
      if (saw_ptr) return qp_op(WqeVendor::kMixedInline);
      if (out->opcode == MLX5_OPCODE_RDMA_READ || atomic)
        return qp_op(WqeVendor::kInlineNotAllowed);
      const uint32_t n = bc & ~uint32_t{MLX5_INLINE_SEG};
      const std::size_t data_at = at + sizeof(mlx5_wqe_inl_data_seg);
      if (n > end - data_at || out->inline_len + n > kMaxInline)
        return length_err(WqeVendor::kInlineOverrun);
      std::memcpy(out->inline_data.data() + out->inline_len, c + data_at, n);
      out->inline_len += n;
      out->is_inline = true;
      // The segment is padded to 16 bytes (header + data).
      at += (sizeof(mlx5_wqe_inl_data_seg) + n + 15) / 16 * 16;
      continue;
    }
    if (out->is_inline) return qp_op(WqeVendor::kMixedInline);
    if (!need(sizeof(mlx5_wqe_data_seg))) return qp_op(WqeVendor::kTruncated);
    if (out->num_sge >= kMaxSge) return qp_op(WqeVendor::kTooManySge);
    Sge& s = out->sge[out->num_sge++];
    read_data_seg(c + at, &s);
    out->length += s.byte_count;
    saw_ptr = true;
    at += sizeof(mlx5_wqe_data_seg);
  }
  if (out->is_inline) out->length = out->inline_len;
  if (atomic && (out->num_sge != 1 || out->sge[0].byte_count != 8))
    return length_err(WqeVendor::kAtomicLength);
  if (log_msg_max < 64 && out->length > (uint64_t{1} << log_msg_max))
    return length_err(WqeVendor::kMsgTooLong);
  return {};
}

WqeStatus parse_send_wqe(Iommu& iommu, const fw::Qp& qp, uint16_t wqe_index, ParsedWqe* out) {
  const uint64_t ring = uint64_t{MLX5_SEND_WQE_BB} << qp.log_sq_size;
  if (qp.no_sq || qp.sq_bytes == 0 || ring > qp.sq_bytes) return qp_op(WqeVendor::kRingGeometry);
  const uint64_t nbb = uint64_t{1} << qp.log_sq_size;
  const uint64_t pos = (wqe_index & (nbb - 1)) * MLX5_SEND_WQE_BB;
  std::array<std::byte, kMaxSendWqeBytes> raw;
  // First the ctrl segment, for ds; then the whole WQE.
  std::span<std::byte> ctrl(raw.data(), sizeof(mlx5_wqe_ctrl_seg));
  if (!ring_read(iommu, qp.buf, qp.sq_offset, ring, pos, ctrl).is_ok())
    return qp_op(WqeVendor::kFetchFault);
  const uint32_t ds = be32(raw.data() + offsetof(mlx5_wqe_ctrl_seg, qpn_ds)) & 0x3f;
  uint64_t bytes = uint64_t{ds} * 16;
  if (bytes > kMaxSendWqeBytes || bytes > ring)
    bytes = sizeof(mlx5_wqe_ctrl_seg);  // rejected below
  if (bytes > sizeof(mlx5_wqe_ctrl_seg) &&
      !ring_read(iommu, qp.buf, qp.sq_offset, ring, pos, std::span<std::byte>(raw.data(), bytes))
           .is_ok())
    return qp_op(WqeVendor::kFetchFault);
  if (ds * 16ull > ring) {
    out->ds = ds;
    return qp_op(WqeVendor::kBadDs);
  }
  return parse_send_bytes(std::span<const std::byte>(raw.data(), bytes), qp.st, qp.qpn, wqe_index,
                          qp.log_msg_max, out);
}

WqeStatus parse_recv_bytes(std::span<const std::byte> wqe, bool srq, ParsedRecv* out) {
  out->num_sge = 0;
  out->length = 0;
  out->next_wqe_index = 0;
  if (wqe.size() > kMaxRecvWqeBytes || wqe.size() % 16 != 0)
    return qp_op(WqeVendor::kBadRecvLength);
  std::size_t at = 0;
  if (srq) {
    if (wqe.size() < sizeof(mlx5_wqe_srq_next_seg)) return qp_op(WqeVendor::kTruncated);
    out->next_wqe_index = be16(wqe.data() + offsetof(mlx5_wqe_srq_next_seg, next_wqe_index));
    at = sizeof(mlx5_wqe_srq_next_seg);
  }
  while (at + sizeof(mlx5_wqe_data_seg) <= wqe.size()) {
    Sge s;
    read_data_seg(wqe.data() + at, &s);
    if (s.lkey == MLX5_INVALID_LKEY) break;
    if (out->num_sge >= kMaxSge) return qp_op(WqeVendor::kTooManySge);
    out->sge[out->num_sge++] = s;
    out->length += s.byte_count;
    at += sizeof(mlx5_wqe_data_seg);
  }
  return {};
}

WqeStatus parse_recv_wqe(Iommu& iommu, const fw::Qp& qp, uint32_t index, ParsedRecv* out) {
  const uint64_t stride = uint64_t{16} << qp.log_rq_stride;
  const uint64_t ring = stride << qp.log_rq_size;
  if (qp.rq_type != prm::qpc_rq_type::kNonZeroRq || qp.rq_bytes == 0 || ring > qp.rq_bytes)
    return qp_op(WqeVendor::kRingGeometry);
  if (stride > kMaxRecvWqeBytes) return qp_op(WqeVendor::kBadRecvLength);
  std::array<std::byte, kMaxRecvWqeBytes> raw;
  std::span<std::byte> w(raw.data(), stride);
  const uint64_t pos = (index & ((uint64_t{1} << qp.log_rq_size) - 1)) * stride;
  if (!ring_read(iommu, qp.buf, 0, ring, pos, w).is_ok()) return qp_op(WqeVendor::kFetchFault);
  return parse_recv_bytes(w, false, out);
}

WqeStatus parse_srq_wqe(Iommu& iommu, const fw::Srq& srq, uint32_t index, ParsedRecv* out) {
  const uint64_t stride = uint64_t{16} << srq.log_rq_stride;
  const uint64_t ring = stride << srq.log_srq_size;
  if (stride > kMaxRecvWqeBytes) return qp_op(WqeVendor::kBadRecvLength);
  std::array<std::byte, kMaxRecvWqeBytes> raw;
  std::span<std::byte> w(raw.data(), stride);
  const uint64_t pos = (index & ((uint64_t{1} << srq.log_srq_size) - 1)) * stride;
  if (!ring_read(iommu, srq.buf, 0, ring, pos, w).is_ok()) return qp_op(WqeVendor::kFetchFault);
  return parse_recv_bytes(w, true, out);
}

}  // namespace kbv::sim::engine
