// SPDX-License-Identifier: BSD-3-Clause
//
// The two sides of a two-process e2e test's process handling (the verbs,
// wrap and keys tests and their peers, each process with its own model HCA):
//
// - the test starts the peer with PeerProcess::start: fork + exec of an
//   executable in the test's own directory (behind MESON_EXE_WRAPPER in a
//   cross build, exe_wrapper.hpp), given its end of an AF_UNIX socketpair
//   as fd 100 (argv[1] "100");
// - the peer's main is peer_main(argc, argv, run): run(fd) does the peer's
//   part and returns its fixed-size report, which is sent to the test; the
//   peer then waits for the test's one "bye" byte before it exits, so its QPs
//   live until the test has finished with them;
// - the test reads the report and calls finish(): the "bye", then waitpid.
//
// Threading: one thread per object. Errors: start() and finish() return
// false / -1 with errno set; nothing here throws.
#pragma once

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "exe_wrapper.hpp"
#include "verbs_peer_proto.hpp"

namespace kbv::peer {

// The fd number the peer finds its socket under.
inline constexpr int kPeerFd = 100;

// `name` in the directory of the running executable ("" when
// /proc/self/exe cannot be read).
inline std::string sibling_executable(const char* name) {
  char self[PATH_MAX] = {};
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return {};
  std::string s(self, static_cast<size_t>(n));
  return s.substr(0, s.rfind('/') + 1) + name;
}

class PeerProcess {
 public:
  PeerProcess() = default;
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;
  // A peer still running (the test failed before finish()) is killed.
  ~PeerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
    if (fd_ >= 0) ::close(fd_);
  }

  // Starts the executable `name` from the test's directory. false with errno
  // when the socketpair or fork fails; an exec failure shows as exit 127.
  bool start(const char* name) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return false;
    // Behind the cross build's exe wrapper, if any (exe_wrapper.hpp).
    const e2e::ExecArgv argv(sibling_executable(name), {std::to_string(kPeerFd)});
    const pid_t pid = ::fork();
    if (pid < 0) {
      const int e = errno;
      ::close(sv[0]);
      ::close(sv[1]);
      errno = e;
      return false;
    }
    if (pid == 0) {
      ::dup2(sv[1], kPeerFd);  // dup2 clears FD_CLOEXEC on the copy
      ::execvp(argv.file(), argv.argv());
      ::_exit(127);
    }
    ::close(sv[1]);
    pid_ = pid;
    fd_ = sv[0];
    return true;
  }

  // The test's end of the socket.
  int fd() const { return fd_; }

  // Sends the "bye" byte (ignored when the peer is gone), waits for the peer
  // and returns its wait status (-1 with errno when waitpid fails).
  int finish() {
    const char bye = 'b';
    (void)send_all(fd_, &bye, 1);
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, 0);
    pid_ = -1;
    ::close(fd_);
    fd_ = -1;
    return r < 0 ? -1 : status;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
};

// The peer's main. `run(fd)` returns a trivially copyable report; exit 2 on
// a bad command line, 3 when the report cannot be sent, 0 otherwise (the
// report says whether the peer's checks passed).
template <typename Run>
int peer_main(int argc, char** argv, Run run) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <socket fd>\n", argv[0]);
    return 2;
  }
  const int fd = std::atoi(argv[1]);
  const auto report = run(fd);
  if (!send_all(fd, &report, sizeof report)) return 3;
  char bye;
  (void)recv_all(fd, &bye, 1);  // the test has finished with our QPs
  return 0;
}

}  // namespace kbv::peer
