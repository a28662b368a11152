// SPDX-License-Identifier: BSD-3-Clause
//
// libkbv-ibverbs-sysfs.so: the sysfs view of kbv's libibverbs devices
// (view.hpp) for programs that read sysfs beside libibverbs, by LD_PRELOAD.
// `kbv-run` loads it; nothing else does.
//
// Interposed (glibc symbols, next definition by dlsym(RTLD_NEXT)): open,
// open64, __open_2, __open64_2, openat, openat64, __openat_2, __openat64_2
// (AT_FDCWD or an absolute path), fopen, fopen64, stat, stat64, lstat,
// lstat64, fstatat, fstatat64, access, readlink, readlinkat, realpath,
// __realpath_chk. A path
// inside the view is answered by it; every other call goes to libc
// unchanged. Reading a view file gives a memfd holding its text (an empty
// GID entry's attribute: a descriptor whose read fails with EINVAL, as the
// kernel's does); opening one for writing fails with EACCES (sysfs 0444).
// Not interposed: statx, the pre-2.33 __xstat family, opendir/readdir (the
// view's directories cannot be listed), openat relative to a descriptor.
//
// Threading: any thread. Safe before constructors ran (every namespace-scope
// variable is constinit; the view's table is created on first use).
#undef _FORTIFY_SOURCE
#undef _FILE_OFFSET_BITS
static_assert(sizeof(void*) == 8, "assumes LP64 (off_t == off64_t)");

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <functional>

#include "ibverbs/sysfs_view/view.hpp"

