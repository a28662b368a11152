// SPDX-License-Identifier: BSD-3-Clause
//
// Address handles and multicast of kbv's libibverbs: ibv_create_ah,
// ibv_destroy_ah, ibv_init_ah_from_wc, ibv_create_ah_from_wc,
// ibv_attach_mcast / ibv_detach_mcast, ibv_resolve_eth_l2_from_gid
// (rdma-core 44 libibverbs/verbs.c for the behaviour of the _from_wc pair).
//
// RoCE v2 address vectors need the next-hop MAC, which the kernel finds by
// neighbour resolution. kbv resolves it here from the destination GID:
//   - a GID of this device's own table: that entry's MAC (loopback);
//   - ::ffff:127.0.0.0/8: the loopback interface, whose MAC is 0 (the model
//     HCAs' addresses);
//   - a multicast GID: the IP multicast MAC (RFC 1112 01:00:5e + 23 bits,
//     RFC 2464 33:33 + 32 bits);
//   - fe80::/64 with an EUI-64 interface id: the MAC it was made from;
//   - another IPv4-mapped GID: the kernel's ARP table (/proc/net/arp);
//   anything else fails with EHOSTUNREACH (no neighbour known).
#include <arpa/inet.h>
#include <endian.h>
#include <netinet/ip.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include "ibverbs/ah.hpp"
#include "ibverbs/context.hpp"
#include "ibverbs/export.hpp"

