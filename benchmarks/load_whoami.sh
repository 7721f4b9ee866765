#!/usr/bin/env bash
# Key-check benchmark: wrk against unauthenticated GET /api/health/ and authenticated
# GET /api/health/whoami/ (a management key from a real device login) on one svcd, and the ratio.
#   benchmarks/load_whoami.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
secs=${2:-10}
work=$(mktemp -d /tmp/svc-whoami.XXXXXX)
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
source "$root/benchmarks/bench_lib.sh"
bench_start_svcd
bench_login

rate() { wrk -t2 -c50 -d"${secs}s" "$@" | awk '/Requests\/sec/ {print $2}'; }
health=$(rate "http://127.0.0.1:$port/api/health/")
whoami=$(rate -H "Authorization: Bearer $key" "http://127.0.0.1:$port/api/health/whoami/")
echo "GET /api/health/ (no auth):      $health req/s"
echo "GET /api/health/whoami/ (key):   $whoami req/s"
awk -v a="$whoami" -v b="$health" 'BEGIN {printf "ratio whoami/health:             %.3f (target >= 0.7)\n", a/b}'
