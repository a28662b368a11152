// SPDX-License-Identifier: BSD-3-Clause
// kbv_device_query and kbv_port_query (kbv.h): capabilities (QUERY_HCA_CAP,
// parsed at bring-up: hca::HcaCaps), firmware version (init segment
// fw_rev / fw_rev_subminor, docs/PRM.md "Initialization segment"), GUIDs and MTU
// (QUERY_NIC_VPORT_CONTEXT), port state (QUERY_VPORT_STATE) and the GID
// table (QUERY_ROCE_ADDRESS per index); kbv_port_query_pkey
// (QUERY_HCA_VPORT_PKEY).
#include <kbv/kbv.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "common/abi_guard.hpp"
#include "hca/cmd/vport.hpp"
#include "hca/prm/hca_cap.hpp"
#include "hca/prm/init_seg.hpp"
#include "hca/prm/vport.hpp"
#include "verbs/objects.hpp"

namespace kbv::verbs {
namespace {

// The IB MTU a RoCE port of Ethernet MTU `eth` carries: the kernel's
// ib_addr.h iboe_get_mtu() takes off the GRH (40), UDP (8), BTH (12),
// XRC ETH (4), AtomicETH (28) and ICRC (4) and rounds down to 256..4096.
uint32_t roce_mtu(uint32_t eth) {
  const uint32_t m = eth > 96 ? eth - 96 : 0;
  if (m >= 4096) return KBV_MTU_4096;
  if (m >= 2048) return KBV_MTU_2048;
  if (m >= 1024) return KBV_MTU_1024;
  if (m >= 512) return KBV_MTU_512;
  return KBV_MTU_256;
}

void fill_device(DeviceImpl& d, const hca::cmd::NicVportContext& v, kbv_device_attr_t& o) {
  std::memset(&o, 0, sizeof o);
  std::snprintf(o.uri, sizeof o.uri, "%s", d.uri.c_str());
  const platform::Bar& bar = d.pdev->bar0();
  const uint32_t w0 = bar.read32_be(0), w1 = bar.read32_be(4);  // fw_rev, cmdif | subminor
  std::snprintf(o.fw_version, sizeof o.fw_version, "%u.%u.%u", w0 & 0xffff, w0 >> 16, w1 & 0xffff);
  o.node_guid = v.node_guid;
  o.sys_image_guid = v.system_image_guid;
  o.vendor_id = d.pdev->pci().vendor;
  o.device_id = d.pdev->pci().device;
  o.vendor_part_id = o.device_id;
  const hca::HcaCaps& c = d.hca->caps();
  o.phys_port_cnt = c.num_ports;
  if (c.rc) o.cap_flags |= KBV_DEVICE_CAP_RC;
  if (c.uc) o.cap_flags |= KBV_DEVICE_CAP_UC;
  if (c.ud) o.cap_flags |= KBV_DEVICE_CAP_UD;
  if (c.xrc) o.cap_flags |= KBV_DEVICE_CAP_XRC;
  if (c.atomic) o.cap_flags |= KBV_DEVICE_CAP_ATOMIC;
  if (c.log_max_srq) o.cap_flags |= KBV_DEVICE_CAP_SRQ;
  if (c.roce && (c.roce_version & prm::kRoceVersion1Cap)) o.cap_flags |= KBV_DEVICE_CAP_ROCE_V1;
  if (c.roce && (c.roce_version & prm::kRoceVersion2Cap)) o.cap_flags |= KBV_DEVICE_CAP_ROCE_V2;
  if (c.bf) o.cap_flags |= KBV_DEVICE_CAP_BLUEFLAME;
  if (c.log_max_mcg) o.cap_flags |= KBV_DEVICE_CAP_MULTICAST;
  if (kbv::verbs::completion_timestamps(c)) o.cap_flags |= KBV_DEVICE_CAP_COMPLETION_TIMESTAMP;
  o.core_clock_khz = c.device_frequency_khz;
  o.max_qp = 1u << c.log_max_qp;
  o.max_qp_wr = 1u << c.log_max_qp_sz;
  o.max_cq = 1u << c.log_max_cq;
  o.max_cqe = 1u << c.log_max_cq_sz;
  o.max_mr = 1u << c.log_max_mkey;
  o.max_pd = 1u << c.log_max_pd;
  o.max_mr_size = UINT64_MAX;
  // A send WQE: 16 B control + 32 B remote address and atomic segments
  // (RC), then 16 B per SGE or 4 B + inline bytes, within max_wqe_sz_sq and
  // the 63 x 16 B the control segment's ds can name (hca/objects/qp.hpp).
  const uint32_t wqe = std::min(c.max_wqe_sz_sq, 1008u);
  o.max_send_sge = wqe > 48 ? (wqe - 48) / 16 : 0;
  o.max_inline_data = wqe > 52 ? ((wqe - 52) & ~15u) : 0;
  o.max_recv_sge = c.max_wqe_sz_rq / 16;
  o.max_srq = c.log_max_srq ? 1u << c.log_max_srq : 0;
  o.max_srq_wr = c.log_max_srq ? (1u << c.log_max_srq_sz) - 1 : 0;
  o.max_srq_sge = c.max_wqe_sz_rq >= 32 ? c.max_wqe_sz_rq / 16 - 1 : 0;
  o.max_qp_rd_atom = 1u << c.log_max_ra_res_qp;
  o.max_qp_init_rd_atom = 1u << c.log_max_ra_req_qp;
  o.max_mcast_grp = c.log_max_mcg ? 1u << c.log_max_mcg : 0;
  o.max_mcast_qp_attach = c.max_qp_mcg;
  o.max_msg_size = c.log_max_msg >= 32 ? UINT32_MAX : 1u << c.log_max_msg;
  o.local_ca_ack_delay = c.local_ca_ack_delay;
  o.max_pkeys = c.pkey_table_size <= 5 ? 128u << c.pkey_table_size : 0;  // log, 0 = 128
  o.page_size_cap = 1u << 12;  // kbv registers memory in 4 KiB translation pages
}

// Port query state shared by its commands.
struct PortQuery {
  Ticket t;
  std::shared_ptr<DeviceImpl> dev;
  kbv_port_attr_t* out;
  uint32_t port;
  uint32_t left = 0;
  Status first;
  hca::cmd::VportState vs;
  hca::cmd::NicVportContext nic;
  std::vector<hca::cmd::RoceAddress> gids;

