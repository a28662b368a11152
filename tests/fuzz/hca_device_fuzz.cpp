// SPDX-License-Identifier: BSD-3-Clause
//
// libFuzzer target: the driver (src/hca) against a buggy or malicious
// device. An Hca is brought up, used and torn down on a HostileDevice
// (hostile_device.hpp) whose firmware takes its decisions from the fuzz
// input, one byte at a time, as the driver goes:
//   * every command output (inline and mailboxes): plausible (enough for
//     bring-up), plausible with bytes overwritten, entirely fuzz bytes, a
//     failure status and syndrome, a delivery error, mailbox trailers
//     (next / block_num / token) overwritten, or never answered (the
//     driver's command timeout, 20 ms of fake time here);
//   * between polls: EQEs of any type and content in the driver's EQs
//     (command completions for slots not in flight, page requests of any
//     size, port / CQ / QP / SRQ events), raw EQE bytes with any owner bit,
//     the health buffer syndrome, fw_rev all-ones (device removed),
//     nic_interface disabled, a moving or frozen health counter;
//   * after bring-up, queries whose outputs the driver decodes (CQ, QP,
//     MKEY, EQ, SRQ, vport contexts, GID table, ACCESS_REG, adapter, pages,
//     MANAGE_PAGES take).
// When the input is used up the firmware turns plausible, so teardown can
// finish.
//
// Invariants (abort on violation): no crash or sanitizer report; every
// command's callback runs at most once; a decoded list is no longer than
// asked for (query_cq pas <= max_pas, GID table <= table_size, MANAGE_PAGES
// take <= npages); after a completed teardown and ~Hca, no DMA block is
// left (every page given to the device came back or was reclaimed).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <vector>

#include <kbv/log.h>

#include "hca/cmd/boot.hpp"
#include "hca/cmd/cq.hpp"
#include "hca/cmd/eq.hpp"
#include "hca/cmd/mkey.hpp"
#include "hca/cmd/pages.hpp"
#include "hca/cmd/pd.hpp"
#include "hca/cmd/qp.hpp"
#include "hca/cmd/srq.hpp"
#include "hca/cmd/vport.hpp"
#include "hca/hca.hpp"
#include "hca/prm/cmdq.hpp"
#include "hostile_device.hpp"

namespace {

using namespace kbv;
using fuzz::HostileDevice;

// Aborts with the broken invariant named.
#define check(cond)                                                                       \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "hca_device_fuzz:%d: invariant %s broken\n", __LINE__, #cond); \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)

constexpr uint64_t kMs = 1'000'000;
constexpr size_t kBlock = 576;

class HostileFw {
 public:
  HostileFw(HostileDevice& dev, FuzzedDataProvider& fdp) : dev_(dev), fdp_(fdp) {}

  // Answers (or not) every slot rung since the last call.
  void run() {
    const uint32_t rung = dev_.doorbells;
    dev_.doorbells = 0;
    for (uint32_t s = 0; s < 32; ++s)
      if (rung >> s & 1) answer(s);
  }

  // One device-side event between two driver polls.
  void event() {
    if (fdp_.remaining_bytes() == 0) return;
    const uint8_t a = fdp_.ConsumeIntegral<uint8_t>();
    if (a < 96) return;
    if (a < 176) {
      write_eqe(false);
    } else if (a < 196) {
      write_eqe(true);
    } else if (a < 204) {
      // Health syndrome: the device declares itself dead.
      dev_.bar_mem()[0x1000 + 0x3d] = std::byte{fdp_.ConsumeIntegral<uint8_t>()};
    } else if (a < 208) {
      dev_.set_reg32(prm::init_seg::kFwRevOff, 0xFFFFFFFF);  // fell off the bus
    } else if (a < 212) {
      dev_.set_reg32(prm::init_seg::kCmdqAddrLSzOff,
                     HostileDevice::kGeometry | (fdp_.ConsumeIntegral<uint32_t>() & 0x700));
    } else if (a < 230) {
      // A completion for a slot the driver may not be using.
      const uint32_t s = fdp_.ConsumeIntegral<uint8_t>() % 32;
      if (std::byte* e = entry(s)) {
        e[0x3f] = std::byte{static_cast<uint8_t>(fdp_.ConsumeIntegral<uint8_t>() & 0xFE)};
        if (fdp_.ConsumeBool()) {
          for (int k = 0; k < 16; ++k) e[0x20 + k] = std::byte{fdp_.ConsumeIntegral<uint8_t>()};
        }
      }
    } else {
      counter_frozen_ = !counter_frozen_;
    }
  }

