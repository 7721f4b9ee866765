#!/usr/bin/env bash
# Event stream load: STREAMS concurrent SSE streams to one svcd (up to 100 identities, each stream on
# one identity's key), RATE events a second for SECONDS; prints delivery latency, svcd's resident
# memory, and GET /api/health/ throughput (HEALTH_SECONDS of wrk, default 5) during the run
# against the same without streams.
#   benchmarks/load_events.sh [BUILD_DIR] [STREAMS] [RATE] [SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
streams=${2:-10000}
rate=${3:-100}
secs=${4:-20}
identities=$((streams < 100 ? streams : 100))
health_secs=${HEALTH_SECONDS:-5}
work=$(mktemp -d /tmp/svc-events.XXXXXX)
cleanup() {
  [ -n "${bench:-}" ] && kill "$bench" 2>/dev/null
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
source "$root/benchmarks/bench_lib.sh"
ulimit -n "$(ulimit -Hn)"
# One identity key per identity, beside the management key: more than auth.keys.max_per_account's
# default allows one account.
bench_start_svcd --set auth.rate.failed_auth_per_minute=0 --set server.max_connections_per_address=0 \
  --set auth.keys.max_per_account=$((identities + 10))
bench_login
: >"$work/keys"
for i in $(seq 1 $identities); do
  uuid=$(curl -sf -X POST "http://127.0.0.1:$port/api/identities/" -H "Authorization: Bearer $key" \
    -H 'Content-Type: application/json' -d "{\"name\":\"bench $i\"}" | json uuid)
  ikey=$(curl -sf -X POST "http://127.0.0.1:$port/api/auth/keys/identity/" -H "Authorization: Bearer $key" \
    -H 'Content-Type: application/json' -d "{\"identity\":\"$uuid\"}" | json key)
  echo "$uuid $ikey" >>"$work/keys"
done
echo "management $key" >>"$work/keys"

rss() { awk '/VmRSS/ {printf "%.0f MiB", $2/1024}' "/proc/$pid/status"; }
health() { wrk -t1 -c20 -d"${health_secs}s" "http://127.0.0.1:$port/api/health/" | awk '/Requests\/sec/ {print $2}'; }
idle=$(health)
echo "idle: health $idle req/s, svcd RSS $(rss)"

"$build/bin/svc_bench_events" "$port" "$streams" "$rate" "$secs" "$work/keys" \
  >"$work/bench.out" 2>"$work/bench.err" &
bench=$!
until grep -q ready "$work/bench.err" 2>/dev/null || ! kill -0 "$bench" 2>/dev/null; do sleep 0.1; done
cat "$work/bench.err"
sleep 1
busy=$(health)
echo "during: health $busy req/s, svcd RSS $(rss)"
wait "$bench"
bench=
cat "$work/bench.out"
echo "after: svcd RSS $(rss)"
awk -v a="$busy" -v b="$idle" 'BEGIN {printf "health during/idle: %.3f (target >= 0.8)\n", a/b}'
