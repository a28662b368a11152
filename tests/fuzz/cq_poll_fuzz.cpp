// SPDX-License-Identifier: BSD-3-Clause
//
// libFuzzer target: the driver's completion path (src/hca/dp CqPoller with
// SendQueue, RecvQueue and SrqQueue) reading CQEs a buggy or malicious
// device wrote. One CQ of 8 CQEs serves an RC QP with a send ring (16 basic
// blocks) and a receive ring (8 WQEs), and a UD QP whose receives come from
// an SRQ (8 WQEs). The input is a list of actions:
//   0: the device writes 1..4 CQEs — 64 fuzz bytes each, with the owner bit
//      of the lap (or any), QPN one of the two attached, or any;
//   1: the application posts 1..4 sends (any opcode, inline or not);
//   2: posts 1..3 receives; 3: posts 1..3 SRQ receives;
//   4: polls with room for 0..9 completions.
// Invariants (abort on violation): no crash or sanitizer report; poll
// returns at most what was asked; the send queue never reports more free
// basic blocks than its ring has, nor the receive queue more outstanding
// WQEs than it has (a completion for a WQE that was never posted must not
// make the driver hand out ring space the device still owns); the consumer
// index record is what the poller says.
#include <fuzzer/FuzzedDataProvider.h>
#include <infiniband/mlx5dv.h>

#include <kbv/log.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "hca/dp/cq.hpp"
#include "hca/dp/rq.hpp"
#include "hca/dp/sq.hpp"
#include "hostile_device.hpp"

#define check(cond)                                                                    \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "cq_poll_fuzz:%d: invariant %s broken\n", __LINE__, #cond); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)

