#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Turns the model's firmware command trace (KBV_SIM_CMD_TRACE=1, README
"Environment knobs") into cmdq_mailbox fuzzer inputs (issue 21: corpora grown
from real traces).

    KBV_SIM_CMD_TRACE=1 <program> 2> trace.txt
    tests/fuzz/trace_to_corpus.py trace.txt... OUT_DIR

Each traced command (its opcode, op_mod, inlen, outlen and input bytes, as
the driver wrote them) becomes one input laid out as cmdq_mailbox_fuzz.cpp
reads it: the 64-byte command queue entry, then 576-byte mailbox blocks that
the fuzzer maps 1 KiB apart after the entry's page, then the flags byte.
Layouts: Linux include/linux/mlx5/device.h struct mlx5_cmd_layout (type,
inlen @4, in_ptr @8, in[16] @16, out[16] @32, out_ptr @48, outlen @56,
token @60, signature @61, status_own @63) and struct mlx5_cmd_prot_block
(data[512], next @560, block_num @568, token @573, ctrl_sig @574, sig @575);
docs/PRM.md "Command queue entry". The input blocks come first, then the
output blocks, each chain linked in order; the entry is owned by hardware,
no checksum, the HCA enabled and initialized (flags 0x6). One file per
distinct input, named by its SHA-1 as libFuzzer names corpus files.
Minimise afterwards with the fuzzer itself (tests/fuzz/README.md):
    build-fuzz/tests/fuzz/cmdq_mailbox_fuzz -merge=1 tests/fuzz/corpus/cmdq_mailbox OUT_DIR
"""
import hashlib
import os
import re
import struct
import sys

ENTRY_IOVA = 0x10000  # cmdq_mailbox_fuzz.cpp kEntryIova
BLOCKS = 8  # kBlocks
BLOCK_BYTES = 576
BLOCK_DATA = 512
TOKEN = 0x5A
FLAGS = 0x6  # enabled | initialized, no checksum

HEAD = re.compile(r"slot \d+ (\S+) \((0x[0-9a-f]+)\) op_mod (0x[0-9a-f]+) inlen (\d+) outlen (\d+)")
ROW = re.compile(r"\s(in|out)\s+(?:([0-9a-f]{4}):((?: [0-9a-f]{2})+)|(\*))\s*$")


def commands(lines):
    """Yields (name, inlen, outlen, input bytes) per traced command. The
    trace folds a run of rows equal to the one before into one "*" line
    (src/sim/fw/trace.cpp CmdTrace::hexdump; never the last row)."""
    cur = None
    last_row, fold = None, None
    for line in lines:
        m = HEAD.search(line)
        if m:
            if cur:
                yield tuple(cur)
            cur = [m.group(1), int(m.group(4)), int(m.group(5)), bytearray()]
            last_row, fold = None, None
            continue
        r = ROW.search(line)
        if not r or not cur or r.group(1) != "in":
            continue
        if r.group(4):
            fold = last_row
            continue
        buf = cur[3]
        off = int(r.group(2), 16)
        while fold and len(buf) < off:
            buf += fold
        fold = None
        del buf[off:]
        buf += bytes(off - len(buf))
        row = bytes(int(x, 16) for x in r.group(3).split())
        buf += row
        last_row = row
    if cur:
        yield tuple(cur)


def blocks_needed(n):
    return 0 if n <= 16 else (n - 16 + BLOCK_DATA - 1) // BLOCK_DATA


def block_iova(i):
    return ENTRY_IOVA + 0x1000 + i * 0x400


def layout(inlen, outlen, data):
    """The fuzzer input for one command, or None if its chains do not fit."""
    data = bytes(data[:inlen]).ljust(inlen, b"\0")
    n_in, n_out = blocks_needed(inlen), blocks_needed(outlen)
    if n_in + n_out > BLOCKS:
        return None
    entry = bytearray(64)
    entry[0] = 0x07  # MLX5_PCI_CMD_XPORT
    struct.pack_into(">I", entry, 4, inlen)
    if n_in:
        struct.pack_into(">Q", entry, 8, block_iova(0))
    entry[16:32] = data[:16].ljust(16, b"\0")
    if n_out:
        struct.pack_into(">Q", entry, 48, block_iova(n_in))
    struct.pack_into(">I", entry, 56, outlen)
    entry[60] = TOKEN
    entry[63] = 0x01  # owned by hardware
    blocks = []
    for k in range(n_in + n_out):
        b = bytearray(BLOCK_BYTES)
        first, count = (k, n_in) if k < n_in else (k - n_in, n_out)
        if k < n_in:
            chunk = data[16 + first * BLOCK_DATA:16 + (first + 1) * BLOCK_DATA]
            b[:len(chunk)] = chunk
        if first + 1 < count:
            struct.pack_into(">Q", b, 560, block_iova(k + 1))
        struct.pack_into(">I", b, 568, first)
        b[573] = TOKEN
        blocks.append(bytes(b))
    return bytes(entry) + b"".join(blocks) + bytes([FLAGS])


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[-1]
    os.makedirs(out, exist_ok=True)
    seen, skipped, per_op = set(), 0, {}
    for path in sys.argv[1:-1]:
        with open(path, errors="replace") as f:
            for name, inlen, outlen, data in commands(f):
                blob = layout(inlen, outlen, data)
                if blob is None:
                    skipped += 1
                    continue
                h = hashlib.sha1(blob).hexdigest()
                if h in seen:
                    continue
                seen.add(h)
                per_op[name] = per_op.get(name, 0) + 1
                with open(os.path.join(out, h), "wb") as g:
                    g.write(blob)
    print("%d inputs (%s); %d commands too large for %d mailbox blocks" %
          (len(seen), ", ".join("%s %d" % kv for kv in sorted(per_op.items())), skipped, BLOCKS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
