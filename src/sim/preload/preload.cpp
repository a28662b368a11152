// SPDX-License-Identifier: BSD-3-Clause
//
// libkbv-sim-preload.so: the HCA model's emulated VFIO kernel (sim::Kernel,
// vfio_kernel.hpp) for unmodified programs, by LD_PRELOAD.
//
//   KBV_SIM_DEVICES=2 LD_PRELOAD=libkbv-sim-preload.so ./program
//
// At load time it creates the model devices named by KBV_SIM_DEVICES (a count
// N: devices "0".."N-1" at fffe:00:01.0, fffe:00:02.0, ...; or a
// comma-separated list of names), each a complete sim::Model (model.hpp:
// firmware with every command family) unless KBV_SIM_FIRMWARE=0 (bare PCI
// functions). KBV_SIM_PORT_HOST=N gives device i the port address
// 127.0.0.(N+i) (default: the next free numbers of the process; set it when
// several preloaded processes talk to each other). KBV_SIM_DBELL_POLL_US
// (default 1000) sets how often each model polls BAR0 — the command doorbell
// and the doorbell registers of live UAR pages — since a preloaded program's
// BAR stores are not trapped (pci_device.hpp). rdma-core's mlx5_vfio runs
// unmodified on these devices (tests/e2e/preload/mlx5_vfio_test.c).
// KBV_SIM_IOMMUFD=1 adds /dev/iommu and the VFIO device cdevs
// (/dev/vfio/devices/vfioN, sysfs vfio-dev/), as a Linux 6.6+ kernel.
// KBV_SIM_DRIVER=uio_pci_generic binds the functions to UIO (no IOMMU:
// /proc/self/pagemap answered by the model) and KBV_SIM_HUGE_PAGES=N gives
// that machine N 2 MiB huge pages (anonymous MAP_HUGETLB mmaps).
//
// Interposed (glibc symbols, the next definition found with
// dlsym(RTLD_NEXT)); a call is routed to the model when its path or
// descriptor is the model's (Kernel::owns_path / owns_fd), otherwise it goes
// straight to libc:
//   descriptors (this file): close, ioctl, read, __read_chk, write, pread,
//     pread64, __pread_chk, __pread64_chk, preadv, preadv64, pwrite,
//     pwrite64, pwritev, pwritev64, mmap, mmap64, dup, dup2, dup3, fcntl and
//     fcntl64 (F_DUPFD / F_DUPFD_CLOEXEC duplicate a model descriptor; other
//     commands act on its placeholder), poll, __poll_chk, ppoll, __ppoll_chk
//     (a model descriptor is readable and writable, as Linux reports a file
//     without a poll method), epoll_ctl (EPERM for a model descriptor, as
//     Linux for such a file);
//   paths, stat, directories (preload_fs.cpp): see there.
// Not interposed, because nothing routes through them: munmap (a BAR
// mapping is a real mapping of the model's memory; a KBV_SIM_HUGE_PAGES
// pool mapping is unmapped for real, its page stays counted as used: the
// pool is a budget for one process's open), eventfd (MSI-X
// eventfds are the program's own, signalled by the model), select (the
// placeholders answer it natively). Calls the model makes itself while
// answering bypass the routing through a per-thread re-entrancy flag.
// read / write of a VFIO device descriptor is EINVAL (use pread / pwrite at
// a region offset; Linux would access the region at the file position).
// With KBV_SIM_DEVICES unset or 0 nothing is routed.
//
// Threading: every interposer may be called from any thread, and from any
// library's constructor (every piece of state is constinit or a
// function-local static; preload.hpp).
//
// The interposers define the plain and the *64 symbols themselves, so the
// headers must not redirect one to the other (on LP64 off_t is 64-bit anyway).
#undef _FORTIFY_SOURCE
#undef _FILE_OFFSET_BITS
static_assert(sizeof(void*) == 8, "the preload library assumes LP64 (off_t == off64_t)");

#include "sim/preload/preload.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "sim/bus/vfio_kernel.hpp"
#include "sim/model.hpp"

// glibc's fortify failure report (debug/chk_fail.c); not in any header.
extern "C" [[noreturn]] void __chk_fail(void);

