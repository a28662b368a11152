// SPDX-License-Identifier: BSD-3-Clause
//
// Internals shared by the preload library's files (preload.cpp: set-up and
// descriptor calls; preload_fs.cpp: path, stat and directory calls).
//
// Every namespace-scope variable of the library is constinit or a
// function-local static: another library's constructor may call an
// interposer before this library's initialisers ran (libnuma's does).
//
// Threading: every function may be called from any thread.
#pragma once

#include <dlfcn.h>

#include <atomic>
#include <cerrno>
#include <string>

namespace kbv::sim::preload {

// Set while the current thread runs model code (the model's own calls —
// eventfd, memfd, mmap of its BAR — go straight to libc).
extern constinit thread_local bool t_in_model;
// Model devices exist (set by the constructor).
extern constinit std::atomic<bool> g_active;

struct InModel {
  InModel() : prev(t_in_model) { t_in_model = true; }
  ~InModel() { t_in_model = prev; }
  InModel(const InModel&) = delete;
  InModel& operator=(const InModel&) = delete;
  bool prev;
};

template <class F>
F next(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

// The model answers this absolute path / descriptor.
bool route_path(const char* path);
bool route_fd(int fd);

// Directory descriptors of model directories (open(O_DIRECTORY), dirfd of a
// model DIR): placeholder descriptors mapped to their path.
int make_dir_fd(const std::string& path, bool cloexec);  // -1 + errno on failure
bool dir_fd_path(int fd, std::string* path);             // false: not one of them
bool drop_dir_fd(int fd);                                // forgets it; true if it was one
// After a real dup of `from` (one of them) made `to`: `to` names the same directory.
void copy_dir_fd(int from, int to);

// The absolute path that (dirfd, path) names when the model answers it:
// absolute model paths, or a relative path under a model directory
// descriptor. Empty: not the model's.
std::string model_path_at(int dirfd, const char* path);

}  // namespace kbv::sim::preload

// Declares `real_fn`, the next definition of `name` (normally libc's),
// looked up once; errno = ENOSYS when there is none.
#define KBV_NEXT(name, type)                                  \
  using RealFn = type;                                        \
  static constinit std::atomic<RealFn> real_slot{nullptr};    \
  RealFn real_fn = real_slot.load(std::memory_order_acquire); \
  if (!real_fn) {                                             \
    real_fn = ::kbv::sim::preload::next<RealFn>(name);        \
    real_slot.store(real_fn, std::memory_order_release);      \
  }                                                           \
  if (!real_fn) errno = ENOSYS

// The same for a versioned libc symbol (compat symbols such as __xstat@GLIBC_2.2.5).
#define KBV_NEXT_V(name, version, type)                                     \
  using RealFn = type;                                                      \
  static constinit std::atomic<RealFn> real_slot{nullptr};                  \
  RealFn real_fn = real_slot.load(std::memory_order_acquire);               \
  if (!real_fn) {                                                           \
    real_fn = reinterpret_cast<RealFn>(::dlvsym(RTLD_NEXT, name, version)); \
    real_slot.store(real_fn, std::memory_order_release);                    \
  }                                                                         \
  if (!real_fn) errno = ENOSYS
