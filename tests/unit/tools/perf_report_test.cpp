// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf tables (perftest headings) and JSON (every field, valid numbers).
#include "perf/report.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

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
  const std::string bw = format_bw_header(false);
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
  const std::string brow = format_bw_row(r.bw[0], false);
  EXPECT_NE(brow.find("65536"), std::string::npos);
  EXPECT_NE(brow.find("1234.50"), std::string::npos);
  EXPECT_NE(brow.find("0.019752"), std::string::npos);
  // --report_gbits: perftest's RESULT_FMT_G; 1234.5 MiB/s = 10.36 Gb/s.
  EXPECT_NE(format_bw_header(true).find("BW average[Gb/sec]"), std::string::npos);
  EXPECT_NE(format_bw_row(r.bw[0], true).find("10.36"), std::string::npos);
}

// The JSON parsed back (nlohmann-json): every field with its value; NaN ->
// null; a peer's text with control characters and invalid UTF-8 survives as
// valid JSON.
TEST(PerfReport, JsonParsesBackWithEveryField) {
  Report r = sample();
  r.verify_detail = "all \"good\"\n\x01\xff";
  const auto j = nlohmann::json::parse(format_json(r));
  EXPECT_EQ(j["test"], "write");
  EXPECT_EQ(j["connection"], "RC");
  EXPECT_EQ(j["role"], "loopback");
  EXPECT_EQ(j["device"], "sim:0");
  EXPECT_FALSE(j.contains("atomic_type"));
  const auto& l = j["latency"].at(0);
  EXPECT_EQ(l["bytes"], 2);
  EXPECT_EQ(l["iterations"], 1000);
  EXPECT_DOUBLE_EQ(l["t_min_usec"].get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(l["t_max_usec"].get<double>(), 9.5);
  EXPECT_DOUBLE_EQ(l["t_typical_usec"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(l["t_avg_usec"].get<double>(), 2.75);
  EXPECT_DOUBLE_EQ(l["t_stdev_usec"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(l["p99_usec"].get<double>(), 7.0);
  EXPECT_DOUBLE_EQ(l["p99_9_usec"].get<double>(), 9.0);
  const auto& b = j["bandwidth"].at(0);
  EXPECT_EQ(b["bytes"], 65536);
  EXPECT_EQ(b["iterations"], 5000);
  EXPECT_TRUE(b["bw_peak_mbs"].is_null());
  EXPECT_DOUBLE_EQ(b["bw_avg_mbs"].get<double>(), 1234.5);
  EXPECT_NEAR(b["bw_avg_gbps"].get<double>(), 10.356, 0.001);
  EXPECT_DOUBLE_EQ(b["msg_rate_mpps"].get<double>(), 0.019752);
  EXPECT_EQ(b["peak_computed"], false);
  const auto& d = j["device_stats"].at(0);
  EXPECT_EQ(d["side"], "client");
  EXPECT_EQ(d["device"], "sim:0");
  EXPECT_EQ(d["fw_cmds_in_flight"], 0);
  EXPECT_EQ(d["fw_cmds_in_flight_max"], 7);
  EXPECT_EQ(d["fw_cmds_completed"], 120);
  EXPECT_EQ(j["verified"], true);
  const std::string detail = j["verify_detail"];
  EXPECT_EQ(detail.substr(0, 12), "all \"good\"\n\x01");
  EXPECT_EQ(j["params"]["lat_sizes"], nlohmann::json::array({2}));
  EXPECT_EQ(j["params"]["num_qps"], 1);
  EXPECT_TRUE(j["params"]["tos"].is_null());
  r.params.test = perf::Test::kAtomic;
  r.params.tos = 32;
  const auto a = nlohmann::json::parse(format_json(r));
  EXPECT_EQ(a["atomic_type"], "FETCH_AND_ADD");
  EXPECT_EQ(a["params"]["tos"], 32);
}

// perftest's banner and address lines (ctx_print_test_info,
// ctx_print_pingpong_data) and -H's sample list.
TEST(PerfReport, BannerAddressesAndHistogramAsPerftest) {
  TestParams p;
  p.lat = true;
  p.bw = false;
  BannerInfo b;
  b.device = "sim:0";
  b.mtu_bytes = 4096;
  b.gid_index = 3;
  const std::string banner = format_banner(p, b);
  for (const char* line :
       {"                    RDMA_Write Latency Test\n",
        " Number of qps   : 1\t\tTransport type : IB\n",
        " Connection type : RC\t\tUsing SRQ      : OFF\n", " TX depth        : 1\n",
        " Mtu             : 4096[B]\n", " GID index       : 3\n", " Max inline data : 0[B]\n"}) {
    EXPECT_NE(banner.find(line), std::string::npos) << line << "\n" << banner;
  }
  QpInfo q;
  q.qpn = 0x108;
  q.psn = 0xa1b2c3;
  q.rkey = 0x201;
  q.vaddr = 0x7f00001000;
  q.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 127, 0, 0, 1};
  EXPECT_EQ(format_address(p, "local", q),
            " local address: LID 0000 QPN 0x0108 PSN 0xa1b2c3 RKey 0x000201 VAddr "
            "0x00007f00001000\n GID: 00:00:00:00:00:00:00:00:00:00:255:255:127:00:00:01\n");
  LatRow row;
  row.samples_us = {3.0, 1.0, 2.0, 9.0, 8.0};
  const std::string h = format_histogram(row);
  EXPECT_EQ(h.substr(0, 26), "#, usec\n1, 1\n2, 2\n3, 3\n---");  // sorted, the 2 largest dropped
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
