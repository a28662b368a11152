// SPDX-License-Identifier: BSD-3-Clause
// kbv-lab: the program (tools/kbv-lab/lab.hpp has the subcommands).
#include "kbv-lab/lab.hpp"

int main(int argc, char** argv) { return kbv::lab::run(argc, argv, stdout, stderr); }
