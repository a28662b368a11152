// SPDX-License-Identifier: BSD-3-Clause
//
// The *_str functions and rate conversions of kbv's libibverbs. The strings
// and tables are rdma-core 44's (libibverbs/enum_strs.c, verbs.c), so
// programs print what they print with rdma-core: an out-of-range value is
// "unknown", an unknown rate -1 / IBV_RATE_MAX.
#include <infiniband/verbs.h>

#include <cstddef>
#include <iterator>

namespace {

template <size_t N>
const char* pick(const char* const (&names)[N], long v) {
  return v >= 0 && static_cast<size_t>(v) < N && names[v] ? names[v] : "unknown";
}

constexpr const char* kNodeType[] = {
    nullptr,  // 0 is not a node type
    "InfiniBand channel adapter",
    "InfiniBand switch",
    "InfiniBand router",
    "iWARP NIC",
    "usNIC",
    "usNIC UDP",
    "unspecified",
};
static_assert(IBV_NODE_CA == 1 && IBV_NODE_UNSPECIFIED == 7);

constexpr const char* kPortState[] = {
    "no state change (NOP)", "down", "init", "armed", "active", "active defer",
};
static_assert(IBV_PORT_ACTIVE_DEFER == 5);

constexpr const char* kEventType[] = {
    "CQ error",
    "local work queue catastrophic error",
    "invalid request local work queue error",
    "local access violation work queue error",
    "communication established",
    "send queue drained",
    "path migrated",
    "path migration request error",
    "local catastrophic error",
    "port active",
    "port error",
    "LID change",
    "P_Key change",
    "SM change",
    "SRQ catastrophic error",
    "SRQ limit reached",
    "last WQE reached",
    "client reregistration",
    "GID table change",
    "WQ fatal",
};
static_assert(std::size(kEventType) == IBV_EVENT_WQ_FATAL + 1);

constexpr const char* kWcStatus[] = {
    "success",
    "local length error",
    "local QP operation error",
    "local EE context operation error",
    "local protection error",
    "Work Request Flushed Error",
    "memory management operation error",
    "bad response error",
    "local access error",
    "remote invalid request error",
    "remote access error",
    "remote operation error",
    "transport retry counter exceeded",
    "RNR retry counter exceeded",
    "local RDD violation error",
    "remote invalid RD request",
    "aborted error",
    "invalid EE context number",
    "invalid EE context state",
    "fatal error",
    "response timeout error",
    "general error",
    "TM error",
    "TM software rendezvous",
};
static_assert(std::size(kWcStatus) == IBV_WC_TM_RNDV_INCOMPLETE + 1);

struct RateRow {
  ibv_rate rate;
  int mult;  // 2.5 Gb/s multiples; 0: none (ibv_rate_to_mult gives -1)
  int mbps;
};
// rdma-core verbs.c: ibv_rate_to_mult / mult_to_ibv_rate / ibv_rate_to_mbps
// / mbps_to_ibv_rate.
constexpr RateRow kRates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},       {IBV_RATE_5_GBPS, 2, 5000},
    {IBV_RATE_10_GBPS, 4, 10000},       {IBV_RATE_20_GBPS, 8, 20000},
    {IBV_RATE_30_GBPS, 12, 30000},      {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},      {IBV_RATE_80_GBPS, 32, 80000},
    {IBV_RATE_120_GBPS, 48, 120000},    {IBV_RATE_14_GBPS, 0, 14062},
    {IBV_RATE_56_GBPS, 0, 56250},       {IBV_RATE_112_GBPS, 0, 112500},
    {IBV_RATE_168_GBPS, 0, 168750},     {IBV_RATE_25_GBPS, 0, 25781},
    {IBV_RATE_100_GBPS, 0, 103125},     {IBV_RATE_200_GBPS, 0, 206250},
    {IBV_RATE_300_GBPS, 0, 309375},     {IBV_RATE_28_GBPS, 11, 28125},
    {IBV_RATE_50_GBPS, 20, 53125},      {IBV_RATE_400_GBPS, 160, 425000},
    {IBV_RATE_600_GBPS, 240, 637500},   {IBV_RATE_800_GBPS, 320, 850000},
    {IBV_RATE_1200_GBPS, 480, 1275000},
};

}  // namespace

extern "C" {

const char* ibv_node_type_str(ibv_node_type node_type) { return pick(kNodeType, node_type); }
const char* ibv_port_state_str(ibv_port_state port_state) { return pick(kPortState, port_state); }
const char* ibv_event_type_str(ibv_event_type event) { return pick(kEventType, event); }
const char* ibv_wc_status_str(ibv_wc_status status) { return pick(kWcStatus, status); }

int ibv_rate_to_mult(ibv_rate rate) {
  for (const RateRow& r : kRates)
    if (r.rate == rate && r.mult) return r.mult;
  return -1;
}

ibv_rate mult_to_ibv_rate(int mult) {
  for (const RateRow& r : kRates)
    if (r.mult && r.mult == mult) return r.rate;
  return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(ibv_rate rate) {
  for (const RateRow& r : kRates)
    if (r.rate == rate) return r.mbps;
  return -1;
}

ibv_rate mbps_to_ibv_rate(int mbps) {
  for (const RateRow& r : kRates)
    if (r.mbps == mbps) return r.rate;
  return IBV_RATE_MAX;
}

}  // extern "C"
