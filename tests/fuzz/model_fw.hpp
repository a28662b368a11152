// SPDX-License-Identifier: BSD-3-Clause
//
// Fuzz-harness support: a model firmware context (src/sim/fw) driven
// synchronously on the fuzzer's thread — no firmware thread, no command
// queue: each command's handler runs through CommandRegistry::check and the
// handler itself, exactly as the firmware calls it after fetching a command
// (fw/firmware.cpp), so object state is a pure function of the commands.
// Device memory is one arena mapped in an IommuMap at kArenaIova; a bump
// allocator hands out page-aligned pieces and reset() starts it over.
//
// The object-command builders mirror tests/unit/sim/fw/objects/
// fw_obj_support.hpp (which is gtest-based): every field written with the
// prm tables, as a driver would.
//
// Threading: one thread (the fuzzer's).
#pragma once

#include "hca/prm/cmd_hdr.hpp"
#include "hca/prm/cq.hpp"
#include "hca/prm/eq.hpp"
#include "hca/prm/mkey.hpp"
#include "hca/prm/pd.hpp"
#include "hca/prm/qp_cmd.hpp"
#include "hca/prm/srq.hpp"
#include "hca/prm/uar.hpp"
#include "hca/prm/vport.hpp"
#include "sim/bus/iommu_map.hpp"
#include "sim/bus/pci_function.hpp"
#include "sim/fw/caps.hpp"
#include "sim/fw/context.hpp"
#include "sim/fw/eq.hpp"
#include "sim/fw/hca_cmds.hpp"
#include "sim/fw/objects/objects.hpp"
#include "sim/fw/objects/tables.hpp"
#include "sim/fw/pages.hpp"
#include "sim/fw/registry.hpp"
#include "sim/fw/uar.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

namespace kbv::fuzz {

namespace prm = kbv::prm;
namespace fw = kbv::sim::fw;

// BAR0 in memory; MSI-X goes nowhere (the harness reads EQs itself).
class MemPci final : public sim::PciFunction {
 public:
  MemPci() : bar_(1u << 20) {}
  std::span<std::byte> bar0() override { return bar_; }
  sim::Iommu& iommu() override { return iommu_; }
  sim::IommuMap& map() { return iommu_; }
  bool raise_msix(unsigned) override { return true; }
  bool bus_master() const override { return true; }
  void set_bar0_write_handler(WriteHandler) override {}
  void set_reset_handler(std::function<void()>) override {}

 private:
  std::vector<std::byte> bar_;
  sim::IommuMap iommu_;
};

[[noreturn]] inline void harness_failed(const char* what, uint32_t a = 0, uint32_t b = 0) {
  std::fprintf(stderr, "fuzz harness: %s (0x%x 0x%x)\n", what, a, b);
  std::abort();
}

class ModelFw {
 public:
  static constexpr uint64_t kArenaIova = 0x10000000;
  static constexpr std::size_t kArenaBytes = 64 * 4096;

  ModelFw() : arena_(static_cast<std::byte*>(std::aligned_alloc(4096, kArenaBytes))) {
    cfg_.boot_pages = 0;
    cfg_.init_pages = 0;
    cfg_.trace_from_env = false;
    register_hca_commands(reg_);
    register_cap_commands(reg_);
    register_eq_commands(reg_);
    register_page_commands(reg_);
    register_uar_commands(reg_);
    register_object_commands(reg_);
    ctx_ = std::make_unique<fw::FwContext>(pci_, cfg_);
    if (!pci_.map()
             .map(kArenaIova, arena_, kArenaBytes, sim::Iommu::kRead | sim::Iommu::kWrite)
             .is_ok())
      harness_failed("map arena");
    check(run(prm::Opcode::ENABLE_HCA, 0, 16, 16), "ENABLE_HCA");
  }
  ~ModelFw() {
    ctx_.reset();
    std::free(arena_);
  }
  ModelFw(const ModelFw&) = delete;
  ModelFw& operator=(const ModelFw&) = delete;

  fw::FwContext& context() { return *ctx_; }
  fw::ObjectTables& tables() { return fw::objects(*ctx_); }
  std::byte* arena() { return arena_; }
  std::byte* host(uint64_t iova) { return arena_ + (iova - kArenaIova); }

