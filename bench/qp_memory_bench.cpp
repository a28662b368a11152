// SPDX-License-Identifier: BSD-3-Clause
//
// Memory per RC QP, the driver's share separated from the model's (issue
// 15: the driver's memory per RC QP beyond its rings at most 4 KiB). A
// model HCA in this process; kQps RC QPs (64 send / 64 receive WRs, one
// SGE, one CQ for all) created synchronously, then destroyed.
//
// Heap: the global operator new / delete are replaced and count
// malloc_usable_size() bytes live, split by thread: the thread that calls
// kbv (it also runs the driver's progress and command callbacks) is the
// driver; every other thread is the model (its firmware and engine
// threads execute the commands). DMA memory is not heap: the rings are
// reported from the QPs' QueueMem sizes, the doorbell records from the
// device's DbrecPool (pages in use). RSS (/proc/self/statm) before and
// after is printed too, for driver + model + DMA together.
//
// Prints (bytes per QP)
//   bytes driver_heap_per_qp <n>
//   bytes driver_dbrec_per_qp <n>
//   bytes driver_per_qp_beyond_rings <heap + dbrec>
//   bytes model_heap_per_qp <n>
//   bytes rings_per_qp <n>
//   bytes rss_per_qp <n>
//   ratio driver_per_qp_vs_4KiB <driver_per_qp_beyond_rings / 4096>
#include <kbv/kbv.h>
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "sim/model.hpp"
#include "verbs/objects.hpp"

namespace {
std::atomic<int64_t> g_driver{0}, g_model{0};
std::thread::id g_driver_thread;
std::atomic<bool> g_split{false};

void account(void* p, int64_t sign) {
  if (!p || !g_split.load(std::memory_order_relaxed)) return;
  const auto n = static_cast<int64_t>(malloc_usable_size(p)) * sign;
  (std::this_thread::get_id() == g_driver_thread ? g_driver : g_model)
      .fetch_add(n, std::memory_order_relaxed);
}
}  // namespace

void* operator new(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (!p) throw std::bad_alloc();
  account(p, 1);
  return p;
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  void* p = std::malloc(n == 0 ? 1 : n);
  account(p, 1);
  return p;
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept {
  return ::operator new(n, t);
}
void operator delete(void* p) noexcept {
  account(p, -1);
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept { ::operator delete(p); }
void operator delete[](void* p) noexcept { ::operator delete(p); }
void operator delete[](void* p, std::size_t) noexcept { ::operator delete(p); }

namespace {

constexpr uint32_t kQps = 10000;

[[noreturn]] void die(const char* what, int st = 0) {
  std::fprintf(stderr, "qp_memory_bench: %s (%d %s)\n", what, st,
               kbv_status_name(static_cast<kbv_status_t>(st)));
  std::exit(1);
}
void check(kbv_status_t st, const char* what) {
  if (st != KBV_SUCCESS) die(what, st);
}

int64_t rss_bytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

}  // namespace

int main(int argc, char** argv) {
  const uint32_t n = argc > 1 ? static_cast<uint32_t>(std::atoi(argv[1])) : kQps;
  if (n == 0) die("usage: kbv-bench-qp-memory [qps]");
  g_driver_thread = std::this_thread::get_id();
  auto m = kbv::sim::Model::create("qpmem");
  if (!m) die("model create", m.status().code());
  std::unique_ptr<kbv::sim::Model> model = std::move(*m);
  kbv_device_t dev = 0;
  kbv_pd_t pd = 0;
  kbv_cq_t cq = 0;
  check(kbv_device_open("sim:qpmem", nullptr, KBV_EQ_NONE, 0, &dev), "open");
  check(kbv_pd_alloc(dev, KBV_EQ_NONE, 0, &pd), "pd");
  kbv_cq_attr_t ca{};
  ca.cqe = 4096;
  check(kbv_cq_create(dev, &ca, KBV_EQ_NONE, 0, &cq), "cq");
  auto d = kbv::verbs::lookup_as<kbv::verbs::DeviceImpl>(dev, kbv::verbs::Kind::kDevice);
  if (!d || !d->hca) die("device");
  auto dbrec_pages = [&] {
    std::lock_guard lk(d->mu);
    return d->hca->io().dbrecs().pages();
  };

  std::vector<kbv_qp_t> qps(n);
  kbv_qp_init_attr_t qa{};
  qa.qp_type = KBV_QPT_RC;
  qa.send_cq = qa.recv_cq = cq;
  qa.cap.max_send_wr = 64;
  qa.cap.max_recv_wr = 64;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  const size_t pages0 = dbrec_pages();
  const int64_t rss0 = rss_bytes();
  g_split = true;
  const int64_t drv0 = g_driver.load(), mod0 = g_model.load();
  for (uint32_t i = 0; i < n; ++i) check(kbv_qp_create(pd, &qa, KBV_EQ_NONE, 0, &qps[i]), "qp");
  const int64_t drv = g_driver.load() - drv0, mod = g_model.load() - mod0;
  g_split = false;
  const int64_t rss = rss_bytes() - rss0;
  const size_t pages = dbrec_pages() - pages0;
  uint64_t rings = 0;
  for (kbv_qp_t q : qps) {
    auto qi = kbv::verbs::lookup_as<kbv::verbs::QpImpl>(q, kbv::verbs::Kind::kQp);
    if (qi && qi->qp) rings += qi->qp->mem().size();
  }
  const double per = n;
  const double heap = static_cast<double>(drv) / per;
  const double dbr = static_cast<double>(pages) * 4096 / per;
  std::printf("qps %u\n", n);
  std::printf("bytes driver_heap_per_qp %.0f\n", heap);
  std::printf("bytes driver_dbrec_per_qp %.0f\n", dbr);
  std::printf("bytes driver_per_qp_beyond_rings %.0f\n", heap + dbr);
  std::printf("bytes model_heap_per_qp %.0f\n", static_cast<double>(mod) / per);
  std::printf("bytes rings_per_qp %.0f\n", static_cast<double>(rings) / per);
  std::printf("bytes rss_per_qp %.0f\n", static_cast<double>(rss) / per);
  std::printf("ratio driver_per_qp_vs_4KiB %.2f\n", (heap + dbr) / 4096);
  std::fflush(stdout);
  for (kbv_qp_t q : qps) check(kbv_qp_destroy(q, KBV_EQ_NONE, 0), "qp destroy");
  if (dbrec_pages() != pages0) die("doorbell-record pages left after the destroys");
  check(kbv_cq_destroy(cq, KBV_EQ_NONE, 0), "cq destroy");
  check(kbv_pd_dealloc(pd, KBV_EQ_NONE, 0), "pd dealloc");
  d.reset();
  check(kbv_device_close(dev, KBV_EQ_NONE, 0), "close");
  return 0;
}
