#!/usr/bin/env bash
# What checking a route's declared shape costs a key-authenticated JSON POST.
#   1. In process (Google Benchmark, CPU time): the pipeline round trip of one contact body to a
#      route that declares its shape and to one that does not; the difference is the check.
#   2. Over real HTTP (wrk, 2 threads, 20 connections): POST /api/contacts/ with an identity key,
#      each request storing a new contact: the request's whole time, which the check is part of.
#   benchmarks/load_declared_post.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
secs=${2:-10}
work=$(mktemp -d /tmp/svc-post.XXXXXX)
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
source "$root/benchmarks/bench_lib.sh"

cpu() {  # cpu BENCHMARK -> median CPU ns
  "$build/bin/svc_bench_pipeline" --benchmark_filter="^$1\$" --benchmark_repetitions=5 \
    ${BENCH_MIN_TIME:+--benchmark_min_time=$BENCH_MIN_TIME} \
    --benchmark_report_aggregates_only=true --benchmark_format=csv 2>/dev/null |
    awk -F, '/_median/ {print $4}'
}
declared=$(cpu BM_RoundTripPostDeclared)
undeclared=$(cpu BM_RoundTripPostUndeclared)

bench_start_svcd --set plugins.enabled=auth,identities,contacts
bench_login
uuid=$(curl -sf -X POST "http://127.0.0.1:$port/api/identities/" -H "Authorization: Bearer $key" \
  -H 'Content-Type: application/json' -d '{"name":"Bench"}' | json uuid)
identity_key=$(curl -sf -X POST "http://127.0.0.1:$port/api/auth/keys/identity/" \
  -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -d "{\"identity\":\"$uuid\",\"label\":\"bench\"}" | json key)
cat >"$work/post.lua" <<LUA
-- Every request a new contact: a unique address and number per thread and request.
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer $identity_key"
wrk.headers["Content-Type"] = "application/json"
counter = 0
request = function()
  counter = counter + 1
  local n = tid * 1000000 + counter
  local body = '{"email":"ada' .. n .. '@example.com","phone_number":"' ..
    string.format("+1415%07d", n % 10000000) .. '","display_name":"Ada Lovelace","nickname":"Ada"}'
  return wrk.format(nil, nil, nil, body)
end
LUA
probe=$(curl -s -o /dev/null -w "%{http_code}" -X POST "http://127.0.0.1:$port/api/contacts/" -H "Authorization: Bearer $identity_key" -H "Content-Type: application/json" -d '{"display_name":"Probe","email":"probe@example.com"}')
[ "$probe" = 201 ] || { echo "POST /api/contacts/ answered $probe" >&2; curl -s -X POST "http://127.0.0.1:$port/api/contacts/" -H "Authorization: Bearer $identity_key" -H "Content-Type: application/json" -d '{"display_name":"Probe","email":"probe2@example.com"}' >&2; exit 1; }
out=$(wrk -t2 -c20 -d"${secs}s" --latency -s "$work/post.lua" "http://127.0.0.1:$port/api/contacts/")
rate=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
p50=$(echo "$out" | awk '$1 == "50%" {print $2}')
p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
non2xx=$(echo "$out" | awk '/Non-2xx/ {print $5}')
echo "in process, CPU per request:  declared ${declared} ns, undeclared ${undeclared} ns"
python3 - "$declared" "$undeclared" "$rate" <<'PY'
import sys
d, u, rate = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
check = d - u
per_request_us = 2 * 1e6 / rate  # two cores' time per request at this rate
print("the check:                    %.2f us CPU (%.0f%% of the in-process round trip)" % (check / 1000, 100 * check / d))
print("POST /api/contacts/ over HTTP: %.0f req/s, %.0f us of the machine per request" % (rate, per_request_us))
print("the check's share of a POST:  %.2f%% (target: under 10%%)" % (100 * check / 1000 / per_request_us))
PY
echo "POST latency: p50 $p50  p99 $p99  non-2xx: ${non2xx:-0}"
