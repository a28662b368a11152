#!/usr/bin/env bash
# make test-stress (issue 21; not in CI): the e2e suites STRESS_REPEAT times
# in a row (default 20) under a CPU load of STRESS_LOAD busy loops (default:
# one per CPU; stress-ng's cpu stressor when installed, else a shell busy
# loop), every process at nice 19 as on the shared machine. Prints one line
# per run and a summary; exit 1 when any run failed. Logs of failed runs stay
# in BUILD/meson-logs/stress-<n>.txt.
#   tests/stress/run.sh BUILD [meson test names...]
set -uo pipefail
build=${1:?usage: run.sh BUILD [test names]}
shift
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  tests=(dp_model dp_two_process verbs_on_model verbs_data_on_model verbs_two_process
         nt_on_model hca_objects_on_model)
fi
repeat=${STRESS_REPEAT:-20}
load=${STRESS_LOAD:-$(nproc)}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT
if command -v stress-ng >/dev/null; then
  nice -n 19 stress-ng --cpu "$load" --quiet & pids+=($!)
else
  for _ in $(seq "$load"); do nice -n 19 bash -c 'while :; do :; done' & pids+=($!); done
fi
echo "load: $load busy loops ($(command -v stress-ng >/dev/null && echo stress-ng || echo bash)); tests: ${tests[*]}"
fail=0
for i in $(seq "$repeat"); do
  start=$(date +%s)
  if nice -n 19 meson test -C "$build" --no-rebuild --print-errorlogs "${tests[@]}" \
      > "$build/meson-logs/stress-$i.txt" 2>&1; then
    res=ok
    rm -f "$build/meson-logs/stress-$i.txt"
  else
    res=FAIL; fail=$((fail + 1))
  fi
  echo "run $i/$repeat: $res ($(( $(date +%s) - start )) s, loadavg $(cut -d' ' -f1 /proc/loadavg))"
done
echo "summary: $((repeat - fail)) of $repeat runs passed"
[ "$fail" -eq 0 ]
