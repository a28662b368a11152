// SPDX-License-Identifier: BSD-3-Clause
//
// Data-path test harness: kbv's mlx5 driver (src/hca: Hca, Mr, Cq, Qp, Srq,
// SendQueue / RecvQueue / SrqQueue / CqPoller) on model HCAs (src/sim),
// through the production platform path. Used by the data-path e2e tests in
// one process and by the peer program of the two-process tests
// (dp_peer.cpp), so it does not depend on GoogleTest: every call returns a
// Status / Result.
//
// A DpNode is one model HCA opened and brought up by the driver, with one
// PD and its port's RoCE address (GID index 0, ::ffff:127.0.0.N, and MAC).
// A DpQp is a QP with its send and receive rings and the pollers of its CQs;
// connect_rc / connect_uc take two DpQps (on the same or different nodes)
// to RTS toward each other; to_rts_ud brings a UD QP up.
//
// Threading: one thread drives a DpNode (the driver is single-threaded);
// the model's engine runs on its own threads.
#pragma once

#include <kbv/status.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hca/cmd/qp.hpp"
#include "hca/dp/cq.hpp"
#include "hca/dp/rq.hpp"
#include "hca/dp/sq.hpp"
#include "hca/hca.hpp"
#include "hca/io/platform_io.hpp"
#include "hca/objects/ah.hpp"
#include "hca/objects/cq.hpp"
#include "hca/objects/mr.hpp"
#include "hca/objects/qp.hpp"
#include "hca/objects/srq.hpp"
#include "platform/device.hpp"
#include "sim/model.hpp"

namespace kbv::e2e {

inline constexpr uint64_t kSecond = 1'000'000'000ull;

struct DpNode {
  std::unique_ptr<sim::Model> model;
  std::unique_ptr<platform::DeviceHandle> dev;
  std::unique_ptr<hca::PlatformDeviceIo> io;
  std::unique_ptr<hca::Hca> hca;
  uint32_t pd = 0;
  hca::Gid gid{};
  uint64_t mac = 0;
  // Async events and completion EQEs the driver delivered (in order).
  std::vector<hca::HcaEvent> events;
  std::vector<uint32_t> comp_events;  // CQNs