  void tick() {
    dev_.now += kMs;
    if (!counter_frozen_) dev_.set_reg32(0x1010, ++counter_);
  }

 private:
  struct Eq {
    uint64_t buf = 0;
    uint32_t nent = 0;
    uint32_t pi = 0;
  };

  std::byte* entry(uint32_t s) {
    std::byte* q = dev_.va(dev_.cmdq_iova(), 4096);
    return q ? q + size_t{s} * 64 : nullptr;
  }

  // The mailbox blocks of a chain, as far as it is readable (at most n).
  std::vector<std::byte*> chain(uint64_t iova, uint32_t n) {
    std::vector<std::byte*> v;
    for (uint32_t i = 0; i < n && iova != 0; ++i) {
      std::byte* b = dev_.va(iova, kBlock);
      if (!b) break;
      v.push_back(b);
      iova = prm::CRef<prm::cmd_prot_block>(b).get(prm::cmd_prot_block::next);
    }
    return v;
  }

  std::vector<std::byte> input(std::byte* e) {
    prm::CRef<prm::cmd_layout> c(e);
    const uint32_t len =
        std::min<uint32_t>(static_cast<uint32_t>(c.get(prm::cmd_layout::inlen)), 64 * 512);
    std::vector<std::byte> in(std::max<uint32_t>(len, 16));
    std::memcpy(in.data(), e + 0x10, 16);
    auto blocks = chain(c.get(prm::cmd_layout::in_ptr), prm::mailbox_blocks(len));
    for (size_t i = 0; i < blocks.size(); ++i) {
      const size_t off = 16 + i * 512;
      if (off >= in.size()) break;
      std::memcpy(in.data() + off, blocks[i], std::min<size_t>(512, in.size() - off));
    }
    return in;
  }

  void answer(uint32_t s) {
    std::byte* e = entry(s);
    if (!e) return;
    prm::Ref<prm::cmd_layout> c(e);
    const std::vector<std::byte> in = input(e);
    const uint16_t op = static_cast<uint16_t>(fuzz::be32_at(in, 0) >> 16);
    const uint16_t op_mod = static_cast<uint16_t>(fuzz::be32_at(in, 4));
    const uint32_t outlen =
        std::min<uint32_t>(static_cast<uint32_t>(c.get(prm::cmd_layout::outlen)), 64 * 512 + 16);
    std::vector<std::byte> out(std::max<uint32_t>(outlen, 16));
    const uint8_t mode = fdp_.remaining_bytes() ? fdp_.ConsumeIntegral<uint8_t>() : 0;
    uint8_t delivery = 0;
    bool mangle_trailers = false;
    if (mode >= 232) return;  // never answered: the driver's timeout
    if (mode < 160 || mode >= 224) {
      plausible(op, op_mod, in, out);
      if (mode >= 128 && mode < 160) {
        const int k = 1 + fdp_.ConsumeIntegral<uint8_t>() % 8;
        for (int i = 0; i < k; ++i)
          out[fdp_.ConsumeIntegralInRange<size_t>(0, out.size() - 1)] =
              std::byte{fdp_.ConsumeIntegral<uint8_t>()};
      }
      mangle_trailers = mode >= 224;
    } else if (mode < 176) {
      std::vector<uint8_t> b = fdp_.ConsumeBytes<uint8_t>(out.size());
      if (!b.empty()) std::memcpy(out.data(), b.data(), b.size());
      if (fdp_.ConsumeBool()) out[0] = std::byte{0};
    } else if (mode < 208) {
      out[0] = std::byte{fdp_.ConsumeIntegral<uint8_t>()};
      fuzz::put32_at(out, 4, fdp_.ConsumeIntegral<uint32_t>());
    } else {
      delivery = fdp_.ConsumeIntegral<uint8_t>() & 0x7F;
    }
    // Write the output: inline part, then the driver's mailbox chain.
    std::memcpy(e + 0x20, out.data(), 16);
    auto blocks = chain(c.get(prm::cmd_layout::out_ptr), prm::mailbox_blocks(outlen));
    for (size_t i = 0; i < blocks.size(); ++i) {
      const size_t off = 16 + i * 512;
      if (off < out.size())
        std::memcpy(blocks[i], out.data() + off, std::min<size_t>(512, out.size() - off));
      if (mangle_trailers) {
        for (int k = 0; k < 16; ++k)
          blocks[i][560 + k] = std::byte{fdp_.ConsumeIntegral<uint8_t>()};
      }
    }
    e[0x3f] = std::byte{static_cast<uint8_t>(delivery << 1)};
    // Command EQE, as firmware does after handing the slot back.
    post_eqe(0x0a, [s](std::byte* eqe) { fuzz::put32_mem(eqe + 32, 1u << s); });
  }

