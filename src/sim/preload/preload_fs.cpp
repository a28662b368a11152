// SPDX-License-Identifier: BSD-3-Clause
//
// libkbv-sim-preload.so, paths / stat / directories (preload.cpp has the
// overview and the descriptor calls). Interposed:
//   open, open64, __open_2, __open64_2, openat, openat64, __openat_2,
//     __openat64_2 (a model directory opens as a directory descriptor:
//     O_RDONLY, or EISDIR for writing; a file with O_DIRECTORY is ENOTDIR);
//   fopen, fopen64 (glibc's fopen opens internally, not through open);
//   readlink, readlinkat, access, faccessat;
//   stat, stat64, lstat, lstat64, fstat, fstat64, fstatat, fstatat64 (glibc's
//     newfstatat), statx, and the __xstat family glibc 2.33+ still exports for
//     binaries built against older glibc (__xstat, __xstat64, __lxstat,
//     __lxstat64, __fxstat, __fxstat64, __fxstatat, __fxstatat64; forwarded
//     with dlvsym to GLIBC_2.2.5): a container / group descriptor stats as
//     its /dev/vfio character device, a device descriptor as the anonymous
//     inode it is on Linux (its placeholder's);
//   opendir, fdopendir, dirfd, readdir, readdir64, readdir_r, readdir64_r,
//     rewinddir, telldir, seekdir, closedir, scandir, scandir64.
// *at calls resolve a relative path against a model directory descriptor.
// Not interposed: freopen, realpath / canonicalize_file_name (glibc resolves
// through its internal readlink: programs get ENOENT for model paths; Python's
// os.path.realpath works, it uses readlink / lstat), nftw / fts, chdir into a
// model directory, getdents64 called directly.
//
// Threading: every interposer may be called from any thread and from any
// constructor (preload.hpp).
#undef _FORTIFY_SOURCE
#undef _FILE_OFFSET_BITS

#include "sim/preload/preload.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/bus/vfio_kernel.hpp"