  void done(Status s) {
    if (!s.is_ok() && first.is_ok()) first = s;
    if (--left != 0) return;
    if (!first.is_ok()) {
      (void)EventQueue::complete(t, first, dev->handle(), port);
      return;
    }
    if (!EventQueue::pending(t)) return;  // cancelled: *out may be gone
    kbv_port_attr_t& o = *out;
    std::memset(&o, 0, sizeof o);
    const hca::HcaCaps& c = dev->hca->caps();
    o.port_num = port;
    const bool up = vs.state == prm::vport_state::kUp;
    o.state = up ? KBV_PORT_ACTIVE : KBV_PORT_DOWN;
    o.phys_state = up ? 5 /* LinkUp */ : 3 /* Disabled */;  // IBTA PortPhysicalState
    o.max_mtu = KBV_MTU_4096;
    o.mtu_bytes = nic.mtu;
    o.active_mtu = roce_mtu(nic.mtu);
    o.link_layer = c.port_type == 1 ? KBV_LINK_LAYER_ETHERNET : KBV_LINK_LAYER_INFINIBAND;
    o.gid_tbl_len = c.roce_address_table_size ? c.roce_address_table_size : c.gid_table_size;
    o.roce_version = (c.roce_version & prm::kRoceVersion1Cap ? 1u : 0u) |
                     (c.roce_version & prm::kRoceVersion2Cap ? 2u : 0u);
    o.port_guid = nic.port_guid;
    o.gid_count = static_cast<uint32_t>(gids.size());
    for (size_t i = 0; i < gids.size(); ++i) {
      const auto& g = gids[i];
      kbv_gid_entry_t& e = o.gids[i];
      std::memcpy(e.gid, g.gid.data(), 16);
      e.mac = g.source_mac;
      bool zero = std::all_of(g.gid.begin(), g.gid.end(), [](uint8_t b) { return b == 0; });
      e.type = zero ? 0
                    : (g.version == prm::roce_version::kV2 ? KBV_GID_TYPE_ROCE_V2
                                                           : KBV_GID_TYPE_ROCE_V1);
      e.vlan_id = g.vlan_valid ? g.vlan_id : 0xffff;
    }
    (void)EventQueue::complete(t, KBV_SUCCESS, dev->handle(), port);
  }
};

}  // namespace
}  // namespace kbv::verbs