  template <class F>
  void post_eqe(uint8_t type, F fill) {
    for (auto& [eqn, q] : eqs_) {
      if (!(masks_[eqn] >> type & 1)) continue;
      std::byte* eqe = dev_.va(q.buf + size_t{q.pi & (q.nent - 1)} * 64, 64);
      if (!eqe) return;
      std::memset(eqe, 0, 63);
      eqe[1] = std::byte{type};
      fill(eqe);
      eqe[63] = std::byte{static_cast<uint8_t>((q.pi & q.nent) ? 1 : 0)};
      ++q.pi;
      return;
    }
  }

  void write_eqe(bool raw) {
    if (eqs_.empty()) return;
    auto it = eqs_.begin();
    std::advance(it, fdp_.ConsumeIntegral<uint8_t>() % eqs_.size());
    Eq& q = it->second;
    std::byte* eqe = dev_.va(q.buf + size_t{q.pi & (q.nent - 1)} * 64, 64);
    if (!eqe) return;
    static constexpr uint8_t kTypes[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x07, 0x08, 0x09,
                                         0x0a, 0x0b, 0x10, 0x11, 0x12, 0x13, 0x14, 0x1a, 0xff};
    std::vector<uint8_t> b = fdp_.ConsumeBytes<uint8_t>(64);
    b.resize(64);
    std::memcpy(eqe, b.data(), raw ? 64 : 63);
    if (!raw) {
      eqe[1] = std::byte{kTypes[b[1] % sizeof kTypes]};
      eqe[63] = std::byte{static_cast<uint8_t>((q.pi & q.nent) ? 1 : 0)};
    }
    ++q.pi;
  }

