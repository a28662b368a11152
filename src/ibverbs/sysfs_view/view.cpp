// SPDX-License-Identifier: BSD-3-Clause
// The sysfs view of kbv's libibverbs devices: the tree (see view.hpp).
// File formats follow Linux drivers/infiniband/core/sysfs.c (node_type
// "%d: CA", gids "%pI6", gid_attrs/types "IB/RoCE v1" / "RoCE v2", ndevs the
// netdev name) and drivers/pci/pci-sysfs.c (ids "0x%04x", class "0x%06x",
// numa_node "%d", local_cpus "%*pb", link speed "%s PCIe", width "%u").
#include "ibverbs/sysfs_view/view.hpp"

#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <limits.h>
#include <net/if.h>
#include <stdlib.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <kbv/kbv.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace kbv::ibverbs::sysfs_view {
namespace {

constinit thread_local bool t_busy = false;

struct Busy {
  Busy() : prev(t_busy) { t_busy = true; }
  ~Busy() { t_busy = prev; }
  bool prev;
};

constexpr std::string_view kClassDir = "/sys/class/infiniband";
constexpr std::string_view kDevDir = "/dev/infiniband";
constexpr std::string_view kSimFnRoot = "/sys/devices/virtual/kbv/";
constexpr uint32_t kMaxGids = 256;                              // ConnectX's RoCE GID table size
constexpr unsigned kUverbsMajor = 231, kUverbsMinorBase = 192;  // kernel uverbs_main.c

// One GID table entry as the ABI reports it.
struct Gid {
  bool valid = false;
  ibv_gid gid{};
  uint32_t type = 0;  // enum ibv_gid_type
  std::string ndev;   // "" when the ifindex names no interface
};

struct Port {
  bool loaded = false;
  bool ok = false;
  uint32_t gid_tbl_len = 0;
  std::vector<Gid> gids;
};

struct Device {
  std::string name;  // mlx5_<i>
  kbv_device_desc_t desc{};
  std::string fn;  // the PCI function directory (canonical)
  bool sim = true;
  uint32_t ports = 1;
  std::vector<Port> port;  // [0] = port 1
};

// libibverbs (kbv's: kbv-run puts it first on the library path) and libkbv.
struct Api {
  ibv_device** (*get_device_list)(int*) = nullptr;
  void (*free_device_list)(ibv_device**) = nullptr;
  const char* (*get_device_name)(ibv_device*) = nullptr;
  ibv_context* (*open_device)(ibv_device*) = nullptr;
  int (*close_device)(ibv_context*) = nullptr;
  int (*query_device)(ibv_context*, ibv_device_attr*) = nullptr;
  int (*query_port)(ibv_context*, uint8_t, ibv_port_attr*) = nullptr;
  int (*query_gid_ex)(ibv_context*, uint32_t, uint32_t, ibv_gid_entry*, uint32_t, size_t) = nullptr;
  kbv_status_t (*kbv_list)(kbv_device_desc_t*, uint32_t, uint32_t*) = nullptr;
};

struct Table {
  std::mutex mu;
  bool loaded = false;
  Api api;
  std::vector<Device> devs;
};

Table& table() {
  static auto* t = new Table;  // never destroyed: interposers run until exit
  return *t;
}

void* open_lib(const char* soname) {
  void* h = ::dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
  return h ? h : ::dlopen(soname, RTLD_NOW);
}

template <class F>
void sym(void* lib, const char* name, F& out) {
  out = lib ? reinterpret_cast<F>(::dlsym(lib, name)) : nullptr;
}

bool load_api(Api& a) {
  void* ib = open_lib("libibverbs.so.1");
  void* kbv = open_lib("libkbv.so.0");
  sym(ib, "ibv_get_device_list", a.get_device_list);
  sym(ib, "ibv_free_device_list", a.free_device_list);
  sym(ib, "ibv_get_device_name", a.get_device_name);
  sym(ib, "ibv_open_device", a.open_device);
  sym(ib, "ibv_close_device", a.close_device);
  sym(ib, "ibv_query_device", a.query_device);
  sym(ib, "ibv_query_port", a.query_port);
  sym(ib, "_ibv_query_gid_ex", a.query_gid_ex);
  sym(kbv, "kbv_get_device_list", a.kbv_list);
  return a.get_device_list && a.free_device_list && a.get_device_name && a.open_device &&
         a.close_device && a.query_device && a.query_port && a.query_gid_ex && a.kbv_list;
}

// Table lock held. kbv's libibverbs names the i-th kbv_get_device_list entry
// mlx5_<i> (ibverbs/context.hpp): the two lists line up by index.
void load_devices(Table& t) {
  if (t.loaded) return;
  t.loaded = true;
  if (!load_api(t.api)) return;
  int n = 0;
  ibv_device** list = t.api.get_device_list(&n);
  if (!list) return;
  std::vector<kbv_device_desc_t> descs(static_cast<size_t>(n));
  uint32_t count = 0;
  if (t.api.kbv_list(descs.data(), static_cast<uint32_t>(descs.size()), &count) != KBV_SUCCESS)
    count = 0;
  for (int i = 0; i < n && static_cast<uint32_t>(i) < count; ++i) {
    Device d;
    d.name = t.api.get_device_name(list[i]);
    d.desc = descs[static_cast<size_t>(i)];
    std::string_view uri(d.desc.uri);
    d.sim = uri.starts_with("sim:");
    if (d.sim) {
      d.fn = std::string(kSimFnRoot) + d.desc.uri;
    } else if (uri.starts_with("vfio:")) {
      const std::string bus = "/sys/bus/pci/devices/" + std::string(uri.substr(5));
      char buf[PATH_MAX];
      d.fn = ::realpath(bus.c_str(), buf) ? buf : bus;
    } else {
      continue;
    }
    t.devs.push_back(std::move(d));
  }
  t.api.free_device_list(list);
}

// Table lock held. The port count and the port's GID table, through an
// ibv_open_device of our own (a reference on the kbv device when the program
// has it open already).
void load_ports(Table& t, Device& d) {
  if (!d.port.empty()) return;
  d.port.resize(1);
  int n = 0;
  ibv_device** list = t.api.get_device_list(&n);
  if (!list) return;
  ibv_context* ctx = nullptr;
  for (int i = 0; i < n && !ctx; ++i)
    if (d.name == t.api.get_device_name(list[i])) ctx = t.api.open_device(list[i]);
  t.api.free_device_list(list);
  if (!ctx) return;
  ibv_device_attr da{};
  if (t.api.query_device(ctx, &da) == 0 && da.phys_port_cnt > 0) {
    d.ports = da.phys_port_cnt;
    d.port.resize(d.ports);
  }
  for (uint32_t p = 1; p <= d.ports; ++p) {
    Port& port = d.port[p - 1];
    port.loaded = true;
    ibv_port_attr pa{};
    if (t.api.query_port(ctx, static_cast<uint8_t>(p), &pa) != 0) continue;
    port.ok = true;
    port.gid_tbl_len = std::min<uint32_t>(static_cast<uint32_t>(pa.gid_tbl_len), kMaxGids);
    port.gids.resize(port.gid_tbl_len);
    for (uint32_t i = 0; i < port.gid_tbl_len; ++i) {
      ibv_gid_entry e{};
      if (t.api.query_gid_ex(ctx, p, i, &e, 0, sizeof e) != 0) continue;
      Gid& g = port.gids[i];
      g.valid = true;
      g.gid = e.gid;
      g.type = e.gid_type;
      char ifname[IF_NAMESIZE] = {};
      if (e.ndev_ifindex && ::if_indextoname(e.ndev_ifindex, ifname)) g.ndev = ifname;
    }
  }
  t.api.close_device(ctx);
}

// "%*pb" of the online CPUs (a device with no NUMA node: cpumask_of_node(-1)).
std::string online_cpu_mask() {
  const long n = ::sysconf(_SC_NPROCESSORS_CONF);
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  const unsigned bits = n > 0 ? static_cast<unsigned>(n) : 1;
  std::vector<uint32_t> words((bits + 31) / 32, 0);
  for (long c = 0; c < online && c < static_cast<long>(bits); ++c)
    words[static_cast<size_t>(c / 32)] |= 1u << (c % 32);
  std::string out;
  char w[16];
  for (size_t i = words.size(); i-- > 0;) {
    if (i + 1 == words.size()) {
      const unsigned top = bits - 32 * static_cast<unsigned>(i);
      std::snprintf(w, sizeof w, "%0*x", static_cast<int>((top + 3) / 4), words[i]);
    } else {
      std::snprintf(w, sizeof w, ",%08x", words[i]);
    }
    out += w;
  }
  return out + "\n";
}

std::string hex(unsigned v, int digits) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%0*x\n", digits, v);
  return b;
}

