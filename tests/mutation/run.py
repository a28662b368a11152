#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Mutation check (issue 21): deliberate one-line faults, one at a time, in a
copy of the tree; each is rebuilt and the suites that should notice it run.
A fault is CAUGHT when at least one of its test commands fails, NOT CAUGHT
when all pass. Every fault on the list must be caught (exit status 1 when one
is not; 2 when a fault no longer applies or does not build — the list needs
updating).

    tests/mutation/run.py [--dir DIR] [--only ID,ID] [--jobs N] [--list]

DIR (default: <repo>/../<repo name>-mutation, or $KBV_MUTATION_DIR) holds the
copy (DIR/src, refreshed from the working tree's files on every run) and
its build directory (DIR/src/build-mut, meson, -Dwerror=true, bench off).
Kept under the ccache base_dir (/work) the copy's compiles hit the cache of
the working tree's build. Everything runs under nice -n 19; each mutant
rebuilds only the targets its tests need and runs only those tests (gtest
binaries with filters; timeouts bound hangs, a timeout counts as a failure).
The report (markdown) goes to stdout; tests/README.md keeps the last one.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Test:
    target: str  # ninja target (relative to the build dir)
    args: list = field(default_factory=list)  # e.g. gtest filter
    timeout: int = 300

    def label(self):
        f = [a for a in self.args if a.startswith("--gtest_filter=")]
        name = Path(self.target).name
        return name + (" " + f[0].split("=", 1)[1] if f else "")


@dataclass
class Mutant:
    id: str
    where: str  # area: driver / model / verbs
    file: str
    old: str
    new: str
    why: str
    tests: list


def gt(target, flt, timeout=300):
    return Test(target, ["--gtest_filter=" + flt, "--gtest_brief=1"], timeout)


DP_WRAP = gt("tests/e2e/e2e_dp_model", "Wrap/*")
VERBS_WRAP = gt("tests/e2e/e2e_verbs_data", "Wrap/*")
DP_MODEL = gt("tests/e2e/e2e_dp_model", "*")
VERBS_DATA = gt("tests/e2e/e2e_verbs_data", "*")
VERBS = gt("tests/e2e/e2e_verbs", "*")
RESP = gt("tests/unit/sim/engine/unit_sim_engine", "ResponderTest.*")
REQ = gt("tests/unit/sim/engine/unit_sim_engine", "RequesterTest.*")
ENGINE = gt("tests/unit/sim/engine/unit_sim_engine", "*")
MKEY = gt("tests/unit/sim/fw/objects/unit_sim_fw_obj", "Mkey*")
HCA_DP = gt("tests/unit/hca/unit_hca", "Dp*")
UNIT_VERBS = gt("tests/unit/verbs/unit_verbs", "*")

MUTANTS = [
    # ---- the three of issue 21 ----
    Mutant("cq-ci-minus-1", "driver", "src/hca/dp/cq.cpp",
           "ring_.dbrec[0] = htobe32(ci & 0xFFFFFF);",
           "ring_.dbrec[0] = htobe32((ci - 1) & 0xFFFFFF);",
           "CqPoller returns CQ space one entry late", [DP_WRAP, VERBS_WRAP]),
    Mutant("cq-ci-deleted", "driver", "src/hca/dp/cq.cpp",
           "ring_.dbrec[0] = htobe32(ci & 0xFFFFFF);", ";",
           "CqPoller never writes the consumer index", [DP_WRAP, VERBS_WRAP]),
    Mutant("resp-psn-one-ahead", "model", "src/sim/engine/responder.cpp",
           "if (diff > 0) {", "if (diff > 1) {",
           "responder executes a packet one ahead of ePSN", [RESP]),
    Mutant("mkey-bounds-off-by-one", "model", "src/sim/fw/objects/mkey_table.cpp",
           "} else if (off > m->len || len > m->len - off) {",
           "} else if (off > m->len || len > m->len - off + 1) {",
           "an mkey range one byte past the end is accepted", [MKEY, RESP]),
    # ---- driver ----
    Mutant("cq-owner-parity", "driver", "src/hca/dp/cq.cpp",
           "(op_own & MLX5_CQE_OWNER_MASK) != ((ci & n) != 0)",
           "(op_own & MLX5_CQE_OWNER_MASK) != ((ci & (n >> 1)) != 0)",
           "CQE ownership taken from the wrong counter bit", [DP_WRAP, HCA_DP]),
    Mutant("sq-full-off-by-one", "driver", "src/hca/dp/sq_post.hpp",
           "pc_ - tail_ <= mask_) [[likely]] {",
           "pc_ - tail_ <= mask_ + 1) [[likely]] {",
           "send ring accepts one basic block more than it holds", [HCA_DP, DP_WRAP]),
    Mutant("sq-slot-end", "driver", "src/hca/dp/sq_post.hpp",
           "slots_[pc & mask_] = Slot{A::wr_id(wr), pc + 1};",
           "slots_[pc & mask_] = Slot{A::wr_id(wr), pc};",
           "a send completion frees one basic block too few", [DP_WRAP, HCA_DP]),
    Mutant("rq-full-off-by-one", "driver", "src/hca/dp/rq.hpp",
           "else if (head_ - tail_ >= mask_ + 1)",
           "else if (head_ - tail_ > mask_ + 1)",
           "receive ring accepts one WQE more than it holds", [HCA_DP, DP_WRAP]),
    Mutant("rq-dbrec-behind", "driver", "src/hca/dp/rq.hpp",
           "cfg_.dbrec[0] = htobe32(head_ & 0xFFFF);",
           "cfg_.dbrec[0] = htobe32((head_ - 1) & 0xFFFF);",
           "receive doorbell record one WQE behind", [DP_WRAP]),
    # ---- model ----
    Mutant("cq-overrun-late", "model", "src/sim/engine/cqe.cpp",
           "if (used >= n && !cq.oi) {", "if (used > n && !cq.oi) {",
           "model detects CQ overrun one CQE late", [ENGINE, VERBS_DATA]),
    Mutant("ack-coalesce-late", "model", "src/sim/engine/responder.cpp",
           "if ((p.headers.bth.ack_req || d.since_ack >= kAckEvery) && !d.ack_due) {",
           "if ((p.headers.bth.ack_req || d.since_ack > kAckEvery) && !d.ack_due) {",
           "responder ACKs every 17 packets instead of 16", [RESP]),
    Mutant("read-resp-psn", "model", "src/sim/engine/responder.cpp",
           "h.bth.psn = wire::psn_add(psn, static_cast<int32_t>(k));",
           "h.bth.psn = wire::psn_add(psn, static_cast<int32_t>(k + 1));",
           "READ responses carry the next PSN", [RESP, DP_MODEL]),
    Mutant("atomic-replay-psn", "model", "src/sim/engine/responder.cpp",
           "if (r.valid && r.psn == psn) {", "if (r.valid && r.psn == psn + 1) {",
           "duplicate atomics miss the replay cache", [RESP]),
    Mutant("req-nak-seq-skip", "model", "src/sim/engine/requester.cpp",
           "if (wire::psn_lt(psn, d.tx_psn)) d.tx_psn = psn;",
           "if (wire::psn_lt(psn, d.tx_psn)) d.tx_psn = wire::psn_add(psn, 1);",
           "NAK PSN sequence error resends from the PSN after the lost one", [REQ]),
    Mutant("req-partial-ack", "model", "src/sim/engine/requester.cpp",
           "if (wire::psn_gt(op.last_psn(), psn)) {",
           "if (wire::psn_gt(op.last_psn(), wire::psn_add(psn, 1))) {",
           "an ACK of all but the last packet completes the message", [REQ]),
    Mutant("mkey-wrap64", "model", "src/sim/fw/objects/mkey_table.cpp",
           "if (len - 1 > ~uint64_t{0} - va) return {MkeyFault::kOutOfBounds, 0};",
           "if (len > ~uint64_t{0} - va) return {MkeyFault::kOutOfBounds, 0};",
           "a length64 key refuses the range ending at 2^64 - 1", [MKEY]),
    Mutant("mkey-pd", "model", "src/sim/fw/objects/mkey_table.cpp",
           "if (m->pd != pd) return {MkeyFault::kPdMismatch, 0};",
           "if (m->pd < pd) return {MkeyFault::kPdMismatch, 0};",
           "a key of a higher-numbered PD is accepted", [MKEY]),
    # ---- verbs ----
    Mutant("verbs-post-in-rtr", "verbs", "src/verbs/fast_path.cpp",
           "if (s == KBV_QPS_RESET || s == KBV_QPS_INIT || s == KBV_QPS_RTR) [[unlikely]]",
           "if (s == KBV_QPS_RESET || s == KBV_QPS_INIT) [[unlikely]]",
           "kbv_post_send accepted in RTR", [VERBS, VERBS_DATA]),
    Mutant("verbs-opcode-range", "verbs", "src/verbs/fast_path.cpp",
           "if (w.opcode > KBV_WR_ATOMIC_FA || (w.flags & ~kSendFlags) != 0 ||",
           "if (w.opcode > KBV_WR_ATOMIC_FA + 1 || (w.flags & ~kSendFlags) != 0 ||",
           "kbv_post_send accepts opcode 7", [VERBS, VERBS_DATA, UNIT_VERBS]),
    Mutant("verbs-ah-device", "verbs", "src/verbs/fast_path.cpp",
           "if (a == nullptr || a->dev.get() != dev) return KBV_ERR_INVALID_HANDLE;",
           "if (a == nullptr) return KBV_ERR_INVALID_HANDLE;",
           "a UD send with another device's AH is posted", [VERBS, VERBS_DATA]),
    Mutant("verbs-bad-index", "verbs", "src/verbs/fast_path.cpp",
           "*bad_index = static_cast<uint32_t>(bad);",
           "*bad_index = static_cast<uint32_t>(bad) + 1;",
           "bad_index names the request after the refused one", [VERBS, VERBS_DATA]),
]


def sh(cmd, cwd=None, timeout=None, log=None):
    try:
        r = subprocess.run(cmd, cwd=cwd, timeout=timeout, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, errors="replace")
        out, rc = r.stdout, r.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        out, rc = out + f"\n[timeout after {timeout} s]", 124
    if log is not None:
        log.write(f"$ {' '.join(map(str, cmd))}\n{out}\n[exit {rc}]\n")
        log.flush()
    return rc, out


def prepare(d, jobs, log):
    src = d / "src"
    src.mkdir(parents=True, exist_ok=True)
    # The working tree's files (tracked and untracked, not ignored); only
    # changed ones are copied, so the copy's build stays incremental.
    rc, out = sh(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"])
    if rc != 0:
        sys.exit(f"git ls-files failed:\n{out}")
    for rel in filter(None, out.split("\0")):
        s, t = REPO / rel, src / rel
        if not s.is_file():
            continue
        if t.exists() and t.stat().st_size == s.stat().st_size and t.read_bytes() == s.read_bytes():
            continue
        t.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(s, t)
    b = src / "build-mut"
    if not (b / "build.ninja").exists():
        rc, out = sh(["nice", "-n", "19", "meson", "setup", str(b), "-Dwerror=true",
                      "-Dbench=disabled", "-Ddebug=false", "-Doptimization=1"], cwd=src, log=log)
        if rc != 0:
            sys.exit(f"meson setup failed:\n{out}")
    return src, b


def build(b, targets, jobs, log):
    return sh(["nice", "-n", "19", "ninja", "-C", str(b), f"-j{jobs}"] + sorted(set(targets)),
              log=log)


def run_tests(b, tests, log):
    failed = []
    for t in tests:
        rc, _ = sh(["nice", "-n", "19", str(b / t.target)] + t.args, cwd=b,
                   timeout=t.timeout, log=log)
        if rc != 0:
            failed.append(t.label() + (" (timeout)" if rc == 124 else ""))
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=os.environ.get(
        "KBV_MUTATION_DIR", str(REPO.parent / (REPO.name + "-mutation"))))
    ap.add_argument("--only", default="")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    muts = [m for m in MUTANTS if not a.only or m.id in a.only.split(",")]
    if a.list:
        for m in muts:
            print(f"{m.id:24} {m.where:6} {m.file}: {m.why}")
        return 0
    d = Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    log = open(d / "mutation.log", "w")
    src, b = prepare(d, a.jobs, log)
    targets = {t.target for m in muts for t in m.tests}
    rc, out = build(b, targets, a.jobs, log)
    if rc != 0:
        sys.exit(f"the unmutated copy does not build (see {d}/mutation.log)")
    # Baseline: every test command passes on the unmutated copy.
    base = run_tests(b, list({t.label(): t for m in muts for t in m.tests}.values()), log)
    if base:
        sys.exit("failing before any mutation: " + ", ".join(base))
    rows, status = [], 0
    for m in muts:
        f = src / m.file
        text = f.read_text()
        if text.count(m.old) != 1:
            rows.append((m, "STALE", f"the line occurs {text.count(m.old)} times", 0))
            status = max(status, 2)
            continue
        t0 = time.time()
        f.write_text(text.replace(m.old, m.new))
        try:
            rc, _ = build(b, [t.target for t in m.tests], a.jobs, log)
            if rc != 0:
                rows.append((m, "NO BUILD", "", time.time() - t0))
                status = max(status, 2)
                continue
            failed = run_tests(b, m.tests, log)
        finally:
            f.write_text(text)
            os.utime(f)  # newer than the mutant's object: rebuilt next time
        if failed:
            rows.append((m, "caught", ", ".join(failed), time.time() - t0))
        else:
            rows.append((m, "NOT CAUGHT", "", time.time() - t0))
            status = max(status, 1)
        print(f"{m.id}: {rows[-1][1]} {rows[-1][2]}", file=sys.stderr, flush=True)
    build(b, targets, a.jobs, log)  # leave the copy unmutated
    print("| fault | area | change | result | failing tests | s |")
    print("|---|---|---|---|---|---|")
    for m, res, detail, secs in rows:
        print(f"| `{m.id}` | {m.where} | `{m.file}`: {m.why} | **{res}** | {detail} | {secs:.0f} |")
    caught = sum(1 for r in rows if r[1] == "caught")
    print(f"\n{caught} of {len(rows)} faults caught.")
    return status


if __name__ == "__main__":
    sys.exit(main())