  // Outputs a well-behaved firmware would give (mlx5_ifc.h offsets).
  void plausible(uint16_t op, uint16_t op_mod, const std::vector<std::byte>& in,
                 std::vector<std::byte>& out) {
    switch (op) {
      case 0x10A: fuzz::put32_at(out, 108, 0x3); return;  // QUERY_ISSI: ISSI 0 and 1
      case 0x107:                                         // QUERY_PAGES
        fuzz::put32_at(out, 12, op_mod == 1 ? 4 : op_mod == 2 ? 6 : 0);
        return;
      case 0x108: {  // MANAGE_PAGES
        const uint32_t n = std::min<uint32_t>(fuzz::be32_at(in, 12), 4096);
        if (op_mod == 1) {
          for (uint32_t i = 0; i < n; ++i) {
            const uint64_t p =
                uint64_t{fuzz::be32_at(in, 16 + 8 * i)} << 32 | fuzz::be32_at(in, 20 + 8 * i);
            pages_.push_back(p);
          }
        } else if (op_mod == 2) {
          uint32_t k = 0;
          while (k < n && !pages_.empty() && 16 + 8 * k + 8 <= out.size()) {
            const uint64_t p = pages_.back();
            pages_.pop_back();
            fuzz::put32_at(out, 16 + 8 * k, static_cast<uint32_t>(p >> 32));
            fuzz::put32_at(out, 20 + 8 * k, static_cast<uint32_t>(p));
            ++k;
          }
          fuzz::put32_at(out, 8, k);
        }
        return;
      }
      case 0x100: {  // QUERY_HCA_CAP
        if (out.size() < 16 + 4096) return;
        std::byte* cap = out.data() + 16;
        if (op_mod >> 1 == 0) {
          if (!set_caps_.empty() && (op_mod & 1)) {
            std::memcpy(cap, set_caps_.data(), 4096);
          } else {
            cap[0x13] = std::byte{0x11};  // log_max_qp
            cap[0x36] = std::byte{0x01};  // port_type Ethernet
            cap[0x37] = std::byte{1};     // num_ports
            cap[0x42] = std::byte{0xC0};  // cmdif_checksum
            cap[0x43] = std::byte{0x04};  // roce
            cap[0x65] = std::byte{0x10};  // log_max_pd
          }
        } else if (op_mod >> 1 == 4) {
          cap[0x13] = std::byte{0x04};  // RoCE v2
        }
        return;
      }
      case 0x109:  // SET_HCA_CAP
        if (in.size() >= 16 + 4096) set_caps_.assign(in.begin() + 16, in.begin() + 16 + 4096);
        return;
      case 0x802: fuzz::put32_at(out, 8, 7); return;  // ALLOC_UAR
      case 0x301: {                                   // CREATE_EQ
        if (in.size() < 280) return;
        Eq q;
        q.nent = 1u << (static_cast<uint32_t>(in[16 + 12]) & 0x1f);
        q.buf = uint64_t{fuzz::be32_at(in, 272)} << 32 | fuzz::be32_at(in, 276);
        if (q.nent > (1u << 16) || !dev_.va(q.buf, size_t{q.nent} * 64)) return;
        const uint32_t eqn = next_eqn_++ & 0xFF;
        eqs_[eqn] = q;
        masks_[eqn] = uint64_t{fuzz::be32_at(in, 88)} << 32 | fuzz::be32_at(in, 92);
        out[11] = static_cast<std::byte>(eqn);
        return;
      }
      case 0x302:  // DESTROY_EQ
        if (in.size() > 11) {
          eqs_.erase(static_cast<uint32_t>(in[11]));
          masks_.erase(static_cast<uint32_t>(in[11]));
        }
        return;
      default: return;  // the rest: success with zero fields
    }
  }