namespace kbv::sim::preload {
namespace {

bool needs_mode(int flags) { return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE; }

// ---- model directory descriptors ---------------------------------------------------
constinit std::atomic<int> g_dir_fds{0};

struct DirFdTable {
  std::mutex mu;
  std::unordered_map<int, std::string> paths;
};
DirFdTable& dir_fds() {
  static auto* t = new DirFdTable;  // never destroyed: used until process exit
  return *t;
}

bool is_model_dir(const std::string& path) {
  InModel in;
  std::vector<std::string> names;
  return Kernel::instance().list_dir(path.c_str(), names) == 0;
}

// ---- model DIR streams ----------------------------------------------------------
// A model (or merged) directory is a FakeDir handed out as a DIR*; the
// stream calls recognise it by address.
struct FakeDir {
  std::string path;
  int fd = -1;  // its directory descriptor (fdopendir, or dirfd made one)
  std::vector<std::string> names;
  size_t pos = 0;
  struct dirent64 ent {};
};
constinit std::atomic<int> g_fake_dirs{0};

struct DirTable {
  std::mutex mu;
  std::set<void*> dirs;
};
DirTable& dir_table() {
  static auto* t = new DirTable;  // never destroyed
  return *t;
}

FakeDir* as_fake(DIR* d) {
  if (g_fake_dirs.load(std::memory_order_acquire) == 0) return nullptr;
  DirTable& t = dir_table();
  std::lock_guard lk(t.mu);
  return t.dirs.count(d) ? reinterpret_cast<FakeDir*>(d) : nullptr;
}

// A stream over the model directory `path` (names: ".", "..", then the listing).
FakeDir* open_fake(const std::string& path, int fd) {
  InModel in;
  auto* f = new FakeDir;
  if (Kernel::instance().list_dir(path.c_str(), f->names) != 0) {
    const int e = errno;
    delete f;
    errno = e;
    return nullptr;
  }
  f->names.insert(f->names.begin(), {".", ".."});
  f->path = path;
  f->fd = fd;
  DirTable& t = dir_table();
  std::lock_guard lk(t.mu);
  t.dirs.insert(f);
  g_fake_dirs.fetch_add(1, std::memory_order_release);
  return f;
}

void fill_ent(FakeDir* f, size_t i, struct dirent64* e) {
  std::memset(e, 0, sizeof *e);
  e->d_ino = i + 1;
  e->d_off = static_cast<off64_t>(i + 1);
  e->d_reclen = sizeof *e;
  e->d_type = DT_UNKNOWN;
  std::strncpy(e->d_name, f->names[i].c_str(), sizeof e->d_name - 1);
}

struct dirent64* fake_next(FakeDir* f) {
  if (f->pos >= f->names.size()) return nullptr;
  fill_ent(f, f->pos, &f->ent);
  ++f->pos;
  return &f->ent;
}

int open_model(const std::string& path, int flags) {
  if (is_model_dir(path)) {
    if ((flags & O_ACCMODE) != O_RDONLY) {
      errno = EISDIR;
      return -1;
    }
    return make_dir_fd(path, (flags & O_CLOEXEC) != 0);
  }
  if (flags & O_DIRECTORY) {
    errno = ENOTDIR;
    return -1;
  }
  InModel in;
  return Kernel::instance().open(path.c_str(), flags);
}

int stat_model(const std::string& path, struct stat* st, bool follow) {
  InModel in;
  return Kernel::instance().stat_path(path.c_str(), st, follow);
}

// fstat of a descriptor the model knows: 1 when answered (result in *r).
bool fstat_model(int fd, struct stat* st, int* r) {
  std::string path;
  if (dir_fd_path(fd, &path)) {
    *r = stat_model(path, st, true);
    return true;
  }
  if (!route_fd(fd)) return false;
  InModel in;
  const char kind = Kernel::instance().fd_kind(fd, &path);
  if (kind == 'C' || kind == 'G') {
    *r = stat_model(path, st, true);
    return true;
  }
  return false;  // a device descriptor: the placeholder's anonymous inode, as on Linux
}

}  // namespace

int make_dir_fd(const std::string& path, bool cloexec) {
  // A real descriptor number for the directory; the preload answers for it.
  const int fd = ::eventfd(0, cloexec ? EFD_CLOEXEC : 0);
  if (fd < 0) return -1;
  DirFdTable& t = dir_fds();
  std::lock_guard lk(t.mu);
  t.paths[fd] = path;
  g_dir_fds.fetch_add(1, std::memory_order_release);
  return fd;
}

bool dir_fd_path(int fd, std::string* path) {
  if (fd < 0 || g_dir_fds.load(std::memory_order_acquire) == 0) return false;
  DirFdTable& t = dir_fds();
  std::lock_guard lk(t.mu);
  auto it = t.paths.find(fd);
  if (it == t.paths.end()) return false;
  if (path) *path = it->second;
  return true;
}

bool drop_dir_fd(int fd) {
  if (fd < 0 || g_dir_fds.load(std::memory_order_acquire) == 0) return false;
  DirFdTable& t = dir_fds();
  std::lock_guard lk(t.mu);
  if (t.paths.erase(fd) == 0) return false;
  g_dir_fds.fetch_sub(1, std::memory_order_release);
  return true;
}

void copy_dir_fd(int from, int to) {
  std::string path;
  if (to < 0 || !dir_fd_path(from, &path)) return;
  DirFdTable& t = dir_fds();
  std::lock_guard lk(t.mu);
  if (t.paths.emplace(to, path).second) g_dir_fds.fetch_add(1, std::memory_order_release);
}

std::string model_path_at(int dirfd, const char* path) {
  if (!path) return {};
  if (path[0] == '/') return route_path(path) ? std::string(path) : std::string();
  std::string dir;
  if (dirfd == AT_FDCWD || !dir_fd_path(dirfd, &dir)) return {};
  std::string full = path[0] ? dir + "/" + path : dir;
  return route_path(full.c_str()) ? full : std::string();
}

}  // namespace kbv::sim::preload

using kbv::sim::Kernel;
using kbv::sim::preload::dir_fd_path;
using kbv::sim::preload::InModel;
using kbv::sim::preload::model_path_at;
using kbv::sim::preload::route_path;
namespace pl = kbv::sim::preload;

