// SPDX-License-Identifier: BSD-3-Clause
//
// The RoCEv2 Invariant CRC (ICRC) and the CRC-32 it is built on.
//
// Definition (IBTA Vol 1 ch. 7.8 "Invariant CRC" and Annex A17; Linux rxe_icrc.c computes
// the same thing): the ICRC is the IEEE 802.3 CRC-32 (reflected polynomial
// 0xEDB88320, register preset to all ones, result inverted) over
//   1. 8 bytes of 0xFF standing in for the InfiniBand LRH, which RoCEv2 does
//      not carry (rxe starts from the register value after those 8 bytes,
//      0xDEBB20E3);
//   2. the IPv4 header (20 bytes) with the fields routers may change replaced
//      by all ones: Type of Service (byte 1), Time to Live (byte 8) and Header
//      Checksum (bytes 10-11);
//   3. the UDP header (8 bytes) with its Checksum (bytes 6-7) replaced by ones;
//   4. the BTH with byte 4 (FECN, BECN and the 6 reserved bits) replaced by
//      ones;
//   5. everything after the BTH up to the ICRC: extension headers, payload
//      and pad.
// The 4-byte result follows the pad; it is sent least significant byte first
// (the CRC register's bit order, as the Ethernet FCS), which is how rxe
// stores it on little-endian hosts.
//
// The model sends its packets through a UDP socket, so the kernel builds the
// IPv4 and UDP headers. The ICRC is computed over the header the kernel emits
// on loopback for an unconnected socket with IP_PMTUDISC_DO: version/IHL 0x45,
// Total Length = 28 + RoCE bytes, Identification 0 and Flags DF (Linux
// include/net/ip.h ip_select_ident_segs: DF set, socket not connected ->
// id 0), protocol 17, and the addresses and ports of the flow. The receiver
// rebuilds the same header from the datagram's source address and its own
// bound address, so a capture checked by rxe or by hand agrees.
//
// Threading: pure functions over caller memory. No allocation.
#pragma once

#include <kbv/status.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace kbv::sim::wire {

// The raw CRC-32 register update: no preset, no final inversion (like
// Linux crc32_le). crc32.cpp: by ISA-L where meson found it (Debian
// libisal-dev, isa-l/crc.h crc32_gzip_refl: the reflected IEEE CRC-32 of
// zlib and gzip, with PCLMULQDQ / VPCLMULQDQ folding chosen at run time,
// aarch64 PMULL too); without it (-Disal=disabled, the aarch64 cross build:
// Debian's libisal-dev is not multiarch) by the Armv8 CRC32 instructions
// when the CPU has them (HWCAP_CRC32; Arm ARM C6.2 CRC32X), else by
// crc32_update_table.
uint32_t crc32_update(uint32_t reg, std::span<const uint8_t> data);
// The same update by slice-by-8 tables (no instruction-set extension; the
// fallback of crc32_update), compiled on every build so that its test runs
// on every architecture.
uint32_t crc32_update_table(uint32_t reg, std::span<const uint8_t> data);
// The standard CRC-32 (preset ~0, inverted result): crc32("123456789") ==
// 0xCBF43926.
uint32_t crc32(std::span<const uint8_t> data);

// The register after 8 bytes of 0xFF from ~0: the ICRC seed (rxe_icrc.c).
inline constexpr uint32_t kIcrcSeed = 0xDEBB20E3;

// An IPv4/UDP flow; addresses and ports in host byte order.
struct Ipv4Flow {
  uint32_t src_ip = 0;
  uint32_t dst_ip = 0;
  uint16_t src_port = 0;
  uint16_t dst_port = 4791;
};

inline constexpr size_t kIpv4HeaderBytes = 20;
inline constexpr size_t kUdpHeaderBytes = 8;

// Writes the 28-byte IPv4 + UDP header the loopback kernel emits for a
// datagram of `roce_bytes` (BTH through ICRC) on `flow`: Identification 0,
// DF, the given TOS and TTL; IPv4 header checksum computed; UDP checksum 0
// (none; allowed for IPv4 by RFC 768). Used to write pcap files and by tests.
void build_ipv4_udp_header(const Ipv4Flow& flow, size_t roce_bytes, uint8_t tos, uint8_t ttl,
                           std::span<uint8_t, kIpv4HeaderBytes + kUdpHeaderBytes> out);

// ICRC of a RoCEv2 datagram (UDP payload: BTH .. pad, then the 4 ICRC bytes,
// which are not covered) sent on `flow`, with the kernel-built header
// described above. KBV_ERR_INVALID_ARGUMENT if shorter than BTH + ICRC.
Result<uint32_t> compute_icrc(const Ipv4Flow& flow, std::span<const uint8_t> datagram);
// ICRC of a whole IPv4 packet (IPv4 header without options, UDP header,
// RoCEv2 datagram including the ICRC field), taking every invariant header
// field from the packet itself. KBV_ERR_INVALID_ARGUMENT if it is not IPv4
// with IHL 5 and UDP, or is too short.
Result<uint32_t> compute_icrc_ipv4(std::span<const uint8_t> ip_packet);

// Stores the ICRC in the last 4 bytes of `datagram` (least significant byte
// first).
Status write_icrc(const Ipv4Flow& flow, std::span<uint8_t> datagram);
// The ICRC stored in the last 4 bytes of `datagram`.
uint32_t stored_icrc(std::span<const uint8_t> datagram);
// True when the stored ICRC matches; false for a short datagram too.
bool icrc_ok(const Ipv4Flow& flow, std::span<const uint8_t> datagram);

}  // namespace kbv::sim::wire