  // Drives the driver until done() or the timeout (KBV_ERR_TIMEOUT).
  Status poll_until(const std::function<bool()>& done, uint64_t timeout_ns = 10 * kSecond);
  // Runs an asynchronous driver call (submit(callback)) to completion.
  template <class T, class F>
  Result<T> sync(F submit) {
    std::optional<Result<T>> out;
    Status s = submit([&](Result<T> r) { out.emplace(std::move(r)); });
    if (s != KBV_PENDING) return s;
    Status w = poll_until([&] { return out.has_value(); });
    if (!w.is_ok()) return w;
    return std::move(*out);
  }
  template <class F>
  Status sync_status(F submit) {
    std::optional<Status> out;
    Status s = submit([&](Status r) { out = r; });
    if (s != KBV_PENDING) return s;
    Status w = poll_until([&] { return out.has_value(); });
    if (!w.is_ok()) return w;
    return *out;
  }
};

// Opens a model named `name` (created with cfg) and brings it up with the
// driver. Events and completion EQEs are recorded in the node.
Result<std::unique_ptr<DpNode>> open_node(const std::string& name, sim::ModelConfig cfg = {});
// Deallocates the PD and tears the driver down; the errors met.
Status close_node(DpNode& n);

// Application memory registered with an MTT key.
struct DpBuffer {
  std::byte* data = nullptr;
  size_t size = 0;
  std::unique_ptr<hca::Mr> mr;
  DpBuffer() = default;
  DpBuffer(DpBuffer&&) = default;
  DpBuffer& operator=(DpBuffer&&) = default;
  ~DpBuffer();
  uint64_t addr(size_t off = 0) const { return reinterpret_cast<uintptr_t>(data) + off; }
  uint32_t lkey() const { return mr->lkey(); }
  uint32_t rkey() const { return mr->rkey(); }
  hca::Sge sge(size_t off, uint32_t len) const { return {addr(off), len, lkey()}; }
};
// Page-aligned, zeroed, registered with `access` (hca::mr_access bits).
Result<std::unique_ptr<DpBuffer>> reg_buffer(DpNode& n, size_t bytes, uint32_t access);
Status dereg_buffer(DpNode& n, DpBuffer& b);

struct DpCq {
  std::unique_ptr<hca::Cq> cq;
  std::optional<hca::CqPoller> poller;
};
Result<std::unique_ptr<DpCq>> make_cq(DpNode& n, uint32_t cqe = 256);

struct DpSrq {
  std::unique_ptr<hca::Srq> srq;
  std::optional<hca::SrqQueue> rq;
};
Result<std::unique_ptr<DpSrq>> make_srq(DpNode& n, uint32_t max_wr = 64, uint32_t max_sge = 2);

struct QpOptions {
  uint32_t st = prm::qpc_st::kRc;
  uint32_t max_send_wr = 64;
  uint32_t max_recv_wr = 64;
  uint32_t max_send_sge = 4;
  uint32_t max_recv_sge = 4;
  uint32_t max_inline = 64;
  bool sig_all = false;
};

struct DpQp {
  DpNode* node = nullptr;
  hca::QpConfig cfg;
  std::unique_ptr<hca::Qp> qp;
  std::optional<hca::SendQueue> sq;
  std::optional<hca::RecvQueue> rq;  // empty on an SRQ
  DpCq* send_cq = nullptr;
  DpCq* recv_cq = nullptr;
  uint32_t qpn() const { return qp->qpn(); }
};
// A QP with its rings, attached to the pollers of send_cq / recv_cq (and
// the SRQ's queue when srq is given).
Result<std::unique_ptr<DpQp>> make_qp(DpNode& n, DpCq& send_cq, DpCq& recv_cq,
                                      const QpOptions& o = {}, DpSrq* srq = nullptr);
Status destroy_qp(DpQp& q);

// What one side of a connection needs to know about the other.
struct PeerInfo {
  hca::Gid gid{};
  uint64_t mac = 0;
  uint32_t qpn = 0;
  uint32_t psn = 0;  // the peer's first send PSN
};
PeerInfo peer_info(const DpQp& q, uint32_t send_psn);

struct ConnectOptions {
  uint32_t mtu = prm::qpc_mtu::k1kBytes;
  uint32_t ack_timeout = 10;  // 4.096 us << 10 = 4.2 ms
  uint32_t retry_count = 7;
  uint32_t rnr_retry = 7;    // 7 = infinite
  uint32_t min_rnr_nak = 1;  // IBTA table 45: 0.01 ms
  uint32_t log_sra_max = 3;
  uint32_t log_rra_max = 3;
  bool rre = true, rwe = true, rae = true;
};
// RST -> INIT -> RTR -> RTS toward `peer` (RC or UC: the QP's type).
Status connect_qp(DpQp& q, const PeerInfo& peer, uint32_t send_psn, const ConnectOptions& o = {});
// Both directions of a pair, PSNs 0x100 / 0x200 apart per side.
Status connect_pair(DpQp& a, DpQp& b, const ConnectOptions& o = {});
// UD: RST -> INIT (q_key) -> RTR -> RTS.
Status to_rts_ud(DpQp& q, uint32_t q_key, uint32_t send_psn = 0);
// The address handle for UD sends toward `peer`'s port.
Result<hca::Ah> make_ah(DpNode& n, const DpNode& peer, uint32_t remote_qpn, uint32_t q_key);

// Polls cq until `count` completions arrived or the timeout passed; returns
// what arrived (fewer on timeout).
std::vector<hca::WorkCompletion> poll_cq(
    DpCq& cq, size_t count, std::chrono::milliseconds timeout = std::chrono::seconds(10));
// Polls for `quiet` and returns whatever arrived (to check that nothing does).
std::vector<hca::WorkCompletion> drain_cq(DpCq& cq, std::chrono::milliseconds quiet);

// Deterministic test bytes: byte i of pattern `seed`.
inline std::byte pattern_byte(uint32_t seed, size_t i) {
  uint32_t x = seed * 2654435761u + static_cast<uint32_t>(i) * 40503u;
  x ^= x >> 13;
  return static_cast<std::byte>(x & 0xFF);
}
void fill_pattern(std::byte* p, size_t n, uint32_t seed);
// Index of the first byte that differs from the pattern, or n.
size_t check_pattern(const std::byte* p, size_t n, uint32_t seed);

}  // namespace kbv::e2e
