#!/usr/bin/env bash
# run_fuzzer.sh EXE WORK_CORPUS SEED_CORPUS ARTIFACT_DIR SECONDS
# Runs one libFuzzer target for a bounded time: new inputs go to WORK_CORPUS
# (in the build tree), the checked-in seeds are read from SEED_CORPUS.
# libFuzzer exits 77 on a crash by default, which meson reads as "skipped":
# every failure exits 1 here.
set -euo pipefail
exe=$1 work=$2 seeds=$3 artifacts=$4 seconds=$5
mkdir -p "$work" "$artifacts"
exec "$exe" "$work" "$seeds" -max_total_time="$seconds" -rss_limit_mb=2048 \
  -artifact_prefix="$artifacts/" -print_final_stats=1 \
  -error_exitcode=1 -timeout_exitcode=1
