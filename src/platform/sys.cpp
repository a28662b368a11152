// SPDX-License-Identifier: BSD-3-Clause
// real_sys(): the seam's production implementation, straight to libc.
#include "platform/sys.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kbv::platform {
namespace {

class RealSys final : public Sys {
 public:
  int open(const char* path, int flags) override { return ::open(path, flags | O_CLOEXEC); }
  int close(int fd) override { return ::close(fd); }
  int ioctl(int fd, unsigned long request, void* arg) override { return ::ioctl(fd, request, arg); }
  ssize_t read(int fd, void* buf, size_t count) override { return ::read(fd, buf, count); }
  ssize_t pread(int fd, void* buf, size_t count, off_t offset) override {
    return ::pread(fd, buf, count, offset);
  }
  ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) override {
    return ::pwrite(fd, buf, count, offset);
  }
  void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) override {
    return ::mmap(addr, length, prot, flags, fd, offset);
  }
  int munmap(void* addr, size_t length) override { return ::munmap(addr, length); }
  ssize_t readlink(const char* path, char* buf, size_t size) override {
    return ::readlink(path, buf, size);
  }
  int list_dir(const char* path, std::vector<std::string>& names) override {
    DIR* d = ::opendir(path);
    if (!d) return -1;
    names.clear();
    errno = 0;
    while (struct dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      names.emplace_back(e->d_name);
    }
    const int err = errno;
    ::closedir(d);
    if (err != 0) {
      errno = err;
      return -1;
    }
    return 0;
  }
};

}  // namespace

Sys& real_sys() {
  static RealSys sys;
  return sys;
}

}  // namespace kbv::platform