#define KBV_EXPORT extern "C" __attribute__((visibility("default")))

// ---- open / fopen ----------------------------------------------------------------

namespace {

int open_common(const char* path, int flags, mode_t mode, const char* sym) {
  if (route_path(path)) return pl::open_model(path, flags);
  using Fn = int (*)(const char*, int, ...);
  static constinit std::atomic<Fn> fns[2] = {nullptr, nullptr};
  const int slot = std::strcmp(sym, "open") == 0 ? 0 : 1;
  Fn f = fns[slot].load(std::memory_order_acquire);
  if (!f) {
    f = pl::next<Fn>(sym);
    fns[slot].store(f, std::memory_order_release);
  }
  if (!f) {
    errno = ENOSYS;
    return -1;
  }
  return f(path, flags, mode);
}

int openat_common(int dirfd, const char* path, int flags, mode_t mode, const char* sym) {
  if (const std::string p = model_path_at(dirfd, path); !p.empty()) return pl::open_model(p, flags);
  using Fn = int (*)(int, const char*, int, ...);
  static constinit std::atomic<Fn> fns[2] = {nullptr, nullptr};
  const int slot = std::strcmp(sym, "openat") == 0 ? 0 : 1;
  Fn f = fns[slot].load(std::memory_order_acquire);
  if (!f) {
    f = pl::next<Fn>(sym);
    fns[slot].store(f, std::memory_order_release);
  }
  if (!f) {
    errno = ENOSYS;
    return -1;
  }
  return f(dirfd, path, flags, mode);
}

mode_t mode_arg(int flags, va_list ap) {
  return pl::needs_mode(flags) ? static_cast<mode_t>(va_arg(ap, int)) : 0;
}

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
  static constinit std::atomic<Fn> fns[2] = {nullptr, nullptr};
  const int slot = std::strcmp(sym, "fopen") == 0 ? 0 : 1;
  Fn f = fns[slot].load(std::memory_order_acquire);
  if (!f) {
    f = pl::next<Fn>(sym);
    fns[slot].store(f, std::memory_order_release);
  }
  if (!f) {
    errno = ENOSYS;
    return nullptr;
  }
  return f(path, mode);
}

}  // namespace

KBV_EXPORT int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return open_common(path, flags, mode, "open");
}

KBV_EXPORT int open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return open_common(path, flags, mode, "open64");
}

KBV_EXPORT int __open_2(const char* path, int flags) { return open_common(path, flags, 0, "open"); }

KBV_EXPORT int __open64_2(const char* path, int flags) {
  return open_common(path, flags, 0, "open64");
}

KBV_EXPORT int openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return openat_common(dirfd, path, flags, mode, "openat");
}

KBV_EXPORT int openat64(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return openat_common(dirfd, path, flags, mode, "openat64");
}

KBV_EXPORT int __openat_2(int dirfd, const char* path, int flags) {
  return openat_common(dirfd, path, flags, 0, "openat");
}

KBV_EXPORT int __openat64_2(int dirfd, const char* path, int flags) {
  return openat_common(dirfd, path, flags, 0, "openat64");
}

KBV_EXPORT FILE* fopen(const char* path, const char* mode) {
  return fopen_common(path, mode, "fopen");
}

KBV_EXPORT FILE* fopen64(const char* path, const char* mode) {
  return fopen_common(path, mode, "fopen64");
}

// ---- links and access ------------------------------------------------------------

KBV_EXPORT ssize_t readlink(const char* path, char* buf, size_t size) {
  if (route_path(path)) {
    InModel in;
    return Kernel::instance().readlink(path, buf, size);
  }
  KBV_NEXT("readlink", ssize_t(*)(const char*, char*, size_t));
  return real_fn ? real_fn(path, buf, size) : -1;
}

KBV_EXPORT ssize_t readlinkat(int dirfd, const char* path, char* buf, size_t size) {
  if (const std::string p = model_path_at(dirfd, path); !p.empty()) {
    InModel in;
    return Kernel::instance().readlink(p.c_str(), buf, size);
  }
  KBV_NEXT("readlinkat", ssize_t(*)(int, const char*, char*, size_t));
  return real_fn ? real_fn(dirfd, path, buf, size) : -1;
}