namespace kbv::ibverbs {
namespace {

bool v4mapped(const uint8_t* g) {
  static const uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(g, kPrefix, 12) == 0;
}

// /proc/net/arp: "IP address  HW type  Flags  HW address  Mask  Device".
bool arp_lookup(const uint8_t ip[4], uint64_t* mac) {
  FILE* f = std::fopen("/proc/net/arp", "re");
  if (!f) return false;
  char want[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, ip, want, sizeof want);
  char line[256];
  bool found = false;
  (void)std::fgets(line, sizeof line, f);  // header
  while (!found && std::fgets(line, sizeof line, f)) {
    char addr[64], hw[64];
    unsigned type, flags;
    if (std::sscanf(line, "%63s 0x%x 0x%x %63s", addr, &type, &flags, hw) != 4) continue;
    if (std::strcmp(addr, want) != 0 || !(flags & 0x2)) continue;  // ATF_COM: resolved
    unsigned b[6];
    if (std::sscanf(hw, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
      continue;
    *mac = 0;
    for (unsigned v : b) *mac = (*mac << 8) | (v & 0xff);
    found = true;
  }
  std::fclose(f);
  return found;
}

// 0 or an errno; see the top of the file.
int resolve_dmac(ibv_context* ctx, uint8_t port, const uint8_t* dgid, uint64_t* mac) {
  kbv_port_attr_t p{};
  if (kbv_port_query(to_ctx(ctx)->dev, port ? port : 1, &p, KBV_EQ_NONE, 0) == KBV_SUCCESS) {
    for (uint32_t i = 0; i < p.gid_count; ++i) {
      if (p.gids[i].type != 0 && std::memcmp(p.gids[i].gid, dgid, 16) == 0) {
        *mac = p.gids[i].mac;
        return 0;
      }
    }
  }
  if (v4mapped(dgid)) {
    if (dgid[12] == 127) {
      *mac = 0;
      return 0;
    }
    if ((dgid[12] & 0xf0) == 0xe0) {  // 224.0.0.0/4
      *mac = 0x01005e000000ull | (uint64_t{dgid[13] & 0x7fu} << 16) | (uint64_t{dgid[14]} << 8) |
             dgid[15];
      return 0;
    }
    return arp_lookup(dgid + 12, mac) ? 0 : EHOSTUNREACH;
  }
  if (dgid[0] == 0xff) {
    *mac = 0x333300000000ull | (uint64_t{dgid[12]} << 24) | (uint64_t{dgid[13]} << 16) |
           (uint64_t{dgid[14]} << 8) | dgid[15];
    return 0;
  }
  if (dgid[0] == 0xfe && (dgid[1] & 0xc0) == 0x80 && dgid[11] == 0xff && dgid[12] == 0xfe) {
    *mac = (uint64_t{dgid[8] ^ 0x02u} << 40) | (uint64_t{dgid[9]} << 32) |
           (uint64_t{dgid[10]} << 24) | (uint64_t{dgid[13]} << 16) | (uint64_t{dgid[14]} << 8) |
           dgid[15];
    return 0;
  }
  return EHOSTUNREACH;
}

}  // namespace

int to_kbv_ah(ibv_context* ctx, const ibv_ah_attr& in, kbv_ah_attr_t* out) {
  if (!in.is_global) return EINVAL;  // RoCE: IBV_QPF_GRH_REQUIRED
  if (in.sl > 7) return EINVAL;
  // The source GID must be a valid entry (the kernel's rdma_get_gid_attr
  // refuses an empty one).
  ibv_gid sgid{};
  if (kbv_ibv_query_gid(ctx, in.port_num ? in.port_num : 1, in.grh.sgid_index, &sgid) != 0 ||
      (sgid.global.subnet_prefix | sgid.global.interface_id) == 0)
    return EINVAL;
  std::memset(out, 0, sizeof *out);
  std::memcpy(out->dgid, in.grh.dgid.raw, 16);
  if (int e = resolve_dmac(ctx, in.port_num, in.grh.dgid.raw, &out->dmac); e != 0) return e;
  // The address vector's flow label is 20 bits: rdma-core's mlx5 provider
  // keeps the low 20 (providers/mlx5/verbs.c mlx5_create_ah, grh_gid_fl),
  // the rest is ignored. UCX passes ~0 (uct_ib_iface_fill_ah_attr_from_gid_lid).
  out->flow_label = in.grh.flow_label & 0xfffff;
  out->sgid_index = in.grh.sgid_index;
  out->hop_limit = in.grh.hop_limit;
  out->traffic_class = in.grh.traffic_class;
  out->sl = in.sl;
  out->port_num = in.port_num;
  return 0;
}

void from_kbv_ah(const kbv_ah_attr_t& in, ibv_ah_attr* out) {
  std::memset(out, 0, sizeof *out);
  std::memcpy(out->grh.dgid.raw, in.dgid, 16);
  out->grh.flow_label = in.flow_label;
  out->grh.sgid_index = in.sgid_index;
  out->grh.hop_limit = in.hop_limit;
  out->grh.traffic_class = in.traffic_class;
  out->sl = in.sl;
  out->is_global = 1;
  out->port_num = in.port_num ? in.port_num : 1;
}

}  // namespace kbv::ibverbs

using namespace kbv::ibverbs;

namespace {

// rdma-core's ibv_find_gid_index: the index of gid with that sysfs type
// (0 IB/RoCE v1, 1 RoCE v2), or -1 with errno once the table ends.
int find_gid_index(ibv_context* ctx, uint8_t port, const uint8_t* gid,
                   kbv_ibv_gid_type_sysfs type) {
  for (int i = 0;; ++i) {
    ibv_gid g;
    kbv_ibv_gid_type_sysfs t = KBV_SYSFS_GID_IB_ROCE_V1;
    if (kbv_ibv_query_gid(ctx, port, i, &g) != 0) return -1;
    if (ibv_query_gid_type(ctx, port, static_cast<unsigned>(i), &t) != 0) return -1;
    if (std::memcmp(g.raw, gid, 16) == 0 && t == type) return i;
  }
}

void map_v4(uint32_t addr_be, uint8_t* gid) {
  std::memset(gid, 0, 10);
  gid[10] = gid[11] = 0xff;
  std::memcpy(gid + 12, &addr_be, 4);
}

}  // namespace

extern "C" {

ibv_ah* kbv_ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  if (!pd || !attr) {
    errno = EINVAL;
    return nullptr;
  }
  kbv_ah_attr_t a;
  if (int e = to_kbv_ah(pd->context, *attr, &a); e != 0) {
    errno = e;
    return nullptr;
  }
  auto* h = new (std::nothrow) Ah{};
  if (!h) {
    errno = ENOMEM;
    return nullptr;
  }
  const kbv_status_t s = kbv_ah_create(to_pd(pd)->handle, &a, KBV_EQ_NONE, 0, &h->handle);
  if (s != KBV_SUCCESS) {
    delete h;
    // a sgid_index outside the table: EINVAL, as the kernel answers
    errno = s == KBV_ERR_NOT_FOUND ? EINVAL : to_errno(s);
    return nullptr;
  }
  h->ah.context = pd->context;
  h->ah.pd = pd;
  h->ah.handle = static_cast<uint32_t>(h->handle);
  if (register_object(state_of(pd->context), h->handle, ObjKind::kAh, h) != 0) {
    (void)kbv_ah_destroy(h->handle, KBV_EQ_NONE, 0);
    delete h;
    errno = ENOMEM;
    return nullptr;
  }
  ++to_pd(pd)->users;
  return &h->ah;
}
KBV_IBV_DEFAULT(ibv_create_ah, "IBVERBS_1.1");

int kbv_ibv_destroy_ah(ibv_ah* ah) {
  if (!ah) return EINVAL;
  Ah* h = to_ah(ah);
  const kbv_status_t s = kbv_ah_destroy(h->handle, KBV_EQ_NONE, 0);
  if (s != KBV_SUCCESS && s != KBV_PENDING) return to_errno(s);
  (void)unregister_object(state_of(ah->context), h->handle);
  --to_pd(ah->pd)->users;
  delete h;
  return 0;
}
KBV_IBV_DEFAULT(ibv_destroy_ah, "IBVERBS_1.1");

// rdma-core's rules: the GRH buffer holds an IPv6 header, or (RoCE v2 over
// IPv4) an IPv4 header in its last 20 bytes; the reply goes back to the
// packet's source from the local GID the packet was sent to.
int ibv_init_ah_from_wc(ibv_context* context, uint8_t port_num, ibv_wc* wc, ibv_grh* grh,
                        ibv_ah_attr* ah_attr) {
  if (!context || !wc || !ah_attr || ((wc->wc_flags & IBV_WC_GRH) && !grh)) {
    errno = EINVAL;
    return -1;
  }
  std::memset(ah_attr, 0, sizeof *ah_attr);
  ah_attr->dlid = wc->slid;
  ah_attr->sl = wc->sl;
  ah_attr->src_path_bits = wc->dlid_path_bits;
  ah_attr->port_num = port_num;
  if (!(wc->wc_flags & IBV_WC_GRH)) return 0;
  const uint32_t flow_class = be32toh(grh->version_tclass_flow);
  ah_attr->grh.flow_label = flow_class & 0xfffff;
  ah_attr->is_global = 1;
  auto* ip4 = reinterpret_cast<iphdr*>(reinterpret_cast<uint8_t*>(grh) + 20);
  int version = static_cast<int>(flow_class >> 28);
  if (version != 6) {
    if (ip4->version != 4) {
      errno = EPROTONOSUPPORT;
      return -1;
    }
    version = 4;
  } else if (ip4->ihl == 5) {
    // Both readings possible: an IPv4 header whose checksum is right wins.
    iphdr h = *ip4;
    h.check = 0;
    const auto* w = reinterpret_cast<const uint16_t*>(&h);
    uint32_t sum = 0;
    for (int i = 0; i < 10; ++i) sum += w[i];
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    if (static_cast<uint16_t>(~sum) == ip4->check) version = 4;
  }
  int idx;
  if (version == 4) {
    if ((be32toh(ip4->daddr) >> 28) == 0xe) {  // multicast: not in the table
      errno = EINVAL;
      return -1;
    }
    uint8_t local[16];
    map_v4(ip4->daddr, local);
    idx = find_gid_index(context, port_num, local, KBV_SYSFS_GID_ROCE_V2);
    if (idx < 0) return -1;
    map_v4(ip4->saddr, ah_attr->grh.dgid.raw);
    ah_attr->grh.hop_limit = ip4->ttl;
    ah_attr->grh.traffic_class = ip4->tos;
  } else {
    if (grh->dgid.raw[0] == 0xff) {
      errno = EINVAL;
      return -1;
    }
    kbv_ibv_gid_type_sysfs type;
    if (grh->next_hdr == IPPROTO_UDP) {
      type = KBV_SYSFS_GID_ROCE_V2;
    } else if (grh->next_hdr == 0x1b) {  // IB next header: RoCE v1
      type = KBV_SYSFS_GID_IB_ROCE_V1;
    } else {
      errno = EPROTONOSUPPORT;
      return -1;
    }
    ah_attr->grh.dgid = grh->sgid;
    idx = find_gid_index(context, port_num, grh->dgid.raw, type);
    if (idx < 0) return -1;
    ah_attr->grh.hop_limit = grh->hop_limit;
    ah_attr->grh.traffic_class = static_cast<uint8_t>((flow_class >> 20) & 0xff);
  }
  ah_attr->grh.sgid_index = static_cast<uint8_t>(idx);
  return 0;
}

ibv_ah* kbv_ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port_num) {
  if (!pd) {
    errno = EINVAL;
    return nullptr;
  }
  ibv_ah_attr attr;
  if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr) != 0) return nullptr;
  return kbv_ibv_create_ah(pd, &attr);
}
KBV_IBV_DEFAULT(ibv_create_ah_from_wc, "IBVERBS_1.1");