  // Forgets every object (TEARDOWN_HCA's effect), zeroes the arena and
  // brings the HCA up again: INIT_HCA, a UAR, an EQ, RoCE on.
  void reset() {
    ctx_->teardown();
    std::memset(arena_, 0, kArenaBytes);
    next_ = 0;
    check(run(prm::Opcode::INIT_HCA, 0, 16, 16), "INIT_HCA");
    std::vector<std::byte> out = run(prm::Opcode::ALLOC_UAR, 0, 16, 16);
    check(out, "ALLOC_UAR");
    uar_ = field<prm::alloc_uar_out>(out, prm::alloc_uar_out::uar);
    eqn_ = create_eq();
    auto in = cmd<prm::modify_nic_vport_context_in>(prm::Opcode::MODIFY_NIC_VPORT_CONTEXT);
    prm::Ref<prm::modify_nic_vport_context_in> m(in.data());
    m.at(prm::modify_nic_vport_context_in::field_select)
        .set(prm::modify_nic_vport_field_select::roce_en, 1);
    m.at(prm::modify_nic_vport_context_in::nic_vport_context)
        .set(prm::nic_vport_context::roce_en, 1);
    check(exec(in, 16), "roce_en");
  }

  // A zeroed piece of the arena (IOVA).
  uint64_t alloc(std::size_t bytes, std::size_t align = 4096) {
    next_ = (next_ + align - 1) / align * align;
    if (next_ + bytes > kArenaBytes) harness_failed("arena full", uint32_t(bytes));
    const uint64_t iova = kArenaIova + next_;
    next_ += bytes;
    return iova;
  }

  // One command: the generic checks, then the handler. Returns the output
  // (outlen bytes) with status and syndrome in mbox_out.
  std::vector<std::byte> exec(std::span<const std::byte> in, uint32_t outlen) {
    std::vector<std::byte> out(outlen);
    prm::CRef<prm::mbox_in> h(in.data());
    fw::Command c;
    c.opcode = static_cast<uint16_t>(h.get(prm::mbox_in::opcode));
    c.op_mod = static_cast<uint16_t>(h.get(prm::mbox_in::op_mod));
    c.uid = static_cast<uint16_t>(h.get(prm::mbox_in::uid));
    c.in = in;
    const fw::Handler* handler = reg_.find(c.opcode);
    fw::Outcome o = fw::CommandRegistry::check(handler, c, outlen, ctx_->hca().enabled,
                                               ctx_->hca().initialized);
    if (o.is_ok()) o = handler->fn(*ctx_, c, out);
    if (!o.is_ok()) std::memset(out.data(), 0, out.size());
    prm::Ref<prm::mbox_out> r(out.data());
    r.set(prm::mbox_out::status, o.status);
    r.set(prm::mbox_out::syndrome, o.syndrome);
    return out;
  }
  std::vector<std::byte> run(prm::Opcode op, uint16_t op_mod, uint32_t inlen, uint32_t outlen) {
    return exec(make(op, op_mod, inlen), outlen);
  }
  static uint8_t status(const std::vector<std::byte>& out) { return uint8_t(out[0]); }
  static void check(const std::vector<std::byte>& out, const char* what) {
    if (status(out) != 0)
      harness_failed(what, status(out),
                     uint32_t(prm::CRef<prm::mbox_out>(out.data()).get(prm::mbox_out::syndrome)));
  }
  template <class L>
  static uint32_t field(const std::vector<std::byte>& out, prm::Field<L> f) {
    return static_cast<uint32_t>(prm::CRef<L>(out.data()).get(f));
  }
  static std::vector<std::byte> make(prm::Opcode op, uint16_t op_mod, std::size_t len) {
    std::vector<std::byte> in(len);
    prm::Ref<prm::mbox_in> h(in.data());
    h.set(prm::mbox_in::opcode, prm::to_u16(op));
    h.set(prm::mbox_in::op_mod, op_mod);
    return in;
  }
  template <class L>
  static std::vector<std::byte> cmd(prm::Opcode op, uint16_t op_mod = 0, std::size_t tail = 0) {
    return make(op, op_mod, L::kBits / 8 + tail);
  }

  uint32_t create_eq() {
    const uint64_t buf = alloc(4096);
    auto in = cmd<prm::create_eq_in>(prm::Opcode::CREATE_EQ, 0, 8);
    prm::Ref<prm::create_eq_in> c(in.data());
    auto ec = c.at(prm::create_eq_in::eq_context_entry);
    ec.set(prm::eqc::log_eq_size, 6);
    ec.set(prm::eqc::uar_page, uar_);
    c.set(prm::create_eq_in::pas, 0, buf);
    auto out = exec(in, 16);
    check(out, "CREATE_EQ");
    eq_buf_ = buf;
    return field<prm::create_eq_out>(out, prm::create_eq_out::eq_number);
  }
  uint64_t eq_buf() const { return eq_buf_; }