namespace kbv::sim::preload {

constinit thread_local bool t_in_model = false;
constinit std::atomic<bool> g_active{false};
// KBV_SIM_HUGE_PAGES set: anonymous MAP_HUGETLB mmaps come from the model's
// hugetlbfs pool.
constinit std::atomic<bool> g_huge_pool{false};

bool route_path(const char* path) {
  if (t_in_model || !g_active.load(std::memory_order_acquire) || !path || path[0] != '/')
    return false;
  InModel in;
  return Kernel::instance().owns_path(path);
}

bool route_fd(int fd) {
  if (t_in_model || !g_active.load(std::memory_order_acquire) || fd < 0) return false;
  InModel in;
  return Kernel::instance().owns_fd(fd);
}

namespace {

// Creates the devices named by the environment.
__attribute__((constructor)) void kbv_sim_preload_init() {
  const char* spec = std::getenv("KBV_SIM_DEVICES");
  if (!spec || !*spec) return;
  InModel in;
  std::vector<std::string> names;
  char* end = nullptr;
  const long n = std::strtol(spec, &end, 10);
  if (end && *end == '\0') {
    for (long i = 0; i < n && i < 31; ++i) names.push_back(std::to_string(i));
  } else {
    std::string s(spec);
    for (size_t p = 0; p <= s.size();) {
      const size_t c = s.find(',', p);
      const std::string name = s.substr(p, c == std::string::npos ? std::string::npos : c - p);
      if (!name.empty()) names.push_back(name);
      if (c == std::string::npos) break;
      p = c + 1;
    }
  }
  // KBV_SIM_IOMMUFD=1: the kernel also offers /dev/iommu and each
  // function's VFIO device cdev (a Linux 6.6+ machine), so kbv's vfio: and
  // iommufd: URIs, QEMU and DPDK take the iommufd path (iommufd.cpp).
  if (const char* io = std::getenv("KBV_SIM_IOMMUFD"); io && std::strcmp(io, "1") == 0)
    Kernel::instance().set_iommufd(true);
  DeviceConfig cfg;
  long poll_us = 1000;
  if (const char* p = std::getenv("KBV_SIM_DBELL_POLL_US")) poll_us = std::strtol(p, nullptr, 10);
  cfg.dbell_poll = std::chrono::microseconds(poll_us > 0 ? poll_us : 0);
  const char* fw_env = std::getenv("KBV_SIM_FIRMWARE");
  const bool with_fw = !(fw_env && std::strcmp(fw_env, "0") == 0);
  long host = 0;
  if (const char* h = std::getenv("KBV_SIM_PORT_HOST")) host = std::strtol(h, nullptr, 10);
  // KBV_SIM_DRIVER=<driver>: the functions are bound to it (uio_pci_generic:
  // the no-IOMMU machine of uio.cpp); KBV_SIM_HUGE_PAGES=N: that machine's
  // 2 MiB huge page pool (default 0, as Linux without reserved pages; pages
  // unmapped by the program are not returned to it: munmap is not interposed).
  const char* driver = std::getenv("KBV_SIM_DRIVER");
  if (const char* hp = std::getenv("KBV_SIM_HUGE_PAGES")) {
    const long n = std::strtol(hp, nullptr, 10);
    if (n > 0) {
      Kernel::instance().set_huge_pages(static_cast<size_t>(n));
      g_huge_pool.store(true, std::memory_order_release);
    }
  }
  // The models live as long as the process, like the Kernel that owns them.
  static auto* models = new std::vector<std::unique_ptr<Model>>;
  int made = 0;
  for (const std::string& name : names) {
    Status st;
    if (with_fw) {
      ModelConfig mc;
      mc.device = cfg;
      if (host > 0 && host + made < 200) mc.port_host = static_cast<uint8_t>(host + made);
      auto m = Model::create(name, mc);
      if (m) models->push_back(std::move(*m));
      st = m.status();
    } else {
      DeviceConfig dc = cfg;
      std::string why;
      st = init_time_from_env(dc, &why);
      if (!st) log::error("sim.preload", "{}", why);
      if (st) st = Kernel::instance().add_device(name, dc).status();
    }
    if (st && driver && *driver) st = Kernel::instance().bind_driver(name, driver);
    if (st) {
      ++made;
    } else {
      log::error("sim.preload", "cannot create model device '{}': {}", name, st.to_string());
    }
  }
  g_active.store(made > 0, std::memory_order_release);
}

// Linux's answer to poll() for a file without a poll method (DEFAULT_POLLMASK).
constexpr short kDefaultPollMask = POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;

// poll / ppoll over a set that may hold model descriptors: those are always
// ready, so the real call only looks at the others (without waiting when a
// model descriptor is in the set). `real` polls the set with the model
// entries disabled (fd -1 is ignored by poll) and a wait flag.
template <class Real>
int poll_mixed(struct pollfd* fds, nfds_t n, Real real) {
  if (t_in_model || !g_active.load(std::memory_order_acquire)) return real(fds, n, true);
  std::vector<std::pair<nfds_t, int>> mine;
  for (nfds_t i = 0; i < n; ++i)
    if (route_fd(fds[i].fd)) mine.emplace_back(i, fds[i].fd);
  if (mine.empty()) return real(fds, n, true);
  for (auto& [i, fd] : mine) fds[i].fd = -1;
  int r = real(fds, n, false);
  const int e = errno;
  for (auto& [i, fd] : mine) fds[i].fd = fd;
  if (r < 0) {
    errno = e;
    return r;
  }
  for (auto& [i, fd] : mine) {
    fds[i].revents = static_cast<short>(fds[i].events & kDefaultPollMask);
    if (fds[i].revents) ++r;
  }
  return r;
}

// preadv / pwritev of a model descriptor: one region access per iovec.
ssize_t vector_rw(int fd, const struct iovec* iov, int n, off_t off, bool write) {
  InModel in;
  ssize_t total = 0;
  for (int i = 0; i < n; ++i) {
    const ssize_t r =
        write ? Kernel::instance().pwrite(fd, iov[i].iov_base, iov[i].iov_len, off + total)
              : Kernel::instance().pread(fd, iov[i].iov_base, iov[i].iov_len, off + total);
    if (r < 0) return total > 0 ? total : r;
    total += r;
    if (static_cast<size_t>(r) < iov[i].iov_len) break;
  }
  return total;
}

}  // namespace
}  // namespace kbv::sim::preload

