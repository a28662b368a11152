// SPDX-License-Identifier: BSD-3-Clause
//
// A synchronous control call (eq = KBV_EQ_NONE) against the same call made
// asynchronously, on a model HCA in this process, same run (issue 15: the
// synchronous call at most 1.2x the model's command latency plus the
// asynchronous path's own cost). Two classes of call:
//   port_query  kbv_port_query: one query command (QUERY_PORT class)
//   cq_create   kbv_cq_create then kbv_cq_destroy: CREATE_CQ and
//               DESTROY_CQ with their DMA memory (CREATE_CQ class); timed
//               as the pair
// The asynchronous reference submits on a kbv event queue and waits as a
// well-behaved application does: kbv_device_progress, then poll(2) on the
// device's interrupt eventfd (kbv_device_get_fd) and the queue's eventfd
// until the event is there. The two are interleaved call by call; wall
// time (the model's firmware runs on its own thread), medians of
// kRounds. Prints
//   ratio sync_<class>_vs_async <sync median / async median>
//   us <class> <sync median us> <async median us>
#include <kbv/eq.h>
#include <kbv/kbv.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sim/model.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRounds = 201;

[[noreturn]] void die(const char* what, int st = 0) {
  std::fprintf(stderr, "sync_call_bench: %s (%d %s)\n", what, st,
               kbv_status_name(static_cast<kbv_status_t>(st)));
  std::exit(1);
}
void check(kbv_status_t st, const char* what) {
  if (st != KBV_SUCCESS) die(what, st);
}

kbv_device_t g_dev = 0;
kbv_eq_t g_eq = 0;
int g_dev_fd = -1, g_eq_fd = -1;

// Waits for the one event of an asynchronous request.
kbv_event_t wait_event() {
  kbv_event_t ev{};
  for (;;) {
    (void)kbv_device_progress(g_dev);
    if (kbv_eq_poll(g_eq, &ev, 1) == 1) return ev;
    uint64_t count;
    (void)::read(g_dev_fd, &count, sizeof count);
    (void)kbv_device_progress(g_dev);
    if (kbv_eq_poll(g_eq, &ev, 1) == 1) return ev;
    pollfd fds[2] = {{g_dev_fd, POLLIN, 0}, {g_eq_fd, POLLIN, 0}};
    (void)::poll(fds, 2, 1);
  }
}

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

double port_query(bool sync) {
  kbv_port_attr_t a{};
  const auto t0 = Clock::now();
  if (sync) {
    check(kbv_port_query(g_dev, 1, &a, KBV_EQ_NONE, 0), "port query");
  } else {
    kbv_status_t st = kbv_port_query(g_dev, 1, &a, g_eq, 7);
    if (st != KBV_PENDING && st != KBV_SUCCESS) die("port query async", st);
    if (st == KBV_PENDING && wait_event().status != KBV_SUCCESS) die("port query event");
  }
  return us_since(t0);
}

double cq_create(bool sync) {
  kbv_cq_attr_t ca{};
  ca.cqe = 256;
  kbv_cq_t cq = 0;
  const auto t0 = Clock::now();
  if (sync) {
    check(kbv_cq_create(g_dev, &ca, KBV_EQ_NONE, 0, &cq), "cq create");
    check(kbv_cq_destroy(cq, KBV_EQ_NONE, 0), "cq destroy");
  } else {
    kbv_status_t st = kbv_cq_create(g_dev, &ca, g_eq, 8, &cq);
    if (st != KBV_PENDING && st != KBV_SUCCESS) die("cq create async", st);
    if (st == KBV_PENDING && wait_event().status != KBV_SUCCESS) die("cq create event");
    st = kbv_cq_destroy(cq, g_eq, 9);
    if (st != KBV_PENDING && st != KBV_SUCCESS) die("cq destroy async", st);
    if (st == KBV_PENDING && wait_event().status != KBV_SUCCESS) die("cq destroy event");
  }
  return us_since(t0);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main() {
  auto m = kbv::sim::Model::create("syncbench");
  if (!m) die("model create", m.status().code());
  std::unique_ptr<kbv::sim::Model> model = std::move(*m);
  check(kbv_device_open("sim:syncbench", nullptr, KBV_EQ_NONE, 0, &g_dev), "open");
  check(kbv_eq_create(64, &g_eq), "eq");
  check(kbv_eq_get_fd(g_eq, &g_eq_fd), "eq fd");
  check(kbv_device_get_fd(g_dev, &g_dev_fd), "device fd");
  struct Case {
    const char* name;
    double (*fn)(bool);
  };
  for (const Case& c : {Case{"port_query", port_query}, Case{"cq_create", cq_create}}) {
    std::vector<double> sync, async;
    for (int i = 0; i < 5; ++i) (void)c.fn(i & 1);  // warm-up
    for (int i = 0; i < kRounds; ++i) {
      sync.push_back(c.fn(true));
      async.push_back(c.fn(false));
    }
    const double s = median(sync), a = median(async);
    std::printf("ratio sync_%s_vs_async %.2f\n", c.name, s / a);
    std::printf("us %s %.1f %.1f\n", c.name, s, a);
  }
  std::fflush(stdout);
  check(kbv_eq_destroy(g_eq), "eq destroy");
  check(kbv_device_close(g_dev, KBV_EQ_NONE, 0), "close");
  return 0;
}