namespace v = kbv::verbs;
namespace hca = kbv::hca;
using kbv::Result;
using kbv::Status;

extern "C" {

kbv_status_t kbv_device_query(kbv_device_t dev, kbv_device_attr_t* out, kbv_eq_t eq,
                              uint64_t user_data) try {
  auto d = v::lookup_as<v::DeviceImpl>(dev, v::Kind::kDevice);
  if (!d) return KBV_ERR_INVALID_HANDLE;
  if (!out) return KBV_ERR_INVALID_ARGUMENT;
  Status st = d->check_usable();
  if (!st.is_ok()) return st.code();
  return v::submit_control(*d, d->obj.get(), eq, user_data,
                           [d, out](const v::Ticket& t) -> Status {
                             return hca::cmd::query_nic_vport_context(
                                 d->hca->cmdq(), {},
                                 [d, out, t](Result<hca::cmd::NicVportContext> r) {
                                   if (!r) {
                                     (void)v::EventQueue::complete(t, r.status(), d->handle(), 0);
                                     return;
                                   }
                                   if (!v::EventQueue::pending(t)) return;
                                   v::fill_device(*d, *r, *out);
                                   (void)v::EventQueue::complete(t, KBV_SUCCESS, d->handle(), 0);
                                 });
                           })
      .code();
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_port_query(kbv_device_t dev, uint32_t port, kbv_port_attr_t* out, kbv_eq_t eq,
                            uint64_t user_data) try {
  auto d = v::lookup_as<v::DeviceImpl>(dev, v::Kind::kDevice);
  if (!d) return KBV_ERR_INVALID_HANDLE;
  if (!out) return KBV_ERR_INVALID_ARGUMENT;
  Status st = d->check_usable();
  if (!st.is_ok()) return st.code();
  if (port == 0 || port > d->hca->caps().num_ports) return KBV_ERR_INVALID_PORT;
  return v::submit_control(
             *d, d->obj.get(), eq, user_data,
             [d, out, port](const v::Ticket& t) -> Status {
               const hca::HcaCaps& c = d->hca->caps();
               const uint32_t table =
                   c.roce_address_table_size ? c.roce_address_table_size : c.gid_table_size;
               const uint32_t n = std::min<uint32_t>(table, KBV_GID_TABLE_MAX);
               auto q = std::make_shared<v::PortQuery>();
               q->t = t;
               q->dev = d;
               q->out = out;
               q->port = port;
               q->gids.resize(n);
               q->left = 2 + n + 1;  // + 1: released after every submission
               auto& cmdq = d->hca->cmdq();
               Status s =
                   hca::cmd::query_vport_state(cmdq, kbv::prm::vport_state_op_mod::kVnicVport, {},
                                               [q](Result<hca::cmd::VportState> r) {
                                                 if (r) q->vs = *r;
                                                 q->done(r.status());
                                               });
               if (s.is_error()) return s;
               s = hca::cmd::query_nic_vport_context(cmdq, {},
                                                     [q](Result<hca::cmd::NicVportContext> r) {
                                                       if (r) q->nic = *r;
                                                       q->done(r.status());
                                                     });
               if (s.is_error()) return s;
               for (uint32_t i = 0; i < n; ++i) {
                 s = hca::cmd::query_roce_address(cmdq, static_cast<uint8_t>(port),
                                                  static_cast<uint16_t>(i),
                                                  [q, i](Result<hca::cmd::RoceAddress> r) {
                                                    if (r) q->gids[i] = *r;
                                                    q->done(r.status());
                                                  });
                 if (s.is_error()) return s;
               }
               q->done(KBV_SUCCESS);
               return KBV_PENDING;
             })
      .code();
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_port_query_pkey(kbv_device_t dev, uint32_t port, uint32_t index, uint16_t* pkey,
                                 kbv_eq_t eq, uint64_t user_data) try {
  auto d = v::lookup_as<v::DeviceImpl>(dev, v::Kind::kDevice);
  if (!d) return KBV_ERR_INVALID_HANDLE;
  if (!pkey) return KBV_ERR_INVALID_ARGUMENT;
  Status st = d->check_usable();
  if (!st.is_ok()) return st.code();
  const hca::HcaCaps& c = d->hca->caps();
  if (port == 0 || port > c.num_ports) return KBV_ERR_INVALID_PORT;
  if (c.pkey_table_size > 5 || index >= (128u << c.pkey_table_size))
    return KBV_ERR_INVALID_ARGUMENT;
  return v::submit_control(*d, d->obj.get(), eq, user_data,
                           [d, pkey, port, index](const v::Ticket& t) -> Status {
                             return hca::cmd::query_hca_vport_pkey(
                                 d->hca->cmdq(), static_cast<uint8_t>(port),
                                 static_cast<uint16_t>(index), [d, pkey, t](Result<uint16_t> r) {
                                   if (!r) {
                                     (void)v::EventQueue::complete(t, r.status(), d->handle(), 0);
                                     return;
                                   }
                                   if (!v::EventQueue::pending(t)) return;
                                   *pkey = *r;
                                   (void)v::EventQueue::complete(t, KBV_SUCCESS, d->handle(), *r);
                                 });
                           })
      .code();
} catch (...) {
  return kbv::abi_exception_status();
}

kbv_status_t kbv_port_query_pkey_table(kbv_device_t dev, uint32_t port, uint16_t* table, uint32_t n,
                                       kbv_eq_t eq, uint64_t user_data) try {
  auto d = v::lookup_as<v::DeviceImpl>(dev, v::Kind::kDevice);
  if (!d) return KBV_ERR_INVALID_HANDLE;
  if (!table && n > 0) return KBV_ERR_INVALID_ARGUMENT;
  Status st = d->check_usable();
  if (!st.is_ok()) return st.code();
  const hca::HcaCaps& c = d->hca->caps();
  if (port == 0 || port > c.num_ports) return KBV_ERR_INVALID_PORT;
  if (c.pkey_table_size > 5) return KBV_ERR_NOT_SUPPORTED;
  const uint32_t size = 128u << c.pkey_table_size;
  return v::submit_control(*d, d->obj.get(), eq, user_data,
                           [d, table, n, port, size](const v::Ticket& t) -> Status {
                             return hca::cmd::query_hca_vport_pkey_table(
                                 d->hca->cmdq(), static_cast<uint8_t>(port), size,
                                 [d, table, n, size, t](Result<std::vector<uint16_t>> r) {
                                   if (!r) {
                                     (void)v::EventQueue::complete(t, r.status(), d->handle(), 0);
                                     return;
                                   }
                                   if (!v::EventQueue::pending(t)) return;
                                   for (uint32_t i = 0; i < n && i < r->size(); ++i)
                                     table[i] = (*r)[i];
                                   (void)v::EventQueue::complete(t, KBV_SUCCESS, d->handle(), size);
                                 });
                           })
      .code();
} catch (...) {
  return kbv::abi_exception_status();
}

}  // extern "C"