  uint32_t alloc_pd() {
    auto out = run(prm::Opcode::ALLOC_PD, 0, 16, 16);
    check(out, "ALLOC_PD");
    return field<prm::alloc_pd_out>(out, prm::alloc_pd_out::pd);
  }

  struct CqInfo {
    uint32_t cqn = 0;
    uint64_t buf = 0, dbr = 0;
    uint32_t log_size = 0;
  };
  CqInfo create_cq(uint32_t log_size) {
    CqInfo q;
    q.log_size = log_size;
    auto in = cmd<prm::create_cq_in>(prm::Opcode::CREATE_CQ, 0, 8);
    prm::Ref<prm::create_cq_in> c(in.data());
    auto x = c.at(prm::create_cq_in::cq_context);
    x.set(prm::cqc::log_cq_size, log_size);
    x.set(prm::cqc::uar_page, uar_);
    x.set(prm::cqc::c_eqn, eqn_);
    q.dbr = alloc(64, 64);
    x.set(prm::cqc::dbr_addr, q.dbr);
    q.buf = alloc(4096);
    c.set(prm::create_cq_in::pas, 0, q.buf);
    auto out = exec(in, 16);
    check(out, "CREATE_CQ");
    q.cqn = field<prm::create_cq_out>(out, prm::create_cq_out::cqn);
    return q;
  }

  // An MTT key over `pages` contiguous pages at iova, virtual address va,
  // with the access rights given (prm::mkc lr/lw/rr/rw/a). Returns the key.
  uint32_t create_mkey(uint32_t pd, uint64_t va, uint32_t pages, uint64_t iova,
                       std::initializer_list<prm::Field<prm::mkc>> rights, uint8_t variant) {
    const uint32_t octwords = (pages + 1) / 2;
    auto in = cmd<prm::create_mkey_in>(prm::Opcode::CREATE_MKEY, 0, 16 * octwords);
    prm::Ref<prm::create_mkey_in> c(in.data());
    auto k = c.at(prm::create_mkey_in::memory_key_mkey_entry);
    prm::set_access_mode(k, prm::mkc_access_mode::kMtt);
    for (auto f : rights) k.set(f, 1);
    k.set(prm::mkc::qpn, 0xFFFFFF);
    k.set(prm::mkc::mkey_7_0, variant);
    k.set(prm::mkc::pd, pd);
    k.set(prm::mkc::start_addr, va);
    k.set(prm::mkc::len, uint64_t{pages} * 4096);
    k.set(prm::mkc::log_page_size, 12);
    k.set(prm::mkc::translations_octword_size, octwords);
    c.set(prm::create_mkey_in::translations_octword_actual_size, octwords);
    for (uint32_t i = 0; i < pages; ++i)
      c.set(prm::create_mkey_in::mtt_array, i, prm::mtt_entry(iova + 4096u * i, true, true));
    auto out = exec(in, 16);
    check(out, "CREATE_MKEY");
    return field<prm::create_mkey_out>(out, prm::create_mkey_out::mkey_index) << 8 | variant;
  }

  struct SrqInfo {
    uint32_t srqn = 0;
    uint64_t buf = 0, dbr = 0;
  };
  SrqInfo create_srq(uint32_t pd, uint32_t cqn) {
    SrqInfo s;
    auto in = cmd<prm::create_srq_in>(prm::Opcode::CREATE_SRQ, 0, 8);
    prm::Ref<prm::create_srq_in> c(in.data());
    auto x = c.at(prm::create_srq_in::srq_context_entry);
    x.set(prm::srqc::log_srq_size, 4);
    x.set(prm::srqc::log_rq_stride, 2);
    x.set(prm::srqc::pd, pd);
    x.set(prm::srqc::cqn, cqn);
    s.dbr = alloc(64, 64);
    x.set(prm::srqc::dbr_addr, s.dbr);
    s.buf = alloc(4096);
    c.set(prm::create_srq_in::pas, 0, s.buf);
    auto out = exec(in, 16);
    check(out, "CREATE_SRQ");
    s.srqn = field<prm::create_srq_out>(out, prm::create_srq_out::srqn);
    return s;
  }

