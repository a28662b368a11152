// SPDX-License-Identifier: BSD-3-Clause
// HCA resolution by node GUID (kbv.h "Devices": "guid:0x<hex>"): the seeds'
// way of naming a CA (docs/NTSTATUS.md source 004, "HCA resolution by CA
// GUID"; IBAL's ib_open_ca and ci_interface_t name a CA by its ca_guid,
// docs/NTSTATUS.md source 002). The node GUID is the HCA's
// (QUERY_HCA_VPORT_CONTEXT / QUERY_NIC_VPORT_CONTEXT node_guid), known only
// once a device is brought up, so resolution asks the devices:
//   1. the devices open in this process (kbv_device_query): a match is
//      KBV_ERR_BUSY, as opening its URI would be (a device opens once);
//   2. every device of kbv_get_device_list not open here, in list order:
//      opened synchronously, queried, closed. The matching one's transport
//      target (a model HCA) is held across its probe close, so the device
//      the caller then opens by URI is the one that was probed.
#include <kbv/kbv.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "common/log.hpp"
#include "platform/transport.hpp"
#include "verbs/objects.hpp"

namespace kbv::verbs {
namespace {
constexpr const char* kLog = "verbs/guid";
constexpr std::string_view kScheme = "guid:";

// "0x" + 1..16 hex digits, not 0.
bool parse_guid(std::string_view s, uint64_t& out) {
  if (s.size() < 3 || s.size() > 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return false;
  uint64_t v = 0;
  for (char c : s.substr(2)) {
    uint64_t d;
    if (c >= '0' && c <= '9')
      d = static_cast<uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      d = static_cast<uint64_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      d = static_cast<uint64_t>(c - 'A' + 10);
    else
      return false;
    v = v << 4 | d;
  }
  if (v == 0) return false;
  out = v;
  return true;
}

// The node GUID of an open device (0 when it cannot be queried).
uint64_t node_guid_of(kbv_device_t dev) {
  kbv_device_attr_t a{};
  if (kbv_device_query(dev, &a, KBV_EQ_NONE, 0) != KBV_SUCCESS) return 0;
  return a.node_guid;
}
}  // namespace

bool is_guid_uri(std::string_view uri) { return uri.starts_with(kScheme); }

Result<std::string> resolve_guid_uri(std::string_view uri, uint64_t timeout_ns,
                                     std::shared_ptr<void>* hold) {
  uint64_t guid = 0;
  if (!parse_guid(uri.substr(kScheme.size()), guid)) return KBV_ERR_INVALID_ARGUMENT;
  // 1. Devices open here.
  for (const auto& d : devices_snapshot()) {
    if (!d->ready() || d->close_marked.load()) continue;
    if (node_guid_of(d->handle()) == guid) {
      log::debug(kLog, "{}: {} is open already", uri, d->uri);
      return KBV_ERR_BUSY;
    }
  }
  // 2. The listed devices, probed one at a time.
  uint32_t n = 0;
  kbv_status_t st = kbv_get_device_list(nullptr, 0, &n);
  if (st != KBV_SUCCESS) return st;
  std::vector<kbv_device_desc_t> list(n);
  if (n) st = kbv_get_device_list(list.data(), n, &n);
  if (st != KBV_SUCCESS) return st;
  list.resize(std::min<size_t>(n, list.size()));
  for (const kbv_device_desc_t& desc : list) {
    const std::string_view u(desc.uri);
    const size_t colon = u.find(':');
    if (colon == std::string_view::npos) continue;
    auto t = platform::find_transport(u.substr(0, colon));
    if (!t) continue;
    auto target = (*t)->open(u.substr(colon + 1));  // holds a model while probed
    if (!target) continue;
    kbv_device_open_attr_t oa{};
    oa.timeout_ns = timeout_ns;
    kbv_device_t dev = 0;
    st = kbv_device_open(desc.uri, &oa, KBV_EQ_NONE, 0, &dev);
    if (st != KBV_SUCCESS) {
      // Open elsewhere (KBV_ERR_BUSY: step 1 saw it if it is ours) or unusable.
      log::debug(kLog, "{}: {} not probed: {}", uri, desc.uri, kbv_status_name(st));
      continue;
    }
    const uint64_t g = node_guid_of(dev);
    (void)kbv_device_close(dev, KBV_EQ_NONE, 0);
    if (g == guid) {
      log::debug(kLog, "{} is {}", uri, desc.uri);
      if (hold) *hold = std::move(target->backing);
      return std::string(u);
    }
  }
  return KBV_ERR_NOT_FOUND;
}

}  // namespace kbv::verbs
