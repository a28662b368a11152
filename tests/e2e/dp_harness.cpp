// SPDX-License-Identifier: BSD-3-Clause
//
// Data-path test harness (dp_harness.hpp).
#include "dp_harness.hpp"

#include <cstdlib>
#include <cstring>
#include <thread>

#include "hca/cmd/pd.hpp"
#include "hca/cmd/vport.hpp"

namespace kbv::e2e {

namespace {
using hca::cmd::QpTransition;
}  // namespace

Status DpNode::poll_until(const std::function<bool()>& done, uint64_t timeout_ns) {
  return hca->poll_until(done, timeout_ns);
}

Result<std::unique_ptr<DpNode>> open_node(const std::string& name, sim::ModelConfig cfg) {
  auto n = std::make_unique<DpNode>();
  auto m = sim::Model::create(name, std::move(cfg));
  if (!m) return m.status();
  n->model = std::move(*m);
  auto d = platform::DeviceHandle::open(sim::Model::sys(), n->model->bdf());
  if (!d) return d.status();
  n->dev = std::move(*d);
  n->io = std::make_unique<hca::PlatformDeviceIo>(*n->dev);
  n->hca = std::make_unique<hca::Hca>(*n->io);
  DpNode* raw = n.get();
  n->hca->set_event_handler([raw](const hca::HcaEvent& e) { raw->events.push_back(e); });
  n->hca->set_comp_handler([raw](uint32_t cqn) { raw->comp_events.push_back(cqn); });
  if (Status s = n->hca->open_sync(10 * kSecond); !s.is_ok()) return s;
  auto pd = n->sync<uint32_t>([&](auto cb) { return hca::cmd::alloc_pd(raw->hca->cmdq(), cb); });
  if (!pd) return pd.status();
  n->pd = *pd;
  auto ra = n->sync<hca::cmd::RoceAddress>(
      [&](auto cb) { return hca::cmd::query_roce_address(raw->hca->cmdq(), 1, 0, cb); });
  if (!ra) return ra.status();
  n->gid = ra->gid;
  n->mac = ra->source_mac;
  return n;
}

Status close_node(DpNode& n) {
  Status first;
  if (n.pd != 0) {
    first = n.sync_status([&](auto cb) { return hca::cmd::dealloc_pd(n.hca->cmdq(), n.pd, cb); });
    n.pd = 0;
  }
  Status s = n.hca->close_sync(10 * kSecond);
  return first.is_ok() ? s : first;
}

DpBuffer::~DpBuffer() {
  mr.reset();
  std::free(data);
}

Result<std::unique_ptr<DpBuffer>> reg_buffer(DpNode& n, size_t bytes, uint32_t access) {
  auto b = std::make_unique<DpBuffer>();
  const size_t rounded = (bytes + 4095) & ~size_t{4095};
  b->data = static_cast<std::byte*>(std::aligned_alloc(4096, rounded));
  if (b->data == nullptr) return Status{KBV_ERR_NO_MEMORY};
  std::memset(b->data, 0, rounded);
  b->size = bytes;
  auto mr = n.sync<std::unique_ptr<hca::Mr>>([&](auto cb) {
    return hca::Mr::create(*n.hca, n.dev->dma(), n.pd, b->data, bytes, access, cb);
  });
  if (!mr) return mr.status();
  b->mr = std::move(*mr);
  return b;
}

Status dereg_buffer(DpNode& n, DpBuffer& b) {
  if (!b.mr) return Status{};
  Status s = n.sync_status([&](auto cb) { return b.mr->destroy(cb); });
  b.mr.reset();
  return s;
}

Result<std::unique_ptr<DpCq>> make_cq(DpNode& n, uint32_t cqe) {
  auto c = std::make_unique<DpCq>();
  hca::CqConfig cfg;
  cfg.cqe = cqe;
  auto cq =
      n.sync<std::unique_ptr<hca::Cq>>([&](auto cb) { return hca::Cq::create(*n.hca, cfg, cb); });
  if (!cq) return cq.status();
  c->cq = std::move(*cq);
  auto p = hca::CqPoller::for_cq(*c->cq);
  if (!p) return p.status();
  c->poller.emplace(std::move(*p));
  return c;
}

Result<std::unique_ptr<DpSrq>> make_srq(DpNode& n, uint32_t max_wr, uint32_t max_sge) {
  auto s = std::make_unique<DpSrq>();
  hca::SrqConfig cfg;
  cfg.pd = n.pd;
  cfg.max_wr = max_wr;
  cfg.max_sge = max_sge;
  auto srq =
      n.sync<std::unique_ptr<hca::Srq>>([&](auto cb) { return hca::Srq::create(*n.hca, cfg, cb); });
  if (!srq) return srq.status();
  s->srq = std::move(*srq);
  auto q = hca::SrqQueue::for_srq(*s->srq, max_sge);
  if (!q) return q.status();
  s->rq.emplace(std::move(*q));
  return s;
}

Result<std::unique_ptr<DpQp>> make_qp(DpNode& n, DpCq& send_cq, DpCq& recv_cq, const QpOptions& o,
                                      DpSrq* srq) {
  auto q = std::make_unique<DpQp>();
  q->node = &n;
  q->send_cq = &send_cq;
  q->recv_cq = &recv_cq;
  hca::QpConfig& c = q->cfg;
  c.st = o.st;
  c.pd = n.pd;
  c.send_cqn = send_cq.cq->cqn();
  c.recv_cqn = recv_cq.cq->cqn();
  if (srq != nullptr) c.srqn = srq->srq->srqn();
  c.max_send_wr = o.max_send_wr;
  c.max_recv_wr = o.max_recv_wr;
  c.max_send_sge = o.max_send_sge;
  c.max_recv_sge = o.max_recv_sge;
  c.max_inline_data = o.max_inline;
  auto qp =
      n.sync<std::unique_ptr<hca::Qp>>([&](auto cb) { return hca::Qp::create(*n.hca, c, cb); });
  if (!qp) return qp.status();
  q->qp = std::move(*qp);
  auto sq = hca::SendQueue::for_qp(*n.hca, *q->qp, c, 0, o.sig_all);
  if (!sq) return sq.status();
  q->sq.emplace(std::move(*sq));
  if (srq == nullptr) {
    auto rq = hca::RecvQueue::for_qp(*q->qp, o.max_recv_sge);
    if (!rq) return rq.status();
    q->rq.emplace(std::move(*rq));
  }
  hca::RecvQueue* rq = q->rq ? &*q->rq : nullptr;
  hca::SrqQueue* sr = srq != nullptr ? &*srq->rq : nullptr;
  if (&send_cq == &recv_cq) {
    if (Status s = send_cq.poller->attach(q->qpn(), &*q->sq, rq, sr); !s.is_ok()) return s;
  } else {
    if (Status s = send_cq.poller->attach(q->qpn(), &*q->sq, nullptr, nullptr); !s.is_ok())
      return s;
    if (Status s = recv_cq.poller->attach(q->qpn(), nullptr, rq, sr); !s.is_ok()) return s;
  }
  return q;
}

Status destroy_qp(DpQp& q) {
  (void)q.send_cq->poller->detach(q.qpn());
  if (q.recv_cq != q.send_cq) (void)q.recv_cq->poller->detach(q.qpn());
  return q.node->sync_status([&](auto cb) { return q.qp->destroy(cb); });
}

PeerInfo peer_info(const DpQp& q, uint32_t send_psn) {
  PeerInfo p;
  p.gid = q.node->gid;
  p.mac = q.node->mac;
  p.qpn = q.qp->qpn();
  p.psn = send_psn;
  return p;
}

Status connect_qp(DpQp& q, const PeerInfo& peer, uint32_t send_psn, const ConnectOptions& o) {
  DpNode& n = *q.node;
  const bool rc = q.cfg.st == prm::qpc_st::kRc;
  auto modify = [&](QpTransition t, const hca::cmd::QpAttr& a) {
    return n.sync_status([&](auto cb) { return q.qp->modify(t, a, 0, cb); });
  };
  hca::cmd::QpAttr x;
  x.rwe = o.rwe;
  if (rc) {
    x.rre = o.rre;
    x.rae = o.rae;
    if (o.rae) x.atomic_mode = prm::qpc_atomic_mode::kIbSpec;
  }
  if (Status s = modify(QpTransition::kRst2Init, x); !s.is_ok()) return s;
  hca::RoceDest d;
  d.dgid = peer.gid;
  d.dmac = peer.mac;
  d.hop_limit = 64;
  x.path = hca::roce_path(n.hca->caps(), d, q.qpn(), peer.qpn);
  x.path.ack_timeout = o.ack_timeout;
  x.mtu = o.mtu;
  x.log_msg_max = 30;
  x.remote_qpn = peer.qpn;
  x.next_rcv_psn = peer.psn;
  if (rc) {
    x.min_rnr_nak = o.min_rnr_nak;
    x.log_rra_max = o.log_rra_max;
  }
  if (Status s = modify(QpTransition::kInit2Rtr, x); !s.is_ok()) return s;
  x.next_send_psn = send_psn;
  if (rc) {
    x.retry_count = o.retry_count;
    x.rnr_retry = o.rnr_retry;
    x.log_sra_max = o.log_sra_max;
  }
  return modify(QpTransition::kRtr2Rts, x);
}

Status connect_pair(DpQp& a, DpQp& b, const ConnectOptions& o) {
  constexpr uint32_t kPsnA = 0xFFFF00, kPsnB = 0x000200;  // a's PSNs wrap at 2^24
  if (Status s = connect_qp(a, peer_info(b, kPsnB), kPsnA, o); !s.is_ok()) return s;
  return connect_qp(b, peer_info(a, kPsnA), kPsnB, o);
}

Status to_rts_ud(DpQp& q, uint32_t q_key, uint32_t send_psn) {
  DpNode& n = *q.node;
  auto modify = [&](QpTransition t, const hca::cmd::QpAttr& a) {
    return n.sync_status([&](auto cb) { return q.qp->modify(t, a, 0, cb); });
  };
  hca::cmd::QpAttr x;
  x.q_key = q_key;
  // INIT2RTR carries mtu and log_msg_max for UD too; mlx5_ib sets UD QPs to
  // mtu_msgmax = IB_MTU_4096 << 5 | 12 (drivers/infiniband/hw/mlx5/qp.c).
  // Left 0, log_msg_max would allow 1-byte messages.
  x.mtu = prm::qpc_mtu::k4kBytes;
  x.log_msg_max = 12;
  if (Status s = modify(QpTransition::kRst2Init, x); !s.is_ok()) return s;
  if (Status s = modify(QpTransition::kInit2Rtr, x); !s.is_ok()) return s;
  x.next_send_psn = send_psn;
  return modify(QpTransition::kRtr2Rts, x);
}

Result<hca::Ah> make_ah(DpNode& n, const DpNode& peer, uint32_t remote_qpn, uint32_t q_key) {
  hca::RoceDest d;
  d.dgid = peer.gid;
  d.dmac = peer.mac;
  return hca::Ah::make(n.hca->caps(), d, remote_qpn, q_key);
}

std::vector<hca::WorkCompletion> poll_cq(DpCq& cq, size_t count,
                                         std::chrono::milliseconds timeout) {
  std::vector<hca::WorkCompletion> out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  hca::WorkCompletion wc[16];
  while (out.size() < count) {
    size_t got = cq.poller->poll(std::span(wc, std::min<size_t>(16, count - out.size())));
    out.insert(out.end(), wc, wc + got);
    if (got == 0) {
      if (std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::yield();
    }
  }
  return out;
}

std::vector<hca::WorkCompletion> drain_cq(DpCq& cq, std::chrono::milliseconds quiet) {
  std::vector<hca::WorkCompletion> out;
  const auto deadline = std::chrono::steady_clock::now() + quiet;
  hca::WorkCompletion wc[16];
  while (std::chrono::steady_clock::now() < deadline) {
    size_t got = cq.poller->poll(wc);
    out.insert(out.end(), wc, wc + got);
    if (got == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return out;
}

void fill_pattern(std::byte* p, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; ++i) p[i] = pattern_byte(seed, i);
}

size_t check_pattern(const std::byte* p, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != pattern_byte(seed, i)) return i;
  return n;
}

}  // namespace kbv::e2e
