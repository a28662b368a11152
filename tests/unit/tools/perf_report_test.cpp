// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf tables (perftest headings) and JSON (every field, valid numbers).
#include "perf/report.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "perf/progress.hpp"

namespace kbv::perf {
namespace {

Report sample() {
  Report r;
  r.params.lat_sizes = {2};
  r.params.bw_sizes = {65536};
  r.role = "loopback";
  r.device = "sim:0";
  LatRow l;
  l.bytes = 2;
  l.stats.iterations = 1000;
  l.stats.t_min_us = 1.25;
  l.stats.t_max_us = 9.5;
  l.stats.t_typical_us = 2.5;
  l.stats.t_avg_us = 2.75;
  l.stats.t_stdev_us = 0.5;
  l.stats.p99_us = 7.0;
  l.stats.p999_us = 9.0;
  r.lat.push_back(l);
  BwRow b;
  b.bytes = 65536;
  b.iterations = 5000;
  b.stats.messages = 5000;
  b.stats.bw_avg_mbs = 1234.5;
  b.stats.bw_peak_mbs = std::nan("");  // not finite: must become null
  b.stats.msg_rate_mpps = 0.019752;
  r.bw.push_back(b);
  r.devices.push_back({"client", "sim:0", 0, 7, 120});
  r.verified = true;
  r.verify_detail = "all \"good\"";
  return r;
}

TEST(PerfReport, TableHeadingsAsPerftest) {
  const std::string lat = format_lat_header();
  for (const char* h :
       {"#bytes", "#iterations", "t_min[usec]", "t_max[usec]", "t_typical[usec]", "t_avg[usec]",
        "t_stdev[usec]", "99% percentile[usec]", "99.9% percentile[usec]"}) {
    EXPECT_NE(lat.find(h), std::string::npos) << h;
  }
  const std::string bw = format_bw_header();
  for (const char* h :
       {"#bytes", "#iterations", "BW peak[MB/sec]", "BW average[MB/sec]", "MsgRate[Mpps]"}) {
    EXPECT_NE(bw.find(h), std::string::npos) << h;
  }
  Report r = sample();
  const std::string row = format_lat_row(r.lat[0]);
  EXPECT_EQ(row.find(" 2 "), 0u);
  for (const char* v : {"1000", "1.25", "9.50", "2.50", "2.75", "0.50", "7.00", "9.00"}) {
    EXPECT_NE(row.find(v), std::string::npos) << v;
  }
  const std::string brow = format_bw_row(r.bw[0]);
  EXPECT_NE(brow.find("65536"), std::string::npos);
  EXPECT_NE(brow.find("1234.50"), std::string::npos);
  EXPECT_NE(brow.find("0.019752"), std::string::npos);
}

TEST(PerfReport, JsonHasEveryField) {
  const std::string j = format_json(sample());
  for (const char* k : {"\"test\": \"write\"",       "\"connection\": \"RC\"",
                        "\"role\": \"loopback\"",    "\"device\": \"sim:0\"",
                        "\"t_min_usec\": 1.250",     "\"t_max_usec\": 9.500",
                        "\"t_typical_usec\": 2.500", "\"t_avg_usec\": 2.750",
                        "\"t_stdev_usec\": 0.500",   "\"p99_usec\": 7.000",
                        "\"p99_9_usec\": 9.000",     "\"bw_peak_mbs\": null",
                        "\"bw_avg_mbs\": 1234.500",  "\"msg_rate_mpps\": 0.019752",
                        "\"fw_cmds_in_flight\": 0",  "\"fw_cmds_in_flight_max\": 7",
                        "\"side\": \"client\"",      "\"fw_cmds_completed\": 120",
                        "\"verified\": true",        "\"verify_detail\": \"all \\\"good\\\"\"",
                        "\"lat_sizes\": [2]",        "\"num_qps\": 1"}) {
    EXPECT_NE(j.find(k), std::string::npos) << k << "\n" << j;
  }
  // Balanced braces/brackets (no string in the sample holds one).
  int braces = 0, brackets = 0;
  for (char c : j) {
    braces += c == '{' ? 1 : c == '}' ? -1 : 0;
    brackets += c == '[' ? 1 : c == ']' ? -1 : 0;
  }
  EXPECT_EQ(braces, 0);
  EXPECT_EQ(brackets, 0);
}

TEST(PerfProgress, RenderAndNoTerminalNoOutput) {
  EXPECT_EQ(Progress::render("x", 5, 10, 10), "x [#####.....]  50%");
  EXPECT_EQ(Progress::render("x", 20, 10, 4), "x [####] 100%");
  EXPECT_EQ(Progress::render("x", 0, 0, 2), "x [##] 100%");
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress p(f, true);  // a file is not a terminal
    EXPECT_FALSE(p.active());
    p.start("run", 10);
    p.update(5);
    p.finish();
  }
  EXPECT_EQ(std::ftell(f), 0);
  std::fclose(f);
}

}  // namespace
}  // namespace kbv::perf
