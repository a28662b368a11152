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

namespace kbv::perf {

namespace {

constexpr uint64_t kAlign = 4096;
constexpr std::chrono::seconds kLinkWait{10};

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

uint32_t mtu_code_bytes(uint32_t code) {
  return code >= KBV_MTU_256 && code <= KBV_MTU_4096 ? 128u << code
                                                     : 0;  // IBTA 9.6.1: 256 << (code - 1)
}

}  // namespace

void Endpoint::FreeDeleter::operator()(uint8_t* p) const { std::free(p); }

Endpoint::~Endpoint() = default;

uint32_t Endpoint::mtu_bytes() const { return mtu_code_bytes(path_mtu_); }

Result<std::unique_ptr<Endpoint>> Endpoint::create(const std::string& uri, const TestParams& params,
                                                   unsigned side) {
  std::unique_ptr<Endpoint> e(new Endpoint());
  e->uri_ = uri;
  e->params_ = params;
  e->side_ = side;
  auto dev = Device::open(uri);
  if (!dev) return dev.status();
  e->dev_ = std::move(*dev);
  auto attr = e->dev_.query();
  if (!attr) return attr.status();
  // kbv-perf brings the HCA up itself; the port trains its link after
  // INIT_HCA: wait for it to become active.
  auto port = e->dev_.query_port(1);
  const auto deadline = std::chrono::steady_clock::now() + kLinkWait;
  while (port && port->state != KBV_PORT_ACTIVE && std::chrono::steady_clock::now() < deadline) {
    (void)e->dev_.progress();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    port = e->dev_.query_port(1);
  }
  if (!port) return port.status();
  if (port->state != KBV_PORT_ACTIVE) return KBV_ERR_INVALID_STATE;
  // The RoCEv2 GID (kbv-perf speaks RoCEv2), else the first entry in use.
  bool found = false;
  for (uint32_t i = 0; i < port->gid_count && i < KBV_GID_TABLE_MAX; ++i) {
    if (port->gids[i].type == KBV_GID_TYPE_ROCE_V2) {
      e->gid_index_ = i;
      found = true;
      break;
    }
  }
  for (uint32_t i = 0; !found && i < port->gid_count && i < KBV_GID_TABLE_MAX; ++i) {
    if (port->gids[i].type != 0) {
      e->gid_index_ = i;
      found = true;
    }
  }
  if (!found) return KBV_ERR_NOT_FOUND;
  e->gid_ = port->gids[e->gid_index_];
  e->active_mtu_ = port->active_mtu;
  e->path_mtu_ = port->active_mtu;
  e->max_rd_atomic_ = std::clamp<uint32_t>(attr->max_qp_rd_atom, 1, 16);

  const uint32_t nq = params.num_qps;
  const uint32_t sq_depth = std::max<uint32_t>(params.tx_depth, 16);
  const bool sends = params.test == Test::kSend;
  const uint32_t rq_depth = sends ? kRxDepth : 1;
  if (sq_depth > attr->max_qp_wr || rq_depth > attr->max_qp_wr) return KBV_ERR_LIMIT_EXCEEDED;
  if (params.inline_size > attr->max_inline_data) return KBV_ERR_INLINE_TOO_LARGE;

  auto pd = e->dev_.alloc_pd();
  if (!pd) return pd.status();
  e->pd_ = std::move(*pd);
  e->cq_depth_ = nq * std::max(sq_depth, rq_depth) * 2;
  auto scq = e->dev_.create_cq({.cqe = e->cq_depth_, .reserved = 0, .event_eq = KBV_EQ_NONE});
  if (!scq) return scq.status();
  e->send_cq_ = std::move(*scq);
  auto rcq = e->dev_.create_cq({.cqe = e->cq_depth_, .reserved = 0, .event_eq = KBV_EQ_NONE});
  if (!rcq) return rcq.status();
  e->recv_cq_ = std::move(*rcq);

  // Buffer: two halves per QP, each big enough for the largest message plus
  // a UD GRH, page aligned.
  e->half_ = round_up(params.max_size() + kGrhBytes, kAlign);
  e->buf_size_ = e->half_ * 2 * nq;
  void* mem = std::aligned_alloc(kAlign, e->buf_size_);
  if (mem == nullptr) return KBV_ERR_NO_MEMORY;
  std::memset(mem, 0, e->buf_size_);
  e->buf_.reset(static_cast<uint8_t*>(mem));
  uint32_t access = KBV_ACCESS_LOCAL_WRITE;
  if (params.connection == Connection::kRc) {
    access |= KBV_ACCESS_REMOTE_WRITE | KBV_ACCESS_REMOTE_READ | KBV_ACCESS_REMOTE_ATOMIC;
  }
  auto mr = e->pd_.reg_mr(mem, e->buf_size_, access);
  if (!mr) return mr.status();
  e->mr_ = std::move(*mr);
  auto keys = e->mr_.keys();
  if (!keys) return keys.status();
  e->lkey_ = keys->lkey;
  e->rkey_ = keys->rkey;

  std::random_device rd;
  std::mt19937 rng(rd());
  for (uint32_t q = 0; q < nq; ++q) {
    kbv_qp_init_attr_t ia{};
    ia.qp_type = params.connection == Connection::kRc ? KBV_QPT_RC : KBV_QPT_UD;
    ia.sq_sig_all = 0;
    ia.send_cq = e->send_cq_.handle();
    ia.recv_cq = e->recv_cq_.handle();
    ia.cap.max_send_wr = sq_depth;
    ia.cap.max_recv_wr = rq_depth;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    ia.cap.max_inline_data = params.inline_size;
    auto qp = e->pd_.create_qp(ia);
    if (!qp) return qp.status();
    auto num = qp->num();
    if (!num) return num.status();
    e->qpns_.push_back(*num);
    e->psns_.push_back(rng() & 0xffffff);
    e->qps_.push_back(std::move(*qp));
  }
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

Status Endpoint::connect(uint32_t q, const QpInfo& peer) {
  peers_[q] = peer;
  path_mtu_ = std::min(active_mtu_, peer.mtu == 0 ? active_mtu_ : peer.mtu);
  const bool rc = params_.connection == Connection::kRc;
  Qp& qp = qps_[q];

  // RESET -> INIT (IBTA 10.3.1 Table 91: port, P_Key index, RC access / UD Q_Key).
  kbv_qp_attr_t a{};
  a.qp_state = KBV_QPS_INIT;
  a.port_num = 1;
  a.pkey_index = 0;
  uint32_t mask = KBV_QP_STATE | KBV_QP_PKEY_INDEX | KBV_QP_PORT;
  if (rc) {
    a.qp_access_flags = KBV_ACCESS_REMOTE_WRITE | KBV_ACCESS_REMOTE_READ | KBV_ACCESS_REMOTE_ATOMIC;
    mask |= KBV_QP_ACCESS_FLAGS;
  } else {
    a.qkey = kQkey;
    mask |= KBV_QP_QKEY;
  }
  if (Status s = qp.modify(a, mask); !s) return s;

  kbv_ah_attr_t av{};
  std::memcpy(av.dgid, peer.gid.data(), 16);
  av.dmac = peer.mac;
  av.sgid_index = static_cast<uint8_t>(gid_index_);
  av.hop_limit = 64;
  av.port_num = 1;

  // INIT -> RTR.
  a = {};
  a.qp_state = KBV_QPS_RTR;
  mask = KBV_QP_STATE;
  if (rc) {
    a.path_mtu = path_mtu_;
    a.ah_attr = av;
    a.dest_qp_num = peer.qpn;
    a.rq_psn = peer.psn;
    a.max_dest_rd_atomic = static_cast<uint8_t>(max_rd_atomic_);
    a.min_rnr_timer = 12;  // 0.64 ms (IBTA 9.7.5.2.8), perftest's MIN_RNR_TIMER
    mask |= KBV_QP_AV | KBV_QP_PATH_MTU | KBV_QP_DEST_QPN | KBV_QP_RQ_PSN |
            KBV_QP_MAX_DEST_RD_ATOMIC | KBV_QP_MIN_RNR_TIMER;
  }
  if (Status s = qp.modify(a, mask); !s) return s;

  // RTR -> RTS.
  a = {};
  a.qp_state = KBV_QPS_RTS;
  a.sq_psn = psns_[q];
  mask = KBV_QP_STATE | KBV_QP_SQ_PSN;
  if (rc) {
    a.timeout = 14;  // 4.096 us << 14 = 67 ms (perftest DEF_QP_TIME)
    a.retry_cnt = 7;
    a.rnr_retry = 7;  // infinite: a receiver reposting late is not an error
    a.max_rd_atomic = static_cast<uint8_t>(max_rd_atomic_);
    mask |= KBV_QP_TIMEOUT | KBV_QP_RETRY_CNT | KBV_QP_RNR_RETRY | KBV_QP_MAX_QP_RD_ATOMIC;
  }
  if (Status s = qp.modify(a, mask); !s) return s;

  if (!rc) {
    if (ahs_.size() < qps_.size()) ahs_.resize(qps_.size());
    auto ah = pd_.create_ah(av);
    if (!ah) return ah.status();
    ahs_[q] = std::move(*ah);
  }
  return Status::ok();
}

}  // namespace kbv::perf