Node file(std::string content) {
  Node n;
  n.kind = Kind::kFile;
  n.content = std::move(content);
  return n;
}

Node dir(std::string canonical, bool link = false) {
  Node n;
  n.kind = Kind::kDir;
  n.link = link;
  n.real_path = std::move(canonical);
  return n;
}

// A decimal index with nothing after it, below `limit`; -1 otherwise.
long parse_index(std::string_view s, long limit) {
  if (s.empty() || s.size() > 6) return -1;
  long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v < limit ? v : -1;
}

// Splits off the first component of `rest` ("a/b/c" -> "a", rest "b/c").
std::string_view head(std::string_view& rest) {
  const size_t s = rest.find('/');
  std::string_view h = rest.substr(0, s);
  rest = s == std::string_view::npos ? std::string_view{} : rest.substr(s + 1);
  return h;
}

// A model function's attribute (kbv_device_desc_t ids, sim/bus/pci_config.cpp).
Node sim_fn_attr(const Device& d, std::string_view attr) {
  if (attr == "vendor" || attr == "subsystem_vendor") return file(hex(d.desc.vendor_id, 4));
  if (attr == "device" || attr == "subsystem_device") return file(hex(d.desc.device_id, 4));
  if (attr == "class") return file(hex(0x020000, 6));  // Ethernet controller (RoCE port)
  if (attr == "numa_node") return file(std::to_string(d.desc.numa_node) + "\n");
  if (attr == "local_cpus") return file(online_cpu_mask());
  if (attr == "current_link_speed" || attr == "max_link_speed") return file("8.0 GT/s PCIe\n");
  if (attr == "current_link_width" || attr == "max_link_width") return file("16\n");
  return {};
}

