// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf endpoint: objects and connection (endpoint.hpp).
#include "kbv-perf/endpoint.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <array>
#include <functional>

namespace kbv::perf {

namespace {

constexpr uint64_t kAlign = 4096;
constexpr std::chrono::seconds kLinkWait{10};
constexpr std::chrono::seconds kCtrlWait{60};  // without any control completion

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

uint32_t mtu_code_bytes(uint32_t code) {
  return code >= KBV_MTU_256 && code <= KBV_MTU_4096 ? 128u << code
                                                     : 0;  // IBTA 9.6.1: 256 << (code - 1)
}

uint32_t mtu_bytes_code(uint32_t bytes) {
  for (uint32_t c = KBV_MTU_256; c <= KBV_MTU_4096; ++c) {
    if (mtu_code_bytes(c) == bytes) return c;
  }
  return 0;
}

std::string status_text(Status s) {
  return fmt::format("{} ({})", kbv_status_name(s.code()), kbv_status_message(s.code()));
}

// Submits submit(i, {eq, i + 1}) for i in [0, n), at most kCtrlWindow in
// flight on eq, and waits for every completion. A submit that completes at
// once (KBV_SUCCESS) counts as done. The first error (at submission or in
// an event) ends it; *failed is the index it concerns.
Status pipeline(Eq& eq, uint32_t n, const std::function<Status(uint32_t, Async)>& submit,
                uint32_t* failed) {
  uint32_t next = 0, done = 0, in_flight = 0;
  std::array<kbv_event_t, 64> ev{};
  auto deadline = std::chrono::steady_clock::now() + kCtrlWait;
  while (done < n) {
    while (in_flight < kCtrlWindow && next < n) {
      Status s = submit(next, Async{eq.handle(), uint64_t{next} + 1});
      if (s.code() == KBV_PENDING) {
        ++in_flight;
      } else if (s.is_ok()) {
        ++done;
      } else {
        *failed = next;
        return s;
      }
      ++next;
    }
    auto k = eq.poll(ev);
    if (!k) return k.status();
    for (uint32_t i = 0; i < *k; ++i) {
      if (ev[i].type != KBV_EVENT_REQUEST || ev[i].user_data == 0) continue;  // async event
      --in_flight;
      ++done;
      if (ev[i].status != KBV_SUCCESS) {
        *failed = static_cast<uint32_t>(ev[i].user_data - 1);
        return static_cast<kbv_status_t>(ev[i].status);
      }
    }
    if (*k > 0) {
      deadline = std::chrono::steady_clock::now() + kCtrlWait;
    } else if (std::chrono::steady_clock::now() > deadline) {
      *failed = next;
      return KBV_ERR_TIMEOUT;
    } else {
      std::this_thread::yield();
    }
  }
  return Status::ok();
}

}  // namespace

void Endpoint::FreeDeleter::operator()(uint8_t* p) const { std::free(p); }

Endpoint::~Endpoint() = default;

uint32_t Endpoint::mtu_bytes() const { return mtu_code_bytes(path_mtu_); }

Result<std::unique_ptr<Endpoint>> Endpoint::create(const std::string& uri, const TestParams& params,
                                                   const EndpointConfig& cfg, unsigned side,
                                                   std::string& why) {
  std::unique_ptr<Endpoint> e(new Endpoint());
  e->uri_ = uri;
  e->params_ = params;
  e->cfg_ = cfg;
  e->side_ = side;
  const auto failed = [&](std::string what, Status s) -> Status {
    why = fmt::format("{}: {}", what, status_text(s));
    return s;
  };
  auto dev = Device::open(uri);
  if (!dev) return failed(fmt::format("cannot open device {}", uri), dev.status());
  e->dev_ = std::move(*dev);
  auto attr = e->dev_.query();
  if (!attr) return failed(fmt::format("{}: query", uri), attr.status());
  // kbv-perf brings the HCA up itself; the port trains its link after
  // INIT_HCA: wait for it to become active.
  auto port = e->dev_.query_port(cfg.ib_port);
  const auto deadline = std::chrono::steady_clock::now() + kLinkWait;
  while (port && port->state != KBV_PORT_ACTIVE && std::chrono::steady_clock::now() < deadline) {
    (void)e->dev_.progress();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    port = e->dev_.query_port(cfg.ib_port);
  }
  if (!port) return failed(fmt::format("{}: port {}", uri, cfg.ib_port), port.status());
  if (port->state != KBV_PORT_ACTIVE) {
    return failed(fmt::format("{}: port {} is not active", uri, cfg.ib_port),
                  KBV_ERR_INVALID_STATE);
  }
  // -x names the GID; else the RoCEv2 GID (kbv-perf speaks RoCEv2), else the
  // first entry in use.
  const uint32_t gids = std::min<uint32_t>(port->gid_count, KBV_GID_TABLE_MAX);
  bool found = false;
  if (cfg.gid_index >= 0) {
    const auto i = static_cast<uint32_t>(cfg.gid_index);
    if (i >= gids || port->gids[i].type == 0) {
      return failed(fmt::format("{}: GID index {} is not in use (port {} has {} GIDs)", uri, i,
                                cfg.ib_port, gids),
                    KBV_ERR_NOT_FOUND);
    }
    e->gid_index_ = i;
    found = true;
  }
  for (uint32_t i = 0; !found && i < gids; ++i) {
    if (port->gids[i].type == KBV_GID_TYPE_ROCE_V2) {
      e->gid_index_ = i;
      found = true;
    }
  }
  for (uint32_t i = 0; !found && i < gids; ++i) {
    if (port->gids[i].type != 0) {
      e->gid_index_ = i;
      found = true;
    }
  }
  if (!found)
    return failed(fmt::format("{}: no GID on port {}", uri, cfg.ib_port), KBV_ERR_NOT_FOUND);
  e->gid_ = port->gids[e->gid_index_];
  e->active_mtu_ = port->active_mtu;
  if (params.mtu != 0) {
    // perftest: an MTU above the port's active MTU is refused.
    const uint32_t code = mtu_bytes_code(params.mtu);
    if (code == 0 || code > port->active_mtu) {
      return failed(fmt::format("{}: MTU {} above the port's active MTU {}", uri, params.mtu,
                                mtu_code_bytes(port->active_mtu)),
                    KBV_ERR_INVALID_ARGUMENT);
    }
    e->active_mtu_ = code;
  }
  e->path_mtu_ = e->active_mtu_;
  e->max_rd_atomic_ = std::clamp<uint32_t>(attr->max_qp_rd_atom, 1, 16);

  const uint32_t nq = params.num_qps;
  const uint32_t sq_depth = std::max<uint32_t>(params.tx_depth, 16);
  const bool sends = params.test == Test::kSend;
  e->rq_depth_ = sends ? (nq > kManyQps ? kRxDepthMany : kRxDepth) : 1;
  const uint32_t rq_depth = e->rq_depth_;
  if (nq > attr->max_qp) {
    return failed(fmt::format("{}: {} QPs above the device's {}", uri, nq, attr->max_qp),
                  KBV_ERR_LIMIT_EXCEEDED);
  }
  if (sq_depth > attr->max_qp_wr || rq_depth > attr->max_qp_wr) {
    return failed(fmt::format("{}: queue depth {} above the device's {}", uri,
                              std::max(sq_depth, rq_depth), attr->max_qp_wr),
                  KBV_ERR_LIMIT_EXCEEDED);
  }
  if (params.inline_size > attr->max_inline_data) {
    return failed(fmt::format("{}: inline size {} above the device's {}", uri, params.inline_size,
                              attr->max_inline_data),
                  KBV_ERR_INLINE_TOO_LARGE);
  }

  auto pd = e->dev_.alloc_pd();
  if (!pd) return failed(fmt::format("{}: alloc_pd", uri), pd.status());
  e->pd_ = std::move(*pd);
  // Send CQ: every WR of QP 0 signalled (latency), else one in cq_mod per
  // QP (bandwidth: at most sq_depth / cq_mod + 2 outstanding per QP).
  const uint32_t cq_mod = std::max<uint32_t>(std::min(params.cq_mod, sq_depth), 1);
  const uint64_t send_cqes = uint64_t{nq} * (sq_depth / cq_mod + 2) + sq_depth + 64;
  const uint64_t recv_cqes = uint64_t{nq} * rq_depth + 64;
  e->cq_depth_ =
      static_cast<uint32_t>(std::min<uint64_t>(std::max(send_cqes, recv_cqes), attr->max_cqe));
  auto scq = e->dev_.create_cq({.cqe = e->cq_depth_, .flags = 0, .event_eq = KBV_EQ_NONE});
  if (!scq) return failed(fmt::format("{}: send CQ of {}", uri, e->cq_depth_), scq.status());
  e->send_cq_ = std::move(*scq);
  auto rcq = e->dev_.create_cq({.cqe = e->cq_depth_, .flags = 0, .event_eq = KBV_EQ_NONE});
  if (!rcq) return failed(fmt::format("{}: receive CQ of {}", uri, e->cq_depth_), rcq.status());
  e->recv_cq_ = std::move(*rcq);

  // Buffer: two halves per QP, each big enough for the largest message plus
  // a UD GRH, page aligned.
  e->half_ = round_up(params.max_size() + kGrhBytes, kAlign);
  e->buf_size_ = e->half_ * 2 * nq;
  void* mem = std::aligned_alloc(kAlign, e->buf_size_);
  if (mem == nullptr) {
    return failed(fmt::format("{} bytes of buffer", e->buf_size_), KBV_ERR_NO_MEMORY);
  }
  std::memset(mem, 0, e->buf_size_);
  e->buf_.reset(static_cast<uint8_t*>(mem));
  uint32_t access = KBV_ACCESS_LOCAL_WRITE;
  if (params.connection == Connection::kRc) {
    access |= KBV_ACCESS_REMOTE_WRITE | KBV_ACCESS_REMOTE_READ | KBV_ACCESS_REMOTE_ATOMIC;
  } else if (params.connection == Connection::kUc) {
    access |= KBV_ACCESS_REMOTE_WRITE;
  }
  auto mr = e->pd_.reg_mr(mem, e->buf_size_, access);
  if (!mr) return failed(fmt::format("{}: reg_mr of {} bytes", uri, e->buf_size_), mr.status());
  e->mr_ = std::move(*mr);
  auto keys = e->mr_.keys();
  if (!keys) return failed(fmt::format("{}: MR keys", uri), keys.status());
  e->lkey_ = keys->lkey;
  e->rkey_ = keys->rkey;

  auto eq = Eq::create(2 * kCtrlWindow);
  if (!eq) return failed("event queue", eq.status());
  e->eq_ = std::move(*eq);
  std::random_device rd;
  std::mt19937 rng(rd());
  e->qps_.resize(nq);
  kbv_qp_init_attr_t ia{};
  ia.qp_type = params.connection == Connection::kRc   ? KBV_QPT_RC
               : params.connection == Connection::kUc ? KBV_QPT_UC
                                                      : KBV_QPT_UD;
  ia.sq_sig_all = 0;
  ia.send_cq = e->send_cq_.handle();
  ia.recv_cq = e->recv_cq_.handle();
  ia.cap.max_send_wr = sq_depth;
  ia.cap.max_recv_wr = rq_depth;
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  ia.cap.max_inline_data = params.inline_size;
  ia.event_eq = e->eq_.handle();
  uint32_t bad = 0;
  Status s = pipeline(
      e->eq_, nq,
      [&](uint32_t q, Async a) -> Status {
        auto qp = e->pd_.create_qp(ia, a);
        if (!qp) return qp.status();
        e->qps_[q] = std::move(*qp);
        return KBV_PENDING;
      },
      &bad);
  if (!s) return failed(fmt::format("{}: creating QP {} of {}", uri, bad, nq), s);
  for (uint32_t q = 0; q < nq; ++q) {
    auto num = e->qps_[q].num();
    if (!num) return failed(fmt::format("{}: QP {} number", uri, q), num.status());
    e->qpns_.push_back(*num);
    e->psns_.push_back(rng() & 0xffffff);
  }
  // RESET -> INIT (IBTA 10.3.1 Table 91: port, P_Key index, RC/UC access,
  // UD Q_Key): needs nothing from the peer.
  const bool rc = params.connection == Connection::kRc;
  kbv_qp_attr_t a{};
  a.qp_state = KBV_QPS_INIT;
  a.port_num = static_cast<uint8_t>(cfg.ib_port);
  a.pkey_index = 0;
  uint32_t mask = KBV_QP_STATE | KBV_QP_PKEY_INDEX | KBV_QP_PORT;
  if (params.connection == Connection::kUd) {
    a.qkey = kQkey;
    mask |= KBV_QP_QKEY;
  } else {
    a.qp_access_flags =
        rc ? KBV_ACCESS_REMOTE_WRITE | KBV_ACCESS_REMOTE_READ | KBV_ACCESS_REMOTE_ATOMIC
           : KBV_ACCESS_REMOTE_WRITE;
    mask |= KBV_QP_ACCESS_FLAGS;
  }
  s = pipeline(
      e->eq_, nq, [&](uint32_t q, Async as) { return e->qps_[q].modify(a, mask, as); }, &bad);
  if (!s) return failed(fmt::format("{}: QP {} to INIT", uri, bad), s);
  e->peers_.resize(nq);
  return e;
}

QpInfo Endpoint::local_info(uint32_t q) const {
  QpInfo i;
  i.lid = 0;
  i.qpn = qpns_[q];
  i.psn = psns_[q];
  i.rkey = rkey_;
  i.vaddr = reinterpret_cast<uint64_t>(buf_.get()) + q * region_size();
  i.qkey = kQkey;
  i.mtu = active_mtu_;
  i.mac = gid_.mac;
  std::memcpy(i.gid.data(), gid_.gid, 16);
  return i;
}

Status Endpoint::connect_all(const std::vector<QpInfo>& peers, std::string& why) {
  const uint32_t nq = num_qps();
  if (peers.size() != nq) {
    why = fmt::format("the peer has {} QPs, this side {}", peers.size(), nq);
    return KBV_ERR_INVALID_ARGUMENT;
  }
  peers_ = peers;
  const bool rc = params_.connection == Connection::kRc;
  const bool ud = params_.connection == Connection::kUd;
  path_mtu_ = active_mtu_;
  for (const QpInfo& p : peers) {
    if (p.mtu != 0) path_mtu_ = std::min(path_mtu_, p.mtu);
  }
  const auto av = [&](uint32_t q) {
    kbv_ah_attr_t v{};
    std::memcpy(v.dgid, peers[q].gid.data(), 16);
    v.dmac = peers[q].mac;
    v.sgid_index = static_cast<uint8_t>(gid_index_);
    v.hop_limit = 64;
    v.traffic_class = params_.tos == kTosOff ? 0 : static_cast<uint8_t>(params_.tos);
    v.port_num = static_cast<uint8_t>(cfg_.ib_port);
    return v;
  };
  // INIT -> RTR (RC/UC: the path and the peer's QP; RC: responder
  // resources and the RNR timer), then RTR -> RTS, each a pass over every
  // QP with up to kCtrlWindow requests in flight. attrs stay alive until
  // the passes end.
  std::vector<kbv_qp_attr_t> attrs(nq);
  uint32_t mask = KBV_QP_STATE;
  if (!ud) {
    mask |= KBV_QP_AV | KBV_QP_PATH_MTU | KBV_QP_DEST_QPN | KBV_QP_RQ_PSN;
    if (rc) mask |= KBV_QP_MAX_DEST_RD_ATOMIC | KBV_QP_MIN_RNR_TIMER;
  }
  for (uint32_t q = 0; q < nq; ++q) {
    kbv_qp_attr_t& a = attrs[q];
    a = {};
    a.qp_state = KBV_QPS_RTR;
    if (!ud) {
      a.path_mtu = path_mtu_;
      a.ah_attr = av(q);
      a.dest_qp_num = peers[q].qpn;
      a.rq_psn = peers[q].psn;
    }
    if (rc) {
      a.max_dest_rd_atomic = static_cast<uint8_t>(max_rd_atomic_);
      a.min_rnr_timer = 12;  // 0.64 ms (IBTA 9.7.5.2.8), perftest's MIN_RNR_TIMER
    }
  }
  uint32_t bad = 0;
  Status s = pipeline(
      eq_, nq, [&](uint32_t q, Async as) { return qps_[q].modify(attrs[q], mask, as); }, &bad);
  if (!s) {
    why = fmt::format("QP {} (0x{:x}) to RTR: {}", bad, qpns_[bad], status_text(s));
    return s;
  }
  mask = KBV_QP_STATE | KBV_QP_SQ_PSN;
  if (rc) mask |= KBV_QP_TIMEOUT | KBV_QP_RETRY_CNT | KBV_QP_RNR_RETRY | KBV_QP_MAX_QP_RD_ATOMIC;
  for (uint32_t q = 0; q < nq; ++q) {
    kbv_qp_attr_t& a = attrs[q];
    a = {};
    a.qp_state = KBV_QPS_RTS;
    a.sq_psn = psns_[q];
    if (rc) {
      a.timeout = 14;  // 4.096 us << 14 = 67 ms (perftest DEF_QP_TIME)
      a.retry_cnt = 7;
      a.rnr_retry = 7;  // infinite: a receiver reposting late is not an error
      a.max_rd_atomic = static_cast<uint8_t>(max_rd_atomic_);
    }
  }
  s = pipeline(
      eq_, nq, [&](uint32_t q, Async as) { return qps_[q].modify(attrs[q], mask, as); }, &bad);
  if (!s) {
    why = fmt::format("QP {} (0x{:x}) to RTS: {}", bad, qpns_[bad], status_text(s));
    return s;
  }
  if (ud) {
    ahs_.resize(nq);
    for (uint32_t q = 0; q < nq; ++q) {
      auto ah = pd_.create_ah(av(q));  // nothing on the device (kbv.h): synchronous
      if (!ah) {
        why = fmt::format("address handle of QP {}: {}", q, status_text(ah.status()));
        return ah.status();
      }
      ahs_[q] = std::move(*ah);
    }
  }
  return Status::ok();
}

}  // namespace kbv::perf
