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
json() { python3 -c "import json,sys; print(json.load(sys.stdin)[\"$1\"])"; }

"$build/bin/svcd" --port 0 --data-dir "$work/data" --set admin.listen=127.0.0.1:0 >"$work/svcd.log" 2>&1 &
pid=$!
until grep -q "svcd ready" "$work/svcd.log"; do
  kill -0 "$pid" 2>/dev/null || { cat "$work/svcd.log" >&2; exit 1; }
  sleep 0.02
done
port=$(sed -n 's/.*svcd ready: api http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$work/svcd.log")
admin=$(sed -n 's/.*admin http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$work/svcd.log")
token=$(cat "$work/data/admin.token")
op() { curl -sf -X POST "http://127.0.0.1:$admin$1" -H "Authorization: Bearer $token" \
  -H 'Content-Type: application/json' -d "$2" >/dev/null; }

op /admin/auth/users/ '{"email":"bench@example.com","password":"correct horse"}'
device=$(curl -sf -X POST "http://127.0.0.1:$port/api/auth/device/")
op /admin/auth/device/approve/ "{\"user_code\":\"$(echo "$device" | json user_code)\",\"user\":\"bench@example.com\"}"
key=$(curl -sf -X POST "http://127.0.0.1:$port/api/auth/device/token/" -H 'Content-Type: application/json' \
  -d "{\"device_code\":\"$(echo "$device" | json device_code)\"}" | json management_key)

rate() { wrk -t2 -c50 -d"${secs}s" "$@" | awk '/Requests\/sec/ {print $2}'; }
health=$(rate "http://127.0.0.1:$port/api/health/")
whoami=$(rate -H "Authorization: Bearer $key" "http://127.0.0.1:$port/api/health/whoami/")
echo "GET /api/health/ (no auth):      $health req/s"
echo "GET /api/health/whoami/ (key):   $whoami req/s"
awk -v a="$whoami" -v b="$health" 'BEGIN {printf "ratio whoami/health:             %.3f (target >= 0.7)\n", a/b}'
