// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf output: perftest's tables (linux-rdma/perftest
// src/perftest_parameters.h RESULT_FMT_LAT / RESULT_FMT: the same column
// headings and order) and the same figures as JSON.
//
// Latency table:
//  #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]
//    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]
// Bandwidth table:
//  #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
//
// Pure formatting; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "perf/options.hpp"
#include "perf/stats.hpp"

namespace kbv::perf {

inline constexpr const char* kResultLine =
    "---------------------------------------------------------------------------------------";

struct LatRow {
  uint64_t bytes = 0;
  LatencyStats stats;
};
struct BwRow {
  uint64_t bytes = 0;
  uint64_t iterations = 0;  // per QP
  BandwidthStats stats;
};

// Device statistics the report carries (kbv device stats, read at the end).
struct DeviceStats {
  std::string side;                    // "client" or "server"
  std::string device;                  // URI
  uint32_t fw_cmds_in_flight = 0;      // firmware commands outstanding now
  uint32_t fw_cmds_in_flight_max = 0;  // most outstanding at once since open
  uint64_t fw_cmds_completed = 0;      // firmware commands completed since open
};

struct Report {
  TestParams params;
  std::string role;  // "client", "server", "loopback"
  std::string device;
  std::vector<LatRow> lat;
  std::vector<BwRow> bw;
  std::vector<DeviceStats> devices;
  bool verified = false;
  std::string verify_detail;  // what was checked, or what differed
};

// Banner naming the test, as perftest prints before its table.
std::string format_banner(const TestParams& p, const std::string& device, bool lat);
std::string format_lat_header();
std::string format_lat_row(const LatRow& r);
std::string format_bw_header();
std::string format_bw_row(const BwRow& r);
// The whole report as one JSON object: test, atomic_type (atomics), connection, role,
// device, params, latency[], bandwidth[], device_stats[], verified, verify_detail.
std::string format_json(const Report& r);

}  // namespace kbv::perf
