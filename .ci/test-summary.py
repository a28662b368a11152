#!/usr/bin/env python3
"""Sum the test cases of one or more meson build directories.

Reads <builddir>/meson-logs/testlog.json. For a GoogleTest executable the
counts come from its own "[  PASSED  ] N tests" / "[  FAILED  ] N tests"
lines; any other test (fuzzers, scripts) counts as one case. Prints the
closing line 'tests: N passed, N failed' and exits non-zero on any failure.
"""
import json
import re
import sys

passed = failed = skipped = 0
for build in sys.argv[1:]:
    try:
        lines = open(f"{build}/meson-logs/testlog.json").read().splitlines()
    except OSError as e:
        print(f"test-summary: {e}", file=sys.stderr)
        sys.exit(1)
    for line in lines:
        t = json.loads(line)
        out = t.get("stdout") or ""
        ok = re.search(r"^\[  PASSED  \] (\d+) tests?", out, re.M)
        bad = re.search(r"^\[  FAILED  \] (\d+) tests?", out, re.M)
        skip = re.search(r"^\[  SKIPPED \] (\d+) tests?", out, re.M)
        if ok or bad:
            passed += int(ok.group(1)) if ok else 0
            failed += int(bad.group(1)) if bad else 0
            skipped += int(skip.group(1)) if skip else 0
            if t["result"] not in ("OK", "EXPECTEDFAIL") and not bad:
                failed += 1  # crashed after its summary
        elif t["result"] == "SKIP":
            skipped += 1
        elif t["result"] in ("OK", "EXPECTEDFAIL"):
            passed += 1
        else:
            failed += 1
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
