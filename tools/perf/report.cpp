// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf tables and JSON (report.hpp).
#include "perf/report.hpp"

#include <fmt/format.h>

#include <cmath>

namespace kbv::perf {

namespace {

// JSON string with the characters JSON requires escaped.
std::string jstr(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// JSON has no NaN/Inf: those become null.
std::string jnum(double v, int digits = 3) {
  return std::isfinite(v) ? fmt::format("{:.{}f}", v, digits) : "null";
}

std::string jsizes(const std::vector<uint64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", v[i]);
  return s + "]";
}

}  // namespace

std::string format_banner(const TestParams& p, const std::string& device, bool lat) {
  std::string name =
      fmt::format("{} {}", p.test == Test::kAtomic ? to_string(p.atomic) : to_string(p.test),
                  lat ? "Latency" : "BW");
  std::string s = fmt::format("{}\n{:>30}\n{}\n", kResultLine, name + " Test", kResultLine);
  s += fmt::format(" Device         : {}\n", device);
  s += fmt::format(" Connection type: {}\n", to_string(p.connection));
  s += fmt::format(" Number of qps  : {}\n", p.num_qps);
  s += fmt::format(" TX depth       : {}\n", lat ? 1u : p.tx_depth);
  if (!lat) s += fmt::format(" CQ Moderation  : {}\n", p.cq_mod);
  s += fmt::format(" Max inline data: {}[B]\n", p.inline_size);
  return s;
}

std::string format_lat_header() {
  return fmt::format(
      "{}\n #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
      "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]",
      kResultLine);
}

std::string format_lat_row(const LatRow& r) {
  const LatencyStats& s = r.stats;
  return fmt::format(
      " {:<7} {:<10}  {:<14.2f} {:<12.2f} {:<16.2f} {:<14.2f} {:<15.2f} {:<22.2f} {:.2f}", r.bytes,
      s.iterations, s.t_min_us, s.t_max_us, s.t_typical_us, s.t_avg_us, s.t_stdev_us, s.p99_us,
      s.p999_us);
}

std::string format_bw_header() {
  return fmt::format(
      "{}\n #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]",
      kResultLine);
}

std::string format_bw_row(const BwRow& r) {
  const BandwidthStats& s = r.stats;
  return fmt::format(" {:<10} {:<14} {:<18.2f} {:<20.2f} {:.6f}", r.bytes, r.iterations,
                     s.bw_peak_mbs, s.bw_avg_mbs, s.msg_rate_mpps);
}

std::string format_json(const Report& r) {
  const TestParams& p = r.params;
  std::string s = "{\n";
  s += fmt::format("  \"test\": {},\n", jstr(to_string(p.test)));
  if (p.test == Test::kAtomic)
    s += fmt::format("  \"atomic_type\": {},\n", jstr(to_string(p.atomic)));
  s += fmt::format("  \"connection\": {},\n", jstr(to_string(p.connection)));
  s += fmt::format("  \"role\": {},\n", jstr(r.role));
  s += fmt::format("  \"device\": {},\n", jstr(r.device));
  s += fmt::format(
      "  \"params\": {{\"lat_sizes\": {}, \"bw_sizes\": {}, \"lat_iters\": {}, \"bw_iters\": {}, "
      "\"tx_depth\": {}, \"inline_size\": {}, \"cq_mod\": {}, \"num_qps\": {}, \"no_peak\": "
      "{}}},\n",
      jsizes(p.lat_sizes), jsizes(p.bw_sizes), p.lat_iters, p.bw_iters, p.tx_depth, p.inline_size,
      p.cq_mod, p.num_qps, p.no_peak ? "true" : "false");
  s += "  \"latency\": [";
  for (size_t i = 0; i < r.lat.size(); ++i) {
    const LatencyStats& l = r.lat[i].stats;
    s += fmt::format(
        "{}\n    {{\"bytes\": {}, \"iterations\": {}, \"t_min_usec\": {}, \"t_max_usec\": {}, "
        "\"t_typical_usec\": {}, \"t_avg_usec\": {}, \"t_stdev_usec\": {}, "
        "\"p99_usec\": {}, \"p99_9_usec\": {}}}",
        i ? "," : "", r.lat[i].bytes, l.iterations, jnum(l.t_min_us), jnum(l.t_max_us),
        jnum(l.t_typical_us), jnum(l.t_avg_us), jnum(l.t_stdev_us), jnum(l.p99_us),
        jnum(l.p999_us));
  }
  s += r.lat.empty() ? "],\n" : "\n  ],\n";
  s += "  \"bandwidth\": [";
  for (size_t i = 0; i < r.bw.size(); ++i) {
    const BandwidthStats& b = r.bw[i].stats;
    s += fmt::format(
        "{}\n    {{\"bytes\": {}, \"iterations\": {}, \"bw_peak_mbs\": {}, \"bw_avg_mbs\": {}, "
        "\"msg_rate_mpps\": {}, \"peak_computed\": {}}}",
        i ? "," : "", r.bw[i].bytes, r.bw[i].iterations, jnum(b.bw_peak_mbs), jnum(b.bw_avg_mbs),
        jnum(b.msg_rate_mpps, 6), b.peak_computed ? "true" : "false");
  }
  s += r.bw.empty() ? "],\n" : "\n  ],\n";
  s += "  \"device_stats\": [";
  for (size_t i = 0; i < r.devices.size(); ++i) {
    const DeviceStats& d = r.devices[i];
    s += fmt::format(
        "{}\n    {{\"side\": {}, \"device\": {}, \"fw_cmds_in_flight\": {}, "
        "\"fw_cmds_in_flight_max\": {}, \"fw_cmds_completed\": {}}}",
        i ? "," : "", jstr(d.side), jstr(d.device), d.fw_cmds_in_flight, d.fw_cmds_in_flight_max,
        d.fw_cmds_completed);
  }
  s += r.devices.empty() ? "],\n" : "\n  ],\n";
  s += fmt::format("  \"verified\": {},\n", r.verified ? "true" : "false");
  s += fmt::format("  \"verify_detail\": {}\n", jstr(r.verify_detail));
  s += "}\n";
  return s;
}

}  // namespace kbv::perf
