// SPDX-License-Identifier: BSD-3-Clause
// kbv-lab selftest URI [--size N]: an RC loopback on the device itself —
// two QPs of the one device connected to each other through its own port
// (GID 0) — through every opcode kbv posts (SEND, SEND with immediate, RDMA
// WRITE, WRITE with immediate, RDMA READ, fetch-and-add, compare-and-swap),
// each checked byte for byte (and the immediate, the atomic's old and new
// values). Prints one line per opcode with its time; stops at the first
// failure with the completion's status and CQE syndrome.
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

#include "kbv-lab/lab.hpp"

namespace kbv::lab {

namespace {

struct End {
  kbv_pd_t pd = 0;
  kbv_cq_t cq = 0;
  kbv_qp_t qp = 0;
  uint32_t qpn = 0;
  kbv_mr_t mr = 0;
  uint32_t lkey = 0, rkey = 0;
  std::vector<uint8_t> buf;
  uint64_t addr(size_t off = 0) const { return reinterpret_cast<uint64_t>(buf.data()) + off; }
};

kbv_status_t make_end(kbv_device_t dev, End& e, size_t bytes) {
  e.buf.assign(bytes, 0);
  kbv_status_t st = kbv_pd_alloc(dev, KBV_EQ_NONE, 0, &e.pd);
  if (st != KBV_SUCCESS) return st;
  kbv_cq_attr_t ca{};
  ca.cqe = 64;
  if ((st = kbv_cq_create(dev, &ca, KBV_EQ_NONE, 0, &e.cq)) != KBV_SUCCESS) return st;
  if ((st = kbv_mr_reg(e.pd, e.buf.data(), e.buf.size(),
                       KBV_ACCESS_LOCAL_WRITE | KBV_ACCESS_REMOTE_WRITE | KBV_ACCESS_REMOTE_READ |
                           KBV_ACCESS_REMOTE_ATOMIC,
                       KBV_EQ_NONE, 0, &e.mr)) != KBV_SUCCESS)
    return st;
  if ((st = kbv_mr_get_keys(e.mr, &e.lkey, &e.rkey)) != KBV_SUCCESS) return st;
  kbv_qp_init_attr_t qa{};
  qa.qp_type = KBV_QPT_RC;
  qa.send_cq = e.cq;
  qa.recv_cq = e.cq;
  qa.cap.max_send_wr = 16;
  qa.cap.max_recv_wr = 16;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  if ((st = kbv_qp_create(e.pd, &qa, KBV_EQ_NONE, 0, &e.qp)) != KBV_SUCCESS) return st;
  return kbv_qp_get_num(e.qp, &e.qpn);
}

void free_end(End& e) {
  if (e.qp) (void)kbv_qp_destroy(e.qp, KBV_EQ_NONE, 0);
  if (e.mr) (void)kbv_mr_dereg(e.mr, KBV_EQ_NONE, 0);
  if (e.cq) (void)kbv_cq_destroy(e.cq, KBV_EQ_NONE, 0);
  if (e.pd) (void)kbv_pd_dealloc(e.pd, KBV_EQ_NONE, 0);
  e = End{};
}

// RESET -> INIT -> RTR -> RTS toward qpn on the device's own GID 0.
kbv_status_t connect(kbv_qp_t qp, uint32_t peer_qpn, const kbv_port_attr_t& port, uint32_t sq_psn,
                     uint32_t rq_psn) {
  kbv_qp_attr_t a{};
  a.qp_state = KBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = KBV_ACCESS_REMOTE_READ | KBV_ACCESS_REMOTE_WRITE | KBV_ACCESS_REMOTE_ATOMIC;
  kbv_status_t st = kbv_qp_modify(
      qp, &a, KBV_QP_STATE | KBV_QP_PORT | KBV_QP_PKEY_INDEX | KBV_QP_ACCESS_FLAGS, KBV_EQ_NONE, 0);
  if (st != KBV_SUCCESS) return st;
  a.qp_state = KBV_QPS_RTR;
  a.path_mtu = KBV_MTU_1024;
  a.dest_qp_num = peer_qpn;
  a.rq_psn = rq_psn;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 12;
  std::memcpy(a.ah_attr.dgid, port.gids[0].gid, 16);
  a.ah_attr.dmac = port.gids[0].mac;
  a.ah_attr.hop_limit = 64;
  st = kbv_qp_modify(qp, &a,
                     KBV_QP_STATE | KBV_QP_AV | KBV_QP_PATH_MTU | KBV_QP_DEST_QPN | KBV_QP_RQ_PSN |
                         KBV_QP_MAX_DEST_RD_ATOMIC | KBV_QP_MIN_RNR_TIMER,
                     KBV_EQ_NONE, 0);
  if (st != KBV_SUCCESS) return st;
  a.qp_state = KBV_QPS_RTS;
  a.sq_psn = sq_psn;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 4;
  return kbv_qp_modify(qp, &a,
                       KBV_QP_STATE | KBV_QP_SQ_PSN | KBV_QP_TIMEOUT | KBV_QP_RETRY_CNT |
                           KBV_QP_RNR_RETRY | KBV_QP_MAX_QP_RD_ATOMIC,
                       KBV_EQ_NONE, 0);
}

// Waits for one completion on cq (bounded); false on timeout.
bool wait_wc(kbv_device_t dev, kbv_cq_t cq, kbv_wc_t& wc) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < end) {
    const int n = kbv_poll_cq(cq, &wc, 1);
    if (n == 1) return true;
    if (n < 0) return false;
    (void)kbv_device_progress(dev);
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return false;
}

void pattern(std::vector<uint8_t>& b, size_t off, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; ++i) b[off + i] = static_cast<uint8_t>(seed * 29 + i * 11 + (i >> 8));
}

