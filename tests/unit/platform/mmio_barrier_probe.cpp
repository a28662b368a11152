// SPDX-License-Identifier: BSD-3-Clause
// One out-of-line function per DMA barrier of src/platform/mmio.hpp, built
// as a shared module for mmio_barriers_test.py, which disassembles each
// (objdump of the build's own target) and checks the instruction the
// barrier compiles to on this architecture against rdma-core's
// util/udma_barrier.h. Nothing calls these functions.
#include "platform/mmio.hpp"

#define KBV_PROBE(name)                                                                       \
  extern "C" __attribute__((noinline, used, visibility("default"))) void kbv_probe_##name() { \
    kbv::platform::name();                                                                    \
  }

KBV_PROBE(compiler_barrier)
KBV_PROBE(udma_to_device_barrier)
KBV_PROBE(udma_ordering_write_barrier)
KBV_PROBE(udma_from_device_barrier)
KBV_PROBE(mmio_flush_writes)
KBV_PROBE(mmio_wc_start)