Node dev_path(Table& t, Device& d, std::string_view rest);

// The function directory `fn` + "/" + rest. The model's is the view's; a
// real function's files are the kernel's (a redirect); infiniband/<ibdev>
// below either is the view's.
Node fn_path(Table& t, Device& d, std::string_view rest) {
  if (rest.empty()) return d.sim ? dir(d.fn) : Node{};
  std::string_view r = rest;
  if (head(r) == "infiniband") {
    if (r.empty()) return dir(d.fn + "/infiniband");
    if (head(r) != d.name) return {};
    return dev_path(t, d, r);
  }
  if (!d.sim) {
    Node n;
    n.kind = Kind::kRedirect;
    n.real_path = d.fn + "/" + std::string(rest);
    return n;
  }
  return rest.find('/') == std::string_view::npos ? sim_fn_attr(d, rest) : Node{};
}

// A path below /sys/class/infiniband/<ibdev>/ (`rest` after the name).
Node dev_path(Table& t, Device& d, std::string_view rest) {
  const std::string self = d.fn + "/infiniband/" + d.name;
  if (rest.empty()) return dir(self);
  std::string_view r = rest;
  const std::string_view first = head(r);
  if (first == "device") {
    if (!r.empty()) return fn_path(t, d, r);
    Node n = dir(d.fn, true);
    if (!d.sim) n.kind = Kind::kRedirect;  // the real function directory
    return n;
  }
  if (first == "node_type" && r.empty()) return file("1: CA\n");
  if (first != "ports") return {};
  load_ports(t, d);
  if (r.empty()) return dir(self + "/ports");
  const long p = parse_index(head(r), static_cast<long>(d.ports) + 1);
  if (p < 1) return {};
  const Port& port = d.port[static_cast<size_t>(p - 1)];
  const std::string pdir = self + "/ports/" + std::to_string(p);
  if (r.empty()) return dir(pdir);
  const std::string_view what = head(r);
  if (what == "link_layer" && r.empty()) return port.ok ? file("Ethernet\n") : Node{};
  if (what == "gids" || what == "gid_attrs") {
    std::string_view sub = what == "gids" ? std::string_view("gids") : head(r);
    if (what == "gid_attrs" && sub.empty()) return dir(pdir + "/gid_attrs");
    if (what == "gid_attrs" && sub != "types" && sub != "ndevs") return {};
    const std::string sdir = pdir + "/" + std::string(what) +
                             (what == "gid_attrs" ? "/" + std::string(sub) : std::string());
    if (r.empty()) return dir(sdir);
    const long i = parse_index(r, static_cast<long>(port.gid_tbl_len));
    if (i < 0) return {};
    const Gid& g = port.gids[static_cast<size_t>(i)];
    if (sub == "gids") {
      // %pI6: eight groups of four hex digits; an empty entry reads as zero.
      char b[48];
      const uint8_t* x = g.gid.raw;
      std::snprintf(b, sizeof b,
                    "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x\n",
                    x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8], x[9], x[10], x[11], x[12],
                    x[13], x[14], x[15]);
      return file(b);
    }
    if (!g.valid || (sub == "ndevs" && g.ndev.empty())) {
      Node n;
      n.kind = Kind::kNoData;
      return n;
    }
    if (sub == "types") return file(g.type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2\n" : "IB/RoCE v1\n");
    return file(g.ndev + "\n");
  }
  return {};
}

