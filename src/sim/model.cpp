// SPDX-License-Identifier: BSD-3-Clause
#include "sim/model.hpp"

#include <future>

#include "common/log.hpp"
#include "sim/fw/objects/objects.hpp"
#include "sim/fw/objects/tables.hpp"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <memory>

namespace kbv::sim {

namespace {
std::atomic<unsigned> g_next_host{1};
constexpr unsigned kMaxAutoHost = 199;
}  // namespace

Status init_time_from_env(DeviceConfig& cfg, std::string* why) {
  const char* env = std::getenv(kInitTimeEnv);
  if (env == nullptr) return Status::ok();
  char* end = nullptr;
  errno = 0;
  const long ms = std::strtol(env, &end, 10);
  if (end == env || *end != '\0' || errno != 0 || ms < 0 || ms > 120000) {
    if (why) *why = std::string(kInitTimeEnv) + "=" + env + ": not 0..120000 (milliseconds)";
    return KBV_ERR_INVALID_ARGUMENT;
  }
  cfg.init_time = std::chrono::milliseconds(ms);
  return Status::ok();
}

Result<std::unique_ptr<Model>> Model::create(const std::string& name, ModelConfig cfg) {
  Kernel& k = Kernel::instance();
  if (k.device(name) != nullptr) return KBV_ERR_ALREADY_EXISTS;
  if (cfg.init_time_from_env) {
    std::string why;
    if (Status s = init_time_from_env(cfg.device, &why); !s.is_ok()) {
      log::error("sim", "model {}: {}", name, why);
      return s;
    }
  }
  FaultSpec env_faults;
  if (cfg.faults_from_env) {
    std::string why;
    auto spec = fault_spec_from_env(&why);
    if (!spec) {
      log::error("sim", "model {}: {}", name, why);
      return spec.status();
    }
    env_faults = std::move(*spec);
    if (env_faults.wire.enabled()) {
      cfg.faults = env_faults.wire;
      cfg.faults.seed = seed_for_model(env_faults.wire.seed, name);
    }
    cfg.fw.cmd_latency += env_faults.cmd_delay;
    if (env_faults.any())
      log::info("sim", "model {}: {}={} in effect", name, kFaultsEnv, std::getenv(kFaultsEnv));
  }
  Result<std::string> bdf = k.add_device(name, cfg.device);
  if (!bdf) return bdf.status();
  std::unique_ptr<Model> m(new Model());
  m->name_ = name;
  m->bdf_ = *bdf;
  m->device_ = k.device(name);
  // From here on a failure returns with `m` destroyed: ~Model removes the
  // device (nothing is left behind).
  if (m->device_ == nullptr) {
    return KBV_ERR_INTERNAL;
  }
  // The port: an explicit host must bind; host 0 takes the first free one.
  std::unique_ptr<wire::Port> port;
  wire::PortConfig pc;
  pc.faults = cfg.faults;
  pc.pcap_path = cfg.pcap_path;
  if (cfg.port_host != 0) {
    pc.host = cfg.port_host;
    auto p = wire::Port::open(pc);
    if (!p) {
      return p.status();
    }
    port = std::move(*p);
  } else {
    for (unsigned tries = 0; tries < kMaxAutoHost && !port; ++tries) {
      unsigned h = g_next_host.fetch_add(1);
      if (h > kMaxAutoHost) {
        // Wrap: numbers freed by destroyed models (or never bound) are tried again.
        unsigned expect = h + 1;
        g_next_host.compare_exchange_strong(expect, 2);
        h = 1;
      }
      pc.host = static_cast<uint8_t>(h);
      auto p = wire::Port::open(pc);
      if (p) {
        port = std::move(*p);
        cfg.port_host = pc.host;
      } else if (p.status() != KBV_ERR_ALREADY_EXISTS) {
        return p.status();
      }
    }
    if (!port) {
      return KBV_ERR_NO_RESOURCES;
    }
  }
  m->port_host_ = cfg.port_host;
  m->faults_ = cfg.faults;
  // The object commands, with the port identity (GID 0 = ::ffff:127.0.0.N)
  // bound so that it survives resets and teardown.
  cfg.fw.registrars.push_back(fw::object_commands(m->port_host_));
  cfg.fw.trace_device = m->bdf_ + " sim:" + name;  // names each command trace line
  // Link training: the port is down when INIT_HCA completes (no EQ exists
  // yet, so no event) and goes ACTIVE link_up_delay later, with a
  // port-change EQE to the driver's async EQ.
  cfg.fw.on_init_hca.push_back([delay = cfg.link_up_delay](fw::FwContext& ctx) {
    fw::set_port_state(ctx, false);
    fw::port_regs_init(ctx);  // PAOS admin up, PPCNT counts from here
    ctx.schedule(delay, [&ctx] {
      if (fw::port_admin_up(ctx)) fw::set_port_state(ctx, true);
    });
  });
  if (env_faults.fatal_after.count() > 0) {
    // Once, env_faults.fatal_after after the first INIT_HCA.
    auto armed = std::make_shared<std::atomic<bool>>(false);
    cfg.fw.on_init_hca.push_back(
        [dev = m->device_, armed, after = env_faults.fatal_after](fw::FwContext& ctx) {
          if (armed->exchange(true)) return;
          ctx.schedule(after, [dev] { dev->inject_health_fatal(0x1, kFatalExtSyndrome); });
        });
  }
  m->fw_ = std::make_unique<fw::Firmware>(*m->device_, std::move(cfg.fw));
  for (const CmdFailSpec& f : env_faults.cmd_fail)
    m->fw_->fail_opcode(f.opcode, f.status, kCmdFailSyndrome, f.times);
  auto eng = engine::Engine::create(*m->fw_, std::move(port));
  if (!eng) {
    m->fw_.reset();
    return eng.status();
  }
  m->engine_ = std::move(*eng);
  if (Status s = m->fw_->start(); !s.is_ok()) {
    m->engine_.reset();
    m->fw_.reset();
    log::error("sim", "model {}: firmware did not start: {}", name, s.to_string());
    return s;
  }
  log::info("sim", "model {} at {}, port 127.0.0.{}", name, m->bdf_, m->port_host_);
  return m;
}

void Model::set_link(bool up) {
  fw::Firmware* f = fw_.get();
  f->post([f, up] {
    if (f->context().hca().initialized) fw::set_port_state(f->context(), up);
  });
}

Status Model::set_pkey(uint32_t index, uint16_t pkey) {
  if (index >= fw::PortState::kPkeyTableSize) return KBV_ERR_INVALID_ARGUMENT;
  fw::Firmware* f = fw_.get();
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  f->post([f, index, pkey, done] {
    fw::objects(f->context()).port.pkeys[index].store(pkey, std::memory_order_relaxed);
    done->set_value();
  });
  fut.wait();
  return KBV_SUCCESS;
}

uint32_t Model::pkey_violations() const {
  return fw::objects(fw_->context()).port.pkey_violations.load(std::memory_order_relaxed);
}

Model::~Model() {
  if (fw_) fw_->stop();
  engine_.reset();  // after the thread that runs it stopped
  fw_.reset();
  if (Status s = Kernel::instance().remove_device(name_); !s.is_ok())
    log::error("sim", "model {}: could not remove the device: {}", name_, s.to_string());
}

}  // namespace kbv::sim
