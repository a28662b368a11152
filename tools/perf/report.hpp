// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf output: perftest 4.5's layout (linux-rdma/perftest v4.5-0.17:
// src/perftest_parameters.c ctx_print_test_info for the banner,
// src/perftest_communication.c ctx_print_pingpong_data for the address
// lines, src/perftest_parameters.h RESULT_FMT*, REPORT_FMT* for the tables:
// the same headings, widths and separators), and the same figures as JSON
// (nlohmann-json).
//
// Latency table (RESULT_FMT_LAT / REPORT_FMT_LAT):
//  #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]
//    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]
// Bandwidth table (RESULT_FMT / RESULT_FMT_G with --report_gbits, REPORT_FMT):
//  #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
//
// Pure formatting; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "perf/exchange.hpp"
#include "perf/options.hpp"
#include "perf/stats.hpp"

namespace kbv::perf {

// perftest RESULT_LINE (without its newline).
inline constexpr const char* kResultLine =
    "---------------------------------------------------------------------------------------";

struct LatRow {
  uint64_t bytes = 0;
  LatencyStats stats;
  std::vector<double> samples_us;  // per iteration, in order (latency_samples)
  double elapsed_s = 0;            // first to last post stamp
};
struct BwRow {
  uint64_t bytes = 0;
  uint64_t iterations = 0;  // per QP
  BandwidthStats stats;
  std::vector<uint64_t> posted_ns, completed_ns;  // per WR, post order (--raw only)
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

// What the banner shows besides the test parameters.
struct BannerInfo {
  std::string device;
  bool server = false;     // perftest prints TX depth on the client, RX depth on a SEND server
  uint32_t mtu_bytes = 0;  // the path MTU
  uint32_t gid_index = 0;
  uint32_t rx_depth = 0;   // receives posted per QP (SEND)
  uint32_t out_reads = 0;  // READ/atomic: outstanding reads (max_rd_atomic)
  bool events = false;
};

// The banner perftest prints before the connection (ctx_print_test_info),
// ending in a RESULT_LINE.
std::string format_banner(const TestParams& p, const BannerInfo& b);
// One QP's address line(s) (" local address: LID 0000 QPN 0x0108 PSN ..."
// and its GID line); side is "local" or "remote".
std::string format_address(const TestParams& p, const char* side, const QpInfo& q);
// Heading of a table: RESULT_LINE and the column names.
std::string format_lat_header();
std::string format_lat_row(const LatRow& r);
// -D: perftest's RESULT_FMT_LAT_DUR / REPORT_FMT_LAT_DUR (#bytes, #iterations,
// t_avg[usec], tps average = iterations per second).
std::string format_lat_dur_header();
std::string format_lat_dur_row(const LatRow& r);
std::string format_bw_header(bool gbits);
std::string format_bw_row(const BwRow& r, bool gbits);
// -H: perftest's "#, usec" list of the sorted samples (after the measure
// tail is dropped), then the table heading again.
std::string format_histogram(const LatRow& r);
// The whole report as one JSON object: test, atomic_type (atomics), connection, role,
// device, params, latency[], bandwidth[], device_stats[], verified, verify_detail.
// Figures that are not finite are null.
std::string format_json(const Report& r);

}  // namespace kbv::perf
