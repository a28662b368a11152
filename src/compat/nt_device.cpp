// SPDX-License-Identifier: BSD-3-Clause
// NtDevice: the interface context of the NT verbs interface — a kbv device,
// its internal event queue and the dispatch thread; the object registry;
// address vector resolution. See nt_objects.hpp.
#include <arpa/inet.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>

#include "common/log.hpp"
#include "compat/arp.hpp"
#include "compat/nt_objects.hpp"

namespace kbv::compat {

namespace {

constexpr const char* kLog = "compat/nt";

struct ObjRegistry {
  std::mutex mu;
  std::unordered_map<const void*, std::shared_ptr<NtObject>> objs;
  std::vector<std::weak_ptr<NtDevice>> devices;
};
ObjRegistry& objects() {
  static ObjRegistry r;
  return r;
}

constexpr uint32_t kEqDepth = 4096;

}  // namespace

void publish(const void* pub, std::shared_ptr<NtObject> obj) {
  auto& r = objects();
  std::lock_guard lk(r.mu);
  r.objs[pub] = std::move(obj);
}

void unpublish(const void* pub) {
  std::shared_ptr<NtObject> keep;  // freed outside the lock
  auto& r = objects();
  std::lock_guard lk(r.mu);
  auto it = r.objs.find(pub);
  if (it == r.objs.end()) return;
  keep = std::move(it->second);
  r.objs.erase(it);
}

std::shared_ptr<NtObject> lookup_any(const void* pub) {
  if (pub == nullptr) return nullptr;
  auto& r = objects();
  std::lock_guard lk(r.mu);
  auto it = r.objs.find(pub);
  return it == r.objs.end() ? nullptr : it->second;
}

NTSTATUS nt_of(int32_t kbv_status) {
  return kbv_status_to_ntstatus(static_cast<kbv_status_t>(kbv_status));
}

// ---- NtDevice ---------------------------------------------------------------------

NTSTATUS NtDevice::open(const char* uri, std::shared_ptr<NtDevice>* out) {
  std::shared_ptr<NtDevice> d(new (std::nothrow) NtDevice());
  if (!d) return STATUS_NO_MEMORY;
  kbv_status_t st = kbv_eq_create(kEqDepth, &d->eq_);
  if (st != KBV_SUCCESS) return nt_of(st);
  kbv_device_open_attr_t oa{};
  oa.flags = KBV_OPEN_PROGRESS_THREAD;
  oa.event_eq = d->eq_;
  st = kbv_device_open(uri, &oa, KBV_EQ_NONE, 0, &d->dev_);
  if (st != KBV_SUCCESS) {
    (void)kbv_eq_destroy(d->eq_);
    d->eq_ = KBV_EQ_NONE;
    return nt_of(st);
  }
  st = kbv_device_query(d->dev_, &d->attr_, KBV_EQ_NONE, 0);
  d->stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (st != KBV_SUCCESS || d->stop_fd_ < 0) {
    NTSTATUS nt = st != KBV_SUCCESS ? nt_of(st) : STATUS_INSUFFICIENT_RESOURCES;
    d->stop_and_close();
    return nt;
  }
  d->port_caps_.resize(d->attr_.phys_port_cnt);
  for (uint32_t p = 1; p <= d->attr_.phys_port_cnt; ++p) {
    kbv_port_attr_t pa{};
    if (kbv_port_query(d->dev_, p, &pa, KBV_EQ_NONE, 0) == KBV_SUCCESS) d->note_port(pa);
  }
  try {
    // The thread holds the device until it stopped and closed it.
    d->thread_ = std::thread([self = d] { self->loop(); });
  } catch (...) {
    d->stop_and_close();
    return STATUS_INSUFFICIENT_RESOURCES;
  }
  d->thread_id_ = d->thread_.get_id();
  {
    auto& r = objects();
    std::lock_guard lk(r.mu);
    r.objs[d.get()] = d;
    r.devices.push_back(d);
  }
  *out = std::move(d);
  return STATUS_SUCCESS;
}

NtDevice::~NtDevice() {
  if (thread_.joinable()) {
    // The dispatch thread dropped the last reference on its way out.
    if (std::this_thread::get_id() == thread_id_) {
      thread_.detach();
    } else {
      thread_.join();
    }
  }
  stop_and_close();
}

void NtDevice::request_stop() {
  stop_.store(true, std::memory_order_release);
  if (stop_fd_ >= 0) {
    uint64_t one = 1;
    ssize_t n = write(stop_fd_, &one, sizeof(one));
    (void)n;
  }
}

// Runs on the dispatch thread when it stops (or on a failed open).
void NtDevice::stop_and_close() {
  stop_.store(true, std::memory_order_release);
  if (dev_ != 0) {
    (void)kbv_device_close(dev_, KBV_EQ_NONE, 0);
    dev_ = 0;
  }
  if (eq_ != KBV_EQ_NONE) {
    (void)kbv_eq_destroy(eq_);
    eq_ = KBV_EQ_NONE;
  }
  if (stop_fd_ >= 0) {
    close(stop_fd_);
    stop_fd_ = -1;
  }
}

void NtDevice::user_gone() {
  if (users_.fetch_sub(1) != 1) return;
  request_stop();
  // Off the dispatch thread the device is closed before this returns (a
  // client may then tear down what the device ran on, e.g. a model HCA);
  // on it, the thread closes it on its way out.
  if (std::this_thread::get_id() != thread_id_ && thread_.joinable()) thread_.join();
}

void NtDevice::ifc_ref() {
  ifc_refs_.fetch_add(1);
  users_.fetch_add(1);
}

void NtDevice::ifc_deref() {
  int before = ifc_refs_.load();
  do {
    if (before <= 0) return;  // a dereference too many: ignored
  } while (!ifc_refs_.compare_exchange_weak(before, before - 1));
  // The last one: the interface is gone, only the CAs keep the device now.
  if (before == 1) unpublish(this);
  user_gone();
}

void NtDevice::add_ca(const std::shared_ptr<NtObject>& ca) {
  users_.fetch_add(1);
  std::lock_guard lk(mu_);
  cas_.push_back(ca);
}

void NtDevice::remove_ca(const NtObject* ca) {
  {
    std::lock_guard lk(mu_);
    std::erase_if(cas_, [ca](const std::weak_ptr<NtObject>& w) {
      auto s = w.lock();
      return !s || s.get() == ca;
    });
  }
  user_gone();
}

std::vector<std::shared_ptr<NtDevice>> NtDevice::all() {
  std::vector<std::shared_ptr<NtDevice>> v;
  auto& r = objects();
  std::lock_guard lk(r.mu);
  std::erase_if(r.devices, [&v](const std::weak_ptr<NtDevice>& w) {
    auto s = w.lock();
    if (!s) return true;
    if (!s->stop_.load(std::memory_order_acquire)) v.push_back(std::move(s));
    return false;
  });
  return v;
}

kbv_status_t NtDevice::submit(const Call& call, Cont cont) {
  if (stop_.load(std::memory_order_acquire)) {
    kbv_event_t ev{};
    ev.type = KBV_EVENT_REQUEST;
    ev.status = KBV_ERR_INVALID_HANDLE;
    cont(ev);
    return KBV_ERR_INVALID_HANDLE;
  }
  uint64_t ud;
  {
    std::lock_guard lk(mu_);
    ud = next_ud_++;
    conts_.emplace(ud, std::move(cont));
  }
  kbv_status_t st = call(eq_, ud);
  if (st == KBV_PENDING) return st;
  Cont c;
  {
    std::lock_guard lk(mu_);
    auto it = conts_.find(ud);
    if (it == conts_.end()) return st;  // its event already arrived
    c = std::move(it->second);
    conts_.erase(it);
  }
  kbv_event_t ev{};
  ev.type = KBV_EVENT_REQUEST;
  ev.status = st;
  ev.user_data = ud;
  c(ev);
  return st;
}

NTSTATUS NtDevice::destroy(IB_REQUEST* req, unsigned arg, const std::function<void()>& accepted,
                           const Call& close, std::function<void()> gone, ULONG_PTR info) {
  if (req == nullptr) return kbv_nt_invalid_parameter_n(arg);
  const bool sync = req->CompletionRoutine == nullptr && req->Eq == KBV_EQ_NONE;
  if (sync) {
    accepted();
    kbv_status_t st = close(KBV_EQ_NONE, 0);
    gone();
    return complete_inline(req, st == KBV_PENDING ? STATUS_PENDING : STATUS_SUCCESS, info);
  }
  std::shared_ptr<NtRequest> r;
  NTSTATUS st = NtRequest::begin(req, arg, false, &r);
  if (st != STATUS_SUCCESS) return st;
  accepted();
  (void)submit(close, [r, gone = std::move(gone), info](const kbv_event_t&) {
    gone();
    (void)r->complete(STATUS_SUCCESS, info);
  });
  return STATUS_PENDING;
}

std::function<void()> NtDevice::pump() {
  if (std::this_thread::get_id() != thread_id_) return {};
  return [this] { (void)dispatch_once(); };
}

kbv_event_t NtDevice::run(const Call& call) {
  struct Wait {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    kbv_event_t ev{};
  };
  auto w = std::make_shared<Wait>();
  submit(call, [w](const kbv_event_t& ev) {
    std::lock_guard lk(w->mu);
    w->ev = ev;
    w->done = true;
    w->cv.notify_all();
  });
  if (auto p = pump()) {
    for (;;) {
      {
        std::lock_guard lk(w->mu);
        if (w->done) break;
      }
      p();
    }
  } else {
    std::unique_lock lk(w->mu);
    w->cv.wait(lk, [&w] { return w->done; });
  }
  return w->ev;
}

void NtDevice::note_port(const kbv_port_attr_t& pa) {
  std::lock_guard lk(mu_);
  std::erase_if(gids_, [&pa](const GidMac& g) { return g.port == pa.port_num; });
  for (uint32_t i = 0; i < pa.gid_count && i < KBV_GID_TABLE_MAX; ++i) {
    if (pa.gids[i].type == 0) continue;
    GidMac g{pa.port_num, {}, pa.gids[i].mac};
    std::memcpy(g.gid, pa.gids[i].gid, 16);
    gids_.push_back(g);
  }
}

uint64_t NtDevice::mac_of(const uint8_t* gid) {
  std::lock_guard lk(mu_);
  for (const auto& g : gids_) {
    if (std::memcmp(g.gid, gid, 16) == 0) return g.mac;
  }
  return 0;
}

void NtDevice::route(uint64_t handle, const std::shared_ptr<NtObject>& obj) {
  std::lock_guard lk(mu_);
  routes_[handle] = obj;
}

void NtDevice::unroute(uint64_t handle) {
  std::lock_guard lk(mu_);
  routes_.erase(handle);
}

void NtDevice::add_qpn(uint32_t qpn, IB_QP* qp) {
  std::lock_guard lk(mu_);
  qpns_[qpn] = qp;
}

void NtDevice::remove_qpn(uint32_t qpn) {
  std::lock_guard lk(mu_);
  qpns_.erase(qpn);
}

IB_QP* NtDevice::qp_by_qpn(uint32_t qpn) {
  std::lock_guard lk(mu_);
  auto it = qpns_.find(qpn);
  return it == qpns_.end() ? nullptr : it->second;
}

NTSTATUS NtDevice::modify_port_caps(const void* ca, uint8_t port, ULONG set, ULONG clear) {
  constexpr ULONG kExclusive = IB_PORT_CAP_IS_SM | IB_PORT_CAP_CM_SUP;
  std::lock_guard lk(mu_);
  if (port == 0 || port > port_caps_.size()) return STATUS_IB_INVALID_PORT;
  auto& pc = port_caps_[port - 1];
  for (auto& [owner, bits] : pc.by_ca) {
    if (owner != ca && (bits & set & kExclusive) != 0) return STATUS_FILE_LOCK_CONFLICT;
  }
  ULONG& mine = pc.by_ca[ca];
  mine = (mine | set) & ~clear;
  if (mine == 0) pc.by_ca.erase(ca);
  return STATUS_SUCCESS;
}

ULONG NtDevice::port_caps(uint8_t port) {
  std::lock_guard lk(mu_);
  if (port == 0 || port > port_caps_.size()) return 0;
  ULONG all = 0;
  for (auto& [owner, bits] : port_caps_[port - 1].by_ca) all |= bits;
  return all;
}

void NtDevice::drop_port_caps(const void* ca) {
  std::lock_guard lk(mu_);
  for (auto& pc : port_caps_) pc.by_ca.erase(ca);
}

// ---- dispatch ------------------------------------------------------------------------

void NtDevice::loop() {
  int eq_fd = -1;
  if (kbv_eq_get_fd(eq_, &eq_fd) != KBV_SUCCESS) eq_fd = -1;
  while (!stop_.load(std::memory_order_acquire)) {
    if (dispatch_once() != 0) continue;
    // Sleep until events wait (the device's progress thread posts them) or
    // stop; the timeout bounds the wait should an event need polling to be
    // driven.
    pollfd fds[2] = {{eq_fd, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    (void)::poll(fds, 2, 10);
  }
  // Stopped: no interface and no CA uses the device any more.
  stop_and_close();
}

uint32_t NtDevice::dispatch_once() {
  kbv_event_t evs[32];
  int n = kbv_eq_poll(eq_, evs, 32);
  if (n <= 0) return 0;
  for (int i = 0; i < n; ++i) dispatch(evs[i]);
  return static_cast<uint32_t>(n);
}

void NtDevice::dispatch(const kbv_event_t& ev) {
  if (ev.user_data != 0) {
    Cont c;
    {
      std::lock_guard lk(mu_);
      auto it = conts_.find(ev.user_data);
      if (it == conts_.end()) return;
      c = std::move(it->second);
      conts_.erase(it);
    }
    c(ev);
    return;
  }
  switch (ev.type) {
    case KBV_EVENT_DEVICE_FATAL: {
      dead_.store(true, std::memory_order_release);
      std::vector<std::shared_ptr<NtObject>> objs;
      {
        std::lock_guard lk(mu_);
        for (auto& w : cas_) {
          if (auto s = w.lock()) objs.push_back(std::move(s));
        }
        for (auto& [h, w] : routes_) {
          if (auto s = w.lock()) objs.push_back(std::move(s));
        }
      }
      log::error(kLog, "device {:#x} failed: CAs report IbAeLocalFatal", dev_);
      for (auto& o : objs) o->on_fatal();
      return;
    }
    case KBV_EVENT_PORT_STATE: {
      // Refresh the port's GID table (addresses may change with the link).
      auto pa = std::make_shared<kbv_port_attr_t>();
      const uint32_t port = KBV_PORT_EVENT_PORT(ev.info);
      (void)submit(
          [this, pa, port](kbv_eq_t eq, uint64_t ud) {
            return kbv_port_query(dev_, port, pa.get(), eq, ud);
          },
          [this, pa](const kbv_event_t& e) {
            if (e.status == KBV_SUCCESS) note_port(*pa);
          });
      std::vector<std::shared_ptr<NtObject>> cas;
      {
        std::lock_guard lk(mu_);
        for (auto& w : cas_) {
          if (auto s = w.lock()) cas.push_back(std::move(s));
        }
      }
      for (auto& c : cas) c->on_event(ev);
      return;
    }
    case KBV_EVENT_OVERFLOW:
      log::warn(kLog, "device {:#x}: {} asynchronous events lost", dev_, ev.info);
      return;
    default: {
      std::shared_ptr<NtObject> o;
      {
        std::lock_guard lk(mu_);
        auto it = routes_.find(ev.object);
        if (it != routes_.end()) o = it->second.lock();
      }
      if (o) o->on_event(ev);
      return;
    }
  }
}

// ---- address vectors ---------------------------------------------------------------

namespace {

bool gid_zero(const uint8_t* g) {
  static const uint8_t z[16] = {};
  return std::memcmp(g, z, 16) == 0;
}

}  // namespace

// The MAC of an IPv4 neighbour from /proc/net/arp ("IP address HW type Flags
// HW address Mask Device"); 0 when not found. Shared with the ci layer.
uint64_t arp_lookup(const uint8_t* gid) {
  static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(gid, v4mapped, 12) != 0) return 0;
  char want[INET_ADDRSTRLEN];
  if (inet_ntop(AF_INET, gid + 12, want, sizeof(want)) == nullptr) return 0;
  FILE* f = std::fopen("/proc/net/arp", "re");
  if (f == nullptr) return 0;
  char line[256];
  uint64_t mac = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    char ip[64], hw[64];
    unsigned type, flags;
    if (std::sscanf(line, "%63s 0x%x 0x%x %63s", ip, &type, &flags, hw) != 4) continue;
    if (std::strcmp(ip, want) != 0) continue;
    unsigned b[6];
    if (std::sscanf(hw, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) == 6) {
      for (unsigned v : b) mac = mac << 8 | (v & 0xff);
    }
    break;
  }
  std::fclose(f);
  return mac;
}

NTSTATUS resolve_av(NtDevice& dev, const IB_AH_ATTR& av, kbv_ah_attr_t* out, NTSTATUS bad_port,
                    NTSTATUS bad_sgid) {
  if (av.PortNumber == 0 || av.PortNumber > dev.num_ports()) return bad_port;
  if ((av.Flags & IB_AH_FLAG_GRH) == 0) return bad_sgid;  // RoCE addresses by GID
  if (av.SvcLvl > 7) return bad_sgid;
  kbv_port_attr_t pa{};
  kbv_event_t ev = dev.run([&dev, &av, &pa](kbv_eq_t eq, uint64_t ud) {
    return kbv_port_query(dev.handle(), av.PortNumber, &pa, eq, ud);
  });
  if (ev.status != KBV_SUCCESS) return nt_of(ev.status);
  dev.note_port(pa);
  int sgid = -1;
  for (uint32_t i = 0; i < pa.gid_count; ++i) {
    const auto& g = pa.gids[i];
    if (g.type == 0) continue;
    if (gid_zero(av.Grh.SGid.Raw) ? g.type == KBV_GID_TYPE_ROCE_V2
                                  : std::memcmp(g.gid, av.Grh.SGid.Raw, 16) == 0) {
      sgid = static_cast<int>(i);
      break;
    }
  }
  if (sgid < 0) return bad_sgid;
  *out = kbv_ah_attr_t{};
  std::memcpy(out->dgid, av.Grh.DGid.Raw, 16);
  const uint32_t vcf = ntohl(av.Grh.VerClassFlow);
  out->flow_label = vcf & 0xfffff;
  out->traffic_class = static_cast<uint8_t>((vcf >> 20) & 0xff);
  out->hop_limit = av.Grh.HopLimit;
  out->sgid_index = static_cast<uint8_t>(sgid);
  out->sl = av.SvcLvl;
  out->port_num = av.PortNumber;
  // The destination MAC: the RFC's AV has none (InfiniBand routes by LID).
  // A GID of a port in this process (the model's loopback, or a second local
  // HCA) carries its MAC in that port's GID table; else the host's ARP table.
  for (auto& d : NtDevice::all()) {
    out->dmac = d->mac_of(out->dgid);
    if (out->dmac != 0) break;
  }
  if (out->dmac == 0) out->dmac = arp_lookup(out->dgid);
  if (out->dmac == 0) return KBV_STATUS_HOST_UNREACHABLE;
  return STATUS_SUCCESS;
}

}  // namespace kbv::compat
