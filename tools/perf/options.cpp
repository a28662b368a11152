// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf command line (options.hpp). Limits are perftest 4.5's
// (src/perftest_parameters.h MIN_ITER, MAX_ITER, MAX_TX, MAX_CQ_MOD,
// MAX_QP_NUM, MAX_INLINE, MAX_GID_IX, MIN_TOS/MAX_TOS) unless noted.
#include "perf/options.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <charconv>

#include "perf/stats.hpp"

namespace kbv::perf {

namespace {

constexpr uint64_t kMaxMsgSize = 1ull << 31;   // IBTA 9.4: messages up to 2^31 bytes
constexpr uint64_t kAtomicSize = 8;            // IBTA 9.4.5: 64-bit atomic operand
constexpr uint64_t kDefSizeLat = 2;            // perftest DEF_SIZE_LAT
constexpr uint64_t kDefSizeBw = 65536;         // perftest DEF_SIZE_BW
constexpr uint64_t kDefSweepMax = 1ull << 23;  // perftest -a: 2 till 2^23
constexpr uint64_t kMaxIters = 100000000;      // perftest MAX_ITER
constexpr uint32_t kMaxTx = 15000;             // perftest MAX_TX
constexpr uint32_t kMaxCqMod = 1024;           // perftest MAX_CQ_MOD
constexpr uint32_t kMaxInline = 912;           // perftest MAX_INLINE
constexpr uint32_t kMaxInlineUd = 884;         // perftest MAX_INLINE_UD
constexpr int kMaxGidIndex = 64;               // perftest MAX_GID_IX
constexpr uint32_t kMaxDuration = 86400;       // -D: a day (perftest: any positive int)

constexpr std::array<std::string_view, 4> kTestNames{"write", "send", "read", "atomic"};

// An unsigned number in decimal or 0x-hex, with perftest's K/M suffixes when
// suffixes is set. nullopt when text is not such a number (a sign, other
// characters, or too large for 64 bits).
std::optional<uint64_t> to_number(std::string_view text, bool suffixes) {
  uint64_t factor = 1;
  if (suffixes && !text.empty() && (text.back() == 'K' || text.back() == 'M')) {
    factor = text.back() == 'K' ? 1024 : 1024 * 1024;
    text.remove_suffix(1);
  }
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty()) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (v > UINT64_MAX / factor) return std::nullopt;
  return v * factor;
}

// Range-checks one option's text; the message names the flag and the range.
struct Checker {
  std::string error;
  template <class T>
  void operator()(const std::string& flag, const std::string& what, const std::string& text,
                  uint64_t lo, uint64_t hi, T& out, bool suffixes = false) {
    if (!error.empty() || text.empty()) return;
    auto v = to_number(text, suffixes);
    const bool negative = text[0] == '-' && to_number(text.substr(1), suffixes).has_value();
    if (negative) {
      error = fmt::format("{} ({}): {} is out of range {}..{}", flag, what, text, lo, hi);
    } else if (!v) {
      error =
          fmt::format("{} ({}): '{}' is not a number (expected {}..{})", flag, what, text, lo, hi);
    } else if (*v < lo || *v > hi) {
      error = fmt::format("{} ({}): {} is out of range {}..{}", flag, what, text, lo, hi);
    } else {
      out = static_cast<T>(*v);
    }
  }
};

}  // namespace

std::string_view to_string(Test t) { return kTestNames[static_cast<size_t>(t)]; }

std::string_view perftest_name(Test t) {
  static constexpr std::array<std::string_view, 4> kNames{"RDMA_Write", "Send", "RDMA_Read",
                                                          "Atomic"};
  return kNames[static_cast<size_t>(t)];
}

std::string_view to_string(Connection c) {
  switch (c) {
    case Connection::kRc: return "RC";
    case Connection::kUc: return "UC";
    case Connection::kUd: return "UD";
  }
  return "?";
}

