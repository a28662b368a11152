// SPDX-License-Identifier: BSD-3-Clause
// kbv-lab health URI: the health buffer decoded (device.h health_buffer;
// docs/PRM.md "Initialization segment"): syndrome and its meaning, extended
// syndrome, the iRISC that asserted, the assert's return address (callra),
// the assert variables, firmware version and hardware id, rfr; plus the
// health counter and the init segment's fw_rev. A device whose firmware
// already failed may refuse to open (its bring-up fails); the tool then says
// so — kbv resets such a function at open, so the buffer shown is the one
// after that reset.
// kbv-lab reset URI: function-level reset through VFIO (kbv_device_reset),
// then bring-up again under the same handle; prints how long each took.
#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "hca/prm/init_seg.hpp"
#include "kbv-lab/lab.hpp"

namespace kbv::lab {

namespace {

void print_health(const Common& c, const kbv_health_t& h, std::string_view key,
                  std::string_view what, Json* jp) {
  if (c.json) {
    Json& j = *jp;
    j.key(key)
        .obj()
        .kv("healthy", h.synd == 0)
        .kv("synd", static_cast<uint64_t>(h.synd))
        .kv("synd_name", prm::health_syndrome_name(h.synd))
        .kv("ext_synd", static_cast<uint64_t>(h.ext_synd))
        .kv("irisc_index", static_cast<uint64_t>(h.irisc_index))
        .kv("assert_callra", static_cast<uint64_t>(h.assert_callra))
        .kv("assert_exit_ptr", static_cast<uint64_t>(h.assert_exit_ptr));
    j.key("assert_var").arr();
    for (uint32_t v : h.assert_var) j.num(v);
    j.end()
        .kv("time", static_cast<uint64_t>(h.time))
        .kv("fw_version", static_cast<uint64_t>(h.fw_version))
        .kv("hw_id", static_cast<uint64_t>(h.hw_id))
        .kv("rfr", h.rfr != 0)
        .kv("valid", h.valid != 0)
        .kv("severity", static_cast<uint64_t>(h.severity))
        .kv("health_counter", static_cast<uint64_t>(h.health_counter))
        .kv("fw_rev", static_cast<uint64_t>(h.fw_rev))
        .kv("nic_interface", static_cast<uint64_t>(h.nic_interface))
        .end();
    return;
  }
  fmt::print(c.out, "{} health buffer ({})\n", c.uri, what);
  fmt::print(c.out, "  synd          {:#04x} ({})\n", h.synd, prm::health_syndrome_name(h.synd));
  fmt::print(c.out, "  ext_synd      {:#06x}\n", h.ext_synd);
  fmt::print(c.out, "  irisc_index   {}\n", h.irisc_index);
  fmt::print(c.out, "  assert_callra {:#010x}\n", h.assert_callra);
  fmt::print(c.out, "  assert_exit   {:#010x}\n", h.assert_exit_ptr);
  fmt::print(c.out, "  assert_var    {:#x} {:#x} {:#x} {:#x} {:#x}\n", h.assert_var[0],
             h.assert_var[1], h.assert_var[2], h.assert_var[3], h.assert_var[4]);
  fmt::print(c.out, "  fw_version    {:#010x}  hw_id {:#x}  time {:#x}\n", h.fw_version, h.hw_id,
             h.time);
  fmt::print(c.out, "  rfr           {} (reset firmware required)  valid {}  severity {}\n", h.rfr,
             h.valid, h.severity);
  fmt::print(c.out, "  health_counter {:#08x}  fw_rev {:#010x}  nic_interface {}\n",
             h.health_counter, h.fw_rev, h.nic_interface);
  fmt::print(c.out, "  {}\n", paint(c, h.synd == 0 ? "healthy" : "FIRMWARE FAILED", h.synd == 0));
}

}  // namespace

int cmd_health(const Common& c, uint32_t wait_ms) {
  kbv_device_t dev = open_device(c);
  if (!dev) return 1;
  kbv_health_t prior{}, now{};
  const kbv_status_t sp = kbv_device_prior_health(dev, &prior);
  kbv_status_t st = kbv_device_read_health(dev, &now);
  // --wait: keep the device up and watch for the firmware to fail (an
  // assert during a lab session), polling as the driver's health check does.
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (st == KBV_SUCCESS && now.synd == 0 && std::chrono::steady_clock::now() < end) {
    (void)kbv_device_progress(dev);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    st = kbv_device_read_health(dev, &now);
  }
  if (st != KBV_SUCCESS) {
    fmt::print(c.err, "kbv-lab: health: {}\n", describe(st, 0, 0));
    close_device(dev);
    return 1;
  }
  Json j;
  j.obj().kv("uri", c.uri).kv("reset_at_open", sp == KBV_SUCCESS);
  // vfio-pci resets a function when it is opened (when it can), which clears
  // the buffer; kbv resets one whose firmware still shows a failure. What
  // such a reset found is shown first, then the registers now.
  if (sp == KBV_SUCCESS)
    print_health(c, prior, "prior", "found at open, before kbv reset the function", &j);
  print_health(c, now, "now", "now", &j);
  j.end();
  if (c.json) fmt::print(c.out, "{}\n", j.text());
  close_device(dev);
  return sp == KBV_SUCCESS || now.synd != 0 ? 1 : 0;  // 1: the firmware failed
}

int cmd_reset(const Common& c) {
  const auto t0 = std::chrono::steady_clock::now();
  kbv_device_t dev = open_device(c);
  if (!dev) return 1;
  const auto t1 = std::chrono::steady_clock::now();
  kbv_reset_info_t ri{};
  const kbv_status_t st = kbv_device_reset(dev, &ri);
  uint64_t ticks = 0;
  uint32_t khz = 0;
  const kbv_status_t clk = st == KBV_SUCCESS ? kbv_device_read_clock(dev, &ticks, &khz) : st;
  const uint64_t open_us =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count());
  if (c.json) {
    Json j;
    j.obj()
        .kv("uri", c.uri)
        .kv("ok", st == KBV_SUCCESS && ri.brought_up != 0)
        .kv("status", kbv_status_name(st))
        .kv("open_us", open_us)
        .kv("flr_us", ri.flr_ns / 1000)
        .kv("bringup_us", ri.bringup_ns / 1000)
        .kv("init_wait_us", ri.init_wait_ns / 1000)
        .kv("brought_up", ri.brought_up != 0)
        .kv("clock_ticks_after", clk == KBV_SUCCESS ? ticks : 0)
        .end();
    fmt::print(c.out, "{}\n", j.text());
  } else {
    fmt::print(c.out, "{}: open (bring-up) {} us\n", c.uri, open_us);
    fmt::print(c.out, "{}: FLR (VFIO_DEVICE_RESET) {} us\n", c.uri, ri.flr_ns / 1000);
    if (st == KBV_SUCCESS && ri.brought_up) {
      fmt::print(c.out,
                 "{}: firmware initializing (init segment 0x1FC bit 31, polled every 2 ms) {} us\n",
                 c.uri, ri.init_wait_ns / 1000);
      fmt::print(c.out,
                 "{}: bring-up after reset {} us (the wait included); the clock reads {} ticks "
                 "({} kHz; it restarted at the reset)\n",
                 c.uri, ri.bringup_ns / 1000, ticks, khz);
    } else
      fmt::print(c.out, "{}: reset FAILED: {}\n", c.uri, describe(st, 0, 0));
  }
  close_device(dev);
  return st == KBV_SUCCESS && ri.brought_up ? 0 : 1;
}

}  // namespace kbv::lab
