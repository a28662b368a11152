// SPDX-License-Identifier: BSD-3-Clause
//
// kbv/lab.h and kbv_device_read_clock on model HCAs: the port registers
// through ACCESS_REG (PAOS, PTYS, PMTU; PPLM / PDDR / MCIA refused with
// BAD_PARAM), PPCNT counting the model's wire — injected drops and
// corruptions included —, capability blocks, the free-running clock, the
// health buffer after a firmware assert, the command observer, and recovery:
// function-level reset in place, fatal -> reopen -> traffic, FLR while QPs
// exist.
#include <kbv/lab.h>

#include "hca/prm/hca_cap.hpp"
#include "hca/prm/reg.hpp"
#include "verbs_fixture.hpp"

namespace kbv::test {
namespace {

using Reg = std::vector<std::byte>;

Reg reg_buf(size_t bytes) { return Reg(bytes); }

kbv_status_t read_reg(kbv_device_t dev, uint16_t id, Reg& r) {
  return kbv_device_access_reg(dev, id, KBV_REG_READ, 0, r.data(), static_cast<uint32_t>(r.size()),
                               KBV_EQ_NONE, 0);
}

// A port register image with local_port 1 (bits 8..15 of every port register).
template <class L>
Reg port_reg() {
  Reg r(L::kBits / 8);
  prm::Ref<L>(r.data()).set(L::local_port, 1);
  return r;
}

Reg ppcnt(kbv_device_t dev, prm::PpcntGroup g, uint32_t prio = 0, bool clr = false) {
  Reg r = port_reg<prm::ppcnt_reg>();
  prm::Ref<prm::ppcnt_reg> p(r.data());
  p.set(prm::ppcnt_reg::grp, static_cast<uint8_t>(g));
  p.set(prm::ppcnt_reg::prio_tc, prio);
  p.set(prm::ppcnt_reg::clr, clr ? 1 : 0);
  kbv_status_t st = read_reg(dev, KBV_REG_PPCNT, r);
  EXPECT_EQ(st, KBV_SUCCESS) << kbv_status_name(st);
  return r;
}

struct Side {
  kbv_pd_t pd = 0;
  kbv_cq_t cq = 0;
  kbv_qp_t qp = 0;
  uint32_t qpn = 0;
  kbv_mr_t mr = 0;
  uint32_t lkey = 0, rkey = 0;
  std::vector<uint8_t> buf = std::vector<uint8_t>(1 << 16);
};

class LabApi : public VerbsE2e {
 protected:
  // Polls pred (which drives the device itself: synchronous calls, CQ
  // polls) until it holds or the limit passes.
  static bool progress_until(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      if (pred()) return true;
      std::this_thread::sleep_for(20us);
    }
    return pred();
  }
  void setup(Side& s, SimDev& d) {
    s.pd = alloc_pd(d);
    s.cq = make_cq(d, 256);
    ASSERT_EQ(kbv_mr_reg(s.pd, s.buf.data(), s.buf.size(),
                         KBV_ACCESS_LOCAL_WRITE | KBV_ACCESS_REMOTE_WRITE | KBV_ACCESS_REMOTE_READ,
                         KBV_EQ_NONE, 0, &s.mr),
              KBV_SUCCESS);
    ASSERT_EQ(kbv_mr_get_keys(s.mr, &s.lkey, &s.rkey), KBV_SUCCESS);
    s.qp = make_qp(s.pd, KBV_QPT_RC, s.cq, s.cq);
    ASSERT_EQ(kbv_qp_get_num(s.qp, &s.qpn), KBV_SUCCESS);
  }
  void pair(Side& a, SimDev& da, Side& b, SimDev& db) {
    setup(a, da);
    setup(b, db);
    ASSERT_EQ(connect(a.qp, KBV_QPT_RC, db, b.qpn), KBV_SUCCESS);
    ASSERT_EQ(connect(b.qp, KBV_QPT_RC, da, a.qpn, 200, 100), KBV_SUCCESS);
  }
  static void close(Side& s) {
    if (s.qp) {
      EXPECT_EQ(kbv_qp_destroy(s.qp, KBV_EQ_NONE, 0), KBV_SUCCESS);
    }
    if (s.cq) {
      EXPECT_EQ(kbv_cq_destroy(s.cq, KBV_EQ_NONE, 0), KBV_SUCCESS);
    }
    if (s.mr) {
      EXPECT_EQ(kbv_mr_dereg(s.mr, KBV_EQ_NONE, 0), KBV_SUCCESS);
    }
    if (s.pd) {
      EXPECT_EQ(kbv_pd_dealloc(s.pd, KBV_EQ_NONE, 0), KBV_SUCCESS);
    }
    s = Side{};
  }
  // n signalled RDMA WRITEs of `len` bytes a -> b, each checked on b.
  void writes(Side& a, Side& b, int n, uint32_t len) {
    for (int i = 0; i < n; ++i) {
      for (uint32_t k = 0; k < len; ++k) a.buf[k] = static_cast<uint8_t>(i * 13 + k);
      kbv_sge_t sg{reinterpret_cast<uint64_t>(a.buf.data()), len, a.lkey};
      kbv_send_wr_t w{};
      w.wr_id = static_cast<uint64_t>(i);
      w.opcode = KBV_WR_RDMA_WRITE;
      w.flags = KBV_SEND_SIGNALED;
      w.sg_list = &sg;
      w.num_sge = 1;
      w.remote_addr = reinterpret_cast<uint64_t>(b.buf.data());
      w.rkey = b.rkey;
      uint32_t posted = 0;
      ASSERT_EQ(kbv_post_send(a.qp, &w, 1, &posted), KBV_SUCCESS);
      kbv_wc_t wc{};
      ASSERT_TRUE(progress_until([&] { return kbv_poll_cq(a.cq, &wc, 1) == 1; }, 20s));
      ASSERT_EQ(wc.status, KBV_SUCCESS) << kbv_status_name(static_cast<kbv_status_t>(wc.status));
      ASSERT_EQ(std::memcmp(a.buf.data(), b.buf.data(), len), 0) << "write " << i;
    }
  }
};

TEST_F(LabApi, PortRegistersReadAndWrite) {
  SimDev& d = open_dev();
  // PAOS: admin and oper UP once the link trained.
  Reg paos = port_reg<prm::paos_reg>();
  ASSERT_EQ(read_reg(d.dev, KBV_REG_PAOS, paos), KBV_SUCCESS);
  prm::CRef<prm::paos_reg> p(paos.data());
  EXPECT_EQ(p.get(prm::paos_reg::admin_status), 1u);
  EXPECT_EQ(p.get(prm::paos_reg::oper_status), 1u);
  // PTYS: Ethernet, 100GBASE-CR4 supported, administered and operating.
  Reg ptys = port_reg<prm::ptys_reg>();
  prm::Ref<prm::ptys_reg>(ptys.data()).set(prm::ptys_reg::proto_mask, prm::kPtysEn);
  ASSERT_EQ(read_reg(d.dev, KBV_REG_PTYS, ptys), KBV_SUCCESS);
  prm::CRef<prm::ptys_reg> t(ptys.data());
  EXPECT_EQ(t.get(prm::ptys_reg::eth_proto_capability), prm::kEthProto100GBaseCr4);
  EXPECT_EQ(t.get(prm::ptys_reg::eth_proto_oper), prm::kEthProto100GBaseCr4);
  // PTYS for InfiniBand: the port is Ethernet.
  Reg ptys_ib = port_reg<prm::ptys_reg>();
  prm::Ref<prm::ptys_reg>(ptys_ib.data()).set(prm::ptys_reg::proto_mask, prm::kPtysIb);
  EXPECT_EQ(read_reg(d.dev, KBV_REG_PTYS, ptys_ib), KBV_ERR_FW_BAD_PARAM);
  // PMTU: write 4096, the port query follows (the same MTU as the vport's).
  Reg pmtu = port_reg<prm::pmtu_reg>();
  prm::Ref<prm::pmtu_reg>(pmtu.data()).set(prm::pmtu_reg::admin_mtu, 4096);
  ASSERT_EQ(kbv_device_access_reg(d.dev, KBV_REG_PMTU, KBV_REG_WRITE, 0, pmtu.data(),
                                  static_cast<uint32_t>(pmtu.size()), KBV_EQ_NONE, 0),
            KBV_SUCCESS);
  prm::CRef<prm::pmtu_reg> m(pmtu.data());
  EXPECT_EQ(m.get(prm::pmtu_reg::max_mtu), 9216u);
  EXPECT_EQ(m.get(prm::pmtu_reg::oper_mtu), 4096u);
  kbv_port_attr_t pa{};
  ASSERT_EQ(kbv_port_query(d.dev, 1, &pa, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(pa.mtu_bytes, 4096u);
  prm::Ref<prm::pmtu_reg>(pmtu.data()).set(prm::pmtu_reg::admin_mtu, 64);  // below 128
  EXPECT_EQ(kbv_device_access_reg(d.dev, KBV_REG_PMTU, KBV_REG_WRITE, 0, pmtu.data(),
                                  static_cast<uint32_t>(pmtu.size()), KBV_EQ_NONE, 0),
            KBV_ERR_FW_BAD_PARAM);
  // PAOS down: the port goes DOWN (with its event); up again: ACTIVE.
  prm::Ref<prm::paos_reg> w(paos.data());
  w.set(prm::paos_reg::ase, 1);
  w.set(prm::paos_reg::admin_status, 2);
  ASSERT_EQ(kbv_device_access_reg(d.dev, KBV_REG_PAOS, KBV_REG_WRITE, 0, paos.data(),
                                  static_cast<uint32_t>(paos.size()), KBV_EQ_NONE, 0),
            KBV_SUCCESS);
  EXPECT_EQ(p.get(prm::paos_reg::admin_status), 2u);
  EXPECT_EQ(p.get(prm::paos_reg::oper_status), 2u);
  ASSERT_EQ(kbv_port_query(d.dev, 1, &pa, KBV_EQ_NONE, 0), KBV_SUCCESS);
  EXPECT_EQ(pa.state, KBV_PORT_DOWN);
  w.set(prm::paos_reg::ase, 1);  // the image read back has ase clear (write-only)
  w.set(prm::paos_reg::admin_status, 1);
  ASSERT_EQ(kbv_device_access_reg(d.dev, KBV_REG_PAOS, KBV_REG_WRITE, 0, paos.data(),
                                  static_cast<uint32_t>(paos.size()), KBV_EQ_NONE, 0),
            KBV_SUCCESS);
  EXPECT_EQ(p.get(prm::paos_reg::oper_status), 1u);
  wait_port_active(d);
  // Registers the model cannot answer truthfully: refused, PRM status BAD_PARAM.
  for (uint16_t id : {KBV_REG_PPLM, KBV_REG_PDDR, KBV_REG_MCIA}) {
    Reg r = reg_buf(256);
    r[1] = std::byte{1};
    EXPECT_EQ(read_reg(d.dev, id, r), KBV_ERR_FW_BAD_PARAM) << std::hex << id;
  }
  // A buffer shorter than the register: BAD_INPUT_LENGTH; local_port 2: BAD_PARAM.
  Reg short_ppcnt = reg_buf(64);
  short_ppcnt[1] = std::byte{1};
  EXPECT_EQ(read_reg(d.dev, KBV_REG_PPCNT, short_ppcnt), KBV_ERR_FW_BAD_INPUT_LENGTH);
  Reg port2 = port_reg<prm::paos_reg>();
  prm::Ref<prm::paos_reg>(port2.data()).set(prm::paos_reg::local_port, 2);
  EXPECT_EQ(read_reg(d.dev, KBV_REG_PAOS, port2), KBV_ERR_FW_BAD_PARAM);
  EXPECT_EQ(kbv_device_access_reg(d.dev, KBV_REG_PAOS, 7, 0, paos.data(), 16, KBV_EQ_NONE, 0),
            KBV_ERR_INVALID_ARGUMENT);
}

TEST_F(LabApi, PpcntCountsTheWireWithInjectedDropsAndCorruption) {
  sim::ModelConfig faulty;
  faulty.faults.drop = 0.1;
  faulty.faults.corrupt = 0.1;
  faulty.faults.seed = 7;
  SimDev& da = open_dev(faulty);
  SimDev& db = open_dev();
  Side a, b;
  pair(a, da, b, db);
  writes(a, b, 60, 1500);
  // Traffic is acknowledged: A's transmissions are over.
  const sim::engine::EngineStats ea = da.model->engine_stats();
  ASSERT_GT(ea.fault_dropped, 0u);
  ASSERT_GT(ea.fault_corrupted, 0u);
  using E = prm::eth_802_3_cntrs;
  using I = prm::eth_2863_cntrs;
  using P = prm::eth_per_prio_cntrs;
  Reg a3 = ppcnt(da.dev, prm::PpcntGroup::IEEE_802_3);
  Reg a2863 = ppcnt(da.dev, prm::PpcntGroup::RFC_2863);
  auto A3 = prm::CRef<prm::ppcnt_reg>(a3.data()).at(prm::ppcnt_reg::eth_802_3);
  auto A2863 = prm::CRef<prm::ppcnt_reg>(a2863.data()).at(prm::ppcnt_reg::eth_2863);
  // 60 writes of 1500 B at path MTU 1024: two packets each, plus retransmissions.
  EXPECT_GE(A3.get(E::a_frames_transmitted_ok), 120u);
  EXPECT_GE(A3.get(E::a_octets_transmitted_ok), 60u * 1500);
  EXPECT_EQ(A2863.get(I::if_out_discards), ea.fault_dropped);
  EXPECT_EQ(A2863.get(I::if_out_ucast_pkts), A3.get(E::a_frames_transmitted_ok));
  // B received A's corrupted datagrams as frame check sequence (ICRC) errors.
  const auto b_has_all = [&] {
    Reg r = ppcnt(db.dev, prm::PpcntGroup::IEEE_802_3);
    return prm::CRef<prm::ppcnt_reg>(r.data())
               .at(prm::ppcnt_reg::eth_802_3)
               .get(E::a_frame_check_sequence_errors) == ea.fault_corrupted;
  };
  EXPECT_TRUE(progress_until(b_has_all, 5s));
  Reg b3 = ppcnt(db.dev, prm::PpcntGroup::IEEE_802_3);
  Reg b2863 = ppcnt(db.dev, prm::PpcntGroup::RFC_2863);
  Reg bp0 = ppcnt(db.dev, prm::PpcntGroup::PER_PRIORITY, 0);
  Reg bp3 = ppcnt(db.dev, prm::PpcntGroup::PER_PRIORITY, 3);
  auto B3 = prm::CRef<prm::ppcnt_reg>(b3.data()).at(prm::ppcnt_reg::eth_802_3);
  auto B2863 = prm::CRef<prm::ppcnt_reg>(b2863.data()).at(prm::ppcnt_reg::eth_2863);
  auto BP0 = prm::CRef<prm::ppcnt_reg>(bp0.data()).at(prm::ppcnt_reg::eth_per_prio);
  auto BP3 = prm::CRef<prm::ppcnt_reg>(bp3.data()).at(prm::ppcnt_reg::eth_per_prio);
  EXPECT_GE(B3.get(E::a_frames_received_ok), 120u);
  EXPECT_EQ(B2863.get(I::if_in_errors), B3.get(E::a_frame_check_sequence_errors));
  EXPECT_EQ(BP0.get(P::rx_frames), B3.get(E::a_frames_received_ok));
  EXPECT_EQ(BP0.get(P::rx_octets), B3.get(E::a_octets_received_ok));
  EXPECT_EQ(BP3.get(P::rx_frames), 0u);  // every packet is priority 0
  // What A received from B (ACKs) is what B sent.
  EXPECT_EQ(A3.get(E::a_frames_received_ok) <= B3.get(E::a_frames_transmitted_ok), true);
  // clr: read and clear; then the group starts from zero.
  (void)ppcnt(db.dev, prm::PpcntGroup::IEEE_802_3, 0, true);
  Reg after = ppcnt(db.dev, prm::PpcntGroup::IEEE_802_3);
  EXPECT_EQ(prm::CRef<prm::ppcnt_reg>(after.data())
                .at(prm::ppcnt_reg::eth_802_3)
                .get(E::a_frame_check_sequence_errors),
            0u);
  // Groups the model has nothing honest for: refused.
  Reg phy = port_reg<prm::ppcnt_reg>();
  prm::Ref<prm::ppcnt_reg>(phy.data())
      .set(prm::ppcnt_reg::grp, static_cast<uint8_t>(prm::PpcntGroup::PHYSICAL_LAYER));
  EXPECT_EQ(read_reg(db.dev, KBV_REG_PPCNT, phy), KBV_ERR_FW_BAD_PARAM);
  close(a);
  close(b);
}

TEST_F(LabApi, CapsClockAndObserver) {
  static std::vector<kbv_cmd_record_t> seen;
  seen.clear();
  ASSERT_EQ(
      kbv_set_cmd_observer([](const kbv_cmd_record_t* r, void*) { seen.push_back(*r); }, nullptr),
      KBV_SUCCESS);
  SimDev& d = open_dev();
  ASSERT_EQ(kbv_set_cmd_observer(nullptr, nullptr), KBV_SUCCESS);
  // The bring-up's commands, in the PRM order, all successful.
  ASSERT_GE(seen.size(), 10u);
  EXPECT_EQ(seen[0].opcode, 0x104);  // ENABLE_HCA
  EXPECT_EQ(seen[1].opcode, 0x10A);  // QUERY_ISSI
  bool init_hca = false;
  for (const auto& r : seen) {
    EXPECT_EQ(r.status, KBV_SUCCESS) << std::hex << r.opcode;
    init_hca |= r.opcode == 0x102;
  }
  EXPECT_TRUE(init_hca);
  std::vector<std::byte> cur(KBV_HCA_CAP_BYTES), max(KBV_HCA_CAP_BYTES);
  ASSERT_EQ(kbv_device_query_hca_cap(d.dev, KBV_CAP_GENERAL, KBV_CAP_CUR, cur.data(),
                                     KBV_HCA_CAP_BYTES, KBV_EQ_NONE, 0),
            KBV_SUCCESS);
  ASSERT_EQ(kbv_device_query_hca_cap(d.dev, KBV_CAP_GENERAL, KBV_CAP_MAX, max.data(),
                                     KBV_HCA_CAP_BYTES, KBV_EQ_NONE, 0),
            KBV_SUCCESS);
  prm::CRef<prm::cmd_hca_cap> c(cur.data()), mx(max.data());
  EXPECT_EQ(c.get(prm::cmd_hca_cap::cmdif_checksum), 0u);  // bring-up turned it off
  EXPECT_EQ(c.get(prm::cmd_hca_cap::device_frequency_khz), 1000000u);
  EXPECT_EQ(c.get(prm::cmd_hca_cap::log_max_qp), mx.get(prm::cmd_hca_cap::log_max_qp));
  EXPECT_EQ(kbv_device_query_hca_cap(d.dev, 0, KBV_CAP_CUR, cur.data(), 100, KBV_EQ_NONE, 0),
            KBV_ERR_INVALID_ARGUMENT);
  // The clock: 1 GHz, and it moves (the model refreshes it every 50 ms).
  uint64_t t0 = 0, t1 = 0;
  uint32_t khz = 0;
  ASSERT_EQ(kbv_device_read_clock(d.dev, &t0, &khz), KBV_SUCCESS);
  EXPECT_EQ(khz, 1000000u);
  EXPECT_TRUE(progress_until(
      [&] { return kbv_device_read_clock(d.dev, &t1, nullptr) == KBV_SUCCESS && t1 > t0; }, 5s));
  EXPECT_GT(t1, t0);
}

TEST_F(LabApi, HealthAssertDecodedAndResetRecoversInPlace) {
  SimDev& d = open_dev();
  kbv_eq_t eq = make_eq();
  kbv_health_t h{};
  ASSERT_EQ(kbv_device_read_health(d.dev, &h), KBV_SUCCESS);
  EXPECT_EQ(h.synd, 0);
  EXPECT_EQ(h.assert_callra, 0u);
  sim::PciDevice::HealthAssert a;
  a.synd = 0x1;  // FW error
  a.ext_synd = 0x1234;
  a.irisc_index = 3;
  a.assert_callra = 0x00c0ffee;
  a.assert_var = {1, 2, 3, 4, 5};
  d.model->device().inject_health_assert(a);
  ASSERT_EQ(kbv_device_read_health(d.dev, &h), KBV_SUCCESS);
  EXPECT_EQ(h.synd, 0x1);
  EXPECT_EQ(h.ext_synd, 0x1234);
  EXPECT_EQ(h.irisc_index, 3);
  EXPECT_EQ(h.assert_callra, 0x00c0ffeeu);
  EXPECT_EQ(h.assert_var[4], 5u);
  EXPECT_EQ(h.rfr, 1);
  EXPECT_EQ(h.fw_version, h.fw_rev);
  EXPECT_EQ(h.hw_id, 0x1017u);
  // The driver's health check notices (the next device query fails).
  EXPECT_TRUE(progress_until(
      [&] {
        kbv_device_attr_t at{};
        return kbv_device_query(d.dev, &at, KBV_EQ_NONE, 0) == KBV_ERR_DEVICE_FATAL;
      },
      10s));
  // Reset: no children, so the device comes back under the same handle.
  kbv_reset_info_t ri{};
  ASSERT_EQ(kbv_device_reset(d.dev, &ri), KBV_SUCCESS);
  EXPECT_EQ(ri.brought_up, 1u);
  EXPECT_GT(ri.bringup_ns, 0u);
  ASSERT_EQ(kbv_device_read_health(d.dev, &h), KBV_SUCCESS);
  EXPECT_EQ(h.synd, 0);
  kbv_device_attr_t at{};
  EXPECT_EQ(kbv_device_query(d.dev, &at, KBV_EQ_NONE, 0), KBV_SUCCESS);
  kbv_pd_t pd = 0;
  EXPECT_EQ(kbv_pd_alloc(d.dev, KBV_EQ_NONE, 0, &pd), KBV_SUCCESS);
  EXPECT_EQ(kbv_pd_dealloc(pd, KBV_EQ_NONE, 0), KBV_SUCCESS);
  (void)eq;
}

// Fatal -> close -> reopen (same model, same process) -> traffic; then an
// FLR while QPs exist: the device is failed, everything closes, a reopen works.
TEST_F(LabApi, FatalThenReopenThenTrafficAndFlrWithQps) {
  SimDev& da = open_dev();
  SimDev& db = open_dev();
  {
    Side a, b;
    pair(a, da, b, db);
    writes(a, b, 4, 512);
    da.model->device().inject_health_fatal(0x8, 0);  // HW unrecoverable
    kbv_send_wr_t w{};
    EXPECT_TRUE(progress_until(
        [&] {
          kbv_device_attr_t at{};
          return kbv_device_query(da.dev, &at, KBV_EQ_NONE, 0) == KBV_ERR_DEVICE_FATAL;
        },
        10s));
    (void)w;
    close(a);
    close(b);
  }
  ASSERT_EQ(kbv_device_close(da.dev, KBV_EQ_NONE, 0), KBV_SUCCESS);
  da.dev = 0;
  // The same function: the open finds the fatal syndrome in the health
  // buffer and resets the function before its bring-up.
  ASSERT_EQ(kbv_device_open(da.uri.c_str(), nullptr, KBV_EQ_NONE, 0, &da.dev), KBV_SUCCESS);
  kbv_health_t h{};
  ASSERT_EQ(kbv_device_read_health(da.dev, &h), KBV_SUCCESS);
  EXPECT_EQ(h.synd, 0);
  wait_port_active(da);
  kbv_reset_info_t ri{};
  {
    Side a, b;
    pair(a, da, b, db);
    writes(a, b, 4, 512);
    // FLR with a QP open: the device fails; its children and it close.
    ASSERT_EQ(kbv_device_reset(da.dev, &ri), KBV_SUCCESS);
    EXPECT_EQ(ri.brought_up, 0u);
    kbv_device_attr_t at{};
    EXPECT_EQ(kbv_device_query(da.dev, &at, KBV_EQ_NONE, 0), KBV_ERR_DEVICE_FATAL);
    close(a);
    close(b);
  }
  ASSERT_EQ(kbv_device_close(da.dev, KBV_EQ_NONE, 0), KBV_SUCCESS);
  da.dev = 0;
  ASSERT_EQ(kbv_device_open(da.uri.c_str(), nullptr, KBV_EQ_NONE, 0, &da.dev), KBV_SUCCESS);
  wait_port_active(da);
  Side a, b;
  pair(a, da, b, db);
  writes(a, b, 4, 512);
  close(a);
  close(b);
}

}  // namespace
}  // namespace kbv::test
