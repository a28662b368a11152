// SPDX-License-Identifier: BSD-3-Clause
//
// Device and port queries of kbv's libibverbs: ibv_query_device(_ex),
// ibv_query_port, ibv_query_gid, _ibv_query_gid_ex, _ibv_query_gid_table,
// ibv_query_gid_type (IBVERBS_PRIVATE_34), ibv_query_pkey,
// ibv_get_pkey_index.
//
// From kbv_device_query / kbv_port_query (kbv.h). What kbv does not report
// is filled as an mlx5 RoCE port reports it through the kernel (rdma-core 44
// libibverbs/verbs.c, kernel mlx5_ib main.c mlx5_query_roce_port):
//   - P_Key table: the port's (kbv_port_query_pkey, QUERY_HCA_VPORT_PKEY;
//     max_pkeys / pkey_tbl_len = kbv_device_attr.max_pkeys, 128 on the
//     model): entry 0 the default 0xffff, unset entries 0 (issue 18; the
//     kernel's mlx5_ib reports one entry on RoCE ports);
//   - LID / SM fields 0; flags IBV_QPF_GRH_REQUIRED; port_cap_flags
//     IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
//   - active_width / active_speed: kbv's port query carries no Ethernet link
//     speed (PTYS is not read), so the port reports 4X at 25 Gb/s (EDR
//     encoding, "100 Gb/s"), the ConnectX-5 model's nominal rate; rates in
//     address vectors are not enforced by kbv either way.
// GID table: kbv returns the first KBV_GID_TABLE_MAX entries; gid_tbl_len
// is the device's table size and entries past what kbv returned read as
// empty (ENODATA from _ibv_query_gid_ex, a zero GID from ibv_query_gid, as
// rdma-core does for an empty slot). On a model HCA the RoCE v2 GID
// ::ffff:127.0.0.N is at index 0 on every device (pass -g 0 / -x 0).
#include <endian.h>
#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstring>
#include <vector>

#include "ibverbs/async.hpp"
#include "ibverbs/context.hpp"
#include "ibverbs/export.hpp"