std::string_view to_string(AtomicType a) {
  return a == AtomicType::kFetchAndAdd ? "FETCH_AND_ADD" : "CMP_AND_SWAP";
}

std::string Entry::name() const {
  return fmt::format("kbv_{}_{}", to_string(test), lat ? "lat" : "bw");
}

std::optional<Entry> entry_from_name(std::string_view name) {
  if (auto slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  if (name.starts_with("kbv_")) name.remove_prefix(4);
  for (size_t t = 0; t < kTestNames.size(); ++t) {
    for (bool lat : {true, false}) {
      if (name == fmt::format("{}_{}", kTestNames[t], lat ? "lat" : "bw")) {
        return Entry{static_cast<Test>(t), lat};
      }
    }
  }
  return std::nullopt;
}

std::vector<std::string> entry_names() {
  std::vector<std::string> v;
  for (size_t t = 0; t < kTestNames.size(); ++t) {
    for (bool lat : {true, false}) v.push_back(Entry{static_cast<Test>(t), lat}.name());
  }
  return v;
}

uint64_t TestParams::max_size() const {
  uint64_t m = 0;
  for (uint64_t s : lat_sizes) m = std::max(m, s);
  for (uint64_t s : bw_sizes) m = std::max(m, s);
  return m;
}

std::optional<std::string> validate(const TestParams& p) {
  if (!p.lat && !p.bw) return "nothing to run: neither latency nor bandwidth";
  if (p.connection == Connection::kUd && p.test != Test::kSend) {
    return "UD connection only possible in SEND verb";  // perftest change_conn_type
  }
  if (p.connection == Connection::kUc && (p.test == Test::kRead || p.test == Test::kAtomic)) {
    return "UC connection not possible in READ/ATOMIC verbs";
  }
  if (p.lat && p.lat_sizes.empty()) return "no latency message size";
  if (p.bw && p.bw_sizes.empty()) return "no bandwidth message size";
  for (const auto* sizes : {&p.lat_sizes, &p.bw_sizes}) {
    for (uint64_t s : *sizes) {
      if (s == 0 || s > kMaxMsgSize) {
        return fmt::format("message size {} out of range 1..{}", s, kMaxMsgSize);
      }
      if (p.test == Test::kAtomic && s != kAtomicSize) {
        return fmt::format("atomics are {} bytes (size {} given)", kAtomicSize, s);
      }
    }
  }
  if (p.lat && (p.lat_iters < kMinIters || p.lat_iters > kMaxIters)) {
    return fmt::format("latency iterations out of range {}..{}", kMinIters, kMaxIters);
  }
  if (p.bw && (p.bw_iters < kMinIters || p.bw_iters > kMaxIters)) {
    return fmt::format("bandwidth iterations out of range {}..{}", kMinIters, kMaxIters);
  }
  if (p.tx_depth < 1 || p.tx_depth > kMaxTx)
    return fmt::format("tx depth out of range 1..{}", kMaxTx);
  if (p.cq_mod < 1 || p.cq_mod > kMaxCqMod) {
    return fmt::format("cq moderation out of range 1..{}", kMaxCqMod);
  }
  if (p.num_qps < 1 || p.num_qps > kMaxQps) {
    return fmt::format("number of QPs out of range 1..{}", kMaxQps);
  }
  if ((p.test == Test::kRead || p.test == Test::kAtomic) && p.inline_size != 0) {
    return "Inline feature not available on READ/Atomic verbs";
  }
  const uint32_t max_inline = p.connection == Connection::kUd ? kMaxInlineUd : kMaxInline;
  if (p.inline_size > max_inline) return fmt::format("inline size out of range 0..{}", max_inline);
  if (p.mtu != 0 && (p.mtu < 256 || p.mtu > 4096 || (p.mtu & (p.mtu - 1)) != 0)) {
    return fmt::format("MTU {} is not one of 256, 512, 1024, 2048, 4096", p.mtu);
  }
  if (p.tos > kTosOff) return "ToS out of range 0..255";
  if (p.bidir && p.lat) return "Bidirectional is only available in BW test";
  if (p.bidir && p.duration != 0) return "-b with -D is not supported";
  if (p.bidir && p.test == Test::kSend && p.connection != Connection::kRc) {
    return "-b with UC/UD SEND is not supported (datagrams the receiver drops would never end it)";
  }
  if (p.duration > kMaxDuration) return fmt::format("duration out of range 0..{}", kMaxDuration);
  if (p.duration != 0 && (p.lat_sizes.size() > 1 || p.bw_sizes.size() > 1)) {
    return "duration mode runs one message size";
  }
  return std::nullopt;
}

ParseResult parse_options(int argc, const char* const* argv) {
  ParseResult r;
  const auto fail = [&](std::string msg) {
    r.exit_code = 2;
    r.message = std::move(msg);
    return r;
  };
  // The test: from the program's name, else from the first argument.
  std::string entries;
  for (const auto& n : entry_names()) entries += (entries.empty() ? "" : ", ") + n;
  std::optional<Entry> entry = argc > 0 ? entry_from_name(argv[0]) : std::nullopt;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  if (!entry && !args.empty()) {
    entry = entry_from_name(args.front());
    if (entry) args.erase(args.begin());
  }
  const bool help = std::find(args.begin(), args.end(), "-h") != args.end() ||
                    std::find(args.begin(), args.end(), "--help") != args.end();
  if (!entry && !help) {
    return fail(fmt::format(
        "kbv-perf: name the test: kbv-perf <write_lat|write_bw|send_lat|send_bw|read_lat|"
        "read_bw|atomic_lat|atomic_bw> [options] [host], or run one of its entry points ({})",
        entries));
  }
  const Entry e = entry.value_or(Entry{});
  const std::string prog = entry ? e.name() : "kbv-perf <test>";

  CLI::App app{
      fmt::format("{}: perftest-style {} {} on kbv (perftest's flags and output).\n"
                  "  {} [options]             server: wait for a client\n"
                  "  {} [options] <host>      client: run against the server at <host>\n"
                  "  {} [options] --loopback  both sides here, on two model HCAs\n"
                  "Entry points: {}",
                  prog, entry ? perftest_name(e.test) : "RDMA",
                  entry ? (e.lat ? "latency" : "bandwidth") : "tests", prog, prog, prog, entries),
      prog};
  Options o;
  o.entry = e;
  TestParams& p = o.params;
  bool server = false, loopback = false, all = false, no_progress = false, bidir = false;
  bool cpu_freq = false, old_post_send = false, out_json = false;
  std::string size, max_size, iters, duration, tx, inl, cqmod, qps, mtu, tos, gid, ibport, port;
  std::string conn = "RC", atomic;

  app.add_flag("--server", server, "Wait for a client (the default without a host)");
  app.add_flag("--loopback", loopback, "Both sides in this process, on two model HCAs");
  app.add_option("host", o.host, "Server to connect to (client side)");
  app.add_option("-p,--port", port, "Listen on/connect to TCP port (default 18515; 0: any)");
  app.add_option("--bind", o.bind, "Server: the IPv4 address to listen on (default 0.0.0.0)");
  app.add_option("-d,--ib-dev", o.device, "Device URI (default: the first device listed)");
  app.add_option("--peer-dev", o.peer_device, "Loopback: the second device (default: the second)");
  app.add_option("-i,--ib-port", ibport, "Port of the device (default 1)");
  app.add_option("-x,--gid-index", gid, "GID index (default: the first RoCE v2 GID)");
  app.add_option("-c,--connection", conn, "RC | UC | UD (UC: write/send; UD: send; default RC)")
      ->check(CLI::IsMember({"RC", "UC", "UD"}));
  app.add_option("-A,--atomic_type", atomic, "CMP_AND_SWAP | FETCH_AND_ADD (default FETCH_AND_ADD)")
      ->check(CLI::IsMember({"FETCH_AND_ADD", "CMP_AND_SWAP"}));
  app.add_option("-s,--size", size,
                 "Message size in bytes, K/M suffixes (default 2 lat, 65536 bw)");
  app.add_flag("-a,--all", all, "Run sizes from 2 till 2^23 (or --max-size)");
  app.add_option("--max-size", max_size, "Largest size of the -a sweep (kbv extension)");
  app.add_option("-n,--iters", iters,
                 "Number of exchanges (at least 5; default 1000 lat, 5000 bw)");
  app.add_option("-D,--duration", duration, "Run test for a customized period of seconds");
  app.add_option("-t,--tx-depth", tx, "Size of tx queue (default 128)");
  app.add_option("-I,--inline_size", inl, "Max size of message to be sent in inline");
  app.add_option("-Q,--cq-mod", cqmod, "Generate a completion every N messages (default 100)");
  app.add_option("-q,--qp", qps, "Num of qp's (bandwidth tests; default 1)");
  app.add_option("-m,--mtu", mtu, "MTU size: 256 - 4096 (default port mtu)");
  app.add_option("-T,--tos", tos, "ToS: the GRH traffic class, 0 - 255 (default off)");
  app.add_flag("-e,--events", o.events, "Sleep on CQ events (not on WRITE; default poll)");
  app.add_flag("-b,--bidirectional", bidir,
               "Measure bidirectional bandwidth (default unidirectional)");
  app.add_flag("-F,--CPU-freq", cpu_freq, "Accepted (kbv times with CLOCK_MONOTONIC)");
  app.add_flag("-H,--report-histogram", o.histogram, "Print out all results (latency)");
  app.add_flag("-N,--noPeak", p.no_peak, "Cancel peak-bw calculation (default with peak)");
  app.add_flag("--report_gbits", o.report_gbits, "Report bandwidth in Gb/sec instead of MB/sec");
  app.add_flag("--out_json", out_json, "Save the report in a json file (perftest_out.json)");
  app.add_option("--out_json_file", o.json_file, "Name of the report json file");
  app.add_flag("--use_old_post_send", old_post_send, "Accepted (kbv always posts this way)");
  app.add_flag("--json", o.json, "Print the report as JSON on stdout instead of tables");
  app.add_option("--raw", o.raw_file, "Write every sample to FILE (latency: usec per line)");
  app.add_option("--plot", o.plot_file, "Draw the results into FILE (.svg or .png; gnuplot)");
  app.add_flag("--no-progress", no_progress, "No progress bar");

  // perftest's --out_json is a flag (the file is --out_json_file=FILE); a
  // name ending in .json right after it is taken as the file too
  // (`--out_json r.json`), anything else stays an argument (the host).
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--out_json" && args[i + 1].size() > 5 && args[i + 1][0] != '-' &&
        args[i + 1].ends_with(".json")) {
      args[i + 1] = "--out_json_file=" + args[i + 1];
    }
  }
  std::vector<std::string> rev(args.rbegin(), args.rend());
  try {
    app.parse(rev);
  } catch (const CLI::ParseError& err) {
    r.exit_code = err.get_exit_code();
    r.message = err.get_exit_code() == 0 ? app.help() : std::string(err.what());
    return r;
  }
  if (!entry) return fail("kbv-perf: name the test first: " + entries);

  Checker check;
  uint64_t size_v = 0, max_size_v = kDefSweepMax, iters_v = 0;
  uint32_t gid_v = 0;
  check("-p", "TCP port", port, 0, 65535, o.port);
  check("-i", "IB port", ibport, 1, 255, o.ib_port);
  check("-x", "GID index", gid, 0, kMaxGidIndex, gid_v);
  check("-s", "message size", size, 1, kMaxMsgSize, size_v, true);
  check("--max-size", "largest size of -a", max_size, 2, kMaxMsgSize, max_size_v, true);
  check("-n", "iterations", iters, kMinIters, kMaxIters, iters_v);
  check("-t", "tx depth", tx, 1, kMaxTx, p.tx_depth);
  check("-I", "max inline", inl, 0, conn == "UD" ? kMaxInlineUd : kMaxInline, p.inline_size);
  check("-Q", "CQ moderation", cqmod, 1, kMaxCqMod, p.cq_mod);
  check("-q", "number of QPs", qps, 1, kMaxQps, p.num_qps);
  check("-m", "MTU", mtu, 256, 4096, p.mtu);
  check("-T", "ToS", tos, 0, 255, p.tos);
  check("-D", "duration in seconds", duration, 1, kMaxDuration, p.duration);
  if (!check.error.empty()) return fail(check.error);
  if (!gid.empty()) o.gid_index = static_cast<int>(gid_v);
  if (p.mtu != 0 && (p.mtu & (p.mtu - 1)) != 0) {
    return fail(fmt::format("-m (MTU): {} is not one of 256, 512, 1024, 2048, 4096", mtu));
  }
  if (!duration.empty() && !iters.empty()) return fail("-D and -n exclude each other");
  if (!duration.empty() && all) return fail("-D: duration mode runs one size (no -a)");
  if (bidir && e.lat) return fail("-b: Bidirectional is only available in BW test");
  p.bidir = bidir;
  if (!qps.empty() && e.lat) return fail("-q: Multiple QPs only available on bw tests");
  if (!atomic.empty() && e.test != Test::kAtomic) {
    return fail("-A: the atomic type applies to kbv_atomic_lat/kbv_atomic_bw only");
  }
  if (o.events && e.test == Test::kWrite) {
    return fail("-e: Events feature not available on WRITE verb");
  }
  if (!inl.empty() && (e.test == Test::kRead || e.test == Test::kAtomic)) {
    return fail("-I: Inline feature not available on READ/Atomic verbs");
  }

  if (server + loopback > 1) return fail("--server and --loopback exclude each other");
  if (!o.bind.empty() && (loopback || !o.host.empty())) return fail("--bind is a server option");
  if (!o.peer_device.empty() && !loopback) return fail("--peer-dev is a --loopback option");
  if (server || loopback) {
    if (!o.host.empty()) return fail("a host is given only on the client side");
    o.role = server ? Role::kServer : Role::kLoopback;
  } else {
    o.role = o.host.empty() ? Role::kServer : Role::kClient;
  }
  p.test = e.test;
  p.connection = conn == "RC" ? Connection::kRc : conn == "UC" ? Connection::kUc : Connection::kUd;
  p.atomic = atomic == "CMP_AND_SWAP" ? AtomicType::kCompareAndSwap : AtomicType::kFetchAndAdd;
  p.lat = e.lat;
  p.bw = !e.lat;
  if (!max_size.empty() && !all) return fail("--max-size applies to -a");
  std::vector<uint64_t> sizes;
  if (e.test == Test::kAtomic) {
    if (all) return fail("-a: atomics have one size (8 bytes)");
    if (!size.empty() && size_v != kAtomicSize) return fail("-s: atomics are 8 bytes");
    sizes = {kAtomicSize};
  } else if (all) {
    if (!size.empty()) return fail("-s and -a exclude each other");
    sizes = sweep_sizes(max_size_v);
  } else {
    sizes = {!size.empty() ? size_v : e.lat ? kDefSizeLat : kDefSizeBw};
  }
  (e.lat ? p.lat_sizes : p.bw_sizes) = sizes;
  if (iters_v != 0) (e.lat ? p.lat_iters : p.bw_iters) = iters_v;
  if (out_json && o.json_file.empty()) o.json_file = "perftest_out.json";  // perftest's default
  o.progress = !no_progress && !o.json;
  if (auto err = validate(p)) return fail(*err);
  r.opts = std::move(o);
  return r;
}

}  // namespace kbv::perf
