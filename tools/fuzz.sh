#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) in build-fuzz/ with clang, ASan and UBSan, and runs
# each for SECONDS (default 60) on a copy of its seed corpus; the committed corpus never grows.
# Prints executions, execs/s and findings per target; findings (crash-*, leak-*, timeout-*, oom-*)
# go to build-fuzz/findings/<target>/. Exits non-zero when any target found something.
#
#   tools/fuzz.sh [SECONDS]      mutate for SECONDS per target
#   tools/fuzz.sh --runs N [SECONDS]  mutate for N executions per target instead (at most
#                                SECONDS each when given)
#   tools/fuzz.sh --smoke        replay the seed corpora once, no mutation (what CI runs)
#   SVC_FUZZ_TARGETS="mime router" limits the targets; SVC_FUZZ_SEED=N fixes libFuzzer's seed
#   (CI does, so a run is repeatable for the same code).
set -euo pipefail
SVC_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$SVC_ROOT/tools/deps.sh"

mode=time
seconds=60
runs=0
case "${1:-}" in
  --smoke) mode=smoke ;;
  --runs)
    mode=runs runs=${2:?--runs needs a number}
    seconds=${3:-0}
    ;;
  "") ;;
  *) seconds=$1 ;;
esac

build="$SVC_ROOT/build-fuzz"
targets=(${SVC_FUZZ_TARGETS:-http_framing json_body router mime dkim_canon key_format smtp_session multipart dsn dkim_verify})

svc_install_packages "${SVC_BUILD_PACKAGES[@]}" clang libfuzzer-14-dev
CC=clang CXX=clang++ cmake -S "$SVC_ROOT" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSVC_FUZZ=ON -DSVC_BUILD_TESTS=OFF -DSVC_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$build" --target svc_fuzz -j "${SVC_JOBS:-2}" >/dev/null

# Leaks are findings; UBSan stops at the first report so it becomes a crash file.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

failed=0
failures=0
printf '%-14s %12s %10s  %s\n' target executions execs/s findings
for t in "${targets[@]}"; do
  bin="$build/fuzz/${t}_fuzz"
  seeds="$SVC_ROOT/tests/fuzz/corpus/$t"
  findings="$build/findings/$t"
  work="$build/fuzz-work/$t"
  rm -rf "$findings" "$work"
  mkdir -p "$findings" "$work/corpus"
  log="$work/log"
  if [ "$mode" = smoke ]; then
    # Files, not the folder: libFuzzer then runs each once and writes nothing.
    rc=0
    (cd "$findings" && "$bin" "$seeds"/* >"$log" 2>&1) || rc=$?
    n=$(find "$seeds" -type f | wc -l)
    if [ $rc -eq 0 ]; then
      printf '%-14s %12s %10s  %s\n' "$t" "$n" - "none (seed replay)"
    else
      printf '%-14s %12s %10s  %s\n' "$t" "$n" - "FAILED (exit $rc, see $log)"
      failed=1
      failures=$((failures + 1))
    fi
    continue
  fi
  cp "$seeds"/* "$work/corpus/"
  limit=(-max_total_time="$seconds")
  [ "$mode" = runs ] && limit=(-runs="$runs" -max_total_time="$seconds")
  [ -n "${SVC_FUZZ_SEED:-}" ] && limit+=(-seed="$SVC_FUZZ_SEED")
  rc=0
  "$bin" "${limit[@]}" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$findings/" "$work/corpus" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  found=$(find "$findings" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
    -o -name 'oom-*' \) -printf '%f ' | sed 's/ $//')
  if [ -n "$found" ] || [ $rc -ne 0 ]; then
    failed=1
    failures=$((failures + 1))
    printf '%-14s %12s %10s  %s\n' "$t" "${execs:-?}" "${rate:-?}" \
      "${found:-exit $rc} (in $findings, log $log)"
  else
    printf '%-14s %12s %10s  %s\n' "$t" "${execs:-?}" "${rate:-?}" none
  fi
done
echo "fuzz: $((${#targets[@]} - failures)) passed, $failures failed"
exit $failed
