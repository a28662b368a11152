// SPDX-License-Identifier: BSD-3-Clause
//
// One side of a kbv-perf run: a device opened by URI, a PD, a send and a
// receive CQ, num_qps QPs (RC, UC or UD) and one registered buffer, connected
// to the peer's QPs from the QP information exchanged over TCP (exchange.hpp).
// Public API (kbv/kbv.hpp) only.
//
// QPs are created and moved RESET -> INIT -> RTR -> RTS as asynchronous
// requests on an event queue, up to kCtrlWindow in flight (kbv keeps 31
// firmware commands outstanding per device and queues the rest in software,
// kbv.h "Control calls"), not one at a time: 10,000 QPs connect in seconds.
//
// Buffer layout, identical on both sides (both know the largest message
// size from the test parameters): QP q owns region q of region_size() bytes,
//   [src(q), src(q) + max_size)        what this side sends / the peer READs
//   [dst(q), dst(q) + max_size + 40)   where the peer WRITEs / SENDs land
//                                      (UD: after the 40-byte GRH), READ
//                                      results and atomic counters
// The vaddr sent to the peer is the start of region q; the peer adds the
// offsets.
//
// Threading: one thread at a time (kbv.h fast-path rule: a QP's posts and its
// CQs' polls from the same thread).
#pragma once

#include <kbv/kbv.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "perf/exchange.hpp"
#include "perf/options.hpp"

namespace kbv::perf {

inline constexpr uint32_t kGrhBytes = 40;      // IBTA 8.3: the GRH a UD receive gets first
inline constexpr uint32_t kQkey = 0x11111111;  // perftest DEF_QKEY
// Where an atomic's reply (the old value) lands: dst(q) + this, apart from
// the counter at dst(q) the peer updates (both at once with -b).
inline constexpr uint32_t kAtomicReplyOffset = 64;
inline constexpr uint32_t kRxDepth = 128;     // receives kept posted per QP (send tests)
inline constexpr uint32_t kRxDepthMany = 16;  // ... when more than kManyQps QPs
inline constexpr uint32_t kManyQps = 64;
inline constexpr uint32_t kCtrlWindow = 256;  // control requests in flight at once

// This side's choices that are not test parameters (options.hpp).
struct EndpointConfig {
  uint32_t ib_port = 1;  // -i
  int gid_index = -1;    // -x; -1: the first RoCE v2 GID
};

class Endpoint {
 public:
  // Opens uri and creates every object for params, the QPs moved to INIT.
  // side: 0 client, 1 server (picks the data pattern seeds). On an error,
  // why says what failed (one line).
  static Result<std::unique_ptr<Endpoint>> create(const std::string& uri, const TestParams& params,
                                                  const EndpointConfig& cfg, unsigned side,
                                                  std::string& why);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  const std::string& uri() const { return uri_; }
  const TestParams& params() const { return params_; }
  unsigned side() const { return side_; }
  uint32_t num_qps() const { return static_cast<uint32_t>(qps_.size()); }
  uint32_t mtu_bytes() const;  // the path MTU in bytes (after connect: the lower of both)

  QpInfo local_info(uint32_t q) const;
  // INIT -> RTR -> RTS towards the peer's QPs (UD: also the AHs); peers[q]
  // is QP q's peer. why says which QP failed.
  Status connect_all(const std::vector<QpInfo>& peers, std::string& why);
  const QpInfo& peer(uint32_t q) const { return peers_[q]; }

  // Buffer addresses (this side) and the peer's, per the layout above.
  uint8_t* src(uint32_t q) { return base() + q * region_size(); }
  uint8_t* dst(uint32_t q) { return src(q) + half_size(); }
  uint64_t peer_src(uint32_t q) const { return peers_[q].vaddr; }
  uint64_t peer_dst(uint32_t q) const { return peers_[q].vaddr + half_size(); }
  uint32_t lkey() const { return lkey_; }

  Qp& qp(uint32_t q) { return qps_[q]; }
  uint32_t qpn(uint32_t q) const { return qpns_[q]; }
  Cq& send_cq() { return send_cq_; }
  Cq& recv_cq() { return recv_cq_; }
  kbv_ah_t ah(uint32_t q) const { return ahs_.empty() ? KBV_HANDLE_NONE : ahs_[q].handle(); }
  Device& device() { return dev_; }
  uint32_t cq_depth() const { return cq_depth_; }
  uint32_t ib_port() const { return cfg_.ib_port; }
  uint32_t gid_index() const { return gid_index_; }
  uint32_t max_rd_atomic() const { return max_rd_atomic_; }
  uint32_t rq_depth() const { return rq_depth_; }

 private:
  Endpoint() = default;
  uint8_t* base() { return buf_.get(); }
  uint64_t half_size() const { return half_; }
  uint64_t region_size() const { return 2 * half_; }

  struct FreeDeleter {
    void operator()(uint8_t* p) const;
  };

  std::string uri_;
  TestParams params_;
  EndpointConfig cfg_;
  unsigned side_ = 0;
  uint32_t rq_depth_ = 1;
  Device dev_;
  Eq eq_;  // control requests (creation, connection); QP async events
  Pd pd_;
  Cq send_cq_, recv_cq_;
  std::vector<Qp> qps_;
  std::vector<uint32_t> qpns_;
  std::vector<uint32_t> psns_;
  std::vector<Ah> ahs_;
  std::vector<QpInfo> peers_;
  std::unique_ptr<uint8_t, FreeDeleter> buf_;
  uint64_t half_ = 0;
  uint64_t buf_size_ = 0;
  Mr mr_;
  uint32_t lkey_ = 0, rkey_ = 0;
  uint32_t gid_index_ = 0;
  kbv_gid_entry_t gid_{};
  uint32_t active_mtu_ = KBV_MTU_1024;
  uint32_t path_mtu_ = KBV_MTU_1024;
  uint32_t max_rd_atomic_ = 1;
  uint32_t cq_depth_ = 0;
};

}  // namespace kbv::perf