namespace {
int access_model(const std::string& path, int mode) {
  if (pl::is_model_dir(path)) return 0;
  InModel in;
  char b[1];
  if (Kernel::instance().readlink(path.c_str(), b, 1) >= 0) return 0;
  const int fd = Kernel::instance().open(path.c_str(), (mode & W_OK) ? O_RDWR : O_RDONLY);
  if (fd < 0) return -1;
  Kernel::instance().close(fd);
  return 0;
}
}  // namespace

KBV_EXPORT int access(const char* path, int mode) {
  if (route_path(path)) return access_model(path, mode);
  KBV_NEXT("access", int (*)(const char*, int));
  return real_fn ? real_fn(path, mode) : -1;
}

KBV_EXPORT int faccessat(int dirfd, const char* path, int mode, int flags) {
  if (const std::string p = model_path_at(dirfd, path); !p.empty()) return access_model(p, mode);
  KBV_NEXT("faccessat", int (*)(int, const char*, int, int));
  return real_fn ? real_fn(dirfd, path, mode, flags) : -1;
}

// ---- stat ----------------------------------------------------------------------------
// glibc >= 2.33 exports stat/lstat/fstat/fstatat (and *64) as real functions;
// on LP64 struct stat and struct stat64 are the same layout.
static_assert(sizeof(struct stat) == sizeof(struct stat64));

KBV_EXPORT int stat(const char* path, struct stat* st) {
  if (route_path(path)) return pl::stat_model(path, st, true);
  KBV_NEXT("stat", int (*)(const char*, struct stat*));
  return real_fn ? real_fn(path, st) : -1;
}

KBV_EXPORT int stat64(const char* path, struct stat64* st) {
  if (route_path(path)) return pl::stat_model(path, reinterpret_cast<struct stat*>(st), true);
  KBV_NEXT("stat64", int (*)(const char*, struct stat64*));
  return real_fn ? real_fn(path, st) : -1;
}

KBV_EXPORT int lstat(const char* path, struct stat* st) {
  if (route_path(path)) return pl::stat_model(path, st, false);
  KBV_NEXT("lstat", int (*)(const char*, struct stat*));
  return real_fn ? real_fn(path, st) : -1;
}

KBV_EXPORT int lstat64(const char* path, struct stat64* st) {
  if (route_path(path)) return pl::stat_model(path, reinterpret_cast<struct stat*>(st), false);
  KBV_NEXT("lstat64", int (*)(const char*, struct stat64*));
  return real_fn ? real_fn(path, st) : -1;
}

KBV_EXPORT int fstat(int fd, struct stat* st) {
  if (int r; pl::fstat_model(fd, st, &r)) return r;
  KBV_NEXT("fstat", int (*)(int, struct stat*));
  return real_fn ? real_fn(fd, st) : -1;
}

KBV_EXPORT int fstat64(int fd, struct stat64* st) {
  if (int r; pl::fstat_model(fd, reinterpret_cast<struct stat*>(st), &r)) return r;
  KBV_NEXT("fstat64", int (*)(int, struct stat64*));
  return real_fn ? real_fn(fd, st) : -1;
}

namespace {
// fstatat / statx / __fxstatat for a model path or descriptor: 1 when answered.
bool fstatat_model(int dirfd, const char* path, int flags, struct stat* st, int* r) {
  if (path && path[0] == '\0' && (flags & AT_EMPTY_PATH)) return pl::fstat_model(dirfd, st, r);
  const std::string p = model_path_at(dirfd, path);
  if (p.empty()) return false;
  *r = pl::stat_model(p, st, !(flags & AT_SYMLINK_NOFOLLOW));
  return true;
}
}  // namespace

KBV_EXPORT int fstatat(int dirfd, const char* path, struct stat* st, int flags) {
  if (int r; fstatat_model(dirfd, path, flags, st, &r)) return r;
  KBV_NEXT("fstatat", int (*)(int, const char*, struct stat*, int));
  return real_fn ? real_fn(dirfd, path, st, flags) : -1;
}

