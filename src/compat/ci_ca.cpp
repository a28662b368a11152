// SPDX-License-Identifier: BSD-3-Clause
// Channel interface (kbv/compat/ib_ci.h): the interface and its devices, the
// dispatch thread (callbacks from the device's kbv event queue), CA, PD, AV
// and CQ verbs, and the verbs kbv cannot do (IB_UNSUPPORTED). docs/CI.md.
#include <arpa/inet.h>
#include <endian.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <unordered_set>

#include "compat/arp.hpp"
#include "compat/ci_objects.hpp"

namespace kbv::compat::ci {
namespace {

constexpr uint32_t kEqDepth = 4096;

struct Live {
  std::unordered_map<const void*, Kind> objs;
  std::vector<std::shared_ptr<CiDevice>> devices;
};
Live& live_set() {
  static Live* l = new Live();  // outlives static destruction
  return *l;
}

ib_api_status_t ib_of(kbv_status_t s) { return status_of(s); }

}  // namespace

std::mutex& mu() {
  static std::mutex* m = new std::mutex();
  return *m;
}
void track(const void* p, Kind k) { live_set().objs[p] = k; }
void untrack(const void* p) { live_set().objs.erase(p); }
bool live(const void* p, Kind k) {
  if (p == nullptr) return false;
  std::lock_guard lk(mu());
  auto it = live_set().objs.find(p);
  return it != live_set().objs.end() && it->second == k;
}

ib_api_status_t umv(ci_umv_buf_t* b) {
  if (b == nullptr) return IB_SUCCESS;
  if (b->input_size > 0) return IB_UNSUPPORTED;
  b->output_size = 0;
  b->status = IB_SUCCESS;
  return IB_SUCCESS;
}

uint32_t access_to_kbv(ib_access_t a) {
  uint32_t k = 0;
  if (a & IB_AC_LOCAL_WRITE) k |= KBV_ACCESS_LOCAL_WRITE;
  if (a & IB_AC_RDMA_WRITE) k |= KBV_ACCESS_REMOTE_WRITE;
  if (a & IB_AC_RDMA_READ) k |= KBV_ACCESS_REMOTE_READ;
  if (a & IB_AC_ATOMIC) k |= KBV_ACCESS_REMOTE_ATOMIC;
  return k;
}

void CiDevice::refresh_ports() {
  std::vector<kbv_port_attr_t> v(attr.phys_port_cnt);
  for (uint32_t p = 1; p <= attr.phys_port_cnt; ++p)
    (void)kbv_port_query(dev, p, &v[p - 1], KBV_EQ_NONE, 0);
  std::lock_guard lk(mu());
  ports = std::move(v);
}

ib_api_status_t av_to_kbv(CiDevice& d, const ib_av_attr_t& av, kbv_ah_attr_t* out) {
  if (!av.grh_valid) return IB_INVALID_SETTING;  // RoCE: every packet has a GRH
  if (av.port_num < 1 || av.port_num > d.attr.phys_port_cnt) return IB_INVALID_PORT;
  static const uint8_t zero[16] = {};
  *out = kbv_ah_attr_t{};
  std::lock_guard lk(mu());
  const kbv_port_attr_t& pa = d.ports[av.port_num - 1];
  int sgid = -1;
  for (uint32_t i = 0; i < pa.gid_count; ++i) {
    const kbv_gid_entry_t& g = pa.gids[i];
    if (g.type == 0) continue;
    if (std::memcmp(av.grh.src_gid.raw, zero, 16) == 0
            ? g.type == KBV_GID_TYPE_ROCE_V2
            : std::memcmp(g.gid, av.grh.src_gid.raw, 16) == 0) {
      sgid = static_cast<int>(i);
      break;
    }
  }
  if (sgid < 0) return IB_INVALID_GID;
  std::memcpy(out->dgid, av.grh.dest_gid.raw, 16);
  const uint32_t vcf = ntohl(av.grh.ver_class_flow);
  out->flow_label = vcf & 0xfffff;
  out->traffic_class = static_cast<uint8_t>((vcf >> 20) & 0xff);
  out->hop_limit = av.grh.hop_limit;
  out->sgid_index = static_cast<uint8_t>(sgid);
  out->sl = av.sl;
  out->port_num = av.port_num;
  // IBAL's AV has no MAC (InfiniBand routes by LID): a GID of a port of a
  // device in this process carries its MAC in that port's table; else the
  // host's neighbour table.
  for (const auto& o : live_set().devices)
    for (const auto& p : o->ports)
      for (uint32_t i = 0; i < p.gid_count && out->dmac == 0; ++i)
        if (p.gids[i].type != 0 && std::memcmp(p.gids[i].gid, out->dgid, 16) == 0)
          out->dmac = p.gids[i].mac;
  if (out->dmac == 0) out->dmac = arp_lookup(out->dgid);
  if (out->dmac == 0) return IB_INVALID_GID;  // no route to the destination
  return IB_SUCCESS;
}

std::shared_ptr<CiDevice> device_by_guid(uint64_t guid) {
  std::lock_guard lk(mu());
  for (const auto& d : live_set().devices)
    if (d->attr.node_guid == guid) return d;
  return nullptr;
}

// ---- dispatch ---------------------------------------------------------------------

CiDevice::~CiDevice() {
  if (thread.joinable()) {
    const uint64_t one = 1;
    (void)::write(stop_fd, &one, sizeof one);
    if (thread.get_id() == std::this_thread::get_id())
      thread.detach();
    else
      thread.join();
  }
  if (dev) (void)kbv_device_close(dev, KBV_EQ_NONE, 0);
  if (eq) (void)kbv_eq_destroy(eq);
  if (stop_fd >= 0) ::close(stop_fd);
}

void CiDevice::loop() {
  int efd = -1;
  (void)kbv_eq_get_fd(eq, &efd);
  for (;;) {
    pollfd fds[2] = {{efd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    (void)::poll(fds, 2, 100);
    if (fds[1].revents & POLLIN) return;
    kbv_event_t ev[32];
    const int n = kbv_eq_poll(eq, ev, 32);
    for (int i = 0; i < n; ++i) {
      const kbv_event_t& e = ev[i];
      ci_completion_cb_t comp = nullptr;
      ci_async_event_cb_t async = nullptr;
      ib_event_rec_t rec{};
      void* cq_ctx = nullptr;
      {
        std::lock_guard lk(mu());
        if (ca == nullptr) continue;  // no CA open: nobody to tell
        async = ca->async_cb;
        rec.context = ca->context;
        rec.vendor_specific = static_cast<uint64_t>(static_cast<int64_t>(e.status));
        switch (e.type) {
          case KBV_EVENT_COMP_NOTIFY: {
            async = nullptr;
            if (e.status != KBV_SUCCESS) break;  // a re-arm cancelled it
            auto it = cq_by_handle.find(e.object);
            if (it == cq_by_handle.end()) break;
            comp = ca->comp_cb;
            cq_ctx = static_cast<kbv_ci_cq_s*>(it->second)->context;
            break;
          }
          case KBV_EVENT_PORT_STATE:
            rec.port_number = static_cast<uint8_t>(KBV_PORT_EVENT_PORT(e.info));
            rec.type = KBV_PORT_EVENT_STATE(e.info) == KBV_PORT_ACTIVE ? IB_AE_PORT_ACTIVE
                                                                       : IB_AE_PORT_DOWN;
            break;
          case KBV_EVENT_DEVICE_FATAL: rec.type = IB_AE_LOCAL_FATAL; break;
          case KBV_EVENT_CQ_ERROR: {
            auto it = cq_by_handle.find(e.object);
            if (it == cq_by_handle.end())
              async = nullptr;
            else
              rec.context = static_cast<kbv_ci_cq_s*>(it->second)->context;
            rec.type = IB_AE_CQ_ERROR;
            break;
          }
          case KBV_EVENT_QP_FATAL:
          case KBV_EVENT_QP_ACCESS_ERROR: {
            auto it = qp_by_handle.find(e.object);
            if (it == qp_by_handle.end())
              async = nullptr;
            else
              rec.context = static_cast<kbv_ci_qp_s*>(it->second)->context;
            rec.type = e.type == KBV_EVENT_QP_FATAL ? IB_AE_QP_FATAL : IB_AE_WQ_ACCESS_ERROR;
            break;
          }
          case KBV_EVENT_SRQ_LIMIT: {
            auto it = srq_by_handle.find(e.object);
            if (it == srq_by_handle.end())
              async = nullptr;
            else
              rec.context = static_cast<kbv_ci_srq_s*>(it->second)->context;
            rec.type = IB_AE_SRQ_LIMIT_REACHED;
            break;
          }
          default: async = nullptr; break;  // requests: none are submitted here
        }
      }
      if (comp) comp(cq_ctx);
      if (async) async(&rec);
    }
  }
}

ib_api_status_t open_device(const char* uri, std::shared_ptr<CiDevice>* out) {
  auto d = std::make_shared<CiDevice>();
  d->uri = uri;
  kbv_status_t st = kbv_eq_create(kEqDepth, &d->eq);
  if (st != KBV_SUCCESS) return ib_of(st);
  kbv_device_open_attr_t oa{};
  oa.flags = KBV_OPEN_PROGRESS_THREAD;
  oa.event_eq = d->eq;
  st = kbv_device_open(uri, &oa, KBV_EQ_NONE, 0, &d->dev);
  if (st != KBV_SUCCESS) {
    d->dev = 0;
    return ib_of(st);
  }
  st = kbv_device_query(d->dev, &d->attr, KBV_EQ_NONE, 0);
  if (st != KBV_SUCCESS) return ib_of(st);
  d->refresh_ports();
  d->stop_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (d->stop_fd < 0) return IB_INSUFFICIENT_RESOURCES;
  d->thread = std::thread([raw = d.get()] { raw->loop(); });
  {
    std::lock_guard lk(mu());
    live_set().devices.push_back(d);
  }
  *out = std::move(d);
  return IB_SUCCESS;
}

namespace {

// Drops the device from the registry when nothing holds it (under mu()).
std::shared_ptr<CiDevice> maybe_retire(const std::shared_ptr<CiDevice>& d) {
  if (d->iface_refs > 0 || d->ca != nullptr) return nullptr;
  auto& v = live_set().devices;
  v.erase(std::remove(v.begin(), v.end(), d), v.end());
  return d;  // the caller drops it outside mu() (its destructor joins the thread)
}

// ---- CA ------------------------------------------------------------------------------

ib_api_status_t open_ca(const ib_net64_t ca_guid, const ci_completion_cb_t pfn_completion_cb,
                        const ci_async_event_cb_t pfn_async_event_cb, const void* const ca_context,
                        ib_ca_handle_t* ph_ca) try {
  if (!pfn_completion_cb || !pfn_async_event_cb || ca_guid == 0 || !ph_ca)
    return IB_INVALID_PARAMETER;
  const uint64_t guid = be64toh(ca_guid);
  auto d = device_by_guid(guid);
  if (!d) {
    // Not held by an interface: open that HCA by GUID (the seeds' way).
    char uri[KBV_URI_MAX];
    std::snprintf(uri, sizeof uri, "guid:0x%llx", static_cast<unsigned long long>(guid));
    ib_api_status_t st = open_device(uri, &d);
    if (st != IB_SUCCESS) return st;
  }
  auto* ca = new (std::nothrow) kbv_ci_ca_s();
  if (!ca) return IB_INSUFFICIENT_MEMORY;
  ca->dev = d;
  ca->comp_cb = pfn_completion_cb;
  ca->async_cb = pfn_async_event_cb;
  ca->context = const_cast<void*>(ca_context);
  std::shared_ptr<CiDevice> retire;
  {
    std::lock_guard lk(mu());
    if (d->ca != nullptr) {
      delete ca;
      return IB_RESOURCE_BUSY;  // ib_ci.h: one open instance at a time
    }
    d->ca = ca;
    track(ca, Kind::kCa);
  }
  *ph_ca = ca;
  return IB_SUCCESS;
} catch (...) {
  return IB_INSUFFICIENT_MEMORY;
}

ib_api_status_t um_open_ca(const ib_ca_handle_t, ci_umv_buf_t* const, ib_ca_handle_t* const) {
  return IB_UNSUPPORTED;
}
void um_close_ca(ib_ca_handle_t, ib_ca_handle_t) {}

ib_api_status_t query_ca(const ib_ca_handle_t h_ca, ib_ca_attr_t* p_ca_attr, uint32_t* p_size,
                         ci_umv_buf_t* p_umv_buf) try {
  if (!live(h_ca, Kind::kCa)) return IB_INVALID_CA_HANDLE;
  if (!p_size) return IB_INVALID_PARAMETER;
  if (ib_api_status_t u = umv(p_umv_buf); u != IB_SUCCESS) return u;
  CiDevice& d = *h_ca->dev;
  d.refresh_ports();
  // The ports' P_Key tables (QUERY_HCA_VPORT_PKEY); the default P_Key alone
  // if a table cannot be read.
  const uint32_t npk = d.attr.max_pkeys ? d.attr.max_pkeys : 1;
  std::vector<std::vector<uint16_t>> pkeys(d.attr.phys_port_cnt, std::vector<uint16_t>(npk));
  for (uint32_t i = 0; i < pkeys.size(); ++i)
    if (kbv_port_query_pkey_table(d.dev, i + 1, pkeys[i].data(), npk, KBV_EQ_NONE, 0) !=
        KBV_SUCCESS)
      pkeys[i].assign(1, 0xffff);
  std::lock_guard lk(mu());
  const uint32_t nports = static_cast<uint32_t>(std::min(d.ports.size(), pkeys.size()));
  uint32_t ngids = 0, npkeys = 0;
  for (uint32_t i = 0; i < nports; ++i) {
    ngids += d.ports[i].gid_count;
    npkeys += static_cast<uint32_t>(pkeys[i].size());
  }
  const uint32_t need =
      static_cast<uint32_t>(sizeof(ib_ca_attr_t) + nports * sizeof(ib_port_attr_t) +
                            ngids * sizeof(ib_gid_t) + npkeys * sizeof(ib_net16_t) + 8);
  if (p_ca_attr == nullptr || *p_size < need) {
    *p_size = need;
    return IB_INSUFFICIENT_MEMORY;
  }
  std::memset(p_ca_attr, 0, need);
  ib_ca_attr_t& a = *p_ca_attr;
  const kbv_device_attr_t& k = d.attr;
  a.ca_guid = htobe64(k.node_guid);
  a.vend_id = k.vendor_id;
  a.dev_id = k.device_id;
  a.revision = static_cast<uint16_t>(k.hw_ver);
  unsigned maj = 0, min = 0, sub = 0;
  (void)std::sscanf(k.fw_version, "%u.%u.%u", &maj, &min, &sub);
  a.fw_ver = uint64_t{maj} << 32 | uint64_t{min} << 16 | sub;
  a.size = need;
  a.max_pds = k.max_pd;
  a.max_qps = k.max_qp;
  a.max_wrs = k.max_qp_wr;
  a.max_sges = k.max_send_sge;
  a.max_rd_sges = k.max_recv_sge;
  a.max_cqs = k.max_cq;
  a.max_cqes = k.max_cqe;
  a.max_srq = k.max_srq;
  a.max_srq_wrs = k.max_srq_wr;
  a.max_srq_sges = k.max_srq_sge;
  a.max_mrs = k.max_mr;
  a.init_region_size = k.max_mr_size;
  a.max_pkeys = d.attr.max_pkeys;
  a.max_mcast_grps = k.max_mcast_grp;
  a.max_qps_per_mcast_grp = k.max_mcast_qp_attach;
  a.max_qp_resp_res = k.max_qp_rd_atom;
  a.max_qp_init_depth = k.max_qp_init_rd_atom;
  a.local_ack_delay = k.local_ca_ack_delay;
  a.atomicity = (k.cap_flags & KBV_DEVICE_CAP_ATOMIC) != 0;
  a.srq_supported = (k.cap_flags & KBV_DEVICE_CAP_SRQ) != 0;
  a.num_ports = static_cast<uint8_t>(nports);
  auto* base = reinterpret_cast<uint8_t*>(p_ca_attr);
  size_t off = sizeof(ib_ca_attr_t);
  a.p_port_attr = reinterpret_cast<ib_port_attr_t*>(base + off);
  off += nports * sizeof(ib_port_attr_t);
  for (uint32_t i = 0; i < nports; ++i) {
    const kbv_port_attr_t& kp = d.ports[i];
    ib_port_attr_t& p = a.p_port_attr[i];
    p.port_guid = htobe64(kp.port_guid);
    p.port_num = static_cast<uint8_t>(i + 1);
    p.link_state = static_cast<uint8_t>(kp.state);
    p.active_mtu = static_cast<uint8_t>(kp.active_mtu);
    p.mtu = static_cast<uint8_t>(kp.max_mtu);
    p.num_gids = static_cast<uint16_t>(kp.gid_count);
    p.p_gid_table = reinterpret_cast<ib_gid_t*>(base + off);
    for (uint32_t g = 0; g < kp.gid_count; ++g)
      std::memcpy(p.p_gid_table[g].raw, kp.gids[g].gid, 16);
    off += kp.gid_count * sizeof(ib_gid_t);
  }
  for (uint32_t i = 0; i < nports; ++i) {
    ib_port_attr_t& p = a.p_port_attr[i];
    p.num_pkeys = static_cast<uint16_t>(pkeys[i].size());
    p.p_pkey_table = reinterpret_cast<ib_net16_t*>(base + off);
    for (size_t k = 0; k < pkeys[i].size(); ++k) p.p_pkey_table[k] = htons(pkeys[i][k]);
    off += pkeys[i].size() * sizeof(ib_net16_t);
  }
  return IB_SUCCESS;
} catch (...) {
  return IB_INSUFFICIENT_MEMORY;
}

ib_api_status_t modify_ca(const ib_ca_handle_t h_ca, const uint8_t port_num, const ib_ca_mod_t,
                          const ib_port_attr_mod_t*) {
  if (!live(h_ca, Kind::kCa)) return IB_INVALID_CA_HANDLE;
  if (port_num < 1 || port_num > h_ca->dev->attr.phys_port_cnt) return IB_INVALID_PORT;
  return IB_UNSUPPORTED;
}

ib_api_status_t close_ca(ib_ca_handle_t h_ca) {
  std::shared_ptr<CiDevice> retire;
  {
    std::lock_guard lk(mu());
    auto it = live_set().objs.find(h_ca);
    if (it == live_set().objs.end() || it->second != Kind::kCa) return IB_INVALID_CA_HANDLE;
    if (h_ca->children.load() > 0) return IB_RESOURCE_BUSY;
    untrack(h_ca);
    h_ca->dev->ca = nullptr;
    retire = maybe_retire(h_ca->dev);
  }
  delete h_ca;
  return IB_SUCCESS;  // retire (if any) closes the device here
}

ib_api_status_t vendor_call(const ib_ca_handle_t h_ca, const void* const* const, uint32_t,
                            ib_ci_op_t* const, ci_umv_buf_t*) {
  if (!live(h_ca, Kind::kCa)) return IB_INVALID_CA_HANDLE;
  return IB_UNSUPPORTED;
}

ib_api_status_t local_mad(const ib_ca_handle_t h_ca, const uint8_t, const ib_mad_t*, ib_mad_t*) {
  if (!live(h_ca, Kind::kCa)) return IB_INVALID_CA_HANDLE;
  return IB_UNSUPPORTED;
}

// ---- PD --------------------------------------------------------------------------

ib_api_status_t allocate_pd(const ib_ca_handle_t h_ca, const ib_pd_type_t type,
                            ib_pd_handle_t* ph_pd, ci_umv_buf_t* p_umv_buf) try {
  if (!live(h_ca, Kind::kCa)) return IB_INVALID_CA_HANDLE;
  if (!ph_pd) return IB_INVALID_PARAMETER;
  if (type == IB_PDT_ALIAS || type == IB_PDT_SQP) return IB_UNSUPPORTED;
  if (type != IB_PDT_NORMAL && type != IB_PDT_UD) return IB_INVALID_PARAMETER;
  if (ib_api_status_t u = umv(p_umv_buf); u != IB_SUCCESS) return u;
  auto* pd = new kbv_ci_pd_s();
  pd->ca = h_ca;
  kbv_status_t st = kbv_pd_alloc(h_ca->dev->dev, KBV_EQ_NONE, 0, &pd->pd);
  if (st != KBV_SUCCESS) {
    delete pd;
    return ib_of(st);
  }
  std::lock_guard lk(mu());
  track(pd, Kind::kPd);
  ++h_ca->children;
  *ph_pd = pd;
  return IB_SUCCESS;
} catch (...) {
  return IB_INSUFFICIENT_MEMORY;
}

ib_api_status_t deallocate_pd(ib_pd_handle_t h_pd) {
  {
    std::lock_guard lk(mu());
    auto it = live_set().objs.find(h_pd);
    if (it == live_set().objs.end() || it->second != Kind::kPd) return IB_INVALID_PD_HANDLE;
    if (h_pd->children.load() > 0) return IB_RESOURCE_BUSY;
    untrack(h_pd);
    --h_pd->ca->children;
  }
  (void)kbv_pd_dealloc(h_pd->pd, KBV_EQ_NONE, 0);
  delete h_pd;
  return IB_SUCCESS;
}

// ---- AV ---------------------------------------------------------------------------

ib_api_status_t create_av(const ib_pd_handle_t h_pd, const ib_av_attr_t* p_av_attr,
                          ib_av_handle_t* ph_av, ci_umv_buf_t* p_umv_buf) try {
  if (!live(h_pd, Kind::kPd)) return IB_INVALID_PD_HANDLE;
  if (!p_av_attr || !ph_av) return IB_INVALID_PARAMETER;
  if (ib_api_status_t u = umv(p_umv_buf); u != IB_SUCCESS) return u;
  kbv_ah_attr_t ka;
  if (ib_api_status_t s = av_to_kbv(*h_pd->ca->dev, *p_av_attr, &ka); s != IB_SUCCESS) return s;
  auto* av = new kbv_ci_av_s();
  av->pd = h_pd;
  av->attr = *p_av_attr;
  kbv_status_t st = kbv_ah_create(h_pd->pd, &ka, KBV_EQ_NONE, 0, &av->ah);
  if (st != KBV_SUCCESS) {
    delete av;
    return ib_of(st);
  }
  std::lock_guard lk(mu());
  track(av, Kind::kAv);
  ++h_pd->children;
  *ph_av = av;
  return IB_SUCCESS;
} catch (...) {
  return IB_INSUFFICIENT_MEMORY;
}

ib_api_status_t query_av(const ib_av_handle_t h_av, ib_av_attr_t* p_av_attr, ib_pd_handle_t* ph_pd,
                         ci_umv_buf_t* p_umv_buf) {
  if (!live(h_av, Kind::kAv)) return IB_INVALID_AV_HANDLE;
  if (!p_av_attr || !ph_pd) return IB_INVALID_PARAMETER;
  if (ib_api_status_t u = umv(p_umv_buf); u != IB_SUCCESS) return u;
  *p_av_attr = h_av->attr;
  *ph_pd = h_av->pd;
  return IB_SUCCESS;
}

ib_api_status_t modify_av(const ib_av_handle_t h_av, const ib_av_attr_t* p_av_attr,
                          ci_umv_buf_t* p_umv_buf) {
  if (!live(h_av, Kind::kAv)) return IB_INVALID_AV_HANDLE;
  if (!p_av_attr) return IB_INVALID_PARAMETER;
  if (ib_api_status_t u = umv(p_umv_buf); u != IB_SUCCESS) return u;
  kbv_ah_attr_t ka;
  if (ib_api_status_t s = av_to_kbv(*h_av->pd->ca->dev, *p_av_attr, &ka); s != IB_SUCCESS) return s;
  // A kbv AH is immutable: a new one replaces it (posted WRs keep the old
  // address; UD WQEs carry their address).
  kbv_ah_t ah = 0;
  kbv_status_t st = kbv_ah_create(h_av->pd->pd, &ka, KBV_EQ_NONE, 0, &ah);
  if (st != KBV_SUCCESS) return ib_of(st);
  (void)kbv_ah_destroy(h_av->ah, KBV_EQ_NONE, 0);
  h_av->ah = ah;
  h_av->attr = *p_av_attr;
  return IB_SUCCESS;
}

ib_api_status_t destroy_av(const ib_av_handle_t h_av) {
  {
    std::lock_guard lk(mu());
    auto it = live_set().objs.find(h_av);
    if (it == live_set().objs.end() || it->second != Kind::kAv) return IB_INVALID_AV_HANDLE;
    untrack(h_av);
    --h_av->pd->children;
  }
  (void)kbv_ah_destroy(h_av->ah, KBV_EQ_NONE, 0);
  delete h_av;
  return IB_SUCCESS;
}

// ---- CQ ----------------------------------------------------------------------------

ib_api_status_t create_cq(const ib_ca_handle_t h_ca, const void* cq_context, uint32_t* const p_size,
                          ib_cq_handle_t* ph_cq, ci_umv_buf_t* p_umv_buf) try {
  if (!live(h_ca, Kind::kCa)) return IB_INVALID_CA_HANDLE;
  if (!p_size || !ph_cq) return IB_INVALID_PARAMETER;
  if (*p_size == 0) return IB_INVALID_CQ_SIZE;
  if (ib_api_status_t u = umv(p_umv_buf); u != IB_SUCCESS) return u;
  CiDevice& d = *h_ca->dev;
  if (*p_size > d.attr.max_cqe) return IB_INVALID_CQ_SIZE;
  auto* cq = new kbv_ci_cq_s();
  cq->ca = h_ca;
  cq->context = const_cast<void*>(cq_context);
  kbv_cq_attr_t a{};
  a.cqe = *p_size;
  a.event_eq = d.eq;
  kbv_status_t st = kbv_cq_create(d.dev, &a, KBV_EQ_NONE, 0, &cq->cq);
  if (st != KBV_SUCCESS) {
    delete cq;
    return ib_of(st);
  }
  // kbv rounds up to 2^n (kbv_cq_attr.cqe).
  uint32_t n = 1;
  while (n < *p_size) n <<= 1;
  cq->size = n;
  *p_size = n;
  std::lock_guard lk(mu());
  track(cq, Kind::kCq);
  d.cq_by_handle[cq->cq] = cq;
  ++h_ca->children;
  *ph_cq = cq;
  return IB_SUCCESS;
} catch (...) {
  return IB_INSUFFICIENT_MEMORY;
}

ib_api_status_t resize_cq(const ib_cq_handle_t h_cq, uint32_t* const p_size,
                          ci_umv_buf_t* p_umv_buf) {
  if (!live(h_cq, Kind::kCq)) return IB_INVALID_CQ_HANDLE;
  if (!p_size) return IB_INVALID_PARAMETER;
  if (*p_size == 0 || *p_size > h_cq->ca->dev->attr.max_cqe) return IB_INVALID_CQ_SIZE;
  if (ib_api_status_t u = umv(p_umv_buf); u != IB_SUCCESS) return u;
  if (!h_cq->ahead.empty()) return IB_RESOURCE_BUSY;  // kbv_cq_resize: drained first
  kbv_status_t st = kbv_cq_resize(h_cq->cq, *p_size, KBV_EQ_NONE, 0);
  if (st != KBV_SUCCESS) return ib_of(st);
  uint32_t n = 1;
  while (n < *p_size) n <<= 1;
  h_cq->size = n;
  *p_size = n;
  return IB_SUCCESS;
}

ib_api_status_t query_cq(const ib_cq_handle_t h_cq, uint32_t* p_size, ci_umv_buf_t* p_umv_buf) {
  if (!live(h_cq, Kind::kCq)) return IB_INVALID_CQ_HANDLE;
  if (!p_size) return IB_INVALID_PARAMETER;
  if (ib_api_status_t u = umv(p_umv_buf); u != IB_SUCCESS) return u;
  *p_size = h_cq->size;
  return IB_SUCCESS;
}

ib_api_status_t destroy_cq(const ib_cq_handle_t h_cq) {
  {
    std::lock_guard lk(mu());
    auto it = live_set().objs.find(h_cq);
    if (it == live_set().objs.end() || it->second != Kind::kCq) return IB_INVALID_CQ_HANDLE;
    if (h_cq->children.load() > 0) return IB_RESOURCE_BUSY;
    untrack(h_cq);
    h_cq->ca->dev->cq_by_handle.erase(h_cq->cq);
    --h_cq->ca->children;
  }
  (void)kbv_cq_destroy(h_cq->cq, KBV_EQ_NONE, 0);
  delete h_cq;
  return IB_SUCCESS;
}

ib_api_status_t enable_cq_notify(const ib_cq_handle_t h_cq, const boolean_t solicited) {
  if (!live(h_cq, Kind::kCq)) return IB_INVALID_CQ_HANDLE;
  CiDevice& d = *h_cq->ca->dev;
  kbv_status_t st = kbv_cq_arm(h_cq->cq, solicited ? 1 : 0, d.eq, d.next_user_data.fetch_add(1));
  return st == KBV_PENDING ? IB_SUCCESS : ib_of(st);
}

ib_api_status_t enable_ncomp_cq_notify(const ib_cq_handle_t h_cq, const uint32_t) {
  if (!live(h_cq, Kind::kCq)) return IB_INVALID_CQ_HANDLE;
  return IB_UNSUPPORTED;
}

}  // namespace

void fill_ca(ci_interface_t& c) {
  c.open_ca = open_ca;
  c.um_open_ca = um_open_ca;
  c.query_ca = query_ca;
  c.modify_ca = modify_ca;
  c.close_ca = close_ca;
  c.um_close_ca = um_close_ca;
  c.vendor_call = vendor_call;
  c.allocate_pd = allocate_pd;
  c.deallocate_pd = deallocate_pd;
  c.create_av = create_av;
  c.query_av = query_av;
  c.modify_av = modify_av;
  c.destroy_av = destroy_av;
  c.create_cq = create_cq;
  c.resize_cq = resize_cq;
  c.query_cq = query_cq;
  c.destroy_cq = destroy_cq;
  c.enable_cq_notify = enable_cq_notify;
  c.enable_ncomp_cq_notify = enable_ncomp_cq_notify;
  c.local_mad = local_mad;
}

}  // namespace kbv::compat::ci

using namespace kbv::compat::ci;

extern "C" ib_api_status_t kbv_ci_get_interface(const char* uri_or_guid, ci_interface_t* p_ci) try {
  if (!uri_or_guid || !p_ci) return IB_INVALID_PARAMETER;
  std::shared_ptr<CiDevice> d;
  ib_api_status_t st = open_device(uri_or_guid, &d);
  if (st != IB_SUCCESS) return st;
  {
    std::lock_guard lk(mu());
    ++d->iface_refs;
  }
  ci_interface_t& c = *p_ci;
  std::memset(&c, 0, sizeof c);
  c.guid = htobe64(d->attr.node_guid);
  c.p_hca_dev = d.get();
  c.vend_id = d->attr.vendor_id;
  c.dev_id = d->attr.device_id;
  c.dev_revision = static_cast<uint16_t>(d->attr.hw_ver);
  c.version = VERBS_VERSION;
  fill_ca(c);
  fill_qp(c);
  fill_mr(c);
  return IB_SUCCESS;
} catch (...) {
  return IB_INSUFFICIENT_MEMORY;
}

extern "C" ib_api_status_t kbv_ci_release_interface(const ci_interface_t* p_ci) try {
  if (!p_ci) return IB_INVALID_PARAMETER;
  std::shared_ptr<CiDevice> retire;
  {
    std::lock_guard lk(mu());
    std::shared_ptr<CiDevice> d;
    for (const auto& x : live_set().devices)
      if (x.get() == p_ci->p_hca_dev) d = x;
    if (!d || d->iface_refs == 0) return IB_NOT_FOUND;
    --d->iface_refs;
    retire = maybe_retire(d);
  }
  return IB_SUCCESS;
} catch (...) {
  return IB_INSUFFICIENT_MEMORY;
}