using kbv::sim::Kernel;
using kbv::sim::preload::copy_dir_fd;
using kbv::sim::preload::drop_dir_fd;
using kbv::sim::preload::InModel;
using kbv::sim::preload::route_fd;

#define KBV_EXPORT extern "C" __attribute__((visibility("default")))

KBV_EXPORT int close(int fd) {
  if (route_fd(fd)) {
    InModel in;
    return Kernel::instance().close(fd);
  }
  drop_dir_fd(fd);  // a model directory's placeholder: forget it, close the number
  KBV_NEXT("close", int (*)(int));
  return real_fn ? real_fn(fd) : -1;
}

KBV_EXPORT int ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  if (route_fd(fd)) {
    InModel in;
    return Kernel::instance().ioctl(fd, request, arg);
  }
  KBV_NEXT("ioctl", int (*)(int, unsigned long, ...));
  return real_fn ? real_fn(fd, request, arg) : -1;
}

KBV_EXPORT ssize_t read(int fd, void* buf, size_t n) {
  if (route_fd(fd)) {
    InModel in;
    return Kernel::instance().read(fd, buf, n);
  }
  KBV_NEXT("read", ssize_t(*)(int, void*, size_t));
  return real_fn ? real_fn(fd, buf, n) : -1;
}

// Fortified variants (-D_FORTIFY_SOURCE; Debian builds rdma-core with it:
// libmlx5 calls __pread_chk). `buflen` is the destination object's size.
KBV_EXPORT ssize_t __read_chk(int fd, void* buf, size_t n, size_t buflen) {
  if (n > buflen) __chk_fail();
  return read(fd, buf, n);
}

KBV_EXPORT ssize_t write(int fd, const void* buf, size_t n) {
  if (route_fd(fd)) {
    errno = EINVAL;  // VFIO descriptors: pwrite at a region offset
    return -1;
  }
  KBV_NEXT("write", ssize_t(*)(int, const void*, size_t));
  return real_fn ? real_fn(fd, buf, n) : -1;
}

KBV_EXPORT ssize_t pread(int fd, void* buf, size_t n, off_t off) {
  if (route_fd(fd)) {
    InModel in;
    return Kernel::instance().pread(fd, buf, n, off);
  }
  KBV_NEXT("pread", ssize_t(*)(int, void*, size_t, off_t));
  return real_fn ? real_fn(fd, buf, n, off) : -1;
}