KBV_EXPORT int fstatat64(int dirfd, const char* path, struct stat64* st, int flags) {
  if (int r; fstatat_model(dirfd, path, flags, reinterpret_cast<struct stat*>(st), &r)) return r;
  KBV_NEXT("fstatat64", int (*)(int, const char*, struct stat64*, int));
  return real_fn ? real_fn(dirfd, path, st, flags) : -1;
}

KBV_EXPORT int statx(int dirfd, const char* path, int flags, unsigned int mask, struct statx* stx) {
  struct stat st {};
  if (int r; fstatat_model(dirfd, path, flags, &st, &r)) {
    if (r != 0) return r;
    std::memset(stx, 0, sizeof *stx);
    stx->stx_mask = STATX_BASIC_STATS & ~STATX_BTIME;
    stx->stx_blksize = static_cast<uint32_t>(st.st_blksize);
    stx->stx_nlink = static_cast<uint32_t>(st.st_nlink);
    stx->stx_uid = st.st_uid;
    stx->stx_gid = st.st_gid;
    stx->stx_mode = static_cast<uint16_t>(st.st_mode);
    stx->stx_ino = st.st_ino;
    stx->stx_size = static_cast<uint64_t>(st.st_size);
    stx->stx_blocks = static_cast<uint64_t>(st.st_blocks);
    stx->stx_atime = {st.st_atim.tv_sec, static_cast<uint32_t>(st.st_atim.tv_nsec), 0};
    stx->stx_mtime = {st.st_mtim.tv_sec, static_cast<uint32_t>(st.st_mtim.tv_nsec), 0};
    stx->stx_ctime = {st.st_ctim.tv_sec, static_cast<uint32_t>(st.st_ctim.tv_nsec), 0};
    stx->stx_rdev_major = major(st.st_rdev);
    stx->stx_rdev_minor = minor(st.st_rdev);
    stx->stx_dev_major = major(st.st_dev);
    stx->stx_dev_minor = minor(st.st_dev);
    (void)mask;  // every basic field is filled whatever was asked, as Linux may
    return 0;
  }
  KBV_NEXT("statx", int (*)(int, const char*, int, unsigned int, struct statx*));
  return real_fn ? real_fn(dirfd, path, flags, mask, stx) : -1;
}

// The pre-2.33 stat ABI (ver = _STAT_VER_LINUX, 1 on x86-64): glibc keeps the
// symbols as GLIBC_2.2.5 compat versions; an unversioned definition here
// satisfies those references.
KBV_EXPORT int __xstat(int ver, const char* path, struct stat* st) {
  if (route_path(path)) return pl::stat_model(path, st, true);
  KBV_NEXT_V("__xstat", "GLIBC_2.2.5", int (*)(int, const char*, struct stat*));
  return real_fn ? real_fn(ver, path, st) : -1;
}

KBV_EXPORT int __xstat64(int ver, const char* path, struct stat64* st) {
  if (route_path(path)) return pl::stat_model(path, reinterpret_cast<struct stat*>(st), true);
  KBV_NEXT_V("__xstat64", "GLIBC_2.2.5", int (*)(int, const char*, struct stat64*));
  return real_fn ? real_fn(ver, path, st) : -1;
}

KBV_EXPORT int __lxstat(int ver, const char* path, struct stat* st) {
  if (route_path(path)) return pl::stat_model(path, st, false);
  KBV_NEXT_V("__lxstat", "GLIBC_2.2.5", int (*)(int, const char*, struct stat*));
  return real_fn ? real_fn(ver, path, st) : -1;
}

KBV_EXPORT int __lxstat64(int ver, const char* path, struct stat64* st) {
  if (route_path(path)) return pl::stat_model(path, reinterpret_cast<struct stat*>(st), false);
  KBV_NEXT_V("__lxstat64", "GLIBC_2.2.5", int (*)(int, const char*, struct stat64*));
  return real_fn ? real_fn(ver, path, st) : -1;
}

KBV_EXPORT int __fxstat(int ver, int fd, struct stat* st) {
  if (int r; pl::fstat_model(fd, st, &r)) return r;
  KBV_NEXT_V("__fxstat", "GLIBC_2.2.5", int (*)(int, int, struct stat*));
  return real_fn ? real_fn(ver, fd, st) : -1;
}

