// SPDX-License-Identifier: BSD-3-Clause
//
// End to end: kbv's mlx5 driver (src/hca) brings up a model HCA (src/sim)
// through the production platform code (VFIO backend, DMA, MMIO) talking to
// the emulated VFIO kernel — the same path it takes on silicon.
#include "hca/cmd/boot.hpp"
#include "hca/cmd/vport.hpp"
#include "hca/hca.hpp"
#include "hca/io/platform_io.hpp"
#include "hca/prm/eqe.hpp"
#include "hca/prm/opcodes.hpp"
#include "platform/device.hpp"
#include "sim/model.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace kbv {
namespace {

using namespace std::chrono_literals;
constexpr uint64_t kSecond = 1'000'000'000ull;

class HcaOnModel : public ::testing::Test {
 protected:
  // Creates a model, opens it through sim::Kernel and brings it up.
  void open(sim::ModelConfig mcfg = {}, hca::HcaConfig hcfg = {}) {
    static std::atomic<int> n{0};
    name_ = "e2e-hca-" + std::to_string(n++);
    auto m = sim::Model::create(name_, mcfg);
    ASSERT_TRUE(m.has_value()) << m.status().to_string();
    model_ = std::move(*m);
    auto d = platform::DeviceHandle::open(sim::Model::sys(), model_->bdf());
    ASSERT_TRUE(d.has_value()) << d.status().to_string();
    dev_ = std::move(*d);
    io_ = std::make_unique<hca::PlatformDeviceIo>(*dev_);
    hca_ = std::make_unique<hca::Hca>(*io_, hcfg);
    hca_->set_event_handler([this](const hca::HcaEvent& e) { events_.push_back(e); });
    Status s = hca_->open_sync(10 * kSecond);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
  }
  void TearDown() override {
    if (hca_ && !hca_->teardown_done()) (void)hca_->close_sync(10 * kSecond);
    hca_.reset();
    io_.reset();
    dev_.reset();
    model_.reset();
  }
  sim::fw::Firmware& fw() { return model_->firmware(); }
  // Runs the driver's progress engine until `done` or the time limit.
  bool poll_until(const std::function<bool()>& done, std::chrono::milliseconds limit = 5000ms) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      hca_->poll();
      if (std::chrono::steady_clock::now() > end) return false;
    }
    return true;
  }
  // The firmware's page count, read on its own thread.
  size_t model_pages() {
    std::atomic<int64_t> held{-1};
    fw().post([&] { held = static_cast<int64_t>(fw().context().pages().held()); });
    while (held.load() < 0) std::this_thread::sleep_for(100us);
    return static_cast<size_t>(held.load());
  }

  std::string name_;
  std::unique_ptr<sim::Model> model_;
  std::unique_ptr<platform::DeviceHandle> dev_;
  std::unique_ptr<hca::PlatformDeviceIo> io_;
  std::unique_ptr<hca::Hca> hca_;
  std::vector<hca::HcaEvent> events_;
};

TEST_F(HcaOnModel, BringUpReadsCapsAndTeardownReturnsEveryPage) {
  sim::ModelConfig cfg;
  cfg.fw.boot_pages = 8;
  cfg.fw.init_pages = 24;
  open(cfg);
  const hca::HcaCaps& caps = hca_->caps();
  EXPECT_GT(caps.log_max_qp, 0u);
  EXPECT_GT(caps.log_max_cq_sz, 0u);
  EXPECT_EQ(caps.num_ports, 1u);
  EXPECT_TRUE(caps.roce);
  EXPECT_EQ(caps.cmdif_checksum, 0u);  // bring-up turned signatures off
  EXPECT_TRUE(hca_->cmdq().event_mode());
  // Every page the model asked for was given, and the driver accounts them.
  EXPECT_EQ(model_pages(), 32u);
  EXPECT_EQ(hca_->pages().pages_held(), 32u);

  Status s = hca_->close_sync(10 * kSecond);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(model_pages(), 0u);
  EXPECT_EQ(hca_->pages().pages_held(), 0u);
  std::atomic<int> enabled{-1};
  fw().post([&] { enabled = fw().context().hca().enabled ? 1 : 0; });
  while (enabled.load() < 0) std::this_thread::sleep_for(100us);
  EXPECT_EQ(enabled.load(), 0);  // DISABLE_HCA ran
  hca_.reset();
  EXPECT_EQ(io_->live_blocks(), 0u);  // every DMA block and page back
}

