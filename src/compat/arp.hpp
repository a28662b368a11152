// SPDX-License-Identifier: BSD-3-Clause
// The next-hop MAC of a RoCEv2 GID (IPv4-mapped) from the host's neighbour
// table, for the compat layers' address vectors (their AVs carry no MAC).
#pragma once

#include <cstdint>

namespace kbv::compat {
// The MAC of the IPv4 neighbour ::ffff:a.b.c.d names in /proc/net/arp; 0
// when the GID is not IPv4-mapped or the neighbour is unknown.
uint64_t arp_lookup(const uint8_t* gid);
}  // namespace kbv::compat
