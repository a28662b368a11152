// SPDX-License-Identifier: BSD-3-Clause
// The argument vector that starts a peer program built with the tests: the
// program itself, or, in a cross build, the program behind its exe wrapper.
//
// meson test runs each test of a cross build behind the cross file's
// exe_wrapper (cross/aarch64-linux-gnu.ini: qemu-aarch64) and exports that
// command as MESON_EXE_WRAPPER. qemu-user does not follow an execve into
// another foreign binary (without binfmt_misc the host kernel refuses it
// with ENOEXEC), so a test that starts a peer puts the wrapper in front of
// it. The variable is split at spaces (meson quotes it as a shell would;
// a wrapper path with spaces is not supported). Unset or empty: the
// program alone, as in a native build.
//
// Call before fork(): it allocates. Execute the result with execvp /
// posix_spawnp (the wrapper is found through PATH).
#pragma once

#include <cstdlib>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

namespace kbv::e2e {

class ExecArgv {
 public:
  ExecArgv(const std::string& program, std::initializer_list<std::string> args) {
    if (const char* w = std::getenv("MESON_EXE_WRAPPER")) {
      std::istringstream in(w);
      for (std::string word; in >> word;) words_.push_back(word);
    }
    words_.push_back(program);
    words_.insert(words_.end(), args);
    for (std::string& s : words_) ptrs_.push_back(s.data());
    ptrs_.push_back(nullptr);
  }
  ExecArgv(const ExecArgv&) = delete;
  ExecArgv& operator=(const ExecArgv&) = delete;

  // The file to execute (the wrapper or the program) and the NULL-terminated vector.
  const char* file() const { return ptrs_[0]; }
  char* const* argv() const { return ptrs_.data(); }

 private:
  std::vector<std::string> words_;
  std::vector<char*> ptrs_;
};

}  // namespace kbv::e2e