  // A QP with a 16-entry RQ of 64-byte WQEs (none with an SRQ) and a
  // 16-basic-block SQ after it, in one page.
  struct QpInfo {
    uint32_t qpn = 0;
    uint64_t buf = 0, dbr = 0;
    uint64_t sq_off = 0;  // from buf
  };
  QpInfo create_qp(uint32_t st, uint32_t pd, uint32_t cqn, uint32_t srqn = 0) {
    QpInfo q;
    auto in = cmd<prm::create_qp_in>(prm::Opcode::CREATE_QP, 0, 8);
    prm::Ref<prm::create_qp_in> c(in.data());
    auto x = c.at(prm::create_qp_in::qpc);
    x.set(prm::qpc::st, st);
    x.set(prm::qpc::pm_state, prm::qpc_pm_state::kMigrated);
    x.set(prm::qpc::pd, pd);
    x.set(prm::qpc::cqn_snd, cqn);
    x.set(prm::qpc::cqn_rcv, cqn);
    x.set(prm::qpc::log_sq_size, 4);
    x.set(prm::qpc::log_rq_size, 4);
    x.set(prm::qpc::log_rq_stride, 2);
    x.set(prm::qpc::rq_type, srqn ? prm::qpc_rq_type::kSrqRq : prm::qpc_rq_type::kNonZeroRq);
    x.set(prm::qpc::srqn_rmpn_xrqn, srqn);
    x.set(prm::qpc::uar_page, uar_);
    x.set(prm::qpc::log_msg_max, 30);
    q.dbr = alloc(64, 64);
    x.set(prm::qpc::dbr_addr, q.dbr);
    q.buf = alloc(4096);
    q.sq_off = srqn ? 0 : 1024;
    c.set(prm::create_qp_in::pas, 0, q.buf);
    auto out = exec(in, 16);
    check(out, "CREATE_QP");
    q.qpn = field<prm::create_qp_out>(out, prm::create_qp_out::qpn);
    return q;
  }

  // A transition with valid attributes for every transition (RoCE path to
  // ::ffff:127.0.0.<peer_host>, 1 KiB MTU, remote QPN 0x123, next_rcv_psn
  // 0x111, next_send_psn 0x222, q_key 0x11111111).
  void modify(prm::Opcode op, uint32_t qpn, uint8_t peer_host) {
    const bool short_form = op == prm::Opcode::TO_ERR_QP || op == prm::Opcode::TO_RST_QP;
    auto in = short_form ? cmd<prm::qp_2rst_in>(op) : cmd<prm::rst2init_qp_in>(op);
    prm::Ref<prm::qp_2rst_in>(in.data()).set(prm::qp_2rst_in::qpn, qpn);
    if (!short_form) {
      prm::Ref<prm::rst2init_qp_in> c(in.data());
      auto x = c.at(prm::rst2init_qp_in::qpc);
      auto p = x.at(prm::qpc::primary_address_path);
      p.set(prm::ads::vhca_port_num, 1);
      p.set(prm::ads::grh, 1);
      const fw::Gid dst = fw::ipv4_mapped_gid(127, 0, 0, peer_host);
      p.set_bytes(prm::ads::rgid_rip, std::as_bytes(std::span(dst)));
      p.set(prm::ads::rmac_47_32, 0x026b);
      p.set(prm::ads::rmac_31_0, 0x62760002);
      p.set(prm::ads::udp_sport, 0xC123);
      p.set(prm::ads::hop_limit, 64);
      p.set(prm::ads::ack_timeout, 14);
      x.set(prm::qpc::mtu, prm::qpc_mtu::k1kBytes);
      x.set(prm::qpc::log_msg_max, 30);
      x.set(prm::qpc::remote_qpn, 0x123);
      x.set(prm::qpc::next_rcv_psn, 0x111);
      x.set(prm::qpc::next_send_psn, 0x222);
      x.set(prm::qpc::retry_count, 7);
      x.set(prm::qpc::rnr_retry, 7);
      x.set(prm::qpc::min_rnr_nak, 12);
      x.set(prm::qpc::log_rra_max, 2);
      x.set(prm::qpc::log_sra_max, 2);
      x.set(prm::qpc::q_key, 0x11111111);
    }
    check(exec(in, 16), "modify QP");
  }

 private:
  MemPci pci_;
  fw::FwConfig cfg_;
  fw::CommandRegistry reg_;
  std::unique_ptr<fw::FwContext> ctx_;
  std::byte* arena_;
  std::size_t next_ = 0;
  uint32_t uar_ = 0, eqn_ = 0;
  uint64_t eq_buf_ = 0;
};

}  // namespace kbv::fuzz