TEST_F(HcaOnModel, PortGoesActiveWithAPortChangeEvent) {
  // As on silicon, a link that trains before the driver's async EQ exists
  // raises no event (the driver would read the vport state): give bring-up
  // ample time to create the EQ first, also on a loaded machine under ASan.
  sim::ModelConfig mcfg;
  mcfg.link_up_delay = 500ms;
  open(mcfg);
  ASSERT_TRUE(poll_until([&] {
    for (const auto& e : events_)
      if (e.type == static_cast<uint8_t>(prm::EventType::PORT_CHANGE)) return true;
    return false;
  }));
  const hca::HcaEvent* pc = nullptr;
  for (const auto& e : events_)
    if (e.type == static_cast<uint8_t>(prm::EventType::PORT_CHANGE)) pc = &e;
  ASSERT_NE(pc, nullptr);
  EXPECT_EQ(pc->sub_type, static_cast<uint8_t>(prm::PortChangeSubtype::ACTIVE));
  EXPECT_EQ(pc->port, 1u);
  // Down and up again through the model's test hook.
  events_.clear();
  model_->set_link(false);
  ASSERT_TRUE(poll_until([&] { return !events_.empty(); }));
  EXPECT_EQ(events_.back().sub_type, static_cast<uint8_t>(prm::PortChangeSubtype::DOWN));
  model_->set_link(true);
  ASSERT_TRUE(poll_until([&] { return events_.size() >= 2; }));
  EXPECT_EQ(events_.back().sub_type, static_cast<uint8_t>(prm::PortChangeSubtype::ACTIVE));
}

TEST_F(HcaOnModel, ThirtyOneCommandsInFlight) {
  open();
  fw().set_max_concurrent(32);
  fw().set_latency(30ms);
  constexpr int kCmds = 40;  // 31 regular slots, 9 wait in software
  int ok = 0, done = 0;
  for (int i = 0; i < kCmds; ++i) {
    Status s = hca::cmd::nop(hca_->cmdq(), [&](Status st) {
      ++done;
      ok += st.is_ok();
    });
    ASSERT_EQ(s, KBV_PENDING) << s.to_string();
  }
  EXPECT_EQ(hca_->cmdq().stats().in_flight, 31u);
  EXPECT_EQ(hca_->cmdq().stats().queued, static_cast<uint32_t>(kCmds - 31));
  ASSERT_TRUE(poll_until([&] { return done == kCmds; }));
  EXPECT_EQ(ok, kCmds);
  EXPECT_EQ(hca_->cmdq().stats().max_in_flight, 31u);
  EXPECT_GE(fw().stats().max_inflight, 31u);  // the model executed them concurrently
}

TEST_F(HcaOnModel, FirmwareStatusAndSyndromeReachTheCaller) {
  open();
  fw().fail_opcode(prm::to_u16(prm::Opcode::NOP), 0x03, 0xC0FFEE, 1);
  Status got = KBV_PENDING;
  ASSERT_EQ(hca::cmd::nop(hca_->cmdq(), [&](Status s) { got = s; }), KBV_PENDING);
  ASSERT_TRUE(poll_until([&] { return !got.is_pending(); }));
  EXPECT_EQ(got.code(), KBV_ERR_FW_BAD_PARAM);
  EXPECT_EQ(got.fw_status(), 0x03);
  EXPECT_EQ(got.syndrome(), 0xC0FFEEu);
}