namespace kbv::ibverbs {
namespace {

void fill_device_attr(const kbv_device_attr_t& a, ibv_device_attr* o) {
  std::memset(o, 0, sizeof *o);
  std::snprintf(o->fw_ver, sizeof o->fw_ver, "%s", a.fw_version);
  o->node_guid = htobe64(a.node_guid);
  o->sys_image_guid = htobe64(a.sys_image_guid);
  o->max_mr_size = a.max_mr_size;
  o->page_size_cap = a.page_size_cap;
  o->vendor_id = a.vendor_id;
  o->vendor_part_id = a.vendor_part_id;
  o->hw_ver = a.hw_ver;
  auto clamp = [](uint64_t v) { return static_cast<int>(std::min<uint64_t>(v, INT_MAX)); };
  o->max_qp = clamp(a.max_qp);
  o->max_qp_wr = clamp(a.max_qp_wr);
  o->device_cap_flags = IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SYS_IMAGE_GUID |
                        IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_CURR_QP_STATE_MOD;
  // One max_sge covers send and receive queues in ibverbs.
  o->max_sge = clamp(std::min(a.max_send_sge, a.max_recv_sge));
  o->max_sge_rd = o->max_sge;
  o->max_cq = clamp(a.max_cq);
  o->max_cqe = clamp(a.max_cqe);
  o->max_mr = clamp(a.max_mr);
  o->max_pd = clamp(a.max_pd);
  o->max_qp_rd_atom = clamp(a.max_qp_rd_atom);
  o->max_res_rd_atom = clamp(uint64_t{a.max_qp_rd_atom} * a.max_qp);
  o->max_qp_init_rd_atom = clamp(a.max_qp_init_rd_atom);
  o->atomic_cap = (a.cap_flags & KBV_DEVICE_CAP_ATOMIC) ? IBV_ATOMIC_HCA : IBV_ATOMIC_NONE;
  o->max_mcast_grp = clamp(a.max_mcast_grp);
  o->max_mcast_qp_attach = clamp(a.max_mcast_qp_attach);
  o->max_total_mcast_qp_attach = clamp(uint64_t{a.max_mcast_grp} * a.max_mcast_qp_attach);
  o->max_ah = INT_MAX;  // kbv address handles are host objects
  o->max_srq = clamp(a.max_srq);
  o->max_srq_wr = clamp(a.max_srq_wr);
  o->max_srq_sge = clamp(a.max_srq_sge);
  o->max_pkeys = static_cast<uint16_t>(std::min<uint32_t>(a.max_pkeys, UINT16_MAX));
  o->local_ca_ack_delay = static_cast<uint8_t>(a.local_ca_ack_delay);
  o->phys_port_cnt = static_cast<uint8_t>(a.phys_port_cnt);
}

// kbv_port_query for ctx's port, cached for the GID calls. 0 or an errno.
int port_attr(ibv_context* c, uint32_t port, kbv_port_attr_t* out, bool refresh) {
  kbv_device_attr_t da;
  if (int e = device_attr(c, &da); e != 0) return e;
  if (port == 0 || port > da.phys_port_cnt) return EINVAL;
  ContextState& st = state_of(c);
  {
    std::lock_guard lk(st.mu);
    try {
      if (st.ports.size() < da.phys_port_cnt) st.ports.resize(da.phys_port_cnt);
    } catch (...) {  // no exception crosses the C ABI
      return ENOMEM;
    }
    if (!refresh && st.ports[port - 1].port_num == port) {
      *out = st.ports[port - 1];
      return 0;
    }
  }
  kbv_port_attr_t p{};
  kbv_status_t s = kbv_port_query(to_ctx(c)->dev, port, &p, KBV_EQ_NONE, 0);
  if (s != KBV_SUCCESS) return to_errno(s);
  std::lock_guard lk(st.mu);
  st.ports[port - 1] = p;
  *out = p;
  return 0;
}

void fill_port_attr(const kbv_port_attr_t& p, uint32_t max_msg, uint32_t pkeys, ibv_port_attr* o) {
  std::memset(o, 0, sizeof *o);
  o->state = static_cast<ibv_port_state>(p.state);
  o->max_mtu = static_cast<ibv_mtu>(p.max_mtu);
  o->active_mtu = static_cast<ibv_mtu>(p.active_mtu);
  o->gid_tbl_len = static_cast<int>(p.gid_tbl_len);
  o->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
  o->max_msg_sz = max_msg;
  o->pkey_tbl_len = static_cast<uint16_t>(std::min<uint32_t>(pkeys, UINT16_MAX));
  o->max_vl_num = 1;     // IBTA 14.2.5.6 VLCap encoding: VL0
  o->active_width = 2;   // IBV_WIDTH_4X (ibv_devinfo: 4X)
  o->active_speed = 32;  // EDR encoding, 25.0 Gbps per lane (see above)
  o->phys_state = static_cast<uint8_t>(p.phys_state);
  o->link_layer =
      p.link_layer == KBV_LINK_LAYER_ETHERNET ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
  o->flags = IBV_QPF_GRH_REQUIRED;
}

int query_port(ibv_context* c, uint8_t port, ibv_port_attr* out, size_t len) {
  if (!c || !out) return EINVAL;
  kbv_port_attr_t p;
  if (int e = port_attr(c, port, &p, true); e != 0) return e;
  kbv_device_attr_t da;
  if (int e = device_attr(c, &da); e != 0) return e;
  ibv_port_attr full;
  fill_port_attr(p, da.max_msg_size, da.max_pkeys, &full);
  std::memcpy(out, &full, std::min(len, sizeof full));
  return 0;
}

// vctx->query_port: the size the program was compiled with.
int vctx_query_port(ibv_context* c, uint8_t port, ibv_port_attr* attr, size_t len) {
  return query_port(c, port, attr, len);
}

// One GID entry: 0, ENODATA (empty) or an errno.
int gid_entry(ibv_context* c, uint32_t port, uint32_t index, ibv_gid_entry* out) {
  kbv_port_attr_t p;
  if (int e = port_attr(c, port, &p, false); e != 0) return e;
  if (index >= p.gid_tbl_len) return EINVAL;
  std::memset(out, 0, sizeof *out);
  out->gid_index = index;
  out->port_num = port;
  if (index >= p.gid_count || p.gids[index].type == 0) return ENODATA;
  const kbv_gid_entry_t& g = p.gids[index];
  std::memcpy(out->gid.raw, g.gid, 16);
  out->gid_type = g.type == KBV_GID_TYPE_ROCE_V2 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
  // The netdev behind the address: the model's 127.0.0.N lives on loopback.
  out->ndev_ifindex = if_nametoindex("lo");
  return 0;
}

int vctx_query_device_ex(ibv_context* c, const ibv_query_device_ex_input* input,
                         ibv_device_attr_ex* attr, size_t attr_size) {
  if (!c || !attr) return EINVAL;
  if (input && input->comp_mask) return EINVAL;
  if (attr_size < sizeof attr->orig_attr) return EINVAL;
  kbv_device_attr_t a;
  if (int e = device_attr(c, &a); e != 0) return e;
  ibv_device_attr_ex full;
  std::memset(&full, 0, sizeof full);
  fill_device_attr(a, &full.orig_attr);
  full.device_cap_flags_ex = full.orig_attr.device_cap_flags;
  full.phys_port_cnt_ex = a.phys_port_cnt;
  // Completion timestamps: the clock's rate and the timestamp mask as the
  // kernel's mlx5_ib reports them (main.c mlx5_ib_query_device:
  // hca_core_clock = device_frequency_khz, timestamp_mask
  // 0x7FFFFFFFFFFFFFFF); both 0 without the capability.
  if (a.cap_flags & KBV_DEVICE_CAP_COMPLETION_TIMESTAMP) {
    full.completion_timestamp_mask = 0x7FFFFFFFFFFFFFFFull;
    full.hca_core_clock = a.core_clock_khz;
  }
  // No ODP, TSO, RSS, packet pacing, tag matching, CQ moderation or device
  // memory: those stay 0, which is how programs learn the device lacks them.
  std::memset(attr, 0, attr_size);
  std::memcpy(attr, &full, std::min(attr_size, sizeof full));
  return 0;
}

// verbs_context slot behind verbs.h's inline ibv_query_rt_values_ex: the
// HCA's free-running clock (kbv_device_read_clock), returned as rdma-core's
// mlx5 does (verbs.c mlx5_query_rt_values: raw_clock.tv_sec 0, tv_nsec the
// raw tick count; EINVAL for a comp_mask bit other than
// IBV_VALUES_MASK_RAW_CLOCK; the clock's error, with comp_mask 0, when it
// cannot be read).
int vctx_query_rt_values(ibv_context* c, ibv_values_ex* values) {
  if (!c || !values) return EINVAL;
  if (values->comp_mask & ~static_cast<uint32_t>(IBV_VALUES_MASK_RAW_CLOCK)) return EINVAL;
  const uint32_t asked = values->comp_mask;
  values->comp_mask = 0;
  if (!(asked & IBV_VALUES_MASK_RAW_CLOCK)) return 0;
  uint64_t ticks = 0;
  const kbv_status_t s = kbv_device_read_clock(to_ctx(c)->dev, &ticks, nullptr);
  if (s != KBV_SUCCESS) return kbv_status_to_errno(s);
  values->raw_clock.tv_sec = 0;
  values->raw_clock.tv_nsec = static_cast<long>(ticks);
  values->comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
  return 0;
}

}  // namespace

void fill_query_ops(Context& ctx) {
  ctx.vctx.query_port = vctx_query_port;
  ctx.vctx.query_device_ex = vctx_query_device_ex;
  ctx.vctx.query_rt_values = vctx_query_rt_values;
}

}  // namespace kbv::ibverbs

