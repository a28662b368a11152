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
// (default 1000) sets how often each model polls BAR0, since a preloaded
// program's BAR stores are not trapped (pci_device.hpp).
//
// Interposed (glibc symbols, found with dlsym(RTLD_NEXT)): open, open64,
// openat, openat64, __open_2, __open64_2, fopen, fopen64, close, ioctl,
// pread, pread64,
// pwrite, pwrite64, mmap, mmap64, readlink, readlinkat, access, stat, stat64,
// lstat, lstat64, fstatat, fstatat64, opendir, readdir, readdir64, closedir. A call is routed to
// the model when its path or descriptor is the model's (Kernel::owns_path / owns_fd), otherwise it
// goes straight to the next definition (libc). Calls the model itself makes
// while answering (eventfd, memfd, mmap of its BAR memory) bypass the routing
// through a per-thread re-entrancy flag.
//
// Not interposed: freopen, statx, the pre-2.33
// __xstat family, read on the
// model's VFIO descriptors, openat relative to a directory descriptor,
// fdopendir/dirfd of the model's directories. With KBV_SIM_DEVICES unset or 0
// nothing is routed.
//
// Threading: every interposer may be called from any thread.
// The interposers define the plain and the *64 symbols themselves, so the
// headers must not redirect one to the other (on LP64 off_t is 64-bit anyway).
#undef _FORTIFY_SOURCE
#undef _FILE_OFFSET_BITS
static_assert(sizeof(void*) == 8, "the preload library assumes LP64 (off_t == off64_t)");

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/limits.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "sim/bus/vfio_kernel.hpp"
#include "sim/model.hpp"

// glibc's fortify failure report (debug/chk_fail.c); not in any header.
extern "C" [[noreturn]] void __chk_fail(void);

