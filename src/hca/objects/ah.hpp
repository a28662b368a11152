// SPDX-License-Identifier: BSD-3-Clause
//
// Ah: a UD address handle — the 48-byte address vector a UD send WQE carries
// in its datagram segment (rdma-core mlx5dv.h struct mlx5_wqe_av, included,
// not redefined), built from a destination GID, the remote QPN and Q_Key.
//
// Encoding (the kernel's mlx5_ib ah.c create_ib_ah and rdma-core mlx5
// verbs.c mlx5_create_ah, RoCE case; all big-endian):
//   key.qkey.qkey = Q_Key;
//   dqp_dct       = remote QPN | MLX5_EXTENDED_UD_AV (the full 48-byte AV);
//   stat_rate_sl  = static rate << 4 | (sl & 7) << 1 (RoCE);
//   rlid          = the RoCEv2 UDP source port (the AV's rlid/udp_sport
//                   union; mlx5_ib_ah's av.udp_sport);
//   rmac, tclass, hop_limit;
//   grh_gid_fl    = 1 << 30 (GRH present) | sgid_index << 20 | flow_label;
//   rgid          = destination GID.
// The data path copies av into each UD WQE; nothing is created on the
// device, so there is no command and no destroy.
//
// Threading: a value.
#pragma once

#include <infiniband/mlx5dv.h>

#include <kbv/status.hpp>

#include <endian.h>
#include <cstring>

#include "hca/objects/qp.hpp"

namespace kbv::hca {

static_assert(sizeof(mlx5_wqe_av) == 48, "mlx5dv.h: the extended (GRH) UD address vector");

struct Ah {
  mlx5_wqe_av av{};
  uint32_t remote_qpn = 0;
  uint32_t q_key = 0;

  // KBV_ERR_INVALID_ARGUMENT for a QPN wider than 24 bits, flow label wider
  // than 20 bits, sl above 7 (RoCE carries a 3-bit priority).
  static Result<Ah> make(const HcaCaps& caps, const RoceDest& d, uint32_t remote_qpn,
                         uint32_t q_key, uint32_t local_qpn = 0) {
    if (remote_qpn > 0xFFFFFF || d.flow_label > 0xFFFFF || d.sl > 7)
      return Status{KBV_ERR_INVALID_ARGUMENT};
    Ah ah;
    ah.remote_qpn = remote_qpn;
    ah.q_key = q_key;
    ah.av.key.qkey.qkey = htobe32(q_key);
    ah.av.dqp_dct = htobe32(remote_qpn | MLX5_EXTENDED_UD_AV);
    ah.av.stat_rate_sl = static_cast<uint8_t>((d.sl & 7) << 1);
    const uint16_t sport =
        d.udp_sport != 0 ? d.udp_sport : roce_udp_sport(caps, local_qpn, remote_qpn);
    ah.av.rlid = htobe16(sport);
    for (int i = 0; i < 6; ++i) ah.av.rmac[i] = static_cast<uint8_t>(d.dmac >> (8 * (5 - i)));
    ah.av.tclass = d.tclass;
    ah.av.hop_limit = d.hop_limit;
    ah.av.grh_gid_fl = htobe32(1u << 30 | uint32_t{d.sgid_index} << 20 | d.flow_label);
    std::memcpy(ah.av.rgid, d.dgid.data(), 16);
    return ah;
  }
};

}  // namespace kbv::hca