KBV_EXPORT ssize_t pread64(int fd, void* buf, size_t n, off64_t off) {
  if (route_fd(fd)) {
    InModel in;
    return Kernel::instance().pread(fd, buf, n, off);
  }
  KBV_NEXT("pread64", ssize_t(*)(int, void*, size_t, off64_t));
  return real_fn ? real_fn(fd, buf, n, off) : -1;
}

KBV_EXPORT ssize_t __pread_chk(int fd, void* buf, size_t n, off_t off, size_t buflen) {
  if (n > buflen) __chk_fail();
  return pread(fd, buf, n, off);
}

KBV_EXPORT ssize_t __pread64_chk(int fd, void* buf, size_t n, off64_t off, size_t buflen) {
  if (n > buflen) __chk_fail();
  return pread64(fd, buf, n, off);
}

KBV_EXPORT ssize_t preadv(int fd, const struct iovec* iov, int n, off_t off) {
  if (route_fd(fd)) return kbv::sim::preload::vector_rw(fd, iov, n, off, false);
  KBV_NEXT("preadv", ssize_t(*)(int, const struct iovec*, int, off_t));
  return real_fn ? real_fn(fd, iov, n, off) : -1;
}

KBV_EXPORT ssize_t preadv64(int fd, const struct iovec* iov, int n, off64_t off) {
  if (route_fd(fd)) return kbv::sim::preload::vector_rw(fd, iov, n, off, false);
  KBV_NEXT("preadv64", ssize_t(*)(int, const struct iovec*, int, off64_t));
  return real_fn ? real_fn(fd, iov, n, off) : -1;
}

KBV_EXPORT ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  if (route_fd(fd)) {
    InModel in;
    return Kernel::instance().pwrite(fd, buf, n, off);
  }
  KBV_NEXT("pwrite", ssize_t(*)(int, const void*, size_t, off_t));
  return real_fn ? real_fn(fd, buf, n, off) : -1;
}

KBV_EXPORT ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t off) {
  if (route_fd(fd)) {
    InModel in;
    return Kernel::instance().pwrite(fd, buf, n, off);
  }
  KBV_NEXT("pwrite64", ssize_t(*)(int, const void*, size_t, off64_t));
  return real_fn ? real_fn(fd, buf, n, off) : -1;
}

KBV_EXPORT ssize_t pwritev(int fd, const struct iovec* iov, int n, off_t off) {
  if (route_fd(fd)) return kbv::sim::preload::vector_rw(fd, iov, n, off, true);
  KBV_NEXT("pwritev", ssize_t(*)(int, const struct iovec*, int, off_t));
  return real_fn ? real_fn(fd, iov, n, off) : -1;
}

KBV_EXPORT ssize_t pwritev64(int fd, const struct iovec* iov, int n, off64_t off) {
  if (route_fd(fd)) return kbv::sim::preload::vector_rw(fd, iov, n, off, true);
  KBV_NEXT("pwritev64", ssize_t(*)(int, const struct iovec*, int, off64_t));
  return real_fn ? real_fn(fd, iov, n, off) : -1;
}

KBV_EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (!(flags & MAP_ANONYMOUS) && route_fd(fd)) {
    InModel in;
    return Kernel::instance().mmap(addr, len, prot, flags, fd, off);
  }
  if ((flags & MAP_ANONYMOUS) && (flags & MAP_HUGETLB) && !kbv::sim::preload::t_in_model &&
      kbv::sim::preload::g_huge_pool.load(std::memory_order_acquire)) {
    InModel in;
    return Kernel::instance().mmap(addr, len, prot, flags, -1, off);
  }
  KBV_NEXT("mmap", void* (*)(void*, size_t, int, int, int, off_t));
  if (!real_fn) return MAP_FAILED;
  return real_fn(addr, len, prot, flags, fd, off);
}

KBV_EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off64_t off) {
  return mmap(addr, len, prot, flags, fd, static_cast<off_t>(off));
}

// ---- duplication ------------------------------------------------------------------

KBV_EXPORT int dup(int fd) {
  if (route_fd(fd)) {
    InModel in;
    return Kernel::instance().dup_fd(fd, -1, 0, 0);
  }
  KBV_NEXT("dup", int (*)(int));
  const int r = real_fn ? real_fn(fd) : -1;
  copy_dir_fd(fd, r);  // a model directory descriptor's copy names it too
  return r;
}