using namespace kbv::ibverbs;

extern "C" {

int kbv_ibv_query_device(ibv_context* context, ibv_device_attr* device_attr_out) {
  if (!context || !device_attr_out) return EINVAL;
  kbv_device_attr_t a;
  if (int e = device_attr(context, &a); e != 0) return e;
  fill_device_attr(a, device_attr_out);
  return 0;
}
KBV_IBV_DEFAULT(ibv_query_device, "IBVERBS_1.1");

// The exported form (programs built without verbs_context use it; verbs.h's
// inline ibv_query_device_ex calls vctx->query_device_ex).
int kbv_ibv_query_device_ex(ibv_context* context, const ibv_query_device_ex_input* input,
                            ibv_device_attr_ex* attr) {
  return vctx_query_device_ex(context, input, attr, sizeof *attr);
}
KBV_IBV_DEFAULT(ibv_query_device_ex, "IBVERBS_1.0");

int kbv_ibv_query_port(ibv_context* context, uint8_t port_num, _compat_ibv_port_attr* port_attr) {
  // The old struct ends before port_cap_flags2 (rdma-core verbs.c).
  return query_port(context, port_num, reinterpret_cast<ibv_port_attr*>(port_attr),
                    offsetof(ibv_port_attr, port_cap_flags2));
}
KBV_IBV_DEFAULT(ibv_query_port, "IBVERBS_1.1");

int kbv_ibv_query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) {
  if (!context || !gid || index < 0) {
    errno = EINVAL;
    return -1;
  }
  ibv_gid_entry e;
  const int err = gid_entry(context, port_num, static_cast<uint32_t>(index), &e);
  if (err == ENODATA) {
    std::memset(gid, 0, sizeof *gid);
    return 0;
  }
  if (err != 0) {
    errno = err;
    return -1;
  }
  std::memcpy(gid, &e.gid, sizeof *gid);
  return 0;
}
KBV_IBV_DEFAULT(ibv_query_gid, "IBVERBS_1.1");

