#!/usr/bin/env bash
# A secret read by key: seed N secrets (default 1,000) for one identity through the API (each
# value encrypted at rest by the vault), then wrk against unauthenticated GET /api/health/ and
# against GET /api/secrets/?key=... with the identity's key on one svcd, at the same load, and the
# ratio. The secret's row and vault record are kept by the read cache for CACHE_SECONDS
# (`secrets.read_cache_seconds`, default 5: the database is read once, the value decrypted on
# every read); 0 reads both from the database every time.
#   benchmarks/load_secret_read.sh [BUILD_DIR] [SECRETS] [SECONDS] [CACHE_SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
count=${2:-1000}
secs=${3:-10}
cache=${4:-5}
work=$(mktemp -d /tmp/svc-secret.XXXXXX)
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
source "$root/benchmarks/bench_lib.sh"
bench_start_svcd --set plugins.enabled=auth,identities,vault,secrets \
  --set secrets.read_cache_seconds="$cache"
bench_login
uuid=$(curl -sf -X POST "http://127.0.0.1:$port/api/identities/" -H "Authorization: Bearer $key" \
  -H 'Content-Type: application/json' -d '{"name":"Bench"}' | json uuid)
identity_key=$(curl -sf -X POST "http://127.0.0.1:$port/api/auth/keys/identity/" \
  -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -d "{\"identity\":\"$uuid\",\"label\":\"bench\"}" | json key)

echo "seeding $count secrets..."
python3 - "$port" "$identity_key" "$count" <<'PY'
import http.client, json, sys
port, key, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
conn = http.client.HTTPConnection("127.0.0.1", port)
headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
for i in range(count):
    body = json.dumps({"key": "BENCH_KEY_%06d" % i, "value": "sk-%064d" % i, "notes": "seeded"})
    conn.request("POST", "/api/secrets/", body, headers)
    answer = conn.getresponse()
    answer.read()
    if answer.status != 201:
        sys.exit("create %d answered %d" % (i, answer.status))
PY

probe="BENCH_KEY_$(printf '%06d' $((count / 2)))"
url="http://127.0.0.1:$port/api/secrets/?key=$probe"
got=$(curl -sf "$url" -H "Authorization: Bearer $identity_key" |
  python3 -c 'import json,sys; b=json.load(sys.stdin); print("%d result, value %s..." % (b["count"], b["results"][0]["value"][:12]))')
echo "GET /api/secrets/?key=$probe: $got"

run_wrk() {  # wrk args... -> "rate p50 p99"
  local out
  out=$(wrk -t2 -c50 -d"${secs}s" --latency "$@")
  echo "$(echo "$out" | awk '/Requests\/sec/ {print $2}') $(echo "$out" | awk '$1 == "50%" {print $2}') $(echo "$out" | awk '$1 == "99%" {print $2}')"
}
read -r health_rate health_p50 health_p99 < <(run_wrk "http://127.0.0.1:$port/api/health/")
read -r secret_rate secret_p50 secret_p99 < <(run_wrk -H "Authorization: Bearer $identity_key" "$url")
echo "secrets seeded:                    $count (read cache: $cache s)"
echo "GET /api/health/ (no auth):        $health_rate req/s   p50 $health_p50  p99 $health_p99"
echo "GET /api/secrets/?key= (id key):   $secret_rate req/s   p50 $secret_p50  p99 $secret_p99"
awk -v a="$secret_rate" -v b="$health_rate" 'BEGIN {printf "ratio secret read/health:          %.3f (target >= 0.5)\n", a/b}'
