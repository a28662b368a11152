// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf: perftest-style latency and bandwidth on kbv (RC/UC RDMA WRITE and
// SEND, RC RDMA READ and atomics; UD SEND), server and client in two
// processes that exchange QP information over TCP, or --loopback with two
// model HCAs in one process. One multi-call binary: kbv_write_lat,
// kbv_write_bw, ... kbv_atomic_bw are links to it (options.hpp). Options in
// tools/perf/options.hpp; the phases in session.hpp; output in report.hpp
// and plot.hpp. Public API (kbv/kbv.hpp) only.
//
// Exit status: 0 when every phase ran and its data was verified on both
// sides (and --out_json/--raw/--plot were written), 1 on a failure (one line
// on stderr), 2 on a usage error.
#include <fmt/format.h>
#include <sys/socket.h>
#include <kbv/kbv.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "kbv-perf/endpoint.hpp"
#include "kbv-perf/session.hpp"
#include "perf/exchange.hpp"
#include "perf/options.hpp"
#include "perf/plot.hpp"
#include "perf/progress.hpp"
#include "perf/report.hpp"

namespace kbv::perf {
namespace {

using namespace std::chrono_literals;

std::string status_text(Status s) {
  return fmt::format("{} ({})", kbv_status_name(s.code()), kbv_status_message(s.code()));
}

// The device a side uses: the one named, else the index-th listed (the model
// "sim:<index>" when fewer are listed).
std::string pick_device(const std::string& named, size_t index) {
  if (!named.empty()) return named;
  auto list = Device::list();
  if (list && list->size() > index) return (*list)[index].uri;
  return fmt::format("sim:{}", index);
}

// Creates the endpoint, tells the peer whether that worked, exchanges QP
// information, connects every QP. On a failure why is one line (the peer's
// failure, carried by its EP line, included).
Result<std::unique_ptr<Endpoint>> connect_side(const std::string& uri, const Options& o,
                                               const TestParams& p, unsigned side, Channel& ch,
                                               bool verbose, std::string& why) {
  EndpointConfig cfg;
  cfg.ib_port = o.ib_port;
  cfg.gid_index = o.gid_index;
  auto ep = Endpoint::create(uri, p, cfg, side, why);
  (void)ch.send_line(ep ? "EP ok" : "EP fail " + why);
  if (!ep) return ep.status();
  auto peer = ch.recv_line(kCtrlTimeout);
  if (!peer) {
    why = fmt::format("no answer from the {}: {}", side == 0 ? "server" : "client",
                      status_text(peer.status()));
    return peer.status();
  }
  if (*peer != "EP ok") {
    why = fmt::format("the {} failed: {}", side == 0 ? "server" : "client",
                      escape_peer_text(peer->starts_with("EP fail ") ? peer->substr(8) : *peer));
    return KBV_ERR_IO;
  }
  std::vector<QpInfo> mine, theirs;
  for (uint32_t q = 0; q < p.num_qps; ++q) mine.push_back((*ep)->local_info(q));
  if (Status s = ch.exchange_all(mine, theirs, kCtrlTimeout); !s) {
    why = fmt::format("QP information exchange: {}", status_text(s));
    return s;
  }
  if (Status s = (*ep)->connect_all(theirs, why); !s) return s;
  if (verbose) {
    BannerInfo b;
    b.device = (*ep)->uri();
    b.server = side == 1;
    b.mtu_bytes = (*ep)->mtu_bytes();
    b.gid_index = (*ep)->gid_index();
    b.rx_depth = (*ep)->rq_depth();
    b.out_reads = (*ep)->max_rd_atomic();
    b.events = o.events;
    std::string text = format_banner(p, b);
    // perftest: every QP's local address, then every remote one.
    for (uint32_t q = 0; q < p.num_qps; ++q) text += format_address(p, "local", mine[q]);
    for (uint32_t q = 0; q < p.num_qps; ++q) text += format_address(p, "remote", theirs[q]);
    fmt::print("{}", text);
    std::fflush(stdout);
  }
  if (Status s = ch.sync("connected", kCtrlTimeout); !s) {
    why = fmt::format("sync after connect: {}", status_text(s));
    return s;
  }
  return std::move(*ep);
}

// The server's side of one session on ch. Returns the exit status. quiet
// (loopback): no banner, and no message for a connection failure (the
// client reports it).
int serve(Channel& ch, const Options& o, const std::string& device, bool quiet) {
  auto line = ch.recv_line(kCtrlTimeout);
  if (!line) {
    fmt::print(stderr, "kbv-perf server: no test parameters: {}\n", status_text(line.status()));
    return 1;
  }
  auto params = decode_params(*line);
  if (!params) {
    (void)ch.send_line("ERR invalid test parameters");
    fmt::print(stderr, "kbv-perf server: invalid test parameters: {}\n", escape_peer_text(*line));
    return 1;
  }
  (void)ch.send_line("OK");
  std::string why;
  auto ep =
      connect_side(pick_device(device, quiet ? 1 : 0), o, *params, 1, ch, !quiet && !o.json, why);
  if (!ep) {
    // Loopback: the client prints the one line (its own failure, or this
    // side's, which the EP line carried to it).
    if (!quiet) fmt::print(stderr, "kbv-perf server: {}\n", why);
    return 1;
  }
  std::string detail;
  Status s = run_server(**ep, ch, o.events, detail);
  if (!s) {
    fmt::print(stderr, "kbv-perf server: {}: {}\n", status_text(s), detail);
    return 1;
  }
  if (!quiet) fmt::print("kbv-perf server: {} ({}): {}\n", (*ep)->uri(), "verified", detail);
  return 0;
}

// --out_json, --raw, --plot after a run. Returns false after printing why
// one failed.
bool write_outputs(const Options& o, const Report& rep) {
  bool ok = true;
  if (!o.json_file.empty()) {
    std::FILE* f = std::fopen(o.json_file.c_str(), "w");
    const std::string text = format_json(rep);
    if (f == nullptr || std::fwrite(text.data(), 1, text.size(), f) != text.size()) {
      fmt::print(stderr, "kbv-perf: cannot write {}\n", o.json_file);
      ok = false;
    }
    if (f != nullptr && std::fclose(f) != 0) ok = false;
  }
  if (!o.raw_file.empty()) {
    if (auto err = write_raw(o.raw_file, rep)) {
      fmt::print(stderr, "kbv-perf: --raw: {}\n", *err);
      ok = false;
    }
  }
  if (!o.plot_file.empty()) {
    if (auto err = draw_plot(o.plot_file, rep, find_plot_script())) {
      fmt::print(stderr, "kbv-perf: {}\n", *err);
      ok = false;
    } else if (!o.json) {
      fmt::print(" Plot           : {}\n", o.plot_file);
    }
  }
  return ok;
}

// The client's side: parameters, connection, phases, report.
int run_as_client(Channel& ch, const Options& o, const std::string& device, const char* role) {
  const TestParams& p = o.params;
  if (Status s = ch.send_line(encode(p)); !s) {
    fmt::print(stderr, "kbv-perf: sending the test parameters: {}\n", status_text(s));
    return 1;
  }
  auto ack = ch.recv_line(kCtrlTimeout);
  if (!ack || *ack != "OK") {
    fmt::print(stderr, "kbv-perf: the server refused the test: {}\n",
               ack ? escape_peer_text(*ack) : status_text(ack.status()));
    return 1;
  }
  std::string why;
  auto ep = connect_side(device, o, p, 0, ch, !o.json, why);
  if (!ep) {
    fmt::print(stderr, "kbv-perf: {}\n", why);
    return 1;
  }
  Progress progress(stdout, o.progress);
  SessionHooks hooks;
  hooks.progress = &progress;
  hooks.events = o.events;
  hooks.keep_bw_samples = !o.raw_file.empty();
  if (!o.json) {
    hooks.on_table = [&](bool lat) {
      fmt::print("{}\n", !lat              ? format_bw_header(o.report_gbits)
                         : p.duration != 0 ? format_lat_dur_header()
                                           : format_lat_header());
      std::fflush(stdout);
    };
    hooks.on_lat = [&](const LatRow& r) {
      if (o.histogram) fmt::print("{}\n", format_histogram(r));
      fmt::print("{}\n", p.duration != 0 ? format_lat_dur_row(r) : format_lat_row(r));
      std::fflush(stdout);
    };
    hooks.on_bw = [&](const BwRow& r) {
      fmt::print("{}\n", format_bw_row(r, o.report_gbits));
      std::fflush(stdout);
    };
  }
  SessionOutcome out;
  Status s = run_client(**ep, ch, hooks, out);
  Report rep;
  rep.params = p;
  rep.role = role;
  rep.device = (*ep)->uri();
  rep.lat = out.lat;
  rep.bw = out.bw;
  rep.devices = out.devices;
  rep.verified = s.is_ok() && out.verified;
  rep.verify_detail = out.detail;
  if (o.json) {
    fmt::print("{}", format_json(rep));
  } else {
    fmt::print("{}\n", kResultLine);
    for (const DeviceStats& d : rep.devices) {
      fmt::print(" {} {}: firmware commands in flight {} (max {}), completed {}\n", d.side,
                 d.device, d.fw_cmds_in_flight, d.fw_cmds_in_flight_max, d.fw_cmds_completed);
    }
    if (rep.verified) fmt::print(" Data verified: {}\n", rep.verify_detail);
  }
  if (!s) {
    fmt::print(stderr, "kbv-perf: {}: {}\n", status_text(s), out.detail);
    return 1;
  }
  return write_outputs(o, rep) ? 0 : 1;
}

int run(const Options& o) {
  switch (o.role) {
    case Role::kServer: {
      auto l = Listener::listen(o.port, o.bind);
      const std::string addr = o.bind.empty() ? "0.0.0.0" : o.bind;
      if (!l) {
        fmt::print(stderr, "kbv-perf server: cannot listen on {}:{}: {}\n", addr, o.port,
                   status_text(l.status()));
        return 1;
      }
      fmt::print(stderr, "kbv-perf server: waiting for a client on port {} (address {})\n",
                 l->port(), addr);
      auto ch = l->accept(std::chrono::minutes(10));
      if (!ch) {
        fmt::print(stderr, "kbv-perf server: no client: {}\n", status_text(ch.status()));
        return 1;
      }
      return serve(*ch, o, o.device, false);
    }
    case Role::kClient: {
      auto ch = Channel::connect(o.host, o.port, 30s);
      if (!ch) {
        fmt::print(stderr, "kbv-perf: cannot connect to {}:{}: {}\n", o.host, o.port,
                   status_text(ch.status()));
        return 1;
      }
      return run_as_client(*ch, o, pick_device(o.device, 0), "client");
    }
    case Role::kLoopback: {
      // Two model HCAs in this process: the server side runs in a thread,
      // over a socket pair instead of TCP; the same code as two processes.
      int sv[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        fmt::print(stderr, "kbv-perf: socketpair failed\n");
        return 1;
      }
      Channel client_ch(sv[0]);
      Channel server_ch(sv[1]);
      int server_rc = 0;
      std::thread server([&] { server_rc = serve(server_ch, o, o.peer_device, true); });
      int rc = run_as_client(client_ch, o, pick_device(o.device, 0), "loopback");
      client_ch = Channel();  // unblocks a server waiting for us after a failure
      server.join();
      return rc != 0 ? rc : server_rc;
    }
  }
  return 1;
}

}  // namespace
}  // namespace kbv::perf

int main(int argc, char** argv) {
  auto parsed = kbv::perf::parse_options(argc, argv);
  if (!parsed.opts) {
    std::FILE* out = parsed.exit_code == 0 ? stdout : stderr;
    if (parsed.exit_code == 0) {
      fmt::print(out, "{}\n", parsed.message);
    } else {
      // One line: the refusal and where the options are.
      const std::string& m = parsed.message;
      fmt::print(
          out, "{}{} (--help lists the options)\n",
          m.starts_with("kbv-perf") ? "" : "kbv-perf: ", m.substr(0, m.find_last_not_of('\n') + 1));
    }
    return parsed.exit_code;
  }
  return kbv::perf::run(*parsed.opts);
}