int _ibv_query_gid_ex(ibv_context* context, uint32_t port_num, uint32_t gid_index,
                      ibv_gid_entry* entry, uint32_t flags, size_t entry_size) {
  if (!context || !entry || flags != 0 || entry_size < sizeof(ibv_gid_entry)) return EINVAL;
  return gid_entry(context, port_num, gid_index, entry);
}

ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries,
                             uint32_t flags, size_t entry_size) {
  if (!context || (!entries && max_entries) || flags != 0 || entry_size < sizeof(ibv_gid_entry))
    return -EINVAL;
  kbv_device_attr_t a;
  if (int e = device_attr(context, &a); e != 0) return -e;
  size_t n = 0;
  for (uint32_t port = 1; port <= a.phys_port_cnt; ++port) {
    kbv_port_attr_t p;
    if (int e = port_attr(context, port, &p, true); e != 0) return -e;
    for (uint32_t i = 0; i < p.gid_tbl_len && i < p.gid_count; ++i) {
      ibv_gid_entry g;
      const int e = gid_entry(context, port, i, &g);
      if (e == ENODATA) continue;
      if (e != 0) return -e;
      if (n == max_entries) return -EINVAL;  // more valid entries than room
      std::memcpy(reinterpret_cast<uint8_t*>(entries) + n * entry_size, &g, sizeof g);
      ++n;
    }
  }
  return static_cast<ssize_t>(n);
}

// IBVERBS_PRIVATE_34 (ibv_devinfo imports it): rdma-core's sysfs numbering,
// enum ibv_gid_type_sysfs — IB / RoCE v1 = 0, RoCE v2 = 1 — not the public
// enum ibv_gid_type. An empty entry reads as RoCE v1, as in rdma-core.
int ibv_query_gid_type(ibv_context* context, uint8_t port_num, unsigned int index,
                       kbv_ibv_gid_type_sysfs* type) {
  if (!context || !type) {
    errno = EINVAL;
    return -1;
  }
  ibv_gid_entry e;
  const int err = gid_entry(context, port_num, index, &e);
  if (err == ENODATA) {
    *type = KBV_SYSFS_GID_IB_ROCE_V1;
    return 0;
  }
  if (err != 0) {
    errno = err;
    return -1;
  }
  *type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? KBV_SYSFS_GID_ROCE_V2 : KBV_SYSFS_GID_IB_ROCE_V1;
  return 0;
}

int kbv_ibv_query_pkey(ibv_context* context, uint8_t port_num, int index, __be16* pkey) {
  if (!context || !pkey) {
    errno = EINVAL;
    return -1;
  }
  kbv_port_attr_t p;
  if (int e = port_attr(context, port_num, &p, false); e != 0) {
    errno = e;
    return -1;
  }
  // The port's table (see top): QUERY_HCA_VPORT_PKEY through kbv.
  if (index < 0) {
    errno = EINVAL;
    return -1;
  }
  uint16_t v = 0;
  kbv_status_t st = kbv_port_query_pkey(to_ctx(context)->dev, port_num,
                                        static_cast<uint32_t>(index), &v, KBV_EQ_NONE, 0);
  if (st != KBV_SUCCESS) {
    errno = st == KBV_ERR_INVALID_PORT ? EINVAL : to_errno(st);
    return -1;
  }
  *pkey = htobe16(v);
  return 0;
}
KBV_IBV_DEFAULT(ibv_query_pkey, "IBVERBS_1.1");

int ibv_get_pkey_index(ibv_context* context, uint8_t port_num, __be16 pkey) {
  // rdma-core walks the table until ibv_query_pkey fails: the one entry, or
  // -1 with ibv_query_pkey's errno (EINVAL past the table).
  for (int i = 0;; ++i) {
    __be16 p;
    if (kbv_ibv_query_pkey(context, port_num, i, &p) != 0) return -1;
    if (p == pkey) return i;
  }
}

}  // extern "C"
