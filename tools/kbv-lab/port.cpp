// SPDX-License-Identifier: BSD-3-Clause
// kbv-lab port URI [--set up|down]: PAOS (admin / oper status), PTYS
// (protocols: capability, admin, oper), PMTU (max / admin / oper MTU), as
// mlxlink shows them; --set writes PAOS admin_status (ase = 1) first.
// kbv-lab counters URI [--watch T] [--count N]: PPCNT IEEE 802.3, RFC 2863
// and per-priority (priority 0) groups, as ethtool -S shows port counters;
// --watch prints the deltas of every interval. Layouts: src/hca/prm/reg.hpp.
#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "hca/prm/reg.hpp"
#include "kbv-lab/lab.hpp"

namespace kbv::lab {

namespace {

template <class L>
std::vector<std::byte> port_reg() {
  std::vector<std::byte> r(L::kBits / 8);
  prm::Ref<L>(r.data()).set(L::local_port, 1);
  return r;
}

std::string_view status_name(uint64_t s) {
  switch (s) {
    case 1: return "up";
    case 2: return "down";
    case 3: return "up_once";
    case 4: return "down_by_failure";
  }
  return "unknown";
}

// port.h enum mlx5e_link_mode bits the model and common ConnectX-4/5 ports use.
std::string eth_protos(uint64_t mask) {
  static constexpr std::pair<uint32_t, const char*> kNames[] = {
      {0, "1000BASE-CX-SGMII"}, {1, "1000BASE-KX"},   {2, "10GBASE-CX4"},   {3, "10GBASE-KX4"},
      {4, "10GBASE-KR"},        {6, "40GBASE-CR4"},   {7, "40GBASE-KR4"},   {12, "10GBASE-CR"},
      {13, "10GBASE-SR"},       {14, "10GBASE-ER"},   {15, "40GBASE-SR4"},  {16, "40GBASE-LR4"},
      {18, "50GBASE-SR2"},      {20, "100GBASE-CR4"}, {21, "100GBASE-SR4"}, {22, "100GBASE-KR4"},
      {23, "100GBASE-LR4"},     {27, "25GBASE-CR"},   {28, "25GBASE-KR"},   {29, "25GBASE-SR"},
      {30, "50GBASE-CR2"},      {31, "50GBASE-KR2"},
  };
  std::string s;
  for (auto [bit, name] : kNames)
    if (mask >> bit & 1) s += (s.empty() ? "" : ",") + std::string(name);
  return s.empty() ? (mask ? fmt::format("{:#x}", mask) : "none") : s;
}

struct Counter {
  const char* group;
  const char* name;
  uint64_t value;
};

// Reads every group the tool shows; an error status stops it.
kbv_status_t read_counters(kbv_device_t dev, std::vector<Counter>& out) {
  out.clear();
  using R = prm::ppcnt_reg;
  const auto read = [&](prm::PpcntGroup g, std::vector<std::byte>& img) {
    img = port_reg<R>();
    prm::Ref<R>(img.data()).set(R::grp, static_cast<uint8_t>(g));
    return access_reg(dev, KBV_REG_PPCNT, KBV_REG_READ, img);
  };
  std::vector<std::byte> img;
  if (kbv_status_t s = read(prm::PpcntGroup::IEEE_802_3, img); s != KBV_SUCCESS) return s;
  {
    using G = prm::eth_802_3_cntrs;
    auto g = prm::CRef<R>(img.data()).at(R::eth_802_3);
    out.push_back({"ieee_802_3", "a_frames_transmitted_ok", g.get(G::a_frames_transmitted_ok)});
    out.push_back({"ieee_802_3", "a_frames_received_ok", g.get(G::a_frames_received_ok)});
    out.push_back(
        {"ieee_802_3", "a_frame_check_sequence_errors", g.get(G::a_frame_check_sequence_errors)});
    out.push_back({"ieee_802_3", "a_octets_transmitted_ok", g.get(G::a_octets_transmitted_ok)});
    out.push_back({"ieee_802_3", "a_octets_received_ok", g.get(G::a_octets_received_ok)});
    out.push_back({"ieee_802_3", "a_frame_too_long_errors", g.get(G::a_frame_too_long_errors)});
  }
  if (kbv_status_t s = read(prm::PpcntGroup::RFC_2863, img); s != KBV_SUCCESS) return s;
  {
    using G = prm::eth_2863_cntrs;
    auto g = prm::CRef<R>(img.data()).at(R::eth_2863);
    out.push_back({"rfc_2863", "if_in_octets", g.get(G::if_in_octets)});
    out.push_back({"rfc_2863", "if_in_ucast_pkts", g.get(G::if_in_ucast_pkts)});
    out.push_back({"rfc_2863", "if_in_discards", g.get(G::if_in_discards)});
    out.push_back({"rfc_2863", "if_in_errors", g.get(G::if_in_errors)});
    out.push_back({"rfc_2863", "if_out_octets", g.get(G::if_out_octets)});
    out.push_back({"rfc_2863", "if_out_ucast_pkts", g.get(G::if_out_ucast_pkts)});
    out.push_back({"rfc_2863", "if_out_discards", g.get(G::if_out_discards)});
    out.push_back({"rfc_2863", "if_out_errors", g.get(G::if_out_errors)});
  }
  if (kbv_status_t s = read(prm::PpcntGroup::PER_PRIORITY, img); s != KBV_SUCCESS) return s;
  {
    using G = prm::eth_per_prio_cntrs;
    auto g = prm::CRef<R>(img.data()).at(R::eth_per_prio);
    out.push_back({"prio0", "rx_octets", g.get(G::rx_octets)});
    out.push_back({"prio0", "rx_frames", g.get(G::rx_frames)});
    out.push_back({"prio0", "tx_octets", g.get(G::tx_octets)});
    out.push_back({"prio0", "tx_frames", g.get(G::tx_frames)});
    out.push_back({"prio0", "rx_discards", g.get(G::rx_discards)});
  }
  return KBV_SUCCESS;
}

}  // namespace

int cmd_port(const Common& c, const std::string& set) {
  kbv_device_t dev = open_device(c);
  if (!dev) return 1;
  using P = prm::paos_reg;
  std::vector<std::byte> paos = port_reg<P>();
  kbv_status_t st = KBV_SUCCESS;
  if (!set.empty()) {
    prm::Ref<P> w(paos.data());
    w.set(P::ase, 1);
    w.set(P::admin_status,
          static_cast<uint8_t>(set == "up" ? prm::PortStatus::UP : prm::PortStatus::DOWN));
    st = access_reg(dev, KBV_REG_PAOS, KBV_REG_WRITE, paos);
  } else {
    (void)wait_link(c, dev);
    st = access_reg(dev, KBV_REG_PAOS, KBV_REG_READ, paos);
  }
  if (st == KBV_SUCCESS && set == "up") {
    (void)wait_link(c, dev);
    paos = port_reg<P>();
    st = access_reg(dev, KBV_REG_PAOS, KBV_REG_READ, paos);
  }
  if (st != KBV_SUCCESS) {
    fmt::print(c.err, "kbv-lab: PAOS: {}\n", describe(st, 0, 0));
    close_device(dev);
    return 1;
  }
  using T = prm::ptys_reg;
  std::vector<std::byte> ptys = port_reg<T>();
  prm::Ref<T>(ptys.data()).set(T::proto_mask, prm::kPtysEn);
  const kbv_status_t st_ptys = access_reg(dev, KBV_REG_PTYS, KBV_REG_READ, ptys);
  using M = prm::pmtu_reg;
  std::vector<std::byte> pmtu = port_reg<M>();
  const kbv_status_t st_pmtu = access_reg(dev, KBV_REG_PMTU, KBV_REG_READ, pmtu);
  prm::CRef<P> a(paos.data());
  prm::CRef<T> t(ptys.data());
  prm::CRef<M> m(pmtu.data());
  if (c.json) {
    Json j;
    j.obj().kv("uri", c.uri).kv("local_port", static_cast<uint64_t>(1));
    j.key("paos")
        .obj()
        .kv("admin_status", status_name(a.get(P::admin_status)))
        .kv("oper_status", status_name(a.get(P::oper_status)))
        .end();
    if (st_ptys == KBV_SUCCESS)
      j.key("ptys")
          .obj()
          .kv("eth_proto_capability", t.get(T::eth_proto_capability))
          .kv("eth_proto_admin", t.get(T::eth_proto_admin))
          .kv("eth_proto_oper", t.get(T::eth_proto_oper))
          .kv("oper", eth_protos(t.get(T::eth_proto_oper)))
          .end();
    else
      j.key("ptys").obj().kv("error", kbv_status_name(st_ptys)).end();
    if (st_pmtu == KBV_SUCCESS)
      j.key("pmtu")
          .obj()
          .kv("max_mtu", m.get(M::max_mtu))
          .kv("admin_mtu", m.get(M::admin_mtu))
          .kv("oper_mtu", m.get(M::oper_mtu))
          .end();
    else
      j.key("pmtu").obj().kv("error", kbv_status_name(st_pmtu)).end();
    j.end();
    fmt::print(c.out, "{}\n", j.text());
  } else {
    fmt::print(c.out, "{} port 1\n", c.uri);
    fmt::print(c.out, "  PAOS  admin {:<8} oper {}\n", status_name(a.get(P::admin_status)),
               status_name(a.get(P::oper_status)));
    if (st_ptys == KBV_SUCCESS)
      fmt::print(c.out, "  PTYS  capability {}  admin {}  oper {}\n",
                 eth_protos(t.get(T::eth_proto_capability)), eth_protos(t.get(T::eth_proto_admin)),
                 eth_protos(t.get(T::eth_proto_oper)));
    else
      fmt::print(c.out, "  PTYS  {}\n", describe(st_ptys, 0, 0));
    if (st_pmtu == KBV_SUCCESS)
      fmt::print(c.out, "  PMTU  max {}  admin {}  oper {}\n", m.get(M::max_mtu),
                 m.get(M::admin_mtu), m.get(M::oper_mtu));
    else
      fmt::print(c.out, "  PMTU  {}\n", describe(st_pmtu, 0, 0));
  }
  close_device(dev);
  return 0;
}

int cmd_counters(const Common& c, uint32_t watch_ms, uint32_t count) {
  kbv_device_t dev = open_device(c);
  if (!dev) return 1;
  std::vector<Counter> prev, now;
  kbv_status_t st = read_counters(dev, prev);
  if (st != KBV_SUCCESS) {
    fmt::print(c.err, "kbv-lab: PPCNT: {}\n", describe(st, 0, 0));
    close_device(dev);
    return 1;
  }
  Json j;
  j.obj().kv("uri", c.uri);
  j.key("counters").obj();
  for (const Counter& k : prev) j.key(fmt::format("{}.{}", k.group, k.name)).num(k.value);
  j.end();
  if (!c.json) {
    fmt::print(c.out, "{} port 1 counters (PPCNT)\n", c.uri);
    for (const Counter& k : prev)
      fmt::print(c.out, "  {:<11} {:<32} {:>16}\n", k.group, k.name, k.value);
  }
  if (watch_ms != 0) {
    j.key("intervals").arr();
    for (uint32_t i = 0; count == 0 || i < count; ++i) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(watch_ms);
      while (std::chrono::steady_clock::now() < until) {
        (void)kbv_device_progress(dev);
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min<uint32_t>(watch_ms, 10)));
      }
      st = read_counters(dev, now);
      if (st != KBV_SUCCESS) {
        fmt::print(c.err, "kbv-lab: PPCNT: {}\n", describe(st, 0, 0));
        close_device(dev);
        return 1;
      }
      j.obj().kv("interval_ms", static_cast<uint64_t>(watch_ms));
      if (!c.json) fmt::print(c.out, "-- +{} ms (deltas)\n", watch_ms);
      for (size_t k = 0; k < now.size(); ++k) {
        const uint64_t d = now[k].value - prev[k].value;
        j.key(fmt::format("{}.{}", now[k].group, now[k].name)).num(d);
        if (!c.json && d != 0)
          fmt::print(c.out, "  {:<11} {:<32} {:>+16}\n", now[k].group, now[k].name,
                     static_cast<int64_t>(d));
      }
      j.end();
      if (!c.json) std::fflush(c.out);
      prev = now;
    }
    j.end();
  }
  j.end();
  if (c.json) fmt::print(c.out, "{}\n", j.text());
  close_device(dev);
  return 0;
}

}  // namespace kbv::lab