bool under(std::string_view path, std::string_view root, std::string_view& rest) {
  if (!path.starts_with(root)) return false;
  if (path.size() == root.size()) {
    rest = {};
    return true;
  }
  if (path[root.size()] != '/') return false;
  rest = path.substr(root.size() + 1);
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  return true;
}

Node lookup_locked(Table& t, std::string_view path) {
  std::string_view rest;
  if (under(path, kClassDir, rest)) {
    load_devices(t);
    if (rest.empty()) return t.devs.empty() ? Node{} : dir(std::string(kClassDir));
    const std::string_view name = head(rest);
    for (Device& d : t.devs) {
      if (d.name != name) continue;
      Node n = dev_path(t, d, rest);
      if (rest.empty()) n.link = true;  // /sys/class entries are symlinks
      return n;
    }
    return {};
  }
  if (under(path, kDevDir, rest)) {
    load_devices(t);
    if (rest.empty()) return t.devs.empty() ? Node{} : dir(std::string(kDevDir));
    if (!rest.starts_with("uverbs")) return {};
    const long i = parse_index(rest.substr(6), static_cast<long>(t.devs.size()));
    if (i < 0) return {};
    Node n;
    n.kind = Kind::kCharDev;
    n.rdev = makedev(kUverbsMajor, kUverbsMinorBase + static_cast<unsigned>(i));
    n.real_path = std::string(path);
    return n;
  }
  // A function directory: the model's (/sys/devices/virtual/kbv/...), or a
  // real one's infiniband/ subdirectory (reached through the class entry's
  // realpath, which loaded the table: other /sys/devices paths, read by
  // hwloc and many more, never load it).
  const bool sim_fn = path.starts_with(kSimFnRoot);
  if (!sim_fn && (!t.loaded || path.find("/infiniband") == std::string_view::npos)) return {};
  load_devices(t);
  for (Device& d : t.devs)
    if (under(path, d.fn, rest)) return fn_path(t, d, rest);
  return {};
}

}  // namespace

bool busy() { return t_busy; }

Node lookup(const char* path) {
  if (t_busy || !path || path[0] != '/') return {};
  std::string_view p(path);
  if (!p.starts_with("/sys/") && !p.starts_with(kDevDir)) return {};
  if (!p.starts_with(kClassDir) && !p.starts_with(kDevDir) &&
      !(p.starts_with("/sys/devices/") &&
        (p.starts_with(kSimFnRoot) || p.find("/infiniband") != std::string_view::npos)))
    return {};  // everyone else's sysfs (hwloc reads much of it): no lock, no load
  Busy b;
  try {
    Table& t = table();
    std::lock_guard lk(t.mu);
    return lookup_locked(t, p);
  } catch (...) {
    return {};
  }
}

}  // namespace kbv::ibverbs::sysfs_view
