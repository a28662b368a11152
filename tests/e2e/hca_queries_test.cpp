// SPDX-License-Identifier: BSD-3-Clause
//
// End to end: the device, port and address queries of kbv's driver
// (src/hca/cmd) against a model HCA — every control command not already
// exercised by bring-up (hca_model_test.cpp) or the object tests
// (hca_objects_test.cpp): QUERY_ADAPTER, SET_DRIVER_VERSION, ACCESS_REG,
// QUERY_EQ, ALLOC/DEALLOC_TRANSPORT_DOMAIN, QUERY_VPORT_STATE,
// QUERY_NIC_VPORT_CONTEXT, QUERY_HCA_VPORT_CONTEXT, QUERY_HCA_VPORT_GID,
// QUERY/SET_ROCE_ADDRESS.
#include "hca/cmd/boot.hpp"
#include "hca/cmd/eq.hpp"
#include "hca/cmd/pd.hpp"
#include "hca/cmd/vport.hpp"
#include "hca/hca.hpp"
#include "hca/io/platform_io.hpp"
#include "hca/prm/boot.hpp"
#include "hca/prm/vport.hpp"
#include "platform/device.hpp"
#include "sim/model.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

namespace kbv {
namespace {

using namespace std::chrono_literals;

class HcaQueries : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> n{0};
    auto m = sim::Model::create("e2e-queries-" + std::to_string(n++));
    ASSERT_TRUE(m.has_value()) << m.status().to_string();
    model_ = std::move(*m);
    auto d = platform::DeviceHandle::open(sim::Model::sys(), model_->bdf());
    ASSERT_TRUE(d.has_value()) << d.status().to_string();
    dev_ = std::move(*d);
    io_ = std::make_unique<hca::PlatformDeviceIo>(*dev_);
    hca_ = std::make_unique<hca::Hca>(*io_);
    hca_->set_event_handler([this](const hca::HcaEvent& e) {
      if (e.type == static_cast<uint8_t>(prm::EventType::PORT_CHANGE)) port_events_++;
    });
    Status s = hca_->open_sync(10'000'000'000ull);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
  }
  void TearDown() override {
    if (hca_) {
      Status s = hca_->close_sync(10'000'000'000ull);
      EXPECT_TRUE(s.is_ok()) << s.to_string();
    }
    hca_.reset();
    if (io_) {
      EXPECT_EQ(io_->live_blocks(), 0u);
    }
    io_.reset();
    dev_.reset();
    model_.reset();
  }
  // Issues one command through `start` and drives the driver until it
  // completes; returns its result.
  template <class T, class Start>
  Result<T> run(Start start) {
    std::optional<Result<T>> got;
    Status s = start([&](Result<T> r) { got.emplace(std::move(r)); });
    if (s != KBV_PENDING) return s;
    const auto end = std::chrono::steady_clock::now() + 5s;
    while (!got && std::chrono::steady_clock::now() < end) hca_->poll();
    if (!got) return KBV_ERR_TIMEOUT;
    return std::move(*got);
  }
  Status run_status(const std::function<Status(hca::cmd::DoneStatus)>& start) {
    std::optional<Status> got;
    Status s = start([&](Status r) { got = r; });
    if (s != KBV_PENDING) return s;
    const auto end = std::chrono::steady_clock::now() + 5s;
    while (!got && std::chrono::steady_clock::now() < end) hca_->poll();
    return got ? *got : Status{KBV_ERR_TIMEOUT};
  }

  std::unique_ptr<sim::Model> model_;
  std::unique_ptr<platform::DeviceHandle> dev_;
  std::unique_ptr<hca::PlatformDeviceIo> io_;
  std::unique_ptr<hca::Hca> hca_;
  int port_events_ = 0;
};

TEST_F(HcaQueries, AdapterDriverVersionAndHostEndianness) {
  auto a = run<hca::cmd::AdapterInfo>(
      [&](auto done) { return hca::cmd::query_adapter(hca_->cmdq(), done); });
  ASSERT_TRUE(a.has_value()) << a.status().to_string();
  EXPECT_EQ(a->ieee_vendor_id, 0x0002c9u);  // Mellanox OUI
  EXPECT_EQ(a->vsd_vendor_id, 0x15b3);
  EXPECT_FALSE(a->psid.empty());

  ASSERT_TRUE(hca_->caps().driver_version);
  EXPECT_TRUE(run_status([&](auto done) {
                return hca::cmd::set_driver_version(hca_->cmdq(), "kbv,e2e,0.1", done);
              }).is_ok());
  std::atomic<bool> seen{false};
  std::string stored;
  model_->firmware().post([&] {
    stored = model_->firmware().context().hca().driver_version;
    seen = true;
  });
  while (!seen) std::this_thread::sleep_for(100us);
  EXPECT_EQ(stored, "kbv,e2e,0.1");

  // HOST_ENDIANNESS reads back what bring-up wrote (0: little-endian host).
  hca::cmd::AccessRegAttr rd;
  rd.register_id = prm::RegId::HOST_ENDIANNESS;
  rd.op = prm::AccessRegOpMod::READ;
  rd.data.resize(prm::register_host_endianness::kBits / 8);
  auto reg = run<std::vector<std::byte>>(
      [&](auto done) { return hca::cmd::access_reg(hca_->cmdq(), rd, done); });
  ASSERT_TRUE(reg.has_value()) << reg.status().to_string();
  ASSERT_EQ(reg->size(), prm::register_host_endianness::kBits / 8);
  EXPECT_EQ(
      prm::CRef<prm::register_host_endianness>(reg->data()).get(prm::register_host_endianness::he),
      0u);
}

TEST_F(HcaQueries, QueryEqSeesTheDriversAsyncEq) {
  const uint32_t eqn = hca_->async_eq()->eqn();
  auto q =
      run<hca::cmd::EqInfo>([&](auto done) { return hca::cmd::query_eq(hca_->cmdq(), eqn, done); });
  ASSERT_TRUE(q.has_value()) << q.status().to_string();
  EXPECT_EQ(q->log_eq_size, hca_->config().async_eq_log_size);
  EXPECT_EQ(q->uar_page, hca_->uar().index());
  EXPECT_EQ(q->intr, hca_->config().async_vector);
  // An EQ number that does not exist.
  auto bad = run<hca::cmd::EqInfo>(
      [&](auto done) { return hca::cmd::query_eq(hca_->cmdq(), eqn + 77, done); });
  EXPECT_FALSE(bad.has_value());
}

TEST_F(HcaQueries, TransportDomainAllocAndDealloc) {
  auto td = run<uint32_t>(
      [&](auto done) { return hca::cmd::alloc_transport_domain(hca_->cmdq(), done); });
  ASSERT_TRUE(td.has_value()) << td.status().to_string();
  EXPECT_TRUE(run_status([&](auto done) {
                return hca::cmd::dealloc_transport_domain(hca_->cmdq(), *td, done);
              }).is_ok());
  // Freeing it twice is a bad resource.
  Status again = run_status(
      [&](auto done) { return hca::cmd::dealloc_transport_domain(hca_->cmdq(), *td, done); });
  EXPECT_EQ(again.code(), KBV_ERR_FW_BAD_RESOURCE) << again.to_string();
}

TEST_F(HcaQueries, PortStateFollowsTheLink) {
  // The port comes up link_up_delay after INIT_HCA. Its port-change EQE is
  // raised only if the async EQ already exists when the link trains (as on
  // silicon), which a slow bring-up can miss: wait for the state itself.
  auto query_state = [&] {
    return run<hca::cmd::VportState>([&](auto done) {
      return hca::cmd::query_vport_state(hca_->cmdq(), prm::vport_state_op_mod::kVnicVport, {},
                                         done);
    });
  };
  auto vs = query_state();
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (vs.has_value() && vs->state != prm::vport_state::kUp &&
         std::chrono::steady_clock::now() < end) {
    hca_->poll();
    vs = query_state();
  }
  ASSERT_TRUE(vs.has_value()) << vs.status().to_string();
  ASSERT_EQ(vs->state, prm::vport_state::kUp);
  auto hv = run<hca::cmd::HcaVportContext>(
      [&](auto done) { return hca::cmd::query_hca_vport_context(hca_->cmdq(), 1, {}, done); });
  ASSERT_TRUE(hv.has_value()) << hv.status().to_string();
  EXPECT_EQ(hv->port_state, prm::ib_port_state::kActive);

  // Link down with the async EQ in place: a port-change EQE follows.
  const int before = port_events_;
  model_->set_link(false);
  const auto end2 = std::chrono::steady_clock::now() + 5s;
  while (port_events_ == before && std::chrono::steady_clock::now() < end2) hca_->poll();
  EXPECT_GT(port_events_, before);
  vs = query_state();
  ASSERT_TRUE(vs.has_value());
  EXPECT_EQ(vs->state, prm::vport_state::kDown);
}

TEST_F(HcaQueries, NicVportContextAndGidTable) {
  auto nv = run<hca::cmd::NicVportContext>(
      [&](auto done) { return hca::cmd::query_nic_vport_context(hca_->cmdq(), {}, done); });
  ASSERT_TRUE(nv.has_value()) << nv.status().to_string();
  EXPECT_TRUE(nv->roce_en);  // bring-up enabled RoCE
  EXPECT_NE(nv->permanent_mac, 0u);

  // GID 0 is the port's IPv4-mapped address ::ffff:127.0.0.N.
  auto g = run<std::vector<hca::cmd::Gid>>([&](auto done) {
    return hca::cmd::query_hca_vport_gid(hca_->cmdq(), 1, 0, hca_->caps().roce_address_table_size,
                                         done);
  });
  ASSERT_TRUE(g.has_value()) << g.status().to_string();
  ASSERT_EQ(g->size(), 1u);
  const hca::cmd::Gid want = {0, 0, 0,    0,    0,   0, 0, 0,
                              0, 0, 0xff, 0xff, 127, 0, 0, model_->port_host()};
  EXPECT_EQ((*g)[0], want);
}

TEST_F(HcaQueries, RoceAddressTableSetAndQuery) {
  auto a0 = run<hca::cmd::RoceAddress>(
      [&](auto done) { return hca::cmd::query_roce_address(hca_->cmdq(), 1, 0, done); });
  ASSERT_TRUE(a0.has_value()) << a0.status().to_string();
  EXPECT_EQ(a0->gid[15], model_->port_host());
  EXPECT_EQ(a0->version, prm::roce_version::kV2);

  // Add a second address (index 1) and read it back.
  hca::cmd::RoceAddress a1;
  a1.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 42};
  a1.source_mac = a0->source_mac;
  a1.l3_type = prm::roce_l3_type::kIpv4;
  a1.version = prm::roce_version::kV2;
  ASSERT_TRUE(run_status([&](auto done) {
                return hca::cmd::set_roce_address(hca_->cmdq(), 1, 1, a1, done);
              }).is_ok());
  auto back = run<hca::cmd::RoceAddress>(
      [&](auto done) { return hca::cmd::query_roce_address(hca_->cmdq(), 1, 1, done); });
  ASSERT_TRUE(back.has_value()) << back.status().to_string();
  EXPECT_EQ(back->gid, a1.gid);
  EXPECT_EQ(back->source_mac, a1.source_mac);
  EXPECT_EQ(back->version, a1.version);
  // An index past the RoCE address table (roce_cap.roce_address_table_size)
  // is a bad index.
  ASSERT_GT(hca_->caps().roce_address_table_size, 1u);
  Status bad = run_status([&](auto done) {
    return hca::cmd::set_roce_address(
        hca_->cmdq(), 1, static_cast<uint16_t>(hca_->caps().roce_address_table_size), a1, done);
  });
  EXPECT_EQ(bad.code(), KBV_ERR_FW_BAD_INDEX) << bad.to_string();
}

}  // namespace
}  // namespace kbv