namespace {

using kbv::ibverbs::sysfs_view::Kind;
using kbv::ibverbs::sysfs_view::lookup;
using kbv::ibverbs::sysfs_view::Node;

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

// An *at call the view may answer: an absolute path, or one relative to the
// working directory (the view's paths are absolute, so only those match).
bool by_path(int dirfd, const char* path) { return path && (path[0] == '/' || dirfd == AT_FDCWD); }

bool needs_mode(int flags) { return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE; }

// A descriptor for a view node opened with `flags`; -1 + errno. Directories
// cannot be opened (ENOTSUP), the device nodes have no driver (ENXIO).
int open_node(const Node& n, int flags) {
  const int cloexec = flags & O_CLOEXEC;
  switch (n.kind) {
    case Kind::kDir: errno = (flags & O_ACCMODE) == O_RDONLY ? ENOTSUP : EISDIR; return -1;
    case Kind::kCharDev: errno = ENXIO; return -1;
    case Kind::kFile:
    case Kind::kNoData:
      if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_DIRECTORY)) {
        errno = (flags & O_DIRECTORY) ? ENOTDIR : EACCES;
        return -1;
      }
      break;
    default: errno = ENOENT; return -1;
  }
  if (n.kind == Kind::kNoData) return ::epoll_create1(cloexec ? EPOLL_CLOEXEC : 0);
  const int fd = ::memfd_create("kbv-ibverbs-sysfs", cloexec ? MFD_CLOEXEC : 0);
  if (fd < 0) return -1;
  if (::pwrite(fd, n.content.data(), n.content.size(), 0) !=
      static_cast<ssize_t>(n.content.size())) {
    const int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

void fill_stat(const Node& n, struct stat* st, bool follow) {
  memset(st, 0, sizeof *st);
  st->st_dev = 0x16;  // a sysfs-like anonymous device
  st->st_ino = std::hash<std::string>{}(n.real_path + n.content) | 1;
  st->st_nlink = 1;
  st->st_blksize = 4096;
  if (n.link && !follow) {
    st->st_mode = S_IFLNK | 0777;
    return;
  }
  switch (n.kind) {
    case Kind::kDir:
      st->st_mode = S_IFDIR | 0755;
      st->st_nlink = 2;
      break;
    case Kind::kCharDev:
      st->st_mode = S_IFCHR | 0666;
      st->st_rdev = n.rdev;
      break;
    default:
      st->st_mode = S_IFREG | 0444;
      st->st_size = 4096;  // sysfs attributes report a page
      break;
  }
}

// stat/lstat of a view path: 1 handled (result in *ret), 0 not in the view.
int view_stat(const char* path, struct stat* st, bool follow, int* ret) {
  Node n = lookup(path);
  if (n.kind == Kind::kNone) return 0;
  if (n.kind == Kind::kRedirect) {
    if (n.link && !follow) return 0;
    KBV_NEXT("stat", int (*)(const char*, struct stat*));
    *ret = real_fn ? real_fn(n.real_path.c_str(), st) : -1;
    return 1;
  }
  if (!st) {
    errno = EFAULT;
    *ret = -1;
    return 1;
  }
  fill_stat(n, st, follow);
  *ret = 0;
  return 1;
}

int do_open(const char* path, int flags, mode_t mode, const char* real_name) {
  Node n = lookup(path);
  if (n.kind != Kind::kNone && n.kind != Kind::kRedirect) return open_node(n, flags);
  KBV_NEXT(real_name, int (*)(const char*, int, ...));
  if (!real_fn) return -1;
  const char* p = n.kind == Kind::kRedirect ? n.real_path.c_str() : path;
  return needs_mode(flags) ? real_fn(p, flags, mode) : real_fn(p, flags);
}

int do_openat(int dirfd, const char* path, int flags, mode_t mode, const char* real_name) {
  if (by_path(dirfd, path)) {
    Node n = lookup(path);
    if (n.kind != Kind::kNone && n.kind != Kind::kRedirect) return open_node(n, flags);
    if (n.kind == Kind::kRedirect) return do_open(n.real_path.c_str(), flags, mode, "open");
  }
  KBV_NEXT(real_name, int (*)(int, const char*, int, ...));
  if (!real_fn) return -1;
  return needs_mode(flags) ? real_fn(dirfd, path, flags, mode) : real_fn(dirfd, path, flags);
}

FILE* do_fopen(const char* path, const char* mode, const char* real_name) {
  Node n = lookup(path);
  if (n.kind != Kind::kNone && n.kind != Kind::kRedirect) {
    if (!mode || mode[0] != 'r' || strchr(mode, '+')) {
      errno = n.kind == Kind::kDir ? EISDIR : EACCES;
      return nullptr;
    }
    const int fd = open_node(n, strchr(mode, 'e') ? O_RDONLY | O_CLOEXEC : O_RDONLY);
    if (fd < 0) return nullptr;
    FILE* f = ::fdopen(fd, mode);
    if (!f) {
      const int e = errno;
      ::close(fd);
      errno = e;
    }
    return f;
  }
  KBV_NEXT(real_name, FILE * (*)(const char*, const char*));
  if (!real_fn) return nullptr;
  return real_fn(n.kind == Kind::kRedirect ? n.real_path.c_str() : path, mode);
}

// realpath of a view path into `out` (PATH_MAX bytes, or malloc'ed when
// NULL): 1 handled (*ret), 0 not in the view.
int view_realpath(const char* path, char* out, char** ret) {
  Node n = lookup(path);
  if (n.kind == Kind::kNone) return 0;
  if (n.kind == Kind::kRedirect) {
    KBV_NEXT("realpath", char* (*)(const char*, char*));
    *ret = real_fn ? real_fn(n.real_path.c_str(), out) : nullptr;
    return 1;
  }
  const std::string& canon = n.real_path.empty() ? std::string(path) : n.real_path;
  if (canon.size() >= PATH_MAX) {
    errno = ENAMETOOLONG;
    *ret = nullptr;
    return 1;
  }
  char* dst = out ? out : static_cast<char*>(malloc(PATH_MAX));
  if (!dst) {
    errno = ENOMEM;
    *ret = nullptr;
    return 1;
  }
  memcpy(dst, canon.c_str(), canon.size() + 1);
  *ret = dst;
  return 1;
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
  return do_open(path, flags, mode, "open");
}

__attribute__((visibility("default"))) int open64(const char* path, int flags, ...) {
  mode_t mode = 0;
  if (needs_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return do_open(path, flags, mode, "open64");
}

__attribute__((visibility("default"))) int __open_2(const char* path, int flags) {
  return do_open(path, flags, 0, "open");
}

__attribute__((visibility("default"))) int __open64_2(const char* path, int flags) {
  return do_open(path, flags, 0, "open64");
}

__attribute__((visibility("default"))) int openat(int dirfd, const char* path, int flags, ...) {
  mode_t mode = 0;
  if (needs_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return do_openat(dirfd, path, flags, mode, "openat");
}

__attribute__((visibility("default"))) int openat64(int dirfd, const char* path, int flags, ...) {
  mode_t mode = 0;
  if (needs_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return do_openat(dirfd, path, flags, mode, "openat64");
}

__attribute__((visibility("default"))) int __openat_2(int dirfd, const char* path, int flags) {
  return do_openat(dirfd, path, flags, 0, "openat");
}

__attribute__((visibility("default"))) int __openat64_2(int dirfd, const char* path, int flags) {
  return do_openat(dirfd, path, flags, 0, "openat64");
}

__attribute__((visibility("default"))) FILE* fopen(const char* path, const char* mode) {
  return do_fopen(path, mode, "fopen");
}

__attribute__((visibility("default"))) FILE* fopen64(const char* path, const char* mode) {
  return do_fopen(path, mode, "fopen64");
}

__attribute__((visibility("default"))) int stat(const char* path, struct stat* st) {
  int ret = 0;
  if (view_stat(path, st, true, &ret)) return ret;
  KBV_NEXT("stat", int (*)(const char*, struct stat*));
  return real_fn ? real_fn(path, st) : -1;
}

__attribute__((visibility("default"))) int stat64(const char* path, struct stat64* st) {
  int ret = 0;
  if (view_stat(path, reinterpret_cast<struct stat*>(st), true, &ret)) return ret;
  KBV_NEXT("stat64", int (*)(const char*, struct stat64*));
  return real_fn ? real_fn(path, st) : -1;
}

__attribute__((visibility("default"))) int lstat(const char* path, struct stat* st) {
  int ret = 0;
  if (view_stat(path, st, false, &ret)) return ret;
  KBV_NEXT("lstat", int (*)(const char*, struct stat*));
  return real_fn ? real_fn(path, st) : -1;
}

__attribute__((visibility("default"))) int lstat64(const char* path, struct stat64* st) {
  int ret = 0;
  if (view_stat(path, reinterpret_cast<struct stat*>(st), false, &ret)) return ret;
  KBV_NEXT("lstat64", int (*)(const char*, struct stat64*));
  return real_fn ? real_fn(path, st) : -1;
}

__attribute__((visibility("default"))) int fstatat(int dirfd, const char* path, struct stat* st,
                                                   int flags) {
  int ret = 0;
  if (by_path(dirfd, path) && view_stat(path, st, !(flags & AT_SYMLINK_NOFOLLOW), &ret)) return ret;
  KBV_NEXT("fstatat", int (*)(int, const char*, struct stat*, int));
  return real_fn ? real_fn(dirfd, path, st, flags) : -1;
}

__attribute__((visibility("default"))) int fstatat64(int dirfd, const char* path, struct stat64* st,
                                                     int flags) {
  int ret = 0;
  if (by_path(dirfd, path) &&
      view_stat(path, reinterpret_cast<struct stat*>(st), !(flags & AT_SYMLINK_NOFOLLOW), &ret))
    return ret;
  KBV_NEXT("fstatat64", int (*)(int, const char*, struct stat64*, int));
  return real_fn ? real_fn(dirfd, path, st, flags) : -1;
}

__attribute__((visibility("default"))) int access(const char* path, int mode) {
  Node n = lookup(path);
  if (n.kind == Kind::kRedirect) path = n.real_path.c_str();
  if (n.kind != Kind::kNone && n.kind != Kind::kRedirect) {
    // sysfs attributes are 0444: writing needs root (as the kernel's check).
    if ((mode & W_OK) && n.kind != Kind::kCharDev && n.kind != Kind::kDir && geteuid() != 0) {
      errno = EACCES;
      return -1;
    }
    return 0;
  }
  KBV_NEXT("access", int (*)(const char*, int));
  return real_fn ? real_fn(path, mode) : -1;
}

// A view symlink (the class entry, "device") reads as its absolute target.
__attribute__((visibility("default"))) ssize_t readlink(const char* path, char* buf, size_t len) {
  Node n = lookup(path);
  if (n.kind != Kind::kNone && n.link) {
    const size_t k = std::min(len, n.real_path.size());
    memcpy(buf, n.real_path.data(), k);
    return static_cast<ssize_t>(k);
  }
  if (n.kind != Kind::kNone && n.kind != Kind::kRedirect) {
    errno = EINVAL;  // not a symlink
    return -1;
  }
  KBV_NEXT("readlink", ssize_t(*)(const char*, char*, size_t));
  return real_fn ? real_fn(path, buf, len) : -1;
}

__attribute__((visibility("default"))) ssize_t readlinkat(int dirfd, const char* path, char* buf,
                                                          size_t len) {
  if (by_path(dirfd, path)) return readlink(path, buf, len);
  KBV_NEXT("readlinkat", ssize_t(*)(int, const char*, char*, size_t));
  return real_fn ? real_fn(dirfd, path, buf, len) : -1;
}

__attribute__((visibility("default"))) char* realpath(const char* path, char* resolved) {
  char* ret = nullptr;
  if (view_realpath(path, resolved, &ret)) return ret;
  KBV_NEXT("realpath", char* (*)(const char*, char*));
  return real_fn ? real_fn(path, resolved) : nullptr;
}

__attribute__((visibility("default"))) char* __realpath_chk(const char* path, char* resolved,
                                                            size_t resolvedlen) {
  char* ret = nullptr;
  if (view_realpath(path, resolved, &ret)) return ret;
  KBV_NEXT("__realpath_chk", char* (*)(const char*, char*, size_t));
  return real_fn ? real_fn(path, resolved, resolvedlen) : nullptr;
}

}  // extern "C"
