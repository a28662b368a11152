// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf tables and JSON (report.hpp).
#include "perf/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace kbv::perf {

namespace {

using nlohmann::json;

// JSON has no NaN/Inf: those become null. Rounded as the tables print them.
json num(double v, int digits = 3) {
  if (!std::isfinite(v)) return nullptr;
  const double f = std::pow(10.0, digits);
  return std::round(v * f) / f;
}

// MB/sec (2^20 bytes/s, perftest's default) -> Gb/sec (perftest
// --report_gbits: format_factor 125000000 bytes).
double to_gbits(double mbs) { return mbs * 1048576.0 / 125e6; }

}  // namespace

std::string format_banner(const TestParams& p, const BannerInfo& b) {
  std::string s = fmt::format("{}\n                    {} ", kResultLine, perftest_name(p.test));
  if (p.test == Test::kAtomic) s += fmt::format("{} ", to_string(p.atomic));
  if (p.bidir) s += "Bidirectional ";
  s += p.lat ? "Latency " : "BW ";
  s += "Test\n";
  if (b.events) s += " Test with events.\n";
  s += fmt::format(" Dual-port       : OFF\t\tDevice         : {}\n", b.device);
  s += fmt::format(" Number of qps   : {}\t\tTransport type : IB\n", p.num_qps);
  s += fmt::format(" Connection type : {}\t\tUsing SRQ      : OFF\n", to_string(p.connection));
  s += " PCIe relax order: Unsupported\n";
  s += " ibv_wr* API     : OFF\n";
  if (!b.server || p.bidir) s += fmt::format(" TX depth        : {}\n", p.lat ? 1u : p.tx_depth);
  if (p.test == Test::kSend && (b.server || p.bidir)) {
    s += fmt::format(" RX depth        : {}\n", b.rx_depth);
  }
  if (p.bw) s += fmt::format(" CQ Moderation   : {}\n", p.cq_mod);
  s += fmt::format(" Mtu             : {}[B]\n", b.mtu_bytes);
  s += " Link type       : Ethernet\n";
  s += fmt::format(" GID index       : {}\n", b.gid_index);
  if (p.test != Test::kRead && p.test != Test::kAtomic) {
    s += fmt::format(" Max inline data : {}[B]\n", p.inline_size);
  } else {
    s += fmt::format(" Outstand reads  : {}\n", b.out_reads);
  }
  s += " rdma_cm QPs\t : OFF\n";
  s += " Data ex. method : Ethernet";
  if (p.tos != kTosOff) s += fmt::format(" \tTOS    : {}", p.tos);
  s += fmt::format("\n{}\n", kResultLine);
  return s;
}

std::string format_address(const TestParams& p, const char* side, const QpInfo& q) {
  // BASIC_ADDR_FMT " %s address: LID %#04x QPN %#06x PSN %#06x", then
  // READ_FMT " OUT %#04x" (READ) and RDMA_FMT " RKey %#08x VAddr %#016llx"
  // (WRITE, READ), then PERF_GID_FMT (the GID bytes in %02d).
  const auto alt = [](uint64_t v, int width) {
    // C's %#0Nx: "0x" counted in the width, no prefix for 0.
    return v == 0 ? fmt::format("{:0{}x}", v, width) : fmt::format("{:#0{}x}", v, width);
  };
  std::string s = fmt::format(" {} address: LID {} QPN {} PSN {}", side, alt(q.lid, 4),
                              alt(q.qpn, 6), alt(q.psn, 6));
  if (p.test == Test::kRead) s += fmt::format(" OUT {}", alt(16, 4));
  if (p.test == Test::kWrite || p.test == Test::kRead) {
    s += fmt::format(" RKey {} VAddr {}", alt(q.rkey, 8), alt(q.vaddr, 16));
  }
  s += "\n GID: ";
  for (size_t i = 0; i < q.gid.size(); ++i) s += fmt::format("{}{:02d}", i ? ":" : "", q.gid[i]);
  return s + "\n";
}

std::string format_lat_header() {
  return fmt::format(
      "{}\n #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
      "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ",
      kResultLine);
}

std::string format_lat_row(const LatRow& r) {
  // REPORT_FMT_LAT.
  const LatencyStats& s = r.stats;
  return fmt::format(
      " {:<7} {}          {:<7.2f}        {:<7.2f}      {:<7.2f}  \t       {:<7.2f}     \t{:<7.2f}"
      "\t\t{:<7.2f} \t\t{:<7.2f}",
      r.bytes, s.iterations, s.t_min_us, s.t_max_us, s.t_typical_us, s.t_avg_us, s.t_stdev_us,
      s.p99_us, s.p999_us);
}