KBV_EXPORT int __fxstat64(int ver, int fd, struct stat64* st) {
  if (int r; pl::fstat_model(fd, reinterpret_cast<struct stat*>(st), &r)) return r;
  KBV_NEXT_V("__fxstat64", "GLIBC_2.2.5", int (*)(int, int, struct stat64*));
  return real_fn ? real_fn(ver, fd, st) : -1;
}

KBV_EXPORT int __fxstatat(int ver, int dirfd, const char* path, struct stat* st, int flags) {
  if (int r; fstatat_model(dirfd, path, flags, st, &r)) return r;
  KBV_NEXT_V("__fxstatat", "GLIBC_2.4", int (*)(int, int, const char*, struct stat*, int));
  return real_fn ? real_fn(ver, dirfd, path, st, flags) : -1;
}

KBV_EXPORT int __fxstatat64(int ver, int dirfd, const char* path, struct stat64* st, int flags) {
  if (int r; fstatat_model(dirfd, path, flags, reinterpret_cast<struct stat*>(st), &r)) return r;
  KBV_NEXT_V("__fxstatat64", "GLIBC_2.4", int (*)(int, int, const char*, struct stat64*, int));
  return real_fn ? real_fn(ver, dirfd, path, st, flags) : -1;
}

// ---- directories ---------------------------------------------------------------------

KBV_EXPORT DIR* opendir(const char* path) {
  if (route_path(path)) return reinterpret_cast<DIR*>(pl::open_fake(path, -1));
  KBV_NEXT("opendir", DIR * (*)(const char*));
  return real_fn ? real_fn(path) : nullptr;
}

KBV_EXPORT DIR* fdopendir(int fd) {
  if (std::string p; dir_fd_path(fd, &p)) return reinterpret_cast<DIR*>(pl::open_fake(p, fd));
  KBV_NEXT("fdopendir", DIR * (*)(int));
  return real_fn ? real_fn(fd) : nullptr;
}

KBV_EXPORT int dirfd(DIR* d) {
  if (pl::FakeDir* f = pl::as_fake(d)) {
    if (f->fd < 0) f->fd = pl::make_dir_fd(f->path, true);
    return f->fd;
  }
  KBV_NEXT("dirfd", int (*)(DIR*));
  return real_fn ? real_fn(d) : -1;
}

KBV_EXPORT struct dirent64* readdir64(DIR* d) {
  if (pl::FakeDir* f = pl::as_fake(d)) return pl::fake_next(f);
  KBV_NEXT("readdir64", struct dirent64 * (*)(DIR*));
  return real_fn ? real_fn(d) : nullptr;
}

KBV_EXPORT struct dirent* readdir(DIR* d) {
  // glibc on 64-bit: struct dirent and struct dirent64 have the same layout.
  static_assert(sizeof(struct dirent) == sizeof(struct dirent64));
  if (pl::FakeDir* f = pl::as_fake(d)) return reinterpret_cast<struct dirent*>(pl::fake_next(f));
  KBV_NEXT("readdir", struct dirent * (*)(DIR*));
  return real_fn ? real_fn(d) : nullptr;
}

namespace {
int fake_readdir_r(pl::FakeDir* f, struct dirent64* entry, struct dirent64** result) {
  if (f->pos >= f->names.size()) {
    *result = nullptr;
    return 0;
  }
  pl::fill_ent(f, f->pos++, entry);
  *result = entry;
  return 0;
}
}  // namespace

KBV_EXPORT int readdir64_r(DIR* d, struct dirent64* entry, struct dirent64** result) {
  if (pl::FakeDir* f = pl::as_fake(d)) return fake_readdir_r(f, entry, result);
  KBV_NEXT("readdir64_r", int (*)(DIR*, struct dirent64*, struct dirent64**));
  return real_fn ? real_fn(d, entry, result) : ENOSYS;
}

KBV_EXPORT int readdir_r(DIR* d, struct dirent* entry, struct dirent** result) {
  if (pl::FakeDir* f = pl::as_fake(d))
    return fake_readdir_r(f, reinterpret_cast<struct dirent64*>(entry),
                          reinterpret_cast<struct dirent64**>(result));
  KBV_NEXT("readdir_r", int (*)(DIR*, struct dirent*, struct dirent**));
  return real_fn ? real_fn(d, entry, result) : ENOSYS;
}