// Multicast on UD QPs (kbv_qp_attach_mcast); lid is unused on RoCE.
int kbv_ibv_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t) {
  if (!qp || !gid) return EINVAL;
  const kbv_status_t s = kbv_qp_attach_mcast(to_qp(qp)->handle, gid->raw, KBV_EQ_NONE, 0);
  return s == KBV_SUCCESS ? 0 : to_errno(s);
}
KBV_IBV_DEFAULT(ibv_attach_mcast, "IBVERBS_1.1");

int kbv_ibv_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t) {
  if (!qp || !gid) return EINVAL;
  const kbv_status_t s = kbv_qp_detach_mcast(to_qp(qp)->handle, gid->raw, KBV_EQ_NONE, 0);
  return s == KBV_SUCCESS ? 0 : to_errno(s);
}
KBV_IBV_DEFAULT(ibv_detach_mcast, "IBVERBS_1.1");

// The MAC (and VLAN: 0xffff, none) of the address vector's destination, by
// the resolution above. 0 or an errno.
int ibv_resolve_eth_l2_from_gid(ibv_context* context, ibv_ah_attr* attr, uint8_t eth_mac[6],
                                uint16_t* vid) {
  if (!context || !attr || !eth_mac || !vid) return EINVAL;
  kbv_ah_attr_t a;
  if (int e = to_kbv_ah(context, *attr, &a); e != 0) return e;
  for (int i = 0; i < 6; ++i) eth_mac[i] = static_cast<uint8_t>(a.dmac >> (8 * (5 - i)));
  *vid = 0xffff;
  return 0;
}

}  // extern "C"