std::string format_lat_dur_header() {
  return fmt::format("{}\n #bytes        #iterations       t_avg[usec]    tps average",
                     kResultLine);
}

std::string format_lat_dur_row(const LatRow& r) {
  const double tps =
      r.elapsed_s > 0 ? static_cast<double>(r.stats.iterations - 1) / r.elapsed_s : 0;
  return fmt::format(" {:<7}       {}            {:<7.2f}        {:<7.2f}", r.bytes,
                     r.stats.iterations, r.stats.t_avg_us, tps);
}

std::string format_bw_header(bool gbits) {
  const char* u = gbits ? "Gb/sec" : "MB/sec";
  return fmt::format("{}\n #bytes     #iterations    BW peak[{}]    BW average[{}]   MsgRate[Mpps]",
                     kResultLine, u, u);
}

std::string format_bw_row(const BwRow& r, bool gbits) {
  // REPORT_FMT.
  const BandwidthStats& s = r.stats;
  const double peak = gbits ? to_gbits(s.bw_peak_mbs) : s.bw_peak_mbs;
  const double avg = gbits ? to_gbits(s.bw_avg_mbs) : s.bw_avg_mbs;
  return fmt::format(" {:<7}    {:<10}       {:<7.2f}            {:<7.2f}\t\t   {:<7.6f}", r.bytes,
                     r.iterations, peak, avg, s.msg_rate_mpps);
}

std::string format_histogram(const LatRow& r) {
  std::vector<double> v = r.samples_us;
  std::sort(v.begin(), v.end());
  if (v.size() >= kLatMeasureTail) v.resize(v.size() - kLatMeasureTail);
  std::string s = "#, usec\n";
  for (size_t i = 0; i < v.size(); ++i) s += fmt::format("{}, {:g}\n", i + 1, v[i]);
  return s + format_lat_header();
}

std::string format_json(const Report& r) {
  const TestParams& p = r.params;
  json j;
  j["test"] = to_string(p.test);
  if (p.test == Test::kAtomic) j["atomic_type"] = to_string(p.atomic);
  j["connection"] = to_string(p.connection);
  j["role"] = r.role;
  j["device"] = r.device;
  j["params"] = {{"lat_sizes", p.lat_sizes},
                 {"bw_sizes", p.bw_sizes},
                 {"lat_iters", p.lat_iters},
                 {"bw_iters", p.bw_iters},
                 {"tx_depth", p.tx_depth},
                 {"inline_size", p.inline_size},
                 {"cq_mod", p.cq_mod},
                 {"num_qps", p.num_qps},
                 {"no_peak", p.no_peak},
                 {"mtu", p.mtu},
                 {"tos", p.tos == kTosOff ? json(nullptr) : json(p.tos)},
                 {"duration_s", p.duration},
                 {"bidirectional", p.bidir}};
  j["latency"] = json::array();
  for (const LatRow& row : r.lat) {
    const LatencyStats& l = row.stats;
    j["latency"].push_back({{"bytes", row.bytes},
                            {"iterations", l.iterations},
                            {"t_min_usec", num(l.t_min_us)},
                            {"t_max_usec", num(l.t_max_us)},
                            {"t_typical_usec", num(l.t_typical_us)},
                            {"t_avg_usec", num(l.t_avg_us)},
                            {"t_stdev_usec", num(l.t_stdev_us)},
                            {"p99_usec", num(l.p99_us)},
                            {"p99_9_usec", num(l.p999_us)}});
  }
  j["bandwidth"] = json::array();
  for (const BwRow& row : r.bw) {
    const BandwidthStats& b = row.stats;
    j["bandwidth"].push_back({{"bytes", row.bytes},
                              {"iterations", row.iterations},
                              {"bw_peak_mbs", num(b.bw_peak_mbs)},
                              {"bw_avg_mbs", num(b.bw_avg_mbs)},
                              {"bw_peak_gbps", num(to_gbits(b.bw_peak_mbs))},
                              {"bw_avg_gbps", num(to_gbits(b.bw_avg_mbs))},
                              {"msg_rate_mpps", num(b.msg_rate_mpps, 6)},
                              {"peak_computed", b.peak_computed}});
  }
  j["device_stats"] = json::array();
  for (const DeviceStats& d : r.devices) {
    j["device_stats"].push_back({{"side", d.side},
                                 {"device", d.device},
                                 {"fw_cmds_in_flight", d.fw_cmds_in_flight},
                                 {"fw_cmds_in_flight_max", d.fw_cmds_in_flight_max},
                                 {"fw_cmds_completed", d.fw_cmds_completed}});
  }
  j["verified"] = r.verified;
  j["verify_detail"] = r.verify_detail;
  // Text from the peer may hold any bytes: invalid UTF-8 is replaced, never
  // thrown about.
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace kbv::perf