namespace {

using kbv::sim::Kernel;

// Every namespace-scope variable here is constinit: another library's
// constructor may call an interposer before this library's initialisers run.
constinit thread_local bool t_in_model = false;
constinit std::atomic<bool> g_active{false};

// Marks "inside the model" for the current thread.
struct InModel {
  InModel() : prev(t_in_model) { t_in_model = true; }
  ~InModel() { t_in_model = prev; }
  bool prev;
};

template <class F>
F next(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

// Declares `real_fn`, the next definition of `name` (normally libc's),
// looked up once; errno = ENOSYS when there is none.
#define KBV_NEXT(name, type)                                  \
  using RealFn = type;                                        \
  static std::atomic<RealFn> real_slot{nullptr};              \
  RealFn real_fn = real_slot.load(std::memory_order_acquire); \
  if (!real_fn) {                                             \
    real_fn = next<RealFn>(name);                             \
    real_slot.store(real_fn, std::memory_order_release);      \
  }                                                           \
  if (!real_fn) errno = ENOSYS

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

bool needs_mode(int flags) { return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE; }

// ---- directories -------------------------------------------------------------------
// A model (or merged) directory is a FakeDir handed out as a DIR*; readdir
// recognises it by address.
struct FakeDir {
  std::vector<std::string> names;
  size_t pos = 0;
  struct dirent64 ent {};
};
// The open FakeDirs. Any library's constructor may call readdir/closedir
// before this library's static initialisers ran (libnuma's does), so the
// table is a function-local static and the fast path is a constant-initialised
// counter: with no model directory open, real DIRs never touch the table.
constinit std::atomic<int> g_fake_dirs{0};

struct DirTable {
  std::mutex mu;
  std::set<void*> dirs;
};

DirTable& dir_table() {
  static auto* t = new DirTable;  // never destroyed: used until process exit
  return *t;
}

FakeDir* as_fake(DIR* d) {
  if (g_fake_dirs.load(std::memory_order_acquire) == 0) return nullptr;
  DirTable& t = dir_table();
  std::lock_guard lk(t.mu);
  return t.dirs.count(d) ? reinterpret_cast<FakeDir*>(d) : nullptr;
}

struct dirent64* fake_next(FakeDir* f) {
  if (f->pos >= f->names.size()) return nullptr;
  const std::string& n = f->names[f->pos];
  std::memset(&f->ent, 0, sizeof f->ent);
  f->ent.d_ino = f->pos + 1;
  f->ent.d_off = static_cast<off64_t>(f->pos + 1);
  f->ent.d_reclen = sizeof f->ent;
  f->ent.d_type = DT_UNKNOWN;
  std::strncpy(f->ent.d_name, n.c_str(), sizeof f->ent.d_name - 1);
  ++f->pos;
  return &f->ent;
}

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
  kbv::sim::DeviceConfig cfg;
  long poll_us = 1000;
  if (const char* p = std::getenv("KBV_SIM_DBELL_POLL_US")) poll_us = std::strtol(p, nullptr, 10);
  cfg.dbell_poll = std::chrono::microseconds(poll_us > 0 ? poll_us : 0);
  const char* fw_env = std::getenv("KBV_SIM_FIRMWARE");
  const bool with_fw = !(fw_env && std::strcmp(fw_env, "0") == 0);
  long host = 0;
  if (const char* h = std::getenv("KBV_SIM_PORT_HOST")) host = std::strtol(h, nullptr, 10);
  // The models live as long as the process, like the Kernel that owns them.
  static auto* models = new std::vector<std::unique_ptr<kbv::sim::Model>>;
  int made = 0;
  for (const std::string& name : names) {
    kbv::Status st;
    if (with_fw) {
      kbv::sim::ModelConfig mc;
      mc.device = cfg;
      if (host > 0 && host + made < 200) mc.port_host = static_cast<uint8_t>(host + made);
      auto m = kbv::sim::Model::create(name, mc);
      if (m) models->push_back(std::move(*m));
      st = m.status();
    } else {
      st = Kernel::instance().add_device(name, cfg).status();
    }
    if (st) {
      ++made;
    } else {
      kbv::log::error("sim.preload", "cannot create model device '{}': {}", name, st.to_string());
    }
  }
  g_active.store(made > 0, std::memory_order_release);
}

int open_common(const char* path, int flags, mode_t mode, const char* sym) {
  if (route_path(path)) {
    InModel in;
    return Kernel::instance().open(path, flags);
  }
  using Fn = int (*)(const char*, int, ...);
  static std::atomic<Fn> fns[2];
  const int slot = std::strcmp(sym, "open") == 0 ? 0 : 1;
  Fn f = fns[slot].load(std::memory_order_acquire);
  if (!f) {
    f = next<Fn>(sym);
    fns[slot].store(f, std::memory_order_release);
  }
  if (!f) {
    errno = ENOSYS;
    return -1;
  }
  return f(path, flags, mode);
}

int openat_common(int dirfd, const char* path, int flags, mode_t mode, const char* sym) {
  if (route_path(path)) {  // absolute paths only: dirfd is ignored for those
    InModel in;
    return Kernel::instance().open(path, flags);
  }
  using Fn = int (*)(int, const char*, int, ...);
  static std::atomic<Fn> fns[2];
  const int slot = std::strcmp(sym, "openat") == 0 ? 0 : 1;
  Fn f = fns[slot].load(std::memory_order_acquire);
  if (!f) {
    f = next<Fn>(sym);
    fns[slot].store(f, std::memory_order_release);
  }
  if (!f) {
    errno = ENOSYS;
    return -1;
  }
  return f(dirfd, path, flags, mode);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int open(const char* path, int flags, ...) {
  mode_t mode = 0;
  if (needs_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return open_common(path, flags, mode, "open");
}

__attribute__((visibility("default"))) int open64(const char* path, int flags, ...) {
  mode_t mode = 0;
  if (needs_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return open_common(path, flags, mode, "open64");
}

__attribute__((visibility("default"))) int __open_2(const char* path, int flags) {
  return open_common(path, flags, 0, "open");
}

__attribute__((visibility("default"))) int __open64_2(const char* path, int flags) {
  return open_common(path, flags, 0, "open64");
}

__attribute__((visibility("default"))) int openat(int dirfd, const char* path, int flags, ...) {
  mode_t mode = 0;
  if (needs_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return openat_common(dirfd, path, flags, mode, "openat");
}

__attribute__((visibility("default"))) int openat64(int dirfd, const char* path, int flags, ...) {
  mode_t mode = 0;
  if (needs_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return openat_common(dirfd, path, flags, mode, "openat64");
}

// stdio: glibc's fopen opens internally (not through open), so it needs its
// own interposer. Model paths are opened by the model and wrapped by fdopen.
FILE* fopen_common(const char* path, const char* mode, const char* sym) {
  if (route_path(path) && mode) {
    InModel in;
    const bool rw = std::strchr(mode, '+') || mode[0] == 'w' || mode[0] == 'a';
    const int fd = Kernel::instance().open(path, rw ? O_RDWR : O_RDONLY);
    if (fd < 0) return nullptr;
    FILE* f = ::fdopen(fd, mode);
    if (!f) {
      const int e = errno;
      Kernel::instance().close(fd);
      errno = e;
    }
    return f;
  }
  using Fn = FILE* (*)(const char*, const char*);
  static std::atomic<Fn> fns[2];
  const int slot = std::strcmp(sym, "fopen") == 0 ? 0 : 1;
  Fn f = fns[slot].load(std::memory_order_acquire);
  if (!f) {
    f = next<Fn>(sym);
    fns[slot].store(f, std::memory_order_release);
  }
  if (!f) {
    errno = ENOSYS;
    return nullptr;
  }
  return f(path, mode);
}

__attribute__((visibility("default"))) FILE* fopen(const char* path, const char* mode) {
  return fopen_common(path, mode, "fopen");
}

__attribute__((visibility("default"))) FILE* fopen64(const char* path, const char* mode) {
  return fopen_common(path, mode, "fopen64");
}

__attribute__((visibility("default"))) int close(int fd) {
  if (route_fd(fd)) {
    InModel in;
    return Kernel::instance().close(fd);
  }
  KBV_NEXT("close", int (*)(int));
  return real_fn ? real_fn(fd) : -1;
}

__attribute__((visibility("default"))) int ioctl(int fd, unsigned long request, ...) {
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

__attribute__((visibility("default"))) ssize_t pread(int fd, void* buf, size_t n, off_t off) {
  if (route_fd(fd)) {
    InModel in;
    return Kernel::instance().pread(fd, buf, n, off);
  }
  KBV_NEXT("pread", ssize_t(*)(int, void*, size_t, off_t));
  return real_fn ? real_fn(fd, buf, n, off) : -1;
}

__attribute__((visibility("default"))) ssize_t pread64(int fd, void* buf, size_t n, off64_t off) {
  if (route_fd(fd)) {
    InModel in;
    return Kernel::instance().pread(fd, buf, n, off);
  }
  KBV_NEXT("pread64", ssize_t(*)(int, void*, size_t, off64_t));
  return real_fn ? real_fn(fd, buf, n, off) : -1;
}

// Fortified variants (-D_FORTIFY_SOURCE; Debian builds rdma-core with it:
// libmlx5 calls __pread_chk). `buflen` is the destination object's size.
__attribute__((visibility("default"))) ssize_t __pread_chk(int fd, void* buf, size_t n, off_t off,
                                                           size_t buflen) {
  if (n > buflen) __chk_fail();
  return pread(fd, buf, n, off);
}

__attribute__((visibility("default"))) ssize_t __pread64_chk(int fd, void* buf, size_t n,
                                                             off64_t off, size_t buflen) {
  if (n > buflen) __chk_fail();
  return pread64(fd, buf, n, off);
}

__attribute__((visibility("default"))) ssize_t read(int fd, void* buf, size_t n) {
  if (route_fd(fd)) {
    InModel in;
    return Kernel::instance().read(fd, buf, n);
  }
  KBV_NEXT("read", ssize_t(*)(int, void*, size_t));
  return real_fn ? real_fn(fd, buf, n) : -1;
}

__attribute__((visibility("default"))) ssize_t __read_chk(int fd, void* buf, size_t n,
                                                          size_t buflen) {
  if (n > buflen) __chk_fail();
  return read(fd, buf, n);
}

__attribute__((visibility("default"))) ssize_t pwrite(int fd, const void* buf, size_t n,
                                                      off_t off) {
  if (route_fd(fd)) {
    InModel in;
    return Kernel::instance().pwrite(fd, buf, n, off);
  }
  KBV_NEXT("pwrite", ssize_t(*)(int, const void*, size_t, off_t));
  return real_fn ? real_fn(fd, buf, n, off) : -1;
}

__attribute__((visibility("default"))) ssize_t pwrite64(int fd, const void* buf, size_t n,
                                                        off64_t off) {
  if (route_fd(fd)) {
    InModel in;
    return Kernel::instance().pwrite(fd, buf, n, off);
  }
  KBV_NEXT("pwrite64", ssize_t(*)(int, const void*, size_t, off64_t));
  return real_fn ? real_fn(fd, buf, n, off) : -1;
}

__attribute__((visibility("default"))) void* mmap(void* addr, size_t len, int prot, int flags,
                                                  int fd, off_t off) {
  if (!(flags & MAP_ANONYMOUS) && route_fd(fd)) {
    InModel in;
    return Kernel::instance().mmap(addr, len, prot, flags, fd, off);
  }
  using Fn = void* (*)(void*, size_t, int, int, int, off_t);
  static std::atomic<Fn> f{nullptr};
  Fn fn = f.load(std::memory_order_acquire);
  if (!fn) f.store(fn = next<Fn>("mmap"), std::memory_order_release);
  if (!fn) {
    errno = ENOSYS;
    return MAP_FAILED;
  }
  return fn(addr, len, prot, flags, fd, off);
}

__attribute__((visibility("default"))) void* mmap64(void* addr, size_t len, int prot, int flags,
                                                    int fd, off64_t off) {
  return mmap(addr, len, prot, flags, fd, static_cast<off_t>(off));
}

__attribute__((visibility("default"))) ssize_t readlink(const char* path, char* buf, size_t size) {
  if (route_path(path)) {
    InModel in;
    return Kernel::instance().readlink(path, buf, size);
  }
  KBV_NEXT("readlink", ssize_t(*)(const char*, char*, size_t));
  return real_fn ? real_fn(path, buf, size) : -1;
}

__attribute__((visibility("default"))) ssize_t readlinkat(int dirfd, const char* path, char* buf,
                                                          size_t size) {
  if (route_path(path)) {
    InModel in;
    return Kernel::instance().readlink(path, buf, size);
  }
  KBV_NEXT("readlinkat", ssize_t(*)(int, const char*, char*, size_t));
  return real_fn ? real_fn(dirfd, path, buf, size) : -1;
}

__attribute__((visibility("default"))) int access(const char* path, int mode) {
  if (route_path(path)) {
    InModel in;
    std::vector<std::string> names;
    // Directories answer a listing; files and links exist if they open/read.
    if (Kernel::instance().list_dir(path, names) == 0) return 0;
    char b[1];
    if (Kernel::instance().readlink(path, b, 1) >= 0) return 0;
    const int fd = Kernel::instance().open(path, (mode & W_OK) ? O_RDWR : O_RDONLY);
    if (fd < 0) return -1;
    Kernel::instance().close(fd);
    return 0;
  }
  KBV_NEXT("access", int (*)(const char*, int));
  return real_fn ? real_fn(path, mode) : -1;
}

// stat family: glibc >= 2.33 exports stat/lstat/fstatat (and *64) as real
// functions; programs built against it call these.
__attribute__((visibility("default"))) int stat(const char* path, struct stat* st) {
  if (route_path(path)) {
    InModel in;
    return Kernel::instance().stat_path(path, st, true);
  }
  KBV_NEXT("stat", int (*)(const char*, struct stat*));
  return real_fn ? real_fn(path, st) : -1;
}

__attribute__((visibility("default"))) int stat64(const char* path, struct stat64* st) {
  static_assert(sizeof(struct stat) == sizeof(struct stat64));
  if (route_path(path)) {
    InModel in;
    return Kernel::instance().stat_path(path, reinterpret_cast<struct stat*>(st), true);
  }
  KBV_NEXT("stat64", int (*)(const char*, struct stat64*));
  return real_fn ? real_fn(path, st) : -1;
}

__attribute__((visibility("default"))) int lstat(const char* path, struct stat* st) {
  if (route_path(path)) {
    InModel in;
    return Kernel::instance().stat_path(path, st, false);
  }
  KBV_NEXT("lstat", int (*)(const char*, struct stat*));
  return real_fn ? real_fn(path, st) : -1;
}

__attribute__((visibility("default"))) int lstat64(const char* path, struct stat64* st) {
  if (route_path(path)) {
    InModel in;
    return Kernel::instance().stat_path(path, reinterpret_cast<struct stat*>(st), false);
  }
  KBV_NEXT("lstat64", int (*)(const char*, struct stat64*));
  return real_fn ? real_fn(path, st) : -1;
}

__attribute__((visibility("default"))) int fstatat(int dirfd, const char* path, struct stat* st,
                                                   int flags) {
  if (route_path(path)) {
    InModel in;
    return Kernel::instance().stat_path(path, st, !(flags & AT_SYMLINK_NOFOLLOW));
  }
  KBV_NEXT("fstatat", int (*)(int, const char*, struct stat*, int));
  return real_fn ? real_fn(dirfd, path, st, flags) : -1;
}

__attribute__((visibility("default"))) int fstatat64(int dirfd, const char* path, struct stat64* st,
                                                     int flags) {
  if (route_path(path)) {
    InModel in;
    return Kernel::instance().stat_path(path, reinterpret_cast<struct stat*>(st),
                                        !(flags & AT_SYMLINK_NOFOLLOW));
  }
  KBV_NEXT("fstatat64", int (*)(int, const char*, struct stat64*, int));
  return real_fn ? real_fn(dirfd, path, st, flags) : -1;
}

__attribute__((visibility("default"))) DIR* opendir(const char* path) {
  if (route_path(path)) {
    InModel in;
    auto* f = new FakeDir;
    if (Kernel::instance().list_dir(path, f->names) != 0) {
      const int e = errno;
      delete f;
      errno = e;
      return nullptr;
    }
    f->names.insert(f->names.begin(), {".", ".."});
    DirTable& t = dir_table();
    std::lock_guard lk(t.mu);
    t.dirs.insert(f);
    g_fake_dirs.fetch_add(1, std::memory_order_release);
    return reinterpret_cast<DIR*>(f);
  }
  KBV_NEXT("opendir", DIR * (*)(const char*));
  return real_fn ? real_fn(path) : nullptr;
}

__attribute__((visibility("default"))) struct dirent64* readdir64(DIR* d) {
  if (FakeDir* f = as_fake(d)) return fake_next(f);
  KBV_NEXT("readdir64", struct dirent64 * (*)(DIR*));
  return real_fn ? real_fn(d) : nullptr;
}

__attribute__((visibility("default"))) struct dirent* readdir(DIR* d) {
  // glibc on 64-bit: struct dirent and struct dirent64 have the same layout.
  static_assert(sizeof(struct dirent) == sizeof(struct dirent64));
  if (FakeDir* f = as_fake(d)) return reinterpret_cast<struct dirent*>(fake_next(f));
  KBV_NEXT("readdir", struct dirent * (*)(DIR*));
  return real_fn ? real_fn(d) : nullptr;
}

__attribute__((visibility("default"))) int closedir(DIR* d) {
  if (FakeDir* f = as_fake(d)) {
    {
      DirTable& t = dir_table();
      std::lock_guard lk(t.mu);
      t.dirs.erase(f);
      g_fake_dirs.fetch_sub(1, std::memory_order_release);
    }
    delete f;
    return 0;
  }
  KBV_NEXT("closedir", int (*)(DIR*));
  return real_fn ? real_fn(d) : -1;
}

}  // extern "C"