KBV_EXPORT int dup2(int oldfd, int newfd) {
  if (route_fd(oldfd)) {
    InModel in;
    return Kernel::instance().dup_fd(oldfd, newfd, -1, 0);
  }
  if (route_fd(newfd)) {  // a model descriptor is about to be replaced
    InModel in;
    Kernel::instance().forget_fd(newfd);
  }
  if (oldfd != newfd) drop_dir_fd(newfd);
  KBV_NEXT("dup2", int (*)(int, int));
  const int r = real_fn ? real_fn(oldfd, newfd) : -1;
  if (oldfd != newfd) copy_dir_fd(oldfd, r);
  return r;
}

KBV_EXPORT int dup3(int oldfd, int newfd, int flags) {
  if (route_fd(oldfd)) {
    InModel in;
    return Kernel::instance().dup_fd(oldfd, newfd, flags & O_CLOEXEC, 0);
  }
  if (oldfd != newfd && route_fd(newfd)) {
    InModel in;
    Kernel::instance().forget_fd(newfd);
  }
  if (oldfd != newfd) drop_dir_fd(newfd);
  KBV_NEXT("dup3", int (*)(int, int, int));
  const int r = real_fn ? real_fn(oldfd, newfd, flags) : -1;
  copy_dir_fd(oldfd, r);
  return r;
}

namespace {
int fcntl_common(int fd, int cmd, void* arg, const char* sym) {
  if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && route_fd(fd)) {
    InModel in;
    return Kernel::instance().dup_fd(fd, -1, cmd == F_DUPFD_CLOEXEC ? O_CLOEXEC : 0,
                                     static_cast<int>(reinterpret_cast<intptr_t>(arg)));
  }
  using Fn = int (*)(int, int, ...);
  static constinit std::atomic<Fn> fns[2] = {nullptr, nullptr};
  const int slot = std::strcmp(sym, "fcntl") == 0 ? 0 : 1;
  Fn f = fns[slot].load(std::memory_order_acquire);
  if (!f) {
    f = kbv::sim::preload::next<Fn>(sym);
    fns[slot].store(f, std::memory_order_release);
  }
  if (!f) {
    errno = ENOSYS;
    return -1;
  }
  const int r = f(fd, cmd, arg);  // every fcntl argument is one register-sized value
  if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) copy_dir_fd(fd, r);
  return r;
}
}  // namespace

KBV_EXPORT int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return fcntl_common(fd, cmd, arg, "fcntl");
}

KBV_EXPORT int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return fcntl_common(fd, cmd, arg, "fcntl64");
}

// ---- readiness ---------------------------------------------------------------------

KBV_EXPORT int poll(struct pollfd* fds, nfds_t n, int timeout) {
  KBV_NEXT("poll", int (*)(struct pollfd*, nfds_t, int));
  if (!real_fn) return -1;
  return kbv::sim::preload::poll_mixed(fds, n, [&](struct pollfd* f, nfds_t m, bool wait) {
    return real_fn(f, m, wait ? timeout : 0);
  });
}

KBV_EXPORT int __poll_chk(struct pollfd* fds, nfds_t n, int timeout, size_t fdslen) {
  if (fdslen / sizeof *fds < n) __chk_fail();
  return poll(fds, n, timeout);
}

KBV_EXPORT int ppoll(struct pollfd* fds, nfds_t n, const struct timespec* timeout,
                     const sigset_t* sigmask) {
  KBV_NEXT("ppoll", int (*)(struct pollfd*, nfds_t, const struct timespec*, const sigset_t*));
  if (!real_fn) return -1;
  return kbv::sim::preload::poll_mixed(fds, n, [&](struct pollfd* f, nfds_t m, bool wait) {
    static constexpr struct timespec kZero { 0, 0 };
    return real_fn(f, m, wait ? timeout : &kZero, sigmask);
  });
}

KBV_EXPORT int __ppoll_chk(struct pollfd* fds, nfds_t n, const struct timespec* timeout,
                           const sigset_t* sigmask, size_t fdslen) {
  if (fdslen / sizeof *fds < n) __chk_fail();
  return ppoll(fds, n, timeout, sigmask);
}

KBV_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event* ev) {
  if (op == EPOLL_CTL_ADD && route_fd(fd)) {
    errno = EPERM;  // Linux: the file has no poll method (VFIO descriptors)
    return -1;
  }
  KBV_NEXT("epoll_ctl", int (*)(int, int, int, struct epoll_event*));
  return real_fn ? real_fn(epfd, op, fd, ev) : -1;
}