namespace {

using namespace kbv;
using namespace kbv::hca;

constexpr uint32_t kRcQpn = 0x123;
constexpr uint32_t kUdQpn = 0x456;
constexpr uint32_t kNcqe = 8;

struct Rings {
  alignas(4096) std::byte cq[kNcqe * 64];
  alignas(4096) std::byte sq[16 * 64];
  alignas(4096) std::byte rq[8 * 64];
  alignas(4096) std::byte srq[8 * 64];
  alignas(64) uint32_t cq_dbrec[16];
  alignas(64) uint32_t qp_dbrec[16];
  alignas(64) uint32_t ud_dbrec[16];
  alignas(64) uint32_t srq_dbrec[16];
  alignas(64) std::byte payload[256];
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (std::getenv("KBV_FUZZ_LOG") == nullptr)
    kbv_log_set_handler([](void*, kbv_log_level_t, const char*, const char*) {}, nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  static fuzz::HostileDevice dev;  // BAR0 for the doorbell / BlueFlame writes
  static Rings* r = new Rings;
  std::memset(r, 0, sizeof *r);
  for (uint32_t i = 0; i < kNcqe; ++i) r->cq[i * 64 + 63] = std::byte{0xF0};  // invalid, hw-owned

  SqConfig sc;
  sc.ring = r->sq;
  sc.log_blocks = 4;
  sc.dbrec = r->qp_dbrec;
  sc.bar = &dev.bar0();
  sc.bf_offset = 0x1000 + 0x800;
  sc.bf_reg_size = 512;
  sc.bf_copy = true;
  sc.qpn = kRcQpn;
  sc.st = prm::qpc_st::kRc;
  sc.max_sge = 2;
  sc.max_inline = 64;
  auto sq = SendQueue::create(sc);
  auto rq = RecvQueue::create(RqConfig{r->rq, 3, 64, r->qp_dbrec, 2});
  auto srq = SrqQueue::create(RqConfig{r->srq, 3, 64, r->srq_dbrec, 2});
  auto cq = CqPoller::create(CqRing{r->cq, kNcqe, r->cq_dbrec, 0x77});
  check(sq.has_value() && rq.has_value() && srq.has_value() && cq.has_value());
  check(cq->attach(kRcQpn, &*sq, &*rq, nullptr).is_ok());
  check(cq->attach(kUdQpn, nullptr, nullptr, &*srq).is_ok());

  uint32_t pi = 0;  // the device's CQ producer index
  uint64_t next_id = 1;
  WorkCompletion wc[9];
  const Sge sg[2] = {{reinterpret_cast<uint64_t>(r->payload), 64, 0x100},
                     {reinterpret_cast<uint64_t>(r->payload) + 64, 32, 0x100}};
  while (fdp.remaining_bytes() > 0) {
    switch (fdp.ConsumeIntegral<uint8_t>() % 5) {
      case 0: {
        const int n = 1 + fdp.ConsumeIntegral<uint8_t>() % 4;
        for (int i = 0; i < n; ++i) {
          std::byte* cqe = r->cq + (pi % kNcqe) * 64;
          std::vector<uint8_t> b = fdp.ConsumeBytes<uint8_t>(64);
          b.resize(64);
          std::memcpy(cqe, b.data(), 64);
          const uint8_t how = b[0];
          if (how % 4 != 3) {  // the QPN of an attached QP (else: the fuzz bytes')
            const uint32_t qpn = how % 4 == 0 ? kUdQpn : kRcQpn;
            cqe[57] = std::byte{static_cast<uint8_t>(qpn >> 16)};
            cqe[58] = std::byte{static_cast<uint8_t>(qpn >> 8)};
            cqe[59] = std::byte{static_cast<uint8_t>(qpn)};
          }
          if (how & 0x80) {  // the opcode and owner bit of a valid CQE of this lap
            const uint8_t ops[] = {MLX5_CQE_REQ,           MLX5_CQE_RESP_WR_IMM,
                                   MLX5_CQE_RESP_SEND,     MLX5_CQE_RESP_SEND_IMM,
                                   MLX5_CQE_RESP_SEND_INV, MLX5_CQE_REQ_ERR,
                                   MLX5_CQE_RESP_ERR};
            cqe[63] = std::byte{static_cast<uint8_t>(ops[b[1] % 7] << 4 | ((pi & kNcqe) ? 1 : 0))};
          }
          ++pi;
        }
        break;
      }
      case 1: {
        SendWr w[4];
        const size_t n = 1 + fdp.ConsumeIntegral<uint8_t>() % 4;
        for (size_t i = 0; i < n; ++i) {
          w[i].wr_id = next_id++;
          w[i].opcode = static_cast<WrOpcode>(fdp.ConsumeIntegral<uint8_t>() % 7);
          w[i].flags = fdp.ConsumeIntegral<uint8_t>() & 0xF;
          w[i].sg = std::span<const Sge>(sg, fdp.ConsumeIntegral<uint8_t>() % 3);
          w[i].remote_addr = 0x1000;
          w[i].rkey = 0x200;
        }
        (void)sq->post(std::span<const SendWr>(w, n));
        break;
      }
      case 2:
      case 3: {
        RecvWr w[3];
        const size_t n = 1 + fdp.ConsumeIntegral<uint8_t>() % 3;
        for (size_t i = 0; i < n; ++i) {
          w[i].wr_id = next_id++;
          w[i].sg = std::span<const Sge>(sg, fdp.ConsumeIntegral<uint8_t>() % 3);
        }
        if (fdp.ConsumeBool())
          (void)rq->post(std::span<const RecvWr>(w, n));
        else
          (void)srq->post(std::span<const RecvWr>(w, n));
        break;
      }
      default: {
        const size_t max = fdp.ConsumeIntegral<uint8_t>() % 10;
        const size_t got = cq->poll(wc, max);
        check(got <= max);
        check(be32toh(r->cq_dbrec[0]) == cq->ci());
        break;
      }
    }
    check(sq->free_blocks() <= sq->blocks());
    check(rq->outstanding() <= rq->wqes());
  }
  return 0;
}
