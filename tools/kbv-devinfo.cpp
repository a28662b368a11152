// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-devinfo: lists kbv's devices and prints what ibv_devinfo prints
// (rdma-core libibverbs/examples/devinfo.c: the same field names and order)
// for each: firmware version, node and system image GUIDs, PCI ids, ports
// with state, MTU, link layer and GIDs; -v adds the limits and capabilities.
// With no HCA bound to vfio-pci, kbv_get_device_list lists the model device
// "sim:0" (kbv.h "Devices"), so this shows a model ConnectX by default.
//
// Uses the public C++ API (kbv/kbv.hpp) only.
//
//   kbv-devinfo [-d URI] [-i PORT] [-l] [-v] [--link-wait MS]
// -l also prints the name each device has under kbv's libibverbs.so.1
// (mlx5_<i>, i = its position in the list).
#include <arpa/inet.h>
#include <fmt/format.h>
#include <kbv/kbv.hpp>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Args {
  std::string device;  // empty: every device
  uint32_t port = 0;   // 0: every port
  bool list = false;
  bool verbose = false;
  uint32_t link_wait_ms = 2000;
};

// kbv-devinfo brings the HCA up itself (there is no kernel driver holding it
// up), and a port trains its link after INIT_HCA: wait up to wait_ms for a
// DOWN port to come up, so the state shown is the settled one.
kbv::Result<kbv_port_attr_t> query_port_settled(kbv::Device& dev, uint32_t port, uint32_t wait_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (true) {
    auto p = dev.query_port(port);
    if (!p || p->state != KBV_PORT_DOWN || std::chrono::steady_clock::now() >= deadline) return p;
    (void)dev.progress();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string guid_str(uint64_t g) {
  return fmt::format("{:04x}:{:04x}:{:04x}:{:04x}", (g >> 48) & 0xffff, (g >> 32) & 0xffff,
                     (g >> 16) & 0xffff, g & 0xffff);
}

std::string_view port_state_str(uint32_t s) {
  switch (s) {
    case KBV_PORT_NOP: return "PORT_NOP";
    case KBV_PORT_DOWN: return "PORT_DOWN";
    case KBV_PORT_INIT: return "PORT_INIT";
    case KBV_PORT_ARMED: return "PORT_ARMED";
    case KBV_PORT_ACTIVE: return "PORT_ACTIVE";
  }
  return "invalid state";
}

// IBTA 14.2.5.6 PortPhysicalState.
std::string_view phys_state_str(uint32_t s) {
  switch (s) {
    case 1: return "SLEEP";
    case 2: return "POLLING";
    case 3: return "DISABLED";
    case 4: return "PORT_CONFIGURATION_TRAINING";
    case 5: return "LINK_UP";
    case 6: return "LINK_ERROR_RECOVERY";
    case 7: return "PHY_TEST";
  }
  return "invalid physical state";
}

std::string_view mtu_str(uint32_t m) {
  switch (m) {
    case KBV_MTU_256: return "256";
    case KBV_MTU_512: return "512";
    case KBV_MTU_1024: return "1024";
    case KBV_MTU_2048: return "2048";
    case KBV_MTU_4096: return "4096";
  }
  return "invalid MTU";
}

std::string_view link_layer_str(uint32_t l) {
  switch (l) {
    case KBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
    case KBV_LINK_LAYER_ETHERNET: return "Ethernet";
  }
  return "Unknown";
}

std::string gid_str(const uint8_t (&gid)[16]) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (::inet_ntop(AF_INET6, gid, buf, sizeof buf) == nullptr) return "?";
  return buf;
}

std::string cap_flags_str(uint64_t f) {
  static constexpr std::pair<uint64_t, const char*> kNames[] = {
      {KBV_DEVICE_CAP_RC, "RC"},
      {KBV_DEVICE_CAP_UC, "UC"},
      {KBV_DEVICE_CAP_UD, "UD"},
      {KBV_DEVICE_CAP_XRC, "XRC"},
      {KBV_DEVICE_CAP_ATOMIC, "ATOMIC"},
      {KBV_DEVICE_CAP_SRQ, "SRQ"},
      {KBV_DEVICE_CAP_ROCE_V1, "ROCE_V1"},
      {KBV_DEVICE_CAP_ROCE_V2, "ROCE_V2"},
      {KBV_DEVICE_CAP_BLUEFLAME, "BLUEFLAME"},
      {KBV_DEVICE_CAP_MULTICAST, "MULTICAST"},
  };
  std::string s;
  for (const auto& [bit, name] : kNames) {
    if (f & bit) s += fmt::format("\t\t\t\t\t{}\n", name);
  }
  return s;
}

void print_device(const kbv_device_attr_t& a, bool verbose) {
  fmt::print("hca_id:\t{}\n", a.uri);
  fmt::print("\ttransport:\t\t\tInfiniBand (0)\n");
  fmt::print("\tfw_ver:\t\t\t\t{}\n", a.fw_version);
  fmt::print("\tnode_guid:\t\t\t{}\n", guid_str(a.node_guid));
  fmt::print("\tsys_image_guid:\t\t\t{}\n", guid_str(a.sys_image_guid));
  fmt::print("\tvendor_id:\t\t\t0x{:04x}\n", a.vendor_id);
  fmt::print("\tvendor_part_id:\t\t\t{}\n", a.vendor_part_id);
  fmt::print("\thw_ver:\t\t\t\t0x{:X}\n", a.hw_ver);
  fmt::print("\tphys_port_cnt:\t\t\t{}\n", a.phys_port_cnt);
  if (!verbose) return;
  fmt::print("\tmax_mr_size:\t\t\t0x{:x}\n", a.max_mr_size);
  fmt::print("\tpage_size_cap:\t\t\t0x{:x}\n", a.page_size_cap);
  fmt::print("\tmax_qp:\t\t\t\t{}\n", a.max_qp);
  fmt::print("\tmax_qp_wr:\t\t\t{}\n", a.max_qp_wr);
  fmt::print("\tdevice_cap_flags:\t\t0x{:08x}\n{}", a.cap_flags, cap_flags_str(a.cap_flags));
  fmt::print("\tmax_send_sge:\t\t\t{}\n", a.max_send_sge);
  fmt::print("\tmax_recv_sge:\t\t\t{}\n", a.max_recv_sge);
  fmt::print("\tmax_inline_data:\t\t{}\n", a.max_inline_data);
  fmt::print("\tmax_cq:\t\t\t\t{}\n", a.max_cq);
  fmt::print("\tmax_cqe:\t\t\t{}\n", a.max_cqe);
  fmt::print("\tmax_mr:\t\t\t\t{}\n", a.max_mr);
  fmt::print("\tmax_pd:\t\t\t\t{}\n", a.max_pd);
  fmt::print("\tmax_qp_rd_atom:\t\t\t{}\n", a.max_qp_rd_atom);
  fmt::print("\tmax_qp_init_rd_atom:\t\t{}\n", a.max_qp_init_rd_atom);
  fmt::print("\tatomic_cap:\t\t\t{}\n",
             (a.cap_flags & KBV_DEVICE_CAP_ATOMIC) ? "ATOMIC_HCA (1)" : "ATOMIC_NONE (0)");
  fmt::print("\tmax_mcast_grp:\t\t\t{}\n", a.max_mcast_grp);
  fmt::print("\tmax_mcast_qp_attach:\t\t{}\n", a.max_mcast_qp_attach);
  fmt::print("\tmax_srq:\t\t\t{}\n", a.max_srq);
  fmt::print("\tmax_srq_wr:\t\t\t{}\n", a.max_srq_wr);
  fmt::print("\tmax_srq_sge:\t\t\t{}\n", a.max_srq_sge);
  fmt::print("\tmax_msg_sz:\t\t\t0x{:x}\n", a.max_msg_size);
  fmt::print("\tlocal_ca_ack_delay:\t\t{}\n", a.local_ca_ack_delay);
}

void print_port(const kbv_port_attr_t& p, bool verbose) {
  fmt::print("\t\tport:\t{}\n", p.port_num);
  fmt::print("\t\t\tstate:\t\t\t{} ({})\n", port_state_str(p.state), p.state);
  fmt::print("\t\t\tmax_mtu:\t\t{} ({})\n", mtu_str(p.max_mtu), p.max_mtu);
  fmt::print("\t\t\tactive_mtu:\t\t{} ({})\n", mtu_str(p.active_mtu), p.active_mtu);
  fmt::print("\t\t\tsm_lid:\t\t\t0\n");  // RoCE: no subnet manager
  fmt::print("\t\t\tport_lid:\t\t0\n");
  fmt::print("\t\t\tport_lmc:\t\t0x00\n");
  fmt::print("\t\t\tlink_layer:\t\t{}\n", link_layer_str(p.link_layer));
  if (verbose) {
    fmt::print("\t\t\tmtu_bytes:\t\t{}\n", p.mtu_bytes);
    fmt::print("\t\t\tgid_tbl_len:\t\t{}\n", p.gid_tbl_len);
    fmt::print("\t\t\tport_guid:\t\t{}\n", guid_str(p.port_guid));
    fmt::print("\t\t\tphys_state:\t\t{} ({})\n", phys_state_str(p.phys_state), p.phys_state);
  }
  for (uint32_t i = 0; i < p.gid_count && i < KBV_GID_TABLE_MAX; ++i) {
    const kbv_gid_entry_t& g = p.gids[i];
    if (g.type == 0) continue;
    fmt::print("\t\t\tGID[{:3}]:\t\t{}, {}\n", i, gid_str(g.gid),
               g.type == KBV_GID_TYPE_ROCE_V2 ? "RoCE v2" : "RoCE v1");
  }
  fmt::print("\n");
}

// Prints one device; returns false (after a message on stderr) on an error.
bool show(const std::string& uri, const Args& args) {
  auto dev = kbv::Device::open(uri);
  if (!dev) {
    fmt::print(stderr, "kbv-devinfo: cannot open {}: {} ({})\n", uri,
               kbv_status_name(dev.status().code()), kbv_status_message(dev.status().code()));
    return false;
  }
  auto attr = dev->query();
  if (!attr) {
    fmt::print(stderr, "kbv-devinfo: {}: device query failed: {}\n", uri,
               kbv_status_name(attr.status().code()));
    return false;
  }
  if (args.port > attr->phys_port_cnt) {
    fmt::print(stderr, "kbv-devinfo: {} has {} port(s), no port {}\n", uri, attr->phys_port_cnt,
               args.port);
    return false;
  }
  print_device(*attr, args.verbose);
  for (uint32_t port = 1; port <= attr->phys_port_cnt; ++port) {
    if (args.port != 0 && port != args.port) continue;
    auto p = query_port_settled(*dev, port, args.link_wait_ms);
    if (!p) {
      fmt::print(stderr, "kbv-devinfo: {} port {}: query failed: {}\n", uri, port,
                 kbv_status_name(p.status().code()));
      return false;
    }
    print_port(*p, args.verbose);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kbv-devinfo: kbv's devices and their attributes (as ibv_devinfo)", "kbv-devinfo"};
  Args args;
  app.add_option("-d,--ib-dev", args.device, "Only this device (URI: sim:<name>, vfio:<bdf>)");
  app.add_option("-i,--ib-port", args.port, "Only this port (1-based)")
      ->check(CLI::Range(1u, 255u));
  app.add_flag("-l,--list", args.list, "Only list the devices");
  app.add_flag("-v,--verbose", args.verbose, "Also the limits and capabilities");
  app.add_option("--link-wait", args.link_wait_ms,
                 "Milliseconds to wait for a port's link to come up after bring-up (default 2000)");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> uris;
  if (!args.device.empty() && !args.list) {
    uris.push_back(args.device);
  } else {
    auto list = kbv::Device::list();
    if (!list) {
      fmt::print(stderr, "kbv-devinfo: cannot list devices: {}\n",
                 kbv_status_name(list.status().code()));
      return 1;
    }
    for (const kbv_device_desc_t& d : *list) uris.emplace_back(d.uri);
  }
  if (args.list) {
    // Beside each URI, the name kbv's libibverbs.so.1 gives the device
    // (src/ibverbs: mlx5_<position in this list>), e.g. under kbv-run.
    fmt::print("{} HCA{} found:\n", uris.size(), uris.size() == 1 ? "" : "s");
    for (size_t i = 0; i < uris.size(); ++i) fmt::print("\t{}\tmlx5_{}\n", uris[i], i);
    return 0;
  }
  if (uris.empty()) {
    fmt::print(stderr, "kbv-devinfo: no devices found\n");
    return 1;
  }
  bool ok = true;
  for (const auto& u : uris) ok = show(u, args) && ok;
  return ok ? 0 : 1;
}