KBV_EXPORT void rewinddir(DIR* d) {
  if (pl::FakeDir* f = pl::as_fake(d)) {
    f->pos = 0;
    return;
  }
  KBV_NEXT("rewinddir", void (*)(DIR*));
  if (real_fn) real_fn(d);
}

KBV_EXPORT long telldir(DIR* d) {
  if (pl::FakeDir* f = pl::as_fake(d)) return static_cast<long>(f->pos);
  KBV_NEXT("telldir", long (*)(DIR*));
  return real_fn ? real_fn(d) : -1;
}

KBV_EXPORT void seekdir(DIR* d, long pos) {
  if (pl::FakeDir* f = pl::as_fake(d)) {
    f->pos = std::min(static_cast<size_t>(std::max(pos, 0L)), f->names.size());
    return;
  }
  KBV_NEXT("seekdir", void (*)(DIR*, long));
  if (real_fn) real_fn(d, pos);
}

KBV_EXPORT int closedir(DIR* d) {
  if (pl::FakeDir* f = pl::as_fake(d)) {
    {
      pl::DirTable& t = pl::dir_table();
      std::lock_guard lk(t.mu);
      t.dirs.erase(f);
      pl::g_fake_dirs.fetch_sub(1, std::memory_order_release);
    }
    if (f->fd >= 0) close(f->fd);  // the stream owns its descriptor (fdopendir, dirfd)
    delete f;
    return 0;
  }
  KBV_NEXT("closedir", int (*)(DIR*));
  return real_fn ? real_fn(d) : -1;
}

namespace {
// scandir over a model directory: glibc's own scandir reads through its
// internal opendir, which the preload cannot see.
template <class Ent>
int scandir_model(const char* path, Ent*** list, int (*filter)(const Ent*),
                  int (*compar)(const Ent**, const Ent**)) {
  pl::FakeDir* f = pl::open_fake(path, -1);
  if (!f) return -1;
  std::vector<Ent*> out;
  for (size_t i = 0; i < f->names.size(); ++i) {
    auto* e = static_cast<Ent*>(std::malloc(sizeof(Ent)));
    if (!e) break;
    pl::fill_ent(f, i, reinterpret_cast<struct dirent64*>(e));
    if (filter && !filter(e)) {
      std::free(e);
      continue;
    }
    out.push_back(e);
  }
  closedir(reinterpret_cast<DIR*>(f));
  if (compar)
    std::sort(out.begin(), out.end(),
              [compar](const Ent* a, const Ent* b) { return compar(&a, &b) < 0; });
  *list = static_cast<Ent**>(std::malloc(sizeof(Ent*) * (out.empty() ? 1 : out.size())));
  if (!*list) {
    for (Ent* e : out) std::free(e);
    errno = ENOMEM;
    return -1;
  }
  std::copy(out.begin(), out.end(), *list);
  return static_cast<int>(out.size());
}
}  // namespace

KBV_EXPORT int scandir(const char* path, struct dirent*** list, int (*filter)(const struct dirent*),
                       int (*compar)(const struct dirent**, const struct dirent**)) {
  if (route_path(path)) return scandir_model(path, list, filter, compar);
  KBV_NEXT("scandir", int (*)(const char*, struct dirent***, int (*)(const struct dirent*),
                              int (*)(const struct dirent**, const struct dirent**)));
  return real_fn ? real_fn(path, list, filter, compar) : -1;
}

KBV_EXPORT int scandir64(const char* path, struct dirent64*** list,
                         int (*filter)(const struct dirent64*),
                         int (*compar)(const struct dirent64**, const struct dirent64**)) {
  if (route_path(path)) return scandir_model(path, list, filter, compar);
  KBV_NEXT("scandir64", int (*)(const char*, struct dirent64***, int (*)(const struct dirent64*),
                                int (*)(const struct dirent64**, const struct dirent64**)));
  return real_fn ? real_fn(path, list, filter, compar) : -1;
}
