// SPDX-License-Identifier: BSD-3-Clause
//
// WireCounters: what the model's port saw on its wire, as the firmware reports
// it through PPCNT (fw/objects/access_reg_cmds.cpp). The data-path engine
// (sim/engine) fills it from the port (wire/port.hpp PortCounters, the fault
// injector's FaultCounters) and its own drop counters, and installs the
// source with FwContext::set_wire_counters; a firmware without an engine
// reports zeros.
//
// Every counter is monotonic over the port's life; datagrams are the model's
// frames (one RoCEv2 packet each) and octets their UDP payload (BTH .. ICRC):
// the model has no Ethernet, IP or UDP header of its own to count.
//
// Threading: a plain value; the source runs on the firmware thread.
#pragma once

#include <cstdint>

namespace kbv::sim::fw {

struct WireCounters {
  uint64_t tx_packets = 0;  // datagrams handed to the kernel
  uint64_t tx_bytes = 0;
  uint64_t tx_errors = 0;   // sendto failures
  uint64_t rx_packets = 0;  // good datagrams (ICRC and headers checked)
  uint64_t rx_bytes = 0;
  uint64_t rx_bad_icrc = 0;       // corrupted on the wire (injected corruptions land here)
  uint64_t rx_malformed = 0;      // short, bad layout, unsupported opcode, truncated
  uint64_t rx_discards = 0;       // good packets the transport dropped: no QP, Q_Key
                                  // mismatch, no receive WQE, UC responder error
  uint64_t tx_fault_dropped = 0;  // datagrams the fault injector dropped at transmit
  uint64_t tx_fault_corrupted = 0;
  uint64_t tx_fault_duplicated = 0;

  // Field-wise a - b (counters since a baseline b).
  friend WireCounters operator-(const WireCounters& a, const WireCounters& b) {
    WireCounters d;
    d.tx_packets = a.tx_packets - b.tx_packets;
    d.tx_bytes = a.tx_bytes - b.tx_bytes;
    d.tx_errors = a.tx_errors - b.tx_errors;
    d.rx_packets = a.rx_packets - b.rx_packets;
    d.rx_bytes = a.rx_bytes - b.rx_bytes;
    d.rx_bad_icrc = a.rx_bad_icrc - b.rx_bad_icrc;
    d.rx_malformed = a.rx_malformed - b.rx_malformed;
    d.rx_discards = a.rx_discards - b.rx_discards;
    d.tx_fault_dropped = a.tx_fault_dropped - b.tx_fault_dropped;
    d.tx_fault_corrupted = a.tx_fault_corrupted - b.tx_fault_corrupted;
    d.tx_fault_duplicated = a.tx_fault_duplicated - b.tx_fault_duplicated;
    return d;
  }
};

}  // namespace kbv::sim::fw