TEST_F(HcaOnModel, RunTimePageRequestsAreServed) {
  open();
  const size_t before = model_pages();
  fw().request_pages(16);
  ASSERT_TRUE(poll_until([&] { return hca_->pages().pages_held() == before + 16; }));
  EXPECT_EQ(model_pages(), before + 16);
  // The firmware offers pages back: the driver takes them.
  fw().request_pages(-8);
  ASSERT_TRUE(poll_until([&] { return hca_->pages().pages_held() == before + 8; }));
  EXPECT_EQ(model_pages(), before + 8);
  // Commands keep flowing while pages are served.
  Status got = KBV_PENDING;
  ASSERT_EQ(hca::cmd::nop(hca_->cmdq(), [&](Status s) { got = s; }), KBV_PENDING);
  ASSERT_TRUE(poll_until([&] { return !got.is_pending(); }));
  EXPECT_TRUE(got.is_ok()) << got.to_string();
}

TEST_F(HcaOnModel, CommandTimeoutCompletesWithTimeout) {
  open();
  fw().delay_opcode(prm::to_u16(prm::Opcode::NOP), 2s);
  hca::CmdResult r;
  std::vector<std::byte> in(16);
  prm::Ref<prm::mbox_in>(in.data()).set(prm::mbox_in::opcode, prm::to_u16(prm::Opcode::NOP));
  hca::SubmitOptions opts;
  opts.timeout_ns = 50'000'000;  // 50 ms
  ASSERT_EQ(hca_->cmdq().submit(in, 16, r.callback(), opts), KBV_PENDING);
  ASSERT_TRUE(poll_until([&] { return r.done; }));
  EXPECT_EQ(r.status.code(), KBV_ERR_TIMEOUT);
  EXPECT_EQ(hca_->cmdq().stats().timed_out, 1u);
  fw().clear_faults();
}

// Health checks every 100 ms so an injected syndrome or removal is seen
// soon; a health counter the loaded model bumps late is only reported, never
// fatal (src/hca/health.hpp, health.c MAX_MISSES), whatever the interval.
sim::ModelConfig fast_health_model() { return sim::ModelConfig{}; }
hca::HcaConfig fast_health_driver() {
  hca::HcaConfig h;
  h.health.interval_ns = 100'000'000;
  return h;
}

TEST_F(HcaOnModel, HealthFatalCompletesCommandsInFlight) {
  open(fast_health_model(), fast_health_driver());
  fw().set_latency(500ms);
  constexpr int kCmds = 8;
  std::vector<Status> got;
  for (int i = 0; i < kCmds; ++i)
    ASSERT_EQ(hca::cmd::nop(hca_->cmdq(), [&](Status s) { got.push_back(s); }), KBV_PENDING);
  model_->device().inject_health_fatal(0x1 /* FW error */, 0x42);
  ASSERT_TRUE(poll_until([&] { return got.size() == kCmds; }, 3000ms));
  for (const Status& s : got) EXPECT_EQ(s.code(), KBV_ERR_DEVICE_FATAL) << s.to_string();
  int fatal = 0;
  for (const auto& e : events_) fatal += e.kind == hca::HcaEvent::Kind::kFatal;
  EXPECT_EQ(fatal, 1);
  // Later commands fail at once; teardown still finishes without hanging.
  EXPECT_EQ(hca::cmd::nop(hca_->cmdq(), [](Status) {}).code(), KBV_ERR_DEVICE_FATAL);
  (void)hca_->close_sync(2 * kSecond);
  EXPECT_TRUE(hca_->teardown_done());
}

TEST_F(HcaOnModel, DeviceGoneIsReportedAsRemoved) {
  open(fast_health_model(), fast_health_driver());
  fw().set_latency(500ms);
  Status got = KBV_PENDING;
  ASSERT_EQ(hca::cmd::nop(hca_->cmdq(), [&](Status s) { got = s; }), KBV_PENDING);
  model_->device().set_device_gone(true);
  ASSERT_TRUE(poll_until([&] { return !got.is_pending(); }, 3000ms));
  EXPECT_EQ(got.code(), KBV_ERR_DEVICE_REMOVED);
  (void)hca_->close_sync(2 * kSecond);
  EXPECT_TRUE(hca_->teardown_done());
  model_->device().set_device_gone(false);
}

}  // namespace
}  // namespace kbv
