// SPDX-License-Identifier: BSD-3-Clause
//
// What keys_two_process_test.cpp and keys_peer.cpp share (issue 16, stale
// keys): the Endpoint and socket helpers of verbs_peer_proto.hpp, the
// layout of the WRITEs and the message that carries the new region.
#pragma once

#include "verbs_peer_proto.hpp"

namespace kbv::peer {

inline constexpr uint32_t kKeysAccess = KBV_ACCESS_LOCAL_WRITE | KBV_ACCESS_REMOTE_WRITE |
                                        KBV_ACCESS_REMOTE_READ | KBV_ACCESS_REMOTE_ATOMIC;
inline constexpr uint32_t kKeysLen = 4096;      // bytes per WRITE
inline constexpr size_t kKeysLiveOff = 8192;    // the WRITE through the live key
inline constexpr size_t kKeysStaleOff = 65536;  // where the stale WRITE aims

// The peer's second region, registered after the first was deregistered.
struct NewRegion {
  uint64_t addr = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
};

}  // namespace kbv::peer
