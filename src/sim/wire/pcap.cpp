// SPDX-License-Identifier: BSD-3-Clause
// pcap writer for model RoCEv2 traffic on libpcap. Format: pcap.hpp.
#include "sim/wire/pcap.hpp"

#include "sim/wire/headers.hpp"
#include "sim/wire/packet.hpp"

#include <dlfcn.h>
#include <pcap/pcap.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace kbv::sim::wire {

namespace {

constexpr size_t kEthBytes = 14;
constexpr size_t kL2L3Bytes = kEthBytes + kIpv4HeaderBytes + kUdpHeaderBytes;
constexpr int kSnaplen = 65535;

// Locally administered MACs whose last byte is the IPv4 host byte.
void put_mac(uint8_t* p, uint32_t ip) {
  const uint8_t mac[6] = {0x02, 0x00, 0x7F, 0x00, 0x00, static_cast<uint8_t>(ip)};
  std::memcpy(p, mac, 6);
}

// libpcap is loaded when the first capture is opened, not linked: a program
// that never captures does not load it, nor the libraries behind it
// (libdbus, libsystemd, libgcrypt on Debian), whose constructors run at load
// time. Under ASan those constructors deadlocked a Python program that had
// the model preloaded (tests/e2e/preload/meson.build, preload_python_sysfs).
// The signatures are pcap/pcap.h's, taken with decltype.
struct PcapApi {
  decltype(&::pcap_open_dead) open_dead = nullptr;
  decltype(&::pcap_dump_fopen) dump_fopen = nullptr;
  decltype(&::pcap_dump) dump = nullptr;
  decltype(&::pcap_dump_file) dump_file = nullptr;
  decltype(&::pcap_dump_flush) dump_flush = nullptr;
  decltype(&::pcap_dump_close) dump_close = nullptr;
  decltype(&::pcap_close) close = nullptr;
};

template <typename Fn>
bool resolve(void* lib, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  return fn != nullptr;
}

// nullptr when libpcap cannot be loaded (Debian's libpcap0.8 ships
// libpcap.so.0.8; other distributions name the same ABI libpcap.so.1).
// Loaded once per process, never unloaded; thread-safe (a function-local
// static).
const PcapApi* pcap_api() {
  static const PcapApi* const api = []() -> const PcapApi* {
    void* lib = nullptr;
    for (const char* soname : {"libpcap.so.0.8", "libpcap.so.1"}) {
      lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
      if (lib != nullptr) break;
    }
    if (lib == nullptr) return nullptr;
    static PcapApi loaded;
    const bool ok = resolve(lib, "pcap_open_dead", loaded.open_dead) &&
                    resolve(lib, "pcap_dump_fopen", loaded.dump_fopen) &&
                    resolve(lib, "pcap_dump", loaded.dump) &&
                    resolve(lib, "pcap_dump_file", loaded.dump_file) &&
                    resolve(lib, "pcap_dump_flush", loaded.dump_flush) &&
                    resolve(lib, "pcap_dump_close", loaded.dump_close) &&
                    resolve(lib, "pcap_close", loaded.close);
    return ok ? &loaded : nullptr;
  }();
  return api;
}

}  // namespace

PcapWriter::PcapWriter(pcap_t* dead, pcap_dumper_t* dumper)
    : dead_(dead), dumper_(dumper), frame_(kL2L3Bytes + kMaxDatagram) {}

Result<std::unique_ptr<PcapWriter>> PcapWriter::open(const std::string& path) {
  // The file is opened here rather than by pcap_dump_open so a failure keeps
  // fopen's errno (and a path of "-" is a file, not standard output).
  const PcapApi* api = pcap_api();
  if (api == nullptr) return KBV_ERR_NOT_SUPPORTED;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return Status::from_errno(errno);
  pcap_t* dead = api->open_dead(DLT_EN10MB, kSnaplen);
  if (dead == nullptr) {
    std::fclose(f);
    return KBV_ERR_NO_MEMORY;
  }
  // Writes the file header; on failure libpcap has closed f.
  pcap_dumper_t* dumper = api->dump_fopen(dead, f);
  if (dumper == nullptr) {
    api->close(dead);
    return KBV_ERR_IO;
  }
  return std::unique_ptr<PcapWriter>(new PcapWriter(dead, dumper));
}

PcapWriter::~PcapWriter() {
  (void)close();
  pcap_api()->close(dead_);
}

Status PcapWriter::write(const Ipv4Flow& flow, std::span<const uint8_t> datagram, uint64_t ts_usec,
                         uint8_t tos, uint8_t ttl) {
  if (dumper_ == nullptr) return KBV_ERR_INVALID_STATE;
  if (datagram.size() > kMaxDatagram) return KBV_ERR_INVALID_ARGUMENT;
  uint8_t* p = frame_.data();
  put_mac(p, flow.dst_ip);
  put_mac(p + 6, flow.src_ip);
  be::store16(p + 12, 0x0800);  // EtherType IPv4
  build_ipv4_udp_header(flow, datagram.size(), tos, ttl,
                        std::span<uint8_t, kIpv4HeaderBytes + kUdpHeaderBytes>(p + kEthBytes, 28));
  if (!datagram.empty()) std::memcpy(p + kL2L3Bytes, datagram.data(), datagram.size());
  pcap_pkthdr hdr{};
  hdr.ts.tv_sec = static_cast<time_t>(ts_usec / 1000000);
  hdr.ts.tv_usec = static_cast<suseconds_t>(ts_usec % 1000000);
  hdr.caplen = static_cast<bpf_u_int32>(kL2L3Bytes + datagram.size());
  hdr.len = hdr.caplen;
  const PcapApi* api = pcap_api();
  api->dump(reinterpret_cast<u_char*>(dumper_), &hdr, p);
  if (std::ferror(api->dump_file(dumper_)) != 0) return KBV_ERR_IO;
  return {};
}

Status PcapWriter::close() {
  if (dumper_ == nullptr) return {};
  // Any failed write since open counts, not only the last flush.
  const PcapApi* api = pcap_api();
  const bool flushed = api->dump_flush(dumper_) == 0 && std::ferror(api->dump_file(dumper_)) == 0;
  api->dump_close(dumper_);
  dumper_ = nullptr;
  return flushed ? Status{} : Status{KBV_ERR_IO};
}

}  // namespace kbv::sim::wire