  HostileDevice& dev_;
  FuzzedDataProvider& fdp_;
  std::map<uint32_t, Eq> eqs_;
  std::map<uint32_t, uint64_t> masks_;
  std::vector<uint64_t> pages_;
  std::vector<std::byte> set_caps_;
  uint32_t next_eqn_ = 5;
  uint32_t counter_ = 0;
  bool counter_frozen_ = false;
};

// Counts callbacks: each command's must run at most once.
struct Outstanding {
  int issued = 0;
  int done = 0;
  template <class T>
  std::function<void(T)> cb(std::function<void(const T&)> extra = {}) {
    ++issued;
    auto fired = std::make_shared<bool>(false);
    return [this, fired, extra](T r) {
      check(!*fired);
      *fired = true;
      ++done;
      if (extra) extra(r);
    };
  }
};

void issue(hca::CmdQueue& q, FuzzedDataProvider& fdp, Outstanding& o) {
  const uint32_t id = fdp.ConsumeIntegral<uint32_t>();
  switch (fdp.ConsumeIntegral<uint8_t>() % 14) {
    case 0: (void)hca::cmd::nop(q, o.cb<Status>()); break;
    case 1: {
      const uint32_t max_pas = fdp.ConsumeIntegral<uint8_t>();
      (void)hca::cmd::query_cq(q, id, max_pas,
                               o.cb<Result<hca::cmd::CqInfo>>([max_pas](const auto& r) {
                                 if (r) check(r->pas.size() <= max_pas);
                               }));
      break;
    }
    case 2: (void)hca::cmd::query_qp(q, id, o.cb<Result<hca::cmd::QpInfo>>()); break;
    case 3: (void)hca::cmd::query_mkey(q, id, o.cb<Result<hca::cmd::MkeyInfo>>()); break;
    case 4: (void)hca::cmd::query_eq(q, id & 0xFF, o.cb<Result<hca::cmd::EqInfo>>()); break;
    case 5: (void)hca::cmd::query_srq(q, id, o.cb<Result<hca::cmd::SrqInfo>>()); break;
    case 6:
      (void)hca::cmd::query_nic_vport_context(q, {}, o.cb<Result<hca::cmd::NicVportContext>>());
      break;
    case 7:
      (void)hca::cmd::query_hca_vport_context(q, 1, {}, o.cb<Result<hca::cmd::HcaVportContext>>());
      break;
    case 8: {
      const uint32_t table = fdp.ConsumeIntegralInRange<uint32_t>(1, 512);
      const uint16_t index = fdp.ConsumeBool() ? hca::cmd::kAllGids : id % table;
      (void)hca::cmd::query_hca_vport_gid(
          q, 1, index, table, o.cb<Result<std::vector<hca::cmd::Gid>>>([table](const auto& r) {
            if (r) check(r->size() <= table);
          }));
      break;
    }
    case 9: {
      hca::cmd::AccessRegAttr a;
      a.register_id = static_cast<prm::RegId>(id & 0xFFFF);
      a.data.resize(fdp.ConsumeIntegralInRange<size_t>(0, 1024));
      (void)hca::cmd::access_reg(q, a, o.cb<Result<std::vector<std::byte>>>());
      break;
    }
    case 10: (void)hca::cmd::query_adapter(q, o.cb<Result<hca::cmd::AdapterInfo>>()); break;
    case 11:
      (void)hca::cmd::query_pages(q, prm::QueryPagesOpMod::REGULAR_PAGES,
                                  o.cb<Result<hca::cmd::PagesQuery>>());
      break;
    case 12: {
      const uint32_t n = fdp.ConsumeIntegralInRange<uint32_t>(0, 2048);
      (void)hca::cmd::manage_pages_take(q, 0, n,
                                        o.cb<Result<std::vector<uint64_t>>>([n](const auto& r) {
                                          if (r) check(r->size() <= n);
                                        }));
      break;
    }
    default: (void)hca::cmd::alloc_pd(q, o.cb<Result<uint32_t>>()); break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The driver logs every failure it sees; formatting stays covered, the
  // output is dropped (KBV_FUZZ_LOG=1 keeps it, to debug a reproducer).
  if (std::getenv("KBV_FUZZ_LOG") == nullptr)
    kbv_log_set_handler([](void*, kbv_log_level_t, const char*, const char*) {}, nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  auto dev = std::make_unique<HostileDevice>();
  HostileFw fw(*dev, fdp);
  hca::HcaConfig cfg;
  cfg.async_eq_log_size = 8;
  cfg.comp_eq_log_size = 8;
  cfg.cmdq.default_timeout_ns = 20 * kMs;
  cfg.health.interval_ns = 5 * kMs;
  cfg.init_timeout_ns = 50 * kMs;
  auto h = std::make_unique<hca::Hca>(*dev, cfg);
  int fatal_events = 0;
  h->set_event_handler([&](const hca::HcaEvent& e) {
    if (e.kind == hca::HcaEvent::Kind::kFatal) ++fatal_events;
  });
  auto drive = [&](auto until, int rounds) {
    for (int i = 0; i < rounds && !until(); ++i) {
      h->poll();
      fw.run();
      fw.event();
      fw.tick();
    }
  };
  (void)h->start();
  drive([&] { return h->bringup_done(); }, 300);
  Outstanding o;
  if (h->ready()) {
    const int n = fdp.ConsumeIntegralInRange<int>(0, 12);
    for (int i = 0; i < n && fdp.remaining_bytes() > 0; ++i) {
      issue(h->cmdq(), fdp, o);
      drive([&] { return false; }, fdp.ConsumeIntegralInRange<int>(0, 3));
    }
    drive([&] { return o.done == o.issued; }, 100);
  }
  check(fatal_events <= 1);
  bool torn_down = false;
  if (h->start_teardown().is_pending()) {
    drive([&] { return h->teardown_done(); }, 400);
    torn_down = h->teardown_done() && h->teardown_status().is_ok() && h->failure().is_ok();
  }
  h.reset();
  check(o.done <= o.issued);
  if (torn_down && dev->live_dma() != 0) dev->dump_dma();
  if (torn_down) check(dev->live_dma() == 0);
  return 0;
}