struct Result {
  std::string op;
  bool ok = false;
  std::string detail;
  uint64_t us = 0;
};

}  // namespace

int cmd_selftest(const Common& c, uint32_t size) {
  if (size == 0 || size > (1u << 20)) {
    fmt::print(c.err, "kbv-lab: --size must be 1..1048576\n");
    return 2;
  }
  kbv_device_t dev = open_device(c);
  if (!dev) return 1;
  std::vector<Result> results;
  std::string setup_error;
  End a, b;
  kbv_port_attr_t port{};
  const size_t bytes = 2 * size_t{size} + 64;
  do {
    if (wait_link(c, dev) != KBV_PORT_ACTIVE) {
      setup_error = "the port did not come up";
      break;
    }
    kbv_status_t st = kbv_port_query(dev, 1, &port, KBV_EQ_NONE, 0);
    if (st == KBV_SUCCESS) st = make_end(dev, a, bytes);
    if (st == KBV_SUCCESS) st = make_end(dev, b, bytes);
    if (st == KBV_SUCCESS) st = connect(a.qp, b.qpn, port, 100, 200);
    if (st == KBV_SUCCESS) st = connect(b.qp, a.qpn, port, 200, 100);
    if (st != KBV_SUCCESS) {
      setup_error = describe(st, 0, 0);
      break;
    }
    // One step: post on a (and a receive on b when `recv`), wait for a's
    // completion (and b's), then check.
    const auto step = [&](const char* name, kbv_send_wr_t w, bool recv,
                          const std::function<std::string(const kbv_wc_t*)>& check) {
      Result r;
      r.op = name;
      const auto t0 = std::chrono::steady_clock::now();
      kbv_sge_t rsg{b.addr(size), size, b.lkey};
      if (recv) {
        kbv_recv_wr_t rw{};
        rw.wr_id = 2;
        rw.sg_list = &rsg;
        rw.num_sge = 1;
        if (kbv_status_t s = kbv_post_recv(b.qp, &rw, 1, nullptr); s != KBV_SUCCESS) {
          r.detail = "post_recv: " + describe(s, 0, 0);
          results.push_back(r);
          return false;
        }
      }
      w.wr_id = 1;
      w.flags |= KBV_SEND_SIGNALED;
      if (kbv_status_t s = kbv_post_send(a.qp, &w, 1, nullptr); s != KBV_SUCCESS) {
        r.detail = "post_send: " + describe(s, 0, 0);
        results.push_back(r);
        return false;
      }
      kbv_wc_t swc{}, rwc{};
      if (!wait_wc(dev, a.cq, swc)) {
        r.detail = "no send completion within 10 s";
      } else if (swc.status != KBV_SUCCESS) {
        r.detail = fmt::format("send completion {} (CQE syndrome {:#x}, vendor {:#x})",
                               kbv_status_name(static_cast<kbv_status_t>(swc.status)), swc.syndrome,
                               swc.vendor_err);
      } else if (recv && !wait_wc(dev, b.cq, rwc)) {
        r.detail = "no receive completion within 10 s";
      } else if (recv && rwc.status != KBV_SUCCESS) {
        r.detail =
            fmt::format("receive completion {} (CQE syndrome {:#x})",
                        kbv_status_name(static_cast<kbv_status_t>(rwc.status)), rwc.syndrome);
      } else {
        r.detail = check(recv ? &rwc : nullptr);
        r.ok = r.detail.empty();
      }
      r.us = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                       std::chrono::steady_clock::now() - t0)
                                       .count());
      results.push_back(r);
      return r.ok;
    };
    kbv_sge_t sg{a.addr(0), size, a.lkey};
    const auto same = [&](size_t a_off, size_t b_off, uint32_t n) -> std::string {
      if (std::memcmp(a.buf.data() + a_off, b.buf.data() + b_off, n) == 0) return {};
      for (uint32_t i = 0; i < n; ++i)
        if (a.buf[a_off + i] != b.buf[b_off + i])
          return fmt::format("data differs at byte {}: sent {:#04x}, got {:#04x}", i,
                             a.buf[a_off + i], b.buf[b_off + i]);
      return "data differs";
    };
    kbv_send_wr_t w{};
    w.sg_list = &sg;
    w.num_sge = 1;
    pattern(a.buf, 0, size, 1);
    w.opcode = KBV_WR_SEND;
    if (!step("SEND", w, true, [&](const kbv_wc_t* rwc) {
          if (rwc->byte_len != size) return fmt::format("byte_len {} != {}", rwc->byte_len, size);
          return same(0, size, size);
        }))
      break;
    pattern(a.buf, 0, size, 2);
    w.opcode = KBV_WR_SEND_IMM;
    w.imm = 0x12345678;
    if (!step("SEND_IMM", w, true, [&](const kbv_wc_t* rwc) {
          if (!(rwc->flags & KBV_WC_WITH_IMM) || rwc->imm != 0x12345678)
            return fmt::format("immediate {:#x} (flags {:#x})", rwc->imm, rwc->flags);
          return same(0, size, size);
        }))
      break;
    pattern(a.buf, 0, size, 3);
    w.opcode = KBV_WR_RDMA_WRITE;
    w.remote_addr = b.addr(0);
    w.rkey = b.rkey;
    if (!step("RDMA_WRITE", w, false, [&](const kbv_wc_t*) { return same(0, 0, size); })) break;
    pattern(a.buf, 0, size, 4);
    w.opcode = KBV_WR_RDMA_WRITE_IMM;
    w.imm = 0xabcdef01;
    if (!step("RDMA_WRITE_IMM", w, true, [&](const kbv_wc_t* rwc) {
          if (!(rwc->flags & KBV_WC_WITH_IMM) || rwc->imm != 0xabcdef01)
            return fmt::format("immediate {:#x} (flags {:#x})", rwc->imm, rwc->flags);
          return same(0, 0, size);
        }))
      break;
    pattern(b.buf, 0, size, 5);
    std::memset(a.buf.data(), 0, size);
    w.opcode = KBV_WR_RDMA_READ;
    if (!step("RDMA_READ", w, false, [&](const kbv_wc_t*) { return same(0, 0, size); })) break;
    // Atomics on 8 aligned bytes of b at offset 0; the old value lands in a.
    uint64_t v = 1000;
    std::memcpy(b.buf.data(), &v, 8);
    kbv_sge_t ag{a.addr(0), 8, a.lkey};
    kbv_send_wr_t at{};
    at.sg_list = &ag;
    at.num_sge = 1;
    at.remote_addr = b.addr(0);
    at.rkey = b.rkey;
    at.opcode = KBV_WR_ATOMIC_FA;
    at.compare_add = 24;
    if (!step("ATOMIC_FA", at, false, [&](const kbv_wc_t*) -> std::string {
          uint64_t old = 0, now = 0;
          std::memcpy(&old, a.buf.data(), 8);
          std::memcpy(&now, b.buf.data(), 8);
          if (old != 1000 || now != 1024)
            return fmt::format("old {} new {} (want 1000, 1024)", old, now);
          return {};
        }))
      break;
    at.opcode = KBV_WR_ATOMIC_CS;
    at.compare_add = 1024;
    at.swap = 0x5a5a5a5a5a5a5a5aull;
    if (!step("ATOMIC_CS", at, false, [&](const kbv_wc_t*) -> std::string {
          uint64_t old = 0, now = 0;
          std::memcpy(&old, a.buf.data(), 8);
          std::memcpy(&now, b.buf.data(), 8);
          if (old != 1024 || now != 0x5a5a5a5a5a5a5a5aull)
            return fmt::format("old {} new {:#x} (want 1024, 0x5a5a5a5a5a5a5a5a)", old, now);
          return {};
        }))
      break;
  } while (false);
  free_end(a);
  free_end(b);
  close_device(dev);
  bool ok = setup_error.empty() && results.size() == 7;
  for (const Result& r : results) ok = ok && r.ok;
  if (c.json) {
    Json j;
    j.obj().kv("uri", c.uri).kv("ok", ok).kv("size", static_cast<uint64_t>(size));
    if (!setup_error.empty()) j.kv("setup_error", setup_error);
    j.key("ops").arr();
    for (const Result& r : results)
      j.obj().kv("op", r.op).kv("ok", r.ok).kv("time_us", r.us).kv("detail", r.detail).end();
    j.end().end();
    fmt::print(c.out, "{}\n", j.text());
  } else {
    fmt::print(c.out, "{} selftest: RC loopback, {} B, data checked\n", c.uri, size);
    if (!setup_error.empty()) fmt::print(c.out, "  setup FAILED: {}\n", setup_error);
    for (const Result& r : results)
      fmt::print(c.out, "  {:<15} {} {:>7} us  {}\n", r.op,
                 paint(c, fmt::format("{:<6}", r.ok ? "ok" : "FAILED"), r.ok), r.us, r.detail);
    fmt::print(c.out, "{}\n", paint(c, ok ? "selftest passed" : "selftest FAILED", ok));
  }
  return ok ? 0 : 1;
}

}  // namespace kbv::lab
